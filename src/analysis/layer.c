/*
 * layer.c - the streaming passes over one layer (layer.h): the pipeline of
 * nc_layer_analyze (token sample, stats, bins, fits, per-channel, verify),
 * the stats and bins passes themselves, the spec defaults and the result's
 * lifetime. Read it from nc_layer_analyze at the bottom: each stage is a
 * named function above it.
 *
 * Legend: N tokens, d channels; t indexes visited tokens (positions in the
 * sample when one is drawn), i channels; x the input, y = (x - c_t) * inv_t
 * the norm's output before the affine part (norm.h); shards and blocks as
 * in core/par.h. Every accumulator is per shard and merged in shard order.
 *
 * Left out: the fits on the bins or raw points (layer_fits.c), the
 * per-channel DyT fit's Newton passes (channel.c), the verify pass
 * (layer_verify.c) and the amplitude rules (amp.c); layer_internal.h is
 * what the layer files share. Calls run one way: layer.c calls the others,
 * which call nothing of layer.c.
 */
#include "analysis/layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/bins.h"
#include "analysis/fit.h"
#include "analysis/layer_internal.h"
#include "core/par.h"
#include "core/rng.h"
#include "core/sum.h"
#include "core/v4.h"
#include "core/vmath.h"
#include "util/bigmem.h"
#include "util/clock.h"

void nc_layer_spec_defaults(nc_layer_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->norm = NC_LAYERNORM;
    spec->eps = NC_LAYERNORM_EPS;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        spec->fit[k] = true;
    spec->amp_dyt.rule = NC_AMP_FREE;
    spec->amp_dyisru.rule = NC_AMP_AUTO;
    spec->amp_derf.rule = NC_AMP_FREE;
    spec->seed = 1;
    spec->boot_replicates = NC_BOOT_DEFAULT_REPLICATES;
}

/* ================================================================ stats */

typedef struct stats_acc {
    double n, mean, m2;        /* Chan et al. merge over finite tokens' values */
    nc_sum sq;                 /* sum x^2 */
    double min, max;
    size_t nonfinite_tokens, nonfinite_values, zero_scale, used;
    nc_sum scale_sum, scale_sq;
    double scale_min, scale_max;
    double *ch_sq, *ch_max;    /* [d] */
} stats_acc;

typedef struct stats_ctx {
    run *r;
    stats_acc acc[NC_SHARDS];
} stats_ctx;

/* Merges a group of n values with mean m and sum of squared deviations m2
 * into (acc->n, acc->mean, acc->m2) (Chan, Golub and LeVeque). */
static void chan_merge(double *an, double *amean, double *am2, double n, double mean, double m2)
{
    double tot = *an + n;
    if (tot == 0)
        return;
    double delta = mean - *amean;
    *amean += delta * (n / tot);
    *am2 += m2 + delta * delta * (*an * n / tot);
    *an = tot;
}

/* *lo = min(*lo, v_i), *hi = max(*hi, v_i) over v[0..n) (finite v), in
 * NC_LANES lanes so that the loop vectorises. */
NC_VM_INLINE void minmax(const double *v, size_t n, double *lo, double *hi)
{
    double l[NC_LANES], h[NC_LANES];
    for (int j = 0; j < NC_LANES; j++)
        l[j] = h[j] = v[0];
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            l[j] = v[i + j] < l[j] ? v[i + j] : l[j];
            h[j] = v[i + j] > h[j] ? v[i + j] : h[j];
        }
    for (int j = 0; i < n; i++, j++) {
        l[j] = v[i] < l[j] ? v[i] : l[j];
        h[j] = v[i] > h[j] ? v[i] : h[j];
    }
    for (int j = 0; j < NC_LANES; j++) {
        *lo = fmin(*lo, l[j]);
        *hi = fmax(*hi, h[j]);
    }
}

