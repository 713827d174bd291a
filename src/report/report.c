/*
 * report.c - building report.json (report.h).
 *
 * The cJSON root owns every node; each add is checked through the `ok`
 * flag of the builder (jbuild.h), so an allocation failure anywhere ends
 * as one NC_ENOMEM. The run-level block is run_block.c's.
 */
#include "report/report.h"
#include "report/dropin_out.h"
#include "report/jbuild.h"
#include "report/run_block.h"
#include "report/swap_out.h"
#include "report/shard.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/version.h"

/* ------------------------------------------------------------- config */

static const char *amp_text(nc_amp a, char *buf, size_t cap)
{
    if (a.rule == NC_AMP_VALUE)
        snprintf(buf, cap, "%.17g", a.value);
    else
        snprintf(buf, cap, "%s", nc_amp_rule_name(a.rule));
    return buf;
}

/* The effective configuration: every value as used (defaults resolved). */
static void add_config(nc_jb *b, cJSON *root, const nc_plan *plan)
{
    const nc_config *cfg = plan->cfg;
    cJSON *c = nc_jb_obj(b, root, "config");
    if (!c)
        return;
    nc_jb_str(b, c, "source", cfg->source);
    nc_jb_str(b, c, "name", cfg->name);
    nc_jb_str(b, c, "output", cfg->output);
    if (cfg->has_norm)
        nc_jb_str(b, c, "norm", nc_norm_name(cfg->norm));
    if (cfg->has_eps)
        nc_jb_num(b, c, "eps", cfg->eps);
    cJSON *fits = nc_jb_arr(b, c, "fits");
    for (int k = 0; fits && k < NC_FIT_COUNT; k++)
        if (cfg->fit[k] &&
            !cJSON_AddItemToArray(fits, cJSON_CreateString(nc_surrogate_get((nc_fit_id)k)->name)))
            b->ok = false;
    cJSON *amp = nc_jb_obj(b, c, "amplitude");
    char buf[64];
    nc_jb_str(b, amp, "dyt", amp_text(cfg->amp_dyt, buf, sizeof buf));
    nc_jb_str(b, amp, "dyisru", amp_text(cfg->amp_dyisru, buf, sizeof buf));
    nc_jb_str(b, amp, "derf", amp_text(cfg->amp_derf, buf, sizeof buf));
    nc_jb_num(b, c, "bins", (double)(cfg->max_bins ? cfg->max_bins : NC_DEFAULT_BINS));
    nc_jb_num(b, c, "max_exact_points",
        (double)(cfg->max_exact_points ? cfg->max_exact_points : NC_DEFAULT_MAX_EXACT));
    nc_jb_num(b, c, "sample_tokens", (double)cfg->sample_tokens);
    nc_jb_num(b, c, "seed", (double)cfg->seed);
    nc_jb_num(b, c, "bootstrap", (double)cfg->boot_replicates);
    if (cfg->token_block)
        nc_jb_num(b, c, "token_block", (double)cfg->token_block);
    nc_jb_num(b, c, "threads", (double)(cfg->threads ? cfg->threads : nc_default_threads()));
    cJSON *jac = nc_jb_obj(b, c, "jacobian");
    nc_jb_bool(b, jac, "enabled", cfg->jacobian.enabled);
    nc_jb_num(b, jac, "probes",
              (double)(cfg->jacobian.probes ? cfg->jacobian.probes : NC_JAC_PROBES));
    /* the default rule sizes the sample to each layer (jacobian_dense.h):
     * the count each layer used is in its dense_check */
    nc_jb_num(b, jac, "dense_tokens",
              cfg->jacobian.dense_tokens ? (double)cfg->jacobian.dense_tokens : NAN);
    if (!cfg->jacobian.dense_tokens) {
        nc_jb_str(b, jac, "dense_tokens_rule",
                  "default: per layer, min(N d, 2^24) / d^2 tokens (N the layer's usable "
                  "tokens), at least 1, at most 4096 and N; with N < d, 8 N / d probe "
                  "columns (at least 1) instead of 8");
        nc_jb_str(b, jac, "status", "dense_tokens follows the default rule: each layer's count "
                                    "is layers[].jacobian.dense_check.tokens");
    }
    nc_jb_num(b, jac, "seed", (double)(cfg->jacobian.has_seed ? cfg->jacobian.seed : cfg->seed));
    nc_report_add_dropin_config(b, c, cfg); /* docs/dropin.md */
    if (cfg->swap)
        nc_jb_str(b, c, "swap", cfg->swap);
    cJSON *layers = nc_jb_arr(b, c, "layers");
    for (size_t k = 0; layers && k < cfg->nlayers; k++) {
        const nc_config_layer *l = &cfg->layers[k];
        cJSON *lo = nc_jb_obj(b, layers, NULL);
        if (l->file)
            nc_jb_str(b, lo, "file", l->file);
        if (l->synth) {
            cJSON *s = nc_jb_obj(b, lo, "synth");
            const nc_synth_params *p = &l->synth_params;
            nc_jb_str(b, s, "preset", l->synth_preset);
            nc_jb_num(b, s, "tokens", (double)p->N);
            nc_jb_num(b, s, "dim", (double)p->d);
            nc_jb_num(b, s, "seed", (double)p->seed);
            if (strcmp(l->synth_preset, "outlier-steps") == 0) {
                nc_jb_str(b, s, "rng", nc_synth_rng_name(l->synth_rng));
                nc_jb_num(b, s, "draws", (double)l->synth_draws);
            }
            if (!l->outlier_steps) {
                nc_jb_num(b, s, "scale_median", p->scale_median);
                nc_jb_num(b, s, "scale_spread", p->scale_spread);
                nc_jb_num(b, s, "outliers", (double)p->outliers);
                nc_jb_num(b, s, "outlier_mag", p->outlier_mag);
                nc_jb_num(b, s, "outlier_spread", p->outlier_spread);
                nc_jb_num(b, s, "nu", p->nu);
                nc_jb_num(b, s, "offset_std", p->offset_std);
            }
            nc_jb_bool(b, s, "affine", l->synth_affine);
        }
        if (l->ntensors) {
            cJSON *t = nc_jb_arr(b, lo, "tensor");
            for (size_t j = 0; t && j < l->ntensors; j++)
                if (!cJSON_AddItemToArray(t, cJSON_CreateString(l->tensors[j])))
                    b->ok = false;
        }
        if (l->label)
            nc_jb_str(b, lo, "label", l->label);
        if (l->group)
            nc_jb_str(b, lo, "group", l->group);
        if (l->token_block)
            nc_jb_num(b, lo, "token_block", (double)l->token_block);
        /* given (here or at the top): the value; else each plan layer's own
         * (metadata, detected or default) is in layers[] with its source */
        if (l->has_norm || cfg->has_norm)
            nc_jb_str(b, lo, "norm", nc_norm_name(nc_config_layer_norm(cfg, l)));
        if (l->has_eps || cfg->has_eps)
            nc_jb_num(b, lo, "eps", nc_config_layer_eps(cfg, l));
        if (!(l->has_norm || cfg->has_norm) || !(l->has_eps || cfg->has_eps))
            nc_jb_str(b, lo, "norm_eps_used", "per layer: layers[].norm, .eps, .norm_source, "
                                        ".eps_source");
        for (int cc = 0; cc < NC_COMP_COUNT; cc++)
            if (l->comp[cc])
                nc_jb_str(b, lo, nc_comp_name(cc), l->comp[cc]);
        if (l->outlier_steps)
            nc_jb_str(b, lo, "experiment", "outlier-steps");
    }
}

