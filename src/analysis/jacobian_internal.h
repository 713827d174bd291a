/*
 * jacobian_internal.h - what the two files of the diagonal-Jacobian
 * comparison share (internal to src/analysis/jacobian*.c): the per-token
 * sweeps that both the streaming pass (jacobian.c) and the dense check
 * (jacobian_dense.c) run, and the dense check's entry point.
 *
 * Legend as in jacobian.c: d channels, i a channel; y = (x - c_t) * inv_t
 * the norm's output before the affine part; jd = diag(J); g a probe (or the
 * real gradient at the norm's output), v = J^T g.
 *
 * The sweeps are NC_VM_INLINE, and must stay so: a call from a
 * NC_VMATH_CLONES function (jac_block, compare_columns) would leave its
 * vector clones for the baseline copy. That is why they live in a header and
 * not in a .c file of their own.
 *
 * Left out: everything a caller outside the module may use (jacobian.h).
 */
#ifndef NC_JACOBIAN_INTERNAL_H
#define NC_JACOBIAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "analysis/jac_forms.h"
#include "analysis/jacobian.h"
#include "core/sum.h"
#include "core/v4.h"
#include "core/vmath.h"
#include "util/clock.h"

/* The hot sweeps are written with the four-double vectors of core/v4.h. */

/* ========================================================== one token */

/* Per token: y = (x - c) inv and jd = diag(J) (jacobian.h), and the sums
 * sums[0..5) = sum y^2, sum y, sum jd^2, sum (jd y)^2, sum y^4 (jac_forms.h
 * nc_jac_diag_lanes). */
NC_VM_INLINE void token_state(nc_norm_kind norm, const double *x, double c, double inv,
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
NC_VM_INLINE double sq_err(const double *D, const double *g, const double *v, size_t n)
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

/* sq_err for two diagonals D1, D2 at once, into out[0] and out[1]: g and v
 * are loaded once for both (the sweep is bound by its loads, not by its
 * arithmetic). */
NC_VM_INLINE void sq_err2(const double *D1, const double *D2, const double *g, const double *v,
                          size_t n, double out[2])
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
NC_VM_INLINE void errors_of(nc_norm_kind norm, const double *y, const double *jd,
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
        sq_err2(fp + (size_t)j * d, fp + (size_t)(j + 1) * d, g, v, d, e2 + 1 + j);
    if (j < ns)
        e2[1 + j] = sq_err(fp + (size_t)j * d, g, v, d);
}

/* ========================================================= dense check */

/* jacobian_dense.c: the dense check of jacobian.h on m of the layer's used
 * tokens (used of them in res->tok; m <= used), with P probe columns per
 * token from the streams of pseed = seed ^ NC_JAC_SEED_TAG and, when grad
 * is given, the real gradient (times weight, if not NULL). Fills out's
 * dense_* fields and tokens_materialised. Memory O(d (P + 6)). Errors:
 * NC_ENOMEM. */
int nc_jac_dense_check(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                       const double *weight, size_t m, size_t used, uint64_t pseed, size_t P,
                       nc_jac_result *out, nc_err *err);

#endif
