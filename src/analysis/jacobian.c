/*
 * jacobian.c - the diagonal-Jacobian comparison (jacobian.h; BRIEF.md, "The
 * gradient derivation").
 *
 * Legend: d channels; t a visited token (a position in res->tok), tok its
 * row in x; i a channel; y = (x - c_t) * inv_t the norm's output before the
 * affine part; J the exact Jacobian of the norm, jd its diagonal; g a probe
 * (or the real gradient at the norm's output), v = J^T g; f' a surrogate's
 * derivative. Accumulators are per shard and merged in shard order;
 * per-token values go to arrays indexed by t and are summarised serially,
 * so nothing depends on the thread count (core/par.h).
 *
 * Where the time goes (the streaming pass, per token and probe): d normals
 * (nc_rng_normals, ~3 ns each), then sweeps over the channels (errors_of):
 * one for y.g and sum g, one that forms v = J^T g and the error of diag(J),
 * one per pair of surrogates for theirs. The f' rows are computed once per
 * token by the table's vectorised deriv functions (they cost about as much
 * as all the probes' sweeps). Every loop over i keeps NC_LANES partial sums
 * (core/sum.h), so it vectorises without reordering anything, and the
 * helpers are NC_VM_INLINE so that they are compiled into jac_block's AVX2
 * clone (NC_VMATH_CLONES). Scratch is per thread, (4 + surrogates) d
 * doubles, allocated once per pass. On a 4096 x 4096 layer with 8 probes
 * and the 8 default fits the pass takes ~1.3 s of CPU (one thread, shared
 * AMD EPYC): ~0.4 s of normals, ~0.35 s of sweeps, ~0.45 s of f' rows, of
 * which DyISRU's three take half because GCC does not vectorise a loop
 * calling sqrt unless -fno-math-errno (sqrt may set errno); with that flag
 * the pass takes ~1.1 s. (It took ~4.8 s with the polar method and plain
 * lane loops; see the reductions below.)
 *
 * The only file of normcmp that includes <cblas.h> (STYLE.md section 1).
 */
#include "analysis/jacobian.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/par.h"
#include "core/rng.h"
#include "core/sum.h"
#include "core/vmath.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ============================================================ reductions */

/* Sums over i < n in NC_LANES lanes (lane i mod NC_LANES, core/sum.h): the
 * fixed-width body vectorises without reassociation, so the bits are the
 * same with SSE2, AVX2 or no vectors at all. NC_VM_INLINE: a call would
 * leave the AVX2 clone of the caller for the baseline copy.
 *
 * The hot sweeps (token_state, errors_of, sq_err, sq_diff_max and those of
 * the dense check) are written with explicit four-double vectors instead
 * (GCC and clang's vector extension; the baseline clone does each as two
 * SSE2 operations): GCC 12 compiles the lane loops as a two-trip inner
 * loop with the partial sums on the stack, a store-to-load chain through
 * every step, and with an unroll pragma it transposes the data instead
 * (3 to 5 times the instructions either way). Lanes 0-3 are one vector and
 * 4-7 another, element i goes to lane i mod NC_LANES and the lanes are
 * added as nc_lanes_total does: the same bits as the scalar form. dot and
 * total, used once per token or less, keep the plain form. */

/* sum_i a_i b_i */
NC_VM_INLINE double dot(const double *a, const double *b, size_t n)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++)
            s[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++)
        s[l] += a[i] * b[i];
    return nc_lanes_total(s);
}

/* sum_i a_i */
NC_VM_INLINE double total(const double *a, size_t n)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++)
            s[l] += a[i + l];
    for (int l = 0; i < n; i++, l++)
        s[l] += a[i];
    return nc_lanes_total(s);
}

/* Four doubles in one value, two of which hold the NC_LANES = 8 lanes; V4
 * reads or writes four consecutive doubles at p as one (aligned to a
 * double only, and allowed to alias them). No function takes or returns a
 * v4d: that would change the ABI between the AVX2 and baseline clones. */
