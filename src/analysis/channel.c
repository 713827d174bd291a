/*
 * channel.c - DyT with per-channel gamma_i, beta_i (the fit
 * "dyt_per_channel" of surrogate.h), fitted exactly by Newton passes over
 * the layer's tokens (layer_internal.h; the "channel" stage of layer.h).
 *
 * Per channel i, f_i(x) = gamma_i tanh(alpha x) + beta_i with one alpha for
 * all channels. For a given alpha the best gamma_i, beta_i are a 2 x 2
 * least-squares solve per channel from sums over the tokens, so the
 * objective is profiled to one dimension, S(alpha), whose first two
 * derivatives come from the same pass (chan_objective). Newton runs on
 * log(alpha): first on a strided sample of the tokens, then on all of them.
 *
 * Legend: N tokens, d channels; t a visited token, i a channel; x the
 * input, y = (x - c_t) * inv_t the norm's output before the affine part
 * (norm.h); T = tanh(alpha x). Accumulators are per shard and merged in
 * shard order (core/par.h).
 *
 * Left out: the pooled DyT fit that gives the starting alpha (layer_fits.c),
 * and the exact error metrics at the result (the verify pass, layer.c).
 */
#include "analysis/layer_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/par.h"
#include "core/vmath.h"

/* Newton passes for the per-channel DyT fit. */
#define CHANNEL_MAX_PASSES 30
#define CHANNEL_TOL 1e-11 /* on the step in log(alpha) */
#define CHANNEL_FINISH 1e-5 /* a step below this is applied without another pass */

/* The per-channel sums of a pass, each [d]: T, T^2, yT, their first (1) and
 * second (2) derivatives in alpha, then y and y^2. */
enum { CH_T, CH_TT, CH_YT, CH_T1, CH_TT1, CH_YT1, CH_T2, CH_TT2, CH_YT2, CH_Y, CH_YY, CH_N };

/* The sample of tokens the first Newton passes of the per-channel fit use:
 * one token in CHANNEL_SAMPLE_STRIDE, but at least CHANNEL_SAMPLE_POINTS
 * points. Newton then needs only about two passes over all tokens. */
#define CHANNEL_SAMPLE_STRIDE 8
#define CHANNEL_SAMPLE_POINTS ((size_t)1 << 20)
#define CHANNEL_SAMPLE_TOL 1e-4 /* step in log(alpha) that ends the sampled stage */

typedef struct chan_ctx {
    run *r;
    double alpha;
    bool with_y;            /* also sum y and y^2 (they do not depend on alpha: once) */
    double *acc[NC_SHARDS]; /* [CH_N * d] each */
    size_t used[NC_SHARDS]; /* tokens with an output */
} chan_ctx;

/* Channels per tile: the tile's eleven accumulator rows (5.6 KB) stay in
 * L1 while every token of a block goes through them; a whole-row sweep per
 * token instead streamed all eleven [d] rows through L2 for each token,
 * and that traffic, not the arithmetic, set the pass's speed. */
#define CHANNEL_TILE 64

/* For channels [0, n) of one token (x, its centre c and 1/scale inv), with
 * T = tanh(alpha x), T1 = dT/dalpha = x (1 - T^2), T2 = d2T/dalpha2 =
 * -2 x T T1 and y = (x - c) inv: the nine sums of T, T^2, yT and their
 * first and second alpha-derivatives. restrict parameters (not locals) are
 * what lets GCC vectorise one loop with nine outputs. */
NC_VM_INLINE void chan_tile(size_t n, const double *restrict x, double c, double inv,
                            double alpha, double *restrict sT, double *restrict sTT,
                            double *restrict sYT, double *restrict sT1, double *restrict sTT1,
                            double *restrict sYT1, double *restrict sT2, double *restrict sTT2,
                            double *restrict sYT2)
{
    for (size_t i = 0; i < n; i++) {
        double y = (x[i] - c) * inv;
        double T = nc_tanh(alpha * x[i]);
        double T1 = x[i] * (1.0 - T * T);
        double T2 = -2.0 * x[i] * T * T1;
        sT[i] += T;
        sTT[i] += T * T;
        sYT[i] += y * T;
        sT1[i] += T1;
        sTT1[i] += T * T1;
        sYT1[i] += y * T1;
        sT2[i] += T2;
        sTT2[i] += T1 * T1 + T * T2;
        sYT2[i] += y * T2;
    }
}

