/*
 * figure.c - figures (figure.h): checking a figure, the public entry
 * points, the layout with its legends placed, drawing each panel's data
 * (density image, reference lines, curves, markers) and writing PNG (with
 * the "Layout" record), PDF or SVG.
 *
 * The other parts live beside it in src/plot/, each with its header:
 * style.h (sizes and colours), text (font, measuring and drawing text),
 * layout (ticks, margins, data areas), frame (grid, frame, ticks, labels,
 * titles), draw (curve clipping, markers, dashes), raster (density to
 * image), legend (legend placement, legend and note), colour (palettes,
 * colour map).
 *
 * Units: the layout is in device pixels (px) of the PNG, s = dpi / 72 x k
 * px per style point (k the figure's text scale, layout.h); style.h's
 * lengths are in points. PDF and SVG draw the same px layout under a scale
 * of 72 / dpi. Curves, markers and text are anti-aliased as they come.
 *
 * Sections: validation, layout queries, drawing the data, output (PNG,
 * PDF, SVG).
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
#include "plot/colour.h"
#include "plot/draw.h"
#include "plot/frame.h"
#include "plot/layout.h"
#include "plot/legend.h"
#include "plot/raster.h"
#include "plot/style.h"
#include "plot/text.h"

/* ------------------------------------------------------------------ */
/* Validation                                                          */
/* ------------------------------------------------------------------ */

#define MAX_SIDE_PX NC_FIG_MAX_SIDE_PX

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
        if (p->legend_pos < NC_LEGEND_AUTO || p->legend_pos > NC_LEGEND_OUTSIDE ||
            p->note_pos < NC_LEGEND_AUTO || p->note_pos > NC_LEGEND_OUTSIDE)
            return nc_err_set(err, NC_EINVAL, "figure: panel %zu: legend position %d, note "
                                              "position %d, expected 0 to %d",
                              k, p->legend_pos, p->note_pos, NC_LEGEND_OUTSIDE);
        if (p->legend_cols < 0 || p->legend_cols > 8 ||
            !(p->legend_pt == 0 || (p->legend_pt >= 2 && p->legend_pt <= 72)))
            return nc_err_set(err, NC_EINVAL, "figure: panel %zu: legend of %d columns at %g pt, "
                                              "expected 0 to 8 columns, 0 or 2 to 72 pt",
                              k, p->legend_cols, p->legend_pt);
        if (p->xlin != 0 && !(p->xlin > 0 && isfinite(p->xlin) && p->xdecade > 0 &&
                              isfinite(p->xdecade) && !p->xlog))
            return nc_err_set(err, NC_EINVAL, "figure: panel %zu: symmetric log x axis with "
                                              "linear range %g and decade %g, expected both > 0 "
                                              "on a linear axis",
                              k, p->xlin, p->xdecade);
        if (p->cbar && !(isfinite(p->cbar->lo) && isfinite(p->cbar->hi) &&
                         p->cbar->lo < p->cbar->hi && (!p->cbar->log || p->cbar->lo > 0)))
            return nc_err_set(err, NC_EINVAL, "figure: panel %zu: colour bar range [%g, %g], "
                                              "expected finite lo < hi (> 0 when log)",
                              k, p->cbar->lo, p->cbar->hi);
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
/* Layout queries                                                      */
/* ------------------------------------------------------------------ */

/* The layout with the legends placed: a first layout without a strip,
 * the legend decisions on it (legend.h), and when something goes to the
 * strip, the layout again with the strip, keeping the decisions. */
