/*
 * layer_boot.c - the token bootstrap of one layer (layer.h nc_layer_boot;
 * boot.h; docs/report.md, "Uncertainty from the tokens").
 *
 * The verify pass left, per block of tokens, the sums of layer_internal.h
 * (BQ_*): points, the output's centred sums, each fit's SSE and the scores
 * of DyT and the affine map. This file adds the per-token quantities the
 * earlier passes kept (scales, the tokens' means and variances, the
 * Jacobian's per-token sums), draws the replicates (boot.h) and computes
 * from each replicate's weighted sums:
 *
 *   R^2_k = 1 - SSE_k / SST, SST = sum (y - m)^2 - (sum (y - m))^2 / n
 *   gaps to the best fit, the affine residual removed 1 - SSE_b / SSE_aff
 *   backprop errors sqrt(sum num_k / sum ||J||_F^2) and their gaps
 *   rho = sum scale / tokens, std over the finite tokens' values
 *   DyT's (alpha, gamma, beta) and the affine map's (slope, intercept) by
 *   one Gauss-Newton step from the fitted values: theta + H^-1 (g* - g),
 *   g* the replicate's scores sum r df/dtheta, g the full sample's, H =
 *   sum df/dtheta df/dtheta^T over the fit points (the raw points, or the
 *   bins at their mean x): the first-order refit of the replicate (exact
 *   for the affine map, whose H is the same for every replicate to first
 *   order)
 *
 * The fits' parameters are not refitted in each replicate for the error
 * metrics: an R^2 gap is the difference of two fits' errors at their fitted
 * parameters on resampled tokens; refitting moves each R^2 by O(1/n),
 * below the tokens' own variation.
 *
 * Left out: deciding anything (run_summary.c decides from these numbers).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/layer_internal.h"

/* Replicate series computed for every replicate, then summarised. */
enum {
    RS_R2,                                /* NC_FIT_COUNT */
    RS_R2_GAP = RS_R2 + NC_FIT_COUNT,     /* NC_FIT_COUNT */
    RS_BP = RS_R2_GAP + NC_FIT_COUNT,     /* NC_FIT_COUNT */
    RS_BP_GAP = RS_BP + NC_FIT_COUNT,     /* NC_FIT_COUNT */
    RS_REMOVED = RS_BP_GAP + NC_FIT_COUNT,
    RS_ALPHA,
    RS_GAMMA,
    RS_AG,
    RS_RATIO,
    RS_AFFINE,
    RS_RHO,
    RS_STD,
    RS_COUNT
};

/* The per-token quantities into their blocks' sums. */
static void token_sums(const run *r, const nc_layer_result *res, const nc_boot_blocks *bb,
                       double *S)
{
    const double gm = res->stats.mean, d = (double)r->d;
    const nc_layer_jac *J = &res->jac;
    for (size_t t = 0; t < r->nt; t++) {
        double *row = S + nc_boot_block_of(bb, r->tokens ? r->tokens[t] : t) * BQ_COUNT;
        if (isfinite(r->tmean[t])) {
            double dm = r->tmean[t] - gm;
            row[BQ_XN] += d;
            row[BQ_X1] += d * dm;
            row[BQ_X2] += d * (r->tvar[t] + dm * dm);
        }
        if (r->status[t] != NC_TOKEN_OK)
            continue;
        row[BQ_SCALE] += 1.0 / r->inv[t];
        row[BQ_TOK] += 1.0;
        if (!J->frob)
            continue;
        row[BQ_FROB] += J->frob[t];
        for (int k = 0; k < J->ns; k++)
            row[BQ_NUM + J->sid[k]] += J->num[k][t];
    }
}

/* Solves the symmetric n x n system H x = g (n <= 3) by Cholesky; false
 * when H is not positive definite. */
