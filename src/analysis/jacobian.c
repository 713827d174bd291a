/*
 * jacobian.c - the diagonal-Jacobian comparison (jacobian.h; docs/jacobian.md).
 *
 * Legend: d channels; t a visited token (a position in res->tok), tok its
 * row in x; i a channel; y = (x - c_t) * inv_t the norm's output before the
 * affine part; J the exact Jacobian of the norm, jd its diagonal; g a probe
 * (or the real gradient at the norm's output), v = J^T g; f' a surrogate's
 * derivative. Accumulators are per shard and merged in shard order;
 * per-token values go to arrays indexed by t and are summarised serially,
 * so nothing depends on the thread count (core/par.h).
 *
 * The pass: in a run, the verify pass of the layer analysis has gathered
 * the probe expectations already (layer.h nc_layer_jac, from the same
 * evaluation of each fit's f and f'); then this pass runs only for real
 * gradients, and otherwise the summaries read the layer's sums.
 *
 * Where the time goes (the streaming pass, per token): one sweep for y,
 * diag(J) and their sums (nc_jac_token_state), then per surrogate its f' row (the
 * table's vectorised deriv functions) and one sweep for its squared
 * diagonal error; with real gradients, nc_jac_errors_of's sweeps. No random
 * probes: their expectations are exact (jacobian.h). Every loop over i
 * keeps NC_LANES partial sums (core/sum.h), so it vectorises without
 * reordering anything, and the helpers are NC_VM_INLINE so that they are
 * compiled into jac_block's vector clones (NC_VMATH_CLONES). Scratch is per
 * thread, (4 + surrogates) d doubles, allocated once per pass.
 *
 * Left out: the dense check (jacobian_dense.c); the summaries, standard
 * errors, rankings and Gaussian references (jacobian_stats.c); the
 * per-token sweeps that the pass shares with the dense check and the verify
 * pass (nc_jac_token_state, nc_jac_errors_of) are in jac_forms.h.
 */
#include "analysis/jacobian.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jac_forms.h"
#include "core/par.h"
#include "core/sum.h"
#include "core/vmath.h"
#include "util/clock.h"

/* ============================================================ reductions */

/* A sum over i < n in NC_LANES lanes (lane i mod NC_LANES, core/sum.h): the
 * fixed-width body vectorises without reassociation, so the bits are the
 * same with SSE2, AVX2 or no vectors at all. NC_VM_INLINE: a call would
 * leave the vector clones of the caller for the baseline copy. dot, used
 * once per token, keeps this plain form; the hot sweeps use the four-double
 * vectors of jac_forms.h. */

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

/* ============================================================ the pass */

typedef struct jac_acc {
    nc_jac_acc s; /* the pooled sums (jac_forms.h) */
    size_t real_zero, real_nonfinite;
} jac_acc;

/* Per-token arrays are indexed by the token's position t in res->tok. The
 * probe expectations go to own (the same block the verify pass fills when
 * it gathers them, layer.h nc_layer_jac); J is what the summaries read:
 * own, or the layer's when the pass was not needed. */
typedef struct jac_ctx {
    const nc_layer_result *res;
    const nc_tensor *grad;
    const double *weight;
    size_t d;
    int ns;                      /* surrogates compared (own.ns) */
    const int *sid;              /* their ids (own.sid) */
    nc_layer_jac own;            /* per token: frob, off, num per surrogate */
    const nc_layer_jac *J;
    double *rv2;                 /* [nt] real gradient: ||J^T g||^2 */
    double *rnum[1 + NC_FIT_COUNT]; /* [nt] real: ||D g - J^T g||^2, diag(J) then slots */
    unsigned char *real_ok;      /* [nt] token has a usable real gradient */
    jac_acc acc[NC_SHARDS];
} jac_ctx;

/* Doubles of per-thread scratch: y, jd, g (the real gradient), v = J^T g,
 * and f' per surrogate. */
