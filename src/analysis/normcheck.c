/*
 * normcheck.c - the real output against the noise model of its dtype
 * (normcheck.h, which gives the model; docs/report.md derives it).
 *
 * Legend as in normcheck.h; k indexes the two kinds (nc_norm_kind). Passes
 * over the layer's token sample: when a weight is estimated, one for the
 * per-channel least-squares sums and one for their residuals; then the
 * check itself, which keeps four numbers per token and kind. Per-channel
 * sums are kept per shard and merged in shard order, per-token values are
 * reduced serially in token order: results do not depend on the thread
 * count.
 */
#include "analysis/normcheck.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/par.h"
#include "core/sum.h"
#include "core/vmath.h"

double nc_dtype_unit_roundoff(nc_dtype dt)
{
    switch (dt) {
    case NC_F16: return ldexp(1.0, -11);
    case NC_BF16: return ldexp(1.0, -8);
    case NC_F64: return ldexp(1.0, -53);
    default: return ldexp(1.0, -24);
    }
}

const char *nc_affine_src_name(nc_affine_src s)
{
    switch (s) {
    case NC_AFFINE_ESTIMATED: return "estimated";
    case NC_AFFINE_NONE: return "none";
    default: return "given";
    }
}

const char *nc_kind_verdict_name(nc_kind_verdict v)
{
    switch (v) {
    case NC_KIND_IDENTIFIED: return "identified";
    case NC_KIND_UNDETERMINED: return "undetermined";
    default: return "neither";
    }
}

/* ============================================================ noise */

/* A dtype's rounding: half an ulp of v is at most 2^floor(log2|v|) u, plus
 * hmin = u 2^emin (half the spacing of the subnormals) so that values in
 * the subnormal range and 0 are covered without a branch. */
typedef struct dt_round {
    double u, hmin;
} dt_round;

/* Added to every bound B (keeps 1/B^2 finite with float64 data). */
#define BOUND_FLOOR 0x1p-500

static dt_round round_of(nc_dtype dt)
{
    double u = nc_dtype_unit_roundoff(dt);
    switch (dt) {
    case NC_F16: return (dt_round){u, ldexp(u, -14)};
    case NC_F64: return (dt_round){u, ldexp(1.0, -1074)};
    default: return (dt_round){u, ldexp(u, -126)};
    }
}

/* The coarser of a stored dtype and the source dtype (NC_DT_NONE: none). */
static nc_dtype coarser(nc_dtype stored, nc_dtype src)
{
    if (src == NC_DT_NONE || nc_dtype_unit_roundoff(src) <= nc_dtype_unit_roundoff(stored))
        return stored;
    return src;
}

/* Half an ulp of v in a dtype (u, hmin): the exponent bits of v (its power
 * of two) times u, plus hmin. Straight-line code: it vectorises. */
NC_VM_INLINE double hulp(double v, double u, double hmin)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    bits &= 0x7ff0000000000000u;
    double p2;
    memcpy(&p2, &bits, sizeof p2);
    return p2 * u + hmin;
}

static double half_ulp(double v, dt_round r)
{
    return hulp(v, r.u, r.hmin);
}

/* ============================================================ the passes */

enum { STAGE_SUMS, STAGE_NOISE, STAGE_CHECK };
#define NSUM 4   /* per channel and kind: sum n, n^2, y, y n */
#define NNOISE 3 /* per channel and kind: sum v n^2, v n, v (v the noise variance) */

typedef struct kind_affine {
    double *w, *b; /* [d]: w always set for the check; b NULL: no bias */
    double *cov;   /* [3 d] estimated: var w, cov(w, b), var b; else NULL */
    nc_affine_src ws, bs;
    bool ok; /* the estimate exists */
    /* [d] each, from the above (affine_derive): |w|, b or 0, the stored
     * weight's half-ulp (0 otherwise), the bias's terms of the bound */
    double *aw, *b0, *hw, *cb;
} kind_affine;

