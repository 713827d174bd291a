/*
 * dropin.c - the drop-in parameters of one layer (dropin.h;
 * docs/dropin.md): the fits (channel.c's per-channel machinery, weighted
 * by w_i^2 where the layer has a weight that is not one value), their
 * composition with the affine part in float32, and one pass for the exact
 * RMSEs of the written parameters.
 *
 * Legend: N tokens, d channels; t a visited token, i a channel; x the
 * input, y = (x - c_t) inv_t the norm's output before the affine part,
 * z = w_i y + b_i the layer's output recomputed, r the real output; W_i,
 * B_i and theta the written (float32) weight, bias and alpha or C, and
 * f = W_i g(theta, x) + B_i. Accumulators are per shard and merged in
 * shard order (core/par.h), so results do not depend on the thread count.
 *
 * Left out: files and JSON (report/dropin_out.c); alpha0 (roles.c).
 */
#include "analysis/dropin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/codetab.h"
#include "analysis/layer_internal.h"
#include "core/sum.h"
#include "core/vmath.h"
#include "util/clock.h"

static const nc_chan_kind KIND[NC_DROPIN_COUNT] = {NC_CHAN_TANH, NC_CHAN_TANH, NC_CHAN_ISRU};

const char *nc_dropin_name(nc_dropin_kind k)
{
    static const char *const names[NC_DROPIN_COUNT] = {"dyt", "dyt_alpha0", "dyisru"};
    return k < NC_DROPIN_COUNT ? names[k] : "?";
}

const char *nc_dropin_param(nc_dropin_kind k)
{
    return k == NC_DROPIN_DYISRU ? "C" : "alpha";
}

void nc_dropin_free(nc_dropin *dr)
{
    if (!dr)
        return;
    for (int k = 0; k < NC_DROPIN_COUNT; k++) {
        free(dr->fit[k].weight);
        free(dr->fit[k].bias);
    }
    memset(dr, 0, sizeof *dr);
}

/* ============================================================== the pass */

typedef struct rmse_acc {
    nc_sum rec[NC_DROPIN_COUNT], real[NC_DROPIN_COUNT];
} rmse_acc;

typedef struct rmse_ctx {
    const run *r;
    const double *w, *b;            /* [d] the layer's affine part, or NULL (1, 0) */
    const nc_tensor *real;          /* or NULL */
    bool ok[NC_DROPIN_COUNT];
    double theta[NC_DROPIN_COUNT];  /* the written alpha or C */
    const double *W[NC_DROPIN_COUNT], *B[NC_DROPIN_COUNT]; /* [d] the written weight, bias */
    const double *tab[NC_DROPIN_COUNT]; /* 16-bit input: g by code (codetab.h), or NULL */
    rmse_acc acc[NC_SHARDS];
} rmse_ctx;

/* out[i] = T[code[i]] for i < n */
NC_VM_INLINE void lookup(const double *restrict T, const uint16_t *restrict code, size_t n,
                         double *restrict out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = T[code[i]];
}

/* g(theta, x) as the files' formulas say it: tanh(alpha x) (nc_tanh, as
 * nc_tanh_run), x / sqrt(x^2 + C) */
static double g_of(nc_chan_kind kind, double theta, double x)
{
    return kind == NC_CHAN_TANH ? nc_tanh(theta * x) : x / sqrt(x * x + theta);
}

/* g[i] = x[i] / sqrt(x[i]^2 + C): g_of's DyISRU, vectorised */
NC_VM_INLINE void isru_row(double C, const double *restrict x, size_t n, double *restrict g)
{
    for (size_t i = 0; i < n; i++)
        g[i] = x[i] / sqrt(x[i] * x[i] + C);
}

/* z[i] = w[i] z[i] + b[i] (w or b NULL: 1, 0), in loops that vectorise */
NC_VM_INLINE void affine_row(const double *restrict w, const double *restrict b, size_t n,
                             double *restrict z)
{
    if (w && b)
        for (size_t i = 0; i < n; i++)
            z[i] = w[i] * z[i] + b[i];
    else if (w)
        for (size_t i = 0; i < n; i++)
            z[i] = w[i] * z[i];
    else if (b)
        for (size_t i = 0; i < n; i++)
            z[i] = z[i] + b[i];
}

/* sum_i (v_i - W_i g_i - B_i)^2 over a row */
NC_VM_INLINE double row_sse(const double *restrict v, const double *restrict W,
                            const double *restrict B, const double *restrict g, size_t n)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++) {
            double e = v[i + l] - (W[i + l] * g[i + l] + B[i + l]);
            s[l] += e * e;
        }
    for (int l = 0; i < n; i++, l++) {
        double e = v[i] - (W[i] * g[i] + B[i]);
        s[l] += e * e;
    }
    return nc_lanes_total(s);
}

