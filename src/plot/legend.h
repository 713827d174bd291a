/*
 * legend.h - a panel's legend and note (internal to src/plot/).
 *
 * The legend lists the labelled density, curves, markers, vertical and
 * horizontal lines, in that order, the first of each label text only
 * (figure.h, nc_panel), each with a handle drawn like the thing it names,
 * in a white box of opacity LEG_ALPHA with Matplotlib's metrics (style.h).
 * It goes where the panel asks, or for NC_LEGEND_AUTO to the one of the
 * nine positions covering the least ink, ties to the earlier in figure.h's
 * order. Ink is counted on a grid of INK_CELL px: the cloud's opacity,
 * plus INK_LINE_WEIGHT where a curve, marker or line passes. The note then
 * takes the least inked of the four corners, the legend counting as full.
 *
 * Left out: legends outside the frame, several columns, legends shared
 * across panels, and legends too long for their panel (they are drawn,
 * overflowing).
 */
#ifndef NC_LEGEND_H
#define NC_LEGEND_H

#include <cairo.h>

#include "plot/figure.h"
#include "plot/layout.h"

/* Draws the legend and the note of panel p, whose data area is a; dimg is
 * its density image (raster.h) or NULL, for the ink under each position.
 * Returns 0, or -1 when out of memory (nothing drawn then). */
int nc_legend_draw(cairo_t *cr, const layout *L, const nc_panel *p, const nc_rect *a,
                   cairo_surface_t *dimg);

#endif
