/*
 * test_synth.c - core/synth: the tensor does not depend on the thread count
 * or on N, presets and parameter validation (exact messages), the outlier
 * channels (distinct, ascending, uniform, and really the largest), the
 * per-token scale spread and unit-variance bulk, the outlier-steps token
 * set, and golden checksums pinning the exact bits.
 *
 * Statistical tolerances are about 5 standard errors, stated at each check;
 * the seeds are fixed, so every run sees the same numbers.
 */
#include "core/synth.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng.h"

/* FNV-1a over the 4 bytes of each float's bit pattern, least significant
 * byte first whatever the host's byte order. */
static uint64_t hash_floats(const float *x, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t e = 0; e < n; e++) {
        uint32_t u;
        memcpy(&u, &x[e], sizeof u);
        for (int b = 0; b < 4; b++) {
            h ^= (u >> (8 * b)) & 0xffu;
            h *= 0x100000001b3u;
        }
    }
    return h;
}

static nc_synth_params preset_params(const char *name, size_t N, size_t d, uint64_t seed)
{
    nc_synth_params p = {.N = N, .d = d, .seed = seed};
    nc_err err = {0};
    int rc = nc_synth_preset(name, &p, &err);
    CHECK_INT(0, rc);
    return p;
}

/* A plain model with no outliers, Gaussian bulk, no offset. */
static nc_synth_params plain_params(size_t N, size_t d, uint64_t seed)
{
    return (nc_synth_params){.N = N,
                             .d = d,
                             .scale_median = 2.385,
                             .scale_spread = 0.0,
                             .outliers = 0,
                             .outlier_mag = 0.0,
                             .outlier_spread = 0.0,
                             .nu = INFINITY,
                             .offset_std = 0.0,
                             .seed = seed};
}

/* ---- determinism --------------------------------------------------------- */

static void test_thread_count_independent(void)
{
    /* N not a multiple of the block, fewer blocks than some thread counts */
    nc_synth_params p = preset_params("late", 1000, 96, 2385);
    size_t n = p.N * p.d;
    float *ref = malloc(n * sizeof *ref), *x = malloc(n * sizeof *x);
    CHECK(ref && x);
    if (!ref || !x)
        goto out;
    nc_err err = {0};
    CHECK_INT(0, nc_synth_fill(&p, ref, 1, &err));
    static const int counts[] = {2, 3, 7, 16, 64, 0};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        memset(x, 0, n * sizeof *x);
        CHECK_INT(0, nc_synth_fill(&p, x, counts[c], &err));
        CHECK(memcmp(ref, x, n * sizeof *x) == 0);
    }
    /* the first tokens do not depend on N */
    nc_synth_params q = p;
    q.N = 100;
    CHECK_INT(0, nc_synth_fill(&q, x, 3, &err));
    CHECK(memcmp(ref, x, q.N * q.d * sizeof *x) == 0);
    /* and a different seed gives a different tensor */
    q = p;
    q.seed = 2386;
    CHECK_INT(0, nc_synth_fill(&q, x, 1, &err));
    CHECK(memcmp(ref, x, n * sizeof *x) != 0);
out:
    free(ref);
    free(x);
}

/* The exact bits of two small preset tensors (seed 2385), computed once and
 * checked against an independent Python transcription of the documented
 * draw order (rng.c's algorithms in IEEE double, NumPy's float32 rounding).
 * A new value means every synthetic tensor changed. */
static void test_golden_checksums(void)
{
    enum { N = 100, D = 48 };
    static float x[N * D];
    nc_err err = {0};
    nc_synth_params p = preset_params("late", N, D, 2385);
    CHECK_INT(0, nc_synth_fill(&p, x, 2, &err));
    CHECK(hash_floats(x, N * D) == 0xb351d63dc1be9d51u);
    p = preset_params("early", N, D, 2385);
    CHECK_INT(0, nc_synth_fill(&p, x, 2, &err));
    CHECK(hash_floats(x, N * D) == 0x976bf2fe62bb96d2u);
}

