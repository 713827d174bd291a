/*
 * figure.c - layout and cairo rendering of figures (figure.h).
 *
 * Units: the layout is in device pixels (px) of the PNG, s = dpi / 72 px
 * per point; the style constants below are in points, Matplotlib's where
 * it has one (tick length 3.5, tick pad 3.5, label pad 4, title pad 6,
 * frame 0.8, legend handle 2 em). PDF and SVG draw the same px layout
 * under a scale of 72 / dpi.
 *
 * Crisp lines: the frame, ticks and grid get widths of whole pixels (at
 * least 1) and centres on pixel centres (odd widths) or pixel edges (even
 * widths), so that a 0.8 pt frame at 100 dpi is one sharp pixel, not two
 * grey ones. The frame sits just outside the data area, so it never covers
 * a density pixel. Curves, markers and text are anti-aliased as they come.
 *
 * Sections: style, text, validation, layout, drawing (density, lines,
 * markers, axes, legend), output (PNG, PDF, SVG), colours.
 */
#include "plot/figure.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/png.h"
#include "plot/axes.h"

/* ------------------------------------------------------------------ */
/* Style                                                               */
/* ------------------------------------------------------------------ */

#define FONT_FACE "DejaVu Sans"
#define DEFAULT_FONT_PT 10.0
/* text sizes relative to the base font */
#define TICK_FONT 0.9
#define LABEL_FONT 1.0
#define TITLE_FONT 1.1
#define SUPTITLE_FONT 1.2
#define LEGEND_FONT 0.9
#define NOTE_FONT 0.8
#define EXP_FONT 0.7  /* exponent of a "10^k" label, relative to its label */
#define EXP_RAISE 0.6 /* its baseline, raised by this many digit heights */
/* lengths in points */
#define TICK_LEN_PT 3.5
#define MINOR_LEN_PT 2.0
#define TICK_WIDTH_PT 0.8
#define MINOR_WIDTH_PT 0.6
#define FRAME_PT 0.8
#define GRID_PT 0.6
#define REFLINE_PT 1.0
#define TICK_PAD_PT 3.5
#define LABEL_PAD_PT 4.0
#define TITLE_PAD_PT 6.0
#define SUPTITLE_PAD_PT 10.0 /* below the figure title */
#define OUTER_PAD_EM 0.6 /* figure border to text, in base-font ems */
#define GAP_EM 1.2       /* between neighbouring panels' texts */
#define CURVE_PT 1.5     /* default curve width */
#define MARKER_PT 6.0    /* default marker size */
/* tick density: about one label per this many label heights */
#define X_TICK_SPACING 3.5
#define Y_TICK_SPACING 2.5
#define MAX_TICKS 8
#define MIN_TICKS 2
/* legend, in legend-font ems (Matplotlib's defaults) */
#define LEG_BORDERPAD 0.4
#define LEG_LABELSPACING 0.5
#define LEG_HANDLELEN 2.0
#define LEG_HANDLEPAD 0.8
#define LEG_AXESPAD 0.5
#define LEG_ALPHA 0.8    /* opacity of the legend's white box */
#define INK_CELL 4       /* px per cell of the legend placement grid */
#define INK_LINE_WEIGHT 3.0

static const nc_rgb TEXT_RGB = {0.10, 0.10, 0.10};
static const nc_rgb FRAME_RGB = {0.15, 0.15, 0.15};
static const nc_rgb GRID_RGB = {0.88, 0.88, 0.88};
static const nc_rgb LEGEND_EDGE_RGB = {0.80, 0.80, 0.80};
static const nc_rgb NOTE_RGB = {0.30, 0.30, 0.30};

#define MINUS_UTF8 "\xe2\x88\x92" /* U+2212 */
#define PI 3.14159265358979323846

/* ------------------------------------------------------------------ */
/* Text                                                                */
/* ------------------------------------------------------------------ */

/* Ink extents of a string at a size: advance width, ink above and below
 * the baseline (px). */
typedef struct textbox {
    double w, asc, desc;
} textbox;

static void set_font(cairo_t *cr, double size_px)
{
    cairo_select_font_face(cr, FONT_FACE, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size_px);
}

static textbox measure(cairo_t *cr, double size_px, const char *s)
{
    textbox b = {0, 0, 0};
    if (!s || !*s)
        return b;
    set_font(cr, size_px);
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    b.w = e.x_advance;
    b.asc = -e.y_bearing;
    b.desc = e.height + e.y_bearing;
    return b;
}

/* A tick label for drawing: '-' becomes U+2212, and "a^b" splits into the
 * base a and the exponent b. */
typedef struct ticktext {
    char base[3 * NC_TICK_LABEL_MAX];
    char exp[3 * NC_TICK_LABEL_MAX];
} ticktext;

static void copy_minus(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && in[i] && o + 4 < cap; i++) {
        if (in[i] == '-') {
            memcpy(out + o, MINUS_UTF8, 3);
            o += 3;
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = '\0';
}

static ticktext tick_text(const char *label)
{
    ticktext t;
    const char *hat = strchr(label, '^');
    size_t nb = hat ? (size_t)(hat - label) : strlen(label);
    copy_minus(label, nb, t.base, sizeof t.base);
    copy_minus(hat ? hat + 1 : "", hat ? strlen(hat + 1) : 0, t.exp, sizeof t.exp);
    return t;
}

/* Extents of a tick label; digit_h is the ink height of a digit. */
static textbox measure_tick(cairo_t *cr, double size_px, const char *label, double digit_h)
{
    ticktext t = tick_text(label);
    textbox b = measure(cr, size_px, t.base);
    if (t.exp[0]) {
        textbox e = measure(cr, size_px * EXP_FONT, t.exp);
        b.w += e.w;
        b.asc = fmax(b.asc, EXP_RAISE * digit_h + e.asc);
    }
    return b;
}

/* v clamped to [0, 1]; NaN becomes 0 (a caller's bad colour must not
 * reach an integer conversion or put cairo into an error state). */
static double clamp01(double v)
{
    return v > 0 ? (v < 1 ? v : 1) : 0;
}

static void set_rgb(cairo_t *cr, nc_rgb c)
{
    cairo_set_source_rgb(cr, clamp01(c.r), clamp01(c.g), clamp01(c.b));
}

/* Draws a tick label with its left end at x and baseline at y. */
static void draw_tick_text(cairo_t *cr, double size_px, const char *label, double x, double y,
                           double digit_h)
{
    ticktext t = tick_text(label);
    set_font(cr, size_px);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, t.base);
    if (t.exp[0]) {
        double cx, cy;
        cairo_get_current_point(cr, &cx, &cy);
        set_font(cr, size_px * EXP_FONT);
        cairo_move_to(cr, cx, y - EXP_RAISE * digit_h);
        cairo_show_text(cr, t.exp);
    }
}

/* Draws s with its advance box's horizontal position given by halign
 * (0 left, 0.5 centre, 1 right of x) and its baseline at y. */
static void draw_text(cairo_t *cr, double size_px, const char *s, double x, double y,
                      double halign)
{
    if (!s || !*s)
        return;
    textbox b = measure(cr, size_px, s);
    cairo_move_to(cr, x - halign * b.w, y);
    cairo_show_text(cr, s);
}

/* ------------------------------------------------------------------ */
/* Validation                                                          */
/* ------------------------------------------------------------------ */

#define MAX_SIDE_PX 20000
#define MAX_GRID 64

static int check_axis(size_t k, char name, double lo, double hi, bool log, nc_err *err)
{
    if (!(isfinite(lo) && isfinite(hi) && lo < hi))
        return nc_err_set(err, NC_EINVAL, "figure: panel %zu: %c range [%g, %g], expected finite "
                                          "%c0 < %c1",
                          k, name, lo, hi, name, name);
    if (log && !(lo > 0.0))
        return nc_err_set(err, NC_EINVAL,
                          "figure: panel %zu: log %c range [%g, %g], expected %c0 > 0", k, name,
                          lo, hi, name);
    return 0;
}

