/*
 * outfile.c - temporary file + rename (outfile.h), and directory creation.
 */
#include "util/outfile.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct nc_outfile {
    FILE *fp;
    char *path; /* target */
    char *tmp;  /* temporary in the same directory */
    int slot;   /* index in the table of temporaries, or -1 */
};

/* The temporaries that exist now, for nc_outfile_unlink_all. This is the
 * one piece of mutable global state in the library: a signal handler has
 * no other way to find them. Slots are claimed and released by the thread
 * that writes output (the main thread); a slot's path is written before it
 * is marked used, so a handler never sees half a path. */
static char tracked[NC_OUTFILE_TRACKED][4096];
static volatile sig_atomic_t tracked_used[NC_OUTFILE_TRACKED];

static int track(const char *tmp)
{
    if (strlen(tmp) >= sizeof tracked[0])
        return -1;
    for (int k = 0; k < NC_OUTFILE_TRACKED; k++)
        if (!tracked_used[k]) {
            strcpy(tracked[k], tmp);
            tracked_used[k] = 1;
            return k;
        }
    return -1;
}

static void untrack(int slot)
{
    if (slot >= 0)
        tracked_used[slot] = 0;
}

static char created_dir[4096];
static volatile sig_atomic_t created_dir_set;

void nc_outfile_created_dir(const char *dir)
{
    created_dir_set = 0;
    if (dir && strlen(dir) < sizeof created_dir) {
        strcpy(created_dir, dir);
        created_dir_set = 1;
    }
}

void nc_outfile_unlink_all(void)
{
    for (int k = 0; k < NC_OUTFILE_TRACKED; k++)
        if (tracked_used[k])
            unlink(tracked[k]);
    if (created_dir_set)
        rmdir(created_dir); /* fails, harmlessly, unless empty */
}

int nc_outfile_open(const char *path, nc_outfile **out, nc_err *err)
{
    *out = NULL;
    nc_outfile *f = calloc(1, sizeof *f);
    size_t n = strlen(path);
    char *tmp = malloc(n + 32);
    char *dup = strdup(path);
    if (!f || !tmp || !dup) {
        free(f);
        free(tmp);
        free(dup);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    }
    /* ".<base>.tmp.XXXXXX" beside the target, so rename stays in one fs */
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    snprintf(tmp, n + 32, "%.*s.%s.tmp.XXXXXX", (int)dirlen, path, path + dirlen);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int e = errno;
        free(f);
        free(tmp);
        free(dup);
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot create output file", path);
    }
    fchmod(fd, 0644 & ~(mode_t)0); /* mkstemp makes 0600; results are for sharing */
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(f);
        free(tmp);
        free(dup);
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot open output file", path);
    }
    f->path = dup;
    f->tmp = tmp;
    f->slot = track(tmp);
    *out = f;
    return 0;
}

static int outfile_write(void *ctx, const void *buf, size_t n, nc_err *err)
{
    nc_outfile *f = ctx;
    if (fwrite(buf, 1, n, f->fp) != n)
        return nc_err_set_errno(err, NC_EIO, errno, "%s: write failed", f->path);
    return 0;
}

nc_sink nc_outfile_sink(nc_outfile *f)
{
    return (nc_sink){outfile_write, f};
}

static void release(nc_outfile *f)
{
    untrack(f->slot);
    free(f->path);
    free(f->tmp);
    free(f);
}

/* Flushes and closes the temporary (f->fp becomes NULL); on failure
 * removes it. */
static int finish(nc_outfile *f, nc_err *err)
{
    int e = 0;
    if (fflush(f->fp) != 0 || ferror(f->fp))
        e = errno ? errno : EIO;
    if (fclose(f->fp) != 0 && !e)
        e = errno ? errno : EIO;
    f->fp = NULL;
    if (e) {
        unlink(f->tmp);
        return nc_err_set_errno(err, NC_EIO, e, "%s: write failed", f->path);
    }
    return 0;
}

