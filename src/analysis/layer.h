/*
 * layer.h - everything normcmp computes for one normalization layer.
 *
 * A layer is a tensor of inputs x [N, d] with its norm (LayerNorm or
 * RMSNorm, eps), and optionally the real output the model produced, the
 * affine weight and bias, and upstream gradients. nc_layer_analyze runs the
 * streaming passes (docs/internals.md "How it computes") over the (mapped) input:
 *
 *   stats    per-token centre and scale (the only state later passes need),
 *            pooled input statistics, per-channel magnitudes
 *   bins     y = (x - c_t) / scale_t recomputed; per-bin sums of x and y
 *            (or the raw points, for small layers), the affine baseline's
 *            sums, per-channel sums, the real-output check
 *   fits     on the bins: DyT, DyISRU (fixed and free scale), Derf, the
 *            theory curves, the affine baseline (fit.h); no data pass
 *   channel  exact Halley passes for DyT with per-channel gamma_i, beta_i
 *   verify   exact SSE, R^2, max and mean absolute error of every fit at its
 *            parameters, DyT saturation fractions; when asked, the Jacobian
 *            diagonal against every fit's derivative (nc_layer_jac), from
 *            the same evaluation of each fit
 *
 * Memory is O(N + bins * shards + d * shards), never O(N * d) (except the
 * raw points of a layer small enough to fit exactly, bounded by
 * max_exact_points). Results do not depend on the thread count.
 */
#ifndef NC_LAYER_H
#define NC_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/amp.h"
#include "analysis/boot.h"
#include "analysis/surrogate.h"
#include "core/norm.h"
#include "core/par.h"
#include "core/tensor.h"
#include "util/err.h"
#include "util/progress.h"

/* Defaults of the tunables (documented in the docs/config.md). */
#define NC_DEFAULT_BINS 32768            /* upper bound on bins of x */
#define NC_DEFAULT_MAX_EXACT ((size_t)1 << 18) /* polish on raw points up to this many */
#define NC_TOP_CHANNELS 8                /* outlier channels reported */

typedef struct nc_layer_spec {
    const char *name;          /* label in the report */
    nc_norm_kind norm;
    double eps;
    const nc_tensor *x;        /* input [N, d], a float tensor */
    const nc_tensor *y_real;   /* optional: the real output, after the affine part, [N, d] */
    const nc_tensor *weight;   /* optional: affine weight [d] */
    const nc_tensor *bias;     /* optional: affine bias [d] */
    bool fit[NC_FIT_COUNT];    /* which fits to run */
    nc_amp amp_dyt;            /* DyT's gamma (default free) */
    nc_amp amp_dyisru;         /* the "dyisru" fit's scale (default auto) */
    nc_amp amp_derf;           /* Derf's gamma (default free) */
    size_t sample_tokens;      /* 0: all tokens; else a seeded random subset */
    uint64_t seed;
    size_t max_bins;           /* 0: NC_DEFAULT_BINS */
    size_t max_exact_points;   /* 0: NC_DEFAULT_MAX_EXACT */
    int threads;               /* 0: online CPUs */
    bool jacobian;             /* the verify pass also gathers the Jacobian
                                * diagonal's per-token sums (nc_layer_jac) */
    size_t boot_replicates;    /* token bootstrap replicates (boot.h; 0: none) */
    size_t token_block;        /* tokens per sequence: the bootstrap's blocks (0: 1) */
    nc_progress *progress;     /* optional */
} nc_layer_spec;

/* A spec with the defaults: every fit, DyT/Derf amplitude free, DyISRU auto. */
void nc_layer_spec_defaults(nc_layer_spec *spec);

typedef struct nc_input_stats {
    size_t tokens;            /* tokens visited (N, or the sample) */
    size_t tokens_used;       /* tokens with a defined output: in the fits */
    size_t nonfinite_tokens;  /* left out: a NaN or infinity among their values */
    size_t nonfinite_values;  /* how many values those were */
    size_t zero_scale_tokens; /* left out: scale 0 (constant with eps 0, or all zero) */
    double mean, std, rms;    /* over all values of finite tokens */
    double min, max;
    double rho;               /* mean token scale over used tokens */
    double scale_std, scale_min, scale_max; /* spread of token scales */
    size_t ntop;              /* channels listed in top[] */
    struct {
        size_t channel;
        double max_abs; /* max |x| in the channel */
        double rms;     /* sqrt(mean x^2) in the channel */
    } top[NC_TOP_CHANNELS];   /* by max |x|, descending */
} nc_input_stats;

