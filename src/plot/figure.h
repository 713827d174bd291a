/*
 * figure.h - paper-style figures: a grid of panels, each with an optional
 * density cloud, curves, markers, reference lines and a legend, rendered
 * with cairo to PNG (through io/png, with text metadata), PDF or SVG.
 *
 * What a panel shows, bottom to top: an optional light grid at the major
 * ticks; the density cloud (density.h) as an image, one raster pixel per
 * device pixel when the raster was sized with nc_figure_data_area; the
 * reference lines; the curves; the markers; the frame, the ticks (outside,
 * like Matplotlib) and their labels, the axis labels and the title; the
 * colour bar; the point labels; the legend; the note. Everything inside
 * the frame is clipped to it.
 *
 * The density cloud is drawn as dots at least 1 pt across at every
 * resolution (raster.h): each pixel shows the count summed over the
 * (2r + 1)^2 pixels around it, r = nc_raster_dot_radius(dpi), mapped on a
 * log scale, t(c) = log(c) / log(cmax), from a floor colour (density_color
 * mixed with white to a contrast of 3:1 on white, nc_raster_floor: a lone
 * point stays visible in print and in greyscale) to density_color at the
 * densest pixel, opaque. A coloured raster (rgb != NULL) shows each pixel's
 * mean colour at opacity NC_DENSITY_ALPHA_MIN + (1 - that) t. Pick a
 * density colour that the curves stand out from (a dark blue cloud under
 * vermillion and green curves reads well).
 *
 * Layout (computed deterministically from the figure size, the panels'
 * ranges, their texts and where their legends and notes go): sizes are in
 * device pixels, width_in * dpi by height_in * dpi, for every format; PDF
 * and SVG draw the same layout scaled to points (72 per inch). Text sizes
 * are in points, like Matplotlib's: 10 pt by default (figure font_pt), tick
 * labels and legend 0.9x, panel titles 1.1x, the figure title 1.2x, notes
 * 0.8x; no text, superscripts and subscripts included, below 6 pt. Margins
 * come from the measured extents of the tick labels, axis labels and
 * titles (a title or x label that does not fit is broken into two lines);
 * panels in one grid column share their left and right margins and panels
 * in one row their top and bottom ones, so frames and axis labels line up
 * across the grid. Tick counts follow the axis length (one tick per 3.5
 * tick-label font sizes of length on x, per 2.5 on y; 2 to 8 ticks), and
 * an axis whose labels would collide gets fewer ticks. An automatic legend
 * or note goes inside its panel only where it hides no data, which depends
 * on the cloud: nc_figure_placements tells where they went, and a caller
 * that sized rasters before filling them pins those places (legend_pos,
 * legend_cols, legend_pt, note_pos) so the layout stays as it was.
 *
 * Text: cairo's toy font API with "DejaVu Sans" (fonts-dejavu-core),
 * grey-scale anti-aliasing, no hinting, so PNG, PDF and SVG measure text
 * alike. The '-' of tick labels is drawn as the minus sign U+2212; "10^k"
 * tick labels (axes.h) get a raised exponent; in any string "^{...}" is a
 * superscript and "_{...}" a subscript, and Unicode superscript and
 * subscript characters are drawn the same way (text.h). Other strings are
 * UTF-8 and drawn as given (Greek letters such as U+03B1 are in DejaVu
 * Sans).
 *
 * Speed: a 1600 x 1200 PNG with a full-resolution density and 5 curves
 * takes about 35-45 ms of CPU on one core (about half of it zlib, see
 * io/png.h): layout < 1 ms, density image and dot spreading a few ms,
 * cairo drawing the rest.
 *
 * Left out: pango (no complex text layout), shared legends across panels,
 * error bars, legends too long for the strip at 6 pt (they are drawn,
 * overflowing), and density clouds on log axes (bin log10 of the data into
 * a linear raster instead). Rendering PNGs from several threads at once is
 * done (figures.c); PDF and SVG are drawn one at a time.
 */
#ifndef NC_FIGURE_H
#define NC_FIGURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/figspec.h"
#include "plot/density.h"
#include "util/err.h"
#include "util/sink.h"

/* A colour, components in [0, 1]. */
typedef struct nc_rgb {
    double r, g, b;
} nc_rgb;

/* Marker shapes. NC_MARKER_NONE draws nothing on a curve, and a circle for
 * an nc_mark (its default). Filled shapes get a thin edge in a darker shade
 * of their colour; cross and plus are stroked. */
