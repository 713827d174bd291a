/*
 * fit.h - least-squares fits of the surrogates to weighted points.
 *
 * The points are either the layer's raw (x, y) pairs (weight 1 each) or the
 * means of fine bins of x with their counts as weights (see bins.h): both
 * give sum_k w_k (y_k - f(x_k))^2, exactly or up to the binning error.
 *
 * Solvers (docs/internals.md "How it computes", Fits):
 *  - DyT and DyISRU are linear in their amplitude and offset given the one
 *    nonlinear parameter theta (alpha, or C). Those are solved in closed
 *    form for each theta (variable projection), and theta is found by a
 *    log-spaced scan followed by Brent's root finder on dF/dlog(theta),
 *    which the envelope theorem gives directly from the residuals, so the
 *    optimum is located to ~1e-12 relative instead of the ~1e-8 a search on
 *    F's values could reach.
 *  - Derf (four parameters, two nonlinear) uses Levenberg-Marquardt with
 *    Marquardt's diagonal scaling and an analytic Jacobian.
 *  - The affine baseline is closed form.
 * None of this is specific to bins; tests compare each solver with SciPy's
 * curve_fit on the same points.
 */
#ifndef NC_FIT_H
#define NC_FIT_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/surrogate.h"
#include "util/err.h"

/* Defaults (docs/internals.md, rule 5: no magic numbers inside algorithms). */
#define NC_FIT_MAX_ITER 200     /* LM iterations / Brent steps */
#define NC_FIT_TOL 1e-12        /* relative tolerance on the nonlinear parameters */
#define NC_FIT_SCAN_HALF_WIDTH 9.0 /* scan log(theta) over centre +- this (e^9 ~ 8100) */
#define NC_FIT_SCAN_STEP 0.25   /* scan step in log(theta) */
#define NC_FIT_POLISH_WIDTH 1e-3 /* polish: first bracket start*exp(+-this), widened x8 */

typedef struct nc_points {
    const double *x; /* [n] abscissae */
    const double *y; /* [n] ordinates */
    const double *w; /* [n] weights, or NULL for 1 each */
    size_t n;
} nc_points;

typedef struct nc_fit_opts {
    bool amp_fixed;  /* hold the amplitude (gamma; DyISRU's scale) at amp */
    double amp;
    bool no_offset;  /* DyT/Derf: hold beta at 0 */
    double x_scale;  /* a typical |x| (the input's std): centres the searches */
    double start;    /* > 0: polish around this theta (alpha or C) instead of
                      * scanning: a bracket start*exp(+-NC_FIT_POLISH_WIDTH),
                      * widened until it holds the optimum (the full scan if
                      * it never does). Used to refine a binned fit on the
                      * raw points in a few evaluations. */
    int max_iter;    /* 0: NC_FIT_MAX_ITER */
    double tol;      /* 0: NC_FIT_TOL */
} nc_fit_opts;

typedef struct nc_fit_out {
    double p[NC_MAX_PARAMS]; /* in the surrogate's parameter order */
    double objective;        /* sum_k w_k (y_k - f(x_k))^2 at p */
    int iterations;          /* objective evaluations (1-D) or LM iterations */
    bool converged;
    char status[160];        /* "ok" or what went wrong, for the report */
} nc_fit_out;

/* y ~ slope*x + intercept (weighted least squares, closed form). */
int nc_fit_linear(const nc_points *pts, nc_fit_out *out, nc_err *err);

/* y ~ gamma*tanh(alpha*x) + beta: p = {alpha, gamma, beta}. */
int nc_fit_dyt(const nc_points *pts, const nc_fit_opts *o, nc_fit_out *out, nc_err *err);

/* y ~ scale*x/sqrt(x^2 + C): p = {C, scale}; scale = o->amp when fixed. */
int nc_fit_dyisru(const nc_points *pts, const nc_fit_opts *o, nc_fit_out *out, nc_err *err);

/* y ~ gamma*erf(alpha*x + shift) + beta: p = {alpha, shift, gamma, beta},
 * started from init (e.g. from the DyT fit: alpha*sqrt(pi)/2, 0, gamma, beta). */
int nc_fit_derf(const nc_points *pts, const nc_fit_opts *o, const double init[4],
                nc_fit_out *out, nc_err *err);

/* sum_k w_k (y_k - f(x_k))^2 for any surrogate (tests, diagnostics). */
double nc_fit_objective(const nc_points *pts, const nc_surrogate *s, const nc_params *p);

#endif
