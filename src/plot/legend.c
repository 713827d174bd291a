/*
 * legend.c - legend entries, the ink map, placement, and drawing of the
 * legend and the note (legend.h).
 */
#include "plot/legend.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/colour.h"
#include "plot/draw.h"
#include "plot/raster.h"
#include "plot/style.h"
#include "plot/text.h"

#define INK_CELL 4          /* px per cell of the legend placement grid */
#define INK_LINE_WEIGHT 3.0 /* ink where a line or marker passes (a cloud gives 0 to 1) */
#define LEGEND_SLIVER 0.015 /* most of a legend box the cloud may cover (share of its area) */

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
 * share of each cell's pixels the cloud covers (0 to 1), and how many
 * curves, markers or lines pass through it. */
typedef struct inkmap {
    int gw, gh;
    float *cloud; /* [gh][gw] */
    float *line;  /* [gh][gw] */
} inkmap;

/* Where nc_draw_curve_pieces sends a curve's pieces when building the ink map. */
typedef struct inkpen {
    inkmap *m;
    const nc_rect *a;
    double r; /* half the line's width, px: cells this close count too */
} inkpen;

static void ink_cell(inkmap *m, const nc_rect *a, double x, double y, double r, int *last)
{
    int c0 = (int)floor((x - r - a->x) / INK_CELL), c1 = (int)floor((x + r - a->x) / INK_CELL);
    int r0 = (int)floor((y - r - a->y) / INK_CELL), r1 = (int)floor((y + r - a->y) / INK_CELL);
    for (int cy = r0 < 0 ? 0 : r0; cy <= r1 && cy < m->gh; cy++)
        for (int cx = c0 < 0 ? 0 : c0; cx <= c1 && cx < m->gw; cx++) {
            int cell = cy * m->gw + cx;
            if (cell != *last)
                m->line[cell] += 1.0f;
        }
    *last = r0 == r1 && c0 == c1 ? r0 * m->gw + c0 : -1;
}

/* Marks the cells along the segment a-b (px). */
static void ink_add_piece(void *ctx, double ax, double ay, double bx, double by, bool joined)
{
    (void)joined;
    const inkpen *pen = ctx;
    double len = hypot(bx - ax, by - ay);
    if (!(len < 1e6))
        return; /* not finite (a mark near DBL_MAX); pieces are clipped to the area */
    int steps = 1 + (int)(len / (INK_CELL / 2.0));
    int last = -1;
    for (int k = 0; k <= steps; k++) {
        double t = (double)k / steps;
        ink_cell(pen->m, pen->a, ax + t * (bx - ax), ay + t * (by - ay), pen->r, &last);
    }
}

/* The cloud's share of each cell, from the density's counts (the cell of
 * each raster column and row computed once). */
static void ink_cloud(const layout *L, const nc_panel *p, const nc_rect *a, inkmap *m)
{
    int r = nc_raster_dot_radius(72.0 * L->px_pt); /* a point prints (2r + 1)^2 px */
    const nc_density *d = p->density;
    double X0, Y0, sx, sy;
    nc_raster_place(p, a, d, &X0, &Y0, &sx, &sy);
    float add = (float)(sx * sy * (2 * r + 1) * (2 * r + 1) / (INK_CELL * INK_CELL));
    int *col = malloc((size_t)d->w * sizeof *col);
    if (!col)
        return; /* no cloud in the ink map: the legend may then cover some */
    for (int i = 0; i < d->w; i++) {
        double cx = floor((X0 + (i + 0.5) * sx - a->x) / INK_CELL);
        col[i] = cx >= 0 && cx < m->gw ? (int)cx : -1;
    }
    for (int j = 0; j < d->h; j++) {
        double cy = floor((Y0 + (j + 0.5) * sy - a->y) / INK_CELL);
        if (!(cy >= 0 && cy < m->gh))
            continue;
        float *cells = m->cloud + (size_t)cy * (size_t)m->gw;
        const uint32_t *row = d->count + (size_t)j * (size_t)d->w;
        for (int i = 0; i < d->w; i++)
            if (row[i] && col[i] >= 0)
                cells[col[i]] += add;
    }
    free(col);
    for (size_t c = 0; c < (size_t)m->gw * (size_t)m->gh; c++)
        m->cloud[c] = m->cloud[c] > 1 ? 1 : m->cloud[c];
}