/* Per used token: z = w y + b, the real output r, and for each written
 * surrogate the squared errors of f against both. scratch: [3d]. */
NC_VMATH_CLONES static void rmse_block(void *vctx, int shard, size_t t0, size_t nt,
                                       const double *rows, const uint16_t *codes, void *scratch)
{
    rmse_ctx *ctx = vctx;
    const run *r = ctx->r;
    const size_t d = r->d;
    rmse_acc *a = &ctx->acc[shard];
    double *z = scratch, *rr = z + d, *g = rr + d;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (r->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double c = r->centre[t], inv = r->inv[t];
        for (size_t i = 0; i < d; i++)
            z[i] = (x[i] - c) * inv;
        affine_row(ctx->w, ctx->b, d, z);
        if (ctx->real)
            nc_tensor_rows(ctx->real, r->tokens ? r->tokens[t] : t, 1, rr);
        for (int f = 0; f < NC_DROPIN_COUNT; f++) {
            if (!ctx->ok[f])
                continue;
            if (ctx->tab[f] && codes)
                lookup(ctx->tab[f], codes + k * d, d, g);
            else if (KIND[f] == NC_CHAN_TANH)
                nc_tanh_run(ctx->theta[f], x, d, g);
            else
                isru_row(ctx->theta[f], x, d, g);
            nc_sum_add(&a->rec[f], row_sse(z, ctx->W[f], ctx->B[f], g, d));
            if (ctx->real)
                nc_sum_add(&a->real[f], row_sse(rr, ctx->W[f], ctx->B[f], g, d));
        }
    }
}

/* For a 16-bit input with enough points: g of each written surrogate by
 * code into mem [NC_DROPIN_COUNT * 65536] (owned by the caller). */
static int rmse_tables(rmse_ctx *ctx, const nc_layer_result *res, const nc_tensor *x,
                       double **mem, nc_err *err)
{
    *mem = NULL;
    if (!nc_codetab_wanted(x->dtype, res->points))
        return 0;
    nc_codetab_span span;
    double amax = fmax(fabs(res->stats.min), fabs(res->stats.max));
    if (nc_codetab_span_make(x->dtype, amax, &span) ||
        !(*mem = malloc(NC_DROPIN_COUNT * 65536 * sizeof **mem))) {
        nc_codetab_span_free(&span);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the drop-in tables",
                          res->name);
    }
    for (int f = 0; f < NC_DROPIN_COUNT; f++) {
        if (!ctx->ok[f])
            continue;
        double *T = *mem + (size_t)f * 65536;
        for (int h = 0; h < 2; h++)
            for (uint32_t c = span.lo[h]; c < span.hi[h]; c++)
                T[c] = g_of(KIND[f], ctx->theta[f], span.x[c]);
        ctx->tab[f] = T;
    }
    nc_codetab_span_free(&span);
    return 0;
}

/* The RMSEs of the written parameters (one pass). */
static int rmse_pass(run *r, const nc_dropin_spec *spec, const nc_layer_result *res,
                     nc_dropin *out, nc_err *err)
{
    const size_t d = r->d;
    rmse_ctx *ctx = calloc(1, sizeof *ctx);
    double *wb = malloc(2 * NC_DROPIN_COUNT * d * sizeof *wb), *tables = NULL;
    int rc = 0;
    if (!ctx || !wb) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the drop-in pass", spec->name);
        goto out;
    }
    *ctx = (rmse_ctx){.r = r, .w = r->weight, .b = r->bias, .real = spec->y_real};
    for (int f = 0; f < NC_DROPIN_COUNT; f++) {
        const nc_dropin_fit *F = &out->fit[f];
        if (!(ctx->ok[f] = F->ok))
            continue;
        double *W = wb + (size_t)(2 * f) * d, *B = W + d;
        for (size_t i = 0; i < d; i++) {
            W[i] = F->weight[i];
            B[i] = F->bias[i];
        }
        ctx->W[f] = W;
        ctx->B[f] = B;
        ctx->theta[f] = F->param32;
    }
    if ((rc = rmse_tables(ctx, res, spec->x, &tables, err)))
        goto out;
    r->pass.scratch_bytes = 3 * d * sizeof(double);
    r->pass.codes = tables != NULL;
    nc_progress_begin(spec->progress, spec->name, "drop-in", (uint64_t)(r->nt * d));
    rc = nc_pass_run(&r->pass, rmse_block, ctx, err);
    r->pass.codes = false;
    if (rc)
        goto out;
    out->passes++;
    for (int f = 0; f < NC_DROPIN_COUNT; f++) {
        nc_sum rec = {0}, real = {0};
        for (int s = 0; s < NC_SHARDS; s++) {
            nc_sum_merge(&rec, &ctx->acc[s].rec[f]);
            nc_sum_merge(&real, &ctx->acc[s].real[f]);
        }
        out->fit[f].rmse_rec = ctx->ok[f] ? sqrt(nc_sum_get(&rec) / (double)out->points) : NAN;
        out->fit[f].rmse_real = ctx->ok[f] && spec->y_real
                                    ? sqrt(nc_sum_get(&real) / (double)out->points)
                                    : NAN;
    }
