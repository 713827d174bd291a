/*
 * vmath.h - double-precision exp, tanh and erf written so that GCC
 * vectorizes loops that call them (DyT's tanh(alpha * x), Derf's
 * erf(alpha * x + s)), and the derivatives the fitter needs.
 *
 * libm's exp/tanh/erf are scalar calls: a loop calling them cannot be
 * vectorized. The functions here are always-inlined straight-line code:
 * every piece a lane might need is computed, and results are picked with
 * bit-mask selects (nc_vm_sel; why not ?: is explained there). No early
 * returns, no table lookups, no conversions between double and integer
 * types (2^k is built from the bits of k + 1.5 * 2^52). A loop of the form
 *     for (size_t i = 0; i < n; i++) y[i] = f(nc_tanh(alpha * x[i]));
 * vectorizes with the x86-64 baseline (SSE2, 2 lanes) and, in a function
 * marked NC_VMATH_CLONES, with AVX2 (4 lanes) and AVX-512 (8 lanes); x may
 * be float. It does NOT
 * vectorize if the same loop also adds into a double accumulator (GCC would
 * have to keep the additions in order): write a block of values to a small
 * array and sum that, or keep one accumulator per lane.
 *
 * Every operation is IEEE double with round-to-nearest. GCC with -std=c11
 * does not contract a*b+c into FMA, so a vectorized loop gives bit-for-bit
 * the scalar code's results on every x86-64 target (the tests check this).
 * (clang contracts within expressions when FMA is enabled, e.g. with
 * -march=native: results then differ in the last bit, accuracy the same.)
 *
 * Methods (max errors measured by tests/unit/test_vmath.c against glibc's
 * long double expl/tanhl/erfl over millions of points, see there):
 *
 *   exp:  Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, with ln2 split
 *         into a 32-bit head (k * head exact) and a tail; e^r = 1 + r +
 *         r^2 Q(r) with Q a degree-9 Chebyshev fit (our own, mpmath; error
 *         of the fit 1.6e-17 relative); 2^k applied as two factors so that
 *         overflow gives +inf and results below 2^-1022 are gradual
 *         (subnormals are produced, not flushed). Max error 1.06 ulp.
 *   tanh: |x| < 0.625: x + x^3 P(x^2)/Q(x^2), the Cody & Waite form with the
 *         coefficients of Cephes tanh.c (fit error 5e-18 relative); else
 *         1 - 2/(e^{2|x|} + 1). Both branches share one division; |x| > 20
 *         gives +-1 (tanh rounds to 1 from 19.06 on). Max error 1.34 ulp,
 *         2.7e-16 relative.
 *   erf:  the regions and rational approximations of fdlibm s_erf.c (Sun
 *         Microsystems, 1993; published coefficients): |x| < 0.84375,
 *         < 1.25, < 1/0.35, <= 6, > 6 (erf rounds to 1). The tail erfc(x) =
 *         exp(-x^2 - 0.5625 + R/S)/x is evaluated with R and S rewritten as
 *         polynomials in x^2 (the same rational function, no 1/x^2
 *         division) and x^2 split into an exact head and a small tail as in
 *         fdlibm, in one exp. All regions share one reciprocal. Max error
 *         1.05 ulp: 1.0e-16 absolute, 1.7e-16 relative.
 *
 * Special values: exp(-inf) = 0, exp(+inf) = +inf, tanh(+-inf) = +-1,
 * erf(+-inf) = +-1, tanh(-0) = erf(-0) = -0, NaN in gives NaN out. No
 * function raises an error or sets errno; floating-point exception flags
 * are meaningless (lanes out of a formula's range overflow or divide by
 * zero before they are replaced).
 */
#ifndef NC_VMATH_H
#define NC_VMATH_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* NC_VMATH_CLONES: put in front of a hot loop's function so that GCC builds
 * an AVX-512 copy (x86-64-v4: AVX-512F/BW/DQ/VL), an AVX2 copy and a
 * baseline copy and picks one at load time (ifunc), so the default build
 * uses the machine's widest vectors without -march=native. The copies give
 * the same bits (no FMA contraction under -std=c11; the tests compare the
 * picked copy with the scalar code). On this project's AMD EPYC, tanh over
 * an array: 5.45 ns per value baseline, 2.53 AVX2, 1.47 AVX-512; erf 6.82
 * AVX2, 4.22 AVX-512 (a microbenchmark of these functions, 2026-11-25).
 * Empty where
 * clones are not available (clang, non-x86, non-glibc); -DNC_VMATH_CLONES=
 * turns it off (benchmarks of the baseline). */