static int check_figure(const nc_figure *fig, int *W, int *H, nc_err *err)
{
    if (!(fig->width_in > 0 && fig->height_in > 0 && isfinite(fig->width_in) &&
          isfinite(fig->height_in)))
        return nc_err_set(err, NC_EINVAL, "figure: size %g x %g in, expected positive inches",
                          fig->width_in, fig->height_in);
    if (!(fig->dpi >= 10 && fig->dpi <= 2400))
        return nc_err_set(err, NC_EINVAL, "figure: dpi %g, expected 10 to 2400", fig->dpi);
    double w = round(fig->width_in * fig->dpi), h = round(fig->height_in * fig->dpi);
    if (!(w >= 16 && h >= 16 && w <= MAX_SIDE_PX && h <= MAX_SIDE_PX))
        return nc_err_set(err, NC_EINVAL, "figure: %g x %g pixels, expected 16 to %d a side", w, h,
                          MAX_SIDE_PX);
    if (fig->rows < 1 || fig->cols < 1 || fig->rows > MAX_GRID || fig->cols > MAX_GRID)
        return nc_err_set(err, NC_EINVAL, "figure: grid %d x %d, expected 1 to %d a side",
                          fig->rows, fig->cols, MAX_GRID);
    if (!fig->panels || fig->npanels < 1 || fig->npanels > (size_t)fig->rows * fig->cols)
        return nc_err_set(err, NC_EINVAL, "figure: %zu panels for a %d x %d grid", fig->npanels,
                          fig->rows, fig->cols);
    if (!(fig->font_pt == 0 || (fig->font_pt >= 2 && fig->font_pt <= 72)))
        return nc_err_set(err, NC_EINVAL, "figure: font size %g pt, expected 2 to 72",
                          fig->font_pt);
    for (size_t k = 0; k < fig->npanels; k++) {
        const nc_panel *p = &fig->panels[k];
        int rc = check_axis(k, 'x', p->x0, p->x1, p->xlog, err);
        if (!rc)
            rc = check_axis(k, 'y', p->y0, p->y1, p->ylog, err);
        if (rc)
            return rc;
        if (p->density && (p->xlog || p->ylog))
            return nc_err_set(err, NC_EINVAL,
                              "figure: panel %zu: a density cloud needs linear axes (bin log10 of "
                              "the data instead)",
                              k);
        if (p->legend_pos < NC_LEGEND_AUTO || p->legend_pos > NC_LEGEND_NONE)
            return nc_err_set(err, NC_EINVAL, "figure: panel %zu: legend position %d, expected 0 "
                                              "to %d",
                              k, p->legend_pos, NC_LEGEND_NONE);
        for (size_t i = 0; i < p->ncurves; i++) {
            const nc_curve *c = &p->curves[i];
            if (c->n && (!c->x || !c->y))
                return nc_err_set(err, NC_EINVAL, "figure: panel %zu: curve %zu has no data", k,
                                  i);
            if (c->marker < 0 || c->marker >= NC_MARKER_COUNT)
                return nc_err_set(err, NC_EINVAL, "figure: panel %zu: curve %zu: marker %d, "
                                                  "expected 0 to %d",
                                  k, i, c->marker, NC_MARKER_COUNT - 1);
        }
        for (size_t i = 0; i < p->nmarks; i++)
            if (p->marks[i].shape < 0 || p->marks[i].shape >= NC_MARKER_COUNT)
                return nc_err_set(err, NC_EINVAL, "figure: panel %zu: mark %zu: shape %d, "
                                                  "expected 0 to %d",
                                  k, i, p->marks[i].shape, NC_MARKER_COUNT - 1);
        if ((p->ncurves && !p->curves) || (p->nmarks && !p->marks) ||
            (p->nvlines && !p->vlines) || (p->nhlines && !p->hlines))
            return nc_err_set(err, NC_EINVAL, "figure: panel %zu: a count without its array", k);
    }
    *W = (int)w;
    *H = (int)h;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Layout                                                              */
/* ------------------------------------------------------------------ */

typedef struct panel_layout {
    nc_rect area;
    nc_ticks xt, yt;
    double left, right, top, bottom; /* text room around the area (px) */
} panel_layout;

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

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int axis_ticks(double lo, double hi, bool log, int target, nc_ticks *t)
{
    return log ? nc_ticks_log(lo, hi, target, t, NULL) : nc_ticks_linear(lo, hi, target, t, NULL);
}

/* Position along an axis of length len px, 0 at lo. */
static double axis_pos(double v, double lo, double hi, bool log, double len)
{
    if (log)
        return (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * len;
    return (v - lo) / (hi - lo) * len;
}

/* Ticks for an axis of len px whose labels must not collide: start from
 * the target the length suggests and take fewer until they fit. */
static void fit_ticks(cairo_t *cr, const layout *L, double lo, double hi, bool log, double len,
                      bool horizontal, nc_ticks *t)
{
    double per = (horizontal ? X_TICK_SPACING : Y_TICK_SPACING) * L->tick_px;
    int target = (int)clampd(floor(len / per), MIN_TICKS, MAX_TICKS);
    for (; target >= 1; target--) {
        if (axis_ticks(lo, hi, log, target, t) != 0)
            return; /* cannot happen after check_figure; keep no ticks */
        bool fits = true;
        for (size_t i = 1; i < t->n && fits; i++) {
            double d = axis_pos(t->v[i], lo, hi, log, len) -
                       axis_pos(t->v[i - 1], lo, hi, log, len);
            if (horizontal) {
                double wa = measure_tick(cr, L->tick_px, t->label[i - 1], L->digit_h).w;
                double wb = measure_tick(cr, L->tick_px, t->label[i], L->digit_h).w;
                fits = d >= 1.1 * ((wa + wb) / 2 + 0.6 * L->tick_px);
            } else {
                fits = d >= 1.1 * (L->digit_h + 0.6 * L->tick_px);
            }
        }
        if (fits)
            return;
    }
}

/* Text room around panel k's area, from its current ticks; dw is the
 * current width of the area (for labels that stick out sideways). */
static void panel_margins(cairo_t *cr, const layout *L, const nc_panel *p, double dw,
                          panel_layout *pl)
{
    double s = L->s, tick_room = (TICK_LEN_PT + TICK_PAD_PT) * s + ceil(FRAME_PT * s);
    double ytw = 0, xth = 0, ytop = 0;
    for (size_t i = 0; i < pl->yt.n; i++) {
        textbox b = measure_tick(cr, L->tick_px, pl->yt.label[i], L->digit_h);
        ytw = fmax(ytw, b.w);
        ytop = fmax(ytop, b.asc - L->digit_h / 2);
    }
    for (size_t i = 0; i < pl->xt.n; i++)
        xth = fmax(xth, measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).asc);
    textbox yl = measure(cr, L->font_px * LABEL_FONT, p->ylabel);
    textbox xl = measure(cr, L->font_px * LABEL_FONT, p->xlabel);
    textbox ti = measure(cr, L->font_px * TITLE_FONT, p->title);

    pl->left = tick_room + ytw;
    if (p->ylabel && *p->ylabel)
        pl->left += LABEL_PAD_PT * s + yl.asc + yl.desc;
    pl->bottom = tick_room + xth;
    if (p->xlabel && *p->xlabel)
        pl->bottom += LABEL_PAD_PT * s + xl.asc + xl.desc;
    pl->top = p->title && *p->title ? TITLE_PAD_PT * s + ti.asc + ti.desc : ytop;
    /* the first and last x tick labels may stick out sideways */
    pl->right = 0;
    if (pl->xt.n) {
        size_t n = pl->xt.n;
        double f0 = axis_pos(pl->xt.v[0], p->x0, p->x1, p->xlog, 1.0);
        double f1 = axis_pos(pl->xt.v[n - 1], p->x0, p->x1, p->xlog, 1.0);
        double w0 = measure_tick(cr, L->tick_px, pl->xt.label[0], L->digit_h).w;
        double w1 = measure_tick(cr, L->tick_px, pl->xt.label[n - 1], L->digit_h).w;
        pl->left = fmax(pl->left, w0 / 2 - f0 * dw);
        pl->right = fmax(0, w1 / 2 - (1 - f1) * dw);
    }
}

/* Places every panel's area from the shared margins and sets the data
 * size of each cell in *dw, *dh; returns 0, or -1 when the text leaves
 * less than 8 pixels for the data. */
static int place_areas(const nc_figure *fig, layout *L, int *dw, int *dh)
{
    int rows = fig->rows, cols = fig->cols;
    for (int c = 0; c < cols; c++)
        L->colL[c] = L->colR[c] = 0;
    for (int r = 0; r < rows; r++)
        L->rowT[r] = L->rowB[r] = 0;
    for (size_t k = 0; k < fig->npanels; k++) {
        int r = (int)k / cols, c = (int)k % cols;
        const panel_layout *pl = &L->p[k];
        L->colL[c] = (int)fmax(L->colL[c], ceil(pl->left));
        L->colR[c] = (int)fmax(L->colR[c], ceil(pl->right));
        L->rowT[r] = (int)fmax(L->rowT[r], ceil(pl->top));
        L->rowB[r] = (int)fmax(L->rowB[r], ceil(pl->bottom));
    }
    double usedw = 2 * L->pad + (cols - 1) * L->gap, usedh = 2 * L->pad + (rows - 1) * L->gap;
    if (L->suptitle_h > 0)
        usedh += L->suptitle_h + SUPTITLE_PAD_PT * L->s;
    for (int c = 0; c < cols; c++)
        usedw += L->colL[c] + L->colR[c];
    for (int r = 0; r < rows; r++)
        usedh += L->rowT[r] + L->rowB[r];
    *dw = (int)floor((L->W - usedw) / cols);
    *dh = (int)floor((L->H - usedh) / rows);
    if (*dw < 8 || *dh < 8)
        return -1;
    /* leftover pixels from the rounding: split evenly around the grid */
    double x = L->pad + floor((L->W - usedw - (double)*dw * cols) / 2);
    double ytop = L->pad + floor((L->H - usedh - (double)*dh * rows) / 2);
    if (L->suptitle_h > 0)
        ytop += L->suptitle_h + SUPTITLE_PAD_PT * L->s;
    for (size_t k = 0; k < fig->npanels; k++) {
        int r = (int)k / cols, c = (int)k % cols;
        double xx = x, yy = ytop;
        for (int i = 0; i < c; i++)
            xx += L->colL[i] + *dw + L->colR[i] + L->gap;
        for (int i = 0; i < r; i++)
            yy += L->rowT[i] + *dh + L->rowB[i] + L->gap;
        L->p[k].area = (nc_rect){(int)round(xx + L->colL[c]), (int)round(yy + L->rowT[r]), *dw,
                                 *dh};
    }
    return 0;
}

static cairo_font_options_t *font_options(void)
{
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    return fo;
}

static void layout_free(layout *L)
{
    free(L->p);
    L->p = NULL;
}

/* The whole layout of fig (already checked): three rounds of ticks from
 * sizes, margins from ticks, sizes from margins, so that the final ticks
 * and margins agree. */
static int layout_compute(const nc_figure *fig, int W, int H, layout *L, nc_err *err)
{
    memset(L, 0, sizeof *L);
    L->W = W;
    L->H = H;
    L->s = fig->dpi / 72.0;
    L->font_px = (fig->font_pt > 0 ? fig->font_pt : DEFAULT_FONT_PT) * L->s;
    L->tick_px = L->font_px * TICK_FONT;
    L->pad = OUTER_PAD_EM * L->font_px;
    L->gap = GAP_EM * L->font_px;
    L->p = calloc(fig->npanels, sizeof *L->p);
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(surf);
    cairo_font_options_t *fo = font_options();
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    int rc = 0;
    if (!L->p || cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory for the layout");
        goto out;
    }
    L->digit_h = measure(cr, L->tick_px, "0").asc;
    L->suptitle_h = 0;
    if (fig->title && *fig->title) {
        textbox b = measure(cr, L->font_px * SUPTITLE_FONT, fig->title);
        L->suptitle_h = b.asc + b.desc;
    }
    /* first guess of the data size: the cell less a fifth */
    int dw = (int)(0.8 * W / fig->cols), dh = (int)(0.8 * H / fig->rows);
    for (int round = 0; round < 3; round++) {
        for (size_t k = 0; k < fig->npanels; k++) {
            const nc_panel *p = &fig->panels[k];
            panel_layout *pl = &L->p[k];
            fit_ticks(cr, L, p->x0, p->x1, p->xlog, dw, true, &pl->xt);
            fit_ticks(cr, L, p->y0, p->y1, p->ylog, dh, false, &pl->yt);
            panel_margins(cr, L, p, dw, pl);
        }
        if (place_areas(fig, L, &dw, &dh) != 0) {
            rc = nc_err_set(err, NC_EINVAL,
                            "figure: %g x %g in at %g dpi leaves no room for %d x %d panels and "
                            "their text",
                            fig->width_in, fig->height_in, fig->dpi, fig->rows, fig->cols);
            goto out;
        }
    }
out:
    cairo_destroy(cr);
    cairo_surface_destroy(surf);
    if (rc)
        layout_free(L);
    return rc;
}

int nc_figure_layout(const nc_figure *fig, size_t k, nc_rect *area, nc_err *err)
{
    int W, H;
    int rc = check_figure(fig, &W, &H, err);
    if (rc)
        return rc;
    if (k >= fig->npanels)
        return nc_err_set(err, NC_EINVAL, "figure: panel %zu of %zu", k, fig->npanels);
    layout L;
    rc = layout_compute(fig, W, H, &L, err);
    if (rc)
        return rc;
    *area = L.p[k].area;
    layout_free(&L);
    return 0;
}

int nc_figure_data_area(const nc_figure *fig, size_t k, int *w, int *h, nc_err *err)
{
    nc_rect a;
    int rc = nc_figure_layout(fig, k, &a, err);
    if (rc)
        return rc;
    *w = a.w;
    *h = a.h;
    return 0;
}

void nc_panel_to_pixel(const nc_panel *p, const nc_rect *area, double x, double y, double *px,
                       double *py)
{
    *px = area->x + axis_pos(x, p->x0, p->x1, p->xlog, area->w);
    *py = area->y + area->h - axis_pos(y, p->y0, p->y1, p->ylog, area->h);
}

/* ------------------------------------------------------------------ */
/* Drawing: helpers                                                    */
/* ------------------------------------------------------------------ */

/* A line width of whole pixels, at least one. */
static double crisp_width(double w_px)
{
    return fmax(1.0, round(w_px));
}

/* A line centre for width lw (whole px) near x: on a pixel centre for odd
 * widths, on a pixel edge for even ones, so the line covers whole pixels. */
static double crisp_pos(double x, double lw)
{
    return ((int)lw % 2) ? floor(x) + 0.5 : round(x);
}

static void set_dash(cairo_t *cr, bool dashed, double lw)
{
    if (dashed) {
        double d[2] = {3.7 * lw, 1.6 * lw};
        cairo_set_dash(cr, d, 2, 0);
    } else {
        cairo_set_dash(cr, NULL, 0, 0);
    }
}

static void clip_area(cairo_t *cr, const nc_rect *a)
{
    cairo_rectangle(cr, a->x, a->y, a->w, a->h);
    cairo_clip(cr);
}

static bool usable(const nc_panel *p, double x, double y)
{
    return isfinite(x) && isfinite(y) && (!p->xlog || x > 0) && (!p->ylog || y > 0);
}

/* Liang-Barsky: clips the segment (x0,y0)-(x1,y1) to [xa,xb] x [ya,yb];
 * returns false when nothing is left, else the kept parameter range. */
static bool clip_segment(double x0, double y0, double x1, double y1, double xa, double xb,
                         double ya, double yb, double *t0, double *t1)
{
    double dx = x1 - x0, dy = y1 - y0;
    double p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - xa, xb - x0, y0 - ya, yb - y0};
    *t0 = 0.0;
    *t1 = 1.0;
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0.0) {
            if (q[i] < 0.0)
                return false;
            continue;
        }
        double r = q[i] / p[i];
        if (p[i] < 0.0)
            *t0 = fmax(*t0, r);
        else
            *t1 = fmin(*t1, r);
    }
    return *t0 <= *t1;
}

