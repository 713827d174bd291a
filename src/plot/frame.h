/*
 * frame.h - the frame of a panel and the texts around it (internal to
 * src/plot/): grid, frame, ticks, tick labels, axis labels, titles and
 * the colour bar, drawn by figure.c in its order (figure.h), texts recorded
 * in the layout (L->rec).
 *
 * Left out: the data (figure.c) and the legend and note (legend.h).
 */
#ifndef NC_FRAME_H
#define NC_FRAME_H

#include <cairo.h>

#include "plot/figure.h"
#include "plot/layout.h"

/* Draws s at size px (baseline y; halign 0 left, 0.5 centre, 1 right of
 * x), cut with an ellipsis to at most maxw px, in cr's source, and records
 * its ink box in L->rec as tag. */
void nc_frame_text(cairo_t *cr, layout *L, double size, const char *s, double x, double y,
                   double halign, double maxw, const char *tag);

/* The light grid at the major ticks of panel p (layout pl). */
void nc_frame_grid(cairo_t *cr, const layout *L, const nc_panel *p, const panel_layout *pl);

/* The frame just outside the data area and the ticks, outward. */
void nc_frame_ticks(cairo_t *cr, const layout *L, const nc_panel *p, const panel_layout *pl);

/* The tick labels of panel k (blank ones left out). */
void nc_frame_tick_labels(cairo_t *cr, layout *L, const nc_panel *p, const panel_layout *pl,
                          size_t k);

/* The axis labels (with the axes' shared factors) and the title of panel
 * k, shrunk and cut to their room (layout.h). */
void nc_frame_labels(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p,
                     const panel_layout *pl, size_t k);

/* The colour bar of panel p, right of its frame (layout.h cbar_x): the
 * colour map, its frame, ticks, tick labels and label, recorded. */
void nc_frame_colorbar(cairo_t *cr, layout *L, const nc_panel *p, const panel_layout *pl,
                       size_t k);

#endif