/* ---- presets and validation ----------------------------------------------- */

static void test_presets(void)
{
    nc_synth_params p = {.N = 333, .d = 256, .seed = 77};
    nc_err err = {0};
    CHECK_INT(0, nc_synth_preset("early", &p, &err));
    CHECK_INT(333, p.N);
    CHECK_INT(256, p.d);
    CHECK_INT(77, p.seed);
    CHECK_INT(4, p.outliers);
    CHECK(isinf(p.nu));
    CHECK_INT(0, nc_synth_preset("middle", &p, &err));
    CHECK_REL(0.7, p.outlier_mag, 1e-15);
    CHECK_INT(0, nc_synth_preset("late", &p, &err));
    CHECK_REL(1.0, p.outlier_mag, 1e-15);
    CHECK_REL(8.0, p.nu, 0.0);
    /* the outlier magnitude grows as sqrt(d / 256), so k o^2 / d stays put */
    p.d = 1024;
    CHECK_INT(0, nc_synth_preset("late", &p, &err));
    CHECK_REL(2.0, p.outlier_mag, 1e-15);
    /* small widths keep 16 ordinary channels per outlier channel */
    p.d = 40;
    CHECK_INT(0, nc_synth_preset("late", &p, &err));
    CHECK_INT(2, p.outliers);
    p.d = 8;
    CHECK_INT(0, nc_synth_preset("late", &p, &err));
    CHECK_INT(0, p.outliers);

    /* an unknown name: the name, the known ones, p untouched */
    nc_synth_params before = p;
    CHECK_INT(NC_EINVAL, nc_synth_preset("Late", &p, &err));
    CHECK_STR("synth: unknown preset \"Late\": expected early, middle or late", err.msg);
    CHECK(memcmp(&before, &p, sizeof p) == 0);
    /* d not set yet: refused, rather than a tensor without outliers */
    nc_synth_params zero = {.N = 4096};
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_synth_preset("late", &zero, &err));
    CHECK_STR("synth: preset \"late\" applied with d = 0: set N, d and seed first", err.msg);
    CHECK(zero.outlier_mag == 0.0 && zero.outliers == 0);
}

/* nc_synth_fill with one field broken: the code and the exact message, and
 * x untouched. */
static void check_rejected(nc_synth_params p, int threads, int code, const char *msg)
{
    float x[4] = {2.385f, 2.385f, 2.385f, 2.385f};
    nc_err err = {0};
    CHECK_INT(code, nc_synth_fill(&p, x, threads, &err));
    CHECK_STR(msg, err.msg);
    CHECK(x[0] == 2.385f && x[3] == 2.385f);
}

