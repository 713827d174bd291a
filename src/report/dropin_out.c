/*
 * dropin_out.c - what the drop-in parameters add to a run's outputs
 * (dropin_out.h; docs/dropin.md): each layer's role, depth and "dropin"
 * block in report.json, the run-level "alpha_by_role" block (for a run
 * and, from the merged layers, for `merge`), and the three safetensors
 * files (written for a run, combined from shards for `merge`, to the same
 * bytes).
 *
 * Left out: the fits (analysis/dropin.c), role recognition and alpha0
 * (analysis/roles.c), the block's numbers (analysis/alpha_roles.c).
 */
#include "report/dropin_out.h"
#include "report/jbuild.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "util/utf8.h"

const char *nc_dropin_file(nc_dropin_kind k)
{
    static const char *const files[NC_DROPIN_COUNT] = {
        "dropin_dyt.safetensors", "dropin_dyt_alpha0.safetensors", "dropin_dyisru.safetensors"};
    return k < NC_DROPIN_COUNT ? files[k] : "?";
}

static const char *const FORMULA[NC_DROPIN_COUNT] = {"weight*tanh(alpha*x)+bias",
                                                     "weight*tanh(alpha*x)+bias",
                                                     "weight*x/sqrt(x^2+C)+bias"};

/* The layer's affine source, as the files' "M.affine" says it. */
static const char *affine_text(const nc_dropin *dr)
{
    return dr->has_weight || dr->has_bias ? "companions" : "none: weight 1, bias 0";
}

/* A malloc'd copy of s in which every byte outside a well-formed UTF-8
 * sequence is the four characters \xNN: the layer name as report.json
 * shows it (a file name cannot be refused; safetensors names must be
 * UTF-8). NULL when out of memory. */
static char *escaped(const char *s)
{
    size_t n = strlen(s), o = 0, bad;
    char *out = malloc(4 * n + 1);
    for (size_t i = 0; out && i < n;) {
        if (nc_utf8_valid(s + i, n - i, &bad)) {
            memcpy(out + o, s + i, n - i);
            o += n - i;
            break;
        }
        memcpy(out + o, s + i, bad);
        o += bad;
        o += (size_t)snprintf(out + o, 5, "\\x%02x", (unsigned char)s[i + bad]);
        i += bad + 1;
    }
    if (out)
        out[o] = '\0';
    return out;
}

/* The shortest %.15g .. %.17g text of v that reads back as v. */
static void exact_text(double v, char *buf, size_t cap)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
}

/* ------------------------------------------------------- layers[] JSON */

void nc_report_add_dropin_config(nc_jb *b, cJSON *config, const nc_config *cfg)
{
    const struct nc_config_dropin *D = &cfg->dropin;
    cJSON *o = nc_jb_obj(b, config, "dropin");
    nc_jb_bool(b, o, "enabled", D->enabled);
    if (D->alpha0.n == 0) {
        nc_jb_str(b, o, "alpha0", "DyT paper");
    } else if (D->alpha0.n == 1) {
        nc_jb_num(b, o, "alpha0", D->alpha0.attn);
    } else {
        const double a[2] = {D->alpha0.attn, D->alpha0.other};
        nc_jb_num_array(b, o, "alpha0", a, 2);
    }
    if (D->alpha0.n)
        nc_jb_str(b, o, "alpha0_origin", D->alpha0.origin);
    cJSON *roles = nc_jb_arr(b, o, "roles");
    for (size_t k = 0; roles && k < D->nroles; k++) {
        cJSON *r = nc_jb_obj(b, roles, NULL);
        nc_jb_str(b, r, "regex", D->role_regex[k]);
        nc_jb_str(b, r, "role", D->role_name[k]);
        nc_jb_str(b, r, "origin", D->role_origin[k]);
    }
}

