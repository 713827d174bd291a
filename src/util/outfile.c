/*
 * outfile.c - temporary file + rename (outfile.h), and directory creation.
 */
#include "util/outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct nc_outfile {
    FILE *fp;
    char *path; /* target */
    char *tmp;  /* temporary in the same directory */
};

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
    free(f->path);
    free(f->tmp);
    free(f);
}

int nc_outfile_commit(nc_outfile *f, nc_err *err)
{
    if (!f)
        return 0;
    int rc = 0;
    int e = 0;
    if (fflush(f->fp) != 0 || ferror(f->fp))
        e = errno ? errno : EIO;
    if (fclose(f->fp) != 0 && !e)
        e = errno ? errno : EIO;
    if (e) {
        rc = nc_err_set_errno(err, NC_EIO, e, "%s: write failed", f->path);
        unlink(f->tmp);
    } else if (rename(f->tmp, f->path) != 0) {
        rc = nc_err_set_errno(err, NC_EIO, errno, "%s: cannot rename temporary into place",
                              f->path);
        unlink(f->tmp);
    }
    release(f);
    return rc;
}

void nc_outfile_abort(nc_outfile *f)
{
    if (!f)
        return;
    fclose(f->fp);
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
