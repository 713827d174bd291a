/*
 * outfile.h - output files that appear whole or not at all.
 *
 * A file is written to a temporary name in its target directory
 * (".<name>.tmp.XXXXXX"), then flushed, closed and renamed over the target
 * on commit. On abort, or any failure, the temporary is removed and the
 * target, if it existed, is untouched (docs/internals.md, rule 4). While it is
 * written the lock file ".<name>.lock" beside it is held (flock), so two
 * processes never write one target, and temporaries a killed writer left
 * are removed by the next one.
 */
#ifndef NC_OUTFILE_H
#define NC_OUTFILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"
#include "util/sink.h"

typedef struct nc_outfile nc_outfile;

/* Creates the temporary for path. On success *out is owned by the caller
 * and must go to nc_outfile_commit or nc_outfile_abort. */
int nc_outfile_open(const char *path, nc_outfile **out, nc_err *err);

/* Fails (NC_EINVAL) when out, if it exists, is the file input (the same
 * inode: also through a link), which the output would replace. */
int nc_out_not_input(const char *out, const char *input, nc_err *err);

/* A sink writing to the temporary; its errors name the target path. */
nc_sink nc_outfile_sink(nc_outfile *f);

/* Flushes, closes and renames the temporary to the target; frees f. On
 * failure the temporary is removed. Accepts NULL (returns 0). */
int nc_outfile_commit(nc_outfile *f, nc_err *err);

/* Removes the temporary and frees f. Accepts NULL. */
void nc_outfile_abort(nc_outfile *f);

/* A set of files that appear together. nc_outset_alloc: files beside each
 * other in a folder that is not the run's own (each under its own lock,
 * renamed into place one by one at commit). nc_outset_alloc_folder: a
 * run's output folder, which afterwards holds exactly the new set (plus
 * any files that are not outputs of normcmp): see outset.c for the
 * protocol (a staging folder beside it, swapped in with one rename, and
 * a lock file ".<name>.lock" beside it so a second run on the same folder
 * fails at once). Either way a failure leaves none of the new files and
 * the folder's earlier files untouched. */
typedef struct nc_outset nc_outset;

int nc_outset_alloc(const char *dir, nc_outset **out, nc_err *err);

/* Creates dir's missing parents (removed again on abort), takes the
 * folder's lock, removes what killed runs left, and prepares the staging
 * folder. Errors: the folder cannot be created or written, or another run
 * holds it (NC_EIO, naming its process). */
int nc_outset_alloc_folder(const char *dir, nc_outset **out, nc_err *err);

/* Records path (if it exists) as an input: the commit refuses (NC_EINVAL)
 * to replace or remove that file. Returns 0 or NC_ENOMEM. */
int nc_outset_protect(nc_outset *set, const char *path);

/* Writes buf as dir/name (name: a plain file name, no '/'). */
int nc_outset_add(nc_outset *set, const char *name, const void *buf, size_t n, nc_err *err);

/* Copies the regular file open as fd, nbytes bytes long, into the set as
 * name (as nc_outset_add, without holding it in memory). The copy's
 * permissions are at most mode's (a copy is never readable by more users
 * than the file it copies). src names that file in messages; a file that
 * turns out shorter than nbytes fails (NC_EIO). */
int nc_outset_add_copy(nc_outset *set, const char *name, int fd, uint64_t nbytes, mode_t mode,
                       const char *src, nc_err *err);

/* Puts every file into place and frees set (even on failure, after
 * removing what is left). Accepts NULL. */
int nc_outset_commit(nc_outset *set, nc_err *err);

/* nc_outset_commit of an output folder that also says, in *replaced, how
 * many files of the earlier normcmp run in it (its report.json and the
 * outputs that report lists) the new set replaced or removed: 0 when the
 * folder held no earlier run. */
int nc_outset_commit_ex(nc_outset *set, size_t *replaced, nc_err *err);

/* Removes every temporary, the folders this set created, and frees set.
 * Accepts NULL. */
void nc_outset_abort(nc_outset *set);

/* Removes every temporary file and staging folder still open, the lock
 * files held and the folders created by this process (async-signal-safe:
 * unlink, rmdir and getdents on paths kept in a list with no fixed size).
 * For the CLI's handlers of SIGBUS, SIGINT and SIGTERM, so that no
 * half-written file survives a fault or an interrupt. */
void nc_outfile_unlink_all(void);

/* Test hook: sleep ms milliseconds between the steps of writing and
 * committing outputs (0: none), so tests can kill a run mid-commit. Set by
 * the CLI from the environment; library code never reads it. */
void nc_outfile_test_delay(unsigned ms);

/* Creates dir and its missing parents (mode 0777 & ~umask) and checks that
 * files can be created in it. Errors name dir and say what failed. */
int nc_mkdirs(const char *dir, nc_err *err);

/* Writes the whole buffer to path through a temporary (open+write+commit). */
int nc_write_file(const char *path, const void *buf, size_t n, nc_err *err);

#endif
