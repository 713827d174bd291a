/*
 * test_png.c - io/png: encode/decode round trips (RGB, RGBA, strides, row
 * callbacks), text metadata round trips (tEXt and iTXt), and the error
 * paths with their exact messages: bad sizes and keywords, a failing sink,
 * files that are not PNG, truncated or corrupted.
 *
 * Pixels are a deterministic pattern with every byte value present, so a
 * swapped channel, an off-by-one row or a lost alpha cannot pass.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/png.h"
#include "util/sink.h"

/* Byte c of pixel (i, j): mixes all three so that no two channels match. */
static unsigned char pattern(int i, int j, int c)
{
    return (unsigned char)(i * 37 + j * 101 + c * 59 + (i * j) % 7);
}

/* A w x h image with ch channels and stride bytes per row (padding 0xee). */
static unsigned char *make_image(int w, int h, int ch, int stride)
{
    unsigned char *p = malloc((size_t)stride * h);
    memset(p, 0xee, (size_t)stride * h);
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++)
            for (int c = 0; c < ch; c++)
                p[(size_t)j * stride + (size_t)i * ch + c] = pattern(i, j, c);
    return p;
}

/* Whether img holds the pattern (alpha 255 for RGB sources). */
static int mismatches(const nc_png_image *img, int w, int h, int ch)
{
    int bad = 0;
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++)
            for (int c = 0; c < 4; c++) {
                unsigned char want = c < ch ? pattern(i, j, c) : 255;
                bad += img->rgba[((size_t)j * w + i) * 4 + c] != want;
            }
    return bad;
}

static void test_roundtrip_rgb(void)
{
    int w = 37, h = 23;
    unsigned char *px = make_image(w, h, 3, w * 3);
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_png_write(&s, px, w, h, w * 3, false, NULL, &err));
    CHECK(mb.len > 8 && memcmp(mb.data, "\x89PNG\r\n\x1a\n", 8) == 0);
    nc_png_image img;
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, &err));
    CHECK_INT(w, img.width);
    CHECK_INT(h, img.height);
    CHECK_INT(0, img.ntext);
    CHECK_INT(0, mismatches(&img, w, h, 3));
    nc_png_image_free(&img);
    CHECK(img.rgba == NULL && img.width == 0);
    nc_membuf_free(&mb);
    free(px);
}

static void test_roundtrip_rgba_stride(void)
{
    int w = 19, h = 31, stride = w * 4 + 13;
    unsigned char *px = make_image(w, h, 4, stride);
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_png_write(&s, px, w, h, stride, true, NULL, &err));
    nc_png_image img;
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, &err));
    CHECK_INT(w, img.width);
    CHECK_INT(h, img.height);
    CHECK_INT(0, mismatches(&img, w, h, 4));
    nc_png_image_free(&img);
    nc_membuf_free(&mb);
    free(px);
}

/* Rows from a callback give the same file as rows from an array. */
typedef struct rowsrc {
    int w, calls, last_row;
} rowsrc;

static void fill_row(void *ctx, int r, unsigned char *buf)
{
    rowsrc *src = ctx;
    CHECK_INT(src->last_row + 1, r); /* top to bottom, each once */
    src->last_row = r;
    src->calls++;
    for (int i = 0; i < src->w; i++)
        for (int c = 0; c < 3; c++)
            buf[3 * i + c] = pattern(i, r, c);
}

static void test_rows_callback(void)
{
    int w = 29, h = 17;
    unsigned char *px = make_image(w, h, 3, w * 3);
    const char *meta[] = {"Software", "normcmp test", NULL};
    nc_membuf a = {0}, b = {0};
    nc_sink sa = nc_membuf_sink(&a), sb = nc_membuf_sink(&b);
    nc_err err = {0};
    CHECK_INT(0, nc_png_write(&sa, px, w, h, w * 3, false, meta, &err));
    rowsrc src = {w, 0, -1};
    CHECK_INT(0, nc_png_write_rows(&sb, w, h, false, fill_row, &src, meta, &err));
    CHECK_INT(h, src.calls);
    CHECK_INT(a.len, b.len);
    CHECK(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    nc_membuf_free(&a);
    nc_membuf_free(&b);
    free(px);
}

static void test_text_roundtrip(void)
{
    /* an ASCII value (tEXt), a UTF-8 one (iTXt: alpha, minus sign), an empty
     * one, and a long command line */
    char longv[3000];
    for (size_t i = 0; i < sizeof longv - 1; i++)
        longv[i] = (char)('a' + i % 26);
    longv[sizeof longv - 1] = '\0';
    const char *meta[] = {"Software", "normcmp 0.1.0",
                          "Command",  "normcmp run configs/demo.json --layer 11",
                          "DyT",      "\xce\xb1 = 0.385, \xce\xb3 = \xe2\x88\x92" "2.5",
                          "Empty",    "",
                          "Long",     longv,
                          NULL};
    unsigned char px[3 * 4 * 2] = {0};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_png_write(&s, px, 4, 2, 12, false, meta, &err));
    nc_png_image img;
    CHECK_INT(0, nc_png_read(mb.data, mb.len, &img, &err));
    CHECK_INT(5, img.ntext);
    CHECK_STR("normcmp 0.1.0", nc_png_text(&img, "Software"));
    CHECK_STR("normcmp run configs/demo.json --layer 11", nc_png_text(&img, "Command"));
    CHECK_STR("\xce\xb1 = 0.385, \xce\xb3 = \xe2\x88\x92" "2.5", nc_png_text(&img, "DyT"));
    CHECK_STR("", nc_png_text(&img, "Empty"));
    CHECK_STR(longv, nc_png_text(&img, "Long"));
    CHECK(nc_png_text(&img, "Missing") == NULL);
    /* in the order given */
    CHECK_STR("Software", img.text[0]);
    CHECK_STR("Long", img.text[8]);
    /* the UTF-8 value went into an iTXt chunk, the ASCII ones into tEXt */
    CHECK(memmem(mb.data, mb.len, "iTXtDyT", 7) != NULL);
    CHECK(memmem(mb.data, mb.len, "tEXtSoftware", 12) != NULL);
    nc_png_image_free(&img);
    nc_membuf_free(&mb);
}