out:
    free(tables);
    free(wb);
    free(ctx);
    return rc;
}

/* ============================================================== the fits */

/* Composes fr's gamma_i, beta_i (pc [2d]) with the affine part into F's
 * float32 weight and bias; F->ok when every written number is finite. */
static int compose(const run *r, const double *pc, double param, nc_dropin_fit *F,
                   nc_err *err)
{
    const size_t d = r->d;
    F->param = param;
    F->param32 = (float)param;
    if (!(F->weight = malloc(d * sizeof *F->weight)) || !(F->bias = malloc(d * sizeof *F->bias)))
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", r->spec->name);
    bool finite = isfinite(F->param32) && F->param32 > 0;
    for (size_t i = 0; i < d; i++) {
        double w = r->weight ? r->weight[i] : 1.0, b = r->bias ? r->bias[i] : 0.0;
        F->weight[i] = (float)(w * pc[i]);
        F->bias[i] = (float)(w * pc[d + i] + b);
        finite = finite && isfinite(F->weight[i]) && isfinite(F->bias[i]);
    }
    F->ok = finite;
    if (!finite)
        snprintf(F->status, sizeof F->status, "not written: a parameter is beyond the float32 "
                 "range (%.17g, or a weight or bias of its channels)", param);
    return 0;
}

/* A fitted surrogate (DyT or DyISRU) from theta0, weighted by w2 (or
 * NULL), into F; with X (the alpha0 surrogate), its first pass over all
 * tokens also gives DyT's gamma_i, beta_i at alpha0 (channel.c). */
static int fit_one(run *r, const nc_layer_result *res, nc_chan_kind kind, const double *w2,
                   double theta0, nc_dropin_fit *F, nc_dropin *out, nc_dropin_fit *X,
                   nc_err *err)
{
    nc_fit_result fr = {0};
    double amax = fmax(fabs(res->stats.min), fabs(res->stats.max)), xS;
    /* the rounded alpha0: the file's value, so that weight and bias are the
     * least-squares ones for what is written */
    double a0 = (float)out->alpha0.value, *xpc = X ? malloc(2 * r->d * sizeof *xpc) : NULL;
    if (X && !xpc)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", r->spec->name);
    int rc = nc_chan_fit(r, kind, w2, theta0, amax, res->points, a0, xpc, &xS, &fr,
                         &out->passes, err);
    if (!rc) {
        /* unweighted for a weight of one value c: sum_i c^2 SSE_i = c^2 S */
        F->objective = (w2 || !r->weight ? 1.0 : r->weight[0] * r->weight[0]) * fr.objective;
        F->iterations = fr.iterations;
        F->converged = fr.converged;
        snprintf(F->status, sizeof F->status, "%s", fr.status);
        rc = compose(r, fr.params.pc, fr.params.p[0], F, err);
    }
    if (!rc && X) {
        X->objective = NAN;
        X->converged = true;
        snprintf(X->status, sizeof X->status, "ok");
        rc = compose(r, xpc, out->alpha0.value, X, err);
    }
    free((double *)fr.params.pc);
    free(xpc);
    return rc;
}

/* DyT with alpha fitted: the dyt_per_channel fit when the weights do not
 * change it (no weight, or one value), else a weighted fit from its alpha. */
static int fit_dyt(run *r, const nc_layer_result *res, const double *w2, bool weighted,
                   nc_dropin *out, nc_err *err)
{
    const nc_fit_result *pc = &res->fits[NC_FIT_DYT_PER_CHANNEL];
    nc_dropin_fit *F = &out->fit[NC_DROPIN_DYT];
    if (!weighted && pc->ok && pc->params.pc) {
        /* sum_i c^2 SSE_i = c^2 S: the same minimum */
        F->objective = (w2 ? w2[0] : 1.0) * pc->objective;
        F->converged = pc->converged;
        snprintf(F->status, sizeof F->status, "%s", pc->status);
        return compose(r, pc->params.pc, pc->params.p[0], F, err);
    }
    double a0 = pc->ok ? pc->params.p[0]
                : res->fits[NC_FIT_DYT].params.p[0] > 0
                    ? res->fits[NC_FIT_DYT].params.p[0] /* fitted, if only to seed Derf */
                    : nc_dyt_theory_params(res->norm, res->stats.rho, res->d).p[0];
    return fit_one(r, res, NC_CHAN_TANH, weighted ? w2 : NULL, a0, F, out, NULL, err);
}

