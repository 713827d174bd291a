/*
 * jacobian.c - the diagonal-Jacobian comparison (jacobian.h; BRIEF.md, "The
 * gradient derivation").
 *
 * Legend: d channels; t a visited token (a position in res->tok), tok its
 * row in x; i a channel; y = (x - c_t) * inv_t the norm's output before the
 * affine part; J the exact Jacobian of the norm, jd its diagonal; g a probe
 * (or the real gradient at the norm's output), v = J^T g; f' a surrogate's
 * derivative. Accumulators are per shard and merged in shard order;
 * per-token values go to arrays indexed by t and are summarised serially,
 * so nothing depends on the thread count (core/par.h).
 *
 * Where the time goes (the streaming pass, per token and probe): d normals
 * (nc_rng_normals, ~3 ns each), then sweeps over the channels (errors_of):
 * one for y.g and sum g, one that forms v = J^T g and the error of diag(J),
 * one per pair of surrogates for theirs. The f' rows are computed once per
 * token by the table's vectorised deriv functions (they cost about as much
 * as all the probes' sweeps). Every loop over i keeps NC_LANES partial sums
 * (core/sum.h), so it vectorises without reordering anything, and the
 * helpers are NC_VM_INLINE so that they are compiled into jac_block's AVX2
 * clone (NC_VMATH_CLONES). Scratch is per thread, (4 + surrogates) d
 * doubles, allocated once per pass. On a 4096 x 4096 layer with 8 probes
 * and the 8 default fits the pass takes ~1.3 s of CPU (one thread, shared
 * AMD EPYC): ~0.4 s of normals, ~0.35 s of sweeps, ~0.45 s of f' rows, of
 * which DyISRU's three take half because GCC does not vectorise a loop
 * calling sqrt unless -fno-math-errno (sqrt may set errno); with that flag
 * the pass takes ~1.1 s. (It took ~4.8 s with the polar method and plain
 * lane loops; see the reductions below and jacobian_internal.h.)
 *
 * Left out: the dense check, J materialised and multiplied with OpenBLAS
 * (jacobian_dense.c); the per-token sweeps that it shares with the pass
 * (token_state, errors_of) are in jacobian_internal.h.
 */
#include "analysis/jacobian.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jacobian_internal.h"
#include "core/par.h"
#include "core/rng.h"
#include "core/sum.h"
#include "core/vmath.h"

/* ============================================================ reductions */

/* Sums over i < n in NC_LANES lanes (lane i mod NC_LANES, core/sum.h): the
 * fixed-width body vectorises without reassociation, so the bits are the
 * same with SSE2, AVX2 or no vectors at all. NC_VM_INLINE: a call would
 * leave the AVX2 clone of the caller for the baseline copy. dot and total,
 * used once per token or less, keep this plain form; the hot sweeps use
 * the four-double vectors of jacobian_internal.h. */

/* sum_i a_i b_i */
NC_VM_INLINE double dot(const double *a, const double *b, size_t n)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++)
            s[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++)
        s[l] += a[i] * b[i];
    return nc_lanes_total(s);
}

/* sum_i a_i */
NC_VM_INLINE double total(const double *a, size_t n)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES)
        for (int l = 0; l < NC_LANES; l++)
            s[l] += a[i + l];
    for (int l = 0; i < n; i++, l++)
        s[l] += a[i];
    return nc_lanes_total(s);
}

/* sum_i (a_i - b_i)^2 and, into *maxe, max(*maxe, max_i |a_i - b_i|) (a NaN
 * difference makes the maximum NaN) */
NC_VM_INLINE double sq_diff_max(const double *a, const double *b, size_t n, double *maxe)
{
    const v4i no_sign = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX};
    v4d s0 = {0, 0, 0, 0}, s1 = s0, m0 = s0, m1 = s0;
    size_t i = 0;
    for (; i + NC_LANES <= n; i += NC_LANES) {
        v4d e0 = (v4d)((v4i)(V4(a + i) - V4(b + i)) & no_sign); /* |a - b| */
        v4d e1 = (v4d)((v4i)(V4(a + i + 4) - V4(b + i + 4)) & no_sign);
        s0 += e0 * e0;
        s1 += e1 * e1;
        v4i take0 = (e0 > m0) | (e0 != e0), take1 = (e1 > m1) | (e1 != e1); /* NaN wins */
        m0 = (v4d)(((v4i)e0 & take0) | ((v4i)m0 & ~take0));
        m1 = (v4d)(((v4i)e1 & take1) | ((v4i)m1 & ~take1));
    }
    double s[NC_LANES], m[NC_LANES];
    V4(s) = s0;
    V4(s + 4) = s1;
    V4(m) = m0;
    V4(m + 4) = m1;
    for (int l = 0; i < n; i++, l++) {
        double e = fabs(a[i] - b[i]);
        s[l] += e * e;
        m[l] = e > m[l] || e != e ? e : m[l];
    }
    for (int l = 0; l < NC_LANES; l++)
        *maxe = m[l] > *maxe || m[l] != m[l] ? m[l] : *maxe;
    return nc_lanes_total(s);
}