typedef struct check_ctx {
    const nc_layer_result *res;
    const nc_tensor *y;
    size_t d, nt;
    dt_round ry, rx, rw, rb;  /* the rounding of y, x, the weight and the bias */
    double uc;                /* the model's arithmetic */
    const double *bias_given; /* [d] the stored bias, or NULL */
    kind_affine af[2];
    nc_kind_check *kc[2];
    int stage;
    double eps_guess[2]; /* by kind: the eps the caller is using */
    double eps_round[2]; /* by kind: the eps normalising this round's affine estimate */
    double *acc;         /* stage sums: [NC_SHARDS][2][NSUM][d]; noise:
                          * [NC_SHARDS][2][NNOISE][d] */
    size_t *count;       /* [NC_SHARDS][2] tokens in the sums */
} check_ctx;

/* One token under one kind: what every bound of it needs. */
typedef struct tok_in {
    const double *x, *y, *u; /* [d] input, real output, u of the kind */
    const double *hx;        /* [d] h_x(x_i) */
    double m;                /* mean u^2 */
    double s1, su;           /* sum h_x / d (LayerNorm; RMSNorm 0), sum |u| h_x / d */
} tok_in;

/* u_i of kind k and m_t; false when m_t is not finite. */
/* sum_i |a_i| b_i in NC_LANES lanes (core/sum.h): it vectorises. */
NC_VM_INLINE double abs_dot(const double *a, const double *b, size_t d)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++)
            s[j] += fabs(a[i + j]) * b[i + j];
    for (int j = 0; i < d; i++, j++)
        s[j] += fabs(a[i]) * b[i];
    return nc_lanes_total(s);
}

NC_VM_INLINE bool centre(int k, const double *x, size_t d, double *restrict u, double *m)
{
    double mu = 0;
    if (k == NC_LAYERNORM) {
        double s[NC_LANES] = {0};
        size_t i = 0;
        for (; i + NC_LANES <= d; i += NC_LANES)
            for (int j = 0; j < NC_LANES; j++)
                s[j] += x[i + j];
        for (int j = 0; i < d; i++, j++)
            s[j] += x[i];
        mu = nc_lanes_total(s) / (double)d;
    }
    double s[NC_LANES] = {0};
    for (size_t i = 0; i < d; i++)
        u[i] = x[i] - mu;
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++)
            s[j] += u[i + j] * u[i + j];
    for (int j = 0; i < d; i++, j++)
        s[j] += u[i] * u[i];
    *m = nc_lanes_total(s) / (double)d;
    return isfinite(*m);
}
/* The per-channel parts of kind k's bounds, after its affine part changed. */
static void affine_derive(const check_ctx *c, kind_affine *af)
{
    for (size_t i = 0; i < c->d; i++) {
        af->aw[i] = fabs(af->w[i]);
        af->b0[i] = af->b ? af->b[i] : 0.0;
        af->hw[i] = af->ws == NC_AFFINE_GIVEN ? half_ulp(af->w[i], c->rw) : 0.0;
        af->cb[i] = (af->b ? half_ulp(af->b[i], c->ry) : 0.0) +
                    (af->bs == NC_AFFINE_GIVEN ? half_ulp(af->b[i], c->rb) : 0.0);
    }
}

/* The bounds B[i] of a token's elements under kind af with n_i = a u_i
 * (normcheck.h). The input's rounding reaches n_i directly, |a| h_x(x_i),
 * through the token's mean, at most |a| s1, and through its scale, at most
 * |n_i| a^2 su (delta s / s = a <n, delta x> / d). Magnitudes come from the
 * hypothesis's value w n + b, not from the observed y: a bound from y would
 * give the values rounded up into the next binade a larger bound, so a
 * smaller weight, and bias the fitted scale low (by ~1e-2 u at d = 4096 in
 * bfloat16: 4 SE of eps). */