static int fit_dyisru(run *r, const nc_layer_result *res, const double *w2, bool weighted,
                      nc_dropin *out, nc_err *err)
{
    const nc_fit_result *fa = &res->fits[NC_FIT_DYISRU_FREE], *fb = &res->fits[NC_FIT_DYISRU];
    double C0 = fa->ok && fa->params.p[0] > 0   ? fa->params.p[0]
                : fb->ok && fb->params.p[0] > 0 ? fb->params.p[0]
                                                : nc_dyisru_theory_params(res->norm,
                                                                          res->stats.rho,
                                                                          res->d).p[0];
    return fit_one(r, res, NC_CHAN_ISRU, weighted ? w2 : NULL, C0, &out->fit[NC_DROPIN_DYISRU],
                   out, &out->fit[NC_DROPIN_DYT_ALPHA0], err);
}

/* Why a layer has nothing to fit, or NULL. */
static const char *nothing_to_fit(const nc_layer_result *res)
{
    if (res->points == 0)
        return "not computed: no usable token";
    if (!isfinite(res->stats.std) || !isfinite(res->stats.rms))
        return "not computed: input beyond the range of pooled double sums (rescale it)";
    if (res->stats.tokens_used < 3)
        return "not computed: fewer than 3 usable tokens (two points per channel are fitted "
               "exactly at any alpha)";
    return NULL;
}

int nc_dropin_run(const nc_dropin_spec *spec, const nc_layer_result *res, nc_dropin *out,
                  nc_err *err)
{
    memset(out, 0, sizeof *out);
    const size_t d = res->d;
    double t0 = nc_now_s();
    out->d = d;
    out->points = res->points;
    out->has_weight = spec->weight != NULL;
    out->has_bias = spec->bias != NULL;
    out->has_real = spec->y_real != NULL;
    out->alpha0 = spec->alpha0;
    const char *why = nothing_to_fit(res);
    if (why) {
        snprintf(out->status, sizeof out->status, "%s", why);
        return 0;
    }
    nc_layer_spec ls;
    nc_layer_spec_defaults(&ls);
    ls.name = spec->name;
    ls.x = spec->x;
    ls.progress = spec->progress;
    run r = {.spec = &ls, .N = res->N, .d = d, .nt = res->tok.nt, .tokens = res->tok.index,
             .centre = res->tok.centre, .inv = res->tok.inv, .status = res->tok.status,
             .pass = nc_layer_pass(res, spec->x, spec->threads, spec->progress)};
    double *ab = malloc(3 * d * sizeof *ab), *w2 = NULL; /* weight, bias, weight^2 */
    int rc = ab ? 0 : nc_err_set(err, NC_ENOMEM, "%s: out of memory", spec->name);
    if (!rc) {
        w2 = ab + 2 * d;
        r.weight = spec->weight ? ab : NULL;
        r.bias = spec->bias ? ab + d : NULL;
        if (r.weight)
            nc_tensor_elems(spec->weight, 0, d, r.weight);
        if (r.bias)
            nc_tensor_elems(spec->bias, 0, d, r.bias);
        bool finite = true;
        for (size_t i = 0; i < d; i++) {
            w2[i] = r.weight ? r.weight[i] * r.weight[i] : 1.0;
            out->weighted = out->weighted || w2[i] != w2[0];
            finite = finite && isfinite(w2[i]) && (!r.bias || isfinite(r.bias[i]));
        }
        if (!finite) {
            snprintf(out->status, sizeof out->status, "not computed: the layer's weight or "
                     "bias has non-finite values");
            free(ab);
            return 0;
        }
    }
    double t1 = nc_now_s();
    if (!rc && !(rc = fit_dyt(&r, res, r.weight ? w2 : NULL, out->weighted, out, err)))
        rc = fit_dyisru(&r, res, w2, out->weighted, out, err);
    double t2 = nc_now_s();
    if (!rc)
        rc = rmse_pass(&r, spec, res, out, err);
    out->fits_s = t2 - t1;
    out->rmse_s = nc_now_s() - t2;
    nc_progress_end(spec->progress);
    free(ab);
    if (rc) {
        nc_dropin_free(out);
        return rc;
    }
    out->done = true;
    out->time_s = nc_now_s() - t0;
    return 0;
}
