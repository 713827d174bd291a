/*
 * layer_verify.c - the verify pass of one layer (layer_internal.h; the
 * "verify" stage of layer.h): with every fit's parameters fixed, one pass
 * over the visited tokens recomputes y = (x - c_t) * inv_t and sums, per
 * fit, the squared and absolute errors and their maximum, exactly (no
 * bins), the same for the theory curves with each token's own scale, and
 * DyT's saturation shares |alpha x| > 1, 2, 3. When the spec asks for the
 * Jacobian (nc_layer_jac), the same pass evaluates each fit's f and f'
 * together (one tanh, erf or square root for both: surrogate.h "both") and
 * gathers the exact diagonal J_ii = inv (a - y_i^2/d) against every f'
 * and the closed forms of ||J||_F^2 and the off-diagonal energy per token
 * (jac_forms.h), so the Jacobian comparison needs no pass of its own.
 *
 * A token is taken a chunk of VCHUNK channels at a time, so that its rows
 * of y, f, f', u and J_ii stay in L1 while every fit goes over them. The
 * partial sums are per lane (core/sum.h, element i in lane i mod NC_LANES)
 * and kept across the token's chunks, so they have the bits of one sweep
 * over the whole row; each token's totals then go into compensated sums.
 *
 * With the token bootstrap on (layer.h boot_replicates), each token's totals
 * also go into the sums of its block (layer_internal.h BQ_*), and the pass
 * adds the scores of DyT and of the affine map, sum r df/dp with r = y - f,
 * that the bootstrap's linearised refits need. A shard's tokens cover a
 * contiguous range of blocks, so each shard sums into its own rows and the
 * rows are merged in shard order.
 *
 * Legend as in layer.c. Every accumulator is per shard and merged in shard
 * order, so results do not depend on the thread count.
 *
 * Left out: the fits themselves (layer_fits.c, channel.c); what the
 * Jacobian comparison makes of its sums (jacobian.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/codetab.h"
#include "analysis/jac_forms.h"
#include "analysis/layer_internal.h"
#include "core/sum.h"
#include "core/v4.h"
#include "core/vmath.h"
#include "util/bigmem.h"

/* Error sums: one slot per fit, then the two per-token theory curves. */
#define NSLOT (NC_FIT_COUNT + 2)
#define SLOT_TOK NC_FIT_COUNT

/* Channels per chunk: a multiple of NC_LANES (so lanes continue across
 * chunks); five rows of it take 20 KB. */
#define VCHUNK 512

typedef struct verify_acc {
    nc_sum sse[NSLOT], sabs[NSLOT];
    double maxe[NSLOT];
    nc_sum sst;
    size_t sat[3];
    nc_jac_acc jac; /* the Jacobian diagonal's sums (jac_forms.h) */
} verify_acc;

typedef struct verify_ctx {
    run *r;
    const nc_fit_result *fits;
    int nfit, fid[NC_FIT_COUNT]; /* the fits that are ok, in id order */
    /* for a 16-bit input (codetab.h): f and f' of each fit by code (NULL:
     * evaluated), and tanh(alpha x) of the per-channel fit */
    bool tables;
    const double *ftab[NC_FIT_COUNT], *fptab[NC_FIT_COUNT], *ttab;
    double ymean, alpha;         /* alpha: DyT's, for the saturation shares (0: none) */
    bool tok[2];                 /* the per-token theory curves to evaluate */
    nc_layer_jac *jac;           /* NULL: no Jacobian sums */
    /* the token bootstrap's block sums: shard s sums into bs[s], its rows the
     * blocks blo[s] ..; NULL without the bootstrap */
    nc_boot_blocks bb;
    double *bs[NC_SHARDS];
    size_t blo[NC_SHARDS], bn[NC_SHARDS];
    double dyt_beta, dyt_invg;   /* DyT's beta and 1/gamma (scores) */
    verify_acc acc[NC_SHARDS];
} verify_ctx;

