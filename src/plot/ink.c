/*
 * ink.c - where a panel's data has ink, on a grid of cells, and where a
 * box can go in it (ink.h).
 */
#include "plot/ink.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plot/draw.h"
#include "plot/raster.h"
#include "plot/style.h"

#define INK_LINE_WEIGHT 3.0 /* ink where a line or marker passes (a cloud gives 0 to 1) */

/* Where nc_draw_curve_pieces sends a curve's pieces when building the ink map. */
typedef struct inkpen {
    nc_inkmap *m;
    const nc_rect *a;
    double r; /* half the line's width, px: cells this close count too */
} inkpen;

static void ink_cell(nc_inkmap *m, const nc_rect *a, double x, double y, double r, int *last)
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
static void ink_cloud(const layout *L, const nc_panel *p, const nc_rect *a, nc_inkmap *m)
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

/* The ink map of panel p on area a: the cloud (reused from the plan's
 * map of the same area, pl->ink_cloud, when there is one), then the
 * curves, markers and lines. */
int nc_ink_build(const layout *L, const nc_panel *p, const panel_layout *pl,
                     const nc_rect *a, nc_inkmap *m)
{
    m->gw = (a->w + INK_CELL - 1) / INK_CELL;
    m->gh = (a->h + INK_CELL - 1) / INK_CELL;
    size_t nc = (size_t)m->gw * (size_t)m->gh;
    m->cloud = calloc(2 * nc, sizeof *m->cloud);
    if (!m->cloud)
        return -1;
    m->line = m->cloud + nc;
    if (pl && pl->ink_cloud && pl->ink_w == a->w && pl->ink_h == a->h)
        memcpy(m->cloud, pl->ink_cloud, nc * sizeof *m->cloud);
    else if (p->density)
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
void nc_ink_under(const nc_inkmap *m, const nc_rect *a, double bx, double by, double bw,
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

/* Marks the box as taken (for what is placed after it). */
void nc_ink_block(nc_inkmap *m, const nc_rect *a, double bx, double by, double bw, double bh)
{
    for (int r = (int)floor((by - a->y) / INK_CELL); r < ceil((by + bh - a->y) / INK_CELL); r++)
        for (int c = (int)floor((bx - a->x) / INK_CELL); c < ceil((bx + bw - a->x) / INK_CELL);
             c++)
            if (r >= 0 && c >= 0 && r < m->gh && c < m->gw)
                m->line[(size_t)r * m->gw + c] += 1e6f;
}

/* Top-left corner of a box of bw x bh at position pos inside area a. */
void nc_ink_box_at(int pos, const nc_rect *a, double pad, double bw, double bh, double *x,
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

/* The position among the nine with the least ink (lines first, then
 * cloud; ties to the earlier); *clean tells whether it covers no line and
 * at most a share sliver of cloud, and fits in the area. */
int nc_ink_best(const nc_inkmap *m, const nc_rect *a, double pad, double bw, double bh,
                         double sliver, bool *clean)
{
    int best = NC_LEGEND_UPPER_RIGHT;
    double best_ink = HUGE_VAL, best_lines = 0, best_cloud = 0;
    for (int pos = NC_LEGEND_UPPER_RIGHT; pos <= NC_LEGEND_CENTER; pos++) {
        double x, y, cloud, lines;
        nc_ink_box_at(pos, a, pad, bw, bh, &x, &y);
        nc_ink_under(m, a, x, y, bw, bh, &cloud, &lines);
        double ink = INK_LINE_WEIGHT * lines + cloud * (bw * bh) / (INK_CELL * INK_CELL);
        if (ink < best_ink - 1e-6) {
            best_ink = ink;
            best = pos;
            best_lines = lines;
            best_cloud = cloud;
        }
    }
    if (clean)
        *clean = best_lines == 0 && best_cloud <= sliver && bw + 2 * pad <= a->w &&
                 bh + 2 * pad <= a->h;
    return best;
}

