/*
 * outfile_internal.h - what util/outfile.c, outset.c and outtrack.c share
 * (internal to them): the table of things a signal handler removes, the
 * lock files and what they record, leftovers of killed runs, and small
 * path helpers.
 *
 *   outtrack.c  the tracking list, nc_outfile_unlink_all, the test delay,
 *               folder and path helpers
 *   outlock.c   locks, and the removal of what killed runs left
 *               (util/outlock_internal.h)
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
#include "util/outlock_internal.h"

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
