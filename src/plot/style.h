/*
 * style.h - the look of a figure, in one place (internal to src/plot/):
 * the font, text sizes, line widths, paddings, tick density, legend
 * metrics and the colours of text, frame, grid, legend box and note.
 *
 * Lengths are in points, Matplotlib's where it has one (tick length 3.5,
 * tick pad 3.5, label pad 4, title pad 6, frame 0.8, legend handle 2 em);
 * the layout (layout.h) turns them into device pixels at s = dpi / 72 px
 * per point. Text sizes are factors of the figure's base font (figure.h,
 * font_pt); legend metrics are in legend-font ems.
 *
 * Left out: everything a caller chooses (figure.h: base font size, the
 * colours, widths and sizes of curves, markers and lines), and the
 * parameters of algorithms (legend placement grid: legend.c; density
 * opacity: raster.h).
 */
#ifndef NC_STYLE_H
#define NC_STYLE_H

#include "plot/figure.h"

#define FONT_FACE "DejaVu Sans"
#define DEFAULT_FONT_PT 10.0
#define MIN_AUTO_FONT_PT 7.5 /* smallest base font chosen for a small figure */
#define MIN_TEXT_PT 6.0      /* no text smaller than this at print size */
/* text sizes relative to the base font */
#define TICK_FONT 0.9
#define LABEL_FONT 1.0
#define TITLE_FONT 1.1
#define SUPTITLE_FONT 1.2
#define LEGEND_FONT 0.9
#define NOTE_FONT 0.8
#define SCRIPT_FONT 0.7   /* superscripts and subscripts, relative to their text (text.h) */
#define SCRIPT_RAISE 0.42 /* a superscript's baseline, raised by this share of the size */
#define SCRIPT_DROP 0.16  /* a subscript's, lowered */
/* lengths in points */
#define TICK_LEN_PT 3.5
#define MINOR_LEN_PT 2.0
#define TICK_WIDTH_PT 0.8
#define MINOR_WIDTH_PT 0.6
#define FRAME_PT 0.8
#define GRID_PT 0.6
#define REFLINE_PT 1.0
#define TICK_PAD_PT 3.5
#define LABEL_PAD_PT 4.0
#define TITLE_PAD_PT 6.0
#define SUPTITLE_PAD_PT 10.0 /* below the figure title */
#define OUTER_PAD_EM 0.6 /* figure border to text, in base-font ems */
#define GAP_EM 1.2       /* between neighbouring panels' texts */
#define CBAR_PAD_EM 0.8  /* between a panel's frame and its colour bar, in base-font ems */
#define CBAR_W_EM 0.9    /* the colour bar's width */
#define CURVE_PT 1.5     /* default curve width */
#define MARKER_PT 6.0    /* default marker size */
/* tick density: about one label per this many label heights */
#define X_TICK_SPACING 3.5
#define Y_TICK_SPACING 2.5
#define MAX_TICKS 8
#define MIN_TICKS 2
/* legend, in legend-font ems (Matplotlib's defaults) */
#define LEG_BORDERPAD 0.4
#define LEG_LABELSPACING 0.5
#define LEG_HANDLELEN 2.0
#define LEG_HANDLEPAD 0.8
#define LEG_AXESPAD 0.5
#define LEG_COLSPACING 1.2 /* between the columns of the legend strip */
#define LEG_ALPHA 0.8 /* opacity of the legend's white box */
#define STRIP_CAP 0.25 /* the legend strip's font shrinks (to 6 pt) while it takes more */

static const nc_rgb TEXT_RGB = {0.10, 0.10, 0.10};
static const nc_rgb FRAME_RGB = {0.15, 0.15, 0.15};
static const nc_rgb GRID_RGB = {0.88, 0.88, 0.88};
static const nc_rgb LEGEND_EDGE_RGB = {0.80, 0.80, 0.80};
static const nc_rgb NOTE_RGB = {0.30, 0.30, 0.30};

#define PI 3.14159265358979323846 /* for arcs and rotated text */

#endif
