/*
 * colour.h - colours on their way to cairo (internal to src/plot/): every
 * caller's colour is clamped to [0, 1] first.
 *
 * colour.c defines the palette and the colour map (nc_rgb_hex, nc_palette,
 * nc_colormap); they belong to the figure's public interface and are
 * declared in figure.h, with nc_rgb. This header holds what the other
 * src/plot/ files share beyond that.
 *
 * Left out: colour spaces (components are sRGB values, used as given).
 */
#ifndef NC_COLOUR_H
#define NC_COLOUR_H

#include <cairo.h>

#include "plot/figure.h"

/* v clamped to [0, 1]; NaN becomes 0 (a caller's bad colour must not
 * reach an integer conversion or put cairo into an error state). */
static inline double clamp01(double v)
{
    return v > 0 ? (v < 1 ? v : 1) : 0;
}

/* Sets c, clamped, as cr's source. */
static inline void set_rgb(cairo_t *cr, nc_rgb c)
{
    cairo_set_source_rgb(cr, clamp01(c.r), clamp01(c.g), clamp01(c.b));
}

#endif
