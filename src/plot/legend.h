/*
 * legend.h - a panel's point labels, legend and note, and the strip below
 * the panels (internal to src/plot/).
 *
 * Ink is counted on a grid of INK_CELL px: the share of each cell the
 * cloud covers (from the counts, each point as the dot it prints as), and
 * the cells curves, markers and lines pass within their half width.
 *
 * Point labels (figure.h, nc_label) come first: each at the first of its
 * eight places that covers no line ink (curves, markers, lines, labels
 * before it); a label that finds none is left out and counted in the
 * panel's note ("12 of 44 layers named").
 *
 * The legend lists the labelled density, curves, markers, vertical and
 * horizontal lines, in that order, the first of each label text only
 * (figure.h, nc_panel), each with a handle drawn like the thing it names
 * (a cloud as its colour scale, floor to core), in a white box of opacity
 * LEG_ALPHA with Matplotlib's metrics (style.h). It goes where the panel
 * asks; for NC_LEGEND_AUTO inside the frame, at the one of the nine
 * positions covering the least ink (lines first, then the cloud; ties to
 * the earlier in figure.h's order), at the first of the legend size,
 * 0.85x and the smallest (not below 6 pt), in one column then two, whose
 * box covers no curve, marker, line or label and at most LEGEND_SLIVER
 * (1.5 %) of cloud; else, as for NC_LEGEND_OUTSIDE and for every panel of a
 * figure with a shared legend, to one box in a strip below the panels,
 * centred, in as many columns as fit, its font made smaller (to 6 pt)
 * while the strip would take more than STRIP_CAP of the figure's height.
 *
 * The note takes the least inked of the nine places when that place
 * covers no curve, marker, line, label or legend and at most NOTE_SLIVER
 * (8 %) of cloud; else it goes to the strip, below the legend, with the
 * figure's own note.
 *
 * Left out: legends too long for the strip at 6 pt (drawn, overflowing).
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

/* Draws the point labels, the legend (when inside its frame) and the
 * note (when inside) of panel k of fig, recording their boxes; p is the
 * panel as drawn (its density may be a resampled copy). Returns 0, or -1
 * when out of memory (nothing drawn then). */
int nc_legend_draw(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p, size_t k);

/* Draws the strip below the panels, if any: the legend of the panels
 * whose legend is outside, then the notes that did not fit inside and the
 * figure's note. 0, or -1 (memory). */
int nc_legend_draw_strip(cairo_t *cr, const nc_figure *fig, layout *L);

#endif
