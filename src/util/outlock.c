/*
 * outlock.c - the lock files that keep two runs out of one output, and
 * what they record so that the run after a SIGKILL removes exactly what
 * the killed one made, proven by the token in the names, the owner and the
 * recorded inode of its staging folder, and nothing of the user's
 * (outfile_internal.h, docs/outputs.md "Leftovers").
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
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The lock file's text (rewritten whole, then cut to its length, so a
 * kill between the two leaves a complete record before "end"):
 *
 *     normcmp lock
 *     pid <process id>
 *     token <12 letters or digits>
 *     stage <device> <inode>                    (once the staging folder exists)
 *     stale <token> [<device> <inode>]          (killed holders not yet cleaned up)
 *     end
 *
 * A lock file of the earlier format holds only "<pid>\n"; an empty one was
 * made by a holder killed before it wrote anything. Anything else is not
 * ours, and is refused rather than overwritten.
 */

#define LOCK_TEXT_MAX 4096
#define STALE_MAX 8

/* One holder's record: its token and staging folder. */
typedef struct held {
    char token[NC_TOKEN_LEN + 1];
    bool has_stage;
    unsigned long long dev, ino;
} held;

typedef struct lock_text {
    bool ours;  /* empty, the earlier format or ours */
    long pid;   /* 0: unknown */
    held self;  /* token empty: none */
    held stale[STALE_MAX];
    int nstale;
} lock_text;

static bool token_ok(const char *t)
{
    size_t n = 0;
    for (; t[n]; n++)
        if (!((t[n] >= 'a' && t[n] <= 'z') || (t[n] >= 'A' && t[n] <= 'Z') ||
              (t[n] >= '0' && t[n] <= '9')))
            return false;
    return n == NC_TOKEN_LEN;
}

/* One "<token> [<dev> <ino>]" into h (words after the line's keyword). */
static bool parse_held(char *rest, held *h, bool token_first)
{
    memset(h, 0, sizeof *h);
    char *save = NULL, *w = strtok_r(rest, " ", &save);
    if (token_first) {
        if (!w || !token_ok(w))
            return false;
        memcpy(h->token, w, NC_TOKEN_LEN + 1);
        w = strtok_r(NULL, " ", &save);
    }
    if (!w)
        return token_first;
    char *e1, *e2;
    const char *w2 = strtok_r(NULL, " ", &save);
    h->dev = strtoull(w, &e1, 10);
    h->ino = w2 ? strtoull(w2, &e2, 10) : 0;
    h->has_stage = w2 && *e1 == '\0' && *e2 == '\0';
    return h->has_stage;
}

static void parse_lock(char *text, size_t n, lock_text *lt)
{
    memset(lt, 0, sizeof *lt);
    text[n] = '\0';
    if (n == 0) {
        lt->ours = true;
        return;
    }
    size_t digits = strspn(text, "0123456789");
    if (digits > 0 && digits + 1 == n && text[digits] == '\n') { /* the earlier format */
        lt->ours = true;
        lt->pid = strtol(text, NULL, 10);
        return;
    }
    static const char head[] = "normcmp lock\n";
    if (strncmp(text, head, sizeof head - 1) != 0)
        return;
    lt->ours = true;
    char *save = NULL;
    for (char *line = strtok_r(text + sizeof head - 1, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strcmp(line, "end") == 0)
            break;
        if (strncmp(line, "pid ", 4) == 0)
            lt->pid = strtol(line + 4, NULL, 10);
        else if (strncmp(line, "token ", 6) == 0 && token_ok(line + 6))
            memcpy(lt->self.token, line + 6, NC_TOKEN_LEN + 1);
        else if (strncmp(line, "stage ", 6) == 0) {
            held h;
            if (parse_held(line + 6, &h, false)) {
                lt->self.has_stage = true;
                lt->self.dev = h.dev;
                lt->self.ino = h.ino;
            }
        } else if (strncmp(line, "stale ", 6) == 0 && lt->nstale < STALE_MAX) {
            if (parse_held(line + 6, &lt->stale[lt->nstale], true))
                lt->nstale++;
        }
    }
}