static void test_bad_arguments(void)
{
    unsigned char px[64] = {0};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(NC_EINVAL, nc_png_write(&s, px, 0, 2, 12, false, NULL, &err));
    CHECK_STR("png: image size 0 x 2, expected 1 to 1000000 pixels a side", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_png_write(&s, px, 4, 2, 11, false, NULL, &err));
    CHECK_STR("png: row stride 11 bytes, expected at least 12", err.msg);
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_png_write(&s, px, 4, 2, 15, true, NULL, &err));
    CHECK_STR("png: row stride 15 bytes, expected at least 16", err.msg);

    char key80[81];
    memset(key80, 'k', 80); /* one over the limit */
    key80[80] = '\0';
    const char *bad_keys[] = {"", " lead", "trail ", "dou  ble", "tab\tkey", "caf\xc3\xa9", key80};
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        const char *meta[] = {"Software", "ok", bad_keys[i], "v", NULL};
        nc_err_clear(&err);
        CHECK_INT(NC_EINVAL, nc_png_write(&s, px, 4, 2, 12, false, meta, &err));
        CHECK_CONTAINS(err.msg, "png: text key \"");
        CHECK_CONTAINS(err.msg, "\", expected 1 to 79 printable ASCII characters without "
                                "leading, trailing or double spaces");
    }
    const char *nullv[] = {"Software", NULL, NULL};
    /* {key, NULL} ends the list at the NULL value: "Software" alone has no
     * value, which is refused rather than read past */
    nc_err_clear(&err);
    CHECK_INT(NC_EINVAL, nc_png_write(&s, px, 4, 2, 12, false, nullv, &err));
    CHECK_STR("png: text key \"Software\" has no value", err.msg);
    CHECK_INT(0, mb.len); /* nothing written on argument errors */
    nc_membuf_free(&mb);
}

/* A sink that accepts limit bytes, then fails. */
typedef struct failsink {
    size_t limit, got;
} failsink;

static int fail_write(void *ctx, const void *buf, size_t n, nc_err *err)
{
    (void)buf;
    failsink *f = ctx;
    if (f->got + n > f->limit)
        return nc_err_set(err, NC_EIO, "out.png: write failed after %zu bytes", f->got);
    f->got += n;
    return 0;
}

static void test_sink_failure(void)
{
    int w = 64, h = 64;
    unsigned char *px = make_image(w, h, 3, w * 3);
    size_t limits[] = {0, 8, 40, 2000};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        failsink f = {limits[i], 0};
        nc_sink s = {fail_write, &f};
        nc_err err = {0};
        CHECK_INT(NC_EIO, nc_png_write(&s, px, w, h, w * 3, false, NULL, &err));
        CHECK_CONTAINS(err.msg, "out.png: write failed after ");
    }
    free(px);
}

static void test_decode_errors(void)
{
    nc_png_image img;
    nc_err err = {0};
    CHECK_INT(NC_EFORMAT, nc_png_read("GIF89", 5, &img, &err));
    CHECK_STR("png: not a PNG file (bad signature, 5 bytes)", err.msg);
    CHECK(img.rgba == NULL && img.text == NULL);

    int w = 40, h = 30;
    unsigned char *px = make_image(w, h, 3, w * 3);
    const char *meta[] = {"Software", "normcmp", NULL};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    CHECK_INT(0, nc_png_write(&s, px, w, h, w * 3, false, meta, &err));

    /* truncated: the image data stop half way */
    nc_err_clear(&err);
    CHECK_INT(NC_EFORMAT, nc_png_read(mb.data, mb.len / 2, &img, &err));
    CHECK_CONTAINS(err.msg, "png: libpng refused the file: ");
    CHECK(img.rgba == NULL && img.ntext == 0);

    /* a flipped bit in the IHDR chunk: its CRC no longer matches */
    unsigned char *bad = malloc(mb.len);
    memcpy(bad, mb.data, mb.len);
    bad[8 + 8 + 3] ^= 0x10; /* width, third byte */
    nc_err_clear(&err);
    CHECK_INT(NC_EFORMAT, nc_png_read(bad, mb.len, &img, &err));
    CHECK_STR("png: libpng refused the file: IHDR: CRC error", err.msg);
    free(bad);
    nc_membuf_free(&mb);
    free(px);
}

int main(void)
{
    test_roundtrip_rgb();
    test_roundtrip_rgba_stride();
    test_rows_callback();
    test_text_roundtrip();
    test_bad_arguments();
    test_sink_failure();
    test_decode_errors();
    return CHECK_DONE();
}
