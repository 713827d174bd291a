/*
 * sweep.h - approximation error as a function of alpha (DyT) or C (DyISRU).
 *
 * For every value of the grid, on a layer's fit data (layer.h: the raw
 * points of a small layer, else the bins of x with their counts and the
 * bins' means of y and of the exact Jacobian diagonal J_ii):
 *
 *   rmse_refit   RMSE of the surrogate against the norm's output with the
 *                amplitude (and DyT's offset) refitted in closed form
 *   rmse_fixed   RMSE with the amplitude and offset fixed at given values
 *   jac_refit    RMSE of f'(x) against J_ii with the refitted amplitude
 *   jac_fixed    the same with the fixed amplitude
 *
 * DyT: f = gamma tanh(alpha x) + beta, f' = gamma alpha (1 - tanh^2).
 * DyISRU: f = s x / sqrt(x^2 + C), f' = s C / (x^2 + C)^(3/2), no offset.
 *
 * No value re-reads the data: each evaluation is a loop over the fit data.
 * Sums of squares split into a between-bins part, computed from the bin
 * means, and a within-bins part, exact (sum y^2 - sum w ybar^2), so on raw
 * points the errors are exact and on bins they carry only the binning
 * error of f at the bin means: O(h^2) relative (bins.h), measured by
 * tests/ref/test_sweep.py against the direct computation.
 */
#ifndef NC_SWEEP_H
#define NC_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/layer.h"
#include "util/err.h"

typedef enum nc_sweep_param { NC_SWEEP_ALPHA, NC_SWEEP_C } nc_sweep_param;

/* "alpha" / "C" */
const char *nc_sweep_param_name(nc_sweep_param p);

typedef struct nc_sweep_result {
    nc_sweep_param param;
    size_t n;           /* grid size */
    double *grid;       /* [n] the values, ascending; the block below is one allocation */
    double *rmse_refit; /* [n] */
    double *amp_refit;  /* [n] the refitted amplitude (gamma, or s) */
    double *off_refit;  /* [n] the refitted offset (beta; 0 for DyISRU) */
    double *rmse_fixed; /* [n] */
    double *jac_refit;  /* [n] */
    double *jac_fixed;  /* [n] */
    double fixed_amp, fixed_off; /* the fixed amplitude and offset used */
    double opt_refit, opt_fixed, opt_jac; /* minimisers: the grid's best point refined by a
                                           * parabola in log(value); NaN if at an end */
    double min_refit, min_fixed, min_jac; /* the smallest RMSE on the grid */
    double fitted;      /* the layer's fitted value that minimises rmse_refit: fits.dyt
                         * alpha, or fits.dyisru_free C */
    double theory;      /* 1/(rho sqrt d), or d rho^2 */
    bool exact;         /* evaluated on raw points (else on bins) */
    double time_s;
} nc_sweep_result;

/* A grid of n values from `from` to `to` (0 < from < to), log- or
 * linearly spaced, into grid[n]. */
void nc_sweep_grid(double from, double to, size_t n, bool log_scale, double *grid);

/* Evaluates the sweep of `param` over grid[n] (ascending, positive) on a
 * finished layer analysis, with the fixed amplitude and offset given.
 * out owns its arrays afterwards (nc_sweep_result_free). */
int nc_sweep_run(const nc_layer_result *res, nc_sweep_param param, const double *grid, size_t n,
                 double fixed_amp, double fixed_off, nc_sweep_result *out, nc_err *err);

void nc_sweep_result_free(nc_sweep_result *r);

#endif