static int ink_build(const layout *L, const nc_panel *p, const nc_rect *a, inkmap *m)
{
    m->gw = (a->w + INK_CELL - 1) / INK_CELL;
    m->gh = (a->h + INK_CELL - 1) / INK_CELL;
    m->cloud = calloc(2 * (size_t)m->gw * (size_t)m->gh, sizeof *m->cloud);
    if (!m->cloud)
        return -1;
    m->line = m->cloud + (size_t)m->gw * (size_t)m->gh;
    if (p->density)
        ink_cloud(L, p, a, m);
    inkpen pen = {m, a, 0}, *st = &pen;
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        pen.r = (c->width_pt > 0 ? c->width_pt : CURVE_PT) * L->s;
        nc_draw_curve_pieces(p, a, c, 0, ink_add_piece, st);
        pen.r = (c->marker_pt > 0 ? c->marker_pt : MARKER_PT) * L->s;
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
            pen.r = (p->marks[i].size_pt > 0 ? p->marks[i].size_pt : MARKER_PT) * L->s * 0.6;
            nc_panel_to_pixel(p, a, p->marks[i].x, p->marks[i].y, &x, &y);
            ink_add_piece(st, x, y, x, y, false);
        }
    pen.r = L->font_px * NOTE_FONT; /* a point label's text, roughly */
    for (size_t i = 0; i < p->nlabels; i++)
        if (p->labels[i].text && usable(p, p->labels[i].x, p->labels[i].y)) {
            double x, y, w = 0.6 * pen.r * (double)strlen(p->labels[i].text);
            nc_panel_to_pixel(p, a, p->labels[i].x, p->labels[i].y, &x, &y);
            ink_add_piece(st, x - w, y, x + w, y, false);
        }
    pen.r = REFLINE_PT * L->s;
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

/* Ink under the box (bx, by, bw, bh), px: the cloud's covered share of it
 * and the cells lines pass. */
static void ink_under(const inkmap *m, const nc_rect *a, double bx, double by, double bw,
                      double bh, double *cloud, double *lines)
{
    int c0 = (int)floor((bx - a->x) / INK_CELL), c1 = (int)ceil((bx + bw - a->x) / INK_CELL);
    int r0 = (int)floor((by - a->y) / INK_CELL), r1 = (int)ceil((by + bh - a->y) / INK_CELL);
    double sc = 0, sl = 0, n = 0;
    for (int r = r0 < 0 ? 0 : r0; r < r1 && r < m->gh; r++)
        for (int c = c0 < 0 ? 0 : c0; c < c1 && c < m->gw; c++) {
            sc += m->cloud[(size_t)r * m->gw + c];
            sl += m->line[(size_t)r * m->gw + c];
            n++;
        }
    *cloud = n > 0 ? sc / n : 0;
    *lines = sl;
}

/* Marks the box as taken (for the note after the legend). */
static void ink_block(inkmap *m, const nc_rect *a, double bx, double by, double bw, double bh)
{
    for (int r = (int)floor((by - a->y) / INK_CELL); r < ceil((by + bh - a->y) / INK_CELL); r++)
        for (int c = (int)floor((bx - a->x) / INK_CELL); c < ceil((bx + bw - a->x) / INK_CELL);
             c++)
            if (r >= 0 && c >= 0 && r < m->gh && c < m->gw)
                m->line[(size_t)r * m->gw + c] += 1e6f;
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

/* The position among first..last with the least ink (lines first, then
 * cloud; ties to the earlier); *clean tells whether it covers no line and
 * at most LEGEND_SLIVER of the cloud, and fits in the area. */
static int best_position(const inkmap *m, const nc_rect *a, double pad, double bw, double bh,
                         int first, int last, bool *clean)
{
    int best = first;
    double best_ink = HUGE_VAL, best_lines = 0, best_cloud = 0;
    for (int pos = first; pos <= last; pos++) {
        double x, y, cloud, lines;
        box_at(pos, a, pad, bw, bh, &x, &y);
        ink_under(m, a, x, y, bw, bh, &cloud, &lines);
        double ink = INK_LINE_WEIGHT * lines + cloud * (bw * bh) / (INK_CELL * INK_CELL);
        if (ink < best_ink - 1e-6) {
            best_ink = ink;
            best = pos;
            best_lines = lines;
            best_cloud = cloud;
        }
    }
    if (clean)
        *clean = best_lines == 0 && best_cloud <= LEGEND_SLIVER && bw + 2 * pad <= a->w &&
                 bh + 2 * pad <= a->h;
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
        nc_draw_marker(cr, L, e->marker, e->color, e->marker_px, x + len / 2, yc);
        break;
    default:
        cairo_set_line_width(cr, e->width_px);
        nc_draw_dash(cr, e->dashed, e->width_px);
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
        set_rgb(cr, e->color);
        cairo_move_to(cr, x, yc);
        cairo_line_to(cr, x + len, yc);
        cairo_stroke(cr);
        if (e->marker != NC_MARKER_NONE)
            nc_draw_marker(cr, L, e->marker, e->color, e->marker_px, x + len / 2, yc);
        break;
    }
}

