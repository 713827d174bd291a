/*
 * jacobian_dense.c - the dense check of the diagonal-Jacobian comparison
 * (jacobian_dense.h): for a sample of tokens, every entry of J computed
 * from its formula row by row and J^T G summed explicitly for a few probe
 * columns (O(d^2) work, O(d) memory per column, no BLAS: OpenBLAS's sgemm
 * waited for ever for a 128 MB buffer under a memory cap), compared with
 * the analytic J^T g of the streaming pass (jac_forms.h) against a
 * rounding bound; and the default sample size.
 *
 * Legend: d channels; t a visited token (a position in res->tok), tok its
 * row in x; i, j channels; y = (x - c_t) * inv_t; J the exact Jacobian, jd
 * its diagonal; G the d x ncols block of columns g.
 *
 * Left out: the streaming pass, its summaries and the ODE check
 * (jacobian.c).
 */
#include "analysis/jacobian_dense.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/jac_forms.h"
#include "core/rng.h"
#include "core/sum.h"
#include "core/vmath.h"

/* ================================================ one token, dense */

void nc_jac_token_dense(nc_norm_kind norm, const double *y, double inv, size_t d, double *J)
{
    /* row i: J_ij = -(inv y_i / d) y_j - [inv / d], then + inv on the
     * diagonal */
    const double dd = (double)d, b = norm == NC_LAYERNORM ? inv / dd : 0.0;
    for (size_t i = 0; i < d; i++) {
        double *row = J + i * d;
        const double ci = inv * y[i] / dd;
        for (size_t j = 0; j < d; j++)
            row[j] = -(ci * y[j]) - b;
        row[i] += inv;
    }
}

/* ============================================================ dense check */

/* The componentwise scale of J^T g at channel i, an upper bound on
 * sum_j |J_ij g_j| (J symmetric):
 *   s_i = inv (|g_i| + ([sum_j |g_j|] + |y_i| sum_j |y_j g_j|) / d)
 * since |J_ij| <= inv (delta_ij + [1/d] + |y_i y_j| / d). Each entry J_ij
 * is computed with at most 5 roundings and each product with one more, and
 * a sum of d terms in any order is off by at most gamma_d = d u / (1 - d
 * u) times the sum of their sizes (u = 2^-53; Higham, "Accuracy and
 * Stability of Numerical Algorithms", 3.1): the dense side is within
 * gamma_{d+6} s_i. The analytic side (y.g and sum g over d terms, then 4
 * operations) is within gamma_{d+6} s_i too. So |dense_i - analytic_i| /
 * s_i <= gamma_{2d+12} whatever the summation order, and a wrong formula
 * (a missing rank-one term is ~1/sqrt(d) of s_i) exceeds it. */
static double dense_tolerance(size_t d)
{
    const double u = 0x1p-53, k = 2.0 * (double)d + 12.0;
    return k * u / (1.0 - k * u);
}

/* The Frobenius sums' bound, relative to d inv^2 >= ||J||_F^2 (eps >= 0
 * makes q <= 1): each square carries ~7 roundings, the lane sums d / 8 + 2
 * more; the closed forms' sums of d terms as many. (d + 16) u covers both
 * sides with room. */
static double dense_frob_tolerance(size_t d)
{
    return ((double)d + 16.0) * 0x1p-53;
}

/* sums[0] = sum |g|, sums[1] = sum |y g| (a NaN in g makes sums[0] NaN). */
NC_VM_INLINE void abs_sums(const double *y, const double *g, size_t d, double sums[2])
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    v4d sg = {0, 0, 0, 0}, syg = sg;
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        v4d a = (v4d)((v4i)V4(g + i) & no_sign), b = (v4d)((v4i)V4(y + i) & no_sign);
        sg += a;
        syg += b * a;
    }
    double s0 = (sg[0] + sg[1]) + (sg[2] + sg[3]), s1 = (syg[0] + syg[1]) + (syg[2] + syg[3]);
    for (; i < d; i++) {
        s0 += fabs(g[i]);
        s1 += fabs(y[i]) * fabs(g[i]);
    }
    sums[0] = s0;
    sums[1] = s1;
}

/* max_i |jg_i - v_i| / s_i with s_i = inv (|g_i| + (sg + |y_i| syg) / d)
 * (dense_tolerance); a NaN difference gives NaN, a nonzero difference over
 * s_i = 0 gives inf, 0 / 0 counts as 0. */