/* One token's partial sums, per lane, kept across its chunks. */
typedef struct token_lanes {
    double sst[NC_LANES];
    double sse[NSLOT][NC_LANES], sabs[NSLOT][NC_LANES], m[NSLOT][NC_LANES];
    double js[NC_FIT_COUNT][NC_LANES], jm[NC_FIT_COUNT][NC_LANES]; /* by fit slot k */
    double st[5][NC_LANES]; /* sum y^2, y, J_ii^2, (J_ii y)^2, y^4 */
    double sdev[NC_LANES];  /* sum (y - ymean) */
    double gs[5][NC_LANES]; /* scores: DyT's alpha, gamma, beta; the affine map's x, 1 */
} token_lanes;

/* Per-thread scratch: a chunk's rows and the token's lanes. */
typedef struct verify_scratch {
    double y[VCHUNK], f[VCHUNK], fp[VCHUNK], u[VCHUNK], jd[VCHUNK];
    token_lanes L;
} verify_scratch;

/* Lanes sse += e^2, sabs += e, m = max(m, e) over e = |y - f|, n points of
 * a chunk (a NaN error makes the SSE NaN, which the report shows as null;
 * the maximum passes over it). */
NC_VM_INLINE void err_lanes(const double *y, const double *f, size_t n, double *sse,
                            double *sabs, double *m)
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    v4d s0 = V4(sse), s1 = V4(sse + 4), a0 = V4(sabs), a1 = V4(sabs + 4);
    v4d m0 = V4(m), m1 = V4(m + 4);
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d e0 = (v4d)((v4i)(V4(y + i) - V4(f + i)) & no_sign);
        v4d e1 = (v4d)((v4i)(V4(y + i + 4) - V4(f + i + 4)) & no_sign);
        s0 += e0 * e0;
        s1 += e1 * e1;
        a0 += e0;
        a1 += e1;
        m0 = NC_JAC_PICK(e0 > m0, e0, m0);
        m1 = NC_JAC_PICK(e1 > m1, e1, m1);
    }
    V4(sse) = s0;
    V4(sse + 4) = s1;
    V4(sabs) = a0;
    V4(sabs + 4) = a1;
    V4(m) = m0;
    V4(m + 4) = m1;
    for (int l = 0; i < n; i++, l++) {
        double e = fabs(y[i] - f[i]);
        sse[l] += e * e;
        sabs[l] += e;
        m[l] = e > m[l] ? e : m[l];
    }
}

/* y = (x - c) inv of a chunk and its lanes of sum (y - ym)^2; with jd, also
 * J_ii = inv (a - y^2/d) and the lanes of the Jacobian's sums
 * (jac_forms.h nc_jac_diag_lanes). */
NC_VM_INLINE void chunk_y(const double *x, size_t n, double c, double inv, double ym, double a,
                          double dd, double *y, double *jd, token_lanes *L)
{
    size_t i = 0;
    v4d q0 = V4(L->sst), q1 = V4(L->sst + 4), s0 = V4(L->sdev), s1 = V4(L->sdev + 4);
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d y0 = (V4(x + i) - c) * inv, y1 = (V4(x + i + 4) - c) * inv;
        V4(y + i) = y0;
        V4(y + i + 4) = y1;
        q0 += (y0 - ym) * (y0 - ym);
        q1 += (y1 - ym) * (y1 - ym);
        s0 += y0 - ym;
        s1 += y1 - ym;
    }
    V4(L->sst) = q0;
    V4(L->sst + 4) = q1;
    V4(L->sdev) = s0;
    V4(L->sdev + 4) = s1;
    for (int l = 0; i < n; i++, l++) {
        y[i] = (x[i] - c) * inv;
        L->sst[l] += (y[i] - ym) * (y[i] - ym);
        L->sdev[l] += y[i] - ym;
    }
    if (jd)
        nc_jac_diag_lanes(y, n, inv, a, dd, jd, L->st);
}

/* DyT's scores over a chunk: with r = y - f and T = tanh(alpha x) = (f -
 * beta) / gamma, lanes of sum r x (1 - T^2) (times gamma: d f / d alpha),
 * sum r T (d f / d gamma) and sum r (d f / d beta). */
