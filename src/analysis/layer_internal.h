/*
 * layer_internal.h - what the files of the layer analysis share (internal
 * to src/analysis/layer*.c and src/analysis/channel.c): the state of one
 * analysis and the two stages that live outside layer.c.
 *
 *   layer.c       the pipeline (nc_layer_analyze): the stats, bins and
 *                 verify passes, spec defaults, amplitude rules, results
 *   layer_fits.c  the fits on the bins or raw points (no pass over the data)
 *   channel.c     DyT with per-channel gamma_i, beta_i: exact Halley passes
 *   layer_verify.c the verify pass: exact errors of every fit
 *
 * Legend as in layer.c: N tokens, d channels, t a visited token.
 *
 * Left out: everything a caller outside the module may use (layer.h).
 */
#ifndef NC_LAYER_INTERNAL_H
#define NC_LAYER_INTERNAL_H

#include <stddef.h>

#include "analysis/boot.h"
#include "analysis/fit.h"
#include "analysis/layer.h"
#include "core/par.h"
#include "util/err.h"

/* State shared by the passes of one analysis. */
typedef struct run {
    const nc_layer_spec *spec;
    size_t N, d, nt;       /* nt: tokens visited */
    const size_t *tokens;  /* the sample (NULL: all) */
    double *centre, *inv;  /* [nt] per-token centre and 1/scale */
    unsigned char *status; /* [nt] nc_token_status */
    double *tmean, *tvar;  /* [nt] each (one block at tmean): the token's mean and
                            * population variance (NaN: non-finite token) */
    double *weight, *bias; /* [d] affine part, or NULL */
    nc_pass pass;
} run;

/* The affine baseline's exact sums from the bins pass, over all used
 * points, with x centred by the input mean xmean: sum (x - xmean)^2,
 * sum (x - xmean) y and sum y. */
typedef struct affine_sums {
    double sxx, sxy, sy;
    double xmean;
} affine_sums;

/* layer_fits.c: every requested fit but the per-channel one, into
 * res->fits, on the fit points: bins (the x-ordered nonempty bins, weighted)
 * and raw (the raw points; n = 0 when the layer is binned), coarse to fine
 * (layer_fits.c); xs is the x scale of the scans (the input's std); the
 * affine baseline is closed-form from aff.
 * DyT is fitted when Derf or the per-channel fit needs it, even if not
 * requested itself. Needs res->points and res->stats.rho. Errors as fit.h. */
int nc_layer_run_fits(const run *r, nc_layer_result *res, const nc_points *bins,
                      const nc_points *raw, double xs, const affine_sums *aff, nc_err *err);

/* channel.c: the function of a per-channel fit, g(theta, x) =
 * tanh(alpha x) (NC_CHAN_TANH, theta = alpha) or x / sqrt(x^2 + C)
 * (NC_CHAN_ISRU, theta = C). */
typedef enum nc_chan_kind { NC_CHAN_TANH, NC_CHAN_ISRU } nc_chan_kind;

/* g(theta, x), as every per-channel pass evaluates it (the same bits). */
double nc_chan_g(nc_chan_kind kind, double theta, double x);

/* channel.c: f_i(x) = gamma_i g(theta, x) + beta_i with one theta, fitted
 * by exact Halley passes over r's tokens from theta0 (a strided token
 * sample first when the layer is large) to the minimum of sum_i w_i SSE_i
 * (w[d] the channel weights, or NULL: all 1); fills fr (params.p[0] =
 * theta, params.pc = gamma_i then beta_i [2d] owned by fr afterwards,
 * objective, iterations = passes made, converged, status) and adds the
 * passes made to *passes. With xpc, the first pass over all tokens also
 * sums tanh(xtheta x) (no extra pass): gamma_i, beta_i of DyT at that
 * fixed alpha into xpc[2d] (gamma_i, then beta_i) and its unweighted
 * objective sum_i SSE_i into *xS. amax (the largest finite |x|) and points
 * (the layer's) decide whether a 16-bit input's g is looked up by code
 * (codetab.h). A fit that does not converge is a status in fr, not an
 * error; errors: NC_ENOMEM and those of nc_pass_run. */
int nc_chan_fit(run *r, nc_chan_kind kind, const double *w, double theta0, double amax,
                size_t points, double xtheta, double *xpc, double *xS, nc_fit_result *fr,
                int *passes, nc_err *err);

/* channel.c: DyT with per-channel gamma_i, beta_i by exact Halley passes
 * over r's tokens, starting from alpha0 (the pooled DyT fit's alpha); fills
 * fr (params.pc owned by fr afterwards, iterations = passes made) and adds
 * the passes made to *passes. amax (the largest finite |x|) and points (the
 * layer's) decide whether a 16-bit input's tanh is looked up by code
 * (codetab.h). Sets r->pass.scratch_bytes. A fit that does not converge is
 * a status in fr, not an error; errors: NC_ENOMEM and those of
 * nc_pass_run. */
int nc_layer_fit_channel(run *r, double alpha0, double amax, size_t points, nc_fit_result *fr,
                         int *passes, nc_err *err);

/* The token bootstrap's block sums (layer_boot.c, boot.h): per block of
 * tokens, the sums over its used points (or tokens) of these quantities. */
enum {
    BQ_N,                              /* points */
    BQ_SST,                            /* sum (y - ymean)^2 */
    BQ_SDEV,                           /* sum (y - ymean) */
    BQ_SSE,                            /* sum (y - f)^2 by fit id, then the two
                                        * per-token theory curves */
    BQ_GDYT = BQ_SSE + NC_FIT_COUNT + 2, /* DyT's scores sum r df/dp, p = alpha, gamma,
                                        * beta, r = y - f */
    BQ_GLIN = BQ_GDYT + 3,             /* the affine map's: sum r x, sum r */
    BQ_SCALE = BQ_GLIN + 2,            /* sum of the used tokens' scales */
    BQ_TOK,                            /* used tokens */
    BQ_XN,                             /* values of finite tokens */
    BQ_X1,                             /* their sum (x - mean) */
    BQ_X2,                             /* their sum (x - mean)^2 */
    BQ_FROB,                           /* sum ||J_t||_F^2 (Jacobian) */
    BQ_NUM,                            /* sum num_t by fit id (Jacobian, nc_layer_jac) */
    BQ_COUNT = BQ_NUM + NC_FIT_COUNT
};

/* The blocks of r's layer (spec token_block over N tokens). */
nc_boot_blocks nc_layer_boot_blocks(const run *r);

/* layer_boot.c: the token bootstrap (res->boot) from res->boot.sums (the
 * verify pass's block sums, [blocks][BQ_COUNT]) and the per-token arrays of
 * r and res; a status, not an error, when it cannot run. Errors:
 * NC_ENOMEM. */
int nc_layer_boot_run(const run *r, nc_layer_result *res, nc_err *err);

/* layer_verify.c: the verify pass over r's tokens: exact SSE, RMSE, R^2,
 * max and mean absolute error of every fit in res->fits that is ok, at its
 * parameters; res->y_sst; DyT's saturation shares (NaN without DyT); with
 * r->spec->jacobian, the Jacobian diagonal's sums into res->jac (layer.h);
 * adds one to res->passes. Needs res->points > 0 and res->y_mean. Errors:
 * NC_ENOMEM and those of nc_pass_run. */
int nc_layer_verify(run *r, nc_layer_result *res, nc_err *err);

#endif
