/*
 * report.c - building report.json (report.h).
 *
 * The cJSON root owns every node; each add is checked through the `ok`
 * flag of the builder, so an allocation failure anywhere ends as one
 * NC_ENOMEM.
 */
#include "report/report.h"
#include "report/report_internal.h"
#include "report/shard.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/version.h"

/* the builder helpers are in report_internal.h */

/* ------------------------------------------------------------- config */

static const char *amp_text(nc_amp a, char *buf, size_t cap)
{
    if (a.rule == NC_AMP_VALUE)
        snprintf(buf, cap, "%.17g", a.value);
    else
        snprintf(buf, cap, "%s", nc_amp_rule_name(a.rule));
    return buf;
}

/* The dense-check token count every layer of the plan uses when the
 * config leaves it to the default rule (per d), or 0 when layers differ. */
static size_t common_dense_tokens(const nc_plan *plan)
{
    size_t v = 0;
    for (size_t k = 0; k < plan->nlayers; k++) {
        size_t t = nc_jac_dense_default_tokens(plan->layers[k].x ? plan->layers[k].x->d : 1);
        if (k > 0 && t != v)
            return 0;
        v = t;
    }
    return v;
}

/* The effective configuration: every value as used (defaults resolved). */
static void add_config(builder *b, cJSON *root, const nc_plan *plan)
{
    const nc_config *cfg = plan->cfg;
    cJSON *c = obj(b, root, "config");
    if (!c)
        return;
    str(b, c, "source", cfg->source);
    str(b, c, "name", cfg->name);
    str(b, c, "output", cfg->output);
    if (cfg->has_norm)
        str(b, c, "norm", nc_norm_name(cfg->norm));
    if (cfg->has_eps)
        num(b, c, "eps", cfg->eps);
    cJSON *fits = arr(b, c, "fits");
    for (int k = 0; fits && k < NC_FIT_COUNT; k++)
        if (cfg->fit[k] && !cJSON_AddItemToArray(fits, cJSON_CreateString(nc_surrogate_get((nc_fit_id)k)->name)))
            b->ok = false;
    cJSON *amp = obj(b, c, "amplitude");
    char buf[64];
    str(b, amp, "dyt", amp_text(cfg->amp_dyt, buf, sizeof buf));
    str(b, amp, "dyisru", amp_text(cfg->amp_dyisru, buf, sizeof buf));
    str(b, amp, "derf", amp_text(cfg->amp_derf, buf, sizeof buf));
    num(b, c, "bins", (double)(cfg->max_bins ? cfg->max_bins : NC_DEFAULT_BINS));
    num(b, c, "max_exact_points",
        (double)(cfg->max_exact_points ? cfg->max_exact_points : NC_DEFAULT_MAX_EXACT));
    num(b, c, "sample_tokens", (double)cfg->sample_tokens);
    num(b, c, "seed", (double)cfg->seed);
    num(b, c, "threads", (double)(cfg->threads ? cfg->threads : nc_default_threads()));
    cJSON *jac = obj(b, c, "jacobian");
    boolean(b, jac, "enabled", cfg->jacobian.enabled);
    num(b, jac, "probes", (double)(cfg->jacobian.probes ? cfg->jacobian.probes : NC_JAC_PROBES));
    if (cfg->jacobian.dense_tokens) {
        num(b, jac, "dense_tokens", (double)cfg->jacobian.dense_tokens);
    } else {
        size_t dt = common_dense_tokens(plan);
        num(b, jac, "dense_tokens", dt ? (double)dt : NAN);
        str(b, jac, "dense_tokens_rule", "default: 2^26/d^2 per layer, at least 1, at most "
                                         "4096 (and at most the layer's tokens)");
        if (!dt)
            str(b, jac, "status", "dense_tokens differs between layers (d differs): see "
                                  "layers[].jacobian");
    }
    num(b, jac, "seed", (double)(cfg->jacobian.has_seed ? cfg->jacobian.seed : cfg->seed));
    cJSON *layers = arr(b, c, "layers");
    for (size_t k = 0; layers && k < cfg->nlayers; k++) {
        const nc_config_layer *l = &cfg->layers[k];
        cJSON *lo = obj(b, layers, NULL);
        if (l->file)
            str(b, lo, "file", l->file);
        if (l->synth) {
            cJSON *s = obj(b, lo, "synth");
            const nc_synth_params *p = &l->synth_params;
            str(b, s, "preset", l->synth_preset);
            num(b, s, "tokens", (double)p->N);
            num(b, s, "dim", (double)p->d);
            num(b, s, "seed", (double)p->seed);
            if (strcmp(l->synth_preset, "outlier-steps") == 0) {
                str(b, s, "rng", nc_synth_rng_name(l->synth_rng));
                num(b, s, "draws", (double)l->synth_draws);
            }
            if (!l->outlier_steps) {
                num(b, s, "scale_median", p->scale_median);
                num(b, s, "scale_spread", p->scale_spread);
                num(b, s, "outliers", (double)p->outliers);
                num(b, s, "outlier_mag", p->outlier_mag);
                num(b, s, "outlier_spread", p->outlier_spread);
                num(b, s, "nu", p->nu);
                num(b, s, "offset_std", p->offset_std);
            }
            boolean(b, s, "affine", l->synth_affine);
        }
        if (l->ntensors) {
            cJSON *t = arr(b, lo, "tensor");
            for (size_t j = 0; t && j < l->ntensors; j++)
                if (!cJSON_AddItemToArray(t, cJSON_CreateString(l->tensors[j])))
                    b->ok = false;
        }
        if (l->label)
            str(b, lo, "label", l->label);
        /* given (here or at the top): the value; else each plan layer's own
         * (metadata, detected or default) is in layers[] with its source */
        if (l->has_norm || cfg->has_norm)
            str(b, lo, "norm", nc_norm_name(nc_config_layer_norm(cfg, l)));
        if (l->has_eps || cfg->has_eps)
            num(b, lo, "eps", nc_config_layer_eps(cfg, l));
        if (!(l->has_norm || cfg->has_norm) || !(l->has_eps || cfg->has_eps))
            str(b, lo, "norm_eps_used", "per layer: layers[].norm, .eps, .norm_source, "
                                        ".eps_source");
        for (int cc = 0; cc < NC_COMP_COUNT; cc++)
            if (l->comp[cc])
                str(b, lo, nc_comp_name(cc), l->comp[cc]);
        if (l->outlier_steps)
            str(b, lo, "experiment", "outlier-steps");
    }
}