/* sum y and sum y^2 for channels [0, n) of one token */
NC_VM_INLINE void chan_tile_y(size_t n, const double *restrict x, double c, double inv,
                              double *restrict sy, double *restrict syy)
{
    for (size_t i = 0; i < n; i++) {
        double y = (x[i] - c) * inv;
        sy[i] += y;
        syy[i] += y * y;
    }
}

/* Per channel, the sums over tokens of T, T^2, yT and of their first and
 * second derivatives in alpha (chan_tile), and, on the first pass, of y
 * and y^2: tile by tile of channels, each tile over all tokens of the
 * block. The order of additions per channel is the tokens' order, as
 * before tiling. */
NC_VMATH_CLONES static void chan_block(void *vctx, int shard, size_t t0, size_t nt,
                                       const double *rows, void *scratch)
{
    (void)scratch;
    chan_ctx *ctx = vctx;
    run *r = ctx->r;
    const size_t d = r->d;
    double *A = ctx->acc[shard];
    for (size_t k = 0; k < nt; k++)
        ctx->used[shard] += r->status[t0 + k] == NC_TOKEN_OK;
    for (size_t i0 = 0; i0 < d; i0 += CHANNEL_TILE) {
        size_t n = d - i0 < CHANNEL_TILE ? d - i0 : CHANNEL_TILE;
        for (size_t k = 0; k < nt; k++) {
            size_t t = t0 + k;
            if (r->status[t] != NC_TOKEN_OK)
                continue;
            const double *x = rows + k * d + i0;
            chan_tile(n, x, r->centre[t], r->inv[t], ctx->alpha, A + CH_T * d + i0,
                      A + CH_TT * d + i0, A + CH_YT * d + i0, A + CH_T1 * d + i0,
                      A + CH_TT1 * d + i0, A + CH_YT1 * d + i0, A + CH_T2 * d + i0,
                      A + CH_TT2 * d + i0, A + CH_YT2 * d + i0);
            if (ctx->with_y)
                chan_tile_y(n, x, r->centre[t], r->inv[t], A + CH_Y * d + i0,
                            A + CH_YY * d + i0);
        }
    }
}

/* Profiled objective S(alpha) = sum_i min_{g,b} sum_t (y - g T - b)^2 and its
 * first two derivatives in alpha, from the merged sums; fills gamma_i, beta_i.
 * M = [[sum T^2, sum T], [sum T, n]], v = [sum yT, sum y], z = M^-1 v
 * (z' = dz/dalpha into dz[2d]; ysum[2d]: sum y and sum y^2 per channel):
 *   S_i   = Syy - v.z
 *   S_i'  = -2 v'.z + z.M'.z
 *   S_i'' = -2 v''.z + z.M''.z - 2 z'.M.z',  z' = M^-1 (v' - M' z)          */
