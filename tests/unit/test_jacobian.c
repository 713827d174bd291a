/*
 * test_jacobian.c - the diagonal-Jacobian comparison (analysis/jacobian.h).
 *
 * The exact Jacobian is checked three ways on random tokens (central finite
 * differences of nc_norm_token + nc_norm_apply, the dense matrix and the
 * dense check's explicit product, the analytic O(d) form); the pooled
 * metrics and the exact backprop errors against expressions derived here
 * from the y's alone (see each test) and computed here by plain loops over
 * d x d entries; the zero-denominator conventions on tokens built so that
 * J^T g is exactly 0; thread-count independence bit for bit. The ODE check
 * is in test_jacobian_ode.c, the summaries' statistics in
 * test_jacobian_stats.c.
 *
 * Legend: N tokens, d channels, t a token, i a channel, y the norm's output
 * before the affine part, inv = 1/scale.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jac_forms.h"
#include "analysis/jacobian.h"
#include "analysis/layer.h"
#include "check.h"
#include "core/norm.h"
#include "core/rng.h"


/* The per-token forms as the passes compute them (jac_forms.h), for a
 * token with output y[d] and inv = 1/scale: diag[i] = J_ii; out[d] = J^T g
 * (out must not alias g or y); ||J||_F^2 in closed form. */
static void token_diag(nc_norm_kind norm, const double *y, double inv, size_t d, double *diag,
                       double sums[5])
{
    double st[5][NC_LANES] = {{0}};
    nc_jac_diag_lanes(y, d, inv, diag_a(norm, d), (double)d, diag, st);
    for (int k = 0; sums && k < 5; k++)
        sums[k] = nc_lanes_total(st[k]);
}

static void token_vjp(nc_norm_kind norm, const double *y, double inv, size_t d, const double *g,
                      double *out)
{
    double *jd = malloc(d * sizeof *jd), v2, e2[1];
    token_diag(norm, y, inv, d, jd, NULL);
    nc_jac_errors_of(norm, y, jd, NULL, 0, inv, d, g, out, &v2, e2);
    free(jd);
}

static double token_frob2(nc_norm_kind norm, const double *y, double inv, size_t d)
{
    double *jd = malloc(d * sizeof *jd), sums[5];
    token_diag(norm, y, inv, d, jd, sums);
    free(jd);
    return frob2_from(norm, sums[0], sums[1], inv, d);
}

/* ================================================================ helpers */

/* An in-memory F64 tensor [N, d] over data. */
static nc_tensor tensor_of(const double *data, size_t N, size_t d)
{
    nc_tensor t = {0};
    t.dtype = NC_F64;
    t.rank = 2;
    t.shape[0] = N;
    t.shape[1] = d;
    t.data = (const unsigned char *)data;
    nc_tensor_set_shape(&t);
    return t;
}

/* Activations like a real layer's: per-token scale and offset, normal
 * values, two outlier channels. Owned by the caller. */
static double *make_data(size_t N, size_t d, uint64_t seed, double offset)
{
    double *x = malloc(N * d * sizeof *x);
    nc_rng r;
    nc_rng_seed(&r, seed, 0);
    for (size_t t = 0; t < N; t++) {
        double s = 0.4 + 2.1 * nc_rng_uniform(&r), m = offset * (nc_rng_uniform(&r) - 0.3);
        for (size_t i = 0; i < d; i++) {
            double v = nc_rng_normal(&r);
            if (i == 3 % d || i == (d * 2) / 3)
                v *= 7.9; /* outlier channels */
            x[t * d + i] = m + s * v;
        }
    }
    return x;
}

/* Analyses a layer with the defaults (every fit) and the given norm. */
static int analyze(const nc_tensor *x, nc_norm_kind norm, double eps, nc_layer_result *res)
{
    nc_layer_spec spec;
    nc_layer_spec_defaults(&spec);
    spec.name = "test";
    spec.norm = norm;
    spec.eps = eps;
    spec.x = x;
    spec.threads = 2;
    nc_err err = {0};
    int rc = nc_layer_analyze(&spec, res, &err);
    if (rc)
        fprintf(stderr, "nc_layer_analyze: %s\n", err.msg);
    return rc;
}

/* The token's output and 1/scale, as the layer computes them. */
static void token_y(nc_norm_kind norm, double eps, const double *x, size_t d, double *y,
                    double *inv)
{
    nc_token_stat st = nc_norm_token(norm, eps, x, d);
    nc_norm_apply(&st, x, d, y);
    *inv = 1.0 / st.scale;
}

/* The Jacobian entry J_ij written straight from docs/theory.md, independently of
 * jacobian.c: inv (delta_ij - [1/d] - y_i y_j / d). */
static double brief_J(nc_norm_kind norm, const double *y, double inv, size_t d, size_t i,
                      size_t j)
{
    double v = (i == j ? 1.0 : 0.0) - y[i] * y[j] / (double)d;
    if (norm == NC_LAYERNORM)
        v -= 1.0 / (double)d;
    return inv * v;
}

static int cmp_dbl(const void *a, const void *b)
{
    double u = *(const double *)a, v = *(const double *)b;
    return (u > v) - (u < v);
}

/* numpy.quantile(v, q) (linear) of sorted v[0..n) */
static double np_quantile(const double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (pos - (double)lo) * (v[lo + 1] - v[lo]);
}

/* ======================================================== one token */

/* gamma_{d+3} = (d+3) u / (1 - (d+3) u), u = 2^-24: the bound of the dense
 * check (jacobian.h), written out here. */
/* the dense check's bounds (jacobian.h): gamma_{2d+12} and (d + 16) u, u = 2^-53 */
static double dense_gamma(size_t d)
{
    const double k = 2.0 * (double)d + 12.0, u = 0x1p-53;
    return k * u / (1.0 - k * u);
}

static double frob_bound(size_t d)
{
    return ((double)d + 16.0) * 0x1p-53;
}

/* The largest |out_i - want_i| / s_i, s_i = inv (|g_i| + ([sum |g|] +
 * |y_i| sum |y g|) / d) the scale of jacobian.h's dense check. */
static double dense_rel(nc_norm_kind norm, const double *y, double inv, size_t d,
                        const double *g, const double *out, const double *want)
{
    double sg = 0, syg = 0, worst = 0;
    for (size_t i = 0; i < d; i++) {
        sg += fabs(g[i]);
        syg += fabs(y[i] * g[i]);
    }
    if (norm != NC_LAYERNORM)
        sg = 0;
    for (size_t i = 0; i < d; i++) {
        double s = inv * (fabs(g[i]) + (sg + fabs(y[i]) * syg) / (double)d);
        worst = fmax(worst, fabs(out[i] - want[i]) / s);
    }
    return worst;
}

/* Finite differences of the norm itself, the dense matrix (and the dense
 * check's explicit product) and the analytic forms agree, both norms, eps >
 * 0. The explicit product is within the rounding bound of the dense check,
 * and the diagonal alone (what a wrong formula would give) is far outside
 * it, so the check can tell. */
