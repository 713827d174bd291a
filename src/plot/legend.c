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
#include "plot/ink.h"
#include "plot/raster.h"
#include "plot/style.h"
#include "plot/text.h"

#define LEGEND_SLIVER 0.015 /* most of a legend box the cloud may cover (share of its area) */
#define NOTE_SLIVER 0.08    /* of a note's (one or two short lines) */

enum { ENTRY_LINE, ENTRY_MARK, ENTRY_PATCH, ENTRY_CMAP };

typedef struct entry {
    int kind;
    const char *label;
    nc_rgb color;
    double width_px; /* line */
    int dashed;
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
        /* the cloud's colour scale, floor to core, in four steps */
        double h = 0.7 * em, w = len / 4;
        nc_rgb fl = nc_raster_floor(e->color);
        for (int k = 0; k < 4; k++) {
            double t = k / 3.0;
            nc_rgb c = e->kind == ENTRY_CMAP ? nc_colormap(0.1 + 0.8 * t)
                                             : (nc_rgb){fl.r + (e->color.r - fl.r) * t,
                                                        fl.g + (e->color.g - fl.g) * t,
                                                        fl.b + (e->color.b - fl.b) * t};
            cairo_rectangle(cr, x + k * w, yc - h / 2, w, h);
            set_rgb(cr, c);
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
        cairo_set_line_cap(cr, e->dashed == NC_DOTTED ? CAIRO_LINE_CAP_ROUND : CAIRO_LINE_CAP_BUTT);
        set_rgb(cr, e->color);
        cairo_move_to(cr, x, yc);
        cairo_line_to(cr, x + len, yc);
        cairo_stroke(cr);
        if (e->marker != NC_MARKER_NONE)
            nc_draw_marker(cr, L, e->marker, e->color, e->marker_px, x + len / 2, yc);
        break;
    }
}

/* The size of a legend box of entries e[0..n) in ncol columns at font em
 * (px), with an optional title row; *colw the width of one column. */
