/*
 * test_jacobian_stats.c - the Gaussian reference values of the Jacobian
 * comparison checked by Monte Carlo, the calibration of its standard
 * errors (delta method, order-statistic median), and the tie rule of the
 * rankings (jacobian.h, jacobian_stats.c, docs/jacobian.md).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/quantile.h"
#include "analysis/jacobian.h"
#include "analysis/layer.h"
#include "check.h"
#include "core/rng.h"

static nc_tensor tensor_of(const double *data, size_t N, size_t d)
{
    nc_tensor t;
    memset(&t, 0, sizeof t);
    t.name = "x";
    t.dtype = NC_F64;
    t.N = N;
    t.d = d;
    t.nelem = N * d;
    t.nbytes = N * d * sizeof(double);
    t.data = (const unsigned char *)data;
    return t;
}

/* ============================================== Gaussian reference values */

/* Pooled ratios of per-token sums, over B batches of tokens: the ratio over
 * all tokens and the standard error from the spread of the batch ratios
 * (sd / sqrt(B)). */
typedef struct batched {
    long double num[20], den[20];
} batched;

static void ratio_and_se(const batched *b, double *ratio, double *se)
{
    long double n = 0, d = 0;
    double r[20], m = 0, v = 0;
    for (int k = 0; k < 20; k++) {
        n += b->num[k];
        d += b->den[k];
        r[k] = (double)(b->num[k] / b->den[k]);
        m += r[k] / 20;
    }
    for (int k = 0; k < 20; k++)
        v += (r[k] - m) * (r[k] - m) / 19;
    *ratio = (double)(n / d);
    *se = sqrt(v / 20);
}

/* i.i.d. normal inputs (zero mean for RMSNorm, mean 0.7 for LayerNorm),
 * eps = 0: the pooled shares, by plain loops over the tokens' y, agree
 * with nc_jac_gaussian_ref within 4 standard errors, and nc_jacobian_run
 * gives the same pooled numbers as the loops. */
static void check_gauss(nc_norm_kind norm, size_t d)
{
    const size_t N = 20000;
    double *X = malloc(N * d * sizeof *X), *y = malloc(d * sizeof *y);
    nc_rng r;
    nc_rng_seed(&r, 2385, d);
    const double mu = norm == NC_LAYERNORM ? 0.7 : 0.0;
    for (size_t k = 0; k < N * d; k++)
        X[k] = mu + 1.3 * nc_rng_normal(&r);
    batched share = {0}, off = {0}, rad = {0}, ones = {0};
    const double dd = (double)d, a = norm == NC_LAYERNORM ? 1.0 - 1.0 / dd : 1.0;
    for (size_t t = 0; t < N; t++) {
        const double *x = X + t * d;
        double c = 0, s2 = 0;
        if (norm == NC_LAYERNORM)
            for (size_t i = 0; i < d; i++)
                c += x[i] / dd;
        for (size_t i = 0; i < d; i++)
            s2 += (x[i] - c) * (x[i] - c) / dd;
        const double inv = 1.0 / sqrt(s2);
        long double dg = 0, fr = 0, rn = 0, rd = 0;
        for (size_t i = 0; i < d; i++)
            y[i] = (x[i] - c) * inv;
        for (size_t i = 0; i < d; i++) {
            double jii = inv * (a - y[i] * y[i] / dd);
            dg += (long double)jii * jii;
            rn += (long double)(jii * y[i]) * (jii * y[i]);
            rd += (long double)(inv * y[i]) * (inv * y[i]);
            for (size_t j = 0; j < d; j++) {
                double jij =
                    inv * ((i == j) - (norm == NC_LAYERNORM ? 1.0 / dd : 0.0) - y[i] * y[j] / dd);
                fr += (long double)jij * jij;
            }
        }
        const int b = (int)(t * 20 / N);
        share.num[b] += dg;
        share.den[b] += fr;
        off.num[b] += fr - dg;
        off.den[b] += fr;
        rad.num[b] += rn;
        rad.den[b] += rd;
        ones.num[b] += dg;
        ones.den[b] += dd * inv * inv;
    }
    const nc_jac_gauss_ref g = nc_jac_gaussian_ref(norm, d);
    double v, se;
    ratio_and_se(&share, &v, &se);
    CHECK_ABS(g.diag_frobenius_share, v, 4 * se);
    const double share_mc = v;
    ratio_and_se(&off, &v, &se); /* off share^2: se of its root by the delta method */
    CHECK_ABS(g.offdiag_frobenius_share, sqrt(v), 4 * se / (2 * sqrt(v)));
    ratio_and_se(&rad, &v, &se);
    CHECK_ABS(g.radial_retention, sqrt(v), 4 * se / (2 * sqrt(v)));
    if (norm == NC_LAYERNORM) {
        ratio_and_se(&ones, &v, &se);
        CHECK_ABS(g.ones_retention, sqrt(v), 4 * se / (2 * sqrt(v)));
    } else
        CHECK(isnan(g.ones_retention));

    /* the library on the same data: the same pooled numbers */
    nc_tensor x = tensor_of(X, N, d);
    nc_layer_spec spec;
    nc_layer_spec_defaults(&spec);
    spec.name = "gauss";
    spec.norm = norm;
    spec.eps = 0.0;
    spec.x = &x;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        spec.fit[k] = false;
    nc_layer_result res;
    nc_jac_result jr;
    nc_err err = {0};
    CHECK_INT(0, nc_layer_analyze(&spec, &res, &err));
    nc_jac_opts o;
    nc_jac_opts_defaults(&o);
    o.dense_tokens = 50;
    CHECK_INT(0, nc_jacobian_run(&res, &x, NULL, NULL, &o, 2, NULL, &jr, &err));
    CHECK_REL(share_mc, jr.diag_frobenius_share, 1e-12);
    CHECK_REL(g.diag_frobenius_share, jr.gauss.diag_frobenius_share, 0);
    CHECK_REL(jr.offdiag_frobenius_share, jr.backprop.err, 0);
    CHECK_STR("ok", jr.dense.status);
    nc_jac_result_free(&jr);
    nc_layer_result_free(&res);
    free(X);
    free(y);
}