NC_VM_INLINE void score_dyt(const double *restrict y, const double *restrict f,
                            const double *restrict x, size_t n, double beta, double invg,
                            double *restrict ga, double *restrict gg, double *restrict gb)
{
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++) {
            double r = y[i + l] - f[i + l], T = (f[i + l] - beta) * invg;
            ga[l] += r * x[i + l] * (1.0 - T * T);
            gg[l] += r * T;
            gb[l] += r;
        }
    for (int l = 0; i < n; i++, l++) {
        double r = y[i] - f[i], T = (f[i] - beta) * invg;
        ga[l] += r * x[i] * (1.0 - T * T);
        gg[l] += r * T;
        gb[l] += r;
    }
}

/* The affine map's scores over a chunk: lanes of sum r x and sum r. */
NC_VM_INLINE void score_lin(const double *restrict y, const double *restrict f,
                            const double *restrict x, size_t n, double *restrict gx,
                            double *restrict g1)
{
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++) {
            double r = y[i + l] - f[i + l];
            gx[l] += r * x[i + l];
            g1[l] += r;
        }
    for (int l = 0; i < n; i++, l++) {
        gx[l] += (y[i] - f[i]) * x[i];
        g1[l] += y[i] - f[i];
    }
}

/* out[k] = T[code[k]] (restrict: so that the loop vectorises as gathers) */
NC_VM_INLINE void gather(const double *restrict T, const uint16_t *restrict code, size_t n,
                         double *restrict out)
{
    for (size_t k = 0; k < n; k++)
        out[k] = T[code[k]];
}

/* dytc_both's expressions (surrogate.c) with T = tanh(alpha x) looked up:
 * f = g_i T + b_i and, with fp, f' = alpha g_i (1 - T^2). */
NC_VM_INLINE void dytc_lookup(double alpha, const double *restrict g, const double *restrict b,
                              const double *restrict T, const uint16_t *restrict code, size_t n,
                              double *restrict f, double *restrict fp)
{
    for (size_t k = 0; k < n; k++)
        f[k] = g[k] * T[code[k]] + b[k];
    if (fp)
        for (size_t k = 0; k < n; k++)
            fp[k] = alpha * g[k] * (1.0 - T[code[k]] * T[code[k]]);
}

/* f (and f' into fp) of fit id over a chunk, from the tables by code. */
NC_VM_INLINE void lookup(const verify_ctx *ctx, int id, size_t i0, const uint16_t *code,
                         size_t n, double *f, double *fp)
{
    if (id == NC_FIT_DYT_PER_CHANNEL) {
        const nc_params *p = &ctx->fits[id].params;
        dytc_lookup(p->p[0], p->pc + i0, p->pc + p->d + i0, ctx->ttab, code, n, f, fp);
        return;
    }
    gather(ctx->ftab[id], code, n, f);
    if (fp)
        gather(ctx->fptab[id], code, n, fp);
}

/* One chunk of a token: channels [i0, i0 + n) at x (the row's x + i0),
 * with their codes (or NULL). */
NC_VM_INLINE void verify_chunk(const verify_ctx *ctx, size_t i0, const double *x,
                               const uint16_t *code, size_t n, double c, double inv,
                               const nc_params *theory, verify_scratch *S)
{
    const run *r = ctx->r;
    const size_t d = r->d;
    token_lanes *L = &S->L;
    chunk_y(x, n, c, inv, ctx->ymean, diag_a(r->spec->norm, d), (double)d, S->y,
            ctx->jac ? S->jd : NULL, L);
    for (int k = 0; k < ctx->nfit; k++) {
        const int id = ctx->fid[k];
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        if (code && (ctx->ftab[id] || id == NC_FIT_DYT_PER_CHANNEL))
            lookup(ctx, id, i0, code, n, S->f, ctx->jac ? S->fp : NULL);
        else if (ctx->jac)
            s->both(&ctx->fits[id].params, i0, x, n, S->f, S->fp);
        else
            s->eval(&ctx->fits[id].params, i0, x, n, S->f);
        if (ctx->jac)
            nc_jac_diff_lanes(S->jd, S->fp, n, L->js[k], L->jm[k]);
        err_lanes(S->y, S->f, n, L->sse[id], L->sabs[id], L->m[id]);
        if (ctx->bs[0] && id == NC_FIT_DYT)
            score_dyt(S->y, S->f, x, n, ctx->dyt_beta, ctx->dyt_invg, L->gs[0], L->gs[1],
                      L->gs[2]);
        else if (ctx->bs[0] && id == NC_FIT_LINEAR)
            score_lin(S->y, S->f, x, n, L->gs[3], L->gs[4]);
    }
    if (ctx->tok[0] || ctx->tok[1])
        for (size_t i = 0; i < n; i++)
            S->u[i] = x[i] - c;
    for (int k = 0; k < 2; k++) {
        if (!ctx->tok[k])
            continue;
        nc_surrogate_get(k == 0 ? NC_FIT_DYT : NC_FIT_DYISRU)->eval(&theory[k], 0, S->u, n, S->f);
        err_lanes(S->y, S->f, n, L->sse[SLOT_TOK + k], L->sabs[SLOT_TOK + k],
                  L->m[SLOT_TOK + k]);
    }
}

