/*
 * rng.h - the one seeded random generator of normcmp, bit-identical on every
 * machine and compiler.
 *
 * Generator: xoshiro256** (Blackman and Vigna, https://prng.di.unimi.it/),
 * 256 bits of state, period 2^256 - 1, seeded through splitmix64. Every
 * random draw in the project comes from here (docs/internals.md, rule 5), and the
 * synthetic tensors of core/synth.h must come out with the same bits on
 * every platform, so the conversions to real numbers use only operations
 * that IEEE 754 defines exactly: + - * /, sqrt, ldexp, frexp, comparisons
 * and integer arithmetic. The logarithm and exponential they need are
 * computed here (nc_det_log, nc_det_exp) instead of taken from libm, whose
 * last bits differ between versions.
 *
 * What bit-identity assumes: double is IEEE binary64 evaluated without
 * excess precision (FLT_EVAL_METHOD == 0: x86-64 SSE2, AArch64, RISC-V; not
 * 32-bit x87) and a*b+c is never contracted into a fused multiply-add. GCC
 * does not contract under -std=c11 (the Makefile's mode), and rng.c and
 * synth.c forbid it by pragma as well (clang's STDC FP_CONTRACT, GCC's
 * optimize), so -march=native with -std=gnu11, or clang's -ffp-contract=on,
 * changes nothing (checked). tests/unit/test_rng.c pins the bits with
 * golden checksums.
 *
 * nc_rng_normals fills arrays with normals by the ziggurat method, an
 * order of magnitude faster than nc_rng_normal (which stays: the synthetic
 * tensors are defined by its sequence).
 *
 * Not here: jump functions (streams are derived by hashing instead, see
 * nc_rng_seed), and a cached second normal (the polar method's partner value
 * is discarded so that the state stays the plain xoshiro state).
 */
#ifndef NC_RNG_H
#define NC_RNG_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** state. Never all zero (nc_rng_seed guarantees it). Plain
 * struct so that callers can keep one per thread on the stack; copying it
 * forks the sequence. */
typedef struct nc_rng {
    uint64_t s[4];
} nc_rng;

/* Seeds r for the stream `stream` of `seed`. The four state words are four
 * consecutive splitmix64 outputs, starting from the splitmix64 state
 * seed ^ mix(stream), where mix is splitmix64's output function (mix(0) = 0,
 * so stream 0 is the generator seeded the way the xoshiro authors
 * recommend: nc_rng_seed(r, 1234567, 0) gives s[0] = 6457827717110365317,
 * splitmix64's published first output). Distinct (seed, stream) pairs give
 * unrelated states (distinct for all practical purposes: a collision needs
 * seed1 ^ seed2 == mix(stream1) ^ mix(stream2)), so work can be split into
 * blocks, one stream per block, with a result independent of the split. */
void nc_rng_seed(nc_rng *r, uint64_t seed, uint64_t stream);

/* The next 64 random bits (the xoshiro256** output function). */
uint64_t nc_rng_u64(nc_rng *r);

/* A uniform integer in [0, n), without modulo bias (rejection of the
 * 2^64 mod n lowest values, as OpenBSD's arc4random_uniform). n must be > 0. */
uint64_t nc_rng_below(nc_rng *r, uint64_t n);

/* A uniform integer in [0, n), n > 0, without bias and almost always
 * without a division (Lemire, "Fast random integer generation in an
 * interval", 2019): the top 64 bits of the 128-bit product v n, drawing
 * again while its low 64 bits are below 2^64 mod n. A different sequence
 * from nc_rng_below's (the bootstrap's draws, analysis/boot.h). */
uint64_t nc_rng_index(nc_rng *r, uint64_t n);

/* A uniform double in [0, 1): the top 53 bits of nc_rng_u64 times 2^-53, so
 * every multiple of 2^-53 in range is equally likely. */
double nc_rng_uniform(nc_rng *r);

/* A standard normal N(0, 1) by Marsaglia's polar method: (u, v) uniform on
 * [-1, 1)^2 until 0 < q = u^2 + v^2 < 1, then u * sqrt(-2 log(q) / q), with
 * nc_det_log. Uses 2 u64 per attempt (1.27 attempts on average); the
 * partner value v * sqrt(...) is discarded. */
double nc_rng_normal(nc_rng *r);

