/*
 * config_sections.c - the optional top-level sections of a config
 * (config_sections.h; the docs/config.md): "fits", "amplitude",
 * "jacobian", "sweep" (with its grids and fixed amplitudes) and each entry
 * of "figures", validated as strictly as the rest.
 *
 * Left out: the top level, the layers and their synthetic data, and the
 * config object itself (config.c); the typed key readers (config_walk.c),
 * the value parsers (values.c, figspec.c).
 */
#include "config/config_sections.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sweep.h"
#include "config/config_walk.h"
#include "config/values.h"

int nc_config_parse_amplitude(nc_config_walker *w, const cJSON *obj, nc_amp *dyt,
                              nc_amp *dyisru, nc_amp *derf)
{
    static const char *const keys[] = {"dyt", "dyisru", "derf", NULL};
    if (!cJSON_IsObject(obj))
        return nc_config_bad(w, "amplitude", "an object with keys dyt, dyisru, derf");
    int rc = nc_config_check_keys(w, obj, "amplitude", keys);
    if (rc)
        return rc;
    nc_amp *dst[3] = {dyt, dyisru, derf};
    for (int k = 0; k < 3; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, keys[k]);
        if (!v)
            continue;
        char p[NC_CONFIG_PATH_MAX];
        nc_config_child_path(p, "amplitude", keys[k]);
        const char *what = "\"free\", \"sqrt(d)\", \"sqrt(d-1)\", \"auto\" or a number > 0";
        if (cJSON_IsNumber(v)) {
            if (!(v->valuedouble > 0) || !isfinite(v->valuedouble))
                return nc_config_bad(w, p, what);
            *dst[k] = (nc_amp){NC_AMP_VALUE, v->valuedouble};
        } else if (!cJSON_IsString(v) || !nc_amp_parse(v->valuestring, dst[k])) {
            return nc_config_bad(w, p, what);
        }
        if (k == 1 && dst[k]->rule == NC_AMP_FREE)
            return nc_config_bad(w, p, "a fixed amplitude (the free-scale DyISRU is the fit "
                             "\"dyisru_free\")");
    }
    return 0;
}

/* A list of fit names at path into out[] (which the caller zeroes); drawn:
 * curves of a figure, which cannot show the per-channel DyT. */
static int fit_list(nc_config_walker *w, const cJSON *arr, const char *path, bool drawn,
                    bool out[NC_FIT_COUNT])
{
    if (!cJSON_IsArray(arr))
        return nc_config_bad(w, path, "an array of fit names");
    int k = 0;
    for (const cJSON *v = arr->child; v; v = v->next, k++) {
        const nc_surrogate *s = cJSON_IsString(v) ? nc_surrogate_find(v->valuestring) : NULL;
        if (!s) {
            char p[NC_CONFIG_PATH_MAX], names[256], what[300];
            snprintf(p, sizeof p, "%s[%d]", path, k);
            nc_config_fit_names(names, sizeof names);
            snprintf(what, sizeof what, "one of: %s", names);
            return nc_config_bad(w, p, what);
        }
        if (drawn && s->id == NC_FIT_DYT_PER_CHANNEL) {
            /* figures draw one curve per fit; this fit is a curve per channel */
            char p[NC_CONFIG_PATH_MAX];
            snprintf(p, sizeof p, "%s[%d]", path, k);
            return nc_config_bad(w, p, "a fit drawn as one curve (dyt_per_channel has a gamma_i, "
                             "beta_i per channel: it is in the report, not in figures)");
        }
        out[s->id] = true;
    }
    return 0;
}

/* "png", "pdf", "svg" or a list of them at path, as NC_FIGFMT_* bits into
 * *formats. */
static int format_list(nc_config_walker *w, const cJSON *v, const char *path, unsigned *formats)
{
    char **fm = NULL;
    size_t nf = 0;
    int rc = nc_config_get_strings(w, v, path, &fm, &nf);
    for (size_t k = 0; k < nf && !rc; k++) {
        unsigned bits;
        if (!nc_fig_formats_parse(fm[k], &bits))
            rc = nc_config_bad(w, path, "\"png\", \"pdf\" or \"svg\" (or a list of them)");
        else
            *formats |= bits;
    }
    for (size_t k = 0; k < nf; k++)
        free(fm[k]);
    free(fm);
    return rc;
}

int nc_config_parse_fits(nc_config_walker *w, const cJSON *arr, bool fit[NC_FIT_COUNT])
{
    bool f[NC_FIT_COUNT] = {false};
    int rc = fit_list(w, arr, "fits", false, f);
    if (!rc)
        memcpy(fit, f, sizeof f);
    return rc;
}