NC_VM_INLINE void bounds(const check_ctx *c, const kind_affine *af, const tok_in *tk, double a,
                         double *restrict B)
{
    const size_t d = c->d;
    const double uy = c->ry.u, hy = c->ry.hmin, aa = fabs(a);
    const double s1 = aa * tk->s1, su = aa * aa * tk->su;
    const double *u = tk->u, *hx = tk->hx, *w = af->w, *aw = af->aw, *b0 = af->b0;
    const double *hw = af->hw, *cb = af->cb;
    for (size_t i = 0; i < d; i++) {
        double n = a * u[i], wn = w[i] * n, an = fabs(n);
        B[i] = hulp(wn + b0[i], uy, hy) + hulp(wn, uy, hy) + aw[i] * hulp(n, uy, hy) + an * hw[i] +
               aw[i] * (aa * hx[i] + s1 + an * su) + cb[i] + BOUND_FLOOR;
    }
    if (af->cov)
        for (size_t i = 0; i < d; i++) {
            const double *v = af->cov + 3 * i;
            double n = a * u[i], var = v[0] * n * n + 2.0 * v[1] * n + v[2];
            B[i] += NC_NORMCHECK_Z * sqrt(var > 0 ? var : 0.0);
        }
}

/* Stages sums and noise: the per-channel least squares of y_i on n_i, then
 * the noise of its estimate. B: [d] scratch. */
NC_VM_INLINE void estimate_token(check_ctx *c, int shard, int k, const tok_in *tk, double *B)
{
    const size_t d = c->d;
    const double sc = 1.0 / sqrt(tk->m + c->eps_round[k]);
    if (!isfinite(sc))
        return;
    const double *bg = c->bias_given, *u = tk->u, *y = tk->y;
    if (c->stage == STAGE_SUMS) {
        double *s = c->acc + ((size_t)shard * 2 + (size_t)k) * NSUM * d;
        for (size_t i = 0; i < d; i++) {
            double n = u[i] * sc, yv = y[i] - (bg ? bg[i] : 0.0);
            s[i] += n;
            s[d + i] += n * n;
            s[2 * d + i] += yv;
            s[3 * d + i] += yv * n;
        }
        c->count[shard * 2 + k]++;
        return;
    }
    /* the noise model's variance of each y_i, B_i^2 / 3 (uniform within the
     * bound; B without the estimate's own term): sums for the sandwich */
    double *s = c->acc + ((size_t)shard * 2 + (size_t)k) * NNOISE * d;
    bounds(c, &c->af[k], tk, sc, B);
    for (size_t i = 0; i < d; i++) {
        double n = u[i] * sc, v = B[i] * B[i] / 3.0;
        s[i] += v * n * n;
        s[d + i] += v * n;
        s[2 * d + i] += v;
    }
}

/* Stage check, one token and kind: the weighted least-squares scale and
 * what q needs. A token with no scale to fit (w u = 0: a constant LayerNorm
 * token, d = 1, zero weights) must be the bias alone, and gives no eps.
 * sc: [3 d] scratch. Sums in NC_LANES lanes (core/sum.h). */
NC_VM_INLINE void check_token(check_ctx *c, int k, size_t t, const tok_in *tk, double *sc)
{
    const size_t d = c->d;
    const kind_affine *af = &c->af[k];
    nc_kind_check *kc = c->kc[k];
    double *restrict z = sc, *restrict wu = sc + d, *restrict B = sc + 2 * d;
    double szw[NC_LANES] = {0}, sww[NC_LANES] = {0};
    for (size_t i = 0; i < d; i++) {
        z[i] = tk->y[i] - af->b0[i];
        wu[i] = af->w[i] * tk->u[i];
    }
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            szw[j] += z[i + j] * wu[i + j];
            sww[j] += wu[i + j] * wu[i + j];
        }
    for (int j = 0; i < d; i++, j++) {
        szw[j] += z[i] * wu[i];
        sww[j] += wu[i] * wu[i];
    }
    const double zw = nc_lanes_total(szw), ww = nc_lanes_total(sww);
    if (!isfinite(zw) || !isfinite(ww))
        return;
    const double a0 = ww > 0 ? zw / ww : 0.0;
    bounds(c, af, tk, a0, B);
    double szu[NC_LANES] = {0}, suu[NC_LANES] = {0};
    for (i = 0; i < d; i++)
        B[i] = 1.0 / B[i]; /* from here on, 1 / B */
    for (i = 0; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            double ib2 = B[i + j] * B[i + j];
            szu[j] += z[i + j] * wu[i + j] * ib2;
            suu[j] += wu[i + j] * wu[i + j] * ib2;
        }
    for (int j = 0; i < d; i++, j++) {
        double ib2 = B[i] * B[i];
        szu[j] += z[i] * wu[i] * ib2;
        suu[j] += wu[i] * wu[i] * ib2;
    }
    const double uu = nc_lanes_total(suu), a = uu > 0 ? nc_lanes_total(szu) / uu : 0.0;
    double srr[NC_LANES] = {0};
    for (i = 0; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            double r = (z[i + j] - a * wu[i + j]) * B[i + j];
            srr[j] += r * r;
        }
    for (int j = 0; i < d; i++, j++) {
        double r = (z[i] - a * wu[i]) * B[i];
        srr[j] += r * r;
    }
    const double rss = nc_lanes_total(srr);
    if (!isfinite(a) || !isfinite(rss) || !isfinite(uu))
        return;
    kc->m[t] = tk->m;
    kc->a[t] = uu > 0 ? a : NAN;
    kc->uu[t] = uu;
    kc->rss[t] = rss;
}

