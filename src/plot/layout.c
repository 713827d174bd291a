/*
 * layout.c - ticks, margins and data areas of a figure's panels
 * (layout.h).
 *
 * Text is measured on a 1 x 1 image surface with the same font options
 * as the drawing (text.h), so the layout is the same for PNG, PDF and SVG.
 */
#include "plot/layout.h"

#include <cairo.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/style.h"
#include "plot/text.h"

static int axis_ticks(double lo, double hi, bool log, int target, nc_ticks *t)
{
    return log ? nc_ticks_log(lo, hi, target, t, NULL) : nc_ticks_linear(lo, hi, target, t, NULL);
}

/* Ticks for an axis of len px whose labels must not collide: start from
 * the target the length suggests and take fewer until they fit. */
/* Whether the labels of t (not blank) are far enough apart on an axis of
 * len px. */
static bool labels_fit(cairo_t *cr, const layout *L, const nc_ticks *t, double lo, double hi,
                       bool log, double len, bool horizontal)
{
    size_t prev = SIZE_MAX;
    for (size_t i = 0; i < t->n; i++) {
        if (!t->label[i][0])
            continue;
        if (prev != SIZE_MAX) {
            double d = axis_pos(t->v[i], lo, hi, log, len) - axis_pos(t->v[prev], lo, hi, log, len);
            double need = L->digit_h + 0.6 * L->tick_px;
            if (horizontal) {
                double wa = nc_text_measure_tick(cr, L->tick_px, t->label[prev], L->digit_h).w;
                double wb = nc_text_measure_tick(cr, L->tick_px, t->label[i], L->digit_h).w;
                need = (wa + wb) / 2 + 0.6 * L->tick_px;
            }
            if (d < 1.1 * need)
                return false;
        }
        prev = i;
    }
    return true;
}

/* Ticks for an axis of len px whose labels must not collide: start from
 * the target the length suggests and take fewer until they fit; when even
 * the fewest collide, every other label is left blank (the one at 0, if
 * any, kept), then all but one. */
static void fit_ticks(cairo_t *cr, const layout *L, double lo, double hi, bool log, double len,
                      bool horizontal, nc_ticks *t)
{
    double per = (horizontal ? X_TICK_SPACING : Y_TICK_SPACING) * L->tick_px;
    int target = (int)clampd(floor(len / per), MIN_TICKS, MAX_TICKS);
    for (; target >= 1; target--) {
        if (axis_ticks(lo, hi, log, target, t) != 0)
            return; /* cannot happen after check_figure (figure.c); keep no ticks */
        if (labels_fit(cr, L, t, lo, hi, log, len, horizontal))
            return;
    }
    size_t keep = 0; /* the parity to keep: that of the tick at 0 */
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i] == 0)
            keep = i % 2;
    for (size_t i = 0; i < t->n; i++)
        if (i % 2 != keep)
            t->label[i][0] = '\0';
    for (size_t i = t->n; i-- > 1 && !labels_fit(cr, L, t, lo, hi, log, len, horizontal);)
        t->label[i][0] = '\0';
}

/* An axis label with its axis' shared factor: "input x (\u00d710\u00b3)". */
static void axis_label(char *dst, size_t cap, const char *label, const char *offset)
{
    if (offset[0] && label && *label)
        snprintf(dst, cap, "%s (%s)", label, offset);
    else if (offset[0])
        snprintf(dst, cap, "%s", offset);
    else
        snprintf(dst, cap, "%s", label ? label : "");
}

/* Text room around panel k's area, from its current ticks; dw is the
 * current width of the area (for labels that stick out sideways). */
static void panel_margins(cairo_t *cr, const nc_figure *fig, const layout *L, const nc_panel *p,
                          double dw, panel_layout *pl)
{
    double s = L->s, tick_room = (TICK_LEN_PT + TICK_PAD_PT) * s + ceil(FRAME_PT * s);
    double ytw = 0, xth = 0, ytop = 0;
    for (size_t i = 0; i < pl->yt.n; i++) {
        textbox b = nc_text_measure_tick(cr, L->tick_px, pl->yt.label[i], L->digit_h);
        ytw = fmax(ytw, b.w);
        ytop = fmax(ytop, b.asc - L->digit_h / 2);
    }
    for (size_t i = 0; i < pl->xt.n; i++)
        xth = fmax(xth, nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).asc);
    axis_label(pl->xlab, sizeof pl->xlab, p->xlabel, pl->xt.offset);
    axis_label(pl->ylab, sizeof pl->ylab, p->ylabel, pl->yt.offset);
    textbox yl = nc_text_measure(cr, nc_layout_ylabel_px(cr, fig, L, pl->ylab), pl->ylab);
    textbox xl = nc_text_measure(cr, nc_layout_xlabel_px(cr, fig, L, pl->xlab), pl->xlab);
    textbox ti = nc_text_measure(cr, nc_layout_title_px(cr, fig, L, p->title), p->title);

    pl->left = tick_room + ytw;
    if (pl->ylab[0])
        pl->left += LABEL_PAD_PT * s + yl.asc + yl.desc;
    pl->bottom = tick_room + xth;
    if (pl->xlab[0])
        pl->bottom += LABEL_PAD_PT * s + xl.asc + xl.desc;
    pl->top = p->title && *p->title ? TITLE_PAD_PT * s + ti.asc + ti.desc : ytop;
    /* the first and last x tick labels may stick out sideways */
    pl->right = 0;
    if (pl->xt.n) {
        size_t n = pl->xt.n;
        double f0 = axis_pos(pl->xt.v[0], p->x0, p->x1, p->xlog, 1.0);
        double f1 = axis_pos(pl->xt.v[n - 1], p->x0, p->x1, p->xlog, 1.0);
        double w0 = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[0], L->digit_h).w;
        double w1 = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[n - 1], L->digit_h).w;
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
    if (L->strip_h > 0)
        usedh += L->strip_h + L->gap;
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
    if (L->strip_h > 0) {
        double bottom = ytop;
        for (int i = 0; i < rows; i++)
            bottom += L->rowT[i] + *dh + L->rowB[i] + (i ? L->gap : 0);
        L->strip = (nc_rect){(int)round(L->pad), (int)round(bottom + L->gap),
                             (int)floor(L->W - 2 * L->pad), (int)ceil(L->strip_h)};
    }
    return 0;
}