int nc_config_parse_jacobian(nc_config_walker *w, const cJSON *obj, nc_config_jacobian *j)
{
    static const char *const keys[] = {"enabled", "probes", "dense_tokens", "seed", NULL};
    if (!cJSON_IsObject(obj))
        return nc_config_bad(w, "jacobian", "an object");
    int rc = nc_config_check_keys(w, obj, "jacobian", keys);
    uint64_t u;
    if (rc || (rc = nc_config_get_bool(w, obj, "enabled", "jacobian", &j->enabled)))
        return rc;
    u = j->probes;
    if ((rc = nc_config_get_uint(w, obj, "probes", "jacobian", 1, 1024, &u)))
        return rc;
    j->probes = (size_t)u;
    u = j->dense_tokens;
    if ((rc = nc_config_get_uint(w, obj, "dense_tokens", "jacobian", 1, 1e9, &u)))
        return rc;
    j->dense_tokens = (size_t)u;
    if (cJSON_GetObjectItemCaseSensitive(obj, "seed")) {
        if ((rc = nc_config_get_uint(w, obj, "seed", "jacobian", 0, 9007199254740992.0,
                                     &j->seed)))
            return rc;
        j->has_seed = true;
    }
    return 0;
}

/* A given width or height at the figure's dpi must make an allowed number
 * of pixels (plot/figure.c refuses others, but only after the analysis). */
static int check_pixels(nc_config_walker *w, const char *path, const nc_fig_spec *f)
{
    const double side[2] = {f->width_in, f->height_in};
    const char *key[2] = {"width", "height"};
    for (int k = 0; k < 2; k++) {
        double px, unused;
        if (side[k] > 0 && !nc_fig_pixels_ok(side[k], side[k], f->dpi, &px, &unused)) {
            char p[NC_CONFIG_PATH_MAX], what[160];
            nc_config_child_path(p, path, key[k]);
            snprintf(what, sizeof what, "%d to %d pixels at dpi %g (got %g in = %.0f pixels)",
                     NC_FIG_MIN_SIDE_PX, NC_FIG_MAX_SIDE_PX,
                     f->dpi > 0 ? f->dpi : NC_FIG_DEFAULT_DPI, side[k], px);
            return nc_config_bad(w, p, what);
        }
    }
    return 0;
}

/* "xlim" / "ylim": [lo, hi] (finite, lo < hi) or "auto" (the default). */
static int parse_limits(nc_config_walker *w, const cJSON *obj, const char *key, const char *path,
                        bool *has, double lim[2])
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[NC_CONFIG_PATH_MAX];
    nc_config_child_path(p, path, key);
    if (!v || (cJSON_IsString(v) && strcmp(v->valuestring, "auto") == 0))
        return 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 || !cJSON_IsNumber(v->child) ||
        !cJSON_IsNumber(v->child->next) || !isfinite(v->child->valuedouble) ||
        !isfinite(v->child->next->valuedouble) ||
        !(v->child->valuedouble < v->child->next->valuedouble))
        return nc_config_bad(w, p, "[lo, hi] with finite lo < hi, or \"auto\"");
    lim[0] = v->child->valuedouble;
    lim[1] = v->child->next->valuedouble;
    *has = true;
    return 0;
}

/* How a figure looks beyond its size: "legend" (a position), "title" (a
 * string; "none": no title) and "labels" ("auto" or "none"). Shared by
 * the "figures" entries and the "sweep" section. */
int nc_config_parse_look(nc_config_walker *w, const cJSON *obj, const char *path, nc_fig_spec *f)
{
    char p[NC_CONFIG_PATH_MAX];
    char *legend = NULL, *labels = NULL;
    int rc = nc_config_get_string(w, obj, "legend", path, &legend);
    if (rc)
        return rc;
    if (legend) {
        bool known = nc_fig_legend_parse(legend, &f->legend);
        free(legend);
        if (!known) {
            nc_config_child_path(p, path, "legend");
            return nc_config_bad(w, p, "a legend position (auto, none, outside, upper left, upper right, lower "
                             "left, lower right, right, center left, center right, lower "
                             "center, upper center, center)");
        }
    }
    if ((rc = nc_config_get_string(w, obj, "title", path, &f->title)))
        return rc;
    if (f->title && strcmp(f->title, "none") == 0) {
        free(f->title);
        f->title = NULL;
        f->no_title = true;
    }
    if ((rc = nc_config_get_string(w, obj, "labels", path, &labels)))
        return rc;
    bool ok = !labels || strcmp(labels, "auto") == 0 || strcmp(labels, "none") == 0;
    f->no_labels = labels && strcmp(labels, "none") == 0;
    free(labels);
    if (!ok) {
        nc_config_child_path(p, path, "labels");
        return nc_config_bad(w, p, "\"auto\" or \"none\"");
    }
    return 0;
}