/* Calls fn on every visible piece of curve c, in px, clipped to area grown
 * by margin px; consecutive pieces that join continue one path. */
typedef void (*piece_fn)(void *ctx, double ax, double ay, double bx, double by, bool joined);

static void curve_pieces(const nc_panel *p, const nc_rect *a, const nc_curve *c, double margin,
                         piece_fn fn, void *ctx)
{
    double xa = a->x - margin, xb = a->x + a->w + margin;
    double ya = a->y - margin, yb = a->y + a->h + margin;
    bool pen = false; /* the previous piece ended at the current point */
    for (size_t i = 1; i < c->n; i++) {
        if (!usable(p, c->x[i - 1], c->y[i - 1]) || !usable(p, c->x[i], c->y[i])) {
            pen = false;
            continue;
        }
        double x0, y0, x1, y1, t0, t1;
        nc_panel_to_pixel(p, a, c->x[i - 1], c->y[i - 1], &x0, &y0);
        nc_panel_to_pixel(p, a, c->x[i], c->y[i], &x1, &y1);
        /* values near DBL_MAX map beyond double range: a break, like NaN */
        if (!(isfinite(x0) && isfinite(y0) && isfinite(x1) && isfinite(y1)) ||
            !clip_segment(x0, y0, x1, y1, xa, xb, ya, yb, &t0, &t1)) {
            pen = false;
            continue;
        }
        double dx = x1 - x0, dy = y1 - y0;
        fn(ctx, x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy, pen && t0 == 0.0);
        pen = t1 == 1.0;
    }
}

static void path_piece(void *ctx, double ax, double ay, double bx, double by, bool joined)
{
    cairo_t *cr = ctx;
    if (!joined)
        cairo_move_to(cr, ax, ay);
    cairo_line_to(cr, bx, by);
}

/* Marker path centred at (x, y), r = half the size (px). */
static void marker_path(cairo_t *cr, int shape, double x, double y, double r)
{
    switch (shape) {
    case NC_MARKER_SQUARE:
        cairo_rectangle(cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
        break;
    case NC_MARKER_TRIANGLE:
    case NC_MARKER_TRIANGLE_DOWN: {
        double sgn = shape == NC_MARKER_TRIANGLE ? 1.0 : -1.0, R = 1.15 * r;
        cairo_move_to(cr, x, y - sgn * R);
        cairo_line_to(cr, x + 0.866 * R, y + sgn * 0.5 * R);
        cairo_line_to(cr, x - 0.866 * R, y + sgn * 0.5 * R);
        cairo_close_path(cr);
        break;
    }
    case NC_MARKER_DIAMOND:
        cairo_move_to(cr, x, y - 1.1 * r);
        cairo_line_to(cr, x + 0.75 * r, y);
        cairo_line_to(cr, x, y + 1.1 * r);
        cairo_line_to(cr, x - 0.75 * r, y);
        cairo_close_path(cr);
        break;
    case NC_MARKER_CROSS:
        cairo_move_to(cr, x - 0.8 * r, y - 0.8 * r);
        cairo_line_to(cr, x + 0.8 * r, y + 0.8 * r);
        cairo_move_to(cr, x - 0.8 * r, y + 0.8 * r);
        cairo_line_to(cr, x + 0.8 * r, y - 0.8 * r);
        break;
    case NC_MARKER_PLUS:
        cairo_move_to(cr, x - r, y);
        cairo_line_to(cr, x + r, y);
        cairo_move_to(cr, x, y - r);
        cairo_line_to(cr, x, y + r);
        break;
    default: /* circle */
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, r, 0, 2 * PI);
        break;
    }
}

static void draw_marker(cairo_t *cr, const layout *L, int shape, nc_rgb c, double size_px,
                        double x, double y)
{
    cairo_new_path(cr);
    marker_path(cr, shape, x, y, size_px / 2);
    cairo_set_dash(cr, NULL, 0, 0);
    if (shape == NC_MARKER_CROSS || shape == NC_MARKER_PLUS) {
        set_rgb(cr, c);
        cairo_set_line_width(cr, fmax(1.0, 0.25 * size_px));
        cairo_stroke(cr);
        return;
    }
    set_rgb(cr, c);
    cairo_fill_preserve(cr);
    /* a darker rim keeps markers distinct on a cloud of the same hue */
    cairo_set_source_rgb(cr, 0.6 * clamp01(c.r), 0.6 * clamp01(c.g), 0.6 * clamp01(c.b));
    cairo_set_line_width(cr, 0.6 * L->s);
    cairo_stroke(cr);
}

/* ------------------------------------------------------------------ */
/* Drawing: the density cloud                                          */
/* ------------------------------------------------------------------ */

#define LUT_MAX 65536

/* alpha(c) of figure.h, for c >= 1; inv_log_max = 1 / log(cmax), or 0
 * when cmax is 1 (every drawn pixel is then the densest: opaque). */