static int full_layout(const nc_figure *fig, int W, int H, layout *L, nc_err *err)
{
    int rc = nc_layout_compute(fig, W, H, 0, L, err);
    double strip_h = 0;
    if (!rc && nc_legend_plan(fig, L, &strip_h) != 0) {
        nc_layout_free(L);
        return nc_err_set(err, NC_ENOMEM, "figure: out of memory for the legend");
    }
    if (rc || strip_h <= 0)
        return rc;
    layout L2;
    rc = nc_layout_compute(fig, W, H, strip_h, &L2, err);
    for (size_t k = 0; k < fig->npanels && !rc; k++) {
        panel_layout *a = &L->p[k], *b = &L2.p[k];
        b->legend = a->legend;
        b->legend_cols = a->legend_cols;
        b->legend_px = a->legend_px;
        b->note = a->note;
        b->note_text = a->note_text;
        a->note_text = NULL;
    }
    if (!rc)
        L2.strip_legend_px = L->strip_legend_px;
    nc_layout_free(L);
    *L = L2;
    return rc;
}

int nc_figure_placements(const nc_figure *fig, nc_placement *out, nc_rect *areas, nc_err *err)
{
    int W, H;
    int rc = check_figure(fig, &W, &H, err);
    layout L;
    if (rc || (rc = full_layout(fig, W, H, &L, err)))
        return rc;
    for (size_t k = 0; k < fig->npanels; k++) {
        out[k] = (nc_placement){L.p[k].legend, L.p[k].legend_cols,
                                L.p[k].legend_px / L.px_pt, L.p[k].note};
        if (areas)
            areas[k] = L.p[k].area;
    }
    nc_layout_free(&L);
    return 0;
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
    rc = full_layout(fig, W, H, &L, err);
    if (rc)
        return rc;
    *area = L.p[k].area;
    nc_layout_free(&L);
    return 0;
}

int nc_figure_areas(const nc_figure *fig, nc_rect *areas, nc_err *err)
{
    int W, H;
    int rc = check_figure(fig, &W, &H, err);
    if (rc)
        return rc;
    layout L;
    if ((rc = full_layout(fig, W, H, &L, err)))
        return rc;
    for (size_t k = 0; k < fig->npanels; k++)
        areas[k] = L.p[k].area;
    nc_layout_free(&L);
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

/* ------------------------------------------------------------------ */
/* Drawing: helpers                                                    */
/* ------------------------------------------------------------------ */

static void clip_area(cairo_t *cr, const nc_rect *a)
{
    cairo_rectangle(cr, a->x, a->y, a->w, a->h);
    cairo_clip(cr);
}

static void path_piece(void *ctx, double ax, double ay, double bx, double by, bool joined)
{
    cairo_t *cr = ctx;
    if (!joined)
        cairo_move_to(cr, ax, ay);
    cairo_line_to(cr, bx, by);
}

/* ------------------------------------------------------------------ */
/* Drawing: the density cloud                                          */
/* ------------------------------------------------------------------ */

static void draw_density(cairo_t *cr, const nc_panel *p, const nc_rect *a, cairo_surface_t *img)
{
    const nc_density *d = p->density;
    double X0, Y0, sx, sy;
    nc_raster_place(p, a, d, &X0, &Y0, &sx, &sy);
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

static void draw_lines_curves(cairo_t *cr, const layout *L, const nc_panel *p, const nc_rect *a)
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
        nc_draw_dash(cr, v->dashed, lw);
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
        nc_draw_dash(cr, h->dashed, lw);
        set_rgb(cr, h->color);
        cairo_move_to(cr, a->x, y);
        cairo_line_to(cr, a->x + a->w, y);
        cairo_stroke(cr);
    }
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        double w = (c->width_pt > 0 ? c->width_pt : CURVE_PT) * L->s;
        cairo_new_path(cr);
        nc_draw_curve_pieces(p, a, c, 4 * w, path_piece, cr);
        cairo_set_line_width(cr, w);
        nc_draw_dash(cr, c->dashed, w);
        cairo_set_line_cap(cr, c->dashed == NC_DOTTED ? CAIRO_LINE_CAP_ROUND
                               : c->dashed ? CAIRO_LINE_CAP_BUTT : CAIRO_LINE_CAP_ROUND);
        set_rgb(cr, c->color);
        cairo_stroke(cr);
    }
    cairo_restore(cr);
}

