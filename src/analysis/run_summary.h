/*
 * run_summary.h - the run-level block of a report: what a run over several
 * layers says about the model rather than one layer (docs/report.md, "The
 * run-level block").
 *
 * Per layer: the best surrogate by R^2 and by backprop error (with the
 * surrogates tied with it), the gain over the affine map, fitted alpha
 * against the theory alpha, and a one-line verdict. Across the layers of
 * each model group (below): the
 * log-log OLS slope, with the Pearson correlation of the logs and a
 * t-based 95% confidence interval, of DyT's fitted alpha, of alpha*gamma
 * and of the affine slope against 1/std(x); and a one-line verdict.
 *
 * The block is computed from nc_layer_summary alone, a small struct whose
 * every field is a number of report.json (the field's JSON path is given
 * beside it). `normcmp fit`/`run` fill it from the layer results
 * (nc_layer_summary_from_result); `normcmp merge` fills it from the shard
 * reports' JSON and calls the same nc_run_summary_compute, so a merged
 * report's run-level block is the one an unsharded run would write.
 *
 * Left out: anything that needs the data (all inputs are per-layer
 * summaries); the printing (cli) and the JSON (report).
 *
 * The slopes are per model group (layers sharing d, nc_width_groups): a
 * slope across layers of unrelated models would mix their scales.
 */
#ifndef NC_RUN_SUMMARY_H
#define NC_RUN_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/jacobian.h"
#include "analysis/layer.h"
#include "analysis/surrogate.h"
#include "util/err.h"

/* A layer as the run-level block sees it. NAN marks a number the report
 * does not have (a fit that did not run, no Jacobian block). */
typedef struct nc_layer_summary {
    const char *name;          /* layers[].name (not owned) */
    size_t d;                  /* layers[].dim */
    double std;                /* layers[].input_stats.std */
    double rho;                /* layers[].input_stats.rho */
    double r2[NC_FIT_COUNT];   /* layers[].fits.<fit>.r2 */
    double alpha, gamma;       /* layers[].fits.dyt.alpha, .gamma */
    double theory_alpha;       /* layers[].fits.dyt.theory_alpha = 1/(rho sqrt(d)) */
    double affine_slope;       /* layers[].fits.linear.slope */
    /* layers[].jacobian.surrogates.<fit>.backprop_rel_err (the mean over
     * tokens of the probes' relative backprop error) and its standard
     * error (.backprop_rel_err_se; NAN when the report has none) */
    double bp[NC_FIT_COUNT], bp_se[NC_FIT_COUNT];
} nc_layer_summary;

/* A summary with every number NAN. */
void nc_layer_summary_init(nc_layer_summary *s, const char *name);

/* Fills s from a finished layer (and its Jacobian comparison, or NULL):
 * the same numbers report.json holds. s->name points into res. */
void nc_layer_summary_from_result(const nc_layer_result *res, const nc_jac_result *jac,
                                  nc_layer_summary *s);

/* A log-log regression across layers: OLS of log(y) on log(x) over the
 * layers where both are finite and > 0. */
typedef struct nc_loglog {
    size_t n;                 /* layers used */
    double slope, intercept;  /* log y = intercept + slope log x */
    double r;                 /* Pearson correlation of log x and log y */
    double slope_se;          /* sqrt(SSR / (n - 2) / Sxx); NAN for n < 3 */
    double ci_lo, ci_hi;      /* slope -+ t(0.975, n - 2) slope_se; NAN for n < 3 */
    char status[96];          /* "ok" or why a number is NAN */
} nc_loglog;

/* Best and tied fits of one layer by one criterion. */
typedef struct nc_rank {
    int best;                 /* nc_fit_id, or -1: no candidate */
    double value;             /* its R^2 or backprop error */
    double se;                /* its standard error (NAN: none known) */
    bool tie[NC_FIT_COUNT];   /* fits tied with the best (best itself excluded) */
    size_t nties;
    size_t candidates;        /* fits compared */
} nc_rank;

/* R^2 is exact on the layer's tokens: two fits tie when their R^2 differ
 * by less than this (below what the summary prints). */
#define NC_R2_TIE 1e-4

typedef struct nc_layer_verdict {
    nc_rank by_r2;            /* over the shared-parameter surrogates: every fit but
                               * the affine map and the per-channel DyT */
    nc_rank by_bp;            /* over the same, those with a backprop error */
    bool bp_ties_known;       /* standard errors were there to decide ties */
    double affine_r2;
    double gain_r2;           /* best R^2 - affine R^2 */
    double residual_removed;  /* 1 - (1 - best R^2) / (1 - affine R^2) */
    double alpha_over_theory; /* alpha / theory_alpha */
    char verdict[512];
} nc_layer_verdict;

/* A model group: the layers sharing the width d (the layers of one model
 * do; models of the same width fall into one group). The alpha-std figure
 * groups its layers the same way (nc_width_groups), so its fit line of a
 * group is this group's alpha slope when it shows all the group's layers. */
typedef struct nc_run_group {
    size_t d;
    size_t nlayers;           /* layers in the group */
    size_t *layer;            /* [nlayers] their indices in the run, run order */
    nc_loglog alpha;          /* alpha against 1/std, over the group */
    nc_loglog alpha_gamma;    /* alpha*gamma against 1/std */
    nc_loglog affine;         /* affine slope against 1/std */
    char verdict[512];        /* "d = 256 (3 layers): alpha ~ ...; ..." */
} nc_run_group;

typedef struct nc_run_summary {
    size_t nlayers;
    nc_layer_verdict *layer;  /* [nlayers], owned */
    size_t ngroups;
    nc_run_group *group;      /* [ngroups], owned; in the order of their first layer */
    size_t *group_of;         /* [nlayers], owned: each layer's group */
    size_t saturating;        /* layers whose verdict is "saturating" */
    int most_best_r2;         /* the fit most often best by R^2 (-1: none) */
    size_t most_best_r2_count;
    char verdict[4096];       /* the saturation count, then each group's verdict */
} nc_run_summary;

/* Computes the run-level block of n layers L[0..n) into out (free with
 * nc_run_summary_free). Used by `fit`/`run` (report and summary) and by
 * `merge` (from shard reports). Errors: NC_ENOMEM. */
int nc_run_summary_compute(const nc_layer_summary *L, size_t n, nc_run_summary *out,
                           nc_err *err);

void nc_run_summary_free(nc_run_summary *s);

/* Groups n layers of widths d[0..n) by width: group_of[k] is layer k's
 * group, numbered 0.. in the order of each group's first layer; returns
 * the number of groups. The one grouping of the run-level block and of
 * the alpha-std figure. */
size_t nc_width_groups(const size_t *d, size_t n, size_t *group_of);

/* The log-log regression of y[k] on x[k] (k < n), as described above;
 * fewer than 3 usable points give no slope (NAN, status says why). */
nc_loglog nc_loglog_fit(const double *x, const double *y, size_t n);

/* The p-quantile (0 < p < 1) of Student's t with nu > 0 degrees of freedom
 * (bisection on the regularised incomplete beta function; |error| < 1e-12). */
double nc_t_quantile(double p, double nu);

/* A layer's kind by the share of the affine map's residual the best
 * surrogate removes: "strongly saturating" (>= 1/2), "saturating"
 * (>= 1/10), "near-linear"; or "no fit", "no affine baseline". */
const char *nc_layer_verdict_kind(const nc_layer_verdict *v);

#endif
