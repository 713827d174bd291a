/*
 * config.c - reading and validating experiment configs (config.h).
 *
 * The validator walks the cJSON tree with the key path of the node in hand,
 * so every message can name it: "<file>: layers[2].eps: expected a number
 * >= 0". Each object lists its allowed keys; anything else is an error.
 */
#include "report/config.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sweep.h"

#define CONFIG_MAX_BYTES (16u << 20)
#define PATH_MAX_LEN 192

const char *nc_comp_name(int comp)
{
    static const char *const names[NC_COMP_COUNT] = {"output", "weight", "bias", "grad_output"};
    return comp >= 0 && comp < NC_COMP_COUNT ? names[comp] : "?";
}

/* ------------------------------------------------------------- basics */

int nc_config_alloc(const char *source, nc_config **out, nc_err *err)
{
    nc_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg || !(cfg->source = strdup(source))) {
        free(cfg);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    cfg->norm = NC_LAYERNORM;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        cfg->fit[k] = true;
    cfg->amp_dyt.rule = NC_AMP_FREE;
    cfg->amp_dyisru.rule = NC_AMP_AUTO;
    cfg->amp_derf.rule = NC_AMP_FREE;
    cfg->seed = 1;
    cfg->jacobian.enabled = true;
    cfg->sweep.gamma = (nc_amp){NC_AMP_VALUE, 1.0};
    cfg->sweep.scale = (nc_amp){NC_AMP_AUTO, 0};
    cfg->sweep.figure = cfg->sweep.csv = true;
    cfg->sweep.auto_steps = 200;
    *out = cfg;
    return 0;
}

int nc_config_add_layer(nc_config *cfg, nc_config_layer **layer, nc_err *err)
{
    nc_config_layer *grown = realloc(cfg->layers, (cfg->nlayers + 1) * sizeof *grown);
    if (!grown)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    cfg->layers = grown;
    *layer = &cfg->layers[cfg->nlayers++];
    memset(*layer, 0, sizeof **layer);
    return 0;
}

int nc_config_add_figure(nc_config *cfg, nc_fig_spec **spec, nc_err *err)
{
    nc_fig_spec *grown = realloc(cfg->figures, (cfg->nfigures + 1) * sizeof *grown);
    if (!grown)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    cfg->figures = grown;
    *spec = &cfg->figures[cfg->nfigures++];
    memset(*spec, 0, sizeof **spec);
    return 0;
}

void nc_config_free(nc_config *cfg)
{
    if (!cfg)
        return;
    for (size_t k = 0; k < cfg->nfigures; k++)
        nc_fig_spec_clear(&cfg->figures[k]);
    free(cfg->figures);
    free(cfg->sweep.alpha);
    free(cfg->sweep.C);
    for (size_t k = 0; k < cfg->sweep.nlayers; k++)
        free(cfg->sweep.layers[k]);
    free(cfg->sweep.layers);
    for (size_t k = 0; k < cfg->nlayers; k++) {
        nc_config_layer *l = &cfg->layers[k];
        free(l->label);
        free(l->file);
        for (size_t j = 0; j < l->ntensors; j++)
            free(l->tensors[j]);
        free(l->tensors);
        for (int c = 0; c < NC_COMP_COUNT; c++)
            free(l->comp[c]);
        free(l->synth_preset);
    }
    free(cfg->layers);
    free(cfg->source);
    free(cfg->name);
    free(cfg->output);
    free(cfg);
}

nc_norm_kind nc_config_layer_norm(const nc_config *cfg, const nc_config_layer *layer)
{
    return layer->has_norm ? layer->norm : cfg->norm;
}

double nc_config_layer_eps(const nc_config *cfg, const nc_config_layer *layer)
{
    if (layer->has_eps)
        return layer->eps;
    if (cfg->has_eps)
        return cfg->eps;
    return nc_config_layer_norm(cfg, layer) == NC_RMSNORM ? NC_RMSNORM_EPS : NC_LAYERNORM_EPS;
}

bool nc_amp_parse(const char *s, nc_amp *amp)
{
    static const struct {
        const char *name;
        nc_amp_rule rule;
    } rules[] = {{"free", NC_AMP_FREE},
                 {"sqrt(d)", NC_AMP_SQRT_D},
                 {"sqrt(d-1)", NC_AMP_SQRT_D_MINUS_1},
                 {"auto", NC_AMP_AUTO}};
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++)
        if (strcmp(s, rules[k].name) == 0) {
            *amp = (nc_amp){rules[k].rule, 0};
            return true;
        }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s && *end == '\0' && errno == 0 && isfinite(v) && v > 0) {
        *amp = (nc_amp){NC_AMP_VALUE, v};
        return true;
    }
    return false;
}