static bool solve_spd(const double *H, const double *g, int n, double *x)
{
    double L[3][3] = {{0}};
    for (int i = 0; i < n; i++)
        for (int j = 0; j <= i; j++) {
            double s = H[i * n + j];
            for (int k = 0; k < j; k++)
                s -= L[i][k] * L[j][k];
            if (i == j) {
                if (!(s > 0))
                    return false;
                L[i][i] = sqrt(s);
            } else {
                L[i][j] = s / L[j][j];
            }
        }
    double z[3];
    for (int i = 0; i < n; i++) {
        double s = g[i];
        for (int k = 0; k < i; k++)
            s -= L[i][k] * z[k];
        z[i] = s / L[i][i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = z[i];
        for (int k = i + 1; k < n; k++)
            s -= L[k][i] * x[k];
        x[i] = s / L[i][i];
    }
    return true;
}

/* One linearised refit: the parameters' Gauss-Newton matrix over the fit
 * points, the full sample's scores, and which parameters are free. */
typedef struct refit {
    bool ok;
    int n;          /* free parameters */
    int free_[3];   /* their indices in the score columns */
    double H[9];    /* [n][n] */
    double g[3];    /* the full sample's scores of the free parameters */
    double scale[3]; /* a score column times this is the score of the parameter */
} refit;

/* DyT: df/dtheta = (gamma x (1 - T^2), T, 1) at the fit points; gamma is
 * not free when the amplitude is fixed. */
static refit dyt_refit(const nc_layer_result *res, const double *S, size_t nb)
{
    refit R = {0};
    const nc_fit_result *f = &res->fits[NC_FIT_DYT];
    if (!f->ok)
        return R;
    const double alpha = f->params.p[0], gamma = f->params.p[1];
    R.n = 0;
    R.free_[R.n++] = 0;
    if (!f->amp_fixed)
        R.free_[R.n++] = 1;
    R.free_[R.n++] = 2;
    const nc_fit_data *D = &res->data;
    for (size_t k = 0; k < D->n; k++) {
        double w = D->w ? D->w[k] : 1.0, x = D->x[k], T = tanh(alpha * x);
        double J[3] = {gamma * x * (1.0 - T * T), T, 1.0};
        for (int i = 0; i < R.n; i++)
            for (int j = 0; j < R.n; j++)
                R.H[i * R.n + j] += w * J[R.free_[i]] * J[R.free_[j]];
    }
    const double sc[3] = {gamma, 1.0, 1.0};
    for (int i = 0; i < R.n; i++) {
        R.scale[i] = sc[R.free_[i]];
        for (size_t b = 0; b < nb; b++)
            R.g[i] += S[b * BQ_COUNT + BQ_GDYT + R.free_[i]];
        R.g[i] *= R.scale[i];
    }
    R.ok = isfinite(R.H[0]) && gamma != 0;
    return R;
}

/* The affine map: df/dtheta = (x, 1). */
static refit lin_refit(const nc_layer_result *res, const double *S, size_t nb)
{
    refit R = {0};
    if (!res->fits[NC_FIT_LINEAR].ok)
        return R;
    R.n = 2;
    R.free_[0] = 0;
    R.free_[1] = 1;
    R.scale[0] = R.scale[1] = 1.0;
    const nc_fit_data *D = &res->data;
    for (size_t k = 0; k < D->n; k++) {
        double w = D->w ? D->w[k] : 1.0, x = D->x[k];
        R.H[0] += w * x * x;
        R.H[1] += w * x;
        R.H[3] += w;
    }
    R.H[2] = R.H[1];
    for (size_t b = 0; b < nb; b++)
        for (int i = 0; i < 2; i++)
            R.g[i] += S[b * BQ_COUNT + BQ_GLIN + i];
    R.ok = isfinite(R.H[0]);
    return R;
}

/* The replicate's parameters theta + H^-1 (g* - g) into p (all three;
 * those not free keep their fitted value); false when H is singular. */
static bool refit_step(const refit *R, const double *row, int col, const double *theta,
                       double *p)
{
    double dg[3], dt[3];
    for (int i = 0; i < R->n; i++)
        dg[i] = R->scale[i] * row[col + R->free_[i]] - R->g[i];
    if (!R->ok || !solve_spd(R->H, dg, R->n, dt))
        return false;
    for (int i = 0; i < 3; i++)
        p[i] = theta[i];
    for (int i = 0; i < R->n; i++)
        p[R->free_[i]] += dt[i];
    return true;
}

/* The best ranked fit by R^2 (largest) or backprop error (smallest) at the
 * point estimate: v[k] for k < NC_FIT_COUNT, NaN where there is none. */
static int best_of(const double *v, bool larger)
{
    int best = -1;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (nc_fit_ranked((nc_fit_id)k) && isfinite(v[k]) &&
            (best < 0 || (larger ? v[k] > v[best] : v[k] < v[best])))
            best = k;
    return best;
}

/* Everything of one replicate (or of the full sample: the block sums'
 * total) from its weighted sums q into v[RS_COUNT] and rep[NC_BOOT_REP]. */
typedef struct boot_ctx {
    const nc_layer_result *res;
    refit dyt, lin;
    double theta_dyt[3], theta_lin[3];
    bool jac;
} boot_ctx;

static void replicate(const boot_ctx *c, const nc_layer_boot *B, const double *q, double *v,
                      double *rep)
{
    const nc_layer_result *res = c->res;
    for (int k = 0; k < RS_COUNT; k++)
        v[k] = NAN;
    const double n = q[BQ_N], sst = q[BQ_SST] - q[BQ_SDEV] * q[BQ_SDEV] / n;
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        if (!res->fits[k].ok)
            continue;
        v[RS_R2 + k] = 1.0 - q[BQ_SSE + k] / sst;
        if (c->jac && q[BQ_FROB] > 0)
            v[RS_BP + k] = sqrt(q[BQ_NUM + k] / q[BQ_FROB]);
    }
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        if (B->best >= 0 && isfinite(v[RS_R2 + k]))
            v[RS_R2_GAP + k] = v[RS_R2 + B->best] - v[RS_R2 + k];
        if (B->bp_best >= 0 && isfinite(v[RS_BP + k]))
            v[RS_BP_GAP + k] = v[RS_BP + k] - v[RS_BP + B->bp_best];
    }
    if (B->best >= 0 && res->fits[NC_FIT_LINEAR].ok)
        v[RS_REMOVED] = 1.0 - q[BQ_SSE + B->best] / q[BQ_SSE + NC_FIT_LINEAR];
    v[RS_RHO] = q[BQ_SCALE] / q[BQ_TOK];
    double mx = q[BQ_X1] / q[BQ_XN], var = q[BQ_X2] / q[BQ_XN] - mx * mx;
    v[RS_STD] = var > 0 ? sqrt(var) : NAN;
    double p[3];
    if (refit_step(&c->dyt, q, BQ_GDYT, c->theta_dyt, p)) {
        v[RS_ALPHA] = p[0];
        v[RS_GAMMA] = p[1];
        v[RS_AG] = p[0] * p[1];
        v[RS_RATIO] = p[0] * p[1] * v[RS_RHO];
    }
    if (refit_step(&c->lin, q, BQ_GLIN, c->theta_lin, p))
        v[RS_AFFINE] = p[0];
    if (rep) {
        rep[NC_BOOT_REP_INV_STD] = log(1.0 / v[RS_STD]);
        rep[NC_BOOT_REP_ALPHA] = v[RS_ALPHA] > 0 ? log(v[RS_ALPHA]) : NAN;
        rep[NC_BOOT_REP_ALPHA_GAMMA] = v[RS_AG] > 0 ? log(v[RS_AG]) : NAN;
        rep[NC_BOOT_REP_AFFINE] = v[RS_AFFINE] > 0 ? log(v[RS_AFFINE]) : NAN;
    }
}