#ifndef NC_VMATH_CLONES
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NC_VMATH_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define NC_VMATH_CLONES
#endif
#endif

/* NC_VM_INLINE: every function here must be inlined into the caller's loop
 * (a call stops vectorization), however big the caller is. */
#if defined(__GNUC__)
#define NC_VM_INLINE static inline __attribute__((always_inline))
#else
#define NC_VM_INLINE static inline
#endif

/* ---- internal helpers (not part of the interface) ---------------------- */

/* Why bit masks and not ?: : GCC gimplifies c ? a : b into a branch, and
 * its optimizers (PRE, jump threading, sinking) then move arithmetic into
 * the branches. With the default -ftrapping-math, if-conversion may not
 * execute floating-point arithmetic speculatively, so such a loop is not
 * vectorized (checked with GCC 12: none of the three loops in vmath.c
 * vectorized that way). A mask built from the borrow of a 64-bit
 * subtraction and applied with and/or is straight-line code that
 * vectorizes with SSE2 (which has no 64-bit compare) and with AVX2. */

/* ln 2 = NC_VM_LN2HI + NC_VM_LN2LO; the head has 32 significant bits, so
 * k * NC_VM_LN2HI is exact for |k| < 2^21 (fdlibm's split). */
#define NC_VM_LN2HI 0x1.62e42feep-1
#define NC_VM_LN2LO 0x1.a39ef35793c76p-33
#define NC_VM_LOG2E 0x1.71547652b82fep+0
/* 1.5 * 2^52: adding it to |v| < 2^51 rounds v to an integer held in the
 * low mantissa bits. */
#define NC_VM_SHIFT 0x1.8p52

NC_VM_INLINE double nc_vm_bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

NC_VM_INLINE uint64_t nc_vm_double_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* All ones if a < b, else zero, for a and b whose sign bits are clear:
 * +0, positive numbers, +inf and NaNs with a clear sign bit (fabs of
 * anything). Such doubles are ordered like their bit patterns, with the NaNs
 * above +inf, and both patterns are below 2^63, so the borrow of their
 * 64-bit difference decides. (Integer arithmetic: its NaN ordering is
 * defined, unlike the sign of a NaN difference, and it keeps the masks off
 * the floating-point adders.) */
NC_VM_INLINE uint64_t nc_vm_lt(double a, double b)
{
    return (uint64_t)0 - ((nc_vm_double_to_bits(a) - nc_vm_double_to_bits(b)) >> 63);
}

/* All ones if a (sign bit clear, as for nc_vm_lt) is not a NaN, else zero:
 * a is below the smallest positive NaN pattern. */
NC_VM_INLINE uint64_t nc_vm_not_nan(double a)
{
    return (uint64_t)0 - ((nc_vm_double_to_bits(a) - 0x7ff0000000000001u) >> 63);
}

/* v with the sign bit of x, for v whose sign bit is clear: copysign in two
 * operations instead of three. */
NC_VM_INLINE double nc_vm_signed_like(double v, double x)
{
    uint64_t sign = nc_vm_double_to_bits(x) & 0x8000000000000000u;
    return nc_vm_bits_to_double(nc_vm_double_to_bits(v) | sign);
}

/* mask ? a : b, lane by lane; a and b are both computed. */
NC_VM_INLINE double nc_vm_sel(uint64_t mask, double a, double b)
{
    uint64_t ua = nc_vm_double_to_bits(a), ub = nc_vm_double_to_bits(b);
    return nc_vm_bits_to_double((ua & mask) | (ub & ~mask));
}

/* v rounded to the nearest integer (ties to even), for |v| < 2^51. */
NC_VM_INLINE double nc_vm_rint(double v)
{
    return (v + NC_VM_SHIFT) - NC_VM_SHIFT;
}

