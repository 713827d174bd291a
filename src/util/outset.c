/*
 * outset.c - sets of output files that appear together (outfile.h): files
 * beside each other in a folder (nc_outset_alloc), and a run's output
 * folder (nc_outset_alloc_folder), built whole in a staging folder beside
 * it and swapped in with one rename.
 *
 * The folder protocol, for an output folder D = P/B:
 *   - the lock P/.B.lock (flock) is held from allocation to commit, so a
 *     second run on D fails at once, naming the first; under it, what a
 *     killed run left (P/.B.tmp.XXXXXX) is removed;
 *   - files are written into the staging folder P/.B.tmp.XXXXXX;
 *   - commit: when D does not exist, rename(stage, D); else every entry of
 *     D that is not an output (of this run, or of the run whose report.json
 *     D holds) is hard-linked into the stage, then renameat2(RENAME_EXCHANGE)
 *     swaps stage and D in one step, and the old folder is removed.
 * So D holds the old set or the new one, never a mix, even under SIGKILL.
 * When that cannot work (D is the current folder or holds it, D is a
 * symbolic link, a mount point or holds sub-folders, P is not writable,
 * the file system cannot exchange), the files are written as temporaries
 * inside D and renamed one by one (the set appears together unless the
 * process is killed during those renames).
 *
 * Left out: single files (outfile.c), the lists and locks (outtrack.c).
 */
#include "util/outfile.h"
#include "util/outfile_internal.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct nc_outset {
    char *dir;       /* the folder as given (messages, in-place paths) */
    bool folder;     /* a run's output folder (nc_outset_alloc_folder) */
    bool swap;       /* built in stage, swapped in whole */
    char *parent;    /* folder sets: absolute folder holding the output folder */
    char *target;    /* folder sets: absolute path of the output folder */
    char *stage;     /* swap: the staging folder */
    nc_track *stage_tr;
    nc_lock lock;
    char **made;     /* folders this run created, in creation order */
    nc_track **made_tr;
    size_t nmade;
    char **names;    /* every file name added */
    size_t n;
    nc_outfile **files; /* in place: finished temporaries */
    size_t nfiles;
    struct stat *prot; /* inputs that must not be replaced */
    size_t nprot;
};

static void set_free(nc_outset *set)
{
    for (size_t k = 0; k < set->nmade; k++)
        free(set->made[k]);
    for (size_t k = 0; k < set->n; k++)
        free(set->names[k]);
    free(set->made);
    free(set->made_tr);
    free(set->names);
    free(set->files);
    free(set->prot);
    free(set->dir);
    free(set->parent);
    free(set->target);
    free(set->stage);
    free(set);
}

/* Removes the folders this run created (newest first; only empty ones go). */
static void undo_made(nc_outset *set, bool remove)
{
    for (size_t k = set->nmade; k-- > 0;) {
        nc_track_drop(set->made_tr[k]);
        if (remove)
            rmdir(set->made[k]);
    }
}

static bool has_name(char *const *names, size_t n, const char *name)
{
    for (size_t k = 0; k < n; k++)
        if (strcmp(names[k], name) == 0)
            return true;
    return false;
}

static bool plain_name(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int nc_outset_alloc(const char *dir, nc_outset **out, nc_err *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out || !((*out)->dir = strdup(dir))) {
        free(*out);
        *out = NULL;
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    (*out)->lock.fd = -1;
    return 0;
}

/* true if abs is the current folder or one holding it. */
static bool holds_cwd(const char *abs)
{
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return true; /* unknown: do not swap */
    size_t n = strlen(abs);
    if (n == 1 && abs[0] == '/')
        return true;
    return strncmp(cwd, abs, n) == 0 && (cwd[n] == '/' || cwd[n] == '\0');
}

/* true if every entry of dir is a regular file or a symbolic link. */
static bool flat_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool flat = true;
    struct dirent *e;
    while (flat && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        flat = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
    }
    closedir(d);
    return flat;
}

/* Temporaries ".<n>.tmp.XXXXXX" left inside dir by a killed in-place run,
 * except those of a file whose own lock ".<n>.lock" exists (a writer of a
 * single file there). Call under the folder's lock. */
