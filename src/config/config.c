/*
 * config.c - reading and validating experiment configs (config.h).
 *
 * The validator walks the cJSON tree with the key path of the node in hand,
 * so every message can name it: "<file>: layers[2].eps: expected a number
 * >= 0". Each object lists its allowed keys; anything else is an error.
 * Here: the config object (defaults, growth, freeing, effective norm and
 * eps), the top level of the file, its layers (with their synthetic data),
 * and reading the file.
 *
 * Left out: the walker and its typed key readers (config_walk.h), the
 * parsers of amplitude rules and fit lists (values.h), the figure requests
 * (figspec.h) and the optional sections fits, amplitude, jacobian, sweep
 * and figures (config_sections.h). Calls run one way: config.c ->
 * config_sections.c -> config_walk.c, values.c, figspec.c.
 */
#include "config/config.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config_walk.h"
#include "io/jsondoc.h"


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
    cfg->boot_replicates = NC_BOOT_DEFAULT_REPLICATES;
    cfg->jacobian.enabled = true;
    cfg->dropin.enabled = true;
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
    nc_fig_spec_clear(&cfg->sweep.look);
    for (size_t k = 0; k < cfg->nlayers; k++) {
        nc_config_layer *l = &cfg->layers[k];
        free(l->label);
        free(l->group);
        free(l->file);
        for (size_t j = 0; j < l->ntensors; j++)
            free(l->tensors[j]);
        free(l->tensors);
        for (int c = 0; c < NC_COMP_COUNT; c++)
            free(l->comp[c]);
        free(l->synth_preset);
    }
    free(cfg->layers);
    for (size_t k = 0; k < cfg->dropin.nroles; k++) {
        free(cfg->dropin.role_regex[k]);
        free(cfg->dropin.role_name[k]);
    }
    free(cfg->dropin.role_regex);
    free(cfg->swap);
    free(cfg->dropin.role_name);
    free(cfg->dropin.role_origin);
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

/* ------------------------------------------------ top level and layers */

static int get_norm(nc_config_walker *w, const cJSON *obj, const char *path, nc_norm_kind *norm,
                    bool *present)
{
    char *s = NULL;
    int rc = nc_config_get_string(w, obj, "norm", path, &s);
    if (rc || !s)
        return rc;
    char p[NC_CONFIG_PATH_MAX];
    nc_config_child_path(p, path, "norm");
    bool ok = nc_norm_parse(s, norm);
    free(s);
    if (!ok)
        return nc_config_bad(w, p, "\"layernorm\" or \"rmsnorm\" (any case, e.g. \"LayerNorm\", "
                                     "\"rms_norm\")");
    if (present)
        *present = true;
    return 0;
}

/* "rng" and "draws": outlier-steps only (the presets' tensors are defined
 * by core/rng.h's streams). */
static int parse_synth_steps(nc_config_walker *w, const cJSON *obj, const char *path, bool steps,
                             nc_config_layer *l)
{
    char p[NC_CONFIG_PATH_MAX];
    char *rng = NULL;
    int rc = nc_config_get_string(w, obj, "rng", path, &rng);
    if (rc)
        return rc;
    l->synth_rng = NC_SYNTH_RNG_NORMCMP;
    nc_config_child_path(p, path, "rng");
    if (rng && !steps)
        rc = nc_config_bad(w, p, "\"rng\" only with the \"outlier-steps\" preset");
    else if (rng && !nc_synth_rng_parse(rng, &l->synth_rng))
        rc = nc_config_bad(w, p, "\"normcmp\" or \"numpy\"");
    else if (rng && l->synth_rng == NC_SYNTH_RNG_NUMPY && l->synth_params.seed > 4294967295u)
        rc = nc_config_bad(w, p, "a seed below 2^32 with \"numpy\" (np.random.seed's range)");
    free(rng);
    if (rc)
        return rc;
    uint64_t u = 0;
    if ((rc = nc_config_get_uint(w, obj, "draws", path, 0, 100000, &u)))
        return rc;
    nc_config_child_path(p, path, "draws");
    if (u > 0 && !steps)
        return nc_config_bad(w, p, "\"draws\" only with the \"outlier-steps\" preset");
    if (u > 0 && l->synth_rng == NC_SYNTH_RNG_NUMPY && l->synth_params.seed + u - 1 > 4294967295u)
        return nc_config_bad(w, p, "seed + draws - 1 below 2^32 with \"numpy\"");
    l->synth_draws = (size_t)u;
    return 0;
}

