/*
 * channel.c - per-channel fits with one shared parameter, by exact Halley
 * passes over the layer's tokens (layer_internal.h): DyT with per-channel
 * gamma_i, beta_i (the fit "dyt_per_channel" of surrogate.h; the "channel"
 * stage of layer.h), and for the drop-in parameters (dropin.h) the same
 * with the channels weighted, DyISRU's x/sqrt(x^2 + C) in place of tanh,
 * and a single pass at a fixed parameter.
 *
 * Per channel i, f_i(x) = gamma_i g(theta, x) + beta_i with one theta for
 * all channels: g = tanh(alpha x) (theta = alpha) or x/sqrt(x^2 + C)
 * (theta = C). For a given theta the best gamma_i, beta_i are a 2 x 2
 * least-squares solve per channel from sums over the tokens, so the
 * objective, sum_i w_i SSE_i (w_i = 1, or the channel weights), is
 * profiled to one dimension, S(theta), whose first three derivatives come
 * from the same pass (chan_objective). Halley's method (Newton's with the
 * third derivative: cubic convergence) runs on log(theta): first on a
 * strided sample of the tokens, then on all of them; on this project's
 * benchmark layers that is two passes over all tokens, against three with
 * Newton's method. The weights do not change gamma_i, beta_i at a given
 * theta (each channel's solve is its own), only where S is smallest.
 *
 * Legend: N tokens, d channels; t a visited token, i a channel; x the
 * input, y = (x - c_t) * inv_t the norm's output before the affine part
 * (norm.h); T = g(theta, x). Accumulators are per shard and merged in
 * shard order (core/par.h).
 *
 * Left out: the pooled fits that give the starting theta (layer_fits.c),
 * and the exact error metrics at the result (the verify pass, layer.c;
 * dropin.c for the drop-in parameters).
 */
#include "analysis/layer_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/codetab.h"
#include "core/par.h"
#include "core/v4.h"
#include "core/vmath.h"
#include "util/bigmem.h"


/* Passes of the per-channel fits. */
#define CHANNEL_MAX_PASSES 30
#define CHANNEL_TOL 1e-11 /* on the step in log(theta) */
#define CHANNEL_FINISH 1e-4 /* a Halley step below this is applied without another pass */
#define CHANNEL_FINISH_NEWTON 1e-5 /* the same for a Newton step (second order) */

/* The per-channel sums of a pass, each [d]: T, T^2, yT, their first (1),
 * second (2) and third (3) derivatives in theta (for T^2 halved: T T1,
 * T1^2 + T T2, 3 T1 T2 + T T3), then y and y^2. */
enum {
    CH_T, CH_TT, CH_YT, CH_T1, CH_TT1, CH_YT1, CH_T2, CH_TT2, CH_YT2, CH_T3, CH_TT3, CH_YT3,
    CH_Y, CH_YY, CH_N
};

/* The sample of tokens the first passes of the per-channel fit use:
 * one token in CHANNEL_SAMPLE_STRIDE, but at least CHANNEL_SAMPLE_POINTS
 * points. The iteration then needs only about two passes over all tokens. */
#define CHANNEL_SAMPLE_STRIDE 8
#define CHANNEL_SAMPLE_POINTS ((size_t)1 << 20)
#define CHANNEL_SAMPLE_TOL 1e-4 /* step in log(theta) that ends the sampled stage */

/* q = 1/(x^2 + C), the DyISRU passes' second tile (its derivatives in C
 * are T times powers of q), and T = x sqrt(q): one division and one square
 * root per point for both. */
static double isru_q(double C, double x)
{
    return 1.0 / (x * x + C);
}

double nc_chan_g(nc_chan_kind kind, double theta, double x)
{
    return kind == NC_CHAN_TANH ? nc_tanh(theta * x) : x * sqrt(isru_q(theta, x));
}

typedef struct chan_ctx {
    run *r;
    nc_chan_kind kind;
    double theta;           /* alpha or C */
    const double *ttab;     /* 16-bit input: g(theta, x) by code (codetab.h), or NULL */
    const double *qtab;     /* the same for DyISRU's q = 1/(x^2 + C) */
    bool with_y;            /* also sum y and y^2 (they do not depend on theta: once) */
    double xtheta;          /* with xacc: also the plain sums of tanh(xtheta x) */
    double *xacc[NC_SHARDS]; /* [3d] each: T, T^2, yT at xtheta; or NULL */
    double *acc[NC_SHARDS]; /* [CH_N * d] each */
    size_t used[NC_SHARDS]; /* tokens with an output */
} chan_ctx;

