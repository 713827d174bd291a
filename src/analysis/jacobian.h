/*
 * jacobian.h - the diagonal-Jacobian comparison (BRIEF.md, "The gradient
 * derivation" and "Further facts"; the project's issue 3).
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
 * var/(var + eps) this is BRIEF's d - 1 - 2 kappa + kappa^2; the exact form
 * in the y's is what is computed.)
 *
 * nc_jacobian_run computes, in one streaming pass over the layer's input
 * (O(d) per token, never d x d):
 *
 *   diag_frobenius_share  sum_t sum_i J_ii^2 / sum_t ||J_t||_F^2 (pooled)
 *   backprop              e = ||diag(J) g - J^T g|| / ||J^T g|| for
 *                         `probes` standard-normal probes g per token
 *                         (nc_rng_normals, the ziggurat of core/rng.h,
 *                         seeded with (seed ^ NC_JAC_SEED_TAG, stream = the
 *                         token's row in x), d values per probe, probe after
 *                         probe); per token the mean over its probes;
 *                         summarised over tokens as mean, median and p95
 *                         (NumPy's default linear-interpolation quantiles).
 *                         To leading order e is the radial part of g that J
 *                         removes: e ~ |g.y| / (||y|| ||g||) ~ 1/sqrt(d)
 *   backprop_real         the same with g = weight * grad_output, the
 *                         gradient at the norm's output before the affine
 *                         part (grad_output is dL/d(weight * y + bias)), one
 *                         value per token
 *   radial_retention      sqrt(sum_t ||diag(J_t) y_t||^2 / sum_t ||inv_t y_t||^2):
 *                         J y = 0 (eps = 0) but diag(J) y keeps nearly all of y/r
 *   ones_retention        (LayerNorm) the same for the direction 1:
 *                         sqrt(sum_t ||diag(J_t) 1||^2 / sum_t d inv_t^2)
 *   surrogates            per fitted surrogate f (layer.h fits[k].ok): RMSE
 *                         and max of J_ii - f'(x_i) over all points, and the
 *                         backprop error with diag(f'(x)) for diag(J) (same
 *                         probes, same real gradients)
 *
 * Zero denominators. When ||J^T g|| = 0 (g in the null space of J^T: g
 * parallel to y with eps = 0, or parallel to 1 for LayerNorm) the relative
 * error of a probe is +inf if the surrogate's error vector is not zero and
 * 0 if it is too; it is never NaN. Summaries count the infinite values
 * (n_inf), and their mean is then +inf (the median and p95 only if enough
 * values are infinite). Tokens whose real gradient is all zero carry no
 * information and are left out of backprop_real (counted), as are tokens
 * whose real gradient is not finite.
 *
 * Then, as checks:
 *   dense     for a sample of tokens (by default as many as fit
 *             NC_JAC_DENSE_ENTRIES matrix entries in all: every token for
 *             d <= 128 and N <= 4096, 4 for d = 4096), J materialised as a
 *             dense d x d float matrix (each entry computed in double and
 *             rounded once) and J^T G for the block G = [probes | random
 *             signs +-1 | real gradient] of NC_JAC_DENSE_COLUMNS columns
 *             (more if probes + 1 exceed it) computed as ONE matrix
 *             product (OpenBLAS sgemm: with 64 columns it runs near
 *             OpenBLAS's own sgemm rate, nc_jac_blas_rate, not at memory
 *             speed as with 8), compared with the analytic J^T g in double
 *             as the streaming pass computes it:
 *             dense_max_rel_diff is the largest |dense_i - analytic_i| / s_i
 *             over the sampled tokens, columns and channels, with s_i =
 *             inv (|g_i| + ([sum |g|] + |y_i| sum |y g|) / d) >= sum_j
 *             |J_ij g_j| the size of the terms the product sums (J^T g
 *             itself may cancel to ~0, e.g. g along y). Rounding alone
 *             keeps it below dense_tol = gamma_{d+3} = (d+3) u / (1 -
 *             (d+3) u), u = 2^-24, whatever the summation order (observed
 *             6e-7 for d = 64, 1.4e-6 for d = 4096, against bounds of 4e-6
 *             and 2.4e-4); dropping the off-diagonal part gives ~1/sqrt(d)
 *             or more (test_jacobian.c checks that it fails). Likewise
 *             dense_frob_max_rel_diff, the largest |sum of J_ij^2 over the
 *             float matrix - the closed form above| / (d inv^2), stays
 *             below NC_JAC_DENSE_FROB_TOL. dense_status is "ok" when both
 *             hold, else says "MISMATCH" and by how much. (Sampled tokens
 *             with 4 inv >= FLT_MAX, whose J would overflow a float, are
 *             left out.)
 *   ODE       ODE-1 dy/dx = (1/rho)(1 - y^2/d), y(0) = 0, and ODE-2
 *             dy/dx = (y/x)(1 - y^2/d) integrated (ode.h, rtol = atol =
 *             1e-12) over [0, max |x|] and compared with sqrt(d) tanh(x /
 *             (rho sqrt d)) and sqrt(d) x / sqrt(x^2 + d rho^2).
 *
 * Results do not depend on the thread count (per-shard accumulators merged
 * in shard order; per-token values in arrays summarised serially; probes
 * from per-token streams). Memory: O(nt * (1 + 2 * fits)) doubles, O((3 +
 * fits) d) doubles of scratch per thread, and one d x d float matrix plus
 * O(d * columns) for the dense check.
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

#include "analysis/layer.h"
#include "analysis/ode.h"
#include "analysis/surrogate.h"
#include "core/norm.h"
#include "core/tensor.h"
#include "util/err.h"
#include "util/progress.h"

/* Defaults of the options (used where an option is 0). */
#define NC_JAC_PROBES 8 /* random probes per token */
/* The dense check materialises about this many entries in all (256 MiB of
 * floats written, ~8.6 GFLOP with 64 columns: ~0.2 s at OpenBLAS's sgemm
 * rate): NC_JAC_DENSE_ENTRIES / d^2 tokens, at least 1 and at most
 * NC_JAC_DENSE_MAX_TOKENS (for small d the per-token work, O(d) per
 * column, would dominate: every token up to 4096 for d <= 128). */
