/*
 * test_vmath.c - nc_exp, nc_tanh, nc_erf and the derivatives against
 * glibc's long double expl/tanhl/erfl (64-bit significands: their own error
 * is ~2^-64, far below a double ulp, so the errors printed are ours), and
 * against the double libm functions the tool used to call.
 *
 * Each accuracy test samples about a million points per range, uniform and
 * with log-spaced magnitudes from 1e-300 to 1e3, both signs, from a fixed
 * splitmix64 seed, prints the maxima (ulp, relative, absolute, and where)
 * and checks them against the bounds promised in vmath.h. Then special
 * values, and the array versions against the inline functions.
 */
#include "core/vmath.h"

#include "check.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

/* ---- sampling and error bookkeeping -------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double next_unit(rng *r)
{
    return (double)(next_u64(r) >> 11) * 0x1p-53;
}

/* A sample of one range: uniform in [lo, hi] (is_log false) or with
 * log-uniform magnitude in [lo, hi] (lo > 0); a random sign if both_signs. */
typedef struct range {
    double lo, hi;
    bool is_log, both_signs;
} range;

static double sample(rng *r, const range *g)
{
    double u = next_unit(r);
    double x = g->is_log ? exp(log(g->lo) + (log(g->hi) - log(g->lo)) * u)
                         : g->lo + (g->hi - g->lo) * u;
    if (g->both_signs && (next_u64(r) & 1))
        x = -x;
    return x;
}

/* The spacing of doubles at |v| (v finite): 2^(e-52) for 2^e <= |v| <
 * 2^(e+1), and 2^-1074 among subnormals. */
static long double ulp_at(long double v)
{
    v = fabsl(v);
    if (v < DBL_MIN)
        return 0x1p-1074L;
    int e;
    frexpl(v, &e); /* v = m 2^e, m in [0.5, 1) */
    return ldexpl(1.0L, e - 53);
}

typedef struct err_stats {
    size_t n;                 /* points compared */
    size_t n_mismatch;        /* non-finite or zero references not matched exactly */
    double max_ulp, x_ulp;    /* largest |got - ref| / ulp(ref), and its x */
    double max_rel, x_rel;    /* largest |got - ref| / |ref| over normal refs */
    double max_abs, x_abs;    /* largest |got - ref| */
    double max_ulp_libm;      /* largest |got - libm double| / ulp(ref) */
} err_stats;

/* Records one comparison. A reference that is inf, NaN or zero must be
 * matched exactly (same value; zero matches either sign of zero). */
static void record(err_stats *st, double x, double got, long double ref, double libm)
{
    st->n++;
    if (!isfinite((double)ref) || (double)ref == 0.0) {
        bool same = (isnan((double)ref) && isnan(got)) || got == (double)ref;
        st->n_mismatch += !same;
        return;
    }
    if (!isfinite(got)) {
        st->n_mismatch++;
        return;
    }
    long double err = fabsl((long double)got - ref);
    double ulps = (double)(err / ulp_at(ref));
    double rel = fabsl(ref) >= DBL_MIN ? (double)(err / fabsl(ref)) : 0.0;
    double lib = (double)(fabsl((long double)got - (long double)libm) / ulp_at(ref));
    if (ulps > st->max_ulp) {
        st->max_ulp = ulps;
        st->x_ulp = x;
    }
    if (rel > st->max_rel) {
        st->max_rel = rel;
        st->x_rel = x;
    }
    if ((double)err > st->max_abs) {
        st->max_abs = (double)err;
        st->x_abs = x;
    }
    if (lib > st->max_ulp_libm)
        st->max_ulp_libm = lib;
}

static void print_stats(const char *name, const range *g, const err_stats *st)
{
    printf("%-10s %s[%g, %g]%s n=%zu: max %.3f ulp (x=%.17g), rel %.3g (x=%.17g), "
           "abs %.3g (x=%.17g); vs libm double max %.2f ulp\n",
           name, g->both_signs ? "+-" : "", g->lo, g->hi, g->is_log ? " log" : "", st->n,
           st->max_ulp, st->x_ulp, st->max_rel, st->x_rel, st->max_abs, st->x_abs,
           st->max_ulp_libm);
}

#define NPTS 1000000 /* points per range */

/* ---- accuracy ---------------------------------------------------------- */