/* ======================================================== one token */

/* (inline versions for the pass, public wrappers below) */

NC_VM_INLINE void token_vjp(nc_norm_kind norm, const double *y, double inv, size_t d,
                            const double *g, double *out)
{
    /* J^T g = J g = inv (g - [mean(g)] - y (y.g) / d) */
    const double dd = (double)d;
    const double yg = dot(y, g, d) / dd;
    const double mg = norm == NC_LAYERNORM ? total(g, d) / dd : 0.0;
    for (size_t i = 0; i < d; i++)
        out[i] = inv * ((g[i] - mg) - y[i] * yg);
}

void nc_jac_token_diag(nc_norm_kind norm, const double *y, double inv, size_t d, double *diag)
{
    const double dd = (double)d, a = diag_a(norm, d);
    for (size_t i = 0; i < d; i++)
        diag[i] = inv * (a - y[i] * y[i] / dd);
}

void nc_jac_token_vjp(nc_norm_kind norm, const double *y, double inv, size_t d, const double *g,
                      double *out)
{
    token_vjp(norm, y, inv, d, g, out);
}

double nc_jac_token_frob2(nc_norm_kind norm, const double *y, double inv, size_t d)
{
    return frob2_from(norm, dot(y, y, d), total(y, d), inv, d);
}

/* ||e|| / ||v|| from their squares, with the conventions of jacobian.h:
 * +inf for a nonzero error over a zero v, 0 for 0/0; never NaN from a zero
 * denominator. */
static double rel_err(double e2, double v2)
{
    if (v2 > 0)
        return sqrt(e2 / v2);
    return e2 > 0 ? INFINITY : (e2 == 0 ? 0.0 : e2);
}

/* ============================================================ the pass */

typedef struct jac_acc {
    nc_sum diag2;    /* sum_t sum_i J_ii^2 (also ||diag(J) 1||^2) */
    nc_sum frob2;    /* sum_t ||J||_F^2 */
    nc_sum rad_num;  /* sum_t ||diag(J) y||^2 */
    nc_sum rad_den;  /* sum_t ||inv y||^2 */
    nc_sum ones_den; /* sum_t d inv^2 */
    nc_sum sse[NC_FIT_COUNT]; /* sum (J_ii - f'(x_i))^2 */
    double maxe[NC_FIT_COUNT];
    size_t used, real_zero, real_nonfinite;
} jac_acc;

typedef struct jac_ctx {
    const nc_layer_result *res;
    const nc_tensor *grad;
    const double *weight;
    size_t d, probes;
    uint64_t pseed;             /* seed ^ NC_JAC_SEED_TAG */
    int ns;                     /* surrogates compared */
    int sid[NC_FIT_COUNT];      /* their ids */
    double *err;                /* [nt] per-token mean probe error of diag(J) */
    double *err_real;           /* [nt] real-gradient error of diag(J) (has grad) */
    unsigned char *real_ok;     /* [nt] token has a usable real gradient */
    double *serr[NC_FIT_COUNT];      /* [nt] per surrogate slot: probe error */
    double *serr_real[NC_FIT_COUNT]; /* [nt] per surrogate slot: real error */
    jac_acc acc[NC_SHARDS];
} jac_ctx;

/* Doubles of per-thread scratch: y, jd, g (a probe or the real gradient),
 * v = J^T g, and f' per surrogate. */
static size_t scratch_doubles(size_t d, int ns)
{
    return (4 + (size_t)ns) * d;
}