#define NC_JAC_DENSE_ENTRIES ((size_t)1 << 26)
#define NC_JAC_DENSE_MAX_TOKENS 4096
#define NC_JAC_DENSE_COLUMNS 64                  /* columns of G (at least) */
#define NC_JAC_DENSE_MAX_BYTES ((size_t)1 << 30) /* one d x d float matrix, at most */
#define NC_JAC_DENSE_ALL SIZE_MAX                /* dense_tokens: every used token */
/* dense_frob_max_rel_diff bound: each float entry squared is off by at most
 * 2u + u^2 (u = 2^-24) relative, ||J||_F^2 <= d inv^2, and the double sums
 * add ~1e-13: 3u. */
#define NC_JAC_DENSE_FROB_TOL (3.0 * 0x1p-24)

/* Mixed into the seed (seed ^ tag) before the probe streams are drawn, so
 * that a probe never repeats the normals of a synthetic layer generated
 * with the same seed and stream = row (ASCII "jacobian"). */
#define NC_JAC_SEED_TAG UINT64_C(0x6a61636f6269616e)

/* Where ODE-2 starts, in units of rho sqrt(d): ODE-2 is singular at x = 0
 * (see nc_jac_ode_check), so it starts at x0 = NC_JAC_ODE2_X0 rho sqrt(d)
 * (or x_max / 2 if that is smaller) from its series. */
#define NC_JAC_ODE2_X0 1e-3

typedef struct nc_jac_opts {
    size_t probes;          /* random probes per token (0: NC_JAC_PROBES) */
    size_t dense_tokens;    /* tokens materialised (0: nc_jac_dense_default_tokens(d);
                             * NC_JAC_DENSE_ALL: all); at most the used tokens */
    size_t dense_max_bytes; /* skip the dense check when d*d*4 exceeds this
                             * (0: NC_JAC_DENSE_MAX_BYTES) */
    bool no_dense;          /* skip the dense check */
    uint64_t seed;          /* probe seed, used as given (0 is a valid seed) */
} nc_jac_opts;

/* A per-token quantity summarised over tokens. n_inf of the n values are
 * +inf (zero denominators, see above). All NaN when n == 0. */