/* ------------------------------------------------------------- inputs */

static void add_inputs(nc_jb *b, cJSON *root, const nc_plan *plan)
{
    cJSON *a = nc_jb_arr(b, root, "inputs");
    for (size_t k = 0; a && k < plan->ninputs; k++) {
        const nc_plan_input *in = &plan->inputs[k];
        cJSON *o = nc_jb_obj(b, a, NULL);
        char sha[65], shape[256];
        nc_dump_sha256(in->dump, sha);
        nc_tensor_shape_str(in->tensor, shape, sizeof shape);
        nc_jb_str(b, o, "path", nc_dump_path(in->dump));
        nc_jb_str(b, o, "format", nc_dump_format(in->dump));
        nc_jb_num(b, o, "bytes", (double)nc_dump_bytes(in->dump));
        nc_jb_str(b, o, "sha256", sha);
        nc_jb_str(b, o, "tensor", in->tensor->name);
        nc_jb_str(b, o, "dtype", nc_dtype_name(in->tensor->dtype));
        cJSON *sh = nc_jb_arr(b, o, "shape");
        for (int r = 0; sh && r < in->tensor->rank; r++)
            if (!cJSON_AddItemToArray(sh, nc_jb_number((double)in->tensor->shape[r])))
                b->ok = false;
        nc_jb_str(b, o, "layer", plan->layers[in->layer].name);
        nc_jb_str(b, o, "role", in->role);
    }
}

/* -------------------------------------------------------------- layers */

static void add_stats(nc_jb *b, cJSON *lo, const nc_layer_result *r)
{
    const nc_input_stats *s = &r->stats;
    cJSON *o = nc_jb_obj(b, lo, "input_stats");
    nc_jb_num(b, o, "mean", s->mean);
    nc_jb_num(b, o, "std", s->std);
    nc_jb_num(b, o, "rms", s->rms);
    nc_jb_num(b, o, "rho", s->rho);
    nc_jb_str(b, o, "rho_definition",
        r->norm == NC_RMSNORM ? "mean over used tokens of the token's rms sqrt(mean(x^2)+eps)"
                              : "mean over used tokens of the token's scale sqrt(var(x)+eps)");
    nc_jb_num(b, o, "min", s->min);
    nc_jb_num(b, o, "max", s->max);
    nc_jb_num(b, o, "nonfinite_tokens", (double)s->nonfinite_tokens);
    nc_jb_num(b, o, "nonfinite_values", (double)s->nonfinite_values);
    nc_jb_num(b, o, "zero_scale_tokens", (double)s->zero_scale_tokens);
    nc_jb_num(b, o, "tokens_used", (double)s->tokens_used);
    if (!isfinite(s->mean))
        nc_jb_str(b, o, "status", "no finite token: statistics undefined");
    else if (!isfinite(s->std) || !isfinite(s->rms))
        nc_jb_str(b, o, "status", fmax(fabs(s->min), fabs(s->max)) > 1.0
                                ? "overflow: the pooled second moments exceed the double range "
                                  "(|x| above ~1e154); per-token statistics and fits are "
                                  "scaled and exact"
                                : "underflow: the pooled second moments are below the double "
                                  "range (|x| below ~1e-154); per-token statistics and fits "
                                  "are scaled and exact");
    cJSON *ts = nc_jb_obj(b, o, "token_scale");
    nc_jb_num(b, ts, "mean", s->rho);
    nc_jb_num(b, ts, "std", s->scale_std);
    nc_jb_num(b, ts, "min", s->scale_min);
    nc_jb_num(b, ts, "max", s->scale_max);
    if (isfinite(s->rho) && !isfinite(s->scale_std))
        nc_jb_str(b, ts, "status", "overflow: the spread of token scales exceeds the double range");
    nc_jb_ensure_status(b, ts, "no token with an output: token scales undefined");
    nc_jb_ensure_status(b, o, "undefined: no token with an output");
    cJSON *top = nc_jb_arr(b, o, "top_channels");
    for (size_t k = 0; top && k < s->ntop; k++) {
        cJSON *c = nc_jb_obj(b, top, NULL);
        nc_jb_num(b, c, "channel", (double)s->top[k].channel);
        nc_jb_num(b, c, "max_abs", s->top[k].max_abs);
        nc_jb_num(b, c, "rms", s->top[k].rms);
    }
}

