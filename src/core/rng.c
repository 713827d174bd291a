/*
 * rng.c - xoshiro256** seeded by splitmix64, and the distributions built on
 * it from IEEE-exact operations only (rng.h explains why and what that
 * assumes).
 *
 * References: xoshiro256starstar.c and splitmix64.c by Blackman and Vigna
 * (public domain, https://prng.di.unimi.it/); Marsaglia and Bray (1964) for
 * the polar method; Marsaglia and Tsang (2000), "The ziggurat method for
 * generating random variables", and Doornik (2005), "An improved ziggurat
 * method to generate normal random samples", for nc_rng_normals; Marsaglia
 * and Tsang (2000) for gamma; fdlibm 5.3 e_log.c and e_exp.c (Sun
 * Microsystems, 1993) for the polynomial coefficients of nc_det_log and
 * nc_det_exp, written here as hex literals so that no decimal-to-binary
 * conversion is involved.
 *
 * Deliberately absent: libm transcendental functions (exp, log, pow, ...),
 * fma, long double.
 */
#include "core/rng.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>

/* a*b+c must round twice, as on every machine: no fused multiply-add, even
 * when the file is compiled with -march=native in a GNU mode. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ---- splitmix64 and xoshiro256** ------------------------------------------ */

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15u /* splitmix64's increment, 2^64 / phi */

/* splitmix64's output function: a bijection of the 64-bit integers with
 * mix(0) = 0. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t splitmix_next(uint64_t *state)
{
    *state += GOLDEN_GAMMA;
    return mix(*state);
}

void nc_rng_seed(nc_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t sm = seed ^ mix(stream);
    for (int j = 0; j < 4; j++)
        r->s[j] = splitmix_next(&sm);
    /* mix is a bijection and its four inputs differ, so at most one word can
     * be zero: the state is never the forbidden all-zero one. */
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* One xoshiro256** step on the state words s[0..4). Inline, so that a loop
 * over a local copy of the state keeps it in registers. */