static void fit_names(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < NC_FIT_COUNT && used < cap; k++) {
        int w = snprintf(buf + used, cap - used, "%s%s", k ? ", " : "",
                         nc_surrogate_get((nc_fit_id)k)->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int nc_fits_parse(const char *list, bool fit[NC_FIT_COUNT], nc_err *err)
{
    for (int k = 0; k < NC_FIT_COUNT; k++)
        fit[k] = false;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (n == 0 || n >= sizeof name)
            return nc_err_set(err, NC_EINVAL, "--fits: empty or overlong name in '%s'", list);
        memcpy(name, p, n);
        name[n] = '\0';
        const nc_surrogate *s = nc_surrogate_find(name);
        if (!s) {
            char names[256];
            fit_names(names, sizeof names);
            return nc_err_set(err, NC_EINVAL, "--fits: unknown fit '%s' (expected some of: %s)",
                              name, names);
        }
        fit[s->id] = true;
        p += n + (e ? 1 : 0);
    }
    return 0;
}

/* -------------------------------------------------------- the walker */

typedef struct walker {
    const char *file;
    char dir[4096]; /* the config's folder, for relative paths ("" = cwd) */
    nc_err *err;
} walker;

/* parent.key, cut at PATH_MAX_LEN (only ever used in messages). */
static void child_path(char *out, const char *parent, const char *key)
{
    size_t n = strlen(parent);
    if (n >= PATH_MAX_LEN)
        n = PATH_MAX_LEN - 1;
    memcpy(out, parent, n);
    if (n && n + 1 < PATH_MAX_LEN)
        out[n++] = '.';
    size_t k = strlen(key);
    if (k > PATH_MAX_LEN - 1 - n)
        k = PATH_MAX_LEN - 1 - n;
    memcpy(out + n, key, k);
    out[n + k] = '\0';
}

static int bad(walker *w, const char *path, const char *expected)
{
    return nc_err_set(w->err, NC_EINVAL, "%s: %s: expected %s", w->file, path, expected);
}

/* Every key of obj must be in allowed (NULL-terminated), once. */
static int check_keys(walker *w, const cJSON *obj, const char *path, const char *const *allowed)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        bool known = false;
        for (const char *const *a = allowed; *a; a++)
            known = known || strcmp(c->string, *a) == 0;
        char p[PATH_MAX_LEN];
        child_path(p, path, c->string);
        if (!known) {
            char list[512];
            size_t used = 0;
            list[0] = '\0';
            for (const char *const *a = allowed; *a && used < sizeof list; a++) {
                int n = snprintf(list + used, sizeof list - used, "%s%s",
                                 a == allowed ? "" : ", ", *a);
                if (n < 0)
                    break;
                used += (size_t)n;
            }
            return nc_err_set(w->err, NC_EINVAL, "%s: %s: unknown key (expected one of: %s)",
                              w->file, p, list);
        }
        for (const cJSON *d = c->next; d; d = d->next)
            if (strcmp(c->string, d->string) == 0)
                return nc_err_set(w->err, NC_EINVAL, "%s: %s: duplicate key", w->file, p);
    }
    return 0;
}

static int get_string(walker *w, const cJSON *obj, const char *key, const char *path,
                      char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[PATH_MAX_LEN];
    child_path(p, path, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return bad(w, p, "a string");
    if (!v->valuestring[0])
        return bad(w, p, "a non-empty string");
    free(*out);
    if (!(*out = strdup(v->valuestring)))
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    return 0;
}

static int get_number(walker *w, const cJSON *obj, const char *key, const char *path,
                      double lo, double hi, double *out, bool *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[PATH_MAX_LEN], what[96];
    child_path(p, path, key);
    if (isinf(hi))
        snprintf(what, sizeof what, "a number >= %g", lo);
    else
        snprintf(what, sizeof what, "a number in [%g, %g]", lo, hi);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return bad(w, p, what);
    *out = v->valuedouble;
    if (present)
        *present = true;
    return 0;
}

static int get_uint(walker *w, const cJSON *obj, const char *key, const char *path, double lo,
                    double hi, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[PATH_MAX_LEN], what[96];
    child_path(p, path, key);
    snprintf(what, sizeof what, "a whole number in [%.0f, %.0f]", lo, hi);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
        v->valuedouble != floor(v->valuedouble))
        return bad(w, p, what);
    *out = (uint64_t)v->valuedouble;
    return 0;
}