/* docs/theory.md: the fit's own numbers are the curve with one scale for
 * the layer (rho, in x); per_token_scale the same curve with each token's
 * own scale (and centre, for LayerNorm). */
static void add_theory_token(nc_jb *b, cJSON *o, const nc_layer_result *r, int k)
{
    nc_jb_num(b, o, "rho", r->stats.rho);
    nc_jb_str(b, o, "variable", "x");
    const nc_theory_token *tt = &r->theory_token[k];
    if (!tt->ok)
        return;
    cJSON *t = nc_jb_obj(b, o, "per_token_scale");
    nc_jb_str(b, t, "scale", r->norm == NC_LAYERNORM ? "s_t" : "r_t");
    nc_jb_str(b, t, "variable", r->norm == NC_LAYERNORM ? "x - mu_t" : "x");
    nc_jb_num(b, t, "rmse", tt->rmse);
    nc_jb_num(b, t, "r2", tt->r2);
    nc_jb_num(b, t, "max_abs_err", tt->max_abs_err);
    nc_jb_num(b, t, "mean_abs_err", tt->mean_abs_err);
    nc_jb_num(b, t, "sse", tt->sse);
    nc_jb_num(b, t, "r2_lost_to_one_scale",
        tt->r2 - r->fits[k ? NC_FIT_DYISRU_THEORY : NC_FIT_DYT_THEORY].r2);
    nc_jb_ensure_status(b, t, "R^2 undefined: the output has no variance");
}

static void add_fit(nc_jb *b, cJSON *fits, const nc_layer_result *r, int id)
{
    const nc_fit_result *f = &r->fits[id];
    const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
    cJSON *o = nc_jb_obj(b, fits, s->name);
    nc_jb_str(b, o, "formula", s->formula);
    if (!f->ok) {
        nc_jb_str(b, o, "status", f->status[0] ? f->status : "not computed");
        return;
    }
    for (int k = 0; k < s->nparams; k++)
        nc_jb_num(b, o, s->param[k], f->params.p[k]);
    if (id == NC_FIT_DYT || id == NC_FIT_DYISRU || id == NC_FIT_DYISRU_FREE || id == NC_FIT_DERF ||
        s->theory) {
        cJSON *a = nc_jb_obj(b, o, "amplitude");
        bool fixed = s->theory || id == NC_FIT_DYISRU || f->amp_fixed;
        nc_jb_bool(b, a, "fixed", fixed);
        if (s->theory)
            nc_jb_str(b, a, "rule", r->norm == NC_LAYERNORM && r->d >= 2 ? "sqrt(d-1)" : "sqrt(d)");
        else
            nc_jb_str(b, a, "rule", fixed ? nc_amp_rule_name(f->amp_rule) : "free");
        if (fixed)
            nc_jb_num(b, a, "value", s->theory ? nc_theory_amp(r->norm, r->d) : f->amp);
    }
    if (s->theory)
        add_theory_token(b, o, r, id == NC_FIT_DYT_THEORY ? 0 : 1);
    if (id == NC_FIT_DYT_PER_CHANNEL && f->params.pc) {
        nc_jb_num_array(b, o, "gamma", f->params.pc, r->d);
        nc_jb_num_array(b, o, "beta", f->params.pc + r->d, r->d);
    }
    nc_jb_num(b, o, "rmse", f->rmse);
    nc_jb_num(b, o, "r2", f->r2);
    nc_jb_num(b, o, "max_abs_err", f->max_abs_err);
    nc_jb_num(b, o, "mean_abs_err", f->mean_abs_err);
    nc_jb_num(b, o, "sse", f->sse);
    nc_jb_num(b, o, "objective", f->objective);
    nc_jb_num(b, o, "iterations", f->iterations);
    nc_jb_bool(b, o, "converged", f->converged);
    bool finite = isfinite(f->rmse) && isfinite(f->r2);
    nc_jb_str(b, o, "status",
              !finite && !strcmp(f->status, "ok") ? "metrics not finite" : f->status);

    if (id == NC_FIT_DYT || id == NC_FIT_DYT_PER_CHANNEL || id == NC_FIT_DYT_THEORY) {
        /* the quantities of the DyT paper's alpha-vs-1/std observation */
        const nc_input_stats *st = &r->stats;
        double alpha = f->params.p[0];
        nc_jb_num(b, o, "alpha_times_std", alpha * st->std);
        nc_jb_num(b, o, "alpha_times_rho", alpha * st->rho);
        if (id != NC_FIT_DYT_PER_CHANNEL)
            nc_jb_num(b, o, "slope_at_origin", alpha * f->params.p[1]);
        nc_jb_num(b, o, "inv_std", 1.0 / st->std);
        nc_jb_num(b, o, "theory_alpha", nc_dyt_theory_params(r->norm, st->rho, r->d).p[0]);
    }
    if (id == NC_FIT_DYT) {
        cJSON *sat = nc_jb_obj(b, o, "saturation");
        nc_jb_num(b, sat, "abs_alpha_x_gt_1", r->saturation[0]);
        nc_jb_num(b, sat, "abs_alpha_x_gt_2", r->saturation[1]);
        nc_jb_num(b, sat, "abs_alpha_x_gt_3", r->saturation[2]);
    }
}

