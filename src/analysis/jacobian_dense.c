/*
 * jacobian_dense.c - the dense check of the diagonal-Jacobian comparison
 * (jacobian.h, "Then, as checks: dense"): for a sample of tokens, J
 * materialised as a d x d float matrix and J^T G for a block of probe
 * columns computed as one OpenBLAS sgemm, compared with the analytic J^T g
 * of the streaming pass against a rounding bound; the default sample size;
 * and the BLAS rate the benchmark reports.
 *
 * Legend as in jacobian.c: d channels; t a visited token (a position in
 * res->tok), tok its row in x; i, j channels; y = (x - c_t) * inv_t; J the
 * exact Jacobian, jd its diagonal; G the d x ncols block of columns g.
 *
 * Left out: the streaming pass, its summaries and the ODE check
 * (jacobian.c); the per-token sweeps both files use are in
 * jacobian_internal.h.
 *
 * The only file of normcmp that includes <cblas.h> (STYLE.md section 1:
 * BLAS stays in analysis/jacobian*).
 */
#include "analysis/jacobian.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/jacobian_internal.h"
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

/* sum_j row_j^2 of a float row, in double */
NC_VM_INLINE double sq_sum_f(const float *row, size_t n)
{
    v4d s0 = {0, 0, 0, 0}, s1 = s0;
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d a = __builtin_convertvector(V4F(row + i), v4d); /* exact */
        v4d b = __builtin_convertvector(V4F(row + i + 4), v4d);
        s0 += a * a;
        s1 += b * b;
    }
    double s[NC_LANES];
    V4(s) = s0;
    V4(s + 4) = s1;
    for (int l = 0; i < n; i++, l++)
        s[l] += (double)row[i] * (double)row[i];
    return nc_lanes_total(s);
}

NC_VMATH_CLONES
double nc_jac_token_dense_f(nc_norm_kind norm, const double *y, double inv, size_t d, float *J)
{
    /* the entries of nc_jac_token_dense, each rounded once to float */
    const double dd = (double)d, b = norm == NC_LAYERNORM ? inv / dd : 0.0;
    nc_sum f2 = {0, 0};
    for (size_t i = 0; i < d; i++) {
        float *row = J + i * d;
        const double ci = inv * y[i] / dd;
        for (size_t j = 0; j < d; j++)
            row[j] = (float)(-(ci * y[j]) - b);
        row[i] = (float)((-(ci * y[i]) - b) + inv);
        nc_sum_add(&f2, sq_sum_f(row, d));
    }
    return nc_sum_get(&f2);
}

void nc_jac_dense_vjp(const float *J, size_t d, const float *G, size_t ncols, float *out)
{
    /* J is stored row-major, which column-major BLAS reads as the matrix
     * J^T: so out (d x ncols, column-major) = J^T G is one sgemm without a
     * transpose flag (also the faster of the two forms in OpenBLAS: it
     * packs the matrix with unit stride). Sizes fit an int: the caller
     * bounds d * d * 4 bytes. */
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)d, (int)ncols, (int)d, 1.0f, J,
                (int)d, G, (int)d, 0.0f, out, (int)d);
}

/* ============================================================ dense check */

/* The componentwise scale of J^T g at channel i, an upper bound on
 * sum_j |J_ij g_j| (J symmetric):
 *   s_i = inv (|g_i| + ([sum_j |g_j|] + |y_i| sum_j |y_j g_j|) / d)
 * since |J_ij| <= inv (delta_ij + [1/d] + |y_i y_j| / d). A dot product of
 * length d in float, with both factors rounded to float first, is off by at
 * most gamma_{d+2} = (d+2) u / (1 - (d+2) u) times sum_j |J_ij g_j| (u =
 * 2^-24; Higham, "Accuracy and Stability of Numerical Algorithms", 3.1),
 * in any summation order, FMA or not: so |dense_i - analytic_i| / s_i <=
 * gamma_{d+2} + the analytic side's double rounding is a bound that holds
 * whatever OpenBLAS does, and a wrong formula (a missing rank-one term is
 * ~1/sqrt(d) of s_i) exceeds it. */
static double dense_tolerance(size_t d)
{
    const double u = 0x1p-24, k = (double)d + 3.0; /* + 1 for the double side */
    return k * u / (1.0 - k * u);
}

/* sums[0] = sum |g|, sums[1] = sum |y g|, sums[2] = max |g| (a NaN in g
 * makes sums[0] NaN). */
NC_VM_INLINE void abs_sums(const double *y, const double *g, size_t d, double sums[3])
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    v4d sg = {0, 0, 0, 0}, syg = sg, gm = sg;
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        v4d a = (v4d)((v4i)V4(g + i) & no_sign), b = (v4d)((v4i)V4(y + i) & no_sign);
        sg += a;
        syg += b * a;
        v4i take = a > gm;
        gm = (v4d)(((v4i)a & take) | ((v4i)gm & ~take));
    }
    double s0 = (sg[0] + sg[1]) + (sg[2] + sg[3]), s1 = (syg[0] + syg[1]) + (syg[2] + syg[3]);
    double m = fmax(fmax(gm[0], gm[1]), fmax(gm[2], gm[3]));
    for (; i < d; i++) {
        s0 += fabs(g[i]);
        s1 += fabs(y[i]) * fabs(g[i]);
        m = fabs(g[i]) > m ? fabs(g[i]) : m;
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = m;
}