/* The size of a legend box of entries e[0..n) in ncol columns, with an
 * optional title row; *colw the width of one column (handle, pad, text). */
static void box_size(cairo_t *cr, const layout *L, const entry *e, long n, const char *title,
                     int ncol, double *bw, double *bh, double *colw)
{
    double em = L->font_px * LEGEND_FONT;
    cairo_font_extents_t fe;
    nc_text_font(cr, em);
    cairo_font_extents(cr, &fe);
    double rowh = fe.ascent + fe.descent, tw = 0;
    for (long i = 0; i < n; i++)
        tw = fmax(tw, nc_text_measure(cr, em, e[i].label).w);
    *colw = (LEG_HANDLELEN + LEG_HANDLEPAD) * em + tw;
    double hw = title && *title ? nc_text_measure(cr, em, title).w : 0;
    long rows = (n + ncol - 1) / ncol + (title && *title ? 1 : 0);
    *bw = 2 * LEG_BORDERPAD * em + fmax(ncol * *colw + (ncol - 1) * LEG_COLSPACING * em, hw);
    *bh = 2 * LEG_BORDERPAD * em + (double)rows * rowh + (double)(rows - 1) * LEG_LABELSPACING * em;
}

/* Draws the box and its entries, ncol columns of colw, at (x, y). */
static void draw_box(cairo_t *cr, layout *L, const entry *e, long n, const char *title, int ncol,
                     double x, double y, double bw, double bh, double colw, const char *tag)
{
    double em = L->font_px * LEGEND_FONT, bp = LEG_BORDERPAD * em;
    cairo_font_extents_t fe;
    nc_text_font(cr, em);
    cairo_font_extents(cr, &fe);
    double pitch = fe.ascent + fe.descent + LEG_LABELSPACING * em;
    rounded_box(cr, x, y, bw, bh, 0.3 * em);
    cairo_set_source_rgba(cr, 1, 1, 1, LEG_ALPHA);
    cairo_fill_preserve(cr);
    set_rgb(cr, LEGEND_EDGE_RGB);
    cairo_set_line_width(cr, FRAME_PT * L->s);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_stroke(cr);
    nc_layout_record(L, tag, x, y, bw, bh, 0);
    double base = y + bp + fe.ascent;
    if (title && *title) {
        set_rgb(cr, TEXT_RGB);
        nc_text_draw(cr, em, title, x + bw / 2, base, 0.5);
        base += pitch;
    }
    long rows = (n + ncol - 1) / ncol;
    for (long i = 0; i < n; i++) {
        long r = i % rows, c = i / rows; /* down the columns, like Matplotlib */
        double ex = x + bp + (double)c * (colw + LEG_COLSPACING * em), eb = base + (double)r * pitch;
        double yc = eb - 0.5 * L->digit_h * LEGEND_FONT / TICK_FONT;
        draw_handle(cr, L, &e[i], ex, yc, LEG_HANDLELEN * em, em);
        set_rgb(cr, TEXT_RGB);
        nc_text_draw(cr, em, e[i].label, ex + (LEG_HANDLELEN + LEG_HANDLEPAD) * em, eb, 0);
    }
}