NC_VMATH_CLONES static void stats_block(void *vctx, int shard, size_t t0, size_t nt,
                                        const double *rows, const uint16_t *codes, void *scratch)
{
    (void)codes;
    (void)scratch;
    stats_ctx *ctx = vctx;
    run *r = ctx->r;
    stats_acc *a = &ctx->acc[shard];
    const size_t d = r->d;
    for (size_t k = 0; k < nt; k++) {
        const double *x = rows + k * d;
        size_t t = t0 + k;
        nc_token_stat st = nc_norm_token(r->spec->norm, r->spec->eps, x, d);
        r->status[t] = (unsigned char)st.status;
        r->tmean[t] = st.mean;
        r->tvar[t] = st.var;
        if (st.status == NC_TOKEN_NONFINITE) {
            a->nonfinite_tokens++;
            for (size_t i = 0; i < d; i++)
                a->nonfinite_values += !isfinite(x[i]);
            continue;
        }
        chan_merge(&a->n, &a->mean, &a->m2, (double)d, st.mean, st.var * (double)d);
        nc_sum_add(&a->sq, st.ms * (double)d);
        double *restrict chsq = a->ch_sq, *restrict chmax = a->ch_max;
        for (size_t i = 0; i < d; i++) {
            chsq[i] += x[i] * x[i];
            double ax = fabs(x[i]);
            chmax[i] = ax > chmax[i] ? ax : chmax[i];
        }
        minmax(x, d, &a->min, &a->max);
        if (st.status == NC_TOKEN_ZERO_SCALE) {
            a->zero_scale++;
            continue;
        }
        r->centre[t] = st.centre;
        r->inv[t] = 1.0 / st.scale;
        a->used++;
        nc_sum_add(&a->scale_sum, st.scale);
        nc_sum_add(&a->scale_sq, st.scale * st.scale);
        a->scale_min = fmin(a->scale_min, st.scale);
        a->scale_max = fmax(a->scale_max, st.scale);
    }
}

/* Merges the shards' accumulators into ctx->acc[0], in shard order. */
static void stats_merge(stats_ctx *ctx, size_t d)
{
    stats_acc *t = &ctx->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        stats_acc *a = &ctx->acc[s];
        chan_merge(&t->n, &t->mean, &t->m2, a->n, a->mean, a->m2);
        nc_sum_merge(&t->sq, &a->sq);
        t->min = fmin(t->min, a->min);
        t->max = fmax(t->max, a->max);
        t->nonfinite_tokens += a->nonfinite_tokens;
        t->nonfinite_values += a->nonfinite_values;
        t->zero_scale += a->zero_scale;
        t->used += a->used;
        nc_sum_merge(&t->scale_sum, &a->scale_sum);
        nc_sum_merge(&t->scale_sq, &a->scale_sq);
        t->scale_min = fmin(t->scale_min, a->scale_min);
        t->scale_max = fmax(t->scale_max, a->scale_max);
        for (size_t i = 0; i < d; i++) {
            t->ch_sq[i] += a->ch_sq[i];
            t->ch_max[i] = fmax(t->ch_max[i], a->ch_max[i]);
        }
    }
}

/* The pooled input statistics and the spread of token scales from the
 * merged accumulator t over nt visited tokens. */
static void stats_finish(const stats_acc *t, size_t nt, nc_input_stats *out)
{
    memset(out, 0, sizeof *out);
    out->tokens = nt;
    out->tokens_used = t->used;
    out->nonfinite_tokens = t->nonfinite_tokens;
    out->nonfinite_values = t->nonfinite_values;
    out->zero_scale_tokens = t->zero_scale;
    if (t->n > 0) {
        out->mean = t->mean;
        out->std = sqrt(t->m2 / t->n);
        out->rms = sqrt(nc_sum_get(&t->sq) / t->n);
        out->min = t->min;
        out->max = t->max;
        /* pooled second moments beyond the double range: squares above
         * ~1e308 overflow, below ~1e-308 underflow to 0 (a 0 std of data
         * that are not all equal is not a value): undefined, with a status
         * in the report (token statistics are scaled and stay exact) */
        if (out->std == 0.0 && t->max > t->min)
            out->std = NAN;
        if (out->rms == 0.0 && (t->max != 0.0 || t->min != 0.0))
            out->rms = NAN;
    } else {
        out->mean = out->std = out->rms = out->min = out->max = NAN;
    }
    if (t->used > 0) {
        double u = (double)t->used;
        out->rho = nc_sum_get(&t->scale_sum) / u;
        double var = nc_sum_get(&t->scale_sq) / u - out->rho * out->rho;
        out->scale_std = !isfinite(var) ? NAN : var > 0 ? sqrt(var) : 0.0;
        out->scale_min = t->scale_min;
        out->scale_max = t->scale_max;
    } else {
        out->rho = out->scale_std = out->scale_min = out->scale_max = NAN;
    }
}

/* The NC_TOP_CHANNELS channels with the largest max |x| (descending), with
 * their rms over the finite tokens, into out->top (insertion into a short
 * sorted list). */
static void top_channels(const stats_acc *t, size_t d, size_t finite_tokens,
                         nc_input_stats *out)
{
    for (size_t i = 0; i < d && finite_tokens > 0; i++) {
        double m = t->ch_max[i];
        size_t pos = out->ntop;
        while (pos > 0 && out->top[pos - 1].max_abs < m)
            pos--;
        if (pos >= NC_TOP_CHANNELS)
            continue;
        size_t last = out->ntop < NC_TOP_CHANNELS ? out->ntop : NC_TOP_CHANNELS - 1;
        memmove(&out->top[pos + 1], &out->top[pos], (last - pos) * sizeof out->top[0]);
        out->top[pos].channel = i;
        out->top[pos].max_abs = m;
        out->top[pos].rms = sqrt(t->ch_sq[i] / (double)finite_tokens);
        if (out->ntop < NC_TOP_CHANNELS)
            out->ntop++;
    }
}