static int parse_synth(nc_config_walker *w, const cJSON *obj, const char *path, nc_config *cfg,
                       nc_config_layer *l)
{
    static const char *const keys[] = {"preset", "tokens", "dim", "seed", "scale_median",
                                       "scale_spread", "outliers", "outlier_mag",
                                       "outlier_spread", "nu", "offset_std", "affine", "rng",
                                       "draws", NULL};
    if (!cJSON_IsObject(obj))
        return nc_config_bad(w, path, "an object");
    int rc = nc_config_check_keys(w, obj, path, keys);
    if (rc)
        return rc;
    if ((rc = nc_config_get_string(w, obj, "preset", path, &l->synth_preset)))
        return rc;
    char p[NC_CONFIG_PATH_MAX];
    nc_config_child_path(p, path, "preset");
    if (!l->synth_preset)
        return nc_config_bad(w, p,
                             "a preset: \"early\", \"middle\", \"late\" or \"outlier-steps\"");
    nc_synth_params *sp = &l->synth_params;
    memset(sp, 0, sizeof *sp);
    l->synth = true;
    bool steps = strcmp(l->synth_preset, "outlier-steps") == 0;
    /* tokens, dim and seed first: the presets depend on the width */
    uint64_t u = steps ? 9 : 4096;
    if ((rc = nc_config_get_uint(w, obj, "tokens", path, 1, steps ? 1000 : 1e8, &u)))
        return rc;
    sp->N = (size_t)u;
    u = steps ? 100 : 256;
    if ((rc = nc_config_get_uint(w, obj, "dim", path, 1, 1e6, &u)))
        return rc;
    sp->d = (size_t)u;
    sp->seed = cfg->seed;
    if ((rc = nc_config_get_uint(w, obj, "seed", path, 0, 9007199254740992.0, &sp->seed)))
        return rc;
    if ((double)sp->N * (double)sp->d > 1e9) {
        nc_config_child_path(p, path, "tokens");
        return nc_config_bad(w, p, "tokens * dim <= 1e9");
    }
    if (steps) {
        l->outlier_steps = true;
    } else {
        nc_err e2 = {0};
        if (nc_synth_preset(l->synth_preset, sp, &e2) != 0)
            return nc_config_bad(w, p,
                                 "a preset: \"early\", \"middle\", \"late\" or \"outlier-steps\"");
    }
    bool dummy;
    if ((rc = nc_config_get_number(w, obj, "scale_median", path, 1e-6, 1e6, &sp->scale_median,
                                   &dummy)) ||
        (rc = nc_config_get_number(w, obj, "scale_spread", path, 0, 2, &sp->scale_spread,
                                   &dummy)) ||
        (rc = nc_config_get_number(w, obj, "outlier_mag", path, 0, 1e3, &sp->outlier_mag,
                                   &dummy)) ||
        (rc = nc_config_get_number(w, obj, "outlier_spread", path, 0, 2, &sp->outlier_spread,
                                   &dummy)) ||
        (rc = nc_config_get_number(w, obj, "nu", path, 2.0, INFINITY, &sp->nu, &dummy)) ||
        (rc = nc_config_get_number(w, obj, "offset_std", path, 0, 1e3, &sp->offset_std,
                                   &dummy)))
        return rc;
    if (!steps && !(sp->nu > 2)) { /* the bulk is scaled to unit variance: needs nu > 2 */
        nc_config_child_path(p, path, "nu");
        return nc_config_bad(w, p,
                             "a number > 2 (Student-t degrees of freedom with a finite variance)");
    }
    u = sp->outliers;
    if ((rc = nc_config_get_uint(w, obj, "outliers", path, 0, 1e6, &u)))
        return rc;
    sp->outliers = (size_t)u;
    if (sp->outliers > sp->d) {
        nc_config_child_path(p, path, "outliers");
        return nc_config_bad(w, p, "at most dim outlier channels");
    }
    if ((rc = parse_synth_steps(w, obj, path, steps, l)))
        return rc;
    return nc_config_get_bool(w, obj, "affine", path, &l->synth_affine);
}

