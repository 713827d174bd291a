/*
 * companion.c - seeded affine companions of a synthetic layer (companion.h).
 */
#include "core/companion.h"

#include <math.h>
#include <stdlib.h>

#include "core/rng.h"

/* The stream of the seed that draws weights and biases (apart from the
 * streams the generator itself uses). */
#define AFFINE_STREAM UINT64_C(0xaff1e)

void nc_companion_affine(const float *x, size_t N, size_t d, nc_norm_kind norm, double eps,
                         uint64_t seed, float *w, float *b, float *y)
{
    nc_rng rng;
    nc_rng_seed(&rng, seed, AFFINE_STREAM);
    for (size_t i = 0; i < d; i++) {
        w[i] = (float)(1.0 + 0.1 * nc_rng_normal(&rng));
        double bi = 0.05 * nc_rng_normal(&rng);
        if (b)
            b[i] = (float)bi;
    }
    double *row = malloc((d ? d : 1) * sizeof *row);
    for (size_t t = 0; t < N; t++) {
        if (!row) { /* no scratch: still define the output, one value at a time */
            for (size_t i = 0; i < d; i++)
                y[t * d + i] = NAN;
            continue;
        }
        for (size_t i = 0; i < d; i++)
            row[i] = x[t * d + i];
        nc_token_stat st = nc_norm_token(norm, eps, row, d);
        for (size_t i = 0; i < d; i++) {
            double v = st.status == NC_TOKEN_OK ? (row[i] - st.centre) / st.scale : NAN;
            double bias = norm == NC_LAYERNORM && b ? b[i] : 0.0;
            y[t * d + i] = (float)(v * w[i] + bias);
        }
    }
    free(row);
}