/* The point estimates the gaps are taken against, and the refits. */
static void setup_ctx(boot_ctx *c, nc_layer_boot *B, const nc_layer_result *res,
                      const double *S, size_t nb)
{
    memset(c, 0, sizeof *c);
    c->res = res;
    c->jac = res->jac.frob != NULL;
    double r2[NC_FIT_COUNT], bp[NC_FIT_COUNT], tot[BQ_COUNT] = {0};
    for (size_t b = 0; b < nb; b++)
        for (int q = 0; q < BQ_COUNT; q++)
            tot[q] += S[b * BQ_COUNT + q];
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        r2[k] = res->fits[k].ok ? res->fits[k].r2 : NAN;
        bp[k] = c->jac && res->fits[k].ok && tot[BQ_FROB] > 0
                    ? sqrt(tot[BQ_NUM + k] / tot[BQ_FROB]) : NAN;
    }
    B->best = best_of(r2, true);
    B->bp_best = best_of(bp, false);
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        B->r2_gap[k] = B->best >= 0 ? r2[B->best] - r2[k] : NAN;
        B->bp_gap[k] = B->bp_best >= 0 ? bp[k] - bp[B->bp_best] : NAN;
    }
    const nc_fit_result *lin = &res->fits[NC_FIT_LINEAR], *dyt = &res->fits[NC_FIT_DYT];
    B->removed = B->best >= 0 && lin->ok ? 1.0 - res->fits[B->best].sse / lin->sse : NAN;
    B->slope_ratio = dyt->ok ? dyt->params.p[0] * dyt->params.p[1] * res->stats.rho : NAN;
    c->dyt = dyt_refit(res, S, nb);
    c->lin = lin_refit(res, S, nb);
    for (int i = 0; i < 3; i++) {
        c->theta_dyt[i] = dyt->ok ? dyt->params.p[i] : NAN;
        c->theta_lin[i] = i < 2 && lin->ok ? lin->params.p[i] : NAN;
    }
}

