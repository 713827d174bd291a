/*
 * outfile.c - one output file: temporary + rename, under a lock file
 * (outfile.h), and directory creation.
 *
 * Left out: sets of files and output folders (outset.c), the signal
 * handlers' list and the locks (outtrack.c).
 */
#include "util/outfile.h"

#include "util/outfile_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct nc_outfile {
    FILE *fp;
    char *path; /* target */
    char *tmp;  /* temporary in the same directory */
    nc_track *tr;
    nc_lock lock; /* the target's lock, when taken */
};

/* Removes the temporary's tracking, the lock and f. */
static void release(nc_outfile *f)
{
    nc_track_drop(f->tr);
    nc_lock_release(&f->lock);
    free(f->path);
    free(f->tmp);
    free(f);
}

int nc_outfile_open_ex(const char *path, const nc_lock *cover, nc_outfile **out, nc_err *err)
{
    *out = NULL;
    nc_outfile *f = calloc(1, sizeof *f);
    char *dup = strdup(path);
    const char *base;
    char *dir = nc_path_dir(path, &base);
    if (!f || !dup || !dir) {
        free(f);
        free(dup);
        free(dir);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    }
    f->lock.fd = -1;
    f->path = dup;
    int rc = 0;
    if (strlen(base) > NAME_MAX) /* the user's to fix, like any bad name */
        rc = nc_err_set(err, NC_EINVAL, "%s: file name longer than %d bytes", path, NAME_MAX);
    if (!rc && !cover) {
        /* ".<base>.lock" beside the target (the name cut to fit): one
         * writer at a time, and what a killed writer left (".<base>.tmp.<its
         * token>") can go */
        char lname[NAME_MAX + 1];
        snprintf(lname, sizeof lname, ".%.*s.lock", NAME_MAX - 6, base);
        char *lpath = nc_path_join(dir, lname);
        const nc_lock_scope scope = {.dir = dir, .base = base, .folder = NULL};
        rc = lpath ? nc_lock_take(lpath, path, &scope, &f->lock, err)
                   : nc_err_set(err, NC_ENOMEM, "out of memory");
        free(lpath);
        cover = &f->lock;
    }
    /* ".<base>.tmp.<token>" beside the target, so rename stays in one fs */
    char *tname = rc ? NULL : nc_lock_tmp_name(cover, base);
    if (!rc && (!tname || !(f->tmp = nc_path_join(dir, tname))))
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    free(tname);
    free(dir);
    if (rc) {
        release(f);
        return rc;
    }
    /* a new file (its name is the lock's token: a SIGKILL leaves it for
     * the next run to remove), with the default mode for new files */
    int fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) {
        int e = errno;
        free(f->tmp);
        f->tmp = NULL;
        release(f);
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot create output file", path);
    }
    f->tr = nc_track_add(NC_TRACK_FILE, f->tmp);
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        int e = errno;
        close(fd);
        unlink(f->tmp);
        release(f);
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot open output file", path);
    }
    *out = f;
    return 0;
}

int nc_outfile_open(const char *path, nc_outfile **out, nc_err *err)
{
    return nc_outfile_open_ex(path, NULL, out, err);
}

int nc_out_not_input(const char *out, const char *input, nc_err *err)
{
    struct stat a, b;
    if (stat(out, &a) == 0 && stat(input, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        return nc_err_set(err, NC_EINVAL, "%s: is the input file %s and would be replaced by the "
                          "output; choose another output", out, input);
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

int nc_outfile_fd(const nc_outfile *f)
{
    return f->fp ? fileno(f->fp) : -1;
}

int nc_outfile_finish(nc_outfile *f, nc_err *err)
{
    int e = 0;
    if (fflush(f->fp) != 0 || ferror(f->fp))
        e = errno ? errno : EIO;
    /* on the disk before it is renamed into place (docs/outputs.md
     * "Durability") */
    if (!e && fsync(fileno(f->fp)) != 0 && errno != EINVAL)
        e = errno;
    if (fclose(f->fp) != 0 && !e)
        e = errno ? errno : EIO;
    f->fp = NULL;
    if (e) {
        unlink(f->tmp);
        return nc_err_set_errno(err, NC_EIO, e, "%s: write failed", f->path);
    }
    return 0;
}

int nc_outfile_publish(nc_outfile *f, nc_err *err)
{
    int rc = 0;
    if (rename(f->tmp, f->path) != 0) {
        int e = errno;
        unlink(f->tmp);
        rc = nc_err_set_errno(err, NC_EIO, e, "%s: cannot rename temporary into place", f->path);
    }
    release(f);
    return rc;
}

const char *nc_outfile_path(const nc_outfile *f)
{
    return f->path;
}

int nc_outfile_commit(nc_outfile *f, nc_err *err)
{
    if (!f)
        return 0;
    int rc = nc_outfile_finish(f, err);
    if (rc) {
        release(f);
        return rc;
    }
    const char *base;
    char *dir = nc_path_dir(f->path, &base); /* base dies with f */
    rc = nc_outfile_publish(f, err);
    /* and the new name on the disk too */
    int e = !rc && dir ? nc_sync_dir(dir) : 0;
    if (e)
        rc = nc_err_set_errno(err, NC_EIO, e, "%s: cannot flush the folder to disk", dir);
    free(dir);
    return rc;
}

void nc_outfile_abort(nc_outfile *f)
{
    if (!f)
        return;
    if (f->fp)
        fclose(f->fp);
    if (f->tmp)
        unlink(f->tmp);
    release(f);
}

/* Permission and path problems are the user's to fix (exit 2); a full or
 * read-only file system and other OS failures are not (exit 1). */
static int dir_code(int e)
{
    return (e == EACCES || e == EPERM || e == ENOTDIR || e == ENOENT || e == ENAMETOOLONG)
               ? NC_EINVAL
               : NC_EIO;
}

int nc_mkdirs_made(const char *dir, char ***made, size_t *nmade, nc_err *err)
{
    *made = NULL;
    *nmade = 0;
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
        if (mkdir(p, 0777) == 0) {
            char **grown = realloc(*made, (*nmade + 1) * sizeof *grown);
            char *copy = strdup(p);
            if (grown)
                *made = grown;
            if (!grown || !copy) {
                free(copy);
                rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", dir);
                break;
            }
            (*made)[(*nmade)++] = copy;
        } else if (errno != EEXIST) {
            int e = errno;
            rc = nc_err_set_errno(err, dir_code(e), e, "%s: cannot create output folder", dir);
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

int nc_mkdirs(const char *dir, nc_err *err)
{
    char **made;
    size_t nmade;
    int rc = nc_mkdirs_made(dir, &made, &nmade, err);
    for (size_t k = 0; k < nmade; k++)
        free(made[k]);
    free(made);
    if (rc)
        return rc;
    return nc_check_dir(dir, err);
}

int nc_check_dir(const char *dir, nc_err *err)
{
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