NC_VMATH_CLONES
static void jac_block(void *vctx, int shard, size_t t0, size_t nt, const double *rows,
                      void *scratch)
{
    jac_ctx *ctx = vctx;
    const nc_layer_result *res = ctx->res;
    const nc_layer_tokens *tk = &res->tok;
    const nc_norm_kind norm = res->norm;
    const size_t d = ctx->d, P = ctx->probes;
    const int ns = ctx->ns;
    jac_acc *a = &ctx->acc[shard];
    double *y = scratch, *jd = y + d, *g = jd + d, *v = g + d, *fp = v + d; /* fp: [ns * d] */

    for (size_t k = 0; k < nt; k++) {
        const size_t t = t0 + k;
        if (tk->status[t] != NC_TOKEN_OK)
            continue;
        const size_t tok = tk->index ? tk->index[t] : t;
        const double *x = rows + k * d;
        const double inv = tk->inv[t];
        double sums[4];
        token_state(norm, x, tk->centre[t], inv, d, y, jd, sums);

        /* pooled shares: sum J_ii^2 against ||J||_F^2 (closed form), and
         * ||diag(J) y||^2 against ||inv y||^2 */
        nc_sum_add(&a->diag2, sums[2]);
        nc_sum_add(&a->frob2, frob2_from(norm, sums[0], sums[1], inv, d));
        nc_sum_add(&a->rad_num, sums[3]);
        nc_sum_add(&a->rad_den, inv * inv * sums[0]);
        nc_sum_add(&a->ones_den, (double)d * inv * inv);
        a->used++;

        /* surrogate derivatives against the exact diagonal */
        for (int j = 0; j < ns; j++) {
            const int id = ctx->sid[j];
            double *f = fp + (size_t)j * d;
            nc_surrogate_get((nc_fit_id)id)->deriv(&res->fits[id].params, 0, x, d, f);
            nc_sum_add(&a->sse[id], sq_diff_max(jd, f, d, &a->maxe[id]));
        }

        /* random probes, d normals each from the token's stream, probe after
         * probe: per token, the mean of the probes' relative errors */
        nc_rng rng;
        nc_rng_seed(&rng, ctx->pseed, (uint64_t)tok);
        double e_sum = 0, se_sum[NC_FIT_COUNT] = {0}, v2, e2[1 + NC_FIT_COUNT];
        for (size_t p = 0; p < P; p++) {
            nc_rng_normals(&rng, g, d);
            errors_of(norm, y, jd, fp, ns, inv, d, g, v, &v2, e2);
            e_sum += rel_err(e2[0], v2);
            for (int j = 0; j < ns; j++)
                se_sum[j] += rel_err(e2[1 + j], v2);
        }
        ctx->err[t] = e_sum / (double)P;
        for (int j = 0; j < ns; j++)
            ctx->serr[j][t] = se_sum[j] / (double)P;

        /* the real gradient at the norm's output: weight * grad_output */
        if (!ctx->grad)
            continue;
        nc_tensor_rows(ctx->grad, tok, 1, g);
        if (ctx->weight)
            for (size_t i = 0; i < d; i++)
                g[i] *= ctx->weight[i];
        const double g2 = dot(g, g, d);
        if (!isfinite(g2)) {
            a->real_nonfinite++;
            continue;
        }
        if (g2 == 0) {
            a->real_zero++;
            continue;
        }
        ctx->real_ok[t] = 1;
        errors_of(norm, y, jd, fp, ns, inv, d, g, v, &v2, e2);
        ctx->err_real[t] = rel_err(e2[0], v2);
        for (int j = 0; j < ns; j++)
            ctx->serr_real[j][t] = rel_err(e2[1 + j], v2);
    }
}

/* ============================================================ summaries */

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* NumPy's default ("linear") quantile of sorted a[0..n): position q (n-1),
 * interpolated as numpy's _lerp does; an infinite upper neighbour gives
 * +inf unless the position falls exactly on the lower one. */
static double quantile_sorted(const double *a, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return a[n - 1];
    double t = pos - (double)lo, lo_v = a[lo], hi_v = a[lo + 1];
    if (t == 0 || lo_v == hi_v)
        return lo_v;
    if (isinf(hi_v))
        return hi_v;
    double diff = hi_v - lo_v;
    return t >= 0.5 ? hi_v - diff * (1.0 - t) : lo_v + diff * t;
}

/* The summary of v[t] over the tokens with keep[t] == want (work: nt
 * doubles). A NaN among the values makes every field NaN. */