NC_VMATH_CLONES static void check_block(void *vctx, int shard, size_t t0, size_t nt,
                                        const double *rows, const uint16_t *codes, void *scratch)
{
    (void)codes;
    check_ctx *c = vctx;
    const size_t d = c->d;
    double *y = scratch, *u = y + d, *hx = u + d, *sc = hx + d;
    for (size_t j = 0; j < nt; j++) {
        size_t t = t0 + j;
        if (c->res->tok.status[t] == NC_TOKEN_NONFINITE)
            continue;
        const double *x = rows + j * d;
        nc_tensor_rows(c->y, c->res->tok.index ? c->res->tok.index[t] : t, 1, y);
        double fin[NC_LANES] = {0}, sh[NC_LANES] = {0};
        for (size_t i = 0; i < d; i++)
            hx[i] = hulp(x[i], c->rx.u, c->rx.hmin);
        size_t i = 0;
        for (; i + NC_LANES <= d; i += NC_LANES)
            for (int l = 0; l < NC_LANES; l++) {
                fin[l] += y[i + l] - y[i + l]; /* NaN when a y is not finite */
                sh[l] += hx[i + l];
            }
        for (int l = 0; i < d; i++, l++) {
            fin[l] += y[i] - y[i];
            sh[l] += hx[i];
        }
        if (nc_lanes_total(fin) != 0)
            continue;
        const double shx = nc_lanes_total(sh);
        for (int k = 0; k < 2; k++) {
            tok_in tk = {.x = x, .y = y, .u = u, .hx = hx};
            if (!centre(k, x, d, u, &tk.m))
                continue;
            double su = abs_dot(u, hx, d);
            tk.s1 = k == NC_LAYERNORM ? shx / (double)d : 0.0;
            tk.su = su / (double)d;
            if (c->stage == STAGE_CHECK) {
                if (c->af[k].ok)
                    check_token(c, k, t, &tk, sc);
            } else if (c->af[k].ws == NC_AFFINE_ESTIMATED && c->af[k].ok) {
                estimate_token(c, shard, k, &tk, sc);
            }
        }
    }
}

/* ============================================================ the affine part */

static int cmp_double(const void *pa, const void *pb)
{
    double p = *(const double *)pa, q = *(const double *)pb;
    return (p > q) - (p < q);
}

/* The median of v[0 .. n) (sorts v; NaN when empty or all NaN). */
static double median(double *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] == v[i])
            v[k++] = v[i];
    if (!k)
        return NAN;
    qsort(v, k, sizeof *v, cmp_double);
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

/* The per-channel estimate of kind k from the merged sums s[NSUM][d]
 * (stage sums) over n tokens. */
static void solve_affine(check_ctx *c, int k, const double *s, size_t n)
{
    const size_t d = c->d;
    kind_affine *af = &c->af[k];
    bool two = af->bs == NC_AFFINE_ESTIMATED;
    af->ok = n >= (two ? 3u : 2u);
    for (size_t i = 0; af->ok && i < d; i++) {
        /* a channel whose n never varies (LayerNorm at d = 1, constant
         * tokens) fixes no weight: 0, and the bias is the output's mean */
        double sn = s[i], snn = s[d + i], sy = s[2 * d + i], syn = s[3 * d + i];
        if (two) {
            double det = (double)n * snn - sn * sn;
            af->w[i] = det > 0 ? ((double)n * syn - sn * sy) / det : 0.0;
            af->b[i] = (sy - af->w[i] * sn) / (double)n;
        } else {
            af->w[i] = snn > 0 ? syn / snn : 0.0;
        }
    }
}

