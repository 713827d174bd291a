/*
 * surrogate.h - the element-wise functions that stand in for a norm.
 *
 * docs/report.md "layers[].fits" and docs/theory.md. One table entry per
 * fit: its report name, legend label, formula, parameter names, and
 * vectorised f(x) and f'(x). The fitter, the exact-metrics pass, the
 * Jacobian comparison, the sweeps, the figures and the report all iterate
 * over this table, so adding a surrogate is adding an entry (and, if it
 * needs one, a solver in fit.c).
 *
 *   linear          y = slope*x + intercept                     (affine baseline)
 *   dyt             y = gamma*tanh(alpha*x) + beta              (DyT, scalar gamma/beta)
 *   dyt_per_channel y = gamma_i*tanh(alpha*x) + beta_i          (scalar alpha, per channel i)
 *   dyisru          y = scale*x/sqrt(x^2 + C)                   (scale fixed)
 *   dyisru_free     y = scale*x/sqrt(x^2 + C)                   (scale fitted)
 *   dyt_theory      dyt with gamma = A, alpha = 1/(A*rho), beta = 0
 *   dyisru_theory   dyisru with scale = A, C = A^2*rho^2
 *                   (A = sqrt(d) for RMSNorm, sqrt(d-1) for LayerNorm;
 *                   docs/theory.md derives both from the diagonal ODEs)
 *   derf            y = gamma*erf(alpha*x + shift) + beta       (Derf)
 */
#ifndef NC_SURROGATE_H
#define NC_SURROGATE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/norm.h"

typedef enum nc_fit_id {
    NC_FIT_LINEAR,
    NC_FIT_DYT,
    NC_FIT_DYT_PER_CHANNEL,
    NC_FIT_DYISRU,
    NC_FIT_DYISRU_FREE,
    NC_FIT_DYT_THEORY,
    NC_FIT_DYISRU_THEORY,
    NC_FIT_DERF,
    NC_FIT_COUNT
} nc_fit_id;

#define NC_MAX_PARAMS 4

/* Parameters of one fitted surrogate. p[] follows the entry's param names.
 * For dyt_per_channel, p[0] is alpha and pc[0..d) gamma_i, pc[d..2d) beta_i
 * (borrowed from the fit that owns them); pc is NULL otherwise. */
typedef struct nc_params {
    double p[NC_MAX_PARAMS];
    const double *pc;
    size_t d;
} nc_params;

typedef struct nc_surrogate {
    nc_fit_id id;
    const char *name;    /* report and config key, e.g. "dyisru_free" */
    const char *label;   /* legend text, e.g. "DyISRU (free scale)" */
    const char *formula; /* e.g. "scale*x/sqrt(x^2+C)" */
    int nparams;         /* scalar parameters in p[] */
    const char *param[NC_MAX_PARAMS];
    bool per_channel;    /* parameters depend on the channel */
    bool theory;         /* no free parameter: set from rho and d */
    /* y[k] = f(x[k]) for k < n; x[k] is channel (i0 + k) mod d. */
    void (*eval)(const nc_params *p, size_t i0, const double *x, size_t n, double *y);
    /* dy[k] = f'(x[k]), the derivative in x (the surrogate's "Jacobian"). */
    void (*deriv)(const nc_params *p, size_t i0, const double *x, size_t n, double *dy);
    /* Both at once, from one transcendental: the same bits as eval and
     * deriv (the same operations in the same order). */
    void (*both)(const nc_params *p, size_t i0, const double *x, size_t n, double *y,
                 double *dy);
} nc_surrogate;

/* The entry for id (never NULL for id < NC_FIT_COUNT). */
const nc_surrogate *nc_surrogate_get(nc_fit_id id);

/* The entry called name, or NULL. */
const nc_surrogate *nc_surrogate_find(const char *name);

/* Whether fit k is ranked in the per-layer verdicts: the shared-parameter
 * surrogates; not the affine map (the baseline) nor the per-channel DyT
 * (2d + 1 parameters: not like for like). */
bool nc_fit_ranked(nc_fit_id k);

/* One scalar point, for plots and tests: f(x) and f'(x). */
double nc_surrogate_f(const nc_surrogate *s, const nc_params *p, size_t channel, double x);
double nc_surrogate_df(const nc_surrogate *s, const nc_params *p, size_t channel, double x);

/* The amplitude A of the theory curves: the bound of the norm's output,
 * sqrt(d) (RMSNorm) or sqrt(d-1) (LayerNorm, d >= 2; sqrt(d) for d = 1). */
double nc_theory_amp(nc_norm_kind norm, size_t d);

/* The parameter-free theory curves (docs/theory.md) for a norm of width d
 * and scale rho (a token's own r_t or s_t, or one scale for the layer).
 * Written in the token's own variable u (x for RMSNorm, x - mu for
 * LayerNorm, which moves u_i at rate 1 - 1/d when x_i moves), the diagonal
 * is dy/du = (1/rho)(1 - y^2/A^2) with A^2 = d (RMSNorm) or d - 1
 * (LayerNorm): RMSNorm's ODEs with d -> d - 1 for LayerNorm. ODE-1 (rho
 * constant, y(0) = 0) gives DyT: gamma = A, alpha = 1/(A rho), beta = 0
 * (slope 1/rho at 0). ODE-2 (the exact rho = u_i / y_i) gives DyISRU:
 * scale = A, C = A^2 rho^2, the same slope at 0 (C = 1/alpha^2). */
nc_params nc_dyt_theory_params(nc_norm_kind norm, double rho, size_t d);
nc_params nc_dyisru_theory_params(nc_norm_kind norm, double rho, size_t d);

/* The one-scale theory value of the DyT alpha (id NC_FIT_DYT_THEORY) or
 * the DyISRU C (NC_FIT_DYISRU_THEORY) as a formula: "1/(A*rho), A = ...". */
const char *nc_theory_definition(nc_fit_id id);

/* A^2, the width of the theory's ODEs: d (RMSNorm), d - 1 (LayerNorm,
 * d >= 2). */
double nc_theory_width(nc_norm_kind norm, size_t d);

/* The formula, in rho and d (UTF-8), of the parameter those give: for
 * NC_FIT_DYT_THEORY its alpha ("1/(\u03c1\u221ad)" for RMSNorm,
 * "1/(\u03c1\u221a(d\u2212" "1))" for LayerNorm), for NC_FIT_DYISRU_THEORY its C
 * ("d\u03c1\u00b2", "(d\u2212" "1)\u03c1\u00b2"); NULL for other ids. Figure
 * legends take the formula from here, next to the numbers. */
const char *nc_theory_param_formula(nc_fit_id id, nc_norm_kind norm);

#endif