static nc_jac_summary summarize(const double *v, const unsigned char *keep, unsigned char want,
                                size_t nt, double *work)
{
    nc_jac_summary s = {NAN, NAN, NAN, 0, 0};
    nc_sum sum = {0, 0};
    bool has_nan = false;
    for (size_t t = 0; t < nt; t++) {
        if (keep[t] != want)
            continue;
        double e = v[t];
        has_nan |= isnan(e);
        s.n_inf += isinf(e) != 0;
        nc_sum_add(&sum, e);
        work[s.n++] = e;
    }
    if (s.n == 0 || has_nan)
        return s;
    s.mean = s.n_inf ? INFINITY : nc_sum_get(&sum) / (double)s.n;
    qsort(work, s.n, sizeof *work, cmp_double);
    s.median = quantile_sorted(work, s.n, 0.5);
    s.p95 = quantile_sorted(work, s.n, 0.95);
    return s;
}

/* ============================================================ ODE check */

typedef struct ode_ctx {
    double rho, d;
} ode_ctx;

/* ODE-1: dy/dx = (1/rho)(1 - y^2/d) */
static double ode1_rhs(double x, double y, void *vc)
{
    (void)x;
    const ode_ctx *c = vc;
    return (1.0 - y * y / c->d) / c->rho;
}

/* ODE-2: dy/dx = (y/x)(1 - y^2/d) */
static double ode2_rhs(double x, double y, void *vc)
{
    const ode_ctx *c = vc;
    return (y / x) * (1.0 - y * y / c->d);
}

/* Integrates from (x0, y0) to x_max; the largest |y - closed(x)| over the
 * accepted points (the start included) into *dev. */
static nc_ode_status ode_run(nc_ode_fn f, ode_ctx *c, double x0, double y0, double x_max,
                             double (*closed)(const ode_ctx *, double), double *dev,
                             size_t *steps, size_t *rejected)
{
    nc_ode s;
    nc_ode_begin(&s, f, c, x0, y0, NULL);
    double m = fabs(y0 - closed(c, x0));
    while (s.status == NC_ODE_OK && s.x < x_max)
        if (nc_ode_step(&s, x_max) == NC_ODE_OK)
            m = fmax(m, fabs(s.y - closed(c, s.x)));
    *dev = m;
    *steps = s.accepted;
    *rejected = s.rejected;
    return s.status;
}

static double closed_tanh(const ode_ctx *c, double x)
{
    const double sd = sqrt(c->d);
    return sd * tanh(x / (c->rho * sd));
}

static double closed_isru(const ode_ctx *c, double x)
{
    return sqrt(c->d) * x / sqrt(x * x + c->d * c->rho * c->rho);
}

void nc_jac_ode_check(double rho, size_t d, double x_max, nc_jac_ode *out)
{
    memset(out, 0, sizeof *out);
    out->rho = rho;
    out->x_max = x_max;
    out->ode2_x0 = out->ode1_max_dev = out->ode2_max_dev = NAN;
    if (!(rho > 0 && isfinite(rho) && x_max > 0 && isfinite(x_max) && d > 0)) {
        snprintf(out->status, sizeof out->status,
                 "not run: needs a finite rho > 0 and max |x| > 0");
        return;
    }
    ode_ctx c = {rho, (double)d};
    nc_ode_status s1 = ode_run(ode1_rhs, &c, 0.0, 0.0, x_max, closed_tanh, &out->ode1_max_dev,
                               &out->ode1_steps, &out->ode1_rejected);

    /* ODE-2 from its series at x0 (jacobian.h): a = 1/rho,
     * y = a x - a^3 x^3 / (2d) + 3 a^5 x^5 / (8 d^2) */
    double x0 = fmin(NC_JAC_ODE2_X0 * rho * sqrt(c.d), 0.5 * x_max);
    double a = 1.0 / rho, u = a * a * x0 * x0 / c.d;
    double y0 = a * x0 * (1.0 - 0.5 * u + 0.375 * u * u);
    out->ode2_x0 = x0;
    nc_ode_status s2 = ode_run(ode2_rhs, &c, x0, y0, x_max, closed_isru, &out->ode2_max_dev,
                               &out->ode2_steps, &out->ode2_rejected);
    out->ok = s1 == NC_ODE_OK && s2 == NC_ODE_OK;
    if (out->ok)
        snprintf(out->status, sizeof out->status, "ok");
    else
        snprintf(out->status, sizeof out->status, "ODE-1: %s; ODE-2: %s",
                 nc_ode_status_name(s1), nc_ode_status_name(s2));
}

/* ============================================================ the run */

