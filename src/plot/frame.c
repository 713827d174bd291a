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
    nc_scale xs = panel_xscale(p), ys = panel_yscale(p);
    cairo_set_line_width(cr, lw);
    cairo_set_dash(cr, NULL, 0, 0);
    set_rgb(cr, GRID_RGB);
    for (size_t i = 0; i < pl->xt.n; i++) {
        double x = crisp_pos(a->x + scale_pos(&xs, pl->xt.v[i], a->w), lw);
        cairo_move_to(cr, x, a->y);
        cairo_line_to(cr, x, a->y + a->h);
    }
    for (size_t i = 0; i < pl->yt.n; i++) {
        double y = crisp_pos(a->y + a->h - scale_pos(&ys, pl->yt.v[i], a->h), lw);
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
    bool cut = false;
    while (b.w > maxw + 0.5 && n > 1) {
        do
            n--;
        while (n > 0 && ((unsigned char)buf[n] & 0xc0) == 0x80); /* a UTF-8 boundary */
        snprintf(buf + n, sizeof buf - n, "\xe2\x80\xa6");
        b = nc_text_measure(cr, size, buf);
        cut = true;
    }
    nc_text_draw(cr, size, buf, x, y, halign);
    nc_layout_record(L, tag, x - halign * b.w, y - b.asc, b.w, b.asc + b.desc, b.minpx);
    if (cut) { /* "cut text panel0.title": the layout test refuses these */
        char line[96];
        snprintf(line, sizeof line, "cut %s", tag);
        nc_layout_record_line(L, line);
    }
}

/* The y label, rotated, centred on (x, yc) with its ink's left at x. */
static void draw_ylabel(cairo_t *cr, layout *L, double size, const char *s, double x, double yc,
                        double maxw, const char *tag)
{
    textbox b = nc_text_measure(cr, size, s);
    cairo_save(cr);
    cairo_translate(cr, x + b.asc, yc);
    cairo_rotate(cr, -PI / 2);
    nc_rec *rec = L->rec, scratch = {0};
    L->rec = rec ? &scratch : NULL; /* drawn rotated: recorded below, in figure coordinates */
    nc_frame_text(cr, L, size, s, 0, 0, 0.5, maxw, tag);
    L->rec = rec;
    cairo_restore(cr);
    double w = fmin(b.w, maxw);
    nc_layout_record(L, tag, x, yc - w / 2, b.asc + b.desc, w, b.minpx);
    if (scratch.s && strstr(scratch.s, "\ncut ")) {
        char line[96];
        snprintf(line, sizeof line, "cut %s", tag);
        nc_layout_record_line(L, line);
    }
    free(scratch.s);
}

/* ------------------------------------------------------------------ */
/* Drawing: frame, ticks, labels, titles                               */
/* ------------------------------------------------------------------ */