/* ------------------------------------------------------------- inputs */

static void add_inputs(builder *b, cJSON *root, const nc_plan *plan)
{
    cJSON *a = arr(b, root, "inputs");
    for (size_t k = 0; a && k < plan->ninputs; k++) {
        const nc_plan_input *in = &plan->inputs[k];
        cJSON *o = obj(b, a, NULL);
        char sha[65], shape[256];
        nc_dump_sha256(in->dump, sha);
        nc_tensor_shape_str(in->tensor, shape, sizeof shape);
        str(b, o, "path", nc_dump_path(in->dump));
        str(b, o, "format", nc_dump_format(in->dump));
        num(b, o, "bytes", (double)nc_dump_bytes(in->dump));
        str(b, o, "sha256", sha);
        str(b, o, "tensor", in->tensor->name);
        str(b, o, "dtype", nc_dtype_name(in->tensor->dtype));
        cJSON *sh = arr(b, o, "shape");
        for (int r = 0; sh && r < in->tensor->rank; r++)
            if (!cJSON_AddItemToArray(sh, number((double)in->tensor->shape[r])))
                b->ok = false;
        str(b, o, "layer", plan->layers[in->layer].name);
        str(b, o, "role", in->role);
    }
}

/* -------------------------------------------------------------- layers */

static void add_stats(builder *b, cJSON *lo, const nc_layer_result *r)
{
    const nc_input_stats *s = &r->stats;
    cJSON *o = obj(b, lo, "input_stats");
    num(b, o, "mean", s->mean);
    num(b, o, "std", s->std);
    num(b, o, "rms", s->rms);
    num(b, o, "rho", s->rho);
    str(b, o, "rho_definition",
        r->norm == NC_RMSNORM ? "mean over used tokens of the token's rms sqrt(mean(x^2)+eps)"
                              : "mean over used tokens of the token's scale sqrt(var(x)+eps)");
    num(b, o, "min", s->min);
    num(b, o, "max", s->max);
    num(b, o, "nonfinite_tokens", (double)s->nonfinite_tokens);
    num(b, o, "nonfinite_values", (double)s->nonfinite_values);
    num(b, o, "zero_scale_tokens", (double)s->zero_scale_tokens);
    num(b, o, "tokens_used", (double)s->tokens_used);
    if (!isfinite(s->mean))
        str(b, o, "status", "no finite token: statistics undefined");
    else if (!isfinite(s->std) || !isfinite(s->rms))
        str(b, o, "status", fmax(fabs(s->min), fabs(s->max)) > 1.0
                                ? "overflow: the pooled second moments exceed the double range "
                                  "(|x| above ~1e154); per-token statistics and fits are "
                                  "scaled and exact"
                                : "underflow: the pooled second moments are below the double "
                                  "range (|x| below ~1e-154); per-token statistics and fits "
                                  "are scaled and exact");
    cJSON *ts = obj(b, o, "token_scale");
    num(b, ts, "mean", s->rho);
    num(b, ts, "std", s->scale_std);
    num(b, ts, "min", s->scale_min);
    num(b, ts, "max", s->scale_max);
    if (isfinite(s->rho) && !isfinite(s->scale_std))
        str(b, ts, "status", "overflow: the spread of token scales exceeds the double range");
    ensure_status(b, ts, "no token with an output: token scales undefined");
    ensure_status(b, o, "undefined: no token with an output");
    cJSON *top = arr(b, o, "top_channels");
    for (size_t k = 0; top && k < s->ntop; k++) {
        cJSON *c = obj(b, top, NULL);
        num(b, c, "channel", (double)s->top[k].channel);
        num(b, c, "max_abs", s->top[k].max_abs);
        num(b, c, "rms", s->top[k].rms);
    }
}

