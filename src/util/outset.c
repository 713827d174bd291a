/*
 * outset.c - sets of output files that appear together (outfile.h): files
 * beside each other in a folder (nc_outset_alloc), and a run's output
 * folder (nc_outset_alloc_folder), built whole in a staging folder beside
 * it and swapped in with one rename.
 *
 * The folder protocol, for an output folder D = P/B:
 *   - the lock P/.B.lock (flock) is held from allocation to commit, so a
 *     second run on D fails at once, naming the first; under it, what a
 *     killed run recorded in the lock is removed (outtrack.c);
 *   - files are written into the staging folder P/.B.tmp.<token> (the
 *     lock's token; its inode is recorded in the lock);
 *   - commit: every file and the staging folder are flushed to disk;
 *     when D does not exist, rename(stage, D); else every entry of D that
 *     is not an output (of this run, or of the run whose report.json D
 *     holds) is hard-linked into the stage, then renameat2(RENAME_EXCHANGE)
 *     swaps stage and D in one step, P is flushed to disk, and the old
 *     folder is removed (outold.c).
 * So D holds the old set or the new one, never a mix, even under SIGKILL,
 * and after a power cut once the commit has returned (docs/outputs.md).
 * When that cannot work (D is the current folder or holds it, D is a
 * symbolic link, a mount point or holds sub-folders, P is not writable,
 * the file system cannot exchange), the files are written as temporaries
 * inside D and renamed one by one (the set appears together unless the
 * process is killed during those renames).
 *
 * Left out: single files (outfile.c), the lists and locks (outtrack.c),
 * the old folder (outold.c).
 */
#include "util/outfile.h"
#include "util/outfile_internal.h"

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
    mode_t umask;      /* the process's, read once */
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