static void test_token_jacobian_three_ways(void)
{
    const size_t dims[] = {2, 7, 33, 64};
    const nc_norm_kind norms[] = {NC_RMSNORM, NC_LAYERNORM};
    const double eps_of[] = {1e-6, 1e-5};
    nc_rng r;
    nc_rng_seed(&r, 2385, 7);
    for (size_t a = 0; a < 4; a++)
        for (int b = 0; b < 2; b++) {
            const size_t d = dims[a], P = 5;
            const nc_norm_kind norm = norms[b];
            /* a small token: eps matters (eps / var ~ 1e-3) */
            const double eps = eps_of[b], s = b ? 0.1 : 0.03;
            double *x = malloc(d * sizeof *x), *y = malloc(d * sizeof *y);
            double *xp = malloc(d * sizeof *xp), *yp = malloc(d * sizeof *yp),
                   *ym = malloc(d * sizeof *ym);
            double *J = malloc(d * d * sizeof *J), *G = malloc(d * P * sizeof *G);
            double *v = malloc(d * sizeof *v), *dg = malloc(d * sizeof *dg);
            double *JG = malloc(d * P * sizeof *JG), *row = malloc(d * sizeof *row);
            for (size_t i = 0; i < d; i++)
                x[i] = 0.37 * s + s * nc_rng_normal(&r) * (i == 1 ? 5.3 : 1.0);
            double inv, inv2;
            token_y(norm, eps, x, d, y, &inv);
            nc_jac_token_dense(norm, y, inv, d, J);

            /* central differences, column j = dy/dx_j */
            double fd_err = 0;
            const double h = 1e-5 * s;
            for (size_t j = 0; j < d; j++) {
                memcpy(xp, x, d * sizeof *x);
                xp[j] = x[j] + h;
                token_y(norm, eps, xp, d, yp, &inv2);
                xp[j] = x[j] - h;
                token_y(norm, eps, xp, d, ym, &inv2);
                for (size_t i = 0; i < d; i++) {
                    double fd = (yp[i] - ym[i]) / (2 * h);
                    fd_err = fmax(fd_err, fabs(fd - J[i * d + j]));
                    /* the dense matrix is the formula of docs/theory.md */
                    CHECK_ABS(brief_J(norm, y, inv, d, i, j), J[i * d + j], 4e-16 * inv);
                }
            }
            /* truncation h^2 y''' and rounding 1e-16 / h: ~1e-9 of the scale of J */
            CHECK_ABS(0.0, fd_err, 1e-8 * inv);

            /* J^T G summed explicitly over the entries against the analytic
             * J^T g, relative to the size of the summed terms (for LayerNorm
             * with d = 2, J ~ (1 - kappa) inv is nearly 0) */
            for (size_t k = 0; k < d * P; k++)
                G[k] = nc_rng_normal(&r);
            double f2d[2];
            nc_jac_token_dense_apply(norm, y, inv, d, G, P, JG, row, f2d);
            double worst = 0, wrong = 0;
            for (size_t k = 0; k < P; k++) {
                token_vjp(norm, y, inv, d, G + k * d, v);
                worst = fmax(worst, dense_rel(norm, y, inv, d, G + k * d, JG + k * d, v));
                /* diag(J) g in place of J^T g */
                token_diag(norm, y, inv, d, dg, NULL);
                for (size_t i = 0; i < d; i++)
                    v[i] = dg[i] * G[k * d + i];
                wrong = fmax(wrong, dense_rel(norm, y, inv, d, G + k * d, JG + k * d, v));
            }
            CHECK_ABS(0.0, worst, dense_gamma(d));
            CHECK(wrong > 1e6 * dense_gamma(d));

            /* the diagonal, and ||J||_F^2 in closed form against the sum of
             * squares (both on the scale of inv and d inv^2) */
            token_diag(norm, y, inv, d, dg, NULL);
            double f2 = 0, off = 0;
            for (size_t i = 0; i < d; i++) {
                CHECK_ABS(J[i * d + i], dg[i], 4e-16 * inv);
                for (size_t j = 0; j < d; j++) {
                    f2 += J[i * d + j] * J[i * d + j];
                    off += i == j ? 0.0 : J[i * d + j] * J[i * d + j];
                }
            }
            CHECK_ABS(f2, token_frob2(norm, y, inv, d), 1e-14 * (double)d * inv * inv);
            CHECK_ABS(f2, f2d[0], 1e-14 * (double)d * inv * inv);
            CHECK_ABS(off, f2d[1], 1e-14 * (double)d * inv * inv);
            free(x), free(y), free(xp), free(yp), free(ym), free(J), free(G), free(JG), free(v),
                free(dg), free(row);
        }
}

/* The dense check's default sample, sized to the layer: min(N d,
 * NC_JAC_DENSE_ENTRIES) / d^2 tokens, at least one, at most
 * NC_JAC_DENSE_MAX_TOKENS and the N usable tokens. */
static void test_dense_default_tokens(void)
{
    CHECK_INT(0, nc_jac_dense_default_tokens(0, 100));
    CHECK_INT(0, nc_jac_dense_default_tokens(64, 0));
    CHECK_INT(1, nc_jac_dense_default_tokens(4096, 4096));  /* 2^24 entries: one token */
    CHECK_INT(1, nc_jac_dense_default_tokens(4096, 16));    /* N < d: still one token */
    CHECK_INT(1, nc_jac_dense_default_tokens(2048, 2048));  /* N d = d^2 */
    CHECK_INT(2, nc_jac_dense_default_tokens(2048, 4096));
    CHECK_INT(4, nc_jac_dense_default_tokens(2048, 100000)); /* capped at 2^24 entries */
    CHECK_INT(1024, nc_jac_dense_default_tokens(128, (size_t)1 << 20));
    CHECK_INT(31, nc_jac_dense_default_tokens(64, 2040));   /* vit4mnist: 130560 / 4096 */
    CHECK_INT(1, nc_jac_dense_default_tokens(64, 64));
    CHECK_INT(4096, nc_jac_dense_default_tokens(64, (size_t)1 << 22));
    CHECK_INT(4096, nc_jac_dense_default_tokens(1, 5000));
    CHECK_INT(10, nc_jac_dense_default_tokens(1, 10));      /* at most N */
    CHECK_INT(28, nc_jac_dense_default_tokens(768, (size_t)1 << 20));
    CHECK_INT(1, nc_jac_dense_default_tokens(768, 1000));
    CHECK_INT(1, nc_jac_dense_default_tokens(100000, 3));
    CHECK_INT(1, nc_jac_dense_default_tokens((size_t)1 << 40, 5)); /* d^2 overflows */
    CHECK_INT(4096, nc_jac_dense_default_tokens(3, SIZE_MAX));    /* N d overflows */
    /* the probe columns: 8, fewer for a layer with fewer tokens than
     * channels (8 N / d, at least 1) */
    CHECK_INT(NC_JAC_PROBES, nc_jac_dense_default_probes(64, 2040));
    CHECK_INT(NC_JAC_PROBES, nc_jac_dense_default_probes(64, 64));
    CHECK_INT(4, nc_jac_dense_default_probes(64, 32));
    CHECK_INT(1, nc_jac_dense_default_probes(4096, 16));
    CHECK_INT(1, nc_jac_dense_default_probes(4096, 1));
    CHECK_INT(NC_JAC_PROBES, nc_jac_dense_default_probes(0, 5));
}

