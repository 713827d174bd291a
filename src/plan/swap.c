/*
 * swap.c - reading the swap test's results file (swap.h; docs/swap.md).
 *
 * Only what the report shows is read: the loss's name and unit, the
 * batches, the original loss, and per layer, role and for all layers the
 * paired change of the loss (and of the accuracy) with its standard error,
 * and each layer's drop-in parameter. Each field read is checked; fields
 * not read are left alone (the file is the swap test's to extend).
 */
#include "plan/swap.h"

#include <cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/jsondoc.h"
#include "util/readfile.h"
#include "util/utf8.h"

#define SWAP_MAX_BYTES ((uint64_t)64 << 20) /* a 100k-layer model's results fit */

typedef struct rd {
    const char *path;
    nc_err *err;
} rd;

static int bad(rd *r, const char *field, const char *what)
{
    return nc_err_set(r->err, NC_EFORMAT, "%s: %s: expected %s (docs/swap.md)", r->path, field,
                      what);
}

/* o.key: a finite number, or NAN when null or absent and optional. */
static int num(rd *r, const cJSON *o, const char *key, const char *where, bool required,
               double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NAN;
    if ((!v && !required) || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        char f[256];
        snprintf(f, sizeof f, "%s%s", where, key);
        return bad(r, f, "a finite number or null");
    }
    *out = v->valuedouble;
    return 0;
}

/* o.key: a UTF-8 string (NULL when absent and optional). */
static int text(rd *r, const cJSON *o, const char *key, const char *where, bool required,
                const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    *out = NULL;
    if (!v && !required)
        return 0;
    char f[256];
    snprintf(f, sizeof f, "%s%s", where, key);
    if (!cJSON_IsString(v))
        return bad(r, f, "a string");
    if (!nc_utf8_valid(v->valuestring, strlen(v->valuestring), NULL))
        return bad(r, f, "UTF-8 text");
    *out = v->valuestring;
    return 0;
}

/* A replacement entry of the surrogates in swap (layers[].swap,
 * roles[].swap, all.swap) into e[]; the parameter from key (or none). */
static int entries(rd *r, const nc_swap *s, const cJSON *swap, const char *where,
                   bool with_param, nc_swap_entry *e)
{
    for (int k = 0; k < NC_DROPIN_COUNT; k++) {
        e[k] = (nc_swap_entry){false, NAN, NAN, NAN, NAN, NAN};
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(swap, nc_dropin_name((nc_dropin_kind)k));
        if (!o || !s->has[k])
            continue;
        char w[256];
        snprintf(w, sizeof w, "%s.%s.", where, nc_dropin_name((nc_dropin_kind)k));
        if (!cJSON_IsObject(o))
            return bad(r, w, "an object");
        int rc = num(r, o, "delta", w, false, &e[k].delta);
        if (!rc)
            rc = num(r, o, "delta_se", w, false, &e[k].delta_se);
        if (!rc)
            rc = num(r, o, "accuracy_delta", w, false, &e[k].acc_delta);
        if (!rc)
            rc = num(r, o, "accuracy_delta_se", w, false, &e[k].acc_delta_se);
        if (!rc && with_param)
            rc = num(r, o, nc_dropin_param((nc_dropin_kind)k), w, false, &e[k].param);
        if (rc)
            return rc;
        e[k].ok = isfinite(e[k].delta);
    }
    return 0;
}

/* The header: format, version, loss, batches, original, surrogates. */
static int header(rd *r, const cJSON *root, nc_swap *s)
{
    const char *fmt, *name, *unit;
    int rc = text(r, root, "format", "", true, &fmt);
    if (!rc && strcmp(fmt, "normcmp swap test") != 0)
        return bad(r, "format", "\"normcmp swap test\"");
    double v, b, ex;
    if (!rc && (rc = num(r, root, "version", "", true, &v)) == 0 && v != 1)
        return bad(r, "version", "1 (this normcmp reads version 1)");
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(root, "loss");
    if (!rc && !cJSON_IsObject(loss))
        return bad(r, "loss", "an object with name and unit");
    if (!rc)
        rc = text(r, loss, "name", "loss.", true, &name);
    if (!rc)
        rc = text(r, loss, "unit", "loss.", true, &unit);
    if (!rc)
        rc = num(r, root, "batches", "", true, &b);
    if (!rc && !(b >= 1 && b <= 1e12 && b == floor(b)))
        return bad(r, "batches", "a whole number >= 1");
    if (!rc)
        rc = num(r, root, "examples", "", false, &ex);
    if (rc)
        return rc;
    snprintf(s->loss, sizeof s->loss, "%s", name);
    snprintf(s->unit, sizeof s->unit, "%s", unit);
    s->batches = (size_t)b;
    s->examples = isfinite(ex) && ex >= 0 ? (size_t)ex : 0;
    const cJSON *orig = cJSON_GetObjectItemCaseSensitive(root, "original");
    if (!cJSON_IsObject(orig))
        return bad(r, "original", "an object");
    if ((rc = num(r, orig, "loss", "original.", true, &s->loss0)) ||
        (rc = num(r, orig, "loss_se", "original.", false, &s->loss0_se)) ||
        (rc = num(r, orig, "accuracy", "original.", false, &s->acc0)))
        return rc;
    const cJSON *sur = cJSON_GetObjectItemCaseSensitive(root, "surrogates"), *e;
    if (!cJSON_IsArray(sur))
        return bad(r, "surrogates", "an array of surrogate names");
    cJSON_ArrayForEach(e, sur)
    {
        int k = 0;
        while (k < NC_DROPIN_COUNT &&
               !(cJSON_IsString(e) && strcmp(e->valuestring, nc_dropin_name((nc_dropin_kind)k)) == 0))
            k++;
        if (k == NC_DROPIN_COUNT)
            return bad(r, "surrogates[]", "\"dyt\", \"dyt_alpha0\" or \"dyisru\"");
        s->has[k] = true;
    }
    return 0;
}