/* The pass is bound by its accumulators, not by the tanh: a sweep that
 * adds each point into fourteen [d] rows in memory loads and stores
 * fourteen doubles per point. So the block is cut into groups of up to
 * CHANNEL_GROUP tokens and tiles of CHANNEL_TILE channels: T = g(theta, x)
 * of a group's tile goes to a small buffer (the vectorised tanh, or the
 * square roots), then each run of four channels keeps its sums in
 * registers while the group's tokens go through it (chan_quad). Per
 * channel the tokens are still added in their order, so the sums have the
 * bits of the plain sweep. */
#define CHANNEL_TILE 64
#define CHANNEL_GROUP 16

/* The twelve sums of chan_quad that depend on theta, in registers, for
 * four channels. */
typedef struct quad {
    v4d T, TT, YT, T1, TT1, YT1, T2, TT2, YT2, T3, TT3, YT3;
} quad;

/* For channels [i, i + 4) of the m tokens listed in k[] (rows of the
 * block), with T from the tile buffer Tb (row j of it for token k[j]) and
 * its first three theta-derivatives: for tanh (isru false), T1 = dT/dalpha
 * = x (1 - T^2), T2 = -2 x T T1, T3 = -2 x (T1^2 + T T2); for
 * T = x/sqrt(x^2 + C) (isru true), with q = 1/(x^2 + C) from the tile
 * buffer Qb, T1 = dT/dC = -T q/2, T2 = 3/4 T q^2, T3 = -15/8 T q^3. With
 * y = (x - c_t) inv_t: adds T, T^2, yT and their first three derivatives
 * to the sums in A (rows CH_*, each [d]), and y and y^2 when with_y. */
NC_VM_INLINE void chan_quad(double *A, size_t d, size_t i, const double *const *xr,
                            const double *c, const double *inv, size_t m, const double *Tb,
                            const double *Qb, size_t tb, bool with_y, bool isru)
{
    const v4d one = {1, 1, 1, 1}, mtwo = {-2, -2, -2, -2};
    quad q = {V4(A + CH_T * d + i),   V4(A + CH_TT * d + i),  V4(A + CH_YT * d + i),
              V4(A + CH_T1 * d + i),  V4(A + CH_TT1 * d + i), V4(A + CH_YT1 * d + i),
              V4(A + CH_T2 * d + i),  V4(A + CH_TT2 * d + i), V4(A + CH_YT2 * d + i),
              V4(A + CH_T3 * d + i),  V4(A + CH_TT3 * d + i), V4(A + CH_YT3 * d + i)};
    v4d sy = V4(A + CH_Y * d + i), syy = V4(A + CH_YY * d + i);
    for (size_t j = 0; j < m; j++) {
        v4d x = V4(xr[j] + i), T = V4(Tb + j * tb);
        v4d y = (x - c[j]) * inv[j];
        v4d T1, T2, T3;
        if (isru) {
            v4d w = V4(Qb + j * tb);
            T1 = -0.5 * T * w;
            T2 = 0.75 * T * w * w;
            T3 = -1.875 * T * w * w * w;
        } else {
            T1 = x * (one - T * T);
            T2 = mtwo * x * T * T1;
            T3 = mtwo * x * (T1 * T1 + T * T2);
        }
        q.T += T;
        q.TT += T * T;
        q.YT += y * T;
        q.T1 += T1;
        q.TT1 += T * T1;
        q.YT1 += y * T1;
        q.T2 += T2;
        q.TT2 += T1 * T1 + T * T2;
        q.YT2 += y * T2;
        q.T3 += T3;
        q.TT3 += 3.0 * T1 * T2 + T * T3;
        q.YT3 += y * T3;
        if (with_y) {
            sy += y;
            syy += y * y;
        }
    }
    V4(A + CH_T * d + i) = q.T;
    V4(A + CH_TT * d + i) = q.TT;
    V4(A + CH_YT * d + i) = q.YT;
    V4(A + CH_T1 * d + i) = q.T1;
    V4(A + CH_TT1 * d + i) = q.TT1;
    V4(A + CH_YT1 * d + i) = q.YT1;
    V4(A + CH_T2 * d + i) = q.T2;
    V4(A + CH_TT2 * d + i) = q.TT2;
    V4(A + CH_YT2 * d + i) = q.YT2;
    V4(A + CH_T3 * d + i) = q.T3;
    V4(A + CH_TT3 * d + i) = q.TT3;
    V4(A + CH_YT3 * d + i) = q.YT3;
    if (with_y) {
        V4(A + CH_Y * d + i) = sy;
        V4(A + CH_YY * d + i) = syy;
    }
}