/* A dense check that ran and agreed: within its rounding bounds, the bounds
 * as jacobian.h states them. */
static void check_dense_ok(const nc_jac_result *jr, size_t d)
{
    CHECK_STR("ok", jr->dense.status);
    CHECK(jr->dense.ran);
    CHECK_REL(dense_gamma(d), jr->dense.tol, 1e-15);
    CHECK_REL(frob_bound(d), jr->dense.frob_tol, 1e-15);
    CHECK(jr->dense.max_rel_diff >= 0 && jr->dense.max_rel_diff <= jr->dense.tol);
    CHECK(jr->dense.frob_max_rel_diff >= 0 &&
          jr->dense.frob_max_rel_diff <= jr->dense.frob_tol);
    CHECK(jr->dense.off_max_rel_diff >= 0 && jr->dense.off_max_rel_diff <= jr->dense.frob_tol);
}

/* The closed form for LayerNorm (docs/theory.md, Worked examples):
 * ||I - 11^T/d - xhat xhat^T/d||_F^2 = d - 1 - 2 kappa + kappa^2, kappa = var / (var + eps);
 * for RMSNorm with kappa = ms / (ms + eps): d - 2 kappa + kappa^2. And J 1 = 0,
 * J xhat = (1 - kappa) xhat / s (0 when eps = 0). */
static void test_token_closed_forms(void)
{
    enum { D = 48 };
    double x[D], y[D], v[D], one[D];
    for (int i = 0; i < D; i++) {
        x[i] = 0.003 * sin(2.385 * i) + 0.0004 * i * (i % 3);
        one[i] = 1.0;
    }
    const double eps = 1e-5;
    nc_token_stat st = nc_norm_token(NC_LAYERNORM, eps, x, D);
    nc_norm_apply(&st, x, D, y);
    double inv = 1.0 / st.scale, kappa = st.var / (st.var + eps);
    CHECK(kappa < 0.99); /* eps matters for this token */
    CHECK_REL(inv * inv * (D - 1 - 2 * kappa + kappa * kappa),
              token_frob2(NC_LAYERNORM, y, inv, D), 1e-13);
    /* J 1 = 0 and J xhat = (1 - kappa) inv xhat (0 when eps = 0) */
    token_vjp(NC_LAYERNORM, y, inv, D, one, v);
    for (int i = 0; i < D; i++)
        CHECK_ABS(0.0, v[i], 1e-14 * inv);
    token_vjp(NC_LAYERNORM, y, inv, D, y, v);
    for (int i = 0; i < D; i++)
        CHECK_ABS((1 - kappa) * inv * y[i], v[i], 1e-13 * inv);

    st = nc_norm_token(NC_RMSNORM, eps, x, D);
    nc_norm_apply(&st, x, D, y);
    inv = 1.0 / st.scale;
    kappa = st.ms / (st.ms + eps);
    CHECK_REL(inv * inv * (D - 2 * kappa + kappa * kappa),
              token_frob2(NC_RMSNORM, y, inv, D), 1e-13);
    st = nc_norm_token(NC_RMSNORM, 0.0, x, D);
    nc_norm_apply(&st, x, D, y);
    inv = 1.0 / st.scale;
    token_vjp(NC_RMSNORM, y, inv, D, y, v);
    for (int i = 0; i < D; i++)
        CHECK_ABS(0.0, v[i], 1e-14 * inv);
}

/* ========================================================= pooled metrics */

/* Everything jacobian.h pools, recomputed here by plain loops from the
 * formulas (sums in long double), over the used tokens of res. */
typedef struct want {
    double share, offshare, radial, ones;
    double sse[NC_FIT_COUNT], maxe[NC_FIT_COUNT];
    /* backprop errors, exact over probes: sqrt(sum ||D - J||_F^2 / sum
     * ||J||_F^2) and the mean over tokens of the per-token ratio; [0]
     * diag(J), [1 + k] surrogate k. ||D - J||_F^2 is summed over all d^2
     * entries of D - J. */
    double bp_err[1 + NC_FIT_COUNT], bp_mean[1 + NC_FIT_COUNT];
    size_t used;
} want;

static want recompute(const nc_layer_result *res, const double *X)
{
    const size_t d = res->d;
    long double num = 0, den = 0, rn = 0, rd = 0, od = 0, sse[NC_FIT_COUNT] = {0};
    long double bpn[1 + NC_FIT_COUNT] = {0}, bpm[1 + NC_FIT_COUNT] = {0};
    want w = {0};
    double *y = malloc(d * sizeof *y), *fd = malloc((1 + NC_FIT_COUNT) * d * sizeof *fd);
    for (size_t t = 0; t < res->tok.nt; t++) {
        if (res->tok.status[t] != NC_TOKEN_OK)
            continue;
        size_t tok = res->tok.index ? res->tok.index[t] : t;
        const double *x = X + tok * d;
        double inv = res->tok.inv[t];
        for (size_t i = 0; i < d; i++)
            y[i] = (x[i] - res->tok.centre[t]) * inv;
        /* the diagonals D: diag(J), then each fitted surrogate's f' */
        for (size_t i = 0; i < d; i++) {
            fd[i] = brief_J(res->norm, y, inv, d, i, i);
            for (int k = 0; k < NC_FIT_COUNT; k++)
                if (res->fits[k].ok)
                    fd[(1 + (size_t)k) * d + i] = nc_surrogate_df(
                        nc_surrogate_get((nc_fit_id)k), &res->fits[k].params, i, x[i]);
        }
        long double fr = 0, dj[1 + NC_FIT_COUNT] = {0};
        for (size_t i = 0; i < d; i++)
            for (size_t j = 0; j < d; j++) {
                double jij = brief_J(res->norm, y, inv, d, i, j);
                fr += (long double)jij * jij;
                for (int k = 0; k <= NC_FIT_COUNT; k++) {
                    if (k > 0 && !res->fits[k - 1].ok)
                        continue;
                    double e = (i == j ? fd[(size_t)k * d + i] : 0.0) - jij;
                    dj[k] += (long double)e * e;
                }
            }
        for (int k = 0; k <= NC_FIT_COUNT; k++) {
            bpn[k] += dj[k];
            bpm[k] += sqrtl(dj[k] / fr);
        }
        for (size_t i = 0; i < d; i++) {
            double jii = brief_J(res->norm, y, inv, d, i, i);
            num += (long double)jii * jii;
            rn += (long double)(jii * y[i]) * (jii * y[i]);
            rd += (long double)(inv * y[i]) * (inv * y[i]);
            for (size_t j = 0; j < d; j++) {
                double jij = brief_J(res->norm, y, inv, d, i, j);
                den += (long double)jij * jij;
            }
            for (int k = 0; k < NC_FIT_COUNT; k++) {
                if (!res->fits[k].ok)
                    continue;
                double e = jii - nc_surrogate_df(nc_surrogate_get((nc_fit_id)k),
                                                 &res->fits[k].params, i, x[i]);
                sse[k] += (long double)e * e;
                w.maxe[k] = fmax(w.maxe[k], fabs(e));
            }
        }
        od += (long double)d * inv * inv;
        w.used++;
    }
    w.share = (double)(num / den);
    w.offshare = sqrt((double)(bpn[0] / den));
    w.radial = sqrt((double)(rn / rd));
    w.ones = sqrt((double)(num / od));
    for (int k = 0; k < NC_FIT_COUNT; k++)
        w.sse[k] = (double)sse[k];
    for (int k = 0; k <= NC_FIT_COUNT; k++) {
        w.bp_err[k] = sqrt((double)(bpn[k] / den));
        w.bp_mean[k] = (double)(bpm[k] / (long double)w.used);
    }
    free(y);
    free(fd);
    return w;
}