typedef struct nc_fit_result {
    bool enabled;          /* requested */
    bool ok;               /* computed (a theory curve or a fit that ran) */
    nc_params params;      /* p[], and pc for dyt_per_channel (owned here: free via result) */
    bool amp_fixed;
    double amp;
    nc_amp_rule amp_rule;  /* concrete rule when fixed */
    int iterations;
    bool converged;
    char status[160];
    double objective;      /* the solver's objective (binned or exact) at params */
    /* exact, over all used points, from the verify pass */
    double sse, rmse, r2, max_abs_err, mean_abs_err;
} nc_fit_result;

/* The per-token state every later pass needs (docs/internals.md "How it computes"): which
 * tokens were visited and, for each, y = (x - centre) * inv. */
typedef struct nc_layer_tokens {
    size_t nt;                 /* tokens visited */
    size_t *index;             /* [nt] their indices in x (ascending), or NULL: all, in order */
    double *centre;            /* [nt] mu (LayerNorm) or 0 (RMSNorm) */
    double *inv;               /* [nt] 1 / scale */
    unsigned char *status;     /* [nt] nc_token_status: only NC_TOKEN_OK tokens have an output */
} nc_layer_tokens;

/* What later stages (sweeps) need to evaluate errors for many parameter
 * values without reading the data again: the fit points with the exact
 * Jacobian diagonal J_ii beside y. For a layer fitted exactly these are the
 * raw points; otherwise the nonempty bins of x (bins.h), each with its
 * count and its means of x, y and J_ii. Sums of squares over all points
 * are kept exactly, so an error evaluated on the bins differs from the
 * exact one only by the binning error (O(h^2), bins.h). */
typedef struct nc_fit_data {
    bool raw;          /* raw points (w NULL) or bins */
    size_t n;          /* points or nonempty bins */
    double *x, *y, *j; /* [n] owned (one block): values or bin means */
    double *w;         /* [n] bin counts, or NULL */
    double points;     /* sum of the weights: points in the layer's fits */
    double syy, sy;    /* exact sum of y^2 and of y over all points */
    double sjj, sj;    /* exact sum of J_ii^2 and of J_ii over all points */
} nc_fit_data;

/* A theory curve with each token's own scale (docs/theory.md): for token t
 * the curve of nc_dyt_theory_params / nc_dyisru_theory_params with rho the
 * token's scale (r_t, s_t), evaluated at u = x - mu_t (LayerNorm) or x
 * (RMSNorm); exact errors over all used points (the verify pass). */
typedef struct nc_theory_token {
    bool ok;
    double sse, rmse, r2, max_abs_err, mean_abs_err;
} nc_theory_token;

/* The exact Jacobian diagonal against every fit's derivative (jacobian.h),
 * gathered by the verify pass when the spec asks for it, so that the
 * Jacobian comparison needs no pass of its own (it still makes one for real
 * gradients). The fits compared are those ok after the fits, in id order:
 * sid[0 .. ns). Per token t (a position in tok; NaN for tokens not used):
 * frob[t] = ||J_t||_F^2, off[t] = sum_{i != j} J_ij^2 and num[k][t] =
 * ||diag(f'_sid[k]) - J_t||_F^2 = sum_i (f'(x_i) - J_ii)^2 + off[t]. Pooled
 * over the used tokens (compensated sums): diag2 = sum J_ii^2, frob2 = sum
 * ||J_t||_F^2, off2 = sum off_t, rad_num = sum ||diag(J_t) y_t||^2, rad_den
 * = sum inv_t^2 ||y_t||^2, ones_den = sum d inv_t^2; by fit id, sse[id] =
 * sum (J_ii - f'(x_i))^2 and maxe[id] its largest |term| (NaN shows). */
typedef struct nc_layer_jac {
    bool done;
    int ns;
    int sid[NC_FIT_COUNT];
    double *frob, *off, *num[NC_FIT_COUNT]; /* [nt] each; one block, owned at frob */
    double diag2, frob2, off2, rad_num, rad_den, ones_den;
    double sse[NC_FIT_COUNT], maxe[NC_FIT_COUNT];
    size_t used;
} nc_layer_jac;