/* 2^k for an integral k in [-1022, 1023]: the biased exponent k + 1023
 * sits in the low bits of k + 1023 + 1.5 * 2^52; shifting it to bit 52
 * drops everything above. (Any other k gives some finite power of two,
 * zero or inf, never undefined behaviour.) */
NC_VM_INLINE double nc_vm_pow2i(double k)
{
    uint64_t u = nc_vm_double_to_bits(k + (NC_VM_SHIFT + 1023.0));
    return nc_vm_bits_to_double(u << 52);
}

/* v with the low 32 bits of its significand cleared: 21 significant bits,
 * so that v_head * v_head is exact. */
NC_VM_INLINE double nc_vm_head21(double v)
{
    return nc_vm_bits_to_double(nc_vm_double_to_bits(v) & 0xffffffff00000000u);
}

/* e^r for |r| <= ln2/2 (+ a little): 1 + (r + r^2 Q(r)), Q a degree-9
 * Chebyshev fit of (e^r - 1 - r)/r^2 on [-0.3466, 0.3466] (our own, mpmath
 * at 50 digits; max relative error of the rounded polynomial 1.6e-17).
 * Q is evaluated in Estrin's scheme (pairs, then powers r^2, r^4): as many
 * operations as Horner's rule but a third of its latency, which is what
 * limits a vectorized loop around it. */
NC_VM_INLINE double nc_vm_exp_poly(double r)
{
    double r2 = r * r, r4 = r2 * r2;
    double p0 = 0.5000000000000001 + 0.16666666666666669 * r;        /* c2, c3 */
    double p1 = 0.04166666666662413 + 0.008333333333330062 * r;      /* c4, c5 */
    double p2 = 0.0013888888917213717 + 0.00019841269863053618 * r;  /* c6, c7 */
    double p3 = 2.4801521295954376e-05 + 2.7557268459997064e-06 * r; /* c8, c9 */
    double p4 = 2.7620088445409746e-07 + 2.510038549551032e-08 * r;  /* c10, c11 */
    double q = (p0 + r2 * p1) + r4 * ((p2 + r2 * p3) + r4 * p4);
    return 1.0 + (r + r2 * q);
}

/* e^(hi + lo) for hi + lo in [-708, 709] and |lo| < 1, where hi may carry
 * more bits than the rounded sum: r = (hi - k ln2_hi) + (lo - k ln2_lo),
 * whose first difference is exact (Sterbenz). */
NC_VM_INLINE double nc_vm_exp_hilo(double hi, double lo)
{
    double k = nc_vm_rint((hi + lo) * NC_VM_LOG2E);
    double r = (hi - k * NC_VM_LN2HI) + (lo - k * NC_VM_LN2LO);
    return nc_vm_exp_poly(r) * nc_vm_pow2i(k);
}

/* e^(hi + lo) for hi in [-1400, 710] and |lo| < 1: 2^k is applied as
 * 2^k1 * 2^k2 with k1 ~ k/2, so that e^r * 2^k1 is exact and the one
 * rounding happens at the end (overflow to +inf, gradual underflow). */
NC_VM_INLINE double nc_vm_exp_wide(double hi, double lo)
{
    double k = nc_vm_rint((hi + lo) * NC_VM_LOG2E);
    double r = (hi - k * NC_VM_LN2HI) + (lo - k * NC_VM_LN2LO);
    double k1 = nc_vm_rint(0.5 * k);
    return (nc_vm_exp_poly(r) * nc_vm_pow2i(k1)) * nc_vm_pow2i(k - k1);
}

/* ---- the interface ------------------------------------------------------ */

/* Each function computes its main formula on the unclamped argument: a NaN
 * stays NaN through it (every floating-point operation on a NaN gives a
 * NaN; the integer steps only build a scale factor, which the NaN then
 * multiplies, or a mask that keeps NaN lanes out of the replacement), and
 * lanes beyond the formula's range get garbage (huge, inf or NaN, never
 * undefined behaviour) that one select at the end replaces, its mask and
 * value computed off the critical path. */