typedef enum nc_marker {
    NC_MARKER_NONE = 0,
    NC_MARKER_CIRCLE,
    NC_MARKER_SQUARE,
    NC_MARKER_TRIANGLE, /* pointing up */
    NC_MARKER_TRIANGLE_DOWN,
    NC_MARKER_DIAMOND,
    NC_MARKER_CROSS, /* x */
    NC_MARKER_PLUS,
    NC_MARKER_COUNT
} nc_marker;

/* Line patterns: solid, Matplotlib's "--" (dashes of 3.7 and gaps of 1.6
 * line widths), dots (round, 2.2 line widths apart) and "-." (6.4, 1.6,
 * 1, 1.6). */
typedef enum nc_dash { NC_SOLID = 0, NC_DASHED, NC_DOTTED, NC_DASHDOT } nc_dash;

/* A polyline in data coordinates: (x[i], y[i]) for i < n, borrowed. A
 * point with a NaN (or, on a log axis, a value <= 0) breaks the line; a
 * line through points far outside the panel is clipped exactly. */
typedef struct nc_curve {
    const double *x, *y; /* [n] */
    size_t n;
    nc_rgb color;
    double width_pt;   /* line width in points; 0 means 1.5 */
    int dashed;        /* an nc_dash (true: NC_DASHED) */
    int marker;        /* an nc_marker drawn at each point, or NC_MARKER_NONE */
    double marker_pt;  /* marker size (diameter) in points; 0 means 6 */
    const char *label; /* legend entry, or NULL for none */
} nc_curve;

/* One marker at (x, y) in data coordinates. */
typedef struct nc_mark {
    double x, y;
    nc_rgb color;
    int shape;         /* an nc_marker; NC_MARKER_NONE means circle */
    double size_pt;    /* diameter in points; 0 means 6 */
    const char *label; /* legend entry, or NULL */
} nc_mark;

/* A vertical reference line at x across the whole panel (an optimum, a
 * theory value), 1 pt wide. */
typedef struct nc_vline {
    double x;
    nc_rgb color;
    int dashed; /* an nc_dash */
    const char *label; /* legend entry, or NULL */
} nc_vline;

/* A horizontal reference line at y (a bound such as sqrt(d), zero). */
typedef struct nc_hline {
    double y;
    nc_rgb color;
    int dashed; /* an nc_dash */
    const char *label; /* legend entry, or NULL */
} nc_hline;

/* A short text beside the point (x, y) in data coordinates (a layer's
 * name at its point), drawn at the note size (at least 6 pt) in colour,
 * at the first of eight places around the point (right, left, above
 * right, above left, below right, below left, above, below) that stays
 * inside the frame and covers no label placed before (labels are placed
 * in their order: the most important first), no curve, marker or line;
 * left out when none does, and then counted in the panel's note ("12 of
 * 44 layers named", with the panel's labels_what). */
typedef struct nc_label {
    double x, y;
    const char *text;
    nc_rgb color;
} nc_label;

/* A colour bar right of the panel: the colour map (nc_colormap from t0 to
 * t1) over the values lo .. hi (log10 when log), with ticks and a label:
 * what colours the panel's points mean (a token's scale, a layer's
 * depth). */
typedef struct nc_colorbar {
    double lo, hi; /* lo < hi; > 0 when log */
    bool log;
    double t0, t1; /* the part of the colour map used, in [0, 1] */
    const char *label;
} nc_colorbar;

/* Where the legend goes: an nc_legend_pos (config/figspec.h); AUTO keeps
 * the legend off curves, markers, labels and all but a sliver of the
 * cloud, or puts it in a strip below the panels (OUTSIDE). */

/* One panel. Every pointer is borrowed and may be NULL (with its count 0).
 * The legend lists, in this order, the density (density_label), the
 * curves, the markers, the vertical and the horizontal lines that have a
 * label; entries with the same label text as an earlier one are listed
 * once (so a series of marks can all carry the same label). */
