/*
 * normcheck.h - is the norm we recompute the norm the model ran? The real
 * output's tolerance, and the norm kind and eps read back from the real
 * output (docs/report.md, "real_output_check").
 *
 * With the affine part undone, the real output of a token is
 * z_i = (y_i - b_i) / w_i = a_t u_i with u = x - mean(x) (LayerNorm) or
 * u = x (RMSNorm) and a_t = 1 / sqrt(m_t + eps), m_t = var(x) or mean(x^2).
 * So per token and kind, the least-squares a_t = <z,u>/<u,u> leaves a
 * residual that is rounding noise for the right kind only (unless every
 * token has mean 0, when both kinds agree and the kind is not identified),
 * and each token gives eps_t = 1/a_t^2 - m_t. The rounding error of a_t is
 * relative, so eps_t scatters in proportion to m_t: the estimate is the
 * mean of eps_t weighted by 1/m_t^2, with the standard error of that
 * weighted mean. eps is identified when the estimate exceeds three
 * standard errors; otherwise the data only bound it (any eps below the
 * bound reproduces the output to its precision).
 *
 * Left out: modules that multiply by (1 + weight) (the dump's metadata
 * says weight_offset): the weight is used as stored.
 */
#ifndef NC_NORMCHECK_H
#define NC_NORMCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/layer.h"
#include "core/norm.h"
#include "core/tensor.h"
#include "util/err.h"

/* The unit roundoff of a float dtype: 2^-24 (F32), 2^-11 (F16), 2^-8
 * (BF16), 2^-53 (F64). */
double nc_dtype_unit_roundoff(nc_dtype dt);

/* The largest |real output - recomputed output| that counts as agreement:
 * 16 u max|real output|, u the unit roundoff of the coarser of the input's
 * and the real output's dtypes. */
double nc_real_output_tol(const nc_tensor *x, const nc_tensor *y_real, double real_max_abs);

typedef struct nc_norm_detect {
    size_t tokens;            /* tokens compared (finite, nonzero scale) */
    double rel_resid[2];      /* sqrt(sum residual^2 / sum z^2), indexed by nc_norm_kind */
    bool fits;                /* the better kind reproduces z to rounding (< 64 u) */
    bool kind_identified;     /* and the other kind does not */
    nc_norm_kind kind;        /* the better kind */
    double eps_hat, eps_se;   /* weighted estimate of eps under kind, and its SE */
    bool eps_identified;      /* eps_hat > 3 eps_se */
    double eps_bound;         /* not identified: eps_hat + 3 eps_se (an upper bound, >= 0) */
    double eps;               /* eps to use: eps_hat, snapped to a power of ten within
                               * max(3 se, 2%), when identified */
} nc_norm_detect;

/* The detection over the tokens of a finished analysis res (the same token
 * sample), reading x, the real output y_real and the affine weight and bias
 * (either may be NULL); u_round: the unit roundoff for the fit test.
 * Errors: NC_ENOMEM and those of nc_pass_run. */
int nc_norm_detect_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *y_real,
                       const nc_tensor *weight, const nc_tensor *bias, double u_round,
                       int threads, nc_norm_detect *out, nc_err *err);

#endif