static inline uint64_t next(uint64_t *s)
{
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint64_t nc_rng_u64(nc_rng *r)
{
    return next(r->s);
}

uint64_t nc_rng_below(nc_rng *r, uint64_t n)
{
    assert(n > 0);
    /* 2^64 mod n, computed in 64 bits: values below it would make the
     * residues 0 .. (2^64 mod n) - 1 once more likely than the others. */
    uint64_t reject_below = (0 - n) % n;
    for (;;) {
        uint64_t v = nc_rng_u64(r);
        if (v >= reject_below)
            return v % n;
    }
}

uint64_t nc_rng_index(nc_rng *r, uint64_t n)
{
    assert(n > 0);
    /* the top 64 bits of v n are uniform on [0, n) once the low 64 bits are
     * at least 2^64 mod n; that test needs the division only when the low
     * bits are below n, i.e. almost never */
    unsigned __int128 m = (unsigned __int128)nc_rng_u64(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t reject_below = (0 - n) % n;
        while (lo < reject_below) {
            m = (unsigned __int128)nc_rng_u64(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

double nc_rng_uniform(nc_rng *r)
{
    return (double)(nc_rng_u64(r) >> 11) * 0x1p-53;
}

/* ---- normal, gamma, Student-t -------------------------------------------- */

double nc_rng_normal(nc_rng *r)
{
    for (;;) {
        double u = 2.0 * nc_rng_uniform(r) - 1.0; /* exact: [0,1) -> [-1,1) */
        double v = 2.0 * nc_rng_uniform(r) - 1.0;
        double q = u * u + v * v;
        if (q > 0.0 && q < 1.0)
            return u * sqrt(-2.0 * nc_det_log(q) / q);
    }
}

/* ---- ziggurat normals ------------------------------------------------------- */

/* Legend: f(x) = exp(-x^2/2), the normal density without its constant;
 * region 0 is the base strip (the rectangle [0, R] x [0, f(R)] and the tail
 * beyond R), regions 1..255 the rectangles [0, X_i] x [f(X_i), f(X_{i+1})]
 * stacked on it, all of area v.
 *
 * R is the root, to 50 digits (mpmath), of "the top rectangle has area v"
 * with v = R f(R) + int_R^inf f: R = 3.65415288536100877164542972,
 * v = 0.00492867323397465534736177540 (Marsaglia and Tsang print
 * 3.6541528853610088 and 0.00492867323399). With R and v rounded to double
 * and the recursion below in double, the regions' areas agree with v to
 * 5e-14 relative (the top one is the worst; test_rng.c checks 1e-12): a
 * bias no sample could show. 98.5% of the words take the fast path (the
 * top region, X[256] = 0, never does).
 *
 * Cost a value (GCC 12, -O2, x86-64): nc_rng_normal 176 instructions and
 * ~44 ns, the polar method keeping both values of a pair 98 and ~23 ns,
 * nc_rng_normals 28 and ~3.4 ns (callgrind counts; medians of 5 runs over
 * 10^7 values on a shared AMD EPYC, where times vary by 30%). About half
 * of the 28 is the xoshiro256** step itself. */
#define ZIG_N NC_RNG_ZIG_LAYERS
#define ZIG_R 0x1.d3bb48209ad33p+1 /* 3.6541528853610088 */
#define ZIG_V 0x1.43016a5a43732p-8 /* 0.0049286732339746553 */

static struct zig_tables {
    double X[ZIG_N + 1]; /* widths: X[0] = v / f(R), X[1] = R, ..., X[256] = 0 */
    double F[ZIG_N + 1]; /* heights where region i starts: F[0] = 0, F[i] = f(X_i) */
    double W[ZIG_N];     /* X[i] 2^-52, so that x = j W[i] = (j 2^-52) X[i] */
} zig;
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

/* The fast path, as a hint to the compiler: without it GCC 12 lays the loop
 * out for the slow path and spends 38 instructions a value instead of 28. */
#if defined(__GNUC__)
#define LIKELY(c) __builtin_expect(!!(c), 1)
#else
#define LIKELY(c) (c)
#endif

/* The tables from R and v: X_{i+1} = f^-1(v / X_i + f(X_i)), each
 * rectangle's area v over the one below. */
static void zig_init(void)
{
    double f = nc_det_exp(-0.5 * ZIG_R * ZIG_R);
    zig.X[0] = ZIG_V / f;
    zig.X[1] = ZIG_R;
    zig.F[0] = 0.0;
    zig.F[1] = f;
    for (int i = 2; i < ZIG_N; i++) {
        zig.X[i] = sqrt(-2.0 * nc_det_log(ZIG_V / zig.X[i - 1] + f));
        f = nc_det_exp(-0.5 * zig.X[i] * zig.X[i]);
        zig.F[i] = f;
    }
    zig.X[ZIG_N] = 0.0;
    zig.F[ZIG_N] = 1.0;
    for (int i = 0; i < ZIG_N; i++)
        zig.W[i] = zig.X[i] * 0x1p-52; /* exact: a power of two */
}

void nc_rng_zig_tables(const double **X, const double **F, double *v)
{
    pthread_once(&zig_once, zig_init);
    *X = zig.X;
    *F = zig.F;
    *v = ZIG_V;
}

/* A uniform double in [0, 1) from the state words, as nc_rng_uniform. */
static inline double uniform_s(uint64_t *s)
{
    return (double)(next(s) >> 11) * 0x1p-53;
}

/* The rare case: the point x of region i lies outside the next narrower
 * rectangle, |x| >= X[i+1]. Returns true with the value in *x, or false
 * when the point is rejected (draw a new word). */
static inline bool zig_slow(uint64_t *s, unsigned i, double *x)
{
    const double ax = fabs(*x);
    if (i == 0) {
        /* the tail beyond R (Marsaglia 1964), with the sign of x: a =
         * -log(U1) / R is the exponential proposal, accepted with
         * probability exp(-a^2/2) */
        double a, b;
        do {
            a = -nc_det_log(1.0 - uniform_s(s)) / ZIG_R; /* (0, 1]: finite */
            b = -nc_det_log(1.0 - uniform_s(s));
        } while (b + b < a * a);
        *x = *x < 0 ? -(ZIG_R + a) : ZIG_R + a;
        return true;
    }
    /* the wedge: a uniform height in the region against the curve */
    double y = zig.F[i] + uniform_s(s) * (zig.F[i + 1] - zig.F[i]);
    return y < nc_det_exp(-0.5 * ax * ax);
}

void nc_rng_normals(nc_rng *r, double *out, size_t n)
{
    if (n == 0)
        return;
    pthread_once(&zig_once, zig_init);
    uint64_t s[4] = {r->s[0], r->s[1], r->s[2], r->s[3]}; /* in registers */
    for (double *end = out + n; out != end; out++) {
        for (;;) {
            uint64_t w = next(s);
            unsigned i = (unsigned)(w & 0xff); /* bits 0-7: the region */
            int64_t j = (int64_t)(w >> 11) - INT64_C(0x10000000000000); /* [-2^52, 2^52) */
            double x = (double)j * zig.W[i]; /* j is exact: one rounding */
            if (LIKELY(fabs(x) < zig.X[i + 1]) || zig_slow(s, i, &x)) {
                *out = x;
                break;
            }
        }
    }
    for (int q = 0; q < 4; q++)
        r->s[q] = s[q];
}

/* Marsaglia-Tsang for shape >= 1. */
static double gamma_ge1(nc_rng *r, double shape)
{
    double dd = shape - 1.0 / 3.0;
    double c = 1.0 / sqrt(9.0 * dd);
    for (;;) {
        double z, v;
        do {
            z = nc_rng_normal(r);
            v = 1.0 + c * z;
        } while (v <= 0.0);
        v = v * v * v;
        double u = 1.0 - nc_rng_uniform(r); /* (0, 1]: log(u) is finite */
        double z2 = z * z;
        if (u < 1.0 - 0.0331 * z2 * z2) /* the squeeze: no logarithm needed */
            return dd * v;
        if (nc_det_log(u) < 0.5 * z2 + dd * (1.0 - v + nc_det_log(v)))
            return dd * v;
    }
}

double nc_rng_gamma(nc_rng *r, double shape)
{
    if (!(shape > 0.0) || isinf(shape))
        return NAN;
    if (shape >= 1.0)
        return gamma_ge1(r, shape);
    /* Gamma(a) = Gamma(a + 1) * U^(1/a) for a < 1 (Marsaglia-Tsang, sec. 6). */
    double g = gamma_ge1(r, shape + 1.0);
    double u = 1.0 - nc_rng_uniform(r); /* (0, 1] */
    return g * nc_det_exp(nc_det_log(u) / shape);
}

double nc_rng_student_t(nc_rng *r, double nu)
{
    if (!(nu > 0.0))
        return NAN;
    double z = nc_rng_normal(r);
    if (isinf(nu))
        return z;
    double chi2 = 2.0 * nc_rng_gamma(r, 0.5 * nu);
    return z / sqrt(chi2 / nu);
}

/* ---- nc_det_log ------------------------------------------------------------ */

/* log 2 = LN2_HI + LN2_LO; LN2_HI has 32 trailing zero bits, so e * LN2_HI
 * is exact for |e| < 2^20. */
#define LN2_HI 0x1.62e42fee00000p-1
#define LN2_LO 0x1.a39ef35793c76p-33

/* fdlibm e_log.c: R(z) = Lg1 z + ... + Lg7 z^7 ~ (log(1+f) - 2s)/s - s^2...,
 * |error| < 2^-58.45 on |s| <= 0.1716. */
static const double Lg1 = 0x1.5555555555593p-1, Lg2 = 0x1.999999997fa04p-2,
                    Lg3 = 0x1.2492494229359p-2, Lg4 = 0x1.c71c51d8e78afp-3,
                    Lg5 = 0x1.7466496cb03dep-3, Lg6 = 0x1.39a09d078c69fp-3,
                    Lg7 = 0x1.2f112df3e5244p-3;

double nc_det_log(double x)
{
    if (isnan(x))
        return x;
    if (x < 0.0)
        return NAN;
    if (x == 0.0)
        return -INFINITY;
    if (isinf(x))
        return x;
    int e;
    double m = frexp(x, &e); /* x = m 2^e, m in [1/2, 1), exact (subnormals too) */
    if (m < 0x1.6a09e667f3bcdp-1) { /* sqrt(1/2) */
        m *= 2.0;
        e -= 1;
    }
    /* m in [sqrt(1/2), sqrt(2)); f = m - 1 is exact (Sterbenz). */
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double w = z * z;
    double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    double R = t1 + t2;
    double hfsq = 0.5 * f * f;
    double dk = (double)e;
    /* log x = e log 2 + f - hfsq + s (hfsq + R), summed small terms first. */
    return dk * LN2_HI - ((hfsq - (s * (hfsq + R) + dk * LN2_LO)) - f);
}

/* ---- nc_det_exp ------------------------------------------------------------ */

/* fdlibm e_exp.c: P(t) = P1 t + ... + P5 t^5 on |r| <= 0.3466,
 * |2 + r c/(... )| error < 2^-59. */
static const double P1 = 0x1.555555555553ep-3, P2 = -0x1.6c16c16bebd93p-9,
                    P3 = 0x1.1566aaf25de2cp-14, P4 = -0x1.bbd41c5d26bf1p-20,
                    P5 = 0x1.6376972bea4d0p-25;

#define INV_LN2 0x1.71547652b82fep+0
#define EXP_OVERFLOW 0x1.62e42fefa39efp+9    /* above: exp(x) > DBL_MAX */
#define EXP_UNDERFLOW -0x1.74910d52d3051p+9  /* below: exp(x) < 2^-1075 */

double nc_det_exp(double x)
{
    if (isnan(x))
        return x;
    if (x > EXP_OVERFLOW)
        return INFINITY;
    if (x < EXP_UNDERFLOW)
        return 0.0;
    double ax = fabs(x);
    if (ax < 0x1p-28)
        return 1.0 + x; /* exp(x) = 1 + x to within x^2/2 < 2^-57 */

    /* x = k log 2 + (hi - lo), k the nearest integer to x / log 2. */
    int k = 0;
    double hi = x, lo = 0.0;
    if (ax > 0.5 * LN2_HI) {
        k = (int)(INV_LN2 * x + (x < 0.0 ? -0.5 : 0.5));
        double dk = (double)k;
        hi = x - dk * LN2_HI; /* exact: dk * LN2_HI is, and it is close to x */
        lo = dk * LN2_LO;
    }
    double rr = hi - lo;
    double t = rr * rr;
    double c = rr - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    if (k == 0)
        return 1.0 - ((rr * c) / (c - 2.0) - rr);
    double y = 1.0 - ((lo - (rr * c) / (2.0 - c)) - hi);
    return ldexp(y, k);
}