/* The token's block sums (layer_internal.h BQ_*), into the row of its block
 * among shard's rows; sse[j]: the token's SSE per slot (NaN: not ok). */
static void token_block_sums(const verify_ctx *ctx, int shard, size_t t, double sst,
                             const double *sse, const token_lanes *L)
{
    const run *r = ctx->r;
    size_t b = nc_boot_block_of(&ctx->bb, r->tokens ? r->tokens[t] : t);
    double *row = ctx->bs[shard] + (b - ctx->blo[shard]) * BQ_COUNT;
    row[BQ_N] += (double)r->d;
    row[BQ_SST] += sst;
    row[BQ_SDEV] += nc_lanes_total(L->sdev);
    for (int j = 0; j < NSLOT; j++)
        row[BQ_SSE + j] += sse[j];
    for (int k = 0; k < 3; k++)
        row[BQ_GDYT + k] += nc_lanes_total(L->gs[k]);
    for (int k = 0; k < 2; k++)
        row[BQ_GLIN + k] += nc_lanes_total(L->gs[3 + k]);
}

/* The token's totals into the shard's sums (and the Jacobian's per-token
 * arrays at t, and its block's sums). */
static void token_done(const verify_ctx *ctx, verify_acc *a, int shard, size_t t, double inv,
                       const token_lanes *L)
{
    const double sst = nc_lanes_total(L->sst);
    double sse[NSLOT];
    nc_sum_add(&a->sst, sst);
    for (int j = 0; j < NSLOT; j++) {
        sse[j] = NAN;
        if (j < NC_FIT_COUNT ? !ctx->fits[j].ok : !ctx->tok[j - SLOT_TOK])
            continue;
        sse[j] = nc_lanes_total(L->sse[j]);
        nc_sum_add(&a->sse[j], sse[j]);
        nc_sum_add(&a->sabs[j], nc_lanes_total(L->sabs[j]));
        for (int l = 0; l < NC_LANES; l++)
            a->maxe[j] = L->m[j][l] > a->maxe[j] ? L->m[j][l] : a->maxe[j];
    }
    if (ctx->bs[0])
        token_block_sums(ctx, shard, t, sst, sse, L);
    nc_layer_jac *J = ctx->jac;
    if (!J)
        return;
    double sums[5], frob, off;
    for (int k = 0; k < 5; k++)
        sums[k] = nc_lanes_total(L->st[k]);
    nc_jac_acc_token(&a->jac, ctx->r->spec->norm, sums, inv, ctx->r->d, &frob, &off);
    J->frob[t] = frob;
    J->off[t] = off;
    for (int k = 0; k < ctx->nfit; k++)
        J->num[k][t] = nc_jac_acc_fit(&a->jac, ctx->fid[k], L->js[k], L->jm[k]) + off;
}

