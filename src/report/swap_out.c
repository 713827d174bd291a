/*
 * swap_out.c - the swap test's results in report.json (docs/swap.md,
 * "In normcmp's report"): per layer what replacing it alone did to the
 * model's loss, and at the top level the original loss, every norm
 * replaced, and each role replaced together. The numbers are the swap
 * test's (plan/swap.h), shown beside the verdicts; `current` says whether
 * they were measured with this run's drop-in parameters.
 */
#include "report/swap_out.h"

#include <math.h>

/* {param, delta, delta_se, accuracy_delta, accuracy_delta_se} of the
 * surrogates measured, under o. */
static void entries(nc_jb *b, cJSON *o, const nc_swap *s, const nc_swap_entry *e,
                    bool with_param)
{
    for (int k = 0; k < NC_DROPIN_COUNT; k++) {
        if (!s->has[k])
            continue;
        cJSON *x = nc_jb_obj(b, o, nc_dropin_name((nc_dropin_kind)k));
        if (with_param)
            nc_jb_num(b, x, nc_dropin_param((nc_dropin_kind)k), e[k].param);
        nc_jb_num(b, x, "delta", e[k].delta);
        nc_jb_num(b, x, "delta_se", e[k].delta_se);
        if (isfinite(s->acc0)) {
            nc_jb_num(b, x, "accuracy_delta", e[k].acc_delta);
            nc_jb_num(b, x, "accuracy_delta_se", e[k].acc_delta_se);
        }
        nc_jb_ensure_status(b, x, "not measured, one batch (no standard error), or not finite in "
                            "the swap test (its results file says which)");
    }
}

void nc_report_add_swap_layer(nc_jb *b, cJSON *lo, const nc_plan *plan, const char *name)
{
    const nc_swap_layer *e = plan->has_swap ? nc_swap_find(&plan->swap, name) : NULL;
    if (!e)
        return;
    cJSON *o = nc_jb_obj(b, lo, "swap");
    nc_jb_str(b, o, "unit", plan->swap.unit);
    nc_jb_bool(b, o, "current", plan->swap.current);
    entries(b, o, &plan->swap, e->s, true);
}

void nc_report_add_swap(nc_jb *b, cJSON *root, const nc_plan *plan)
{
    if (!plan->has_swap)
        return;
    const nc_swap *s = &plan->swap;
    cJSON *o = nc_jb_obj(b, root, "swap");
    nc_jb_str(b, o, "file", s->path);
    nc_jb_str(b, o, "loss", s->loss);
    nc_jb_str(b, o, "unit", s->unit);
    nc_jb_num(b, o, "batches", (double)s->batches);
    nc_jb_num(b, o, "examples", (double)s->examples);
    nc_jb_bool(b, o, "current", s->current);
    cJSON *orig = nc_jb_obj(b, o, "original");
    nc_jb_num(b, orig, "loss", s->loss0);
    nc_jb_num(b, orig, "loss_se", s->loss0_se);
    if (isfinite(s->acc0))
        nc_jb_num(b, orig, "accuracy", s->acc0);
    nc_jb_ensure_status(b, orig, "one batch: no standard error");
    entries(b, nc_jb_obj(b, o, "all"), s, s->all, false);
    cJSON *roles = nc_jb_arr(b, o, "roles");
    for (size_t k = 0; roles && k < s->nroles; k++) {
        cJSON *r = nc_jb_obj(b, roles, NULL);
        nc_jb_str(b, r, "role", s->role[k].role);
        nc_jb_num(b, r, "layers", (double)s->role[k].nlayers);
        entries(b, r, s, s->role[k].s, false);
    }
}