static void check_pooled(nc_norm_kind norm, double eps, size_t N, size_t d, double offset)
{
    double *X = make_data(N, d, 11 + d, offset);
    nc_tensor x = tensor_of(X, N, d);
    nc_layer_result res;
    nc_jac_result jr;
    nc_err err = {0};
    if (analyze(&x, norm, eps, &res)) {
        CHECK(0);
        free(X);
        return;
    }
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, NULL, 2, NULL, &jr, &err));
    want w = recompute(&res, X);
    CHECK_INT(w.used, jr.tokens);
    CHECK_REL(w.share, jr.diag_frobenius_share, 1e-13);
    CHECK_REL(w.offshare, jr.offdiag_frobenius_share, 1e-12);
    CHECK_REL(w.bp_err[0], jr.backprop.err, 1e-12);
    CHECK_REL(w.bp_mean[0], jr.backprop.mean, 1e-12);
    CHECK(jr.backprop.exact && jr.backprop.err_se == 0);
    CHECK_REL(w.radial, jr.radial_retention, 1e-13);
    if (norm == NC_LAYERNORM)
        CHECK_REL(w.ones, jr.ones_retention, 1e-13);
    else
        CHECK(isnan(jr.ones_retention));
    int compared = 0;
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        CHECK(jr.surr[k].ok == res.fits[k].ok);
        if (!res.fits[k].ok)
            continue;
        compared++;
        CHECK_REL(sqrt(w.sse[k] / ((double)w.used * (double)d)), jr.surr[k].diag_rmse, 1e-11);
        CHECK_REL(w.maxe[k], jr.surr[k].diag_max_err, 1e-12);
        CHECK(jr.surr[k].backprop.n == w.used);
        CHECK_REL(w.bp_err[1 + k], jr.surr[k].backprop.err, 1e-12);
        CHECK_REL(w.bp_mean[1 + k], jr.surr[k].backprop.mean, 1e-12);
        CHECK(jr.surr[k].backprop.err_se == 0);
        /* the identity err^2 = rmse_rel^2 share + (1 - share) */
        double rr = jr.surr[k].diag_rmse_rel;
        CHECK_REL(jr.surr[k].backprop.err * jr.surr[k].backprop.err,
                  rr * rr * jr.diag_frobenius_share + (1.0 - jr.diag_frobenius_share), 1e-12);
    }
    /* ranked plainly by the exact err, best first */
    CHECK_INT(compared, jr.nranked);
    for (int r = 1; r < jr.nranked; r++) {
        CHECK(jr.rank[r].err >= jr.rank[r - 1].err);
        CHECK(!jr.rank[r].tie && jr.rank[r].gap_se == 0);
        CHECK(jr.rank[r].err == jr.surr[jr.rank[r].id].backprop.err);
    }
    CHECK(compared >= 6); /* every fit of the defaults, per-channel DyT included */
    CHECK(jr.surr[NC_FIT_DYT_PER_CHANNEL].ok);
    /* the dense check ran on the default sample (about N d entries: N / d
     * tokens), with NC_JAC_PROBES probe columns */
    const size_t m = nc_jac_dense_default_tokens(d, w.used);
    CHECK(m >= 1 && m <= w.used);
    CHECK_INT(m, jr.dense.tokens);
    CHECK_INT(NC_JAC_PROBES, jr.dense.columns);
    check_dense_ok(&jr, d);
    CHECK_REL((double)d * (double)d * (2.0 + 2.0 * NC_JAC_PROBES) * (double)m, jr.dense.flops,
              1e-15);
    CHECK(jr.ode.ok);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);
    free(X);
}

static void test_pooled_against_loops(void)
{
    check_pooled(NC_RMSNORM, 1e-6, 211, 19, 0.0);
    check_pooled(NC_LAYERNORM, 1e-5, 157, 40, 1.7);
}

/* RMSNorm: per token sum_i J_ii^2 = inv^2 (d - 2q + S4/d^2) with q = ||y||^2/d,
 * S4 = sum y_i^4, and ||J||_F^2 = inv^2 (d - 2q + q^2). For Gaussian tokens
 * with large d (q ~ 1, S4 ~ 3d) the share is (d - 2 + 3/d)/(d - 1) =
 * 1 - 1/d + 2/(d(d - 1)): 1 - 1/d up to O(1/d^2). Radial retention:
 * sum (1 - y^2/d)^2 y^2 / sum y^2 ~ 1 - 6/d, its root ~ 1 - 3/d. The
 * backprop error of diag(J), exact over probes, is the off-diagonal share
 * sqrt(off / ||J||_F^2) = sqrt((q^2 - S4/d^2) / (d - 2q + q^2)) per token,
 * and the Gaussian reference values (docs/jacobian.md) hold to the
 * fluctuations of S4 (relative ~ sqrt(32/(3d)) / sqrt(N) of 3/d). */
