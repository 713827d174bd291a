/*
 * boot.h - the token bootstrap: the uncertainty that comes from which
 * tokens a dump happens to hold (docs/report.md, "Uncertainty from the
 * tokens").
 *
 * Every number a verdict compares (R^2 and its gaps, the share of the
 * affine residual removed, backprop errors, alpha, the run-level slopes)
 * is a function of sums over the layer's points. The passes keep those
 * sums per block of tokens; a bootstrap replicate draws nb blocks with
 * replacement (multinomial counts c_b) and recomputes every number from
 * the weighted block sums sum_b c_b S_b, so it resamples block sums, not
 * points, and all numbers of one replicate share its draw (paired).
 *
 * Blocks: tokens that belong together (the tokens of one sequence or image
 * are correlated) must be resampled together. A block is `token_block`
 * consecutive tokens (by their index in the dump: a sequence, when the
 * dump says how long its sequences are), and when that gives more than
 * max_blocks blocks, `group` consecutive ones are merged so that at most
 * max_blocks remain (larger blocks only make the bootstrap more
 * conservative). The draws of replicate r depend only on (seed, nb, r):
 * layers with the same number of blocks (the layers of one model dumped
 * from the same tokens) get the same draws, so run-level numbers computed
 * replicate by replicate across layers are paired too.
 *
 * Left out: what the sums are and what is computed from them (the layer
 * analysis, analysis/layer_boot.c).
 */
#ifndef NC_BOOT_H
#define NC_BOOT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define NC_BOOT_DEFAULT_REPLICATES 1000 /* replicates (0 turns the bootstrap off) */
#define NC_BOOT_MAX_REPLICATES 100000
#define NC_BOOT_MAX_BLOCKS 1024         /* most blocks: more are merged in groups */
#define NC_BOOT_MIN_BLOCKS 20           /* fewer blocks with a point: no bootstrap */

/* Mixed into the run's seed (seed ^ tag) so that the draws never repeat a
 * synthetic layer's or the probes' streams (ASCII "tokboot"). */
#define NC_BOOT_SEED_TAG UINT64_C(0x746f6b626f6f74)

/* Replicates kept per layer for the run-level slopes (report.json
 * layers[].bootstrap.run_replicates, which `normcmp merge` reads back), at
 * NC_BOOT_REP_DIGITS significant digits: a slope's standard error needs
 * neither more replicates nor more digits, and the report stays small. */
#define NC_BOOT_RUN_REPLICATES 200
#define NC_BOOT_REP_DIGITS 7

static inline size_t nc_boot_run_replicates(size_t B)
{
    return B < NC_BOOT_RUN_REPLICATES ? B : NC_BOOT_RUN_REPLICATES;
}

/* v rounded to NC_BOOT_REP_DIGITS significant digits (what the report
 * prints and merge reads back: the same double). */
double nc_boot_round(double v);

/* Central interval of the bootstrap distribution: 95%. */
#define NC_BOOT_LEVEL 0.95

typedef struct nc_boot_blocks {
    size_t token_block; /* tokens per sequence, >= 1 */
    size_t group;       /* sequences per block, >= 1 */
    size_t nb;          /* blocks over N tokens */
} nc_boot_blocks;

/* The blocks of N tokens cut into sequences of token_block (>= 1) tokens,
 * merged group-wise so that at most max_blocks remain. */
nc_boot_blocks nc_boot_blocks_make(size_t N, size_t token_block, size_t max_blocks);

/* The block of the token with index `token` in the dump. */
static inline size_t nc_boot_block_of(const nc_boot_blocks *b, size_t token)
{
    return token / (b->token_block * b->group);
}

/* The counts of replicate r: c[b] = how many of nb draws (uniform over the
 * nb blocks, core/rng.h nc_rng_below, stream r of seed ^ NC_BOOT_SEED_TAG)
 * fell on block b. */
void nc_boot_counts(uint64_t seed, size_t nb, size_t r, uint32_t *c);

/* R[r m + q] = sum_b c_rb S[b m + q] for replicates r < B, quantities
 * q < m: the weighted block sums of each replicate. S is [nb, m], R
 * [B, m] (owned by the caller). Errors: NC_ENOMEM. */
int nc_boot_resample(const double *S, size_t nb, size_t m, size_t B, uint64_t seed, double *R,
                     nc_err *err);

/* A bootstrap distribution summarised: the standard deviation of the
 * replicates (the standard error) and the central NC_BOOT_LEVEL interval
 * of their percentiles. NaN when fewer than 2 replicates are finite. */
typedef struct nc_boot_ci {
    double se, lo, hi;
} nc_boot_ci;

/* The summary of v[k * stride], k < B (work: B doubles). Non-finite
 * replicates are left out; more than 1% of them makes the summary NaN. */
nc_boot_ci nc_boot_summary(const double *v, size_t stride, size_t B, double *work);

#endif