/* Pass 1: each visited token's centre, 1/scale and status into r, and the
 * layer's input statistics into out. */
static int pass_stats(run *r, nc_input_stats *out, nc_err *err)
{
    const size_t d = r->d;
    stats_ctx *ctx = calloc(1, sizeof *ctx);
    double *ch = calloc(2 * NC_SHARDS * (d ? d : 1), sizeof *ch);
    int rc = 0;
    if (!ctx || !ch) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for statistics", r->spec->name);
        goto out;
    }
    ctx->r = r;
    for (int s = 0; s < NC_SHARDS; s++) {
        stats_acc *a = &ctx->acc[s];
        a->min = a->scale_min = INFINITY;
        a->max = a->scale_max = -INFINITY;
        a->ch_sq = ch + (size_t)(2 * s) * d;
        a->ch_max = ch + (size_t)(2 * s + 1) * d;
    }
    nc_progress_begin(r->spec->progress, r->spec->name, "stats", (uint64_t)(r->nt * d));
    if ((rc = nc_pass_run(&r->pass, stats_block, ctx, err)))
        goto out;
    stats_merge(ctx, d);
    stats_finish(&ctx->acc[0], r->nt, out);
    top_channels(&ctx->acc[0], d, r->nt - ctx->acc[0].nonfinite_tokens, out);
out:
    free(ch);
    free(ctx);
    return rc;
}

/* ================================================================= bins */

typedef struct bins_acc {
    double *bin;              /* [nbins][4]: count, sum x, sum y, sum J_ii of each
                               * bin, interleaved so that a point touches one line */
    nc_sum sxx, sxy, sy, syy; /* centred x (by the input mean) for the affine fit */
    nc_sum sj, sjj;           /* J_ii: sum and sum of squares */
    double ymin, ymax;
    double real_max;          /* max |real - recomputed| (NaN shows) */
    double real_ymax;         /* max |real output| */
    nc_sum real_sq;
} bins_acc;

typedef struct bins_ctx {
    run *r;
    nc_binmap map;
    bool binned;        /* fits only on the bins (else polished on the raw points) */
    double *px, *py, *pj; /* raw points when not binned: [used * d] */
    double jc;            /* J_ii = inv (jc - y^2/d): jc = 1 - 1/d (LayerNorm), 1 (RMSNorm) */
    size_t *slot;       /* [nt] first point index of token t (raw points) */
    double xmean;
    bins_acc acc[NC_SHARDS];
    double *shard_bins; /* raw points: one shard's bins at a time (bins_from_points) */
    uint32_t *touched;  /* raw points: the bins that shard touched, [nbins] */
} bins_ctx;

