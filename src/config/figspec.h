/*
 * figspec.h - a figure request: which paper-style figure, of which layers,
 * in which formats and sizes (a config's "figures" entries, or `normcmp
 * plot`'s flags), with the names and parsers of its values. What each
 * kind draws is plot/figures.h; this is the part configuration needs, so
 * that config/ does not depend on plot/.
 */
#ifndef NC_FIGSPEC_H
#define NC_FIGSPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/surrogate.h"

typedef enum nc_fig_kind {
    NC_FIG_SCATTER,
    NC_FIG_SCATTER_GRID,
    NC_FIG_BY_TOKEN,
    NC_FIG_BY_CHANNEL,
    NC_FIG_JACOBIAN,
    NC_FIG_ALPHA_STD,
    NC_FIG_TANH_FAMILY,
    NC_FIG_OUTLIER_STEPS,
    NC_FIG_ALPHA_DEPTH,
    NC_FIG_SWAP_DEPTH,
    NC_FIG_COUNT
} nc_fig_kind;

/* "scatter", "scatter-grid", ... */
const char *nc_fig_kind_name(nc_fig_kind kind);
bool nc_fig_kind_parse(const char *s, nc_fig_kind *kind);

/* Output formats, as bits of nc_fig_spec.formats. */
enum { NC_FIGFMT_PNG = 1, NC_FIGFMT_PDF = 2, NC_FIGFMT_SVG = 4 };

/* Parses a legend position: "auto", "none", "outside", "upper left",
 * "upper right", "lower left", "lower right", "right", "center left",
 * "center right", "lower center", "upper center", "center" ('-' or '_'
 * may stand for the space: "upper-left"). */
bool nc_fig_legend_parse(const char *s, int *pos);

/* Parses "png,pdf,svg" (any non-empty subset) into *formats. */
bool nc_fig_formats_parse(const char *s, unsigned *formats);

#define NC_FIG_MAX_ALPHAS 8

/* A figure's pixels a side (plot/figure.c refuses others) and the PNG
 * resolution when none is given. */
#define NC_FIG_MIN_SIDE_PX 16
#define NC_FIG_MAX_SIDE_PX 20000
#define NC_FIG_DEFAULT_DPI 150

/* Whether w_in x h_in inches at dpi (0: the default) make an allowed
 * number of pixels a side; the pixels into *wpx, *hpx. */
bool nc_fig_pixels_ok(double w_in, double h_in, double dpi, double *wpx, double *hpx);

typedef struct nc_fig_spec {
    nc_fig_kind kind;
    char **layers;           /* layer names or globs (owned); none: every layer */
    size_t nlayers;
    unsigned formats;        /* NC_FIGFMT_* bits; 0: PNG */
    double width_in, height_in, dpi; /* 0: the kind's default */
    bool curves[NC_FIT_COUNT]; /* fits drawn (scatter, jacobian); none set: linear, dyt,
                                  dyisru and, on jacobian, the theory curves */
    size_t tokens;           /* by-token: tokens drawn (0: 8) */
    size_t channels;         /* by-channel: channels highlighted (0: 4) */
    double alphas[NC_FIG_MAX_ALPHAS]; /* tanh-family (none: 0.5, 1, 2) */
    size_t nalphas;
    int cols;                /* scatter-grid: panels per row (0: chosen from the canvas) */
    int legend;              /* an nc_legend_pos (0: placed automatically) */
    char *name;              /* file name stem (owned; NULL: from the kind and layer) */
    bool has_xlim, has_ylim; /* axis limits given (scatter, by-token, by-channel, jacobian) */
    double xlim[2], ylim[2]; /* lo < hi, linear axes */
    char *title;             /* the figure's title (owned; NULL: the kind's own) */
    bool no_title;           /* "none": no title (camera-ready) */
    bool no_labels;          /* no point labels (alpha-std's layer names) */
} nc_fig_spec;

/* Parses "LO,HI" (two finite numbers, LO < HI) into lim[2]. */
bool nc_fig_limits_parse(const char *s, double lim[2]);

/* Releases what a spec owns (not the spec itself). */
void nc_fig_spec_clear(nc_fig_spec *spec);

/* Whether the figure draws the layer named name: no layer patterns select
 * every layer, else one of spec->layers must match (glob, as --tensor). */
bool nc_fig_spec_selects(const nc_fig_spec *spec, const char *name);

/* Where the legend goes. AUTO picks, among the nine Matplotlib positions
 * inside the frame, the one covering the least ink (curves, markers, lines
 * and the density cloud), preferring the earlier in the order upper right,
 * upper left, lower left, lower right, right, center left, center right,
 * lower center, upper center, center; when even that one would cover a
 * curve, a marker or more than a sliver of the cloud, the legend goes
 * OUTSIDE: a strip below the panels (plot/figure.h). */
typedef enum nc_legend_pos {
    NC_LEGEND_AUTO = 0,
    NC_LEGEND_UPPER_RIGHT,
    NC_LEGEND_UPPER_LEFT,
    NC_LEGEND_LOWER_LEFT,
    NC_LEGEND_LOWER_RIGHT,
    NC_LEGEND_RIGHT,
    NC_LEGEND_CENTER_LEFT,
    NC_LEGEND_CENTER_RIGHT,
    NC_LEGEND_LOWER_CENTER,
    NC_LEGEND_UPPER_CENTER,
    NC_LEGEND_CENTER,
    NC_LEGEND_NONE,    /* no legend even when entries have labels */
    NC_LEGEND_OUTSIDE, /* in a strip below the panels */
} nc_legend_pos;

#endif
