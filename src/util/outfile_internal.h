/*
 * outfile_internal.h - what util/outfile.c, outset.c and outtrack.c share
 * (internal to them): the table of things a signal handler removes, the
 * lock files, stale temporaries, and small path helpers.
 *
 *   outtrack.c  the tracking list, nc_outfile_unlink_all, the test delay,
 *               locks, removal of stale temporaries
 *   outfile.c   one output file (temporary + rename), nc_mkdirs
 *   outset.c    sets of files, and a run's output folder swapped in whole
 */
#ifndef NC_OUTFILE_INTERNAL_H
#define NC_OUTFILE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

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

/* A lock file held with flock(2) for as long as an output is written. */
typedef struct nc_lock {
    int fd; /* -1 when not held */
    char *path;
    nc_track *tr;
} nc_lock;

/* Takes the exclusive lock lockpath for target (named in messages),
 * without waiting: if another process holds it, fails (NC_EIO) naming
 * that process. */
int nc_lock_take(const char *lockpath, const char *target, nc_lock *lk, nc_err *err);

/* Removes the lock file and releases it. Accepts a lock not held. */
void nc_lock_release(nc_lock *lk);

/* true if name is ".<base>.tmp.XXXXXX" (six letters or digits); with base
 * NULL, any such name, and *stem_len is set to the length of <base>. */
bool nc_tmp_name_match(const char *name, const char *base, size_t *stem_len);

/* Removes what killed runs left in dir for target base: every
 * ".<base>.tmp.XXXXXX" file, and every such folder's files and the folder
 * itself. Call only while holding base's lock. */
void nc_clean_stale(const char *dir, const char *base);

/* Removes the regular files and symbolic links in folder path, then the
 * folder (which stays if anything else is left). */
void nc_remove_flat(const char *path);

/* Splits path (no trailing '/') into a malloc'd folder ("." when none)
 * and a pointer to its last component. NULL when out of memory. */
char *nc_path_dir(const char *path, const char **base);

/* "<a>/<b>" (malloc'd), or NULL. */
char *nc_path_join(const char *a, const char *b);

/* ---- outfile.c --------------------------------------------------------- */

struct nc_outfile;

/* nc_outfile_open, taking the target's lock only when lock is set (the
 * files of an output folder are covered by the folder's lock). */
int nc_outfile_open_ex(const char *path, bool lock, struct nc_outfile **out, nc_err *err);

/* Flushes and closes the temporary; on failure removes it (f stays). */
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
