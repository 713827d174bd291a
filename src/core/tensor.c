/*
 * tensor.c - dtype table and row conversion for tensor views (tensor.h).
 *
 * Conversion goes through memcpy so that unaligned data (safetensors offsets
 * need not be multiples of 4) are read portably; half types are widened by
 * core/half.
 */
#include "core/tensor.h"

#include <stdio.h>
#include <string.h>

#include "core/half.h"
#include "core/vmath.h"
#include "util/err.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[NC_DT_COUNT] = {
    [NC_DT_NONE] = {"?", 0},     [NC_F32] = {"F32", 4},   [NC_F16] = {"F16", 2},
    [NC_BF16] = {"BF16", 2},     [NC_F64] = {"F64", 8},   [NC_BOOL] = {"BOOL", 1},
    [NC_U8] = {"U8", 1},         [NC_I8] = {"I8", 1},     [NC_I16] = {"I16", 2},
    [NC_U16] = {"U16", 2},       [NC_I32] = {"I32", 4},   [NC_U32] = {"U32", 4},
    [NC_I64] = {"I64", 8},       [NC_U64] = {"U64", 8},   [NC_F8_E4M3] = {"F8_E4M3", 1},
    [NC_F8_E5M2] = {"F8_E5M2", 1},
};

size_t nc_dtype_size(nc_dtype dt)
{
    return (dt > NC_DT_NONE && dt < NC_DT_COUNT) ? dtypes[dt].size : 0;
}

const char *nc_dtype_name(nc_dtype dt)
{
    return (dt > NC_DT_NONE && dt < NC_DT_COUNT) ? dtypes[dt].name : "?";
}

nc_dtype nc_dtype_from_name(const char *name)
{
    for (int dt = NC_DT_NONE + 1; dt < NC_DT_COUNT; dt++)
        if (strcmp(name, dtypes[dt].name) == 0)
            return (nc_dtype)dt;
    return NC_DT_NONE;
}

bool nc_dtype_is_float(nc_dtype dt)
{
    return dt == NC_F32 || dt == NC_F16 || dt == NC_BF16 || dt == NC_F64;
}

int nc_tensor_set_shape(nc_tensor *t)
{
    /* 2^62 elements bounds every later size_t product (bytes, doubles). */
    const uint64_t limit = (uint64_t)1 << 62;
    if (t->rank < 0 || t->rank > NC_MAX_RANK)
        return NC_ERANGE;
    if (t->rank == 0) { /* a scalar (safetensors allows them): one element */
        t->N = t->d = t->nelem = 1;
        t->nbytes = nc_dtype_size(t->dtype);
        return t->nbytes ? 0 : NC_ERANGE;
    }
    uint64_t n = 1;
    for (int k = 0; k < t->rank - 1; k++) {
        if (t->shape[k] != 0 && n > limit / t->shape[k])
            return NC_ERANGE;
        n *= t->shape[k];
    }
    uint64_t d = t->shape[t->rank - 1];
    if (d != 0 && n > limit / d)
        return NC_ERANGE;
    size_t esize = nc_dtype_size(t->dtype);
    if (esize == 0)
        return NC_ERANGE;
    /* the byte count must fit too: (2^31, 2^31) of F32 is 2^64 bytes */
    if (n * d > SIZE_MAX / esize)
        return NC_ERANGE;
    t->N = (size_t)n;
    t->d = (size_t)d;
    t->nelem = (size_t)(n * d);
    t->nbytes = t->nelem * esize;
    return 0;
}

void nc_tensor_shape_str(const nc_tensor *t, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < t->rank && used < cap; k++) {
        int w = snprintf(buf + used, cap - used, "%s%llu", k ? ", " : "[",
                         (unsigned long long)t->shape[k]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used < cap)
        snprintf(buf + used, cap - used, "%s", t->rank ? "]" : "[]");
}

/* float -> double for n elements at byte p (any alignment): a loop that
 * vectorises, built for the vector clones (every pass over an F32 tensor
 * converts each block of rows with it) */
NC_VMATH_CLONES static void f32_to_f64(const unsigned char *p, size_t n, double *out)
{
    for (size_t k = 0; k < n; k++) {
        float v;
        memcpy(&v, p + 4 * k, 4);
        out[k] = v;
    }
}

void nc_tensor_elems(const nc_tensor *t, size_t i0, size_t n, double *out)
{
    const unsigned char *p = t->data + i0 * nc_dtype_size(t->dtype);
    switch (t->dtype) {
    case NC_F32:
        f32_to_f64(p, n, out);
        break;
    case NC_F64:
        memcpy(out, p, 8 * n);
        break;
    case NC_F16:
        nc_f16_to_f64(p, n, out);
        break;
    case NC_BF16:
        nc_bf16_to_f64(p, n, out);
        break;
    default:
        /* Callers check nc_dtype_is_float first; zeros keep this total. */
        memset(out, 0, n * sizeof *out);
        break;
    }
}

void nc_tensor_rows(const nc_tensor *t, size_t t0, size_t nt, double *out)
{
    nc_tensor_elems(t, t0 * t->d, nt * t->d, out);
}
