/*
 * test_rng.c - core/rng: reference outputs of xoshiro256** and splitmix64,
 * the distributions' moments, the ziggurat of nc_rng_normals (its tables
 * against their defining areas, 2 * 10^7 values against the exact normal
 * CDF in 162 bins, in the 512 strips of its regions and in the far tail,
 * and its tail and wedge steps on their own, by forcing the first word),
 * nc_det_log / nc_det_exp against libm and against pinned bit patterns,
 * and golden checksums that pin the exact bits of the variates
 * (bit-identity across machines, rng.h).
 *
 * Statistical checks use fixed seeds, so they are deterministic; each
 * tolerance is stated as about 5 standard errors of the estimate, so a
 * correct generator passes for any seed with overwhelming probability while
 * a missing factor (variance 2 instead of 1, mean shape/2) fails.
 */
#include "core/rng.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* FNV-1a over the 8 bytes of each double's bit pattern, least significant
 * byte first whatever the host's byte order. */
static uint64_t hash_bits(uint64_t h, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    for (int b = 0; b < 8; b++) {
        h ^= (u >> (8 * b)) & 0xffu;
        h *= 0x100000001b3u;
    }
    return h;
}
#define FNV_OFFSET 0xcbf29ce484222325u

static uint64_t bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* Distance in units in the last place between two finite doubles of the
 * same sign (0 when equal). */
static double ulp_diff(double a, double b)
{
    if (a == b)
        return 0.0;
    int64_t ia, ib;
    memcpy(&ia, &a, sizeof ia);
    memcpy(&ib, &b, sizeof ib);
    if ((ia < 0) != (ib < 0))
        return INFINITY;
    return fabs((double)(ia - ib));
}

/* ---- the generator ---------------------------------------------------------- */

/* Published outputs of xoshiro256starstar.c for the state {1, 2, 3, 4}
 * (the reference vector used by Rust's rand_xoshiro and C++ ports of
 * Vigna's code). */
static void test_xoshiro_reference(void)
{
    static const uint64_t want[10] = {
        11520u,
        0u,
        1509978240u,
        1215971899390074240u,
        1216172134540287360u,
        607988272756665600u,
        16172922978634559625u,
        8476171486693032832u,
        10595114339597558777u,
        2904607092377533576u,
    };
    nc_rng r = {{1, 2, 3, 4}};
    for (int j = 0; j < 10; j++) {
        uint64_t got = nc_rng_u64(&r);
        CHECK(got == want[j]);
    }
}

/* Stream 0 of seed 1234567 holds splitmix64's published first four outputs
 * for that seed (Rosetta Code, "Pseudo-random numbers/Splitmix64"). */
static void test_seed_splitmix_reference(void)
{
    nc_rng r;
    nc_rng_seed(&r, 1234567u, 0);
    CHECK(r.s[0] == 6457827717110365317u);
    CHECK(r.s[1] == 3203168211198807973u);
    CHECK(r.s[2] == 9817491932198370423u);
    CHECK(r.s[3] == 4593380528125082431u);
}

static void test_streams_distinct_and_repeatable(void)
{
    nc_rng a, b, c, d;
    nc_rng_seed(&a, 2385, 7);
    nc_rng_seed(&b, 2385, 7);
    nc_rng_seed(&c, 2385, 8);
    nc_rng_seed(&d, 2386, 7);
    int same_ab = 1, same_ac = 0, same_ad = 0;
    for (int j = 0; j < 100; j++) {
        uint64_t va = nc_rng_u64(&a), vb = nc_rng_u64(&b);
        uint64_t vc = nc_rng_u64(&c), vd = nc_rng_u64(&d);
        same_ab &= va == vb;
        same_ac += va == vc;
        same_ad += va == vd;
    }
    CHECK(same_ab);
    CHECK_INT(0, same_ac);
    CHECK_INT(0, same_ad);
    /* nothing seeds to the all-zero state, even seed 0 stream 0 */
    nc_rng z;
    nc_rng_seed(&z, 0, 0);
    CHECK((z.s[0] | z.s[1] | z.s[2] | z.s[3]) != 0);
}

/* Pearson's chi-square over n cells with `draws` draws. For n - 1 degrees of
 * freedom the statistic has mean n - 1 and sd sqrt(2 (n - 1)); we accept
 * within 5 sd. */