/* A figure's size: "width", "height" (inches), "dpi". */
int nc_config_parse_size(nc_config_walker *w, const cJSON *obj, const char *path, nc_fig_spec *f)
{
    int rc;
    if ((rc = nc_config_get_number(w, obj, "width", path, 0.5, 100, &f->width_in, NULL)) ||
        (rc = nc_config_get_number(w, obj, "height", path, 0.5, 100, &f->height_in, NULL)) ||
        (rc = nc_config_get_number(w, obj, "dpi", path, 10, 2400, &f->dpi, NULL)))
        return rc;
    return check_pixels(w, path, f);
}

int nc_config_parse_figure(nc_config_walker *w, const cJSON *obj, int idx, nc_fig_spec *f)
{
    static const char *const keys[] = {"type", "layers", "format", "width", "height", "dpi",
                                       "curves", "tokens", "channels", "alphas", "cols", "legend",
                                       "name", "xlim", "ylim", "title", "labels", NULL};
    char path[NC_CONFIG_PATH_MAX], p[NC_CONFIG_PATH_MAX];
    snprintf(path, sizeof path, "figures[%d]", idx);
    if (!cJSON_IsObject(obj))
        return nc_config_bad(w, path, "an object");
    int rc = nc_config_check_keys(w, obj, path, keys);
    if (rc)
        return rc;
    char *type = NULL;
    if ((rc = nc_config_get_string(w, obj, "type", path, &type)))
        return rc;
    nc_config_child_path(p, path, "type");
    const char *kinds = "one of: scatter, scatter-grid, by-token, by-channel, jacobian, "
                        "alpha-std, alpha-depth, swap-depth, tanh-family, outlier-steps";
    bool ok = type && nc_fig_kind_parse(type, &f->kind);
    free(type);
    if (!ok)
        return nc_config_bad(w, p, kinds);
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "layers"))) {
        nc_config_child_path(p, path, "layers");
        if ((rc = nc_config_get_strings(w, v, p, &f->layers, &f->nlayers)))
            return rc;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "format"))) {
        nc_config_child_path(p, path, "format");
        if ((rc = format_list(w, v, p, &f->formats)))
            return rc;
    }
    if ((rc = nc_config_parse_size(w, obj, path, f)) ||
        (rc = parse_limits(w, obj, "xlim", path, &f->has_xlim, f->xlim)) ||
        (rc = parse_limits(w, obj, "ylim", path, &f->has_ylim, f->ylim)) ||
        (rc = nc_config_parse_look(w, obj, path, f)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "curves"))) {
        nc_config_child_path(p, path, "curves");
        if ((rc = fit_list(w, v, p, true, f->curves)))
            return rc;
    }
    uint64_t u = 0;
    if ((rc = nc_config_get_uint(w, obj, "tokens", path, 1, 64, &u)))
        return rc;
    f->tokens = (size_t)u;
    u = 0;
    if ((rc = nc_config_get_uint(w, obj, "channels", path, 1, NC_TOP_CHANNELS, &u)))
        return rc;
    f->channels = (size_t)u;
    u = 0;
    if ((rc = nc_config_get_uint(w, obj, "cols", path, 1, 16, &u)))
        return rc;
    f->cols = (int)u;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "alphas"))) {
        nc_config_child_path(p, path, "alphas");
        if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 ||
            cJSON_GetArraySize(v) > NC_FIG_MAX_ALPHAS)
            return nc_config_bad(w, p, "an array of 1 to 8 positive numbers");
        for (const cJSON *e = v->child; e; e = e->next) {
            if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble))
                return nc_config_bad(w, p, "an array of 1 to 8 positive numbers");
            f->alphas[f->nalphas++] = e->valuedouble;
        }
    }
    if ((rc = nc_config_get_string(w, obj, "name", path, &f->name)))
        return rc;
    if (f->name) {
        for (const char *c = f->name; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.')) {
                nc_config_child_path(p, path, "name");
                return nc_config_bad(w, p, "a file name stem of letters, digits, '.', '_' and '-'");
            }
    }
    return 0;
}

/* A sweep grid: a list of positive numbers, "auto", or
 * {"from": a, "to": b, "steps": n, "scale": "log" | "linear"}. */