/* Rewrites the lock file: this holder, and the stale holders given. */
static void lock_write(const nc_lock *lk, const held *stale, int nstale)
{
    char buf[LOCK_TEXT_MAX];
    int n = snprintf(buf, sizeof buf, "normcmp lock\npid %ld\ntoken %s\n", (long)getpid(),
                     lk->token);
    if (lk->has_stage)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "stage %llu %llu\n", lk->stage_dev,
                      lk->stage_ino);
    for (int k = 0; k < nstale && n < (int)sizeof buf - 80; k++) {
        n += snprintf(buf + n, sizeof buf - (size_t)n, "stale %s", stale[k].token);
        if (stale[k].has_stage)
            n += snprintf(buf + n, sizeof buf - (size_t)n, " %llu %llu", stale[k].dev,
                          stale[k].ino);
        buf[n++] = '\n';
    }
    n += snprintf(buf + n, sizeof buf - (size_t)n, "end\n");
    /* the record is for the run after a kill; a full disk makes the run
     * fail anyway, and only costs the clean-up after it */
    if (pwrite(lk->fd, buf, (size_t)n, 0) == n && ftruncate(lk->fd, n) == 0)
        return;
}

/* 12 random letters and digits. */
static void new_token(char *t)
{
    static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char r[NC_TOKEN_LEN];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long x = (unsigned long long)ts.tv_nsec * 2654435761u ^
                               ((unsigned long long)getpid() << 32) ^ (unsigned long long)ts.tv_sec;
        for (size_t k = 0; k < sizeof r; k++, x = x * 6364136223846793005ull + 1442695040888963407ull)
            r[k] = (unsigned char)(x >> 56);
    }
    for (size_t k = 0; k < NC_TOKEN_LEN; k++)
        t[k] = abc[r[k] % 62];
    t[NC_TOKEN_LEN] = '\0';
}

/* ".<name>.tmp.<token>" into out[NAME_MAX + 1], name cut to fit. */
static void tmp_name(char *out, const char *name, const char *token)
{
    snprintf(out, NAME_MAX + 1, ".%.*s.tmp.%.*s", NAME_MAX - 6 - NC_TOKEN_LEN, name,
             NC_TOKEN_LEN, token);
}

/* Whether name is ".<something>.tmp.<token>". */
static bool tmp_of(const char *name, const char *token)
{
    size_t n = strlen(name), m = 5 + NC_TOKEN_LEN; /* ".tmp." + token */
    return n > m + 1 && name[0] == '.' && memcmp(name + n - m, ".tmp.", 5) == 0 &&
           strcmp(name + n - NC_TOKEN_LEN, token) == 0;
}

/* What the killed holder h left: its temporaries and staging folder
 * beside the target, its temporaries inside the output folder. Only
 * entries owned by this user, named with h's token, of the kind it made. */
static void clean_held(const nc_lock_scope *sc, const held *h)
{
    uid_t me = geteuid();
    struct stat st, ts;
    if (sc->base[0]) {
        char name[NAME_MAX + 1];
        tmp_name(name, sc->base, h->token);
        char *p = nc_path_join(sc->dir, name);
        if (p && lstat(p, &st) == 0 && st.st_uid == me) {
            bool stage = !h->has_stage || (st.st_dev == h->dev && st.st_ino == h->ino);
            bool swapped = h->has_stage && sc->folder && lstat(sc->folder, &ts) == 0 &&
                           ts.st_dev == h->dev && ts.st_ino == h->ino;
            if (S_ISREG(st.st_mode))
                unlink(p);
            else if (S_ISDIR(st.st_mode) && stage)
                nc_remove_flat(p); /* never swapped in: all of it is the killed run's */
            else if (S_ISDIR(st.st_mode) && swapped)
                nc_finish_old_left(p, sc->folder); /* the old folder, after the swap */
        }
        free(p);
    }
    DIR *d = sc->folder ? opendir(sc->folder) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (tmp_of(e->d_name, h->token) &&
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_uid == me)
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
}