static void test_fill_validation(void)
{
    nc_synth_params ok = preset_params("late", 2, 2, 1);
    ok.outliers = 1;
    float x[4];
    nc_err err = {0};
    CHECK_INT(0, nc_synth_fill(&ok, x, 1, &err));

    nc_synth_params p = ok;
    p.N = 0;
    check_rejected(p, 1, NC_EINVAL, "synth: N = 0: expected at least 1 token");
    p = ok;
    p.d = 0;
    check_rejected(p, 1, NC_EINVAL, "synth: d = 0: expected at least 1 channel");
    p = ok;
    p.N = SIZE_MAX / 2;
    p.d = 3;
    check_rejected(p, 1, NC_ERANGE,
                   "synth: N * d = 9223372036854775807 * 3 floats overflow size_t");
    p = ok;
    p.scale_median = 0.0;
    check_rejected(p, 1, NC_EINVAL, "synth: scale_median = 0: expected a value in [1e-06, 1e+06]");
    p = ok;
    p.scale_median = NAN;
    check_rejected(p, 1, NC_EINVAL,
                   "synth: scale_median = nan: expected a value in [1e-06, 1e+06]");
    p = ok;
    p.scale_spread = -0.1;
    check_rejected(p, 1, NC_EINVAL, "synth: scale_spread = -0.1: expected a value in [0, 2]");
    p = ok;
    p.outlier_mag = INFINITY;
    check_rejected(p, 1, NC_EINVAL, "synth: outlier_mag = inf: expected a value in [0, 1000]");
    p = ok;
    p.outlier_spread = 2.385;
    check_rejected(p, 1, NC_EINVAL,
                   "synth: outlier_spread = 2.385: expected a value in [0, 2]");
    p = ok;
    p.offset_std = -1.0;
    check_rejected(p, 1, NC_EINVAL, "synth: offset_std = -1: expected a value in [0, 1000]");
    p = ok;
    p.outliers = 3;
    check_rejected(p, 1, NC_EINVAL, "synth: outliers = 3: expected at most d = 2 channels");
    p = ok;
    p.nu = 2.0;
    check_rejected(p, 1, NC_EINVAL,
                   "synth: nu = 2: expected a value > 2 or inf "
                   "(a finite variance to rescale to 1)");
    p = ok;
    p.nu = NAN;
    check_rejected(p, 1, NC_EINVAL,
                   "synth: nu = nan: expected a value > 2 or inf "
                   "(a finite variance to rescale to 1)");
    check_rejected(ok, -1, NC_EINVAL, "synth: threads = -1: expected 0 (the online CPUs) .. 256");
    check_rejected(ok, 257, NC_EINVAL,
                   "synth: threads = 257: expected 0 (the online CPUs) .. 256");
    /* the edges of the ranges are accepted */
    p = ok;
    p.scale_spread = 2.0;
    p.outlier_spread = 0.0;
    p.outliers = 2;
    p.nu = 2.000001;
    CHECK_INT(0, nc_synth_fill(&p, x, 1, &err));
    p.nu = 1e9;
    CHECK_INT(0, nc_synth_fill(&p, x, 1, &err));
}

/* ---- outlier channels ------------------------------------------------------- */

static void test_outlier_channels_distinct(void)
{
    static const size_t ds[] = {1, 2, 7, 64, 256, 1000};
    size_t idx[1000];
    for (size_t a = 0; a < sizeof ds / sizeof ds[0]; a++) {
        size_t d = ds[a];
        size_t ks[] = {0, 1, d / 2, d};
        for (size_t b = 0; b < 4; b++) {
            nc_synth_params p = plain_params(1, d, 2385 + a);
            p.outliers = ks[b];
            for (size_t j = 0; j < ks[b]; j++)
                idx[j] = SIZE_MAX;
            nc_synth_outlier_channels(&p, idx);
            int ok = 1;
            for (size_t j = 0; j < ks[b]; j++)
                ok &= idx[j] < d && (j == 0 || idx[j] > idx[j - 1]);
            CHECK(ok); /* in range and strictly ascending, hence distinct */
        }
    }
    /* every channel equally likely: over 4000 seeds, k = 3 of d = 24, each
     * channel is picked 500 times on average; chi-square with 23 degrees of
     * freedom, within 5 sd (sd sqrt(46)) of its mean */
    long count[24] = {0};
    for (uint64_t seed = 0; seed < 4000; seed++) {
        nc_synth_params p = plain_params(1, 24, seed);
        p.outliers = 3;
        nc_synth_outlier_channels(&p, idx);
        for (int j = 0; j < 3; j++)
            count[idx[j]]++;
    }
    double chi2 = 0.0;
    for (int i = 0; i < 24; i++)
        chi2 += (count[i] - 500.0) * (count[i] - 500.0) / 500.0;
    CHECK_ABS(23.0, chi2, 5.0 * sqrt(46.0));
}

static int cmp_desc(const void *a, const void *b)
{
    double u = *(const double *)a, v = *(const double *)b;
    return (u < v) - (u > v);
}