/* The estimate's covariance per channel: the sandwich (X'X)^-1 X'VX (X'X)^-1
 * of least squares with the noise model's variances V, from the sums s and
 * v[NNOISE][d]. From the model, not from the residuals: under a wrong kind
 * the residuals are large, and they must not widen that kind's bound. */
static void affine_cov(check_ctx *c, int k, const double *s, const double *v, size_t n)
{
    const size_t d = c->d;
    kind_affine *af = &c->af[k];
    bool two = af->bs == NC_AFFINE_ESTIMATED;
    for (size_t i = 0; i < d; i++) {
        double *cv = af->cov + 3 * i, sn = s[i], snn = s[d + i];
        double vnn = v[i], vn = v[d + i], v1 = v[2 * d + i];
        double det = (double)n * snn - sn * sn;
        if (two && !(det > 0)) { /* the bias alone: the mean of the output */
            cv[0] = cv[1] = 0;
            cv[2] = v1 / ((double)n * (double)n);
        } else if (two) {
            /* (X'X)^-1 = [[n, -sn], [-sn, snn]] / det for rows (n_i, 1) */
            double p00 = (double)n / det, p01 = -sn / det, p11 = snn / det;
            cv[0] = p00 * p00 * vnn + 2 * p00 * p01 * vn + p01 * p01 * v1;
            cv[1] = p00 * p01 * vnn + (p00 * p11 + p01 * p01) * vn + p01 * p11 * v1;
            cv[2] = p01 * p01 * vnn + 2 * p01 * p11 * vn + p11 * p11 * v1;
        } else {
            cv[0] = snn > 0 ? vnn / (snn * snn) : 0.0;
            cv[1] = cv[2] = 0;
        }
    }
}

/* Which parts of kind k's affine part are estimated, per the stored
 * tensors: a weight that is missing or was rounded after the model ran; a
 * bias that was rounded, or that is missing with the weight (an
 * output-only dump) under LayerNorm (RMSNorm has none). */
static void affine_sources(int k, const nc_tensor *weight, const nc_tensor *bias, bool rounded,
                           nc_affine_src *ws, nc_affine_src *bs)
{
    *ws = weight && !rounded ? NC_AFFINE_GIVEN : NC_AFFINE_ESTIMATED;
    if (bias)
        *bs = rounded ? NC_AFFINE_ESTIMATED : NC_AFFINE_GIVEN;
    else
        *bs = !weight && k == NC_LAYERNORM ? NC_AFFINE_ESTIMATED : NC_AFFINE_NONE;
}

/* The least-squares sums over the pass (stage sums), merged into the first
 * shard's block; the weight and bias solved from them. n[k]: tokens. */
static int affine_round(check_ctx *c, nc_pass *pass, size_t n[2], nc_err *err)
{
    const size_t d = c->d;
    memset(c->acc, 0, (size_t)NC_SHARDS * 2 * NSUM * d * sizeof *c->acc);
    memset(c->count, 0, (size_t)NC_SHARDS * 2 * sizeof *c->count);
    c->stage = STAGE_SUMS;
    int rc = nc_pass_run(pass, check_block, c, err);
    if (rc)
        return rc;
    n[0] = n[1] = 0;
    for (int s = 0; s < NC_SHARDS; s++)
        for (int k = 0; k < 2; k++) {
            n[k] += c->count[s * 2 + k];
            if (s == 0)
                continue;
            const double *src = c->acc + ((size_t)s * 2 + (size_t)k) * NSUM * d;
            double *dst = c->acc + (size_t)k * NSUM * d;
            for (size_t i = 0; i < NSUM * d; i++)
                dst[i] += src[i];
        }
    for (int k = 0; k < 2; k++)
        if (c->af[k].ok && c->af[k].ws == NC_AFFINE_ESTIMATED) {
            solve_affine(c, k, c->acc + (size_t)k * NSUM * d, n[k]);
            affine_derive(c, &c->af[k]);
        }
    return 0;
}

