/*
 * jbuild.c - the report's cJSON builder (jbuild.h).
 */
#include "report/jbuild.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *nc_jb_obj(nc_jb *b, cJSON *parent, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !(key ? cJSON_AddItemToObject(parent, key, o) : cJSON_AddItemToArray(parent, o))) {
        cJSON_Delete(o);
        b->ok = false;
        return NULL;
    }
    return o;
}

cJSON *nc_jb_arr(nc_jb *b, cJSON *parent, const char *key)
{
    cJSON *a = cJSON_CreateArray();
    if (!a || !cJSON_AddItemToObject(parent, key, a)) {
        cJSON_Delete(a);
        b->ok = false;
        return NULL;
    }
    return a;
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v, trying 16
 * first: when 16 digits do not read back, 15 do not either (the 15-digit
 * decimal is a 16-digit one too, and the 16-digit rounding is no farther
 * from v), so most values (computed ones need 17) cost two conversions
 * and one read instead of three of each; the same text as trying 15, 16,
 * 17 in turn (checked on 2e7 values of every magnitude). */
cJSON *nc_jb_number(double v)
{
    if (!isfinite(v))
        return cJSON_CreateNull();
    char buf[40], b15[40];
    snprintf(buf, sizeof buf, "%.16g", v);
    if (strtod(buf, NULL) != v) {
        snprintf(buf, sizeof buf, "%.17g", v);
    } else {
        snprintf(b15, sizeof b15, "%.15g", v);
        if (strtod(b15, NULL) == v)
            memcpy(buf, b15, sizeof buf);
    }
    return cJSON_CreateRaw(buf);
}

void nc_jb_num(nc_jb *b, cJSON *o, const char *key, double v)
{
    if (!o)
        return;
    cJSON *n = nc_jb_number(v);
    if (!n || !cJSON_AddItemToObject(o, key, n)) {
        cJSON_Delete(n);
        b->ok = false;
    }
}

void nc_jb_num_array(nc_jb *b, cJSON *o, const char *key, const double *v, size_t n)
{
    cJSON *a = nc_jb_arr(b, o, key);
    for (size_t k = 0; a && k < n; k++) {
        cJSON *e = nc_jb_number(v[k]);
        if (!e || !cJSON_AddItemToArray(a, e)) {
            cJSON_Delete(e);
            b->ok = false;
            return;
        }
    }
}

void nc_jb_str(nc_jb *b, cJSON *o, const char *key, const char *s)
{
    if (o && !cJSON_AddStringToObject(o, key, s ? s : ""))
        b->ok = false;
}

void nc_jb_bool(nc_jb *b, cJSON *o, const char *key, bool v)
{
    if (o && !cJSON_AddBoolToObject(o, key, v))
        b->ok = false;
}

void nc_jb_ensure_status(nc_jb *b, cJSON *o, const char *reason)
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

void nc_jb_ci_of(nc_jb *b, cJSON *o, const char *key, bool value_too, double value, double se,
                 double lo, double hi)
{
    cJSON *c = nc_jb_obj(b, o, key);
    if (!c)
        return;
    if (value_too)
        nc_jb_num(b, c, "value", value);
    if (se == se)
        nc_jb_num(b, c, "se", se);
    const double ci[2] = {lo, hi};
    if (isfinite(lo) && isfinite(hi))
        nc_jb_num_array(b, c, "ci95", ci, 2);
    else
        nc_jb_str(b, c, "status", "no interval: no bootstrap, or undefined in too many "
                                  "replicates (layers[].bootstrap.status)");
    nc_jb_ensure_status(b, c, "undefined (a fit it needs did not run)");
}

void nc_jb_ci(nc_jb *b, cJSON *o, const char *key, double value, double se, double lo,
              double hi)
{
    nc_jb_ci_of(b, o, key, true, value, se, lo, hi);
}
