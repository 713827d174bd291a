/*
 * rng.h - the one seeded random generator of normcmp, bit-identical on every
 * machine and compiler.
 *
 * Generator: xoshiro256** (Blackman and Vigna, https://prng.di.unimi.it/),
 * 256 bits of state, period 2^256 - 1, seeded through splitmix64. Every
 * random draw in the project comes from here (STYLE.md section 6), and the
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
 * Not here: jump functions (streams are derived by hashing instead, see
 * nc_rng_seed), and a cached second normal (the polar method's partner value
 * is discarded so that the state stays the plain xoshiro state).
 */
#ifndef NC_RNG_H
#define NC_RNG_H

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

/* A uniform double in [0, 1): the top 53 bits of nc_rng_u64 times 2^-53, so
 * every multiple of 2^-53 in range is equally likely. */
double nc_rng_uniform(nc_rng *r);

/* A standard normal N(0, 1) by Marsaglia's polar method: (u, v) uniform on
 * [-1, 1)^2 until 0 < q = u^2 + v^2 < 1, then u * sqrt(-2 log(q) / q), with
 * nc_det_log. Uses 2 u64 per attempt (1.27 attempts on average); the
 * partner value v * sqrt(...) is discarded. */
double nc_rng_normal(nc_rng *r);

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
