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
    nc_ticks xt, yt, ct; /* ticks of x, y and the colour bar */
    double left, right, top, bottom; /* text room around the area (px) */
    char xlab[256], ylab[256]; /* the axis labels drawn: the panel's, with the axis'
                                  shared factor (axes.h) */
    size_t title_split; /* the title's second line starts here (0: one line) */
    double title_px, title_w; /* its size and the width it was fitted to (px) */
    size_t xlab_split;        /* the same for the x label */
    double xlab_px, xlab_w;
    double cbar_x;      /* the colour bar's left edge, px right of the area (0: none) */
    float *ink_cloud; /* the legend plan's cloud map of an ink_w x ink_h area (legend.c), or
                         NULL; owned */
    int ink_w, ink_h;
    char *note_text;  /* the note as drawn (the panel's, and a count of the labels left
                         out), or NULL; owned */
    int legend; /* where its legend goes (legend.h nc_legend_plan): a position inside the
                   frame, NC_LEGEND_OUTSIDE (the strip) or NC_LEGEND_NONE */
    int legend_cols;     /* its columns */
    double legend_px;    /* its font size (px) */
    int note;            /* where the note goes: a position inside, OUTSIDE or NONE */
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
    double strip_h;  /* the strip below the panels: legend and notes (0: none) */
    nc_rect strip;   /* where it is */
    double strip_legend_px; /* the strip legend's font size (px) */
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

/* An axis: its range, and linear, log10 or symmetric-log (figure.h). */
typedef struct nc_scale {
    double lo, hi;
    bool log;
    double lin, dec; /* symmetric log when lin > 0: linear within +-lin, a decade beyond
                        spans dec * lin */
} nc_scale;

static inline nc_scale panel_xscale(const nc_panel *p)
{
    return (nc_scale){p->x0, p->x1, p->xlog, p->xlin, p->xdecade};
}

static inline nc_scale panel_yscale(const nc_panel *p)
{
    return (nc_scale){p->y0, p->y1, p->ylog, 0, 0};
}

/* The coordinate in which the axis is linear: v, log10 v, or the
 * symmetric log of v. */
static inline double scale_u(const nc_scale *s, double v)
{
    if (s->log)
        return log10(v);
    if (!(s->lin > 0) || fabs(v) <= s->lin)
        return v;
    double u = s->lin * (1 + s->dec * log10(fabs(v) / s->lin));
    return v < 0 ? -u : u;
}

/* The value at coordinate u (the inverse of scale_u). */
static inline double scale_v(const nc_scale *s, double u)
{
    if (s->log)
        return pow(10.0, u);
    if (!(s->lin > 0) || fabs(u) <= s->lin)
        return u;
    double v = s->lin * pow(10.0, (fabs(u) / s->lin - 1) / s->dec);
    return u < 0 ? -v : v;
}

/* Position along an axis of length len px, 0 at lo. */
static inline double scale_pos(const nc_scale *s, double v, double len)
{
    double a = scale_u(s, s->lo), b = scale_u(s, s->hi);
    return (scale_u(s, v) - a) / (b - a) * len;
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

/* The size (px, into *size) and the line break of a title or x label s
 * of style size base (px) in maxw px: one line at base or shrunk by
 * nc_layout_fit_size (returns 0), unless that shrinks it below 0.8x: then
 * two lines (returns the byte where the second starts; a space there is
 * not drawn) at the largest size, not below 6 pt, at which both fit; else
 * one line (returns 0), cut when drawn. */
size_t nc_layout_wrap_fit(cairo_t *cr, const layout *L, const char *s, double base,
                          double maxw, double *size);

/* The ink height of s at size (px) drawn as one line (split 0) or two
 * lines broken at split, one font height apart. */
double nc_layout_lines_h(cairo_t *cr, double size, const char *s, size_t split);

/* The sizes (px) of a panel's x label and y label in fig: their style
 * sizes, shrunk by nc_layout_fit_size to the panel's share of the
 * figure. */
double nc_layout_xlabel_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s);
double nc_layout_ylabel_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s);

#endif