/* The eps fit of one kind from its per-token arrays (analysis/normeps.h). */
static int fit_eps(nc_kind_check *kc, size_t nt, bool slope, double uc, double uy, nc_err *err)
{
    return nc_eps_fit_run(kc->m, kc->a, kc->uu, nt, slope, uc, uy, &kc->eps, err);
}

/* After a round's check pass: kind k's eps for the next round, and whether
 * it is done (eps settled, or q no longer halving). */
static int next_eps(check_ctx *c, int k, int round, bool *done, double *qprev, double *next,
                    nc_err *err)
{
    nc_kind_check *kc = c->kc[k];
    kc->affine_rounds = round;
    int rc = fit_eps(kc, c->nt, true, c->uc, c->ry.u, err);
    if (rc)
        return rc;
    nc_sum s = {0};
    size_t used = 0;
    for (size_t t = 0; t < c->nt; t++)
        if (kc->m[t] == kc->m[t]) {
            nc_sum_add(&s, kc->rss[t]);
            used++;
        }
    double q = used ? nc_sum_get(&s) / (double)used : INFINITY;
    const nc_eps_fit *e = &kc->eps;
    *next = e->assessed ? fmax(e->estimate, 0.0) : c->eps_round[k];
    bool moving =
        e->assessed && fabs(*next - c->eps_round[k]) > 0.1 * (NC_NORMCHECK_Z * e->se + e->bias);
    kc->affine_converged = !moving;
    *done = !moving || !(q < 0.5 * *qprev);
    *qprev = q;
    return 0;
}

/* The affine part of each kind, by alternating least squares between it and
 * eps: a round estimates the weight (and bias) with n = u / sqrt(m + eps_k),
 * then a check pass fits each token's scale a_t and the line 1/a_t^2 =
 * beta (m_t + eps) gives eps_k+1. A kind is done when eps moves by less
 * than a tenth of the half-width of its interval, when its q stops falling
 * by half a round (the wrong kind), or after NC_NORMCHECK_ROUNDS rounds.
 * Then the noise of the estimate (from the noise model) and its quality. */
static int estimate_affine(check_ctx *c, nc_pass *pass, nc_err *err)
{
    const size_t d = c->d;
    size_t n[2];
    double *cov[2] = {c->af[0].cov, c->af[1].cov};
    c->af[0].cov = c->af[1].cov = NULL; /* the bound without the estimate's term */
    bool done[2] = {c->af[0].ws != NC_AFFINE_ESTIMATED, c->af[1].ws != NC_AFFINE_ESTIMATED};
    double qprev[2] = {INFINITY, INFINITY}, next[2];
    memcpy(next, c->eps_guess, sizeof next);
    int rc = 0;
    for (int round = 1; round <= NC_NORMCHECK_ROUNDS && !(done[0] && done[1]); round++) {
        memcpy(c->eps_round, next, sizeof next);
        if ((rc = affine_round(c, pass, n, err)))
            return rc;
        c->stage = STAGE_CHECK;
        if ((rc = nc_pass_run(pass, check_block, c, err)))
            return rc;
        for (int k = 0; k < 2; k++) {
            if (!done[k] && (rc = next_eps(c, k, round, &done[k], &qprev[k], &next[k], err)))
                return rc;
            for (size_t t = 0; t < 4 * c->nt; t++) /* the next pass starts afresh */
                c->kc[k]->m[t] = NAN;
        }
    }
    /* the merged sums stay for the covariance; the noise sums go after them */
    double *sums = c->acc, *noise = sums + 2 * NSUM * d;
    c->acc = noise;
    memset(noise, 0, (size_t)NC_SHARDS * 2 * NNOISE * d * sizeof *noise);
    c->stage = STAGE_NOISE;
    rc = nc_pass_run(pass, check_block, c, err);
    c->acc = sums;
    c->af[0].cov = cov[0];
    c->af[1].cov = cov[1];
    if (rc)
        return rc;
    for (int s = 1; s < NC_SHARDS; s++)
        for (size_t i = 0; i < 2 * NNOISE * d; i++)
            noise[i] += noise[(size_t)s * 2 * NNOISE * d + i];
    double *tmp = noise + (size_t)NC_SHARDS * 2 * NNOISE * d;
    for (int k = 0; k < 2; k++) {
        kind_affine *af = &c->af[k];
        if (!af->ok || af->ws != NC_AFFINE_ESTIMATED)
            continue;
        affine_cov(c, k, sums + (size_t)k * NSUM * d, noise + (size_t)k * NNOISE * d, n[k]);
        for (size_t i = 0; i < d; i++)
            tmp[i] = sqrt(af->cov[3 * i]) / fabs(af->w[i]);
        c->kc[k]->weight_rel_se = median(tmp, d);
        if (af->bs == NC_AFFINE_ESTIMATED) {
            for (size_t i = 0; i < d; i++)
                tmp[i] = sqrt(af->cov[3 * i + 2]);
            c->kc[k]->bias_se = median(tmp, d);
        }
    }
    return 0;
}

