/*
 * layout.h - where everything goes in a figure (internal to src/plot/):
 * the ticks of every axis, the text room around every panel, and every
 * panel's data area, in device pixels; figure.h's "Layout" paragraph.
 *
 * Computed once, deterministically, from the figure size, the panels'
 * ranges and their texts (measured with text.h), never from the data.
 * Tick counts follow the axis length (one tick per X_TICK_SPACING
 * tick-label font sizes on x, per Y_TICK_SPACING on y; MIN_TICKS to
 * MAX_TICKS, style.h), and an axis whose labels would collide gets fewer.
 * Margins come from the measured tick labels, axis labels and titles;
 * panels in one grid column share their left and right margins, panels in
 * one row their top and bottom ones, so that frames and axis labels line
 * up. layout.c also defines nc_panel_to_pixel (figure.h).
 *
 * Left out: checking the figure (figure.c does, before any layout), and
 * whatever depends on the data: legends and notes are placed as they are
 * drawn (legend.h).
 */
#ifndef NC_LAYOUT_H
#define NC_LAYOUT_H

#include <math.h>
#include <stdbool.h>

#include "plot/axes.h"
#include "plot/figure.h"
#include "util/err.h"

#define MAX_GRID 64 /* rows and columns of a figure, at most (checked by figure.c) */

/* One panel: its data area, its ticks, and the text room its ticks,
 * labels and title need around the area. */
typedef struct panel_layout {
    nc_rect area;
    nc_ticks xt, yt;
    double left, right, top, bottom; /* text room around the area (px) */
} panel_layout;

/* The whole figure, W x H px; s px per point, the text sizes in px. */
typedef struct layout {
    int W, H;
    double s;        /* px per point */
    double font_px;  /* base font size */
    double tick_px;  /* tick label font size */
    double digit_h;  /* ink height of a digit in tick labels */
    double pad, gap; /* outer padding, gap between panels (px) */
    double suptitle_h;
    int colL[MAX_GRID], colR[MAX_GRID], rowT[MAX_GRID], rowB[MAX_GRID]; /* shared margins */
    panel_layout *p; /* [npanels] */
} layout;

/* v clamped to [lo, hi]. */
static inline double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Position along an axis of length len px, 0 at lo. */
static inline double axis_pos(double v, double lo, double hi, bool log, double len)
{
    if (log)
        return (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * len;
    return (v - lo) / (hi - lo) * len;
}

/* The whole layout of fig, already checked (figure.c), on W x H px: three
 * rounds of ticks from sizes, margins from ticks, sizes from margins, so
 * that the final ticks and margins agree. On success L->p is owned by the
 * caller (nc_layout_free). Returns 0, NC_ENOMEM, or NC_EINVAL when the
 * text leaves less than 8 px a side for the data of a panel. */
int nc_layout_compute(const nc_figure *fig, int W, int H, layout *L, nc_err *err);

/* Releases L's panels (L->p) and sets L->p to NULL. */
void nc_layout_free(layout *L);

#endif