/* docs/outlier_steps.md, "The spread over draws". */
static void add_outlier_spread(nc_jb *b, cJSON *o, const nc_outlier_spread *sp)
{
    cJSON *s = nc_jb_obj(b, o, "spread");
    nc_jb_num(b, s, "draws", (double)sp->draws);
    nc_jb_num(b, s, "seed_first", (double)sp->seed0);
    nc_jb_num(b, s, "seed_last", (double)(sp->seed0 + sp->draws - 1));
    nc_jb_str(b, s, "rng", nc_synth_rng_name(sp->rng));
    const nc_outlier_quantiles *q[5] = {&sp->ratio, &sp->dyt_res, &sp->dyisru_res,
                                        &sp->mean_others, &sp->ratio_m};
    const char *names[5] = {"ratio_dyt_to_dyisru", "dyt_mean_abs_residual",
                            "dyisru_mean_abs_residual", "abs_mean_others",
                            "ratio_times_abs_mean_others"};
    for (int k = 0; k < 5; k++) {
        cJSON *qo = nc_jb_obj(b, s, names[k]);
        nc_jb_num(b, qo, "median", q[k]->median);
        nc_jb_num(b, qo, "p05", q[k]->p05);
        nc_jb_num(b, qo, "p95", q[k]->p95);
        nc_jb_num(b, qo, "min", q[k]->min);
        nc_jb_num(b, qo, "max", q[k]->max);
    }
}

static void add_outlier_steps(nc_jb *b, cJSON *lo, const nc_outlier_steps *os)
{
    cJSON *o = nc_jb_obj(b, lo, "outlier_steps");
    nc_jb_num(b, o, "tokens", (double)os->tokens);
    nc_jb_num(b, o, "points", (double)os->points);
    nc_jb_num(b, o, "amplitude", os->amplitude);
    const nc_outlier_fit *f[2] = {&os->dyt, &os->dyisru};
    const char *names[2] = {"dyt", "dyisru"}, *param[2] = {"alpha", "C"};
    for (int k = 0; k < 2; k++) {
        cJSON *fo = nc_jb_obj(b, o, names[k]);
        nc_jb_num(b, fo, param[k], f[k]->param);
        nc_jb_num(b, fo, "mean_abs_residual", f[k]->mean_abs_res);
        nc_jb_num(b, fo, "rmse", f[k]->rmse);
        nc_jb_num(b, fo, "max_abs_residual", f[k]->max_abs_res);
        nc_jb_bool(b, fo, "converged", f[k]->converged);
    }
    nc_jb_num(b, o, "ratio_dyt_to_dyisru", os->ratio);
    nc_jb_ensure_status(b, o, "a residual is zero or undefined");
    if (os->has_spread)
        add_outlier_spread(b, o, &os->spread);
}

/* A backprop error over tokens (jacobian.h nc_jac_summary; docs/jacobian.md) */
static void add_summary(nc_jb *b, cJSON *o, const char *key, const nc_jac_summary *s)
{
    cJSON *q = nc_jb_obj(b, o, key);
    nc_jb_num(b, q, "err", s->err);
    nc_jb_num(b, q, "err_se", s->err_se);
    nc_jb_bool(b, q, "exact", s->exact);
    nc_jb_num(b, q, "mean", s->mean);
    nc_jb_num(b, q, "mean_se", s->mean_se);
    nc_jb_num(b, q, "median", s->median);
    nc_jb_num(b, q, "median_se", s->median_se);
    nc_jb_num(b, q, "p95", s->p95);
    nc_jb_num(b, q, "tokens", (double)s->n);
    nc_jb_num(b, q, "infinite", (double)s->n_inf);
    nc_jb_ensure_status(b, q, s->n == 0 ? "no token to summarise"
                      : s->n_inf ? "some tokens' ratios are infinite (J^T g = 0): no mean "
                                   "and standard errors"
                                 : "one token: no standard error");
}

/* A ranking of the surrogates by a backprop error, best first */
static void add_ranking(nc_jb *b, cJSON *o, const char *key, const nc_jac_rank *r, int n)
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
        nc_jb_str(b, e, "surrogate", nc_surrogate_get((nc_fit_id)r[k].id)->name);
        nc_jb_num(b, e, "err", r[k].err);
        nc_jb_num(b, e, "err_se", r[k].se);
        nc_jb_num(b, e, "gap_se", r[k].gap_se);
        nc_jb_bool(b, e, "tie_with_previous", r[k].tie);
        nc_jb_ensure_status(b, e, "undefined: the exact Jacobian is zero");
    }
}

/* The Gaussian reference values at the layer's d */
static void add_gauss_ref(nc_jb *b, cJSON *o, const nc_jac_result *j)
{
    cJSON *g = nc_jb_obj(b, o, "gaussian_reference");
    nc_jb_num(b, g, "d", (double)j->d);
    nc_jb_num(b, g, "diag_frobenius_share", j->gauss.diag_frobenius_share);
    nc_jb_num(b, g, "offdiag_frobenius_share", j->gauss.offdiag_frobenius_share);
    nc_jb_num(b, g, "backprop_rel_err", j->gauss.offdiag_frobenius_share);
    nc_jb_num(b, g, "radial_retention", j->gauss.radial_retention);
    if (j->norm == NC_LAYERNORM)
        nc_jb_num(b, g, "ones_retention", j->gauss.ones_retention);
    nc_jb_ensure_status(b, g, "undefined for d < 3 (LayerNorm) or d < 2 (RMSNorm)");
}

