/*
 * raster.h - a density raster (density.h) turned into the image of
 * figure.h's density cloud (internal to src/plot/).
 *
 * Counts map to opacity on a log scale (figure.h):
 *     alpha(c) = 0 for c = 0, else A0 + (1 - A0) * log(c) / log(cmax),
 * A0 = NC_DENSITY_ALPHA_MIN, every pixel opaque when cmax is 1. A
 * monochrome raster is drawn in one colour, a coloured one in each
 * pixel's mean colour. Above 144 dpi a lone point would print as an
 * invisible speck, so it is spread to a dot: each pixel shows its most
 * opaque neighbour within r = floor(dpi / 144) pixels (a max filter).
 *
 * Left out: painting the image onto a panel (figure.c scales it there,
 * nearest-neighbour unless it is shrunk), smoothing, colour maps of
 * counts, and log axes (figure.c refuses a cloud on them).
 */
#ifndef NC_RASTER_H
#define NC_RASTER_H

#include <cairo.h>

#include "plot/density.h"
#include "plot/figure.h"

/* The dot radius (px) of a density point at this resolution: 0 up to 144
 * dpi, then floor(dpi / 144), so that a point prints about 1 pt across
 * (Matplotlib's scatter with s = 1) instead of as an invisible speck. */
int nc_raster_dot_radius(double dpi);

/* The cloud d as a premultiplied ARGB32 image of d->w x d->h, in color
 * when d is monochrome, points spread to dots of radius r (px); owned by
 * the caller (cairo_surface_destroy). NULL when out of memory. */
cairo_surface_t *nc_raster_image(const nc_density *d, nc_rgb color, int r);

/* Where d's image goes in panel p with data area a: its own range placed
 * on the panel's (linear, checked) axes, as the top-left corner (*X0, *Y0)
 * and the device px per raster pixel, *sx across and *sy down. */
void nc_raster_place(const nc_panel *p, const nc_rect *a, const nc_density *d, double *X0,
                     double *Y0, double *sx, double *sy);

#endif