NC_VMATH_CLONES static void verify_block(void *vctx, int shard, size_t t0, size_t nt,
                                         const double *rows, const uint16_t *codes, void *scratch)
{
    verify_ctx *ctx = vctx;
    run *r = ctx->r;
    verify_acc *a = &ctx->acc[shard];
    verify_scratch *S = scratch;
    const size_t d = r->d;
    const nc_norm_kind norm = r->spec->norm;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (r->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double c = r->centre[t], inv = r->inv[t];
        nc_params theory[2] = {nc_dyt_theory_params(norm, 1.0 / inv, d),
                               nc_dyisru_theory_params(norm, 1.0 / inv, d)};
        memset(&S->L, 0, sizeof S->L);
        const uint16_t *code = ctx->tables && codes ? codes + k * d : NULL;
        for (size_t i0 = 0; i0 < d; i0 += VCHUNK)
            verify_chunk(ctx, i0, x + i0, code ? code + i0 : NULL,
                         d - i0 < VCHUNK ? d - i0 : VCHUNK, c, inv, theory, S);
        token_done(ctx, a, shard, t, inv, &S->L);
        if (ctx->alpha > 0) {
            size_t s1 = 0, s2 = 0, s3 = 0;
            const double al = ctx->alpha;
            for (size_t i = 0; i < d; i++) {
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
        nc_jac_acc_merge(&V->jac, &a->jac);
    }
}

/* The Jacobian block's per-token arrays (NaN until a used token fills
 * them) and the fits it compares. */
static int jac_alloc(const run *r, const nc_layer_result *res, nc_layer_jac *J, nc_err *err)
{
    memset(J, 0, sizeof *J);
    for (int j = 0; j < NC_FIT_COUNT; j++)
        if (res->fits[j].ok)
            J->sid[J->ns++] = j;
    const size_t n = r->nt ? r->nt : 1;
    if (!(J->frob = malloc((2 + (size_t)J->ns) * n * sizeof *J->frob)))
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the Jacobian sums",
                          r->spec->name);
    for (size_t k = 0; k < (2 + (size_t)J->ns) * n; k++)
        J->frob[k] = NAN;
    J->off = J->frob + n;
    for (int k = 0; k < J->ns; k++)
        J->num[k] = J->off + (size_t)(k + 1) * n;
    return 0;
}

nc_boot_blocks nc_layer_boot_blocks(const run *r)
{
    return nc_boot_blocks_make(r->N, r->spec->token_block, NC_BOOT_MAX_BLOCKS);
}

/* The bootstrap's block sums: res->boot.sums [blocks][BQ_COUNT] and the
 * shards' rows (one block of memory at vc->bs[0], freed by the caller). */
static int boot_alloc(verify_ctx *vc, const run *r, nc_layer_result *res, nc_err *err)
{
    vc->bb = nc_layer_boot_blocks(r);
    size_t rows = 0;
    for (int s = 0; s < NC_SHARDS; s++) {
        size_t a = nc_shard_begin(r->nt, s), e = nc_shard_begin(r->nt, s + 1);
        vc->bn[s] = 0;
        if (a == e)
            continue;
        vc->blo[s] = nc_boot_block_of(&vc->bb, r->tokens ? r->tokens[a] : a);
        vc->bn[s] = nc_boot_block_of(&vc->bb, r->tokens ? r->tokens[e - 1] : e - 1) + 1 -
                    vc->blo[s];
        rows += vc->bn[s];
    }
    double *mem = calloc((rows ? rows : 1) * BQ_COUNT, sizeof *mem);
    res->boot.sums = calloc((vc->bb.nb ? vc->bb.nb : 1) * BQ_COUNT, sizeof *res->boot.sums);
    if (!mem || !res->boot.sums) {
        free(mem);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the bootstrap's block sums",
                          r->spec->name);
    }
    for (int s = 0, used = 0; s < NC_SHARDS; used += (int)vc->bn[s], s++)
        vc->bs[s] = mem + (size_t)used * BQ_COUNT;
    const nc_fit_result *dyt = &res->fits[NC_FIT_DYT];
    vc->dyt_beta = dyt->ok ? dyt->params.p[2] : 0;
    vc->dyt_invg = dyt->ok && dyt->params.p[1] != 0 ? 1.0 / dyt->params.p[1] : NAN;
    return 0;
}

