/*
 * draw.c - curve pieces, markers and dashes (draw.h).
 */
#include "plot/draw.h"

#include <cairo.h>
#include <math.h>
#include <stddef.h>

#include "plot/colour.h"
#include "plot/style.h"

void nc_draw_dash(cairo_t *cr, int dash, double lw)
{
    /* Matplotlib's patterns, in line widths */
    static const double dashed[2] = {3.7, 1.6}, dotted[2] = {0.0, 2.2}, /* round caps: dots */
                        dashdot[4] = {6.4, 1.6, 1.0, 1.6};
    const double *pat = dash == NC_DASHED ? dashed : dash == NC_DOTTED ? dotted
                        : dash == NC_DASHDOT ? dashdot : NULL;
    int n = dash == NC_DASHDOT ? 4 : 2;
    if (!pat) {
        cairo_set_dash(cr, NULL, 0, 0);
        return;
    }
    double d[4];
    for (int k = 0; k < n; k++)
        d[k] = pat[k] * lw;
    cairo_set_dash(cr, d, n, 0);
}

/* Liang-Barsky: clips the segment (x0,y0)-(x1,y1) to [xa,xb] x [ya,yb];
 * returns false when nothing is left, else the kept parameter range. */
static bool clip_segment(double x0, double y0, double x1, double y1, double xa, double xb,
                         double ya, double yb, double *t0, double *t1)
{
    double dx = x1 - x0, dy = y1 - y0;
    double p[4] = {-dx, dx, -dy, dy}, q[4] = {x0 - xa, xb - x0, y0 - ya, yb - y0};
    *t0 = 0.0;
    *t1 = 1.0;
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0.0) {
            if (q[i] < 0.0)
                return false;
            continue;
        }
        double r = q[i] / p[i];
        if (p[i] < 0.0)
            *t0 = fmax(*t0, r);
        else
            *t1 = fmin(*t1, r);
    }
    return *t0 <= *t1;
}

void nc_draw_curve_pieces(const nc_panel *p, const nc_rect *a, const nc_curve *c,
                          double margin, piece_fn fn, void *ctx)
{
    double xa = a->x - margin, xb = a->x + a->w + margin;
    double ya = a->y - margin, yb = a->y + a->h + margin;
    bool pen = false; /* the previous piece ended at the current point */
    for (size_t i = 1; i < c->n; i++) {
        if (!usable(p, c->x[i - 1], c->y[i - 1]) || !usable(p, c->x[i], c->y[i])) {
            pen = false;
            continue;
        }
        double x0, y0, x1, y1, t0, t1;
        nc_panel_to_pixel(p, a, c->x[i - 1], c->y[i - 1], &x0, &y0);
        nc_panel_to_pixel(p, a, c->x[i], c->y[i], &x1, &y1);
        /* values near DBL_MAX map beyond double range: a break, like NaN */
        if (!(isfinite(x0) && isfinite(y0) && isfinite(x1) && isfinite(y1)) ||
            !clip_segment(x0, y0, x1, y1, xa, xb, ya, yb, &t0, &t1)) {
            pen = false;
            continue;
        }
        double dx = x1 - x0, dy = y1 - y0;
        fn(ctx, x0 + t0 * dx, y0 + t0 * dy, x0 + t1 * dx, y0 + t1 * dy, pen && t0 == 0.0);
        pen = t1 == 1.0;
    }
}

/* Marker path centred at (x, y), r = half the size (px). */
static void marker_path(cairo_t *cr, int shape, double x, double y, double r)
{
    switch (shape) {
    case NC_MARKER_SQUARE:
        cairo_rectangle(cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
        break;
    case NC_MARKER_TRIANGLE:
    case NC_MARKER_TRIANGLE_DOWN: {
        double sgn = shape == NC_MARKER_TRIANGLE ? 1.0 : -1.0, R = 1.15 * r;
        cairo_move_to(cr, x, y - sgn * R);
        cairo_line_to(cr, x + 0.866 * R, y + sgn * 0.5 * R);
        cairo_line_to(cr, x - 0.866 * R, y + sgn * 0.5 * R);
        cairo_close_path(cr);
        break;
    }
    case NC_MARKER_DIAMOND:
        cairo_move_to(cr, x, y - 1.1 * r);
        cairo_line_to(cr, x + 0.75 * r, y);
        cairo_line_to(cr, x, y + 1.1 * r);
        cairo_line_to(cr, x - 0.75 * r, y);
        cairo_close_path(cr);
        break;
    case NC_MARKER_CROSS:
        cairo_move_to(cr, x - 0.8 * r, y - 0.8 * r);
        cairo_line_to(cr, x + 0.8 * r, y + 0.8 * r);
        cairo_move_to(cr, x - 0.8 * r, y + 0.8 * r);
        cairo_line_to(cr, x + 0.8 * r, y - 0.8 * r);
        break;
    case NC_MARKER_PLUS:
        cairo_move_to(cr, x - r, y);
        cairo_line_to(cr, x + r, y);
        cairo_move_to(cr, x, y - r);
        cairo_line_to(cr, x, y + r);
        break;
    default: /* circle */
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, r, 0, 2 * PI);
        break;
    }
}

void nc_draw_marker(cairo_t *cr, const layout *L, int shape, nc_rgb c, double size_px, double x,
                    double y)
{
    cairo_new_path(cr);
    marker_path(cr, shape, x, y, size_px / 2);
    cairo_set_dash(cr, NULL, 0, 0);
    if (shape == NC_MARKER_CROSS || shape == NC_MARKER_PLUS) {
        set_rgb(cr, c);
        cairo_set_line_width(cr, fmax(1.0, 0.25 * size_px));
        cairo_stroke(cr);
        return;
    }
    set_rgb(cr, c);
    cairo_fill_preserve(cr);
    /* a darker rim keeps markers distinct on a cloud of the same hue */
    cairo_set_source_rgb(cr, 0.6 * clamp01(c.r), 0.6 * clamp01(c.g), 0.6 * clamp01(c.b));
    cairo_set_line_width(cr, 0.6 * L->s);
    cairo_stroke(cr);
}