/* Fills out[0..n) with standard normals N(0, 1) by the ziggurat method of
 * Marsaglia and Tsang (2000), "The ziggurat method for generating random
 * variables", in Doornik's form (ZIGNOR, 2005: the region index and the
 * uniform come from disjoint bits of one draw, so they are independent).
 * A different sequence from nc_rng_normal's, ~13 times faster (rng.c has
 * the measurements).
 *
 * The density f(x) = exp(-x^2/2) on x >= 0 is covered by
 * NC_RNG_ZIG_LAYERS = 256 regions of equal area v: a base strip (the
 * rectangle [0, R] x [0, f(R)] plus the tail beyond R, R =
 * 3.6541528853610088) and 255 rectangles [0, X_i] x [f(X_i), f(X_{i+1})]
 * stacked on it. Each value takes one nc_rng_u64 word w: bits 0-7 pick the
 * region i, bits 11-63 read as an integer m give u = (m - 2^52) 2^-52 in
 * [-1, 1), and x = u X_i (one rounding). When |x| < X_{i+1} (98.5% of the
 * words) x is under the curve and returned at once; otherwise the exact
 * rejection steps follow, drawing further words: in a rectangle the wedge
 * test (return x when f(X_i) + U (f(X_{i+1}) - f(X_i)) < exp(-x^2/2), U
 * uniform, else start over with a new word), in the base strip Marsaglia's
 * tail method with the sign of x (a = -log(U1) / R, b = -log(U2) until
 * 2b >= a^2, then R + a), both with nc_det_exp / nc_det_log. So the
 * distribution is the normal one up to the rounding of the tables (their
 * areas agree to 5e-14), not an approximation of it.
 *
 * The values depend only on the words drawn, in order: filling n1 values
 * and then n2 gives the same as filling n1 + n2 at once. The tables are
 * computed on first use (thread-safe, pthread_once) from R and v with
 * IEEE-exact operations and nc_det_exp / nc_det_log, so the bits are the
 * same everywhere (test_rng.c pins them). out may be NULL when n is 0. */
void nc_rng_normals(nc_rng *r, double *out, size_t n);

#define NC_RNG_ZIG_LAYERS 256

/* The ziggurat's tables, for tests: X[0..256] the region widths (X[0] =
 * v / f(R), the base strip's virtual width; X[1] = R; X[256] = 0) and
 * F[0..256] the heights where the regions start, F[i] = exp(-X_i^2 / 2)
 * for i >= 1 (F[256] = 1) and F[0] = 0: region i spans heights
 * [F[i], F[i+1]). v is the common area. Borrowed, valid for the life of the
 * program. */
void nc_rng_zig_tables(const double **X, const double **F, double *v);

/* A Gamma(shape, 1) variate (mean shape, variance shape) by Marsaglia and
 * Tsang (2000), "A simple method for generating gamma variables": with
 * dd = shape - 1/3, c = 1/sqrt(9 dd), draw z normal and v = (1 + c z)^3 until
 * v > 0 and u < 1 - 0.0331 z^4 or log u < z^2/2 + dd (1 - v + log v); return
 * dd v. For shape < 1 it returns Gamma(shape + 1) * u^(1/shape), with
 * u uniform on (0, 1] and u^(1/shape) = nc_det_exp(nc_det_log(u) / shape).
 * shape must be finite and > 0; otherwise the result is NaN. */
double nc_rng_gamma(nc_rng *r, double shape);

/* A Student-t variate with nu degrees of freedom: z / sqrt(g / nu), z a
 * normal drawn first, g = 2 * Gamma(nu / 2) a chi-square(nu) drawn second.
 * Its variance is nu / (nu - 2) for nu > 2 (infinite for nu <= 2).
 * nu = INFINITY gives exactly nc_rng_normal (one draw). nu must be > 0 (or
 * INFINITY); otherwise the result is NaN. */
double nc_rng_student_t(nc_rng *r, double nu);

/* Natural logarithm from IEEE-exact operations only: x = 2^e m with m in
 * [sqrt(1/2), sqrt(2)) (frexp), f = m - 1, s = f / (2 + f), and
 * log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), R the degree-14 minimax
 * polynomial of fdlibm's e_log.c (Sun, 1993); e log 2 added in two parts.
 * Error below 1 ulp (measured against a 50-digit reference in
 * test_rng.c). Special values as C's log: log(+-0) = -inf, log(x < 0) =
 * NaN, log(+inf) = +inf, NaN -> NaN. Subnormal x is handled. */
double nc_det_log(double x);

/* Exponential from IEEE-exact operations only: x = k log 2 + r with
 * |r| <= log(2)/2 (log 2 in two parts so r is exact to ~2^-60),
 * exp(r) = 1 + r + r c / (2 - c), c = r - r^2 P(r^2) with fdlibm's e_exp.c
 * degree-10 polynomial, then ldexp(., k) (exact, or one correct rounding
 * when the result is subnormal). Error below 1 ulp for normal results.
 * Special values as C's exp: exp(-inf) = 0, exp(+inf) = +inf, NaN -> NaN,
 * x > 709.78 -> +inf, x < -745.13 -> 0. */
double nc_det_exp(double x);

#endif