/* The dense check and the timing */
static void add_dense(nc_jb *b, cJSON *o, const nc_jac_result *j)
{
    cJSON *dc = nc_jb_obj(b, o, "dense_check");
    nc_jb_str(b, dc, "status", j->dense.status);
    nc_jb_num(b, dc, "tokens", (double)j->dense.tokens);
    if (j->dense.ran) {
        nc_jb_num(b, dc, "columns", (double)j->dense.columns);
        nc_jb_num(b, dc, "max_rel_diff", j->dense.max_rel_diff);
        nc_jb_num(b, dc, "tol", j->dense.tol);
        nc_jb_num(b, dc, "frob_max_rel_diff", j->dense.frob_max_rel_diff);
        nc_jb_num(b, dc, "offdiag_max_rel_diff", j->dense.off_max_rel_diff);
        nc_jb_num(b, dc, "frob_tol", j->dense.frob_tol);
    }
    cJSON *t = nc_jb_obj(b, o, "timing");
    nc_jb_num(b, t, "analytic_s", j->time_analytic_s);
    nc_jb_num(b, t, "summaries_s", j->time_stats_s);
    nc_jb_num(b, t, "dense_s", j->time_dense_s);
    if (j->dense.ran && j->time_dense_s > 0)
        nc_jb_num(b, t, "dense_gflops", j->dense.flops / j->time_dense_s / 1e9);
    nc_jb_num(b, t, "ode_s", j->time_ode_s);
}

/* What the Jacobian's diagonal keeps and loses (docs/theory.md, the
 * derivation); docs/jacobian.md defines every field. */
static void add_jacobian(nc_jb *b, cJSON *lo, const nc_jac_result *j)
{
    cJSON *o = nc_jb_obj(b, lo, "jacobian");
    nc_jb_num(b, o, "diag_frobenius_share", j->diag_frobenius_share);
    nc_jb_num(b, o, "offdiag_frobenius_share", j->offdiag_frobenius_share);
    nc_jb_num(b, o, "backprop_rel_err", j->backprop.err);
    nc_jb_num(b, o, "backprop_rel_err_se", j->backprop.err_se);
    add_summary(b, o, "backprop", &j->backprop);
    if (j->has_real) {
        add_summary(b, o, "backprop_real", &j->backprop_real);
        nc_jb_bool(b, o, "real_weighted", j->real_weighted);
        nc_jb_num(b, o, "real_zero_tokens", (double)j->real_zero_tokens);
        nc_jb_num(b, o, "real_nonfinite_tokens", (double)j->real_nonfinite_tokens);
    }
    nc_jb_num(b, o, "radial_retention", j->radial_retention);
    if (j->norm == NC_LAYERNORM)
        nc_jb_num(b, o, "ones_retention", j->ones_retention);
    add_gauss_ref(b, o, j);
    cJSON *sur = nc_jb_obj(b, o, "surrogates");
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        const nc_jac_surrogate *s = &j->surr[k];
        if (!s->ok)
            continue;
        cJSON *so = nc_jb_obj(b, sur, nc_surrogate_get((nc_fit_id)k)->name);
        nc_jb_num(b, so, "diag_rmse", s->diag_rmse);
        nc_jb_num(b, so, "diag_rmse_rel", s->diag_rmse_rel);
        nc_jb_num(b, so, "diag_max_err", s->diag_max_err);
        nc_jb_num(b, so, "diag_max_err_rel", s->diag_max_err_rel);
        nc_jb_num(b, so, "backprop_rel_err", s->backprop.err);
        nc_jb_num(b, so, "backprop_rel_err_se", s->backprop.err_se);
        add_summary(b, so, "backprop", &s->backprop);
        if (j->has_real) {
            nc_jb_num(b, so, "backprop_real_rel_err", s->backprop_real.err);
            nc_jb_num(b, so, "backprop_real_rel_err_se", s->backprop_real.err_se);
            add_summary(b, so, "backprop_real", &s->backprop_real);
        }
        nc_jb_ensure_status(b, so, "undefined where the exact Jacobian is zero (d = 1 LayerNorm, "
                             "or constant outputs)");
    }
    cJSON *rk = nc_jb_obj(b, o, "ranking");
    add_ranking(b, rk, "backprop", j->rank, j->nranked);
    if (j->has_real)
        add_ranking(b, rk, "backprop_real", j->rank_real, j->nranked);
    cJSON *ode = nc_jb_obj(b, o, "ode_check");
    nc_jb_num(b, ode, "ode1_max_dev", j->ode.ode1_max_dev);
    nc_jb_num(b, ode, "ode2_max_dev", j->ode.ode2_max_dev);
    nc_jb_num(b, ode, "rho", j->ode.rho);
    nc_jb_num(b, ode, "width", j->ode.width);
    nc_jb_str(b, ode, "variable", j->norm == NC_LAYERNORM ? "x - mu" : "x");
    nc_jb_num(b, ode, "x_max", j->ode.x_max);
    nc_jb_num(b, ode, "ode2_x0", j->ode.ode2_x0);
    nc_jb_num(b, ode, "steps", (double)(j->ode.ode1_steps + j->ode.ode2_steps));
    nc_jb_str(b, ode, "status", j->ode.status);
    nc_jb_num(b, o, "probes", (double)j->probes);
    nc_jb_num(b, o, "seed", (double)j->seed);
    nc_jb_num(b, o, "tokens", (double)j->tokens);
    add_dense(b, o, j);
    nc_jb_ensure_status(b, o, j->tokens == 0 ? "undefined: no token with an output"
                                       : "ratios undefined: the exact Jacobian is zero (d = 1 "
                                         "LayerNorm, or constant outputs)");
}