static double density_alpha(uint32_t c, double inv_log_max)
{
    if (inv_log_max == 0.0)
        return 1.0;
    return NC_DENSITY_ALPHA_MIN + (1.0 - NC_DENSITY_ALPHA_MIN) * log((double)c) * inv_log_max;
}

static uint32_t argb(double a, double r, double g, double b)
{
    /* premultiplied, as cairo's ARGB32 wants */
    uint32_t A = (uint32_t)(255.0 * a + 0.5);
    uint32_t R = (uint32_t)(255.0 * clamp01(r) * a + 0.5);
    uint32_t G = (uint32_t)(255.0 * clamp01(g) * a + 0.5);
    uint32_t B = (uint32_t)(255.0 * clamp01(b) * a + 0.5);
    return A << 24 | R << 16 | G << 8 | B;
}

/* The dot radius (px) of a density point at this resolution: 0 up to 144
 * dpi, then floor(dpi / 144), so that a point prints about 1 pt across
 * (Matplotlib's scatter with s = 1) instead of as an invisible speck. */
static int dot_radius(double dpi)
{
    return (int)floor(dpi / 144.0);
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* Max filter of radius r (a (2r+1)^2 square), in place, over a w x h
 * image of premultiplied ARGB32 words (stride in bytes). Comparing whole
 * words compares alpha first: each pixel shows its most opaque neighbour,
 * which for a monochrome cloud is also the densest; colours break ties,
 * deterministically. Vertical pass, keeping the last r original rows in
 * ring[r][w], then horizontal through row[w]. */
static void spread(unsigned char *data, int stride, int w, int h, int r, uint32_t *ring,
                   uint32_t *row)
{
    size_t rowbytes = (size_t)w * sizeof *row;
    for (int j = 0; j < h; j++) {
        uint32_t *out = (uint32_t *)(void *)(data + (size_t)j * (size_t)stride);
        memcpy(row, out, rowbytes); /* original row j */
        for (int k = j + 1; k <= j + r && k < h; k++) {
            const uint32_t *in = (const uint32_t *)(const void *)(data + (size_t)k * stride);
            for (int i = 0; i < w; i++)
                out[i] = max_u32(out[i], in[i]); /* rows below: still original */
        }
        for (int k = j - r < 0 ? 0 : j - r; k < j; k++) {
            const uint32_t *in = ring + (size_t)(k % r) * w; /* rows above: saved */
            for (int i = 0; i < w; i++)
                out[i] = max_u32(out[i], in[i]);
        }
        memcpy(ring + (size_t)(j % r) * w, row, rowbytes);
        memcpy(row, out, rowbytes);
        /* neighbours k columns right, then left (loops the compiler vectorizes) */
        for (int k = 1; k <= r && k < w; k++) {
            for (int i = 0; i < w - k; i++)
                out[i] = max_u32(out[i], row[i + k]);
            for (int i = k; i < w; i++)
                out[i] = max_u32(out[i], row[i - k]);
        }
    }
}

/* The cloud as a premultiplied ARGB32 image of d->w x d->h, points spread
 * to dots of radius r, or NULL (out of memory). Monochrome rasters go
 * through a table of pixel values by count; coloured ones compute each
 * pixel's mean colour. */
static cairo_surface_t *density_image(const nc_density *d, nc_rgb color, int r)
{
    uint32_t cmax = 0;
    nc_density_total(d, &cmax);
    double inv_log_max = cmax > 1 ? 1.0 / log((double)cmax) : 0.0;
    size_t nlut = (cmax < LUT_MAX ? cmax : LUT_MAX - 1) + 1;
    uint32_t *lut = malloc(nlut * sizeof *lut);
    float *alut = malloc(nlut * sizeof *alut);
    uint32_t *tmp = r > 0 ? malloc((size_t)(r + 1) * (size_t)d->w * sizeof *tmp) : NULL;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, d->w, d->h);
    if (!lut || !alut || (r > 0 && !tmp) || cairo_surface_status(img) != CAIRO_STATUS_SUCCESS) {
        free(lut);
        free(alut);
        free(tmp);
        cairo_surface_destroy(img);
        return NULL;
    }
    lut[0] = 0;
    alut[0] = 0;
    for (size_t c = 1; c < nlut; c++) {
        alut[c] = (float)density_alpha((uint32_t)c, inv_log_max);
        lut[c] = argb(alut[c], color.r, color.g, color.b);
    }
    cairo_surface_flush(img);
    unsigned char *data = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    const int w = d->w, h = d->h; /* locals: stores to the image cannot change them */
    for (int j = 0; j < h; j++) {
        uint32_t *row = (uint32_t *)(void *)(data + (size_t)j * (size_t)stride);
        const uint32_t *cnt = d->count + (size_t)j * (size_t)w;
        for (int i = 0; i < w; i++) {
            uint32_t c = cnt[i];
            if (c == 0) {
                row[i] = 0;
            } else if (!d->rgb) {
                row[i] = c < nlut ? lut[c] : argb(density_alpha(c, inv_log_max), color.r,
                                                   color.g, color.b);
            } else {
                const float *sum = d->rgb + 3 * ((size_t)j * (size_t)w + (size_t)i);
                double a = c < nlut ? alut[c] : density_alpha(c, inv_log_max);
                row[i] = argb(a, sum[0] / (double)c, sum[1] / (double)c, sum[2] / (double)c);
            }
        }
    }
    if (tmp)
        spread(data, stride, w, h, r, tmp + w, tmp);
    cairo_surface_mark_dirty(img);
    free(lut);
    free(alut);
    free(tmp);
    return img;
}

/* The device rectangle the raster covers: its own range placed on the
 * panel's axes (linear, checked). */
static void density_place(const nc_panel *p, const nc_rect *a, const nc_density *d, double *X0,
                          double *Y0, double *sx, double *sy)
{
    double xl, xr, yt, yb;
    nc_panel_to_pixel(p, a, d->x0, d->y1, &xl, &yt);
    nc_panel_to_pixel(p, a, d->x1, d->y0, &xr, &yb);
    *X0 = xl;
    *Y0 = yt;
    *sx = (xr - xl) / d->w;
    *sy = (yb - yt) / d->h;
}

static void draw_density(cairo_t *cr, const nc_panel *p, const nc_rect *a, cairo_surface_t *img)
{
    const nc_density *d = p->density;
    double X0, Y0, sx, sy;
    density_place(p, a, d, &X0, &Y0, &sx, &sy);
    cairo_save(cr);
    clip_area(cr, a);
    cairo_translate(cr, X0, Y0);
    cairo_scale(cr, sx, sy);
    cairo_set_source_surface(cr, img, 0, 0);
    /* pixels stay sharp squares unless the raster is shrunk */
    cairo_pattern_set_filter(cairo_get_source(cr),
                             sx >= 1 - 1e-9 && sy >= 1 - 1e-9 ? CAIRO_FILTER_NEAREST
                                                              : CAIRO_FILTER_GOOD);
    cairo_paint(cr);
    cairo_restore(cr);
}

/* ------------------------------------------------------------------ */
/* Drawing: grid, reference lines, curves, markers                     */
/* ------------------------------------------------------------------ */

static void draw_grid(cairo_t *cr, const layout *L, const nc_panel *p, const panel_layout *pl)
{
    const nc_rect *a = &pl->area;
    double lw = crisp_width(GRID_PT * L->s);
    cairo_set_line_width(cr, lw);
    cairo_set_dash(cr, NULL, 0, 0);
    set_rgb(cr, GRID_RGB);
    for (size_t i = 0; i < pl->xt.n; i++) {
        double x = crisp_pos(a->x + axis_pos(pl->xt.v[i], p->x0, p->x1, p->xlog, a->w), lw);
        cairo_move_to(cr, x, a->y);
        cairo_line_to(cr, x, a->y + a->h);
    }
    for (size_t i = 0; i < pl->yt.n; i++) {
        double y = crisp_pos(a->y + a->h - axis_pos(pl->yt.v[i], p->y0, p->y1, p->ylog, a->h),
                             lw);
        cairo_move_to(cr, a->x, y);
        cairo_line_to(cr, a->x + a->w, y);
    }
    cairo_stroke(cr);
}

static void draw_lines_curves_marks(cairo_t *cr, const layout *L, const nc_panel *p,
                                    const nc_rect *a)
{
    cairo_save(cr);
    clip_area(cr, a);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    double lw = REFLINE_PT * L->s;
    cairo_set_line_width(cr, lw);
    for (size_t i = 0; i < p->nvlines; i++) {
        const nc_vline *v = &p->vlines[i];
        if (!usable(p, v->x, p->y0))
            continue;
        double x, y;
        nc_panel_to_pixel(p, a, v->x, p->y0, &x, &y);
        if (!(x > a->x - lw && x < a->x + a->w + lw))
            continue; /* outside (or beyond double range) */
        set_dash(cr, v->dashed, lw);
        set_rgb(cr, v->color);
        cairo_move_to(cr, x, a->y);
        cairo_line_to(cr, x, a->y + a->h);
        cairo_stroke(cr);
    }
    for (size_t i = 0; i < p->nhlines; i++) {
        const nc_hline *h = &p->hlines[i];
        if (!usable(p, p->x0, h->y))
            continue;
        double x, y;
        nc_panel_to_pixel(p, a, p->x0, h->y, &x, &y);
        if (!(y > a->y - lw && y < a->y + a->h + lw))
            continue;
        set_dash(cr, h->dashed, lw);
        set_rgb(cr, h->color);
        cairo_move_to(cr, a->x, y);
        cairo_line_to(cr, a->x + a->w, y);
        cairo_stroke(cr);
    }
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        double w = (c->width_pt > 0 ? c->width_pt : CURVE_PT) * L->s;
        cairo_new_path(cr);
        curve_pieces(p, a, c, 4 * w, path_piece, cr);
        cairo_set_line_width(cr, w);
        set_dash(cr, c->dashed, w);
        cairo_set_line_cap(cr, c->dashed ? CAIRO_LINE_CAP_BUTT : CAIRO_LINE_CAP_ROUND);
        set_rgb(cr, c->color);
        cairo_stroke(cr);
    }
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        if (c->marker == NC_MARKER_NONE)
            continue;
        double size = (c->marker_pt > 0 ? c->marker_pt : MARKER_PT) * L->s;
        for (size_t j = 0; j < c->n; j++) {
            if (!usable(p, c->x[j], c->y[j]))
                continue;
            double x, y;
            nc_panel_to_pixel(p, a, c->x[j], c->y[j], &x, &y);
            if (x > a->x - size && x < a->x + a->w + size && y > a->y - size &&
                y < a->y + a->h + size)
                draw_marker(cr, L, c->marker, c->color, size, x, y);
        }
    }
    for (size_t i = 0; i < p->nmarks; i++) {
        const nc_mark *m = &p->marks[i];
        if (!usable(p, m->x, m->y))
            continue;
        double size = (m->size_pt > 0 ? m->size_pt : MARKER_PT) * L->s, x, y;
        nc_panel_to_pixel(p, a, m->x, m->y, &x, &y);
        if (x > a->x - size && x < a->x + a->w + size && y > a->y - size && y < a->y + a->h + size)
            draw_marker(cr, L, m->shape, m->color, size, x, y);
    }
    cairo_restore(cr);
}