/* ============================================================ the check */

double nc_norm_check_q(const nc_norm_check *c, nc_norm_kind kind, double eps)
{
    const nc_kind_check *kc = &c->k[kind];
    const double beta = kc->eps.beta;
    nc_sum s = {0};
    size_t n = 0;
    for (size_t t = 0; kc->m && t < c->nt; t++) {
        if (kc->m[t] != kc->m[t])
            continue;
        /* the model's own error in the token's scale is allowed (its bound
         * is the eps interval's bias term) */
        double a = 1.0 / sqrt(beta * (kc->m[t] + eps));
        double da = fmax(fabs(kc->a[t] - a) - nc_scale_bias(c->u_compute, c->u_output) * a, 0.0);
        if (!(kc->uu[t] > 0))
            da = 0; /* no scale in this token */
        nc_sum_add(&s, kc->rss[t] + da * da * kc->uu[t]);
        n++;
    }
    return n ? nc_sum_get(&s) / ((double)n * (double)c->d) : NAN;
}

void nc_norm_check_free(nc_norm_check *c)
{
    if (!c)
        return;
    for (int k = 0; k < 2; k++)
        free(c->k[k].m);
    memset(c, 0, sizeof *c);
}

/* q_free, consistency and eps of each kind; the verdict. */
static int conclude(nc_norm_check *out, bool slope[2], double uc, nc_err *err)
{
    for (int k = 0; k < 2; k++) {
        nc_kind_check *kc = &out->k[k];
        nc_sum s = {0};
        for (size_t t = 0; t < out->nt; t++)
            if (kc->m[t] == kc->m[t]) {
                nc_sum_add(&s, kc->rss[t]);
                kc->tokens++;
            }
        kc->q_free = kc->tokens ? nc_sum_get(&s) / ((double)kc->tokens * (double)out->d) : NAN;
        kc->consistent = kc->q_free <= NC_NORMCHECK_Q_MAX;
        int rc = fit_eps(kc, out->nt, slope[k], uc, out->u_output, err);
        if (rc)
            return rc;
    }
    bool ln = out->k[NC_LAYERNORM].consistent, rms = out->k[NC_RMSNORM].consistent;
    out->verdict = ln && rms   ? NC_KIND_UNDETERMINED
                   : ln || rms ? NC_KIND_IDENTIFIED
                               : NC_KIND_NEITHER;
    if (out->verdict == NC_KIND_IDENTIFIED)
        out->kind = rms ? NC_RMSNORM : NC_LAYERNORM;
    else
        out->kind =
            out->k[NC_RMSNORM].q_free < out->k[NC_LAYERNORM].q_free ? NC_RMSNORM : NC_LAYERNORM;
    return 0;
}

