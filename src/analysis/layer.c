/*
 * layer.c - the streaming passes over one layer (layer.h): the pipeline of
 * nc_layer_analyze (token sample, stats, bins, fits, per-channel, verify),
 * the stats, bins and verify passes themselves, the spec defaults, the
 * amplitude rules and the result's lifetime.
 *
 * Legend: N tokens, d channels; t indexes visited tokens (positions in the
 * sample when one is drawn), i channels; x the input, y = (x - c_t) * inv_t
 * the norm's output before the affine part (norm.h); shards and blocks as
 * in core/par.h. Every accumulator is per shard and merged in shard order.
 *
 * Left out: the fits on the bins or raw points (layer_fits.c) and the
 * per-channel DyT fit's Newton passes (channel.c); layer_internal.h is what
 * the three files share.
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
#include "core/vmath.h"
#include "util/clock.h"

const char *nc_amp_rule_name(nc_amp_rule rule)
{
    switch (rule) {
    case NC_AMP_FREE: return "free";
    case NC_AMP_SQRT_D: return "sqrt(d)";
    case NC_AMP_SQRT_D_MINUS_1: return "sqrt(d-1)";
    case NC_AMP_AUTO: return "auto";
    default: return "value";
    }
}

bool nc_amp_resolve(nc_amp amp, nc_norm_kind norm, size_t d, double *value,
                    nc_amp_rule *rule_out)
{
    nc_amp_rule r = amp.rule;
    if (r == NC_AMP_AUTO)
        r = norm == NC_RMSNORM ? NC_AMP_SQRT_D : NC_AMP_SQRT_D_MINUS_1;
    *rule_out = r;
    switch (r) {
    case NC_AMP_FREE:
        *value = 0;
        return false;
    case NC_AMP_SQRT_D:
        *value = sqrt((double)d);
        return true;
    case NC_AMP_SQRT_D_MINUS_1:
        *value = d > 1 ? sqrt((double)(d - 1)) : 0.0;
        return true;
    default:
        *value = amp.value;
        return true;
    }
}

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
                                        const double *rows, void *scratch)
{
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
    memset(out, 0, sizeof *out);
    out->tokens = r->nt;
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
    } else {
        out->mean = out->std = out->rms = out->min = out->max = NAN;
    }
    if (t->used > 0) {
        double u = (double)t->used;
        out->rho = nc_sum_get(&t->scale_sum) / u;
        double var = nc_sum_get(&t->scale_sq) / u - out->rho * out->rho;
        out->scale_std = var > 0 ? sqrt(var) : 0.0;
        out->scale_min = t->scale_min;
        out->scale_max = t->scale_max;
    } else {
        out->rho = out->scale_std = out->scale_min = out->scale_max = NAN;
    }
    /* top channels by max |x| (selection of the NC_TOP_CHANNELS largest) */
    size_t finite_tokens = r->nt - t->nonfinite_tokens;
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
    double real_max;
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
} bins_ctx;

NC_VMATH_CLONES static void bins_block(void *vctx, int shard, size_t t0, size_t nt,
                                       const double *rows, void *scratch)
{
    bins_ctx *ctx = vctx;
    run *r = ctx->r;
    bins_acc *a = &ctx->acc[shard];
    const size_t d = r->d;
    double *y = scratch, *yr = y + d, *J = yr + d; /* [d] output, real output, J_ii */
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
        /* the exact Jacobian diagonal J_ii = inv (jc - y_i^2 / d) (BRIEF.md) */
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
        double *bin = a->bin;
        for (i = 0; i < d; i++) {
            double *p = bin + 4 * nc_bin_of(&ctx->map, x[i]);
            p[0] += 1.0;
            p[1] += x[i];
            p[2] += y[i];
            p[3] += J[i];
        }
        if (!ctx->binned) {
            memcpy(ctx->px + ctx->slot[t], x, d * sizeof *x);
            memcpy(ctx->py + ctx->slot[t], y, d * sizeof *y);
            memcpy(ctx->pj + ctx->slot[t], J, d * sizeof *J);
        }
        if (real) {
            size_t tok = r->tokens ? r->tokens[t] : t;
            nc_tensor_rows(real, tok, 1, yr);
            nc_norm_affine(r->weight, r->bias, d, y);
            double m = a->real_max, sq = 0;
            for (i = 0; i < d; i++) {
                double e = fabs(yr[i] - y[i]);
                m = e > m || e != e ? e : m; /* a NaN difference shows as NaN */
                sq += e * e;
            }
            a->real_max = m;
            nc_sum_add(&a->real_sq, sq);
        }
    }
}