NC_VMATH_CLONES static void bins_block(void *vctx, int shard, size_t t0, size_t nt,
                                       const double *rows, const uint16_t *codes, void *scratch)
{
    (void)codes;
    bins_ctx *ctx = vctx;
    run *r = ctx->r;
    bins_acc *a = &ctx->acc[shard];
    const size_t d = r->d;
    double *y = scratch, *yr = y + d, *J = yr + d; /* [d] output, real output, J_ii */
    uint32_t *bi = (uint32_t *)(void *)(J + d);    /* [d] the points' bins */
    const nc_tensor *real = r->spec->y_real;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (r->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double c = r->centre[t], inv = r->inv[t];
        const double xm = ctx->xmean;
        for (size_t i = 0; i < d; i++)
            y[i] = (x[i] - c) * inv;
        minmax(y, d, &a->ymin, &a->ymax);
        size_t i;
        double sxx[NC_LANES] = {0}, sxy[NC_LANES] = {0}, sy[NC_LANES] = {0},
               syy[NC_LANES] = {0};
        for (i = 0; i + NC_LANES <= d; i += NC_LANES)
            for (int j = 0; j < NC_LANES; j++) {
                double u = x[i + j] - xm, yi = y[i + j];
                sxx[j] += u * u;
                sxy[j] += u * yi;
                sy[j] += yi;
                syy[j] += yi * yi;
            }
        for (int j = 0; i < d; i++, j++) {
            double u = x[i] - xm, yi = y[i];
            sxx[j] += u * u;
            sxy[j] += u * yi;
            sy[j] += yi;
            syy[j] += yi * yi;
        }
        nc_sum_add(&a->sxx, nc_lanes_total(sxx));
        nc_sum_add(&a->sxy, nc_lanes_total(sxy));
        nc_sum_add(&a->sy, nc_lanes_total(sy));
        nc_sum_add(&a->syy, nc_lanes_total(syy));
        /* the exact Jacobian diagonal J_ii = inv (jc - y_i^2 / d) (docs/jacobian.md) */
        const double jc = ctx->jc, invd = 1.0 / (double)d;
        double sj[NC_LANES] = {0}, sjj[NC_LANES] = {0};
        for (i = 0; i < d; i++)
            J[i] = inv * (jc - y[i] * y[i] * invd);
        for (i = 0; i + NC_LANES <= d; i += NC_LANES)
            for (int j = 0; j < NC_LANES; j++) {
                sj[j] += J[i + j];
                sjj[j] += J[i + j] * J[i + j];
            }
        for (int j = 0; i < d; i++, j++) {
            sj[j] += J[i];
            sjj[j] += J[i] * J[i];
        }
        nc_sum_add(&a->sj, nc_lanes_total(sj));
        nc_sum_add(&a->sjj, nc_lanes_total(sjj));
        /* the bins: first every point's bin (a loop that vectorises), then
         * one four-double addition per point into its bin (with raw points,
         * after the pass: bins_from_points) */
        double *bin = a->bin;
        if (ctx->binned) {
            for (i = 0; i < d; i++)
                bi[i] = (uint32_t)nc_bin_of(&ctx->map, x[i]);
            for (i = 0; i < d; i++)
                V4(bin + 4 * (size_t)bi[i]) += (v4d){1.0, x[i], y[i], J[i]};
        } else {
            memcpy(ctx->px + ctx->slot[t], x, d * sizeof *x);
            memcpy(ctx->py + ctx->slot[t], y, d * sizeof *y);
            memcpy(ctx->pj + ctx->slot[t], J, d * sizeof *J);
        }
        if (real) {
            size_t tok = r->tokens ? r->tokens[t] : t;
            nc_tensor_rows(real, tok, 1, yr);
            nc_norm_affine(r->weight, r->bias, d, y);
            double m = a->real_max, ym = a->real_ymax, sq = 0;
            for (i = 0; i < d; i++) {
                double e = fabs(yr[i] - y[i]);
                m = e > m || e != e ? e : m; /* a NaN difference shows as NaN */
                ym = fabs(yr[i]) > ym ? fabs(yr[i]) : ym;
                sq += e * e;
            }
            a->real_max = m;
            a->real_ymax = ym;
            nc_sum_add(&a->real_sq, sq);
        }
    }
}

/* ============================================================ analysis */

/* Draws `m` distinct token indices of [0, N), ascending (Floyd's algorithm
 * on a bitmap). */
static size_t *sample_tokens(size_t N, size_t m, uint64_t seed)
{
    size_t *out = malloc(m * sizeof *out);
    unsigned char *mark = calloc(N, 1);
    if (!out || !mark) {
        free(out);
        free(mark);
        return NULL;
    }
    nc_rng rng;
    nc_rng_seed(&rng, seed, 0x5a4d504cu);
    for (size_t j = N - m; j < N; j++) {
        size_t t = (size_t)nc_rng_below(&rng, (uint64_t)j + 1);
        mark[mark[t] ? j : t] = 1;
    }
    size_t k = 0;
    for (size_t t = 0; t < N; t++)
        if (mark[t])
            out[k++] = t;
    free(mark);
    return out;
}

/* What one analysis holds between its stages; released by analysis_free
 * (what the result takes over is set to NULL here first). */
typedef struct analysis {
    const nc_layer_spec *spec;
    run r;
    size_t *tokens;      /* the token sample, or NULL */
    bins_ctx *bc;
    double *binmem;      /* [4 * binarrays * nbins] the shards' bins */
    size_t nbins, binarrays;
    double *pxy;         /* the raw points (x, y, J_ii), until the result owns them */
    size_t *slot;
    nc_points bins, raw; /* the fit points */
    affine_sums aff;
} analysis;

static void analysis_free(analysis *A)
{
    nc_big_free(A->binmem, 4 * A->binarrays * A->nbins * sizeof *A->binmem);
    free(A->pxy);
    free(A->slot);
    if (A->bc)
        free(A->bc->touched);
    free(A->bc);
    free(A->tokens);
    free(A->r.centre);
    free(A->r.inv);
    free(A->r.status);
    free(A->r.tmean);
    free(A->r.weight);
    free(A->r.bias);
}

/* Refuses an input or companion of a dtype that is not float, and
 * companions of the wrong shape. */
