/*
 * report_internal.h - what the files of src/report/ that build report.json
 * share (report.c, run_block.c): the cJSON builder, whose `ok` flag turns
 * any allocation failure into one NC_ENOMEM at the end, and its helpers.
 * Internal to src/report/.
 */
#ifndef NC_REPORT_INTERNAL_H
#define NC_REPORT_INTERNAL_H

#include <cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/run_summary.h"
#include "plan/plan.h"

typedef struct builder {
    bool ok;
} builder;

static inline cJSON *obj(builder *b, cJSON *parent, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !(key ? cJSON_AddItemToObject(parent, key, o) : cJSON_AddItemToArray(parent, o))) {
        cJSON_Delete(o);
        b->ok = false;
        return NULL;
    }
    return o;
}

static inline cJSON *arr(builder *b, cJSON *parent, const char *key)
{
    cJSON *a = cJSON_CreateArray();
    if (!a || !cJSON_AddItemToObject(parent, key, a)) {
        cJSON_Delete(a);
        b->ok = false;
        return NULL;
    }
    return a;
}

/* A JSON number node that reads back as exactly v: the shortest of %.15g,
 * %.16g, %.17g that round-trips (cJSON's own printer accepts 15 digits that
 * only come close), or null when v is not finite. */
static inline cJSON *number(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return cJSON_CreateRaw(buf);
}

/* A number, or null when it is not finite. */
static inline void num(builder *b, cJSON *o, const char *key, double v)
{
    if (!o)
        return;
    cJSON *n = number(v);
    if (!n || !cJSON_AddItemToObject(o, key, n)) {
        cJSON_Delete(n);
        b->ok = false;
    }
}

/* If o holds a null and no "status" yet, adds one saying why (every null
 * in the report sits beside a status: STYLE.md section 6). */
static inline void ensure_status(builder *b, cJSON *o, const char *reason)
{
    if (!o || cJSON_GetObjectItemCaseSensitive(o, "status"))
        return;
    for (const cJSON *c = o->child; c; c = c->next)
        if (cJSON_IsNull(c)) {
            if (!cJSON_AddStringToObject(o, "status", reason))
                b->ok = false;
            return;
        }
}

static inline void str(builder *b, cJSON *o, const char *key, const char *s)
{
    if (o && !cJSON_AddStringToObject(o, key, s ? s : ""))
        b->ok = false;
}

static inline void boolean(builder *b, cJSON *o, const char *key, bool v)
{
    if (o && !cJSON_AddBoolToObject(o, key, v))
        b->ok = false;
}

static inline void num_array(builder *b, cJSON *o, const char *key, const double *v, size_t n)
{
    cJSON *a = arr(b, o, key);
    for (size_t k = 0; a && k < n; k++) {
        cJSON *e = number(v[k]);
        if (!e || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            b->ok = false;
            return;
        }
    }
}

/* {"value" (left out when value_too is false), "se" (left out when NaN),
 * "ci95": [lo, hi] (left out, with a status, when not finite)} under o as
 * key: a number with its uncertainty (the token bootstrap's). */
static inline void ci_obj_of(builder *b, cJSON *o, const char *key, bool value_too, double value,
                             double se, double lo, double hi)
{
    cJSON *c = obj(b, o, key);
    if (!c)
        return;
    if (value_too)
        num(b, c, "value", value);
    if (se == se)
        num(b, c, "se", se);
    const double ci[2] = {lo, hi};
    if (isfinite(lo) && isfinite(hi))
        num_array(b, c, "ci95", ci, 2);
    else
        str(b, c, "status", "no interval: no bootstrap, or undefined in too many replicates "
                            "(layers[].bootstrap.status)");
    ensure_status(b, c, "undefined (a fit it needs did not run)");
}

static inline void ci_obj(builder *b, cJSON *o, const char *key, double value, double se,
                          double lo, double hi)
{
    ci_obj_of(b, o, key, true, value, se, lo, hi);
}

struct nc_plan;

/* swap_out.c: layer name's swap test results under lo ("swap"), when the
 * run has them (docs/swap.md). */
void nc_report_add_swap_layer(builder *b, cJSON *lo, const struct nc_plan *plan,
                              const char *name);

/* swap_out.c: the swap test's run-level results ("swap") under root. */
void nc_report_add_swap(builder *b, cJSON *root, const struct nc_plan *plan);

/* run_block.c: the run-level block ("run") of n = R->nlayers layers under
 * parent. */
void nc_report_add_run(builder *b, cJSON *parent, const nc_layer_summary *L,
                       const nc_run_summary *R);

/* dropin_out.c: the config's "dropin" block (enabled, alpha0, roles), a
 * layer's "role", "role_source" and "depth" (at its top level), its
 * "dropin" block (when computed), and the run-level "alpha_by_role" block
 * of layers L under run (docs/dropin.md). */
void nc_report_add_dropin_config(builder *b, cJSON *config, const nc_config *cfg);
void nc_report_add_role(builder *b, cJSON *lo, const nc_plan_layer *pl);
void nc_report_add_dropin(builder *b, cJSON *lo, const nc_plan_layer *pl);
void nc_report_add_alpha_roles(builder *b, cJSON *run, const nc_role_layer *L,
                               const nc_alpha_roles *A);

#endif
