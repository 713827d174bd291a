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
        nc_jb_ci(b, lo, "residual_removed_ci", v->residual_removed, NAN, v->removed_lo,
               v->removed_hi);
        nc_jb_num(b, lo, "alpha", L[k].alpha);
        nc_jb_num(b, lo, "theory_alpha", L[k].theory_alpha);
        nc_jb_ci(b, lo, "slope_ratio", v->slope_ratio, NAN, v->slope_ratio_lo, v->slope_ratio_hi);
        nc_jb_bool(b, lo, "bootstrap", v->boot);
        nc_jb_ensure_status(b, lo, "a fit that did not run (affine map, DyT) leaves these undefined");
        nc_jb_str(b, lo, "verdict", v->verdict);
    }
    nc_jb_str(b, o, "grouping", "model groups: the layers of one source, norm kind and d (or of one "
                         "config group), in the order of their first layer; the alpha-std "
                         "figure groups the same way");
    cJSON *gs = nc_jb_arr(b, o, "groups");
    for (size_t g = 0; gs && g < R->ngroups; g++) {
        const nc_run_group *G = &R->group[g];
        cJSON *go = nc_jb_obj(b, gs, NULL), *names = nc_jb_arr(b, go, "names");
        if (G->name)
            nc_jb_str(b, go, "name", G->name);
        nc_jb_str(b, go, "source", G->source);
        nc_jb_str(b, go, "norm", G->norm == NC_LAYERNORM ? "layernorm" : G->norm == NC_RMSNORM
                                                                      ? "rmsnorm" : "unknown");
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
        cJSON *tb = nc_jb_obj(b, go, "token_bootstrap");
        nc_jb_num(b, tb, "replicates", (double)G->boot_n);
        if (G->boot_n) {
            const nc_boot_ci *c[3] = {&G->boot_alpha, &G->boot_alpha_gamma, &G->boot_affine};
            const double v[3] = {G->alpha.slope, G->alpha_gamma.slope, G->affine.slope};
            static const char *const key[3] = {"alpha", "alpha_gamma", "affine_slope"};
            for (int q = 0; q < 3; q++)
                nc_jb_ci(b, tb, key[q], v[q], c[q]->se, c[q]->lo, c[q]->hi);
        } else {
            nc_jb_str(b, tb, "status", "none: fewer than 3 layers, or a layer without a bootstrap");
        }
        nc_jb_str(b, go, "verdict", G->verdict);
    }
    nc_jb_num(b, o, "saturating_layers", (double)R->saturating);
    nc_jb_num(b, o, "near_linear_layers", (double)R->near_linear);
    nc_jb_num(b, o, "undecided_layers", (double)R->undecided);
    nc_jb_num(b, o, "decided_best_layers", (double)R->decided_best);
    nc_jb_bool(b, o, "bootstrap", R->boot);
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

/* The fit a {"fit": name} object names, or -1. */
static int fit_named(const cJSON *o)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "fit");
    const nc_surrogate *s = cJSON_IsString(f) ? nc_surrogate_find(f->valuestring) : NULL;
    return s ? (int)s->id : -1;
}

/* o["ci95"][k], or NAN */
static double ci_at(const cJSON *o, int k)
{
    const cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "ci95"), k);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The lower ends of the gaps' intervals of a best_* object, by fit id. */
static int gaps_from_json(const cJSON *best, double *lo)
{
    const cJSON *gaps = cJSON_GetObjectItemCaseSensitive(best, "gaps");
    for (int k = 0; k < NC_FIT_COUNT; k++)
        lo[k] = ci_at(cJSON_GetObjectItemCaseSensitive(gaps, nc_surrogate_get((nc_fit_id)k)->name),
                      0);
    return fit_named(best);
}

/* layers[].bootstrap into s; the run replicates into rep
 * ([NC_BOOT_REP][NC_BOOT_RUN_REPLICATES], owned by the caller). */
