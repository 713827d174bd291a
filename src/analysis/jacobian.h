/*
 * jacobian.h - the diagonal-Jacobian comparison (docs/jacobian.md defines
 * every number; docs/theory.md derives the diagonal's ODEs).
 *
 * Legend: N tokens, d channels, t a visited token, i a channel; per token
 * y = (x - c_t) * inv_t (layer.h), scale = 1/inv. The Jacobian of the norm
 * before its affine part is, exactly (eps included):
 *
 *   RMSNorm    J = inv (I - y y^T / d)                  (y = x / r)
 *   LayerNorm  J = inv (I - 1 1^T / d - y y^T / d)      (y = xhat)
 *
 * Both are symmetric, so J^T g = J g:
 *
 *   J^T g  = inv (g - [mean(g) 1] - y (y.g) / d)        [..] LayerNorm only
 *   J_ii   = inv (a - y_i^2 / d),  a = 1 (RMSNorm) or 1 - 1/d (LayerNorm)
 *   ||J||_F^2 = inv^2 (d - 2q + q^2)                     RMSNorm
 *             = inv^2 (d - 1 - 2q + q^2 + 2 m^2)         LayerNorm
 *
 * with q = ||y||^2 / d and m = mean(y). (||I - A||_F^2 = d - 2 tr A +
 * ||A||_F^2; for LayerNorm A = (1 1^T + y y^T)/d, tr A = 1 + q and ||A||_F^2
 * = 1 + q^2 + 2 (1.y)^2 / d^2. With y orthogonal to 1 and q = kappa =
 * var/(var + eps) this is d - 1 - 2 kappa + kappa^2; the exact form
 * in the y's is what is computed.)
 *
 * nc_jacobian_run computes, in one streaming pass over the layer's input
 * (O(d) per token, never d x d; docs/jacobian.md defines each quantity, its
 * Gaussian reference value and its standard error):
 *
 *   diag_frobenius_share  sum_t sum_i J_ii^2 / sum_t ||J_t||_F^2 (pooled; an
 *                         energy share)
 *   offdiag_frobenius_share  sqrt(sum_t off_t / sum_t ||J_t||_F^2), off_t =
 *                         sum_{i != j} J_ij^2 = ||J||_F^2 - sum J_ii^2 in
 *                         closed form (below): the plain share, ~1/sqrt(d)
 *   backprop              for a diagonal D (diag(J), or diag(f'(x)) of a
 *                         surrogate), per token the exact expectation over
 *                         standard-normal probes g:
 *                           E||(D - J) g||^2 = ||D - J||_F^2
 *                                            = sum_i (D_i - J_ii)^2 + off_t
 *                           E||J g||^2       = ||J_t||_F^2
 *                         err = sqrt(sum_t ||D - J_t||_F^2 / sum_t ||J_t||_F^2)
 *                         (pooled, the ranking value, exact: err_se = 0), and
 *                         the per-token r_t = ||D - J_t||_F / ||J_t||_F
 *                         summarised over tokens (mean, median, p95, with
 *                         standard errors of the mean and median over tokens)
 *   backprop_real         the same with g = weight * grad_output, the
 *                         gradient at the norm's output before the affine
 *                         part (grad_output is dL/d(weight * y + bias)), one
 *                         value per token: err = sqrt(sum_t ||(D - J) g_t||^2
 *                         / sum_t ||J g_t||^2), err_se by the delta method
 *                         over tokens (nc_jac_ratio_se)
 *   radial_retention      sqrt(sum_t ||diag(J_t) y_t||^2 / sum_t ||inv_t y_t||^2):
 *                         J y = 0 (eps = 0) but diag(J) y keeps nearly all of y/r
 *   ones_retention        (LayerNorm) the same for the direction 1:
 *                         sqrt(sum_t ||diag(J_t) 1||^2 / sum_t d inv_t^2)
 *   surrogates            per fitted surrogate f (layer.h fits[k].ok): RMSE
 *                         and max of J_ii - f'(x_i) over all points, both
 *                         also relative to the RMS of J_ii, and the
 *                         backprop errors above with diag(f'(x)) for D
 *   ranking               the surrogates ordered by backprop err (exact:
 *                         plain order) and by backprop_real err (a tie with
 *                         the one before when the gap is within two standard
 *                         errors of the gap, paired over tokens)
 *
 * off_t in closed form, with S2 = sum y^2, S1 = sum y, S4 = sum y^4:
 *   RMSNorm    J_ij = -inv y_i y_j / d:        off = inv^2 (S2^2 - S4) / d^2
 *   LayerNorm  J_ij = -inv (1 + y_i y_j) / d:  off = inv^2 (d (d - 1) +
 *              2 (S1^2 - S2) + S2^2 - S4) / d^2
 *
 * Zero denominators. When ||J^T g|| = 0 (g in the null space of J^T: g
 * parallel to y with eps = 0, or parallel to 1 for LayerNorm; or J = 0) the
 * relative error is +inf if the error is not zero and 0 if it is too; it is
 * never NaN. Summaries count the infinite values (n_inf), and their mean is
 * then +inf (the median and p95 only if enough values are infinite).
 * Tokens whose real gradient is all zero carry no information and are left
 * out of backprop_real (counted), as are tokens whose real gradient is not
 * finite.
 *
 * Then, as checks:
 *   dense     for a sample of tokens, every entry J_ij computed from its
 *             formula and J^T g summed explicitly for the columns G =
 *             [probes | real gradient] (`probes` standard normals per token
 *             from the token's stream nc_rng(seed ^ NC_JAC_SEED_TAG, row),
 *             NC_JAC_PROBES by default), held against the pass's O(d) forms
 *             within a rounding bound: jacobian_dense.h says what it
 *             proves and how large the sample is.
 *   ODE       ODE-1 dy/dx = (1/rho)(1 - y^2/d), y(0) = 0, and ODE-2
 *             dy/dx = (y/x)(1 - y^2/d) integrated (ode.h, rtol = atol =
 *             1e-12) over [0, max |x|] and compared with sqrt(d) tanh(x /
 *             (rho sqrt d)) and sqrt(d) x / sqrt(x^2 + d rho^2).
 *
 * Results do not depend on the thread count (per-shard accumulators merged
 * in shard order; per-token values in arrays summarised serially; probes
 * from per-token streams). Memory: O(nt * (2 + fits) (1 + [real])) doubles,
 * O((4 + fits) d) doubles of scratch per thread, O(d * columns) for the
 * dense check.
 *
 * Left out: the Jacobian after the affine part (diag(weight) J, whose
 * diagonal share is the same question weighted per channel) and anything
 * about the bias.
 */
