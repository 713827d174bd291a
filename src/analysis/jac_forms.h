/*
 * jac_forms.h - what the streaming passes compute of the norm's Jacobian per
 * token (jacobian.h gives the formulas): the diagonal and the sums of y,
 * y^2, y^4, J_ii^2 and (J_ii y_i)^2 in one sweep, the closed forms of
 * ||J||_F^2 and of the off-diagonal energy from them, a surrogate
 * derivative's squared error against the diagonal, and the pooled sums of
 * a shard. Shared by the Jacobian's own pass and dense check (jacobian*.c)
 * and the verify pass (layer_verify.c), which gathers the Jacobian's
 * per-token sums when the run asks for them; the sweeps are NC_VM_INLINE,
 * so each is compiled into its caller's vector clones.
 *
 * Legend: d channels; y = (x - c_t) * inv_t the norm's output before the
 * affine part; J_ii = inv (a - y_i^2 / d).
 */
#ifndef NC_JAC_FORMS_H
#define NC_JAC_FORMS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/layer.h"
#include "core/norm.h"
#include "core/sum.h"
#include "core/v4.h"
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

/* ============================================ sweeps over a token's values */

/* mask ? b : c per lane (a macro: no function may return a vector, v4.h) */
#define NC_JAC_PICK(mask, b, c) ((v4d)(((v4i)(b) & (mask)) | ((v4i)(c) & ~(mask))))

/* J_ii = inv (a - y_i^2/d) into jd for the n values y of a token (or a
 * chunk of one that starts at a multiple of NC_LANES), and the lanes of
 * st[0..5) = sum y^2, sum y, sum J_ii^2, sum (J_ii y_i)^2, sum y^4 added to
 * (element i in lane i mod NC_LANES, core/sum.h): the sums the closed forms
 * below need. dd = d as a double, a = diag_a(norm, d). */
NC_VM_INLINE void nc_jac_diag_lanes(const double *y, size_t n, double inv, double a, double dd,
                                    double *jd, double st[5][NC_LANES])
{
    v4d yy0 = V4(st[0]), yy1 = V4(st[0] + 4), sy0 = V4(st[1]), sy1 = V4(st[1] + 4);
    v4d jj0 = V4(st[2]), jj1 = V4(st[2] + 4), rr0 = V4(st[3]), rr1 = V4(st[3] + 4);
    v4d qq0 = V4(st[4]), qq1 = V4(st[4] + 4);
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d y0 = V4(y + i), y1 = V4(y + i + 4);
        v4d p0 = y0 * y0, p1 = y1 * y1;
        v4d j0 = inv * (a - p0 / dd), j1 = inv * (a - p1 / dd);
        v4d r0 = j0 * y0, r1 = j1 * y1;
        V4(jd + i) = j0;
        V4(jd + i + 4) = j1;
        yy0 += p0;
        yy1 += p1;
        sy0 += y0;
        sy1 += y1;
        jj0 += j0 * j0;
        jj1 += j1 * j1;
        rr0 += r0 * r0;
        rr1 += r1 * r1;
        qq0 += p0 * p0;
        qq1 += p1 * p1;
    }
    V4(st[0]) = yy0;
    V4(st[0] + 4) = yy1;
    V4(st[1]) = sy0;
    V4(st[1] + 4) = sy1;
    V4(st[2]) = jj0;
    V4(st[2] + 4) = jj1;
    V4(st[3]) = rr0;
    V4(st[3] + 4) = rr1;
    V4(st[4]) = qq0;
    V4(st[4] + 4) = qq1;
    for (int l = 0; i < n; i++, l++) {
        double yi = y[i], pi = yi * yi, ji = inv * (a - pi / dd), r = ji * yi;
        jd[i] = ji;
        st[0][l] += pi;
        st[1][l] += yi;
        st[2][l] += ji * ji;
        st[3][l] += r * r;
        st[4][l] += pi * pi;
    }
}

/* Lanes s += e^2 and m = max(m, e) over e = |jd_i - fp_i| for n values (a
 * NaN difference makes the maximum NaN): a surrogate's derivative against
 * the exact diagonal. */
