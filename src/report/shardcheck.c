/*
 * shardcheck.c - the checks of a shard's report.json before `normcmp
 * merge` uses it (shardcheck.h): the whole document first (encoding,
 * finite numbers, no repeated key), then every field merge reads.
 *
 * Messages: "<file>: <field path>: found <what>, expected <what>", the
 * field path as in configs ("layers[2].fits.dyt.alpha"); a key that is not
 * printable ASCII is shown with \xNN escapes.
 */
#include "report/shardcheck.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/boot.h"
#include "analysis/surrogate.h"
#include "io/jsondoc.h"
#include "report/shard.h"
#include "util/utf8.h"

#define WHERE_MAX 200

typedef struct ck {
    const char *path; /* the file, for messages */
    nc_err *err;
    char where[WHERE_MAX]; /* the field path being checked */
    size_t wlen;
} ck;

/* ------------------------------------------------------ field paths */

/* Appends ".key" (or "key" at the top) or "[i]" to the field path;
 * returns the length to restore. A key is shown as printable ASCII, other
 * bytes as \xNN, at most 48 bytes of it. */
static size_t push_key(ck *c, const char *key)
{
    size_t was = c->wlen;
    char shown[200];
    size_t n = 0, k = 0;
    const unsigned char *u = (const unsigned char *)key;
    for (; u[k] && k < 48; k++) {
        if (u[k] >= 0x20 && u[k] < 0x7f)
            shown[n++] = (char)u[k];
        else
            n += (size_t)snprintf(shown + n, sizeof shown - n, "\\x%02x", u[k]);
    }
    shown[n] = '\0';
    int w = snprintf(c->where + c->wlen, WHERE_MAX - c->wlen, "%s%s%s", c->wlen ? "." : "",
                     shown, u[k] ? "..." : "");
    c->wlen = w < 0 ? c->wlen : c->wlen + (size_t)w < WHERE_MAX ? c->wlen + (size_t)w
                                                                : WHERE_MAX - 1;
    return was;
}

static size_t push_index(ck *c, size_t i)
{
    size_t was = c->wlen;
    int w = snprintf(c->where + c->wlen, WHERE_MAX - c->wlen, "[%zu]", i);
    c->wlen = w < 0 ? c->wlen : c->wlen + (size_t)w < WHERE_MAX ? c->wlen + (size_t)w
                                                                : WHERE_MAX - 1;
    return was;
}

static void pop(ck *c, size_t was)
{
    c->wlen = was;
    c->where[was] = '\0';
}

/* What a node is, for "found ...". */
static void describe(const cJSON *v, char *buf, size_t n)
{
    if (!v)
        snprintf(buf, n, "nothing");
    else if (cJSON_IsNumber(v))
        snprintf(buf, n, "the number %.17g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, n, "a string");
    else if (cJSON_IsNull(v))
        snprintf(buf, n, "null");
    else if (cJSON_IsBool(v))
        snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsArray(v))
        snprintf(buf, n, "an array");
    else
        snprintf(buf, n, "an object");
}

/* "<file>: <field>: found <v>, expected <what>" (key: a field of the
 * current path, or NULL for the path itself). */
static int bad(ck *c, const char *key, const cJSON *v, const char *what)
{
    size_t was = key ? push_key(c, key) : c->wlen;
    char found[64];
    describe(v, found, sizeof found);
    nc_err_set(c->err, NC_EFORMAT, "%s: %s: found %s, expected %s", c->path,
               c->wlen ? c->where : "(the document)", found, what);
    pop(c, was);
    return NC_EFORMAT;
}

/* ------------------------------------------- the whole document */

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(ck *c, const cJSON *v);

static int utf8_text(ck *c, const char *s, const char *what)
{
    size_t at;
    if (nc_utf8_valid(s, strlen(s), &at))
        return 0;
    return nc_err_set(c->err, NC_EFORMAT, "%s: %s: found byte 0x%02x at position %zu of %s that "
                      "is not UTF-8, expected UTF-8 text", c->path,
                      c->wlen ? c->where : "(the document)", (unsigned char)s[at], at, what);
}

