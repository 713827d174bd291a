/*
 * raster.c - density raster to image, and dot spreading (raster.h).
 *
 * Monochrome rasters go through a table of pixel values by count (counts
 * below LUT_MAX); coloured ones compute each pixel's mean colour, their
 * opacity from a table of the same size.
 */
#include "plot/raster.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plot/colour.h"

#define LUT_MAX 65536

/* alpha(c) of figure.h, for c >= 1; inv_log_max = 1 / log(cmax), or 0
 * when cmax is 1 (every drawn pixel is then the densest: opaque). */
static double density_alpha(uint32_t c, double inv_log_max)
{
    if (inv_log_max == 0.0)
        return 1.0;
    return NC_DENSITY_ALPHA_MIN + (1.0 - NC_DENSITY_ALPHA_MIN) * log((double)c) * inv_log_max;
}

static uint32_t argb(double a, double r, double g, double b)
{
    /* premultiplied, as cairo's ARGB32 wants */
    uint32_t A = (uint32_t)(255.0 * a + 0.5);
    uint32_t R = (uint32_t)(255.0 * clamp01(r) * a + 0.5);
    uint32_t G = (uint32_t)(255.0 * clamp01(g) * a + 0.5);
    uint32_t B = (uint32_t)(255.0 * clamp01(b) * a + 0.5);
    return A << 24 | R << 16 | G << 8 | B;
}

int nc_raster_dot_radius(double dpi)
{
    return (int)floor(dpi / 144.0);
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* Max filter of radius r (a (2r+1)^2 square), in place, over a w x h
 * image of premultiplied ARGB32 words (stride in bytes). Comparing whole
 * words compares alpha first: each pixel shows its most opaque neighbour,
 * which for a monochrome cloud is also the densest; colours break ties,
 * deterministically. Vertical pass, keeping the last r original rows in
 * ring[r][w], then horizontal through row[w]. */
static void spread(unsigned char *data, int stride, int w, int h, int r, uint32_t *ring,
                   uint32_t *row)
{
    size_t rowbytes = (size_t)w * sizeof *row;
    for (int j = 0; j < h; j++) {
        uint32_t *out = (uint32_t *)(void *)(data + (size_t)j * (size_t)stride);
        memcpy(row, out, rowbytes); /* original row j */
        for (int k = j + 1; k <= j + r && k < h; k++) {
            const uint32_t *in = (const uint32_t *)(const void *)(data + (size_t)k * stride);
            for (int i = 0; i < w; i++)
                out[i] = max_u32(out[i], in[i]); /* rows below: still original */
        }
        for (int k = j - r < 0 ? 0 : j - r; k < j; k++) {
            const uint32_t *in = ring + (size_t)(k % r) * w; /* rows above: saved */
            for (int i = 0; i < w; i++)
                out[i] = max_u32(out[i], in[i]);
        }
        memcpy(ring + (size_t)(j % r) * w, row, rowbytes);
        memcpy(row, out, rowbytes);
        /* neighbours k columns right, then left (loops the compiler vectorizes) */
        for (int k = 1; k <= r && k < w; k++) {
            for (int i = 0; i < w - k; i++)
                out[i] = max_u32(out[i], row[i + k]);
            for (int i = k; i < w; i++)
                out[i] = max_u32(out[i], row[i - k]);
        }
    }
}

cairo_surface_t *nc_raster_image(const nc_density *d, nc_rgb color, int r)
{
    uint32_t cmax = 0;
    nc_density_total(d, &cmax);
    double inv_log_max = cmax > 1 ? 1.0 / log((double)cmax) : 0.0;
    size_t nlut = (cmax < LUT_MAX ? cmax : LUT_MAX - 1) + 1;
    uint32_t *lut = malloc(nlut * sizeof *lut);
    float *alut = malloc(nlut * sizeof *alut);
    uint32_t *tmp = r > 0 ? malloc((size_t)(r + 1) * (size_t)d->w * sizeof *tmp) : NULL;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, d->w, d->h);
    if (!lut || !alut || (r > 0 && !tmp) || cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        free(lut);
        free(alut);
        free(tmp);
        cairo_surface_destroy(img);
        return NULL;
    }
    lut[0] = 0;
    alut[0] = 0;
    for (size_t c = 1; c < nlut; c++) {
        alut[c] = (float)density_alpha((uint32_t)c, inv_log_max);
        lut[c] = argb(alut[c], color.r, color.g, color.b);
    }
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    const int w = d->w, h = d->h; /* locals: stores to the image cannot change them */
    for (int j = 0; j < h; j++) {
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)j * (size_t)stride);
        const uint32_t *cnt = d->count + (size_t)j * (size_t)w;
        for (int i = 0; i < w; i++) {
            uint32_t c = cnt[i];
            if (c == 0) {
                row[i] = 0;
            } else if (!d->rgb) {
                row[i] = c < nlut ? lut[c] : argb(density_alpha(c, inv_log_max), color.r,
                                                   color.g, color.b);
            } else {
                const float *sum = d->rgb + 3 * ((size_t)j * (size_t)w + (size_t)i);
                double a = c < nlut ? alut[c] : density_alpha(c, inv_log_max);
                row[i] = argb(a, sum[0] / (double)c, sum[1] / (double)c, sum[2] / (double)c);
            }
        }
    }
    if (tmp)
        spread(data, stride, w, h, r, tmp + w, tmp);
    cairo_surface_mark_dirty(img);
    free(lut);
    free(alut);
    free(tmp);
    return img;
}

void nc_raster_place(const nc_panel *p, const nc_rect *a, const nc_density *d, double *X0,
                     double *Y0, double *sx, double *sy)
{
    double xl, xr, yt, yb;
    nc_panel_to_pixel(p, a, d->x0, d->y1, &xl, &yt);
    nc_panel_to_pixel(p, a, d->x1, d->y0, &xr, &yb);
    *X0 = xl;
    *Y0 = yt;
    *sx = (xr - xl) / d->w;
    *sy = (yb - yt) / d->h;
}
