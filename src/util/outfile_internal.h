/*
 * outfile_internal.h - what util/outfile.c, outset.c and outtrack.c share
 * (internal to them): the table of things a signal handler removes, the
 * lock files and what they record, leftovers of killed runs, and small
 * path helpers.
 *
 *   outtrack.c  the tracking list, nc_outfile_unlink_all, the test delay,
 *               folder and path helpers
 *   outlock.c   locks, and the removal of what killed runs left
 *   outfile.c   one output file (temporary + rename), nc_mkdirs
 *   outset.c    sets of files, and a run's output folder swapped in whole
 *   outold.c    the folder's earlier outputs, and the old folder after a swap
 */
#ifndef NC_OUTFILE_INTERNAL_H
#define NC_OUTFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "util/err.h"

/* What a signal handler does with a tracked path. */
enum {
    NC_TRACK_NONE = 0,  /* dropped */
    NC_TRACK_FILE = 1,  /* a temporary file: unlink */
    NC_TRACK_DIR = 2,   /* a staging folder: unlink its files, rmdir */
    NC_TRACK_LOCK = 3,  /* a lock file this process holds: unlink */
    NC_TRACK_MADE = 4,  /* a folder this run created: rmdir (if empty) */
};

typedef struct nc_track nc_track;

/* Adds path to the list the signal handlers walk (newest first). Returns
 * NULL when out of memory (the path is then not cleaned on a signal). */
nc_track *nc_track_add(int kind, const char *path);

/* Forgets t (the handler ignores it from now on). Accepts NULL. */
void nc_track_drop(nc_track *t);

/* The test hook's pause between the steps of writing and committing
 * outputs (nc_outfile_test_delay); nothing when it is 0. */
void nc_out_step(void);

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
    nc_track *tr;
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

/* Removes the regular files and symbolic links in folder path, then the
 * folder (which stays if anything else is left). */
void nc_remove_flat(const char *path);

/* After a folder exchange the staging path oldpath holds the output
 * folder's old contents: its old outputs and the files the new folder
 * target also holds (the same inode, or a symbolic link to the same
 * place) are removed, anything else is moved into target, and the folder
 * is removed if that left it empty. old[nold]: the old report's outputs;
 * names[n]: the new set's. */
void nc_finish_old(const char *oldpath, const char *target, char *const *old, size_t nold,
                   char *const *names, size_t n);

/* The outputs of the run whose report.json dir holds: "report.json" and
 * its "outputs" (plain names only), if tool.name is "normcmp"; none if
 * the report is missing, not a regular file or not normcmp's. Free with
 * nc_free_names. */
void nc_old_outputs(const char *dir, char ***out, size_t *n);

void nc_free_names(char **names, size_t n);

/* nc_finish_old for a folder a killed run left after its exchange: the
 * old and new outputs read from the two folders' report.json. */
void nc_finish_old_left(const char *oldpath, const char *target);

/* Flushes folder path's entries to disk (fsync on the folder). Returns 0,
 * or an errno value; file systems that cannot sync a folder count as 0. */
int nc_sync_dir(const char *path);

/* Splits path (no trailing '/') into a malloc'd folder ("." when none)
 * and a pointer to its last component. NULL when out of memory. */
char *nc_path_dir(const char *path, const char **base);

/* "<a>/<b>" (malloc'd), or NULL. */
char *nc_path_join(const char *a, const char *b);

/* ---- outfile.c --------------------------------------------------------- */

struct nc_outfile;

/* nc_outfile_open under the lock cover (the files of an output folder are
 * covered by the folder's lock, whose token names their temporaries), or,
 * when cover is NULL, under the target's own lock. */
int nc_outfile_open_ex(const char *path, const nc_lock *cover, struct nc_outfile **out,
                       nc_err *err);

/* The temporary's file descriptor (for fchmod). */
int nc_outfile_fd(const struct nc_outfile *f);

/* Flushes the temporary to disk (fsync) and closes it; on failure removes
 * it (f stays). */
int nc_outfile_finish(struct nc_outfile *f, nc_err *err);

/* Renames the finished temporary over its target and frees f. */
int nc_outfile_publish(struct nc_outfile *f, nc_err *err);

/* The target path of f. */
const char *nc_outfile_path(const struct nc_outfile *f);

/* Creates dir and its missing parents like nc_mkdirs, without checking
 * dir; the folders it created go to *made (malloc'd, in creation order). */
int nc_mkdirs_made(const char *dir, char ***made, size_t *nmade, nc_err *err);

/* dir is a folder this process can create files in; else an error. */
int nc_check_dir(const char *dir, nc_err *err);

#endif
