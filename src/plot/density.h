/*
 * density.h - the point accumulator behind every scatter figure.
 *
 * A layer has N*d (input, output) points, often tens of millions: far too
 * many to draw one by one, and a scatter of that many opaque dots shows
 * only a black blob. Instead each streaming pass bins its points into a
 * raster the size of the figure's data area (figure.h,
 * nc_figure_data_area), one counter per pixel; the figure then maps counts
 * to opacity on a log scale, so that the dense core and single outliers
 * both stay visible. A coloured variant also sums an RGB colour per pixel
 * (colour by token or by channel: docs/figures.md, by-token, by-channel); the
 * figure shows the mean colour of each pixel's points.
 *
 * Geometry. The raster splits [x0, x1] into w columns and [y0, y1] into h
 * rows of equal width, row 0 at the top (y1). A point on the line between
 * two pixels goes to the one on its left, or the one above (to rounding:
 * the scales are 2^-40 short, see nc_density_pixel); the outer edges are
 * closed, so x0 and x1 fall in the first and last columns, y1 and y0 in the
 * first and last rows. A point outside [x0, x1] x [y0, y1], or with a NaN
 * or infinite coordinate, is not drawn but counted in `outside`, so the
 * caller can say how many points the axes cut off.
 *
 * Threads: each thread fills its own raster (same geometry), then
 * nc_density_merge adds them up. Counters saturate at UINT32_MAX instead of
 * wrapping, in add and in merge (this costs about 15 % of the add rate).
 * Colour sums are float, half the memory of double: a pixel's mean colour
 * stays within one 8-bit step up to about 1e5 points per pixel, and drifts
 * beyond (float rounding of the growing sum); counts are exact.
 *
 * Left out: log axes (bin log10 of the data into a linear raster instead),
 * weights, and any smoothing: each point lands in exactly one pixel.
 */
#ifndef NC_DENSITY_H
#define NC_DENSITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* The opacity of a drawn pixel holding one point (figure.h, raster.h). */
#define NC_DENSITY_ALPHA_MIN 0.3

typedef struct nc_density {
    int w, h;              /* raster size in pixels, >= 1 each */
    double x0, x1, y0, y1; /* data range mapped onto it: x0 -> left edge of column 0, x1 ->
                              right edge of column w-1, y0 -> bottom of row h-1, y1 -> top of
                              row 0 */
    double sx, sy;         /* pixels per data unit: w / (x1 - x0), h / (y1 - y0), each made
                              2^-40 relatively smaller (see nc_density_pixel) */
    uint32_t *count;       /* [h][w] points per pixel, row 0 at the top; owned */
    float *rgb;            /* [h][w][3] sums of the points' colours (coloured rasters), or NULL */
    uint64_t outside;      /* points outside the range or not finite (counted, not drawn) */
} nc_density;

/* Allocates a zeroed w x h raster for the data range [x0, x1] x [y0, y1];
 * with coloured, also the colour sums (for nc_density_add_rgb). Needs
 * 1 <= w, h <= 65536, finite x0 < x1 and y0 < y1. On success *out is owned
 * by the caller (nc_density_free). Returns 0, NC_EINVAL for a bad size or
 * range, or NC_ENOMEM. */
int nc_density_alloc(int w, int h, double x0, double x1, double y0, double y1, bool coloured,
                     nc_density **out, nc_err *err);

/* Sets every counter (and colour sum) and `outside` back to zero. */
void nc_density_clear(nc_density *d);

/* The pixel of (x, y), as column + row * w, or -1 when the point is
 * outside the range or not finite. A NaN fails every comparison, so it is
 * outside; no out-of-range double is ever converted to an integer. The
 * four comparisons are combined with & into one branch, which in-range
 * data always predict. The scales are 2^-40 short of w / (x1 - x0) and
 * h / (y1 - y0), so that x == x1 maps just below w (and y == y0 just below
 * h) and the closed edges need no extra test: (x1 - x0) * sx =
 * w (1 - 2^-40) (1 +- 3 * 2^-53) < w. Points beyond x1 or y0 by less than
 * about 1e-12 of the range also land in the edge pixels. */
static inline ptrdiff_t nc_density_pixel(const nc_density *d, double x, double y)
{
    double fx = (x - d->x0) * d->sx; /* column, fractional */
    double fy = (d->y1 - y) * d->sy; /* row from the top, fractional */
    bool in = (fx >= 0.0) & (fx < (double)d->w) & (fy >= 0.0) & (fy < (double)d->h);
    if (!in)
        return -1;
    return (ptrdiff_t)(int)fy * d->w + (int)fx;
}

/* Counts the point (x, y). The branch is taken only by points outside the
 * range, so on real data it is always predicted. */
static inline void nc_density_add(nc_density *d, double x, double y)
{
    ptrdiff_t p = nc_density_pixel(d, x, y);
    if (p < 0) {
        d->outside++;
        return;
    }
    d->count[p] += d->count[p] != UINT32_MAX;
}

/* Counts the n points (x[k], y[k]), as nc_density_add each: first every
 * point's column and row (a loop that vectorises; -1 for a point outside,
 * the out-of-range double replaced before any conversion), then the
 * counters. col and row are the caller's scratch of n each. */
static inline void nc_density_add_n(nc_density *d, const double *x, const double *y, size_t n,
                                    int32_t *col, int32_t *row)
{
    const double x0 = d->x0, y1 = d->y1, sx = d->sx, sy = d->sy;
    const double W = (double)d->w, H = (double)d->h;
    for (size_t k = 0; k < n; k++) {
        double fx = (x[k] - x0) * sx, fy = (y1 - y[k]) * sy;
        bool in = (fx >= 0.0) & (fx < W) & (fy >= 0.0) & (fy < H);
        col[k] = (int32_t)(in ? fx : -1.0);
        row[k] = (int32_t)(in ? fy : 0.0);
    }
    uint64_t out = 0;
    for (size_t k = 0; k < n; k++) {
        if (col[k] < 0) {
            out++;
            continue;
        }
        uint32_t *c = d->count + (ptrdiff_t)row[k] * d->w + col[k];
        *c += *c != UINT32_MAX;
    }
    d->outside += out;
}

/* Counts the point (x, y) and adds its colour rgb[0..2] (components in
 * [0, 1]) to the pixel's colour sum. d must be coloured (d->rgb != NULL). */
static inline void nc_density_add_rgb(nc_density *d, double x, double y, const float rgb[3])
{
    ptrdiff_t p = nc_density_pixel(d, x, y);
    if (p < 0) {
        d->outside++;
        return;
    }
    d->count[p] += d->count[p] != UINT32_MAX;
    float *c = d->rgb + 3 * p;
    c[0] += rgb[0];
    c[1] += rgb[1];
    c[2] += rgb[2];
}

/* Adds from's counts, colour sums and outside count into `into`. Both must
 * have the same size and range (an invariant of the caller, asserted), and
 * if from is coloured, so must into be. */
void nc_density_merge(nc_density *into, const nc_density *from);

/* The number of points drawn (sum of the counters; saturated counters
 * count as UINT32_MAX), and the largest counter. */
uint64_t nc_density_total(const nc_density *d, uint32_t *max_count);

/* Releases d and its arrays. Accepts NULL. */
void nc_density_free(nc_density *d);

#endif