static void add_sweep(nc_jb *b, cJSON *sweeps, const nc_sweep_result *s)
{
    cJSON *o = nc_jb_obj(b, sweeps, nc_sweep_param_name(s->param));
    bool alpha = s->param == NC_SWEEP_ALPHA;
    nc_jb_str(b, o, "surrogate", alpha ? "dyt" : "dyisru");
    nc_jb_str(b, o, "data", s->exact ? "raw points (exact)" : "bins (binning error O(h^2))");
    nc_jb_num(b, o, "fixed_amplitude", s->fixed_amp);
    if (alpha)
        nc_jb_num(b, o, "fixed_offset", s->fixed_off);
    cJSON *opt = nc_jb_obj(b, o, "optimum");
    nc_jb_num(b, opt, "refit", s->opt_refit);
    nc_jb_num(b, opt, "fixed", s->opt_fixed);
    nc_jb_num(b, opt, "jacobian", s->opt_jac);
    cJSON *mn = nc_jb_obj(b, o, "min_rmse");
    nc_jb_num(b, mn, "refit", s->min_refit);
    nc_jb_num(b, mn, "fixed", s->min_fixed);
    nc_jb_num(b, mn, "jacobian", s->min_jac);
    nc_jb_num(b, o, "fitted", s->fitted);
    nc_jb_num(b, o, "theory", s->theory);
    nc_jb_str(b, o, "theory_definition",
        nc_theory_definition(alpha ? NC_FIT_DYT_THEORY : NC_FIT_DYISRU_THEORY));
    nc_jb_num_array(b, o, "grid", s->grid, s->n);
    nc_jb_num_array(b, o, "rmse_refit", s->rmse_refit, s->n);
    nc_jb_num_array(b, o, alpha ? "gamma_refit" : "scale_refit", s->amp_refit, s->n);
    if (alpha)
        nc_jb_num_array(b, o, "beta_refit", s->off_refit, s->n);
    nc_jb_num_array(b, o, "rmse_fixed", s->rmse_fixed, s->n);
    nc_jb_num_array(b, o, "jac_rmse_refit", s->jac_refit, s->n);
    nc_jb_num_array(b, o, "jac_rmse_fixed", s->jac_fixed, s->n);
    nc_jb_num(b, o, "time_s", s->time_s);
    nc_jb_ensure_status(b, opt, "the smallest error is at an end of the grid: widen it");
    nc_jb_ensure_status(b, o, "undefined values (no fit to compare with, or no data)");
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
static void add_eps_fit(nc_jb *b, cJSON *o, nc_norm_kind kind, const nc_eps_fit *e)
{
    cJSON *f = nc_jb_obj(b, o, "eps");
    nc_jb_str(b, f, "under", nc_norm_name(kind));
    nc_jb_str(b, f, "slope", e->slope_fitted ? "fitted" : "fixed");
    nc_jb_num(b, f, "tokens", (double)e->tokens);
    nc_jb_num(b, f, "distinct_tokens", (double)e->clusters);
    nc_jb_num(b, f, "estimate", e->estimate);
    nc_jb_num(b, f, "se", e->se);
    nc_jb_num(b, f, "rounding_bias", e->bias);
    double iv[2] = {e->lo, e->hi};
    nc_jb_num_array(b, f, "interval", iv, 2);
    nc_jb_bool(b, f, "identified", e->identified);
    if (!e->assessed)
        nc_jb_str(b, f, "status", "too few distinct tokens (or no positive slope) to assess eps: any "
                            "eps is allowed");
}

/* The real output against the noise model: both kinds, eps, the affine
 * part used. */
static void add_detection(nc_jb *b, cJSON *c, const nc_real_check *k, nc_norm_kind used)
{
    const nc_norm_check *det = &k->det;
    cJSON *o = nc_jb_obj(b, c, "detection");
    nc_jb_num(b, o, "tokens", (double)det->k[used].tokens);
    nc_jb_str(b, o, "kind_verdict", nc_kind_verdict_name(det->verdict));
    nc_jb_str(b, o, "kind", nc_norm_name(det->kind));
    cJSON *q = nc_jb_obj(b, o, "q_free");
    nc_jb_num(b, q, "layernorm", det->k[NC_LAYERNORM].q_free);
    nc_jb_num(b, q, "rmsnorm", det->k[NC_RMSNORM].q_free);
    nc_jb_bool(b, o, "kind_contradicted", k->kind_contradicted);
    nc_jb_bool(b, o, "eps_contradicted", k->eps_contradicted);
    const nc_kind_check *U = &det->k[used];
    nc_jb_str(b, o, "weight_source", nc_affine_src_name(U->weight));
    nc_jb_str(b, o, "bias_source", nc_affine_src_name(U->bias));
    if (U->weight == NC_AFFINE_ESTIMATED) {
        nc_jb_num(b, o, "weight_rel_se", U->weight_rel_se);
        nc_jb_num(b, o, "affine_rounds", U->affine_rounds);
        nc_jb_bool(b, o, "affine_converged", U->affine_converged);
    }
    if (U->bias == NC_AFFINE_ESTIMATED)
        nc_jb_num(b, o, "bias_se", U->bias_se);
    nc_jb_bool(b, o, "rounded_after", det->rounded_after);
    add_eps_fit(b, o, used, &U->eps);
    nc_jb_ensure_status(b, o, "a kind with no token compared (d = 1 LayerNorm, or the estimate of "
                        "the affine part failed) has no q");
}

/* The real-output check (plan/check.h): the final comparison, what the
 * first pass used, and what the data say. */
static void add_real_check(nc_jb *b, cJSON *lo, const nc_plan_layer *pl)
{
    const nc_layer_result *r = &pl->result;
    const nc_real_check *k = &pl->check;
    cJSON *c = nc_jb_obj(b, lo, "real_output_check");
    nc_jb_num(b, c, "max_abs_diff", r->real_max_abs_diff);
    nc_jb_num(b, c, "rms_diff", r->real_rms_diff);
    nc_jb_num(b, c, "real_max_abs", r->real_max_abs);
    nc_jb_bool(b, c, "affine_applied", r->real_affine);
    nc_jb_str(b, c, "status", k->status ? k->status : "ok");
    if (!isfinite(r->real_max_abs_diff))
        nc_jb_str(b, c, "reason", "the real output has non-finite values where the input is finite");
    if (k->detected) {
        const nc_norm_check *det = &k->det;
        nc_jb_str(b, c, "precision", precision_text(det->precision));
        cJSON *u = nc_jb_obj(b, c, "unit_roundoff");
        nc_jb_num(b, u, "output", det->u_output);
        nc_jb_num(b, u, "input", det->u_input);
        nc_jb_num(b, u, "compute", det->u_compute);
        nc_jb_num(b, c, "q", k->q);
        nc_jb_num(b, c, "q_max", NC_NORMCHECK_Q_MAX);
        nc_jb_bool(b, c, "agrees", k->agrees);
    }
    if (k->rerun) {
        cJSON *f = nc_jb_obj(b, c, "first_pass");
        nc_jb_str(b, f, "norm", nc_norm_name(k->first_norm));
        nc_jb_num(b, f, "eps", k->first_eps);
        nc_jb_num(b, f, "max_abs_diff", k->first_max_abs_diff);
        nc_jb_num(b, f, "rms_diff", k->first_rms_diff);
    }
    if (k->detected)
        add_detection(b, c, k, pl->norm);
    if (k->message[0])
        nc_jb_str(b, c, "message", k->message);
}

/* {"se", "ci95"} of one bootstrap distribution under o */
static void boot_ci(nc_jb *b, cJSON *o, const char *key, const nc_boot_ci *c)
{
    nc_jb_ci_of(b, o, key, false, NAN, c->se, c->lo, c->hi);
}

/* {"fit", "gaps": {fit: {"gap", "se", "ci95"}}} against the best fit. */
static void boot_best(nc_jb *b, cJSON *o, const char *key, int best, const double *gap,
                      const nc_boot_ci *ci)
{
    cJSON *e = nc_jb_obj(b, o, key);
    if (best < 0) {
        nc_jb_str(b, e, "status", "no ranked fit has a value");
        return;
    }
    nc_jb_str(b, e, "fit", nc_surrogate_get((nc_fit_id)best)->name);
    cJSON *g = nc_jb_obj(b, e, "gaps");
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (k != best && nc_fit_ranked((nc_fit_id)k) && isfinite(gap[k]))
            nc_jb_ci(b, g, nc_surrogate_get((nc_fit_id)k)->name, gap[k], ci[k].se, ci[k].lo,
                   ci[k].hi);
}

/* layers[].bootstrap (layer.h nc_layer_boot; docs/report.md). */
static void add_boot(nc_jb *b, cJSON *lo, const nc_plan_layer *pl)
{
    const nc_layer_result *r = &pl->result;
    const nc_layer_boot *B = &r->boot;
    cJSON *o = nc_jb_obj(b, lo, "bootstrap");
    nc_jb_num(b, o, "replicates", (double)B->replicates);
    nc_jb_num(b, o, "seed", (double)B->seed);
    nc_jb_num(b, o, "token_block", (double)pl->token_block);
    nc_jb_str(b, o, "token_block_source", pl->token_block_source);
    nc_jb_num(b, o, "level", NC_BOOT_LEVEL);
    if (!B->done) {
        nc_jb_str(b, o, "status", B->status);
        return;
    }
    nc_jb_num(b, o, "tokens_per_block", (double)(B->token_block * B->group));
    nc_jb_num(b, o, "blocks", (double)B->blocks);
    nc_jb_num(b, o, "blocks_used", (double)B->blocks_used);
    cJSON *r2 = nc_jb_obj(b, o, "r2"), *bp = NULL;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (r->fits[k].ok)
            boot_ci(b, r2, nc_surrogate_get((nc_fit_id)k)->name, &B->r2[k]);
    boot_best(b, o, "best_r2", B->best, B->r2_gap, B->r2_gap_ci);
    nc_jb_ci(b, o, "residual_removed", B->removed, B->removed_ci.se, B->removed_ci.lo,
           B->removed_ci.hi);
    if (B->bp_best >= 0) {
        bp = nc_jb_obj(b, o, "backprop");
        for (int k = 0; k < NC_FIT_COUNT; k++)
            if (isfinite(B->bp[k].se))
                boot_ci(b, bp, nc_surrogate_get((nc_fit_id)k)->name, &B->bp[k]);
        boot_best(b, o, "best_backprop", B->bp_best, B->bp_gap, B->bp_gap_ci);
    }
    const nc_fit_result *dyt = &r->fits[NC_FIT_DYT], *lin = &r->fits[NC_FIT_LINEAR];
    double a = dyt->ok ? dyt->params.p[0] : NAN, g = dyt->ok ? dyt->params.p[1] : NAN;
    nc_jb_ci(b, o, "alpha", a, B->alpha.se, B->alpha.lo, B->alpha.hi);
    nc_jb_ci(b, o, "gamma", g, B->gamma.se, B->gamma.lo, B->gamma.hi);
    nc_jb_ci(b, o, "alpha_gamma", a * g, B->alpha_gamma.se, B->alpha_gamma.lo,
           B->alpha_gamma.hi);
    nc_jb_ci(b, o, "slope_ratio", B->slope_ratio, B->slope_ratio_ci.se, B->slope_ratio_ci.lo,
           B->slope_ratio_ci.hi);
    nc_jb_ci(b, o, "affine_slope", lin->ok ? lin->params.p[0] : NAN, B->affine_slope.se,
           B->affine_slope.lo, B->affine_slope.hi);
    nc_jb_ci(b, o, "rho", r->stats.rho, B->rho.se, B->rho.lo, B->rho.hi);
    nc_jb_ci(b, o, "std", r->stats.std, B->std.se, B->std.lo, B->std.hi);
    cJSON *rr = nc_jb_obj(b, o, "run_replicates");
    const size_t n = nc_boot_run_replicates(B->replicates);
    static const char *const series[NC_BOOT_REP] = {"log_inv_std", "log_alpha",
                                                    "log_alpha_gamma", "log_affine_slope"};
    nc_jb_num(b, rr, "n", B->rep_ok ? (double)n : 0.0);
    for (int j = 0; B->rep_ok && j < NC_BOOT_REP; j++)
        nc_jb_num_array(b, rr, series[j], B->rep + (size_t)j * B->replicates, n);
    if (!B->rep_ok)
        nc_jb_str(b, rr, "status", "none: a replicate's alpha, alpha*gamma, affine slope or std is "
                             "undefined or not positive");
    nc_jb_str(b, o, "status", B->status);
}

static void add_layer(nc_jb *b, cJSON *layers, const nc_plan *plan, const nc_plan_layer *pl)
{
    const nc_layer_result *r = &pl->result;
    cJSON *lo = nc_jb_obj(b, layers, NULL);
    nc_jb_str(b, lo, "name", r->name);
    nc_jb_str(b, lo, "norm", nc_norm_name(r->norm));
    nc_jb_num(b, lo, "eps", r->eps);
    nc_jb_num(b, lo, "tokens", (double)r->N);
    nc_jb_num(b, lo, "dim", (double)r->d);
    nc_jb_str(b, lo, "source", pl->source);
    if (pl->cfg && pl->cfg->group)
        nc_jb_str(b, lo, "group", pl->cfg->group);
    nc_report_add_role(b, lo, pl); /* docs/dropin.md */
    add_stats(b, lo, r);
    nc_jb_str(b, lo, "norm_source", nc_src_name(pl->norm_source));
    nc_jb_str(b, lo, "eps_source", nc_src_name(pl->eps_source));
    if (r->has_real)
        add_real_check(b, lo, pl);
    cJSON *fd = nc_jb_obj(b, lo, "fit_data");
    nc_jb_num(b, fd, "points", (double)r->points);
    nc_jb_str(b, fd, "mode", r->binned ? "binned" : "exact");
    if (r->binned) {
        nc_jb_num(b, fd, "bins", (double)r->bins);
        nc_jb_num(b, fd, "nonempty_bins", (double)r->bins_nonempty);
    }
    nc_jb_num(b, fd, "y_mean", r->y_mean);
    nc_jb_num(b, fd, "y_sst", r->y_sst);
    nc_jb_ensure_status(b, fd, "no usable token: nothing to fit");
    cJSON *fits = nc_jb_obj(b, lo, "fits");
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (r->fits[k].enabled)
            add_fit(b, fits, r, k);
    if (r->boot.replicates > 0 && r->points > 0)
        add_boot(b, lo, pl);
    nc_report_add_swap_layer(b, lo, plan, pl->name); /* docs/swap.md */
    if (pl->has_jacobian)
        add_jacobian(b, lo, &pl->jacobian);
    if (pl->has_outlier_steps)
        add_outlier_steps(b, lo, &pl->outlier_steps);
    if (pl->has_sweep[0] || pl->has_sweep[1]) {
        cJSON *sw = nc_jb_obj(b, lo, "sweeps");
        for (int p = 0; p < 2; p++)
            if (pl->has_sweep[p])
                add_sweep(b, sw, &pl->sweep[p]);
    }
    nc_report_add_dropin(b, lo, pl); /* docs/dropin.md */
    cJSON *t = nc_jb_obj(b, lo, "timing");
    nc_jb_num(b, t, "passes", r->passes);
    nc_jb_num(b, t, "stats_s", r->time_stats_s);
    nc_jb_num(b, t, "bins_s", r->time_bins_s);
    nc_jb_num(b, t, "fits_s", r->time_fits_s);
    nc_jb_num(b, t, "per_channel_s", r->time_channel_s);
    nc_jb_num(b, t, "verify_s", r->time_verify_s);
    nc_jb_num(b, t, "bootstrap_s", r->time_boot_s);
}

int nc_report_json(const nc_plan *plan, const char *command, const char *const *files,
                   size_t nfiles, char **json, nc_err *err)
{
    *json = NULL;
    nc_jb b = {.ok = true};
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return nc_err_set(err, NC_ENOMEM, "out of memory for the report");
    cJSON *tool = nc_jb_obj(&b, root, "tool");
    nc_jb_str(&b, tool, "name", NC_TOOL_NAME);
    nc_jb_str(&b, tool, "version", NC_VERSION);
    nc_jb_str(&b, root, "command", command);
    add_config(&b, root, plan);
    add_inputs(&b, root, plan);
    cJSON *layers = nc_jb_arr(&b, root, "layers");
    for (size_t k = 0; layers && k < plan->nlayers; k++)
        if (plan->layers[k].done)
            add_layer(&b, layers, plan, &plan->layers[k]);
    if (plan->has_run && plan->run.nlayers >= 2) {
        nc_report_add_run(&b, root, plan->summaries, &plan->run);
        if (plan->has_alpha_roles) /* docs/dropin.md */
            nc_report_add_alpha_roles(&b, cJSON_GetObjectItemCaseSensitive(root, "run"),
                                      plan->role_layers, &plan->alpha_roles);
    }
    nc_report_add_swap(&b, root, plan);
    if (!nc_report_add_shard(root, plan))
        b.ok = false;
    cJSON *outs = nc_jb_arr(&b, root, "outputs");
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