typedef double v4d __attribute__((vector_size(4 * sizeof(double))));
typedef int64_t v4i __attribute__((vector_size(4 * sizeof(int64_t)))); /* masks */
typedef double v4d_mem __attribute__((vector_size(4 * sizeof(double)), aligned(sizeof(double)),
                                      may_alias));
#define V4(p) (*(v4d_mem *)(p))
typedef float v4f_mem __attribute__((vector_size(4 * sizeof(float)), aligned(sizeof(float)),
                                     may_alias));
#define V4F(p) (*(const v4f_mem *)(p)) /* four floats, read only */

/* sum_i (a_i - b_i)^2 and, into *maxe, max(*maxe, max_i |a_i - b_i|) (a NaN
 * difference makes the maximum NaN) */
NC_VM_INLINE double sq_diff_max(const double *a, const double *b, size_t n, double *maxe)
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    v4d s0 = {0, 0, 0, 0}, s1 = s0, m0 = s0, m1 = s0;
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d e0 = (v4d)((v4i)(V4(a + i) - V4(b + i)) & no_sign); /* |a - b| */
        v4d e1 = (v4d)((v4i)(V4(a + i + 4) - V4(b + i + 4)) & no_sign);
        s0 += e0 * e0;
        s1 += e1 * e1;
        v4i take0 = (e0 > m0) | (e0 != e0), take1 = (e1 > m1) | (e1 != e1); /* NaN wins */
        m0 = (v4d)(((v4i)e0 & take0) | ((v4i)m0 & ~take0));
        m1 = (v4d)(((v4i)e1 & take1) | ((v4i)m1 & ~take1));
    }
    double s[NC_LANES], m[NC_LANES];
    V4(s) = s0;
    V4(s + 4) = s1;
    V4(m) = m0;
    V4(m + 4) = m1;
    for (int l = 0; i < n; i++, l++) {
        double e = fabs(a[i] - b[i]);
        s[l] += e * e;
        m[l] = e > m[l] || e != e ? e : m[l];
    }
    for (int l = 0; l < NC_LANES; l++)
        *maxe = m[l] > *maxe || m[l] != m[l] ? m[l] : *maxe;
    return nc_lanes_total(s);
}

/* ======================================================== one token */

/* (inline versions for the pass, public wrappers below) */

/* J_ii = inv (a - y_i^2 / d), a = 1 - 1/d for LayerNorm (the 1 1^T/d
 * term), 1 for RMSNorm */
NC_VM_INLINE double diag_a(nc_norm_kind norm, size_t d)
{
    return norm == NC_LAYERNORM ? 1.0 - 1.0 / (double)d : 1.0;
}

NC_VM_INLINE void token_vjp(nc_norm_kind norm, const double *y, double inv, size_t d,
                            const double *g, double *out)
{
    /* J^T g = J g = inv (g - [mean(g)] - y (y.g) / d) */
    const double dd = (double)d;
    const double yg = dot(y, g, d) / dd;
    const double mg = norm == NC_LAYERNORM ? total(g, d) / dd : 0.0;
    for (size_t i = 0; i < d; i++)
        out[i] = inv * ((g[i] - mg) - y[i] * yg);
}

void nc_jac_token_diag(nc_norm_kind norm, const double *y, double inv, size_t d, double *diag)
{
    const double dd = (double)d, a = diag_a(norm, d);
    for (size_t i = 0; i < d; i++)
        diag[i] = inv * (a - y[i] * y[i] / dd);
}

void nc_jac_token_vjp(nc_norm_kind norm, const double *y, double inv, size_t d, const double *g,
                      double *out)
{
    token_vjp(norm, y, inv, d, g, out);
}

/* ||J||_F^2 from syy = sum y^2 and sy = sum y (jacobian.h) */
static double frob2_from(nc_norm_kind norm, double syy, double sy, double inv, size_t d)
{
    const double dd = (double)d, q = syy / dd;
    if (norm == NC_RMSNORM)
        return inv * inv * ((dd - 2.0 * q) + q * q);
    const double m = sy / dd;
    return inv * inv * (((dd - 1.0) - 2.0 * q) + q * q + 2.0 * m * m);
}