/* The token bootstrap of a layer (boot.h; docs/report.md, "Uncertainty
 * from the tokens"): replicates of every number a verdict compares, from
 * the passes' block sums. Gaps are to the point estimate's best fit among
 * the ranked ones (surrogate.h nc_fit_ranked): R^2 of the best minus R^2 of
 * fit k, and backprop error of fit k minus the best's (both >= 0 at the
 * point estimate). alpha, alpha*gamma and the affine slope come from one
 * Gauss-Newton step per replicate from the fitted parameters (the
 * linearised refit); slope_ratio = alpha gamma rho, the DyT fit's slope at
 * the origin over the theory's 1/rho. */
typedef struct nc_layer_boot {
    bool done;                 /* ran (replicates > 0, enough blocks with a point) */
    bool too_few;              /* asked for, but too few blocks had a usable token */
    char status[160];          /* "ok" or why not */
    size_t replicates, token_block, group, blocks, blocks_used;
    uint64_t seed;
    nc_boot_ci r2[NC_FIT_COUNT];
    int best;                  /* by R^2 (-1: none) */
    double r2_gap[NC_FIT_COUNT];
    nc_boot_ci r2_gap_ci[NC_FIT_COUNT];
    double removed;            /* 1 - SSE_best / SSE_affine: the affine residual removed */
    nc_boot_ci removed_ci;
    int bp_best;               /* by backprop error (-1: none) */
    double bp_gap[NC_FIT_COUNT];
    nc_boot_ci bp[NC_FIT_COUNT], bp_gap_ci[NC_FIT_COUNT];
    nc_boot_ci alpha, gamma, alpha_gamma, affine_slope, rho, std;
    double slope_ratio;
    nc_boot_ci slope_ratio_ci;
    /* [NC_BOOT_REP][replicates], owned: per replicate log(1/std), log alpha,
     * log(alpha gamma), log(affine slope) (NaN where undefined), for the
     * run-level slopes */
    double *rep;
    bool rep_ok;               /* the first nc_boot_run_replicates of each series are finite
                                * (else the run level has no bootstrap for this layer) */
    double *sums;              /* [blocks][BQ_COUNT] (layer_internal.h), owned: the
                                * verify pass's block sums, read by layer_boot.c */
} nc_layer_boot;

/* The replicate series the run level uses (nc_layer_boot.rep). */
enum { NC_BOOT_REP_INV_STD, NC_BOOT_REP_ALPHA, NC_BOOT_REP_ALPHA_GAMMA, NC_BOOT_REP_AFFINE,
       NC_BOOT_REP };

typedef struct nc_layer_result {
    char *name;                /* owned */
    nc_layer_tokens tok;       /* owned */
    nc_norm_kind norm;
    double eps;
    size_t N, d;
    nc_input_stats stats;
    bool has_real;             /* real output checked */
    bool real_affine;          /* the check applied weight/bias */
    double real_max_abs_diff, real_rms_diff;
    double real_max_abs;       /* max |real output| over the used tokens */
    size_t points;             /* points in the fits: tokens_used * d */
    bool binned;               /* fits on bins (else on the raw points) */
    size_t bins, bins_nonempty;
    double y_mean, y_sst;      /* of the (pre-affine) output, for R^2 */
    double y_min, y_max;       /* its range (figures) */
    nc_fit_result fits[NC_FIT_COUNT];
    nc_theory_token theory_token[2]; /* [0] DyT theory, [1] DyISRU theory, per-token scale */
    nc_fit_data data;          /* owned: the fit points, for sweeps */
    double *data_bins;         /* owned: the bins, when data holds the raw points */
    double saturation[3];      /* DyT: share of points with |alpha x| > 1, 2, 3 */
    nc_layer_jac jac;          /* owned: when the spec asked for it (jac.done) */
    nc_layer_boot boot;        /* owned: when the spec asked for it */
    int passes;                /* streaming passes over the input */
    double time_stats_s, time_bins_s, time_fits_s, time_channel_s, time_verify_s, time_boot_s;
} nc_layer_result;

/* A pass over the tokens of a finished analysis (the same visiting order
 * and token sample), ready for nc_pass_run: x is the layer's input. */
nc_pass nc_layer_pass(const nc_layer_result *res, const nc_tensor *x, int threads,
                      nc_progress *progress);

/* Runs the analysis. On success res is filled (free it with
 * nc_layer_result_free); on failure res holds nothing to free. A layer with
 * no usable token is not an error: the fits are marked not ok with a status. */
int nc_layer_analyze(const nc_layer_spec *spec, nc_layer_result *res, nc_err *err);

void nc_layer_result_free(nc_layer_result *res);

#endif
