/*
 * png.c - PNG writer and test decoder on libpng (png.h).
 *
 * libpng reports a fatal error by calling its error function, which must
 * not return: ours copies the message into the call's state and longjmps
 * back to the setjmp. There are two setjmps, one in encode() and one in
 * decode(), and each of those functions does only libpng calls after it.
 * Everything they change after setjmp (the row pointers, the message, the
 * failure code) lives in the pngstate of their caller, not in their
 * own locals, so nothing is left indeterminate by a longjmp (C11 7.13.2.1)
 * and no volatile is needed. Sink failures take the same road: the write
 * callback records the sink's error and calls png_error.
 */
#include "io/png.h"

#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Encoder settings (see png.h for why these): zlib level, PNG row filter. */
#define NC_PNG_LEVEL 2
#define NC_PNG_FILTER PNG_FILTER_NONE
#define NC_PNG_MAX_SIDE 1000000 /* libpng's default user limit */
#define NC_PNG_KEY_MAX 79       /* PNG keyword length limit */

/* State shared between a call and libpng's callbacks. */
typedef struct pngstate {
    nc_err *err;
    const nc_sink *sink;       /* writing */
    const unsigned char *buf;  /* reading: the file */
    size_t n, pos;             /* reading: its length and the next byte */
    png_bytep *rows;           /* reading: [height] row pointers, owned */
    int rc;                    /* an NC_E* code already set in err (sink, memory), or 0 */
    char msg[160];             /* libpng's last error message */
} pngstate;