static void check_below_uniform(uint64_t seed, uint64_t n, long draws)
{
    enum { MAXCELLS = 64 };
    long count[MAXCELLS] = {0};
    nc_rng r;
    nc_rng_seed(&r, seed, 0);
    int in_range = 1;
    for (long j = 0; j < draws; j++) {
        uint64_t v = nc_rng_below(&r, n);
        in_range &= v < n;
        if (v < n)
            count[v]++;
    }
    CHECK(in_range);
    double expect = (double)draws / (double)n, chi2 = 0.0;
    for (uint64_t k = 0; k < n; k++)
        chi2 += (count[k] - expect) * (count[k] - expect) / expect;
    double dof = (double)(n - 1);
    CHECK_ABS(dof, chi2, 5.0 * sqrt(2.0 * dof));
}

static void test_below(void)
{
    check_below_uniform(11, 37, 370000);
    check_below_uniform(12, 2, 100000);
    nc_rng r;
    nc_rng_seed(&r, 13, 0);
    int all_zero = 1;
    for (int j = 0; j < 100; j++)
        all_zero &= nc_rng_below(&r, 1) == 0;
    CHECK(all_zero);
    /* n = 3 * 2^62: a quarter of the u64 values are rejected; the result
     * must still be uniform on [0, n): mean n/2, sd of the mean
     * n / sqrt(12 draws). */
    uint64_t n = 3u * (UINT64_C(1) << 62);
    long draws = 200000;
    double sum = 0.0;
    int in_range = 1;
    for (long j = 0; j < draws; j++) {
        uint64_t v = nc_rng_below(&r, n);
        in_range &= v < n;
        sum += (double)v;
    }
    CHECK(in_range);
    double nd = (double)n;
    CHECK_ABS(nd / 2.0, sum / (double)draws, 5.0 * nd / sqrt(12.0 * (double)draws));
}

/* ---- moments of the distributions ----------------------------------------- */

typedef struct moments {
    double mean, var;
} moments;

/* Two-pass mean and unbiased variance of n samples. */
static moments sample_moments(const double *v, long n)
{
    double sum = 0.0;
    for (long j = 0; j < n; j++)
        sum += v[j];
    double mean = sum / (double)n, ss = 0.0;
    for (long j = 0; j < n; j++)
        ss += (v[j] - mean) * (v[j] - mean);
    return (moments){mean, ss / (double)(n - 1)};
}

enum { NSAMP = 1000000 };
static double samples[NSAMP];

static void test_uniform_moments(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 1);
    int in_range = 1;
    for (long j = 0; j < NSAMP; j++) {
        samples[j] = nc_rng_uniform(&r);
        in_range &= samples[j] >= 0.0 && samples[j] < 1.0;
    }
    CHECK(in_range);
    moments m = sample_moments(samples, NSAMP);
    /* sd of the mean sqrt(1/12 / n) = 2.9e-4; of the variance
     * sqrt((1/80 - 1/144) / n) = 7.5e-5 */
    CHECK_ABS(0.5, m.mean, 5 * 2.9e-4);
    CHECK_ABS(1.0 / 12.0, m.var, 5 * 7.5e-5);
}

static void test_normal_moments(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 2);
    for (long j = 0; j < NSAMP; j++)
        samples[j] = nc_rng_normal(&r);
    moments m = sample_moments(samples, NSAMP);
    /* sd of the mean 1e-3; of the variance sqrt(2 / n) = 1.4e-3 */
    CHECK_ABS(0.0, m.mean, 5e-3);
    CHECK_ABS(1.0, m.var, 5 * 1.4e-3);
    /* the shape, not only two moments: P(|z| < 1) = 0.682689, sd 4.7e-4;
     * fourth moment 3, sd sqrt((105 - 9) / n) = 9.8e-3 */
    long inside = 0;
    double m4 = 0.0;
    for (long j = 0; j < NSAMP; j++) {
        inside += fabs(samples[j]) < 1.0;
        m4 += samples[j] * samples[j] * samples[j] * samples[j];
    }
    CHECK_ABS(0.6826894921370859, (double)inside / NSAMP, 5 * 4.7e-4);
    CHECK_ABS(3.0, m4 / NSAMP, 5 * 9.8e-3);
}

/* Gamma(a, 1): mean a, variance a. sd of the sample mean sqrt(a / n); sd of
 * the sample variance sqrt((mu4 - a^2) / n) with mu4 = 3a^2 + 6a. */