static int check_inputs(const nc_layer_spec *spec, nc_err *err)
{
    const nc_tensor *x = spec->x;
    if (!nc_dtype_is_float(x->dtype))
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: input dtype %s is not supported (expected F32, F16, BF16 or F64)",
                          spec->name, nc_dtype_name(x->dtype));
    const nc_tensor *comp[3] = {spec->y_real, spec->weight, spec->bias};
    const char *comp_name[3] = {"output", "weight", "bias"};
    for (int k = 0; k < 3; k++) {
        const nc_tensor *c = comp[k];
        if (!c)
            continue;
        if (!nc_dtype_is_float(c->dtype))
            return nc_err_set(err, NC_EUNSUPPORTED,
                              "%s: %s dtype %s is not supported (expected F32, F16, BF16 or F64)",
                              spec->name, comp_name[k], nc_dtype_name(c->dtype));
        bool fits = k == 0 ? (c->N == x->N && c->d == x->d) : c->nelem == x->d;
        if (!fits) {
            char a[128], b[128];
            nc_tensor_shape_str(c, a, sizeof a);
            nc_tensor_shape_str(x, b, sizeof b);
            return nc_err_set(err, NC_EINVAL, "%s: %s has shape %s, expected %s for input %s",
                              spec->name, comp_name[k], a, k == 0 ? "the input's shape" : "[d]",
                              b);
        }
    }
    return 0;
}

/* The result's identity, the tokens to visit (all, or a seeded sample),
 * the per-token arrays and the affine part as doubles. */
static int setup(analysis *A, nc_layer_result *res, nc_err *err)
{
    const nc_layer_spec *spec = A->spec;
    const size_t N = spec->x->N, d = spec->x->d;
    run *r = &A->r;
    *r = (run){.spec = spec, .N = N, .d = d, .nt = N};
    if (!(res->name = strdup(spec->name)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    res->norm = spec->norm;
    res->eps = spec->eps;
    res->N = N;
    res->d = d;
    for (int j = 0; j < NC_FIT_COUNT; j++)
        res->fits[j].enabled = spec->fit[j];
    if (spec->sample_tokens > 0 && spec->sample_tokens < N) {
        if (!(A->tokens = sample_tokens(N, spec->sample_tokens, spec->seed)))
            return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the token sample",
                              spec->name);
        r->tokens = A->tokens;
        r->nt = spec->sample_tokens;
    }
    r->pass = (nc_pass){.x = spec->x, .tokens = r->tokens, .ntokens = r->nt,
                        .threads = spec->threads, .progress = spec->progress};
    r->centre = calloc(r->nt ? r->nt : 1, sizeof *r->centre);
    r->inv = calloc(r->nt ? r->nt : 1, sizeof *r->inv);
    r->status = calloc(r->nt ? r->nt : 1, 1);
    r->tmean = calloc(2 * (r->nt ? r->nt : 1), sizeof *r->tmean);
    r->tvar = r->tmean ? r->tmean + (r->nt ? r->nt : 1) : NULL;
    if (!r->centre || !r->inv || !r->status || !r->tmean)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for token statistics",
                          spec->name);
    r->weight = spec->weight ? malloc(d * sizeof(double)) : NULL;
    r->bias = spec->bias ? malloc(d * sizeof(double)) : NULL;
    if ((spec->weight && !r->weight) || (spec->bias && !r->bias))
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", spec->name);
    if (r->weight)
        nc_tensor_elems(spec->weight, 0, d, r->weight);
    if (r->bias)
        nc_tensor_elems(spec->bias, 0, d, r->bias);
    return 0;
}

/* Stage 1: the stats pass (or, for an empty layer, undefined statistics). */
static int stage_stats(analysis *A, nc_layer_result *res, nc_err *err)
{
    run *r = &A->r;
    if (r->d > 0 && r->nt > 0) {
        int rc = pass_stats(r, &res->stats, err);
        if (rc)
            return rc;
        res->passes++;
    } else {
        res->stats.tokens = r->nt;
        res->stats.mean = res->stats.std = res->stats.rms = NAN;
        res->stats.min = res->stats.max = res->stats.rho = NAN;
        res->stats.scale_std = res->stats.scale_min = res->stats.scale_max = NAN;
    }
    res->points = res->stats.tokens_used * r->d;
    return 0;
}

/* A layer with nothing to fit: every requested fit says why it is empty. */
static void mark_empty(const nc_layer_spec *spec, nc_layer_result *res, const char *why)
{
    for (int j = 0; j < NC_FIT_COUNT; j++)
        if (spec->fit[j])
            snprintf(res->fits[j].status, sizeof res->fits[j].status, "%s", why);
    res->y_mean = res->y_sst = res->y_min = res->y_max = NAN;
}

/* The bins pass's context: the bin map over the input's range, the shards'
 * bins, and for a layer fitted exactly the raw points' slots. */