void nc_report_add_role(nc_jb *b, cJSON *lo, const nc_plan_layer *pl)
{
    const nc_role_info *ri = &pl->role;
    nc_jb_str(b, lo, "role", ri->role);
    nc_jb_str(b, lo, "role_source", ri->source);
    if (ri->has_depth) /* else absent: the name has no block index */
        nc_jb_num(b, lo, "depth", (double)ri->depth);
}

/* One surrogate of a layer's "dropin" block. */
static void add_dropin_fit(nc_jb *b, cJSON *o, const nc_dropin *dr, nc_dropin_kind k)
{
    const nc_dropin_fit *F = &dr->fit[k];
    cJSON *f = nc_jb_obj(b, o, nc_dropin_name(k));
    const char *param = nc_dropin_param(k);
    char key[32];
    nc_jb_str(b, f, "file", nc_dropin_file(k));
    nc_jb_str(b, f, "formula", FORMULA[k]);
    if (k == NC_DROPIN_DYT_ALPHA0) {
        nc_jb_num(b, f, "alpha", dr->alpha0.value);
        nc_jb_str(b, f, "alpha0_rule", dr->alpha0.rule);
        nc_jb_bool(b, f, "llm", dr->alpha0.llm);
        nc_jb_bool(b, f, "extrapolated", dr->alpha0.extrapolated);
    }
    if (!dr->done) {
        nc_jb_str(b, f, "status", dr->status);
        return;
    }
    if (k != NC_DROPIN_DYT_ALPHA0)
        nc_jb_num(b, f, param, F->param);
    snprintf(key, sizeof key, "%s_float32", param);
    nc_jb_num(b, f, key, F->ok ? (double)F->param32 : NAN);
    if (k != NC_DROPIN_DYT_ALPHA0) {
        nc_jb_num(b, f, "objective", F->objective);
        nc_jb_num(b, f, "iterations", F->iterations);
        nc_jb_bool(b, f, "converged", F->converged);
    }
    nc_jb_num(b, f, "rmse_vs_recomputed", F->rmse_rec);
    nc_jb_num(b, f, "rmse_vs_real", F->rmse_real);
    char status[320];
    snprintf(status, sizeof status, "%s%s", F->status,
             !F->ok ? ""
             : !dr->has_real ? "; rmse_vs_real: the dump has no real output"
             : !isfinite(F->rmse_real) ? "; rmse_vs_real: the real output has non-finite "
                                         "values where the input is finite"
                                       : "");
    nc_jb_str(b, f, "status", status);
}

void nc_report_add_dropin(nc_jb *b, cJSON *lo, const nc_plan_layer *pl)
{
    if (!pl->has_dropin)
        return;
    const nc_dropin *dr = &pl->dropin;
    cJSON *o = nc_jb_obj(b, lo, "dropin");
    nc_jb_str(b, o, "role", pl->role.role);
    nc_jb_str(b, o, "affine", affine_text(dr));
    nc_jb_bool(b, o, "has_weight", dr->has_weight);
    nc_jb_bool(b, o, "has_bias", dr->has_bias);
    nc_jb_bool(b, o, "has_real_output", dr->has_real);
    nc_jb_str(b, o, "weighting", !dr->has_weight ? "none: no weight (w_i = 1)"
                           : dr->weighted ? "w_i^2: alpha and C minimise sum_i w_i^2 SSE_i"
                                          : "none: the weight is one value in every channel "
                                            "(the same minimum as unweighted)");
    nc_jb_num(b, o, "points", (double)dr->points);
    nc_jb_str(b, o, "status", dr->done ? "ok" : dr->status);
    cJSON *t = nc_jb_obj(b, o, "timing");
    nc_jb_num(b, t, "passes", dr->passes);
    nc_jb_num(b, t, "fits_s", dr->fits_s);
    nc_jb_num(b, t, "rmse_s", dr->rmse_s);
    nc_jb_num(b, t, "time_s", dr->time_s);
    for (int k = 0; k < NC_DROPIN_COUNT; k++)
        add_dropin_fit(b, o, dr, (nc_dropin_kind)k);
}