/* The entries of every panel whose legend is in the strip, first of each
 * label only; *title the first such panel's legend title. */
static long strip_entries(const nc_figure *fig, const layout *L, entry **out, const char **title)
{
    size_t cap = 1;
    for (size_t k = 0; k < fig->npanels; k++) {
        const nc_panel *p = &fig->panels[k];
        cap += 1 + p->ncurves + p->nmarks + p->nvlines + p->nhlines;
    }
    entry *e = malloc(cap * sizeof *e);
    *out = e;
    *title = NULL;
    if (!e)
        return -1;
    size_t n = 0;
    for (size_t k = 0; k < fig->npanels; k++) {
        if (L->p[k].legend != NC_LEGEND_OUTSIDE)
            continue;
        entry *pe;
        long m = legend_entries(L, &fig->panels[k], &pe);
        if (m < 0) {
            free(e);
            *out = NULL;
            return -1;
        }
        for (long i = 0; i < m; i++)
            add_entry(e, &n, pe[i]);
        free(pe);
        if (!*title && m > 0)
            *title = fig->panels[k].legend_title;
    }
    return (long)n;
}

/* Columns of the strip: as many as fit its width, at most n. */
static int strip_cols(cairo_t *cr, const layout *L, const entry *e, long n, const char *title,
                      double width)
{
    int ncol = (int)(n > 0 ? n : 1);
    for (; ncol > 1; ncol--) {
        double bw, bh, colw;
        box_size(cr, L, e, n, title, ncol, &bw, &bh, &colw);
        if (bw <= width)
            break;
    }
    return ncol;
}

int nc_legend_plan(const nc_figure *fig, layout *L, double *strip_h)
{
    *strip_h = 0;
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(surf);
    cairo_font_options_t *fo = nc_text_options(); /* measure as the drawing will */
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    int rc = cairo_status(cr) == CAIRO_STATUS_SUCCESS ? 0 : -1;
    bool any = false;
    for (size_t k = 0; k < fig->npanels && !rc; k++) {
        const nc_panel *p = &fig->panels[k];
        panel_layout *pl = &L->p[k];
        entry *e = NULL;
        long n = legend_entries(L, p, &e);
        inkmap m = {0, 0, NULL, NULL};
        pl->legend = p->legend_pos;
        if (n < 0) {
            rc = -1;
        } else if (n == 0 || p->legend_pos == NC_LEGEND_NONE) {
            pl->legend = NC_LEGEND_NONE;
        } else if (fig->shared_legend || p->legend_pos == NC_LEGEND_OUTSIDE) {
            pl->legend = NC_LEGEND_OUTSIDE;
        } else if (p->legend_pos == NC_LEGEND_AUTO) {
            double bw, bh, colw, em = L->font_px * LEGEND_FONT;
            box_size(cr, L, e, n, p->legend_title, 1, &bw, &bh, &colw);
            bool clean = false;
            if (ink_build(L, p, &pl->area, &m) != 0) {
                rc = -1;
            } else {
                best_position(&m, &pl->area, LEG_AXESPAD * em, bw, bh, NC_LEGEND_UPPER_RIGHT,
                              NC_LEGEND_CENTER, &clean);
                pl->ink_cloud = m.cloud; /* kept for drawing on this layout (layout.h) */
                m.cloud = NULL;
            }
            pl->legend = clean ? NC_LEGEND_AUTO : NC_LEGEND_OUTSIDE;
        }
        any = any || pl->legend == NC_LEGEND_OUTSIDE;
        free(e);
        free(m.cloud);
    }
    if (!rc && any) {
        entry *e;
        const char *title;
        long n = strip_entries(fig, L, &e, &title);
        if (n < 0) {
            rc = -1;
        } else {
            double bw, bh, colw;
            int ncol = strip_cols(cr, L, e, n, title, L->W - 2 * L->pad);
            box_size(cr, L, e, n, title, ncol, &bw, &bh, &colw);
            *strip_h = bh;
        }
        free(e);
    }
    cairo_destroy(cr);
    cairo_surface_destroy(surf);
    return rc;
}