/* chan_quad for one channel i (the tile's last d mod 4 channels). */
NC_VM_INLINE void chan_one(double *A, size_t d, size_t i, const double *const *xr,
                           const double *c, const double *inv, size_t m, const double *Tb,
                           const double *Qb, size_t tb, bool with_y, bool isru)
{
    for (size_t j = 0; j < m; j++) {
        double x = xr[j][i], T = Tb[j * tb];
        double y = (x - c[j]) * inv[j];
        A[CH_T * d + i] += T;
        A[CH_TT * d + i] += T * T;
        A[CH_YT * d + i] += y * T;
        if (with_y) {
            A[CH_Y * d + i] += y;
            A[CH_YY * d + i] += y * y;
        }
        double T1, T2, T3;
        if (isru) {
            double w = Qb[j * tb];
            T1 = -0.5 * T * w;
            T2 = 0.75 * T * w * w;
            T3 = -1.875 * T * w * w * w;
        } else {
            T1 = x * (1.0 - T * T);
            T2 = -2.0 * x * T * T1;
            T3 = -2.0 * x * (T1 * T1 + T * T2);
        }
        A[CH_T1 * d + i] += T1;
        A[CH_TT1 * d + i] += T * T1;
        A[CH_YT1 * d + i] += y * T1;
        A[CH_T2 * d + i] += T2;
        A[CH_TT2 * d + i] += T1 * T1 + T * T2;
        A[CH_YT2 * d + i] += y * T2;
        A[CH_T3 * d + i] += T3;
        A[CH_TT3 * d + i] += 3.0 * T1 * T2 + T * T3;
        A[CH_YT3 * d + i] += y * T3;
    }
}

/* out[i] = T[code[i]] for i < n */
NC_VM_INLINE void chan_lookup(const double *restrict T, const uint16_t *restrict code, size_t n,
                              double *restrict out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = T[code[i]];
}

/* q[i] = isru_q(C, x[i]) and t[i] = x[i] sqrt(q[i]) for i < n: nc_chan_g's
 * DyISRU, vectorised. */
NC_VM_INLINE void isru_run(double C, const double *restrict x, size_t n, double *restrict t,
                           double *restrict q)
{
    for (size_t i = 0; i < n; i++) {
        q[i] = 1.0 / (x[i] * x[i] + C);
        t[i] = x[i] * sqrt(q[i]);
    }
}

/* The sums of T = tanh(xtheta x), T^2 and yT of a tile's m tokens into X
 * (rows of [d]: T, T^2, yT), channels [i0, i0 + n), four channels at a
 * time in registers as chan_quad. Tb: the tile buffer (overwritten). */
NC_VM_INLINE void chan_extra(double *X, size_t d, size_t i0, size_t n, double xtheta,
                             const double *const *xr, const double *c, const double *inv,
                             size_t m, double *Tb)
{
    const size_t tb = CHANNEL_TILE;
    for (size_t j = 0; j < m; j++)
        nc_tanh_run(xtheta, xr[j] + i0, n, Tb + j * tb);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        double *P = X + i0 + i;
        v4d sT = V4(P), sTT = V4(P + d), sYT = V4(P + 2 * d);
        for (size_t j = 0; j < m; j++) {
            v4d T = V4(Tb + j * tb + i), y = (V4(xr[j] + i0 + i) - c[j]) * inv[j];
            sT += T;
            sTT += T * T;
            sYT += y * T;
        }
        V4(P) = sT;
        V4(P + d) = sTT;
        V4(P + 2 * d) = sYT;
    }
    for (; i < n; i++)
        for (size_t j = 0; j < m; j++) {
            double T = Tb[j * tb + i], y = (xr[j][i0 + i] - c[j]) * inv[j];
            X[i0 + i] += T;
            X[d + i0 + i] += T * T;
            X[2 * d + i0 + i] += y * T;
        }
}

/* The tile's sums for every run of four channels and the rest one by one:
 * a copy for each combination of with_y and isru, so that they are
 * constants in each. */
NC_VM_INLINE void chan_tile(const chan_ctx *ctx, double *A, size_t d, size_t i0, size_t n,
                            const double *const *xr, const double *c, const double *inv,
                            size_t m, const double *Tb, const double *Qb)
{
    const bool isru = ctx->kind == NC_CHAN_ISRU;
    const size_t tb = CHANNEL_TILE;
    size_t i = 0;
    if (ctx->with_y && isru)
        for (; i + 4 <= n; i += 4)
            chan_quad(A, d, i0 + i, xr, c, inv, m, Tb + i, Qb + i, tb, true, true);
    else if (ctx->with_y)
        for (; i + 4 <= n; i += 4)
            chan_quad(A, d, i0 + i, xr, c, inv, m, Tb + i, Qb + i, tb, true, false);
    else if (isru)
        for (; i + 4 <= n; i += 4)
            chan_quad(A, d, i0 + i, xr, c, inv, m, Tb + i, Qb + i, tb, false, true);
    else
        for (; i + 4 <= n; i += 4)
            chan_quad(A, d, i0 + i, xr, c, inv, m, Tb + i, Qb + i, tb, false, false);
    for (; i < n; i++)
        chan_one(A, d, i0 + i, xr, c, inv, m, Tb + i, Qb + i, tb, ctx->with_y, isru);
}