static void check_gamma(double shape, uint64_t stream)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, stream);
    int positive = 1;
    for (long j = 0; j < NSAMP; j++) {
        samples[j] = nc_rng_gamma(&r, shape);
        positive &= samples[j] >= 0.0 && isfinite(samples[j]);
    }
    CHECK(positive);
    moments m = sample_moments(samples, NSAMP);
    double sd_mean = sqrt(shape / NSAMP);
    double sd_var = sqrt((2.0 * shape * shape + 6.0 * shape) / NSAMP);
    CHECK_ABS(shape, m.mean, 5 * sd_mean);
    CHECK_ABS(shape, m.var, 5 * sd_var);
}

static void test_gamma_moments(void)
{
    check_gamma(0.5, 3);
    check_gamma(2.385, 4);
    check_gamma(7.0, 5);
    nc_rng r;
    nc_rng_seed(&r, 1, 1);
    CHECK(isnan(nc_rng_gamma(&r, 0.0)));
    CHECK(isnan(nc_rng_gamma(&r, -2.385)));
    CHECK(isnan(nc_rng_gamma(&r, INFINITY)));
    CHECK(isnan(nc_rng_gamma(&r, NAN)));
}

static void test_student_t(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 6);
    for (long j = 0; j < NSAMP; j++)
        samples[j] = nc_rng_student_t(&r, 5.0);
    moments m = sample_moments(samples, NSAMP);
    /* nu = 5: variance 5/3; fourth moment 3 nu^2 / ((nu-2)(nu-4)) = 25, so
     * the sd of the sample variance is sqrt((25 - 25/9) / n) = 4.7e-3 */
    CHECK_ABS(0.0, m.mean, 5 * sqrt(5.0 / 3.0 / NSAMP));
    CHECK_ABS(5.0 / 3.0, m.var, 5 * 4.7e-3);

    /* nu = INFINITY is the normal, bit for bit, from the same state */
    nc_rng a, b;
    nc_rng_seed(&a, 2385, 9);
    nc_rng_seed(&b, 2385, 9);
    int same = 1;
    for (int j = 0; j < 1000; j++)
        same &= bits(nc_rng_student_t(&a, INFINITY)) == bits(nc_rng_normal(&b));
    CHECK(same);
    CHECK(isnan(nc_rng_student_t(&a, 0.0)));
    CHECK(isnan(nc_rng_student_t(&a, NAN)));
}

/* ---- nc_rng_normals (the ziggurat) -------------------------------------------- */

/* P(a <= z < b) for a standard normal z and 0 <= a <= b (b may be inf),
 * from libm's erfc (within an ulp or two: far below the statistical
 * tolerances below). */
static double normal_prob(double a, double b)
{
    return 0.5 * (erfc(a / M_SQRT2) - erfc(b / M_SQRT2));
}

/* The tables describe 256 regions of one area v covering exp(-x^2/2):
 * rectangle i (1..255) of width X[i] between heights F[i] and F[i+1], the
 * base strip the rectangle R x f(R) plus the tail, whose area
 * sqrt(pi/2) erfc(R / sqrt 2) is computed here with libm. */
static void test_zig_tables(void)
{
    const double *X, *F;
    double v;
    nc_rng_zig_tables(&X, &F, &v);
    CHECK_REL(3.6541528853610088, X[1], 1e-16);
    CHECK_REL(0.0049286732339746553, v, 1e-16);
    CHECK(X[0] > X[1] && X[NC_RNG_ZIG_LAYERS] == 0.0);
    CHECK(F[0] == 0.0 && F[NC_RNG_ZIG_LAYERS] == 1.0);
    int decreasing = 1;
    double worst = 0.0;
    for (int i = 1; i < NC_RNG_ZIG_LAYERS; i++) {
        decreasing &= X[i + 1] < X[i] && F[i + 1] > F[i];
        worst = fmax(worst, fabs(X[i] * (F[i + 1] - F[i]) / v - 1.0));
        /* F is the density at X */
        CHECK_REL(exp(-0.5 * X[i] * X[i]), F[i], 4e-16);
    }
    CHECK(decreasing);
    /* measured 5e-14 (the top rectangle, through 255 steps of recursion) */
    CHECK_ABS(0.0, worst, 1e-12);
    double tail = sqrt(M_PI / 2.0) * erfc(X[1] / M_SQRT2);
    CHECK_REL(v, X[1] * F[1] + tail, 1e-14);
    CHECK_REL(v, X[0] * F[1], 1e-15); /* the base strip's virtual width */
    /* 256 v = the area of the ziggurat, a little above sqrt(pi / 2) */
    CHECK(256.0 * v > sqrt(M_PI / 2.0) && 256.0 * v < 1.01 * sqrt(M_PI / 2.0));
}