static int parse_grid(nc_config_walker *w, const cJSON *v, const char *path, double **grid,
                      size_t *n, bool *is_auto)
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
            return nc_config_bad(w, path, "a list of 1 to 100000 positive numbers");
        if (!(*grid = malloc(m * sizeof **grid)))
            return nc_err_set(w->err, NC_ENOMEM, "out of memory");
        size_t k = 0;
        for (const cJSON *e = v->child; e; e = e->next, k++) {
            if (!cJSON_IsNumber(e) || !(e->valuedouble > 0) || !isfinite(e->valuedouble))
                return nc_config_bad(w, path, "a list of positive numbers");
            if (k && !(e->valuedouble > (*grid)[k - 1]))
                return nc_config_bad(w, path, "a list of positive numbers in ascending order");
            (*grid)[k] = e->valuedouble;
        }
        *n = m;
        return 0;
    }
    if (!cJSON_IsObject(v))
        return nc_config_bad(w, path, what);
    static const char *const keys[] = {"from", "to", "steps", "scale", NULL};
    int rc = nc_config_check_keys(w, v, path, keys);
    if (rc)
        return rc;
    double from = 0, to = 0;
    uint64_t steps = 100;
    bool has_from = false, has_to = false;
    if ((rc = nc_config_get_number(w, v, "from", path, 1e-300, 1e300, &from, &has_from)) ||
        (rc = nc_config_get_number(w, v, "to", path, 1e-300, 1e300, &to, &has_to)) ||
        (rc = nc_config_get_uint(w, v, "steps", path, 2, 100000, &steps)))
        return rc;
    char p[NC_CONFIG_PATH_MAX];
    if (!has_from || !has_to) {
        nc_config_child_path(p, path, has_from ? "to" : "from");
        return nc_config_bad(w, p, "a positive number");
    }
    if (!(to > from)) {
        nc_config_child_path(p, path, "to");
        return nc_config_bad(w, p, "a number greater than \"from\"");
    }
    char *scale = NULL;
    if ((rc = nc_config_get_string(w, v, "scale", path, &scale)))
        return rc;
    bool log_scale = !scale || strcmp(scale, "log") == 0;
    bool known = !scale || log_scale || strcmp(scale, "linear") == 0;
    free(scale);
    if (!known) {
        nc_config_child_path(p, path, "scale");
        return nc_config_bad(w, p, "\"log\" or \"linear\"");
    }
    if (!(*grid = malloc(steps * sizeof **grid)))
        return nc_err_set(w->err, NC_ENOMEM, "out of memory");
    nc_sweep_grid(from, to, (size_t)steps, log_scale, *grid);
    *n = (size_t)steps;
    return 0;
}

static int parse_amp_value(nc_config_walker *w, const cJSON *obj, const char *key, const char *path,
                           bool allow_free, nc_amp *amp)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return 0;
    char p[NC_CONFIG_PATH_MAX];
    nc_config_child_path(p, path, key);
    const char *what = "\"sqrt(d)\", \"sqrt(d-1)\", \"auto\" or a number > 0";
    if (cJSON_IsNumber(v) && v->valuedouble > 0 && isfinite(v->valuedouble)) {
        *amp = (nc_amp){NC_AMP_VALUE, v->valuedouble};
        return 0;
    }
    if (!cJSON_IsString(v) || !nc_amp_parse(v->valuestring, amp) ||
        (!allow_free && amp->rule == NC_AMP_FREE))
        return nc_config_bad(w, p, what);
    return 0;
}

int nc_config_parse_sweep(nc_config_walker *w, const cJSON *obj, nc_config_sweep *sw)
{
    static const char *const keys[] = {"alpha", "C", "steps", "gamma", "beta", "scale",
                                       "layers", "figure", "csv", "format", "width", "height",
                                       "dpi", "legend", "title", NULL};
    if (!cJSON_IsObject(obj))
        return nc_config_bad(w, "sweep", "an object");
    int rc = nc_config_check_keys(w, obj, "sweep", keys);
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
        return nc_config_bad(w, "sweep", "an \"alpha\" or \"C\" grid");
    uint64_t u = sw->auto_steps;
    if ((rc = nc_config_get_uint(w, obj, "steps", "sweep", 2, 100000, &u)))
        return rc;
    sw->auto_steps = (size_t)u;
    if ((rc = parse_amp_value(w, obj, "gamma", "sweep", false, &sw->gamma)) ||
        (rc = nc_config_get_number(w, obj, "beta", "sweep", -1e6, 1e6, &sw->beta, NULL)) ||
        (rc = parse_amp_value(w, obj, "scale", "sweep", false, &sw->scale)) ||
        (rc = nc_config_get_bool(w, obj, "figure", "sweep", &sw->figure)) ||
        (rc = nc_config_get_bool(w, obj, "csv", "sweep", &sw->csv)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "layers")) &&
        (rc = nc_config_get_strings(w, v, "sweep.layers", &sw->layers, &sw->nlayers)))
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(obj, "format")) &&
        (rc = format_list(w, v, "sweep.format", &sw->look.formats)))
        return rc;
    if ((rc = nc_config_parse_size(w, obj, "sweep", &sw->look)))
        return rc;
    return nc_config_parse_look(w, obj, "sweep", &sw->look);
}