static void clean_stale_inside(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t stem;
        if (!nc_tmp_name_match(e->d_name, NULL, &stem))
            continue;
        char lname[NAME_MAX + 8];
        snprintf(lname, sizeof lname, ".%.*s.lock", (int)stem, e->d_name + 1);
        struct stat st;
        if (fstatat(dirfd(d), lname, &st, AT_SYMLINK_NOFOLLOW) == 0)
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* Where the folder is (absolute parent and target), whether it exists,
 * and which protocol applies. */
static int locate(nc_outset *set, nc_err *err)
{
    const char *base;
    char *pdir = nc_path_dir(set->dir, &base);
    if (!pdir)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    struct stat lst;
    bool exists = lstat(set->dir, &lst) == 0;
    int rc = 0;
    if (!exists && errno != ENOENT && errno != ENOTDIR) {
        rc = nc_err_set_errno(err, errno == EACCES ? NC_EINVAL : NC_EIO, errno,
                              "%s: cannot use output folder", set->dir);
    } else if (!exists) {
        char **made;
        size_t nmade;
        rc = nc_mkdirs_made(pdir, &made, &nmade, err);
        set->made = made;
        set->nmade = nmade;
        set->made_tr = calloc(nmade ? nmade : 1, sizeof *set->made_tr);
        for (size_t k = 0; k < nmade && set->made_tr; k++)
            set->made_tr[k] = nc_track_add(NC_TRACK_MADE, made[k]);
        if (!set->made_tr && !rc)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
        struct stat ps;
        int e = stat(pdir, &ps) != 0 ? errno
                : !S_ISDIR(ps.st_mode) ? ENOTDIR
                : access(pdir, W_OK | X_OK) != 0 ? errno
                : 0;
        if (!rc && e)
            rc = nc_err_set_errno(err, e == EROFS ? NC_EIO : NC_EINVAL, e,
                                  "%s: cannot create output folder", set->dir);
    } else {
        rc = nc_check_dir(set->dir, err);
    }
    char abs[PATH_MAX];
    if (!rc) {
        bool link = exists && S_ISLNK(lst.st_mode);
        if (exists && !link) {
            if (!realpath(set->dir, abs))
                rc = nc_err_set_errno(err, NC_EIO, errno, "%s: cannot use output folder", set->dir);
            else {
                const char *b;
                set->parent = nc_path_dir(abs, &b);
                set->target = strdup(abs);
            }
        } else if (!realpath(pdir, abs)) {
            rc = nc_err_set_errno(err, NC_EIO, errno, "%s: cannot use output folder", set->dir);
        } else {
            set->parent = strdup(abs);
            set->target = nc_path_join(abs, base);
        }
        if (!rc && (!set->parent || !set->target))
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
        if (!rc) {
            struct stat ps, ds;
            bool root = strcmp(set->target, "/") == 0;
            set->swap = !exists ||
                        (!link && !root && access(set->parent, W_OK | X_OK) == 0 &&
                         stat(set->parent, &ps) == 0 && stat(set->target, &ds) == 0 &&
                         ps.st_dev == ds.st_dev && !holds_cwd(set->target) &&
                         flat_folder(set->target));
        }
    }
    free(pdir);
    return rc;
}

int nc_outset_alloc_folder(const char *dir, nc_outset **out, nc_err *err)
{
    *out = NULL;
    if (!dir || !*dir)
        return nc_err_set(err, NC_EINVAL, "output folder: empty path");
    nc_outset *set = calloc(1, sizeof *set);
    if (!set || !(set->dir = strdup(dir))) {
        free(set);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    set->lock.fd = -1;
    set->folder = true;
    for (size_t n = strlen(set->dir); n > 1 && set->dir[n - 1] == '/';)
        set->dir[--n] = '\0';
    int rc = locate(set, err);
    char *lockpath = NULL;
    const char *base = NULL;
    if (!rc) {
        char *tmp = nc_path_dir(set->target, &base);
        free(tmp);
        char lname[NAME_MAX + 8];
        snprintf(lname, sizeof lname, ".%.*s.lock", NAME_MAX - 6, base);
        bool beside = base[0] && access(set->parent, W_OK | X_OK) == 0;
        lockpath = beside ? nc_path_join(set->parent, lname)
                          : nc_path_join(set->target, ".normcmp.lock");
        rc = lockpath ? nc_lock_take(lockpath, set->dir, &set->lock, err)
                      : nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    free(lockpath);
    if (!rc) {
        if (base[0])
            nc_clean_stale(set->parent, base);
        clean_stale_inside(set->target);
    }
    if (!rc && set->swap) {
        char tname[NAME_MAX + 16];
        snprintf(tname, sizeof tname, ".%.*s.tmp.XXXXXX", NAME_MAX - 12, base);
        set->stage = nc_path_join(set->parent, tname);
        if (!set->stage)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
        else if (!mkdtemp(set->stage))
            rc = nc_err_set_errno(err, NC_EIO, errno, "%s: cannot create a staging folder beside "
                                  "it", set->dir);
        else {
            set->stage_tr = nc_track_add(NC_TRACK_DIR, set->stage);
            struct stat st;
            mode_t um = umask(0);
            umask(um);
            chmod(set->stage, stat(set->target, &st) == 0 ? st.st_mode & 07777 : 0777 & ~um);
        }
    }
    if (rc) {
        nc_outset_abort(set);
        return rc;
    }
    *out = set;
    return 0;
}

int nc_outset_protect(nc_outset *set, const char *path)
{
    struct stat st;
    if (!set || stat(path, &st) != 0)
        return 0;
    struct stat *grown = realloc(set->prot, (set->nprot + 1) * sizeof *grown);
    if (!grown)
        return NC_ENOMEM;
    set->prot = grown;
    set->prot[set->nprot++] = st;
    return 0;
}

static int add_name(nc_outset *set, const char *name, nc_err *err)
{
    if (has_name(set->names, set->n, name))
        return 0;
    char **grown = realloc(set->names, (set->n + 1) * sizeof *grown);
    if (grown)
        set->names = grown;
    if (!grown || !(set->names[set->n] = strdup(name)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    set->n++;
    return 0;
}

/* Writes buf to the staging folder's file name; messages name dir/name. */
static int write_staged(nc_outset *set, const char *name, const void *buf, size_t n,
                        nc_err *err)
{
    char *path = nc_path_join(set->stage, name);
    if (!path)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    free(path);
    if (fd < 0)
        return nc_err_set_errno(err, NC_EIO, errno, "%s/%s: cannot create output file", set->dir,
                                name);
    const char *p = buf;
    int e = 0;
    while (n > 0 && !e) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            e = w < 0 ? errno : EIO;
        else {
            p += w;
            n -= (size_t)w;
        }
    }
    if (close(fd) != 0 && !e)
        e = errno;
    if (e)
        return nc_err_set_errno(err, NC_EIO, e, "%s/%s: write failed", set->dir, name);
    return 0;
}

int nc_outset_add(nc_outset *set, const char *name, const void *buf, size_t n, nc_err *err)
{
    if (!plain_name(name))
        return nc_err_set(err, NC_EINVAL, "%s: output file name '%s' is not a plain file name",
                          set->dir, name);
    int rc = add_name(set, name, err);
    if (rc)
        return rc;
    if (set->swap) {
        rc = write_staged(set, name, buf, n, err);
        nc_out_step();
        return rc;
    }
    nc_outfile **grown = realloc(set->files, (set->nfiles + 1) * sizeof *grown);
    if (!grown)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    set->files = grown;
    char *path = nc_path_join(set->dir, name);
    if (!path)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    nc_outfile *f;
    rc = nc_outfile_open_ex(path, !set->folder, &f, err);
    free(path);
    if (rc)
        return rc;
    nc_sink sink = nc_outfile_sink(f);
    rc = nc_sink_write(&sink, buf, n, err);
    if (!rc)
        rc = nc_outfile_finish(f, err);
    if (rc) {
        nc_outfile_abort(f);
        return rc;
    }
    set->files[set->nfiles++] = f;
    nc_out_step();
    return 0;
}

/* The outputs of the run whose report.json dir holds: "report.json" and
 * its "outputs" (plain names only), if tool.name is "normcmp". */
static void old_outputs(const char *dir, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char *path = nc_path_join(dir, "report.json");
    struct stat st;
    FILE *f = NULL;
    char *text = NULL;
    if (path && lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (64 << 20) &&
        (f = fopen(path, "rb")) && (text = malloc((size_t)st.st_size + 1))) {
        size_t got = fread(text, 1, (size_t)st.st_size, f);
        cJSON *root = cJSON_ParseWithLength(text, got);
        const cJSON *tool = cJSON_GetObjectItemCaseSensitive(root, "tool");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(tool, "name");
        const cJSON *outs = cJSON_GetObjectItemCaseSensitive(root, "outputs");
        if (cJSON_IsString(name) && strcmp(name->valuestring, "normcmp") == 0) {
            size_t cap = (size_t)cJSON_GetArraySize(outs) + 1;
            char **list = calloc(cap, sizeof *list);
            size_t k = 0;
            if (list && (list[k] = strdup("report.json")))
                k++;
            const cJSON *o;
            cJSON_ArrayForEach(o, outs)
            {
                if (list && k < cap && cJSON_IsString(o) && plain_name(o->valuestring) &&
                    (list[k] = strdup(o->valuestring)))
                    k++;
            }
            *out = list;
            *n = list ? k : 0;
        }
        cJSON_Delete(root);
    }
    if (f)
        fclose(f);
    free(text);
    free(path);
}

static void free_names(char **names, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(names[k]);
    free(names);
}

/* An output about to replace (or remove) an input file: refuse. */
static int check_inputs(const nc_outset *set, char *const *old, size_t nold, nc_err *err)
{
    for (size_t pass = 0; pass < 2; pass++) {
        char *const *names = pass ? old : set->names;
        size_t n = pass ? nold : set->n;
        for (size_t k = 0; k < n; k++) {
            char *path = nc_path_join(set->dir, names[k]);
            struct stat st;
            bool hit = false;
            if (path && stat(path, &st) == 0)
                for (size_t j = 0; j < set->nprot && !hit; j++)
                    hit = set->prot[j].st_dev == st.st_dev && set->prot[j].st_ino == st.st_ino;
            int rc = hit ? nc_err_set(err, NC_EINVAL, "%s: is an input of this run and would be "
                                      "replaced by its output; choose another output folder",
                                      path)
                         : 0;
            free(path);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Removes, from the folder dir, old outputs the new set does not have. */
static void drop_old(const nc_outset *set, const char *dir, char *const *old, size_t nold)
{
    for (size_t k = 0; k < nold; k++) {
        if (has_name(set->names, set->n, old[k]))
            continue;
        char *p = nc_path_join(dir, old[k]);
        struct stat st;
        if (p && lstat(p, &st) == 0 && S_ISREG(st.st_mode))
            unlink(p);
        free(p);
    }
}

static int commit_in_place(nc_outset *set, char *const *old, size_t nold, nc_err *err)
{
    int rc = 0;
    for (size_t k = 0; k < set->nfiles; k++) {
        if (rc) {
            nc_outfile_abort(set->files[k]);
            continue;
        }
        nc_out_step();
        rc = nc_outfile_publish(set->files[k], err);
    }
    set->nfiles = 0;
    if (!rc && set->folder)
        drop_old(set, set->dir, old, nold);
    return rc;
}

/* Swap mode, when the exchange cannot be used: the staged files are
 * renamed into the folder one by one, then the stage is removed. */
static int move_in(nc_outset *set, char *const *old, size_t nold, nc_err *err)
{
    int rc = 0;
    for (size_t k = 0; k < set->n && !rc; k++) {
        nc_out_step();
        char *from = nc_path_join(set->stage, set->names[k]);
        char *to = nc_path_join(set->target, set->names[k]);
        if (!from || !to)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
        else if (rename(from, to) != 0)
            rc = nc_err_set_errno(err, NC_EIO, errno, "%s/%s: cannot rename into place",
                                  set->dir, set->names[k]);
        free(from);
        free(to);
    }
    if (!rc)
        drop_old(set, set->target, old, nold);
    return rc;
}

/* Links every entry of the folder that is not an output into the stage.
 * false when one cannot be carried (a sub-folder, a failed link). */
static bool carry_over(nc_outset *set, char *const *old, size_t nold)
{
    DIR *d = opendir(set->target);
    int sfd = open(set->stage, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool ok = d && sfd >= 0;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
            has_name(set->names, set->n, name) || nc_tmp_name_match(name, NULL, NULL))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            ok = errno == ENOENT; /* gone meanwhile */
            continue;
        }
        if (S_ISREG(st.st_mode) && has_name(old, nold, name))
            continue;
        if (S_ISREG(st.st_mode)) {
            ok = linkat(dirfd(d), name, sfd, name, 0) == 0;
        } else if (S_ISLNK(st.st_mode)) {
            char to[PATH_MAX];
            ssize_t len = readlinkat(dirfd(d), name, to, sizeof to - 1);
            ok = len >= 0;
            if (ok) {
                to[len] = '\0';
                ok = symlinkat(to, sfd, name) == 0;
            }
        } else {
            ok = false;
        }
        nc_out_step();
    }
    if (d)
        closedir(d);
    if (sfd >= 0)
        close(sfd);
    return ok;
}

/* After the exchange the stage path holds the old folder: its outputs and
 * the names carried over (also in the new folder) go; anything else (made
 * while we were swapping) is moved into the new folder. */
static void clean_old(nc_outset *set, char *const *old, size_t nold)
{
    DIR *d = opendir(set->stage);
    int tfd = open(set->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct dirent *e;
    while (d && tfd >= 0 && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat a, b;
        if (fstatat(dirfd(d), name, &a, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        bool drop = S_ISREG(a.st_mode) && (has_name(old, nold, name) ||
                                           has_name(set->names, set->n, name) ||
                                           nc_tmp_name_match(name, NULL, NULL));
        if (!drop && fstatat(tfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0) {
            if (S_ISLNK(a.st_mode) && S_ISLNK(b.st_mode)) {
                char x[PATH_MAX], y[PATH_MAX];
                ssize_t nx = readlinkat(dirfd(d), name, x, sizeof x);
                ssize_t ny = readlinkat(tfd, name, y, sizeof y);
                drop = nx >= 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0;
            } else {
                drop = a.st_dev == b.st_dev && a.st_ino == b.st_ino;
            }
        }
        nc_out_step();
        if (drop)
            unlinkat(dirfd(d), name, 0);
        else
            renameat2(dirfd(d), name, tfd, name, RENAME_NOREPLACE);
    }
    if (d)
        closedir(d);
    if (tfd >= 0)
        close(tfd);
    if (rmdir(set->stage) == 0)
        nc_track_drop(set->stage_tr);
}

static int commit_swap(nc_outset *set, char *const *old, size_t nold, nc_err *err)
{
    struct stat st;
    if (lstat(set->target, &st) != 0) {
        nc_out_step();
        if (renameat2(AT_FDCWD, set->stage, AT_FDCWD, set->target, RENAME_NOREPLACE) == 0 ||
            ((errno == EINVAL || errno == ENOSYS) && rename(set->stage, set->target) == 0)) {
            nc_track_drop(set->stage_tr);
            return 0;
        }
        if (errno != EEXIST && errno != ENOTEMPTY)
            return nc_err_set_errno(err, NC_EIO, errno, "%s: cannot rename the new output folder "
                                    "into place", set->dir);
    }
    bool carried = carry_over(set, old, nold);
    nc_out_step();
    if (carried && renameat2(AT_FDCWD, set->stage, AT_FDCWD, set->target, RENAME_EXCHANGE) == 0) {
        clean_old(set, old, nold);
        return 0;
    }
    int e = errno;
    if (carried && e != EINVAL && e != ENOSYS && e != EOPNOTSUPP)
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot swap the new output folder into "
                                "place", set->dir);
    int rc = move_in(set, old, nold, err);
    nc_remove_flat(set->stage);
    nc_track_drop(set->stage_tr);
    return rc;
}

int nc_outset_commit(nc_outset *set, nc_err *err)
{
    if (!set)
        return 0;
    char **old = NULL;
    size_t nold = 0;
    if (set->folder)
        old_outputs(set->dir, &old, &nold);
    int rc = check_inputs(set, old, nold, err);
    if (!rc)
        rc = set->swap ? commit_swap(set, old, nold, err) : commit_in_place(set, old, nold, err);
    free_names(old, nold);
    if (rc) {
        nc_outset_abort(set);
        return rc;
    }
    for (size_t k = 0; k < set->nfiles; k++)
        nc_outfile_abort(set->files[k]);
    undo_made(set, false);
    nc_lock_release(&set->lock);
    set_free(set);
    return 0;
}

void nc_outset_abort(nc_outset *set)
{
    if (!set)
        return;
    for (size_t k = 0; k < set->nfiles; k++)
        nc_outfile_abort(set->files[k]);
    if (set->stage && set->stage_tr) {
        nc_remove_flat(set->stage);
        nc_track_drop(set->stage_tr);
    }
    nc_lock_release(&set->lock);
    undo_made(set, true);
    set_free(set);
}