/* docs/theory.md: the fit's own numbers are the curve with one scale for
 * the layer (rho, in x); per_token_scale the same curve with each token's
 * own scale (and centre, for LayerNorm). */
static void add_theory_token(builder *b, cJSON *o, const nc_layer_result *r, int k)
{
    num(b, o, "rho", r->stats.rho);
    str(b, o, "variable", "x");
    const nc_theory_token *tt = &r->theory_token[k];
    if (!tt->ok)
        return;
    cJSON *t = obj(b, o, "per_token_scale");
    str(b, t, "scale", r->norm == NC_LAYERNORM ? "s_t" : "r_t");
    str(b, t, "variable", r->norm == NC_LAYERNORM ? "x - mu_t" : "x");
    num(b, t, "rmse", tt->rmse);
    num(b, t, "r2", tt->r2);
    num(b, t, "max_abs_err", tt->max_abs_err);
    num(b, t, "mean_abs_err", tt->mean_abs_err);
    num(b, t, "sse", tt->sse);
    num(b, t, "r2_lost_to_one_scale",
        tt->r2 - r->fits[k ? NC_FIT_DYISRU_THEORY : NC_FIT_DYT_THEORY].r2);
    ensure_status(b, t, "R^2 undefined: the output has no variance");
}

static void add_fit(builder *b, cJSON *fits, const nc_layer_result *r, int id)
{
    const nc_fit_result *f = &r->fits[id];
    const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
    cJSON *o = obj(b, fits, s->name);
    str(b, o, "formula", s->formula);
    if (!f->ok) {
        str(b, o, "status", f->status[0] ? f->status : "not computed");
        return;
    }
    for (int k = 0; k < s->nparams; k++)
        num(b, o, s->param[k], f->params.p[k]);
    if (id == NC_FIT_DYT || id == NC_FIT_DYISRU || id == NC_FIT_DYISRU_FREE || id == NC_FIT_DERF ||
        s->theory) {
        cJSON *a = obj(b, o, "amplitude");
        bool fixed = s->theory || id == NC_FIT_DYISRU || f->amp_fixed;
        boolean(b, a, "fixed", fixed);
        if (s->theory)
            str(b, a, "rule", r->norm == NC_LAYERNORM && r->d >= 2 ? "sqrt(d-1)" : "sqrt(d)");
        else
            str(b, a, "rule", fixed ? nc_amp_rule_name(f->amp_rule) : "free");
        if (fixed)
            num(b, a, "value", s->theory ? nc_theory_amp(r->norm, r->d) : f->amp);
    }
    if (s->theory)
        add_theory_token(b, o, r, id == NC_FIT_DYT_THEORY ? 0 : 1);
    if (id == NC_FIT_DYT_PER_CHANNEL && f->params.pc) {
        num_array(b, o, "gamma", f->params.pc, r->d);
        num_array(b, o, "beta", f->params.pc + r->d, r->d);
    }
    num(b, o, "rmse", f->rmse);
    num(b, o, "r2", f->r2);
    num(b, o, "max_abs_err", f->max_abs_err);
    num(b, o, "mean_abs_err", f->mean_abs_err);
    num(b, o, "sse", f->sse);
    num(b, o, "objective", f->objective);
    num(b, o, "iterations", f->iterations);
    boolean(b, o, "converged", f->converged);
    bool finite = isfinite(f->rmse) && isfinite(f->r2);
    str(b, o, "status", !finite && !strcmp(f->status, "ok") ? "metrics not finite" : f->status);

    if (id == NC_FIT_DYT || id == NC_FIT_DYT_PER_CHANNEL || id == NC_FIT_DYT_THEORY) {
        /* the quantities of the DyT paper's alpha-vs-1/std observation */
        const nc_input_stats *st = &r->stats;
        double alpha = f->params.p[0];
        num(b, o, "alpha_times_std", alpha * st->std);
        num(b, o, "alpha_times_rho", alpha * st->rho);
        if (id != NC_FIT_DYT_PER_CHANNEL)
            num(b, o, "slope_at_origin", alpha * f->params.p[1]);
        num(b, o, "inv_std", 1.0 / st->std);
        num(b, o, "theory_alpha", nc_dyt_theory_params(r->norm, st->rho, r->d).p[0]);
    }
    if (id == NC_FIT_DYT) {
        cJSON *sat = obj(b, o, "saturation");
        num(b, sat, "abs_alpha_x_gt_1", r->saturation[0]);
        num(b, sat, "abs_alpha_x_gt_2", r->saturation[1]);
        num(b, sat, "abs_alpha_x_gt_3", r->saturation[2]);
    }
}