/* ---------------------------------------------------- alpha_by_role JSON */

void nc_report_add_alpha_roles(nc_jb *b, cJSON *run, const nc_role_layer *L,
                               const nc_alpha_roles *A)
{
    cJSON *o = nc_jb_obj(b, run, "alpha_by_role");
    nc_jb_str(b, o, "alpha", "layers[].dropin.dyt.alpha: the drop-in DyT's fitted alpha");
    nc_jb_str(b, o, "grouping", "model groups: the layers sharing d (dim) and the norm kind, in the "
                          "order of their first layer; roles in the order of their first layer");
    nc_jb_str(b, o, "note", "a trained model's fitted alpha is what its norm behaves like, not a "
                      "proven initialisation for training from scratch; alpha0 is the DyT "
                      "paper's initial value for training DyT");
    cJSON *rows = nc_jb_arr(b, o, "roles");
    for (size_t r = 0; rows && r < A->nrows; r++) {
        const nc_role_row *R = &A->row[r];
        const nc_group_key *g = &A->group[R->group];
        cJSON *ro = nc_jb_obj(b, rows, NULL);
        nc_jb_num(b, ro, "group", (double)R->group);
        nc_jb_num(b, ro, "d", (double)g->d);
        nc_jb_str(b, ro, "norm", nc_norm_name((nc_norm_kind)g->norm));
        nc_jb_str(b, ro, "role", R->role);
        nc_jb_num(b, ro, "layers", (double)R->nlayers);
        cJSON *per = nc_jb_arr(b, ro, "by_layer");
        for (size_t j = 0; per && j < R->nlayers; j++) {
            const nc_role_layer *l = &L[R->layer[j]];
            cJSON *e = nc_jb_obj(b, per, NULL);
            nc_jb_str(b, e, "name", l->name);
            if (l->has_depth)
                nc_jb_num(b, e, "depth", l->depth);
            nc_jb_num(b, e, "alpha", l->alpha);
            nc_jb_ensure_status(b, e, "no fitted alpha (layers[].dropin says why)");
        }
        nc_jb_num(b, ro, "fitted", (double)R->nalpha);
        nc_jb_num(b, ro, "median", R->median);
        nc_jb_num(b, ro, "min", R->min);
        nc_jb_num(b, ro, "max", R->max);
        if (R->nalpha > 0) {
            nc_jb_str(b, ro, "min_layer", L[R->min_layer].name);
            nc_jb_str(b, ro, "max_layer", L[R->max_layer].name);
        }
        nc_jb_num(b, ro, "alpha0", R->alpha0);
        nc_jb_str(b, ro, "alpha0_rule", isfinite(R->alpha0) && R->alpha0_rule
                                      ? R->alpha0_rule
                                      : "the role's layers have different alpha0: see "
                                        "layers[].dropin.dyt_alpha0");
        nc_jb_num(b, ro, "median_over_alpha0", R->median / R->alpha0);
        if (ro && !cJSON_AddNullToObject(ro, "ci"))
            b->ok = false;
        nc_jb_str(b, ro, "status", R->nalpha == 0 ? "no bootstrap; no layer of the role has a fitted "
                                              "alpha"
                                            : "no bootstrap: ci (the median's interval) is not "
                                              "computed yet");
    }
}