/* ------------------------------------------------------------------ */
/* Drawing: frame, ticks, labels, titles                               */
/* ------------------------------------------------------------------ */

static void draw_axes(cairo_t *cr, const layout *L, const nc_panel *p, const panel_layout *pl,
                      int row, int col)
{
    const nc_rect *a = &pl->area;
    double s = L->s, fw = crisp_width(FRAME_PT * s);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_MITER);
    /* frame just outside the data area */
    set_rgb(cr, FRAME_RGB);
    cairo_set_line_width(cr, fw);
    cairo_rectangle(cr, a->x - fw / 2, a->y - fw / 2, a->w + fw, a->h + fw);
    cairo_stroke(cr);

    /* ticks, outward from the frame */
    double bottom = a->y + a->h, left = a->x;
    for (int minor = 0; minor < 2; minor++) {
        double tw = crisp_width((minor ? MINOR_WIDTH_PT : TICK_WIDTH_PT) * s);
        double tl = fw + (minor ? MINOR_LEN_PT : TICK_LEN_PT) * s;
        cairo_set_line_width(cr, tw);
        const nc_ticks *xt = &pl->xt, *yt = &pl->yt;
        size_t nx = minor ? xt->nminor : xt->n, ny = minor ? yt->nminor : yt->n;
        for (size_t i = 0; i < nx; i++) {
            double v = minor ? xt->minor[i] : xt->v[i];
            double x = crisp_pos(a->x + axis_pos(v, p->x0, p->x1, p->xlog, a->w), tw);
            cairo_move_to(cr, x, bottom);
            cairo_line_to(cr, x, bottom + tl);
        }
        for (size_t i = 0; i < ny; i++) {
            double v = minor ? yt->minor[i] : yt->v[i];
            double y = crisp_pos(bottom - axis_pos(v, p->y0, p->y1, p->ylog, a->h), tw);
            cairo_move_to(cr, left, y);
            cairo_line_to(cr, left - tl, y);
        }
        cairo_stroke(cr);
    }

    /* tick labels: x centred under their tick on one baseline, y
     * right-aligned and centred on theirs */
    set_rgb(cr, TEXT_RGB);
    double room = fw + (TICK_LEN_PT + TICK_PAD_PT) * s, xasc = 0;
    for (size_t i = 0; i < pl->xt.n; i++)
        xasc = fmax(xasc, measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).asc);
    for (size_t i = 0; i < pl->xt.n; i++) {
        double w = measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).w;
        double x = a->x + axis_pos(pl->xt.v[i], p->x0, p->x1, p->xlog, a->w);
        draw_tick_text(cr, L->tick_px, pl->xt.label[i], x - w / 2, bottom + room + xasc,
                       L->digit_h);
    }
    for (size_t i = 0; i < pl->yt.n; i++) {
        double w = measure_tick(cr, L->tick_px, pl->yt.label[i], L->digit_h).w;
        double y = bottom - axis_pos(pl->yt.v[i], p->y0, p->y1, p->ylog, a->h);
        draw_tick_text(cr, L->tick_px, pl->yt.label[i], left - room - w, y + L->digit_h / 2,
                       L->digit_h);
    }

    /* axis labels at the outer edge of the shared margins, so they line up
     * across the grid; the title just above the frame */
    double lab_px = L->font_px * LABEL_FONT;
    if (p->xlabel && *p->xlabel) {
        textbox b = measure(cr, lab_px, p->xlabel);
        draw_text(cr, lab_px, p->xlabel, a->x + a->w / 2.0, bottom + L->rowB[row] - b.desc, 0.5);
    }
    if (p->ylabel && *p->ylabel) {
        textbox b = measure(cr, lab_px, p->ylabel);
        cairo_save(cr);
        cairo_translate(cr, a->x - L->colL[col] + b.asc, a->y + a->h / 2.0);
        cairo_rotate(cr, -PI / 2);
        draw_text(cr, lab_px, p->ylabel, 0, 0, 0.5);
        cairo_restore(cr);
    }
    if (p->title && *p->title) {
        /* centred over the frame, but kept inside the figure when longer */
        double tp = L->font_px * TITLE_FONT;
        textbox b = measure(cr, tp, p->title);
        double x = clampd(a->x + a->w / 2.0 - b.w / 2, L->pad, L->W - L->pad - b.w);
        draw_text(cr, tp, p->title, fmax(x, L->pad), a->y - TITLE_PAD_PT * s - b.desc, 0);
    }
}

/* ------------------------------------------------------------------ */
/* Legend and note                                                     */
/* ------------------------------------------------------------------ */

enum { ENTRY_LINE, ENTRY_MARK, ENTRY_PATCH, ENTRY_CMAP };

typedef struct entry {
    int kind;
    const char *label;
    nc_rgb color;
    double width_px; /* line */
    bool dashed;
    int marker;
    double marker_px;
} entry;

/* Appends x to e[0..*n) unless an entry has its label already. */
static void add_entry(entry *e, size_t *n, entry x)
{
    for (size_t j = 0; j < *n; j++)
        if (strcmp(e[j].label, x.label) == 0)
            return;
    e[(*n)++] = x;
}

/* The legend entries of p, first of each label text only. *out is owned
 * by the caller; returns the count, or -1 when out of memory. */
static long legend_entries(const layout *L, const nc_panel *p, entry **out)
{
    size_t cap = 1 + p->ncurves + p->nmarks + p->nvlines + p->nhlines;
    entry *e = malloc(cap * sizeof *e);
    *out = e;
    if (!e)
        return -1;
    size_t n = 0;
    if (p->density && p->density_label && *p->density_label)
        add_entry(e, &n,
                  (entry){.kind = p->density->rgb ? ENTRY_CMAP : ENTRY_PATCH,
                          .label = p->density_label,
                          .color = p->density_color});
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        if (c->label && *c->label)
            add_entry(e, &n,
                      (entry){.kind = ENTRY_LINE,
                              .label = c->label,
                              .color = c->color,
                              .width_px = (c->width_pt > 0 ? c->width_pt : CURVE_PT) * L->s,
                              .dashed = c->dashed,
                              .marker = c->marker,
                              .marker_px = (c->marker_pt > 0 ? c->marker_pt : MARKER_PT) * L->s});
    }
    for (size_t i = 0; i < p->nmarks; i++) {
        const nc_mark *m = &p->marks[i];
        if (m->label && *m->label)
            add_entry(e, &n,
                      (entry){.kind = ENTRY_MARK,
                              .label = m->label,
                              .color = m->color,
                              .marker = m->shape,
                              .marker_px = (m->size_pt > 0 ? m->size_pt : MARKER_PT) * L->s});
    }
    for (size_t i = 0; i < p->nvlines; i++) {
        const nc_vline *v = &p->vlines[i];
        if (v->label && *v->label)
            add_entry(e, &n,
                      (entry){.kind = ENTRY_LINE,
                              .label = v->label,
                              .color = v->color,
                              .width_px = REFLINE_PT * L->s,
                              .dashed = v->dashed});
    }
    for (size_t i = 0; i < p->nhlines; i++) {
        const nc_hline *h = &p->hlines[i];
        if (h->label && *h->label)
            add_entry(e, &n,
                      (entry){.kind = ENTRY_LINE,
                              .label = h->label,
                              .color = h->color,
                              .width_px = REFLINE_PT * L->s,
                              .dashed = h->dashed});
    }
    return (long)n;
}

/* Where ink is in the data area, on a grid of INK_CELL px cells: the
 * cloud's opacity plus INK_LINE_WEIGHT where lines or markers pass. */
typedef struct inkmap {
    int gw, gh;
    float *v; /* [gh][gw] */
} inkmap;

/* Where curve_pieces sends a curve's pieces when building the ink map. */
typedef struct inkpen {
    inkmap *m;
    const nc_rect *a;
} inkpen;

