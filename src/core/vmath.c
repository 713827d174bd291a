/*
 * vmath.c - array versions of the vmath.h functions, for benchmarks and
 * tests: one loop each, built as AVX-512, AVX2 and baseline copies
 * (NC_VMATH_CLONES) so that a benchmark measures what the hot passes get.
 */
#include "core/vmath.h"

NC_VMATH_CLONES
void nc_vtanh(const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = nc_tanh(x[i]);
}

NC_VMATH_CLONES
void nc_verf(const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = nc_erf(x[i]);
}

NC_VMATH_CLONES
void nc_vexp(const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = nc_exp(x[i]);
}
