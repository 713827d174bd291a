/*
 * outlier.h - the DyISRU paper's outlier-steps experiment.
 *
 * BRIEF.md, "Further facts": one token of d = 100 values from N(0, 2^2) has
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
#include "core/tensor.h"
#include "util/err.h"

typedef struct nc_outlier_fit {
    double param;        /* DyT: alpha; DyISRU: C */
    double mean_abs_res; /* mean |y - f(x)| over the mirrored points */
    double rmse;
    double max_abs_res;
    bool converged;
} nc_outlier_fit;

typedef struct nc_outlier_steps {
    size_t tokens;       /* tokens used (each gives one point and its mirror) */
    size_t points;       /* 2 * tokens */
    double *x, *y;       /* [points] the outlier points and their mirrors (owned, one block) */
    double amplitude;    /* the fixed amplitude */
    nc_outlier_fit dyt, dyisru;
    double ratio;        /* dyt.mean_abs_res / dyisru.mean_abs_res */
} nc_outlier_steps;

/* Runs the experiment on the tokens of x (one outlier point per token: the
 * token's largest value). Tokens with non-finite values are skipped. */
int nc_outlier_steps_run(const nc_tensor *x, nc_norm_kind norm, double eps,
                         nc_outlier_steps *out, nc_err *err);

/* Frees the points. Accepts NULL. */
void nc_outlier_steps_free(nc_outlier_steps *os);

#endif