typedef struct nc_panel {
    const char *title, *xlabel, *ylabel;
    double x0, x1, y0, y1; /* the data range shown; x0 < x1, y0 < y1, > 0 on log axes */
    bool xlog, ylog;       /* log10 axes (no density allowed on them) */
    double xlin, xdecade;  /* xlin > 0: a symmetric-log x axis (Matplotlib's "symlog"):
                              linear within +-xlin, logarithmic beyond, a decade there
                              spanning xdecade * xlin (> 0) of the axis; a density is then
                              binned in that coordinate (figures.c) */
    bool grid;             /* light grid lines at the major ticks */

    const nc_density *density; /* background point cloud, or NULL; its range may differ from the
                                  panel's (it is placed by its own x0..y1) */
    nc_rgb density_color;      /* colour of a monochrome cloud (ignored when density->rgb) */
    const char *density_label; /* legend entry for the cloud, or NULL */

    const nc_curve *curves;
    size_t ncurves;
    const nc_mark *marks;
    size_t nmarks;
    const nc_vline *vlines;
    size_t nvlines;
    const nc_hline *hlines;
    size_t nhlines;
    const nc_label *labels;
    size_t nlabels;

    const nc_colorbar *cbar;  /* a colour bar right of the frame, or NULL */
    const char *labels_what;  /* what the point labels name ("layers"), for the note that
                                 counts the labels left out; NULL: "points" */

    const char *legend_title; /* a line above the entries, or NULL */
    int legend_pos;           /* an nc_legend_pos */
    int legend_cols;          /* columns of a legend inside the frame; 0: chosen (1 or 2) */
    double legend_pt;         /* its font size; 0: chosen (the legend size, smaller when
                                 that lets it inside, not below 6 pt) */
    const char *note;         /* small text inside the frame, e.g. "N = 16.8M points",
                                 or NULL; '\n' starts a second line */
    int note_pos;             /* an nc_legend_pos: AUTO, the least inked of the nine places
                                 when it covers no curve, marker, line, label or legend and
                                 at most a sliver of the cloud, else the strip below the
                                 panels (OUTSIDE); or a fixed place */
} nc_panel;

/* A figure: panels in a rows x cols grid, filled row by row. */
typedef struct nc_figure {
    double width_in, height_in; /* size in inches, > 0 */
    double dpi;                 /* device pixels per inch, 10 .. 2400; PNG size is
                                   round(width_in * dpi) x round(height_in * dpi) <= 20000 */
    int rows, cols;             /* >= 1 */
    const nc_panel *panels;     /* [npanels], 1 <= npanels <= rows * cols; cells past the
                                   last panel stay empty */
    size_t npanels;
    const char *title;          /* figure title above the grid (suptitle), or NULL */
    double font_pt;             /* base text size in points; 0 means 10 */
    bool shared_legend;         /* one legend for every panel, in a strip below them (entries
                                   with the same label listed once) */
    bool transparent;           /* no white background: PNG as RGBA with alpha, PDF and SVG
                                   with nothing painted behind */
    bool no_labels;             /* leave every point label out (nc_label) */
    const char *note;           /* a note for the whole figure, in the strip below the
                                   panels, or NULL */
    const char *const *meta;    /* {key, value, ..., NULL} or NULL: PNG text chunks (keys must
                                   be PNG keywords, io/png.h), PDF document info (see
                                   nc_figure_render), SVG comment */
} nc_figure;

typedef enum nc_format { NC_FMT_PNG, NC_FMT_PDF, NC_FMT_SVG } nc_format;

/* A rectangle of device pixels: columns x .. x+w-1, rows y .. y+h-1, from
 * the top-left corner of the figure. */
typedef struct nc_rect {
    int x, y, w, h;
} nc_rect;

/* The data area (the inside of the frame) of panel k, 0 <= k < npanels.
 * The panel's x0 maps to the left edge of column area->x, x1 to the right
 * edge of column area->x + area->w - 1; y1 to the top edge of row
 * area->y, y0 to the bottom edge of the last row. A density raster of
 * area->w x area->h over the panel's range therefore maps one raster pixel
 * onto one device pixel. The layout depends only on the figure (size, dpi,
 * grid, font size, title) and on each panel's ranges, log flags, title and
 * axis labels; not on densities, curves, marks, lines, legends or notes:
 * it can be computed before the data are streamed. Returns 0, or NC_EINVAL (bad figure or
 * panel, named in the message) or NC_ENOMEM. */
int nc_figure_layout(const nc_figure *fig, size_t k, nc_rect *area, nc_err *err);

/* Where a panel's legend and note went (nc_figure_placements): the
 * legend at a position inside the frame, in the strip (NC_LEGEND_OUTSIDE)
 * or nowhere (NC_LEGEND_NONE), in legend_cols columns at legend_pt; the
 * note likewise. Set into the panel (legend_pos, legend_cols, legend_pt,
 * note_pos), they make the layout keep them whatever the cloud. */
typedef struct nc_placement {
    int legend_pos, legend_cols;
    double legend_pt;
    int note_pos;
} nc_placement;