static void box_size(cairo_t *cr, double em, const entry *e, long n, const char *title,
                     int ncol, double *bw, double *bh, double *colw)
{
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

/* Draws the box and its entries, ncol columns of colw, at (x, y), font
 * em px; records the box as tag and each text as "text <where>.legendN". */
static void draw_box(cairo_t *cr, layout *L, double em, const entry *e, long n,
                     const char *title, int ncol, double x, double y, double bw, double bh,
                     double colw, const char *tag, const char *where)
{
    double bp = LEG_BORDERPAD * em;
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
    char t[64];
    if (title && *title) {
        set_rgb(cr, TEXT_RGB);
        nc_text_draw(cr, em, title, x + bw / 2, base, 0.5);
        textbox b = nc_text_measure(cr, em, title);
        snprintf(t, sizeof t, "text %s.legendtitle", where);
        nc_layout_record(L, t, x + bw / 2 - b.w / 2, base - b.asc, b.w, b.asc + b.desc, b.minpx);
        base += pitch;
    }
    long rows = (n + ncol - 1) / ncol;
    for (long i = 0; i < n; i++) {
        long r = i % rows, c = i / rows; /* down the columns, like Matplotlib */
        double ex = x + bp + (double)c * (colw + LEG_COLSPACING * em), eb = base + (double)r * pitch;
        double yc = eb - 0.5 * L->digit_h * (em / L->tick_px);
        draw_handle(cr, L, &e[i], ex, yc, LEG_HANDLELEN * em, em);
        set_rgb(cr, TEXT_RGB);
        double tx = ex + (LEG_HANDLELEN + LEG_HANDLEPAD) * em;
        nc_text_draw(cr, em, e[i].label, tx, eb, 0);
        textbox b = nc_text_measure(cr, em, e[i].label);
        snprintf(t, sizeof t, "text %s.legend%ld", where, i);
        nc_layout_record(L, t, tx, eb - b.asc, b.w, b.asc + b.desc, b.minpx);
    }
}

/* ------------------------------------------------------------------ */
/* Point labels                                                        */
/* ------------------------------------------------------------------ */

/* Places the point labels of p on area a, in their order, each at the
 * first of eight places around its point that stays inside the area and
 * covers no line ink of m (curves, markers, lines, labels placed before);
 * a placed label's box becomes line ink. box[i] gets the label's box
 * (x, y, w, h; w = 0 when left out). Returns the number placed. */
static size_t place_labels(cairo_t *cr, const layout *L, const nc_figure *fig, const nc_panel *p,
                           const nc_rect *a, nc_inkmap *m, double (*box)[4])
{
    double sz = fmax(L->font_px * NOTE_FONT, MIN_TEXT_PT * L->px_pt);
    size_t placed = 0;
    for (size_t i = 0; i < p->nlabels; i++) {
        const nc_label *lb = &p->labels[i];
        box[i][2] = 0;
        double px, py;
        if (fig->no_labels || !lb->text || !usable(p, lb->x, lb->y))
            continue;
        nc_panel_to_pixel(p, a, lb->x, lb->y, &px, &py);
        textbox b = nc_text_measure(cr, sz, lb->text);
        double h = b.asc + b.desc, off = 0.5 * MARKER_PT * L->s + INK_CELL + 1;
        /* right, left, above right, above left, below right, below left, above, below */
        static const double fx[8] = {1, -1, 1, -1, 1, -1, 0, 0}, fy[8] = {0, 0, -1, -1, 1, 1, -1, 1};
        for (int c = 0; c < 8; c++) {
            double x = fx[c] > 0 ? px + off : fx[c] < 0 ? px - off - b.w : px - b.w / 2;
            double y = fy[c] < 0 ? py - off - h : fy[c] > 0 ? py + off : py - h / 2;
            if (fx[c] == 0)
                y = fy[c] < 0 ? py - off - h - INK_CELL : py + off + INK_CELL;
            else if (fy[c] != 0)
                x += fx[c] > 0 ? -off / 2 : off / 2, y += fy[c] < 0 ? off / 2 : -off / 2;
            if (x < a->x || y < a->y || x + b.w > a->x + a->w || y + h > a->y + a->h)
                continue;
            double cloud, lines;
            nc_ink_under(m, a, x, y, b.w, h, &cloud, &lines);
            if (lines > 0)
                continue;
            nc_ink_block(m, a, x, y, b.w, h);
            box[i][0] = x, box[i][1] = y, box[i][2] = b.w, box[i][3] = h;
            placed++;
            break;
        }
    }
    return placed;
}

/* Panel k's note as drawn: its own, and when point labels were left out,
 * a line counting them; into pl->note_text (owned). */
static int compose_note(const nc_panel *p, size_t shown, size_t wanted, panel_layout *pl)
{
    free(pl->note_text);
    pl->note_text = NULL;
    char count[96] = "";
    if (shown < wanted)
        snprintf(count, sizeof count, "%zu of %zu %s named", shown, wanted,
                 p->labels_what ? p->labels_what : "points");
    const char *own = p->note ? p->note : "";
    if (!*own && !*count)
        return 0;
    size_t n = strlen(own) + strlen(count) + 2;
    if (!(pl->note_text = malloc(n)))
        return -1;
    snprintf(pl->note_text, n, "%s%s%s", own, *own && *count ? "\n" : "", count);
    return 0;
}

/* The usable labels of p (those with text at a drawable point). */
static size_t labels_wanted(const nc_figure *fig, const nc_panel *p)
{
    size_t n = 0;
    for (size_t i = 0; !fig->no_labels && i < p->nlabels; i++)
        n += p->labels[i].text && usable(p, p->labels[i].x, p->labels[i].y);
    return n;
}

/* ------------------------------------------------------------------ */
/* Notes                                                               */
/* ------------------------------------------------------------------ */

static double note_px(const layout *L)
{
    return fmax(L->font_px * NOTE_FONT, MIN_TEXT_PT * L->px_pt);
}

/* The box of a note of one or more lines ('\n'), at the note size. */
static void note_size(cairo_t *cr, const layout *L, const char *note, double *bw, double *bh)
{
    double np = note_px(L), w = 0;
    cairo_font_extents_t fe;
    nc_text_font(cr, np);
    cairo_font_extents(cr, &fe);
    int lines = 0;
    for (const char *s = note; s && *s; lines++) {
        size_t n = strcspn(s, "\n");
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)n, s);
        w = fmax(w, nc_text_measure(cr, np, line).w);
        s += n + (s[n] == '\n');
    }
    *bw = w + 0.6 * np;
    *bh = lines * (fe.ascent + fe.descent) + 0.3 * np;
}

/* Draws the lines of note at (x, y) (the top-left of its box, bw wide),
 * halign 0 left, 0.5 centred in the box; each recorded as "text
 * <where>.note", "<where>.note2", ... */