static int bins_setup(analysis *A, nc_layer_result *res, nc_err *err)
{
    const nc_layer_spec *spec = A->spec;
    run *r = &A->r;
    const size_t d = r->d;
    bins_ctx *bc = A->bc = calloc(1, sizeof *bc);
    if (!bc)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the bins", spec->name);
    bc->r = r;
    bc->xmean = res->stats.mean;
    size_t max_exact = spec->max_exact_points ? spec->max_exact_points : NC_DEFAULT_MAX_EXACT;
    bc->binned = res->points > max_exact;
    double xmax = fmax(fabs(res->stats.min), fabs(res->stats.max));
    bc->map = nc_binmap_make(res->stats.rms, xmax, spec->max_bins ? spec->max_bins
                                                                  : NC_DEFAULT_BINS);
    size_t nbins = A->nbins = nc_binmap_count(&bc->map);
    /* one set of bins per shard; with raw points only the merged bins and
     * one shard's at a time (bins_from_points), a small layer's run need not
     * clear 16 sets. Written first, not calloc'd: a bin's first access is a
     * read (+=), and a page first read maps the zero page, whose
     * copy-on-write fault at the first write flushes the TLB of every thread
     * (density.c); huge pages where the kernel has them (util/bigmem.h) */
    A->binarrays = bc->binned ? NC_SHARDS : 2;
    size_t nb = 4 * A->binarrays * nbins;
    if (!(A->binmem = nc_big_alloc(nb * sizeof *A->binmem)) ||
        (!bc->binned && !(bc->touched = malloc(nbins * sizeof *bc->touched))))
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu bins", spec->name, nbins);
    memset(A->binmem, 0, nb * sizeof *A->binmem);
    if (!bc->binned) {
        bc->shard_bins = A->binmem + 4 * nbins;
        A->pxy = malloc(3 * res->points * sizeof *A->pxy);
        A->slot = malloc(r->nt * sizeof *A->slot);
        if (!A->pxy || !A->slot)
            return nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu points", spec->name,
                              res->points);
        bc->px = A->pxy;
        bc->py = A->pxy + res->points;
        bc->pj = bc->py + res->points;
        size_t next = 0;
        for (size_t t = 0; t < r->nt; t++) {
            A->slot[t] = next;
            if (r->status[t] == NC_TOKEN_OK)
                next += d;
        }
        bc->slot = A->slot;
    }
    for (int s = 0; s < NC_SHARDS; s++) {
        bins_acc *a = &bc->acc[s];
        a->bin = bc->binned || s == 0 ? A->binmem + (size_t)(4 * s) * nbins : NULL;
        a->ymin = INFINITY;
        a->ymax = -INFINITY;
    }
    bc->jc = spec->norm == NC_LAYERNORM ? 1.0 - 1.0 / (double)d : 1.0;
    return 0;
}

/* With raw points, the bins the shards would have filled in the pass, from
 * the points, merged into acc[0].bin as bins_merge would: shard by shard,
 * the shard's points added in order into its own bins (shard_bins), then
 * those added to the merged bins and cleared. The same additions in the
 * same order, so the same bits; only the bins a shard touched are merged
 * (the others hold +0, whose addition changes nothing: no sum of points
 * starting from +0 is -0). */
static void bins_from_points(bins_ctx *bc, size_t nt, size_t d)
{
    const run *r = bc->r;
    double *all = bc->acc[0].bin, *sb = bc->shard_bins;
    for (int s = 0; s < NC_SHARDS; s++) {
        size_t ntouched = 0;
        for (size_t t = nc_shard_begin(nt, s); t < nc_shard_begin(nt, s + 1); t++) {
            if (r->status[t] != NC_TOKEN_OK)
                continue;
            const double *x = bc->px + bc->slot[t], *y = bc->py + bc->slot[t];
            const double *J = bc->pj + bc->slot[t];
            for (size_t i = 0; i < d; i++) {
                size_t b = nc_bin_of(&bc->map, x[i]);
                if (sb[4 * b] == 0)
                    bc->touched[ntouched++] = (uint32_t)b;
                V4(sb + 4 * b) += (v4d){1.0, x[i], y[i], J[i]};
            }
        }
        for (size_t k = 0; k < ntouched; k++) {
            double *p = sb + 4 * (size_t)bc->touched[k];
            V4(all + 4 * (size_t)bc->touched[k]) += V4(p);
            V4(p) = (v4d){0, 0, 0, 0};
        }
    }
}

