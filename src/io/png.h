/*
 * png.h - PNG encoding through libpng, with text metadata; and a decoder
 * for the tests.
 *
 * Format: PNG (ISO/IEC 15948, W3C "Portable Network Graphics"), 8-bit RGB
 * or RGBA, non-interlaced. Metadata go into text chunks: tEXt when the value
 * is printable ASCII, iTXt (UTF-8, uncompressed) otherwise, so that command
 * lines and file names with non-ASCII characters survive. Keywords follow
 * the PNG rules (1 to 79 printable ASCII characters, no leading, trailing
 * or doubled spaces); anything else is refused rather than mangled.
 *
 * Speed: figures are flat colour areas, anti-aliased lines, text and a
 * density cloud. On three demo figures (a 1600 x 1200 S-curve cloud, a
 * 2 x 2 grid, a line plot), zlib level 2 with no row filter encoded the
 * S-curve in ~24 ms to 314 KB, where libpng's defaults (level 6, adaptive
 * filtering) took ~165 ms for 344 KB: row filters turn the cloud's
 * isolated dots into noise, while long runs of identical bytes are what
 * deflate likes. The choice is fixed here, not a parameter, so every figure
 * the tool writes is encoded alike.
 *
 * This is the only file that includes <png.h>. libpng reports errors by
 * longjmp; each of the two setjmps lives inside one small function that
 * keeps everything it changes afterwards in its caller's state, so no
 * local is left indeterminate (see png.c). libpng's warnings are swallowed
 * (library code never prints).
 */
#ifndef NC_PNG_H
#define NC_PNG_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"
#include "util/sink.h"

/* Encodes an 8-bit image to PNG and writes it through sink.
 *   pixels  rows top to bottom, row r at pixels + r * stride; each pixel
 *           R, G, B (and A when alpha) bytes, straight (not premultiplied)
 *           alpha; borrowed, read only;
 *   width, height  1 .. 1000000 each;
 *   stride  bytes from one row to the next, >= width * (alpha ? 4 : 3);
 *   meta    {key, value, key, value, ..., NULL} (NULL for none): one text
 *           chunk per pair, in order, before the image data.
 * Returns 0, or with a one-line message in err: NC_EINVAL for a bad size,
 * stride or keyword (the message names it), NC_ENOMEM, NC_EINTERNAL when
 * libpng fails (its message is quoted), or the sink's own error. On failure
 * some bytes may already have gone through the sink. */
int nc_png_write(const nc_sink *sink, const unsigned char *pixels, int width, int height,
                 int stride, bool alpha, const char *const *meta, nc_err *err);

/* Fills row r (0 = the top row) of an image being encoded: width * 3 (RGB)
 * or width * 4 (RGBA) bytes into buf. */
typedef void (*nc_png_row_fn)(void *ctx, int r, unsigned char *buf);

/* Like nc_png_write, but the rows come from row(ctx, r, buf), called once
 * per row top to bottom, so that a caller converting from another pixel
 * format (figure.c: cairo's premultiplied ARGB32) needs no second copy of
 * the image. Same checks and errors as nc_png_write. */
int nc_png_write_rows(const nc_sink *sink, int width, int height, bool alpha, nc_png_row_fn row,
                      void *ctx, const char *const *meta, nc_err *err);

/* ------------------------------------------------------------------ */
/* Decoding: for the tests (round trips, checking rendered figures).   */
/* The tool itself never reads PNG files.                              */
/* ------------------------------------------------------------------ */

typedef struct nc_png_image {
    int width, height;
    unsigned char *rgba; /* [height][width][4] straight RGBA, row 0 at the top; owned */
    size_t ntext;        /* number of text chunks (tEXt, zTXt and iTXt) */
    char **text;         /* [2 * ntext]: key, value, key, value, ... (UTF-8); owned */
} nc_png_image;

/* Decodes the PNG file buf[0..n) into *img: any bit depth and colour type
 * is expanded to 8-bit RGBA (16-bit samples keep their high byte). On
 * success *img owns its arrays: release them with nc_png_image_free. On
 * failure *img is left empty. Returns 0, NC_EFORMAT for anything libpng
 * refuses (its message is quoted: not a PNG file, a bad CRC, truncated
 * data), NC_ERANGE for an image too large for memory, NC_ENOMEM. */
int nc_png_read(const void *buf, size_t n, nc_png_image *img, nc_err *err);

/* The value of text chunk key in img, or NULL when there is none. Borrowed:
 * valid until nc_png_image_free. */
const char *nc_png_text(const nc_png_image *img, const char *key);

/* Releases img's arrays and zeroes it. Accepts NULL. */
void nc_png_image_free(nc_png_image *img);

#endif
