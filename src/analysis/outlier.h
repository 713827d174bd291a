/*
 * outlier.h - the DyISRU paper's outlier-steps experiment.
 *
 * docs/outlier_steps.md, "Protocol": one token of d = 100 values from N(0, 2^2) has
 * its largest value pushed up by 5k for k = 1..9 (core/synth.h generates
 * these tokens); LayerNorm is applied; each token's outlier gives a point
 * (x, y), mirrored to (-x, -y). DyT and DyISRU, with their amplitude fixed
 * to the norm's bound (sqrt(d-1) for LayerNorm, sqrt(d) for RMSNorm) and no
 * offset, are fitted to those points by least squares, and their mean
 * absolute residuals compared. Holding the other entries fixed, RMSNorm is
 * exactly DyISRU in the moving entry (sqrt(d) x / sqrt(x^2 + P)), and
 * LayerNorm nearly so, so DyISRU's residual comes out far below DyT's.
 */
#ifndef NC_OUTLIER_H
#define NC_OUTLIER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/norm.h"
#include "core/synth.h"
#include "core/tensor.h"
#include "util/err.h"

typedef struct nc_outlier_fit {
    double param;        /* DyT: alpha; DyISRU: C */
    double mean_abs_res; /* mean |y - f(x)| over the mirrored points */
    double rmse;
    double max_abs_res;
    bool converged;
} nc_outlier_fit;

/* Quantiles over draws: NumPy's default (linear interpolation between the
 * order statistics, np.percentile's "linear" method). */
typedef struct nc_outlier_quantiles {
    double median, p05, p95, min, max;
} nc_outlier_quantiles;

/* The experiment repeated on draws base tokens, seeds seed0 .. seed0 +
 * draws - 1 (deterministic: the same seeds give the same numbers). */
typedef struct nc_outlier_spread {
    size_t draws;
    uint64_t seed0;
    nc_synth_rng rng;
    nc_outlier_quantiles ratio;       /* dyt / dyisru mean |residual| */
    nc_outlier_quantiles dyt_res;     /* DyT's mean |residual| */
    nc_outlier_quantiles dyisru_res;  /* DyISRU's mean |residual| */
    nc_outlier_quantiles mean_others; /* |m'|: mean of the d - 1 other base entries */
    nc_outlier_quantiles ratio_m;     /* ratio * |m'| (docs/outlier_steps.md) */
} nc_outlier_spread;

typedef struct nc_outlier_steps {
    size_t tokens;       /* tokens used (each gives one point and its mirror) */
    size_t points;       /* 2 * tokens */
    double *x, *y;       /* [points] the outlier points and their mirrors (owned, one block) */
    double amplitude;    /* the fixed amplitude */
    nc_outlier_fit dyt, dyisru;
    double ratio;        /* dyt.mean_abs_res / dyisru.mean_abs_res */
    bool has_spread;
    nc_outlier_spread spread; /* nc_outlier_steps_spread */
} nc_outlier_steps;

/* Runs the experiment on the tokens of x (one outlier point per token: the
 * token's largest value). Tokens with non-finite values are skipped. */
int nc_outlier_steps_run(const nc_tensor *x, nc_norm_kind norm, double eps,
                         nc_outlier_steps *out, nc_err *err);

/* The experiment on draws synthetic token sets (core/synth.h's
 * nc_synth_outlier_steps with d, steps, step 5, sigma 2 and the generator
 * rng), seeds seed0 .. seed0 + draws - 1, each analysed as
 * nc_outlier_steps_run does with norm and eps; writes the quantiles into
 * out->spread and sets out->has_spread. draws >= 1. */
int nc_outlier_steps_spread(size_t d, int steps, nc_synth_rng rng, uint64_t seed0, size_t draws,
                            nc_norm_kind norm, double eps, nc_outlier_steps *out, nc_err *err);

/* Frees the points. Accepts NULL. */
void nc_outlier_steps_free(nc_outlier_steps *os);

#endif