static void test_share_large_d(void)
{
    const size_t N = 48, d = 2048;
    double *X = malloc(N * d * sizeof *X);
    nc_rng r;
    nc_rng_seed(&r, 77, 0);
    for (size_t k = 0; k < N * d; k++)
        X[k] = 1.3 * nc_rng_normal(&r);
    nc_tensor x = tensor_of(X, N, d);
    nc_layer_result res;
    nc_jac_result jr;
    nc_err err = {0};
    if (analyze(&x, NC_RMSNORM, 1e-6, &res)) {
        CHECK(0);
        free(X);
        return;
    }
    nc_jac_opts o;
    nc_jac_opts_defaults(&o);
    o.dense_tokens = 3;
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, &o, 2, NULL, &jr, &err));
    const double dd = (double)d;
    CHECK_ABS(1.0 - 1.0 / dd, jr.diag_frobenius_share, 4.0 / (dd * dd));
    /* the exact expression in the y's */
    long double num = 0, den = 0, off = 0;
    double *y = malloc(d * sizeof *y);
    for (size_t t = 0; t < N; t++) {
        double inv = res.tok.inv[t], q = 0, s4 = 0;
        for (size_t i = 0; i < d; i++) {
            y[i] = X[t * d + i] * inv;
            q += y[i] * y[i] / dd;
            s4 += y[i] * y[i] * y[i] * y[i];
        }
        num += (long double)inv * inv * (dd - 2 * q + s4 / (dd * dd));
        den += (long double)inv * inv * (dd - 2 * q + q * q);
        off += (long double)inv * inv * (q * q - s4 / (dd * dd));
    }
    CHECK_REL((double)(num / den), jr.diag_frobenius_share, 1e-14);
    CHECK_REL(sqrt((double)(off / den)), jr.backprop.err, 1e-11);
    CHECK_REL(sqrt((double)(off / den)), jr.offdiag_frobenius_share, 1e-11);
    CHECK_ABS(1.0 - 3.0 / dd, jr.radial_retention, 1.0 / dd);
    CHECK(jr.backprop.median > 0 && jr.backprop.p95 >= jr.backprop.median);
    /* the Gaussian references at d = 2048 */
    nc_jac_gauss_ref g = nc_jac_gaussian_ref(NC_RMSNORM, d);
    CHECK_REL((dd + 1) / (dd + 2), g.diag_frobenius_share, 1e-15);
    CHECK_REL(g.diag_frobenius_share, jr.diag_frobenius_share, 1e-6);
    CHECK_REL(g.offdiag_frobenius_share, jr.backprop.err, 1e-3);
    CHECK_REL(g.radial_retention, jr.radial_retention, 1e-5);
    CHECK_INT(3, jr.dense.tokens);
    check_dense_ok(&jr, d);
    CHECK_INT(N, jr.backprop.n);
    CHECK_INT(0, jr.backprop.n_inf);
    free(y);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);
    free(X);
}

/* ========================================== the radial direction and 1 */

/* Real gradients parallel to y: J^T g = 0 exactly (eps 0, powers of two so
 * that every operation is exact), diag(J) g is not: the error is +inf, not
 * NaN, and counted. With eps > 0 it is huge but finite. LayerNorm with g
 * along 1: J^T 1 = 0 up to rounding. */
static void test_parallel_gradients(void)
{
    enum { N = 6, D = 4 };
    double X[N * D], Gr[N * D];
    for (int t = 0; t < N; t++)
        for (int i = 0; i < D; i++) {
            X[t * D + i] = ((i + t) % 2 ? -2.0 : 2.0) * (double)(1 << t);
            Gr[t * D + i] = (i + t) % 2 ? -1.0 : 1.0; /* = y */
        }
    nc_tensor x = tensor_of(X, N, D), g = tensor_of(Gr, N, D);
    nc_layer_result res;
    nc_jac_result jr;
    nc_err err = {0};
    nc_layer_spec spec;
    nc_layer_spec_defaults(&spec);
    spec.name = "parallel";
    spec.norm = NC_RMSNORM;
    spec.eps = 0.0;
    spec.x = &x;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        spec.fit[k] = false;
    CHECK_INT(0, nc_layer_analyze(&spec, &res, &err));
    CHECK_INT(0, nc_jacobian_run(&res, &x, &g, NULL, NULL, 1, NULL, &jr, &err));
    CHECK(jr.has_real);
    CHECK_INT(N, jr.backprop_real.n);
    CHECK_INT(N, jr.backprop_real.n_inf);
    CHECK(isinf(jr.backprop_real.mean) && jr.backprop_real.mean > 0);
    CHECK(isinf(jr.backprop_real.median) && isinf(jr.backprop_real.p95));
    /* probes are not parallel: finite; the dense product agrees, the real
     * column (J^T g = 0) included */
    CHECK(isfinite(jr.backprop.mean));
    CHECK_INT(nc_jac_dense_default_tokens(D, N), jr.dense.tokens);
    CHECK_INT(NC_JAC_PROBES + 1, jr.dense.columns); /* the probes and the real one */
    check_dense_ok(&jr, D);
    /* radial retention: diag(J) y = inv (1 - 1/4) y, so 3/4 of y/r is kept */
    CHECK_REL(0.75, jr.radial_retention, 1e-15);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);

    /* eps > 0: y_i^2 = kappa = ms / (ms + eps), J g = inv (1 - kappa) g and
     * diag(J) g = inv (1 - kappa/4) g, so the error is (3 kappa / 4) / (1 -
     * kappa) = 0.75 ms / eps: huge but finite. Token t has ms = 4^(t+1). */
    spec.eps = 1e-6;
    CHECK_INT(0, nc_layer_analyze(&spec, &res, &err));
    CHECK_INT(0, nc_jacobian_run(&res, &x, &g, NULL, NULL, 1, NULL, &jr, &err));
    CHECK_INT(0, jr.backprop_real.n_inf);
    CHECK(isfinite(jr.backprop_real.mean));
    double rel[N], mean = 0;
    for (int t = 0; t < N; t++) {
        rel[t] = 0.75 * pow(4.0, t + 1) / 1e-6;
        mean += rel[t] / N;
    }
    /* 1 - kappa = eps / (ms + eps), down to 2.4e-10, comes out of 1 - ||y||^2/d
     * with y rounded to 1e-16: up to 1e-16 / 2.4e-10 = 4e-7 relative */
    CHECK_REL(mean, jr.backprop_real.mean, 1e-6);
    CHECK_REL(np_quantile(rel, N, 0.5), jr.backprop_real.median, 1e-7);
    CHECK_REL(np_quantile(rel, N, 0.95), jr.backprop_real.p95, 1e-6);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);

    /* LayerNorm, g = 1: J^T 1 = 0 up to rounding, the error is >= 1, never NaN */
    double X2[N * D], ones[N * D];
    for (int k = 0; k < N * D; k++) {
        X2[k] = sin(2.385 * k) + 0.1 * k;
        ones[k] = 1.0;
    }
    nc_tensor x2 = tensor_of(X2, N, D), g1 = tensor_of(ones, N, D);
    spec.x = &x2;
    spec.norm = NC_LAYERNORM;
    spec.eps = 1e-5;
    CHECK_INT(0, nc_layer_analyze(&spec, &res, &err));
    CHECK_INT(0, nc_jacobian_run(&res, &x2, &g1, NULL, NULL, 1, NULL, &jr, &err));
    CHECK(!isnan(jr.backprop_real.mean) && jr.backprop_real.median >= 1.0);
    CHECK(!isnan(jr.ones_retention) && jr.ones_retention > 0.5);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);
}

/* Gradients orthogonal to y (and to 1 for LayerNorm), all |y_i| small: for
 * RMSNorm e_i = -(inv/d) y_i^2 g_i and v = inv g, so the error is at most
 * max y_i^2 / d. The real-gradient summary is checked against numbers
 * computed here (numpy's linear quantiles), and the weight is applied. */
