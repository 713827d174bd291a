/*
 * figures_internal.h - what the files of the paper-style figures share
 * (internal to src/plot/figures.c, fig_panels.c and fig_sweep.c): the job
 * a figure is built in, the memory it owns, and the steps each file
 * provides to the others.
 *
 *   figures.c     the driver: jobs per spec, the raster pass
 *   fig_panels.c  the panels of each figure kind
 *   fig_depth.c   the figures across layers (alpha-std, alpha-depth, swap-depth)
 *   fig_grid.c    the shape of a scatter-grid: panels, columns, layers shown
 *   fig_sweep.c   the sweep figures (nc_figures_sweeps)
 *   fig_draw.c    drawing the jobs on threads and storing them in order
 *   fig_job.c     a job's memory, grid, metadata and rendering: below
 *                 the others, which call it (never the other way)
 *
 * Left out: everything a caller outside these files may use (figures.h).
 */
#ifndef NC_FIGURES_INTERNAL_H
#define NC_FIGURES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "plan/plan.h"
#include "plot/figure.h"
#include "plot/figures.h"
#include "util/err.h"
#include "util/sink.h"

/* One figure being built: its panels and everything they point to (curves,
 * marks, strings: owned by the job), the stem of its file names and its
 * metadata. The panels' density rasters are owned by the job too. */
typedef struct job {
    const nc_fig_spec *spec;
    nc_figure fig;
    nc_panel *panels; /* [cap_panels] (owned; nc_fig_job_panels) */
    size_t npanels, cap_panels;
    void **owned; /* everything allocated for this job */
    size_t nowned, capowned;
    bool oom;
    bool has_raster; /* a panel has a density raster (figures.c) */
    nc_rect *areas;  /* its panels' final data areas, once placements are pinned (figures.c) */
    const nc_plan *plan; /* the plan drawn from (NULL: none) */
    double *xq;      /* per plan layer, the 99.5th percentile of |x| (NaN: not yet), shared by
                        the jobs of one nc_figures_render (borrowed), or NULL */
    const size_t *shown; /* [nshown] the plan layers the figure shows, in plan order (owned by
                            the job): its "Layer" and "Parameters" metadata */
    size_t nshown;
    char stem[192];
    const char *meta[16];
} job;

/* ---- fig_job.c ----------------------------------------------------------- */

/* n zeroed bytes (at least 1) owned by job j, freed by nc_fig_job_free.
 * NULL when out of memory, which also sets j->oom. */
void *nc_fig_jalloc(job *j, size_t n);

/* A printf-formatted string owned by job j (as nc_fig_jalloc), or NULL. */
__attribute__((format(printf, 2, 3))) char *nc_fig_jprintf(job *j, const char *fmt, ...);

/* A title of job j's figure: own, the spec's --title (or "title"), or
 * NULL for "none". */
const char *nc_fig_title(const job *j, const char *own);

/* Allocates j's panels, n of them (zeroed); false when out of memory. */
bool nc_fig_job_panels(job *j, size_t n);

/* Records that job j shows the plan layers layers[n] (copied); false when
 * out of memory. */
bool nc_fig_job_shows(job *j, const size_t *layers, size_t n);

/* Frees what job j owns and its panels' rasters; not j itself. */
void nc_fig_job_free(job *j);

/* A file stem from text: letters, digits, '.', '_' and '-' kept, anything
 * else becomes '_', and so do leading dots (no hidden file); cut to cap - 1
 * characters. */
void nc_fig_sanitize(char *dst, size_t cap, const char *src);

/* Lays out j's figure as a grid of n panels, cols per row (0: up to 3),
 * each w_in x h_in inches unless the spec s gives the figure's size. */
void nc_fig_set_grid(job *j, size_t n, int cols, double w_in, double h_in,
                     const nc_fig_spec *s);

/* Renders job j in each format of its spec (PNG by default) with its
 * metadata (command, the plan's layers it shows and their fits) into set,
 * as <stem>.<ext>; the names go to files[] as nc_figures_render says. */
int nc_fig_render_job(job *j, const char *command, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, const nc_plan *plan, nc_err *err);

