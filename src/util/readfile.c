/*
 * readfile.c - untrusted files opened without blocking, bounded, and kept
 * inside their folder (readfile.h).
 *
 * Beneath a folder, the kernel resolves the path (openat2 with
 * RESOLVE_BENEATH: no absolute path, no "..", no symbolic link, at any
 * step, that leads out of the folder). On a kernel without openat2 (before
 * Linux 5.6) the path is checked by its words and the file opened is then
 * located through /proc/self/fd: a file outside the folder is closed and
 * refused.
 */
#include "util/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *nc_file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return S_ISREG(mode) ? "a regular file" : "not a regular file";
}

static const char *article(const char *noun)
{
    return strchr("aeioAEIO", noun[0]) ? "an" : "a";
}

/* A user's mistake (exit 2) or the system's (exit 1). */
static int open_code(int e)
{
    return (e == ENOENT || e == ENOTDIR || e == EACCES || e == EPERM || e == EISDIR ||
            e == ENAMETOOLONG || e == ELOOP || e == EXDEV || e == ENXIO)
               ? NC_EINVAL
               : NC_EIO;
}

/* Whether the words of path stay inside its folder: relative, no "..". */
static bool words_beneath(const char *path)
{
    if (path[0] == '/')
        return false;
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n;
        while (*p == '/')
            p++;
    }
    return true;
}

/* Without openat2: whether the open file fd lies inside folder dirfd, by
 * their resolved names. */
static bool fd_beneath(int dirfd, int fd)
{
    char a[64], b[64], dir[PATH_MAX], file[PATH_MAX];
    snprintf(a, sizeof a, "/proc/self/fd/%d", dirfd);
    snprintf(b, sizeof b, "/proc/self/fd/%d", fd);
    ssize_t nd = dirfd == AT_FDCWD ? (getcwd(dir, sizeof dir) ? (ssize_t)strlen(dir) : -1)
                                   : readlink(a, dir, sizeof dir - 1);
    ssize_t nf = readlink(b, file, sizeof file - 1);
    if (nd <= 0 || nf <= 0)
        return false;
    size_t n = (size_t)nd;
    if (n == 1 && dir[0] == '/')
        n = 0;
    return (size_t)nf > n + 1 && memcmp(dir, file, n) == 0 && file[n] == '/';
}

static int open_beneath(int dirfd, const char *path, int flags)
{
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
        return (int)fd;
    /* no openat2 (an old kernel, or a sandbox that forbids it) */
    if (!words_beneath(path)) {
        errno = EXDEV;
        return -1;
    }
    int f = openat(dirfd, path, flags);
    if (f >= 0 && !fd_beneath(dirfd, f)) {
        close(f);
        errno = EXDEV;
        return -1;
    }
    return f;
}

int nc_infile_open(const char *path, const nc_infile *in, int *fd, struct stat *st, nc_err *err)
{
    *fd = -1;
    const char *shown = in->shown ? in->shown : path;
    /* O_NONBLOCK: a FIFO is refused below instead of blocking the open */
    int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (in->nofollow ? O_NOFOLLOW : 0);
    int f = in->beneath ? open_beneath(in->dirfd, path, flags) : openat(in->dirfd, path, flags);
    if (f < 0) {
        int e = errno;
        if (e == EXDEV)
            return nc_err_set(err, NC_EINVAL, "%s: leads out of its folder (an absolute path, "
                              "'..' or a symbolic link to elsewhere), expected %s %s inside it",
                              shown, article(in->noun), in->noun);
        return nc_err_set_errno(err, open_code(e), e, "%s: cannot open %s", shown, in->noun);
    }
    if (fstat(f, st) != 0) {
        int e = errno;
        close(f);
        return nc_err_set_errno(err, NC_EIO, e, "%s: cannot stat %s", shown, in->noun);
    }
    int rc = 0;
    if (S_ISDIR(st->st_mode))
        rc = nc_err_set(err, NC_EINVAL, "%s: is a directory, expected %s %s", shown,
                        article(in->noun), in->noun);
    else if (!S_ISREG(st->st_mode))
        rc = nc_err_set(err, NC_EINVAL, "%s: not a regular file (%s), expected %s %s", shown,
                        nc_file_kind(st->st_mode), article(in->noun), in->noun);
    else if ((uint64_t)st->st_size > in->max_bytes)
        rc = nc_err_set(err, NC_ERANGE, "%s: found %llu bytes, expected %s %s of at most %llu "
                        "bytes", shown, (unsigned long long)st->st_size, article(in->noun),
                        in->noun, (unsigned long long)in->max_bytes);
    if (rc) {
        close(f);
        return rc;
    }
    *fd = f;
    return 0;
}

int nc_infile_read(const char *path, const nc_infile *in, char **buf, size_t *len, nc_err *err)
{
    *buf = NULL;
    *len = 0;
    const char *shown = in->shown ? in->shown : path;
    int fd;
    struct stat st;
    int rc = nc_infile_open(path, in, &fd, &st, err);
    if (rc)
        return rc;
    /* room for the size fstat gave and one byte more (a file that grew is
     * read on, in steps, up to max_bytes + 1 bytes) */
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *b = malloc(cap + 1);
    int e = 0;
    while (b && !e) {
        if (n == cap) {
            size_t grow = cap < in->max_bytes / 2 ? 2 * cap : (size_t)in->max_bytes + 1;
            if (cap > in->max_bytes)
                break; /* max_bytes + 1 read: too large */
            char *g = realloc(b, grow + 1);
            if (!g) {
                free(b);
                b = NULL;
                break;
            }
            b = g;
            cap = grow;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            e = errno;
        else if (r == 0)
            break;
        else
            n += (size_t)r;
    }
    close(fd);
    if (!b)
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for %llu bytes", shown,
                        (unsigned long long)cap);
    else if (e)
        rc = nc_err_set_errno(err, NC_EIO, e, "%s: cannot read %s", shown, in->noun);
    else if (n > in->max_bytes)
        rc = nc_err_set(err, NC_ERANGE, "%s: grew past %llu bytes while being read, expected "
                        "%s %s of at most that size", shown, (unsigned long long)in->max_bytes,
                        article(in->noun), in->noun);
    if (rc) {
        free(b);
        return rc;
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}
