/*
 * layer_verify.c - the verify pass of one layer (layer_internal.h; the
 * "verify" stage of layer.h): with every fit's parameters fixed, one pass
 * over the visited tokens recomputes y = (x - c_t) * inv_t and sums, per
 * fit, the squared and absolute errors and their maximum, exactly (no
 * bins), the same for the theory curves with each token's own scale, and
 * DyT's saturation shares |alpha x| > 1, 2, 3.
 *
 * Legend as in layer.c. Every accumulator is per shard and merged in shard
 * order, so results do not depend on the thread count.
 *
 * Left out: the fits themselves (layer_fits.c, channel.c).
 */
#include <math.h>
#include <stdlib.h>

#include "analysis/layer_internal.h"
#include "core/sum.h"
#include "core/vmath.h"

/* Error sums: one slot per fit, then the two per-token theory curves. */
#define NSLOT (NC_FIT_COUNT + 2)
#define SLOT_TOK NC_FIT_COUNT

typedef struct verify_acc {
    nc_sum sse[NSLOT], sabs[NSLOT];
    double maxe[NSLOT];
    nc_sum sst;
    size_t sat[3];
} verify_acc;

typedef struct verify_ctx {
    run *r;
    const nc_fit_result *fits;
    double ymean, alpha; /* alpha: DyT's, for the saturation shares (0: none) */
    bool tok[2];         /* the per-token theory curves to evaluate */
    verify_acc acc[NC_SHARDS];
} verify_ctx;

/* Adds |y - f| over d points to slot j of a. */
static inline void add_errors(verify_acc *a, int j, const double *y, const double *f, size_t d)
{
    double sse[NC_LANES] = {0}, sabs[NC_LANES] = {0}, m[NC_LANES] = {0};
    size_t i;
    for (i = 0; i + NC_LANES <= d; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++) {
            double e = fabs(y[i + l] - f[i + l]);
            sse[l] += e * e;
            sabs[l] += e;
            m[l] = e > m[l] ? e : m[l];
        }
    for (int l = 0; i < d; i++, l++) {
        double e = fabs(y[i] - f[i]);
        sse[l] += e * e;
        sabs[l] += e;
        m[l] = e > m[l] ? e : m[l];
    }
    nc_sum_add(&a->sse[j], nc_lanes_total(sse));
    nc_sum_add(&a->sabs[j], nc_lanes_total(sabs));
    /* a NaN error makes the SSE NaN, which the report shows as null */
    for (int l = 0; l < NC_LANES; l++)
        a->maxe[j] = m[l] > a->maxe[j] ? m[l] : a->maxe[j];
}

/* The theory curves with token t's own scale 1/inv at u = x - c. */
static inline void add_token_theory(const verify_ctx *ctx, verify_acc *a, const double *x,
                                    double c, double inv, const double *y, double *u, double *f)
{
    const run *r = ctx->r;
    const size_t d = r->d;
    const nc_norm_kind norm = r->spec->norm;
    for (size_t i = 0; i < d; i++)
        u[i] = x[i] - c;
    if (ctx->tok[0]) {
        nc_params p = nc_dyt_theory_params(norm, 1.0 / inv, d);
        nc_surrogate_get(NC_FIT_DYT)->eval(&p, 0, u, d, f);
        add_errors(a, SLOT_TOK, y, f, d);
    }
    if (ctx->tok[1]) {
        nc_params p = nc_dyisru_theory_params(norm, 1.0 / inv, d);
        nc_surrogate_get(NC_FIT_DYISRU)->eval(&p, 0, u, d, f);
        add_errors(a, SLOT_TOK + 1, y, f, d);
    }
}

NC_VMATH_CLONES static void verify_block(void *vctx, int shard, size_t t0, size_t nt,
                                         const double *rows, void *scratch)
{
    verify_ctx *ctx = vctx;
    run *r = ctx->r;
    verify_acc *a = &ctx->acc[shard];
    const size_t d = r->d;
    double *y = scratch, *f = y + d, *u = f + d;
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
            add_errors(a, fit, y, f, d);
        }
        if (ctx->tok[0] || ctx->tok[1])
            add_token_theory(ctx, a, x, c, inv, y, u, f);
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

/* Merges the shards' sums into vc->acc[0], in shard order. */
static void verify_merge(verify_ctx *vc)
{
    verify_acc *V = &vc->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        verify_acc *a = &vc->acc[s];
        nc_sum_merge(&V->sst, &a->sst);
        for (int j = 0; j < NSLOT; j++) {
            nc_sum_merge(&V->sse[j], &a->sse[j]);
            nc_sum_merge(&V->sabs[j], &a->sabs[j]);
            V->maxe[j] = V->maxe[j] >= a->maxe[j] || V->maxe[j] != V->maxe[j] ? V->maxe[j]
                                                                              : a->maxe[j];
        }
        for (int k = 0; k < 3; k++)
            V->sat[k] += a->sat[k];
    }
}

/* Stage 5: the verify pass: exact SSE, RMSE, R^2, max and mean absolute
 * error of every fit at its parameters, and DyT's saturation shares. */
int nc_layer_verify(run *r, nc_layer_result *res, nc_err *err)
{
    const nc_layer_spec *spec = r->spec;
    verify_ctx *vc = calloc(1, sizeof *vc);
    if (!vc)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", spec->name);
    vc->r = r;
    vc->fits = res->fits;
    vc->ymean = res->y_mean;
    vc->alpha = res->fits[NC_FIT_DYT].ok ? res->fits[NC_FIT_DYT].params.p[0] : 0;
    vc->tok[0] = spec->fit[NC_FIT_DYT_THEORY];
    vc->tok[1] = spec->fit[NC_FIT_DYISRU_THEORY];
    r->pass.scratch_bytes = 3 * r->d * sizeof(double);
    nc_progress_begin(spec->progress, spec->name, "verify", (uint64_t)(r->nt * r->d));
    int rc = nc_pass_run(&r->pass, verify_block, vc, err);
    if (rc) {
        free(vc);
        return rc;
    }
    res->passes++;
    verify_merge(vc);
    const verify_acc *V = &vc->acc[0];
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
    for (int k = 0; k < 2; k++) {
        nc_theory_token *tt = &res->theory_token[k];
        if (!vc->tok[k])
            continue;
        tt->ok = true;
        tt->sse = nc_sum_get(&V->sse[SLOT_TOK + k]);
        tt->rmse = sqrt(tt->sse / n);
        tt->r2 = res->y_sst > 0 ? 1.0 - tt->sse / res->y_sst : NAN;
        tt->max_abs_err = V->maxe[SLOT_TOK + k];
        tt->mean_abs_err = nc_sum_get(&V->sabs[SLOT_TOK + k]) / n;
    }
    for (int k = 0; k < 3; k++)
        res->saturation[k] = vc->alpha > 0 ? (double)V->sat[k] / n : NAN;
    free(vc);
    return 0;
}