/* e^x for any double x. Measured error <= 1.06 ulp; results below 2^-1022
 * are rounded once to the subnormal grid (gradual underflow, not flushed);
 * x > 709.78 gives +inf, x < -745.14 gives +0, NaN gives NaN. */
NC_VM_INLINE double nc_exp(double x)
{
    double k = nc_vm_rint(x * NC_VM_LOG2E); /* |k| <= 1083 for |x| <= 750 */
    double r = (x - k * NC_VM_LN2HI) - k * NC_VM_LN2LO;
    double k1 = nc_vm_rint(0.5 * k);
    double v = (nc_vm_exp_poly(r) * nc_vm_pow2i(k1)) * nc_vm_pow2i(k - k1);

    /* |x| > 750 but not NaN: +inf or 0 (x in (709.78, 750] overflows and
     * x in [-750, -745.14) underflows on their own; a NaN is NaN already) */
    double a = fabs(x);
    uint64_t is_big = nc_vm_lt(750.0, a) & nc_vm_not_nan(a);
    uint64_t is_neg = (uint64_t)0 - (nc_vm_double_to_bits(x) >> 63);
    return nc_vm_sel(is_big, nc_vm_sel(is_neg, 0.0, INFINITY), v);
}

/* Cephes tanh.c: tanh(a) = a + a^3 P(a^2)/Q(a^2) on [0, 0.625] */
#define NC_VM_TANH_P0 -9.64399179425052238628e-1
#define NC_VM_TANH_P1 -9.92877231001918586564e1
#define NC_VM_TANH_P2 -1.61468768441708447952e3
#define NC_VM_TANH_Q1 1.12811678491632931402e2
#define NC_VM_TANH_Q2 2.23548839060100448583e3
#define NC_VM_TANH_Q3 4.84406305325125486048e3

/* tanh(x) for any double x, relative error <= ~4e-16 (measured 2.7e-16).
 * tanh(x) = x exactly where that is the correctly rounded value (|x| below
 * about 1e-8, subnormals included); |x| >= 19.1 gives +-1; NaN gives NaN. */
NC_VM_INLINE double nc_tanh(double x)
{
    double a = fabs(x);
    uint64_t is_small = nc_vm_lt(a, 0.625);

    /* large: 1 - 2 / (e^{2a} + 1), for a <= 20 (e^{2a} <= e^40) */
    double y = 2.0 * a;
    double k = nc_vm_rint(y * NC_VM_LOG2E);
    double e = nc_vm_exp_poly((y - k * NC_VM_LN2HI) - k * NC_VM_LN2LO) * nc_vm_pow2i(k);
    /* small */
    double z = a * a;
    double p = (NC_VM_TANH_P0 * z + NC_VM_TANH_P1) * z + NC_VM_TANH_P2;
    double q = ((z + NC_VM_TANH_Q1) * z + NC_VM_TANH_Q2) * z + NC_VM_TANH_Q3;

    /* one division for both: t = a + a^3 P/Q or t = 1 + (-2)/(e + 1) */
    double f = nc_vm_sel(is_small, (a * z) * p, -2.0) / nc_vm_sel(is_small, q, e + 1.0);
    double t = nc_vm_sel(is_small, a, 1.0) + f;

    /* a > 20 but not NaN: 1 (1 - tanh(20) < 2^-56; a NaN is NaN already) */
    uint64_t is_big = nc_vm_lt(20.0, a) & nc_vm_not_nan(a);
    return nc_vm_signed_like(nc_vm_sel(is_big, 1.0, t), x);
}

/* nc_tanh(x) for |x| < 0.625 only: its small branch alone, the same
 * operations, so the same bits there, at about a third of the cost (no
 * exponential). Other x get garbage: callers check (nc_tanh_run). */
NC_VM_INLINE double nc_tanh_small(double x)
{
    double a = fabs(x);
    double z = a * a;
    double p = (NC_VM_TANH_P0 * z + NC_VM_TANH_P1) * z + NC_VM_TANH_P2;
    double q = ((z + NC_VM_TANH_Q1) * z + NC_VM_TANH_Q2) * z + NC_VM_TANH_Q3;
    return nc_vm_signed_like(a + ((a * z) * p) / q, x);
}