/* =============================================================== verify */

typedef struct verify_acc {
    nc_sum sse[NC_FIT_COUNT], sabs[NC_FIT_COUNT];
    double maxe[NC_FIT_COUNT];
    nc_sum sst;
    size_t sat[3];
} verify_acc;

typedef struct verify_ctx {
    run *r;
    const nc_fit_result *fits;
    double ymean, alpha; /* alpha: DyT's, for the saturation shares (0: none) */
    verify_acc acc[NC_SHARDS];
} verify_ctx;

NC_VMATH_CLONES static void verify_block(void *vctx, int shard, size_t t0, size_t nt,
                                         const double *rows, void *scratch)
{
    verify_ctx *ctx = vctx;
    run *r = ctx->r;
    verify_acc *a = &ctx->acc[shard];
    const size_t d = r->d;
    double *y = scratch, *f = y + d;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (r->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double c = r->centre[t], inv = r->inv[t], ym = ctx->ymean;
        double sst[NC_LANES] = {0};
        size_t i = 0;
        for (i = 0; i < d; i++)
            y[i] = (x[i] - c) * inv;
        for (i = 0; i + NC_LANES <= d; i += NC_LANES)
            for (int j = 0; j < NC_LANES; j++)
                sst[j] += (y[i + j] - ym) * (y[i + j] - ym);
        for (int j = 0; i < d; i++, j++)
            sst[j] += (y[i] - ym) * (y[i] - ym);
        nc_sum_add(&a->sst, nc_lanes_total(sst));
        for (int fit = 0; fit < NC_FIT_COUNT; fit++) {
            const nc_fit_result *fr = &ctx->fits[fit];
            if (!fr->ok)
                continue;
            nc_surrogate_get((nc_fit_id)fit)->eval(&fr->params, 0, x, d, f);
            double sse[NC_LANES] = {0}, sabs[NC_LANES] = {0}, m[NC_LANES] = {0};
            for (i = 0; i + NC_LANES <= d; i += NC_LANES)
                for (int j = 0; j < NC_LANES; j++) {
                    double e = fabs(y[i + j] - f[i + j]);
                    sse[j] += e * e;
                    sabs[j] += e;
                    m[j] = e > m[j] ? e : m[j];
                }
            for (int j = 0; i < d; i++, j++) {
                double e = fabs(y[i] - f[i]);
                sse[j] += e * e;
                sabs[j] += e;
                m[j] = e > m[j] ? e : m[j];
            }
            nc_sum_add(&a->sse[fit], nc_lanes_total(sse));
            nc_sum_add(&a->sabs[fit], nc_lanes_total(sabs));
            /* a NaN error makes the SSE NaN, which the report shows as null */
            for (int j = 0; j < NC_LANES; j++)
                a->maxe[fit] = m[j] > a->maxe[fit] ? m[j] : a->maxe[fit];
        }
        if (ctx->alpha > 0) {
            size_t s1 = 0, s2 = 0, s3 = 0;
            const double al = ctx->alpha;
            for (i = 0; i < d; i++) {
                double z = fabs(al * x[i]);
                s1 += z > 1;
                s2 += z > 2;
                s3 += z > 3;
            }
            a->sat[0] += s1;
            a->sat[1] += s2;
            a->sat[2] += s3;
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

int nc_layer_analyze(const nc_layer_spec *spec, nc_layer_result *res, nc_err *err)
{
    memset(res, 0, sizeof *res);
    const nc_tensor *x = spec->x;
    const size_t N = x->N, d = x->d;
    int rc = 0;
    run r = {.spec = spec, .N = N, .d = d};
    bins_ctx *bc = NULL;
    double *binmem = NULL, *pxy = NULL;
    size_t *tokens = NULL, *slot = NULL;
    verify_ctx *vc = NULL;

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
        bool fits = k == 0 ? (c->N == N && c->d == d) : c->nelem == d;
        if (!fits) {
            char a[128], b[128];
            nc_tensor_shape_str(c, a, sizeof a);
            nc_tensor_shape_str(x, b, sizeof b);
            return nc_err_set(err, NC_EINVAL, "%s: %s has shape %s, expected %s for input %s",
                              spec->name, comp_name[k], a, k == 0 ? "the input's shape" : "[d]",
                              b);
        }
    }

    res->name = strdup(spec->name);
    if (!res->name)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    res->norm = spec->norm;
    res->eps = spec->eps;
    res->N = N;
    res->d = d;
    for (int j = 0; j < NC_FIT_COUNT; j++)
        res->fits[j].enabled = spec->fit[j];

    /* the tokens to visit */
    r.nt = N;
    if (spec->sample_tokens > 0 && spec->sample_tokens < N) {
        if (!(tokens = sample_tokens(N, spec->sample_tokens, spec->seed))) {
            rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the token sample", spec->name);
            goto out;
        }
        r.tokens = tokens;
        r.nt = spec->sample_tokens;
    }
    r.pass = (nc_pass){.x = x, .tokens = r.tokens, .ntokens = r.nt, .threads = spec->threads,
                       .progress = spec->progress};
    r.centre = calloc(r.nt ? r.nt : 1, sizeof *r.centre);
    r.inv = calloc(r.nt ? r.nt : 1, sizeof *r.inv);
    r.status = calloc(r.nt ? r.nt : 1, 1);
    if (!r.centre || !r.inv || !r.status) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for token statistics", spec->name);
        goto out;
    }
    if (spec->weight || spec->bias) {
        r.weight = spec->weight ? malloc(d * sizeof(double)) : NULL;
        r.bias = spec->bias ? malloc(d * sizeof(double)) : NULL;
        if ((spec->weight && !r.weight) || (spec->bias && !r.bias)) {
            rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", spec->name);
            goto out;
        }
        if (r.weight)
            nc_tensor_elems(spec->weight, 0, d, r.weight);
        if (r.bias)
            nc_tensor_elems(spec->bias, 0, d, r.bias);
    }

    /* ---- pass 1: statistics ---- */
    double t0 = nc_now_s();
    if (d > 0 && r.nt > 0) {
        if ((rc = pass_stats(&r, &res->stats, err)))
            goto out;
        res->passes++;
    } else {
        res->stats.tokens = r.nt;
        res->stats.mean = res->stats.std = res->stats.rms = NAN;
        res->stats.min = res->stats.max = res->stats.rho = NAN;
        res->stats.scale_std = res->stats.scale_min = res->stats.scale_max = NAN;
    }
    res->time_stats_s = nc_now_s() - t0;
    const size_t used = res->stats.tokens_used;
    res->points = used * d;
    if (res->points == 0) {
        for (int j = 0; j < NC_FIT_COUNT; j++)
            if (spec->fit[j])
                snprintf(res->fits[j].status, sizeof res->fits[j].status,
                         "no usable token: nothing to fit");
        res->y_mean = res->y_sst = res->y_min = res->y_max = NAN;
        goto out;
    }

    /* ---- pass 2: bins (or raw points), affine sums, real-output check ---- */
    t0 = nc_now_s();
    bc = calloc(1, sizeof *bc);
    if (!bc) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the bins", spec->name);
        goto out;
    }
    bc->r = &r;
    bc->xmean = res->stats.mean;
    size_t max_exact = spec->max_exact_points ? spec->max_exact_points : NC_DEFAULT_MAX_EXACT;
    bc->binned = res->points > max_exact;
    double xmax = fmax(fabs(res->stats.min), fabs(res->stats.max));
    bc->map = nc_binmap_make(res->stats.rms, xmax, spec->max_bins ? spec->max_bins
                                                                  : NC_DEFAULT_BINS);
    size_t nbins = nc_binmap_count(&bc->map);
    binmem = calloc(4 * NC_SHARDS * nbins, sizeof *binmem);
    if (!binmem) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu bins", spec->name, nbins);
        goto out;
    }
    if (!bc->binned) {
        pxy = malloc(3 * res->points * sizeof *pxy);
        slot = malloc(r.nt * sizeof *slot);
        if (!pxy || !slot) {
            rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu points", spec->name,
                            res->points);
            goto out;
        }
        bc->px = pxy;
        bc->py = pxy + res->points;
        bc->pj = bc->py + res->points;
        size_t next = 0;
        for (size_t t = 0; t < r.nt; t++) {
            slot[t] = next;
            if (r.status[t] == NC_TOKEN_OK)
                next += d;
        }
        bc->slot = slot;
    }
    for (int s = 0; s < NC_SHARDS; s++) {
        bins_acc *a = &bc->acc[s];
        a->bin = binmem + (size_t)(4 * s) * nbins;
        a->ymin = INFINITY;
        a->ymax = -INFINITY;
    }
    bc->jc = spec->norm == NC_LAYERNORM ? 1.0 - 1.0 / (double)d : 1.0;
    r.pass.scratch_bytes = 3 * d * sizeof(double);
    nc_progress_begin(spec->progress, spec->name, "bins", (uint64_t)(r.nt * d));
    if ((rc = nc_pass_run(&r.pass, bins_block, bc, err)))
        goto out;
    res->passes++;
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
        nc_sum_merge(&A->real_sq, &a->real_sq);
        for (size_t b = 0; b < 4 * nbins; b++)
            A->bin[b] += a->bin[b];
    }
    res->y_mean = nc_sum_get(&A->sy) / (double)res->points;
    res->y_min = A->ymin;
    res->y_max = A->ymax;
    if (spec->y_real) {
        res->has_real = true;
        res->real_affine = spec->weight || spec->bias;
        res->real_max_abs_diff = A->real_max;
        res->real_rms_diff = sqrt(nc_sum_get(&A->real_sq) / (double)res->points);
    }
    /* the fit points: nonempty bins' means, weighted by their counts; kept
     * in the result (with J_ii) for the sweeps */
    res->binned = bc->binned;
    size_t nonempty = 0;
    for (size_t b = 0; b < nbins; b++)
        nonempty += A->bin[4 * b] != 0;
    double *bx = malloc(4 * (nonempty ? nonempty : 1) * sizeof *bx);
    if (!bx) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu bins", spec->name, nonempty);
        goto out;
    }
    double *by = bx + nonempty, *bj = by + nonempty, *bw = bj + nonempty;
    for (size_t b = 0, k = 0; b < nbins; b++) {
        const double *p = A->bin + 4 * b;
        if (p[0] == 0)
            continue;
        bx[k] = p[1] / p[0];
        by[k] = p[2] / p[0];
        bj[k] = p[3] / p[0];
        bw[k] = p[0];
        k++;
    }
    res->bins = nbins;
    res->bins_nonempty = nonempty;
    nc_points bins = {.x = bx, .y = by, .w = bw, .n = nonempty};
    nc_points raw = {.x = bc->px, .y = bc->py, .w = NULL, .n = bc->binned ? 0 : res->points};
    nc_fit_data *fd = &res->data;
    fd->points = (double)res->points;
    fd->syy = nc_sum_get(&A->syy);
    fd->sy = nc_sum_get(&A->sy);
    fd->sjj = nc_sum_get(&A->sjj);
    fd->sj = nc_sum_get(&A->sj);
    if (bc->binned) {
        *fd = (nc_fit_data){false, nonempty, bx, by, bj, bw, fd->points, fd->syy, fd->sy,
                            fd->sjj, fd->sj};
    } else {
        *fd = (nc_fit_data){true, res->points, bc->px, bc->py, bc->pj, NULL, fd->points,
                            fd->syy, fd->sy, fd->sjj, fd->sj};
        res->data_bins = bx; /* the bins feed the coarse fits, then go */
        pxy = NULL;          /* owned by the result now */
    }
    res->time_bins_s = nc_now_s() - t0;

    /* ---- fits on the points (no pass over the data) ---- */
    t0 = nc_now_s();
    affine_sums aff = {nc_sum_get(&A->sxx), nc_sum_get(&A->sxy), nc_sum_get(&A->sy), bc->xmean};
    if ((rc = nc_layer_run_fits(&r, res, &bins, &raw, res->stats.std, &aff, err)))
        goto out;
    res->time_fits_s = nc_now_s() - t0;

    /* ---- per-channel DyT: exact Newton passes ---- */
    t0 = nc_now_s();
    if (spec->fit[NC_FIT_DYT_PER_CHANNEL] && res->fits[NC_FIT_DYT].ok) {
        nc_fit_result *fr = &res->fits[NC_FIT_DYT_PER_CHANNEL];
        if ((rc = nc_layer_fit_channel(&r, res->fits[NC_FIT_DYT].params.p[0], fr, &res->passes,
                                       err)))
            goto out;
    }
    if (!spec->fit[NC_FIT_DYT])
        res->fits[NC_FIT_DYT].ok = false; /* fitted only to seed Derf / per channel */
    res->time_channel_s = nc_now_s() - t0;

    /* ---- pass: exact metrics of every fit ---- */
    t0 = nc_now_s();
    vc = calloc(1, sizeof *vc);
    if (!vc) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", spec->name);
        goto out;
    }
    vc->r = &r;
    vc->fits = res->fits;
    vc->ymean = res->y_mean;
    vc->alpha = res->fits[NC_FIT_DYT].ok ? res->fits[NC_FIT_DYT].params.p[0] : 0;
    r.pass.scratch_bytes = 2 * d * sizeof(double);
    nc_progress_begin(spec->progress, spec->name, "verify", (uint64_t)(r.nt * d));
    if ((rc = nc_pass_run(&r.pass, verify_block, vc, err)))
        goto out;
    res->passes++;
    verify_acc *V = &vc->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        verify_acc *a = &vc->acc[s];
        nc_sum_merge(&V->sst, &a->sst);
        for (int j = 0; j < NC_FIT_COUNT; j++) {
            nc_sum_merge(&V->sse[j], &a->sse[j]);
            nc_sum_merge(&V->sabs[j], &a->sabs[j]);
            V->maxe[j] = V->maxe[j] >= a->maxe[j] || V->maxe[j] != V->maxe[j] ? V->maxe[j]
                                                                              : a->maxe[j];
        }
        for (int k = 0; k < 3; k++)
            V->sat[k] += a->sat[k];
    }
    double n = (double)res->points;
    res->y_sst = nc_sum_get(&V->sst);
    for (int j = 0; j < NC_FIT_COUNT; j++) {
        nc_fit_result *fr = &res->fits[j];
        if (!fr->ok)
            continue;
        fr->sse = nc_sum_get(&V->sse[j]);
        fr->rmse = sqrt(fr->sse / n);
        fr->r2 = res->y_sst > 0 ? 1.0 - fr->sse / res->y_sst : NAN;
        fr->max_abs_err = V->maxe[j];
        fr->mean_abs_err = nc_sum_get(&V->sabs[j]) / n;
    }
    for (int k = 0; k < 3; k++)
        res->saturation[k] = vc->alpha > 0 ? (double)V->sat[k] / n : NAN;
    res->time_verify_s = nc_now_s() - t0;

out:
    nc_progress_end(spec->progress);
    if (!rc) {
        /* hand the per-token state to the result for later passes */
        res->tok = (nc_layer_tokens){r.nt, tokens, r.centre, r.inv, r.status};
        tokens = NULL;
        r.centre = r.inv = NULL;
        r.status = NULL;
    }
    free(vc);
    free(binmem);
    free(pxy);
    free(slot);
    free(bc);
    free(tokens);
    free(r.centre);
    free(r.inv);
    free(r.status);
    free(r.weight);
    free(r.bias);
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
    memset(res, 0, sizeof *res);
}