static void test_orthogonal_gradients(void)
{
    enum { N = 40, D = 64 };
    const nc_norm_kind norms[] = {NC_RMSNORM, NC_LAYERNORM};
    for (int b = 0; b < 2; b++) {
        const nc_norm_kind norm = norms[b];
        double X[N * D], Gr[N * D], W[D], y[D], gw[D], v[D], errs[N];
        nc_rng r;
        nc_rng_seed(&r, 99, (uint64_t)b);
        for (int i = 0; i < D; i++)
            W[i] = 0.5 + nc_rng_uniform(&r);
        for (int k = 0; k < N * D; k++)
            X[k] = 0.3 + 2.0 * nc_rng_uniform(&r) - 1.0; /* bounded: |y| <= ~2 */
        for (int t = 0; t < N; t++) {
            double inv;
            token_y(norm, 1e-5, X + t * D, D, y, &inv);
            /* g random, projected off y (and 1), then divided by the weight so
             * that weight * g is the projected vector */
            for (int i = 0; i < D; i++)
                gw[i] = nc_rng_normal(&r);
            for (int pass = 0; pass < 2; pass++) {
                if (norm == NC_LAYERNORM) {
                    double m = 0;
                    for (int i = 0; i < D; i++)
                        m += gw[i] / D;
                    for (int i = 0; i < D; i++)
                        gw[i] -= m;
                }
                double yg = 0, yy = 0;
                for (int i = 0; i < D; i++)
                    yg += y[i] * gw[i], yy += y[i] * y[i];
                for (int i = 0; i < D; i++)
                    gw[i] -= y[i] * yg / yy;
            }
            double ymax = 0, e2 = 0, v2 = 0;
            token_vjp(norm, y, inv, D, gw, v);
            for (int i = 0; i < D; i++) {
                Gr[t * D + i] = gw[i] / W[i];
                ymax = fmax(ymax, y[i] * y[i]);
                double e = brief_J(norm, y, inv, D, i, i) * gw[i] - v[i];
                e2 += e * e;
                v2 += v[i] * v[i];
            }
            errs[t] = sqrt(e2 / v2);
            double bound = norm == NC_RMSNORM ? ymax / D : (ymax + 1.0) / D;
            CHECK(errs[t] <= bound * (1 + 1e-12));
        }
        nc_tensor x = tensor_of(X, N, D), g = tensor_of(Gr, N, D);
        nc_layer_result res;
        nc_jac_result jr;
        nc_err err = {0};
        if (analyze(&x, norm, 1e-5, &res)) {
            CHECK(0);
            continue;
        }
        CHECK_INT(0, nc_jacobian_run(&res, &x, &g, W, NULL, 2, NULL, &jr, &err));
        CHECK(jr.real_weighted);
        CHECK(jr.backprop_real.mean < 0.08);
        double mean = 0;
        for (int t = 0; t < N; t++)
            mean += errs[t] / N;
        qsort(errs, N, sizeof errs[0], cmp_dbl);
        CHECK_REL(mean, jr.backprop_real.mean, 1e-9);
        CHECK_REL(np_quantile(errs, N, 0.5), jr.backprop_real.median, 1e-9);
        CHECK_REL(np_quantile(errs, N, 0.95), jr.backprop_real.p95, 1e-9);
        CHECK_INT(N, jr.backprop_real.n);
        /* random probes have a radial part: their error, ~1/sqrt(d), is
         * larger than that of the orthogonal gradients */
        CHECK(jr.backprop.mean > jr.backprop_real.mean);
        /* a surrogate is compared with the same gradients */
        CHECK(jr.surr[NC_FIT_DYISRU].backprop_real.n == (size_t)N);
        nc_jac_result_free(&jr);
        nc_layer_result_free(&res);
    }
}

/* ====================================================== determinism etc. */

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static bool same_summary(const nc_jac_summary *a, const nc_jac_summary *b)
{
    return same_bits(a->err, b->err) && same_bits(a->err_se, b->err_se) &&
           same_bits(a->mean, b->mean) && same_bits(a->mean_se, b->mean_se) &&
           same_bits(a->median, b->median) && same_bits(a->median_se, b->median_se) &&
           same_bits(a->p95, b->p95) && a->n == b->n && a->n_inf == b->n_inf;
}

static void test_thread_independence(void)
{
    const size_t N = 777, d = 50;
    double *X = make_data(N, d, 5, 0.8), *Gr = make_data(N, d, 6, 0.0);
    double W[50];
    for (size_t i = 0; i < d; i++)
        W[i] = 0.9 + 0.01 * (double)i;
    nc_tensor x = tensor_of(X, N, d), g = tensor_of(Gr, N, d);
    const nc_norm_kind norms[] = {NC_RMSNORM, NC_LAYERNORM};
    for (int b = 0; b < 2; b++) {
        nc_layer_result res;
        nc_jac_result j1, j2;
        nc_err err = {0};
        if (analyze(&x, norms[b], 1e-5, &res)) {
            CHECK(0);
            continue;
        }
        nc_jac_opts o;
        nc_jac_opts_defaults(&o);
        o.seed = 2385;
        o.dense_tokens = 4;
        CHECK_INT(0, nc_jacobian_run(&res, &x, &g, W, &o, 1, NULL, &j1, &err));
        CHECK_INT(0, nc_jacobian_run(&res, &x, &g, W, &o, 2, NULL, &j2, &err));
        CHECK(same_bits(j1.diag_frobenius_share, j2.diag_frobenius_share));
        CHECK(same_bits(j1.radial_retention, j2.radial_retention));
        CHECK(same_bits(j1.ones_retention, j2.ones_retention) || norms[b] == NC_RMSNORM);
        CHECK(same_summary(&j1.backprop, &j2.backprop));
        CHECK(same_summary(&j1.backprop_real, &j2.backprop_real));
        for (int k = 0; k < NC_FIT_COUNT; k++) {
            CHECK(same_bits(j1.surr[k].diag_rmse, j2.surr[k].diag_rmse) || !j1.surr[k].ok);
            CHECK(same_bits(j1.surr[k].diag_max_err, j2.surr[k].diag_max_err) ||
                  !j1.surr[k].ok);
            CHECK(same_summary(&j1.surr[k].backprop, &j2.surr[k].backprop));
            CHECK(same_summary(&j1.surr[k].backprop_real, &j2.surr[k].backprop_real));
        }
        CHECK(memcmp(j1.token_backprop, j2.token_backprop, N * sizeof(double)) == 0);
        for (int r = 0; r < j1.nranked; r++)
            CHECK(j1.rank_real[r].id == j2.rank_real[r].id &&
                  same_bits(j1.rank_real[r].gap_se, j2.rank_real[r].gap_se));
        CHECK_STR(j1.dense.status, j2.dense.status);
        /* another seed changes the dense check's probes only: the backprop
         * errors are exact expectations over probes */
        nc_jac_result j3;
        o.seed = 2386;
        CHECK_INT(0, nc_jacobian_run(&res, &x, &g, W, &o, 2, NULL, &j3, &err));
        CHECK(same_bits(j1.diag_frobenius_share, j3.diag_frobenius_share));
        CHECK(same_summary(&j1.backprop_real, &j3.backprop_real));
        CHECK(same_summary(&j1.backprop, &j3.backprop));
        CHECK(!same_bits(j1.dense.max_rel_diff, j3.dense.max_rel_diff));
        nc_jac_result_free(&j1);
        nc_jac_result_free(&j2);
        nc_jac_result_free(&j3);
        nc_layer_result_free(&res);
    }
    free(X);
    free(Gr);
}

