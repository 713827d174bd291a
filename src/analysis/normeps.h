/*
 * normeps.h - what the tokens of a real output say about eps (normeps.c;
 * docs/report.md, "real_output_check").
 *
 * Each token's fitted scale (analysis/normcheck.h) gives 1/a_t^2 = m_t +
 * eps. With the weight as the model used it, eps_t = 1/a_t^2 - m_t and the
 * estimate is their mean weighted by w_t ~ 1/var(eps_t) = a_t^6 uu_t (uu_t
 * = sum_i (w_i u_i / B_i)^2: a_t's variance is ~ 1/uu_t, and eps_t moves
 * by -2/a_t^3 per unit of a_t). With an estimated weight, whose overall
 * scale the data cannot fix, eps is the intercept over the slope of the
 * weighted line 1/a_t^2 = beta m_t + gamma (delta method for its error).
 * The standard error is cluster-robust: identical tokens (same m_t and a_t:
 * repeated padding, class tokens, shared prompt prefixes) have identical
 * rounding errors and count as one observation. The interval is estimate
 * +- (Z se + bias), bias = 2 nc_scale_bias(u_c, u_y) times the weighted
 * mean of m_t + eps: each token's scale as the model computed it may be off
 * by that much, in the same direction for every token, which averaging
 * cannot remove.
 */
#ifndef NC_NORMEPS_H
#define NC_NORMEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

/* Standard errors on each side of an interval (eps, estimated weights). */
#define NC_NORMCHECK_Z 3.0
/* The model's own error in each token's scale that does not average out
 * over tokens, relative: NC_NORMCHECK_BIAS_ULPS units of the roundoff u_c
 * of its arithmetic, plus, for a half-precision output, a share of the
 * output's u_y: a chain of roundings in the output's dtype is biased.
 * Hugging Face LLaMA's RMSNorm (normalised value rounded, times the weight,
 * rounded again) errs by -0.008..-0.019 u_y on average in bfloat16 and by
 * at most 0.003 u_y in float16, over d = 64..4096 and token scales spread
 * 1..150x; one rounding, below 0.005 u_y (docs/report.md). The bounds
 * below are 2.7x and 3x those. */
#define NC_NORMCHECK_BIAS_ULPS 1.0
#define NC_NORMCHECK_BIAS_BF16 0.05
#define NC_NORMCHECK_BIAS_F16 0.01

/* That bound for a model computing with roundoff uc and writing an output
 * of roundoff uy (2^-8 bfloat16, 2^-11 float16; otherwise no share). */
double nc_scale_bias(double uc, double uy);

/* What the tokens say about eps under one kind. */
typedef struct nc_eps_fit {
    size_t tokens;       /* tokens with a positive fitted scale */
    size_t clusters;     /* groups of identical tokens among them */
    bool slope_fitted;   /* from the line 1/a^2 = beta m + gamma (weight estimated) */
    bool assessed;       /* enough tokens (and a positive slope) for an interval */
    double beta;         /* the slope: 1 when fixed; fitted, the square of the estimated
                          * weight's overall scale error */
    double estimate, se; /* eps estimate and its (cluster-robust) standard error */
    double bias;         /* the bound on the rounding bias */
    double lo, hi;       /* estimate -/+ (Z se + bias) */
    bool identified;     /* lo > 0 */
} nc_eps_fit;

/* The fit over nt tokens from m[t], a[t] and uu[t] (tokens with a NaN or a
 * non-positive a or uu are left out); slope: fit the line (weight
 * estimated); uc, uy: the unit roundoffs of the model's arithmetic and
 * of its output. Errors: NC_ENOMEM. */
int nc_eps_fit_run(const double *m, const double *a, const double *uu, size_t nt, bool slope,
                   double uc, double uy, nc_eps_fit *e, nc_err *err);

/* Whether the data allow eps (always, when not assessed). */
bool nc_eps_fit_allows(const nc_eps_fit *e, double eps);

/* The eps to use where the data decide: preferred when they allow it; else
 * the value in the interval with the fewest significant digits (a power of
 * ten first) nearest the estimate; when eps is not identified, the largest
 * power of ten below the upper end (0 if that is not positive). */
double nc_eps_pick(const nc_eps_fit *e, double preferred);

#endif