static int publish(nc_outfile *f, nc_err *err)
{
    if (rename(f->tmp, f->path) != 0) {
        int e = errno;
        unlink(f->tmp);
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot rename temporary into place",
                                f->path);
    }
    return 0;
}

int nc_outfile_commit(nc_outfile *f, nc_err *err)
{
    if (!f)
        return 0;
    int rc = finish(f, err);
    if (!rc)
        rc = publish(f, err);
    release(f);
    return rc;
}

void nc_outfile_abort(nc_outfile *f)
{
    if (!f)
        return;
    if (f->fp)
        fclose(f->fp);
    unlink(f->tmp);
    release(f);
}

struct nc_outset {
    char *dir;
    nc_outfile **files; /* finished temporaries */
    size_t n;
};

int nc_outset_alloc(const char *dir, nc_outset **out, nc_err *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out || !((*out)->dir = strdup(dir))) {
        free(*out);
        *out = NULL;
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    return 0;
}

int nc_outset_add(nc_outset *set, const char *name, const void *buf, size_t n, nc_err *err)
{
    size_t pn = strlen(set->dir) + strlen(name) + 2;
    char *path = malloc(pn);
    nc_outfile **grown = realloc(set->files, (set->n + 1) * sizeof *grown);
    if (!path || !grown) {
        free(path);
        if (grown)
            set->files = grown;
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    set->files = grown;
    snprintf(path, pn, "%s/%s", set->dir, name);
    nc_outfile *f;
    int rc = nc_outfile_open(path, &f, err);
    free(path);
    if (rc)
        return rc;
    nc_sink sink = nc_outfile_sink(f);
    rc = nc_sink_write(&sink, buf, n, err);
    if (!rc)
        rc = finish(f, err);
    if (rc) {
        nc_outfile_abort(f);
        return rc;
    }
    set->files[set->n++] = f;
    return 0;
}

int nc_outset_commit(nc_outset *set, nc_err *err)
{
    if (!set)
        return 0;
    int rc = 0;
    for (size_t k = 0; k < set->n; k++) {
        if (!rc)
            rc = publish(set->files[k], err);
        else
            unlink(set->files[k]->tmp);
        release(set->files[k]);
    }
    free(set->files);
    free(set->dir);
    free(set);
    return rc;
}

void nc_outset_abort(nc_outset *set)
{
    if (!set)
        return;
    for (size_t k = 0; k < set->n; k++)
        nc_outfile_abort(set->files[k]);
    free(set->files);
    free(set->dir);
    free(set);
}

/* Permission and path problems are the user's to fix (exit 2); a full or
 * read-only file system and other OS failures are not (exit 1). */
static int dir_code(int e)
{
    return (e == EACCES || e == EPERM || e == ENOTDIR || e == ENOENT || e == ENAMETOOLONG)
               ? NC_EINVAL
               : NC_EIO;
}

int nc_mkdirs(const char *dir, nc_err *err)
{
    if (!dir || !*dir)
        return nc_err_set(err, NC_EINVAL, "output folder: empty path");
    char *p = strdup(dir);
    if (!p)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", dir);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            rc = nc_err_set_errno(err, dir_code(e), e, "%s: cannot create output folder", dir);
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    if (rc)
        return rc;
    struct stat st;
    if (stat(dir, &st) != 0)
        return nc_err_set_errno(err, dir_code(errno), errno, "%s: cannot use output folder", dir);
    if (!S_ISDIR(st.st_mode))
        return nc_err_set(err, NC_EINVAL, "%s: output folder is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0) {
        int e = errno;
        return nc_err_set_errno(err, dir_code(e), e, "%s: output folder is not writable", dir);
    }
    return 0;
}

int nc_write_file(const char *path, const void *buf, size_t n, nc_err *err)
{
    nc_outfile *f;
    int rc = nc_outfile_open(path, &f, err);
    if (rc)
        return rc;
    nc_sink sink = nc_outfile_sink(f);
    rc = nc_sink_write(&sink, buf, n, err);
    if (rc) {
        nc_outfile_abort(f);
        return rc;
    }
    return nc_outfile_commit(f, err);
}
