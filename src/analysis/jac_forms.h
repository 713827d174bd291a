/*
 * jac_forms.h - what the streaming passes compute of the norm's Jacobian per
 * token (jacobian.h gives the formulas): the diagonal and the sums of y,
 * y^2, y^4, J_ii^2 and (J_ii y_i)^2 in one sweep, the closed forms of
 * ||J||_F^2 and of the off-diagonal energy from them, a surrogate
 * derivative's squared error against the diagonal, a token's state (y,
 * the diagonal and its sums) and J^T g with the squared errors of
 * diagonals against it, and the pooled sums of a shard. Shared by the
 * Jacobian's own pass (jacobian.c), the dense check (jacobian_dense.c),
 * which holds its explicit sums against these, and the verify pass
 * (layer_verify.c), which gathers the Jacobian's per-token sums when the
 * run asks for them. The sweeps are NC_VM_INLINE and must stay so: each
 * is compiled into its caller's vector clones (a call from a
 * NC_VMATH_CLONES function would leave them for the baseline copy), which
 * is why they live in a header and not in a .c file of their own.
 *
 * Legend: d channels; i a channel; y = (x - c_t) * inv_t the norm's
 * output before the affine part; J_ii = inv (a - y_i^2 / d); jd = diag(J);
 * g a probe (or the real gradient at the norm's output), v = J^T g.
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

/* =================================== one token: its state and J^T g */

/* Per token: y = (x - c) inv and jd = diag(J) (jacobian.h), and the sums
 * sums[0..5) = sum y^2, sum y, sum jd^2, sum (jd y)^2, sum y^4 (as
 * nc_jac_diag_lanes). */
NC_VM_INLINE void nc_jac_token_state(nc_norm_kind norm, const double *x, double c, double inv,
                              size_t d, double *y, double *jd, double sums[5])
{
    for (size_t i = 0; i < d; i++)
        y[i] = (x[i] - c) * inv;
    double st[5][NC_LANES] = {{0}};
    nc_jac_diag_lanes(y, d, inv, diag_a(norm, d), (double)d, jd, st);
    for (int k = 0; k < 5; k++)
        sums[k] = nc_lanes_total(st[k]);
}

/* sum_i (D_i g_i - v_i)^2: the squared error of a diagonal D against v */
NC_VM_INLINE double nc_jac_sq_err(const double *D, const double *g, const double *v, size_t n)
{
    v4d lo = {0, 0, 0, 0}, hi = lo;
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d e0 = V4(D + i) * V4(g + i) - V4(v + i);
        v4d e1 = V4(D + i + 4) * V4(g + i + 4) - V4(v + i + 4);
        lo += e0 * e0;
        hi += e1 * e1;
    }
    double s[NC_LANES];
    V4(s) = lo;
    V4(s + 4) = hi;
    for (int l = 0; i < n; i++, l++) {
        double e = D[i] * g[i] - v[i];
        s[l] += e * e;
    }
    return nc_lanes_total(s);
}

/* nc_jac_sq_err for two diagonals D1, D2 at once, into out[0] and out[1]: g and v
 * are loaded once for both (the sweep is bound by its loads, not by its
 * arithmetic). */
NC_VM_INLINE void nc_jac_sq_err2(const double *D1, const double *D2, const double *g,
                                 const double *v, size_t n, double out[2])
{
    v4d a0 = {0, 0, 0, 0}, a1 = a0, b0 = a0, b1 = a0;
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d g0 = V4(g + i), g1 = V4(g + i + 4), v0 = V4(v + i), v1 = V4(v + i + 4);
        v4d e0 = V4(D1 + i) * g0 - v0, e1 = V4(D1 + i + 4) * g1 - v1;
        v4d f0 = V4(D2 + i) * g0 - v0, f1 = V4(D2 + i + 4) * g1 - v1;
        a0 += e0 * e0;
        a1 += e1 * e1;
        b0 += f0 * f0;
        b1 += f1 * f1;
    }
    double sa[NC_LANES], sb[NC_LANES];
    V4(sa) = a0;
    V4(sa + 4) = a1;
    V4(sb) = b0;
    V4(sb + 4) = b1;
    for (int l = 0; i < n; i++, l++) {
        double e = D1[i] * g[i] - v[i], f = D2[i] * g[i] - v[i];
        sa[l] += e * e;
        sb[l] += f * f;
    }
    out[0] = nc_lanes_total(sa);
    out[1] = nc_lanes_total(sb);
}