void nc_frame_ticks(cairo_t *cr, const layout *L, const nc_panel *p,
                             const panel_layout *pl)
{
    const nc_rect *a = &pl->area;
    double s = L->s, fw = crisp_width(FRAME_PT * s);
    nc_scale xs = panel_xscale(p), ys = panel_yscale(p);
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
            double x = crisp_pos(a->x + scale_pos(&xs, v, a->w), tw);
            cairo_move_to(cr, x, bottom);
            cairo_line_to(cr, x, bottom + tl);
        }
        for (size_t i = 0; i < ny; i++) {
            double v = minor ? yt->minor[i] : yt->v[i];
            double y = crisp_pos(bottom - scale_pos(&ys, v, a->h), tw);
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
    nc_scale xs = panel_xscale(p), ys = panel_yscale(p);
    char tag[64];
    set_rgb(cr, TEXT_RGB);
    for (size_t i = 0; i < pl->xt.n; i++)
        xasc = fmax(xasc, nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h).asc);
    for (size_t i = 0; i < pl->xt.n; i++) {
        if (!pl->xt.label[i][0])
            continue; /* left blank: no room (layout.c) */
        textbox b = nc_text_measure_tick(cr, L->tick_px, pl->xt.label[i], L->digit_h);
        double x = a->x + scale_pos(&xs, pl->xt.v[i], a->w) - b.w / 2;
        double base = bottom + room + xasc;
        nc_text_draw_tick(cr, L->tick_px, pl->xt.label[i], x, base, L->digit_h);
        snprintf(tag, sizeof tag, "text panel%zu.xtick%zu", k, i);
        nc_layout_record(L, tag, x, base - b.asc, b.w, b.asc + b.desc, b.minpx);
    }
    for (size_t i = 0; i < pl->yt.n; i++) {
        if (!pl->yt.label[i][0])
            continue;
        textbox b = nc_text_measure_tick(cr, L->tick_px, pl->yt.label[i], L->digit_h);
        double base = bottom - scale_pos(&ys, pl->yt.v[i], a->h) + L->digit_h / 2;
        nc_text_draw_tick(cr, L->tick_px, pl->yt.label[i], left - room - b.w, base, L->digit_h);
        snprintf(tag, sizeof tag, "text panel%zu.ytick%zu", k, i);
        nc_layout_record(L, tag, left - room - b.w, base - b.asc, b.w, b.asc + b.desc, b.minpx);
    }
}

static void draw_title(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p,
                       const panel_layout *pl, size_t k);
static void draw_lines(cairo_t *cr, layout *L, const nc_figure *fig, double size, const char *s,
                       size_t split, const nc_rect *a, double maxw, double bottom, const char *tag);

/* Axis labels at the outer edge of the shared margins, so they line up
 * across the grid; the title just above the frame, centred over it but
 * kept inside the figure. */
void nc_frame_labels(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p,
                        const panel_layout *pl, size_t k)
{
    const nc_rect *a = &pl->area;
    int row = (int)k / fig->cols, col = (int)k % fig->cols;
    double bottom = a->y + a->h;
    char tag[64];
    set_rgb(cr, TEXT_RGB);
    if (pl->xlab[0]) {
        snprintf(tag, sizeof tag, "text panel%zu.xlabel", k);
        draw_lines(cr, L, fig, pl->xlab_px, pl->xlab, pl->xlab_split, a, pl->xlab_w,
                   bottom + L->rowB[row], tag);
    }
    if (pl->ylab[0]) {
        double sz = nc_layout_ylabel_px(cr, fig, L, pl->ylab);
        snprintf(tag, sizeof tag, "text panel%zu.ylabel", k);
        /* centred on the frame, as long as its row (margins included) */
        double room = a->h + 2 * fmin(L->rowT[row], L->rowB[row]);
        draw_ylabel(cr, L, sz, pl->ylab, a->x - L->colL[col], a->y + a->h / 2.0, room, tag);
    }
    if (p->title && *p->title)
        draw_title(cr, L, fig, p, pl, k);
}

/* s in one line, or two broken at split, at size px, centred over area a
 * (a single panel's kept inside the figure), the last line's ink ending
 * at y bottom; each line recorded as tag, tag "2". */
static void draw_lines(cairo_t *cr, layout *L, const nc_figure *fig, double size, const char *s,
                       size_t split, const nc_rect *a, double maxw, double bottom, const char *tag)
{
    char l1[512], l2[512], t[80];
    snprintf(l1, sizeof l1, "%.*s", (int)(split ? split : strlen(s)), s);
    snprintf(l2, sizeof l2, "%s", split ? s + split + (s[split] == ' ') : "");
    cairo_font_extents_t fe;
    nc_text_font(cr, size);
    cairo_font_extents(cr, &fe);
    textbox b1 = nc_text_measure(cr, size, l1), b2 = nc_text_measure(cr, size, l2);
    double base2 = bottom - (split ? fmax(b1.desc, b2.desc) : b1.desc);
    double base1 = split ? base2 - (fe.ascent + fe.descent) : base2;
    for (int line = 0; line < (split ? 2 : 1); line++) {
        double w = fmin(line ? b2.w : b1.w, maxw);
        double x = fig->cols > 1 ? a->x + a->w / 2.0 - w / 2
                                 : clampd(a->x + a->w / 2.0 - w / 2, L->pad, L->W - L->pad - w);
        snprintf(t, sizeof t, "%s%s", tag, line ? "2" : "");
        nc_frame_text(cr, L, size, line ? l2 : l1, x, line ? base2 : base1, 0, maxw, t);
    }
}