double nc_jac_token_frob2(nc_norm_kind norm, const double *y, double inv, size_t d)
{
    return frob2_from(norm, dot(y, y, d), total(y, d), inv, d);
}

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

/* ||e|| / ||v|| from their squares, with the conventions of jacobian.h:
 * +inf for a nonzero error over a zero v, 0 for 0/0; never NaN from a zero
 * denominator. */
static double rel_err(double e2, double v2)
{
    if (v2 > 0)
        return sqrt(e2 / v2);
    return e2 > 0 ? INFINITY : (e2 == 0 ? 0.0 : e2);
}

/* ============================================================ the pass */

typedef struct jac_acc {
    nc_sum diag2;    /* sum_t sum_i J_ii^2 (also ||diag(J) 1||^2) */
    nc_sum frob2;    /* sum_t ||J||_F^2 */
    nc_sum rad_num;  /* sum_t ||diag(J) y||^2 */
    nc_sum rad_den;  /* sum_t ||inv y||^2 */
    nc_sum ones_den; /* sum_t d inv^2 */
    nc_sum sse[NC_FIT_COUNT]; /* sum (J_ii - f'(x_i))^2 */
    double maxe[NC_FIT_COUNT];
    size_t used, real_zero, real_nonfinite;
} jac_acc;

typedef struct jac_ctx {
    const nc_layer_result *res;
    const nc_tensor *grad;
    const double *weight;
    size_t d, probes;
    uint64_t pseed;             /* seed ^ NC_JAC_SEED_TAG */
    int ns;                     /* surrogates compared */
    int sid[NC_FIT_COUNT];      /* their ids */
    double *err;                /* [nt] per-token mean probe error of diag(J) */
    double *err_real;           /* [nt] real-gradient error of diag(J) (has grad) */
    unsigned char *real_ok;     /* [nt] token has a usable real gradient */
    double *serr[NC_FIT_COUNT];      /* [nt] per surrogate slot: probe error */
    double *serr_real[NC_FIT_COUNT]; /* [nt] per surrogate slot: real error */
    jac_acc acc[NC_SHARDS];
} jac_ctx;

/* Doubles of per-thread scratch: y, jd, g (a probe or the real gradient),
 * v = J^T g, and f' per surrogate. */
static size_t scratch_doubles(size_t d, int ns)
{
    return (4 + (size_t)ns) * d;
}

/* Per token: y = (x - c) inv and jd = diag(J) (jacobian.h), and the sums
 * sums[0..4) = sum y^2, sum y, sum jd^2, sum (jd y)^2, in one sweep. */
NC_VM_INLINE void token_state(nc_norm_kind norm, const double *x, double c, double inv,
                              size_t d, double *y, double *jd, double sums[4])
{
    const double dd = (double)d, a = diag_a(norm, d);
    v4d yy0 = {0, 0, 0, 0}, yy1 = yy0, sy0 = yy0, sy1 = yy0, jj0 = yy0, jj1 = yy0;
    v4d rr0 = yy0, rr1 = yy0;
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES) {
        v4d y0 = (V4(x + i) - c) * inv, y1 = (V4(x + i + 4) - c) * inv;
        v4d j0 = inv * (a - y0 * y0 / dd), j1 = inv * (a - y1 * y1 / dd);
        v4d r0 = j0 * y0, r1 = j1 * y1;
        V4(y + i) = y0;
        V4(y + i + 4) = y1;
        V4(jd + i) = j0;
        V4(jd + i + 4) = j1;
        yy0 += y0 * y0;
        yy1 += y1 * y1;
        sy0 += y0;
        sy1 += y1;
        jj0 += j0 * j0;
        jj1 += j1 * j1;
        rr0 += r0 * r0;
        rr1 += r1 * r1;
    }
    double syy[NC_LANES], sy[NC_LANES], sjj[NC_LANES], srad[NC_LANES];
    V4(syy) = yy0;
    V4(syy + 4) = yy1;
    V4(sy) = sy0;
    V4(sy + 4) = sy1;
    V4(sjj) = jj0;
    V4(sjj + 4) = jj1;
    V4(srad) = rr0;
    V4(srad + 4) = rr1;
    for (int l = 0; i < d; i++, l++) {
        double yi = (x[i] - c) * inv, ji = inv * (a - yi * yi / dd), r = ji * yi;
        y[i] = yi;
        jd[i] = ji;
        syy[l] += yi * yi;
        sy[l] += yi;
        sjj[l] += ji * ji;
        srad[l] += r * r;
    }
    sums[0] = nc_lanes_total(syy);
    sums[1] = nc_lanes_total(sy);
    sums[2] = nc_lanes_total(sjj);
    sums[3] = nc_lanes_total(srad);
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