/* The shards' rows into res->boot.sums, in shard order. */
static void boot_merge(const verify_ctx *vc, nc_layer_result *res)
{
    for (int s = 0; s < NC_SHARDS; s++)
        for (size_t k = 0; k < vc->bn[s] * BQ_COUNT; k++)
            res->boot.sums[vc->blo[s] * BQ_COUNT + k] += vc->bs[s][k];
}

/* The value tables' block: f and f' per fit, and tanh(alpha x). */
#define TABLES_BYTES ((2 * NC_FIT_COUNT + 1) * (size_t)65536 * sizeof(double))

/* For a 16-bit input with enough points (codetab.h): f and f' of every
 * fit but the affine one, and tanh(alpha x) of the per-channel fit, over
 * the codes the layer can hold, into *mem (owned by the caller; NULL:
 * evaluate directly). */
static int make_tables(verify_ctx *vc, const nc_layer_result *res, double **mem, nc_err *err)
{
    const run *r = vc->r;
    *mem = NULL;
    if (!nc_codetab_wanted(r->spec->x->dtype, res->points))
        return 0;
    nc_codetab_span span;
    double amax = fmax(fabs(res->stats.min), fabs(res->stats.max));
    if (nc_codetab_span_make(r->spec->x->dtype, amax, &span) ||
        !(*mem = nc_big_alloc(TABLES_BYTES))) {
        nc_codetab_span_free(&span);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the value tables",
                          r->spec->name);
    }
    double *next = *mem;
    for (int k = 0; k < vc->nfit; k++) {
        const int id = vc->fid[k];
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        const nc_params *p = &vc->fits[id].params;
        if (id == NC_FIT_LINEAR)
            continue; /* cheaper evaluated */
        double *T = next;
        next += 65536;
        for (int h = 0; h < 2; h++) {
            const uint32_t lo = span.lo[h], n = span.hi[h] - span.lo[h];
            const double *xv = span.x + lo;
            if (id == NC_FIT_DYT_PER_CHANNEL) {
                const double alpha = p->p[0];
                for (uint32_t j = 0; j < n; j++)
                    T[lo + j] = nc_tanh(alpha * xv[j]);
            } else {
                s->both(p, 0, xv, n, T + lo, next + lo);
            }
        }
        if (id == NC_FIT_DYT_PER_CHANNEL) {
            vc->ttab = T;
        } else {
            vc->ftab[id] = T;
            vc->fptab[id] = next;
            next += 65536;
        }
    }
    vc->tables = true;
    nc_codetab_span_free(&span);
    return 0;
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
    for (int j = 0; j < NC_FIT_COUNT; j++)
        if (res->fits[j].ok)
            vc->fid[vc->nfit++] = j;
    vc->ymean = res->y_mean;
    vc->alpha = res->fits[NC_FIT_DYT].ok ? res->fits[NC_FIT_DYT].params.p[0] : 0;
    vc->tok[0] = spec->fit[NC_FIT_DYT_THEORY];
    vc->tok[1] = spec->fit[NC_FIT_DYISRU_THEORY];
    int rc = 0;
    double *tables = NULL;
    if ((rc = make_tables(vc, res, &tables, err)))
        goto out;
    if (spec->jacobian) {
        if ((rc = jac_alloc(r, res, &res->jac, err)))
            goto out;
        vc->jac = &res->jac;
    }
    if (spec->boot_replicates > 0 && (rc = boot_alloc(vc, r, res, err)))
        goto out;
    r->pass.scratch_bytes = sizeof(verify_scratch);
    r->pass.codes = tables != NULL;
    nc_progress_begin(spec->progress, spec->name, "verify", (uint64_t)(r->nt * r->d));
    rc = nc_pass_run(&r->pass, verify_block, vc, err);
    r->pass.codes = false;
    if (rc)
        goto out;
    res->passes++;
    verify_merge(vc);
    if (vc->bs[0])
        boot_merge(vc, res);
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
    if (vc->jac)
        nc_jac_acc_finish(&V->jac, vc->jac);
out:
    nc_big_free(tables, TABLES_BYTES);
    free(vc->bs[0]);
    free(vc);
    return rc;
}