/* The title just above the frame, centred over it (a single panel's kept
 * inside the figure), in one or two lines as the layout decided. */
static void draw_title(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p,
                       const panel_layout *pl, size_t k)
{
    char tag[64];
    snprintf(tag, sizeof tag, "text panel%zu.title", k);
    draw_lines(cr, L, fig, pl->title_px, p->title, pl->title_split, &pl->area, pl->title_w,
               pl->area.y - TITLE_PAD_PT * L->s, tag);
}

void nc_frame_colorbar(cairo_t *cr, layout *L, const nc_panel *p, const panel_layout *pl,
                       size_t k)
{
    const nc_colorbar *cb = p->cbar;
    if (!cb || !(pl->cbar_x > 0))
        return;
    const nc_rect *a = &pl->area;
    double s = L->s, x = a->x + a->w + pl->cbar_x, w = CBAR_W_EM * L->font_px;
    double y0 = a->y, h = a->h;
    cairo_pattern_t *g = cairo_pattern_create_linear(0, y0 + h, 0, y0);
    for (int i = 0; i <= 32; i++) {
        nc_rgb c = nc_colormap(cb->t0 + (cb->t1 - cb->t0) * i / 32.0);
        cairo_pattern_add_color_stop_rgb(g, i / 32.0, c.r, c.g, c.b);
    }
    cairo_rectangle(cr, x, y0, w, h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
    double fw = crisp_width(FRAME_PT * s);
    set_rgb(cr, FRAME_RGB);
    cairo_set_line_width(cr, fw);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_rectangle(cr, x - fw / 2, y0 - fw / 2, w + fw, h + fw);
    cairo_stroke(cr);
    nc_scale cs = {cb->lo, cb->hi, cb->log, 0, 0};
    double tw = crisp_width(TICK_WIDTH_PT * s), tl = TICK_LEN_PT * s, lx = x + w + fw + tl;
    double right = lx;
    char tag[64];
    cairo_set_line_width(cr, tw);
    for (size_t i = 0; i < pl->ct.n; i++) {
        double y = crisp_pos(y0 + h - scale_pos(&cs, pl->ct.v[i], h), tw);
        set_rgb(cr, FRAME_RGB);
        cairo_move_to(cr, x + w + fw / 2, y);
        cairo_line_to(cr, x + w + fw / 2 + tl, y);
        cairo_stroke(cr);
        if (!pl->ct.label[i][0])
            continue;
        textbox b = nc_text_measure_tick(cr, L->tick_px, pl->ct.label[i], L->digit_h);
        double base = y0 + h - scale_pos(&cs, pl->ct.v[i], h) + L->digit_h / 2;
        set_rgb(cr, TEXT_RGB);
        nc_text_draw_tick(cr, L->tick_px, pl->ct.label[i], lx + TICK_PAD_PT * s, base, L->digit_h);
        snprintf(tag, sizeof tag, "text panel%zu.ctick%zu", k, i);
        nc_layout_record(L, tag, lx + TICK_PAD_PT * s, base - b.asc, b.w, b.asc + b.desc, b.minpx);
        right = fmax(right, lx + TICK_PAD_PT * s + b.w);
    }
    if (cb->label && *cb->label) {
        set_rgb(cr, TEXT_RGB);
        snprintf(tag, sizeof tag, "text panel%zu.clabel", k);
        draw_ylabel(cr, L, L->tick_px, cb->label, right + LABEL_PAD_PT * s, y0 + h / 2.0, h,
                    tag);
    }
}
