/*
 * tensor.h - element types and the read-only view of one tensor in a dump.
 *
 * A tensor is a C-order, little-endian array of rank >= 1. The last axis is
 * the channel axis (d); the leading axes are flattened into N tokens
 * (docs/theory.md). A rank-1 tensor is one token. A view never owns
 * its bytes: they belong to whatever mapped or generated them (a dump, the
 * synthetic generator), and the view is valid until that owner is closed.
 *
 * Only F32, F16, BF16 and F64 can be analysed; the other safetensors types
 * are known so that a file holding them can be validated and listed.
 */
#ifndef NC_TENSOR_H
#define NC_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum nc_dtype {
    NC_DT_NONE = 0,
    NC_F32,
    NC_F16,
    NC_BF16,
    NC_F64,
    /* known, listed by `inspect`, never analysed */
    NC_BOOL,
    NC_U8,
    NC_I8,
    NC_I16,
    NC_U16,
    NC_I32,
    NC_U32,
    NC_I64,
    NC_U64,
    NC_F8_E4M3,
    NC_F8_E5M2,
    NC_DT_COUNT
} nc_dtype;

/* The largest rank accepted (NumPy allows 64; activations use 2 or 3). */
#define NC_MAX_RANK 32

/* Bytes per element; 0 for NC_DT_NONE. */
size_t nc_dtype_size(nc_dtype dt);

/* The safetensors spelling of a dtype ("F32", "BF16", ...); "?" if none. */
const char *nc_dtype_name(nc_dtype dt);

/* The dtype whose safetensors spelling is name, or NC_DT_NONE. */
nc_dtype nc_dtype_from_name(const char *name);

/* True for the four float types the analysis reads. */
bool nc_dtype_is_float(nc_dtype dt);

typedef struct nc_tensor {
    const char *name;           /* borrowed: the tensor's name in its file */
    nc_dtype dtype;
    int rank;                   /* 0 (a scalar, listed only) .. NC_MAX_RANK */
    uint64_t shape[NC_MAX_RANK];
    size_t N;                   /* tokens: product of shape[0 .. rank-2] (1 if rank 1) */
    size_t d;                   /* channels: shape[rank-1] */
    size_t nelem;               /* N * d, checked against overflow by the parser */
    const unsigned char *data;  /* borrowed: nelem * dtype size bytes, any alignment */
    size_t nbytes;              /* nelem * nc_dtype_size(dtype) */
    uint64_t file_offset;       /* where data starts in the file, for messages */
} nc_tensor;

/* Fills N, d, nelem and nbytes of t from its rank, shape and dtype (a
 * rank-0 scalar counts as N = d = 1).
 * Returns 0, or NC_ERANGE when a product overflows size_t (or exceeds
 * 2^62 elements), without touching err: the caller names the file. */
int nc_tensor_set_shape(nc_tensor *t);

/* Formats the shape as "[2040, 64]" into buf (always NUL-terminated). */
void nc_tensor_shape_str(const nc_tensor *t, char *buf, size_t cap);

/* Converts tokens [t0, t0 + nt) of a float tensor to double, row after row,
 * into out[nt * d]. The caller checks t0 + nt <= N and the dtype. */
void nc_tensor_rows(const nc_tensor *t, size_t t0, size_t nt, double *out);

/* Converts elements [i0, i0 + n) of a float tensor (flat index) to double. */
void nc_tensor_elems(const nc_tensor *t, size_t i0, size_t n, double *out);

#endif
