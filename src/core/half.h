/*
 * half.h - IEEE binary16 (F16) and bfloat16 (BF16) conversion.
 *
 * Widening is exact (every half value is a float and a double). Narrowing
 * rounds to nearest, ties to even, keeps NaN a NaN and overflows to
 * infinity, as NumPy's astype(float16) and PyTorch's to(bfloat16) do.
 * Sources and destinations are byte pointers of little-endian data, any
 * alignment.
 */
#ifndef NC_HALF_H
#define NC_HALF_H

#include <stddef.h>
#include <stdint.h>

float nc_f16_to_f32(uint16_t h);
float nc_bf16_to_f32(uint16_t h);
uint16_t nc_f32_to_f16(float f);
uint16_t nc_f32_to_bf16(float f);

/* n little-endian halves at src (any alignment) -> n doubles at out. */
void nc_f16_to_f64(const unsigned char *src, size_t n, double *out);
void nc_bf16_to_f64(const unsigned char *src, size_t n, double *out);

#endif