/* Per channel, the sums over tokens of T, T^2, yT and of their first three
 * derivatives in theta and, on the first pass, of y and y^2: group by group
 * of the block's usable tokens, tile by tile of channels. scratch: the tile
 * buffers of T and (DyISRU) q, [2 * CHANNEL_GROUP * CHANNEL_TILE]. */
NC_VMATH_CLONES static void chan_block(void *vctx, int shard, size_t t0, size_t nt,
                                       const double *rows, const uint16_t *codes, void *scratch)
{
    chan_ctx *ctx = vctx;
    run *r = ctx->r;
    const size_t d = r->d;
    const double theta = ctx->theta;
    double *A = ctx->acc[shard], *Tb = scratch, *Qb = Tb + CHANNEL_GROUP * CHANNEL_TILE;
    size_t k[CHANNEL_GROUP];
    const double *xr[CHANNEL_GROUP];
    double c[CHANNEL_GROUP], inv[CHANNEL_GROUP];
    for (size_t k0 = 0; k0 < nt;) {
        size_t m = 0; /* the next group: up to CHANNEL_GROUP usable tokens */
        for (; k0 < nt && m < CHANNEL_GROUP; k0++) {
            size_t t = t0 + k0;
            if (r->status[t] != NC_TOKEN_OK)
                continue;
            k[m] = k0;
            xr[m] = rows + k0 * d;
            c[m] = r->centre[t];
            inv[m] = r->inv[t];
            m++;
        }
        ctx->used[shard] += m;
        for (size_t i0 = 0; i0 < d; i0 += CHANNEL_TILE) {
            size_t n = d - i0 < CHANNEL_TILE ? d - i0 : CHANNEL_TILE;
            for (size_t j = 0; j < m; j++) {
                double *T = Tb + j * CHANNEL_TILE, *q = Qb + j * CHANNEL_TILE;
                if (ctx->ttab && codes) {
                    chan_lookup(ctx->ttab, codes + k[j] * d + i0, n, T);
                    if (ctx->qtab)
                        chan_lookup(ctx->qtab, codes + k[j] * d + i0, n, q);
                } else if (ctx->kind == NC_CHAN_TANH) {
                    nc_tanh_run(theta, rows + k[j] * d + i0, n, T);
                } else {
                    isru_run(theta, rows + k[j] * d + i0, n, T, q);
                }
            }
            chan_tile(ctx, A, d, i0, n, xr, c, inv, m, Tb, Qb);
            if (ctx->xacc[shard])
                chan_extra(ctx->xacc[shard], d, i0, n, ctx->xtheta, xr, c, inv, m, Tb);
        }
    }
}

/* Profiled objective S(theta) = sum_i w_i min_{g,b} sum_t (y - g T - b)^2
 * (w_i = 1 when w is NULL) and its first three derivatives in theta, from
 * the merged sums; fills gamma_i, beta_i and their first two
 * theta-derivatives. Per channel, with M = [[sum T^2, sum T], [sum T, n]],
 * v = [sum yT, sum y], z = M^-1 v and D, D2, D3 for the first three
 * derivatives in theta (D v = [sum yT1, 0], D2 v = [sum yT2, 0], ...):
 *   S_i     = Syy - v.z
 *   D S_i   = -2 Dv.z + z.DM.z
 *   D2 S_i  = -2 D2v.z + z.D2M.z - 2 Dz.M.Dz
 *   D3 S_i  = -(2 D3v.z + 2 D2v.Dz + 4 D2z.M.Dz + 2 Dz.DM.Dz - 2 Dz.D2M.z
 *               - z.D3M.z)
 * with Dz = M^-1 (Dv - DM z) and D2z = M^-1 (D2v - 2 DM Dz - D2M z) (M z = v
 * differentiated once and twice). dz[2d] gets Dz (gamma_i, then beta_i),
 * dz2[2d] D2z; ysum[2d]: sum y and sum y^2 per channel. */