/* The placements of every panel's legend and note in fig as drawn now,
 * densities included, into out[npanels], and (when areas is not NULL)
 * the panels' data areas into areas[npanels]. The layout depends on them
 * (a legend in the strip shrinks the panels), and they depend on the
 * clouds: a caller that sized its rasters before filling them
 * (nc_figure_layout) pins these, and sizes the rasters to those areas
 * (pinned, the layout no longer moves). Returns 0, NC_EINVAL or
 * NC_ENOMEM. */
int nc_figure_placements(const nc_figure *fig, nc_placement *out, nc_rect *areas, nc_err *err);

/* Every panel's data area (nc_figure_layout), from one layout, into
 * areas[npanels]. */
int nc_figure_areas(const nc_figure *fig, nc_rect *areas, nc_err *err);

/* The pixel size of panel k's data area: nc_figure_layout's w and h. */
int nc_figure_data_area(const nc_figure *fig, size_t k, int *w, int *h, nc_err *err);

/* The device-pixel position (continuous: the centre of column i is i + 0.5)
 * of data point (x, y) in a panel whose data area is `area`, honouring log
 * axes. For tests and for callers placing their own annotations. */
void nc_panel_to_pixel(const nc_panel *p, const nc_rect *area, double x, double y, double *px,
                       double *py);

/* Renders fig and writes it through sink. When fig->meta is set, two
 * pairs are added to it: "Panels" (every format: per panel "panel K: area
 * X Y W H; x X0 X1[ log]; y Y0 Y1[ log]", its data area in px and its
 * range) and, in PNGs, "Layout" (one line per item drawn: "canvas W H
 * DPI", "text panelK.WHAT X Y W H PT" with the text's ink box in px and its
 * size in points, "legend panelK|outside X Y W H 0", "colour panelK KIND
 * #rrggbb" for each data colour; docs/figures.md). Formats: PNG (8-bit
 * RGB, or RGBA when transparent; text chunks from meta; zlib level and filter as in
 * io/png.h), PDF (one page; Title from the meta key "Title" or the figure
 * title, Author from "Author", Creator from "Software", Subject from
 * "Description", CreationDate from "CreationDate" (ISO 8601, e.g.
 * "2025-03-14T09:26:53Z"; without it cairo stamps the current time, so
 * PDFs are byte-identical only with it), and all pairs as "key: value"
 * separated by "; " in Keywords) or SVG (one comment, a "key: value" line
 * per pair with "--" broken up as XML requires, right after the XML
 * declaration). The same figure gives the same PNG bytes; SVG bytes are
 * the same from run to run of a program, but cairo numbers surfaces per
 * process, so a second render in one process differs in an id.
 * Returns 0, or NC_EINVAL (a bad figure or panel: size, grid, range,
 * density on a log axis, unknown marker or legend position; named in the
 * message), NC_ENOMEM, NC_EINTERNAL (cairo failed; its status string is
 * quoted), or the sink's error. On failure part of the output may already
 * have gone through the sink. */
int nc_figure_render(const nc_figure *fig, nc_format fmt, const nc_sink *sink, nc_err *err);

/* The k-th colour (k >= 0, cycling) of the Okabe-Ito colourblind-safe
 * palette, in an order that keeps the most distinct colours first: blue,
 * vermillion, bluish green, reddish purple, orange, sky blue, black,
 * yellow (the last is faint on white: avoid it for thin lines). */
nc_rgb nc_palette(int k);

/* The k-th colour (cycling) of the categorical palette for tokens,
 * channels and models: Paul Tol's colour-blind-safe "muted" scheme less
 * the colours close to nc_fit_color's (indigo, teal, wine, olive, cyan,
 * brown, black, sand), so a token or channel is never mistaken for a fit. */
nc_rgb nc_cat_color(int k);

/* The colour of fit id (an nc_fit_id; theory curves in their family's):
 * affine grey, DyT vermillion, DyISRU bluish green, free DyISRU blue,
 * Derf reddish purple (Okabe-Ito); all different. */
nc_rgb nc_fit_color(int id);

/* Viridis (Matplotlib's perceptually uniform map, CC0), t in [0, 1]
 * (clamped; NaN gives t = 0), interpolated linearly in its 256-entry
 * table: dark purple at 0, teal at 0.5, yellow at 1. For colouring points
 * by token or channel. */
nc_rgb nc_colormap(double t);

/* The colour 0xRRGGBB. */
nc_rgb nc_rgb_hex(uint32_t rgb);

#endif