typedef struct nc_jac_summary {
    double mean, median, p95;
    size_t n, n_inf;
} nc_jac_summary;

/* One surrogate against the exact diagonal. */
typedef struct nc_jac_surrogate {
    bool ok;                      /* compared: the layer's fit was ok */
    double diag_rmse;             /* sqrt(mean over points of (J_ii - f'(x_i))^2) */
    double diag_max_err;          /* max over points of |J_ii - f'(x_i)| */
    nc_jac_summary backprop;      /* ||diag(f') g - J^T g|| / ||J^T g||, probes */
    nc_jac_summary backprop_real; /* the same for the real gradients (has_real) */
} nc_jac_surrogate;

/* The ODE check. Deviations are absolute (y is in units of the norm's
 * output, bounded by sqrt(d)), the maxima over the integrator's accepted
 * points (every accepted step and the end point). */
typedef struct nc_jac_ode {
    bool ok;              /* both integrations reached x_max */
    char status[96];      /* "ok" or why not */
    double rho;           /* the constant scale used (the layer's mean token scale) */
    double x_max;         /* the interval is [0, x_max], x_max = max |x| */
    double ode2_x0;       /* ODE-2 starts here, from its series */
    double ode1_max_dev;  /* max |y_ode1 - sqrt(d) tanh(x / (rho sqrt d))| */
    double ode2_max_dev;  /* max |y_ode2 - sqrt(d) x / sqrt(x^2 + d rho^2)| */
    size_t ode1_steps, ode2_steps;       /* accepted steps */
    size_t ode1_rejected, ode2_rejected; /* rejected attempts */
} nc_jac_ode;

typedef struct nc_jac_result {
    nc_norm_kind norm;
    size_t d;
    size_t tokens;               /* tokens with an output (NC_TOKEN_OK) compared */
    size_t probes;               /* probes per token used */
    uint64_t seed;               /* probe seed (before NC_JAC_SEED_TAG) */

    double diag_frobenius_share; /* pooled sum J_ii^2 / sum ||J||_F^2 */
    double radial_retention;     /* pooled ||diag(J) y|| / ||y / scale|| */
    double ones_retention;       /* LayerNorm: pooled ||diag(J) 1|| / ||1 / scale||;
                                  * NaN for RMSNorm */
    nc_jac_summary backprop;     /* diag(J) against J^T, probes */

    bool has_real;               /* real gradients were given */
    bool real_weighted;          /* ... and multiplied by the affine weight */
    nc_jac_summary backprop_real;
    size_t real_zero_tokens;      /* left out: real gradient all zero */
    size_t real_nonfinite_tokens; /* left out: real gradient not finite */

    nc_jac_surrogate surr[NC_FIT_COUNT]; /* indexed by nc_fit_id; ok says which */

    nc_jac_ode ode;

    size_t tokens_materialised;     /* tokens of the dense check */
    size_t dense_columns;           /* columns of G per token (random [+ 1 real]) */
    double dense_max_rel_diff;      /* dense J^T G against analytic, relative to
                                     * s_i (see above; NaN: not run) */
    double dense_frob_max_rel_diff; /* dense ||J||_F^2 against the closed form,
                                     * relative to d inv^2 */
    double dense_tol;               /* the rounding bound of dense_max_rel_diff */
    double dense_frob_tol;          /* ... of dense_frob_max_rel_diff */
    char dense_status[128];         /* "ok", "MISMATCH: ..." or why it did not run */
    double dense_flops;             /* 2 d^2 columns per token: the sgemm work */

    double time_analytic_s;         /* the streaming pass */
    double time_dense_s;            /* the dense check, all of it */
    double time_dense_gemm_s;       /* of which in sgemm (dense_flops / this = GFLOP/s) */
    double time_ode_s;

    double *token_backprop;         /* [tok.nt] per-token mean probe error of diag(J),
                                     * NaN for tokens without output; owned */
} nc_jac_result;

/* Options with the defaults: probes NC_JAC_PROBES, dense default rule,
 * seed 1. */
void nc_jac_opts_defaults(nc_jac_opts *o);

/* The default number of tokens of the dense check for width d:
 * NC_JAC_DENSE_ENTRIES / d^2, at least 1 and at most
 * NC_JAC_DENSE_MAX_TOKENS (0 for d = 0). */