static void chan_objective(const double *A, const double *ysum, const double *w, size_t d,
                           double n, double *gamma, double *beta, double *dz, double *dz2,
                           double S[4])
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < d; i++) {
        double a = A[CH_T * d + i], b = A[CH_TT * d + i], cy = A[CH_YT * d + i];
        double a1 = A[CH_T1 * d + i], b1 = 2 * A[CH_TT1 * d + i], cy1 = A[CH_YT1 * d + i];
        double a2 = A[CH_T2 * d + i], b2 = 2 * A[CH_TT2 * d + i], cy2 = A[CH_YT2 * d + i];
        double a3 = A[CH_T3 * d + i], b3 = 2 * A[CH_TT3 * d + i], cy3 = A[CH_YT3 * d + i];
        double sy = ysum[i], syy = ysum[d + i];
        double wi = w ? w[i] : 1.0; /* times 1.0: the unweighted sums keep their bits */
        double det = n * b - a * a;
        if (!(det > 1e-14 * n * b)) {
            /* T constant over the channel: only the offset is determined */
            gamma[i] = 0;
            beta[i] = sy / n;
            dz[i] = dz[d + i] = dz2[i] = dz2[d + i] = 0;
            s0 += wi * (syy - sy * sy / n);
            continue;
        }
        double g = (n * cy - a * sy) / det, bt = (b * sy - a * cy) / det;
        gamma[i] = g;
        beta[i] = bt;
        s0 += wi * (syy - (cy * g + sy * bt));
        /* DM z and Dv - DM z */
        double mz0 = b1 * g + a1 * bt, mz1 = a1 * g;
        s1 += wi * (-2 * cy1 * g + (g * mz0 + bt * mz1));
        double r0 = cy1 - mz0, r1 = -mz1;
        double zp0 = (n * r0 - a * r1) / det, zp1 = (b * r1 - a * r0) / det;
        dz[i] = zp0;     /* d gamma_i / d theta */
        dz[d + i] = zp1; /* d beta_i / d theta */
        double Mzp0 = b * zp0 + a * zp1, Mzp1 = a * zp0 + n * zp1; /* M Dz */
        double zMz = zp0 * Mzp0 + zp1 * Mzp1;
        double m2z0 = b2 * g + a2 * bt, m2z1 = a2 * g; /* D2M z */
        double zM2z = g * m2z0 + bt * m2z1;
        s2 += wi * (-2 * cy2 * g + zM2z - 2 * zMz);
        /* D2z = M^-1 (D2v - 2 DM Dz - D2M z) */
        double w0 = cy2 - 2 * (b1 * zp0 + a1 * zp1) - m2z0, w1 = -2 * (a1 * zp0) - m2z1;
        double zpp0 = (n * w0 - a * w1) / det, zpp1 = (b * w1 - a * w0) / det;
        dz2[i] = zpp0;
        dz2[d + i] = zpp1;
        double zpM1zp = zp0 * (b1 * zp0 + a1 * zp1) + zp1 * (a1 * zp0);
        double zpM2z = zp0 * m2z0 + zp1 * m2z1;
        double zM3z = g * (b3 * g + a3 * bt) + bt * (a3 * g);
        s3 -= wi * (2 * cy3 * g + 2 * cy2 * zp0 + 4 * (zpp0 * Mzp0 + zpp1 * Mzp1) +
                    2 * zpM1zp - 2 * zpM2z - zM3z);
    }
    S[0] = s0;
    S[1] = s1;
    S[2] = s2;
    S[3] = s3;
}

/* What one per-channel iteration works with: the function, the channel
 * weights (or NULL), the 16-bit input's tables (span NULL: none) and the
 * memory of the passes: mem [NC_SHARDS * CH_N * d], scratch [10d]. */
typedef struct chan_job {
    nc_chan_kind kind;
    const double *w;
    /* a second theta whose plain tanh sums the next first pass over the
     * tokens also makes (nc_chan_fit's xtheta): xmem [(NC_SHARDS + 1) * 3d],
     * merged into its first 3d when xdone; used: the pass's usable tokens */
    double xtheta, *xmem;
    bool xwant, xdone;
    size_t used;
    const nc_codetab_span *span;
    double *ttab; /* [65536] when span: g by code, then (DyISRU) q by code */
    double *mem, *scratch;
} chan_job;

/* One pass over r's tokens at theta: the merged per-channel sums into
 * J->mem (and, on ctx's first pass, ysum[2d] and *used, the usable
 * tokens). */
