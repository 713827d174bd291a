/*
 * run_block.c - the run-level block of report.json ("run";
 * analysis/run_summary.h, docs/report.md "The run-level block"): written
 * for a plan with two or more layers (report.c), and for a merged report
 * from the per-layer numbers of its layers (nc_report_add_run_from_layers,
 * used by `normcmp merge`), by the same nc_run_summary_compute.
 */
#include "report/run_block.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ run block */

static void add_rank(nc_jb *b, cJSON *o, const char *key, const nc_rank *R, const char *what)
{
    cJSON *r = nc_jb_obj(b, o, key);
    if (R->best < 0) {
        nc_jb_str(b, r, "status", "no surrogate has a value");
        return;
    }
    nc_jb_str(b, r, "fit", nc_surrogate_get((nc_fit_id)R->best)->name);
    nc_jb_num(b, r, what, R->value);
    if (R->se == R->se)
        nc_jb_num(b, r, "se", R->se);
    cJSON *t = nc_jb_arr(b, r, "ties");
    for (int k = 0; t && k < NC_FIT_COUNT; k++)
        if (R->tie[k] && !cJSON_AddItemToArray(t, cJSON_CreateString(
                             nc_surrogate_get((nc_fit_id)k)->name)))
            b->ok = false;
    nc_jb_num(b, r, "candidates", (double)R->candidates);
}

static void add_loglog(nc_jb *b, cJSON *o, const char *key, const char *y,
                       const nc_loglog *L)
{
    cJSON *l = nc_jb_obj(b, o, key);
    nc_jb_str(b, l, "y", y);
    nc_jb_str(b, l, "x", "1/input_stats.std");
    nc_jb_num(b, l, "layers", (double)L->n);
    nc_jb_num(b, l, "slope", L->slope);
    nc_jb_num(b, l, "intercept", L->intercept);
    nc_jb_num(b, l, "r", L->r);
    nc_jb_num(b, l, "slope_se", L->slope_se);
    cJSON *ci = nc_jb_arr(b, l, "ci95");
    const double lim[2] = {L->ci_lo, L->ci_hi};
    for (int k = 0; ci && k < 2; k++) {
        cJSON *e = nc_jb_number(lim[k]);
        if (!e || !cJSON_AddItemToArray(ci, e)) {
            cJSON_Delete(e);
            b->ok = false;
        }
    }
    nc_jb_str(b, l, "status", L->status);
}

/* The run-level block (run_summary.h) under parent. */
void nc_report_add_run(nc_jb *b, cJSON *parent, const nc_layer_summary *L,
                       const nc_run_summary *R)
{
    cJSON *o = nc_jb_obj(b, parent, "run");
    nc_jb_num(b, o, "layers", (double)R->nlayers);
    cJSON *ls = nc_jb_arr(b, o, "per_layer");
    for (size_t k = 0; ls && k < R->nlayers; k++) {
        const nc_layer_verdict *v = &R->layer[k];
        cJSON *lo = nc_jb_obj(b, ls, NULL);
        nc_jb_str(b, lo, "name", L[k].name);
        nc_jb_str(b, lo, "kind", nc_layer_verdict_kind(v));
        add_rank(b, lo, "best_r2", &v->by_r2, "r2");
        add_rank(b, lo, "best_backprop", &v->by_bp, "backprop_rel_err");
        nc_jb_bool(b, lo, "backprop_ties_decided", v->bp_ties_known);
        nc_jb_num(b, lo, "affine_r2", v->affine_r2);
        nc_jb_num(b, lo, "gain_r2", v->gain_r2);
        nc_jb_num(b, lo, "residual_removed", v->residual_removed);
        nc_jb_num(b, lo, "alpha", L[k].alpha);
        nc_jb_num(b, lo, "theory_alpha", L[k].theory_alpha);
        nc_jb_num(b, lo, "alpha_over_theory", v->alpha_over_theory);
        nc_jb_ensure_status(b, lo,
                            "a fit that did not run (affine map, DyT) leaves these undefined");
        nc_jb_str(b, lo, "verdict", v->verdict);
    }
    nc_jb_str(b, o, "grouping", "model groups: the layers sharing d (dim), in the order of their "
                         "first layer; the alpha-std figure groups the same way");
    cJSON *gs = nc_jb_arr(b, o, "groups");
    for (size_t g = 0; gs && g < R->ngroups; g++) {
        const nc_run_group *G = &R->group[g];
        cJSON *go = nc_jb_obj(b, gs, NULL), *names = nc_jb_arr(b, go, "names");
        nc_jb_num(b, go, "d", (double)G->d);
        nc_jb_num(b, go, "layers", (double)G->nlayers);
        for (size_t k = 0; names && k < G->nlayers; k++)
            if (!cJSON_AddItemToArray(names, cJSON_CreateString(L[G->layer[k]].name)))
                b->ok = false;
        cJSON *sl = nc_jb_obj(b, go, "loglog_vs_inv_std");
        nc_jb_str(b, sl, "method", "OLS of log y on log(1/std) over the group's layers; r: Pearson "
                             "correlation of the logs; ci95: slope -+ t(0.975, n-2) * "
                             "slope_se; no slope under 3 layers");
        add_loglog(b, sl, "alpha", "fits.dyt.alpha", &G->alpha);
        add_loglog(b, sl, "alpha_gamma", "fits.dyt.alpha * fits.dyt.gamma", &G->alpha_gamma);
        add_loglog(b, sl, "affine_slope", "fits.linear.slope", &G->affine);
        nc_jb_str(b, go, "verdict", G->verdict);
    }
    nc_jb_num(b, o, "saturating_layers", (double)R->saturating);
    nc_jb_str(b, o, "verdict", R->verdict);
}