size_t nc_jac_dense_default_tokens(size_t d);

/* Runs the comparison on an analysed layer. res is the result of
 * nc_layer_analyze on the input x (the same tensor: the pass visits the
 * same tokens, with res->tok's per-token state); grad is the upstream
 * gradient dL/d(output after the affine part) [N, d] in any float dtype, or
 * NULL; weight the affine weight [d] (the gradient at the norm's output is
 * weight * grad), or NULL (weight 1). o may be NULL (defaults). threads as
 * in nc_pass (0: online CPUs); the dense check uses OpenBLAS's own
 * threading. On success out is filled (free with nc_jac_result_free); on
 * failure out holds nothing to free. Errors: NC_EINVAL (grad's shape or
 * dtype, x not the analysed shape), NC_ENOMEM, NC_EINTERNAL (threads). A
 * layer without usable tokens is not an error: the metrics are NaN. */
int nc_jacobian_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                    const double *weight, const nc_jac_opts *o, int threads,
                    nc_progress *progress, nc_jac_result *out, nc_err *err);

void nc_jac_result_free(nc_jac_result *r);

/* ---- one token (tests, figures) ---------------------------------------- */

/* diag[i] = J_ii for the token with output y[d] and inv = 1/scale. */
void nc_jac_token_diag(nc_norm_kind norm, const double *y, double inv, size_t d, double *diag);

/* out[d] = J^T g, analytically in O(d). out must not alias g or y. */
void nc_jac_token_vjp(nc_norm_kind norm, const double *y, double inv, size_t d, const double *g,
                      double *out);

/* ||J||_F^2 in closed form (see above). */
double nc_jac_token_frob2(nc_norm_kind norm, const double *y, double inv, size_t d);

/* J[i*d + j] = J_ij, the dense d x d Jacobian, row-major. (J is symmetric
 * in exact arithmetic; the two halves may differ in the last bit.) */
void nc_jac_token_dense(nc_norm_kind norm, const double *y, double inv, size_t d, double *J);

/* The same matrix in float: each entry of nc_jac_token_dense rounded once.
 * Returns the sum of the squares of the stored floats (in double). */
double nc_jac_token_dense_f(nc_norm_kind norm, const double *y, double inv, size_t d, float *J);

/* out = J^T G with one cblas_sgemm: J [d x d] row-major as above, G and
 * out [d x ncols] column-major (column k, a probe, at G + k*d). */
void nc_jac_dense_vjp(const float *J, size_t d, const float *G, size_t ncols, float *out);

/* ---- the ODE check ------------------------------------------------------ */

/* Integrates ODE-1 and ODE-2 of BRIEF.md over [0, x_max] for width d and
 * constant scale rho and compares with the closed forms (see nc_jac_ode).
 * ODE-2 is singular at x = 0, where y = 0 is also a solution: the DyISRU
 * solution is the one with slope y'(0) = 1/rho (BRIEF.md: matching the
 * slope at 0 gives C = d rho^2). It is started at x0 = NC_JAC_ODE2_X0 *
 * rho * sqrt(d) from the series y = x/rho - x^3/(2 d rho^3) + 3 x^5 /
 * (8 d^2 rho^5), which follows from the ODE and the slope alone
 * (y = a x + b x^3 + c x^5 in ODE-2 gives b = -a^3/(2d), c = -3 a^2 b/(4d));
 * the next term is relative ~(x0 / (rho sqrt d))^6 = 1e-18. Not run (ok
 * false, status says why) unless rho > 0, x_max > 0 and d > 0, all finite. */
void nc_jac_ode_check(double rho, size_t d, double x_max, nc_jac_ode *out);

/* ---- benchmark support ----------------------------------------------------- */

/* Times OpenBLAS on an n x n x n product, cblas_sgemm (single) or
 * cblas_dgemm: one small warm-up call, then the best of reps calls (reps 0
 * means 1). *gflops = 2 n^3 / best time / 1e9, *elapsed_s = the best time.
 * Returns 0 or NC_ENOMEM. */
int nc_jac_blas_rate(size_t n, bool single, int reps, double *gflops, double *elapsed_s,
                     nc_err *err);

#endif