#ifndef NC_JACOBIAN_H
#define NC_JACOBIAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/jacobian_dense.h"
#include "analysis/layer.h"
#include "analysis/ode.h"
#include "analysis/surrogate.h"
#include "core/norm.h"
#include "core/tensor.h"
#include "util/err.h"
#include "util/progress.h"

/* Mixed into the seed (seed ^ tag) before the probe streams are drawn, so
 * that a probe never repeats the normals of a synthetic layer generated
 * with the same seed and stream = row (ASCII "jacobian"). */
#define NC_JAC_SEED_TAG UINT64_C(0x6a61636f6269616e)

/* Where ODE-2 starts, in units of rho sqrt(d): ODE-2 is singular at x = 0
 * (see nc_jac_ode_check), so it starts at x0 = NC_JAC_ODE2_X0 rho sqrt(d)
 * (or x_max / 2 if that is smaller) from its series. */
#define NC_JAC_ODE2_X0 1e-3

typedef struct nc_jac_opts {
    size_t probes;          /* probe columns of the dense check (0: NC_JAC_PROBES) */
    size_t dense_tokens;    /* tokens checked densely (0: nc_jac_dense_default_tokens;
                             * NC_JAC_DENSE_ALL: all); at most the used tokens */
    size_t dense_max_entries; /* skip the dense check when d*d exceeds this
                               * (0: NC_JAC_DENSE_MAX_ENTRIES) */
    bool no_dense;          /* skip the dense check */
    uint64_t seed;          /* probe seed, used as given (0 is a valid seed) */
} nc_jac_opts;

/* A backprop error of one diagonal D against J over the tokens: per token
 * a numerator num_t (the squared error) and a denominator den_t (the
 * squared size of J^T g), both exact expectations over Gaussian probes or
 * the real gradient's values. n_inf of the n per-token ratios are +inf
 * (zero denominators, see above). All NaN when n == 0. */
typedef struct nc_jac_summary {
    double err;        /* sqrt(sum num_t / sum den_t): the layer as one vector (ranks) */
    double err_se;     /* its standard error over tokens; 0 when exact */
    bool exact;        /* err is an exact expectation (probes), not sampled */
    double mean, median, p95; /* of the per-token ratios sqrt(num_t / den_t) */
    double mean_se;    /* sd / sqrt(n) of the per-token ratios */
    double median_se;  /* order-statistic standard error of the median */
    size_t n, n_inf;
} nc_jac_summary;

/* One surrogate against the exact diagonal. */
typedef struct nc_jac_surrogate {
    bool ok;                      /* compared: the layer's fit was ok */
    double diag_rmse;             /* sqrt(mean over points of (J_ii - f'(x_i))^2) */
    double diag_max_err;          /* max over points of |J_ii - f'(x_i)| */
    double diag_rmse_rel;         /* diag_rmse / sqrt(mean J_ii^2) */
    double diag_max_err_rel;      /* diag_max_err / sqrt(mean J_ii^2) */
    nc_jac_summary backprop;      /* ||diag(f') - J||_F / ||J||_F, exact over probes */
    nc_jac_summary backprop_real; /* ||diag(f') g - J^T g|| / ||J^T g||, real g (has_real) */
} nc_jac_surrogate;

