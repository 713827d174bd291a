/*
 * text.c - the figure font, measuring and drawing text with its
 * superscripts and subscripts (text.h).
 *
 * A string is cut into runs of one level (normal, raised, lowered) before
 * it is measured or drawn: "^{...}" and "_{...}" mark a raised or lowered
 * run, and each Unicode superscript or subscript character (U+00B2,
 * U+2070-U+209C, U+1D62, ...) becomes its plain character in a raised or
 * lowered run. Scripts are drawn at SCRIPT_FONT of the size, but never
 * below the context's smallest text size (nc_text_set_min), so that a
 * subscript is as readable as the smallest text around it (DejaVu's own
 * superscript glyphs are about 0.6x and would print at 4 pt in 7 pt text).
 */
#include "plot/text.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/axes.h"
#include "plot/style.h"

#define MINUS_UTF8 "\xe2\x88\x92" /* U+2212 */
#define MAX_RUNS 32
#define RUN_TEXT 1024

static const cairo_user_data_key_t min_key;

cairo_font_options_t *nc_text_options(void)
{
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    return fo;
}

void nc_text_set_min(cairo_t *cr, double min_px)
{
    double *v = malloc(sizeof *v);
    if (!v)
        return; /* scripts then at SCRIPT_FONT alone */
    *v = min_px;
    if (cairo_set_user_data(cr, &min_key, v, free) != CAIRO_STATUS_SUCCESS)
        free(v);
}

static double min_px(cairo_t *cr)
{
    const double *v = cairo_get_user_data(cr, &min_key);
    return v ? *v : 0;
}

void nc_text_font(cairo_t *cr, double size_px)
{
    cairo_select_font_face(cr, FONT_FACE, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size_px);
}

/* ------------------------------------------------------------ runs */

typedef struct run {
    int level;  /* 0, +1 raised, -1 lowered */
    size_t off; /* its text in runs.text, NUL-terminated */
} run;

typedef struct runs {
    run r[MAX_RUNS];
    size_t n;
    char text[RUN_TEXT];
    size_t used;
} runs;

/* The plain text of a Unicode superscript or subscript code point, and
 * its level; NULL for other code points. */
