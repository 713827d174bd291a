/*
 * codetab.h - functions of x tabulated over the values of a 16-bit code.
 *
 * An F16 or BF16 input holds at most 65536 distinct values, however many
 * points it has: a 4096 x 4096 layer repeats each value hundreds of times
 * on average. So the passes that evaluate a fixed function of x at every
 * point (every fit's f and f' in the verify pass, tanh(alpha x) in each
 * per-channel Newton pass) evaluate it once per code that can occur and
 * look the rest up (core/par.h hands them the codes). The tables are filled
 * by the very functions the direct path calls, at the same doubles, so the
 * numbers are the same bits either way (the tests compare the two paths).
 *
 * A table has 65536 entries indexed by code; only the codes of finite
 * values with |x| <= amax (the layer's largest finite magnitude) are
 * filled: the positive codes 0 .. c and the negative 0x8000 .. 0x8000 + c,
 * with c the code of amax (both formats order their magnitudes like their
 * codes). Tokens with a non-finite value are never looked up.
 *
 * Left out: which function is tabulated (the callers).
 */
#ifndef NC_CODETAB_H
#define NC_CODETAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

/* Points a layer needs before tables pay for their filling (about 65536
 * evaluations per function; a smaller layer evaluates directly). */
#define NC_CODETAB_MIN_POINTS ((size_t)1 << 19)

/* The codes a table must cover: [lo[k], hi[k]) for k < 2, for the finite
 * values of dtype dt with |x| <= amax (finite, >= 0), and their values
 * (x[code] for every covered code; the rest are left alone). */
typedef struct nc_codetab_span {
    uint32_t lo[2], hi[2];
    double *x; /* [65536] owned */
} nc_codetab_span;

/* True when the passes over a tensor of dtype dt with `points` points use
 * tables (F16 or BF16, and at least NC_CODETAB_MIN_POINTS points). */
bool nc_codetab_wanted(nc_dtype dt, size_t points);

/* Fills span for dtype dt (F16 or BF16) and amax. Returns 0 or NC_ENOMEM
 * (span then holds nothing to free). */
int nc_codetab_span_make(nc_dtype dt, double amax, nc_codetab_span *span);

void nc_codetab_span_free(nc_codetab_span *span);

#endif