/* 1 - t^2: the derivative of tanh at x, from t = tanh(x). */
NC_VM_INLINE double nc_tanh_deriv_from(double t)
{
    return 1.0 - t * t;
}

/* erf's region 1 (|x| < 0.84375, fdlibm s_erf.c): erf = a + a R1(z)/S1(z)
 * with z = a^2, R1 = pp0 + .. + pp4 z^4 (Horner: off the critical path)
 * and S1 = 1 + qq1 z + .. + qq5 z^5 (Estrin: it feeds the division). */
NC_VM_INLINE double nc_vm_erf_r1(double z)
{
    double r1 = -2.37630166566501626084e-05;
    r1 = r1 * z - 5.77027029648944159157e-03;
    r1 = r1 * z - 2.84817495755985104766e-02;
    r1 = r1 * z - 3.25042107247001499370e-01;
    return r1 * z + 1.28379167095512558561e-01;
}

NC_VM_INLINE double nc_vm_erf_s1(double z)
{
    double z2 = z * z, z4 = z2 * z2;
    return (1.0 + 3.97917223959155352819e-01 * z) +
           z2 * (6.50222499887672944485e-02 + 5.08130628187576562776e-03 * z) +
           z4 * (1.32494738004321644526e-04 - 3.96022827877536812320e-06 * z);
}

/* erf(x) for any double x: absolute error <= ~2e-16 and relative error
 * <= ~1e-15 (measured 1.03e-16 and 1.7e-16; tiny |x| gives 2x/sqrt(pi) to
 * about an ulp); erf(+-inf) = +-1, NaN gives NaN. Polynomials that feed the
 * shared reciprocal are evaluated in Estrin's scheme (see nc_vm_exp_poly),
 * the others by Horner's rule, which is a little more accurate. */