/* An object's keys: UTF-8, each once; then its values. */
static int walk_object(ck *c, const cJSON *v)
{
    size_t n = 0;
    for (const cJSON *e = v->child; e; e = e->next)
        n++;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return nc_err_set(c->err, NC_ENOMEM, "%s: out of memory for %zu keys", c->path, n);
    size_t k = 0;
    int rc = 0;
    for (const cJSON *e = v->child; e && !rc; e = e->next) {
        keys[k++] = e->string ? e->string : "";
        size_t was = push_key(c, e->string ? e->string : "");
        rc = utf8_text(c, e->string ? e->string : "", "the key");
        if (!rc)
            rc = walk(c, e);
        pop(c, was);
    }
    if (!rc && n > 1) {
        qsort(keys, n, sizeof *keys, cmp_keys);
        for (k = 1; k < n && !rc; k++)
            if (strcmp(keys[k - 1], keys[k]) == 0) {
                size_t was = push_key(c, keys[k]);
                rc = nc_err_set(c->err, NC_EFORMAT, "%s: %s: found the key twice, expected "
                                "each key once", c->path, c->where);
                pop(c, was);
            }
    }
    free(keys);
    return rc;
}

static int walk(ck *c, const cJSON *v)
{
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        return nc_err_set(c->err, NC_EFORMAT, "%s: %s: found a number beyond the range of a "
                          "double, expected a finite number (a report writes null instead)",
                          c->path, c->wlen ? c->where : "(the document)");
    if (cJSON_IsString(v))
        return utf8_text(c, v->valuestring ? v->valuestring : "", "the string");
    if (cJSON_IsObject(v))
        return walk_object(c, v);
    if (cJSON_IsArray(v)) {
        size_t i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            size_t was = push_index(c, i);
            int rc = walk(c, e);
            pop(c, was);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* --------------------------------------------------- typed fields */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* o.key as an object (NULL and no error when absent and optional). */
static int want_object(ck *c, const cJSON *o, const char *key, bool required, const cJSON **out)
{
    const cJSON *v = get(o, key);
    *out = cJSON_IsObject(v) ? v : NULL;
    if ((!v && !required) || cJSON_IsObject(v))
        return 0;
    return bad(c, key, v, "an object");
}

static int want_string(ck *c, const cJSON *o, const char *key, bool required, const char **out)
{
    const cJSON *v = get(o, key);
    *out = cJSON_IsString(v) ? v->valuestring : NULL;
    if ((!v && !required) || cJSON_IsString(v))
        return 0;
    return bad(c, key, v, "a string");
}

/* A whole number in [lo, hi]. */
static int want_whole(ck *c, const cJSON *o, const char *key, double lo, double hi, size_t *out)
{
    const cJSON *v = get(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        v->valuedouble != floor(v->valuedouble)) {
        char what[96];
        snprintf(what, sizeof what, "a whole number in [%.17g, %.17g]", lo, hi);
        return bad(c, key, v, what);
    }
    if (out)
        *out = (size_t)v->valuedouble;
    return 0;
}

/* Where present: a number (finite: the walk checked) or null. */
static int want_number_or_null(ck *c, const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);
    if (!v || cJSON_IsNumber(v) || cJSON_IsNull(v))
        return 0;
    return bad(c, key, v, "a number or null");
}

static bool hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

static int want_sha(ck *c, const cJSON *o, const char *key, bool required, const char **out)
{
    const char *s;
    int rc = want_string(c, o, key, required, &s);
    if (!rc && s && !hex64(s))
        rc = bad(c, key, get(o, key), "64 lowercase hexadecimal digits (a SHA-256)");
    if (out)
        *out = s;
    return rc;
}

/* -------------------------------------------------------- sections */

static int check_tool(ck *c, const cJSON *root)
{
    const cJSON *tool;
    const char *name, *version, *command;
    int rc = want_object(c, root, "tool", true, &tool);
    if (!rc)
        rc = want_string(c, tool, "name", true, &name);
    if (!rc && strcmp(name, "normcmp") != 0) {
        size_t was = push_key(c, "tool");
        rc = bad(c, "name", get(tool, "name"), "\"normcmp\"");
        pop(c, was);
    }
    if (!rc) {
        size_t was = push_key(c, "tool");
        rc = want_string(c, tool, "version", true, &version);
        pop(c, was);
    }
    if (!rc)
        rc = want_string(c, root, "command", true, &command);
    return rc;
}

static int check_config(ck *c, const cJSON *root, const char *sha)
{
    const cJSON *config;
    const char *s;
    int rc = want_object(c, root, "config", true, &config);
    size_t was = push_key(c, "config");
    if (!rc)
        rc = want_string(c, config, "name", true, &s);
    if (!rc)
        rc = want_string(c, config, "output", true, &s);
    if (!rc)
        rc = want_string(c, config, "source", false, &s);
    pop(c, was);
    char mine[65];
    if (!rc && !nc_report_config_sha256(config, mine))
        rc = nc_err_set(c->err, NC_ENOMEM, "%s: out of memory", c->path);
    if (!rc && strcmp(mine, sha) != 0)
        rc = nc_err_set(c->err, NC_EFORMAT, "%s: shard.config_sha256 does not match its "
                        "config block (was the report edited?)", c->path);
    return rc;
}

/* shard.layers: non-empty distinct names; shard.analysed: those of this
 * shard (i mod count = index - 1), in order. */
static int check_layer_lists(ck *c, const cJSON *sh, size_t index, size_t count)
{
    const cJSON *all = get(sh, "layers"), *mine = get(sh, "analysed");
    if (!cJSON_IsArray(all) || !all->child)
        return bad(c, "layers", all, "a non-empty array of layer names");
    if (!cJSON_IsArray(mine))
        return bad(c, "analysed", mine, "an array of layer names");
    size_t n = 0;
    for (const cJSON *e = all->child; e; e = e->next)
        n++;
    const char **names = malloc(n * sizeof *names);
    if (!names)
        return nc_err_set(c->err, NC_ENOMEM, "%s: out of memory for %zu layers", c->path, n);
    int rc = 0;
    size_t i = 0;
    const cJSON *m = mine->child;
    for (const cJSON *e = all->child; e && !rc; e = e->next, i++) {
        size_t was = push_key(c, "layers");
        if (!cJSON_IsString(e) || !e->valuestring[0]) {
            size_t w2 = push_index(c, i);
            rc = bad(c, NULL, e, "a non-empty layer name");
            pop(c, w2);
        }
        pop(c, was);
        if (rc)
            break;
        names[i] = e->valuestring;
        if (i % count != index - 1)
            continue;
        if (!cJSON_IsString(m) || strcmp(m->valuestring, e->valuestring) != 0) {
            char what[120];
            snprintf(what, sizeof what, "the layers i of shard.layers with i mod %zu = %zu, "
                     "in order", count, index - 1);
            rc = bad(c, "analysed", mine, what);
        }
        m = m ? m->next : NULL;
    }
    if (!rc && m)
        rc = bad(c, "analysed", mine, "only this shard's layers");
    if (!rc && n > 1) {
        qsort(names, n, sizeof *names, cmp_keys);
        for (i = 1; i < n && !rc; i++)
            if (strcmp(names[i - 1], names[i]) == 0)
                rc = nc_err_set(c->err, NC_EFORMAT, "%s: shard.layers: found a layer name twice "
                                "(\"%.60s\"), expected each layer once", c->path, names[i]);
    }
    free(names);
    return rc;
}

static int check_shard(ck *c, const cJSON *root, nc_shard_report *out)
{
    const cJSON *sh = get(root, "shard");
    size_t was = push_key(c, "shard");
    int rc = want_whole(c, sh, "count", 1, NC_SHARD_COUNT_MAX, &out->count);
    if (!rc)
        rc = want_whole(c, sh, "index", 1, (double)out->count, &out->index);
    if (!rc)
        rc = want_sha(c, sh, "config_sha256", true, &out->sha);
    if (!rc)
        rc = check_layer_lists(c, sh, out->index, out->count);
    pop(c, was);
    return rc;
}

/* The numbers of one fit (fits.<name>) and of one surrogate's Jacobian
 * (jacobian.surrogates.<name>) that merge reads. */
static int check_fit_numbers(ck *c, const cJSON *fits, const cJSON *surr)
{
    int rc = 0;
    for (int id = 0; id < NC_FIT_COUNT && !rc; id++) {
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        const cJSON *f, *j;
        size_t was = push_key(c, "fits");
        rc = want_object(c, fits, s->name, false, &f);
        size_t w2 = push_key(c, s->name);
        for (int q = 0; f && !rc && q < s->nparams; q++)
            rc = want_number_or_null(c, f, s->param[q]);
        static const char *const more[3] = {"rmse", "r2", "theory_alpha"};
        for (int q = 0; f && !rc && q < 3; q++)
            rc = want_number_or_null(c, f, more[q]);
        pop(c, w2);
        pop(c, was);
        was = push_key(c, "jacobian");
        size_t w3 = push_key(c, "surrogates");
        if (!rc)
            rc = want_object(c, surr, s->name, false, &j);
        w2 = push_key(c, s->name);
        if (!rc && j)
            rc = want_number_or_null(c, j, "backprop_rel_err");
        if (!rc && j)
            rc = want_number_or_null(c, j, "backprop_rel_err_se");
        pop(c, w2);
        pop(c, w3);
        pop(c, was);
    }
    return rc;
}

/* o.key (where present) as {"value"?, "se"?, "ci95"?: [lo, hi]} numbers. */
static int want_ci(ck *c, const cJSON *o, const char *key)
{
    const cJSON *v;
    int rc = want_object(c, o, key, false, &v);
    if (rc || !v)
        return rc;
    size_t was = push_key(c, key);
    rc = want_number_or_null(c, v, "value");
    if (!rc)
        rc = want_number_or_null(c, v, "se");
    const cJSON *ci = get(v, "ci95");
    if (!rc && ci && !(cJSON_IsArray(ci) && cJSON_GetArraySize(ci) == 2 &&
                       cJSON_IsNumber(ci->child) && cJSON_IsNumber(ci->child->next)))
        rc = bad(c, "ci95", ci, "an array of two numbers");
    pop(c, was);
    return rc;
}

/* A best_r2 / best_backprop block: "fit" a fit's name, "gaps" fit -> ci. */
static int want_best(ck *c, const cJSON *o, const char *key)
{
    const cJSON *v, *gaps = NULL;
    int rc = want_object(c, o, key, false, &v);
    if (rc || !v)
        return rc;
    size_t was = push_key(c, key);
    const char *fit;
    rc = want_string(c, v, "fit", false, &fit);
    if (!rc && fit && !nc_surrogate_find(fit))
        rc = bad(c, "fit", get(v, "fit"), "the name of a fit");
    if (!rc)
        rc = want_object(c, v, "gaps", false, &gaps);
    size_t w2 = push_key(c, "gaps");
    for (int k = 0; gaps && !rc && k < NC_FIT_COUNT; k++)
        rc = want_ci(c, gaps, nc_surrogate_get((nc_fit_id)k)->name);
    pop(c, w2);
    pop(c, was);
    return rc;
}

/* layers[].bootstrap: what the run-level block reads (report/run_block.c). */
static int check_boot(ck *c, const cJSON *l)
{
    const cJSON *b, *rr = NULL;
    int rc = want_object(c, l, "bootstrap", false, &b);
    if (rc || !b)
        return rc;
    size_t was = push_key(c, "bootstrap");
    const char *st;
    rc = want_string(c, b, "status", true, &st);
    static const char *const ci[5] = {"residual_removed", "slope_ratio", "alpha", "gamma",
                                      "alpha_gamma"};
    for (int k = 0; !rc && k < 5; k++)
        rc = want_ci(c, b, ci[k]);
    if (!rc)
        rc = want_best(c, b, "best_r2");
    if (!rc)
        rc = want_best(c, b, "best_backprop");
    if (!rc)
        rc = want_object(c, b, "run_replicates", false, &rr);
    size_t w2 = push_key(c, "run_replicates");
    size_t n = 0;
    if (!rc && rr)
        rc = want_whole(c, rr, "n", 0, NC_BOOT_RUN_REPLICATES, &n);
    static const char *const series[4] = {"log_inv_std", "log_alpha", "log_alpha_gamma",
                                          "log_affine_slope"};
    for (int k = 0; rr && n && !rc && k < 4; k++) {
        const cJSON *a = get(rr, series[k]);
        bool ok = cJSON_IsArray(a) && (size_t)cJSON_GetArraySize(a) == n;
        for (const cJSON *e = ok ? a->child : NULL; e; e = e->next)
            ok = ok && cJSON_IsNumber(e);
        if (!ok) {
            char what[64];
            snprintf(what, sizeof what, "an array of %zu numbers", n);
            rc = bad(c, series[k], a, what);
        }
    }
    pop(c, w2);
    pop(c, was);
    return rc;
}

/* A swap block's surrogate entries (docs/swap.md: layers[].swap, the
 * top-level swap's all and roles[]): numbers or null. */
static int want_swap_entries(ck *c, const cJSON *o)
{
    static const char *const sur[3] = {"dyt", "dyt_alpha0", "dyisru"};
    static const char *const keys[6] = {"alpha", "C", "delta", "delta_se", "accuracy_delta",
                                        "accuracy_delta_se"};
    int rc = 0;
    for (int k = 0; !rc && k < 3; k++) {
        const cJSON *e;
        rc = want_object(c, o, sur[k], false, &e);
        size_t was = push_key(c, sur[k]);
        for (int q = 0; e && !rc && q < 6; q++)
            rc = want_number_or_null(c, e, keys[q]);
        pop(c, was);
    }
    return rc;
}

/* layers[].swap: unit, current and the entries. */
static int want_swap_layer(ck *c, const cJSON *l)
{
    const cJSON *sw;
    int rc = want_object(c, l, "swap", false, &sw);
    if (rc || !sw)
        return rc;
    size_t was = push_key(c, "swap");
    const char *s;
    rc = want_string(c, sw, "unit", true, &s);
    const cJSON *cur = get(sw, "current");
    if (!rc && !cJSON_IsBool(cur))
        rc = bad(c, "current", cur, "true or false");
    if (!rc)
        rc = want_swap_entries(c, sw);
    pop(c, was);
    return rc;
}

/* layers[]'s source, group, role, depth and drop-in numbers (the run
 * block's grouping, docs/dropin.md's alpha by role). */
static int check_layer_more(ck *c, const cJSON *l)
{
    const char *s;
    int rc = want_string(c, l, "source", false, &s);
    if (!rc)
        rc = want_string(c, l, "group", false, &s);
    if (!rc)
        rc = want_string(c, l, "role", false, &s);
    if (!rc && get(l, "depth"))
        rc = want_whole(c, l, "depth", 0, 9007199254740992.0, NULL);
    const cJSON *dr;
    if (!rc)
        rc = want_object(c, l, "dropin", false, &dr);
    size_t was = push_key(c, "dropin");
    static const char *const kinds[2] = {"dyt", "dyt_alpha0"};
    for (int k = 0; dr && !rc && k < 2; k++) {
        const cJSON *f;
        rc = want_object(c, dr, kinds[k], false, &f);
        size_t w2 = push_key(c, kinds[k]);
        if (!rc && f)
            rc = want_number_or_null(c, f, "alpha");
        if (!rc && f)
            rc = want_number_or_null(c, f, "rmse_vs_real");
        if (!rc && f)
            rc = want_number_or_null(c, f, "rmse_vs_recomputed");
        if (!rc && f)
            rc = want_string(c, f, "alpha0_rule", false, &s);
        pop(c, w2);
    }
    pop(c, was);
    if (!rc)
        rc = want_swap_layer(c, l);
    return rc ? rc : check_boot(c, l);
}

/* The top-level swap block (docs/swap.md), where present: what merge
 * copies and the run-level verdict reads. */
static int check_swap(ck *c, const cJSON *root)
{
    const cJSON *sw, *all = NULL;
    int rc = want_object(c, root, "swap", false, &sw);
    if (rc || !sw)
        return rc;
    size_t was = push_key(c, "swap");
    const char *s;
    static const char *const strs[3] = {"file", "loss", "unit"};
    for (int k = 0; !rc && k < 3; k++)
        rc = want_string(c, sw, strs[k], true, &s);
    const cJSON *cur = get(sw, "current");
    if (!rc && !cJSON_IsBool(cur))
        rc = bad(c, "current", cur, "true or false");
    if (!rc)
        rc = want_object(c, sw, "all", false, &all);
    size_t w2 = push_key(c, "all");
    if (!rc && all)
        rc = want_swap_entries(c, all);
    pop(c, w2);
    const cJSON *roles = get(sw, "roles");
    if (!rc && roles && !cJSON_IsArray(roles))
        rc = bad(c, "roles", roles, "an array");
    size_t i = 0;
    for (const cJSON *r = roles ? roles->child : NULL; r && !rc; r = r->next, i++) {
        size_t w3 = push_key(c, "roles"), w4 = push_index(c, i);
        rc = cJSON_IsObject(r) ? want_string(c, r, "role", true, &s)
                               : bad(c, NULL, r, "an object");
        if (!rc)
            rc = want_swap_entries(c, r);
        pop(c, w4);
        pop(c, w3);
    }
    pop(c, was);
    return rc;
}

/* One layer block: what merge reads from it (merge.c's figures plan and
 * the run-level block). */
static int check_layer(ck *c, const cJSON *l, const char *name)
{
    const char *s;
    int rc = want_string(c, l, "name", true, &s);
    if (!rc && strcmp(s, name) != 0)
        rc = bad(c, "name", get(l, "name"), "the layer shard.analysed names here");
    if (!rc)
        rc = want_string(c, l, "norm", true, &s);
    if (!rc && strcmp(s, "layernorm") != 0 && strcmp(s, "rmsnorm") != 0)
        rc = bad(c, "norm", get(l, "norm"), "\"layernorm\" or \"rmsnorm\"");
    const cJSON *eps = get(l, "eps");
    if (!rc && !(cJSON_IsNumber(eps) && eps->valuedouble >= 0))
        rc = bad(c, "eps", eps, "a number >= 0");
    if (!rc)
        rc = want_whole(c, l, "tokens", 0, 9007199254740992.0, NULL);
    if (!rc)
        rc = want_whole(c, l, "dim", 0, 9007199254740992.0, NULL);
    const cJSON *st, *fd, *fits, *jac, *surr = NULL;
    if (!rc)
        rc = want_object(c, l, "input_stats", false, &st);
    static const char *const stats[6] = {"mean", "std", "rms", "rho", "min", "max"};
    size_t was = push_key(c, "input_stats");
    for (int q = 0; st && !rc && q < 6; q++)
        rc = want_number_or_null(c, st, stats[q]);
    pop(c, was);
    if (!rc)
        rc = want_object(c, l, "fit_data", false, &fd);
    was = push_key(c, "fit_data");
    if (!rc && fd && get(fd, "points"))
        rc = want_whole(c, fd, "points", 0, 9007199254740992.0, NULL);
    pop(c, was);
    if (!rc)
        rc = want_object(c, l, "fits", false, &fits);
    if (!rc)
        rc = want_object(c, l, "jacobian", false, &jac);
    was = push_key(c, "jacobian");
    if (!rc && jac)
        rc = want_object(c, jac, "surrogates", false, &surr);
    pop(c, was);
    if (!rc)
        rc = check_fit_numbers(c, fits, surr);
    return rc ? rc : check_layer_more(c, l);
}

static int check_layers(ck *c, const cJSON *root)
{
    const cJSON *layers = get(root, "layers");
    const cJSON *mine = get(get(root, "shard"), "analysed");
    if (!cJSON_IsArray(layers))
        return bad(c, "layers", layers, "an array of layer blocks");
    int rc = 0;
    size_t i = 0;
    const cJSON *m = mine->child;
    for (const cJSON *l = layers->child; l && !rc; l = l->next, m = m ? m->next : NULL, i++) {
        size_t was = push_key(c, "layers");
        size_t w2 = push_index(c, i);
        if (!m)
            rc = bad(c, NULL, l, "no more layers than shard.analysed lists");
        else if (!cJSON_IsObject(l))
            rc = bad(c, NULL, l, "a layer block (an object)");
        else
            rc = check_layer(c, l, m->valuestring);
        pop(c, w2);
        pop(c, was);
    }
    if (!rc && m)
        rc = nc_err_set(c->err, NC_EFORMAT, "%s: layers: found %zu layer blocks, expected one "
                        "per name of shard.analysed (\"%.60s\" is missing: did its run fail?)",
                        c->path, i, m->valuestring);
    return rc;
}

static bool analysed(const cJSON *mine, const char *name)
{
    for (const cJSON *m = mine->child; m; m = m->next)
        if (strcmp(m->valuestring, name) == 0)
            return true;
    return false;
}

static int check_inputs(ck *c, const cJSON *root)
{
    const cJSON *inputs = get(root, "inputs");
    const cJSON *mine = get(get(root, "shard"), "analysed");
    if (!cJSON_IsArray(inputs))
        return bad(c, "inputs", inputs, "an array of input entries");
    int rc = 0;
    size_t i = 0;
    for (const cJSON *in = inputs->child; in && !rc; in = in->next, i++) {
        size_t was = push_key(c, "inputs");
        size_t w2 = push_index(c, i);
        const char *s;
        if (!cJSON_IsObject(in))
            rc = bad(c, NULL, in, "an input entry (an object)");
        if (!rc)
            rc = want_string(c, in, "path", true, &s);
        if (!rc)
            rc = want_string(c, in, "format", true, &s);
        if (!rc)
            rc = want_string(c, in, "layer", true, &s);
        if (!rc && !analysed(mine, s))
            rc = bad(c, "layer", get(in, "layer"), "a layer of shard.analysed");
        if (!rc)
            rc = want_sha(c, in, "sha256", false, NULL);
        if (!rc && get(in, "bytes"))
            rc = want_whole(c, in, "bytes", 0, 9007199254740992.0, NULL);
        pop(c, w2);
        pop(c, was);
    }
    return rc;
}

/* A name merge may create in its output folder. */
static bool plain_file_name(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n <= 255 && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
           strcmp(s, "report.json") != 0;
}

static int check_outputs(ck *c, const cJSON *root)
{
    const cJSON *outs = get(root, "outputs");
    if (!cJSON_IsArray(outs))
        return bad(c, "outputs", outs, "an array of file names");
    size_t n = 0;
    for (const cJSON *o = outs->child; o; o = o->next)
        n++;
    if (n > NC_SHARD_MAX_OUTPUTS)
        return nc_err_set(c->err, NC_EFORMAT, "%s: outputs: found %zu files, expected at most "
                          "%d", c->path, n, NC_SHARD_MAX_OUTPUTS);
    const char **names = malloc((n ? n : 1) * sizeof *names);
    if (!names)
        return nc_err_set(c->err, NC_ENOMEM, "%s: out of memory for %zu outputs", c->path, n);
    int rc = 0;
    size_t i = 0;
    for (const cJSON *o = outs->child; o && !rc; o = o->next, i++) {
        size_t was = push_key(c, "outputs");
        size_t w2 = push_index(c, i);
        if (!cJSON_IsString(o) || !plain_file_name(o->valuestring))
            rc = bad(c, NULL, o, "a plain file name (no '/', not '.', '..' or report.json, at "
                     "most 255 bytes)");
        else
            names[i] = o->valuestring;
        pop(c, w2);
        pop(c, was);
    }
    if (!rc && n > 1) {
        qsort(names, n, sizeof *names, cmp_keys);
        for (i = 1; i < n && !rc; i++)
            if (strcmp(names[i - 1], names[i]) == 0)
                rc = nc_err_set(c->err, NC_EFORMAT, "%s: outputs: found '%.80s' twice, expected "
                                "each file once", c->path, names[i]);
    }
    free(names);
    return rc;
}

int nc_shard_report_parse(const char *text, size_t len, const char *path, nc_shard_report *out,
                          nc_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = nc_json_parse_doc(text, len, path, NC_EFORMAT, "", err);
    if (!root)
        return err && err->code ? err->code : NC_EFORMAT;
    ck c = {.path = path, .err = err};
    int rc = 0;
    if (!cJSON_IsObject(root) || !cJSON_IsObject(get(root, "shard")))
        rc = nc_err_set(err, NC_EFORMAT, "%s: shard: missing (expected the report of 'normcmp "
                        "run CONFIG --shard K/N')", path);
    if (!rc)
        rc = walk(&c, root);
    if (!rc)
        rc = check_tool(&c, root);
    if (!rc)
        rc = check_shard(&c, root, out);
    if (!rc)
        rc = check_config(&c, root, out->sha);
    if (!rc)
        rc = check_layers(&c, root);
    if (!rc)
        rc = check_inputs(&c, root);
    if (!rc)
        rc = check_outputs(&c, root);
    if (!rc)
        rc = check_swap(&c, root);
    if (rc) {
        cJSON_Delete(root);
        memset(out, 0, sizeof *out);
        return rc;
    }
    out->root = root;
    return 0;
}

void nc_shard_report_free(nc_shard_report *r)
{
    cJSON_Delete(r->root);
    memset(r, 0, sizeof *r);
}
