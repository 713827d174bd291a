/*
 * jbuild.c - the report's cJSON builder (jbuild.h).
 */
#include "report/jbuild.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

cJSON *nc_jb_number(double v)
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