NC_VM_INLINE double nc_erf(double x)
{
    double a = fabs(x);
    uint64_t in_r1 = nc_vm_lt(a, 0.84375);
    uint64_t in_r2 = nc_vm_lt(a, 1.25);

    /* Region 1, |x| < 0.84375: erf = a + a R1(z)/S1(z), z = a^2
     * (nc_vm_erf_r1, nc_vm_erf_s1). */
    double z = a * a, z2 = z * z, z4 = z2 * z2;
    double r1 = nc_vm_erf_r1(z), s1 = nc_vm_erf_s1(z);

    /* Region 2, 0.84375 <= |x| < 1.25: erf = erx + P2(s)/Q2(s), s = a - 1,
     * erx = 0.84506291151 rounded to float; P2 = pa0 + .. + pa6 s^6,
     * Q2 = 1 + qa1 s + .. + qa6 s^6. */
    const double erx = 8.45062911510467529297e-01;
    double s = a - 1.0, s2 = s * s, s4 = s2 * s2;
    double p2 = -2.16637559486879084300e-03; /* Horner: off the critical path */
    p2 = p2 * s + 3.54783043256182359371e-02;
    p2 = p2 * s - 1.10894694282396677476e-01;
    p2 = p2 * s + 3.18346619901161753674e-01;
    p2 = p2 * s - 3.72207876035701323847e-01;
    p2 = p2 * s + 4.14856118683748331666e-01;
    p2 = p2 * s - 2.36211856075265944077e-03;
    double q2 = (1.0 + 1.06420880400844228286e-01 * s) +
                s2 * (5.40397917702171048937e-01 + 7.18286544141962662868e-02 * s) +
                s4 * ((1.26171219808761642112e-01 + 1.36370839120290507362e-02 * s) +
                      s2 * 1.19844998467991074170e-02);

    /* Regions 3 and 4, 1.25 <= |x| <= 6: erfc = exp(-a^2 - 0.5625 +
     * R(1/a^2)/S(1/a^2)) / a, with fdlibm's (ra, sa) below 1/0.35 and (rb,
     * sb) above. R(1/y)/S(1/y) is evaluated as (y^8 R(1/y)) / (y^8 S(1/y)),
     * polynomials in y = a^2 whose terms (but the last of S) all have one
     * sign, so nothing cancels and no 1/a^2 is needed:
     *   y^8 Ra(1/y) = y (ra7 + ra6 y + .. + ra0 y^7)
     *   y^8 Sa(1/y) = sa8 + sa7 y + .. + sa1 y^7 + y^8
     *   y^8 Rb(1/y) = y^2 (rb6 + rb5 y + .. + rb0 y^6)
     *   y^8 Sb(1/y) = y (sb7 + sb6 y + .. + sb1 y^6 + y^7)
     * Both pairs are evaluated and the results picked per lane (cheaper
     * than picking 16 coefficients with masks). */
    double y = z, y2 = z2, y4 = z4;
    double rta = y * (((-9.81432934416914548592e+00 - 8.12874355063065934246e+01 * y) +
                       y2 * (-1.84605092906711035994e+02 - 1.62396669462573470355e+02 * y)) +
                      y4 * ((-6.23753324503260060396e+01 - 1.05586262253232909814e+01 * y) +
                            y2 * (-6.93858572707181764372e-01 - 9.86494403484714822705e-03 * y)));
    double sta = ((-6.04244152148580987438e-02 + 6.57024977031928170135e+00 * y) +
                  y2 * (1.08635005541779435134e+02 + 4.29008140027567833386e+02 * y)) +
                 y4 * (((6.45387271733267880336e+02 + 4.34565877475229228821e+02 * y) +
                        y2 * (1.37657754143519042600e+02 + 1.96512716674392571292e+01 * y)) +
                       y4);
    double rtb = y2 * ((-4.83519191608651397019e+02 - 1.02509513161107724954e+03 * y) +
                       y2 * (-6.37566443368389627722e+02 - 1.60636384855821916062e+02 * y) +
                       y4 * ((-1.77579549177547519889e+01 - 7.99283237680523006574e-01 * y) +
                             y2 * -9.86494292470009928597e-03));
    double stb = y * (((-2.24409524465858183362e+01 + 4.74528541206955367215e+02 * y) +
                       y2 * (2.55305040643316442583e+03 + 3.19985821950859553908e+03 * y)) +
                      y4 * ((1.53672958608443695994e+03 + 3.25792512996573918826e+02 * y) +
                            y2 * (3.03380607434824582924e+01 + y)));
    uint64_t is_a = nc_vm_lt(a, 0x1.6db6ep+1); /* fdlibm's 1/0.35 boundary, 2.857143 */
    double rt = nc_vm_sel(is_a, rta, rtb), st = nc_vm_sel(is_a, sta, stb);

    /* One reciprocal for all regions: in the tail w = 1/(S a), so that
     * R/S = R a w and 1/a = S w. */
    double w = 1.0 / nc_vm_sel(in_r1, s1, nc_vm_sel(in_r2, q2, st * a));

    /* -a^2 = -h^2 + (h - a)(h + a) with h^2 exact (fdlibm's Note1) */
    double h = nc_vm_head21(a);
    double ex = nc_vm_exp_hilo(-h * h - 0.5625, (h - a) * (h + a) + (rt * a) * w);
    double erfc = ex * (st * w);
    double v = nc_vm_sel(in_r1, a + a * (r1 * w), nc_vm_sel(in_r2, erx + p2 * w, 1.0 - erfc));

    /* a > 6 but not NaN: 1 (erfc(6) < 2^-55; a NaN is NaN already) */
    uint64_t is_big = nc_vm_lt(6.0, a) & nc_vm_not_nan(a);
    return nc_vm_signed_like(nc_vm_sel(is_big, 1.0, v), x);
}

/* nc_erf(x) for |x| < 0.84375 only: its region 1 alone, the same
 * operations, so the same bits there (the reciprocal w = 1/S1 is the one
 * nc_erf shares between its regions), at about a fifth of the cost. Other
 * x get garbage: callers check (nc_erf_run). */
NC_VM_INLINE double nc_erf_small(double x)
{
    double a = fabs(x), z = a * a;
    double w = 1.0 / nc_vm_erf_s1(z);
    return nc_vm_signed_like(a + a * (nc_vm_erf_r1(z) * w), x);
}