static int chan_pass(run *r, chan_job *J, chan_ctx *ctx, double theta, double *ysum,
                     size_t *used, int *passes, nc_err *err)
{
    const size_t d = r->d;
    ctx->theta = theta;
    for (int h = 0; J->span && h < 2; h++) /* g (and q) of every code the layer can hold */
        for (uint32_t c = J->span->lo[h]; c < J->span->hi[h]; c++) {
            J->ttab[c] = nc_chan_g(J->kind, theta, J->span->x[c]);
            if (J->kind == NC_CHAN_ISRU)
                J->ttab[65536 + c] = isru_q(theta, J->span->x[c]);
        }
    memset(J->mem, 0, (size_t)NC_SHARDS * CH_N * d * sizeof *J->mem);
    memset(ctx->used, 0, sizeof ctx->used);
    const bool extra = J->xwant && !J->xdone && ctx->with_y;
    for (int s = 0; s < NC_SHARDS; s++)
        ctx->xacc[s] = extra ? J->xmem + (size_t)(s + 1) * 3 * d : NULL;
    if (extra) {
        ctx->xtheta = J->xtheta;
        memset(J->xmem, 0, (size_t)(NC_SHARDS + 1) * 3 * d * sizeof *J->xmem);
    }
    nc_progress_begin(r->spec->progress, r->spec->name, "per-channel", (uint64_t)(r->nt * d));
    r->pass.scratch_bytes = 2 * CHANNEL_GROUP * CHANNEL_TILE * sizeof(double);
    r->pass.codes = J->span != NULL;
    int rc = nc_pass_run(&r->pass, chan_block, ctx, err);
    r->pass.codes = false;
    if (rc)
        return rc;
    (*passes)++;
    for (int s = 1; s < NC_SHARDS; s++)
        for (size_t k = 0; k < CH_N * d; k++)
            J->mem[k] += ctx->acc[s][k];
    for (int s = 0; extra && s < NC_SHARDS; s++) /* shard 0 into a zeroed total first */
        for (size_t k = 0; k < 3 * d; k++)
            J->xmem[k] += ctx->xacc[s][k];
    if (extra) {
        memcpy(J->scratch + 8 * d, J->mem + CH_Y * d, 2 * d * sizeof *J->mem);
        J->xdone = true;
    }
    if (ctx->with_y) { /* the first pass: keep the sums of y, y^2 and the count */
        memcpy(ysum, J->mem + CH_Y * d, 2 * d * sizeof *J->mem);
        *used = 0;
        for (int s = 0; s < NC_SHARDS; s++)
            *used += ctx->used[s];
        J->used = *used;
        ctx->with_y = false;
    }
    return 0;
}

/* Safeguarded Halley iteration on u = log(theta), one pass over r's tokens
 * per step, until the step is below tol or max_passes. In: *u the start;
 * out: *u the point whose gamma_i, beta_i are in pc[2d] and whose objective
 * is *S_out.
 *
 * The step solves S_u = 0 with the first three derivatives (Halley's
 * method: the error after a step is of the order of the cube of the one
 * before, where Newton's is of its square), falling back to Newton's step
 * where the two disagree by more than a factor of two, and to halving where
 * a step went uphill. With finish > 0, a step below finish ends the
 * iteration without another pass: theta moves by it, gamma_i and beta_i
 * follow to second order along their first two theta-derivatives (from
 * the pass), the objective to third order; the error left is of the order
 * of step^3 (about 1e-12 relative for finish = 1e-4), and one pass over the
 * data is saved. With max_passes = 1 and tol = finish = 0 it is one pass at
 * the start: gamma_i, beta_i of that theta. */
