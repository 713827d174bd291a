/*
 * outfile.h - output files that appear whole or not at all.
 *
 * A file is written to a temporary name in its target directory
 * (".<name>.tmp.XXXXXX"), then flushed, closed and renamed over the target
 * on commit. On abort, or any failure, the temporary is removed and the
 * target, if it existed, is untouched (STYLE.md section 4).
 */
#ifndef NC_OUTFILE_H
#define NC_OUTFILE_H

#include <stdbool.h>

#include "util/err.h"
#include "util/sink.h"

typedef struct nc_outfile nc_outfile;

/* Creates the temporary for path. On success *out is owned by the caller
 * and must go to nc_outfile_commit or nc_outfile_abort. */
int nc_outfile_open(const char *path, nc_outfile **out, nc_err *err);

/* A sink writing to the temporary; its errors name the target path. */
nc_sink nc_outfile_sink(nc_outfile *f);

/* Flushes, closes and renames the temporary to the target; frees f. On
 * failure the temporary is removed. Accepts NULL (returns 0). */
int nc_outfile_commit(nc_outfile *f, nc_err *err);

/* Removes the temporary and frees f. Accepts NULL. */
void nc_outfile_abort(nc_outfile *f);

/* A set of files in one folder that appear together: each is written to
 * its temporary when added; nc_outset_commit renames them all only after
 * every one was written, so a failure leaves none of them (and the
 * folder's earlier files untouched). */
typedef struct nc_outset nc_outset;

int nc_outset_alloc(const char *dir, nc_outset **out, nc_err *err);

/* Writes buf to the temporary of dir/name. */
int nc_outset_add(nc_outset *set, const char *name, const void *buf, size_t n, nc_err *err);

/* Renames every temporary into place and frees set (even on failure, after
 * removing what is left). Accepts NULL. */
int nc_outset_commit(nc_outset *set, nc_err *err);

/* Removes every temporary and frees set. Accepts NULL. */
void nc_outset_abort(nc_outset *set);

/* Removes every temporary still open (async-signal-safe: only unlink(2)
 * on paths kept in a fixed table). For the CLI's handlers of SIGBUS,
 * SIGINT and SIGTERM, so that no half-written file survives a fault or an
 * interrupt. At most NC_OUTFILE_TRACKED temporaries are tracked at once;
 * more still work, untracked. */
#define NC_OUTFILE_TRACKED 64
void nc_outfile_unlink_all(void);

/* Remembers dir as created by this run: nc_outfile_unlink_all then also
 * removes it if it is empty (rmdir). NULL forgets it. */
void nc_outfile_created_dir(const char *dir);

/* Creates dir and its missing parents (mode 0777 & ~umask) and checks that
 * files can be created in it. Errors name dir and say what failed. */
int nc_mkdirs(const char *dir, nc_err *err);

/* Writes the whole buffer to path through a temporary (open+write+commit). */
int nc_write_file(const char *path, const void *buf, size_t n, nc_err *err);

#endif