static void on_error(png_structp png, png_const_charp msg)
{
    pngstate *st = png_get_error_ptr(png);
    snprintf(st->msg, sizeof st->msg, "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void on_write(png_structp png, png_bytep data, size_t n)
{
    pngstate *st = png_get_io_ptr(png);
    int rc = nc_sink_write(st->sink, data, n, st->err);
    if (rc != 0) {
        st->rc = rc;
        png_error(png, "sink write failed");
    }
}

static void on_flush(png_structp png)
{
    (void)png;
}

static void on_read(png_structp png, png_bytep data, size_t n)
{
    pngstate *st = png_get_io_ptr(png);
    if (n > st->n - st->pos)
        png_error(png, "unexpected end of file");
    memcpy(data, st->buf + st->pos, n);
    st->pos += n;
}

static bool is_ascii_text(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80 || ((unsigned char)*s < 0x20 && *s != '\n'))
            return false;
    return true;
}

/* PNG 11.3.4.2: 1-79 Latin-1 printable characters, no leading, trailing or
 * consecutive spaces. We accept the ASCII subset. */
static bool is_keyword(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > NC_PNG_KEY_MAX || k[0] == ' ' || k[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)k[i];
        if (c < 0x20 || c > 0x7e || (c == ' ' && k[i + 1] == ' '))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Writer                                                              */
/* ------------------------------------------------------------------ */

/* Where the rows of an image come from: an array, or a callback filling
 * a row buffer. */
typedef struct rows {
    const unsigned char *pixels; /* or NULL */
    int stride;
    nc_png_row_fn fn;
    void *ctx;
    unsigned char *buf; /* [width * channels] for fn */
} rows;

/* The libpng calls of one encode; returns 0, or -1 after a longjmp (the
 * message in st->msg, or the sink's error code in st->rc). */
static int encode(pngstate *st, png_structp png, png_infop info, const rows *src, int width,
                  int height, bool alpha, png_text *text, int ntext)
{
    if (setjmp(png_jmpbuf(png)))
        return -1;
    png_set_write_fn(png, st, on_write, on_flush);
    png_set_compression_level(png, NC_PNG_LEVEL);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, NC_PNG_FILTER);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8,
                 alpha ? PNG_COLOR_TYPE_RGB_ALPHA : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    if (ntext)
        png_set_text(png, info, text, ntext);
    png_write_info(png, info);
    for (int r = 0; r < height; r++) {
        if (src->pixels) {
            png_write_row(png, src->pixels + (size_t)r * (size_t)src->stride);
        } else {
            src->fn(src->ctx, r, src->buf);
            png_write_row(png, src->buf);
        }
    }
    png_write_end(png, info);
    return 0;
}

static int write_png(const nc_sink *sink, const rows *src, int width, int height, bool alpha,
                     const char *const *meta, nc_err *err)
{
    int channels = alpha ? 4 : 3;
    if (width < 1 || height < 1 || width > NC_PNG_MAX_SIDE || height > NC_PNG_MAX_SIDE)
        return nc_err_set(err, NC_EINVAL, "png: image size %d x %d, expected 1 to %d pixels a side",
                          width, height, NC_PNG_MAX_SIDE);
    if (src->pixels && src->stride < width * channels)
        return nc_err_set(err, NC_EINVAL, "png: row stride %d bytes, expected at least %d",
                          src->stride, width * channels);
    size_t nmeta = 0;
    for (; meta && meta[2 * nmeta]; nmeta++) {
        const char *k = meta[2 * nmeta], *v = meta[2 * nmeta + 1];
        if (!is_keyword(k))
            return nc_err_set(err, NC_EINVAL,
                              "png: text key \"%s\", expected 1 to 79 printable ASCII characters "
                              "without leading, trailing or double spaces",
                              k);
        if (!v)
            return nc_err_set(err, NC_EINVAL, "png: text key \"%s\" has no value", k);
    }
    if (nmeta > INT32_MAX)
        return nc_err_set(err, NC_EINVAL, "png: %zu text chunks, too many", nmeta);

    int rc = 0;
    pngstate st = {.err = err, .sink = sink};
    png_structp png = NULL;
    png_infop info = NULL;
    rows r = *src;
    png_text *text = nmeta ? calloc(nmeta, sizeof *text) : NULL;
    if (!r.pixels)
        r.buf = malloc((size_t)width * (size_t)channels);
    if ((nmeta && !text) || (!r.pixels && !r.buf)) {
        rc = nc_err_set(err, NC_ENOMEM, "png: out of memory");
        goto out;
    }
    for (size_t i = 0; i < nmeta; i++) {
        /* libpng takes non-const pointers but does not write through them */
        text[i].key = (png_charp)(uintptr_t)meta[2 * i];
        text[i].text = (png_charp)(uintptr_t)meta[2 * i + 1];
        text[i].compression = is_ascii_text(meta[2 * i + 1]) ? PNG_TEXT_COMPRESSION_NONE
                                                              : PNG_ITXT_COMPRESSION_NONE;
    }
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
    info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        rc = nc_err_set(err, NC_ENOMEM, "png: out of memory");
        goto out;
    }
    if (encode(&st, png, info, &r, width, height, alpha, text, (int)nmeta) != 0) {
        if (st.rc)
            rc = st.rc;
        else
            rc = nc_err_set(err, NC_EINTERNAL, "png: libpng failed to encode: %s", st.msg);
    }
out:
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    free(text);
    free(r.buf);
    return rc;
}

int nc_png_write(const nc_sink *sink, const unsigned char *pixels, int width, int height,
                 int stride, bool alpha, const char *const *meta, nc_err *err)
{
    rows src = {.pixels = pixels, .stride = stride};
    return write_png(sink, &src, width, height, alpha, meta, err);
}

int nc_png_write_rows(const nc_sink *sink, int width, int height, bool alpha, nc_png_row_fn row,
                      void *ctx, const char *const *meta, nc_err *err)
{
    rows src = {.fn = row, .ctx = ctx};
    return write_png(sink, &src, width, height, alpha, meta, err);
}

/* ------------------------------------------------------------------ */
/* Decoder (tests only)                                                */
/* ------------------------------------------------------------------ */