static int read_layers(rd *r, const cJSON *root, nc_swap *s)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers"), *l;
    if (!cJSON_IsArray(layers))
        return bad(r, "layers", "an array of layers");
    size_t n = (size_t)cJSON_GetArraySize(layers), k = 0;
    if (!(s->layer = calloc(n ? n : 1, sizeof *s->layer)))
        return nc_err_set(r->err, NC_ENOMEM, "%s: out of memory", r->path);
    cJSON_ArrayForEach(l, layers)
    {
        char w[64];
        snprintf(w, sizeof w, "layers[%zu].", k);
        const char *name;
        int rc = cJSON_IsObject(l) ? text(r, l, "name", w, true, &name) : bad(r, w, "an object");
        if (rc)
            return rc;
        if (!(s->layer[k].name = strdup(name)))
            return nc_err_set(r->err, NC_ENOMEM, "%s: out of memory", r->path);
        s->nlayers = ++k;
        snprintf(w, sizeof w, "layers[%zu].swap", k - 1);
        if ((rc = entries(r, s, cJSON_GetObjectItemCaseSensitive(l, "swap"), w, true,
                          s->layer[k - 1].s)))
            return rc;
    }
    return 0;
}

static int read_roles(rd *r, const cJSON *root, nc_swap *s)
{
    const cJSON *roles = cJSON_GetObjectItemCaseSensitive(root, "roles"), *g;
    if (roles && !cJSON_IsArray(roles))
        return bad(r, "roles", "an array of roles");
    size_t n = roles ? (size_t)cJSON_GetArraySize(roles) : 0, k = 0;
    if (!(s->role = calloc(n ? n : 1, sizeof *s->role)))
        return nc_err_set(r->err, NC_ENOMEM, "%s: out of memory", r->path);
    cJSON_ArrayForEach(g, roles)
    {
        char w[64];
        snprintf(w, sizeof w, "roles[%zu].", k);
        const char *role;
        int rc = cJSON_IsObject(g) ? text(r, g, "role", w, true, &role) : bad(r, w, "an object");
        if (rc)
            return rc;
        if (!(s->role[k].role = strdup(role)))
            return nc_err_set(r->err, NC_ENOMEM, "%s: out of memory", r->path);
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(g, "layers");
        s->role[k].nlayers = cJSON_IsArray(ls) ? (size_t)cJSON_GetArraySize(ls) : 0;
        s->nroles = ++k;
        snprintf(w, sizeof w, "roles[%zu].swap", k - 1);
        if ((rc = entries(r, s, cJSON_GetObjectItemCaseSensitive(g, "swap"), w, false,
                          s->role[k - 1].s)))
            return rc;
    }
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(root, "all");
    return entries(r, s, cJSON_GetObjectItemCaseSensitive(all, "swap"), "all.swap", false,
                   s->all);
}

int nc_swap_read(const char *path, nc_swap *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    rd r = {path, err};
    char *buf = NULL;
    size_t len = 0;
    const nc_infile in = {.noun = "swap test results file", .max_bytes = SWAP_MAX_BYTES,
                          .dirfd = AT_FDCWD};
    int rc = nc_infile_read(path, &in, &buf, &len, err);
    if (rc)
        return rc;
    cJSON *root = nc_json_parse_doc(buf, len, path, NC_EFORMAT,
                                    " (expected the swap test's results, docs/swap.md)", err);
    free(buf);
    if (!root)
        return err->code;
    if (!(out->path = strdup(path)))
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    else if (!cJSON_IsObject(root))
        rc = bad(&r, "the top level", "an object");
    if (!rc)
        rc = header(&r, root, out);
    if (!rc)
        rc = read_layers(&r, root, out);
    if (!rc)
        rc = read_roles(&r, root, out);
    cJSON_Delete(root);
    if (rc)
        nc_swap_free(out);
    return rc;
}

const nc_swap_layer *nc_swap_find(const nc_swap *s, const char *name)
{
    for (size_t k = 0; s && k < s->nlayers; k++)
        if (strcmp(s->layer[k].name, name) == 0)
            return &s->layer[k];
    return NULL;
}

void nc_swap_free(nc_swap *s)
{
    if (!s)
        return;
    for (size_t k = 0; k < s->nlayers; k++)
        free(s->layer[k].name);
    for (size_t k = 0; k < s->nroles; k++)
        free(s->role[k].role);
    free(s->layer);
    free(s->role);
    free(s->path);
    memset(s, 0, sizeof *s);
}