/* In every preset the k outlier channels have the k largest mean |x| over
 * the tokens, and keep one sign in most tokens. */
static void test_outliers_are_largest(void)
{
    static const char *names[] = {"early", "middle", "late"};
    enum { N = 2048, D = 256 };
    float *x = malloc((size_t)N * D * sizeof *x);
    CHECK(x != NULL);
    if (!x)
        return;
    for (int n = 0; n < 3; n++) {
        nc_synth_params p = preset_params(names[n], N, D, 2385);
        nc_err err = {0};
        CHECK_INT(0, nc_synth_fill(&p, x, 2, &err));
        size_t idx[4];
        nc_synth_outlier_channels(&p, idx);
        double mean_abs[D] = {0}, sorted[D];
        for (size_t t = 0; t < N; t++)
            for (size_t i = 0; i < D; i++)
                mean_abs[i] += fabs(x[t * D + i]) / N;
        memcpy(sorted, mean_abs, sizeof sorted);
        qsort(sorted, D, sizeof sorted[0], cmp_desc);
        /* the k-th largest is an outlier channel's, the (k+1)-th is not */
        double kth = sorted[p.outliers - 1];
        int all_top = 1;
        for (size_t j = 0; j < p.outliers; j++)
            all_top &= mean_abs[idx[j]] >= kth;
        CHECK(all_top);
        CHECK(sorted[p.outliers] < kth);
        /* fixed sign: each outlier channel has one sign in most tokens
         * (measured 80-96%: the per-token swing of the late presets makes
         * the outlier small against the bulk in some tokens); an ordinary
         * channel has each sign in about half (sd 1.1%) */
        for (size_t j = 0; j < p.outliers; j++) {
            long pos = 0;
            for (size_t t = 0; t < N; t++)
                pos += x[t * D + idx[j]] > 0.0f;
            CHECK(pos > 0.7 * N || pos < 0.3 * N);
        }
        size_t plain = 0; /* the first ordinary channel */
        for (size_t j = 0; j < p.outliers && idx[j] == plain; j++)
            plain++;
        long pos = 0;
        for (size_t t = 0; t < N; t++)
            pos += x[t * D + plain] > 0.0f;
        CHECK_ABS(0.5, (double)pos / N, 5 * 0.011);
    }
    free(x);
}

/* ---- the distribution --------------------------------------------------------- */

/* Per-token sample std s_t (two-pass, biased) of x[N * d]. */
static void token_std(const float *x, size_t N, size_t d, double *s)
{
    for (size_t t = 0; t < N; t++) {
        double mu = 0.0, ss = 0.0;
        for (size_t i = 0; i < d; i++)
            mu += x[t * d + i];
        mu /= (double)d;
        for (size_t i = 0; i < d; i++)
            ss += (x[t * d + i] - mu) * (x[t * d + i] - mu);
        s[t] = sqrt(ss / (double)d);
    }
}