/* Every number two Jacobian results share, bit for bit. */
static bool same_jac(const nc_jac_result *a, const nc_jac_result *b, size_t nt)
{
    bool ok = same_bits(a->diag_frobenius_share, b->diag_frobenius_share) &&
              same_bits(a->offdiag_frobenius_share, b->offdiag_frobenius_share) &&
              same_bits(a->radial_retention, b->radial_retention) &&
              same_bits(a->ones_retention, b->ones_retention) &&
              same_summary(&a->backprop, &b->backprop) && a->tokens == b->tokens &&
              a->nranked == b->nranked &&
              memcmp(a->token_backprop, b->token_backprop, nt * sizeof(double)) == 0;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        ok = ok && a->surr[k].ok == b->surr[k].ok &&
             (!a->surr[k].ok ||
              (same_bits(a->surr[k].diag_rmse, b->surr[k].diag_rmse) &&
               same_bits(a->surr[k].diag_max_err, b->surr[k].diag_max_err) &&
               same_bits(a->surr[k].diag_rmse_rel, b->surr[k].diag_rmse_rel) &&
               same_summary(&a->surr[k].backprop, &b->surr[k].backprop)));
    for (int r = 0; r < a->nranked; r++)
        ok = ok && a->rank[r].id == b->rank[r].id;
    return ok;
}

/* The verify pass can gather the Jacobian's sums (nc_layer_spec.jacobian,
 * one evaluation of f and f' for both): the Jacobian comparison then makes
 * no pass of its own, and every number is the bits of its own pass. Widths
 * across the verify pass's chunks (512) with a tail, a token sample, and
 * tokens left out (non-finite, zero scale). The fits' own numbers do not
 * change either. */
static void test_verify_gathers_jacobian(void)
{
    const size_t sizes[][2] = {{90, 1100}, {400, 37}, {60, 512}};
    for (size_t z = 0; z < 3; z++) {
        const size_t N = sizes[z][0], d = sizes[z][1];
        double *X = make_data(N, d, 40 + z, z == 1 ? 0.7 : 0.0);
        X[3 * d + 1] = NAN;            /* token 3: not finite */
        for (size_t i = 0; i < d; i++) /* token 5: zero scale with eps 0 below */
            X[5 * d + i] = 0.25;
        nc_tensor x = tensor_of(X, N, d);
        for (int b = 0; b < 2; b++) {
            nc_layer_spec spec;
            nc_layer_spec_defaults(&spec);
            spec.name = "gather";
            spec.norm = b ? NC_LAYERNORM : NC_RMSNORM;
            spec.eps = z == 2 ? 0.0 : 1e-5;
            spec.x = &x;
            spec.threads = 2;
            spec.sample_tokens = z == 1 ? 333 : 0;
            nc_layer_result r0, r1;
            nc_jac_result j0, j1;
            nc_err err = {0};
            CHECK_INT(0, nc_layer_analyze(&spec, &r0, &err));
            spec.jacobian = true;
            CHECK_INT(0, nc_layer_analyze(&spec, &r1, &err));
            CHECK(!r0.jac.done && r1.jac.done);
            CHECK_INT(r0.passes, r1.passes);
            for (int k = 0; k < NC_FIT_COUNT; k++)
                CHECK(r0.fits[k].ok == r1.fits[k].ok &&
                      (!r0.fits[k].ok || (same_bits(r0.fits[k].sse, r1.fits[k].sse) &&
                                          same_bits(r0.fits[k].max_abs_err,
                                                    r1.fits[k].max_abs_err) &&
                                          same_bits(r0.fits[k].mean_abs_err,
                                                    r1.fits[k].mean_abs_err))));
            nc_jac_opts o;
            nc_jac_opts_defaults(&o);
            o.dense_tokens = 2;
            CHECK_INT(0, nc_jacobian_run(&r0, &x, NULL, NULL, &o, 2, NULL, &j0, &err));
            CHECK_INT(0, nc_jacobian_run(&r1, &x, NULL, NULL, &o, 1, NULL, &j1, &err));
            CHECK(j0.time_analytic_s > 0 || N * d == 0);
            CHECK(same_jac(&j0, &j1, r0.tok.nt));
            size_t ok = 0;
            for (size_t t = 0; t < r1.tok.nt; t++)
                ok += r1.tok.status[t] == NC_TOKEN_OK;
            CHECK(j1.tokens > 0 && j1.tokens == ok && ok < r1.tok.nt + (z == 1));
            nc_jac_result_free(&j0);
            nc_jac_result_free(&j1);
            nc_layer_result_free(&r0);
            nc_layer_result_free(&r1);
        }
        free(X);
    }
}

/* Probes are standard normal, seeded per token (stream = token index, seed
 * mixed with NC_JAC_SEED_TAG): a token's error does not depend on which
 * other tokens are visited (a token sample). */
static void test_probes_per_token(void)
{
    const size_t N = 300, d = 24;
    double *X = make_data(N, d, 8, 0.0);
    nc_tensor x = tensor_of(X, N, d);
    nc_layer_spec spec;
    nc_layer_spec_defaults(&spec);
    spec.name = "sample";
    spec.norm = NC_RMSNORM;
    spec.eps = 1e-6;
    spec.x = &x;
    nc_layer_result full, part;
    nc_jac_result jf, jp;
    nc_err err = {0};
    CHECK_INT(0, nc_layer_analyze(&spec, &full, &err));
    spec.sample_tokens = 37;
    CHECK_INT(0, nc_layer_analyze(&spec, &part, &err));
    nc_jac_opts o;
    nc_jac_opts_defaults(&o);
    o.dense_tokens = NC_JAC_DENSE_ALL; /* the dense check on every sampled token */
    CHECK_INT(0, nc_jacobian_run(&full, &x, NULL, NULL, NULL, 2, NULL, &jf, &err));
    CHECK_INT(0, nc_jacobian_run(&part, &x, NULL, NULL, &o, 2, NULL, &jp, &err));
    CHECK_INT(37, jp.tokens);
    CHECK_INT(37, jp.dense.tokens);
    check_dense_ok(&jp, d);
    int same = 0;
    for (size_t t = 0; t < part.tok.nt; t++)
        same += same_bits(jf.token_backprop[part.tok.index[t]], jp.token_backprop[t]);
    CHECK_INT(37, same);
    want w = recompute(&part, X);
    CHECK_REL(w.share, jp.diag_frobenius_share, 1e-13);
    nc_jac_result_free(&jf);
    nc_jac_result_free(&jp);
    nc_layer_result_free(&full);
    nc_layer_result_free(&part);
    free(X);
}