/* Merges the shards' bins and sums into bc->acc[0], in shard order. */
static void bins_merge(bins_ctx *bc, size_t nbins)
{
    bins_acc *A = &bc->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        bins_acc *a = &bc->acc[s];
        nc_sum_merge(&A->sxx, &a->sxx);
        nc_sum_merge(&A->sxy, &a->sxy);
        nc_sum_merge(&A->sy, &a->sy);
        nc_sum_merge(&A->syy, &a->syy);
        nc_sum_merge(&A->sj, &a->sj);
        nc_sum_merge(&A->sjj, &a->sjj);
        A->ymin = fmin(A->ymin, a->ymin);
        A->ymax = fmax(A->ymax, a->ymax);
        A->real_max = A->real_max >= a->real_max || A->real_max != A->real_max ? A->real_max
                                                                                 : a->real_max;
        A->real_ymax = fmax(A->real_ymax, a->real_ymax);
        nc_sum_merge(&A->real_sq, &a->real_sq);
        for (size_t b = 0; bc->binned && b < 4 * nbins; b++)
            A->bin[b] += a->bin[b];
    }
}

/* The fit points from the merged bins: the nonempty bins' means weighted by
 * their counts (A->bins) and, for a layer fitted exactly, the raw points
 * (A->raw); both kept in the result (with J_ii) for the sweeps. */
static int collect_points(analysis *A, nc_layer_result *res, nc_err *err)
{
    const bins_ctx *bc = A->bc;
    const bins_acc *acc = &bc->acc[0];
    size_t nonempty = 0;
    for (size_t b = 0; b < A->nbins; b++)
        nonempty += acc->bin[4 * b] != 0;
    double *bx = malloc(4 * (nonempty ? nonempty : 1) * sizeof *bx);
    if (!bx)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu bins", A->spec->name,
                          nonempty);
    double *by = bx + nonempty, *bj = by + nonempty, *bw = bj + nonempty;
    for (size_t b = 0, k = 0; b < A->nbins; b++) {
        const double *p = acc->bin + 4 * b;
        if (p[0] == 0)
            continue;
        bx[k] = p[1] / p[0];
        by[k] = p[2] / p[0];
        bj[k] = p[3] / p[0];
        bw[k] = p[0];
        k++;
    }
    res->binned = bc->binned;
    res->bins = A->nbins;
    res->bins_nonempty = nonempty;
    A->bins = (nc_points){.x = bx, .y = by, .w = bw, .n = nonempty};
    A->raw = (nc_points){.x = bc->px, .y = bc->py, .w = NULL,
                         .n = bc->binned ? 0 : res->points};
    nc_fit_data sums = {.points = (double)res->points,
                        .syy = nc_sum_get(&acc->syy), .sy = nc_sum_get(&acc->sy),
                        .sjj = nc_sum_get(&acc->sjj), .sj = nc_sum_get(&acc->sj)};
    if (bc->binned) {
        res->data = (nc_fit_data){false, nonempty, bx, by, bj, bw, sums.points, sums.syy,
                                  sums.sy, sums.sjj, sums.sj};
    } else {
        res->data = (nc_fit_data){true, res->points, bc->px, bc->py, bc->pj, NULL, sums.points,
                                  sums.syy, sums.sy, sums.sjj, sums.sj};
        res->data_bins = bx; /* the bins feed the coarse fits, then go */
        A->pxy = NULL;       /* owned by the result now */
    }
    A->aff = (affine_sums){nc_sum_get(&acc->sxx), nc_sum_get(&acc->sxy), nc_sum_get(&acc->sy),
                           bc->xmean};
    return 0;
}

/* Stage 2: the bins pass (bins or raw points, the affine baseline's sums,
 * the output's range and the real-output check), then the fit points. */
static int stage_bins(analysis *A, nc_layer_result *res, nc_err *err)
{
    const nc_layer_spec *spec = A->spec;
    int rc = bins_setup(A, res, err);
    if (rc)
        return rc;
    A->r.pass.scratch_bytes = 3 * A->r.d * sizeof(double) + A->r.d * sizeof(uint32_t);
    nc_progress_begin(spec->progress, spec->name, "bins", (uint64_t)(A->r.nt * A->r.d));
    if ((rc = nc_pass_run(&A->r.pass, bins_block, A->bc, err)))
        return rc;
    res->passes++;
    bins_merge(A->bc, A->nbins);
    if (!A->bc->binned)
        bins_from_points(A->bc, A->r.nt, A->r.d);
    const bins_acc *acc = &A->bc->acc[0];
    res->y_mean = nc_sum_get(&acc->sy) / (double)res->points;
    res->y_min = acc->ymin;
    res->y_max = acc->ymax;
    if (spec->y_real) {
        res->has_real = true;
        res->real_affine = spec->weight || spec->bias;
        res->real_max_abs_diff = acc->real_max;
        res->real_rms_diff = sqrt(nc_sum_get(&acc->real_sq) / (double)res->points);
        res->real_max_abs = acc->real_ymax;
    }
    return collect_points(A, res, err);
}

/* Stage 4: DyT with per-channel gamma_i, beta_i (exact Newton passes),
 * seeded by the pooled DyT fit; then DyT is hidden again when it ran only
 * to seed Derf or the per-channel fit. */
