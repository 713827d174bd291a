/*
 * frame.c - what is drawn around and over a panel's data (frame.h): the
 * light grid, the frame, the ticks and their labels, the axis labels, the
 * titles and the point labels, each text recorded in the layout (figure.h,
 * "Layout" metadata).
 *
 * Crisp lines: the frame, ticks and grid get widths of whole pixels (at
 * least 1) and centres on pixel centres (odd widths) or pixel edges (even
 * widths), so that a 0.8 pt frame at 100 dpi is one sharp pixel, not two
 * grey ones. The frame sits just outside the data area, so it never covers
 * a density pixel.
 */
#include "plot/frame.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/colour.h"
#include "plot/draw.h"
#include "plot/style.h"
#include "plot/text.h"

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

void nc_frame_grid(cairo_t *cr, const layout *L, const nc_panel *p, const panel_layout *pl)
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

/* ------------------------------------------------------------------ */
/* Drawing: text, recorded                                             */
/* ------------------------------------------------------------------ */

/* Draws s at size px (baseline y, halign as nc_text_draw), cut with an
 * ellipsis to at most maxw px, and records its ink box as tag. */
void nc_frame_text(cairo_t *cr, layout *L, double size, const char *s, double x, double y,
                      double halign, double maxw, const char *tag)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    textbox b = nc_text_measure(cr, size, buf);
    size_t n = strlen(buf);
    while (b.w > maxw && n > 1) {
        do
            n--;
        while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80); /* a UTF-8 boundary */
        snprintf(buf + n, sizeof buf - n, "\xe2\x80\xa6");
        b = nc_text_measure(cr, size, buf);
    }
    nc_text_draw(cr, size, buf, x, y, halign);
    nc_layout_record(L, tag, x - halign * b.w, y - b.asc, b.w, b.asc + b.desc, size);
}

/* The y label, rotated, centred on (x, yc) with its ink's left at x. */
static void draw_ylabel(cairo_t *cr, layout *L, double size, const char *s, double x, double yc,
                        double maxw, const char *tag)
{
    textbox b = nc_text_measure(cr, size, s);
    cairo_save(cr);
    cairo_translate(cr, x + b.asc, yc);
    cairo_rotate(cr, -PI / 2);
    nc_rec *rec = L->rec;
    L->rec = NULL; /* drawn rotated: recorded below, in figure coordinates */
    nc_frame_text(cr, L, size, s, 0, 0, 0.5, maxw, tag);
    L->rec = rec;
    cairo_restore(cr);
    double w = fmin(b.w, maxw);
    nc_layout_record(L, tag, x, yc - w / 2, b.asc + b.desc, w, size);
}

/* The point labels of panel k (figure.h, nc_label): the first of four
 * corners around the point that overlaps no label placed before and stays
 * inside the area. */
void nc_frame_point_labels(cairo_t *cr, layout *L, const nc_panel *p, const nc_rect *a,
                              size_t k)
{
    double sz = fmax(L->font_px * NOTE_FONT, MIN_TEXT_PT * L->px_pt), off = 0.35 * sz;
    double(*box)[4] = calloc(p->nlabels ? p->nlabels : 1, sizeof *box);
    size_t nb = 0;
    char tag[64];
    for (size_t i = 0; box && i < p->nlabels; i++) {
        const nc_label *lb = &p->labels[i];
        double px, py;
        if (!lb->text || !usable(p, lb->x, lb->y))
            continue;
        nc_panel_to_pixel(p, a, lb->x, lb->y, &px, &py);
        textbox b = nc_text_measure(cr, sz, lb->text);
        for (int c = 0; c < 4; c++) {
            double x = c % 2 ? px - off - b.w : px + off;
            double y = c < 2 ? py - off - b.desc - b.asc : py + off;
            bool ok = x >= a->x && y >= a->y && x + b.w <= a->x + a->w && y + b.asc + b.desc <= a->y + a->h;
            for (size_t q = 0; q < nb && ok; q++)
                ok = x + b.w < box[q][0] || x > box[q][0] + box[q][2] ||
                     y + b.asc + b.desc < box[q][1] || y > box[q][1] + box[q][3];
            if (!ok)
                continue;
            set_rgb(cr, lb->color);
            nc_text_draw(cr, sz, lb->text, x, y + b.asc, 0);
            snprintf(tag, sizeof tag, "text panel%zu.label%zu", k, i);
            nc_layout_record(L, tag, x, y, b.w, b.asc + b.desc, sz);
            box[nb][0] = x, box[nb][1] = y, box[nb][2] = b.w, box[nb][3] = b.asc + b.desc;
            nb++;
            break;
        }
    }
    free(box);
}

