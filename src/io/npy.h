/*
 * npy.h - NumPy .npy files: a strict parser for a file already in memory and
 * a header writer.
 *
 * Format (numpy/lib/format.py, "NEP 1"): the magic "\x93NUMPY", a major and
 * a minor version byte, the header length (u16 little-endian for version
 * 1.0, u32 for 2.0 and 3.0), then the header: a Python dict literal such as
 *
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2040, 64), }
 *
 * padded with spaces and ended by '\n', then the raw C-order elements.
 *
 * Accepted element types: '<f4' (F32), '<f2' (F16), '<f8' (F64), and
 * bfloat16 as '<V2' (what np.save writes for ml_dtypes.bfloat16) or
 * 'bfloat16' (written by hand). A plain '|V2' void is refused as ambiguous.
 * Big-endian data, other dtypes, Fortran order, scalars (shape ()) and more
 * than NC_MAX_RANK axes are refused with a message saying what to do.
 */
#ifndef NC_NPY_H
#define NC_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "util/err.h"
#include "util/sink.h"

/* The most tokens a tensor with no elements (d = 0) may claim, in .npy and
 * safetensors alike: a tensor with data has at most one token per byte of
 * its file, an empty one would otherwise make the per-token state (O(N))
 * arbitrarily large. Refused beyond this with NC_ERANGE (exit 2). */
#define NC_EMPTY_MAX_TOKENS ((size_t)1 << 24)

/* Parses a whole .npy file buf[0..len); path is used only in messages.
 * Every byte is untrusted: the header must fit in the file, follow the dict
 * grammar above exactly (keys in any order, single or double quotes,
 * whitespace anywhere, optional trailing commas; all three keys, no others,
 * none twice), and the data after it must be exactly the array's nbytes.
 * On success fills *t: dtype, rank (>= 1), shape, N, d, nelem, nbytes, data
 * (borrowed: points into buf, valid as long as buf) and file_offset (where
 * the data start); t->name is NULL. Nothing is copied or allocated.
 * Returns 0, or with a one-line message in err:
 *   NC_EFORMAT      not a .npy file, malformed header, truncated or
 *                   oversized data;
 *   NC_EUNSUPPORTED unknown version, dtype, byte order, Fortran order, a
 *                   scalar, more than NC_MAX_RANK axes;
 *   NC_ERANGE       a shape integer or the element count overflows.
 * On failure *t is unspecified. */
int nc_npy_parse(const unsigned char *buf, size_t len, const char *path, nc_tensor *t,
                 nc_err *err);

/* Writes the preamble and header of a .npy file for a C-order little-endian
 * array of dtype dt (NC_F32, NC_F16, NC_F64 or NC_BF16, the last written as
 * '<V2' like ml_dtypes) and shape[0 .. rank-1], 1 <= rank <= NC_MAX_RANK.
 * The bytes are those np.save writes (format 1.0, or 2.0 when the header
 * would not fit in 65535 bytes; keys sorted, growth padding, spaces up to a
 * '\n' that ends at a multiple of 64 bytes), so the caller writes the
 * nbytes of data next. Returns 0, NC_EINVAL for a bad dtype or rank,
 * NC_ERANGE when the element count overflows, or the sink's error. */
int nc_npy_write_header(const nc_sink *sink, nc_dtype dt, int rank, const uint64_t *shape,
                        nc_err *err);

#endif