/* max_i |jg_i - v_i| / s_i with s_i = inv (|g_i| + (sg + |y_i| syg) / d)
 * (dense_tolerance); a NaN difference gives NaN, a nonzero difference over
 * s_i = 0 gives inf, 0 / 0 counts as 0. */
NC_VM_INLINE double max_scaled_diff(const float *jg, const double *v, const double *g,
                                    const double *y, double inv, double sg, double syg,
                                    size_t d)
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    const double dd = (double)d;
    v4d m = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= d; i += 4) {
        v4d diff = (v4d)((v4i)(__builtin_convertvector(V4F(jg + i), v4d) - V4(v + i)) & no_sign);
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
        double diff = fabs((double)jg[i] - v[i]);
        double r = diff == 0 ? 0.0 : diff / (inv * (fabs(g[i]) + (sg + fabs(y[i]) * syg) / dd));
        out = r > out || r != r ? r : out;
    }
    return out;
}

/* The largest max_scaled_diff over the ncols columns of G [d x ncols] and
 * JG = the dense J^T G, against the pass's own J^T g (errors_of; v is d
 * doubles of scratch). Columns without anything to compare (a zero or
 * non-finite real gradient, or one beyond float's range) are skipped. */
NC_VMATH_CLONES
static double compare_columns(nc_norm_kind norm, const double *y, const double *jd, double inv,
                              size_t d, const double *G, const float *JG, size_t ncols,
                              double *v)
{
    double worst = 0;
    for (size_t k = 0; k < ncols; k++) {
        const double *g = G + k * d;
        double as[3];
        abs_sums(y, g, d, as);
        if (!(as[0] > 0) || !isfinite(as[0]) || !isfinite(as[1]) || !(as[2] <= FLT_MAX))
            continue;
        double v2, e2[1];
        errors_of(norm, y, jd, NULL, 0, inv, d, g, v, &v2, e2);
        const double sg = norm == NC_LAYERNORM ? as[0] : 0.0;
        double r = max_scaled_diff(JG + k * d, v, g, y, inv, sg, as[1], d);
        worst = r > worst || r != r ? r : worst;
    }
    return worst;
}

/* Materialises J in float for m tokens spread evenly over the used ones
 * (one d x d matrix at a time) and compares J^T G (one sgemm per token, G
 * = [probes | random signs | real gradient], ncols columns) with the
 * analytic J^T g, and the float matrix's sum of squares with the closed
 * form. */