NC_VM_INLINE double max_scaled_diff(const double *jg, const double *v, const double *g,
                                    const double *y, double inv, double sg, double syg,
                                    size_t d)
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    const double dd = (double)d;
    v4d m = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        v4d diff = (v4d)((v4i)(V4(jg + i) - V4(v + i)) & no_sign);
        v4d ag = (v4d)((v4i)V4(g + i) & no_sign), ay = (v4d)((v4i)V4(y + i) & no_sign);
        v4d r = diff / (inv * (ag + (sg + ay * syg) / dd));
        v4i zero = diff == 0.0; /* 0 / 0 */
        r = (v4d)((v4i)r & ~zero);
        v4i take = (r > m) | (r != r);
        m = (v4d)(((v4i)r & take) | ((v4i)m & ~take));
    }
    double out = 0;
    for (int l = 0; l < 4; l++)
        out = m[l] > out || m[l] != m[l] ? m[l] : out;
    for (; i < d; i++) {
        double diff = fabs(jg[i] - v[i]);
        double r = diff == 0 ? 0.0 : diff / (inv * (fabs(g[i]) + (sg + fabs(y[i]) * syg) / dd));
        out = r > out || r != r ? r : out;
    }
    return out;
}

/* sum_j a_j b_j in four-double lanes (any order is within the bound) */
NC_VM_INLINE double dot4(const double *a, const double *b, size_t n)
{
    v4d s0 = {0, 0, 0, 0}, s1 = s0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 += V4(a + i) * V4(b + i);
        s1 += V4(a + i + 4) * V4(b + i + 4);
    }
    s0 += s1;
    double s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

NC_VMATH_CLONES
void nc_jac_token_dense_apply(nc_norm_kind norm, const double *y, double inv, size_t d,
                              const double *G, size_t ncols, double *JG, double *row,
                              double f2[2])
{
    const double dd = (double)d, b = norm == NC_LAYERNORM ? inv / dd : 0.0;
    nc_sum all = {0, 0}, off = {0, 0};
    for (size_t i = 0; i < d; i++) {
        const double ci = inv * y[i] / dd;
        for (size_t j = 0; j < d; j++)
            row[j] = -(ci * y[j]) - b;
        const double pre = row[i];
        const double o = dot4(row, row, d) - pre * pre; /* |pre| is an off-diagonal's size */
        row[i] = pre + inv;
        nc_sum_add(&off, o);
        nc_sum_add(&all, o + row[i] * row[i]);
        size_t k = 0;
        for (; k + 2 <= ncols; k += 2) { /* two columns per sweep of the row */
            const double *g0 = G + k * d, *g1 = g0 + d;
            v4d a0 = {0, 0, 0, 0}, a1 = a0;
            size_t j = 0;
            for (; j + 4 <= d; j += 4) {
                v4d r = V4(row + j);
                a0 += r * V4(g0 + j);
                a1 += r * V4(g1 + j);
            }
            double s0 = (a0[0] + a0[1]) + (a0[2] + a0[3]), s1 = (a1[0] + a1[1]) + (a1[2] + a1[3]);
            for (; j < d; j++) {
                s0 += row[j] * g0[j];
                s1 += row[j] * g1[j];
            }
            JG[k * d + i] = s0;
            JG[(k + 1) * d + i] = s1;
        }
        if (k < ncols)
            JG[k * d + i] = dot4(row, G + k * d, d);
    }
    f2[0] = nc_sum_get(&all);
    f2[1] = nc_sum_get(&off);
}

/* The largest max_scaled_diff over the ncols columns of G [d x ncols] and
 * JG = the dense J^T G, against the pass's own J^T g (nc_jac_errors_of; v is d
 * doubles of scratch). Columns without anything to compare (a zero or
 * non-finite real gradient) are skipped. */
NC_VMATH_CLONES
static double compare_columns(nc_norm_kind norm, const double *y, const double *jd, double inv,
                              size_t d, const double *G, const double *JG, size_t ncols,
                              double *v)
{
    double worst = 0;
    for (size_t k = 0; k < ncols; k++) {
        const double *g = G + k * d;
        double as[2];
        abs_sums(y, g, d, as);
        if (!(as[0] > 0) || !isfinite(as[0]) || !isfinite(as[1]))
            continue;
        double v2, e2[1];
        nc_jac_errors_of(norm, y, jd, NULL, 0, inv, d, g, v, &v2, e2);
        const double sg = norm == NC_LAYERNORM ? as[0] : 0.0;
        double r = max_scaled_diff(JG + k * d, v, g, y, inv, sg, as[1], d);
        worst = r > worst || r != r ? r : worst;
    }
    return worst;
}

/* The columns of one token: P probes from the token's stream, then the
 * real gradient at the norm's output (weight * grad). */
static void token_columns(const nc_tensor *grad, const double *weight, size_t tok, size_t d,
                          uint64_t pseed, size_t P, double *G)
{
    nc_rng rng;
    nc_rng_seed(&rng, pseed, (uint64_t)tok);
    nc_rng_normals(&rng, G, P * d);
    if (grad) {
        double *gr = G + P * d;
        nc_tensor_rows(grad, tok, 1, gr);
        if (weight)
            for (size_t i = 0; i < d; i++)
                gr[i] *= weight[i];
    }
}