/* docs/outlier_steps.md, "The spread over draws". */
static void add_outlier_spread(builder *b, cJSON *o, const nc_outlier_spread *sp)
{
    cJSON *s = obj(b, o, "spread");
    num(b, s, "draws", (double)sp->draws);
    num(b, s, "seed_first", (double)sp->seed0);
    num(b, s, "seed_last", (double)(sp->seed0 + sp->draws - 1));
    str(b, s, "rng", nc_synth_rng_name(sp->rng));
    const nc_outlier_quantiles *q[5] = {&sp->ratio, &sp->dyt_res, &sp->dyisru_res,
                                        &sp->mean_others, &sp->ratio_m};
    const char *names[5] = {"ratio_dyt_to_dyisru", "dyt_mean_abs_residual",
                            "dyisru_mean_abs_residual", "abs_mean_others",
                            "ratio_times_abs_mean_others"};
    for (int k = 0; k < 5; k++) {
        cJSON *qo = obj(b, s, names[k]);
        num(b, qo, "median", q[k]->median);
        num(b, qo, "p05", q[k]->p05);
        num(b, qo, "p95", q[k]->p95);
        num(b, qo, "min", q[k]->min);
        num(b, qo, "max", q[k]->max);
    }
}

static void add_outlier_steps(builder *b, cJSON *lo, const nc_outlier_steps *os)
{
    cJSON *o = obj(b, lo, "outlier_steps");
    num(b, o, "tokens", (double)os->tokens);
    num(b, o, "points", (double)os->points);
    num(b, o, "amplitude", os->amplitude);
    const nc_outlier_fit *f[2] = {&os->dyt, &os->dyisru};
    const char *names[2] = {"dyt", "dyisru"}, *param[2] = {"alpha", "C"};
    for (int k = 0; k < 2; k++) {
        cJSON *fo = obj(b, o, names[k]);
        num(b, fo, param[k], f[k]->param);
        num(b, fo, "mean_abs_residual", f[k]->mean_abs_res);
        num(b, fo, "rmse", f[k]->rmse);
        num(b, fo, "max_abs_residual", f[k]->max_abs_res);
        boolean(b, fo, "converged", f[k]->converged);
    }
    num(b, o, "ratio_dyt_to_dyisru", os->ratio);
    ensure_status(b, o, "a residual is zero or undefined");
    if (os->has_spread)
        add_outlier_spread(b, o, &os->spread);
}

/* A backprop error over tokens (jacobian.h nc_jac_summary; docs/jacobian.md) */
static void add_summary(builder *b, cJSON *o, const char *key, const nc_jac_summary *s)
{
    cJSON *q = obj(b, o, key);
    num(b, q, "err", s->err);
    num(b, q, "err_se", s->err_se);
    boolean(b, q, "exact", s->exact);
    num(b, q, "mean", s->mean);
    num(b, q, "mean_se", s->mean_se);
    num(b, q, "median", s->median);
    num(b, q, "median_se", s->median_se);
    num(b, q, "p95", s->p95);
    num(b, q, "tokens", (double)s->n);
    num(b, q, "infinite", (double)s->n_inf);
    ensure_status(b, q, s->n == 0 ? "no token to summarise"
                      : s->n_inf ? "some tokens' ratios are infinite (J^T g = 0): no mean "
                                   "and standard errors"
                                 : "one token: no standard error");
}