static void test_scale_spread(void)
{
    enum { N = 4096, D = 256 };
    float *x = malloc((size_t)N * D * sizeof *x);
    double *s = malloc(N * sizeof *s);
    CHECK(x && s);
    if (!x || !s)
        goto out;
    nc_err err = {0};

    /* log s_t = log scale_t + log(sample std of d unit normals): its sd is
     * sqrt(spread^2 + 1/(2(d-1))) = 0.60163 for spread 0.6; the sd of that
     * estimate over N tokens is 0.6 / sqrt(2 N) = 0.0066. The median of s_t
     * is scale_median, to 1.25 * 0.6 / sqrt(N) = 1.2% in the log. */
    nc_synth_params p = plain_params(N, D, 2385);
    p.scale_spread = 0.6;
    CHECK_INT(0, nc_synth_fill(&p, x, 2, &err));
    token_std(x, N, D, s);
    double m = 0.0, v = 0.0;
    for (size_t t = 0; t < N; t++)
        m += log(s[t]) / N;
    for (size_t t = 0; t < N; t++)
        v += (log(s[t]) - m) * (log(s[t]) - m) / (N - 1);
    CHECK_ABS(sqrt(0.36 + 1.0 / (2.0 * (D - 1))), sqrt(v), 5 * 0.0066);
    CHECK_ABS(log(2.385), m, 5 * 0.012);

    /* spread 0, Student-t bulk with nu = 5 rescaled to unit variance: the
     * pooled variance is scale_median^2. Unit-variance t5 has kurtosis 9,
     * so the relative sd of the estimate is sqrt(8 / (N d)) = 0.55%. */
    p = plain_params(N, D, 2386);
    p.nu = 5.0;
    CHECK_INT(0, nc_synth_fill(&p, x, 2, &err));
    double sum = 0.0, ss = 0.0;
    for (size_t e = 0; e < (size_t)N * D; e++)
        sum += x[e];
    double mean = sum / ((double)N * D);
    for (size_t e = 0; e < (size_t)N * D; e++)
        ss += (x[e] - mean) * (x[e] - mean);
    CHECK_REL(2.385 * 2.385, ss / ((double)N * D), 5 * 0.0055);
    CHECK_ABS(0.0, mean, 5 * 2.385 / sqrt((double)N * D));

    /* offsets: the token means have sd scale_median * sqrt(offset_std^2 +
     * 1/d) = 2.385 * 0.5039, to 1.1% (5 sd: 5.5%) */
    p = plain_params(N, D, 2387);
    p.offset_std = 0.5;
    CHECK_INT(0, nc_synth_fill(&p, x, 2, &err));
    double mv = 0.0;
    for (size_t t = 0; t < N; t++) {
        double mu = 0.0;
        for (size_t i = 0; i < D; i++)
            mu += x[t * D + i] / D;
        mv += mu * mu / N;
    }
    CHECK_REL(2.385 * sqrt(0.25 + 1.0 / D), sqrt(mv), 5 * 0.011);
out:
    free(x);
    free(s);
}

#define NORMCMP NC_SYNTH_RNG_NORMCMP

/* ---- outlier steps --------------------------------------------------------------- */