/* For one gradient g: v = J^T g = inv (g - [mean g] - y (y.g)/d) into v[d],
 * *v2 = ||v||^2, e2[0] = ||diag(J) g - v||^2 and e2[1 + j] = ||diag(f'_j)
 * g - v||^2 for the ns rows f'_j at fp + j d. A sweep for y.g (and sum g),
 * one for v and the diagonal's error, one per pair of surrogates (the
 * partial sums in registers). */
NC_VM_INLINE void nc_jac_errors_of(nc_norm_kind norm, const double *y, const double *jd,
                            const double *fp, int ns, double inv, size_t d, const double *g,
                            double *v, double *v2, double *e2)
{
    const double dd = (double)d;
    v4d yg0 = {0, 0, 0, 0}, yg1 = yg0, sg0 = yg0, sg1 = yg0;
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES) {
        v4d g0 = V4(g + i), g1 = V4(g + i + 4);
        yg0 += V4(y + i) * g0;
        yg1 += V4(y + i + 4) * g1;
        sg0 += g0;
        sg1 += g1;
    }
    double syg[NC_LANES], sg[NC_LANES];
    V4(syg) = yg0;
    V4(syg + 4) = yg1;
    V4(sg) = sg0;
    V4(sg + 4) = sg1;
    const size_t i_tail = i;
    for (int l = 0; i < d; i++, l++) {
        syg[l] += y[i] * g[i];
        sg[l] += g[i];
    }
    const double yg = nc_lanes_total(syg) / dd;
    const double mg = norm == NC_LAYERNORM ? nc_lanes_total(sg) / dd : 0.0;

    /* v_i = inv ((g_i - mg) - y_i yg); e_i = jd_i g_i - v_i */
    v4d sv0 = {0, 0, 0, 0}, sv1 = sv0, se0 = sv0, se1 = sv0;
    for (i = 0; i < i_tail; i += NC_LANES) {
        v4d g0 = V4(g + i), g1 = V4(g + i + 4);
        v4d v0 = inv * ((g0 - mg) - V4(y + i) * yg);
        v4d v1 = inv * ((g1 - mg) - V4(y + i + 4) * yg);
        v4d e0 = V4(jd + i) * g0 - v0, e1 = V4(jd + i + 4) * g1 - v1;
        V4(v + i) = v0;
        V4(v + i + 4) = v1;
        sv0 += v0 * v0;
        sv1 += v1 * v1;
        se0 += e0 * e0;
        se1 += e1 * e1;
    }
    double sv[NC_LANES], se[NC_LANES];
    V4(sv) = sv0;
    V4(sv + 4) = sv1;
    V4(se) = se0;
    V4(se + 4) = se1;
    for (int l = 0; i < d; i++, l++) {
        double vi = inv * ((g[i] - mg) - y[i] * yg), e = jd[i] * g[i] - vi;
        v[i] = vi;
        sv[l] += vi * vi;
        se[l] += e * e;
    }
    *v2 = nc_lanes_total(sv);
    e2[0] = nc_lanes_total(se);
    int j = 0;
    for (; j + 2 <= ns; j += 2)
        nc_jac_sq_err2(fp + (size_t)j * d, fp + (size_t)(j + 1) * d, g, v, d, e2 + 1 + j);
    if (j < ns)
        e2[1 + j] = nc_jac_sq_err(fp + (size_t)j * d, g, v, d);
}

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