void nc_png_image_free(nc_png_image *img)
{
    if (!img)
        return;
    for (size_t i = 0; i < 2 * img->ntext; i++)
        free(img->text[i]);
    free(img->text);
    free(img->rgba);
    memset(img, 0, sizeof *img);
}

const char *nc_png_text(const nc_png_image *img, const char *key)
{
    for (size_t i = 0; i < img->ntext; i++)
        if (strcmp(img->text[2 * i], key) == 0)
            return img->text[2 * i + 1];
    return NULL;
}

/* Copies libpng's text chunks into img (plain malloc'd strings). */
static int copy_text(png_structp png, png_infop info, nc_png_image *img, nc_err *err)
{
    png_textp t = NULL;
    int n = png_get_text(png, info, &t, NULL);
    if (n <= 0)
        return 0;
    img->text = calloc(2 * (size_t)n, sizeof *img->text);
    if (!img->text)
        return nc_err_set(err, NC_ENOMEM, "png: out of memory");
    for (int i = 0; i < n; i++) {
        img->text[2 * i] = strdup(t[i].key);
        img->text[2 * i + 1] = strdup(t[i].text ? t[i].text : "");
        img->ntext++;
        if (!img->text[2 * i] || !img->text[2 * i + 1])
            return nc_err_set(err, NC_ENOMEM, "png: out of memory");
    }
    return 0;
}

/* The libpng calls of one decode into img; returns 0, 1 when something
 * failed with its code in st->rc and its message in err (size overflow, no
 * memory), or -1 after a longjmp (the message in st->msg). */
static int decode(pngstate *st, png_structp png, png_infop info, nc_png_image *img)
{
    if (setjmp(png_jmpbuf(png)))
        return -1;
    png_set_read_fn(png, st, on_read);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int ctype = png_get_color_type(png, info);
    /* every input becomes 8-bit RGBA */
    png_set_expand(png);
    png_set_strip_16(png);
    if (ctype == PNG_COLOR_TYPE_GRAY || ctype == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    png_set_filler(png, 0xff, PNG_FILLER_AFTER);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);

    if (w == 0 || h == 0 || (size_t)w > SIZE_MAX / 4 / h) {
        st->rc = nc_err_set(st->err, NC_ERANGE, "png: image %u x %u too large", (unsigned)w,
                            (unsigned)h);
        return 1;
    }
    img->width = (int)w;
    img->height = (int)h;
    img->rgba = malloc((size_t)w * h * 4);
    st->rows = malloc(h * sizeof *st->rows);
    if (!img->rgba || !st->rows) {
        st->rc = nc_err_set(st->err, NC_ENOMEM, "png: out of memory for %u x %u pixels",
                            (unsigned)w, (unsigned)h);
        return 1;
    }
    for (png_uint_32 r = 0; r < h; r++)
        st->rows[r] = img->rgba + (size_t)r * w * 4;
    png_read_image(png, st->rows);
    png_read_end(png, info);
    st->rc = copy_text(png, info, img, st->err);
    return st->rc ? 1 : 0;
}

int nc_png_read(const void *buf, size_t n, nc_png_image *img, nc_err *err)
{
    memset(img, 0, sizeof *img);
    if (n < 8 || png_sig_cmp(buf, 0, 8) != 0)
        return nc_err_set(err, NC_EFORMAT, "png: not a PNG file (bad signature, %zu bytes)", n);

    int rc = 0;
    pngstate st = {.err = err, .buf = buf, .n = n};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        rc = nc_err_set(err, NC_ENOMEM, "png: out of memory");
        goto out;
    }
    int got = decode(&st, png, info, img);
    if (got < 0)
        rc = nc_err_set(err, NC_EFORMAT, "png: libpng refused the file: %s", st.msg);
    else if (got > 0)
        rc = st.rc;
out:
    png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
    free(st.rows);
    if (rc)
        nc_png_image_free(img);
    return rc;
}