/* Counts of draws, in chunks of NSAMP values through `samples`. */
typedef struct zig_counts {
    long n, neg, inside1;     /* all, negative, |z| < 1 */
    /* |z| in [X[i+1], X[i]) (i >= 1) or >= R (i = 0), positive then negative */
    long region[2 * NC_RNG_ZIG_LAYERS];
    long bin[162];            /* z in [-4 + 0.05 (k - 1), -4 + 0.05 k), bin 0 and 161 the tails */
    long beyond[4];           /* |z| > 4, 4.5, 5, 5.5 */
    double tail_sum;          /* sum of |z| - R over |z| >= R */
    long tail_n;
    double sum, sum2, sum4, lag1; /* z, z^2, z^4, z_k z_{k+1} */
} zig_counts;

static zig_counts zc;

static void count_normals(uint64_t seed, long chunks)
{
    const double *X, *F;
    double v;
    nc_rng_zig_tables(&X, &F, &v);
    memset(&zc, 0, sizeof zc);
    nc_rng r;
    nc_rng_seed(&r, seed, 0);
    static const double lim[4] = {4.0, 4.5, 5.0, 5.5};
    double prev = 0.0;
    for (long c = 0; c < chunks; c++) {
        nc_rng_normals(&r, samples, NSAMP);
        for (long j = 0; j < NSAMP; j++) {
            double z = samples[j], a = fabs(z);
            zc.n++;
            zc.neg += z < 0;
            zc.inside1 += a < 1.0;
            zc.sum += z;
            zc.sum2 += z * z;
            zc.sum4 += z * z * z * z;
            zc.lag1 += z * prev;
            prev = z;
            /* the region below a, by bisection over the decreasing X[1..256] */
            int lo = 1, hi = NC_RNG_ZIG_LAYERS; /* X[lo] > a >= X[hi] unless a >= R */
            int reg = 0;
            if (a < X[1]) {
                while (hi - lo > 1) {
                    int mid = (lo + hi) / 2;
                    if (a < X[mid])
                        lo = mid;
                    else
                        hi = mid;
                }
                reg = lo;
            } else {
                zc.tail_sum += a - X[1];
                zc.tail_n++;
            }
            zc.region[reg + (z < 0 ? NC_RNG_ZIG_LAYERS : 0)]++;
            double pos = floor((z + 4.0) / 0.05);
            int k = pos < 0 ? 0 : pos >= 160 ? 161 : (int)pos + 1;
            zc.bin[k]++;
            for (int q = 0; q < 4; q++)
                zc.beyond[q] += a > lim[q];
        }
    }
}

/* Pearson's chi-square of observed counts against probabilities p[]; the
 * test accepts within 5 sd of its mean (dof = cells - 1, sd sqrt(2 dof)). */
static void check_chi2(const long *obs, const double *p, int cells, long n)
{
    double chi2 = 0.0, psum = 0.0;
    for (int k = 0; k < cells; k++) {
        double e = p[k] * (double)n;
        chi2 += ((double)obs[k] - e) * ((double)obs[k] - e) / e;
        psum += p[k];
    }
    CHECK_ABS(1.0, psum, 1e-12); /* the cells cover the line */
    double dof = cells - 1;
    CHECK_ABS(dof, chi2, 5.0 * sqrt(2.0 * dof));
}

/* 2 * 10^7 values: moments, the shape in 162 bins of width 0.05 (chi-square
 * against the exact CDF), the frequencies of each ziggurat region (their
 * boundaries are where a wrong table or wedge test would show) and of the
 * far tail, and the tail's conditional mean. */
