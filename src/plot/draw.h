/*
 * draw.h - drawing primitives shared by the panels (figure.c) and the
 * legend (legend.c) (internal to src/plot/): which data points a panel can
 * show, the visible pieces of a curve, markers, dash patterns.
 *
 * A curve (figure.h, nc_curve) breaks at a point that is NaN, infinite,
 * <= 0 on a log axis or beyond double range in pixels; the rest is
 * clipped exactly (Liang-Barsky) to the data area grown by a margin, so a
 * line through points far outside the panel keeps its true direction and
 * cairo never sees huge coordinates. Markers (figure.h, nc_marker) are
 * paths size_px across: filled shapes get a 0.6 pt rim in 0.6 times their
 * colour, cross and plus are stroked a quarter of their size wide (at
 * least 1 px).
 *
 * Left out: line caps, joins and widths of curves (the caller sets them),
 * and clipping to the frame (the caller clips; this only drops what lies
 * beyond the margin).
 */
#ifndef NC_DRAW_H
#define NC_DRAW_H

#include <cairo.h>
#include <math.h>
#include <stdbool.h>

#include "plot/figure.h"
#include "plot/layout.h"

/* Whether (x, y) can be drawn in panel p: finite, and > 0 on a log axis. */
static inline bool usable(const nc_panel *p, double x, double y)
{
    return isfinite(x) && isfinite(y) && (!p->xlog || x > 0) && (!p->ylog || y > 0);
}

/* Sets the line pattern dash (an nc_dash, figure.h) for lines lw px wide. */
void nc_draw_dash(cairo_t *cr, int dash, double lw);

/* Receives one visible piece of a curve, from (ax, ay) to (bx, by) px;
 * joined when it continues the previous piece from that piece's end. */
typedef void (*piece_fn)(void *ctx, double ax, double ay, double bx, double by, bool joined);

/* Calls fn on every visible piece of curve c, in px, clipped to area grown
 * by margin px; consecutive pieces that join continue one path. */
void nc_draw_curve_pieces(const nc_panel *p, const nc_rect *a, const nc_curve *c,
                          double margin, piece_fn fn, void *ctx);

/* Draws a marker of shape (an nc_marker; NC_MARKER_NONE draws a circle)
 * in colour c, size_px across, centred at (x, y) px; the rim of a filled
 * shape is 0.6 pt (L->s px per point). Sets cr's source, line width and
 * dash (none). */
void nc_draw_marker(cairo_t *cr, const layout *L, int shape, nc_rgb c, double size_px, double x,
                    double y);

#endif
