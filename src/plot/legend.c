/*
 * legend.c - legend entries, the ink map, placement, and drawing of the
 * legend and the note (legend.h).
 */
#include "plot/legend.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plot/colour.h"
#include "plot/draw.h"
#include "plot/raster.h"
#include "plot/style.h"
#include "plot/text.h"

#define INK_CELL 4          /* px per cell of the legend placement grid */
#define INK_LINE_WEIGHT 3.0 /* ink where a line or marker passes (a cloud gives 0 to 1) */

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

/* Where nc_draw_curve_pieces sends a curve's pieces when building the ink map. */
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
        nc_raster_place(p, a, d, &X0, &Y0, &sx, &sy);
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
        nc_draw_curve_pieces(p, a, c, 0, ink_add_piece, st);
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

int nc_legend_draw(cairo_t *cr, const layout *L, const nc_panel *p, const nc_rect *a,
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
    nc_text_font(cr, em);
    cairo_font_extents(cr, &fe);
    double rowh = fe.ascent + fe.descent, pitch = rowh + LEG_LABELSPACING * em;
    double pad = LEG_AXESPAD * em, bp = LEG_BORDERPAD * em;
    bool has_title = p->legend_title && *p->legend_title && n > 0;
    if (n > 0) {
        double tw = 0;
        for (long i = 0; i < n; i++)
            tw = fmax(tw, nc_text_measure(cr, em, e[i].label).w);
        double hw = has_title ? nc_text_measure(cr, em, p->legend_title).w : 0;
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
            nc_text_draw(cr, em, p->legend_title, x + bw / 2, base, 0.5);
            base += pitch;
        }
        for (long i = 0; i < n; i++, base += pitch) {
            double yc = base - 0.5 * L->digit_h * LEGEND_FONT / TICK_FONT;
            draw_handle(cr, L, &e[i], x + bp, yc, LEG_HANDLELEN * em, em);
            set_rgb(cr, TEXT_RGB);
            nc_text_draw(cr, em, e[i].label, x + bp + (LEG_HANDLELEN + LEG_HANDLEPAD) * em, base,
                         0);
        }
    }
    if (p->note && *p->note) {
        double np = L->font_px * NOTE_FONT;
        nc_text_font(cr, np);
        cairo_font_extents(cr, &fe);
        double bw = nc_text_measure(cr, np, p->note).w + 0.6 * np,
               bh = fe.ascent + fe.descent + 0.3 * np;
        int pos = best_position(&m, a, pad, bw, bh, NC_LEGEND_UPPER_RIGHT, NC_LEGEND_LOWER_RIGHT);
        double x, y;
        box_at(pos, a, pad, bw, bh, &x, &y);
        cairo_rectangle(cr, x, y, bw, bh);
        cairo_set_source_rgba(cr, 1, 1, 1, LEG_ALPHA);
        cairo_fill(cr);
        set_rgb(cr, NOTE_RGB);
        nc_text_draw(cr, np, p->note, x + 0.3 * np, y + 0.15 * np + fe.ascent, 0);
    }
    rc = 0;
out:
    free(e);
    free(m.v);
    return rc;
}