static int get_bool(walker *w, const cJSON *obj, const char *key, const char *path, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[PATH_MAX_LEN];
    child_path(p, path, key);
    if (!cJSON_IsBool(v))
        return bad(w, p, "true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_norm(walker *w, const cJSON *obj, const char *path, nc_norm_kind *norm,
                    bool *present)
{
    char *s = NULL;
    int rc = get_string(w, obj, "norm", path, &s);
    if (rc || !s)
        return rc;
    char p[PATH_MAX_LEN];
    child_path(p, path, "norm");
    bool ok = nc_norm_parse(s, norm);
    free(s);
    if (!ok)
        return bad(w, p, "\"layernorm\" or \"rmsnorm\"");
    if (present)
        *present = true;
    return 0;
}

/* An input path: absolute, or relative to the config's folder. */
static int resolve(walker *w, const char *p, char **out)
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

/* ---------------------------------------------------------- sections */

static int parse_amplitude(walker *w, const cJSON *obj, nc_config *cfg)
{
    static const char *const keys[] = {"dyt", "dyisru", "derf", NULL};
    if (!cJSON_IsObject(obj))
        return bad(w, "amplitude", "an object with keys dyt, dyisru, derf");
    int rc = check_keys(w, obj, "amplitude", keys);
    if (rc)
        return rc;
    nc_amp *dst[3] = {&cfg->amp_dyt, &cfg->amp_dyisru, &cfg->amp_derf};
    for (int k = 0; k < 3; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, keys[k]);
        if (!v)
            continue;
        char p[PATH_MAX_LEN];
        child_path(p, "amplitude", keys[k]);
        const char *what = "\"free\", \"sqrt(d)\", \"sqrt(d-1)\", \"auto\" or a number > 0";
        if (cJSON_IsNumber(v)) {
            if (!(v->valuedouble > 0) || !isfinite(v->valuedouble))
                return bad(w, p, what);
            *dst[k] = (nc_amp){NC_AMP_VALUE, v->valuedouble};
        } else if (!cJSON_IsString(v) || !nc_amp_parse(v->valuestring, dst[k])) {
            return bad(w, p, what);
        }
        if (k == 1 && dst[k]->rule == NC_AMP_FREE)
            return bad(w, p, "a fixed amplitude (the free-scale DyISRU is the fit "
                             "\"dyisru_free\")");
    }
    return 0;
}

static int parse_fits(walker *w, const cJSON *arr, nc_config *cfg)
{
    if (!cJSON_IsArray(arr))
        return bad(w, "fits", "an array of fit names");
    bool fit[NC_FIT_COUNT] = {false};
    int k = 0;
    for (const cJSON *v = arr->child; v; v = v->next, k++) {
        char p[PATH_MAX_LEN];
        snprintf(p, sizeof p, "fits[%d]", k);
        const nc_surrogate *s = cJSON_IsString(v) ? nc_surrogate_find(v->valuestring) : NULL;
        if (!s) {
            char names[256], what[300];
            fit_names(names, sizeof names);
            snprintf(what, sizeof what, "one of: %s", names);
            return bad(w, p, what);
        }
        fit[s->id] = true;
    }
    memcpy(cfg->fit, fit, sizeof fit);
    return 0;
}