static int stage_channel(analysis *A, nc_layer_result *res, nc_err *err)
{
    const nc_layer_spec *spec = A->spec;
    nc_fit_result *fr = &res->fits[NC_FIT_DYT_PER_CHANNEL];
    if (spec->fit[NC_FIT_DYT_PER_CHANNEL] && res->stats.tokens_used < 3) {
        /* two points per channel are fitted exactly by gamma_i, beta_i at any
         * alpha: nothing to fit (the iteration would wander) */
        snprintf(fr->status, sizeof fr->status,
                 "not fitted: %zu usable token%s; gamma_i and beta_i of each channel need 3 "
                 "or more (with 2, every alpha fits every channel exactly)",
                 res->stats.tokens_used, res->stats.tokens_used == 1 ? "" : "s");
    } else if (spec->fit[NC_FIT_DYT_PER_CHANNEL] && res->fits[NC_FIT_DYT].ok) {
        int rc = nc_layer_fit_channel(&A->r, res->fits[NC_FIT_DYT].params.p[0],
                                      fmax(fabs(res->stats.min), fabs(res->stats.max)),
                                      res->points, fr, &res->passes, err);
        if (rc)
            return rc;
    }
    if (!spec->fit[NC_FIT_DYT])
        res->fits[NC_FIT_DYT].ok = false; /* fitted only to seed Derf / per channel */
    return 0;
}

/* The pipeline: check, set up, then the stages in order, each timed. A
 * layer with no usable token stops after the stats. */
int nc_layer_analyze(const nc_layer_spec *spec, nc_layer_result *res, nc_err *err)
{
    memset(res, 0, sizeof *res);
    int rc = check_inputs(spec, err);
    if (rc)
        return rc;
    analysis A = {.spec = spec};
    double t0 = nc_now_s();
    if ((rc = setup(&A, res, err)) || (rc = stage_stats(&A, res, err)))
        goto out;
    res->time_stats_s = nc_now_s() - t0;
    if (res->points == 0) {
        mark_empty(spec, res, "no usable token: nothing to fit");
        goto out;
    }
    /* pooled sums over x^2 beyond the double range (docs/report.md): the
     * fits' sums would overflow or underflow, so none is reported */
    if (!isfinite(res->stats.std) || !isfinite(res->stats.rms)) {
        mark_empty(spec, res, "input beyond the range of pooled double sums (|x| above ~1e154 "
                              "or below ~1e-154): rescale it (the fits are scale-equivariant)");
        goto out;
    }
    t0 = nc_now_s();
    if ((rc = stage_bins(&A, res, err)))
        goto out;
    res->time_bins_s = nc_now_s() - t0;
    t0 = nc_now_s();
    if ((rc = nc_layer_run_fits(&A.r, res, &A.bins, &A.raw, res->stats.std, &A.aff, err)))
        goto out;
    res->time_fits_s = nc_now_s() - t0;
    t0 = nc_now_s();
    if ((rc = stage_channel(&A, res, err)))
        goto out;
    res->time_channel_s = nc_now_s() - t0;
    t0 = nc_now_s();
    if ((rc = nc_layer_verify(&A.r, res, err)))
        goto out;
    res->time_verify_s = nc_now_s() - t0;
    t0 = nc_now_s();
    if ((rc = nc_layer_boot_run(&A.r, res, err)))
        goto out;
    res->time_boot_s = nc_now_s() - t0;
out:
    nc_progress_end(spec->progress);
    if (!rc) {
        /* hand the per-token state to the result for later passes */
        res->tok = (nc_layer_tokens){A.r.nt, A.tokens, A.r.centre, A.r.inv, A.r.status};
        A.tokens = NULL;
        A.r.centre = A.r.inv = NULL;
        A.r.status = NULL;
    }
    analysis_free(&A);
    if (rc)
        nc_layer_result_free(res);
    return rc;
}

nc_pass nc_layer_pass(const nc_layer_result *res, const nc_tensor *x, int threads,
                      nc_progress *progress)
{
    return (nc_pass){.x = x, .tokens = res->tok.index, .ntokens = res->tok.nt,
                     .threads = threads, .progress = progress};
}

void nc_layer_result_free(nc_layer_result *res)
{
    if (!res)
        return;
    free(res->name);
    free(res->tok.index);
    free(res->tok.centre);
    free(res->tok.inv);
    free(res->tok.status);
    free((double *)res->fits[NC_FIT_DYT_PER_CHANNEL].params.pc);
    free(res->data.x);
    free(res->data_bins);
    free(res->jac.frob);
    free(res->boot.rep);
    free(res->boot.sums);
    memset(res, 0, sizeof *res);
}
