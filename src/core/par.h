/*
 * par.h - one streaming pass over the tokens of a layer, split across threads.
 *
 * The N tokens are cut into NC_SHARDS contiguous shards that depend on N
 * only. Each shard owns its accumulators (index them by the shard number)
 * and is processed by one thread, block by block of rows converted to
 * double; the caller merges the shards in shard order afterwards. So a pass
 * gives bit-identical results for any thread count (docs/internals.md, rule 5).
 *
 * The executor owns no numerics: the block function does the work.
 */
#ifndef NC_PAR_H
#define NC_PAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "util/err.h"
#include "util/progress.h"

/* Shards per pass: enough to balance 2..16 threads. */
#define NC_SHARDS 16

/* Bytes of double rows a block converts at once (fits in L2 beside the
 * accumulators). */
#define NC_BLOCK_BYTES (256 * 1024)

/* Threads start lazily: a pass uses one thread per this many points (N d)
 * at most, so a small layer's passes run on the calling thread alone and
 * never pay for starting, scheduling and joining workers (on a busy
 * machine a started thread can wait milliseconds for a core). Results do
 * not depend on it (the shards do not change). */
#define NC_PASS_POINTS_PER_THREAD ((size_t)1 << 16)

/* The work on tokens [t0, t0 + nt) of shard `shard`. rows[nt * d] holds them
 * as doubles (x for token t0 + k at rows + k * d). codes[nt * d], when the
 * pass asked for them and the tensor is F16 or BF16, holds the same values
 * as their 16-bit codes (so that a function of x can be looked up in a
 * table of 65536 entries); NULL otherwise. scratch is per-thread
 * memory of scratch_bytes (or NULL): zeroed when the pass starts and kept
 * across the blocks one thread runs, so a block function may set up
 * per-thread state in it on first use. */
typedef void (*nc_block_fn)(void *ctx, int shard, size_t t0, size_t nt, const double *rows,
                            const uint16_t *codes, void *scratch);

typedef struct nc_pass {
    const nc_tensor *x;    /* the float tensor streamed, [N, d] */
    const size_t *tokens;  /* optional: the subset of token indices to visit, ascending */
    size_t ntokens;        /* length of tokens (ignored when tokens is NULL) */
    int threads;           /* 1 .. NC_SHARDS; 0 means the online CPUs (fewer for
                            * a small pass: NC_PASS_POINTS_PER_THREAD) */
    size_t scratch_bytes;  /* per-thread scratch handed to fn (0: none) */
    bool codes;            /* hand fn the rows' 16-bit codes too (F16, BF16 tensors) */
    nc_progress *progress; /* optional: advanced by the points of each block */
} nc_pass;

/* The shard of token range [0, n): shard k covers [nc_shard_begin(n, k),
 * nc_shard_begin(n, k + 1)). */
size_t nc_shard_begin(size_t n, int k);

/* Runs fn over every token (or every listed token) once. With a token list,
 * t0 in fn is the position in the list and the rows are the listed tokens.
 * Returns 0 or NC_ENOMEM/NC_EINTERNAL (thread creation). */
int nc_pass_run(const nc_pass *pass, nc_block_fn fn, void *ctx, nc_err *err);

/* The number of online CPUs, at least 1 and at most NC_SHARDS. */
int nc_default_threads(void);

#endif