NC_VMATH_CLONES
static void jac_block(void *vctx, int shard, size_t t0, size_t nt, const double *rows,
                      void *scratch)
{
    jac_ctx *ctx = vctx;
    const nc_layer_result *res = ctx->res;
    const nc_layer_tokens *tk = &res->tok;
    const nc_norm_kind norm = res->norm;
    const size_t d = ctx->d, P = ctx->probes;
    const int ns = ctx->ns;
    jac_acc *a = &ctx->acc[shard];
    double *y = scratch, *jd = y + d, *g = jd + d, *v = g + d, *fp = v + d; /* fp: [ns * d] */

    for (size_t k = 0; k < nt; k++) {
        const size_t t = t0 + k;
        if (tk->status[t] != NC_TOKEN_OK)
            continue;
        const size_t tok = tk->index ? tk->index[t] : t;
        const double *x = rows + k * d;
        const double inv = tk->inv[t];
        double sums[4];
        token_state(norm, x, tk->centre[t], inv, d, y, jd, sums);

        /* pooled shares: sum J_ii^2 against ||J||_F^2 (closed form), and
         * ||diag(J) y||^2 against ||inv y||^2 */
        nc_sum_add(&a->diag2, sums[2]);
        nc_sum_add(&a->frob2, frob2_from(norm, sums[0], sums[1], inv, d));
        nc_sum_add(&a->rad_num, sums[3]);
        nc_sum_add(&a->rad_den, inv * inv * sums[0]);
        nc_sum_add(&a->ones_den, (double)d * inv * inv);
        a->used++;

        /* surrogate derivatives against the exact diagonal */
        for (int j = 0; j < ns; j++) {
            const int id = ctx->sid[j];
            double *f = fp + (size_t)j * d;
            nc_surrogate_get((nc_fit_id)id)->deriv(&res->fits[id].params, 0, x, d, f);
            nc_sum_add(&a->sse[id], sq_diff_max(jd, f, d, &a->maxe[id]));
        }

        /* random probes, d normals each from the token's stream, probe after
         * probe: per token, the mean of the probes' relative errors */
        nc_rng rng;
        nc_rng_seed(&rng, ctx->pseed, (uint64_t)tok);
        double e_sum = 0, se_sum[NC_FIT_COUNT] = {0}, v2, e2[1 + NC_FIT_COUNT];
        for (size_t p = 0; p < P; p++) {
            nc_rng_normals(&rng, g, d);
            errors_of(norm, y, jd, fp, ns, inv, d, g, v, &v2, e2);
            e_sum += rel_err(e2[0], v2);
            for (int j = 0; j < ns; j++)
                se_sum[j] += rel_err(e2[1 + j], v2);
        }
        ctx->err[t] = e_sum / (double)P;
        for (int j = 0; j < ns; j++)
            ctx->serr[j][t] = se_sum[j] / (double)P;

        /* the real gradient at the norm's output: weight * grad_output */
        if (!ctx->grad)
            continue;
        nc_tensor_rows(ctx->grad, tok, 1, g);
        if (ctx->weight)
            for (size_t i = 0; i < d; i++)
                g[i] *= ctx->weight[i];
        const double g2 = dot(g, g, d);
        if (!isfinite(g2)) {
            a->real_nonfinite++;
            continue;
        }
        if (g2 == 0) {
            a->real_zero++;
            continue;
        }
        ctx->real_ok[t] = 1;
        errors_of(norm, y, jd, fp, ns, inv, d, g, v, &v2, e2);
        ctx->err_real[t] = rel_err(e2[0], v2);
        for (int j = 0; j < ns; j++)
            ctx->serr_real[j][t] = rel_err(e2[1 + j], v2);
    }
}

