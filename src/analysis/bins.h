/*
 * bins.h - fine bins of x, uniform near 0 and logarithmic in the tails.
 *
 * Every pooled fit needs sums over all N*d points, for many trial
 * parameters. One streaming pass instead accumulates, per bin of x, the
 * count, sum x and sum y; the fitters then work on the bin means with the
 * counts as weights (fit.h). Binning moves each x by less than a bin width h
 * from its bin mean; expanding f around the mean, the objective
 * sum w (ybar - f(xbar))^2 + (within-bin variance of y) differs from the
 * exact sum (y - f(x))^2 by O(h^2) per point (terms in f'^2, in f' times the
 * within-bin slope of y, and in f'' times the residual), so the fitted
 * parameters move by O(h^2) too. The layer pipeline measures the difference
 * on every run by recomputing the exact SSE at the fitted parameters, and
 * reports it.
 *
 * The map: v = 1 + |x|/w, and the bin is the top bits of v's IEEE-754
 * pattern (exponent and m mantissa bits), mirrored for x < 0. Below |x| = w
 * the bins are uniform of width w*2^-m; above, each octave of v holds 2^m
 * bins, so the relative width stays 2^-m however heavy the tails (a 1e30
 * outlier costs ~100 octaves, not a billion empty bins). It costs an add,
 * a multiply and a shift per point: asinh-like spacing without a logarithm.
 */
#ifndef NC_BINS_H
#define NC_BINS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct nc_binmap {
    double inv_w; /* 1/w: |x| = w is where the spacing turns logarithmic */
    int m;        /* mantissa bits kept: 2^m bins per octave */
    size_t half;  /* bins per sign; bins are [0, 2*half) */
} nc_binmap;

/* The finest map with at most max_bins bins covering |x| <= xmax, with the
 * knee at w (> 0). max_bins >= 4. */
nc_binmap nc_binmap_make(double w, double xmax, size_t max_bins);

static inline size_t nc_binmap_count(const nc_binmap *bm)
{
    return 2 * bm->half;
}

/* The bin of a finite x. Values beyond xmax go to the outermost bins. */
static inline size_t nc_bin_of(const nc_binmap *bm, double x)
{
    double v = 1.0 + fabs(x) * bm->inv_w;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint64_t k = (bits - UINT64_C(0x3ff0000000000000)) >> (52 - bm->m);
    if (k >= bm->half)
        k = bm->half - 1;
    return x < 0 ? bm->half - 1 - (size_t)k : bm->half + (size_t)k;
}

/* The edges of bin b: [lo, hi) in |x| for its sign (lo <= |x| < hi). */
void nc_bin_edges(const nc_binmap *bm, size_t b, double *lo, double *hi);

#endif
