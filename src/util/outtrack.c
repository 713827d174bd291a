/*
 * outtrack.c - the list of temporaries, staging folders, lock files and
 * created folders that a signal handler removes (nc_outfile_unlink_all),
 * the test delay, and the small folder and path helpers the other output
 * files share (outfile_internal.h).
 *
 * Left out: writing files (outfile.c) and sets of them (outset.c), the
 * lock files (outlock.c), the old folder after a swap (outold.c).
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

int nc_sync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int e = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return e == EINVAL || e == EROFS ? 0 : e; /* cannot be synced: nothing to do */
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
