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
 * The slopes are per model group (nc_model_groups: layers of one source,
 * norm kind and d, or a group a config names): a slope across layers of
 * unrelated models would mix their scales.
 *
 * Decisions come from the token bootstrap (analysis/boot.h; the layer's
 * numbers in layers[].bootstrap): a fit is "best" only when the 95%
 * interval of its gap to every other ranked fit lies above zero (else the
 * fits inside are a tie), and a layer is "saturating" / "near-linear" only
 * when the interval of the affine residual removed lies wholly on one side
 * of the threshold (else "undecided"). Without a bootstrap the verdict
 * says it shows point estimates only.
 */
#ifndef NC_RUN_SUMMARY_H
#define NC_RUN_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/boot.h"
#include "analysis/groups.h"
#include "analysis/jacobian.h"
#include "analysis/layer.h"
#include "analysis/surrogate.h"
#include "util/err.h"

/* A layer as the run-level block sees it. NAN marks a number the report
 * does not have (a fit that did not run, no Jacobian block). */
typedef struct nc_layer_summary {
    const char *name;          /* layers[].name (not owned) */
    const char *source;        /* layers[].source: the dump or folder it came from (not owned) */
    const char *group;         /* layers[].group: a group a config named, or NULL */
    int norm;                  /* layers[].norm (nc_norm_kind), -1: unknown */
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
    /* the token bootstrap (layers[].bootstrap); boot false: none, and
     * boot_too_few: it was asked for but the layer has too few blocks */
    bool boot, boot_too_few;
    int boot_best;             /* .best_r2.fit */
    double r2_gap_lo[NC_FIT_COUNT];  /* .best_r2.gaps.<fit>.ci95[0] */
    int boot_bp_best;          /* .best_backprop.fit (-1: none) */
    double bp_gap_lo[NC_FIT_COUNT];  /* .best_backprop.gaps.<fit>.ci95[0] */
    double removed_lo, removed_hi;                      /* .residual_removed.ci95 */
    double slope_ratio;        /* alpha gamma rho, from the fits and input_stats */
    double slope_ratio_lo, slope_ratio_hi;              /* .slope_ratio.ci95 */
    double alpha_lo, alpha_hi;                          /* .alpha.ci95 */
    size_t nrep;               /* .run_replicates.n */
    /* the drop-in DyT (docs/dropin.md): RMSE of weight*tanh(alpha x)+bias
     * against the real output and the recomputed one (layers[].dropin.dyt) */
    double dropin_rmse_real, dropin_rmse_rec;
    /* the swap test (docs/swap.md): the loss change when this norm alone is
     * replaced by the drop-in DyT, and its standard error over batches
     * (layers[].swap.dyt); unit borrowed; stale: measured with other
     * drop-in parameters than this run's */
    double swap_delta, swap_delta_se;
    const char *swap_unit;
    bool swap_stale;
    const double *rep[NC_BOOT_REP]; /* .run_replicates series, [nrep] each (not owned) */
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
    bool bp_ties_known;       /* uncertainties were there to decide ties */
    bool boot;                /* decided by the token bootstrap (else point estimates) */
    bool too_few;             /* no bootstrap for too few blocks: nothing decided */
    double affine_r2;
    double gain_r2;           /* best R^2 - affine R^2 */
    double residual_removed;  /* 1 - (1 - best R^2) / (1 - affine R^2) */
    double removed_lo, removed_hi; /* its 95% bootstrap interval (NaN: none) */
    double slope_ratio;       /* alpha gamma rho: DyT's slope at 0 over the theory's 1/rho */
    double slope_ratio_lo, slope_ratio_hi;
    char verdict[1024];
} nc_layer_verdict;

/* A model group: the layers of one source (dump file, shard folder, or the
 * folder of .npy files), norm kind and width d, or those a config puts in
 * one named group. The alpha-std figure groups its layers the same way
 * (nc_model_groups), so its fit line of a group is this group's alpha
 * slope when it shows all the group's layers. */
typedef struct nc_run_group {
    size_t d;
    int norm;                 /* nc_norm_kind of its layers (-1: unknown) */
    const char *source;       /* of its first layer (not owned) */
    const char *name;         /* the config's group name, or NULL */
    size_t nlayers;           /* layers in the group */
    size_t *layer;            /* [nlayers] their indices in the run, run order */
    nc_loglog alpha;          /* alpha against 1/std, over the group */
    nc_loglog alpha_gamma;    /* alpha*gamma against 1/std */
    nc_loglog affine;         /* affine slope against 1/std */
    /* the slopes' token bootstrap: the same regression on each of the
     * layers' paired replicates (nc_layer_summary rep) */
    size_t boot_n;            /* replicates used (0: none) */
    nc_boot_ci boot_alpha, boot_alpha_gamma, boot_affine;
    char verdict[640];        /* "d = 256 (3 layers): alpha ~ ...; ..." */
} nc_run_group;

typedef struct nc_run_summary {
    size_t nlayers;
    nc_layer_verdict *layer;  /* [nlayers], owned */
    size_t ngroups;
    nc_run_group *group;      /* [ngroups], owned; in the order of their first layer */
    size_t *group_of;         /* [nlayers], owned: each layer's group */
    size_t saturating;        /* layers whose verdict is "saturating" (or strongly) */
    size_t near_linear;       /* layers decided "near-linear" */
    size_t undecided;         /* layers whose label the tokens do not decide */
    size_t decided_best;      /* layers with a best fit by R^2 outside every tie */
    int most_best_r2;         /* the fit most often best by R^2 among those (-1: none) */
    size_t most_best_r2_count;
    bool boot;                /* every layer's verdict came from the bootstrap */
    /* the swap test's every-norm-replaced change (DyT), when there is one
     * (nc_run_summary_swap) */
    bool has_swap, swap_stale;
    double swap_all, swap_all_se;
    const char *swap_unit;
    char verdict[4096];       /* the saturation count, then each group's verdict */
} nc_run_summary;

/* Computes the run-level block of n layers L[0..n) into out (free with
 * nc_run_summary_free). Used by `fit`/`run` (report and summary) and by
 * `merge` (from shard reports). Errors: NC_ENOMEM. */
int nc_run_summary_compute(const nc_layer_summary *L, size_t n, nc_run_summary *out,
                           nc_err *err);

void nc_run_summary_free(nc_run_summary *s);

/* Adds the swap test's every-norm-replaced loss change (DyT; se NAN: one
 * batch) to R and to its verdict. unit borrowed. */
void nc_run_summary_swap(nc_run_summary *R, double delta, double se, const char *unit,
                         bool stale);

/* The log-log regression of y[k] on x[k] (k < n), as described above;
 * fewer than 3 usable points give no slope (NAN, status says why). */
nc_loglog nc_loglog_fit(const double *x, const double *y, size_t n);

/* The p-quantile (0 < p < 1) of Student's t with nu > 0 degrees of freedom
 * (bisection on the regularised incomplete beta function; |error| < 1e-12). */
double nc_t_quantile(double p, double nu);

/* A layer's kind by the share of the affine map's residual the best
 * surrogate removes, from its 95% interval: "strongly saturating" (lower
 * end >= 1/2), "saturating" (>= 1/10), "near-linear" (upper end < 1/10),
 * "undecided" (the interval straddles 1/10); without a bootstrap from the
 * point value; or "no fit", "no affine baseline". */
const char *nc_layer_verdict_kind(const nc_layer_verdict *v);

#endif