/* A ranking of the surrogates by a backprop error, best first */
static void add_ranking(builder *b, cJSON *o, const char *key, const nc_jac_rank *r, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    if (!a) {
        b->ok = false;
        return;
    }
    for (int k = 0; k < n; k++) {
        cJSON *e = cJSON_CreateObject();
        if (!e || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            b->ok = false;
            return;
        }
        str(b, e, "surrogate", nc_surrogate_get((nc_fit_id)r[k].id)->name);
        num(b, e, "err", r[k].err);
        num(b, e, "err_se", r[k].se);
        num(b, e, "gap_se", r[k].gap_se);
        boolean(b, e, "tie_with_previous", r[k].tie);
        ensure_status(b, e, "undefined: the exact Jacobian is zero");
    }
}

/* The Gaussian reference values at the layer's d */
static void add_gauss_ref(builder *b, cJSON *o, const nc_jac_result *j)
{
    cJSON *g = obj(b, o, "gaussian_reference");
    num(b, g, "d", (double)j->d);
    num(b, g, "diag_frobenius_share", j->gauss.diag_frobenius_share);
    num(b, g, "offdiag_frobenius_share", j->gauss.offdiag_frobenius_share);
    num(b, g, "backprop_rel_err", j->gauss.offdiag_frobenius_share);
    num(b, g, "radial_retention", j->gauss.radial_retention);
    if (j->norm == NC_LAYERNORM)
        num(b, g, "ones_retention", j->gauss.ones_retention);
    ensure_status(b, g, "undefined for d < 3 (LayerNorm) or d < 2 (RMSNorm)");
}

/* The dense check and the timing */
static void add_dense(builder *b, cJSON *o, const nc_jac_result *j)
{
    cJSON *dc = obj(b, o, "dense_check");
    str(b, dc, "status", j->dense_status);
    num(b, dc, "tokens", (double)j->tokens_materialised);
    if (j->dense_ran) {
        num(b, dc, "columns", (double)j->dense_columns);
        num(b, dc, "max_rel_diff", j->dense_max_rel_diff);
        num(b, dc, "tol", j->dense_tol);
        num(b, dc, "frob_max_rel_diff", j->dense_frob_max_rel_diff);
        num(b, dc, "offdiag_max_rel_diff", j->dense_off_max_rel_diff);
        num(b, dc, "frob_tol", j->dense_frob_tol);
    }
    cJSON *t = obj(b, o, "timing");
    num(b, t, "analytic_s", j->time_analytic_s);
    num(b, t, "summaries_s", j->time_stats_s);
    num(b, t, "dense_s", j->time_dense_s);
    if (j->dense_ran && j->time_dense_s > 0)
        num(b, t, "dense_gflops", j->dense_flops / j->time_dense_s / 1e9);
    num(b, t, "ode_s", j->time_ode_s);
}

/* BRIEF.md "The gradient derivation": what the diagonal keeps and loses;
 * docs/jacobian.md defines every field. */
static void add_jacobian(builder *b, cJSON *lo, const nc_jac_result *j)
{
    cJSON *o = obj(b, lo, "jacobian");
    num(b, o, "diag_frobenius_share", j->diag_frobenius_share);
    num(b, o, "offdiag_frobenius_share", j->offdiag_frobenius_share);
    num(b, o, "backprop_rel_err", j->backprop.err);
    num(b, o, "backprop_rel_err_se", j->backprop.err_se);
    add_summary(b, o, "backprop", &j->backprop);
    if (j->has_real) {
        add_summary(b, o, "backprop_real", &j->backprop_real);
        boolean(b, o, "real_weighted", j->real_weighted);
        num(b, o, "real_zero_tokens", (double)j->real_zero_tokens);
        num(b, o, "real_nonfinite_tokens", (double)j->real_nonfinite_tokens);
    }
    num(b, o, "radial_retention", j->radial_retention);
    if (j->norm == NC_LAYERNORM)
        num(b, o, "ones_retention", j->ones_retention);
    add_gauss_ref(b, o, j);
    cJSON *sur = obj(b, o, "surrogates");
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        const nc_jac_surrogate *s = &j->surr[k];
        if (!s->ok)
            continue;
        cJSON *so = obj(b, sur, nc_surrogate_get((nc_fit_id)k)->name);
        num(b, so, "diag_rmse", s->diag_rmse);
        num(b, so, "diag_rmse_rel", s->diag_rmse_rel);
        num(b, so, "diag_max_err", s->diag_max_err);
        num(b, so, "diag_max_err_rel", s->diag_max_err_rel);
        num(b, so, "backprop_rel_err", s->backprop.err);
        num(b, so, "backprop_rel_err_se", s->backprop.err_se);
        add_summary(b, so, "backprop", &s->backprop);
        if (j->has_real) {
            num(b, so, "backprop_real_rel_err", s->backprop_real.err);
            num(b, so, "backprop_real_rel_err_se", s->backprop_real.err_se);
            add_summary(b, so, "backprop_real", &s->backprop_real);
        }
        ensure_status(b, so, "undefined where the exact Jacobian is zero (d = 1 LayerNorm, "
                             "or constant outputs)");
    }
    cJSON *rk = obj(b, o, "ranking");
    add_ranking(b, rk, "backprop", j->rank, j->nranked);
    if (j->has_real)
        add_ranking(b, rk, "backprop_real", j->rank_real, j->nranked);
    cJSON *ode = obj(b, o, "ode_check");
    num(b, ode, "ode1_max_dev", j->ode.ode1_max_dev);
    num(b, ode, "ode2_max_dev", j->ode.ode2_max_dev);
    num(b, ode, "rho", j->ode.rho);
    num(b, ode, "x_max", j->ode.x_max);
    num(b, ode, "ode2_x0", j->ode.ode2_x0);
    num(b, ode, "steps", (double)(j->ode.ode1_steps + j->ode.ode2_steps));
    str(b, ode, "status", j->ode.status);
    num(b, o, "probes", (double)j->probes);
    num(b, o, "seed", (double)j->seed);
    num(b, o, "tokens", (double)j->tokens);
    add_dense(b, o, j);
    ensure_status(b, o, j->tokens == 0 ? "undefined: no token with an output"
                                       : "ratios undefined: the exact Jacobian is zero (d = 1 "
                                         "LayerNorm, or constant outputs)");
}

