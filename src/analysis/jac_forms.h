/*
 * jac_forms.h - the closed forms of the norm's Jacobian that the streaming
 * passes evaluate per token (jacobian.h gives the formulas): the diagonal's
 * constant, ||J||_F^2 and the off-diagonal energy from the token's sums of
 * y, y^2 and y^4. Shared by the Jacobian's own pass and dense check
 * (jacobian*.c) and the verify pass (layer_verify.c), which gathers the
 * Jacobian's per-token sums when the run asks for them.
 *
 * Legend: d channels; y = (x - c_t) * inv_t the norm's output before the
 * affine part; J_ii = inv (a - y_i^2 / d).
 */
#ifndef NC_JAC_FORMS_H
#define NC_JAC_FORMS_H

#include <stddef.h>

#include "core/norm.h"
#include "core/vmath.h"

/* J_ii = inv (a - y_i^2 / d), a = 1 - 1/d for LayerNorm (the 1 1^T/d
 * term), 1 for RMSNorm */
NC_VM_INLINE double diag_a(nc_norm_kind norm, size_t d)
{
    return norm == NC_LAYERNORM ? 1.0 - 1.0 / (double)d : 1.0;
}

/* ||J||_F^2 from syy = sum y^2 and sy = sum y (jacobian.h) */
static inline double frob2_from(nc_norm_kind norm, double syy, double sy, double inv, size_t d)
{
    const double dd = (double)d, q = syy / dd;
    if (norm == NC_RMSNORM)
        return inv * inv * ((dd - 2.0 * q) + q * q);
    const double m = sy / dd;
    return inv * inv * (((dd - 1.0) - 2.0 * q) + q * q + 2.0 * m * m);
}

/* off_t = sum_{i != j} J_ij^2 from syy = sum y^2, sy = sum y and s4 = sum
 * y^4 (jacobian.h) */
static inline double offdiag2_from(nc_norm_kind norm, double syy, double sy, double s4,
                                   double inv, size_t d)
{
    const double dd = (double)d, c = inv * inv / (dd * dd);
    if (norm == NC_RMSNORM)
        return c * (syy * syy - s4);
    return c * ((dd * (dd - 1.0) + 2.0 * (sy * sy - syy)) + (syy * syy - s4));
}

#endif
