/*
 * test_rng_numpy.c - core/rng_numpy.h: NumPy's legacy generator.
 *
 * Run without arguments: the unit checks (the MT19937 reference output,
 * NumPy's first draws for seed 1 as NumPy 1.24 prints them in hex, the
 * cached partner, reseeding). With arguments it prints draws for the NumPy
 * cross-check tests/ref/test_rng_numpy.py, one "%a" value per line:
 *
 *   test_rng_numpy u32    SEED N          N raw 32-bit outputs
 *   test_rng_numpy double SEED N          N random_sample() values
 *   test_rng_numpy normal SEED N LOC SCALE  N normal(LOC, SCALE) values
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/rng_numpy.h"

static int dump(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    nc_rng_numpy r;
    nc_rng_numpy_seed(&r, (uint32_t)strtoul(argv[2], NULL, 10));
    long n = strtol(argv[3], NULL, 10);
    double loc = argc > 4 ? strtod(argv[4], NULL) : 0.0;
    double scale = argc > 5 ? strtod(argv[5], NULL) : 1.0;
    for (long k = 0; k < n; k++) {
        if (strcmp(argv[1], "u32") == 0)
            printf("%" PRIu32 "\n", nc_rng_numpy_u32(&r));
        else if (strcmp(argv[1], "double") == 0)
            printf("%a\n", nc_rng_numpy_double(&r));
        else if (strcmp(argv[1], "normal") == 0)
            printf("%a\n", nc_rng_numpy_normal(&r, loc, scale));
        else
            return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return dump(argc, argv);
    nc_rng_numpy r;

    /* mt19937ar.c's init_genrand(5489): the first output is 3499211612,
     * and NumPy's RandomState(5489).get_state() starts 5489, 1301868182,
     * 2938499221. */
    nc_rng_numpy_seed(&r, 5489);
    CHECK_INT(5489, r.key[0]);
    CHECK_INT(1301868182u, r.key[1]);
    CHECK_INT(2938499221u, r.key[2]);
    CHECK_INT(3499211612u, nc_rng_numpy_u32(&r));

    /* np.random.seed(1); np.random.normal(0, 2, 3) and random_sample(2) */
    nc_rng_numpy_seed(&r, 1);
    CHECK(nc_rng_numpy_normal(&r, 0, 2) == 0x1.9fd5190657c50p+1);
    CHECK(nc_rng_numpy_normal(&r, 0, 2) == -0x1.393822fb7d9adp+0);
    CHECK(nc_rng_numpy_normal(&r, 0, 2) == -0x1.0e6c872548fd2p+0);
    nc_rng_numpy_seed(&r, 1);
    CHECK(nc_rng_numpy_double(&r) == 0x1.ab07d0ffa3c06p-2);
    CHECK(nc_rng_numpy_double(&r) == 0x1.70ce5f3baf051p-1);

    /* the partner is cached: the second gauss draws no words, and seeding
     * forgets it */
    nc_rng_numpy_seed(&r, 7);
    (void)nc_rng_numpy_gauss(&r);
    CHECK(r.has_gauss);
    int pos = r.pos;
    (void)nc_rng_numpy_gauss(&r);
    CHECK_INT(pos, r.pos);
    CHECK(!r.has_gauss);
    (void)nc_rng_numpy_gauss(&r);
    nc_rng_numpy_seed(&r, 7);
    CHECK(!r.has_gauss);

    CHECK(nc_rng_numpy_seed_ok(4294967295u));
    CHECK(!nc_rng_numpy_seed_ok(4294967296u));
    return CHECK_DONE();
}
