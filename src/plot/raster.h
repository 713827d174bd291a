/*
 * raster.h - a density raster (density.h) turned into the image of
 * figure.h's density cloud (internal to src/plot/).
 *
 * A point prints as a dot at least 1 pt across at every resolution: each
 * pixel shows the count summed over the (2r + 1)^2 pixels around it, r =
 * nc_raster_dot_radius(dpi), so that a lone point is a (2r + 1) px dot and
 * the colour measures points per area of the page (at 300 or 600 dpi the
 * cloud looks as it does at 150, not lighter). The summed count c maps to
 * colour on a log scale (figure.h):
 *     t(c) = log(c) / log(cmax),  colour = floor + t (core - floor),
 * opaque, from a floor that keeps a lone point visible (contrast 3:1 on
 * white, nc_raster_floor) to the core colour at the densest pixel. A
 * coloured raster shows each pixel's mean colour at opacity A0 + (1 - A0)
 * t (A0 = NC_DENSITY_ALPHA_MIN).
 *
 * Left out: painting the image onto a panel (figure.c scales it there,
 * nearest-neighbour unless it is shrunk), smoothing beyond the dot, and
 * log axes (figure.c refuses a cloud on them).
 */
#ifndef NC_RASTER_H
#define NC_RASTER_H

#include <cairo.h>

#include "plot/density.h"
#include "plot/figure.h"
#include "plot/layout.h"

/* The dot radius (px) of a density point at this resolution: the
 * smallest r with a (2r + 1) px dot at least 1 pt across (0 up to 72 dpi,
 * 1 up to 216, 2 up to 360, 4 at 600), so that a point prints like
 * Matplotlib's scatter with s = 1, never as an invisible speck. */
int nc_raster_dot_radius(double dpi);

/* The floor colour of a cloud of colour core: core mixed with white, as
 * light as keeps a contrast of 3:1 on white (WCAG's ratio; a lighter core,
 * such as a grey background cloud, gets 60 % of its own contrast). */
nc_rgb nc_raster_floor(nc_rgb core);

/* The cloud d as a premultiplied ARGB32 image of d->w x d->h, counts
 * summed over dots of radius r (px) and coloured from floor to core when
 * d is monochrome; owned by the caller (cairo_surface_destroy). NULL when
 * out of memory. */
cairo_surface_t *nc_raster_image(const nc_density *d, nc_rgb core, nc_rgb floor, int r);

/* Where d's image goes in panel p with data area a: its own range placed
 * on the panel's (linear, checked) axes, as the top-left corner (*X0, *Y0)
 * and the device px per raster pixel, *sx across and *sy down. */
void nc_raster_place(const nc_panel *p, const nc_rect *a, const nc_density *d, double *X0,
                     double *Y0, double *sx, double *sy);

#endif