/* A string of the report, or NULL. */
static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A layer of the block from its report.json block (alpha_roles.h). */
static void role_layer_from_json(const cJSON *lo, nc_role_layer *l)
{
    const cJSON *dr = cJSON_GetObjectItemCaseSensitive(lo, "dropin");
    const cJSON *dyt = cJSON_GetObjectItemCaseSensitive(dr, "dyt");
    const cJSON *a0 = cJSON_GetObjectItemCaseSensitive(dr, "dyt_alpha0");
    const char *name = jstr(lo, "name"), *role = jstr(lo, "role"), *norm = jstr(lo, "norm");
    double d = jnum(lo, "dim"), depth = jnum(lo, "depth");
    *l = (nc_role_layer){.name = name ? name : "", .role = role ? role : "unknown",
                         .has_depth = isfinite(depth), .depth = depth,
                         .key = {jstr(lo, "group"), jstr(lo, "source"),
                                 norm && strcmp(norm, "rmsnorm") == 0 ? NC_RMSNORM
                                                                      : NC_LAYERNORM,
                                 d >= 0 ? (size_t)d : 0},
                         .alpha = jnum(dyt, "alpha"), .alpha0 = jnum(a0, "alpha"),
                         .alpha0_rule = jstr(a0, "alpha0_rule")};
}

/* The alpha-by-role table of root's layers: added to its block "run" when
 * add, shown with show (when not NULL). */
static int roles_from_layers(cJSON *root, bool add, nc_roles_show show, nc_err *err)
{
    cJSON *run = cJSON_GetObjectItemCaseSensitive(root, "run");
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    size_t n = (size_t)cJSON_GetArraySize(layers);
    bool any = false; /* a run with the drop-in parameters (config "dropin") */
    for (const cJSON *lo = layers ? layers->child : NULL; lo; lo = lo->next)
        any = any || cJSON_GetObjectItemCaseSensitive(lo, "dropin");
    if (!run || !any)
        return 0;
    nc_role_layer *L = calloc(n, sizeof *L);
    if (!L)
        return nc_err_set(err, NC_ENOMEM, "out of memory for the alpha-by-role block");
    size_t k = 0;
    for (const cJSON *lo = layers->child; lo && k < n; lo = lo->next)
        role_layer_from_json(lo, &L[k++]);
    nc_alpha_roles A;
    int rc = nc_alpha_roles_compute(L, n, &A, err);
    if (!rc && add) {
        nc_jb b = {.ok = true};
        nc_report_add_alpha_roles(&b, run, L, &A);
        if (!b.ok)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for the alpha-by-role block");
    }
    if (!rc && show)
        show(&A);
    if (!rc)
        nc_alpha_roles_free(&A);
    free(L);
    return rc;
}

int nc_report_add_alpha_roles_from_layers(cJSON *root, nc_err *err)
{
    return roles_from_layers(root, true, NULL, err);
}

int nc_report_show_alpha_roles_from_layers(const cJSON *root, nc_roles_show show, nc_err *err)
{
    return roles_from_layers((cJSON *)root, false, show, err); /* root is only read */
}

/* ------------------------------------------------------------- the files */

/* The metadata of a layer, in this order: M.<suffix>. */
static const char *const META[] = {"role", "affine", "rmse_vs_recomputed", "rmse_vs_real",
                                   "alpha0_rule"};
#define NMETA (sizeof META / sizeof META[0])

/* One layer's part of a file: its three tensors (little-endian F32 bytes)
 * and its metadata values (NULL: no such key). */
typedef struct rec {
    const char *name;
    uint64_t d;
    const void *param, *weight, *bias;
    const char *meta[NMETA];
} rec;

/* The file of surrogate k from n records, into out. Tensor names and
 * metadata keys are made here. */