static void test_exp_accuracy(void)
{
    static const range ranges[] = {
        {-1.0, 1.0, false, false},
        {-745.2, 709.8, false, false},
        {1e-300, 1e3, true, true},  /* includes overflow and underflow to 0 */
        {-745.2, -708.0, false, false}, /* subnormal results */
    };
    rng r = {0x2385};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        err_stats st = {0};
        for (int k = 0; k < NPTS; k++) {
            double x = sample(&r, &ranges[i]);
            record(&st, x, nc_exp(x), expl(x), exp(x));
        }
        print_stats("exp", &ranges[i], &st);
        CHECK_INT(0, st.n_mismatch);
        CHECK_ABS(0.0, st.max_ulp, 1.5); /* measured 1.06 */
        if (i < 3)
            CHECK_ABS(0.0, st.max_rel, 2.5e-16);
    }
}

static void test_tanh_accuracy(void)
{
    static const range ranges[] = {
        {-1.0, 1.0, false, false},
        {0.55, 0.7, false, true}, /* around the switch at 0.625 */
        {-25.0, 25.0, false, false},
        {1e-300, 1e3, true, true},
    };
    rng r = {0x4219};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        err_stats st = {0};
        for (int k = 0; k < NPTS; k++) {
            double x = sample(&r, &ranges[i]);
            record(&st, x, nc_tanh(x), tanhl(x), tanh(x));
        }
        print_stats("tanh", &ranges[i], &st);
        CHECK_INT(0, st.n_mismatch);
        CHECK_ABS(0.0, st.max_rel, 4e-16); /* measured 2.7e-16 */
        CHECK_ABS(0.0, st.max_ulp, 2.0);
    }
}

static void test_erf_accuracy(void)
{
    static const range ranges[] = {
        {-1.0, 1.0, false, false},
        {-7.0, 7.0, false, false},
        {0.8, 1.3, false, true}, /* region 1 / 2 / 3 switches */
        {2.8, 6.1, false, true}, /* region 3 / 4 / saturated */
        {1e-300, 1e3, true, true},
    };
    rng r = {0x7c61};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        err_stats st = {0};
        for (int k = 0; k < NPTS; k++) {
            double x = sample(&r, &ranges[i]);
            record(&st, x, nc_erf(x), erfl(x), erf(x));
        }
        print_stats("erf", &ranges[i], &st);
        CHECK_INT(0, st.n_mismatch);
        CHECK_ABS(0.0, st.max_abs, 2e-16); /* measured 1.03e-16 */
        CHECK_ABS(0.0, st.max_rel, 1e-15); /* measured 1.7e-16 */
    }
}

/* erf'(x) = 2/sqrt(pi) exp(-x^2), the reference with x^2 in long double. */
static void test_erf_deriv(void)
{
    static const range ranges[] = {
        {-6.0, 6.0, false, false},
        {1e-300, 40.0, true, true},
    };
    const long double two_over_sqrtpi = 1.1283791670955125738961589031215452L;
    rng r = {0x11d3};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        err_stats st = {0};
        for (int k = 0; k < NPTS / 4; k++) {
            double x = sample(&r, &ranges[i]);
            long double ref = two_over_sqrtpi * expl(-(long double)x * x);
            record(&st, x, nc_erf_deriv(x), ref, (double)two_over_sqrtpi * exp(-x * x));
        }
        print_stats("erf'", &ranges[i], &st);
        CHECK_INT(0, st.n_mismatch);
        CHECK_ABS(0.0, st.max_ulp, 3.0); /* subnormal results included */
    }
    CHECK(nc_erf_deriv(0.0) == (double)two_over_sqrtpi);
}

/* tanh'(x) = 1 - tanh(x)^2 from the rounded tanh: absolute error a few
 * 1e-16 (the relative error grows where tanh -> +-1, by design). */
static void test_tanh_deriv(void)
{
    rng r = {0x5e11};
    range g = {-20.0, 20.0, false, false};
    double max_abs = 0.0;
    for (int k = 0; k < NPTS / 4; k++) {
        double x = sample(&r, &g);
        long double c = coshl(x);
        long double ref = 1.0L / (c * c);
        double err = (double)fabsl(nc_tanh_deriv_from(nc_tanh(x)) - ref);
        max_abs = err > max_abs ? err : max_abs;
    }
    printf("tanh'      +-20: max abs %.3g\n", max_abs);
    CHECK_ABS(0.0, max_abs, 6e-16);
    CHECK(nc_tanh_deriv_from(0.0) == 1.0);
}

