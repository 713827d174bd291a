/*
 * companion.h - synthetic companions of a generated layer: a seeded affine
 * weight and bias, and the "real" output the model would have produced
 * (the norm, then the affine part, rounded to float32 as a float32 model
 * stores it). They give the real-output check of synthetic layers
 * something to check, and `normcmp synth --affine` writes them.
 */
#ifndef NC_COMPANION_H
#define NC_COMPANION_H

#include <stddef.h>
#include <stdint.h>

#include "core/norm.h"

/* For x[N * d]: w[i] = 1 + 0.1 z, b[i] = 0.05 z' (z, z' seeded normals;
 * b is left untouched and not used for RMSNorm, which has no bias; b may be
 * NULL then), and y = norm(x) * w + b, NaN for tokens without an output. */
void nc_companion_affine(const float *x, size_t N, size_t d, nc_norm_kind norm, double eps,
                         uint64_t seed, float *w, float *b, float *y);

#endif