static int write_records(const rec *R, size_t n, nc_dropin_kind k, nc_membuf *out, nc_err *err)
{
    nc_st_entry *e = calloc(3 * n + 1, sizeof *e);
    uint64_t *shapes = calloc(2 * n + 1, sizeof *shapes);
    char **owned = calloc(3 * n + NMETA * n + 1, sizeof *owned);
    const char **meta = calloc(2 * (2 + NMETA * n) + 1, sizeof *meta);
    size_t no = 0, nm = 0;
    int rc = e && shapes && owned && meta ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory");
    static const char *const part[3] = {"", "weight", "bias"};
    if (!rc) {
        meta[nm++] = "format";
        meta[nm++] = NC_DROPIN_FORMAT;
        meta[nm++] = "surrogate";
        meta[nm++] = nc_dropin_name(k);
    }
    for (size_t l = 0; l < n && !rc; l++) {
        shapes[2 * l] = 1;
        shapes[2 * l + 1] = R[l].d;
        const void *data[3] = {R[l].param, R[l].weight, R[l].bias};
        for (int j = 0; j < 3 && !rc; j++) {
            const char *suffix = j ? part[j] : nc_dropin_param(k);
            size_t len = strlen(R[l].name) + strlen(suffix) + 2;
            if (!(owned[no] = malloc(len))) {
                rc = nc_err_set(err, NC_ENOMEM, "out of memory");
                break;
            }
            snprintf(owned[no], len, "%s.%s", R[l].name, suffix);
            e[3 * l + j] = (nc_st_entry){owned[no++], NC_F32, 1, &shapes[2 * l + (j > 0)],
                                         data[j]};
        }
        for (size_t m = 0; m < NMETA && !rc; m++) {
            if (!R[l].meta[m])
                continue;
            size_t len = strlen(R[l].name) + strlen(META[m]) + 2;
            if (!(owned[no] = malloc(len))) {
                rc = nc_err_set(err, NC_ENOMEM, "out of memory");
                break;
            }
            snprintf(owned[no], len, "%s.%s", R[l].name, META[m]);
            meta[nm++] = owned[no++];
            meta[nm++] = R[l].meta[m];
        }
    }
    if (!rc) {
        nc_sink sink = nc_membuf_sink(out);
        rc = nc_st_write(&sink, e, 3 * n, meta, err);
    }
    for (size_t j = 0; owned && j < no; j++)
        free(owned[j]);
    free(owned);
    free(meta);
    free(shapes);
    free(e);
    return rc;
}

/* v as 4 little-endian bytes at p */
static void put_f32(unsigned char *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(u >> (8 * k));
}

int nc_report_dropin_file(const nc_plan *plan, nc_dropin_kind k, nc_membuf *out, nc_err *err)
{
    size_t n = 0, bytes = 0;
    for (size_t l = 0; l < plan->nlayers; l++) {
        const nc_plan_layer *pl = &plan->layers[l];
        if (pl->done && pl->has_dropin && pl->dropin.done && pl->dropin.fit[k].ok) {
            n++;
            bytes += 4 * (1 + 2 * pl->dropin.d);
        }
    }
    rec *R = calloc(n + 1, sizeof *R);
    unsigned char *buf = malloc(bytes + 1);
    char(*txt)[2][40] = calloc(n + 1, sizeof *txt), **names = calloc(n + 1, sizeof *names);
    int rc = R && buf && txt && names ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory");
    size_t j = 0, at = 0;
    for (size_t l = 0; l < plan->nlayers && !rc; l++) {
        const nc_plan_layer *pl = &plan->layers[l];
        const nc_dropin *dr = &pl->dropin;
        const nc_dropin_fit *F = &dr->fit[k];
        if (!(pl->done && pl->has_dropin && dr->done && F->ok))
            continue;
        rec *r = &R[j];
        if (!(r->name = names[j] = escaped(pl->name))) {
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
            break;
        }
        r->d = dr->d;
        r->param = buf + at;
        put_f32(buf + at, F->param32);
        at += 4;
        for (int part = 0; part < 2; part++) {
            const float *v = part ? F->bias : F->weight;
            *(part ? &r->bias : &r->weight) = buf + at;
            for (size_t i = 0; i < dr->d; i++, at += 4)
                put_f32(buf + at, v[i]);
        }
        exact_text(F->rmse_rec, txt[j][0], sizeof txt[j][0]);
        exact_text(F->rmse_real, txt[j][1], sizeof txt[j][1]);
        r->meta[0] = pl->role.role;
        r->meta[1] = affine_text(dr);
        r->meta[2] = txt[j][0];
        r->meta[3] = dr->has_real ? txt[j][1] : NULL;
        r->meta[4] = k == NC_DROPIN_DYT_ALPHA0 ? dr->alpha0.rule : NULL;
        j++;
    }
    if (!rc)
        rc = write_records(R, n, k, out, err);
    for (size_t l = 0; names && l < n; l++)
        free(names[l]);
    free(names);
    free(txt);
    free(buf);
    free(R);
    return rc;
}

