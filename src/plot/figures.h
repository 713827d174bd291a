/*
 * figures.h - the paper-style figures (docs/figures.md: the observations of
 * the DyT paper they reproduce), built on plot/figure.h from a finished plan.
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
 *                 surrogates' derivatives f'(x) (docs/jacobian.md)
 *   alpha-std     fitted DyT alpha against 1/std(x) across layers, coloured by
 *                 depth, with each layer's theory value and each model
 *                 group's across-layer fit (fig_depth.c)
 *   alpha-depth   fitted alpha and C against the layer index, per group
 *   swap-depth    the swap test's loss change with each norm replaced alone,
 *                 per surrogate, against the layer index (docs/swap.md)
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

#include "config/figspec.h"
#include "util/err.h"

struct nc_plan;   /* plan/plan.h */
struct nc_outset; /* util/outfile.h */

/* Renders every figure of specs[n] for a finished plan, adding the files
 * (<stem>.png / .pdf / .svg) to the output set, and their names to
 * files[] (up to cap, owned by the caller afterwards) when files is not
 * NULL. command goes into the figures' metadata. A figure that cannot be
 * drawn (a layer pattern matching no layer, no layer with the fit it
 * shows: NC_EINVAL) is refused: with refused, the others are drawn and
 * *refused gets one line per refusal (owned by the caller; NULL when
 * none), and only when every figure is refused is that an error; without
 * (NULL), the first refusal is the error. Other errors: allocation,
 * rendering. */
int nc_figures_render(const struct nc_plan *plan, const nc_fig_spec *specs, size_t n,
                      const char *command, int threads, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, char **refused, nc_err *err);

/* One figure per layer and swept parameter of the plan (analysis/sweep.h):
 * the error curves against the parameter on a log axis, with the optimum,
 * the fitted value and the theory value marked; named
 * "<layer>_sweep_<param>", in the formats, size, dpi, legend position and
 * title of look (its kind and layers unused). Other arguments as
 * nc_figures_render. */
int nc_figures_sweeps(const struct nc_plan *plan, const nc_fig_spec *look, const char *command,
                      struct nc_outset *set, char **files, size_t cap, size_t *nfiles,
                      nc_err *err);

#endif