/* Runs: the array helpers below take their values NC_VM_RUN at a time; a
 * run whose arguments are all inside a function's first region (|z| <
 * 0.625 for tanh, < 0.84375 for erf: most of a layer, where DyT's alpha x
 * is small but for a few outlier channels) takes the cheap branch alone,
 * any other run the full function; a tanh run whose arguments are all
 * beyond 20 (the large alphas of a fit's scan, over sorted bins) is +-1
 * alone. The same bits either way. A NaN or an infinity sends its run
 * down the full path. */
#define NC_VM_RUN 64

/* t[k] = nc_tanh(alpha * x[k]) for k < n (t may not overlap x). */
NC_VM_INLINE void nc_tanh_run(double alpha, const double *x, size_t n, double *t)
{
    for (size_t k0 = 0; k0 < n; k0 += NC_VM_RUN) {
        const size_t m = n - k0 < NC_VM_RUN ? n - k0 : NC_VM_RUN;
        const double *xs = x + k0;
        double *ts = t + k0;
        uint64_t out = 0, unsat = 0;
        for (size_t k = 0; k < m; k++) {
            double a = fabs(alpha * xs[k]);
            out |= ~nc_vm_lt(a, 0.625);
            unsat |= ~(nc_vm_lt(20.0, a) & nc_vm_not_nan(a)); /* nc_tanh's is_big */
        }
        if (!out)
            for (size_t k = 0; k < m; k++)
                ts[k] = nc_tanh_small(alpha * xs[k]);
        else if (!unsat)
            for (size_t k = 0; k < m; k++)
                ts[k] = nc_vm_signed_like(1.0, alpha * xs[k]);
        else
            for (size_t k = 0; k < m; k++)
                ts[k] = nc_tanh(alpha * xs[k]);
    }
}

/* t[k] = nc_erf(alpha * x[k] + shift) for k < n (t may not overlap x). */
NC_VM_INLINE void nc_erf_run(double alpha, double shift, const double *x, size_t n, double *t)
{
    for (size_t k0 = 0; k0 < n; k0 += NC_VM_RUN) {
        const size_t m = n - k0 < NC_VM_RUN ? n - k0 : NC_VM_RUN;
        const double *xs = x + k0;
        double *ts = t + k0;
        uint64_t out = 0;
        for (size_t k = 0; k < m; k++)
            out |= ~nc_vm_lt(fabs(alpha * xs[k] + shift), 0.84375);
        if (out)
            for (size_t k = 0; k < m; k++)
                ts[k] = nc_erf(alpha * xs[k] + shift);
        else
            for (size_t k = 0; k < m; k++)
                ts[k] = nc_erf_small(alpha * xs[k] + shift);
    }
}

/* 2/sqrt(pi) exp(-x^2): the derivative of erf at x. x^2 is split into an
 * exact head and a small tail as in nc_erf, so the relative error stays at
 * a few ulp even where x^2 is large (a plain exp(-x*x) is off by up to
 * x^2 * 2^-53 relative); underflows gradually to 0 for |x| > 26.6. */
NC_VM_INLINE double nc_erf_deriv(double x)
{
    double a = fabs(x);
    double h = nc_vm_head21(a);
    double v = 0x1.20dd750429b6dp+0 * nc_vm_exp_wide(-h * h, (h - a) * (h + a));

    /* a > 37 but not NaN: 0 (e^-1369 underflows; a NaN is NaN already) */
    uint64_t is_big = nc_vm_lt(37.0, a) & nc_vm_not_nan(a);
    return nc_vm_sel(is_big, 0.0, v);
}

/* ---- array versions (benchmarks, tests) ---------------------------------- */

/* y[i] = nc_tanh(x[i]) for i < n. x and y have n elements each and may be
 * the same array; otherwise they must not overlap. Results are identical to
 * the inline function's. Built for AVX-512, AVX2 and the baseline
 * (NC_VMATH_CLONES). */
void nc_vtanh(const double *x, double *y, size_t n);

/* y[i] = nc_erf(x[i]); as nc_vtanh. */
void nc_verf(const double *x, double *y, size_t n);

/* y[i] = nc_exp(x[i]); as nc_vtanh. */
void nc_vexp(const double *x, double *y, size_t n);

#endif