/* ---- special values ------------------------------------------------------- */

static bool same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void test_special_values(void)
{
    const double inf = INFINITY, nan = NAN;

    /* exp */
    CHECK(same_bits(1.0, nc_exp(0.0)));
    CHECK(same_bits(1.0, nc_exp(-0.0)));
    CHECK(same_bits(1.0, nc_exp(DBL_TRUE_MIN)));
    CHECK(same_bits(inf, nc_exp(inf)));
    CHECK(same_bits(0.0, nc_exp(-inf)));
    CHECK(isnan(nc_exp(nan)));
    CHECK(isnan(nc_exp(-nan)));
    CHECK(same_bits(inf, nc_exp(1e308)));
    CHECK(same_bits(0.0, nc_exp(-1e308)));
    CHECK(same_bits(inf, nc_exp(709.79)));        /* e^709.79 > DBL_MAX */
    CHECK_REL(exp(709.78), nc_exp(709.78), 3e-16); /* just below */
    CHECK(same_bits(DBL_TRUE_MIN, nc_exp(-745.13))); /* rounds up to 2^-1074 */
    CHECK(same_bits(0.0, nc_exp(-745.14)));        /* rounds to 0 */
    CHECK_ABS(exp(-720.385), nc_exp(-720.385), 1.5 * DBL_TRUE_MIN); /* subnormal, not flushed */
    CHECK(nc_exp(-720.385) > 0.0);
    CHECK_REL(exp(2.385), nc_exp(2.385), 2.3e-16);

    /* tanh: odd, exact at 0 and for tiny x, saturated and signed at inf */
    CHECK(same_bits(0.0, nc_tanh(0.0)));
    CHECK(same_bits(-0.0, nc_tanh(-0.0)));
    CHECK(same_bits(DBL_TRUE_MIN, nc_tanh(DBL_TRUE_MIN)));
    CHECK(same_bits(-1e-310, nc_tanh(-1e-310)));
    CHECK(same_bits(DBL_MIN, nc_tanh(DBL_MIN)));
    CHECK(same_bits(2.385e-9, nc_tanh(2.385e-9)));   /* tanh(x) rounds to x */
    CHECK(same_bits(-2.385e-9, nc_tanh(-2.385e-9)));
    CHECK(same_bits(1.0, nc_tanh(19.5)));
    CHECK(same_bits(-1.0, nc_tanh(-23.85)));
    CHECK(same_bits(1.0, nc_tanh(DBL_MAX)));
    CHECK(same_bits(1.0, nc_tanh(inf)));
    CHECK(same_bits(-1.0, nc_tanh(-inf)));
    CHECK(isnan(nc_tanh(nan)));
    CHECK(isnan(nc_tanh(-nan)));
    CHECK_REL(tanh(0.625), nc_tanh(0.625), 3e-16);
    CHECK_REL(tanh(-0.2385), nc_tanh(-0.2385), 3e-16);

    /* erf: odd, 2x/sqrt(pi) for tiny x, saturated and signed at inf */
    const double c = 0x1.20dd750429b6dp+0; /* 2/sqrt(pi) */
    CHECK(same_bits(0.0, nc_erf(0.0)));
    CHECK(same_bits(-0.0, nc_erf(-0.0)));
    CHECK_REL(c * 2.385e-300, nc_erf(2.385e-300), 2.3e-16);
    CHECK_REL(-c * 2.385e-20, nc_erf(-2.385e-20), 2.3e-16);
    CHECK_ABS(c * 1e-310, nc_erf(1e-310), 2 * DBL_TRUE_MIN); /* subnormal */
    CHECK(nc_erf(DBL_TRUE_MIN) >= 0.0);
    CHECK(same_bits(1.0, nc_erf(6.0)));
    CHECK(same_bits(-1.0, nc_erf(-23.85)));
    CHECK(same_bits(1.0, nc_erf(DBL_MAX)));
    CHECK(same_bits(1.0, nc_erf(inf)));
    CHECK(same_bits(-1.0, nc_erf(-inf)));
    CHECK(isnan(nc_erf(nan)));
    CHECK(isnan(nc_erf(-nan)));
    CHECK_REL(erf(0.84375), nc_erf(0.84375), 2.3e-16);
    CHECK_REL(erf(-1.25), nc_erf(-1.25), 2.3e-16);
    CHECK_REL(erf(0x1.6db6ep+1), nc_erf(0x1.6db6ep+1), 2.3e-16);

    /* erf' */
    CHECK(same_bits(0.0, nc_erf_deriv(inf)));
    CHECK(same_bits(0.0, nc_erf_deriv(-inf)));
    CHECK(same_bits(0.0, nc_erf_deriv(30.0)));
    CHECK(isnan(nc_erf_deriv(nan)));
    CHECK(nc_erf_deriv(26.5) > 0.0); /* e^-702.25: normal */
    CHECK(nc_erf_deriv(27.2) > 0.0); /* subnormal, not flushed */
}

