/*
 * text.h - the text of a figure: one font, measuring strings and tick
 * labels, drawing them (internal to src/plot/).
 *
 * One font everywhere: cairo's toy font API with FONT_FACE (style.h,
 * "DejaVu Sans"), grey-scale anti-aliasing, no hinting (nc_text_options),
 * so that PNG, PDF and SVG measure text alike and the layout, measured on
 * a scratch surface (layout.c), fits the drawing. Sizes and positions
 * are in device pixels.
 *
 * Scripts: in any string, "^{...}" is raised and "_{...}" lowered, at
 * SCRIPT_FONT of the size but never below the context's smallest text
 * size (nc_text_set_min), raised SCRIPT_RAISE or lowered SCRIPT_DROP of
 * the size (style.h); Unicode superscript and subscript characters
 * ("R\u00b2", "J\u1d62\u1d62", "\u00d710\u2075") are drawn the same way, from
 * their plain characters, rather than as DejaVu's small script glyphs.
 * Tick labels (axes.h) are drawn with '-' as the minus sign U+2212, and
 * "a^b" as the base a followed by the exponent b, raised the same way.
 *
 * Left out: pango (no complex text layout), nested scripts, line breaks.
 */
#ifndef NC_TEXT_H
#define NC_TEXT_H

#include <cairo.h>
#include <stddef.h>

/* Ink extents of a string at a size: advance width, ink above and below
 * the baseline (px). */
typedef struct textbox {
    double w, asc, desc;
    double minpx; /* the smallest size any of its characters is drawn at (px) */
} textbox;

/* The font options of every context that measures or draws text:
 * grey-scale anti-aliasing, no hinting of outlines or metrics. Owned by
 * the caller (cairo_font_options_destroy). */
cairo_font_options_t *nc_text_options(void);

/* The smallest text size (px) on cr, below which no script is drawn;
 * 0 until set. */
void nc_text_set_min(cairo_t *cr, double min_px);

/* Selects the figure font at size_px on cr. */
void nc_text_font(cairo_t *cr, double size_px);

/* The extents of s at size_px (all 0 for NULL or ""); otherwise leaves
 * the font selected on cr. */
textbox nc_text_measure(cairo_t *cr, double size_px, const char *s);

/* The extents of a tick label (axes.h) as drawn: minus sign, raised
 * exponent; digit_h is the ink height of a digit at size_px. */
textbox nc_text_measure_tick(cairo_t *cr, double size_px, const char *label, double digit_h);

/* Draws s with its advance box's horizontal position given by halign
 * (0 left, 0.5 centre, 1 right of x) and its baseline at y, in cr's
 * current source. Nothing for NULL or "". */
void nc_text_draw(cairo_t *cr, double size_px, const char *s, double x, double y,
                  double halign);

/* Draws a tick label with its left end at x and baseline at y. */
void nc_text_draw_tick(cairo_t *cr, double size_px, const char *label, double x, double y,
                       double digit_h);

/* s without its script marks, into out[cap]: "R^{2}" becomes "R^2",
 * "J_{ii}" becomes "Jii" (for metadata, which has no scripts). */
void nc_text_plain(const char *s, char *out, size_t cap);

#endif