/* ----------------------------------------------------------------- merge */

/* The checked tensor "<name>.<suffix>" of st: F32 of rank 1 and length
 * want; NULL when absent; *bad when present but of another dtype or
 * shape. */
static const nc_tensor *part_of(const nc_st *st, const char *name, const char *suffix,
                                uint64_t want, bool *bad)
{
    char key[4096];
    snprintf(key, sizeof key, "%s.%s", name, suffix);
    const nc_tensor *t = nc_st_find(st, key);
    if (t && !(t->dtype == NC_F32 && t->rank == 1 && (want == 0 || t->shape[0] == want)))
        *bad = true;
    return t;
}

/* Layer `name`'s record from its shard's parsed file (r->name NULL: the
 * shard wrote no parameters for it). */
static int rec_from_file(const nc_st *st, const char *name, const char *path,
                         nc_dropin_kind k, rec *r, nc_err *err)
{
    bool bad = false;
    const nc_tensor *p = part_of(st, name, nc_dropin_param(k), 1, &bad);
    const nc_tensor *w = part_of(st, name, "weight", 0, &bad);
    const nc_tensor *b = w ? part_of(st, name, "bias", w->shape[0], &bad) : NULL;
    memset(r, 0, sizeof *r);
    if (!p && !w && !b)
        return 0;
    if (bad || !p || !w || !b)
        return nc_err_set(err, NC_EINVAL, "merge: %s: layer '%s': expected F32 tensors "
                          "'%s.%s' [1], '%s.weight' [d] and '%s.bias' [d]", path, name, name,
                          nc_dropin_param(k), name, name);
    r->name = name;
    r->d = w->shape[0];
    r->param = p->data;
    r->weight = w->data;
    r->bias = b->data;
    for (size_t m = 0; m < NMETA; m++) {
        char key[4096];
        snprintf(key, sizeof key, "%s.%s", name, META[m]);
        r->meta[m] = nc_st_meta(st, key);
    }
    return 0;
}

int nc_report_dropin_merge(const char *const *names, size_t nl, const size_t *owner,
                           const unsigned char *const *buf, const size_t *len,
                           const char *const *path, size_t ns, nc_dropin_kind k,
                           nc_membuf *out, nc_err *err)
{
    nc_st **st = calloc(ns + 1, sizeof *st);
    rec *R = calloc(nl + 1, sizeof *R);
    int rc = st && R ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory");
    for (size_t s = 0; s < ns && !rc; s++) {
        if ((rc = nc_st_parse(buf[s], len[s], path[s], &st[s], err)))
            break;
        const char *fmt = nc_st_meta(st[s], "format"), *sur = nc_st_meta(st[s], "surrogate");
        if (!fmt || strcmp(fmt, NC_DROPIN_FORMAT) != 0 || !sur ||
            strcmp(sur, nc_dropin_name(k)) != 0)
            rc = nc_err_set(err, NC_EINVAL, "merge: %s: __metadata__: expected format '%s' and "
                            "surrogate '%s'", path[s], NC_DROPIN_FORMAT, nc_dropin_name(k));
    }
    size_t n = 0;
    for (size_t l = 0; l < nl && !rc; l++) {
        size_t s = owner[l];
        if ((rc = rec_from_file(st[s], names[l], path[s], k, &R[n], err)))
            break;
        n += R[n].name != NULL;
    }
    if (!rc)
        rc = write_records(R, n, k, out, err);
    for (size_t s = 0; st && s < ns; s++)
        nc_st_free(st[s]);
    free(st);
    free(R);
    return rc;
}