/* Whether the marker centre (x, y) px is inside area a (edges included). */
static bool in_area(const nc_rect *a, double x, double y)
{
    return x >= a->x - 0.5 && x <= a->x + a->w + 0.5 && y >= a->y - 0.5 && y <= a->y + a->h + 0.5;
}

/* Markers whose centre is inside the frame, drawn whole (not clipped at
 * the frame: a point at the edge of the range is a whole point). */
static void draw_marks(cairo_t *cr, const layout *L, const nc_panel *p, const nc_rect *a)
{
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        if (c->marker == NC_MARKER_NONE)
            continue;
        double size = (c->marker_pt > 0 ? c->marker_pt : MARKER_PT) * L->s;
        for (size_t j = 0; j < c->n; j++) {
            double x, y;
            if (!usable(p, c->x[j], c->y[j]))
                continue;
            nc_panel_to_pixel(p, a, c->x[j], c->y[j], &x, &y);
            if (in_area(a, x, y))
                nc_draw_marker(cr, L, c->marker, c->color, size, x, y);
        }
    }
    for (size_t i = 0; i < p->nmarks; i++) {
        const nc_mark *m = &p->marks[i];
        double size = (m->size_pt > 0 ? m->size_pt : MARKER_PT) * L->s, x, y;
        if (!usable(p, m->x, m->y))
            continue;
        nc_panel_to_pixel(p, a, m->x, m->y, &x, &y);
        if (in_area(a, x, y))
            nc_draw_marker(cr, L, m->shape, m->color, size, x, y);
    }
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

/* The density of panel p as drawn in area a: itself, or when it has more
 * pixels than the area (the area shrank for a legend strip after the
 * raster was sized), its counts summed into a raster of the area's size
 * (*tmp, to free), so that lone points stay whole pixels. */
static const nc_density *area_density(const nc_panel *p, const nc_rect *a, nc_density **tmp)
{
    const nc_density *d = p->density;
    *tmp = NULL;
    if (!d || (d->w <= a->w && d->h <= a->h))
        return d;
    nc_err e = {0};
    nc_density *r;
    size_t *col = malloc((size_t)d->w * sizeof *col);
    if (!col || nc_density_alloc(a->w, a->h, d->x0, d->x1, d->y0, d->y1, d->rgb != NULL, &r,
                                 &e) != 0) {
        free(col);
        return d; /* drawn scaled by cairo instead */
    }
    for (int i = 0; i < d->w; i++)
        col[i] = (size_t)((int64_t)i * a->w / d->w);
    for (int j = 0; j < d->h; j++) {
        const uint32_t *src = d->count + (size_t)j * (size_t)d->w;
        size_t base = (size_t)((int64_t)j * a->h / d->h) * (size_t)a->w;
        uint32_t *dst = r->count + base;
        for (int i = 0; i < d->w; i++) {
            if (!src[i])
                continue;
            uint64_t c = (uint64_t)dst[col[i]] + src[i];
            dst[col[i]] = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
            for (int q = 0; r->rgb && q < 3; q++)
                r->rgb[3 * (base + col[i]) + q] += d->rgb[3 * ((size_t)j * (size_t)d->w + (size_t)i) + q];
        }
    }
    free(col);
    r->outside = d->outside;
    *tmp = r;
    return r;
}

/* Records "colour panelK KIND #rrggbb" once per colour and kind. */
static void record_colour(layout *L, size_t k, const char *kind, nc_rgb c, char (*seen)[16],
                          size_t *nseen, size_t cap)
{
    char hex[16], line[96];
    snprintf(hex, sizeof hex, "%c#%02x%02x%02x", kind[0], (unsigned)lround(255 * clamp01(c.r)),
             (unsigned)lround(255 * clamp01(c.g)), (unsigned)lround(255 * clamp01(c.b)));
    for (size_t i = 0; i < *nseen; i++)
        if (strcmp(seen[i], hex) == 0)
            return;
    if (*nseen < cap)
        snprintf(seen[(*nseen)++], 16, "%s", hex);
    snprintf(line, sizeof line, "colour panel%zu %s %s", k, kind, hex + 1);
    nc_layout_record_line(L, line);
}