static void test_gaussian_reference(void)
{
    check_gauss(NC_RMSNORM, 8);
    check_gauss(NC_RMSNORM, 16);
    check_gauss(NC_LAYERNORM, 8);
    check_gauss(NC_LAYERNORM, 16);
    /* the closed forms themselves */
    nc_jac_gauss_ref g = nc_jac_gaussian_ref(NC_LAYERNORM, 4096);
    CHECK_REL(4095.0 / 4097.0, g.diag_frobenius_share, 1e-15);
    CHECK_REL(sqrt(2.0 / 4097.0), g.offdiag_frobenius_share, 1e-15);
    g = nc_jac_gaussian_ref(NC_RMSNORM, 4096);
    CHECK_REL(4097.0 / 4098.0, g.diag_frobenius_share, 1e-15);
    CHECK_REL(sqrt(1.0 / 4098.0), g.offdiag_frobenius_share, 1e-15);
    CHECK(isnan(nc_jac_gaussian_ref(NC_LAYERNORM, 2).diag_frobenius_share));
    CHECK(isnan(nc_jac_gaussian_ref(NC_RMSNORM, 1).diag_frobenius_share));
}

/* ========================================================= standard errors */

static double sd_of(const double *v, int n)
{
    double m = 0, s = 0;
    for (int k = 0; k < n; k++)
        m += v[k] / n;
    for (int k = 0; k < n; k++)
        s += (v[k] - m) * (v[k] - m) / (n - 1);
    return sqrt(s);
}

static double rms_of(const double *v, int n)
{
    double s = 0;
    for (int k = 0; k < n; k++)
        s += v[k] * v[k] / n;
    return sqrt(s);
}

static int cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Over R independent samples of n tokens, the spread of each statistic
 * matches its reported standard error (the sd over samples estimated to
 * ~1/sqrt(2R) = 4%: within 15%): err (delta method), the paired gap of two
 * errs, the mean, the median (order statistics). */
