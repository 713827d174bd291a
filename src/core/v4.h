/*
 * v4.h - four doubles as one value (GCC and clang's vector extension), for
 * the hot sweeps whose lane loops GCC does not compile well.
 *
 * GCC 12 compiles a loop that keeps NC_LANES partial sums in an array
 * (core/sum.h) as a two-trip inner loop with the sums on the stack, a
 * store-to-load chain through every step; with an unroll pragma it
 * transposes the data instead (3 to 5 times the instructions either way).
 * Written with explicit vectors, the sums stay in registers. Lanes 0-3 are
 * one vector and 4-7 another, element i goes to lane i mod NC_LANES and the
 * lanes are added as nc_lanes_total does: the same bits as the scalar
 * form. The baseline clone does each vector operation as two SSE2 ones,
 * the AVX2 and AVX-512 clones as one (core/vmath.h, NC_VMATH_CLONES).
 *
 * No function may take or return a v4d: that would change the ABI between
 * the clones. Use them inside NC_VM_INLINE helpers and clone bodies only.
 */
#ifndef NC_V4_H
#define NC_V4_H

#include <stdint.h>

typedef double v4d __attribute__((vector_size(4 * sizeof(double))));
typedef int64_t v4i __attribute__((vector_size(4 * sizeof(int64_t)))); /* masks */
/* V4(p) reads or writes four consecutive doubles at p as one (aligned to a
 * double only, and allowed to alias them). */
typedef double v4d_mem __attribute__((vector_size(4 * sizeof(double)), aligned(sizeof(double)),
                                      may_alias));
#define V4(p) (*(v4d_mem *)(p))
typedef float v4f_mem __attribute__((vector_size(4 * sizeof(float)), aligned(sizeof(float)),
                                     may_alias));
#define V4F(p) (*(const v4f_mem *)(p)) /* four floats, read only */

#endif