void nc_layout_free(layout *L)
{
    for (size_t k = 0; L->p && k < L->np; k++)
        free(L->p[k].ink_cloud);
    free(L->p);
    L->p = NULL;
}

double nc_layout_font_pt(const nc_figure *fig)
{
    if (fig->font_pt > 0)
        return fig->font_pt;
    double cw = fig->width_in / fig->cols, ch = fig->height_in / fig->rows;
    return DEFAULT_FONT_PT * clampd(sqrt(cw * ch / (6.4 * 4.8)), MIN_AUTO_FONT_PT / DEFAULT_FONT_PT,
                                    1.0);
}

void nc_layout_record_line(layout *L, const char *line)
{
    nc_rec *r = L->rec;
    if (!r || r->oom)
        return;
    size_t n = strlen(line);
    if (r->len + n + 2 > r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 4096;
        while (cap < r->len + n + 2)
            cap *= 2;
        char *g = realloc(r->s, cap);
        if (!g) {
            r->oom = true;
            return;
        }
        r->s = g;
        r->cap = cap;
    }
    memcpy(r->s + r->len, line, n);
    r->len += n;
    r->s[r->len++] = '\n';
    r->s[r->len] = '\0';
}

void nc_layout_record(layout *L, const char *what, double x, double y, double w, double h,
                      double size_px)
{
    char line[256];
    snprintf(line, sizeof line, "%s %.1f %.1f %.1f %.1f %.2f", what, x, y, w, h,
             size_px / L->px_pt);
    nc_layout_record_line(L, line);
}

double nc_layout_fit_size(cairo_t *cr, const layout *L, double size_px, const char *s,
                          double maxw)
{
    double w = nc_text_measure(cr, size_px, s).w, min_px = MIN_TEXT_PT * L->px_pt;
    if (w <= maxw || size_px <= min_px || !(w > 0))
        return size_px;
    return fmax(min_px, size_px * maxw / w);
}

/* Room for a panel's texts along x and y: its share of the figure. */
static double cell_w(const nc_figure *fig, const layout *L)
{
    return (L->W - 2 * L->pad) / fig->cols - (fig->cols > 1 ? L->gap : 0);
}

static double cell_h(const nc_figure *fig, const layout *L)
{
    return (L->H - 2 * L->pad - L->strip_h - L->suptitle_h) / fig->rows - 5 * L->font_px;
}

double nc_layout_title_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s)
{
    return nc_layout_fit_size(cr, L, L->font_px * TITLE_FONT, s, cell_w(fig, L));
}

double nc_layout_xlabel_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s)
{
    return nc_layout_fit_size(cr, L, L->font_px * LABEL_FONT, s, cell_w(fig, L));
}

double nc_layout_ylabel_px(cairo_t *cr, const nc_figure *fig, const layout *L, const char *s)
{
    return nc_layout_fit_size(cr, L, L->font_px * LABEL_FONT, s, cell_h(fig, L));
}

int nc_layout_compute(const nc_figure *fig, int W, int H, double strip_h, layout *L,
                      nc_err *err)
{
    memset(L, 0, sizeof *L);
    L->W = W;
    L->H = H;
    L->px_pt = fig->dpi / 72.0;
    L->k = nc_layout_font_pt(fig) / DEFAULT_FONT_PT;
    L->s = L->px_pt * L->k;
    L->strip_h = strip_h;
    L->font_px = DEFAULT_FONT_PT * L->s;
    L->tick_px = L->font_px * TICK_FONT;
    L->pad = OUTER_PAD_EM * L->font_px;
    L->gap = GAP_EM * L->font_px;
    L->p = calloc(fig->npanels, sizeof *L->p);
    L->np = fig->npanels;
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(surf);
    cairo_font_options_t *fo = nc_text_options();
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    int rc = 0;
    if (!L->p || cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory for the layout");
        goto out;
    }
    L->digit_h = nc_text_measure(cr, L->tick_px, "0").asc;
    L->suptitle_h = 0;
    if (fig->title && *fig->title) {
        textbox b = nc_text_measure(cr, L->font_px * SUPTITLE_FONT, fig->title);
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
            panel_margins(cr, fig, L, p, dw, pl);
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
        nc_layout_free(L);
    return rc;
}

void nc_panel_to_pixel(const nc_panel *p, const nc_rect *area, double x, double y, double *px,
                       double *py)
{
    *px = area->x + axis_pos(x, p->x0, p->x1, p->xlog, area->w);
    *py = area->y + area->h - axis_pos(y, p->y0, p->y1, p->ylog, area->h);
}