static const char *script_char(uint32_t cp, int *level)
{
    static const char *const sup_digits[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
    *level = 1;
    switch (cp) {
    case 0xB2: return "2";
    case 0xB3: return "3";
    case 0xB9: return "1";
    case 0x2071: return "i";
    case 0x207A: return "+";
    case 0x207B: return "\xe2\x88\x92";
    case 0x207C: return "=";
    case 0x207D: return "(";
    case 0x207E: return ")";
    case 0x207F: return "n";
    default: break;
    }
    if (cp == 0x2070 || (cp >= 0x2074 && cp <= 0x2079))
        return sup_digits[cp - 0x2070];
    *level = -1;
    if (cp >= 0x2080 && cp <= 0x2089)
        return sup_digits[cp - 0x2080];
    switch (cp) {
    case 0x208A: return "+";
    case 0x208B: return "\xe2\x88\x92";
    case 0x208C: return "=";
    case 0x208D: return "(";
    case 0x208E: return ")";
    case 0x2090: return "a";
    case 0x2091: return "e";
    case 0x2092: return "o";
    case 0x2093: return "x";
    case 0x2095: return "h";
    case 0x2096: return "k";
    case 0x2097: return "l";
    case 0x2098: return "m";
    case 0x2099: return "n";
    case 0x209A: return "p";
    case 0x209B: return "s";
    case 0x209C: return "t";
    case 0x1D62: return "i";
    case 0x1D63: return "r";
    case 0x1D64: return "u";
    case 0x1D65: return "v";
    case 0x2C7C: return "j";
    default: return NULL;
    }
}

/* The code point of the UTF-8 sequence at s and its length (1 for a
 * byte that starts no valid sequence, read as itself). */
static uint32_t utf8_at(const unsigned char *s, size_t *len)
{
    *len = 1;
    if (s[0] < 0x80)
        return s[0];
    int n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC0 ? 2 : 1;
    uint32_t cp = n == 4 ? s[0] & 0x07 : n == 3 ? s[0] & 0x0F : s[0] & 0x1F;
    for (int k = 1; k < n; k++) {
        if ((s[k] & 0xC0) != 0x80)
            return s[0];
        cp = cp << 6 | (s[k] & 0x3F);
    }
    *len = (size_t)n;
    return n > 1 ? cp : s[0];
}

/* Appends n bytes at level to the runs (a new run when the level
 * changes); the rest is dropped when the buffers are full. */
static void put(runs *R, int level, const char *s, size_t n)
{
    if (R->used + n + 2 > RUN_TEXT)
        return;
    if (R->n == 0 || R->r[R->n - 1].level != level) {
        if (R->n == MAX_RUNS)
            return;
        if (R->n)
            R->text[R->used++] = '\0';
        R->r[R->n++] = (run){level, R->used};
    }
    memcpy(R->text + R->used, s, n);
    R->used += n;
    R->text[R->used] = '\0';
}

static void split(const char *s, runs *R)
{
    R->n = 0;
    R->used = 0;
    R->text[0] = '\0';
    const unsigned char *p = (const unsigned char *)s;
    int group = 0; /* inside "^{" (1) or "_{" (-1) */
    while (p && *p) {
        if ((*p == '^' || *p == '_') && p[1] == '{' && !group && strchr((const char *)p, '}')) {
            group = *p == '^' ? 1 : -1;
            p += 2;
            continue;
        }
        if (*p == '}' && group) {
            group = 0;
            p++;
            continue;
        }
        size_t len;
        int level;
        const char *plain = script_char(utf8_at(p, &len), &level);
        if (plain && !group)
            put(R, level, plain, strlen(plain));
        else
            put(R, group, (const char *)p, len);
        p += len;
    }
}

/* The size (px) of a run of level at size_px. */
static double run_px(cairo_t *cr, double size_px, int level)
{
    if (level == 0)
        return size_px;
    return fmin(size_px, fmax(SCRIPT_FONT * size_px, min_px(cr)));
}

/* Its baseline shift (px, down positive). */
static double run_shift(double size_px, int level)
{
    return level > 0 ? -SCRIPT_RAISE * size_px : level < 0 ? SCRIPT_DROP * size_px : 0;
}

static textbox measure_runs(cairo_t *cr, double size_px, const runs *R)
{
    textbox b = {0, 0, 0, size_px};
    for (size_t k = 0; k < R->n; k++) {
        const char *t = R->text + R->r[k].off;
        double sz = run_px(cr, size_px, R->r[k].level), dy = run_shift(size_px, R->r[k].level);
        nc_text_font(cr, sz);
        cairo_text_extents_t e;
        cairo_text_extents(cr, t, &e);
        if (e.width > 0 || e.height > 0) { /* spaces have no ink */
            b.asc = fmax(b.asc, -e.y_bearing - dy);
            b.desc = fmax(b.desc, e.height + e.y_bearing + dy);
        }
        b.w += e.x_advance;
        b.minpx = fmin(b.minpx, sz);
    }
    return b;
}

static void draw_runs(cairo_t *cr, double size_px, const runs *R, double x, double y)
{
    for (size_t k = 0; k < R->n; k++) {
        const char *t = R->text + R->r[k].off;
        double sz = run_px(cr, size_px, R->r[k].level);
        nc_text_font(cr, sz);
        cairo_move_to(cr, x, y + run_shift(size_px, R->r[k].level));
        cairo_show_text(cr, t);
        cairo_text_extents_t e;
        cairo_text_extents(cr, t, &e);
        x += e.x_advance;
    }
}

textbox nc_text_measure(cairo_t *cr, double size_px, const char *s)
{
    textbox b = {0, 0, 0, size_px};
    if (!s || !*s)
        return b;
    runs R;
    split(s, &R);
    return measure_runs(cr, size_px, &R);
}

void nc_text_draw(cairo_t *cr, double size_px, const char *s, double x, double y, double halign)
{
    if (!s || !*s)
        return;
    runs R;
    split(s, &R);
    textbox b = measure_runs(cr, size_px, &R);
    draw_runs(cr, size_px, &R, x - halign * b.w, y);
}

/* A tick label for drawing: '-' becomes U+2212, and "a^b" becomes "a^{b}"
 * (the rest of the label raised). */
static void tick_text(const char *label, char *out, size_t cap)
{
    size_t o = 0;
    bool exp = false;
    for (const char *p = label; *p && o + 5 < cap; p++) {
        if (*p == '-') {
            memcpy(out + o, MINUS_UTF8, 3);
            o += 3;
        } else if (*p == '^' && !exp) {
            memcpy(out + o, "^{", 2);
            o += 2;
            exp = true;
        } else {
            out[o++] = *p;
        }
    }
    if (exp)
        out[o++] = '}';
    out[o] = '\0';
}

textbox nc_text_measure_tick(cairo_t *cr, double size_px, const char *label, double digit_h)
{
    (void)digit_h;
    char t[4 * NC_TICK_LABEL_MAX];
    tick_text(label, t, sizeof t);
    return nc_text_measure(cr, size_px, t);
}

void nc_text_draw_tick(cairo_t *cr, double size_px, const char *label, double x, double y,
                       double digit_h)
{
    (void)digit_h;
    char t[4 * NC_TICK_LABEL_MAX];
    tick_text(label, t, sizeof t);
    nc_text_draw(cr, size_px, t, x, y, 0);
}

void nc_text_plain(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    bool group = false;
    if (cap == 0)
        return;
    for (const char *p = s; p && *p && o + 1 < cap; p++) {
        if ((*p == '^' || *p == '_') && p[1] == '{' && !group && strchr(p, '}')) {
            if (*p == '^')
                out[o++] = '^';
            group = true;
            p++;
            continue;
        }
        if (*p == '}' && group) {
            group = false;
            continue;
        }
        out[o++] = *p;
    }
    out[o] = '\0';
}