/* Marks the cells along the segment a-b (px), each once per call. */
static void ink_add_piece(void *ctx, double ax, double ay, double bx, double by, bool joined)
{
    (void)joined;
    const inkpen *pen = ctx;
    inkmap *m = pen->m;
    double len = hypot(bx - ax, by - ay);
    if (!(len < 1e6))
        return; /* not finite (a mark near DBL_MAX); pieces are clipped to the area */
    int steps = 1 + (int)(len / (INK_CELL / 2.0));
    int last = -1;
    for (int k = 0; k <= steps; k++) {
        double t = (double)k / steps;
        double cx = floor((ax + t * (bx - ax) - pen->a->x) / INK_CELL);
        double cy = floor((ay + t * (by - ay) - pen->a->y) / INK_CELL);
        if (!(cx >= 0 && cy >= 0 && cx < m->gw && cy < m->gh))
            continue;
        int cell = (int)cy * m->gw + (int)cx;
        if (cell != last)
            m->v[cell] += (float)INK_LINE_WEIGHT;
        last = cell;
    }
}

static int ink_build(const nc_panel *p, const nc_rect *a, cairo_surface_t *dimg, inkmap *m)
{
    m->gw = (a->w + INK_CELL - 1) / INK_CELL;
    m->gh = (a->h + INK_CELL - 1) / INK_CELL;
    m->v = calloc((size_t)m->gw * (size_t)m->gh, sizeof *m->v);
    if (!m->v)
        return -1;
    if (dimg) {
        /* sample the cloud's opacity at each cell centre */
        const nc_density *d = p->density;
        double X0, Y0, sx, sy;
        density_place(p, a, d, &X0, &Y0, &sx, &sy);
        const unsigned char *data = cairo_image_surface_get_data(dimg);
        int stride = cairo_image_surface_get_stride(dimg);
        for (int cy = 0; cy < m->gh; cy++)
            for (int cx = 0; cx < m->gw; cx++) {
                double x = a->x + (cx + 0.5) * INK_CELL, y = a->y + (cy + 0.5) * INK_CELL;
                double i = floor((x - X0) / sx), j = floor((y - Y0) / sy);
                if (i >= 0 && j >= 0 && i < d->w && j < d->h) {
                    uint32_t px;
                    memcpy(&px, data + (size_t)j * (size_t)stride + 4 * (size_t)i, 4);
                    m->v[(size_t)cy * m->gw + cx] = (float)(px >> 24) / 255.0f;
                }
            }
    }
    inkpen pen = {m, a}, *st = &pen;
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        curve_pieces(p, a, c, 0, ink_add_piece, st);
        if (c->n == 1 || c->marker != NC_MARKER_NONE)
            for (size_t j = 0; j < c->n; j++)
                if (usable(p, c->x[j], c->y[j])) {
                    double x, y;
                    nc_panel_to_pixel(p, a, c->x[j], c->y[j], &x, &y);
                    ink_add_piece(st, x, y, x, y, false);
                }
    }
    for (size_t i = 0; i < p->nmarks; i++)
        if (usable(p, p->marks[i].x, p->marks[i].y)) {
            double x, y;
            nc_panel_to_pixel(p, a, p->marks[i].x, p->marks[i].y, &x, &y);
            ink_add_piece(st, x - 4, y, x + 4, y, false);
        }
    for (size_t i = 0; i < p->nvlines; i++)
        if (usable(p, p->vlines[i].x, p->y0)) {
            double x, y;
            nc_panel_to_pixel(p, a, p->vlines[i].x, p->y0, &x, &y);
            ink_add_piece(st, x, a->y, x, a->y + a->h - 1, false);
        }
    for (size_t i = 0; i < p->nhlines; i++)
        if (usable(p, p->x0, p->hlines[i].y)) {
            double x, y;
            nc_panel_to_pixel(p, a, p->x0, p->hlines[i].y, &x, &y);
            ink_add_piece(st, a->x, y, a->x + a->w - 1, y, false);
        }
    return 0;
}

/* Ink under the box (bx, by, bw, bh), px. */
static double ink_under(const inkmap *m, const nc_rect *a, double bx, double by, double bw,
                        double bh)
{
    int c0 = (int)floor((bx - a->x) / INK_CELL), c1 = (int)ceil((bx + bw - a->x) / INK_CELL);
    int r0 = (int)floor((by - a->y) / INK_CELL), r1 = (int)ceil((by + bh - a->y) / INK_CELL);
    double sum = 0;
    for (int r = r0 < 0 ? 0 : r0; r < r1 && r < m->gh; r++)
        for (int c = c0 < 0 ? 0 : c0; c < c1 && c < m->gw; c++)
            sum += m->v[(size_t)r * m->gw + c];
    return sum;
}

/* Marks the box as taken (for the note after the legend). */
static void ink_block(inkmap *m, const nc_rect *a, double bx, double by, double bw, double bh)
{
    for (int r = (int)floor((by - a->y) / INK_CELL); r < ceil((by + bh - a->y) / INK_CELL); r++)
        for (int c = (int)floor((bx - a->x) / INK_CELL); c < ceil((bx + bw - a->x) / INK_CELL);
             c++)
            if (r >= 0 && c >= 0 && r < m->gh && c < m->gw)
                m->v[(size_t)r * m->gw + c] += 1e6f;
}

/* Top-left corner of a box of bw x bh at position pos inside area a. */
static void box_at(int pos, const nc_rect *a, double pad, double bw, double bh, double *x,
                   double *y)
{
    double l = a->x + pad, r = a->x + a->w - pad - bw, cx = a->x + (a->w - bw) / 2;
    double t = a->y + pad, b = a->y + a->h - pad - bh, cy = a->y + (a->h - bh) / 2;
    switch (pos) {
    case NC_LEGEND_UPPER_LEFT: *x = l; *y = t; break;
    case NC_LEGEND_LOWER_LEFT: *x = l; *y = b; break;
    case NC_LEGEND_LOWER_RIGHT: *x = r; *y = b; break;
    case NC_LEGEND_RIGHT:
    case NC_LEGEND_CENTER_RIGHT: *x = r; *y = cy; break;
    case NC_LEGEND_CENTER_LEFT: *x = l; *y = cy; break;
    case NC_LEGEND_LOWER_CENTER: *x = cx; *y = b; break;
    case NC_LEGEND_UPPER_CENTER: *x = cx; *y = t; break;
    case NC_LEGEND_CENTER: *x = cx; *y = cy; break;
    default: *x = r; *y = t; break; /* upper right */
    }
}

/* The position of least ink among first..last (ties to the earlier). */
static int best_position(const inkmap *m, const nc_rect *a, double pad, double bw, double bh,
                         int first, int last)
{
    int best = first;
    double best_ink = HUGE_VAL;
    for (int pos = first; pos <= last; pos++) {
        double x, y;
        box_at(pos, a, pad, bw, bh, &x, &y);
        double ink = ink_under(m, a, x, y, bw, bh);
        if (ink < best_ink - 1e-6) {
            best_ink = ink;
            best = pos;
        }
    }
    return best;
}

static void rounded_box(cairo_t *cr, double x, double y, double w, double h, double r)
{
    cairo_new_sub_path(cr);
    cairo_arc(cr, x + w - r, y + r, r, -PI / 2, 0);
    cairo_arc(cr, x + w - r, y + h - r, r, 0, PI / 2);
    cairo_arc(cr, x + r, y + h - r, r, PI / 2, PI);
    cairo_arc(cr, x + r, y + r, r, PI, 3 * PI / 2);
    cairo_close_path(cr);
}

static void draw_handle(cairo_t *cr, const layout *L, const entry *e, double x, double yc,
                        double len, double em)
{
    switch (e->kind) {
    case ENTRY_PATCH:
    case ENTRY_CMAP: {
        double h = 0.7 * em, w = len;
        for (int k = 0; k < (e->kind == ENTRY_CMAP ? 4 : 1); k++) {
            nc_rgb c = e->kind == ENTRY_CMAP ? nc_colormap(0.1 + 0.8 * k / 3.0) : e->color;
            double x0 = e->kind == ENTRY_CMAP ? x + k * w / 4 : x;
            cairo_rectangle(cr, x0, yc - h / 2, e->kind == ENTRY_CMAP ? w / 4 : w, h);
            cairo_set_source_rgba(cr, clamp01(c.r), clamp01(c.g), clamp01(c.b), 0.75);
            cairo_fill(cr);
        }
        break;
    }
    case ENTRY_MARK:
        draw_marker(cr, L, e->marker, e->color, e->marker_px, x + len / 2, yc);
        break;
    default:
        cairo_set_line_width(cr, e->width_px);
        set_dash(cr, e->dashed, e->width_px);
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
        set_rgb(cr, e->color);
        cairo_move_to(cr, x, yc);
        cairo_line_to(cr, x + len, yc);
        cairo_stroke(cr);
        if (e->marker != NC_MARKER_NONE)
            draw_marker(cr, L, e->marker, e->color, e->marker_px, x + len / 2, yc);
        break;
    }
}