static int newton_channel(run *r, chan_job *J, double tol, double finish, int max_passes,
                          double *u, double *pc, double *S_out, bool *done, int *passes,
                          nc_err *err)
{
    const size_t d = r->d;
    double *ysum = J->scratch, *dz = J->scratch + 2 * d, *dz2 = J->scratch + 4 * d;
    double *pc_acc = J->scratch + 6 * d; /* gamma_i, beta_i of the last accepted point */
    bool accepted = false;
    chan_ctx ctx = {.r = r, .kind = J->kind, .with_y = true,
                    .ttab = J->span ? J->ttab : NULL,
                    .qtab = J->span && J->kind == NC_CHAN_ISRU ? J->ttab + 65536 : NULL};
    for (int s = 0; s < NC_SHARDS; s++)
        ctx.acc[s] = J->mem + (size_t)s * CH_N * d;
    double u_prev = *u, S_prev = INFINITY, step = 0;
    size_t used = 0;
    *done = false;
    for (int it = 0; it < max_passes; it++) {
        int rc = chan_pass(r, J, &ctx, exp(*u), ysum, &used, passes, err);
        if (rc)
            return rc;
        double S[4];
        chan_objective(J->mem, ysum, J->w, d, (double)used, pc, pc + d, dz, dz2, S);
        if (S[0] > S_prev && fabs(step) > 1e-6) {
            /* the step went uphill: halve it and evaluate again */
            step *= 0.5;
            *u = u_prev + step;
            continue;
        }
        /* the derivatives in u = log(theta) */
        const double al = ctx.theta;
        const double Su = al * S[1], Suu = al * al * S[2] + al * S[1];
        const double Suuu = al * al * al * S[3] + 3 * al * al * S[2] + al * S[1];
        step = Suu > 0 ? -Su / Suu : (Su > 0 ? -0.5 : 0.5);
        bool halley_step = false; /* third order: the finishing step below may be longer */
        if (Suu > 0 && isfinite(S[3]) && isfinite(Suuu)) {
            double den = 2 * Suu * Suu - Su * Suuu, halley = den != 0 ? -2 * Su * Suu / den : 0;
            if (halley / step >= 0.5 && halley / step <= 2) {
                step = halley;
                halley_step = true;
            }
        }
        step = step > 0.5 ? 0.5 : step < -0.5 ? -0.5 : step;
        u_prev = *u;
        S_prev = S[0];
        *S_out = S[0];
        memcpy(pc_acc, pc, 2 * d * sizeof *pc);
        accepted = true;
        if (fabs(step) < tol || Su == 0) {
            *done = true;
            return 0;
        }
        /* the finishing step: after Halley's step, below finish, to second
         * order in gamma_i, beta_i (third in S); after Newton's (Halley's
         * refused, or the third derivative not finite: |x|^3 overflows
         * above ~5.6e102), only below finish scaled down to
         * CHANNEL_FINISH_NEWTON, to first order (second in S): Newton's
         * error is the square of the step, not its cube */
        const double lim = halley_step ? finish : finish * CHANNEL_FINISH_NEWTON / CHANNEL_FINISH;
        if (fabs(step) < lim && Suu > 0) {
            double da = al * expm1(step);
            for (size_t i = 0; i < 2 * d; i++)
                pc[i] += dz[i] * da + (halley_step ? 0.5 * dz2[i] * da * da : 0.0);
            *S_out = S[0] + da * (S[1] + da * (0.5 * S[2] + (halley_step ? da * (S[3] / 6) : 0.0)));
            *u += step;
            *done = true;
            return 0;
        }
        *u += step;
    }
    /* out of passes: back to the last accepted point, its gamma_i, beta_i
     * too (the last pass may have been a step that went uphill) */
    *u = u_prev;
    if (accepted)
        memcpy(pc, pc_acc, 2 * d * sizeof *pc);
    return 0;
}

/* The memory and tables of a per-channel fit (chan_job) and of its
 * sampled stage; released by job_free. */
typedef struct chan_mem {
    chan_job J;
    size_t mem_bytes;
    nc_codetab_span span;
    run sub;      /* the strided sample of the tokens, when there is one */
    size_t *idx;  /* [m] */
    double *subc; /* [2m] */
    unsigned char *subs;
} chan_mem;

static void job_free(chan_mem *M)
{
    free(M->J.xmem);
    nc_codetab_span_free(&M->span);
    free(M->J.ttab);
    nc_big_free(M->J.mem, M->mem_bytes);
    free(M->idx);
    free(M->subc);
    free(M->subs);
}

/* The passes' memory and, for a 16-bit input with enough points, the
 * table of g by code. */
static int job_alloc(run *r, nc_chan_kind kind, const double *w, double amax, size_t points,
                     chan_mem *M, nc_err *err)
{
    const size_t d = r->d;
    memset(M, 0, sizeof *M);
    M->J.kind = kind;
    M->J.w = w;
    M->mem_bytes = ((size_t)NC_SHARDS * CH_N + 10) * d * sizeof(double);
    if (!(M->J.mem = nc_big_alloc(M->mem_bytes)))
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the per-channel fit",
                          r->spec->name);
    M->J.scratch = M->J.mem + (size_t)NC_SHARDS * CH_N * d;
    if (nc_codetab_wanted(r->spec->x->dtype, points)) { /* 16-bit input: g by code */
        if (nc_codetab_span_make(r->spec->x->dtype, amax, &M->span) ||
            !(M->J.ttab = malloc(2 * 65536 * sizeof *M->J.ttab)))
            return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the per-channel fit",
                              r->spec->name);
        M->J.span = &M->span;
    }
    return 0;
}

/* The strided sample of r's tokens for the first stage into M->sub: one
 * token in CHANNEL_SAMPLE_STRIDE, unless that leaves fewer than
 * CHANNEL_SAMPLE_POINTS points (then *sampled is false: no first stage). */