static void boot_from_json(const cJSON *bo, nc_layer_summary *s, double *rep)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(bo, "status");
    const cJSON *rm = cJSON_GetObjectItemCaseSensitive(bo, "residual_removed");
    const cJSON *sr = cJSON_GetObjectItemCaseSensitive(bo, "slope_ratio");
    s->boot_too_few = cJSON_IsString(st) && strncmp(st->valuestring, "not run", 7) == 0;
    if (!cJSON_IsString(st) || strcmp(st->valuestring, "ok") != 0)
        return;
    s->boot = true;
    s->boot_best = gaps_from_json(cJSON_GetObjectItemCaseSensitive(bo, "best_r2"), s->r2_gap_lo);
    s->boot_bp_best =
        gaps_from_json(cJSON_GetObjectItemCaseSensitive(bo, "best_backprop"), s->bp_gap_lo);
    s->removed_lo = ci_at(rm, 0);
    s->removed_hi = ci_at(rm, 1);
    s->slope_ratio_lo = ci_at(sr, 0);
    s->slope_ratio_hi = ci_at(sr, 1);
    const cJSON *al = cJSON_GetObjectItemCaseSensitive(bo, "alpha");
    s->alpha_lo = ci_at(al, 0);
    s->alpha_hi = ci_at(al, 1);
    const cJSON *rr = cJSON_GetObjectItemCaseSensitive(bo, "run_replicates");
    static const char *const series[NC_BOOT_REP] = {"log_inv_std", "log_alpha",
                                                    "log_alpha_gamma", "log_affine_slope"};
    double n = jnum_at(rr, "n", NULL);
    if (!(n >= 2 && n <= NC_BOOT_RUN_REPLICATES))
        return;
    s->nrep = (size_t)n;
    for (int j = 0; j < NC_BOOT_REP; j++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(rr, series[j]);
        double *v = rep + (size_t)j * NC_BOOT_RUN_REPLICATES;
        for (size_t k = 0; k < s->nrep; k++) {
            const cJSON *e = cJSON_GetArrayItem(a, (int)k);
            v[k] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        }
        s->rep[j] = v;
    }
}

/* A layer's run-level summary from its block in report.json (the fields
 * run_summary.h names); rep: room for its run replicates. */
static void summary_from_json(const cJSON *lo, nc_layer_summary *s, double *rep)
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
    s->slope_ratio = s->alpha * s->gamma * s->rho;
    const cJSON *ddyt = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(lo, "dropin"), "dyt");
    s->dropin_rmse_real = jnum_at(ddyt, "rmse_vs_real", NULL);
    s->dropin_rmse_rec = jnum_at(ddyt, "rmse_vs_recomputed", NULL);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(lo, "swap");
    const cJSON *sdyt = cJSON_GetObjectItemCaseSensitive(sw, "dyt");
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(sw, "unit");
    s->swap_delta = jnum_at(sdyt, "delta", NULL);
    s->swap_delta_se = jnum_at(sdyt, "delta_se", NULL);
    s->swap_unit = cJSON_IsString(unit) ? unit->valuestring : NULL;
    s->swap_stale = !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sw, "current"));
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(lo, "source");
    const cJSON *grp = cJSON_GetObjectItemCaseSensitive(lo, "group");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(lo, "norm");
    s->source = cJSON_IsString(src) ? src->valuestring : "";
    s->group = cJSON_IsString(grp) ? grp->valuestring : NULL;
    nc_norm_kind nk;
    s->norm = cJSON_IsString(norm) && nc_norm_parse(norm->valuestring, &nk) ? (int)nk : -1;
    boot_from_json(cJSON_GetObjectItemCaseSensitive(lo, "bootstrap"), s, rep);
}

/* The run summary of root's layers: added as its block "run" when add,
 * shown with show (when not NULL). */
static int from_layers(cJSON *root, bool add, nc_run_show show, nc_err *err)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    size_t n = (size_t)cJSON_GetArraySize(layers);
    if (n < 2)
        return 0;
    nc_layer_summary *L = calloc(n, sizeof *L);
    const size_t per = (size_t)NC_BOOT_REP * NC_BOOT_RUN_REPLICATES;
    double *rep = malloc(n * per * sizeof *rep);
    if (!L || !rep) {
        free(L);
        free(rep);
        return nc_err_set(err, NC_ENOMEM, "out of memory for the run summary");
    }
    size_t k = 0;
    for (const cJSON *lo = layers->child; lo && k < n; lo = lo->next, k++)
        summary_from_json(lo, &L[k], rep + k * per);
    nc_run_summary R;
    int rc = nc_run_summary_compute(L, n, &R, err);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(root, "swap");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(sw, "all"), "dyt");
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(sw, "unit");
    if (!rc && isfinite(jnum_at(all, "delta", NULL)))
        nc_run_summary_swap(&R, jnum_at(all, "delta", NULL), jnum_at(all, "delta_se", NULL),
                            cJSON_IsString(unit) ? unit->valuestring : NULL,
                            !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sw, "current")));
    if (!rc && add) {
        nc_jb b = {.ok = true};
        nc_report_add_run(&b, root, L, &R);
        if (!b.ok)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for the run summary");
    }
    if (!rc && show)
        show(L, &R);
    if (!rc)
        nc_run_summary_free(&R);
    free(L);
    free(rep);
    return rc;
}

int nc_report_add_run_from_layers(cJSON *root, nc_err *err)
{
    return from_layers(root, true, NULL, err);
}

int nc_report_show_run_from_layers(const cJSON *root, nc_run_show show, nc_err *err)
{
    return from_layers((cJSON *)root, false, show, err); /* root is only read */
}