static void add_sweep(builder *b, cJSON *sweeps, const nc_sweep_result *s)
{
    cJSON *o = obj(b, sweeps, nc_sweep_param_name(s->param));
    bool alpha = s->param == NC_SWEEP_ALPHA;
    str(b, o, "surrogate", alpha ? "dyt" : "dyisru");
    str(b, o, "data", s->exact ? "raw points (exact)" : "bins (binning error O(h^2))");
    num(b, o, "fixed_amplitude", s->fixed_amp);
    if (alpha)
        num(b, o, "fixed_offset", s->fixed_off);
    cJSON *opt = obj(b, o, "optimum");
    num(b, opt, "refit", s->opt_refit);
    num(b, opt, "fixed", s->opt_fixed);
    num(b, opt, "jacobian", s->opt_jac);
    cJSON *mn = obj(b, o, "min_rmse");
    num(b, mn, "refit", s->min_refit);
    num(b, mn, "fixed", s->min_fixed);
    num(b, mn, "jacobian", s->min_jac);
    num(b, o, "fitted", s->fitted);
    num(b, o, "theory", s->theory);
    str(b, o, "theory_definition",
        alpha ? "A/(d*rho), A = sqrt(d) (RMSNorm) or sqrt(d-1) (LayerNorm)"
              : "(d*rho/A)^2, A = sqrt(d) (RMSNorm) or sqrt(d-1) (LayerNorm)");
    num_array(b, o, "grid", s->grid, s->n);
    num_array(b, o, "rmse_refit", s->rmse_refit, s->n);
    num_array(b, o, alpha ? "gamma_refit" : "scale_refit", s->amp_refit, s->n);
    if (alpha)
        num_array(b, o, "beta_refit", s->off_refit, s->n);
    num_array(b, o, "rmse_fixed", s->rmse_fixed, s->n);
    num_array(b, o, "jac_rmse_refit", s->jac_refit, s->n);
    num_array(b, o, "jac_rmse_fixed", s->jac_fixed, s->n);
    num(b, o, "time_s", s->time_s);
    ensure_status(b, opt, "the smallest error is at an end of the grid: widen it");
    ensure_status(b, o, "undefined values (no fit to compare with, or no data)");
}

static const char *precision_text(nc_dtype dt)
{
    switch (dt) {
    case NC_BF16: return "bf16";
    case NC_F16: return "f16";
    case NC_F64: return "f64";
    default: return "f32";
    }
}

/* What the tokens say about eps under the kind used (normcheck.h). */
static void add_eps_fit(builder *b, cJSON *o, nc_norm_kind kind, const nc_eps_fit *e)
{
    cJSON *f = obj(b, o, "eps");
    str(b, f, "under", nc_norm_name(kind));
    str(b, f, "slope", e->slope_fitted ? "fitted" : "fixed");
    num(b, f, "tokens", (double)e->tokens);
    num(b, f, "distinct_tokens", (double)e->clusters);
    num(b, f, "estimate", e->estimate);
    num(b, f, "se", e->se);
    num(b, f, "rounding_bias", e->bias);
    double iv[2] = {e->lo, e->hi};
    num_array(b, f, "interval", iv, 2);
    boolean(b, f, "identified", e->identified);
    if (!e->assessed)
        str(b, f, "status", "too few distinct tokens (or no positive slope) to assess eps: any "
                            "eps is allowed");
}

