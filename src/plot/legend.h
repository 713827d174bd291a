/*
 * legend.h - a panel's legend and note (internal to src/plot/).
 *
 * The legend lists the labelled density, curves, markers, vertical and
 * horizontal lines, in that order, the first of each label text only
 * (figure.h, nc_panel), each with a handle drawn like the thing it names,
 * in a white box of opacity LEG_ALPHA with Matplotlib's metrics (style.h).
 * It goes where the panel asks; for NC_LEGEND_AUTO to the one of the nine
 * positions inside the frame covering the least ink (lines first, then
 * the cloud; ties to the earlier in figure.h's order), but only when that
 * position covers no curve, marker or line and at most LEGEND_SLIVER (1.5 %)
 * of its area is cloud; else, as for NC_LEGEND_OUTSIDE and for every panel
 * of a figure with a shared legend, to one box in a strip below the
 * panels, centred, in as many columns as fit. Ink is counted on a grid of
 * INK_CELL px: the share of each cell the cloud covers (from the counts,
 * each point as the dot it prints as), and the cells curves, markers and
 * lines pass within their half width. The note then takes the least inked
 * of the four corners, the legend counting as full; a note wider than
 * its panel is left out.
 *
 * Left out: legends too long for the strip (drawn, overflowing).
 */
#ifndef NC_LEGEND_H
#define NC_LEGEND_H

#include <cairo.h>

#include "plot/figure.h"
#include "plot/layout.h"

/* Decides where each panel's legend goes (L->p[k].legend), on L's areas,
 * and sets *strip_h to the height of the strip the outside legends need
 * (0: none). Returns 0, or -1 when out of memory. */
int nc_legend_plan(const nc_figure *fig, layout *L, double *strip_h);

/* Draws the legend (when inside its frame) and the note of panel k,
 * recording their boxes. Returns 0, or -1 when out of memory (nothing
 * drawn then). */
int nc_legend_draw(cairo_t *cr, layout *L, const nc_panel *p, size_t k);

/* Draws the strip's legend below the panels, if any. 0, or -1 (memory). */
int nc_legend_draw_strip(cairo_t *cr, const nc_figure *fig, layout *L);

#endif