static void test_normals_distribution(void)
{
    const long chunks = 20;
    count_normals(2385, chunks);
    const double n = (double)zc.n;
    CHECK_INT(chunks * NSAMP, zc.n);
    /* sd of the mean 1/sqrt(n) = 2.2e-4; of the second moment sqrt(2/n);
     * of the fourth sqrt((105 - 9)/n); of P(|z| < 1) sqrt(p(1-p)/n) */
    CHECK_ABS(0.0, zc.sum / n, 5.0 / sqrt(n));
    CHECK_ABS(1.0, zc.sum2 / n, 5.0 * sqrt(2.0 / n));
    CHECK_ABS(3.0, zc.sum4 / n, 5.0 * sqrt(96.0 / n));
    CHECK_ABS(0.5, zc.neg / n, 5.0 * 0.5 / sqrt(n));
    const double p1 = 0.6826894921370859;
    CHECK_ABS(p1, zc.inside1 / n, 5.0 * sqrt(p1 * (1 - p1) / n));
    /* consecutive values are uncorrelated: sd of the lag-1 mean product 1/sqrt(n) */
    CHECK_ABS(0.0, zc.lag1 / n, 5.0 / sqrt(n));

    /* 162 bins: [-inf, -4), 160 of width 0.05, [4, inf) */
    double p[2 * NC_RNG_ZIG_LAYERS];
    for (int k = 0; k < 162; k++) {
        double a = k == 0 ? -INFINITY : -4.0 + 0.05 * (k - 1);
        double b = k == 161 ? INFINITY : -4.0 + 0.05 * k;
        /* P(a <= z < b) by symmetry from the positive half-line */
        p[k] = a >= 0 ? normal_prob(a, b)
               : b <= 0 ? normal_prob(-b, -a)
                        : normal_prob(0, -a) + normal_prob(0, b);
    }
    check_chi2(zc.bin, p, 162, zc.n);

    /* 512 cells: each region's strip [X[i+1], X[i]) and the tail, each sign
     * (the rarest, the top strip, expects 2600 values) */
    const double *X, *F;
    double v;
    nc_rng_zig_tables(&X, &F, &v);
    for (int i = 0; i < NC_RNG_ZIG_LAYERS; i++) {
        double q = i == 0 ? normal_prob(X[1], INFINITY) : normal_prob(X[i + 1], X[i]);
        p[i] = p[i + NC_RNG_ZIG_LAYERS] = q;
    }
    check_chi2(zc.region, p, 2 * NC_RNG_ZIG_LAYERS, zc.n);

    /* the far tail, drawn by the tail method: P(|z| > t) against 2 Q(t),
     * binomial sd */
    static const double lim[4] = {4.0, 4.5, 5.0, 5.5};
    for (int q = 0; q < 4; q++) {
        double pt = 2.0 * normal_prob(lim[q], INFINITY);
        CHECK_ABS(pt * n, (double)zc.beyond[q], 5.0 * sqrt(pt * n) + 1.0);
    }
    /* E[|z| - R | |z| >= R] = phi(R) / Q(R) - R, the sd of |z| - R there
     * below 1/R */
    double R = X[1], want = exp(-0.5 * R * R) / sqrt(2.0 * M_PI) / normal_prob(R, INFINITY) - R;
    CHECK(zc.tail_n > 4000);
    CHECK_ABS(want, zc.tail_sum / (double)zc.tail_n, 5.0 / R / sqrt((double)zc.tail_n));
}

/* Makes the next nc_rng_u64 of r return w: the xoshiro256** output is
 * rotl(s[1] * 5, 7) * 9, so s[1] = rotr(w / 9, 7) / 5 with the divisions
 * by the inverses of 9 and 5 modulo 2^64. The other words of the state
 * stay as they are (random), so the words after w are random too. */
static void force_word(nc_rng *r, uint64_t w)
{
    uint64_t inv9 = 9, inv5 = 5; /* Newton: x <- x (2 - a x) doubles the good bits */
    for (int k = 0; k < 6; k++) {
        inv9 *= 2 - 9 * inv9;
        inv5 *= 2 - 5 * inv5;
    }
    uint64_t t = w * inv9;
    r->s[1] = ((t >> 7) | (t << 57)) * inv5;
}

#define TWO52 INT64_C(0x10000000000000)

/* The word that puts the point u = j 2^-52 into region i (nc_rng_normals
 * reads the region from bits 0-7 and j + 2^52 from bits 11-63). */
static uint64_t zig_word(unsigned i, int64_t j)
{
    return ((uint64_t)(j + TWO52) << 11) | i;
}

static void test_force_word(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 12);
    force_word(&r, 0x0123456789abcdefu);
    CHECK(nc_rng_u64(&r) == 0x0123456789abcdefu);
    force_word(&r, zig_word(7, -12345));
    CHECK(nc_rng_u64(&r) == zig_word(7, -12345));
}

/* The tail method on its own: 10^5 first words forced into the base strip
 * beyond R (region 0, |u| >= R / X[0]), the later words random. The values
 * must follow the normal law conditioned on |z| >= R, with the sign of u:
 * chi-square over 21 cells of width 0.05 (and the rest) against
 * Q(a) - Q(b) / Q(R). */