static int parse_synth(walker *w, const cJSON *obj, const char *path, nc_config *cfg,
                       nc_config_layer *l)
{
    static const char *const keys[] = {"preset", "tokens", "dim", "seed", "scale_median",
                                       "scale_spread", "outliers", "outlier_mag",
                                       "outlier_spread", "nu", "offset_std", "affine", NULL};
    if (!cJSON_IsObject(obj))
        return bad(w, path, "an object");
    int rc = check_keys(w, obj, path, keys);
    if (rc)
        return rc;
    if ((rc = get_string(w, obj, "preset", path, &l->synth_preset)))
        return rc;
    char p[PATH_MAX_LEN];
    child_path(p, path, "preset");
    if (!l->synth_preset)
        return bad(w, p, "a preset: \"early\", \"middle\", \"late\" or \"outlier-steps\"");
    nc_synth_params *sp = &l->synth_params;
    memset(sp, 0, sizeof *sp);
    l->synth = true;
    bool steps = strcmp(l->synth_preset, "outlier-steps") == 0;
    /* tokens, dim and seed first: the presets depend on the width */
    uint64_t u = steps ? 9 : 4096;
    if ((rc = get_uint(w, obj, "tokens", path, 1, steps ? 1000 : 1e8, &u)))
        return rc;
    sp->N = (size_t)u;
    u = steps ? 100 : 256;
    if ((rc = get_uint(w, obj, "dim", path, 1, 1e6, &u)))
        return rc;
    sp->d = (size_t)u;
    sp->seed = cfg->seed;
    if ((rc = get_uint(w, obj, "seed", path, 0, 9007199254740992.0, &sp->seed)))
        return rc;
    if ((double)sp->N * (double)sp->d > 1e9) {
        child_path(p, path, "tokens");
        return bad(w, p, "tokens * dim <= 1e9");
    }
    if (steps) {
        l->outlier_steps = true;
    } else {
        nc_err e2 = {0};
        if (nc_synth_preset(l->synth_preset, sp, &e2) != 0)
            return bad(w, p, "a preset: \"early\", \"middle\", \"late\" or \"outlier-steps\"");
    }
    bool dummy;
    if ((rc = get_number(w, obj, "scale_median", path, 1e-6, 1e6, &sp->scale_median, &dummy)) ||
        (rc = get_number(w, obj, "scale_spread", path, 0, 2, &sp->scale_spread, &dummy)) ||
        (rc = get_number(w, obj, "outlier_mag", path, 0, 1e3, &sp->outlier_mag, &dummy)) ||
        (rc = get_number(w, obj, "outlier_spread", path, 0, 2, &sp->outlier_spread, &dummy)) ||
        (rc = get_number(w, obj, "nu", path, 2.0000001, INFINITY, &sp->nu, &dummy)) ||
        (rc = get_number(w, obj, "offset_std", path, 0, 1e3, &sp->offset_std, &dummy)))
        return rc;
    u = sp->outliers;
    if ((rc = get_uint(w, obj, "outliers", path, 0, 1e6, &u)))
        return rc;
    sp->outliers = (size_t)u;
    if (sp->outliers > sp->d) {
        child_path(p, path, "outliers");
        return bad(w, p, "at most dim outlier channels");
    }
    return get_bool(w, obj, "affine", path, &l->synth_affine);
}

static int parse_layer(walker *w, const cJSON *obj, int idx, nc_config *cfg)
{
    static const char *const keys[] = {"file", "synth", "tensor", "label", "norm", "eps",
                                       "output", "weight", "bias", "grad_output", "experiment",
                                       NULL};
    char path[PATH_MAX_LEN], p[PATH_MAX_LEN];
    snprintf(path, sizeof path, "layers[%d]", idx);
    if (!cJSON_IsObject(obj))
        return bad(w, path, "an object");
    int rc = check_keys(w, obj, path, keys);
    if (rc)
        return rc;
    nc_config_layer *l;
    if ((rc = nc_config_add_layer(cfg, &l, w->err)))
        return rc;
    char *file = NULL;
    if ((rc = get_string(w, obj, "file", path, &file)))
        return rc;
    if (file) {
        rc = resolve(w, file, &l->file);
        free(file);
        if (rc)
            return rc;
    }
    const cJSON *synth = cJSON_GetObjectItemCaseSensitive(obj, "synth");
    if (synth) {
        child_path(p, path, "synth");
        if (l->file)
            return bad(w, p, "either \"file\" or \"synth\", not both");
        if ((rc = parse_synth(w, synth, p, cfg, l)))
            return rc;
    } else if (!l->file) {
        return bad(w, path, "a \"file\" or a \"synth\" entry");
    }
    const cJSON *tensor = cJSON_GetObjectItemCaseSensitive(obj, "tensor");
    if (tensor) {
        child_path(p, path, "tensor");
        const char *what = "a tensor name or pattern, or an array of them";
        size_t n = cJSON_IsString(tensor) ? 1 : cJSON_IsArray(tensor) ? (size_t)cJSON_GetArraySize(tensor) : 0;
        if (n == 0)
            return bad(w, p, what);
        if (!(l->tensors = calloc(n, sizeof *l->tensors)))
            return nc_err_set(w->err, NC_ENOMEM, "out of memory");
        const cJSON *v = cJSON_IsString(tensor) ? tensor : tensor->child;
        for (size_t k = 0; k < n; k++, v = v->next) {
            if (!cJSON_IsString(v) || !v->valuestring[0])
                return bad(w, p, what);
            if (!(l->tensors[k] = strdup(v->valuestring)))
                return nc_err_set(w->err, NC_ENOMEM, "out of memory");
            l->ntensors = k + 1;
        }
    }
    if ((rc = get_string(w, obj, "label", path, &l->label)))
        return rc;
    if ((rc = get_norm(w, obj, path, &l->norm, &l->has_norm)))
        return rc;
    if ((rc = get_number(w, obj, "eps", path, 0, 1, &l->eps, &l->has_eps)))
        return rc;
    for (int c = 0; c < NC_COMP_COUNT; c++) {
        char *s = NULL;
        if ((rc = get_string(w, obj, nc_comp_name(c), path, &s)))
            return rc;
        if (s) {
            if (l->synth) {
                free(s);
                child_path(p, path, nc_comp_name(c));
                return bad(w, p, "no companion file for a synthetic layer (use synth.affine)");
            }
            rc = resolve(w, s, &l->comp[c]);
            free(s);
            if (rc)
                return rc;
        }
    }
    char *exp = NULL;
    if ((rc = get_string(w, obj, "experiment", path, &exp)))
        return rc;
    if (exp) {
        bool ok = strcmp(exp, "outlier-steps") == 0;
        free(exp);
        if (!ok) {
            child_path(p, path, "experiment");
            return bad(w, p, "\"outlier-steps\"");
        }
        l->outlier_steps = true;
    }
    return 0;
}