/* nc_fig_render_job in two steps, so that several jobs can be drawn at once
 * (each touches only its own job and buffers) and stored in order: draw
 * renders each of j's formats that is also in the mask `formats`
 * (NC_FIGFMT_*) into out[0..3) (PNG, PDF, SVG; out starts zeroed, the
 * others are left alone; the caller frees them with nc_membuf_free), store
 * adds j's formats to set and their names to files[]. PNG alone may be
 * drawn from several threads: cairo numbers the surfaces and images of its
 * PDF and SVG output from one counter of the process, so those must be
 * drawn one job after another to come out the same on every run. */
int nc_fig_draw_job(job *j, const char *command, const nc_plan *plan, unsigned formats,
                    nc_membuf out[3], nc_err *err);
int nc_fig_store_job(const job *j, nc_membuf out[3], struct nc_outset *set, char **files,
                     size_t cap, size_t *nfiles, nc_err *err);

/* ---- fig_draw.c --------------------------------------------------------- */

/* Draws jobs[n] (their panels and rasters ready) in every format they ask
 * for and stores them into set in job order, their names into files[]
 * (nc_figures_render): PNGs by `threads` workers (0: one per CPU), at
 * most two jobs a thread ahead of the storing when only PNGs are asked
 * for; with PDF or SVG, every PNG first, then each PDF and SVG in order
 * (cairo numbers their elements from one counter of the process). */
int nc_fig_draw_all(job **jobs, size_t n, const nc_plan *plan, const char *command, int threads,
                    struct nc_outset *set, char **files, size_t cap, size_t *nfiles, nc_err *err);

/* ---- fig_panels.c ------------------------------------------------------- */

/* Each fills panel p of job j (title, labels, ranges, curves, marks,
 * legend) for one figure kind; the density raster, if the kind has one, is
 * the driver's. Those returning bool give false when out of memory (j->oom
 * may also be set); those returning int, 0 or an NC_E* code with err set. */

/* The value below which a share q of the layer's |x| lies, over the
 * points of its fits (the raw points or the bins of x, fit_data; every
 * k-th of them when there are more than 32768), cached in j->xq for
 * q = 0.995; NaN without points. */
double nc_fig_abs_quantile(job *j, const nc_plan_layer *pl, double q);

/* scatter (and each panel of scatter-grid, brief: shorter fit labels) */
bool nc_fig_scatter_panel(job *j, const nc_plan_layer *pl, nc_panel *p, bool brief);
bool nc_fig_jacobian_panel(job *j, const nc_plan_layer *pl, nc_panel *p);
bool nc_fig_by_token_panel(job *j, const nc_plan_layer *pl, nc_panel *p);
/* by-channel, highlighting the first k of the layer's top channels */
bool nc_fig_by_channel_panel(job *j, const nc_plan_layer *pl, nc_panel *p, size_t k);
bool nc_fig_outlier_panel(job *j, const nc_plan_layer *pl, nc_panel *p);
/* ---- fig_grid.c --------------------------------------------------------- */

/* Chooses the scatter-grid of job j (figure size, rows, columns, the
 * panels shown) from the panels all[nsel] of its selected layers (built,
 * in order): the positions in all[] of the panels shown into pick[], their
 * number into *npick; a note when not all are. 0 or NC_ENOMEM. */
int nc_fig_grid_shape(job *j, const nc_panel *all, size_t nsel, size_t *pick, size_t *npick,
                      nc_err *err);

/* ---- fig_depth.c -------------------------------------------------------- */

/* alpha-std over the plan layers sel[nsel]; NC_EINVAL when none has a DyT fit */
int nc_fig_alpha_std_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                           nc_panel *p, nc_err *err);
/* alpha-depth: panels p[0] (alpha) and p[1] (C); NC_EINVAL when no layer
 * has a DyT or DyISRU fit */
int nc_fig_alpha_depth_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                             nc_panel *p, nc_err *err);
/* swap-depth: the swap test's loss change per layer and surrogate (the
 * plan's swap results); NC_EINVAL when no selected layer has any */
int nc_fig_swap_depth_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                            nc_panel *p, nc_err *err);
/* tanh-family, with the alphas of j's spec */
int nc_fig_tanh_panel(job *j, nc_panel *p, nc_err *err);

#endif