/* ------------------------------------------------------------------ */
/* Drawing: frame, ticks, labels, titles                               */
/* ------------------------------------------------------------------ */

void nc_frame_ticks(cairo_t *cr, const layout *L, const nc_panel *p,
                             const panel_layout *pl)
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
}

/* Tick labels: x centred under their tick on one baseline, y
 * right-aligned and centred on theirs. */
void nc_frame_tick_labels(cairo_t *cr, layout *L, const nc_panel *p, const panel_layout *pl,
                             size_t k)
{
    const nc_rect *a = &pl->area;
    double bottom = a->y + a->h, left = a->x;
    double room = crisp_width(FRAME_PT * L->s) + (TICK_LEN_PT + TICK_PAD_PT) * L->s, xasc = 0;
    char tag[64];
    set_rgb(cr, TEXT_RGB);
    for (size_t i = 0; i < pl->xt.n; i++)
        xasc = fmax(xasc, nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).asc);
    for (size_t i = 0; i < pl->xt.n; i++) {
        if (!pl->xt.label[i][0])
            continue; /* left blank: no room (layout.c) */
        textbox b = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h);
        double x = a->x + axis_pos(pl->xt.v[i], p->x0, p->x1, p->xlog, a->w) - b.w / 2;
        double base = bottom + room + xasc;
        nc_text_draw_tick(cr, L->tick_px, pl->xt.label[i], x, base, L->digit_h);
        snprintf(tag, sizeof tag, "text panel%zu.xtick%zu", k, i);
        nc_layout_record(L, tag, x, base - b.asc, b.w, b.asc + b.desc, L->tick_px);
    }
    for (size_t i = 0; i < pl->yt.n; i++) {
        if (!pl->yt.label[i][0])
            continue;
        textbox b = nc_text_measure_tick(cr, L->tick_px, pl->yt.label[i], L->digit_h);
        double base = bottom - axis_pos(pl->yt.v[i], p->y0, p->y1, p->ylog, a->h) + L->digit_h / 2;
        nc_text_draw_tick(cr, L->tick_px, pl->yt.label[i], left - room - b.w, base, L->digit_h);
        snprintf(tag, sizeof tag, "text panel%zu.ytick%zu", k, i);
        nc_layout_record(L, tag, left - room - b.w, base - b.asc, b.w, b.asc + b.desc, L->tick_px);
    }
}

/* Axis labels at the outer edge of the shared margins, so they line up
 * across the grid; the title just above the frame, centred over it but
 * kept inside the figure. */
void nc_frame_labels(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p,
                        const panel_layout *pl, size_t k)
{
    const nc_rect *a = &pl->area;
    int row = (int)k / fig->cols, col = (int)k % fig->cols;
    double bottom = a->y + a->h, maxw = L->W - 2 * L->pad;
    char tag[64];
    set_rgb(cr, TEXT_RGB);
    if (pl->xlab[0]) {
        double sz = nc_layout_xlabel_px(cr, fig, L, pl->xlab);
        textbox b = nc_text_measure(cr, sz, pl->xlab);
        double xmax = fig->cols > 1 ? a->w : maxw;
        double x = clampd(a->x + a->w / 2.0, L->pad + fmin(b.w, xmax) / 2,
                          L->W - L->pad - fmin(b.w, xmax) / 2);
        snprintf(tag, sizeof tag, "text panel%zu.xlabel", k);
        nc_frame_text(cr, L, sz, pl->xlab, x, bottom + L->rowB[row] - b.desc, 0.5, xmax, tag);
    }
    if (pl->ylab[0]) {
        double sz = nc_layout_ylabel_px(cr, fig, L, pl->ylab);
        snprintf(tag, sizeof tag, "text panel%zu.ylabel", k);
        draw_ylabel(cr, L, sz, pl->ylab, a->x - L->colL[col], a->y + a->h / 2.0, a->h, tag);
    }
    if (p->title && *p->title) {
        double tp = nc_layout_title_px(cr, fig, L, p->title);
        textbox b = nc_text_measure(cr, tp, p->title);
        if (fig->cols > 1) /* a grid: each title within its frame's width */
            maxw = a->w;
        double w = fmin(b.w, maxw);
        double x = fig->cols > 1 ? a->x + a->w / 2.0 - w / 2
                                 : clampd(a->x + a->w / 2.0 - w / 2, L->pad, L->W - L->pad - w);
        snprintf(tag, sizeof tag, "text panel%zu.title", k);
        nc_frame_text(cr, L, tp, p->title, x, a->y - TITLE_PAD_PT * L->s - b.desc, 0, maxw, tag);
    }
}