int nc_legend_draw_strip(cairo_t *cr, const nc_figure *fig, layout *L)
{
    if (!(L->strip_h > 0))
        return 0;
    entry *e;
    const char *title;
    long n = strip_entries(fig, L, &e, &title);
    if (n < 0)
        return -1;
    if (n > 0) {
        double bw, bh, colw;
        int ncol = strip_cols(cr, L, e, n, title, L->strip.w);
        box_size(cr, L, e, n, title, ncol, &bw, &bh, &colw);
        draw_box(cr, L, e, n, title, ncol, L->strip.x + (L->strip.w - bw) / 2, L->strip.y, bw,
                 bh, colw, "legend outside");
    }
    free(e);
    return 0;
}

/* The note of panel k in the least inked corner of its area. */
static void draw_note(cairo_t *cr, layout *L, const nc_panel *p, const nc_rect *a, inkmap *m,
                      size_t k)
{
    double np = fmax(L->font_px * NOTE_FONT, MIN_TEXT_PT * L->px_pt), pad = LEG_AXESPAD * np;
    cairo_font_extents_t fe;
    nc_text_font(cr, np);
    cairo_font_extents(cr, &fe);
    textbox tb = nc_text_measure(cr, np, p->note);
    double bw = tb.w + 0.6 * np, bh = fe.ascent + fe.descent + 0.3 * np;
    if (bw + 2 * pad > a->w || bh + 2 * pad > a->h)
        return; /* a note wider than its panel is left out */
    int pos = best_position(m, a, pad, bw, bh, NC_LEGEND_UPPER_RIGHT, NC_LEGEND_LOWER_RIGHT, NULL);
    double x, y;
    box_at(pos, a, pad, bw, bh, &x, &y);
    cairo_rectangle(cr, x, y, bw, bh);
    cairo_set_source_rgba(cr, 1, 1, 1, LEG_ALPHA);
    cairo_fill(cr);
    set_rgb(cr, NOTE_RGB);
    double bx = x + 0.3 * np, base = y + 0.15 * np + fe.ascent;
    nc_text_draw(cr, np, p->note, bx, base, 0);
    char tag[64];
    snprintf(tag, sizeof tag, "text panel%zu.note", k);
    nc_layout_record(L, tag, bx, base - tb.asc, tb.w, tb.asc + tb.desc, np);
}

int nc_legend_draw(cairo_t *cr, layout *L, const nc_panel *p, size_t k)
{
    const nc_rect *a = &L->p[k].area;
    entry *e = NULL;
    inkmap m = {0, 0, NULL, NULL};
    int where = L->p[k].legend;
    bool inside = where != NC_LEGEND_NONE && where != NC_LEGEND_OUTSIDE;
    long n = inside ? legend_entries(L, p, &e) : 0;
    int rc = -1;
    if (L->p[k].ink_cloud) { /* the plan's, on this very area */
        m = (inkmap){(a->w + INK_CELL - 1) / INK_CELL, (a->h + INK_CELL - 1) / INK_CELL,
                     L->p[k].ink_cloud, NULL};
        m.line = m.cloud + (size_t)m.gw * (size_t)m.gh;
        L->p[k].ink_cloud = NULL;
    } else if (n >= 0 && ink_build(L, p, a, &m) != 0) {
        goto out;
    }
    if (n < 0)
        goto out;
    if (n > 0) {
        double bw, bh, colw, em = L->font_px * LEGEND_FONT, pad = LEG_AXESPAD * em;
        box_size(cr, L, e, n, p->legend_title, 1, &bw, &bh, &colw);
        int pos = where == NC_LEGEND_AUTO ? best_position(&m, a, pad, bw, bh, NC_LEGEND_UPPER_RIGHT,
                                                          NC_LEGEND_CENTER, NULL)
                                          : where;
        double x, y;
        box_at(pos, a, pad, bw, bh, &x, &y);
        ink_block(&m, a, x, y, bw, bh);
        char tag[64];
        snprintf(tag, sizeof tag, "legend panel%zu", k);
        draw_box(cr, L, e, n, p->legend_title, 1, x, y, bw, bh, colw, tag);
    }
    if (p->note && *p->note)
        draw_note(cr, L, p, a, &m, k);
    rc = 0;
out:
    free(e);
    free(m.cloud);
    return rc;
}