static int parse_jacobian(walker *w, const cJSON *obj, nc_config *cfg)
{
    static const char *const keys[] = {"enabled", "probes", "dense_tokens", "seed", NULL};
    if (!cJSON_IsObject(obj))
        return bad(w, "jacobian", "an object");
    int rc = check_keys(w, obj, "jacobian", keys);
    uint64_t u;
    if (rc || (rc = get_bool(w, obj, "enabled", "jacobian", &cfg->jacobian.enabled)))
        return rc;
    u = cfg->jacobian.probes;
    if ((rc = get_uint(w, obj, "probes", "jacobian", 1, 1024, &u)))
        return rc;
    cfg->jacobian.probes = (size_t)u;
    u = cfg->jacobian.dense_tokens;
    if ((rc = get_uint(w, obj, "dense_tokens", "jacobian", 1, 1e9, &u)))
        return rc;
    cfg->jacobian.dense_tokens = (size_t)u;
    if (cJSON_GetObjectItemCaseSensitive(obj, "seed")) {
        if ((rc = get_uint(w, obj, "seed", "jacobian", 0, 9007199254740992.0,
                           &cfg->jacobian.seed)))
            return rc;
        cfg->jacobian.has_seed = true;
    }
    return 0;
}

/* An array of strings into (owned) *out / *n; what names the elements. */
static int get_strings(walker *w, const cJSON *v, const char *path, char ***out, size_t *n)
{
    const char *what = "a string or an array of strings";
    size_t m = cJSON_IsString(v) ? 1 : cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
    if (m == 0)
        return bad(w, path, what);
    if (!(*out = calloc(m, sizeof **out)))
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    const cJSON *e = cJSON_IsString(v) ? v : v->child;
    for (size_t k = 0; k < m; k++, e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return bad(w, path, what);
        if (!((*out)[k] = strdup(e->valuestring)))
            return nc_err_set(w->err, NC_ENOMEM, "out of memory");
        *n = k + 1;
    }
    return 0;
}

