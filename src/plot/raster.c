/*
 * raster.c - density raster to image (raster.h): counts summed over a
 * dot, then mapped to colour.
 *
 * The box sum runs in two passes of running sums (along each row, then
 * down each column), O(pixels) whatever the radius. Monochrome rasters go
 * through a table of pixel values by summed count (below LUT_MAX);
 * coloured ones compute each pixel's mean colour, their opacity from a
 * table of the same size.
 */
#include "plot/raster.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plot/colour.h"

#define LUT_MAX 65536
#define DOT_PT 1.0      /* a lone point prints at least this wide */
#define FLOOR_CONTRAST 3.0 /* a lone point against white, at most (WCAG's ratio) */

int nc_raster_dot_radius(double dpi)
{
    double r = ceil((dpi / 72.0 * DOT_PT - 1.0) / 2.0 - 1e-9);
    return r > 0 ? (int)r : 0;
}

/* WCAG relative luminance of an sRGB colour. */
static double lin(double c)
{
    c = clamp01(c);
    return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

static double luminance(nc_rgb c)
{
    return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
}

static nc_rgb mix(nc_rgb a, nc_rgb b, double t)
{
    return (nc_rgb){a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

nc_rgb nc_raster_floor(nc_rgb core)
{
    const nc_rgb white = {1, 1, 1};
    double cc = 1.05 / (luminance(core) + 0.05);
    double want = fmin(FLOOR_CONTRAST, 1.0 + 0.6 * (cc - 1.0));
    double lo = 0, hi = 1; /* the tint of the core from white */
    for (int k = 0; k < 40; k++) {
        double t = (lo + hi) / 2;
        if (1.05 / (luminance(mix(white, core, t)) + 0.05) >= want)
            hi = t;
        else
            lo = t;
    }
    return mix(white, core, hi);
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

static uint32_t sat32(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The counts of d summed over the (2r+1)^2 box around each pixel (clipped
 * at the edges), saturating, into out[h][w]; with d->rgb, the colour sums
 * too into rgb[h][w][3]. tmp holds w uint64 and w * 3 doubles. */
static void box_sum(const nc_density *d, int r, uint32_t *out, float *rgb, uint64_t *col,
                    double *ccol)
{
    const int w = d->w, h = d->h;
    /* along each row (into out), then down each column with running sums */
    for (int j = 0; j < h; j++) {
        const uint32_t *c = d->count + (size_t)j * (size_t)w;
        uint32_t *o = out + (size_t)j * (size_t)w;
        uint64_t run = 0;
        for (int i = 0; i < r && i < w; i++)
            run += c[i];
        for (int i = 0; i < w; i++) {
            if (i + r < w)
                run += c[i + r];
            if (i - r - 1 >= 0)
                run -= c[i - r - 1];
            o[i] = sat32(run);
        }
        if (!rgb)
            continue;
        const float *s = d->rgb + 3 * (size_t)j * (size_t)w;
        float *q = rgb + 3 * (size_t)j * (size_t)w;
        double acc[3] = {0, 0, 0};
        for (int i = 0; i < r && i < w; i++)
            for (int k = 0; k < 3; k++)
                acc[k] += s[3 * i + k];
        for (int i = 0; i < w; i++)
            for (int k = 0; k < 3; k++) {
                if (i + r < w)
                    acc[k] += s[3 * (i + r) + k];
                if (i - r - 1 >= 0)
                    acc[k] -= s[3 * (i - r - 1) + k];
                q[3 * i + k] = (float)acc[k];
            }
    }
    /* down the columns: the rows' sums of rows j - r .. j + r; rows are
     * overwritten only after they have left the window (kept in col) */
    memset(col, 0, (size_t)w * sizeof *col);
    memset(ccol, 0, 3 * (size_t)w * sizeof *ccol);
    uint32_t *ring = (uint32_t *)(void *)(ccol + 3 * (size_t)w); /* [2r+1][w] row copies */
    float *cring = (float *)(ring + (size_t)(2 * r + 1) * (size_t)w); /* [2r+1][w][3] */
    for (int j = 0; j < h + r; j++) {
        if (j < h) { /* row j enters */
            uint32_t *o = out + (size_t)j * (size_t)w;
            memcpy(ring + (size_t)(j % (2 * r + 1)) * (size_t)w, o, (size_t)w * sizeof *o);
            for (int i = 0; i < w; i++)
                col[i] += o[i];
            if (rgb) {
                float *q = rgb + 3 * (size_t)j * (size_t)w;
                memcpy(cring + 3 * (size_t)(j % (2 * r + 1)) * (size_t)w, q,
                       3 * (size_t)w * sizeof *q);
                for (int i = 0; i < 3 * w; i++)
                    ccol[i] += q[i];
            }
        }
        int jo = j - r; /* the row whose window is now complete */
        if (jo < 0)
            continue;
        uint32_t *o = out + (size_t)jo * (size_t)w;
        for (int i = 0; i < w; i++)
            o[i] = sat32(col[i]);
        if (rgb)
            for (int i = 0; i < 3 * w; i++)
                rgb[3 * (size_t)jo * (size_t)w + (size_t)i] = (float)ccol[i];
        int jl = jo - r; /* row jl leaves */
        if (jl >= 0) {
            const uint32_t *old = ring + (size_t)(jl % (2 * r + 1)) * (size_t)w;
            for (int i = 0; i < w; i++)
                col[i] -= old[i];
            if (rgb) {
                const float *oq = cring + 3 * (size_t)(jl % (2 * r + 1)) * (size_t)w;
                for (int i = 0; i < 3 * w; i++)
                    ccol[i] -= oq[i];
            }
        }
    }
}

/* The colour of a summed count c: t = log(c) / log(cmax) from the floor
 * to the core, opaque. */
static uint32_t mono(uint32_t c, double inv_log_max, nc_rgb core, nc_rgb floor)
{
    double t = inv_log_max > 0 ? log((double)c) * inv_log_max : 1.0;
    nc_rgb m = mix(floor, core, t);
    return argb(1.0, m.r, m.g, m.b);
}

static void fill_image(unsigned char *data, int stride, const nc_density *d, const uint32_t *cnt,
                       const float *rgb, nc_rgb core, nc_rgb floor, uint32_t *lut)
{
    uint32_t cmax = 0;
    for (size_t p = 0; p < (size_t)d->w * (size_t)d->h; p++)
        cmax = cnt[p] > cmax ? cnt[p] : cmax;
    double inv_log_max = cmax > 1 ? 1.0 / log((double)cmax) : 0.0;
    size_t nlut = (cmax < LUT_MAX ? cmax : LUT_MAX - 1) + 1;
    for (size_t c = 1; c < nlut; c++)
        lut[c] = mono((uint32_t)c, inv_log_max, core, floor);
    const int w = d->w, h = d->h;
    for (int j = 0; j < h; j++) {
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)j * (size_t)stride);
        const uint32_t *cr = cnt + (size_t)j * (size_t)w;
        for (int i = 0; i < w; i++) {
            uint32_t c = cr[i];
            if (c == 0) {
                row[i] = 0;
            } else if (!rgb) {
                row[i] = c < nlut ? lut[c] : mono(c, inv_log_max, core, floor);
            } else {
                const float *sum = rgb + 3 * ((size_t)j * (size_t)w + (size_t)i);
                double a = inv_log_max > 0 ? NC_DENSITY_ALPHA_MIN + (1 - NC_DENSITY_ALPHA_MIN) *
                                                                       log((double)c) * inv_log_max
                                           : 1.0;
                row[i] = argb(a, sum[0] / (double)c, sum[1] / (double)c, sum[2] / (double)c);
            }
        }
    }
}

cairo_surface_t *nc_raster_image(const nc_density *d, nc_rgb core, nc_rgb floor, int r)
{
    const size_t w = (size_t)d->w, npix = w * (size_t)d->h;
    uint32_t *sum = r > 0 ? malloc(npix * sizeof *sum) : NULL;
    float *rgb = r > 0 && d->rgb ? malloc(3 * npix * sizeof *rgb) : NULL;
    size_t tmpb = w * sizeof(uint64_t) + 3 * w * sizeof(double) +
                  (size_t)(2 * r + 1) * w * (sizeof(uint32_t) + 3 * sizeof(float));
    uint64_t *tmp = r > 0 ? malloc(tmpb) : NULL;
    uint32_t *lut = malloc(LUT_MAX * sizeof *lut);
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, d->w, d->h);
    if ((r > 0 && (!sum || !tmp || (d->rgb && !rgb))) || !lut ||
        cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        free(sum);
        free(rgb);
        free(tmp);
        free(lut);
        cairo_surface_destroy(img);
        return NULL;
    }
    if (r > 0)
        box_sum(d, r, sum, rgb, tmp, (double *)(void *)(tmp + w));
    cairo_surface_flush(img);
    fill_image(cairo_image_surface_get_data(img), cairo_image_surface_get_stride(img), d,
               r > 0 ? sum : d->count, r > 0 ? rgb : d->rgb, core, floor, lut);
    cairo_surface_mark_dirty(img);
    free(lut);
    free(sum);
    free(rgb);
    free(tmp);
    return img;
}

void nc_raster_place(const nc_panel *p, const nc_rect *a, const nc_density *d, double *X0,
                     double *Y0, double *sx, double *sy)
{
    /* a density on a symmetric-log axis is binned in the axis coordinate
     * (its x0, x1 are coordinates: figure.h) */
    nc_scale xs = panel_xscale(p);
    double u0 = scale_u(&xs, p->x0), u1 = scale_u(&xs, p->x1);
    double xl, xr, yt, yb;
    nc_panel_to_pixel(p, a, p->x0, d->y1, &xl, &yt);
    nc_panel_to_pixel(p, a, p->x1, d->y0, &xr, &yb);
    double dx0 = p->xlin > 0 ? d->x0 : scale_u(&xs, d->x0);
    double dx1 = p->xlin > 0 ? d->x1 : scale_u(&xs, d->x1);
    double pxu = (xr - xl) / (u1 - u0);
    *X0 = xl + (dx0 - u0) * pxu;
    *Y0 = yt;
    *sx = (dx1 - dx0) * pxu / d->w;
    *sy = (yb - yt) / d->h;
}