/* The real output against the noise model: both kinds, eps, the affine
 * part used. */
static void add_detection(builder *b, cJSON *c, const nc_real_check *k, nc_norm_kind used)
{
    const nc_norm_check *det = &k->det;
    cJSON *o = obj(b, c, "detection");
    num(b, o, "tokens", (double)det->k[used].tokens);
    str(b, o, "kind_verdict", nc_kind_verdict_name(det->verdict));
    str(b, o, "kind", nc_norm_name(det->kind));
    cJSON *q = obj(b, o, "q_free");
    num(b, q, "layernorm", det->k[NC_LAYERNORM].q_free);
    num(b, q, "rmsnorm", det->k[NC_RMSNORM].q_free);
    boolean(b, o, "kind_contradicted", k->kind_contradicted);
    boolean(b, o, "eps_contradicted", k->eps_contradicted);
    const nc_kind_check *U = &det->k[used];
    str(b, o, "weight_source", nc_affine_src_name(U->weight));
    str(b, o, "bias_source", nc_affine_src_name(U->bias));
    if (U->weight == NC_AFFINE_ESTIMATED) {
        num(b, o, "weight_rel_se", U->weight_rel_se);
        num(b, o, "affine_rounds", U->affine_rounds);
        boolean(b, o, "affine_converged", U->affine_converged);
    }
    if (U->bias == NC_AFFINE_ESTIMATED)
        num(b, o, "bias_se", U->bias_se);
    boolean(b, o, "rounded_after", det->rounded_after);
    add_eps_fit(b, o, used, &U->eps);
    ensure_status(b, o, "a kind with no token compared (d = 1 LayerNorm, or the estimate of "
                        "the affine part failed) has no q");
}

/* The real-output check (plan/check.h): the final comparison, what the
 * first pass used, and what the data say. */
static void add_real_check(builder *b, cJSON *lo, const nc_plan_layer *pl)
{
    const nc_layer_result *r = &pl->result;
    const nc_real_check *k = &pl->check;
    cJSON *c = obj(b, lo, "real_output_check");
    num(b, c, "max_abs_diff", r->real_max_abs_diff);
    num(b, c, "rms_diff", r->real_rms_diff);
    num(b, c, "real_max_abs", r->real_max_abs);
    boolean(b, c, "affine_applied", r->real_affine);
    str(b, c, "status", k->status ? k->status : "ok");
    if (!isfinite(r->real_max_abs_diff))
        str(b, c, "reason", "the real output has non-finite values where the input is finite");
    if (k->detected) {
        const nc_norm_check *det = &k->det;
        str(b, c, "precision", precision_text(det->precision));
        cJSON *u = obj(b, c, "unit_roundoff");
        num(b, u, "output", det->u_output);
        num(b, u, "input", det->u_input);
        num(b, u, "compute", det->u_compute);
        num(b, c, "q", k->q);
        num(b, c, "q_max", NC_NORMCHECK_Q_MAX);
        boolean(b, c, "agrees", k->agrees);
    }
    if (k->rerun) {
        cJSON *f = obj(b, c, "first_pass");
        str(b, f, "norm", nc_norm_name(k->first_norm));
        num(b, f, "eps", k->first_eps);
        num(b, f, "max_abs_diff", k->first_max_abs_diff);
        num(b, f, "rms_diff", k->first_rms_diff);
    }
    if (k->detected)
        add_detection(b, c, k, pl->norm);
    if (k->message[0])
        str(b, c, "message", k->message);
}