NC_VM_INLINE void nc_jac_diff_lanes(const double *jd, const double *fp, size_t n, double *s,
                                    double *m)
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    v4d s0 = V4(s), s1 = V4(s + 4), m0 = V4(m), m1 = V4(m + 4);
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d e0 = (v4d)((v4i)(V4(jd + i) - V4(fp + i)) & no_sign);
        v4d e1 = (v4d)((v4i)(V4(jd + i + 4) - V4(fp + i + 4)) & no_sign);
        s0 += e0 * e0;
        s1 += e1 * e1;
        m0 = NC_JAC_PICK((e0 > m0) | (e0 != e0), e0, m0);
        m1 = NC_JAC_PICK((e1 > m1) | (e1 != e1), e1, m1);
    }
    V4(s) = s0;
    V4(s + 4) = s1;
    V4(m) = m0;
    V4(m + 4) = m1;
    for (int l = 0; i < n; i++, l++) {
        double e = fabs(jd[i] - fp[i]);
        s[l] += e * e;
        m[l] = e > m[l] || e != e ? e : m[l];
    }
}

/* ==================================================== the pooled sums */

/* The comparison's pooled sums over one shard's used tokens (layer.h
 * nc_layer_jac gives their meaning); by fit id, sse and maxe. */
typedef struct nc_jac_acc {
    nc_sum diag2, frob2, off2, rad_num, rad_den, ones_den;
    nc_sum sse[NC_FIT_COUNT];
    double maxe[NC_FIT_COUNT];
    size_t used;
} nc_jac_acc;

/* A used token with the sums st (nc_jac_diag_lanes' five, totalled) and
 * 1/scale inv into a; its ||J||_F^2 and off-diagonal energy into *frob and
 * *off. */
static inline void nc_jac_acc_token(nc_jac_acc *a, nc_norm_kind norm, const double st[5],
                                    double inv, size_t d, double *frob, double *off)
{
    *frob = frob2_from(norm, st[0], st[1], inv, d);
    *off = offdiag2_from(norm, st[0], st[1], st[4], inv, d);
    nc_sum_add(&a->diag2, st[2]);
    nc_sum_add(&a->frob2, *frob);
    nc_sum_add(&a->off2, *off);
    nc_sum_add(&a->rad_num, st[3]);
    nc_sum_add(&a->rad_den, inv * inv * st[0]);
    nc_sum_add(&a->ones_den, (double)d * inv * inv);
    a->used++;
}

/* Fit id's diagonal error for one token from the lanes of nc_jac_diff_lanes
 * (s: squared errors, m: maxima) into a; returns the token's total. */
static inline double nc_jac_acc_fit(nc_jac_acc *a, int id, const double *s, const double *m)
{
    double *mx = &a->maxe[id], e = nc_lanes_total(s);
    for (int l = 0; l < NC_LANES; l++)
        *mx = m[l] > *mx || m[l] != m[l] ? m[l] : *mx;
    nc_sum_add(&a->sse[id], e);
    return e;
}

/* from added into into (shards merge in shard order: core/par.h). */
static inline void nc_jac_acc_merge(nc_jac_acc *into, const nc_jac_acc *from)
{
    nc_sum_merge(&into->diag2, &from->diag2);
    nc_sum_merge(&into->frob2, &from->frob2);
    nc_sum_merge(&into->off2, &from->off2);
    nc_sum_merge(&into->rad_num, &from->rad_num);
    nc_sum_merge(&into->rad_den, &from->rad_den);
    nc_sum_merge(&into->ones_den, &from->ones_den);
    for (int j = 0; j < NC_FIT_COUNT; j++) {
        nc_sum_merge(&into->sse[j], &from->sse[j]);
        double *m = &into->maxe[j];
        *m = *m >= from->maxe[j] || *m != *m ? *m : from->maxe[j];
    }
    into->used += from->used;
}

/* The merged sums a into J's pooled numbers (J's arrays untouched). */
static inline void nc_jac_acc_finish(const nc_jac_acc *a, nc_layer_jac *J)
{
    J->diag2 = nc_sum_get(&a->diag2);
    J->frob2 = nc_sum_get(&a->frob2);
    J->off2 = nc_sum_get(&a->off2);
    J->rad_num = nc_sum_get(&a->rad_num);
    J->rad_den = nc_sum_get(&a->rad_den);
    J->ones_den = nc_sum_get(&a->ones_den);
    for (int j = 0; j < NC_FIT_COUNT; j++) {
        J->sse[j] = nc_sum_get(&a->sse[j]);
        J->maxe[j] = a->maxe[j];
    }
    J->used = a->used;
    J->done = true;
}

#endif