static size_t scratch_doubles(size_t d, int ns)
{
    return (4 + (size_t)ns) * d;
}

/* The real gradient of token row tok at the norm's output (weight * grad)
 * into g, and its errors into the ctx arrays at t; counts the tokens left
 * out. */
NC_VM_INLINE void real_token(jac_ctx *ctx, jac_acc *a, size_t t, size_t tok, const double *y,
                             const double *jd, const double *fp, double inv, double *g,
                             double *v)
{
    const size_t d = ctx->d;
    nc_tensor_rows(ctx->grad, tok, 1, g);
    if (ctx->weight)
        for (size_t i = 0; i < d; i++)
            g[i] *= ctx->weight[i];
    const double g2 = dot(g, g, d);
    if (!isfinite(g2)) {
        a->real_nonfinite++;
        return;
    }
    if (g2 == 0) {
        a->real_zero++;
        return;
    }
    double v2, e2[1 + NC_FIT_COUNT];
    nc_jac_errors_of(ctx->res->norm, y, jd, fp, ctx->ns, inv, d, g, v, &v2, e2);
    ctx->real_ok[t] = 1;
    ctx->rv2[t] = v2;
    for (int j = 0; j <= ctx->ns; j++)
        ctx->rnum[j][t] = e2[j];
}

NC_VMATH_CLONES
static void jac_block(void *vctx, int shard, size_t t0, size_t nt, const double *rows,
                      const uint16_t *codes, void *scratch)
{
    (void)codes;
    jac_ctx *ctx = vctx;
    const nc_layer_result *res = ctx->res;
    const nc_layer_tokens *tk = &res->tok;
    const nc_norm_kind norm = res->norm;
    const size_t d = ctx->d;
    const int ns = ctx->ns;
    jac_acc *a = &ctx->acc[shard];
    double *y = scratch, *jd = y + d, *g = jd + d, *v = g + d, *fp = v + d; /* fp: [ns * d] */

    for (size_t k = 0; k < nt; k++) {
        const size_t t = t0 + k;
        if (tk->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double inv = tk->inv[t];
        double sums[5];
        nc_jac_token_state(norm, x, tk->centre[t], inv, d, y, jd, sums);

        /* pooled shares and, per token, the probe expectations: ||J||_F^2
         * and the off-diagonal energy (closed forms, jacobian.h) */
        double frob, off;
        nc_jac_acc_token(&a->s, norm, sums, inv, d, &frob, &off);
        ctx->own.frob[t] = frob;
        ctx->own.off[t] = off;

        /* surrogate derivatives against the exact diagonal: ||diag(f') -
         * J||_F^2 = sum_i (f'_i - J_ii)^2 + off_t */
        for (int j = 0; j < ns; j++) {
            const int id = ctx->sid[j];
            double *f = fp + (size_t)j * d, se[NC_LANES] = {0}, mx[NC_LANES] = {0};
            nc_surrogate_get((nc_fit_id)id)->deriv(&res->fits[id].params, 0, x, d, f);
            nc_jac_diff_lanes(jd, f, d, se, mx);
            ctx->own.num[j][t] = nc_jac_acc_fit(&a->s, id, se, mx) + off;
        }
        if (ctx->grad)
            real_token(ctx, a, t, tk->index ? tk->index[t] : t, y, jd, fp, inv, g, v);
    }
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

void nc_jac_ode_check(double rho, double a2, double x_max, nc_jac_ode *out)
{
    memset(out, 0, sizeof *out);
    out->rho = rho;
    out->width = a2;
    out->x_max = x_max;
    out->ode2_x0 = out->ode1_max_dev = out->ode2_max_dev = NAN;
    if (!(rho > 0 && isfinite(rho) && x_max > 0 && isfinite(x_max) && a2 > 0)) {
        snprintf(out->status, sizeof out->status,
                 "not run: needs a finite rho > 0 and max |x| > 0");
        return;
    }
    ode_ctx c = {rho, a2};
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
    out->diag_frobenius_share = out->offdiag_frobenius_share = NAN;
    out->radial_retention = out->ones_retention = NAN;
    nc_jac_summary none = {NAN, NAN, true, NAN, NAN, NAN, NAN, NAN, 0, 0};
    out->backprop = out->backprop_real = none;
    out->backprop_real.exact = false;
    for (int j = 0; j < NC_FIT_COUNT; j++) {
        nc_jac_surrogate *S = &out->surr[j];
        S->diag_rmse = S->diag_max_err = S->diag_rmse_rel = S->diag_max_err_rel = NAN;
        S->backprop = out->backprop;
        S->backprop_real = out->backprop_real;
    }
    out->dense.max_rel_diff = out->dense.frob_max_rel_diff = out->dense.off_max_rel_diff = NAN;
    out->dense.tol = out->dense.frob_tol = NAN;
}

/* x and grad against the analysed layer (errors as nc_jacobian_run's) */
static int check_inputs(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                        nc_err *err)
{
    if (x->N != res->N || x->d != res->d || !nc_dtype_is_float(x->dtype))
        return nc_err_set(err, NC_EINVAL,
                          "%s: the Jacobian pass got an input of %zu x %zu, the layer was "
                          "analysed as %zu x %zu",
                          res->name, x->N, x->d, res->N, res->d);
    if (!grad)
        return 0;
    if (!nc_dtype_is_float(grad->dtype))
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: gradient dtype %s is not supported (expected F32, F16, BF16 "
                          "or F64)",
                          res->name, nc_dtype_name(grad->dtype));
    if (grad->N != res->N || grad->d != res->d) {
        char a[128], b[128];
        nc_tensor_shape_str(grad, a, sizeof a);
        nc_tensor_shape_str(x, b, sizeof b);
        return nc_err_set(err, NC_EINVAL, "%s: gradient has shape %s, expected %s (the input's)",
                          res->name, a, b);
    }
    return 0;
}

/* The per-token arrays of ctx in one block mem (freed by the caller):
 * frob, off, num per surrogate (only when the pass runs) and, with real
 * gradients, rv2 and rnum. */
static int ctx_arrays(jac_ctx *ctx, size_t nt, bool pass, double **mem, nc_err *err)
{
    const int ns = ctx->ns;
    const size_t n = nt ? nt : 1;
    size_t per = (pass ? 2 + (size_t)ns : 0) + (ctx->grad ? 2 + (size_t)ns : 0);
    *mem = malloc(n * (per ? per : 1) * sizeof **mem);
    ctx->real_ok = calloc(n, 1);
    if (!*mem || !ctx->real_ok)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the Jacobian pass",
                          ctx->res->name);
    double *next = *mem;
    if (pass) {
        ctx->own.frob = next;
        ctx->own.off = (next += n);
        for (int j = 0; j < ns; j++)
            ctx->own.num[j] = (next += n);
        next += n;
    }
    if (ctx->grad) {
        ctx->rv2 = next;
        for (int j = 0; j <= ns; j++)
            ctx->rnum[j] = (next += n);
    }
    return 0;
}

/* Shards 1..NC_SHARDS-1 merged into shard 0, in order; the pooled sums
 * into ctx->own. */
static void merge_shards(jac_ctx *ctx)
{
    jac_acc *A = &ctx->acc[0];
    for (int s = 1; s < NC_SHARDS; s++) {
        nc_jac_acc_merge(&A->s, &ctx->acc[s].s);
        A->real_zero += ctx->acc[s].real_zero;
        A->real_nonfinite += ctx->acc[s].real_nonfinite;
    }
    nc_jac_acc_finish(&A->s, &ctx->own);
}

/* The pooled numbers, the summaries over tokens and the rankings into out,
 * from ctx->J (J->used > 0) and the real-gradient arrays. */
static int summarise(const jac_ctx *ctx, nc_jac_result *out, nc_err *err)
{
    const nc_layer_result *res = ctx->res;
    const nc_layer_jac *J = ctx->J;
    const size_t nt = res->tok.nt, d = ctx->d;
    const int ns = ctx->ns;
    size_t *idx = malloc(2 * (nt ? nt : 1) * sizeof *idx);
    double *work = malloc(2 * (nt ? nt : 1) * sizeof *work);
    if (!idx || !work) {
        free(idx);
        free(work);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the Jacobian summaries",
                          res->name);
    }
    size_t *ridx = idx + nt, n = 0, nr = 0; /* used tokens; those with a real gradient */
    for (size_t t = 0; t < nt; t++) {
        if (res->tok.status[t] != NC_TOKEN_OK)
            continue;
        idx[n++] = t;
        if (ctx->real_ok[t])
            ridx[nr++] = t;
        out->token_backprop[t] = J->frob[t] > 0 ? sqrt(J->off[t] / J->frob[t])
                                                : (J->off[t] > 0 ? INFINITY : 0.0);
    }
    const double frob = J->frob2, diag2 = J->diag2;
    out->diag_frobenius_share = diag2 / frob;
    out->offdiag_frobenius_share = sqrt(J->off2 / frob);
    out->radial_retention = sqrt(J->rad_num / J->rad_den);
    if (res->norm == NC_LAYERNORM)
        out->ones_retention = sqrt(diag2 / J->ones_den);
    out->backprop = nc_jac_summarize(J->off, J->frob, idx, n, true, work);
    if (ctx->grad)
        out->backprop_real = nc_jac_summarize(ctx->rnum[0], ctx->rv2, ridx, nr, false, work);
    const double npts = (double)J->used * (double)d, jd_rms = sqrt(diag2 / npts);
    const nc_jac_summary *S[NC_FIT_COUNT], *SR[NC_FIT_COUNT];
    for (int j = 0; j < ns; j++) {
        nc_jac_surrogate *s = &out->surr[ctx->sid[j]];
        s->ok = true;
        s->diag_rmse = sqrt(J->sse[ctx->sid[j]] / npts);
        s->diag_max_err = J->maxe[ctx->sid[j]];
        s->diag_rmse_rel = s->diag_rmse / jd_rms;
        s->diag_max_err_rel = s->diag_max_err / jd_rms;
        s->backprop = nc_jac_summarize(J->num[j], J->frob, idx, n, true, work);
        S[j] = &s->backprop;
        if (ctx->grad)
            s->backprop_real =
                nc_jac_summarize(ctx->rnum[1 + j], ctx->rv2, ridx, nr, false, work);
        SR[j] = &s->backprop_real;
    }
    out->nranked = ns;
    nc_jac_rank_surrogates(S, (const double *const *)J->num, J->frob, idx, n, ctx->sid, ns,
                           out->rank);
    if (ctx->grad)
        nc_jac_rank_surrogates(SR, (const double *const *)(ctx->rnum + 1), ctx->rv2, ridx, nr,
                               ctx->sid, ns, out->rank_real);
    free(idx);
    free(work);
    return 0;
}