static int parse_layer(nc_config_walker *w, const cJSON *obj, int idx, nc_config *cfg)
{
    static const char *const keys[] = {"file", "synth", "tensor", "label", "norm", "eps",
                                       "output", "weight", "bias", "grad_output", "experiment",
                                       "token_block", "group", NULL};
    char path[NC_CONFIG_PATH_MAX], p[NC_CONFIG_PATH_MAX];
    snprintf(path, sizeof path, "layers[%d]", idx);
    if (!cJSON_IsObject(obj))
        return nc_config_bad(w, path, "an object");
    int rc = nc_config_check_keys(w, obj, path, keys);
    if (rc)
        return rc;
    nc_config_layer *l;
    if ((rc = nc_config_add_layer(cfg, &l, w->err)))
        return rc;
    char *file = NULL;
    if ((rc = nc_config_get_string(w, obj, "file", path, &file)))
        return rc;
    if (file) {
        rc = nc_config_resolve(w, file, &l->file);
        free(file);
        if (rc)
            return rc;
    }
    const cJSON *synth = cJSON_GetObjectItemCaseSensitive(obj, "synth");
    if (synth) {
        nc_config_child_path(p, path, "synth");
        if (l->file)
            return nc_config_bad(w, p, "either \"file\" or \"synth\", not both");
        if ((rc = parse_synth(w, synth, p, cfg, l)))
            return rc;
    } else if (!l->file) {
        return nc_config_bad(w, path, "a \"file\" or a \"synth\" entry");
    }
    const cJSON *tensor = cJSON_GetObjectItemCaseSensitive(obj, "tensor");
    if (tensor) {
        nc_config_child_path(p, path, "tensor");
        const char *what = "a tensor name or pattern, or an array of them";
        size_t n = cJSON_IsString(tensor)  ? 1
                   : cJSON_IsArray(tensor) ? (size_t)cJSON_GetArraySize(tensor)
                                           : 0;
        if (n == 0)
            return nc_config_bad(w, p, what);
        if (!(l->tensors = calloc(n, sizeof *l->tensors)))
            return nc_err_set(w->err, NC_ENOMEM, "out of memory");
        const cJSON *v = cJSON_IsString(tensor) ? tensor : tensor->child;
        for (size_t k = 0; k < n; k++, v = v->next) {
            if (!cJSON_IsString(v) || !v->valuestring[0])
                return nc_config_bad(w, p, what);
            if (!(l->tensors[k] = strdup(v->valuestring)))
                return nc_err_set(w->err, NC_ENOMEM, "out of memory");
            l->ntensors = k + 1;
        }
    }
    if ((rc = nc_config_get_string(w, obj, "label", path, &l->label)) ||
        (rc = nc_config_get_string(w, obj, "group", path, &l->group)))
        return rc;
    uint64_t tb = 0;
    if ((rc = nc_config_get_uint(w, obj, "token_block", path, 1, 1e12, &tb)))
        return rc;
    l->token_block = (size_t)tb;
    if ((rc = get_norm(w, obj, path, &l->norm, &l->has_norm)))
        return rc;
    if ((rc = nc_config_get_number(w, obj, "eps", path, 0, 1, &l->eps, &l->has_eps)))
        return rc;
    for (int c = 0; c < NC_COMP_COUNT; c++) {
        char *s = NULL;
        if ((rc = nc_config_get_string(w, obj, nc_comp_name(c), path, &s)))
            return rc;
        if (s) {
            if (l->synth) {
                free(s);
                nc_config_child_path(p, path, nc_comp_name(c));
                return nc_config_bad(w, p,
                                     "no companion file for a synthetic layer (use synth.affine)");
            }
            rc = nc_config_resolve(w, s, &l->comp[c]);
            free(s);
            if (rc)
                return rc;
        }
    }
    char *exp = NULL;
    if ((rc = nc_config_get_string(w, obj, "experiment", path, &exp)))
        return rc;
    if (exp) {
        bool ok = strcmp(exp, "outlier-steps") == 0;
        free(exp);
        if (!ok) {
            nc_config_child_path(p, path, "experiment");
            return nc_config_bad(w, p, "\"outlier-steps\"");
        }
        l->outlier_steps = true;
    }
    return 0;
}