static void chan_objective(const double *A, const double *ysum, size_t d, double n,
                           double *gamma, double *beta, double *dz, double *S, double *S1,
                           double *S2)
{
    double s0 = 0, s1 = 0, s2 = 0;
    for (size_t i = 0; i < d; i++) {
        double a = A[CH_T * d + i], b = A[CH_TT * d + i], cy = A[CH_YT * d + i];
        double a1 = A[CH_T1 * d + i], b1 = 2 * A[CH_TT1 * d + i], cy1 = A[CH_YT1 * d + i];
        double a2 = A[CH_T2 * d + i], b2 = 2 * A[CH_TT2 * d + i], cy2 = A[CH_YT2 * d + i];
        double sy = ysum[i], syy = ysum[d + i];
        double det = n * b - a * a;
        if (!(det > 1e-14 * n * b)) {
            /* T constant over the channel: only the offset is determined */
            gamma[i] = 0;
            beta[i] = sy / n;
            dz[i] = dz[d + i] = 0;
            s0 += syy - sy * sy / n;
            continue;
        }
        double g = (n * cy - a * sy) / det, bt = (b * sy - a * cy) / det;
        gamma[i] = g;
        beta[i] = bt;
        s0 += syy - (cy * g + sy * bt);
        /* M' z and v' - M' z */
        double mz0 = b1 * g + a1 * bt, mz1 = a1 * g;
        s1 += -2 * cy1 * g + (g * mz0 + bt * mz1);
        double r0 = cy1 - mz0, r1 = -mz1;
        double zp0 = (n * r0 - a * r1) / det, zp1 = (b * r1 - a * r0) / det;
        dz[i] = zp0; /* d gamma_i / d alpha */
        dz[d + i] = zp1; /* d beta_i / d alpha */
        double zMz = zp0 * (b * zp0 + a * zp1) + zp1 * (a * zp0 + n * zp1);
        double zM2z = g * (b2 * g + a2 * bt) + bt * (a2 * g);
        s2 += -2 * cy2 * g + zM2z - 2 * zMz;
    }
    *S = s0;
    *S1 = s1;
    *S2 = s2;
}

/* Safeguarded Newton on u = log(alpha), one pass over r's tokens per step,
 * until the step is below tol or max_passes. In: *u the start; out: *u the
 * point whose gamma_i, beta_i are in pc[2d] and whose objective is *S_out.
 * mem: [NC_SHARDS * CH_N * d]; scratch: [4d].
 *
 * With finish > 0, a step below finish ends the iteration without another
 * pass: alpha moves by it, and gamma_i, beta_i follow to first order along
 * z' = d(gamma_i, beta_i)/dalpha, which the pass gives. Newton converges
 * quadratically, so the error left is O(step^2) (below 1e-10 relative for
 * finish = 1e-5) and one pass over the data is saved. */
static int newton_channel(run *r, double *mem, double *scratch, double tol, double finish,
                          int max_passes, double *u, double *pc, double *S_out, bool *done,
                          int *passes, nc_err *err)
{
    const size_t d = r->d;
    double *ysum = scratch, *dz = scratch + 2 * d;
    chan_ctx ctx = {.r = r, .with_y = true};
    for (int s = 0; s < NC_SHARDS; s++)
        ctx.acc[s] = mem + (size_t)s * CH_N * d;
    double u_prev = *u, S_prev = INFINITY, step = 0;
    size_t used = 0;
    *done = false;
    for (int it = 0; it < max_passes; it++) {
        ctx.alpha = exp(*u);
        memset(mem, 0, (size_t)NC_SHARDS * CH_N * d * sizeof *mem);
        memset(ctx.used, 0, sizeof ctx.used);
        nc_progress_begin(r->spec->progress, r->spec->name, "per-channel",
                          (uint64_t)(r->nt * d));
        r->pass.scratch_bytes = 0;
        int rc = nc_pass_run(&r->pass, chan_block, &ctx, err);
        if (rc)
            return rc;
        (*passes)++;
        for (int s = 1; s < NC_SHARDS; s++)
            for (size_t k = 0; k < CH_N * d; k++)
                mem[k] += ctx.acc[s][k];
        if (ctx.with_y) { /* the first pass: keep the sums of y, y^2 and the count */
            memcpy(ysum, mem + CH_Y * d, 2 * d * sizeof *mem);
            used = 0;
            for (int s = 0; s < NC_SHARDS; s++)
                used += ctx.used[s];
            ctx.with_y = false;
        }
        double S, S1, S2;
        chan_objective(mem, ysum, d, (double)used, pc, pc + d, dz, &S, &S1, &S2);
        if (S > S_prev && fabs(step) > 1e-6) {
            /* the Newton step went uphill: halve it and evaluate again */
            step *= 0.5;
            *u = u_prev + step;
            continue;
        }
        double alpha = ctx.alpha;
        double Su = alpha * S1, Suu = alpha * alpha * S2 + alpha * S1;
        step = Suu > 0 ? -Su / Suu : (Su > 0 ? -0.5 : 0.5);
        step = step > 0.5 ? 0.5 : step < -0.5 ? -0.5 : step;
        u_prev = *u;
        S_prev = S;
        *S_out = S;
        if (fabs(step) < tol || Su == 0) {
            *done = true;
            return 0;
        }
        if (fabs(step) < finish && Suu > 0) {
            double da = alpha * expm1(step);
            for (size_t i = 0; i < 2 * d; i++)
                pc[i] += dz[i] * da;
            *S_out = S + S1 * da + 0.5 * S2 * da * da;
            *u += step;
            *done = true;
            return 0;
        }
        *u += step;
    }
    *u = u_prev; /* pc and S_out belong to the last accepted point */
    return 0;
}

