/*
 * rng_numpy.h - NumPy's legacy generator (numpy.random.RandomState, the
 * one behind np.random.seed / np.random.normal), bit for bit.
 *
 * Published experiments written as `np.random.seed(1);
 * np.random.normal(0, 2, 100)` can be reproduced only with NumPy's own
 * sequence, so this is a second generator next to core/rng.h, used where a
 * caller asks for it by name (synth --rng numpy, the outlier-steps
 * experiment). Everything else draws from core/rng.h.
 *
 * What NumPy does (numpy/random/_mt19937.pyx, src/mt19937/mt19937.c,
 * src/legacy/legacy-distributions.c; checked against NumPy 1.24 in
 * tests/ref/test_rng_numpy.py):
 *   seed     RandomState(seed) / np.random.seed(seed) with an integer
 *            0 <= seed < 2^32 calls mt19937_seed: Matsumoto and Nishimura's
 *            init_genrand (key[0] = seed, key[i] = 1812433253 *
 *            (key[i-1] ^ key[i-1] >> 30) + i mod 2^32), not init_by_array
 *            (that one is for array seeds), and clears the cached normal.
 *   u32      the MT19937 tempered output.
 *   double   random_sample: a = u32 >> 5, b = u32 >> 6 (a first),
 *            (a 2^26 + b) / 2^53.
 *   gauss    legacy_gauss, Marsaglia's polar method: x1 = 2 u - 1,
 *            x2 = 2 u - 1 until 0 < r2 = x1^2 + x2^2 < 1, f = sqrt(-2 log(r2)
 *            / r2); returns f x2 and caches f x1 for the next call.
 *   normal   legacy_normal(loc, scale) = loc + scale * gauss.
 *
 * Bit-identity with NumPy needs the same rounding of log(r2): NumPy calls
 * the C library's log, and so does this file (the one libm call in the
 * project's generators: core/rng.h's nc_det_log, below 1 ulp but not
 * correctly rounded, differs from glibc's in the last bit for a few polar
 * steps in a hundred: with it, 808 of the draws normal(0, 2, 100) for
 * seeds 1..1000 differed from NumPy somewhere). So the draws are NumPy's on the machine they run
 * on; on a platform whose libm rounds log differently, NumPy and this file change together.
 */
#ifndef NC_RNG_NUMPY_H
#define NC_RNG_NUMPY_H

#include <stdbool.h>
#include <stdint.h>

#define NC_MT_N 624

/* MT19937 state plus NumPy's cached second normal. */
typedef struct nc_rng_numpy {
    uint32_t key[NC_MT_N];
    int pos;
    bool has_gauss;
    double gauss;
} nc_rng_numpy;

/* np.random.seed(seed) for an integer seed (NumPy accepts 0 .. 2^32 - 1;
 * callers check the range, see nc_rng_numpy_seed_ok). */
void nc_rng_numpy_seed(nc_rng_numpy *r, uint32_t seed);

/* True when seed is one NumPy's integer seeding accepts (< 2^32). */
bool nc_rng_numpy_seed_ok(uint64_t seed);

/* The next tempered 32-bit MT19937 output. */
uint32_t nc_rng_numpy_u32(nc_rng_numpy *r);

/* np.random.random_sample(): a double in [0, 1), multiples of 2^-53. */
double nc_rng_numpy_double(nc_rng_numpy *r);

/* np.random.standard_normal() (legacy_gauss, with the cached partner). */
double nc_rng_numpy_gauss(nc_rng_numpy *r);

/* np.random.normal(loc, scale): loc + scale * gauss. */
double nc_rng_numpy_normal(nc_rng_numpy *r, double loc, double scale);

#endif