static int parse_figure(walker *w, const cJSON *obj, int idx, nc_config *cfg)
{
    static const char *const keys[] = {"type", "layers", "format", "width", "height", "dpi",
                                       "curves", "tokens", "channels", "alphas", "cols", "legend",
                                       "name", NULL};
    char path[PATH_MAX_LEN], p[PATH_MAX_LEN];
    snprintf(path, sizeof path, "figures[%d]", idx);
    if (!cJSON_IsObject(obj))
        return bad(w, path, "an object");
    int rc = check_keys(w, obj, path, keys);
    if (rc)
        return rc;
    nc_fig_spec *f;
    if ((rc = nc_config_add_figure(cfg, &f, w->err)))
        return rc;
    char *type = NULL;
    if ((rc = get_string(w, obj, "type", path, &type)))
        return rc;
    child_path(p, path, "type");
    const char *kinds = "one of: scatter, scatter-grid, by-token, by-channel, jacobian, "
                        "alpha-std, tanh-family, outlier-steps";
    bool ok = type && nc_fig_kind_parse(type, &f->kind);
    free(type);
    if (!ok)
        return bad(w, p, kinds);
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "layers"))) {
        child_path(p, path, "layers");
        if ((rc = get_strings(w, v, p, &f->layers, &f->nlayers)))
            return rc;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "format"))) {
        child_path(p, path, "format");
        char **fm = NULL;
        size_t nf = 0;
        rc = get_strings(w, v, p, &fm, &nf);
        for (size_t k = 0; k < nf && !rc; k++) {
            unsigned bits;
            if (!nc_fig_formats_parse(fm[k], &bits))
                rc = bad(w, p, "\"png\", \"pdf\" or \"svg\" (or an array of them)");
            else
                f->formats |= bits;
        }
        for (size_t k = 0; k < nf; k++)
            free(fm[k]);
        free(fm);
        if (rc)
            return rc;
    }
    if ((rc = get_number(w, obj, "width", path, 0.5, 100, &f->width_in, NULL)) ||
        (rc = get_number(w, obj, "height", path, 0.5, 100, &f->height_in, NULL)) ||
        (rc = get_number(w, obj, "dpi", path, 10, 2400, &f->dpi, NULL)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "curves"))) {
        child_path(p, path, "curves");
        if (!cJSON_IsArray(v))
            return bad(w, p, "an array of fit names");
        for (const cJSON *e = v->child; e; e = e->next) {
            const nc_surrogate *s = cJSON_IsString(e) ? nc_surrogate_find(e->valuestring) : NULL;
            if (!s) {
                char names[256], what[300];
                fit_names(names, sizeof names);
                snprintf(what, sizeof what, "an array of fit names (%s)", names);
                return bad(w, p, what);
            }
            f->curves[s->id] = true;
        }
    }
    uint64_t u = 0;
    if ((rc = get_uint(w, obj, "tokens", path, 1, 64, &u)))
        return rc;
    f->tokens = (size_t)u;
    u = 0;
    if ((rc = get_uint(w, obj, "channels", path, 1, NC_TOP_CHANNELS, &u)))
        return rc;
    f->channels = (size_t)u;
    u = 0;
    if ((rc = get_uint(w, obj, "cols", path, 1, 16, &u)))
        return rc;
    f->cols = (int)u;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "alphas"))) {
        child_path(p, path, "alphas");
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 ||
            cJSON_GetArraySize(v) > NC_FIG_MAX_ALPHAS)
            return bad(w, p, "an array of 1 to 8 positive numbers");
        for (const cJSON *e = v->child; e; e = e->next) {
            if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble))
                return bad(w, p, "an array of 1 to 8 positive numbers");
            f->alphas[f->nalphas++] = e->valuedouble;
        }
    }
    char *legend = NULL;
    if ((rc = get_string(w, obj, "legend", path, &legend)))
        return rc;
    if (legend) {
        bool known = nc_fig_legend_parse(legend, &f->legend);
        free(legend);
        if (!known) {
            child_path(p, path, "legend");
            return bad(w, p, "a legend position (auto, none, upper left, upper right, lower "
                             "left, lower right, right, center left, center right, lower "
                             "center, upper center, center)");
        }
    }
    if ((rc = get_string(w, obj, "name", path, &f->name)))
        return rc;
    if (f->name) {
        for (const char *c = f->name; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '_' || *c == '-' || *c == '.')) {
                child_path(p, path, "name");
                return bad(w, p, "a file name stem of letters, digits, '.', '_' and '-'");
            }
    }
    return 0;
}

/* A sweep grid: a list of positive numbers, "auto", or
 * {"from": a, "to": b, "steps": n, "scale": "log" | "linear"}. */
static int parse_grid(walker *w, const cJSON *v, const char *path, double **grid, size_t *n,
                      bool *is_auto)
{
    const char *what = "a list of positive numbers, \"auto\", or {\"from\", \"to\", "
                       "\"steps\", \"scale\"}";
    if (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0) {
        *is_auto = true;
        return 0;
    }
    if (cJSON_IsArray(v)) {
        size_t m = (size_t)cJSON_GetArraySize(v);
        if (m == 0 || m > 100000)
            return bad(w, path, "a list of 1 to 100000 positive numbers");
        if (!(*grid = malloc(m * sizeof **grid)))
            return nc_err_set(w->err, NC_ENOMEM, "out of memory");
        size_t k = 0;
        for (const cJSON *e = v->child; e; e = e->next, k++) {
            if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble))
                return bad(w, path, "a list of positive numbers");
            if (k && !(e->valuedouble > (*grid)[k - 1]))
                return bad(w, path, "a list of positive numbers in ascending order");
            (*grid)[k] = e->valuedouble;
        }
        *n = m;
        return 0;
    }
    if (!cJSON_IsObject(v))
        return bad(w, path, what);
    static const char *const keys[] = {"from", "to", "steps", "scale", NULL};
    int rc = check_keys(w, v, path, keys);
    if (rc)
        return rc;
    double from = 0, to = 0;
    uint64_t steps = 100;
    bool has_from = false, has_to = false;
    if ((rc = get_number(w, v, "from", path, 1e-300, 1e300, &from, &has_from)) ||
        (rc = get_number(w, v, "to", path, 1e-300, 1e300, &to, &has_to)) ||
        (rc = get_uint(w, v, "steps", path, 2, 100000, &steps)))
        return rc;
    char p[PATH_MAX_LEN];
    if (!has_from || !has_to) {
        child_path(p, path, has_from ? "to" : "from");
        return bad(w, p, "a positive number");
    }
    if (!(to > from)) {
        child_path(p, path, "to");
        return bad(w, p, "a number greater than \"from\"");
    }
    char *scale = NULL;
    if ((rc = get_string(w, v, "scale", path, &scale)))
        return rc;
    bool log_scale = !scale || strcmp(scale, "log") == 0;
    bool known = !scale || log_scale || strcmp(scale, "linear") == 0;
    free(scale);
    if (!known) {
        child_path(p, path, "scale");
        return bad(w, p, "\"log\" or \"linear\"");
    }
    if (!(*grid = malloc(steps * sizeof **grid)))
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    nc_sweep_grid(from, to, (size_t)steps, log_scale, *grid);
    *n = (size_t)steps;
    return 0;
}