/* The dense check on m of the used tokens, or why it does not run. */
static int dense_step(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                      const double *weight, const nc_jac_opts *o, size_t used,
                      nc_jac_result *out, nc_err *err)
{
    const size_t d = res->d;
    nc_jac_dense *dc = &out->dense;
    size_t max_entries = o->dense_max_entries ? o->dense_max_entries : NC_JAC_DENSE_MAX_ENTRIES;
    size_t m = o->dense_tokens ? o->dense_tokens : nc_jac_dense_default_tokens(d, used);
    if (m > used)
        m = used;
    if (!o->probes) /* the default rule, sized to the layer */
        out->probes = nc_jac_dense_default_probes(d, used);
    if (o->no_dense)
        snprintf(dc->status, sizeof dc->status, "skipped (no_dense)");
    else if (m == 0)
        snprintf(dc->status, sizeof dc->status, "skipped: no usable token");
    else if (d > max_entries / d)
        snprintf(dc->status, sizeof dc->status,
                 "skipped: %zu x %zu entries per token exceed %zu", d, d, max_entries);
    else
        return nc_jac_dense_check(res, x, grad, weight, m, used, o->seed ^ NC_JAC_SEED_TAG,
                                  out->probes, dc, err);
    return 0;
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
    int rc = check_inputs(res, x, grad, err);
    if (rc)
        return rc;
    out->norm = res->norm;
    out->d = d;
    out->probes = o->probes ? o->probes : NC_JAC_PROBES;
    out->seed = o->seed;
    out->has_real = grad != NULL;
    out->real_weighted = grad && weight;
    out->gauss = nc_jac_gaussian_ref(res->norm, d);
    set_nan_metrics(out);
    snprintf(out->dense.status, sizeof out->dense.status, "not run");

    jac_ctx *ctx = calloc(1, sizeof *ctx);
    double *mem = NULL;
    out->token_backprop = malloc((nt ? nt : 1) * sizeof *out->token_backprop);
    if (!ctx || !out->token_backprop) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the Jacobian pass", res->name);
        goto out;
    }
    for (size_t t = 0; t < nt; t++)
        out->token_backprop[t] = NAN;
    ctx->res = res;
    ctx->grad = grad;
    ctx->weight = weight;
    ctx->d = d;
    /* the verify pass gathered the probe expectations already (layer.h
     * nc_layer_jac): a pass is needed only for real gradients */
    const bool pass = grad || !res->jac.done;
    if (pass) {
        for (int j = 0; j < NC_FIT_COUNT; j++) /* every fit the layer has */
            if (res->fits[j].ok)
                ctx->own.sid[ctx->own.ns++] = j;
        ctx->J = &ctx->own;
    } else {
        ctx->J = &res->jac;
    }
    ctx->ns = ctx->J->ns;
    ctx->sid = ctx->J->sid;
    if ((rc = ctx_arrays(ctx, nt, pass, &mem, err)))
        goto out;

    /* ---- the streaming pass ---- */
    double t0 = nc_now_s();
    if (pass && d > 0 && nt > 0) {
        nc_pass p = nc_layer_pass(res, x, threads, progress);
        p.scratch_bytes = scratch_doubles(d, ctx->ns) * sizeof(double);
        nc_progress_begin(progress, res->name, "jacobian", (uint64_t)(nt * d));
        rc = nc_pass_run(&p, jac_block, ctx, err);
        nc_progress_end(progress);
        if (rc)
            goto out;
    }
    if (pass)
        merge_shards(ctx);
    out->time_analytic_s = nc_now_s() - t0;

    t0 = nc_now_s();
    out->tokens = ctx->J->used;
    out->real_zero_tokens = ctx->acc[0].real_zero;
    out->real_nonfinite_tokens = ctx->acc[0].real_nonfinite;
    if (ctx->J->used > 0 && (rc = summarise(ctx, out, err)))
        goto out;
    out->time_stats_s = nc_now_s() - t0;

    t0 = nc_now_s();
    if ((rc = dense_step(res, x, grad, weight, o, ctx->J->used, out, err)))
        goto out;
    out->time_dense_s = nc_now_s() - t0;

    /* ---- the ODE check, over [0, max |x|] with rho = the mean token scale ---- */
    t0 = nc_now_s();
    nc_jac_ode_check(res->stats.rho, nc_theory_width(res->norm, d), fmax(fabs(res->stats.min), fabs(res->stats.max)),
                     &out->ode);
    out->time_ode_s = nc_now_s() - t0;

out:
    if (ctx)
        free(ctx->real_ok);
    free(ctx);
    free(mem);
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