/* Legend and note of one panel. Returns 0 or -1 (out of memory). */
static int draw_legend_note(cairo_t *cr, const layout *L, const nc_panel *p, const nc_rect *a,
                            cairo_surface_t *dimg)
{
    entry *e = NULL;
    inkmap m = {0, 0, NULL};
    long n = p->legend_pos == NC_LEGEND_NONE ? 0 : legend_entries(L, p, &e);
    int rc = -1;
    if (n < 0 || ink_build(p, a, dimg, &m) != 0)
        goto out;
    double em = L->font_px * LEGEND_FONT;
    cairo_font_extents_t fe;
    set_font(cr, em);
    cairo_font_extents(cr, &fe);
    double rowh = fe.ascent + fe.descent, pitch = rowh + LEG_LABELSPACING * em;
    double pad = LEG_AXESPAD * em, bp = LEG_BORDERPAD * em;
    bool has_title = p->legend_title && *p->legend_title && n > 0;
    if (n > 0) {
        double tw = 0;
        for (long i = 0; i < n; i++)
            tw = fmax(tw, measure(cr, em, e[i].label).w);
        double hw = has_title ? measure(cr, em, p->legend_title).w : 0;
        double bw = 2 * bp + fmax(LEG_HANDLELEN * em + LEG_HANDLEPAD * em + tw, hw);
        double rows = (double)n + (has_title ? 1 : 0);
        double bh = 2 * bp + rows * rowh + (rows - 1) * LEG_LABELSPACING * em;
        int pos = p->legend_pos == NC_LEGEND_AUTO
                      ? best_position(&m, a, pad, bw, bh, NC_LEGEND_UPPER_RIGHT, NC_LEGEND_CENTER)
                      : p->legend_pos;
        double x, y;
        box_at(pos, a, pad, bw, bh, &x, &y);
        ink_block(&m, a, x, y, bw, bh);
        rounded_box(cr, x, y, bw, bh, 0.3 * em);
        cairo_set_source_rgba(cr, 1, 1, 1, LEG_ALPHA);
        cairo_fill_preserve(cr);
        set_rgb(cr, LEGEND_EDGE_RGB);
        cairo_set_line_width(cr, FRAME_PT * L->s);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_stroke(cr);
        double base = y + bp + fe.ascent;
        if (has_title) {
            set_rgb(cr, TEXT_RGB);
            draw_text(cr, em, p->legend_title, x + bw / 2, base, 0.5);
            base += pitch;
        }
        for (long i = 0; i < n; i++, base += pitch) {
            double yc = base - 0.5 * L->digit_h * LEGEND_FONT / TICK_FONT;
            draw_handle(cr, L, &e[i], x + bp, yc, LEG_HANDLELEN * em, em);
            set_rgb(cr, TEXT_RGB);
            draw_text(cr, em, e[i].label, x + bp + (LEG_HANDLELEN + LEG_HANDLEPAD) * em, base, 0);
        }
    }
    if (p->note && *p->note) {
        double np = L->font_px * NOTE_FONT;
        set_font(cr, np);
        cairo_font_extents(cr, &fe);
        double bw = measure(cr, np, p->note).w + 0.6 * np, bh = fe.ascent + fe.descent + 0.3 * np;
        int pos = best_position(&m, a, pad, bw, bh, NC_LEGEND_UPPER_RIGHT, NC_LEGEND_LOWER_RIGHT);
        double x, y;
        box_at(pos, a, pad, bw, bh, &x, &y);
        cairo_rectangle(cr, x, y, bw, bh);
        cairo_set_source_rgba(cr, 1, 1, 1, LEG_ALPHA);
        cairo_fill(cr);
        set_rgb(cr, NOTE_RGB);
        draw_text(cr, np, p->note, x + 0.3 * np, y + 0.15 * np + fe.ascent, 0);
    }
    rc = 0;
out:
    free(e);
    free(m.v);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Rendering                                                           */
/* ------------------------------------------------------------------ */

static int cairo_error(cairo_status_t st, const char *what, nc_err *err)
{
    if (st == CAIRO_STATUS_NO_MEMORY)
        return nc_err_set(err, NC_ENOMEM, "figure: out of memory while %s", what);
    return nc_err_set(err, NC_EINTERNAL, "figure: cairo failed while %s: %s", what,
                      cairo_status_to_string(st));
}

/* Draws the whole figure on surf, whose user space is scale times the
 * layout's pixels. */
static int draw_figure(cairo_surface_t *surf, double scale, const nc_figure *fig,
                       const layout *L, nc_err *err)
{
    cairo_t *cr = cairo_create(surf);
    cairo_font_options_t *fo = font_options();
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    cairo_scale(cr, scale, scale);
    if (!fig->transparent) {
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
    }
    int rc = 0;
    for (size_t k = 0; k < fig->npanels && !rc; k++) {
        const nc_panel *p = &fig->panels[k];
        const panel_layout *pl = &L->p[k];
        int row = (int)k / fig->cols, col = (int)k % fig->cols;
        cairo_surface_t *dimg = NULL;
        if (p->density &&
            !(dimg = density_image(p->density, p->density_color, dot_radius(fig->dpi)))) {
            rc = nc_err_set(err, NC_ENOMEM, "figure: panel %zu: out of memory for the density "
                                            "image",
                            k);
            break;
        }
        if (p->grid)
            draw_grid(cr, L, p, pl);
        if (dimg)
            draw_density(cr, p, &pl->area, dimg);
        draw_lines_curves_marks(cr, L, p, &pl->area);
        draw_axes(cr, L, p, pl, row, col);
        if (draw_legend_note(cr, L, p, &pl->area, dimg) != 0)
            rc = nc_err_set(err, NC_ENOMEM, "figure: panel %zu: out of memory for the legend",
                            k);
        cairo_surface_destroy(dimg);
    }
    if (!rc && fig->title && *fig->title) {
        double tp = L->font_px * SUPTITLE_FONT;
        textbox b = measure(cr, tp, fig->title);
        set_rgb(cr, TEXT_RGB);
        draw_text(cr, tp, fig->title, L->W / 2.0, L->pad + b.asc, 0.5);
    }
    cairo_status_t st = cairo_status(cr);
    if (!rc && st != CAIRO_STATUS_SUCCESS)
        rc = cairo_error(st, "drawing", err);
    cairo_destroy(cr);
    return rc;
}

/* The rendered image, handed to the PNG encoder row by row. */
typedef struct argb_rows {
    const unsigned char *data;
    int stride, w;
    bool alpha;
} argb_rows;

/* Row r of cairo's premultiplied ARGB32 (native-endian words) as straight
 * RGB or RGBA bytes: c = round(255 * c' / a) for 0 < a < 255. */
static void argb_row(void *ctx, int r, unsigned char *d)
{
    const argb_rows *src = ctx;
    const uint32_t *s = (const uint32_t *)(const void *)(src->data + (size_t)r * src->stride);
    for (int i = 0; i < src->w; i++) {
        uint32_t px = s[i], a = px >> 24;
        uint32_t R = (px >> 16) & 0xff, G = (px >> 8) & 0xff, B = px & 0xff;
        if (a != 255 && a != 0) {
            R = (R * 255 + a / 2) / a;
            G = (G * 255 + a / 2) / a;
            B = (B * 255 + a / 2) / a;
        }
        *d++ = (unsigned char)R;
        *d++ = (unsigned char)G;
        *d++ = (unsigned char)B;
        if (src->alpha)
            *d++ = (unsigned char)a;
    }
}

static int render_png(const nc_figure *fig, const layout *L, const nc_sink *sink, nc_err *err)
{
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, L->W, L->H);
    int rc = 0;
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
        rc = cairo_error(cairo_surface_status(surf), "creating the image", err);
        goto out;
    }
    rc = draw_figure(surf, 1.0, fig, L, err);
    if (rc)
        goto out;
    cairo_surface_flush(surf);
    argb_rows src = {cairo_image_surface_get_data(surf), cairo_image_surface_get_stride(surf),
                     L->W, fig->transparent};
    rc = nc_png_write_rows(sink, L->W, L->H, fig->transparent, argb_row, &src, fig->meta, err);
out:
    cairo_surface_destroy(surf);
    return rc;
}

/* Output of the PDF and SVG surfaces: to the sink; SVG gets the metadata
 * comment after its first line (the XML declaration). */
typedef struct stream {
    const nc_sink *sink;
    nc_err *err;
    int rc;              /* the sink's first error */
    const char *comment; /* SVG: "<!-- ... -->\n" to insert, or NULL */
    bool inserted;
} stream;

