/*
 * half.c - F16 and BF16 conversion (half.h), by bit manipulation so that the
 * result does not depend on the compiler's or CPU's half support.
 *
 * binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; subnormals are
 * m * 2^-24. bfloat16 is the top half of a binary32.
 */
#include "core/half.h"

#include <string.h>

#include "core/vmath.h"

static float bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

float nc_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN: keep the payload's top bits */
        return bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: value = man * 2^-24, exact in float */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

float nc_bf16_to_f32(uint16_t h)
{
    return bits_to_f32((uint32_t)h << 16);
}

uint16_t nc_f32_to_f16(float f)
{
    uint32_t u = f32_to_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xffu;
    uint32_t man = u & 0x7fffffu;
    if (exp == 0xff) /* inf stays inf; NaN stays a (quiet) NaN */
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
    int e = (int)exp - 127 + 15;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        /* subnormal half (or zero): shift the full significand, round RNE */
        if (e < -10)
            return sign;
        uint32_t m = man | 0x800000u;
        int shift = 14 - e; /* 24-bit significand -> (10 + e)-bit result */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13);
    uint32_t rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
        r++; /* may carry into the exponent, up to infinity: both correct */
    return (uint16_t)(sign | r);
}

uint16_t nc_f32_to_bf16(float f)
{
    uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it quiet and a NaN */
        return (uint16_t)((u >> 16) | 0x40u);
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return (uint16_t)(u >> 16);
}

/* The array conversions below are straight-line code that vectorises (in
 * the AVX-512, AVX2 and baseline clones, NC_VMATH_CLONES), with the same
 * results as nc_f16_to_f32 / nc_bf16_to_f32 widened to double: every pass
 * over a half tensor converts each block of rows with them. */

/* binary16 h -> double: the 15 magnitude bits shifted into a double's
 * exponent and mantissa fields give 2^-1008 times the value, for normal
 * and subnormal halves alike (a subnormal m * 2^-24 lands on the double's
 * subnormal m * 2^-1032); one exact multiplication by 2^1008 fixes the
 * scale. Exponent 31 (inf, NaN) is built directly, a NaN quiet as
 * float-to-double conversion makes it. The sign goes in last. */
NC_VM_INLINE double f16_to_f64(uint16_t h)
{
    uint64_t a = h & 0x7fffu, sign = (uint64_t)(h & 0x8000u) << 48;
    uint64_t fin = nc_vm_double_to_bits(nc_vm_bits_to_double(a << 42) * 0x1p1008);
    uint64_t is_special = (uint64_t)0 - ((0x7bffu - a) >> 63); /* a >= 0x7c00 */
    uint64_t is_nan = (uint64_t)0 - ((0x7c00u - a) >> 63);     /* a > 0x7c00 */
    uint64_t special = 0x7ff0000000000000u | ((a & 0x3ffu) << 42) | (is_nan & (1ull << 51));
    return nc_vm_bits_to_double(((special & is_special) | (fin & ~is_special)) | sign);
}

NC_VMATH_CLONES
void nc_f16_to_f64(const unsigned char *src, size_t n, double *out)
{
    for (size_t k = 0; k < n; k++)
        out[k] = f16_to_f64((uint16_t)(src[2 * k] | (src[2 * k + 1] << 8)));
}

NC_VMATH_CLONES
void nc_bf16_to_f64(const unsigned char *src, size_t n, double *out)
{
    for (size_t k = 0; k < n; k++) {
        uint32_t u = (uint32_t)(src[2 * k] | (src[2 * k + 1] << 8)) << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        out[k] = f;
    }
}