/* The summaries of the series v [B][RS_COUNT] into B. */
static void summarise(nc_layer_boot *B, const double *v, double *work)
{
    const size_t n = B->replicates;
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        B->r2[k] = nc_boot_summary(v + RS_R2 + k, RS_COUNT, n, work);
        B->r2_gap_ci[k] = nc_boot_summary(v + RS_R2_GAP + k, RS_COUNT, n, work);
        B->bp[k] = nc_boot_summary(v + RS_BP + k, RS_COUNT, n, work);
        B->bp_gap_ci[k] = nc_boot_summary(v + RS_BP_GAP + k, RS_COUNT, n, work);
    }
    B->removed_ci = nc_boot_summary(v + RS_REMOVED, RS_COUNT, n, work);
    B->alpha = nc_boot_summary(v + RS_ALPHA, RS_COUNT, n, work);
    B->gamma = nc_boot_summary(v + RS_GAMMA, RS_COUNT, n, work);
    B->alpha_gamma = nc_boot_summary(v + RS_AG, RS_COUNT, n, work);
    B->slope_ratio_ci = nc_boot_summary(v + RS_RATIO, RS_COUNT, n, work);
    B->affine_slope = nc_boot_summary(v + RS_AFFINE, RS_COUNT, n, work);
    B->rho = nc_boot_summary(v + RS_RHO, RS_COUNT, n, work);
    B->std = nc_boot_summary(v + RS_STD, RS_COUNT, n, work);
}

int nc_layer_boot_run(const run *r, nc_layer_result *res, nc_err *err)
{
    nc_layer_boot *B = &res->boot;
    const nc_layer_spec *spec = r->spec;
    B->replicates = spec->boot_replicates;
    B->seed = spec->seed;
    if (!B->sums) {
        snprintf(B->status, sizeof B->status, "off (0 replicates)");
        return 0;
    }
    const nc_boot_blocks bb = nc_layer_boot_blocks(r);
    B->token_block = bb.token_block;
    B->group = bb.group;
    B->blocks = bb.nb;
    double *S = B->sums;
    token_sums(r, res, &bb, S);
    for (size_t b = 0; b < bb.nb; b++)
        B->blocks_used += S[b * BQ_COUNT + BQ_N] > 0;
    if (B->blocks_used < NC_BOOT_MIN_BLOCKS) {
        B->too_few = true;
        snprintf(B->status, sizeof B->status,
                 "not run: %zu block%s of %zu token%s with a usable token (needs %d): too "
                 "few to tell; dump more sequences", B->blocks_used,
                 B->blocks_used == 1 ? "" : "s", bb.token_block * bb.group,
                 bb.token_block * bb.group == 1 ? "" : "s", NC_BOOT_MIN_BLOCKS);
        return 0;
    }
    const size_t n = B->replicates;
    double *R = malloc(n * BQ_COUNT * sizeof *R), *v = malloc(n * RS_COUNT * sizeof *v);
    double *work = malloc(n * sizeof *work);
    B->rep = malloc(n * NC_BOOT_REP * sizeof *B->rep);
    int rc = 0;
    if (!R || !v || !work || !B->rep) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu bootstrap replicates",
                        spec->name, n);
        goto out;
    }
    if ((rc = nc_boot_resample(S, bb.nb, BQ_COUNT, n, B->seed, R, err)))
        goto out;
    boot_ctx c;
    setup_ctx(&c, B, res, S, bb.nb);
    double rep[NC_BOOT_REP];
    for (size_t k = 0; k < n; k++) {
        replicate(&c, B, R + k * BQ_COUNT, v + k * RS_COUNT, rep);
        for (int j = 0; j < NC_BOOT_REP; j++)
            B->rep[j * n + k] = nc_boot_round(rep[j]);
    }
    summarise(B, v, work);
    B->rep_ok = true;
    for (int j = 0; j < NC_BOOT_REP; j++)
        for (size_t k = 0; k < nc_boot_run_replicates(n); k++)
            B->rep_ok &= isfinite(B->rep[j * n + k]) != 0;
    B->done = true;
    snprintf(B->status, sizeof B->status, "ok");
out:
    free(R);
    free(v);
    free(work);
    if (rc) {
        free(B->rep);
        B->rep = NULL;
    }
    return rc;
}