/* "alpha0": a number, or [attention-input norm, other norms]. */
static int parse_alpha0(nc_config_walker *w, const cJSON *v, nc_config_dropin *D)
{
    const char *what = "a number in [1e-06, 1e+06], or [attention-input norm, other norms] "
                       "(two such numbers)";
    double a[2] = {NAN, NAN};
    int n = 0;
    if (cJSON_IsNumber(v)) {
        a[n++] = v->valuedouble;
    } else if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2) {
        for (const cJSON *e = v->child; e; e = e->next)
            a[n++] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    } else {
        return nc_config_bad(w, "alpha0", what);
    }
    for (int k = 0; k < n; k++)
        if (!(a[k] >= 1e-6 && a[k] <= 1e6))
            return nc_config_bad(w, "alpha0", what);
    D->alpha0 = (nc_alpha0_opt){n, a[0], n == 2 ? a[1] : a[0], "config alpha0"};
    return 0;
}

int nc_config_dropin_add_role(nc_config_dropin *D, size_t at, const char *regex,
                              const char *role, const char *origin, nc_err *err)
{
    size_t n = D->nroles + 1;
    char **rx = realloc(D->role_regex, n * sizeof *rx);
    if (rx)
        D->role_regex = rx;
    char **nm = rx ? realloc(D->role_name, n * sizeof *nm) : NULL;
    if (nm)
        D->role_name = nm;
    const char **og = nm ? realloc(D->role_origin, n * sizeof *og) : NULL;
    if (og)
        D->role_origin = og;
    char *r = og ? strdup(regex) : NULL, *m = r ? strdup(role) : NULL;
    if (!m) {
        free(r);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    at = at < D->nroles ? at : D->nroles;
    memmove(rx + at + 1, rx + at, (D->nroles - at) * sizeof *rx);
    memmove(nm + at + 1, nm + at, (D->nroles - at) * sizeof *nm);
    memmove(og + at + 1, og + at, (D->nroles - at) * sizeof *og);
    rx[at] = r;
    nm[at] = m;
    og[at] = origin;
    D->nroles = n;
    return 0;
}

/* "roles": {"REGEX": "NAME", ...}, appended in order. */
static int parse_roles(nc_config_walker *w, const cJSON *v, nc_config_dropin *D)
{
    if (!cJSON_IsObject(v))
        return nc_config_bad(w, "roles", "an object {\"REGEX\": \"role name\", ...}");
    for (const cJSON *e = v->child; e; e = e->next) {
        char p[NC_CONFIG_PATH_MAX], why[160];
        snprintf(p, sizeof p, "roles[\"%s\"]", e->string);
        if (!nc_role_regex_ok(e->string, why, sizeof why)) {
            char what[240];
            snprintf(what, sizeof what, "a usable POSIX extended regular expression as the "
                     "key (%s)", why);
            return nc_config_bad(w, p, what);
        }
        if (!cJSON_IsString(e) || !nc_role_name_ok(e->valuestring))
            return nc_config_bad(w, p, "a role name: 1 to 47 letters, digits, '_', '.' or '-' "
                             "(attn_norm, mlp_norm, final_norm, ...)");
        int rc = nc_config_dropin_add_role(D, D->nroles, e->string, e->valuestring,
                                           "config roles", w->err);
        if (rc)
            return rc;
    }
    return 0;
}

int nc_config_parse_dropin(nc_config_walker *w, const cJSON *root, nc_config_dropin *D)
{
    int rc = nc_config_get_bool(w, root, "dropin", "", &D->enabled);
    const cJSON *v;
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(root, "alpha0")))
        rc = parse_alpha0(w, v, D);
    if (!rc && (v = cJSON_GetObjectItemCaseSensitive(root, "roles")))
        rc = parse_roles(w, v, D);
    return rc;
}
