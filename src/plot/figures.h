/*
 * figures.h - the paper-style figures (issue 4; BRIEF.md "The observations to
 * reproduce"), built on plot/figure.h from a finished plan.
 *
 *   scatter       input vs output (before the affine part) of one layer, all
 *                 points as a log-density cloud, with the fitted DyT, DyISRU
 *                 and affine curves (the DyT paper's Figure 2 panels)
 *   scatter-grid  the same, one panel per layer, shared styling
 *   by-token      the cloud in grey with a sample of tokens drawn in colour:
 *                 each token's points lie on the line y = (x - mu_t) / s_t
 *                 (Figure 4, left)
 *   by-channel    points coloured by channel: the top outlier channels in
 *                 colour and named, the others grey (Figure 4, right)
 *   jacobian      the exact diagonal J_ii against x, with the fitted
 *                 surrogates' derivatives f'(x) (BRIEF.md "The gradient
 *                 derivation")
 *   alpha-std     fitted DyT alpha (and alpha*gamma) against 1/std(x) across
 *                 layers, with the theory line alpha = 1/(rho sqrt d)
 *   tanh-family   tanh(alpha x) for a few alpha (the paper's illustration)
 *   outlier-steps the DyISRU paper's simulation: each token's outlier point
 *                 (and its mirror) with the DyT and DyISRU fits of fixed
 *                 amplitude, for layers run with that experiment
 *
 * Millions of points are never drawn one by one: one streaming pass per
 * layer accumulates every cloud its figures need into density rasters the
 * size of their panels (plot/density.h), per thread, then merged; a 16M
 * point layer needs no second copy of its data.
 */
#ifndef NC_FIGURES_H
#define NC_FIGURES_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/surrogate.h"
#include "util/err.h"

typedef enum nc_fig_kind {
    NC_FIG_SCATTER,
    NC_FIG_SCATTER_GRID,
    NC_FIG_BY_TOKEN,
    NC_FIG_BY_CHANNEL,
    NC_FIG_JACOBIAN,
    NC_FIG_ALPHA_STD,
    NC_FIG_TANH_FAMILY,
    NC_FIG_OUTLIER_STEPS,
    NC_FIG_COUNT
} nc_fig_kind;

/* "scatter", "scatter-grid", ... */
const char *nc_fig_kind_name(nc_fig_kind kind);
bool nc_fig_kind_parse(const char *s, nc_fig_kind *kind);

/* Output formats, as bits of nc_fig_spec.formats. */
enum { NC_FIGFMT_PNG = 1, NC_FIGFMT_PDF = 2, NC_FIGFMT_SVG = 4 };

/* Parses a legend position: "auto", "none", "upper left", "upper right",
 * "lower left", "lower right", "right", "center left", "center right",
 * "lower center", "upper center", "center". */
bool nc_fig_legend_parse(const char *s, int *pos);

/* Parses "png,pdf,svg" (any non-empty subset) into *formats. */
bool nc_fig_formats_parse(const char *s, unsigned *formats);

#define NC_FIG_MAX_ALPHAS 8

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
    int cols;                /* scatter-grid: panels per row (0: up to 3) */
    int legend;              /* an nc_legend_pos of plot/figure.h (0: placed automatically) */
    char *name;              /* file name stem (owned; NULL: from the kind and layer) */
} nc_fig_spec;

/* Releases what a spec owns (not the spec itself). */
void nc_fig_spec_clear(nc_fig_spec *spec);

struct nc_plan;   /* analysis/plan.h */
struct nc_outset; /* util/outfile.h */

/* Renders every figure of specs[n] for a finished plan, adding the files
 * (<stem>.png / .pdf / .svg) to the output set, and their names to
 * files[] (up to cap, owned by the caller afterwards) when files is not
 * NULL. command goes into the figures' metadata. Errors: a layer pattern
 * matching no layer (NC_EINVAL), allocation, rendering. */
int nc_figures_render(const struct nc_plan *plan, const nc_fig_spec *specs, size_t n,
                      const char *command, int threads, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, nc_err *err);

/* One figure per layer and swept parameter of the plan (analysis/sweep.h):
 * the error curves against the parameter on a log axis, with the optimum,
 * the fitted value and the theory value marked; named
 * "<layer>_sweep_<param>". Arguments as nc_figures_render. */
int nc_figures_sweeps(const struct nc_plan *plan, unsigned formats, const char *command,
                      struct nc_outset *set, char **files, size_t cap, size_t *nfiles,
                      nc_err *err);

#endif
