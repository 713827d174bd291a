/*
 * text.c - the figure font, measuring and drawing text (text.h).
 */
#include "plot/text.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "plot/axes.h"
#include "plot/style.h"

#define MINUS_UTF8 "\xe2\x88\x92" /* U+2212 */

cairo_font_options_t *nc_text_options(void)
{
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    return fo;
}

void nc_text_font(cairo_t *cr, double size_px)
{
    cairo_select_font_face(cr, FONT_FACE, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size_px);
}

textbox nc_text_measure(cairo_t *cr, double size_px, const char *s)
{
    textbox b = {0, 0, 0};
    if (!s || !*s)
        return b;
    nc_text_font(cr, size_px);
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    b.w = e.x_advance;
    b.asc = -e.y_bearing;
    b.desc = e.height + e.y_bearing;
    return b;
}

/* A tick label for drawing: '-' becomes U+2212, and "a^b" splits into the
 * base a and the exponent b. */
typedef struct ticktext {
    char base[3 * NC_TICK_LABEL_MAX];
    char exp[3 * NC_TICK_LABEL_MAX];
} ticktext;

static void copy_minus(const char *in, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && in[i] && o + 4 < cap; i++) {
        if (in[i] == '-') {
            memcpy(out + o, MINUS_UTF8, 3);
            o += 3;
        } else {
            out[o++] = in[i];
        }
    }
    out[o] = '\0';
}

static ticktext tick_text(const char *label)
{
    ticktext t;
    const char *hat = strchr(label, '^');
    size_t nb = hat ? (size_t)(hat - label) : strlen(label);
    copy_minus(label, nb, t.base, sizeof t.base);
    copy_minus(hat ? hat + 1 : "", hat ? strlen(hat + 1) : 0, t.exp, sizeof t.exp);
    return t;
}

textbox nc_text_measure_tick(cairo_t *cr, double size_px, const char *label, double digit_h)
{
    ticktext t = tick_text(label);
    textbox b = nc_text_measure(cr, size_px, t.base);
    if (t.exp[0]) {
        textbox e = nc_text_measure(cr, size_px * EXP_FONT, t.exp);
        b.w += e.w;
        b.asc = fmax(b.asc, EXP_RAISE * digit_h + e.asc);
    }
    return b;
}

void nc_text_draw_tick(cairo_t *cr, double size_px, const char *label, double x, double y,
                       double digit_h)
{
    ticktext t = tick_text(label);
    nc_text_font(cr, size_px);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, t.base);
    if (t.exp[0]) {
        double cx, cy;
        cairo_get_current_point(cr, &cx, &cy);
        nc_text_font(cr, size_px * EXP_FONT);
        cairo_move_to(cr, cx, y - EXP_RAISE * digit_h);
        cairo_show_text(cr, t.exp);
    }
}

void nc_text_draw(cairo_t *cr, double size_px, const char *s, double x, double y, double halign)
{
    if (!s || !*s)
        return;
    textbox b = nc_text_measure(cr, size_px, s);
    cairo_move_to(cr, x - halign * b.w, y);
    cairo_show_text(cr, s);
}