static void draw_note_lines(cairo_t *cr, layout *L, const char *note, double x, double y,
                            double bw, double halign, const char *where)
{
    double np = note_px(L);
    cairo_font_extents_t fe;
    nc_text_font(cr, np);
    cairo_font_extents(cr, &fe);
    double base = y + 0.15 * np + fe.ascent;
    int k = 0;
    set_rgb(cr, NOTE_RGB);
    for (const char *s = note; s && *s; k++) {
        size_t n = strcspn(s, "\n");
        char line[512], tag[64];
        snprintf(line, sizeof line, "%.*s", (int)n, s);
        textbox tb = nc_text_measure(cr, np, line);
        double bx = halign > 0 ? x + (bw - tb.w) * halign : x + 0.3 * np;
        nc_text_draw(cr, np, line, bx, base, 0);
        snprintf(tag, sizeof tag, k ? "text %s.note%d" : "text %s.note", where, k + 1);
        nc_layout_record(L, tag, bx, base - tb.asc, tb.w, tb.asc + tb.desc, tb.minpx);
        char said[600];
        snprintf(said, sizeof said, "say %s %s", tag + 5, line); /* what it says */
        nc_layout_record_line(L, said);
        base += fe.ascent + fe.descent;
        s += n + (s[n] == '\n');
    }
}

/* ------------------------------------------------------------------ */
/* Planning                                                            */
/* ------------------------------------------------------------------ */

/* A legend inside the frame at the first font size and column count (the
 * legend size, 0.85x, the smallest; one column, then two) whose best
 * position is clean; false when none is. The box is blocked in m. */
static bool auto_inside(cairo_t *cr, const layout *L, const nc_panel *p, const entry *e, long n,
                        nc_inkmap *m, panel_layout *pl)
{
    double base = L->font_px * LEGEND_FONT, min = MIN_TEXT_PT * L->px_pt;
    double ems[3] = {base, fmax(min, 0.85 * base), fmax(min, 0.75 * base)};
    for (int f = 0; f < 3; f++) {
        for (int cols = 1; cols <= 2 && cols <= n; cols++) {
            if (p->legend_cols > 0 && cols != p->legend_cols)
                continue;
            double em = p->legend_pt > 0 ? p->legend_pt * L->px_pt : ems[f];
            double bw, bh, colw, x, y;
            box_size(cr, em, e, n, p->legend_title, cols, &bw, &bh, &colw);
            bool clean = false;
            int pos = nc_ink_best(m, &pl->area, LEG_AXESPAD * em, bw, bh, LEGEND_SLIVER, &clean);
            if (!clean)
                continue;
            pl->legend = pos;
            pl->legend_cols = cols;
            pl->legend_px = em;
            nc_ink_box_at(pos, &pl->area, LEG_AXESPAD * em, bw, bh, &x, &y);
            nc_ink_block(m, &pl->area, x, y, bw, bh);
            return true;
        }
    }
    return false;
}

/* Where panel k's legend and note go, on its area in L (panel_layout's
 * legend, legend_cols, legend_px, note). */