/* The status and the result fields from the worst differences */
static void dense_verdict(nc_jac_dense *out, size_t d, size_t done, double max_rel,
                          double max_frob, double max_off)
{
    out->tokens = done;
    out->max_rel_diff = max_rel;
    out->frob_max_rel_diff = max_frob;
    out->off_max_rel_diff = max_off;
    out->tol = dense_tolerance(d);
    out->frob_tol = dense_frob_tolerance(d);
    out->ran = done > 0;
    if (done == 0) {
        out->max_rel_diff = out->frob_max_rel_diff = out->off_max_rel_diff = NAN;
        snprintf(out->status, sizeof out->status,
                 "skipped: no sampled token's Jacobian is finite");
    } else if (max_rel <= out->tol && max_frob <= out->frob_tol && max_off <= out->frob_tol)
        snprintf(out->status, sizeof out->status, "ok");
    else
        snprintf(out->status, sizeof out->status,
                 "MISMATCH: J^T g off by %.3g (bound %.3g), ||J||_F^2 by %.3g, off-diagonal "
                 "by %.3g (bound %.3g)",
                 max_rel, out->tol, max_frob, max_off, out->frob_tol);
}

/* For m tokens spread evenly over the used ones: J^T G summed explicitly
 * over every entry (nc_jac_token_dense_apply) against the analytic J^T g, and the sums
 * of squares against the closed forms. */
int nc_jac_dense_check(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                       const double *weight, size_t m, size_t used, uint64_t pseed, size_t P,
                       nc_jac_dense *out, nc_err *err)
{
    const size_t d = res->d, nt = res->tok.nt, ncols = P + (grad ? 1 : 0);
    double *work = malloc((2 * ncols + 5) * d * sizeof *work);
    if (!work)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the dense Jacobian check",
                          res->name);
    double *G = work, *JG = G + ncols * d, *v = JG + ncols * d, *xr = v + d, *y = xr + d;
    double *jd = y + d, *row = jd + d;
    const double dd = (double)d;
    double max_rel = 0, max_frob = 0, max_off = 0;
    size_t done = 0, rank = 0, next_k = 0;
    for (size_t t = 0; t < nt && next_k < m; t++) {
        if (res->tok.status[t] != NC_TOKEN_OK)
            continue;
        /* the k-th sampled token is the used token of rank floor(k used / m) */
        size_t want = (size_t)((double)next_k * (double)used / (double)m);
        if (rank++ != want)
            continue;
        next_k++;
        const size_t tok = res->tok.index ? res->tok.index[t] : t;
        const double inv = res->tok.inv[t], scale = dd * inv * inv;
        if (!isfinite(scale) || !(scale > 0))
            continue; /* the squares of J's entries would overflow */
        nc_tensor_rows(x, tok, 1, xr);
        double sums[5], f2[2];
        nc_jac_token_state(res->norm, xr, res->tok.centre[t], inv, d, y, jd, sums);
        token_columns(grad, weight, tok, d, pseed, P, G);
        nc_jac_token_dense_apply(res->norm, y, inv, d, G, ncols, JG, row, f2);
        double r = compare_columns(res->norm, y, jd, inv, d, G, JG, ncols, v);
        max_rel = r > max_rel || r != r ? r : max_rel;
        /* against the closed forms, relative to ||inv I||_F^2 = d inv^2
         * (||J||_F^2 itself can cancel to ~0: LayerNorm with d = 2) */
        double fc = frob2_from(res->norm, sums[0], sums[1], inv, d);
        double oc = offdiag2_from(res->norm, sums[0], sums[1], sums[4], inv, d);
        max_frob = fmax(max_frob, fabs(f2[0] - fc) / scale);
        max_off = fmax(max_off, fabs(f2[1] - oc) / scale);
        done++;
    }
    free(work);
    out->columns = ncols;
    out->flops = dd * dd * (2.0 + 2.0 * (double)ncols) * (double)done;
    dense_verdict(out, d, done, max_rel, max_frob, max_off);
    return 0;
}

/* ========================================================== sample size */

size_t nc_jac_dense_default_tokens(size_t d, size_t used)
{
    if (d == 0 || used == 0)
        return 0;
    /* entries = min(used d, NC_JAC_DENSE_ENTRIES) (used d may overflow) */
    size_t entries = used > NC_JAC_DENSE_ENTRIES / d ? NC_JAC_DENSE_ENTRIES : used * d;
    size_t m = d > entries / d ? 1 : entries / d / d;
    if (m > NC_JAC_DENSE_MAX_TOKENS)
        m = NC_JAC_DENSE_MAX_TOKENS;
    return m < used ? m : used;
}

size_t nc_jac_dense_default_probes(size_t d, size_t used)
{
    if (d == 0 || used >= d)
        return NC_JAC_PROBES;
    size_t P = NC_JAC_PROBES * used / d; /* used < d: no overflow */
    return P > 0 ? P : 1;
}