/* What the layout test needs to tell data from text: each panel's data
 * colours (cloud, curves, marks, lines), as "colour panelK KIND #rrggbb". */
static void record_colours(layout *L, const nc_panel *p, size_t k)
{
    char seen[64][16];
    size_t n = 0, cap = sizeof seen / sizeof seen[0];
    if (!L->rec)
        return;
    if (p->density && !p->density->rgb)
        record_colour(L, k, "cloud", p->density_color, seen, &n, cap);
    for (size_t i = 0; i < p->ncurves; i++)
        record_colour(L, k, "curve", p->curves[i].color, seen, &n, cap);
    for (size_t i = 0; i < p->nmarks; i++)
        record_colour(L, k, "mark", p->marks[i].color, seen, &n, cap);
    for (size_t i = 0; i < p->nvlines; i++)
        record_colour(L, k, "line", p->vlines[i].color, seen, &n, cap);
    for (size_t i = 0; i < p->nhlines; i++)
        record_colour(L, k, "line", p->hlines[i].color, seen, &n, cap);
}

/* Panel k, bottom to top (figure.h). */
static int draw_panel(cairo_t *cr, const nc_figure *fig, layout *L, size_t k, nc_err *err)
{
    const nc_panel *p = &fig->panels[k];
    const panel_layout *pl = &L->p[k];
    nc_density *tmp;
    nc_panel q = *p; /* p with the density as drawn */
    q.density = area_density(p, &pl->area, &tmp);
    cairo_surface_t *dimg = NULL;
    if (q.density && !(dimg = nc_raster_image(q.density, p->density_color,
                                               nc_raster_floor(p->density_color),
                                               nc_raster_dot_radius(fig->dpi)))) {
        nc_density_free(tmp);
        return nc_err_set(err, NC_ENOMEM, "figure: panel %zu: out of memory for the density "
                                          "image", k);
    }
    if (p->grid)
        nc_frame_grid(cr, L, p, pl);
    if (dimg)
        draw_density(cr, &q, &pl->area, dimg);
    draw_lines_curves(cr, L, p, &pl->area);
    draw_marks(cr, L, p, &pl->area);
    nc_frame_ticks(cr, L, p, pl);
    nc_frame_tick_labels(cr, L, p, pl, k);
    nc_frame_labels(cr, L, fig, p, pl, k);
    nc_frame_colorbar(cr, L, p, pl, k);
    record_colours(L, p, k);
    int rc = nc_legend_draw(cr, L, fig, &q, k) != 0
                 ? nc_err_set(err, NC_ENOMEM, "figure: panel %zu: out of memory for the legend", k)
                 : 0;
    cairo_surface_destroy(dimg);
    nc_density_free(tmp);
    return rc;
}

/* Draws the whole figure on surf, whose user space is scale times the
 * layout's pixels. */
