/*
 * rng_numpy.c - NumPy's legacy MT19937 generator and its polar-method
 * normals (rng_numpy.h).
 *
 * Reference: M. Matsumoto and T. Nishimura (1998), "Mersenne Twister: a
 * 623-dimensionally equidistributed uniform pseudo-random number
 * generator" (mt19937ar.c: init_genrand, genrand_int32), as NumPy's
 * mt19937.c implements them.
 */
#include "core/rng_numpy.h"

#include <math.h>

/* Same bits on every machine: no fused multiply-add (core/rng.h). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define MT_M 397
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu

void nc_rng_numpy_seed(nc_rng_numpy *r, uint32_t seed)
{
    uint32_t s = seed;
    for (int i = 0; i < NC_MT_N; i++) {
        r->key[i] = s;
        s = 1812433253u * (s ^ (s >> 30)) + (uint32_t)(i + 1);
    }
    r->pos = NC_MT_N;
    r->has_gauss = false;
    r->gauss = 0.0;
}

bool nc_rng_numpy_seed_ok(uint64_t seed)
{
    return seed <= UINT32_MAX;
}

/* Regenerates the 624 words (genrand_int32's refill). */
static void refill(nc_rng_numpy *r)
{
    uint32_t *k = r->key;
    int i = 0;
    for (; i < NC_MT_N - MT_M; i++) {
        uint32_t y = (k[i] & UPPER_MASK) | (k[i + 1] & LOWER_MASK);
        k[i] = k[i + MT_M] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
    }
    for (; i < NC_MT_N - 1; i++) {
        uint32_t y = (k[i] & UPPER_MASK) | (k[i + 1] & LOWER_MASK);
        k[i] = k[i + (MT_M - NC_MT_N)] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
    }
    uint32_t y = (k[NC_MT_N - 1] & UPPER_MASK) | (k[0] & LOWER_MASK);
    k[NC_MT_N - 1] = k[MT_M - 1] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
    r->pos = 0;
}

uint32_t nc_rng_numpy_u32(nc_rng_numpy *r)
{
    if (r->pos >= NC_MT_N)
        refill(r);
    uint32_t y = r->key[r->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double nc_rng_numpy_double(nc_rng_numpy *r)
{
    uint32_t a = nc_rng_numpy_u32(r) >> 5;
    uint32_t b = nc_rng_numpy_u32(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

double nc_rng_numpy_gauss(nc_rng_numpy *r)
{
    if (r->has_gauss) {
        double g = r->gauss;
        r->has_gauss = false;
        r->gauss = 0.0;
        return g;
    }
    double x1, x2, r2;
    do {
        x1 = 2.0 * nc_rng_numpy_double(r) - 1.0;
        x2 = 2.0 * nc_rng_numpy_double(r) - 1.0;
        r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    double f = sqrt(-2.0 * log(r2) / r2); /* libm's, as NumPy (rng_numpy.h) */
    r->gauss = f * x1;
    r->has_gauss = true;
    return f * x2;
}

double nc_rng_numpy_normal(nc_rng_numpy *r, double loc, double scale)
{
    return loc + scale * nc_rng_numpy_gauss(r);
}