static void test_normals_tail(void)
{
    const double *X, *F;
    double v;
    nc_rng_zig_tables(&X, &F, &v);
    const double R = X[1], QR = normal_prob(R, INFINITY);
    const int64_t jmin = (int64_t)ceil(R / X[0] * 0x1p52); /* |j| >= jmin: beyond R */
    enum { TRIALS = 100000, CELLS = 21 };
    long cell[CELLS] = {0}, neg = 0;
    int all_beyond = 1, sign_ok = 1;
    nc_rng src, r;
    nc_rng_seed(&src, 2385, 13);
    for (int k = 0; k < TRIALS; k++) {
        for (int q = 0; q < 4; q++)
            r.s[q] = nc_rng_u64(&src);
        int64_t j = jmin + (int64_t)nc_rng_below(&src, (uint64_t)(TWO52 - jmin));
        if (k % 2)
            j = -j;
        force_word(&r, zig_word(0, j));
        double z;
        nc_rng_normals(&r, &z, 1);
        all_beyond &= fabs(z) >= R;
        sign_ok &= (z < 0) == (j < 0);
        neg += z < 0;
        double pos = floor((fabs(z) - R) / 0.05);
        cell[pos >= CELLS - 1 ? CELLS - 1 : (int)pos]++;
    }
    CHECK(all_beyond);
    CHECK(sign_ok);
    CHECK_INT(TRIALS / 2, neg);
    double p[CELLS];
    for (int c = 0; c < CELLS; c++)
        p[c] = normal_prob(R + 0.05 * c, c == CELLS - 1 ? INFINITY : R + 0.05 * (c + 1)) / QR;
    check_chi2(cell, p, CELLS, TRIALS);
}

/* The wedge test on its own: first words forced to points x = u X[i] of
 * rectangle i outside the next narrower one (|x| >= X[i+1]), 1000 per
 * rectangle. Such a point is returned (bit for bit) with probability
 * (f(x) - F[i]) / (F[i+1] - F[i]), else a later word's value is: the
 * acceptances against the sum of those probabilities, within 5 binomial
 * sd (a factor 1.0001 on f is 10 sd away, measured). */
static void test_normals_wedge(void)
{
    const double *X, *F;
    double v;
    nc_rng_zig_tables(&X, &F, &v);
    nc_rng src, r;
    nc_rng_seed(&src, 2385, 14);
    double expect = 0.0, var = 0.0;
    long accepted = 0, trials = 0;
    for (int i = 1; i < NC_RNG_ZIG_LAYERS; i++) {
        /* |j| from ceil(X[i+1] / X[i] 2^52) to 2^52 - 1 */
        int64_t jmin = (int64_t)ceil(X[i + 1] / X[i] * 0x1p52);
        for (int k = 0; k < 1000; k++) {
            for (int q = 0; q < 4; q++)
                r.s[q] = nc_rng_u64(&src);
            int64_t j = jmin + (int64_t)nc_rng_below(&src, (uint64_t)(TWO52 - jmin));
            if (k % 2)
                j = -j;
            double x = (double)j * 0x1p-52 * X[i], z;
            force_word(&r, zig_word((unsigned)i, j));
            nc_rng_normals(&r, &z, 1);
            double pa = (exp(-0.5 * x * x) - F[i]) / (F[i + 1] - F[i]);
            pa = pa < 0 ? 0 : pa > 1 ? 1 : pa;
            expect += pa;
            var += pa * (1 - pa);
            accepted += bits(z) == bits(x);
            trials++;
        }
    }
    CHECK_INT(255 * 1000, trials);
    CHECK_ABS(expect, (double)accepted, 5.0 * sqrt(var));
    /* a substantial share is accepted and rejected, so both paths ran */
    CHECK(accepted > trials / 10 && accepted < trials * 9 / 10);
}

/* The values depend only on the words drawn, in order: any split of the
 * array gives the same bits and leaves the same state; n = 0 draws nothing. */
static void test_normals_split(void)
{
    enum { M = 5000 };
    static double a[M], b[M];
    nc_rng r1, r2;
    nc_rng_seed(&r1, 2385, 3);
    nc_rng_seed(&r2, 2385, 3);
    nc_rng_normals(&r1, a, M);
    nc_rng_normals(&r2, b, 1);
    nc_rng_normals(&r2, NULL, 0);
    nc_rng_normals(&r2, b + 1, 2384);
    nc_rng_normals(&r2, b + 2385, M - 2385);
    CHECK(memcmp(a, b, sizeof a) == 0);
    CHECK(memcmp(&r1, &r2, sizeof r1) == 0);
    /* another stream, other values */
    nc_rng_seed(&r2, 2385, 4);
    nc_rng_normals(&r2, b, M);
    int same = 0;
    for (int j = 0; j < M; j++)
        same += bits(a[j]) == bits(b[j]);
    CHECK_INT(0, same);
}

/* ---- nc_det_log and nc_det_exp ----------------------------------------------- */