int nc_layer_fit_channel(run *r, double alpha0, nc_fit_result *fr, int *passes, nc_err *err)
{
    const size_t d = r->d;
    double *mem = malloc(((size_t)NC_SHARDS * CH_N + 4) * d * sizeof *mem);
    double *pc = malloc(2 * d * sizeof *pc);
    run sub = *r;
    size_t *idx = NULL;
    double *subc = NULL;
    unsigned char *subs = NULL;
    int rc = 0;
    if (!mem || !pc) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the per-channel fit",
                        r->spec->name);
        goto out;
    }
    double u = log(alpha0), S = NAN;
    bool done = false;
    int before = *passes;
    /* stage 1: Newton on a strided sample of the tokens, to a loose tolerance */
    size_t stride = CHANNEL_SAMPLE_STRIDE, m = (r->nt + stride - 1) / stride;
    if (m * d < CHANNEL_SAMPLE_POINTS)
        m = r->nt;
    if (m < r->nt) {
        idx = malloc(m * sizeof *idx);
        subc = malloc(2 * m * sizeof *subc);
        subs = malloc(m);
        if (!idx || !subc || !subs) {
            rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", r->spec->name);
            goto out;
        }
        for (size_t j = 0; j < m; j++) {
            size_t t = j * stride;
            idx[j] = r->tokens ? r->tokens[t] : t;
            subc[j] = r->centre[t];
            subc[m + j] = r->inv[t];
            subs[j] = r->status[t];
        }
        sub.nt = m;
        sub.tokens = idx;
        sub.centre = subc;
        sub.inv = subc + m;
        sub.status = subs;
        sub.pass.tokens = idx;
        sub.pass.ntokens = m;
        if ((rc = newton_channel(&sub, mem, mem + (size_t)NC_SHARDS * CH_N * d,
                                 CHANNEL_SAMPLE_TOL, 0.0, CHANNEL_MAX_PASSES, &u, pc, &S, &done,
                                 passes, err)))
            goto out;
    }
    /* stage 2: all tokens, to full precision */
    if ((rc = newton_channel(r, mem, mem + (size_t)NC_SHARDS * CH_N * d, CHANNEL_TOL,
                             CHANNEL_FINISH, CHANNEL_MAX_PASSES, &u, pc, &S, &done, passes, err)))
        goto out;
    fr->params.p[0] = exp(u);
    fr->params.pc = pc;
    fr->params.d = d;
    pc = NULL;
    fr->objective = S;
    fr->iterations = *passes - before;
    fr->converged = done;
    fr->ok = true;
    snprintf(fr->status, sizeof fr->status, "%s",
             done ? "ok" : "Newton passes reached the limit before the tolerance");
out:
    free(mem);
    free(pc);
    free(idx);
    free(subc);
    free(subs);
    return rc;
}