static void test_outlier_steps(void)
{
    enum { D = 100, STEPS = 9 };
    float x[STEPS * D];
    size_t c = SIZE_MAX;
    nc_err err = {0};
    CHECK_INT(0, nc_synth_outlier_steps(2385, D, STEPS, 5.0, 2.0, NORMCMP, x, &c, &err));
    CHECK(c < D);

    /* the base token as documented: stream 0 of the seed, sigma * normal,
     * rounded to float; c its largest entry */
    float base[D];
    nc_rng r;
    nc_rng_seed(&r, 2385, 0);
    for (size_t i = 0; i < D; i++)
        base[i] = (float)(2.0 * nc_rng_normal(&r));
    size_t argmax = 0;
    for (size_t i = 1; i < D; i++)
        if (base[i] > base[argmax])
            argmax = i;
    CHECK_INT(argmax, c);

    /* row k-1: the base, with entry c raised by 5k in float arithmetic
     * (exact comparison on purpose: the contract is this very expression) */
    int others_same = 1, raised_exactly = 1;
    for (int k = 1; k <= STEPS; k++) {
        const float *row = x + (size_t)(k - 1) * D;
        for (size_t i = 0; i < D; i++)
            if (i != c)
                others_same &= row[i] == base[i];
        raised_exactly &= row[c] == base[c] + (float)(5.0 * k);
        CHECK_ABS(base[c] + 5.0 * k, row[c], 1e-5);
    }
    CHECK(others_same);
    CHECK(raised_exactly);

    /* the base is N(0, 4): sample sd within 5 sd (2 / sqrt(200)) of 2 */
    double m = 0.0, v = 0.0;
    for (size_t i = 0; i < D; i++)
        m += base[i] / D;
    for (size_t i = 0; i < D; i++)
        v += (base[i] - m) * (base[i] - m) / (D - 1);
    CHECK_ABS(2.0, sqrt(v), 5 * 2.0 / sqrt(200.0));

    /* docs/theory.md: the LayerNorm output of the pushed entry grows with k and
     * stays below sqrt(d - 1) */
    double prev = -INFINITY;
    int growing = 1, bounded = 1;
    for (int k = 1; k <= STEPS; k++) {
        const float *row = x + (size_t)(k - 1) * D;
        double mu = 0.0, ss = 0.0;
        for (size_t i = 0; i < D; i++)
            mu += row[i] / (double)D;
        for (size_t i = 0; i < D; i++)
            ss += (row[i] - mu) * (row[i] - mu);
        double y = (row[c] - mu) / sqrt(ss / D + 1e-5);
        growing &= y > prev;
        bounded &= y < sqrt(D - 1.0);
        prev = y;
    }
    CHECK(growing);
    CHECK(bounded);

    /* rejected arguments */
    CHECK_INT(NC_EINVAL, nc_synth_outlier_steps(1, 0, 9, 5.0, 2.0, NORMCMP, x, &c, &err));
    CHECK_STR("outlier steps: d = 0: expected at least 1 channel", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_synth_outlier_steps(1, D, 0, 5.0, 2.0, NORMCMP, x, &c, &err));
    CHECK_STR("outlier steps: steps = 0: expected at least 1", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_synth_outlier_steps(1, D, 9, NAN, 2.0, NORMCMP, x, &c, &err));
    CHECK_STR("outlier steps: step = nan: expected a value in (0, 1e+06]", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_synth_outlier_steps(1, D, 9, 5.0, -2.0, NORMCMP, x, &c, &err));
    CHECK_STR("outlier steps: sigma = -2: expected a value in (0, 1e+06]", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_ERANGE, nc_synth_outlier_steps(1, SIZE_MAX / 4, 9, 5.0, 2.0, NORMCMP, x, &c, &err));
    CHECK_CONTAINS(err.msg, "overflow size_t");
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_synth_outlier_steps(4294967296u, D, 9, 5.0, 2.0, NC_SYNTH_RNG_NUMPY,
                                                x, &c, &err));
    CHECK_CONTAINS(err.msg, "seed = 4294967296: expected 0 .. 4294967295");

    /* the numpy generator: np.random.seed(1); np.random.normal(0, 2, 100)
     * starts 3.2486907273264834 = 0x1.9fd5190657c50p+1, -1.2235128273657 ...,
     * and its largest value is entry 68 (NumPy 1.24: np.argmax) */
    nc_err_clear(&err);
    CHECK_INT(0, nc_synth_outlier_steps(1, D, STEPS, 5.0, 2.0, NC_SYNTH_RNG_NUMPY, x, &c, &err));
    CHECK((float)0x1.9fd5190657c50p+1 == x[0]);
    CHECK((float)-0x1.393822fb7d9adp+0 == x[1]);
    CHECK_INT(68, c);
    nc_synth_rng rng;
    CHECK(nc_synth_rng_parse("numpy", &rng) && rng == NC_SYNTH_RNG_NUMPY);
    CHECK(nc_synth_rng_parse("normcmp", &rng) && rng == NC_SYNTH_RNG_NORMCMP);
    CHECK(!nc_synth_rng_parse("NumPy", &rng));
    CHECK_STR("numpy", nc_synth_rng_name(NC_SYNTH_RNG_NUMPY));
}

int main(void)
{
    test_thread_count_independent();
    test_golden_checksums();
    test_presets();
    test_fill_validation();
    test_outlier_channels_distinct();
    test_outliers_are_largest();
    test_scale_spread();
    test_outlier_steps();
    return CHECK_DONE();
}