/* One place of a ranking of the surrogates by a backprop err. */
typedef struct nc_jac_rank {
    int id;          /* nc_fit_id */
    double err, se;  /* the surrogate's err and err_se */
    double gap_se;   /* standard error of err - the previous one's err (paired; 0 first) */
    bool tie;        /* within two gap_se of the previous place (never for exact errs) */
} nc_jac_rank;

/* The expected values of the pooled quantities for Gaussian inputs
 * (docs/jacobian.md: x with i.i.d. normal entries, zero mean for RMSNorm,
 * eps -> 0), at width d. NaN where undefined (d too small). */
typedef struct nc_jac_gauss_ref {
    double diag_frobenius_share;    /* RMSNorm (d+1)/(d+2); LayerNorm (d-1)/(d+1) */
    double offdiag_frobenius_share; /* sqrt(1/(d+2)); sqrt(2/(d+1)) = backprop err of diag(J) */
    double radial_retention;
    double ones_retention;          /* LayerNorm only */
} nc_jac_gauss_ref;

/* The ODE check. Deviations are absolute (y is in units of the norm's
 * output, bounded by sqrt(d)), the maxima over the integrator's accepted
 * points (every accepted step and the end point). */
typedef struct nc_jac_ode {
    bool ok;              /* both integrations reached x_max */
    char status[96];      /* "ok" or why not */
    double rho;           /* the constant scale used (the layer's mean token scale) */
    double width;         /* A^2 of the ODEs: d (RMSNorm), d - 1 (LayerNorm, in u = x - mu) */
    double x_max;         /* the interval is [0, x_max], x_max = max |x| */
    double ode2_x0;       /* ODE-2 starts here, from its series */
    double ode1_max_dev;  /* max |y_ode1 - A tanh(u / (A rho))| */
    double ode2_max_dev;  /* max |y_ode2 - A u / sqrt(u^2 + A^2 rho^2)| */
    size_t ode1_steps, ode2_steps;       /* accepted steps */
    size_t ode1_rejected, ode2_rejected; /* rejected attempts */
} nc_jac_ode;

typedef struct nc_jac_result {
    nc_norm_kind norm;
    size_t d;
    size_t tokens;               /* tokens with an output (NC_TOKEN_OK) compared */
    size_t probes;               /* probe columns per token of the dense check */
    uint64_t seed;               /* probe seed (before NC_JAC_SEED_TAG) */

    double diag_frobenius_share; /* pooled sum J_ii^2 / sum ||J||_F^2 */
    double offdiag_frobenius_share; /* sqrt(pooled sum off_t / sum ||J||_F^2) */
    double radial_retention;     /* pooled ||diag(J) y|| / ||y / scale|| */
    double ones_retention;       /* LayerNorm: pooled ||diag(J) 1|| / ||1 / scale||;
                                  * NaN for RMSNorm */
    nc_jac_summary backprop;     /* diag(J) against J, exact over probes */
    nc_jac_gauss_ref gauss;      /* Gaussian reference values at this d */

    bool has_real;               /* real gradients were given */
    bool real_weighted;          /* ... and multiplied by the affine weight */
    nc_jac_summary backprop_real;
    size_t real_zero_tokens;      /* left out: real gradient all zero */
    size_t real_nonfinite_tokens; /* left out: real gradient not finite */

    nc_jac_surrogate surr[NC_FIT_COUNT]; /* indexed by nc_fit_id; ok says which */
    int nranked;                          /* surrogates compared */
    nc_jac_rank rank[NC_FIT_COUNT];       /* by backprop.err, best first */
    nc_jac_rank rank_real[NC_FIT_COUNT];  /* by backprop_real.err (has_real) */

    nc_jac_ode ode;

    nc_jac_dense dense;             /* the dense check (jacobian_dense.h) */

    double time_analytic_s;         /* the streaming pass */
    double time_stats_s;            /* summaries, standard errors, rankings */
    double time_dense_s;            /* the dense check */
    double time_ode_s;

    double *token_backprop;         /* [tok.nt] per-token r_t of diag(J) (exact),
                                     * NaN for tokens without output; owned */
} nc_jac_result;

/* Options with the defaults: probes NC_JAC_PROBES, dense default rule,
 * seed 1. */
void nc_jac_opts_defaults(nc_jac_opts *o);