/* Against glibc's log and exp (themselves within 1 ulp): both within 1 ulp
 * of the truth, so at most 2 ulp apart; measured max is 1. */
static void test_det_log_vs_libm(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 10);
    double worst = 0.0;
    /* log-uniform over the normal range, then [0.5, 2] where log is small,
     * then near 1, then subnormals */
    for (int j = 0; j < 200000; j++) {
        double x = ldexp(0.5 + 0.5 * nc_rng_uniform(&r), (int)nc_rng_below(&r, 2044) - 1021);
        worst = fmax(worst, ulp_diff(log(x), nc_det_log(x)));
    }
    for (int j = 0; j < 200000; j++) {
        double x = 0.5 + 1.5 * nc_rng_uniform(&r);
        worst = fmax(worst, ulp_diff(log(x), nc_det_log(x)));
    }
    for (int j = 0; j < 200000; j++) {
        double x = 1.0 + ldexp(nc_rng_uniform(&r) - 0.5, -(int)nc_rng_below(&r, 50));
        if (x != 1.0)
            worst = fmax(worst, ulp_diff(log(x), nc_det_log(x)));
    }
    for (int j = 0; j < 10000; j++) {
        double x = ldexp((double)(nc_rng_u64(&r) >> 12) + 1.0, -1074);
        worst = fmax(worst, ulp_diff(log(x), nc_det_log(x)));
    }
    CHECK_ABS(0.0, worst, 2.0);
}

static void test_det_exp_vs_libm(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 11);
    double worst = 0.0;
    /* the whole normal-result range, then [-2, 2], then tiny arguments */
    for (int j = 0; j < 200000; j++) {
        double x = -708.0 + 1417.0 * nc_rng_uniform(&r);
        worst = fmax(worst, ulp_diff(exp(x), nc_det_exp(x)));
    }
    for (int j = 0; j < 200000; j++) {
        double x = -2.0 + 4.0 * nc_rng_uniform(&r);
        worst = fmax(worst, ulp_diff(exp(x), nc_det_exp(x)));
    }
    for (int j = 0; j < 100000; j++) {
        double x = ldexp(nc_rng_uniform(&r) - 0.5, -(int)nc_rng_below(&r, 40));
        worst = fmax(worst, ulp_diff(exp(x), nc_det_exp(x)));
    }
    CHECK_ABS(0.0, worst, 2.0);
    /* subnormal results: one rounding in ldexp, so within an absolute
     * 2^-1074 (plus the relative error of the scaled value) */
    double worst_sub = 0.0;
    for (int j = 0; j < 20000; j++) {
        double x = -745.0 + 37.0 * nc_rng_uniform(&r);
        worst_sub = fmax(worst_sub, fabs(exp(x) - nc_det_exp(x)) / 0x1p-1074);
    }
    CHECK_ABS(0.0, worst_sub, 1.0);
}

static void test_det_special_values(void)
{
    CHECK(nc_det_log(1.0) == 0.0);
    CHECK(nc_det_log(0.0) == -INFINITY);
    CHECK(nc_det_log(-0.0) == -INFINITY);
    CHECK(isnan(nc_det_log(-2.385)));
    CHECK(isnan(nc_det_log(NAN)));
    CHECK(nc_det_log(INFINITY) == INFINITY);
    CHECK(nc_det_exp(0.0) == 1.0);
    CHECK(nc_det_exp(-INFINITY) == 0.0);
    CHECK(nc_det_exp(INFINITY) == INFINITY);
    CHECK(isnan(nc_det_exp(NAN)));
    CHECK(nc_det_exp(710.0) == INFINITY);
    CHECK(nc_det_exp(-746.0) == 0.0);
    CHECK(isfinite(nc_det_exp(709.78)));
    /* round trips */
    CHECK_REL(2.385, nc_det_exp(nc_det_log(2.385)), 4 * DBL_EPSILON);
    CHECK_REL(-2.385, nc_det_log(nc_det_exp(-2.385)), 4 * DBL_EPSILON);
}

/* Exact bit patterns, pinned so that any change in the arithmetic is
 * caught. All but one are the correctly rounded values (checked once with
 * mpmath at 50 digits; log 2, log 10 and exp(-1) are well-known constants).
 * exp(1) comes out 1 ulp above M_E = 0x4005bf0a8b145769, as it does in
 * fdlibm itself (Java's StrictMath.exp(1) is 2.7182818284590455 too). */