static int parse_root(nc_config_walker *w, const cJSON *root, nc_config *cfg)
{
    static const char *const keys[] = {"name", "output", "norm", "eps", "fits", "amplitude",
                                       "bins", "max_exact_points", "sample_tokens", "seed",
                                       "threads", "jacobian", "figures", "sweep", "layers",
                                       "bootstrap", "token_block", "dropin", "alpha0", "roles",
                                       "swap", NULL};
    if (!cJSON_IsObject(root))
        return nc_err_set(w->err, NC_EINVAL, "%s: expected a JSON object at the top level",
                          w->file);
    int rc = nc_config_check_keys(w, root, "", keys);
    if (rc)
        return rc;
    char *swap = NULL;
    if ((rc = nc_config_get_string(w, root, "swap", "", &swap)))
        return rc;
    if (swap) {
        rc = nc_config_resolve(w, swap, &cfg->swap);
        free(swap);
        if (rc)
            return rc;
    }
    if ((rc = nc_config_get_string(w, root, "name", "", &cfg->name)) ||
        (rc = nc_config_get_string(w, root, "output", "", &cfg->output)) ||
        (rc = get_norm(w, root, "", &cfg->norm, &cfg->has_norm)) ||
        (rc = nc_config_get_number(w, root, "eps", "", 0, 1, &cfg->eps, &cfg->has_eps)))
        return rc;
    /* the default output folder is out/<name>: one folder, never elsewhere */
    if (cfg->name && (strchr(cfg->name, '/') || strcmp(cfg->name, ".") == 0 ||
                      strcmp(cfg->name, "..") == 0))
        return nc_config_bad(w, "name",
                             "a name without '/' (not '.' or '..'); the output folder is "
                             "out/<name>, or set \"output\"");
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "fits")) &&
        (rc = nc_config_parse_fits(w, v, cfg->fit)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "amplitude")) &&
        (rc = nc_config_parse_amplitude(w, v, &cfg->amp_dyt, &cfg->amp_dyisru, &cfg->amp_derf)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "jacobian")) &&
        (rc = nc_config_parse_jacobian(w, v, &cfg->jacobian)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "sweep")) &&
        (rc = nc_config_parse_sweep(w, v, &cfg->sweep)))
        return rc;
    if ((rc = nc_config_parse_dropin(w, root, &cfg->dropin)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "figures"))) {
        if (!cJSON_IsArray(v))
            return nc_config_bad(w, "figures", "an array of figures");
        int k = 0;
        for (const cJSON *f = v->child; f; f = f->next, k++) {
            nc_fig_spec *spec;
            if ((rc = nc_config_add_figure(cfg, &spec, w->err)) ||
                (rc = nc_config_parse_figure(w, f, k, spec)))
                return rc;
        }
    }
    uint64_t u = 0;
    if ((rc = nc_config_get_uint(w, root, "bins", "", 16, 1 << 24, &u)))
        return rc;
    cfg->max_bins = (size_t)u;
    u = 0;
    if ((rc = nc_config_get_uint(w, root, "max_exact_points", "", 0, 1e10, &u)))
        return rc;
    cfg->max_exact_points = (size_t)u;
    u = 0;
    if ((rc = nc_config_get_uint(w, root, "sample_tokens", "", 0, 1e12, &u)))
        return rc;
    cfg->sample_tokens = (size_t)u;
    u = cfg->boot_replicates;
    if ((rc = nc_config_get_uint(w, root, "bootstrap", "", 0, NC_BOOT_MAX_REPLICATES, &u)))
        return rc;
    cfg->boot_replicates = (size_t)u;
    u = 0;
    if ((rc = nc_config_get_uint(w, root, "token_block", "", 1, 1e12, &u)))
        return rc;
    cfg->token_block = (size_t)u;
    if ((rc = nc_config_get_uint(w, root, "seed", "", 0, 9007199254740992.0, &cfg->seed)))
        return rc;
    u = 0;
    if ((rc = nc_config_get_uint(w, root, "threads", "", 0, 16, &u)))
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
        return nc_config_bad(w, "layers", "a non-empty array of layers");
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
    nc_config_walker w = {.file = path, .err = err};
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(w.dir, sizeof w.dir, "%.*s", (int)(slash - path), path);
    if (slash == path)
        snprintf(w.dir, sizeof w.dir, "/");
    cJSON *root = nc_json_parse_doc(text, len, path, NC_EINVAL, "", err);
    if (!root)
        return err->code;
    nc_config *cfg;
    int rc = nc_config_alloc(path, &cfg, err);
    if (rc) {
        cJSON_Delete(root);
        return rc;
    }
    rc = nc_config_check_utf8(&w, root, "");
    if (!rc)
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
    /* without blocking: a FIFO is refused below, not waited on */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        bool user = e == ENOENT || e == EACCES || e == EISDIR || e == ELOOP || e == ENOTDIR ||
                    e == ENAMETOOLONG;
        return nc_err_set_errno(err, user ? NC_EINVAL : NC_EIO, e,
                                "%s: cannot open config file", path);
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        fclose(f);
        return nc_err_set(err, NC_EINVAL, "%s: not a regular file, expected a JSON config file",
                          path);
    }
    char *buf = malloc(NC_CONFIG_MAX_BYTES + 1);
    if (!buf) {
        fclose(f);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, NC_CONFIG_MAX_BYTES + 1, f);
    int rc = 0;
    if (ferror(f))
        rc = nc_err_set_errno(err, errno == EISDIR ? NC_EINVAL : NC_EIO, errno,
                              "%s: cannot read config file", path);
    else if (n > NC_CONFIG_MAX_BYTES)
        rc = nc_err_set(err, NC_EINVAL, "%s: config file larger than %u bytes", path,
                        NC_CONFIG_MAX_BYTES);
    else if (n == 0)
        rc = nc_err_set(err, NC_EINVAL, "%s: empty config file (expected a JSON object)", path);
    fclose(f);
    if (!rc)
        rc = nc_config_parse(buf, n, path, out, err);
    free(buf);
    return rc;
}