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

#include <cairo.h>
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
    char xlab[256], ylab[256]; /* the axis labels drawn: the panel's, with the axis'
                                  shared factor (axes.h) */
    float *ink_cloud; /* the legend plan's ink map of this area (legend.c), or NULL; owned */
    int legend; /* where its legend goes (legend.h nc_legend_plan): a position inside the
                   frame, NC_LEGEND_OUTSIDE (the strip) or NC_LEGEND_NONE */
} panel_layout;

/* What was drawn where, as text: one line per text item and legend
 * (figure.h, the "Layout" metadata). */
typedef struct nc_rec {
    char *s;
    size_t len, cap;
    bool oom;
} nc_rec;

/* The whole figure, W x H px; s px per point, the text sizes in px. */
typedef struct layout {
    int W, H;
    double px_pt;    /* device px per point (dpi / 72) */
    double k;        /* scale of every text size and length: base font / 10 pt */
    double s;        /* px per style point: px_pt * k (style.h lengths are at k = 1) */
    double font_px;  /* base font size */
    double tick_px;  /* tick label font size */
    double digit_h;  /* ink height of a digit in tick labels */
    double pad, gap; /* outer padding, gap between panels (px) */
    double suptitle_h;
    double strip_h;  /* the legend strip below the panels (0: none) */
    nc_rect strip;   /* where it is */
    nc_rec *rec;     /* where drawing records its boxes, or NULL */
    int colL[MAX_GRID], colR[MAX_GRID], rowT[MAX_GRID], rowB[MAX_GRID]; /* shared margins */
    panel_layout *p; /* [np] */
    size_t np;
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

/* The base font size of fig in points: its font_pt, or when 0, 10 pt
 * scaled with the panel size, sqrt(cell area / 6.4 x 4.8 in), between
 * 7.5 and 10 pt (Matplotlib's 10 pt at its default 6.4 x 4.8 in; at
 * 7.5 pt the notes, 0.8x, are 6 pt). */
double nc_layout_font_pt(const nc_figure *fig);

/* The whole layout of fig, already checked (figure.c), on W x H px, with
 * strip_h px kept free below the panels for the legend strip: three
 * rounds of ticks from sizes, margins from ticks, sizes from margins, so
 * that the final ticks and margins agree. On success L->p is owned by the
 * caller (nc_layout_free). Returns 0, NC_ENOMEM, or NC_EINVAL when the
 * text leaves less than 8 px a side for the data of a panel. */
int nc_layout_compute(const nc_figure *fig, int W, int H, double strip_h, layout *L,
                      nc_err *err);

/* Records a box of what (x, y, w, h px, top-left; size_px the text size,
 * 0 for a legend) in L->rec, when recording; what is one word or a
 * quoted phrase. */
void nc_layout_record(layout *L, const char *what, double x, double y, double w, double h,
                      double size_px);

/* Releases L's panels (L->p) and sets L->p to NULL. */
void nc_layout_free(layout *L);

/* Adds one line to L->rec as it is (no newline in it). */
void nc_layout_record_line(layout *L, const char *line);

/* The size (px) at which s is at most maxw px wide: size_px, or smaller,
 * but not below MIN_TEXT_PT (style.h); the caller cuts what is still too
 * long. */
double nc_layout_fit_size(cairo_t *cr, const layout *L, double size_px, const char *s,
                          double maxw);

/* The sizes (px) of a panel's title, x label and y label in fig: their
 * style sizes, shrunk by nc_layout_fit_size to the panel's share of the
 * figure. */
double nc_layout_title_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s);
double nc_layout_xlabel_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s);
double nc_layout_ylabel_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s);

#endif