static int draw_figure(cairo_surface_t *surf, double scale, const nc_figure *fig, layout *L,
                       nc_err *err)
{
    cairo_t *cr = cairo_create(surf);
    cairo_font_options_t *fo = nc_text_options();
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    nc_text_set_min(cr, MIN_TEXT_PT * L->px_pt);
    cairo_scale(cr, scale, scale);
    if (!fig->transparent) {
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_paint(cr);
    }
    char line[64];
    snprintf(line, sizeof line, "canvas %d %d %.4g", L->W, L->H, fig->dpi);
    nc_layout_record_line(L, line);
    int rc = 0;
    for (size_t k = 0; k < fig->npanels && !rc; k++)
        rc = draw_panel(cr, fig, L, k, err);
    if (!rc && nc_legend_draw_strip(cr, fig, L) != 0)
        rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory for the legend");
    if (!rc && fig->title && *fig->title) {
        double tp = nc_layout_fit_size(cr, L, L->font_px * SUPTITLE_FONT, fig->title,
                                       L->W - 2 * L->pad);
        textbox b = nc_text_measure(cr, tp, fig->title);
        set_rgb(cr, TEXT_RGB);
        nc_frame_text(cr, L, tp, fig->title, L->W / 2.0, L->pad + b.asc, 0.5, L->W - 2 * L->pad,
                  "text figure.title");
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

/* The metadata pairs meta with (key, value) added (owned by the caller,
 * the strings borrowed); NULL when out of memory. */
static const char **meta_with(const char *const *meta, const char *key, const char *value)
{
    size_t n = 0;
    while (meta && meta[n])
        n += 2;
    const char **m = malloc((n + 3) * sizeof *m);
    if (!m)
        return NULL;
    for (size_t i = 0; i < n; i++)
        m[i] = meta[i];
    m[n] = key;
    m[n + 1] = value;
    m[n + 2] = NULL;
    return m;
}

static int render_png(const nc_figure *fig, layout *L, const nc_sink *sink, nc_err *err)
{
    cairo_surface_t *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, L->W, L->H);
    nc_rec rec = {0};
    const char **meta = NULL;
    int rc = 0;
    if (cairo_surface_status(surf) != CAIRO_STATUS_SUCCESS) {
        rc = cairo_error(cairo_surface_status(surf), "creating the image", err);
        goto out;
    }
    L->rec = fig->meta ? &rec : NULL;
    rc = draw_figure(surf, 1.0, fig, L, err);
    L->rec = NULL;
    if (rc)
        goto out;
    if (fig->meta && (rec.oom || !(meta = meta_with(fig->meta, "Layout", rec.s ? rec.s : "")))) {
        rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory for the metadata");
        goto out;
    }
    cairo_surface_flush(surf);
    argb_rows src = {cairo_image_surface_get_data(surf), cairo_image_surface_get_stride(surf),
                     L->W, fig->transparent};
    rc = nc_png_write_rows(sink, L->W, L->H, fig->transparent, argb_row, &src, meta, err);
out:
    cairo_surface_destroy(surf);
    free(meta);
    free(rec.s);
    return rc;
}

/* Output of the PDF and SVG surfaces: to the sink; SVG gets the metadata
 * as a <metadata> element right after its <svg ...> start tag (text, so a
 * command's "--" stays as it is: in a comment XML forbids it). */
typedef struct stream {
    const nc_sink *sink;
    nc_err *err;
    int rc;              /* the sink's first error */
    const char *insert;  /* SVG: "<metadata>...</metadata>" to insert, or NULL */
    int matched;         /* characters of "<svg" seen so far (4: in the start tag) */
    bool inserted;
} stream;

static cairo_status_t stream_write(void *closure, const unsigned char *data, unsigned int n)
{
    stream *st = closure;
    if (st->rc)
        return CAIRO_STATUS_WRITE_ERROR;
    size_t head = n; /* the bytes up to the end of the <svg ...> start tag */
    for (size_t k = 0; st->insert && !st->inserted && k < n; k++) {
        if (st->matched < 4)
            st->matched = data[k] == (unsigned char)"<svg"[st->matched] ? st->matched + 1
                          : data[k] == '<'                                ? 1
                                                                          : 0;
        else if (data[k] == '>') {
            head = k + 1;
            st->inserted = true;
        }
    }
    st->rc = nc_sink_write(st->sink, data, head, st->err);
    if (!st->rc && st->inserted && st->insert) { /* the start tag ended in this piece */
        st->rc = nc_sink_write(st->sink, st->insert, strlen(st->insert), st->err);
        st->insert = NULL;
        if (!st->rc && head < n)
            st->rc = nc_sink_write(st->sink, data + head, n - head, st->err);
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

/* All pairs as "key: value" (for PDF Keywords: "; " between pairs; for
 * SVG: one a line in a <metadata> element, with &, < and > escaped).
 * Owned by the caller; NULL when out of memory. */
static char *meta_text(const char *const *meta, bool svg)
{
    size_t n = 64;
    for (size_t i = 0; meta && meta[i]; i += 2)
        n += 5 * (strlen(meta[i]) + strlen(meta[i + 1] ? meta[i + 1] : "")) + 8;
    char *out = malloc(n), *o = out;
    if (!out)
        return NULL;
    if (svg)
        o += sprintf(o, "\n<metadata>\n");
    for (size_t i = 0; meta && meta[i]; i += 2) {
        if (!svg && i > 0)
            o += sprintf(o, "; ");
        for (int part = 0; part < 2; part++) {
            const char *t = part ? (meta[i + 1] ? meta[i + 1] : "") : meta[i];
            for (; *t; t++) {
                if (svg && (*t == '&' || *t == '<' || *t == '>'))
                    o += sprintf(o, "%s", *t == '&' ? "&amp;" : *t == '<' ? "&lt;" : "&gt;");
                else
                    *o++ = *t;
            }
            if (!part)
                o += sprintf(o, ": ");
        }
        if (svg)
            *o++ = '\n';
    }
    if (svg)
        o += sprintf(o, "</metadata>");
    *o = '\0';
    return out;
}

static int render_vector(const nc_figure *fig, layout *L, nc_format fmt,
                         const nc_sink *sink, nc_err *err)
{
    double scale = 72.0 / fig->dpi;
    double wpt = L->W * scale, hpt = L->H * scale;
    stream st = {.sink = sink, .err = err};
    char *keywords = NULL, *comment = NULL; /* comment: the SVG's metadata element */
    cairo_surface_t *surf = NULL;
    int rc = 0;
    if (fmt == NC_FMT_SVG && fig->meta && fig->meta[0]) {
        comment = meta_text(fig->meta, true);
        if (!comment) {
            rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory");
            goto out;
        }
        st.insert = comment;
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

/* "panel K: area X Y W H; x X0 X1[ log| symlog LIN DEC]; y Y0 Y1[ log]"
 * per panel, one a line: where each panel's data area is and the range it
 * shows (enough to read values off the image). Owned by the caller; NULL
 * when out of memory. */
static char *panels_text(const nc_figure *fig, const layout *L)
{
    size_t cap = 224 * fig->npanels + 1, used = 0;
    char *t = malloc(cap);
    for (size_t k = 0; t && k < fig->npanels; k++) {
        const nc_panel *p = &fig->panels[k];
        const nc_rect *a = &L->p[k].area;
        char sym[64] = "";
        if (p->xlin > 0)
            snprintf(sym, sizeof sym, " symlog %.17g %.17g", p->xlin, p->xdecade);
        int w = snprintf(t + used, cap - used,
                         "%spanel %zu: area %d %d %d %d; x %.17g %.17g%s%s; y %.17g %.17g%s",
                         k ? "\n" : "", k, a->x, a->y, a->w, a->h, p->x0, p->x1,
                         p->xlog ? " log" : "", sym, p->y0, p->y1, p->ylog ? " log" : "");
        used += w > 0 && used + (size_t)w < cap ? (size_t)w : 0;
    }
    if (t)
        t[used] = '\0';
    return t;
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
    rc = full_layout(fig, W, H, &L, err);
    if (rc)
        return rc;
    nc_figure f = *fig; /* with the "Panels" pair added to its metadata */
    char *panels = fig->meta ? panels_text(fig, &L) : NULL;
    const char **meta = panels ? meta_with(fig->meta, "Panels", panels) : NULL;
    if (fig->meta && !meta) {
        rc = nc_err_set(err, NC_ENOMEM, "figure: out of memory for the metadata");
    } else {
        f.meta = fig->meta ? meta : NULL;
        rc = fmt == NC_FMT_PNG ? render_png(&f, &L, sink, err)
                               : render_vector(&f, &L, fmt, sink, err);
    }
    free(meta);
    free(panels);
    nc_layout_free(&L);
    return rc;
}