int nc_jac_dense_check(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                       const double *weight, size_t m, size_t used, uint64_t pseed, size_t P,
                       nc_jac_result *out, nc_err *err)
{
    const size_t d = res->d, nt = res->tok.nt;
    /* random columns: the P probes of the pass, then random signs from the
     * same stream up to NC_JAC_DENSE_COLUMNS; then the real gradient */
    const size_t nrand = P + (grad ? 1 : 0) >= NC_JAC_DENSE_COLUMNS
                             ? P
                             : NC_JAC_DENSE_COLUMNS - (grad ? 1 : 0);
    const size_t ncols = nrand + (grad ? 1 : 0);
    float *J = malloc(d * d * sizeof *J);
    float *Gf = malloc(2 * ncols * d * sizeof *Gf);
    double *work = malloc((ncols + 4) * d * sizeof *work);
    if (!J || !Gf || !work) {
        free(J);
        free(Gf);
        free(work);
        return nc_err_set(err, NC_ENOMEM,
                          "%s: out of memory for the dense Jacobian (%zu x %zu floats)",
                          res->name, d, d);
    }
    float *JG = Gf + ncols * d;
    double *G = work, *ana = G + ncols * d, *xr = ana + d, *y = xr + d, *jd = y + d;
    const double dd = (double)d, tol = dense_tolerance(d);
    double max_rel = 0, max_frob = 0, t_gemm = 0;
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
        const double inv = res->tok.inv[t];
        if (!(4.0 * inv < FLT_MAX))
            continue; /* |J_ij| <= 2 inv + inv / d would overflow a float */
        nc_tensor_rows(x, tok, 1, xr);
        double sums[4];
        token_state(res->norm, xr, res->tok.centre[t], inv, d, y, jd, sums);
        /* the same probes as the streaming pass (the stream is one
         * sequence), then random signs (64 from a word: the extra columns
         * only have to be arbitrary, and normals would cost more than the
         * product for small d), then the real gradient */
        nc_rng rng;
        nc_rng_seed(&rng, pseed, (uint64_t)tok);
        nc_rng_normals(&rng, G, P * d);
        for (size_t k = P * d; k < nrand * d; k += 64) {
            const uint64_t w = nc_rng_u64(&rng);
            const size_t n = nrand * d - k < 64 ? nrand * d - k : 64;
            static const double sign[2] = {1.0, -1.0}; /* bit b set: -1 */
            for (size_t b = 0; b < n; b++)
                G[k + b] = sign[(w >> b) & 1];
        }
        if (grad) {
            double *gr = G + nrand * d;
            nc_tensor_rows(grad, tok, 1, gr);
            if (weight)
                for (size_t i = 0; i < d; i++)
                    gr[i] *= weight[i];
        }
        for (size_t k = 0; k < ncols * d; k++)
            Gf[k] = (float)G[k];
        const double fd = nc_jac_token_dense_f(res->norm, y, inv, d, J);
        double t0 = nc_now_s();
        nc_jac_dense_vjp(J, d, Gf, ncols, JG);
        t_gemm += nc_now_s() - t0;
        double r = compare_columns(res->norm, y, jd, inv, d, G, JG, ncols, ana);
        max_rel = r > max_rel || r != r ? r : max_rel;
        /* the float matrix's ||J||_F^2 against the pass's closed form,
         * relative to ||inv I||_F^2 = d inv^2 (||J||_F^2 itself can cancel
         * to ~0: LayerNorm with d = 2) */
        double f2 = frob2_from(res->norm, sums[0], sums[1], inv, d);
        max_frob = fmax(max_frob, fabs(fd - f2) / (dd * inv * inv));
        done++;
    }
    free(J);
    free(Gf);
    free(work);
    out->tokens_materialised = done;
    out->dense_columns = ncols;
    out->dense_max_rel_diff = max_rel;
    out->dense_frob_max_rel_diff = max_frob;
    out->dense_tol = tol;
    out->dense_frob_tol = NC_JAC_DENSE_FROB_TOL;
    out->dense_flops = 2.0 * dd * dd * (double)ncols * (double)done;
    out->time_dense_gemm_s = t_gemm;
    if (done == 0) {
        out->dense_max_rel_diff = out->dense_frob_max_rel_diff = NAN;
        snprintf(out->dense_status, sizeof out->dense_status,
                 "skipped: no sampled token's Jacobian fits a float");
    } else if (max_rel <= tol && max_frob <= NC_JAC_DENSE_FROB_TOL)
        snprintf(out->dense_status, sizeof out->dense_status, "ok");
    else
        snprintf(out->dense_status, sizeof out->dense_status,
                 "MISMATCH: J^T g off by %.3g (bound %.3g), ||J||_F^2 by %.3g (bound %.3g)",
                 max_rel, tol, max_frob, NC_JAC_DENSE_FROB_TOL);
    return 0;
}

/* ========================================================== sample size */

size_t nc_jac_dense_default_tokens(size_t d)
{
    if (d == 0)
        return 0;
    if (d > NC_JAC_DENSE_ENTRIES / d)
        return 1;
    size_t m = NC_JAC_DENSE_ENTRIES / d / d;
    return m < NC_JAC_DENSE_MAX_TOKENS ? m : NC_JAC_DENSE_MAX_TOKENS;
}

/* ============================================================ benchmark */

int nc_jac_blas_rate(size_t n, bool single, int reps, double *gflops, double *elapsed_s,
                     nc_err *err)
{
    if (n == 0 || n > INT_MAX || n > SIZE_MAX / 3 / n / sizeof(double))
        return nc_err_set(err, NC_EINVAL, "BLAS benchmark size %zu out of range", n);
    size_t es = single ? sizeof(float) : sizeof(double);
    void *mem = malloc(3 * n * n * es);
    if (!mem)
        return nc_err_set(err, NC_ENOMEM, "out of memory for a %zu x %zu BLAS benchmark", n, n);
    /* deterministic, well-scaled entries in [-1, 1) */
    for (size_t k = 0; k < 3 * n * n; k++) {
        double v = (double)((k * 2654435761u) % 2048) / 1024.0 - 1.0;
        if (single)
            ((float *)mem)[k] = (float)v;
        else
            ((double *)mem)[k] = v;
    }
    const int ni = (int)n;
    double best = INFINITY;
    for (int r = -1; r < (reps > 0 ? reps : 1); r++) {
        int m = r < 0 ? (ni < 256 ? ni : 256) : ni; /* r = -1: the warm-up */
        double t0 = nc_now_s();
        if (single) {
            float *A = mem, *B = A + n * n, *C = B + n * n;
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0f, A, m, B, m,
                        0.0f, C, m);
        } else {
            double *A = mem, *B = A + n * n, *C = B + n * n;
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0, A, m, B, m,
                        0.0, C, m);
        }
        double dt = nc_now_s() - t0;
        if (r >= 0 && dt < best)
            best = dt;
    }
    free(mem);
    *elapsed_s = best;
    *gflops = 2.0 * (double)n * (double)n * (double)n / best / 1e9;
    return 0;
}