static int plan_panel(cairo_t *cr, const nc_figure *fig, layout *L, size_t k)
{
    const nc_panel *p = &fig->panels[k];
    panel_layout *pl = &L->p[k];
    entry *e = NULL;
    nc_inkmap m = {0, 0, NULL, NULL};
    double (*box)[4] = calloc(p->nlabels ? p->nlabels : 1, sizeof *box);
    long n = legend_entries(L, p, &e);
    int rc = -1;
    if (n < 0 || !box || nc_ink_build(L, p, NULL, &pl->area, &m) != 0)
        goto out;
    pl->legend_px = p->legend_pt > 0 ? p->legend_pt * L->px_pt : L->font_px * LEGEND_FONT;
    pl->legend_cols = p->legend_cols > 0 ? p->legend_cols : 1;
    size_t shown = place_labels(cr, L, fig, p, &pl->area, &m, box);
    if (compose_note(p, shown, labels_wanted(fig, p), pl) != 0)
        goto out;
    pl->legend = p->legend_pos;
    if (n == 0 || p->legend_pos == NC_LEGEND_NONE) {
        pl->legend = NC_LEGEND_NONE;
    } else if (fig->shared_legend || p->legend_pos == NC_LEGEND_OUTSIDE) {
        pl->legend = NC_LEGEND_OUTSIDE;
    } else if (p->legend_pos == NC_LEGEND_AUTO) {
        if (!auto_inside(cr, L, p, e, n, &m, pl))
            pl->legend = NC_LEGEND_OUTSIDE;
    } else { /* a fixed place */
        double bw, bh, colw, x, y, pad = LEG_AXESPAD * pl->legend_px;
        box_size(cr, pl->legend_px, e, n, p->legend_title, pl->legend_cols, &bw, &bh, &colw);
        nc_ink_box_at(p->legend_pos, &pl->area, pad, bw, bh, &x, &y);
        nc_ink_block(&m, &pl->area, x, y, bw, bh);
    }
    pl->note = NC_LEGEND_NONE;
    if (pl->note_text) {
        double bw, bh, pad = LEG_AXESPAD * note_px(L);
        bool clean = false;
        note_size(cr, L, pl->note_text, &bw, &bh);
        int pos = nc_ink_best(&m, &pl->area, pad, bw, bh, NOTE_SLIVER, &clean);
        pl->note = p->note_pos != NC_LEGEND_AUTO ? p->note_pos
                   : clean                       ? pos
                                                 : NC_LEGEND_OUTSIDE;
    }
    if (p->density) { /* the cloud's map (the block's first half), kept for drawing */
        free(pl->ink_cloud);
        pl->ink_cloud = m.cloud;
        pl->ink_w = pl->area.w;
        pl->ink_h = pl->area.h;
        m.cloud = NULL;
    }
    rc = 0;
out:
    free(e);
    free(box);
    free(m.cloud);
    return rc;
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
static int strip_cols(cairo_t *cr, double em, const entry *e, long n, const char *title,
                      double width)
{
    int ncol = (int)(n > 0 ? n : 1);
    for (; ncol > 1; ncol--) {
        double bw, bh, colw;
        box_size(cr, em, e, n, title, ncol, &bw, &bh, &colw);
        if (bw <= width)
            break;
    }
    return ncol;
}

/* The notes in the strip, one a line: the panels' that did not fit
 * inside (with a line kept for a label count that may appear when the
 * areas shrink for the strip), then the figure's. Owned by the caller;
 * NULL when there are none or out of memory (*oom then). */
static char *strip_notes(const nc_figure *fig, const layout *L, bool *oom)
{
    size_t n = 1;
    *oom = false;
    for (size_t k = 0; k < fig->npanels; k++)
        if (L->p[k].note == NC_LEGEND_OUTSIDE && L->p[k].note_text)
            n += strlen(L->p[k].note_text) + 1;
    if (fig->note)
        n += strlen(fig->note) + 1;
    if (n == 1)
        return NULL;
    char *t = malloc(n), *o = t;
    if (!t) {
        *oom = true;
        return NULL;
    }
    *o = '\0';
    for (size_t k = 0; k < fig->npanels; k++)
        if (L->p[k].note == NC_LEGEND_OUTSIDE && L->p[k].note_text)
            o += sprintf(o, "%s%s", o > t ? "\n" : "", L->p[k].note_text);
    if (fig->note)
        o += sprintf(o, "%s%s", o > t ? "\n" : "", fig->note);
    return t;
}

/* The legend strip's height at its font L->strip_legend_px, which is
 * the legend size made smaller (down to 6 pt) while the strip, with the
 * notes under it (other, of height other), would take more than STRIP_CAP
 * of the figure's height; 0 without entries. */
static double strip_legend_h(cairo_t *cr, const layout *L, const entry *e, long n,
                             const char *title, double other, double *em)
{
    double base = L->font_px * LEGEND_FONT, min = MIN_TEXT_PT * L->px_pt, bh = 0;
    if (n <= 0)
        return 0;
    for (*em = base;; *em = fmax(min, *em - 0.1 * base)) {
        double bw, colw;
        int ncol = strip_cols(cr, *em, e, n, title, L->W - 2 * L->pad);
        box_size(cr, *em, e, n, title, ncol, &bw, &bh, &colw);
        if (bh + other <= STRIP_CAP * L->H || *em <= min)
            return bh;
    }
}

static cairo_t *measuring_context(const layout *L, cairo_surface_t **surf)
{
    *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(*surf);
    cairo_font_options_t *fo = nc_text_options(); /* measure as the drawing will */
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
    nc_text_set_min(cr, MIN_TEXT_PT * L->px_pt);
    return cr;
}

int nc_legend_plan(const nc_figure *fig, layout *L, double *strip_h)
{
    *strip_h = 0;
    cairo_surface_t *surf;
    cairo_t *cr = measuring_context(L, &surf);
    int rc = cairo_status(cr) == CAIRO_STATUS_SUCCESS ? 0 : -1;
    for (size_t k = 0; k < fig->npanels && !rc; k++)
        rc = plan_panel(cr, fig, L, k);
    entry *e = NULL;
    const char *title;
    long n = rc ? -1 : strip_entries(fig, L, &e, &title);
    bool oom = false;
    char *notes = rc ? NULL : strip_notes(fig, L, &oom);
    if (n < 0 || oom) {
        rc = -1;
    } else {
        double bw, nh = 0;
        if (notes)
            note_size(cr, L, notes, &bw, &nh);
        double h = strip_legend_h(cr, L, e, n, title, notes ? L->gap / 2 + nh : 0,
                                  &L->strip_legend_px);
        if (notes)
            h += (h > 0 ? L->gap / 2 : 0) + nh;
        *strip_h = h;
    }
    free(e);
    free(notes);
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
    bool oom = false;
    char *notes = n < 0 ? NULL : strip_notes(fig, L, &oom);
    if (n < 0 || oom) {
        free(e);
        return -1;
    }
    double y = L->strip.y, em = L->strip_legend_px;
    if (n > 0) {
        double bw, bh, colw;
        int ncol = strip_cols(cr, em, e, n, title, L->strip.w);
        box_size(cr, em, e, n, title, ncol, &bw, &bh, &colw);
        draw_box(cr, L, em, e, n, title, ncol, L->strip.x + (L->strip.w - bw) / 2, y, bw, bh,
                 colw, "legend outside", "outside");
        y += bh + L->gap / 2;
    }
    if (notes) {
        double bw, bh;
        note_size(cr, L, notes, &bw, &bh);
        draw_note_lines(cr, L, notes, L->strip.x, y, L->strip.w, 0.5, "strip");
    }
    free(notes);
    free(e);
    return 0;
}

/* The labels, legend and note of panel k, drawn on its final area. */
int nc_legend_draw(cairo_t *cr, layout *L, const nc_figure *fig, const nc_panel *p, size_t k)
{
    panel_layout *pl = &L->p[k];
    const nc_rect *a = &pl->area;
    entry *e = NULL;
    nc_inkmap m = {0, 0, NULL, NULL};
    double (*box)[4] = calloc(p->nlabels ? p->nlabels : 1, sizeof *box);
    bool inside = pl->legend != NC_LEGEND_NONE && pl->legend != NC_LEGEND_OUTSIDE;
    long n = inside ? legend_entries(L, p, &e) : 0;
    int rc = -1;
    char tag[64];
    if (n < 0 || !box || nc_ink_build(L, p, pl, a, &m) != 0)
        goto out;
    size_t shown = place_labels(cr, L, fig, p, a, &m, box);
    double sz = fmax(L->font_px * NOTE_FONT, MIN_TEXT_PT * L->px_pt);
    for (size_t i = 0; i < p->nlabels; i++) {
        if (!(box[i][2] > 0))
            continue;
        textbox b = nc_text_measure(cr, sz, p->labels[i].text);
        set_rgb(cr, p->labels[i].color);
        nc_text_draw(cr, sz, p->labels[i].text, box[i][0], box[i][1] + b.asc, 0);
        snprintf(tag, sizeof tag, "text panel%zu.label%zu", k, i);
        nc_layout_record(L, tag, box[i][0], box[i][1], b.w, b.asc + b.desc, b.minpx);
    }
    if (compose_note(p, shown, labels_wanted(fig, p), pl) != 0)
        goto out;
    if (n > 0) {
        double bw, bh, colw, em = pl->legend_px, pad = LEG_AXESPAD * em, x, y;
        box_size(cr, em, e, n, p->legend_title, pl->legend_cols, &bw, &bh, &colw);
        int pos = pl->legend == NC_LEGEND_AUTO ? nc_ink_best(&m, a, pad, bw, bh, 0, NULL)
                                               : pl->legend;
        nc_ink_box_at(pos, a, pad, bw, bh, &x, &y);
        nc_ink_block(&m, a, x, y, bw, bh);
        char where[32];
        snprintf(tag, sizeof tag, "legend panel%zu", k);
        snprintf(where, sizeof where, "panel%zu", k);
        draw_box(cr, L, em, e, n, p->legend_title, pl->legend_cols, x, y, bw, bh, colw, tag,
                 where);
    }
    if (pl->note_text && pl->note != NC_LEGEND_OUTSIDE && pl->note != NC_LEGEND_NONE) {
        double bw, bh, pad = LEG_AXESPAD * note_px(L), x, y;
        note_size(cr, L, pl->note_text, &bw, &bh);
        int pos = pl->note == NC_LEGEND_AUTO ? nc_ink_best(&m, a, pad, bw, bh, 0, NULL) : pl->note;
        nc_ink_box_at(pos, a, pad, bw, bh, &x, &y);
        cairo_rectangle(cr, x, y, bw, bh);
        cairo_set_source_rgba(cr, 1, 1, 1, LEG_ALPHA);
        cairo_fill(cr);
        char where[32];
        snprintf(where, sizeof where, "panel%zu", k);
        draw_note_lines(cr, L, pl->note_text, x, y, bw, 0, where);
    }
    rc = 0;
out:
    free(e);
    free(box);
    free(m.cloud);
    return rc;
}
