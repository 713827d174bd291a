/*
 * config_walk.c - the config walker's helpers (config_walk.h): each
 * reads one key of a cJSON object, checks its type and range, and on
 * failure names the file and the key path ("<file>: layers[2].eps:
 * expected a number in [0, 1]"); plus the key-set check of an object and
 * the resolution of input paths against the config's folder.
 *
 * Left out: what the keys mean and which are allowed where (config.c,
 * config_sections.c), and JSON parsing itself (cJSON).
 */
#include "config/config_walk.h"

#include "util/nearest.h"
#include "util/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nc_config_bad(nc_config_walker *w, const char *path, const char *expected)
{
    return nc_err_set(w->err, NC_EINVAL, "%s: %s: expected %s", w->file, path, expected);
}

/* parent.key, cut at NC_CONFIG_PATH_MAX (only ever used in messages). */
void nc_config_child_path(char *out, const char *parent, const char *key)
{
    size_t n = strlen(parent);
    if (n >= NC_CONFIG_PATH_MAX)
        n = NC_CONFIG_PATH_MAX - 1;
    memcpy(out, parent, n);
    if (n && n + 1 < NC_CONFIG_PATH_MAX)
        out[n++] = '.';
    size_t k = strlen(key);
    if (k > NC_CONFIG_PATH_MAX - 1 - n)
        k = NC_CONFIG_PATH_MAX - 1 - n;
    memcpy(out + n, key, k);
    out[n + k] = '\0';
}

/* Every key of obj must be in allowed (NULL-terminated), once. */
int nc_config_check_keys(nc_config_walker *w, const cJSON *obj, const char *path,
                         const char *const *allowed)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool known = false;
        for (const char *const *a = allowed; *a; a++)
            known = known || strcmp(c->string, *a) == 0;
        char p[NC_CONFIG_PATH_MAX];
        nc_config_child_path(p, path, c->string[0] ? c->string : "\"\"");
        if (!known) {
            char list[512];
            size_t used = 0, count = 0;
            list[0] = '\0';
            while (allowed[count])
                count++;
            for (const char *const *a = allowed; *a && used < sizeof list; a++) {
                int n = snprintf(list + used, sizeof list - used, "%s%s",
                                 a == allowed ? "" : ", ", *a);
                if (n < 0)
                    break;
                used += (size_t)n;
            }
            /* the same did-you-mean as for options (util/nearest.h) */
            const char *near = nc_nearest(c->string, strlen(c->string), allowed, count);
            return nc_err_set(w->err, NC_EINVAL,
                              "%s: %s: unknown key (%s%s%sexpected one of: %s)", w->file, p,
                              near ? "did you mean " : "", near ? near : "", near ? "? " : "",
                              list);
        }
        for (const cJSON *d = c->next; d; d = d->next)
            if (strcmp(c->string, d->string) == 0)
                return nc_err_set(w->err, NC_EINVAL, "%s: %s: duplicate key", w->file, p);
    }
    return 0;
}

int nc_config_get_string(nc_config_walker *w, const cJSON *obj, const char *key, const char *path,
                         char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[NC_CONFIG_PATH_MAX];
    nc_config_child_path(p, path, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return nc_config_bad(w, p, "a string");
    if (!v->valuestring[0])
        return nc_config_bad(w, p, "a non-empty string");
    free(*out);
    if (!(*out = strdup(v->valuestring)))
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    return 0;
}

int nc_config_get_number(nc_config_walker *w, const cJSON *obj, const char *key, const char *path,
                         double lo, double hi, double *out, bool *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[NC_CONFIG_PATH_MAX], what[96];
    nc_config_child_path(p, path, key);
    if (isinf(hi))
        snprintf(what, sizeof what, "a number >= %g", lo);
    else
        snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return nc_config_bad(w, p, what);
    *out = v->valuedouble;
    if (present)
        *present = true;
    return 0;
}

int nc_config_get_uint(nc_config_walker *w, const cJSON *obj, const char *key, const char *path,
                       double lo, double hi, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[NC_CONFIG_PATH_MAX], what[96];
    nc_config_child_path(p, path, key);
    snprintf(what, sizeof what, "a whole number in [%.0f, %.0f]", lo, hi);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        v->valuedouble != floor(v->valuedouble))
        return nc_config_bad(w, p, what);
    *out = (uint64_t)v->valuedouble;
    return 0;
}

int nc_config_get_bool(nc_config_walker *w, const cJSON *obj, const char *key, const char *path,
                       bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[NC_CONFIG_PATH_MAX];
    nc_config_child_path(p, path, key);
    if (!cJSON_IsBool(v))
        return nc_config_bad(w, p, "true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

/* An input path: absolute, or relative to the config's folder. */
int nc_config_resolve(nc_config_walker *w, const char *p, char **out)
{
    free(*out);
    *out = NULL;
    size_t n = strlen(w->dir) + strlen(p) + 2;
    char *s = malloc(n);
    if (!s)
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    if (p[0] == '/' || !w->dir[0])
        snprintf(s, n, "%s", p);
    else
        snprintf(s, n, "%s/%s", w->dir, p);
    *out = s;
    return 0;
}

/* An array of strings into (owned) *out / *n; what names the elements. */
int nc_config_get_strings(nc_config_walker *w, const cJSON *v, const char *path, char ***out,
                          size_t *n)
{
    const char *what = "a string or an array of strings";
    size_t m = cJSON_IsString(v) ? 1 : cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
    if (m == 0)
        return nc_config_bad(w, path, what);
    if (!(*out = calloc(m, sizeof **out)))
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    const cJSON *e = cJSON_IsString(v) ? v : v->child;
    for (size_t k = 0; k < m; k++, e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return nc_config_bad(w, path, what);
        if (!((*out)[k] = strdup(e->valuestring)))
            return nc_err_set(w->err, NC_ENOMEM, "out of memory");
        *n = k + 1;
    }
    return 0;
}

int nc_config_check_utf8(nc_config_walker *w, const cJSON *v, const char *path)
{
    size_t bad;
    if (cJSON_IsString(v) && v->valuestring &&
        !nc_utf8_valid(v->valuestring, strlen(v->valuestring), &bad))
        return nc_err_set(w->err, NC_EINVAL, "%s: %s: found byte 0x%02x at position %zu that is "
                          "not UTF-8, expected UTF-8 text", w->file, path[0] ? path : "(top)",
                          (unsigned char)v->valuestring[bad], bad);
    int k = 0;
    for (const cJSON *c = v->child; c; c = c->next, k++) {
        char p[NC_CONFIG_PATH_MAX];
        if (cJSON_IsObject(v)) {
            const char *key = c->string ? c->string : "";
            if (!nc_utf8_valid(key, strlen(key), &bad))
                return nc_err_set(w->err, NC_EINVAL, "%s: %s: a key with byte 0x%02x at "
                                  "position %zu that is not UTF-8, expected UTF-8 text",
                                  w->file, path[0] ? path : "(top)",
                                  (unsigned char)key[bad], bad);
            nc_config_child_path(p, path, key);
        } else {
            snprintf(p, sizeof p, "%.150s[%d]", path, k);
        }
        int rc = nc_config_check_utf8(w, c, p);
        if (rc)
            return rc;
    }
    return 0;
}