/* Odd functions: f(-x) is exactly -f(x) (the sign is applied last). */
static void test_odd_symmetry(void)
{
    rng r = {0x3a0f};
    range g = {1e-300, 1e3, true, false};
    size_t bad_tanh = 0, bad_erf = 0;
    for (int k = 0; k < NPTS / 10; k++) {
        double x = sample(&r, &g);
        bad_tanh += !same_bits(-nc_tanh(x), nc_tanh(-x));
        bad_erf += !same_bits(-nc_erf(x), nc_erf(-x));
    }
    CHECK_INT(0, bad_tanh);
    CHECK_INT(0, bad_erf);
}

/* ---- array versions ------------------------------------------------------- */

/* nc_vtanh/nc_verf/nc_vexp (vectorized, AVX2 where the CPU has it) give
 * bit-for-bit the inline functions' results: both do the same IEEE
 * operations in the same order, and without FMA contraction (-std=c11)
 * SSE2 and AVX2 round identically. Also in place (x == y). */
static void test_arrays_match_inline(void)
{
    enum { N = 4099 }; /* not a multiple of any vector width */
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *z = malloc(N * sizeof *z);
    CHECK(x && y && z);
    if (!x || !y || !z)
        goto out;
    static const double specials[] = {0.0, -0.0, 1e-310, -DBL_TRUE_MIN, DBL_MIN, 1e300, -1e300,
                                      DBL_MAX, INFINITY, -INFINITY, NAN, 0.625, 0.84375, 1.25,
                                      6.0, 20.0, 709.79, -745.14};
    const size_t nspec = sizeof specials / sizeof specials[0];
    rng r = {0x9b07};
    range g = {1e-12, 1e3, true, true};
    for (size_t i = 0; i < N; i++)
        x[i] = i < nspec ? specials[i] : i % 3 ? sample(&r, &g) : 8.0 * next_unit(&r) - 4.0;

    static const struct {
        const char *name;
        void (*vec)(const double *, double *, size_t);
    } fns[] = {
        {"tanh", nc_vtanh},
        {"erf", nc_verf},
        {"exp", nc_vexp},
    };
    for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        fns[f].vec(x, y, N);
        memcpy(z, x, N * sizeof *z);
        fns[f].vec(z, z, N); /* in place */
        size_t bad = 0, bad_in_place = 0;
        for (size_t i = 0; i < N; i++) {
            double want = f == 0 ? nc_tanh(x[i]) : f == 1 ? nc_erf(x[i]) : nc_exp(x[i]);
            bool is_nan = isnan(want) && isnan(y[i]) && isnan(z[i]);
            bad += !is_nan && !same_bits(want, y[i]);
            bad_in_place += !is_nan && !same_bits(want, z[i]);
        }
        printf("nc_v%-4s vs inline: %zu of %d differ, in place %zu\n", fns[f].name, bad, N,
               bad_in_place);
        CHECK_INT(0, bad);
        CHECK_INT(0, bad_in_place);
    }
out:
    free(x);
    free(y);
    free(z);
}

/* nc_tanh_run / nc_erf_run (runs of NC_VM_RUN values, the cheap first
 * region alone where a whole run allows it) give the bits of nc_tanh and
 * nc_erf for every value: runs all inside the first region, runs with one
 * value out (at either end), NaN and infinities inside a run, lengths that
 * end mid-run, and the boundaries themselves. */