void nc_jac_opts_defaults(nc_jac_opts *o)
{
    memset(o, 0, sizeof *o);
    o->probes = NC_JAC_PROBES;
    o->seed = 1;
}

static void set_nan_metrics(nc_jac_result *out)
{
    out->diag_frobenius_share = out->radial_retention = out->ones_retention = NAN;
    nc_jac_summary none = {NAN, NAN, NAN, 0, 0};
    out->backprop = out->backprop_real = none;
    for (int j = 0; j < NC_FIT_COUNT; j++) {
        out->surr[j].diag_rmse = out->surr[j].diag_max_err = NAN;
        out->surr[j].backprop = out->surr[j].backprop_real = none;
    }
    out->dense_max_rel_diff = out->dense_frob_max_rel_diff = NAN;
    out->dense_tol = out->dense_frob_tol = NAN;
}

int nc_jacobian_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                    const double *weight, const nc_jac_opts *o, int threads,
                    nc_progress *progress, nc_jac_result *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    nc_jac_opts dflt;
    nc_jac_opts_defaults(&dflt);
    if (!o)
        o = &dflt;
    const size_t d = res->d, nt = res->tok.nt;
    if (x->N != res->N || x->d != d || !nc_dtype_is_float(x->dtype))
        return nc_err_set(err, NC_EINVAL,
                          "%s: the Jacobian pass got an input of %zu x %zu, the layer was "
                          "analysed as %zu x %zu",
                          res->name, x->N, x->d, res->N, d);
    if (grad) {
        if (!nc_dtype_is_float(grad->dtype))
            return nc_err_set(err, NC_EUNSUPPORTED,
                              "%s: gradient dtype %s is not supported (expected F32, F16, BF16 "
                              "or F64)",
                              res->name, nc_dtype_name(grad->dtype));
        if (grad->N != res->N || grad->d != d) {
            char a[128], b[128];
            nc_tensor_shape_str(grad, a, sizeof a);
            nc_tensor_shape_str(x, b, sizeof b);
            return nc_err_set(err, NC_EINVAL,
                              "%s: gradient has shape %s, expected %s (the input's)", res->name,
                              a, b);
        }
    }
    out->norm = res->norm;
    out->d = d;
    out->probes = o->probes ? o->probes : NC_JAC_PROBES;
    out->seed = o->seed;
    out->has_real = grad != NULL;
    out->real_weighted = grad && weight;
    set_nan_metrics(out);
    snprintf(out->dense_status, sizeof out->dense_status, "not run");

    jac_ctx *ctx = NULL;
    double *mem = NULL, *work = NULL;
    unsigned char *real_ok = NULL;
    int rc = 0;

    /* which surrogates: every fit the layer has */
    int ns = 0, sid[NC_FIT_COUNT] = {0};
    for (int j = 0; j < NC_FIT_COUNT; j++)
        if (res->fits[j].ok)
            sid[ns++] = j;

    out->token_backprop = malloc((nt ? nt : 1) * sizeof *out->token_backprop);
    ctx = calloc(1, sizeof *ctx);
    /* per-token arrays besides token_backprop: ns (probes, per surrogate),
     * and with real gradients 1 + ns more */
    size_t per = (size_t)ns + (grad ? 1 + (size_t)ns : 0);
    mem = malloc((nt ? nt : 1) * (per ? per : 1) * sizeof *mem);
    work = malloc((nt ? nt : 1) * sizeof *work);
    real_ok = calloc(nt ? nt : 1, 1);
    if (!out->token_backprop || !ctx || !mem || !work || !real_ok) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the Jacobian pass", res->name);
        goto out;
    }
    for (size_t t = 0; t < nt; t++)
        out->token_backprop[t] = NAN;
    ctx->res = res;
    ctx->grad = grad;
    ctx->weight = weight;
    ctx->d = d;
    ctx->probes = out->probes;
    ctx->pseed = o->seed ^ NC_JAC_SEED_TAG;
    ctx->ns = ns;
    memcpy(ctx->sid, sid, sizeof sid);
    ctx->err = out->token_backprop;
    ctx->real_ok = real_ok;
    double *next = mem;
    for (int j = 0; j < ns; j++, next += nt)
        ctx->serr[j] = next;
    if (grad) {
        ctx->err_real = next;
        next += nt;
        for (int j = 0; j < ns; j++, next += nt)
            ctx->serr_real[j] = next;
    }

    /* ---- the streaming pass ---- */
    double t0 = nc_now_s();
    if (d > 0 && nt > 0) {
        nc_pass pass = nc_layer_pass(res, x, threads, progress);
        pass.scratch_bytes = scratch_doubles(d, ns) * sizeof(double);
        nc_progress_begin(progress, res->name, "jacobian", (uint64_t)(nt * d));
        rc = nc_pass_run(&pass, jac_block, ctx, err);
        nc_progress_end(progress);
        if (rc)
            goto out;
    }
    out->time_analytic_s = nc_now_s() - t0;

    jac_acc *A = &ctx->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        jac_acc *a = &ctx->acc[s];
        nc_sum_merge(&A->diag2, &a->diag2);
        nc_sum_merge(&A->frob2, &a->frob2);
        nc_sum_merge(&A->rad_num, &a->rad_num);
        nc_sum_merge(&A->rad_den, &a->rad_den);
        nc_sum_merge(&A->ones_den, &a->ones_den);
        for (int j = 0; j < NC_FIT_COUNT; j++) {
            nc_sum_merge(&A->sse[j], &a->sse[j]);
            A->maxe[j] = A->maxe[j] >= a->maxe[j] || A->maxe[j] != A->maxe[j] ? A->maxe[j]
                                                                              : a->maxe[j];
        }
        A->used += a->used;
        A->real_zero += a->real_zero;
        A->real_nonfinite += a->real_nonfinite;
    }
    out->tokens = A->used;
    out->real_zero_tokens = A->real_zero;
    out->real_nonfinite_tokens = A->real_nonfinite;
    if (A->used > 0) {
        out->diag_frobenius_share = nc_sum_get(&A->diag2) / nc_sum_get(&A->frob2);
        out->radial_retention = sqrt(nc_sum_get(&A->rad_num) / nc_sum_get(&A->rad_den));
        if (res->norm == NC_LAYERNORM)
            out->ones_retention = sqrt(nc_sum_get(&A->diag2) / nc_sum_get(&A->ones_den));
        const unsigned char *st = res->tok.status;
        out->backprop = summarize(ctx->err, st, NC_TOKEN_OK, nt, work);
        if (grad)
            out->backprop_real = summarize(ctx->err_real, real_ok, 1, nt, work);
        const double npts = (double)A->used * (double)d;
        for (int j = 0; j < ns; j++) {
            nc_jac_surrogate *S = &out->surr[sid[j]];
            S->ok = true;
            S->diag_rmse = sqrt(nc_sum_get(&A->sse[sid[j]]) / npts);
            S->diag_max_err = A->maxe[sid[j]];
            S->backprop = summarize(ctx->serr[j], st, NC_TOKEN_OK, nt, work);
            if (grad)
                S->backprop_real = summarize(ctx->serr_real[j], real_ok, 1, nt, work);
        }
    }

    /* ---- the dense check ---- */
    t0 = nc_now_s();
    size_t max_bytes = o->dense_max_bytes ? o->dense_max_bytes : NC_JAC_DENSE_MAX_BYTES;
    size_t m = o->dense_tokens ? o->dense_tokens : nc_jac_dense_default_tokens(d);
    if (m > A->used)
        m = A->used;
    if (o->no_dense)
        snprintf(out->dense_status, sizeof out->dense_status, "skipped (no_dense)");
    else if (m == 0)
        snprintf(out->dense_status, sizeof out->dense_status, "skipped: no usable token");
    else if (d > INT_MAX || d > max_bytes / sizeof(float) / d)
        snprintf(out->dense_status, sizeof out->dense_status,
                 "skipped: a %zu x %zu matrix exceeds %zu bytes", d, d, max_bytes);
    else if ((rc = nc_jac_dense_check(res, x, grad, weight, m, A->used, ctx->pseed,
                                      out->probes, out, err)))
        goto out;
    out->time_dense_s = nc_now_s() - t0;

    /* ---- the ODE check, over [0, max |x|] with rho = the mean token scale ---- */
    t0 = nc_now_s();
    nc_jac_ode_check(res->stats.rho, d, fmax(fabs(res->stats.min), fabs(res->stats.max)),
                     &out->ode);
    out->time_ode_s = nc_now_s() - t0;

out:
    free(ctx);
    free(mem);
    free(work);
    free(real_ok);
    if (rc)
        nc_jac_result_free(out);
    return rc;
}

void nc_jac_result_free(nc_jac_result *r)
{
    if (!r)
        return;
    free(r->token_backprop);
    memset(r, 0, sizeof *r);
}