/* A number of the report, or NAN. */
static double jnum_at(const cJSON *o, const char *k1, const char *k2)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k1);
    if (k2)
        v = cJSON_GetObjectItemCaseSensitive(v, k2);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A layer's run-level summary from its block in report.json (the fields
 * run_summary.h names). */
static void summary_from_json(const cJSON *lo, nc_layer_summary *s)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(lo, "name");
    nc_layer_summary_init(s, cJSON_IsString(name) ? name->valuestring : "");
    double d = jnum_at(lo, "dim", NULL);
    s->d = d >= 0 ? (size_t)d : 0;
    s->std = jnum_at(lo, "input_stats", "std");
    s->rho = jnum_at(lo, "input_stats", "rho");
    const cJSON *fits = cJSON_GetObjectItemCaseSensitive(lo, "fits");
    const cJSON *sur = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(lo, "jacobian"), "surrogates");
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        const char *fname = nc_surrogate_get((nc_fit_id)k)->name;
        s->r2[k] = jnum_at(fits, fname, "r2");
        const cJSON *so = cJSON_GetObjectItemCaseSensitive(sur, fname);
        s->bp[k] = jnum_at(so, "backprop_rel_err", NULL);
        s->bp_se[k] = jnum_at(so, "backprop_rel_err_se", NULL);
    }
    const cJSON *dyt = cJSON_GetObjectItemCaseSensitive(fits, "dyt");
    s->alpha = jnum_at(dyt, "alpha", NULL);
    s->gamma = jnum_at(dyt, "gamma", NULL);
    s->theory_alpha = jnum_at(dyt, "theory_alpha", NULL);
    s->affine_slope = jnum_at(fits, "linear", "slope");
}

int nc_report_add_run_from_layers(cJSON *root, nc_err *err)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    size_t n = (size_t)cJSON_GetArraySize(layers);
    if (n < 2)
        return 0;
    nc_layer_summary *L = calloc(n, sizeof *L);
    if (!L)
        return nc_err_set(err, NC_ENOMEM, "out of memory for the run summary");
    size_t k = 0;
    for (const cJSON *lo = layers->child; lo && k < n; lo = lo->next)
        summary_from_json(lo, &L[k++]);
    nc_run_summary R;
    int rc = nc_run_summary_compute(L, n, &R, err);
    if (!rc) {
        nc_jb b = {.ok = true};
        nc_report_add_run(&b, root, L, &R);
        if (!b.ok)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for the run summary");
        nc_run_summary_free(&R);
    }
    free(L);
    return rc;
}