static int job_sample(run *r, chan_mem *M, bool *sampled, nc_err *err)
{
    const size_t d = r->d, stride = CHANNEL_SAMPLE_STRIDE;
    size_t m = (r->nt + stride - 1) / stride;
    *sampled = m * d >= CHANNEL_SAMPLE_POINTS && m < r->nt;
    if (!*sampled)
        return 0;
    M->idx = malloc(m * sizeof *M->idx);
    M->subc = malloc(2 * m * sizeof *M->subc);
    M->subs = malloc(m);
    if (!M->idx || !M->subc || !M->subs)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", r->spec->name);
    for (size_t j = 0; j < m; j++) {
        size_t t = j * stride;
        M->idx[j] = r->tokens ? r->tokens[t] : t;
        M->subc[j] = r->centre[t];
        M->subc[m + j] = r->inv[t];
        M->subs[j] = r->status[t];
    }
    M->sub = *r;
    M->sub.nt = m;
    M->sub.tokens = M->idx;
    M->sub.centre = M->subc;
    M->sub.inv = M->subc + m;
    M->sub.status = M->subs;
    M->sub.pass.tokens = M->idx;
    M->sub.pass.ntokens = m;
    return 0;
}

/* gamma_i, beta_i at J's second theta into xpc[2d] and the unweighted
 * objective there into *xS, from the sums of its pass (J->mem is free). */
static void extra_solve(run *r, chan_job *J, double *xpc, double *xS)
{
    const size_t d = r->d;
    double S[4];
    memset(J->mem, 0, (size_t)CH_N * d * sizeof *J->mem);
    memcpy(J->mem + CH_T * d, J->xmem, d * sizeof *J->mem);
    memcpy(J->mem + CH_TT * d, J->xmem + d, d * sizeof *J->mem);
    memcpy(J->mem + CH_YT * d, J->xmem + 2 * d, d * sizeof *J->mem);
    chan_objective(J->mem, J->scratch + 8 * d, NULL, d, (double)J->used, xpc, xpc + d,
                   J->scratch + 2 * d, J->scratch + 4 * d, S);
    *xS = S[0];
}

int nc_chan_fit(run *r, nc_chan_kind kind, const double *w, double theta0, double amax,
                size_t points, double xtheta, double *xpc, double *xS, nc_fit_result *fr,
                int *passes, nc_err *err)
{
    const size_t d = r->d;
    chan_mem M = {0};
    double *pc = malloc(2 * d * sizeof *pc);
    int rc = pc ? job_alloc(r, kind, w, amax, points, &M, err)
                : nc_err_set(err, NC_ENOMEM, "%s: out of memory for the per-channel fit",
                             r->spec->name);
    double u = log(theta0), S = NAN;
    bool done = false, sampled = false;
    int before = *passes;
    /* stage 1: on a strided sample of the tokens, to a loose tolerance */
    if (!rc && !(rc = job_sample(r, &M, &sampled, err)) && sampled)
        rc = newton_channel(&M.sub, &M.J, CHANNEL_SAMPLE_TOL, 0.0, CHANNEL_MAX_PASSES, &u, pc,
                            &S, &done, passes, err);
    /* stage 2: all tokens, to full precision; its first pass also sums
     * tanh(xtheta x) when asked */
    if (!rc && xpc && !(M.J.xmem = malloc((size_t)(NC_SHARDS + 1) * 3 * d * sizeof *M.J.xmem)))
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the per-channel fit",
                        r->spec->name);
    M.J.xwant = xpc != NULL;
    M.J.xtheta = xtheta;
    if (!rc)
        rc = newton_channel(r, &M.J, CHANNEL_TOL, CHANNEL_FINISH, CHANNEL_MAX_PASSES, &u, pc, &S,
                            &done, passes, err);
    if (!rc && xpc)
        extra_solve(r, &M.J, xpc, xS);
    if (!rc) {
        fr->params.p[0] = exp(u);
        fr->params.pc = pc;
        fr->params.d = d;
        pc = NULL;
        fr->objective = S;
        fr->iterations = *passes - before;
        fr->converged = done;
        fr->ok = true;
        snprintf(fr->status, sizeof fr->status, "%s",
                 done ? "ok" : "Halley passes reached the limit before the tolerance");
    }
    job_free(&M);
    free(pc);
    return rc;
}

int nc_layer_fit_channel(run *r, double alpha0, double amax, size_t points, nc_fit_result *fr,
                         int *passes, nc_err *err)
{
    return nc_chan_fit(r, NC_CHAN_TANH, NULL, alpha0, amax, points, 0.0, NULL, NULL, fr, passes,
                       err);
}