static void test_runs_match(void)
{
    enum { N = 7 * NC_VM_RUN + 13 };
    double *x = malloc(N * sizeof *x), *t = malloc(N * sizeof *t);
    CHECK(x && t);
    if (!x || !t)
        goto out;
    rng r = {0x51ab};
    for (int f = 0; f < 2; f++) {
        const double edge = f == 0 ? 0.625 : 0.84375;
        for (int alpha_k = 0; alpha_k < 3; alpha_k++) {
            const double alpha = alpha_k == 0 ? 1.0 : alpha_k == 1 ? 0.37 : -2.5;
            const double shift = f == 1 && alpha_k == 2 ? 0.125 : 0.0;
            for (size_t i = 0; i < N; i++) {
                /* mostly inside the first region; run 2 has one value out
                 * at its start, run 4 at its end, run 5 a NaN, run 6 an
                 * infinity; run 3 sits on the boundary */
                double u = (2.0 * next_unit(&r) - 1.0) * 0.99 * edge;
                x[i] = (u - shift) / alpha;
                size_t run = i / NC_VM_RUN, pos = i % NC_VM_RUN;
                if ((run == 2 && pos == 0) || (run == 4 && pos == NC_VM_RUN - 1))
                    x[i] = 3.0 / alpha;
                if (run == 3)
                    x[i] = ((pos % 2 ? edge : -edge) * (pos % 3 ? 1.0 : 1.0 - 0x1p-52) - shift) /
                           alpha;
                if (run == 5 && pos == 7)
                    x[i] = NAN;
                if (run == 6 && pos == 9)
                    x[i] = -INFINITY;
            }
            for (size_t n = N; n + 40 > N; n -= 13) {
                if (f == 0 && shift == 0.0)
                    nc_tanh_run(alpha, x, n, t);
                else if (f == 1)
                    nc_erf_run(alpha, shift, x, n, t);
                else
                    continue;
                size_t bad = 0;
                for (size_t i = 0; i < n; i++) {
                    double want = f == 0 ? nc_tanh(alpha * x[i]) : nc_erf(alpha * x[i] + shift);
                    bad += !(same_bits(want, t[i]) || (isnan(want) && isnan(t[i])));
                }
                CHECK_INT(0, bad);
            }
        }
    }
out:
    free(x);
    free(t);
}

/* nc_tanh_run's saturated runs (every |alpha x| > 20: +-1 alone) give
 * nc_tanh's bits too: runs all beyond 20 of both signs, a run holding 20
 * itself (not beyond), a NaN or an infinity among large values, and runs
 * mixing the three regions. */
static void test_tanh_saturated_runs(void)
{
    enum { N = 6 * NC_VM_RUN + 5 };
    double x[N], t[N];
    rng r = {0x5a7};
    for (size_t i = 0; i < N; i++) {
        size_t run = i / NC_VM_RUN, pos = i % NC_VM_RUN;
        double u = 20.0 + 1e3 * next_unit(&r);
        x[i] = pos % 3 ? u : -u;
        if (run == 1 && pos == 5)
            x[i] = 20.0; /* the edge: not beyond */
        if (run == 2 && pos == 11)
            x[i] = NAN;
        if (run == 3 && pos == 0)
            x[i] = INFINITY;
        if (run == 4 && pos == 17)
            x[i] = 0.3; /* a small value among large ones */
        if (run == 5)
            x[i] = 20.0 + 0x1p-48 * (double)(pos + 1) * (pos % 2 ? 1.0 : -1.0);
    }
    for (int k = 0; k < 2; k++) {
        const double alpha = k ? -1.0 : 1.0;
        nc_tanh_run(alpha, x, N, t);
        size_t bad = 0;
        for (size_t i = 0; i < N; i++) {
            double want = nc_tanh(alpha * x[i]);
            bad += !(same_bits(want, t[i]) || (isnan(want) && isnan(t[i])));
        }
        CHECK_INT(0, bad);
    }
}

int main(void)
{
    test_tanh_saturated_runs();
    test_exp_accuracy();
    test_tanh_accuracy();
    test_erf_accuracy();
    test_erf_deriv();
    test_tanh_deriv();
    test_special_values();
    test_odd_symmetry();
    test_arrays_match_inline();
    test_runs_match();
    return CHECK_DONE();
}
