/*
 * outtrack.c - the list of temporaries, staging folders, lock files and
 * created folders that a signal handler removes (nc_outfile_unlink_all),
 * the lock files that keep two runs out of one output, and the removal of
 * what killed runs left behind (outfile_internal.h).
 *
 * Left out: writing files (outfile.c) and sets of them (outset.c).
 */
#include "util/outfile.h"
#include "util/outfile_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The tracking list: nodes are pushed at the head and never freed or
 * rewritten once published (only their kind drops to NONE), so a handler
 * running on any thread reads whole paths. There is no fixed limit: a
 * node is allocated per tracked path. This list and the test delay are
 * the only mutable global state here; a signal handler has no other way
 * to find what to remove. */
struct nc_track {
    struct nc_track *next;
    volatile sig_atomic_t kind;
    char path[];
};

static nc_track *track_head;

nc_track *nc_track_add(int kind, const char *path)
{
    size_t n = strlen(path);
    nc_track *t = malloc(sizeof *t + n + 1);
    if (!t)
        return NULL;
    memcpy(t->path, path, n + 1);
    t->kind = kind;
    nc_track *h = __atomic_load_n(&track_head, __ATOMIC_ACQUIRE);
    do
        t->next = h;
    while (!__atomic_compare_exchange_n(&track_head, &h, t, true, __ATOMIC_RELEASE,
                                        __ATOMIC_ACQUIRE));
    return t;
}

void nc_track_drop(nc_track *t)
{
    if (t)
        t->kind = NC_TRACK_NONE;
}

/* Async-signal-safe: open, getdents64, unlinkat, close, rmdir only. */
static void remove_flat_signal_safe(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096] __attribute__((aligned(8)));
        for (;;) {
            long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n <= 0)
                break;
            for (long off = 0; off < n;) {
                /* struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name */
                unsigned short reclen;
                memcpy(&reclen, buf + off + 16, sizeof reclen);
                const char *name = buf + off + 19;
                if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))))
                    unlinkat(fd, name, 0); /* a folder fails, and stays */
                off += reclen;
            }
        }
        close(fd);
    }
    rmdir(path);
}

void nc_outfile_unlink_all(void)
{
    for (nc_track *t = __atomic_load_n(&track_head, __ATOMIC_ACQUIRE); t; t = t->next) {
        switch (t->kind) {
        case NC_TRACK_FILE:
        case NC_TRACK_LOCK: unlink(t->path); break;
        case NC_TRACK_DIR: remove_flat_signal_safe(t->path); break;
        case NC_TRACK_MADE: rmdir(t->path); break;
        default: break;
        }
    }
}

static unsigned step_delay_ms;

void nc_outfile_test_delay(unsigned ms)
{
    step_delay_ms = ms;
}

void nc_out_step(void)
{
    if (!step_delay_ms)
        return;
    struct timespec ts = {step_delay_ms / 1000, (long)(step_delay_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int nc_lock_take(const char *lockpath, const char *target, nc_lock *lk, nc_err *err)
{
    lk->fd = -1;
    lk->path = NULL;
    lk->tr = NULL;
    for (int tries = 0; tries < 1000; tries++) {
        int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) {
            int e = errno;
            return nc_err_set_errno(err, e == EACCES || e == EPERM || e == ENOENT ? NC_EINVAL
                                                                                  : NC_EIO,
                                    e, "%s: cannot create lock file %s", target, lockpath);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char buf[24] = {0};
            ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
            close(fd);
            long pid = got > 0 ? strtol(buf, NULL, 10) : 0;
            if (e == EWOULDBLOCK)
                return nc_err_set(err, NC_EIO, "%s: in use by another normcmp run (process %ld "
                                  "holds %s); wait for it to finish or choose another output",
                                  target, pid, lockpath);
            return nc_err_set_errno(err, NC_EIO, e, "%s: cannot lock %s", target, lockpath);
        }
        /* the holder before us may have removed the file after we opened
         * it: the lock counts only if the path still names our file */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lockpath, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            if (!(lk->path = strdup(lockpath))) {
                close(fd);
                return nc_err_set(err, NC_ENOMEM, "out of memory");
            }
            char pid[24];
            int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) != n) {
                /* the pid is only for the message of a second run */
            }
            lk->fd = fd;
            lk->tr = nc_track_add(NC_TRACK_LOCK, lockpath);
            return 0;
        }
        close(fd);
    }
    return nc_err_set(err, NC_EIO, "%s: cannot take lock %s (it keeps changing)", target,
                      lockpath);
}

void nc_lock_release(nc_lock *lk)
{
    if (lk->fd < 0)
        return;
    nc_track_drop(lk->tr);
    unlink(lk->path); /* while held: see nc_lock_take */
    close(lk->fd);
    free(lk->path);
    lk->fd = -1;
    lk->path = NULL;
    lk->tr = NULL;
}

bool nc_tmp_name_match(const char *name, const char *base, size_t *stem_len)
{
    size_t n = strlen(name);
    if (n < 13 || name[0] != '.' || memcmp(name + n - 11, ".tmp.", 5) != 0)
        return false;
    for (size_t k = n - 6; k < n; k++) {
        char c = name[k];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            return false;
    }
    size_t stem = n - 12;
    if (stem_len)
        *stem_len = stem;
    return !base || (strlen(base) == stem && memcmp(name + 1, base, stem) == 0);
}

void nc_remove_flat(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            struct stat st;
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
                unlinkat(dirfd(d), e->d_name, 0);
        }
        closedir(d);
    }
    rmdir(path);
}

void nc_clean_stale(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!nc_tmp_name_match(e->d_name, base, NULL))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (S_ISREG(st.st_mode)) {
            unlinkat(dirfd(d), e->d_name, 0);
        } else if (S_ISDIR(st.st_mode)) {
            char *p = nc_path_join(dir, e->d_name);
            if (p)
                nc_remove_flat(p);
            free(p);
        }
    }
    closedir(d);
}

char *nc_path_dir(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

char *nc_path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, a[0] && a[strlen(a) - 1] == '/' ? "" : "/", b);
    return s;
}