/* ============================================================ summaries */

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* NumPy's default ("linear") quantile of sorted a[0..n): position q (n-1),
 * interpolated as numpy's _lerp does; an infinite upper neighbour gives
 * +inf unless the position falls exactly on the lower one. */
static double quantile_sorted(const double *a, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return a[n - 1];
    double t = pos - (double)lo, lo_v = a[lo], hi_v = a[lo + 1];
    if (t == 0 || lo_v == hi_v)
        return lo_v;
    if (isinf(hi_v))
        return hi_v;
    double diff = hi_v - lo_v;
    return t >= 0.5 ? hi_v - diff * (1.0 - t) : lo_v + diff * t;
}

/* The summary of v[t] over the tokens with keep[t] == want (work: nt
 * doubles). A NaN among the values makes every field NaN. */
static nc_jac_summary summarize(const double *v, const unsigned char *keep, unsigned char want,
                                size_t nt, double *work)
{
    nc_jac_summary s = {NAN, NAN, NAN, 0, 0};
    nc_sum sum = {0, 0};
    bool has_nan = false;
    for (size_t t = 0; t < nt; t++) {
        if (keep[t] != want)
            continue;
        double e = v[t];
        has_nan |= isnan(e);
        s.n_inf += isinf(e) != 0;
        nc_sum_add(&sum, e);
        work[s.n++] = e;
    }
    if (s.n == 0 || has_nan)
        return s;
    s.mean = s.n_inf ? INFINITY : nc_sum_get(&sum) / (double)s.n;
    qsort(work, s.n, sizeof *work, cmp_double);
    s.median = quantile_sorted(work, s.n, 0.5);
    s.p95 = quantile_sorted(work, s.n, 0.95);
    return s;
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
static int dense_check(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
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
        double t0 = now_s();
        nc_jac_dense_vjp(J, d, Gf, ncols, JG);
        t_gemm += now_s() - t0;
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

/* ============================================================ ODE check */

typedef struct ode_ctx {
    double rho, d;
} ode_ctx;

/* ODE-1: dy/dx = (1/rho)(1 - y^2/d) */
static double ode1_rhs(double x, double y, void *vc)
{
    (void)x;
    const ode_ctx *c = vc;
    return (1.0 - y * y / c->d) / c->rho;
}

/* ODE-2: dy/dx = (y/x)(1 - y^2/d) */
static double ode2_rhs(double x, double y, void *vc)
{
    const ode_ctx *c = vc;
    return (y / x) * (1.0 - y * y / c->d);
}

/* Integrates from (x0, y0) to x_max; the largest |y - closed(x)| over the
 * accepted points (the start included) into *dev. */
static nc_ode_status ode_run(nc_ode_fn f, ode_ctx *c, double x0, double y0, double x_max,
                             double (*closed)(const ode_ctx *, double), double *dev,
                             size_t *steps, size_t *rejected)
{
    nc_ode s;
    nc_ode_begin(&s, f, c, x0, y0, NULL);
    double m = fabs(y0 - closed(c, x0));
    while (s.status == NC_ODE_OK && s.x < x_max)
        if (nc_ode_step(&s, x_max) == NC_ODE_OK)
            m = fmax(m, fabs(s.y - closed(c, s.x)));
    *dev = m;
    *steps = s.accepted;
    *rejected = s.rejected;
    return s.status;
}

static double closed_tanh(const ode_ctx *c, double x)
{
    const double sd = sqrt(c->d);
    return sd * tanh(x / (c->rho * sd));
}

static double closed_isru(const ode_ctx *c, double x)
{
    return sqrt(c->d) * x / sqrt(x * x + c->d * c->rho * c->rho);
}

void nc_jac_ode_check(double rho, size_t d, double x_max, nc_jac_ode *out)
{
    memset(out, 0, sizeof *out);
    out->rho = rho;
    out->x_max = x_max;
    out->ode2_x0 = out->ode1_max_dev = out->ode2_max_dev = NAN;
    if (!(rho > 0 && isfinite(rho) && x_max > 0 && isfinite(x_max) && d > 0)) {
        snprintf(out->status, sizeof out->status,
                 "not run: needs a finite rho > 0 and max |x| > 0");
        return;
    }
    ode_ctx c = {rho, (double)d};
    nc_ode_status s1 = ode_run(ode1_rhs, &c, 0.0, 0.0, x_max, closed_tanh, &out->ode1_max_dev,
                               &out->ode1_steps, &out->ode1_rejected);

    /* ODE-2 from its series at x0 (jacobian.h): a = 1/rho,
     * y = a x - a^3 x^3 / (2d) + 3 a^5 x^5 / (8 d^2) */
    double x0 = fmin(NC_JAC_ODE2_X0 * rho * sqrt(c.d), 0.5 * x_max);
    double a = 1.0 / rho, u = a * a * x0 * x0 / c.d;
    double y0 = a * x0 * (1.0 - 0.5 * u + 0.375 * u * u);
    out->ode2_x0 = x0;
    nc_ode_status s2 = ode_run(ode2_rhs, &c, x0, y0, x_max, closed_isru, &out->ode2_max_dev,
                               &out->ode2_steps, &out->ode2_rejected);
    out->ok = s1 == NC_ODE_OK && s2 == NC_ODE_OK;
    if (out->ok)
        snprintf(out->status, sizeof out->status, "ok");
    else
        snprintf(out->status, sizeof out->status, "ODE-1: %s; ODE-2: %s",
                 nc_ode_status_name(s1), nc_ode_status_name(s2));
}

/* ============================================================ the run */

size_t nc_jac_dense_default_tokens(size_t d)
{
    if (d == 0)
        return 0;
    if (d > NC_JAC_DENSE_ENTRIES / d)
        return 1;
    size_t m = NC_JAC_DENSE_ENTRIES / d / d;
    return m < NC_JAC_DENSE_MAX_TOKENS ? m : NC_JAC_DENSE_MAX_TOKENS;
}

void nc_jac_opts_defaults(nc_jac_opts *o)
{
    memset(o, 0, sizeof *o);
    o->probes = NC_JAC_PROBES;
    o->seed = 1;
}

static void set_nan_metrics(nc_jac_result *out)
{
    out->diag_frobenius_share = out->radial_retention = out->ones_retention = NAN;
    nc_jac_summary none = {NAN, NAN, NAN, 0, 0};
    out->backprop = out->backprop_real = none;
    for (int j = 0; j < NC_FIT_COUNT; j++) {
        out->surr[j].diag_rmse = out->surr[j].diag_max_err = NAN;
        out->surr[j].backprop = out->surr[j].backprop_real = none;
    }
    out->dense_max_rel_diff = out->dense_frob_max_rel_diff = NAN;
    out->dense_tol = out->dense_frob_tol = NAN;
}

int nc_jacobian_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                    const double *weight, const nc_jac_opts *o, int threads,
                    nc_progress *progress, nc_jac_result *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    nc_jac_opts dflt;
    nc_jac_opts_defaults(&dflt);
    if (!o)
        o = &dflt;
    const size_t d = res->d, nt = res->tok.nt;
    if (x->N != res->N || x->d != d || !nc_dtype_is_float(x->dtype))
        return nc_err_set(err, NC_EINVAL,
                          "%s: the Jacobian pass got an input of %zu x %zu, the layer was "
                          "analysed as %zu x %zu",
                          res->name, x->N, x->d, res->N, d);
    if (grad) {
        if (!nc_dtype_is_float(grad->dtype))
            return nc_err_set(err, NC_EUNSUPPORTED,
                              "%s: gradient dtype %s is not supported (expected F32, F16, BF16 "
                              "or F64)",
                              res->name, nc_dtype_name(grad->dtype));
        if (grad->N != res->N || grad->d != d) {
            char a[128], b[128];
            nc_tensor_shape_str(grad, a, sizeof a);
            nc_tensor_shape_str(x, b, sizeof b);
            return nc_err_set(err, NC_EINVAL,
                              "%s: gradient has shape %s, expected %s (the input's)", res->name,
                              a, b);
        }
    }
    out->norm = res->norm;
    out->d = d;
    out->probes = o->probes ? o->probes : NC_JAC_PROBES;
    out->seed = o->seed;
    out->has_real = grad != NULL;
    out->real_weighted = grad && weight;
    set_nan_metrics(out);
    snprintf(out->dense_status, sizeof out->dense_status, "not run");

    jac_ctx *ctx = NULL;
    double *mem = NULL, *work = NULL;
    unsigned char *real_ok = NULL;
    int rc = 0;

    /* which surrogates: every fit the layer has */
    int ns = 0, sid[NC_FIT_COUNT] = {0};
    for (int j = 0; j < NC_FIT_COUNT; j++)
        if (res->fits[j].ok)
            sid[ns++] = j;

    out->token_backprop = malloc((nt ? nt : 1) * sizeof *out->token_backprop);
    ctx = calloc(1, sizeof *ctx);
    /* per-token arrays besides token_backprop: ns (probes, per surrogate),
     * and with real gradients 1 + ns more */
    size_t per = (size_t)ns + (grad ? 1 + (size_t)ns : 0);
    mem = malloc((nt ? nt : 1) * (per ? per : 1) * sizeof *mem);
    work = malloc((nt ? nt : 1) * sizeof *work);
    real_ok = calloc(nt ? nt : 1, 1);
    if (!out->token_backprop || !ctx || !mem || !work || !real_ok) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the Jacobian pass", res->name);
        goto out;
    }
    for (size_t t = 0; t < nt; t++)
        out->token_backprop[t] = NAN;
    ctx->res = res;
    ctx->grad = grad;
    ctx->weight = weight;
    ctx->d = d;
    ctx->probes = out->probes;
    ctx->pseed = o->seed ^ NC_JAC_SEED_TAG;
    ctx->ns = ns;
    memcpy(ctx->sid, sid, sizeof sid);
    ctx->err = out->token_backprop;
    ctx->real_ok = real_ok;
    double *next = mem;
    for (int j = 0; j < ns; j++, next += nt)
        ctx->serr[j] = next;
    if (grad) {
        ctx->err_real = next;
        next += nt;
        for (int j = 0; j < ns; j++, next += nt)
            ctx->serr_real[j] = next;
    }

    /* ---- the streaming pass ---- */
    double t0 = now_s();
    if (d > 0 && nt > 0) {
        nc_pass pass = nc_layer_pass(res, x, threads, progress);
        pass.scratch_bytes = scratch_doubles(d, ns) * sizeof(double);
        nc_progress_begin(progress, res->name, "jacobian", (uint64_t)(nt * d));
        rc = nc_pass_run(&pass, jac_block, ctx, err);
        nc_progress_end(progress);
        if (rc)
            goto out;
    }
    out->time_analytic_s = now_s() - t0;

    jac_acc *A = &ctx->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        jac_acc *a = &ctx->acc[s];
        nc_sum_merge(&A->diag2, &a->diag2);
        nc_sum_merge(&A->frob2, &a->frob2);
        nc_sum_merge(&A->rad_num, &a->rad_num);
        nc_sum_merge(&A->rad_den, &a->rad_den);
        nc_sum_merge(&A->ones_den, &a->ones_den);
        for (int j = 0; j < NC_FIT_COUNT; j++) {
            nc_sum_merge(&A->sse[j], &a->sse[j]);
            A->maxe[j] = A->maxe[j] >= a->maxe[j] || A->maxe[j] != A->maxe[j] ? A->maxe[j]
                                                                              : a->maxe[j];
        }
        A->used += a->used;
        A->real_zero += a->real_zero;
        A->real_nonfinite += a->real_nonfinite;
    }
    out->tokens = A->used;
    out->real_zero_tokens = A->real_zero;
    out->real_nonfinite_tokens = A->real_nonfinite;
    if (A->used > 0) {
        out->diag_frobenius_share = nc_sum_get(&A->diag2) / nc_sum_get(&A->frob2);
        out->radial_retention = sqrt(nc_sum_get(&A->rad_num) / nc_sum_get(&A->rad_den));
        if (res->norm == NC_LAYERNORM)
            out->ones_retention = sqrt(nc_sum_get(&A->diag2) / nc_sum_get(&A->ones_den));
        const unsigned char *st = res->tok.status;
        out->backprop = summarize(ctx->err, st, NC_TOKEN_OK, nt, work);
        if (grad)
            out->backprop_real = summarize(ctx->err_real, real_ok, 1, nt, work);
        const double npts = (double)A->used * (double)d;
        for (int j = 0; j < ns; j++) {
            nc_jac_surrogate *S = &out->surr[sid[j]];
            S->ok = true;
            S->diag_rmse = sqrt(nc_sum_get(&A->sse[sid[j]]) / npts);
            S->diag_max_err = A->maxe[sid[j]];
            S->backprop = summarize(ctx->serr[j], st, NC_TOKEN_OK, nt, work);
            if (grad)
                S->backprop_real = summarize(ctx->serr_real[j], real_ok, 1, nt, work);
        }
    }

    /* ---- the dense check ---- */
    t0 = now_s();
    size_t max_bytes = o->dense_max_bytes ? o->dense_max_bytes : NC_JAC_DENSE_MAX_BYTES;
    size_t m = o->dense_tokens ? o->dense_tokens : nc_jac_dense_default_tokens(d);
    if (m > A->used)
        m = A->used;
    if (o->no_dense)
        snprintf(out->dense_status, sizeof out->dense_status, "skipped (no_dense)");
    else if (m == 0)
        snprintf(out->dense_status, sizeof out->dense_status, "skipped: no usable token");
    else if (d > INT_MAX || d > max_bytes / sizeof(float) / d)
        snprintf(out->dense_status, sizeof out->dense_status,
                 "skipped: a %zu x %zu matrix exceeds %zu bytes", d, d, max_bytes);
    else if ((rc = dense_check(res, x, grad, weight, m, A->used, ctx->pseed, out->probes, out,
                               err)))
        goto out;
    out->time_dense_s = now_s() - t0;

    /* ---- the ODE check, over [0, max |x|] with rho = the mean token scale ---- */
    t0 = now_s();
    nc_jac_ode_check(res->stats.rho, d, fmax(fabs(res->stats.min), fabs(res->stats.max)),
                     &out->ode);
    out->time_ode_s = now_s() - t0;

out:
    free(ctx);
    free(mem);
    free(work);
    free(real_ok);
    if (rc)
        nc_jac_result_free(out);
    return rc;
}

void nc_jac_result_free(nc_jac_result *r)
{
    if (!r)
        return;
    free(r->token_backprop);
    memset(r, 0, sizeof *r);
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
        double t0 = now_s();
        if (single) {
            float *A = mem, *B = A + n * n, *C = B + n * n;
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0f, A, m, B, m,
                        0.0f, C, m);
        } else {
            double *A = mem, *B = A + n * n, *C = B + n * n;
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0, A, m, B, m,
                        0.0, C, m);
        }
        double dt = now_s() - t0;
        if (r >= 0 && dt < best)
            best = dt;
    }
    free(mem);
    *elapsed_s = best;
    *gflops = 2.0 * (double)n * (double)n * (double)n / best / 1e9;
    return 0;
}
