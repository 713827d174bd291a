/*
 * text.h - the text of a figure: one font, measuring strings and tick
 * labels, drawing them (internal to src/plot/).
 *
 * One font everywhere: cairo's toy font API with FONT_FACE (style.h,
 * "DejaVu Sans"), grey-scale anti-aliasing, no hinting (nc_text_options),
 * so that PNG, PDF and SVG measure text alike and the layout, measured on
 * a scratch surface (layout.c), fits the drawing. Tick labels (axes.h)
 * are drawn with '-' as the minus sign U+2212, and "a^b" as the base a
 * followed by the exponent b, smaller (EXP_FONT) and raised (EXP_RAISE
 * digit heights). Sizes and positions are in device pixels.
 *
 * Left out: pango (no complex text layout, no markup), line breaks, and
 * any special treatment of other strings: they are UTF-8, drawn as given.
 */
#ifndef NC_TEXT_H
#define NC_TEXT_H

#include <cairo.h>

/* Ink extents of a string at a size: advance width, ink above and below
 * the baseline (px). */
typedef struct textbox {
    double w, asc, desc;
} textbox;

/* The font options of every context that measures or draws text:
 * grey-scale anti-aliasing, no hinting of outlines or metrics. Owned by
 * the caller (cairo_font_options_destroy). */
cairo_font_options_t *nc_text_options(void);

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

#endif
