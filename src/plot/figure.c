/*
 * figure.c - figures (figure.h): checking a figure, the public entry
 * points, drawing each panel (grid, density image, reference lines,
 * curves, markers, frame, ticks, labels, titles) and writing PNG, PDF or
 * SVG.
 *
 * The other parts live beside it in src/plot/, each with its header:
 * style.h (sizes and colours), text (font, measuring and drawing text),
 * layout (ticks, margins, data areas), draw (curve clipping, markers,
 * dashes), raster (density to image), legend (legend and note), colour
 * (palette, colour map).
 *
 * Units: the layout is in device pixels (px) of the PNG, s = dpi / 72 px
 * per point; style.h's lengths are in points. PDF and SVG draw the same
 * px layout under a scale of 72 / dpi.
 *
 * Crisp lines: the frame, ticks and grid get widths of whole pixels (at
 * least 1) and centres on pixel centres (odd widths) or pixel edges (even
 * widths), so that a 0.8 pt frame at 100 dpi is one sharp pixel, not two
 * grey ones. The frame sits just outside the data area, so it never covers
 * a density pixel. Curves, markers and text are anti-aliased as they come.
 *
 * Sections: validation, layout queries, drawing (density, lines, curves,
 * markers, axes), output (PNG, PDF, SVG).
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
/* Layout queries                                                      */
/* ------------------------------------------------------------------ */

int nc_figure_layout(const nc_figure *fig, size_t k, nc_rect *area, nc_err *err)
{
    int W, H;
    int rc = check_figure(fig, &W, &H, err);
    if (rc)
        return rc;
    if (k >= fig->npanels)
        return nc_err_set(err, NC_EINVAL, "figure: panel %zu of %zu", k, fig->npanels);
    layout L;
    rc = nc_layout_compute(fig, W, H, &L, err);
    if (rc)
        return rc;
    *area = L.p[k].area;
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
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    for (size_t i = 0; i < p->ncurves; i++) {
        const nc_curve *c = &p->curves[i];
        double w = (c->width_pt > 0 ? c->width_pt : CURVE_PT) * L->s;
        cairo_new_path(cr);
        nc_draw_curve_pieces(p, a, c, 4 * w, path_piece, cr);
        cairo_set_line_width(cr, w);
        nc_draw_dash(cr, c->dashed, w);
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
                nc_draw_marker(cr, L, c->marker, c->color, size, x, y);
        }
    }
    for (size_t i = 0; i < p->nmarks; i++) {
        const nc_mark *m = &p->marks[i];
        if (!usable(p, m->x, m->y))
            continue;
        double size = (m->size_pt > 0 ? m->size_pt : MARKER_PT) * L->s, x, y;
        nc_panel_to_pixel(p, a, m->x, m->y, &x, &y);
        if (x > a->x - size && x < a->x + a->w + size && y > a->y - size && y < a->y + a->h + size)
            nc_draw_marker(cr, L, m->shape, m->color, size, x, y);
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
        xasc = fmax(xasc, nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).asc);
    for (size_t i = 0; i < pl->xt.n; i++) {
        double w = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).w;
        double x = a->x + axis_pos(pl->xt.v[i], p->x0, p->x1, p->xlog, a->w);
        nc_text_draw_tick(cr, L->tick_px, pl->xt.label[i], x - w / 2, bottom + room + xasc,
                          L->digit_h);
    }
    for (size_t i = 0; i < pl->yt.n; i++) {
        double w = nc_text_measure_tick(cr, L->tick_px, pl->yt.label[i], L->digit_h).w;
        double y = bottom - axis_pos(pl->yt.v[i], p->y0, p->y1, p->ylog, a->h);
        nc_text_draw_tick(cr, L->tick_px, pl->yt.label[i], left - room - w, y + L->digit_h / 2,
                          L->digit_h);
    }

    /* axis labels at the outer edge of the shared margins, so they line up
     * across the grid; the title just above the frame */
    double lab_px = L->font_px * LABEL_FONT;
    if (p->xlabel && *p->xlabel) {
        textbox b = nc_text_measure(cr, lab_px, p->xlabel);
        nc_text_draw(cr, lab_px, p->xlabel, a->x + a->w / 2.0, bottom + L->rowB[row] - b.desc, 0.5);
    }
    if (p->ylabel && *p->ylabel) {
        textbox b = nc_text_measure(cr, lab_px, p->ylabel);
        cairo_save(cr);
        cairo_translate(cr, a->x - L->colL[col] + b.asc, a->y + a->h / 2.0);
        cairo_rotate(cr, -PI / 2);
        nc_text_draw(cr, lab_px, p->ylabel, 0, 0, 0.5);
        cairo_restore(cr);
    }
    if (p->title && *p->title) {
        /* centred over the frame, but kept inside the figure when longer */
        double tp = L->font_px * TITLE_FONT;
        textbox b = nc_text_measure(cr, tp, p->title);
        double x = clampd(a->x + a->w / 2.0 - b.w / 2, L->pad, L->W - L->pad - b.w);
        nc_text_draw(cr, tp, p->title, fmax(x, L->pad), a->y - TITLE_PAD_PT * s - b.desc, 0);
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

/* Draws the whole figure on surf, whose user space is scale times the
 * layout's pixels. */
static int draw_figure(cairo_surface_t *surf, double scale, const nc_figure *fig,
                       const layout *L, nc_err *err)
{
    cairo_t *cr = cairo_create(surf);
    cairo_font_options_t *fo = nc_text_options();
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
        if (p->density && !(dimg = nc_raster_image(p->density, p->density_color,
                                                   nc_raster_dot_radius(fig->dpi)))) {
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
        if (nc_legend_draw(cr, L, p, &pl->area, dimg) != 0)
            rc = nc_err_set(err, NC_ENOMEM, "figure: panel %zu: out of memory for the legend",
                            k);
        cairo_surface_destroy(dimg);
    }
    if (!rc && fig->title && *fig->title) {
        double tp = L->font_px * SUPTITLE_FONT;
        textbox b = nc_text_measure(cr, tp, fig->title);
        set_rgb(cr, TEXT_RGB);
        nc_text_draw(cr, tp, fig->title, L->W / 2.0, L->pad + b.asc, 0.5);
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
    rc = nc_layout_compute(fig, W, H, &L, err);
    if (rc)
        return rc;
    rc = fmt == NC_FMT_PNG ? render_png(fig, &L, sink, err)
                           : render_vector(fig, &L, fmt, sink, err);
    nc_layout_free(&L);
    return rc;
}