static int parse_amp_value(walker *w, const cJSON *obj, const char *key, const char *path,
                           bool allow_free, nc_amp *amp)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[PATH_MAX_LEN];
    child_path(p, path, key);
    const char *what = "\"sqrt(d)\", \"sqrt(d-1)\", \"auto\" or a number > 0";
    if (cJSON_IsNumber(v) && v->valuedouble > 0 && isfinite(v->valuedouble)) {
        *amp = (nc_amp){NC_AMP_VALUE, v->valuedouble};
        return 0;
    }
    if (!cJSON_IsString(v) || !nc_amp_parse(v->valuestring, amp) ||
        (!allow_free && amp->rule == NC_AMP_FREE))
        return bad(w, p, what);
    return 0;
}

static int parse_sweep(walker *w, const cJSON *obj, nc_config *cfg)
{
    static const char *const keys[] = {"alpha", "C", "steps", "gamma", "beta", "scale",
                                       "layers", "figure", "csv", "format", NULL};
    struct nc_config_sweep *sw = &cfg->sweep;
    if (!cJSON_IsObject(obj))
        return bad(w, "sweep", "an object");
    int rc = check_keys(w, obj, "sweep", keys);
    if (rc)
        return rc;
    sw->enabled = true;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "alpha")) &&
        (rc = parse_grid(w, v, "sweep.alpha", &sw->alpha, &sw->nalpha, &sw->alpha_auto)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "C")) &&
        (rc = parse_grid(w, v, "sweep.C", &sw->C, &sw->nC, &sw->C_auto)))
        return rc;
    if (!sw->nalpha && !sw->alpha_auto && !sw->nC && !sw->C_auto)
        return bad(w, "sweep", "an \"alpha\" or \"C\" grid");
    uint64_t u = sw->auto_steps;
    if ((rc = get_uint(w, obj, "steps", "sweep", 2, 100000, &u)))
        return rc;
    sw->auto_steps = (size_t)u;
    if ((rc = parse_amp_value(w, obj, "gamma", "sweep", false, &sw->gamma)) ||
        (rc = get_number(w, obj, "beta", "sweep", -1e6, 1e6, &sw->beta, NULL)) ||
        (rc = parse_amp_value(w, obj, "scale", "sweep", false, &sw->scale)) ||
        (rc = get_bool(w, obj, "figure", "sweep", &sw->figure)) ||
        (rc = get_bool(w, obj, "csv", "sweep", &sw->csv)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "layers")) &&
        (rc = get_strings(w, v, "sweep.layers", &sw->layers, &sw->nlayers)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "format"))) {
        char **fm = NULL;
        size_t nf = 0;
        rc = get_strings(w, v, "sweep.format", &fm, &nf);
        for (size_t k = 0; k < nf && !rc; k++) {
            unsigned bits;
            if (!nc_fig_formats_parse(fm[k], &bits))
                rc = bad(w, "sweep.format", "\"png\", \"pdf\" or \"svg\" (or a list)");
            else
                sw->formats |= bits;
        }
        for (size_t k = 0; k < nf; k++)
            free(fm[k]);
        free(fm);
    }
    return rc;
}

