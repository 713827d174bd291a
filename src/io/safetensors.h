/*
 * safetensors.h - Hugging Face safetensors files: a strict parser for a file
 * already in memory and a writer.
 *
 * Format (https://huggingface.co/docs/safetensors): an 8-byte little-endian
 * header length H, H bytes of JSON
 *
 *     {"<name>": {"dtype": "F32", "shape": [4, 8], "data_offsets": [0, 128]},
 *      ..., "__metadata__": {"<key>": "<value>", ...}}
 *
 * padded with trailing spaces, then the data section; data_offsets are
 * [begin, end) byte offsets relative to the start of the data section, and
 * elements are C-order little-endian.
 *
 * The parser checks every field and offset against the file; it accepts
 * every dtype nc_dtype_from_name knows (the analysis later reads only the
 * float ones) and rank-0 scalars. It does not require the tensors to cover
 * the data section without gaps (the reference implementation does), only
 * that they do not overlap.
 */
#ifndef NC_SAFETENSORS_H
#define NC_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "util/err.h"
#include "util/sink.h"

/* The largest header accepted, in bytes (the reference implementation's
 * limit too): a length beyond it is an error, not an allocation. */
#define NC_ST_MAX_HEADER ((uint64_t)100 << 20)

typedef struct nc_st nc_st; /* opaque: the parsed header */

/* Parses a whole safetensors file buf[0..len); path is used only in
 * messages. Every byte is untrusted: the header length must fit the file
 * and NC_ST_MAX_HEADER; the header must be one JSON object followed only by
 * spaces; each tensor entry must have exactly the keys dtype (a known
 * dtype name), shape (integers in [0, 2^53), at most NC_MAX_RANK of them)
 * and data_offsets ([begin, end] with begin <= end <= the data section
 * length and end - begin = element size x element count); tensor names are
 * unique and tensors do not overlap; __metadata__, if present, is an object
 * of strings with unique keys. Tensor data are not copied: each view's data
 * point into buf (borrowed: valid as long as buf), file_offset is
 * 8 + H + begin. On success *out is owned by the caller (nc_st_free).
 * Returns 0, or with a one-line message in err naming file, tensor and
 * field: NC_EFORMAT (malformed), NC_EUNSUPPORTED (unknown dtype, too many
 * axes), NC_ERANGE (header too large, element count overflow) or
 * NC_ENOMEM. On failure *out is NULL. */
int nc_st_parse(const unsigned char *buf, size_t len, const char *path, nc_st **out,
                nc_err *err);

/* The number of tensors (__metadata__ is not one). */
size_t nc_st_count(const nc_st *st);

/* Tensor i (0 <= i < nc_st_count), in header order. Borrowed: valid until
 * nc_st_free; its name is owned by st. */
const nc_tensor *nc_st_tensor(const nc_st *st, size_t i);

/* The tensor named exactly name, or NULL. Borrowed like nc_st_tensor. */
const nc_tensor *nc_st_find(const nc_st *st, const char *name);

/* The __metadata__ value for key, or NULL. Borrowed: valid until
 * nc_st_free. */
const char *nc_st_meta(const nc_st *st, const char *key);

/* Releases st. Accepts NULL. */
void nc_st_free(nc_st *st);

/* One tensor to write. */
typedef struct nc_st_entry {
    const char *name;     /* UTF-8, unique, not "__metadata__" */
    nc_dtype dtype;       /* any known dtype */
    int rank;             /* 0 (a scalar) .. NC_MAX_RANK */
    const uint64_t *shape; /* [rank] */
    const void *data;     /* nbytes of little-endian elements (may be NULL if 0) */
} nc_st_entry;

/* Writes a safetensors file through sink: the 8-byte little-endian header
 * length, the JSON header (__metadata__ first if meta has any pair, then the
 * tensors e[0 .. n-1] in order with contiguous data offsets), padded with
 * spaces to a multiple of 8 bytes, then each tensor's bytes. meta is NULL or
 * a NULL-terminated array of key, value, key, value, ... UTF-8 strings with
 * unique keys. Returns 0, NC_EINVAL for an invalid entry or metadata (the
 * message names it), NC_ERANGE when sizes overflow, NC_ENOMEM, or the
 * sink's error. */
int nc_st_write(const nc_sink *sink, const nc_st_entry *e, size_t n, const char *const *meta,
                nc_err *err);

#endif