/* Opens (creating) the lock file: a regular file, never through a link. */
static int lock_open(const char *lockpath, const char *target, int *fdp, nc_err *err)
{
    int fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
    if (fd < 0) {
        int e = errno;
        return nc_err_set_errno(err, e == EACCES || e == EPERM || e == ENOENT || e == ELOOP ||
                                             e == ENAMETOOLONG || e == ENXIO
                                         ? NC_EINVAL
                                         : NC_EIO,
                                e, "%s: cannot create lock file %s", target, lockpath);
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return nc_err_set(err, NC_EINVAL, "%s: lock file %s is %s, expected a regular file "
                          "(move it away or choose another output)", target, lockpath,
                          S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file");
    }
    *fdp = fd;
    return 0;
}

/* The lock file's text, read through fd (at most LOCK_TEXT_MAX bytes). */
static void lock_read(int fd, lock_text *lt)
{
    char buf[LOCK_TEXT_MAX + 1];
    ssize_t got = pread(fd, buf, LOCK_TEXT_MAX, 0);
    parse_lock(buf, got > 0 ? (size_t)got : 0, lt);
    if (got == LOCK_TEXT_MAX)
        lt->ours = lt->ours && strstr(buf, "\nend\n") != NULL;
}

/* Holding the lock: removes what the killed holders recorded left, and
 * writes this holder's record. */
static int lock_claim(int fd, const char *lockpath, const char *target,
                      const nc_lock_scope *sc, nc_lock *lk, nc_err *err)
{
    lock_text lt;
    lock_read(fd, &lt);
    if (!lt.ours)
        return nc_err_set(err, NC_EINVAL, "%s: %s exists and is not a normcmp lock file "
                          "(move it away or choose another output)", target, lockpath);
    if (!(lk->path = strdup(lockpath)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    lk->fd = fd;
    new_token(lk->token);
    /* first the record naming what is still to remove, so a kill during
     * the removal leaves it for the next run */
    held stale[STALE_MAX + 1];
    int nstale = 0;
    if (lt.self.token[0])
        stale[nstale++] = lt.self;
    for (int k = 0; k < lt.nstale && nstale < STALE_MAX; k++)
        stale[nstale++] = lt.stale[k];
    if (nstale) {
        lock_write(lk, stale, nstale);
        for (int k = 0; k < nstale; k++)
            clean_held(sc, &stale[k]);
    }
    lock_write(lk, NULL, 0);
    lk->tr = nc_track_add(NC_TRACK_LOCK, lockpath);
    return 0;
}

int nc_lock_take(const char *lockpath, const char *target, const nc_lock_scope *scope,
                 nc_lock *lk, nc_err *err)
{
    memset(lk, 0, sizeof *lk);
    lk->fd = -1;
    for (int tries = 0; tries < 1000; tries++) {
        int fd = -1;
        int rc = lock_open(lockpath, target, &fd, err);
        if (rc)
            return rc;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            lock_text lt;
            lock_read(fd, &lt);
            close(fd);
            if (e == EWOULDBLOCK && lt.pid > 0)
                return nc_err_set(err, NC_EIO, "%s: in use by another normcmp run (process %ld "
                                  "holds %s); wait for it to finish or choose another output",
                                  target, lt.pid, lockpath);
            if (e == EWOULDBLOCK) /* the holder has not written its record yet */
                return nc_err_set(err, NC_EIO, "%s: in use by another normcmp run (it holds "
                                  "%s); wait for it to finish or choose another output",
                                  target, lockpath);
            return nc_err_set_errno(err, NC_EIO, e, "%s: cannot lock %s", target, lockpath);
        }
        /* the holder before us may have removed the file after we opened
         * it: the lock counts only if the path still names our file */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(lockpath, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            rc = lock_claim(fd, lockpath, target, scope, lk, err);
            if (rc) {
                close(fd);
                free(lk->path);
                memset(lk, 0, sizeof *lk);
                lk->fd = -1;
            }
            return rc;
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

char *nc_lock_tmp_name(const nc_lock *lk, const char *name)
{
    char *s = malloc(NAME_MAX + 1);
    if (s)
        tmp_name(s, name, lk->token);
    return s;
}

void nc_lock_note_stage(nc_lock *lk, const struct stat *st)
{
    lk->has_stage = true;
    lk->stage_dev = (unsigned long long)st->st_dev;
    lk->stage_ino = (unsigned long long)st->st_ino;
    if (lk->fd >= 0)
        lock_write(lk, NULL, 0);
}

