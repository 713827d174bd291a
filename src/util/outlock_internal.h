/*
 * outlock_internal.h - the lock files of util/outlock.c, internal to the
 * output files of util/ (outfile.c, outset.c, outold.c, outtrack.c): what
 * a lock records and how its holder takes and releases it.
 */
#ifndef NC_OUTLOCK_INTERNAL_H
#define NC_OUTLOCK_INTERNAL_H

#include <stdbool.h>
#include <sys/stat.h>

#include "util/err.h"

/* The random word that ends the name of every temporary and staging
 * folder made under one lock: ".<name>.tmp.<token>". */
#define NC_TOKEN_LEN 12

/* A lock file held with flock(2) for as long as an output is written. The
 * file also records what its holder makes, so that the run after a
 * SIGKILL removes exactly that and nothing of the user's (docs/outputs.md
 * "Leftovers"): the holder's process id, its token, the inode of its
 * staging folder, and the tokens of killed holders whose leftovers are
 * still being removed. */
typedef struct nc_lock {
    int fd; /* -1 when not held */
    char *path;
    struct nc_track *tr; /* util/outfile_internal.h */
    char token[NC_TOKEN_LEN + 1];
    bool has_stage; /* the staging folder's inode is recorded */
    unsigned long long stage_dev, stage_ino;
} nc_lock;

/* What a lock covers: the temporaries ".<base>.tmp.<token>" (a file, or
 * a staging folder) in dir, where the lock file is, and, when folder is
 * not NULL, the temporaries ".<name>.tmp.<token>" written in place inside
 * the output folder folder. */
typedef struct nc_lock_scope {
    const char *dir;
    const char *base; /* "" when the lock file is inside the output folder */
    const char *folder;
} nc_lock_scope;

/* Takes the exclusive lock lockpath for target (named in messages),
 * without waiting: if another process holds it, fails (NC_EIO) naming
 * that process. Holding it, removes what the killed holders recorded in
 * it left in scope (their temporaries, files and staging folders, proven
 * theirs by the token in their names, their owner and the recorded inode;
 * nothing else), then records this process and a fresh token. A lock
 * path that is not a regular file, or a file that is not a normcmp lock,
 * is refused (NC_EINVAL). */
int nc_lock_take(const char *lockpath, const char *target, const nc_lock_scope *scope,
                 nc_lock *lk, nc_err *err);

/* Removes the lock file and releases it. Accepts a lock not held. */
void nc_lock_release(nc_lock *lk);

/* ".<name>.tmp.<token>" of lk (malloc'd), or NULL. */
char *nc_lock_tmp_name(const nc_lock *lk, const char *name);

/* Records the staging folder's inode st in lk's file. */
void nc_lock_note_stage(nc_lock *lk, const struct stat *st);

#endif