static void add_layer(builder *b, cJSON *layers, const nc_plan_layer *pl)
{
    const nc_layer_result *r = &pl->result;
    cJSON *lo = obj(b, layers, NULL);
    str(b, lo, "name", r->name);
    str(b, lo, "norm", nc_norm_name(r->norm));
    num(b, lo, "eps", r->eps);
    num(b, lo, "tokens", (double)r->N);
    num(b, lo, "dim", (double)r->d);
    add_stats(b, lo, r);
    str(b, lo, "norm_source", nc_src_name(pl->norm_source));
    str(b, lo, "eps_source", nc_src_name(pl->eps_source));
    if (r->has_real)
        add_real_check(b, lo, pl);
    cJSON *fd = obj(b, lo, "fit_data");
    num(b, fd, "points", (double)r->points);
    str(b, fd, "mode", r->binned ? "binned" : "exact");
    if (r->binned) {
        num(b, fd, "bins", (double)r->bins);
        num(b, fd, "nonempty_bins", (double)r->bins_nonempty);
    }
    num(b, fd, "y_mean", r->y_mean);
    num(b, fd, "y_sst", r->y_sst);
    ensure_status(b, fd, "no usable token: nothing to fit");
    cJSON *fits = obj(b, lo, "fits");
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (r->fits[k].enabled)
            add_fit(b, fits, r, k);
    if (pl->has_jacobian)
        add_jacobian(b, lo, &pl->jacobian);
    if (pl->has_outlier_steps)
        add_outlier_steps(b, lo, &pl->outlier_steps);
    if (pl->has_sweep[0] || pl->has_sweep[1]) {
        cJSON *sw = obj(b, lo, "sweeps");
        for (int p = 0; p < 2; p++)
            if (pl->has_sweep[p])
                add_sweep(b, sw, &pl->sweep[p]);
    }
    cJSON *t = obj(b, lo, "timing");
    num(b, t, "passes", r->passes);
    num(b, t, "stats_s", r->time_stats_s);
    num(b, t, "bins_s", r->time_bins_s);
    num(b, t, "fits_s", r->time_fits_s);
    num(b, t, "per_channel_s", r->time_channel_s);
    num(b, t, "verify_s", r->time_verify_s);
}

int nc_report_json(const nc_plan *plan, const char *command, const char *const *files,
                   size_t nfiles, char **json, nc_err *err)
{
    *json = NULL;
    builder b = {.ok = true};
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return nc_err_set(err, NC_ENOMEM, "out of memory for the report");
    cJSON *tool = obj(&b, root, "tool");
    str(&b, tool, "name", NC_TOOL_NAME);
    str(&b, tool, "version", NC_VERSION);
    str(&b, root, "command", command);
    add_config(&b, root, plan);
    add_inputs(&b, root, plan);
    cJSON *layers = arr(&b, root, "layers");
    for (size_t k = 0; layers && k < plan->nlayers; k++)
        if (plan->layers[k].done)
            add_layer(&b, layers, &plan->layers[k]);
    if (plan->has_run && plan->run.nlayers >= 2)
        nc_report_add_run(&b, root, plan->summaries, &plan->run);
    if (!nc_report_add_shard(root, plan))
        b.ok = false;
    cJSON *outs = arr(&b, root, "outputs");
    for (size_t k = 0; outs && k < nfiles; k++)
        if (!cJSON_AddItemToArray(outs, cJSON_CreateString(files[k])))
            b.ok = false;
    char *printed = b.ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    /* strict UTF-8: bytes of file names that are not become \xNN */
    char *text = printed ? nc_utf8_escape_json(printed) : NULL;
    cJSON_free(printed);
    if (!text)
        return nc_err_set(err, NC_ENOMEM, "out of memory for the report");
    /* hand back a malloc'd copy with a final newline */
    size_t n = strlen(text);
    *json = malloc(n + 2);
    if (*json) {
        memcpy(*json, text, n);
        (*json)[n] = '\n';
        (*json)[n + 1] = '\0';
    }
    free(text);
    return *json ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory for the report");
}

int nc_report_sweep_csv(const nc_sweep_result *s, char **csv, nc_err *err)
{
    *csv = NULL;
    bool alpha = s->param == NC_SWEEP_ALPHA;
    size_t cap = 256 + s->n * 7 * 26, used = 0;
    char *text = malloc(cap);
    if (!text)
        return nc_err_set(err, NC_ENOMEM, "out of memory for a sweep CSV");
    used += (size_t)snprintf(text, cap, "%s,rmse_refit,%s,%s,rmse_fixed,jac_rmse_refit,"
                             "jac_rmse_fixed\n", alpha ? "alpha" : "C",
                             alpha ? "gamma_refit" : "scale_refit",
                             alpha ? "beta_refit" : "offset_refit");
    for (size_t k = 0; k < s->n && used < cap; k++) {
        const double v[7] = {s->grid[k],      s->rmse_refit[k], s->amp_refit[k], s->off_refit[k],
                             s->rmse_fixed[k], s->jac_refit[k], s->jac_fixed[k]};
        for (int c = 0; c < 7 && used < cap; c++) {
            int w = snprintf(text + used, cap - used, "%.17g%s", v[c], c < 6 ? "," : "\n");
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (used >= cap) {
        free(text);
        return nc_err_set(err, NC_EINTERNAL, "sweep CSV larger than planned");
    }
    *csv = text;
    return 0;
}