static mode_t current_umask(void)
{
    mode_t um = umask(0);
    umask(um);
    return um;
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
    (*out)->umask = current_umask();
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
        int e = errno; /* a name too long or forbidden is the user's to fix */
        rc = nc_err_set_errno(err, e == EACCES || e == ENAMETOOLONG || e == ELOOP ? NC_EINVAL
                                                                                 : NC_EIO,
                              e, "%s: cannot use output folder", set->dir);
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

/* The staging folder P/.B.tmp.<token>, with D's permissions (or the
 * default for a new folder), its inode recorded in the lock. */
static int make_stage(nc_outset *set, const char *base, nc_err *err)
{
    char *tname = nc_lock_tmp_name(&set->lock, base);
    set->stage = tname ? nc_path_join(set->parent, tname) : NULL;
    free(tname);
    if (!set->stage)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    if (mkdir(set->stage, 0700) != 0) {
        int e = errno;
        free(set->stage);
        set->stage = NULL;
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot create a staging folder beside it",
                                set->dir);
    }
    set->stage_tr = nc_track_add(NC_TRACK_DIR, set->stage);
    struct stat st;
    if (stat(set->stage, &st) == 0)
        nc_lock_note_stage(&set->lock, &st);
    chmod(set->stage, stat(set->target, &st) == 0 ? st.st_mode & 07777 : 0777 & ~set->umask);
    return 0;
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
    set->umask = current_umask();
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
        /* covers the staging folder beside D and temporaries inside it */
        const nc_lock_scope scope = {.dir = beside ? set->parent : set->target,
                                     .base = beside ? base : "", .folder = set->target};
        rc = lockpath ? nc_lock_take(lockpath, set->dir, &scope, &set->lock, err)
                      : nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    free(lockpath);
    if (!rc && set->swap)
        rc = make_stage(set, base, err);
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

/* Where one output's bytes go: a new file in the staging folder (swap),
 * or a temporary beside its name in the folder (in place, under the
 * folder's lock, whose token names it). */
typedef struct writer {
    nc_outset *set;
    const char *name;
    int fd;        /* swap: the staged file, else -1 */
    nc_outfile *f; /* in place */
} writer;

static int writer_open(nc_outset *set, const char *name, writer *w, nc_err *err)
{
    *w = (writer){set, name, -1, NULL};
    if (!plain_name(name))
        return nc_err_set(err, NC_EINVAL, "%s: output file name '%s' is not a plain file name",
                          set->dir, name);
    bool again = has_name(set->names, set->n, name);
    int rc = add_name(set, name, err);
    if (rc)
        return rc;
    if (set->swap) {
        char *path = nc_path_join(set->stage, name);
        if (!path)
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
        free(path);
        if (w->fd < 0)
            return nc_err_set_errno(err, NC_EIO, errno, "%s/%s: cannot create output file",
                                    set->dir, name);
        return 0;
    }
    /* in place: a name written again replaces its first temporary */
    for (size_t k = 0; again && k < set->nfiles; k++) {
        const char *p = nc_outfile_path(set->files[k]);
        const char *slash = strrchr(p, '/');
        if (strcmp(slash ? slash + 1 : p, name) == 0) {
            nc_outfile_abort(set->files[k]);
            set->files[k] = set->files[--set->nfiles];
            break;
        }
    }
    nc_outfile **grown = realloc(set->files, (set->nfiles + 1) * sizeof *grown);
    if (!grown)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    set->files = grown;
    char *path = nc_path_join(set->dir, name);
    if (!path)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    rc = nc_outfile_open_ex(path, set->folder ? &set->lock : NULL, &w->f, err);
    free(path);
    return rc;
}

static int writer_put(writer *w, const void *buf, size_t n, nc_err *err)
{
    if (w->f) {
        nc_sink sink = nc_outfile_sink(w->f);
        return nc_sink_write(&sink, buf, n, err);
    }
    const char *p = buf;
    while (n > 0) {
        ssize_t r = write(w->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) /* a full disk, a file-size limit (EFBIG) */
            return nc_err_set_errno(err, NC_EIO, r < 0 ? errno : EIO, "%s/%s: write failed",
                                    w->set->dir, w->name);
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Finishes the file: its permissions at most keep (and the default for
 * new files), on the disk (fsync), closed. On failure the file is gone. */
static int writer_close(writer *w, mode_t keep, nc_err *err)
{
    mode_t mode = 0666 & ~w->set->umask;
    int fd = w->f ? nc_outfile_fd(w->f) : w->fd;
    if ((mode & keep) != mode)
        fchmod(fd, mode & keep);
    if (w->f) {
        int rc = nc_outfile_finish(w->f, err);
        if (rc) {
            nc_outfile_abort(w->f);
            return rc;
        }
        w->set->files[w->set->nfiles++] = w->f;
        return 0;
    }
    int e = fsync(w->fd) != 0 && errno != EINVAL ? errno : 0;
    if (close(w->fd) != 0 && !e)
        e = errno;
    w->fd = -1;
    if (e)
        return nc_err_set_errno(err, NC_EIO, e, "%s/%s: write failed", w->set->dir, w->name);
    return 0;
}

static void writer_abort(writer *w)
{
    if (w->f)
        nc_outfile_abort(w->f);
    if (w->fd >= 0)
        close(w->fd); /* the staged file goes with the staging folder */
}

int nc_outset_add(nc_outset *set, const char *name, const void *buf, size_t n, nc_err *err)
{
    writer w;
    int rc = writer_open(set, name, &w, err);
    if (!rc)
        rc = writer_put(&w, buf, n, err);
    if (!rc)
        rc = writer_close(&w, 0777, err);
    else
        writer_abort(&w);
    nc_out_step();
    return rc;
}

int nc_outset_add_copy(nc_outset *set, const char *name, int fd, uint64_t nbytes, mode_t mode,
                       const char *src, nc_err *err)
{
    writer w;
    int rc = writer_open(set, name, &w, err);
    size_t cap = (size_t)1 << 20;
    char *buf = rc ? NULL : malloc(cap);
    if (!rc && !buf)
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", src);
    for (uint64_t at = 0; !rc && at < nbytes;) {
        size_t want = nbytes - at < cap ? (size_t)(nbytes - at) : cap;
        ssize_t got = pread(fd, buf, want, (off_t)at);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            rc = nc_err_set_errno(err, NC_EIO, errno, "%s: cannot read", src);
        else if (got == 0)
            rc = nc_err_set(err, NC_EIO, "%s: shrank while being copied (from %llu to %llu "
                            "bytes)", src, (unsigned long long)nbytes, (unsigned long long)at);
        else {
            rc = writer_put(&w, buf, (size_t)got, err);
            at += (uint64_t)got;
        }
    }
    free(buf);
    if (!rc)
        rc = writer_close(&w, mode, err);
    else
        writer_abort(&w);
    nc_out_step();
    return rc;
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

/* Flushes folder path's entries (new names, renames) to disk. */
static int sync_dir(const nc_outset *set, const char *path, nc_err *err)
{
    int e = nc_sync_dir(path);
    return e ? nc_err_set_errno(err, NC_EIO, e, "%s: cannot flush %s to disk", set->dir, path)
             : 0;
}

/* The folders this run created hold their new entries on the disk too:
 * each one's parent is flushed. */
static int sync_made(const nc_outset *set, nc_err *err)
{
    int rc = 0;
    for (size_t k = 0; k < set->nmade && !rc; k++) {
        const char *base;
        char *pdir = nc_path_dir(set->made[k], &base);
        rc = pdir ? sync_dir(set, pdir, err) : nc_err_set(err, NC_ENOMEM, "out of memory");
        free(pdir);
    }
    return rc;
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
    if (!rc)
        rc = sync_dir(set, set->dir, err);
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
    if (!rc)
        rc = sync_dir(set, set->target, err);
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
            has_name(set->names, set->n, name))
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

/* Swaps the staging folder in: a plain rename for a new folder, else the
 * exchange (the folder's other files carried over first). Every staged
 * file is on the disk already (writer_close); the staging folder is
 * flushed before the rename, the parent after it (docs/outputs.md
 * "Durability"). */
static int commit_swap(nc_outset *set, char *const *old, size_t nold, nc_err *err)
{
    struct stat st;
    int rc = 0;
    if (lstat(set->target, &st) != 0) {
        if ((rc = sync_dir(set, set->stage, err)))
            return rc;
        nc_out_step();
        if (renameat2(AT_FDCWD, set->stage, AT_FDCWD, set->target, RENAME_NOREPLACE) == 0 ||
            ((errno == EINVAL || errno == ENOSYS) && rename(set->stage, set->target) == 0)) {
            nc_track_drop(set->stage_tr);
            rc = sync_dir(set, set->parent, err);
            return rc ? rc : sync_made(set, err);
        }
        if (errno != EEXIST && errno != ENOTEMPTY)
            return nc_err_set_errno(err, NC_EIO, errno, "%s: cannot rename the new output folder "
                                    "into place", set->dir);
    }
    bool carried = carry_over(set, old, nold);
    if (carried && (rc = sync_dir(set, set->stage, err)))
        return rc;
    nc_out_step();
    if (carried && renameat2(AT_FDCWD, set->stage, AT_FDCWD, set->target, RENAME_EXCHANGE) == 0) {
        rc = sync_dir(set, set->parent, err);
        /* the stage path now holds the old folder: no longer ours to
         * remove whole on a signal */
        nc_track_drop(set->stage_tr);
        set->stage_tr = NULL;
        nc_finish_old(set->stage, set->target, old, nold, set->names, set->n);
        return rc;
    }
    int e = errno;
    if (carried && e != EINVAL && e != ENOSYS && e != EOPNOTSUPP)
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot swap the new output folder into "
                                "place", set->dir);
    rc = move_in(set, old, nold, err);
    nc_remove_flat(set->stage);
    nc_track_drop(set->stage_tr);
    return rc;
}

int nc_outset_commit(nc_outset *set, nc_err *err)
{
    return nc_outset_commit_ex(set, NULL, err);
}

int nc_outset_commit_ex(nc_outset *set, size_t *replaced, nc_err *err)
{
    if (replaced)
        *replaced = 0;
    if (!set)
        return 0;
    char **old = NULL;
    size_t nold = 0;
    if (set->folder)
        nc_old_outputs(set->dir, &old, &nold);
    if (replaced)
        *replaced = nold;
    int rc = check_inputs(set, old, nold, err);
    if (!rc)
        rc = set->swap ? commit_swap(set, old, nold, err) : commit_in_place(set, old, nold, err);
    nc_free_names(old, nold);
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