static void test_det_pinned_bits(void)
{
    CHECK(bits(nc_det_log(2.0)) == 0x3fe62e42fefa39efu);
    CHECK(bits(nc_det_log(10.0)) == 0x40026bb1bbb55516u);
    CHECK(bits(nc_det_exp(1.0)) == 0x4005bf0a8b14576au);
    CHECK(bits(nc_det_exp(-1.0)) == 0x3fd78b56362cef38u);
    CHECK(bits(nc_det_log(2.385)) == 0x3febd07aae981c39u);
    CHECK(bits(nc_det_log(1e-300)) == 0xc085963447f87fb5u);
    CHECK(bits(nc_det_log(0x1p-1074)) == 0xc0874385446d71c3u);
    CHECK(bits(nc_det_exp(-2.385)) == 0x3fb79324b39d7240u);
    CHECK(bits(nc_det_exp(700.5)) == 0x7f18625c7d4f56c2u);
    CHECK(bits(nc_det_exp(-740.0)) == 0x0000000000000055u);
}

/* ---- golden checksums ------------------------------------------------------- */

/* The exact bits of the first 4096 normals of seed 2385, stream 0, and of a
 * mix of gamma and Student-t variates. Computed once on x86-64 (GCC and
 * clang, -O0 and -O2 agree) and, for the normals, independently by a Python
 * transcription of the algorithms. A different value means the sequence
 * changed: every synthetic tensor and test depending on it changes too. */
static void test_golden_checksums(void)
{
    nc_rng r;
    nc_rng_seed(&r, 2385, 0);
    uint64_t h = FNV_OFFSET;
    for (int j = 0; j < 4096; j++)
        h = hash_bits(h, nc_rng_normal(&r));
    CHECK(h == 0x9f94471f143954c1u);

    nc_rng_seed(&r, 2385, 1);
    h = FNV_OFFSET;
    for (int j = 0; j < 1024; j++) {
        h = hash_bits(h, nc_rng_gamma(&r, 0.5));
        h = hash_bits(h, nc_rng_gamma(&r, 2.385));
        h = hash_bits(h, nc_rng_student_t(&r, 5.0));
        h = hash_bits(h, nc_rng_uniform(&r));
    }
    CHECK(h == 0x84dddfcc81d0a8c3u);
}

/* The ziggurat's tables (X then F) and the first 65536 values of
 * nc_rng_normals for seed 2385, stream 0 (21 of them from the tail, about
 * a thousand through a wedge), and the state after them. Computed on
 * x86-64 with GCC 12 (-O0, -O2, -O3 -march=native -std=gnu11) and clang
 * (-O2, -march=native -ffp-contract=on), and independently by a Python
 * transcription of xoshiro256**, nc_det_log, nc_det_exp and the ziggurat
 * (Python floats are IEEE doubles rounded the same way): all agree. */
static void test_golden_normals(void)
{
    const double *X, *F;
    double v;
    nc_rng_zig_tables(&X, &F, &v);
    uint64_t h = FNV_OFFSET;
    for (int i = 0; i <= NC_RNG_ZIG_LAYERS; i++)
        h = hash_bits(h, X[i]);
    for (int i = 0; i <= NC_RNG_ZIG_LAYERS; i++)
        h = hash_bits(h, F[i]);
    CHECK(h == 0x0390b4086594baf5u);

    nc_rng r;
    nc_rng_seed(&r, 2385, 0);
    h = FNV_OFFSET;
    for (int c = 0; c < 16; c++) { /* in 16 calls: the split does not matter */
        nc_rng_normals(&r, samples, 4096);
        for (int j = 0; j < 4096; j++)
            h = hash_bits(h, samples[j]);
    }
    CHECK(h == 0xe84ac78dc50acc71u);
    CHECK(r.s[0] == 0xb2f17f74107ee4abu && r.s[1] == 0x6384a20a2519c83du);
    CHECK(r.s[2] == 0xc1804c2cfe3b7d08u && r.s[3] == 0xde3f46692a58fdbdu);
}

int main(void)
{
    test_xoshiro_reference();
    test_seed_splitmix_reference();
    test_streams_distinct_and_repeatable();
    test_below();
    test_uniform_moments();
    test_normal_moments();
    test_gamma_moments();
    test_student_t();
    test_zig_tables();
    test_normals_distribution();
    test_normals_split();
    test_force_word();
    test_normals_tail();
    test_normals_wedge();
    test_det_log_vs_libm();
    test_det_exp_vs_libm();
    test_det_special_values();
    test_det_pinned_bits();
    test_golden_checksums();
    test_golden_normals();
    return CHECK_DONE();
}