static void test_se_calibration(void)
{
    enum { R = 300, n = 400 };
    double *num = malloc(3 * n * sizeof *num), *num2 = num + n, *den = num2 + n;
    double *work = malloc(n * sizeof *work);
    static double err[R], err_se[R], gap[R], gap_se[R], mean[R], mean_se[R], med[R], med_se[R];
    nc_rng r;
    nc_rng_seed(&r, 99, 0);
    for (int k = 0; k < R; k++) {
        for (int t = 0; t < n; t++) {
            double z1 = nc_rng_normal(&r), z2 = nc_rng_normal(&r), z3 = nc_rng_normal(&r);
            den[t] = (2.0 + 0.4 * z2) * (2.0 + 0.4 * z2);
            num[t] = den[t] * 0.09 * (1.0 + 0.5 * z1) * (1.0 + 0.5 * z1);
            num2[t] = num[t] * (1.0 + 0.05 * z3) * (1.0 + 0.05 * z3);
        }
        nc_jac_summary s = nc_jac_summarize(num, den, NULL, n, false, work);
        nc_jac_summary s2 = nc_jac_summarize(num2, den, NULL, n, false, work);
        CHECK(!s.exact && s.n == n && s.n_inf == 0);
        err[k] = s.err;
        err_se[k] = s.err_se;
        gap[k] = s.err - s2.err;
        gap_se[k] = nc_jac_ratio_se(num, num2, den, NULL, n);
        mean[k] = s.mean;
        mean_se[k] = s.mean_se;
        med[k] = s.median;
        med_se[k] = s.median_se;
        /* exact: se 0 */
        CHECK(nc_jac_summarize(num, den, NULL, n, true, work).err_se == 0);
    }
    CHECK_REL(sd_of(err, R), rms_of(err_se, R), 0.15);
    CHECK_REL(sd_of(gap, R), rms_of(gap_se, R), 0.15);
    CHECK_REL(sd_of(mean, R), rms_of(mean_se, R), 0.15);
    CHECK_REL(sd_of(med, R), rms_of(med_se, R), 0.2);
    /* the paired gap is far better determined than either err */
    CHECK(rms_of(gap_se, R) < 0.5 * rms_of(err_se, R));
    free(num);
    free(work);

    /* the median's se for normal data: sqrt(pi/2) sd / sqrt(n) */
    enum { M = 10001 };
    double *a = malloc(M * sizeof *a);
    for (int k = 0; k < M; k++)
        a[k] = nc_rng_normal(&r);
    qsort(a, M, sizeof *a, cmp);
    CHECK_REL(sqrt(M_PI / 2) / sqrt((double)M), nc_jac_median_se(a, M), 0.1);
    CHECK(isnan(nc_jac_median_se(a, 1)));
    free(a);

    /* 6% of the values equal at the median (identical tokens: a ViT's class
     * token in its first norm): a quantile distance is 0 there, yet a
     * resampled median moves; Maritz-Jarrett's se agrees with a bootstrap
     * of the median */
    enum { P = 2001, BOOT = 600 };
    double *v = malloc(P * sizeof *v), *res = malloc(P * sizeof *res), meds[BOOT];
    for (int k = 0; k < P; k++)
        v[k] = nc_rng_normal(&r);
    qsort(v, P, sizeof *v, cmp);
    for (int k = P / 2 - 55; k <= P / 2 + 65; k++)
        v[k] = v[P / 2 - 55];
    double h = 0.5 / sqrt((double)P);
    CHECK(nc_quantile_sorted(v, P, 0.5 + h) - nc_quantile_sorted(v, P, 0.5 - h) == 0);
    for (int b = 0; b < BOOT; b++) {
        for (int k = 0; k < P; k++)
            res[k] = v[nc_rng_below(&r, P)];
        qsort(res, P, sizeof *res, cmp);
        meds[b] = res[P / 2];
    }
    double se = nc_jac_median_se(v, P);
    CHECK(se > 0);
    CHECK_REL(sd_of(meds, BOOT), se, 0.3);
    free(v);
    free(res);
}

/* Rankings: plain for exact errs; for sampled ones a tie where the gap is
 * within two paired standard errors. */
static void test_ranking(void)
{
    enum { n = 200 };
    double num[3][n], den[n], work[n];
    nc_rng r;
    nc_rng_seed(&r, 7, 0);
    for (int t = 0; t < n; t++) {
        double z = nc_rng_normal(&r), w = nc_rng_normal(&r);
        den[t] = 1.0;
        num[0][t] = 0.04 * (1 + 0.5 * z) * (1 + 0.5 * z);          /* err ~ 0.2 */
        num[1][t] = num[0][t] * (1 + 0.001 * w) * (1 + 0.001 * w); /* ~ the same */
        num[2][t] = 0.25 * (1 + 0.1 * w) * (1 + 0.1 * w);          /* err ~ 0.5 */
    }
    nc_jac_summary S[3];
    const nc_jac_summary *Sp[3] = {&S[0], &S[1], &S[2]};
    const double *np[3] = {num[2], num[1], num[0]}; /* slot j: num[2 - j] */
    const int sid[3] = {NC_FIT_DYT, NC_FIT_DYISRU, NC_FIT_DERF};
    for (int j = 0; j < 3; j++)
        S[j] = nc_jac_summarize(np[j], den, NULL, n, false, work);
    nc_jac_rank out[3];
    nc_jac_rank_surrogates(Sp, np, den, NULL, n, sid, 3, out);
    /* slots 1 and 2 are nearly equal, slot 0 is far behind */
    CHECK(out[0].id == NC_FIT_DYISRU || out[0].id == NC_FIT_DERF);
    CHECK(out[1].id == NC_FIT_DYISRU || out[1].id == NC_FIT_DERF);
    CHECK_INT(NC_FIT_DYT, out[2].id);
    CHECK(!out[0].tie && out[0].gap_se == 0);
    CHECK(out[1].tie && out[1].gap_se > 0);
    CHECK(!out[2].tie && out[2].gap_se > 0);
    CHECK(out[0].err <= out[1].err && out[1].err <= out[2].err);
    /* the same errs, exact: no ties unless equal */
    for (int j = 0; j < 3; j++)
        S[j] = nc_jac_summarize(np[j], den, NULL, n, true, work);
    nc_jac_rank_surrogates(Sp, np, den, NULL, n, sid, 3, out);
    CHECK(!out[1].tie && !out[2].tie && out[1].gap_se == 0);
    /* a NaN err ranks last */
    S[1].err = NAN;
    nc_jac_rank_surrogates(Sp, np, den, NULL, n, sid, 3, out);
    CHECK_INT(NC_FIT_DYISRU, out[2].id);
}

int main(void)
{
    test_gaussian_reference();
    test_se_calibration();
    test_ranking();
    return CHECK_DONE();
}
