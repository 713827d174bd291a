/*
 * normcheck.h - is the norm we recompute the norm the model ran? The real
 * output read against a noise model of its dtype: which norm kind
 * reproduces it to rounding, which eps the data allow, with the affine
 * weight and bias estimated where the dump lacks them (docs/report.md,
 * "real_output_check", which derives and measures all of this).
 *
 * Legend: t a token, i a channel, x the input, y the real output, w and b
 * the affine weight and bias, u = x - mean(x) (LayerNorm) or x (RMSNorm),
 * m_t = mean_i u_i^2, a_t the token's scale (1 / sqrt(m_t + eps) for the
 * model), h_D(v) half an ulp of v in dtype D.
 *
 * The noise model: each real output value is the model's value rounded to
 * its dtype, after a computation whose operands were rounded too, so under
 * the right hypothesis |y_i - (w_i a_t u_i + b_i)| <= B_i with
 *
 *   B_i = h_y(yh_i) + h_y(w_i n_i) + |w_i| h_y(n_i) + h_y(b_i)    (output, product,
 *                                                                normalised value, bias)
 *       + |w_i| a_t (h_x(x_i) + s1 + |n_i| a_t su)              (input, propagated
 *                                                                directly, via mean, scale)
 *       + h_w(w_i) |n_i| + h_b(b_i)                             (stored weight, bias)
 *       + Z se(w_i n_i + b_i)                                   (estimated weight, bias)
 *
 * s1 = mean_j h_x(x_j) (LayerNorm; 0 RMSNorm), su = mean_j |u_j| h_x(x_j),
 * n_i = a_t u_i with a_t the token's unweighted least-squares scale, yh_i =
 * w_i n_i + b_i (magnitudes from the hypothesis, not from the noisy y);
 * terms for what is absent are 0, and B is never below 2^-500 (so the sums
 * stay finite). The model's own arithmetic errs in each token's scale by up
 * to nc_scale_bias (analysis/normeps.h: one unit roundoff u_c of its
 * arithmetic, 2^-24 or 2^-53 for float64 input and output, and a share of
 * a half-precision output's): the fitted scale absorbs it, and a fixed eps
 * allows it. Per token and kind the
 * scale a_t is fitted by least squares weighted by 1/B^2, which makes the
 * check independent of eps; q_free = mean over elements of
 * (residual / B)^2. Pure rounding gives q_free <= 1 (each term is at most
 * 1; typically 0.005-0.03), so a kind is consistent with the output when
 * q_free <= NC_NORMCHECK_Q_MAX. Both kinds consistent: undetermined at this
 * precision (every token with mean 0 makes them equal); neither: the
 * output is not either norm with this affine part.
 *
 * eps: each token's fitted scale gives 1/a_t^2 = m_t + eps; the estimate,
 * its interval and the choice of a value are in analysis/normeps.h.
 *
 * The affine part: a stored weight or bias is taken as the model's unless
 * the dump rounded it after the model ran (opts). A missing or rounded
 * weight is estimated per channel by least squares under each kind
 * (y_i = w_i n_i + b_i, n = u / sqrt(m + eps)), alternating with eps from
 * eps_guess on; with the bias when it was rounded, or under LayerNorm when
 * it is missing with the weight (an output-only dump). A missing bias is
 * otherwise 0: the module has none (RMSNorm never has one).
 *
 * Left out: modules that multiply by (1 + weight) (the dump's metadata
 * says weight_offset): the weight is used as stored.
 */
#ifndef NC_NORMCHECK_H
#define NC_NORMCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/layer.h"
#include "analysis/normeps.h"
#include "core/norm.h"
#include "core/tensor.h"
#include "util/err.h"

/* A hypothesis is consistent with rounding when its mean squared
 * residual over the bound is at most this (docs/report.md). */
#define NC_NORMCHECK_Q_MAX 1.0
/* The most rounds of the estimate of a missing affine part (normcheck.c). */
#define NC_NORMCHECK_ROUNDS 8