int nc_norm_check_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *y_real,
                      const nc_tensor *weight, const nc_tensor *bias, const nc_normcheck_opts *opts,
                      int threads, nc_norm_check *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    const size_t d = res->d, nt = res->tok.nt;
    out->d = d;
    out->nt = nt;
    check_ctx c = {.res = res, .y = y_real, .d = d, .nt = nt};
    const nc_dtype src = opts->source_dtype;
    out->precision = coarser(y_real->dtype, src);
    out->rounded_after =
        src != NC_DT_NONE && nc_dtype_unit_roundoff(src) < nc_dtype_unit_roundoff(y_real->dtype);
    c.ry = round_of(out->precision);
    c.rx = round_of(coarser(x->dtype, src));
    c.rw = round_of(coarser(weight ? weight->dtype : NC_F32, src));
    c.rb = round_of(coarser(bias ? bias->dtype : NC_F32, src));
    c.uc = x->dtype == NC_F64 && y_real->dtype == NC_F64 && (src == NC_DT_NONE || src == NC_F64)
               ? ldexp(1.0, -53)
               : ldexp(1.0, -24);
    out->u_output = c.ry.u;
    out->u_input = c.rx.u;
    out->u_compute = c.uc;
    memcpy(c.eps_guess, opts->eps_guess, sizeof c.eps_guess);
    nc_affine_src ws[2], bs[2];
    for (int k = 0; k < 2; k++)
        affine_sources(k, weight, bias, out->rounded_after, &ws[k], &bs[k]);
    const bool est = ws[0] == NC_AFFINE_ESTIMATED;
    /* one block: per kind w, b, cov [5 d]; the stored bias [d]; per kind
     * and token m, a, uu, rss [4 nt]; the sums and residual sums with a
     * median buffer */
    size_t accn = est ? (size_t)NC_SHARDS * 2 * (NSUM + NNOISE) * d + d : 0;
    size_t nd = (size_t)2 * 9 * d + d + accn, ntt = (nt ? nt : 1);
    double *blk = malloc((nd ? nd : 1) * sizeof *blk);
    size_t *count = calloc((size_t)NC_SHARDS * 2, sizeof *count);
    for (int k = 0; k < 2; k++)
        out->k[k].m = malloc(4 * ntt * sizeof *out->k[k].m);
    int rc = 0;
    if (!blk || !count || !out->k[0].m || !out->k[1].m) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the real-output check", res->name);
        goto out;
    }
    memset(blk, 0, nd * sizeof *blk);
    double *bstored = blk + 18 * d;
    if (bias && bs[0] == NC_AFFINE_GIVEN) {
        nc_tensor_elems(bias, 0, d, bstored);
        c.bias_given = bstored;
    }
    for (int k = 0; k < 2; k++) {
        nc_kind_check *kc = &out->k[k];
        kind_affine *af = &c.af[k];
        kc->a = kc->m + ntt;
        kc->uu = kc->a + ntt;
        kc->rss = kc->uu + ntt;
        for (size_t t = 0; t < 4 * ntt; t++)
            kc->m[t] = NAN;
        kc->weight = af->ws = ws[k];
        kc->bias = af->bs = bs[k];
        kc->weight_rel_se = kc->bias_se = NAN;
        af->w = blk + (size_t)k * 9 * d;
        af->b = bs[k] == NC_AFFINE_NONE ? NULL : af->w + d;
        af->cov = est ? af->w + 2 * d : NULL;
        af->aw = af->w + 5 * d;
        af->b0 = af->aw + d;
        af->hw = af->b0 + d;
        af->cb = af->hw + d;
        af->ok = true;
        if (ws[k] == NC_AFFINE_GIVEN)
            nc_tensor_elems(weight, 0, d, af->w);
        if (bs[k] == NC_AFFINE_GIVEN)
            memcpy(af->b, bstored, d * sizeof *af->b);
        affine_derive(&c, af);
        c.kc[k] = kc;
    }
    c.acc = blk + 19 * d;
    c.count = count;
    nc_pass pass = nc_layer_pass(res, x, threads, NULL);
    pass.scratch_bytes = 6 * d * sizeof(double);
    if (nt && d && est && (rc = estimate_affine(&c, &pass, err)))
        goto out;
    c.stage = STAGE_CHECK;
    if (nt && d && (rc = nc_pass_run(&pass, check_block, &c, err)))
        goto out;
    bool slope[2] = {est, est};
    rc = conclude(out, slope, c.uc, err);
out:
    free(blk);
    free(count);
    if (rc)
        nc_norm_check_free(out);
    return rc;
}