static int parse_root(walker *w, const cJSON *root, nc_config *cfg)
{
    static const char *const keys[] = {"name", "output", "norm", "eps", "fits", "amplitude",
                                       "bins", "max_exact_points", "sample_tokens", "seed",
                                       "threads", "jacobian", "figures", "sweep", "layers",
                                       NULL};
    if (!cJSON_IsObject(root))
        return nc_err_set(w->err, NC_EINVAL, "%s: expected a JSON object at the top level",
                          w->file);
    int rc = check_keys(w, root, "", keys);
    if (rc)
        return rc;
    if ((rc = get_string(w, root, "name", "", &cfg->name)) ||
        (rc = get_string(w, root, "output", "", &cfg->output)) ||
        (rc = get_norm(w, root, "", &cfg->norm, NULL)) ||
        (rc = get_number(w, root, "eps", "", 0, 1, &cfg->eps, &cfg->has_eps)))
        return rc;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "fits")) && (rc = parse_fits(w, v, cfg)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "amplitude")) &&
        (rc = parse_amplitude(w, v, cfg)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "jacobian")) &&
        (rc = parse_jacobian(w, v, cfg)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "sweep")) && (rc = parse_sweep(w, v, cfg)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "figures"))) {
        if (!cJSON_IsArray(v))
            return bad(w, "figures", "an array of figures");
        int k = 0;
        for (const cJSON *f = v->child; f; f = f->next, k++)
            if ((rc = parse_figure(w, f, k, cfg)))
                return rc;
    }
    uint64_t u = 0;
    if ((rc = get_uint(w, root, "bins", "", 16, 1 << 24, &u)))
        return rc;
    cfg->max_bins = (size_t)u;
    u = 0;
    if ((rc = get_uint(w, root, "max_exact_points", "", 0, 1e10, &u)))
        return rc;
    cfg->max_exact_points = (size_t)u;
    u = 0;
    if ((rc = get_uint(w, root, "sample_tokens", "", 0, 1e12, &u)))
        return rc;
    cfg->sample_tokens = (size_t)u;
    if ((rc = get_uint(w, root, "seed", "", 0, 9007199254740992.0, &cfg->seed)))
        return rc;
    u = 0;
    if ((rc = get_uint(w, root, "threads", "", 0, 16, &u)))
        return rc;
    cfg->threads = (int)u;
    /* layers last: synthetic layers default to the config's seed. A config
     * drawing only the tanh family needs none. */
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    bool data_free = cfg->nfigures > 0;
    for (size_t k = 0; k < cfg->nfigures; k++)
        data_free = data_free && cfg->figures[k].kind == NC_FIG_TANH_FAMILY;
    if (!layers && data_free)
        return 0;
    if (!layers)
        return nc_err_set(w->err, NC_EINVAL, "%s: layers: missing (expected an array of layers)",
                          w->file);
    if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0)
        return bad(w, "layers", "a non-empty array of layers");
    int k = 0;
    for (const cJSON *l = layers->child; l; l = l->next, k++)
        if ((rc = parse_layer(w, l, k, cfg)))
            return rc;
    return 0;
}

int nc_config_parse(const char *text, size_t len, const char *path, nc_config **out,
                    nc_err *err)
{
    *out = NULL;
    walker w = {.file = path, .err = err};
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(w.dir, sizeof w.dir, "%.*s", (int)(slash - path), path);
    if (slash == path)
        snprintf(w.dir, sizeof w.dir, "/");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (root) {
        /* only white space may follow the document */
        while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
            end++;
        if (end < text + len) {
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root) {
        const char *at = end && end >= text && end <= text + len ? end : text;
        int line = 1, col = 1;
        for (const char *c = text; c < at; c++) {
            if (*c == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
        return nc_err_set(err, NC_EINVAL, "%s: malformed JSON at line %d, column %d", path, line,
                          col);
    }
    nc_config *cfg;
    int rc = nc_config_alloc(path, &cfg, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    rc = parse_root(&w, root, cfg);
    cJSON_Delete(root);
    if (!rc && !cfg->name) {
        /* default name: the file's base name without .json */
        const char *base = slash ? slash + 1 : path;
        size_t n = strlen(base);
        if (n > 5 && strcmp(base + n - 5, ".json") == 0)
            n -= 5;
        if (!(cfg->name = malloc(n + 1)))
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
        else
            snprintf(cfg->name, n + 1, "%.*s", (int)n, base);
    }
    if (rc) {
        nc_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

int nc_config_load(const char *path, nc_config **out, nc_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        return nc_err_set_errno(err, e == ENOENT || e == EACCES || e == EISDIR ? NC_EINVAL : NC_EIO,
                                e, "%s: cannot open config file", path);
    }
    char *buf = malloc(CONFIG_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, CONFIG_MAX_BYTES + 1, f);
    int rc = 0;
    if (ferror(f))
        rc = nc_err_set_errno(err, errno == EISDIR ? NC_EINVAL : NC_EIO, errno,
                              "%s: cannot read config file", path);
    else if (n > CONFIG_MAX_BYTES)
        rc = nc_err_set(err, NC_EINVAL, "%s: config file larger than %u bytes", path,
                        CONFIG_MAX_BYTES);
    else if (n == 0)
        rc = nc_err_set(err, NC_EINVAL, "%s: empty config file (expected a JSON object)", path);
    fclose(f);
    if (!rc)
        rc = nc_config_parse(buf, n, path, out, err);
    free(buf);
    return rc;
}
