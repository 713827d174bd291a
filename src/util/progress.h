/*
 * progress.h - a progress line on stderr, only when stderr is a terminal.
 *
 * The one place library code may print (docs/internals.md, rule 6). A disabled
 * progress (not a terminal, --quiet, or NULL) does nothing. Updates are
 * rate-limited (10 per second) and safe to call from worker threads.
 *
 *   normcmp: layer 3 of 44  blocks.2.ln1  verify  [#####.......]  45%  ETA 1m12s
 *
 * The ETA is the run's: the time so far per point of the layers done,
 * times the points left (shown once a layer is done).
 */
#ifndef NC_PROGRESS_H
#define NC_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nc_progress nc_progress;

/* A progress display, enabled only if `enabled` and stderr is a terminal.
 * Returns NULL when disabled or out of memory: every call accepts NULL. */
nc_progress *nc_progress_alloc(bool enabled);

/* Starts a new task: label (a layer name), stage ("stats", "fits", ...),
 * total units of work (points), resetting the count and the clock. */
void nc_progress_begin(nc_progress *p, const char *label, const char *stage, uint64_t total);

/* Starts layer k (1-based) of n of a run whose layers hold total points
 * in all; points_before: the points of the layers before it. */
void nc_progress_layer(nc_progress *p, size_t k, size_t n, uint64_t points_before,
                       uint64_t total);

/* Adds done units to the current task (thread-safe). */
void nc_progress_add(nc_progress *p, uint64_t done);

/* Erases the line. */
void nc_progress_end(nc_progress *p);

/* Erases the line and frees p. Accepts NULL. */
void nc_progress_free(nc_progress *p);

#endif
