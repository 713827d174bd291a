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

static int axis_ticks(const nc_scale *sc, int target, nc_ticks *t)
{
    if (sc->log)
        return nc_ticks_log(sc->lo, sc->hi, target, t, NULL);
    if (sc->lin > 0)
        return nc_ticks_symlog(sc->lo, sc->hi, sc->lin, sc->dec, target, t, NULL);
    return nc_ticks_linear(sc->lo, sc->hi, target, t, NULL);
}

/* Ticks for an axis of len px whose labels must not collide: start from
 * the target the length suggests and take fewer until they fit. */
/* Whether the labels of t (not blank) are far enough apart on an axis of
 * len px. */
static bool labels_fit(cairo_t *cr, const layout *L, const nc_ticks *t, const nc_scale *sc,
                       double len, bool horizontal)
{
    size_t prev = SIZE_MAX;
    for (size_t i = 0; i < t->n; i++) {
        if (!t->label[i][0])
            continue;
        if (prev != SIZE_MAX) {
            double d = scale_pos(sc, t->v[i], len) - scale_pos(sc, t->v[prev], len);
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
static void fit_ticks(cairo_t *cr, const layout *L, const nc_scale *sc, double len,
                      bool horizontal, nc_ticks *t)
{
    double per = (horizontal ? X_TICK_SPACING : Y_TICK_SPACING) * L->tick_px;
    int target = (int)clampd(floor(len / per), MIN_TICKS, MAX_TICKS);
    for (; target >= 1; target--) {
        if (axis_ticks(sc, target, t) != 0)
            return; /* cannot happen after check_figure (figure.c); keep no ticks */
        if (labels_fit(cr, L, t, sc, len, horizontal))
            return;
    }
    size_t keep = 0; /* the parity to keep: that of the tick at 0 */
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i] == 0)
            keep = i % 2;
    for (size_t i = 0; i < t->n; i++)
        if (i % 2 != keep)
            t->label[i][0] = '\0';
    for (size_t i = t->n; i-- > 1 && !labels_fit(cr, L, t, sc, len, horizontal);)
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

/* Room for a panel's texts along x and y: its share of the figure. */
static double cell_w(const nc_figure *fig, const layout *L)
{
    return (L->W - 2 * L->pad) / fig->cols - (fig->cols > 1 ? L->gap : 0);
}

static double cell_h(const nc_figure *fig, const layout *L)
{
    return (L->H - 2 * L->pad - L->strip_h - L->suptitle_h) / fig->rows - 5 * L->font_px;
}

/* The room right of a panel's area that its colour bar takes: gap, bar,
 * ticks, tick labels, label (px); 0 without one. */
static double cbar_room(cairo_t *cr, const layout *L, const nc_panel *p, const panel_layout *pl)
{
    if (!p->cbar)
        return 0;
    double s = L->s, w = 0;
    for (size_t i = 0; i < pl->ct.n; i++)
        w = fmax(w, nc_text_measure_tick(cr, L->tick_px, pl->ct.label[i], L->digit_h).w);
    textbox lb = nc_text_measure(cr, L->tick_px, p->cbar->label);
    return (CBAR_PAD_EM + CBAR_W_EM) * L->font_px + (TICK_LEN_PT + TICK_PAD_PT) * s + w +
           (p->cbar->label && *p->cbar->label ? LABEL_PAD_PT * s + lb.asc + lb.desc : 0);
}

/* Text room around panel k's area, from its current ticks; dw is the
 * current width of the area (for labels that stick out sideways). */
static void panel_margins(cairo_t *cr, const nc_figure *fig, const layout *L, const nc_panel *p,
                          double dw, panel_layout *pl)
{
    double s = L->s, tick_room = (TICK_LEN_PT + TICK_PAD_PT) * s + ceil(FRAME_PT * s);
    double ytw = 0, xth = 0, ytop = 0;
    nc_scale xs = panel_xscale(p);
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
    pl->title_w = fig->cols > 1 ? dw : cell_w(fig, L); /* a grid: within the frame */
    pl->title_split = nc_layout_wrap_fit(cr, L, p->title, L->font_px * TITLE_FONT, pl->title_w,
                                         &pl->title_px);
    double th = nc_layout_lines_h(cr, pl->title_px, p->title, pl->title_split);
    pl->xlab_w = pl->title_w;
    pl->xlab_split = nc_layout_wrap_fit(cr, L, pl->xlab, L->font_px * LABEL_FONT, pl->xlab_w,
                                        &pl->xlab_px);
    double xh = nc_layout_lines_h(cr, pl->xlab_px, pl->xlab, pl->xlab_split);

    pl->left = tick_room + ytw;
    if (pl->ylab[0])
        pl->left += LABEL_PAD_PT * s + yl.asc + yl.desc;
    pl->bottom = tick_room + xth;
    if (pl->xlab[0])
        pl->bottom += LABEL_PAD_PT * s + xh;
    pl->top = p->title && *p->title ? TITLE_PAD_PT * s + th : ytop;
    /* the first and last x tick labels may stick out sideways */
    pl->right = 0;
    if (pl->xt.n) {
        size_t n = pl->xt.n;
        double f0 = scale_pos(&xs, pl->xt.v[0], 1.0);
        double f1 = scale_pos(&xs, pl->xt.v[n - 1], 1.0);
        double w0 = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[0], L->digit_h).w;
        double w1 = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[n - 1], L->digit_h).w;
        pl->left = fmax(pl->left, w0 / 2 - f0 * dw);
        pl->right = fmax(0, w1 / 2 - (1 - f1) * dw);
    }
    double cb = cbar_room(cr, L, p, pl);
    pl->cbar_x = cb > 0 ? CBAR_PAD_EM * L->font_px : 0;
    pl->right = fmax(pl->right, cb);
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
        free(L->p[k].ink_cloud), free(L->p[k].note_text);
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

/* Where s may break into two lines (after a space, which is dropped, or
 * after '.', '_', '-', '/' or ','), choosing the break whose longer line is
 * the shortest; 0 when s has none. *w1 gets that longer line's width. */
static size_t best_break(cairo_t *cr, double size, const char *s, double *w1)
{
    size_t n = strlen(s), best = 0;
    char a[512], b[512];
    *w1 = HUGE_VAL;
    for (size_t k = 1; k + 1 < n && k < sizeof a; k++) {
        bool space = s[k] == ' ';
        if (!space && !strchr("._-/,", s[k - 1]))
            continue;
        if (((unsigned char)s[k] & 0xc0) == 0x80)
            continue; /* inside a UTF-8 sequence */
        snprintf(a, sizeof a, "%.*s", (int)k, s);
        snprintf(b, sizeof b, "%s", s + k + (space ? 1 : 0));
        double w = fmax(nc_text_measure(cr, size, a).w, nc_text_measure(cr, size, b).w);
        if (w < *w1) {
            *w1 = w;
            best = k;
        }
    }
    return best;
}

size_t nc_layout_wrap_fit(cairo_t *cr, const layout *L, const char *s, double base,
                          double maxw, double *size)
{
    *size = nc_layout_fit_size(cr, L, base, s, maxw);
    if (!s || !*s || (*size >= 0.8 * base && nc_text_measure(cr, *size, s).w <= maxw))
        return 0;
    /* two lines at the largest size, down to the smallest, at which both fit */
    double min_px = MIN_TEXT_PT * L->px_pt;
    for (double z = base; z >= min_px - 1e-9; z = z > min_px ? fmax(min_px, z - 0.05 * base)
                                                                : z - 1) {
        double w;
        size_t k = best_break(cr, z, s, &w);
        if (k && w <= maxw) {
            *size = z;
            return k;
        }
    }
    return 0; /* one line, cut when drawn */
}

double nc_layout_lines_h(cairo_t *cr, double size, const char *s, size_t split)
{
    if (!s || !*s)
        return 0;
    textbox b = nc_text_measure(cr, size, s);
    if (!split)
        return b.asc + b.desc;
    cairo_font_extents_t fe;
    nc_text_font(cr, size);
    cairo_font_extents(cr, &fe);
    return fe.ascent + fe.descent + b.asc + b.desc; /* one line's pitch more */
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
    nc_text_set_min(cr, MIN_TEXT_PT * L->px_pt);
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
            nc_scale xs = panel_xscale(p), ys = panel_yscale(p);
            fit_ticks(cr, L, &xs, dw, true, &pl->xt);
            fit_ticks(cr, L, &ys, dh, false, &pl->yt);
            if (p->cbar) {
                nc_scale cs = {p->cbar->lo, p->cbar->hi, p->cbar->log, 0, 0};
                fit_ticks(cr, L, &cs, dh, false, &pl->ct);
            }
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
    nc_scale xs = panel_xscale(p), ys = panel_yscale(p);
    *px = area->x + scale_pos(&xs, x, area->w);
    *py = area->y + area->h - scale_pos(&ys, y, area->h);
}