/* Runs the comparison on an analysed layer. res is the result of
 * nc_layer_analyze on the input x (the same tensor: the pass visits the
 * same tokens, with res->tok's per-token state); grad is the upstream
 * gradient dL/d(output after the affine part) [N, d] in any float dtype, or
 * NULL; weight the affine weight [d] (the gradient at the norm's output is
 * weight * grad), or NULL (weight 1). o may be NULL (defaults). threads as
 * in nc_pass (0: online CPUs); the dense check runs on one thread and
 * allocates O(d * columns). On success out is filled (free with nc_jac_result_free); on
 * failure out holds nothing to free. Errors: NC_EINVAL (grad's shape or
 * dtype, x not the analysed shape), NC_ENOMEM, NC_EINTERNAL (threads). A
 * layer without usable tokens is not an error: the metrics are NaN. */
int nc_jacobian_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                    const double *weight, const nc_jac_opts *o, int threads,
                    nc_progress *progress, nc_jac_result *out, nc_err *err);

void nc_jac_result_free(nc_jac_result *r);

/* ---- summaries and their standard errors (jacobian_stats.c) ------------ */

/* The Gaussian reference values at width d (nc_jac_gauss_ref). */
nc_jac_gauss_ref nc_jac_gaussian_ref(nc_norm_kind norm, size_t d);

/* Summarises a backprop error from per-token num[t], den[t] over the n
 * tokens listed in idx (or 0..n-1 when idx is NULL): err, the per-token
 * ratios' mean, median, p95 (NumPy's default quantiles) and their standard
 * errors. exact: err_se = 0; else err_se by the delta method (below).
 * work: 2 n doubles. */
nc_jac_summary nc_jac_summarize(const double *num, const double *den, const size_t *idx,
                                size_t n, bool exact, double *work);

/* The delta-method standard error over tokens of err = sqrt(A / B), A =
 * sum num_t, B = sum den_t, for n >= 2: the influence of token t is phi_t =
 * (num_t - R den_t) / (2 err B) (R = A / B), and se = sqrt(n / (n - 1)
 * sum phi_t^2). With num2 (another diagonal's numerators over the same
 * denominators, err2 its err) it is the standard error of err - err2,
 * paired (phi_t - phi2_t). 0 when err is 0 or n < 2; NaN if not finite. */
double nc_jac_ratio_se(const double *num, const double *num2, const double *den,
                       const size_t *idx, size_t n);

/* Ranks the ns surrogates sid[0..ns) by S[j]->err (NaN
 * last, best first) into out[0..ns). For sampled errors (S[j]->exact
 * false) gap_se is the paired standard error of the gap to the previous
 * place over the n tokens idx (nc_jac_ratio_se with num[j], num[prev] and
 * den), and tie says |gap| <= 2 gap_se. */
void nc_jac_rank_surrogates(const nc_jac_summary *const *S, const double *const *num,
                            const double *den, const size_t *idx, size_t n, const int *sid,
                            int ns, nc_jac_rank *out);

/* The standard error of the median of sorted a[0..n), by Maritz and
 * Jarrett's estimator: the spread of the order statistics weighted by the
 * probability that each is the median of a resample (the median's uniform
 * U ~ N(1/2, 1/(4n))); for a density f at the median ~ 1 / (2 f sqrt n),
 * the asymptotic se, and, unlike a quantile distance, not 0 when many
 * values at the median are equal (identical tokens). NaN for n < 2. */
double nc_jac_median_se(const double *sorted, size_t n);

/* ---- one token (tests, figures) ---------------------------------------- */

/* ---- the ODE check ------------------------------------------------------ */

/* Integrates ODE-1 and ODE-2 (docs/theory.md) over [0, x_max] for width
 * a2 = A^2 and constant scale rho: dy/du = (1/rho)(1 - y^2/a2) and dy/du =
 * (y/u)(1 - y^2/a2), RMSNorm's with a2 = d, LayerNorm's in u = x - mu
 * with a2 = d - 1 (nc_theory_width) and compares with the closed forms (see nc_jac_ode).
 * ODE-2 is singular at x = 0, where y = 0 is also a solution: the DyISRU
 * solution is the one with slope y'(0) = 1/rho (matching the
 * slope at 0 gives C = a2 rho^2). It is started at x0 = NC_JAC_ODE2_X0 *
 * rho * sqrt(d) from the series y = x/rho - x^3/(2 d rho^3) + 3 x^5 /
 * (8 d^2 rho^5), which follows from the ODE and the slope alone
 * (y = a x + b x^3 + c x^5 in ODE-2 gives b = -a^3/(2d), c = -3 a^2 b/(4d));
 * the next term is relative ~(x0 / (rho sqrt d))^6 = 1e-18. Not run (ok
 * false, status says why) unless rho > 0, x_max > 0 and d > 0, all finite. */
void nc_jac_ode_check(double rho, double a2, double x_max, nc_jac_ode *out);

#endif