static void test_dense_options_and_errors(void)
{
    const size_t N = 90, d = 150;
    double *X = make_data(N, d, 9, 0.5);
    nc_tensor x = tensor_of(X, N, d);
    nc_layer_result res;
    nc_jac_result jr;
    nc_err err = {0};
    if (analyze(&x, NC_LAYERNORM, 1e-5, &res)) {
        CHECK(0);
        free(X);
        return;
    }
    /* the default: one token (the layer has fewer points than one token's
     * d^2 entries) */
    CHECK_INT(1, nc_jac_dense_default_tokens(d, N));
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, NULL, 2, NULL, &jr, &err));
    CHECK_INT(1, jr.dense.tokens);
    CHECK_INT(NC_JAC_PROBES, jr.dense.columns);
    check_dense_ok(&jr, d);
    CHECK(jr.time_dense_s >= 0);
    nc_jac_result_free(&jr);
    nc_jac_opts o;
    nc_jac_opts_defaults(&o);
    o.dense_tokens = 7;
    o.probes = 3;
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, &o, 2, NULL, &jr, &err));
    CHECK_INT(7, jr.dense.tokens);
    CHECK_INT(3, jr.probes);
    CHECK_INT(3, jr.dense.columns);
    check_dense_ok(&jr, d);
    nc_jac_result_free(&jr);
    /* many probes: every probe is a column */
    o.dense_tokens = NC_JAC_DENSE_ALL;
    o.probes = 70;
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, &o, 2, NULL, &jr, &err));
    CHECK_INT(N, jr.dense.tokens);
    CHECK_INT(70, jr.dense.columns);
    check_dense_ok(&jr, d);
    nc_jac_result_free(&jr);
    o.probes = 3;
    o.dense_max_entries = 1000;
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, &o, 2, NULL, &jr, &err));
    CHECK_INT(0, jr.dense.tokens);
    CHECK_CONTAINS(jr.dense.status, "skipped: 150 x 150 entries per token exceed 1000");
    CHECK(isnan(jr.dense.max_rel_diff) && !jr.dense.ran);
    nc_jac_result_free(&jr);
    o.dense_max_entries = 0;
    o.no_dense = true;
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, &o, 2, NULL, &jr, &err));
    CHECK_CONTAINS(jr.dense.status, "skipped");
    CHECK(isfinite(jr.diag_frobenius_share));
    nc_jac_result_free(&jr);

    /* a gradient of the wrong shape or type */
    nc_tensor g = tensor_of(X, N - 1, d);
    CHECK_INT(NC_EINVAL, nc_jacobian_run(&res, &x, &g, NULL, NULL, 2, NULL, &jr, &err));
    CHECK_CONTAINS(err.msg, "gradient has shape [89, 150], expected [90, 150]");
    nc_err_clear(&err);
    g = tensor_of(X, N, d);
    g.dtype = NC_I32;
    CHECK_INT(NC_EUNSUPPORTED, nc_jacobian_run(&res, &x, &g, NULL, NULL, 2, NULL, &jr, &err));
    CHECK_CONTAINS(err.msg, "gradient dtype I32");
    nc_err_clear(&err);
    /* a zero and a non-finite real gradient row are left out and counted */
    double *Gr = make_data(N, d, 10, 0.0);
    memset(Gr, 0, d * sizeof *Gr);
    Gr[5 * d + 7] = NAN;
    g = tensor_of(Gr, N, d);
    CHECK_INT(0, nc_jacobian_run(&res, &x, &g, NULL, NULL, 2, NULL, &jr, &err));
    CHECK_INT(1, jr.real_zero_tokens);
    CHECK_INT(1, jr.real_nonfinite_tokens);
    CHECK_INT(N - 2, jr.backprop_real.n);
    CHECK(isfinite(jr.backprop_real.mean));
    CHECK_INT(NC_JAC_PROBES + 1, jr.dense.columns);
    check_dense_ok(&jr, d);
    nc_jac_result_free(&jr);
    free(Gr);
    nc_layer_result_free(&res);
    free(X);
}

/* Tokens without an output are skipped; a layer with none gives NaN
 * metrics, not an error. */
static void test_unusable_tokens(void)
{
    enum { N = 5, D = 8 };
    double X[N * D];
    for (int k = 0; k < N * D; k++)
        X[k] = cos(0.7 * k) + 0.2;
    X[2 * D + 3] = NAN;
    nc_tensor x = tensor_of(X, N, D);
    nc_layer_result res;
    nc_jac_result jr;
    nc_err err = {0};
    if (analyze(&x, NC_RMSNORM, 1e-6, &res)) {
        CHECK(0);
        return;
    }
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, NULL, 2, NULL, &jr, &err));
    CHECK_INT(N - 1, jr.tokens);
    CHECK(isnan(jr.token_backprop[2]) && isfinite(jr.token_backprop[1]));
    CHECK_INT(N - 1, jr.backprop.n);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);

    for (int k = 0; k < N * D; k++)
        X[k] = k % D == 0 ? INFINITY : 1.0;
    if (analyze(&x, NC_RMSNORM, 1e-6, &res)) {
        CHECK(0);
        return;
    }
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, NULL, 2, NULL, &jr, &err));
    CHECK_INT(0, jr.tokens);
    CHECK(isnan(jr.diag_frobenius_share) && isnan(jr.backprop.mean));
    CHECK_INT(0, jr.backprop.n);
    CHECK_INT(0, jr.dense.tokens);
    CHECK_CONTAINS(jr.dense.status, "no usable token");
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);

    /* tokens of size ~1e-39 with eps = 0: 1/scale ~ 4e38, J would not fit
     * a float, but the dense check is in double: it runs (where d / scale^2
     * overflows a double, the closed forms overflow too) */
    for (int k = 0; k < N * D; k++)
        X[k] = 2.385e-39 * (1.0 + 0.3 * sin(1.7 * k));
    nc_layer_spec spec;
    nc_layer_spec_defaults(&spec);
    spec.name = "tiny";
    spec.norm = NC_RMSNORM;
    spec.eps = 0.0;
    spec.x = &x;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        spec.fit[k] = false;
    CHECK_INT(0, nc_layer_analyze(&spec, &res, &err));
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, NULL, 1, NULL, &jr, &err));
    CHECK_INT(N, jr.tokens);
    check_dense_ok(&jr, D);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);

}

int main(void)
{
    test_token_jacobian_three_ways();
    test_token_closed_forms();
    test_dense_default_tokens();
    test_pooled_against_loops();
    test_share_large_d();
    test_parallel_gradients();
    test_orthogonal_gradients();
    test_thread_independence();
    test_verify_gathers_jacobian();
    test_probes_per_token();
    test_dense_options_and_errors();
    test_unusable_tokens();
    return CHECK_DONE();
}