static cairo_status_t stream_write(void *closure, const unsigned char *data, unsigned int n)
{
    stream *st = closure;
    if (st->rc)
        return CAIRO_STATUS_WRITE_ERROR;
    size_t head = n;
    if (st->comment && !st->inserted) {
        const unsigned char *nl = memchr(data, '\n', n);
        if (nl)
            head = (size_t)(nl - data) + 1;
    }
    st->rc = nc_sink_write(st->sink, data, head, st->err);
    if (!st->rc && head < n) {
        st->inserted = true;
        st->rc = nc_sink_write(st->sink, st->comment, strlen(st->comment), st->err);
        if (!st->rc)
            st->rc = nc_sink_write(st->sink, data + head, n - head, st->err);
    } else if (!st->rc && st->comment && !st->inserted && head == n && n > 0 &&
               data[n - 1] == '\n') {
        st->inserted = true;
        st->rc = nc_sink_write(st->sink, st->comment, strlen(st->comment), st->err);
    }
    return st->rc ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

static const char *meta_get(const char *const *meta, const char *key)
{
    for (size_t i = 0; meta && meta[i]; i += 2)
        if (strcmp(meta[i], key) == 0)
            return meta[i + 1];
    return NULL;
}

/* All pairs as "key: value" lines (for PDF Keywords: "; " between pairs;
 * for the SVG comment: newlines, with "--" broken up as XML demands).
 * Owned by the caller; NULL when out of memory. */
static char *meta_text(const char *const *meta, bool svg)
{
    size_t n = 32;
    for (size_t i = 0; meta && meta[i]; i += 2)
        n += 2 * (strlen(meta[i]) + strlen(meta[i + 1] ? meta[i + 1] : "")) + 8;
    char *out = malloc(n), *o = out;
    if (!out)
        return NULL;
    if (svg)
        o += sprintf(o, "<!--\n");
    for (size_t i = 0; meta && meta[i]; i += 2) {
        if (!svg && i > 0)
            o += sprintf(o, "; ");
        for (int part = 0; part < 2; part++) {
            const char *t = part ? (meta[i + 1] ? meta[i + 1] : "") : meta[i];
            for (; *t; t++) {
                *o++ = *t;
                if (svg && *t == '-' && (t[1] == '-' || t[1] == '\0'))
                    *o++ = ' '; /* no "--" inside, and no '-' right before "-->" */
            }
            if (!part)
                o += sprintf(o, ": ");
        }
        if (svg)
            *o++ = '\n';
    }
    if (svg)
        o += sprintf(o, "-->\n");
    *o = '\0';
    return out;
}

static int render_vector(const nc_figure *fig, const layout *L, nc_format fmt,
                         const nc_sink *sink, nc_err *err)
{
    double scale = 72.0 / fig->dpi;
    double wpt = L->W * scale, hpt = L->H * scale;
    stream st = {.sink = sink, .err = err};
    char *keywords = NULL, *comment = NULL;
    cairo_surface_t *surf = NULL;
    int rc = 0;
    if (fmt == NC_FMT_SVG && fig->meta && fig->meta[0]) {
        comment = meta_text(fig->meta, true);
        if (!comment) {
            rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory");
            goto out;
        }
        st.comment = comment;
    }
    if (fmt == NC_FMT_PDF) {
        surf = cairo_pdf_surface_create_for_stream(stream_write, &st, wpt, hpt);
    } else {
        surf = cairo_svg_surface_create_for_stream(stream_write, &st, wpt, hpt);
        cairo_svg_surface_set_document_unit(surf, CAIRO_SVG_UNIT_PT);
    }
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
        rc = st.rc ? st.rc : cairo_error(cairo_surface_status(surf), "creating the document", err);
        goto out;
    }
    if (fmt == NC_FMT_PDF) {
        const char *title = meta_get(fig->meta, "Title");
        title = title ? title : fig->title;
        const char *author = meta_get(fig->meta, "Author");
        const char *creator = meta_get(fig->meta, "Software");
        const char *subject = meta_get(fig->meta, "Description");
        const char *date = meta_get(fig->meta, "CreationDate");
        if (title)
            cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_TITLE, title);
        if (author)
            cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_AUTHOR, author);
        if (creator)
            cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_CREATOR, creator);
        if (subject)
            cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_SUBJECT, subject);
        if (date)
            cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_CREATE_DATE, date);
        if (fig->meta && fig->meta[0]) {
            keywords = meta_text(fig->meta, false);
            if (!keywords) {
                rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory");
                goto out;
            }
            cairo_pdf_surface_set_metadata(surf, CAIRO_PDF_METADATA_KEYWORDS, keywords);
        }
    }
    rc = draw_figure(surf, scale, fig, L, err);
    cairo_surface_finish(surf);
    if (!rc && st.rc)
        rc = st.rc;
    if (!rc && cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS)
        rc = cairo_error(cairo_surface_status(surf), "writing the document", err);
out:
    cairo_surface_destroy(surf);
    free(keywords);
    free(comment);
    return rc;
}

int nc_figure_render(const nc_figure *fig, nc_format fmt, const nc_sink *sink, nc_err *err)
{
    int W, H;
    int rc = check_figure(fig, &W, &H, err);
    if (rc)
        return rc;
    if (fmt != NC_FMT_PNG && fmt != NC_FMT_PDF && fmt != NC_FMT_SVG)
        return nc_err_set(err, NC_EINVAL, "figure: output format %d, expected PNG, PDF or SVG",
                          (int)fmt);
    layout L;
    rc = layout_compute(fig, W, H, &L, err);
    if (rc)
        return rc;
    rc = fmt == NC_FMT_PNG ? render_png(fig, &L, sink, err)
                           : render_vector(fig, &L, fmt, sink, err);
    layout_free(&L);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Colours                                                             */
/* ------------------------------------------------------------------ */

nc_rgb nc_rgb_hex(uint32_t rgb)
{
    return (nc_rgb){((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0,
                    (rgb & 0xff) / 255.0};
}

/* Okabe & Ito (2008), "Color Universal Design", reordered (see figure.h). */
static const uint32_t OKABE_ITO[8] = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7,
                                      0xE69F00, 0x56B4E9, 0x000000, 0xF0E442};

nc_rgb nc_palette(int k)
{
    int n = (int)(sizeof OKABE_ITO / sizeof OKABE_ITO[0]);
    int i = k % n;
    return nc_rgb_hex(OKABE_ITO[i < 0 ? i + n : i]);
}

/* Matplotlib's viridis (van der Walt and Smith, CC0), its 256 entries. */
static const uint32_t VIRIDIS[256] = {
    0x440154, 0x440256, 0x450457, 0x450559, 0x46075a, 0x46085c, 0x460a5d, 0x460b5e,
    0x470d60, 0x470e61, 0x471063, 0x471164, 0x471365, 0x481467, 0x481668, 0x481769,
    0x48186a, 0x481a6c, 0x481b6d, 0x481c6e, 0x481d6f, 0x481f70, 0x482071, 0x482173,
    0x482374, 0x482475, 0x482576, 0x482677, 0x482878, 0x482979, 0x472a7a, 0x472c7a,
    0x472d7b, 0x472e7c, 0x472f7d, 0x46307e, 0x46327e, 0x46337f, 0x463480, 0x453581,
    0x453781, 0x453882, 0x443983, 0x443a83, 0x443b84, 0x433d84, 0x433e85, 0x423f85,
    0x424086, 0x424186, 0x414287, 0x414487, 0x404588, 0x404688, 0x3f4788, 0x3f4889,
    0x3e4989, 0x3e4a89, 0x3e4c8a, 0x3d4d8a, 0x3d4e8a, 0x3c4f8a, 0x3c508b, 0x3b518b,
    0x3b528b, 0x3a538b, 0x3a548c, 0x39558c, 0x39568c, 0x38588c, 0x38598c, 0x375a8c,
    0x375b8d, 0x365c8d, 0x365d8d, 0x355e8d, 0x355f8d, 0x34608d, 0x34618d, 0x33628d,
    0x33638d, 0x32648e, 0x32658e, 0x31668e, 0x31678e, 0x31688e, 0x30698e, 0x306a8e,
    0x2f6b8e, 0x2f6c8e, 0x2e6d8e, 0x2e6e8e, 0x2e6f8e, 0x2d708e, 0x2d718e, 0x2c718e,
    0x2c728e, 0x2c738e, 0x2b748e, 0x2b758e, 0x2a768e, 0x2a778e, 0x2a788e, 0x29798e,
    0x297a8e, 0x297b8e, 0x287c8e, 0x287d8e, 0x277e8e, 0x277f8e, 0x27808e, 0x26818e,
    0x26828e, 0x26828e, 0x25838e, 0x25848e, 0x25858e, 0x24868e, 0x24878e, 0x23888e,
    0x23898e, 0x238a8d, 0x228b8d, 0x228c8d, 0x228d8d, 0x218e8d, 0x218f8d, 0x21908d,
    0x21918c, 0x20928c, 0x20928c, 0x20938c, 0x1f948c, 0x1f958b, 0x1f968b, 0x1f978b,
    0x1f988b, 0x1f998a, 0x1f9a8a, 0x1e9b8a, 0x1e9c89, 0x1e9d89, 0x1f9e89, 0x1f9f88,
    0x1fa088, 0x1fa188, 0x1fa187, 0x1fa287, 0x20a386, 0x20a486, 0x21a585, 0x21a685,
    0x22a785, 0x22a884, 0x23a983, 0x24aa83, 0x25ab82, 0x25ac82, 0x26ad81, 0x27ad81,
    0x28ae80, 0x29af7f, 0x2ab07f, 0x2cb17e, 0x2db27d, 0x2eb37c, 0x2fb47c, 0x31b57b,
    0x32b67a, 0x34b679, 0x35b779, 0x37b878, 0x38b977, 0x3aba76, 0x3bbb75, 0x3dbc74,
    0x3fbc73, 0x40bd72, 0x42be71, 0x44bf70, 0x46c06f, 0x48c16e, 0x4ac16d, 0x4cc26c,
    0x4ec36b, 0x50c46a, 0x52c569, 0x54c568, 0x56c667, 0x58c765, 0x5ac864, 0x5cc863,
    0x5ec962, 0x60ca60, 0x63cb5f, 0x65cb5e, 0x67cc5c, 0x69cd5b, 0x6ccd5a, 0x6ece58,
    0x70cf57, 0x73d056, 0x75d054, 0x77d153, 0x7ad151, 0x7cd250, 0x7fd34e, 0x81d34d,
    0x84d44b, 0x86d549, 0x89d548, 0x8bd646, 0x8ed645, 0x90d743, 0x93d741, 0x95d840,
    0x98d83e, 0x9bd93c, 0x9dd93b, 0xa0da39, 0xa2da37, 0xa5db36, 0xa8db34, 0xaadc32,
    0xaddc30, 0xb0dd2f, 0xb2dd2d, 0xb5de2b, 0xb8de29, 0xbade28, 0xbddf26, 0xc0df25,
    0xc2df23, 0xc5e021, 0xc8e020, 0xcae11f, 0xcde11d, 0xd0e11c, 0xd2e21b, 0xd5e21a,
    0xd8e219, 0xdae319, 0xdde318, 0xdfe318, 0xe2e418, 0xe5e419, 0xe7e419, 0xeae51a,
    0xece51b, 0xefe51c, 0xf1e51d, 0xf4e61e, 0xf6e620, 0xf8e621, 0xfbe723, 0xfde725,
};

nc_rgb nc_colormap(double t)
{
    t = t > 0 ? (t < 1 ? t : 1) : 0; /* NaN -> 0 */
    double f = t * 255.0;
    int i = (int)f;
    if (i >= 255)
        return nc_rgb_hex(VIRIDIS[255]);
    double u = f - i;
    nc_rgb a = nc_rgb_hex(VIRIDIS[i]), b = nc_rgb_hex(VIRIDIS[i + 1]);
    return (nc_rgb){a.r + u * (b.r - a.r), a.g + u * (b.g - a.g), a.b + u * (b.b - a.b)};
}