/* The unit roundoff of a float dtype: 2^-24 (F32), 2^-11 (F16), 2^-8
 * (BF16), 2^-53 (F64). */
double nc_dtype_unit_roundoff(nc_dtype dt);

/* Where a hypothesis's weight or bias comes from. */
typedef enum nc_affine_src {
    NC_AFFINE_GIVEN,     /* stored in the dump, taken as the model's */
    NC_AFFINE_ESTIMATED, /* least squares from the real output */
    NC_AFFINE_NONE,      /* no bias: 0 */
} nc_affine_src;

/* "given", "estimated", "none". */
const char *nc_affine_src_name(nc_affine_src s);

typedef enum nc_kind_verdict {
    NC_KIND_IDENTIFIED,   /* one kind consistent, the other not */
    NC_KIND_UNDETERMINED, /* both consistent: the data cannot tell them apart */
    NC_KIND_NEITHER,      /* neither consistent */
} nc_kind_verdict;

/* "identified", "undetermined", "neither". */
const char *nc_kind_verdict_name(nc_kind_verdict v);

/* One kind's hypothesis. The per-token arrays (owned, [nt], NaN for tokens
 * not compared) keep what nc_norm_check_q needs for any eps. */
typedef struct nc_kind_check {
    size_t tokens;   /* tokens compared */
    double q_free;   /* mean (residual / B)^2, each token's scale fitted */
    bool consistent; /* q_free <= NC_NORMCHECK_Q_MAX */
    nc_affine_src weight, bias;
    int affine_rounds;     /* estimated weight: rounds of the estimate */
    bool affine_converged; /* and whether eps settled */
    double weight_rel_se;  /* estimated weight: median over channels of se(w_i)/|w_i| */
    double bias_se;        /* estimated bias: median over channels of se(b_i) */
    nc_eps_fit eps;
    double *m, *a, *uu, *rss; /* m_t, fitted a_t, sum (w u / B)^2, sum (residual / B)^2 */
} nc_kind_check;

typedef struct nc_norm_check {
    size_t d, nt;                        /* channels; tokens visited (the arrays' length) */
    nc_dtype precision;                  /* the output's precision: the coarser of its
                                          * stored and source dtypes */
    bool rounded_after;                  /* the stored tensors were rounded after the model ran */
    double u_output, u_input, u_compute; /* unit roundoffs of y, x and the arithmetic */
    nc_kind_check k[2];                  /* indexed by nc_norm_kind */
    nc_kind_verdict verdict;
    nc_norm_kind kind; /* the identified kind, or the smaller q_free */
} nc_norm_check;

typedef struct nc_normcheck_opts {
    double eps_guess[2];   /* by kind: the eps that normalises an estimated weight */
    nc_dtype source_dtype; /* the dtype the model computed in, when known (NC_DT_NONE:
                            * as stored). Coarser than a stored tensor: that tensor holds
                            * values of the source precision. Finer than the stored
                            * output: the dump rounded every tensor after the model ran
                            * (a float32 model dumped as bfloat16), so the stored weight
                            * and bias are not the model's and are estimated */
} nc_normcheck_opts;

/* The check over the tokens of a finished analysis res (the same token
 * sample), reading x, the real output y_real and the stored weight and
 * bias (either may be NULL). One pass (three when a weight is estimated).
 * On success free out with nc_norm_check_free. Errors: NC_ENOMEM and those
 * of nc_pass_run. */
int nc_norm_check_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *y_real,
                      const nc_tensor *weight, const nc_tensor *bias, const nc_normcheck_opts *opts,
                      int threads, nc_norm_check *out, nc_err *err);

/* q of kind with every token's scale 1/sqrt(beta (m_t + eps)) (beta the
 * eps fit's slope: 1 unless the weight is estimated): the agreement of one
 * fully specified norm, element by element. NaN without tokens. */
double nc_norm_check_q(const nc_norm_check *c, nc_norm_kind kind, double eps);

/* Frees the per-token arrays. Accepts NULL. */
void nc_norm_check_free(nc_norm_check *c);

#endif
