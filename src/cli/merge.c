/*
 * merge.c - `normcmp merge OUT SHARD_DIR...`: one report from the folders
 * of `normcmp run CONFIG --shard K/N` (docs/whole_models.md).
 *
 * The shards must come from one config (the "shard" blocks' config_sha256,
 * layer lists and counts agree) and cover every shard index exactly once;
 * anything else is refused with one line and exit 2, before OUT is touched.
 * The merged report takes each layer's block verbatim from the shard that
 * analysed it, in plan order, so every per-layer number equals an unsharded
 * run's; the run-level figures that need only per-layer numbers (alpha-std,
 * tanh-family) are drawn here from those numbers, the shards' per-layer
 * figures are copied, and index.html is written beside report.json.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "plan/plan.h"
#include "plot/figures.h"
#include "report/dropin_out.h"
#include "report/html.h"
#include "report/jbuild.h"
#include "report/run_block.h"
#include "report/shard.h"
#include "report/shardcheck.h"
#include "util/outfile.h"
#include "util/readfile.h"

#define MERGE_MAX_FILES 65536

static const char merge_help[] =
    "usage: normcmp merge OUT SHARD_DIR... [options]\n"
    "Combines the output folders of 'normcmp run CONFIG --shard K/N' (K = 1..N) into\n"
    "OUT: report.json with every layer in plan order (each layer's numbers as its\n"
    "shard computed them, equal to an unsharded run), the shards' figures, the\n"
    "run-level figures (alpha-std, tanh-family) and index.html. Refuses shards of\n"
    "different configs, and missing or repeated shards (exit 2).\n"
    "\n"
    "  -q, --quiet                nothing on stderr but errors: no notes or warnings\n"
    "  -h, --help                 this help\n";

/* What merge reads from a shard folder (an untrusted folder: every file is
 * opened without blocking, must be a regular file inside the folder, not
 * reached through a link leading out of it, and is read up to a bound;
 * util/readfile.h). */
#define MERGE_COPY_MAX_BYTES ((uint64_t)4 << 30) /* above any figure: 20000^2 RGBA pixels */
#define DROPIN_MAX_BYTES ((uint64_t)1 << 30)     /* a shard's drop-in file: (2d + 1) floats a
                                                  * layer, 1 GB is 130k layers of d = 1024 */

typedef struct shard {
    const char *dir;
    nc_shard_report rep; /* the checked report.json (report/shardcheck.h) */
    const cJSON *root;   /* rep.root */
    const cJSON *block;  /* root.shard */
    size_t index, count; /* K and N */
    const char *sha;     /* shard.config_sha256 */
} shard;

/* err's message again, as merge's ("merge: <message>"), same code. */
static int as_merge(nc_err *err, const nc_err *e)
{
    return nc_err_set(err, e->code ? e->code : NC_EINTERNAL, "merge: %s", e->msg);
}

/* The shard folder dir opened for the reads beneath it: its descriptor, or
 * a negative NC_E* code (NC_EIO when descriptors or memory ran out). */
static int shard_dir(const char *dir, nc_err *err)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        return dfd;
    int e = errno;
    return nc_err_set_errno(err, e == EMFILE || e == ENFILE || e == ENOMEM ? NC_EIO : NC_EINVAL, e,
                            "%s: cannot open the shard folder", dir);
}

/* Opens dir/name for reading as an untrusted file (see above): *fd and
 * *st on success; messages name "dir/name" (shown, shown_len bytes). */
static int shard_open(const char *dir, const char *name, const char *noun, uint64_t max,
                      int *fd, struct stat *st, char *shown, size_t shown_len, nc_err *err)
{
    snprintf(shown, shown_len, "%s/%s", dir, name);
    *fd = -1;
    int dfd = shard_dir(dir, err);
    if (dfd < 0)
        return dfd;
    const nc_infile in = {.noun = noun, .max_bytes = max, .dirfd = dfd, .beneath = true,
                          .shown = shown};
    int rc = nc_infile_open(name, &in, fd, st, err);
    close(dfd);
    return rc;
}

/* dir/name whole into *buf (NUL-terminated), as shard_open opens it. */
static int shard_read(const char *dir, const char *name, const char *noun, uint64_t max,
                      char **buf, size_t *len, nc_err *err)
{
    char shown[4096];
    snprintf(shown, sizeof shown, "%s/%s", dir, name);
    *buf = NULL;
    int dfd = shard_dir(dir, err);
    if (dfd < 0)
        return dfd;
    const nc_infile in = {.noun = noun, .max_bytes = max, .dirfd = dfd, .beneath = true,
                          .shown = shown};
    int rc = nc_infile_read(name, &in, buf, len, err);
    close(dfd);
    return rc;
}

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

/* Reads and checks dir/report.json (report/shardcheck.h). */
static int load_shard(const char *dir, shard *s, nc_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", dir);
    s->dir = dir;
    struct stat st;
    if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return nc_err_set(err, NC_EINVAL, "merge: %s: cannot read (expected the output folder "
                          "of 'normcmp run CONFIG --shard K/N')", path);
    char *text;
    size_t len;
    nc_err e = {0}; /* said again as merge's */
    int rc = shard_read(dir, "report.json", "shard report", NC_SHARD_REPORT_MAX_BYTES, &text,
                        &len, &e);
    if (!rc) {
        rc = nc_shard_report_parse(text, len, path, &s->rep, &e);
        free(text);
    }
    if (rc)
        return as_merge(err, &e);
    s->root = s->rep.root;
    s->block = cJSON_GetObjectItemCaseSensitive(s->root, "shard");
    s->index = s->rep.index;
    s->count = s->rep.count;
    s->sha = s->rep.sha;
    return 0;
}

/* Same config, same layers, same count; every index once. */
static int check_shards(const shard *s, size_t n, nc_err *err)
{
    const cJSON *layers0 = cJSON_GetObjectItemCaseSensitive(s[0].block, "layers");
    for (size_t k = 1; k < n; k++) {
        if (strcmp(s[k].sha, s[0].sha) != 0)
            return nc_err_set(err, NC_EINVAL, "merge: %s and %s come from different configs "
                              "(config_sha256 %.12s... and %.12s...)", s[0].dir, s[k].dir,
                              s[0].sha, s[k].sha);
        if (s[k].count != s[0].count)
            return nc_err_set(err, NC_EINVAL, "merge: %s is shard %zu/%zu but %s is shard "
                              "%zu/%zu (expected one N)", s[0].dir, s[0].index, s[0].count,
                              s[k].dir, s[k].index, s[k].count);
        if (!cJSON_Compare(layers0, cJSON_GetObjectItemCaseSensitive(s[k].block, "layers"), 1))
            return nc_err_set(err, NC_EINVAL, "merge: %s and %s list different layers (one "
                              "config on different inputs?)", s[0].dir, s[k].dir);
        for (size_t j = 0; j < k; j++)
            if (s[j].index == s[k].index)
                return nc_err_set(err, NC_EINVAL, "merge: %s and %s are both shard %zu/%zu "
                                  "(overlapping shards)", s[j].dir, s[k].dir, s[k].index,
                                  s[k].count);
    }
    if (n != s[0].count) {
        size_t missing = 1;
        for (bool found = true; found && missing <= s[0].count; missing += found) {
            found = false;
            for (size_t k = 0; k < n; k++)
                found = found || s[k].index == missing;
        }
        return nc_err_set(err, NC_EINVAL, "merge: shard %zu/%zu is missing (got %zu of %zu "
                          "folders)", missing, s[0].count, n, s[0].count);
    }
    return 0;
}

/* The shard that analysed plan layer i, and its layer block. */
static const cJSON *layer_of(const shard *s, size_t n, size_t i, const char *name,
                             const shard **owner, nc_err *err)
{
    for (size_t k = 0; k < n; k++) {
        if (i % s[k].count != s[k].index - 1)
            continue;
        *owner = &s[k];
        const cJSON *l;
        cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(s[k].root, "layers"))
        {
            const char *nm = jstr(l, "name");
            if (nm && strcmp(nm, name) == 0)
                return l;
        }
        nc_err_set(err, NC_EINVAL, "merge: %s/report.json: layers: '%s' is missing (expected "
                   "every layer of shard %zu/%zu; did its run fail?)", s[k].dir, name,
                   s[k].index, s[k].count);
        return NULL;
    }
    nc_err_set(err, NC_EINTERNAL, "merge: no shard owns layer %zu", i);
    return NULL;
}

static bool add_copy(cJSON *arr, const cJSON *item)
{
    cJSON *c = cJSON_Duplicate(item, true);
    return c && cJSON_AddItemToArray(arr, c);
}

/* root.layers and root.inputs in plan order, from the shards. */
static int merge_layers(const shard *s, size_t n, cJSON *root, nc_err *err)
{
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
    if (!layers || !inputs)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    size_t i = 0;
    const cJSON *nm;
    cJSON_ArrayForEach(nm, cJSON_GetObjectItemCaseSensitive(s[0].block, "layers"))
    {
        const shard *own = NULL;
        const char *name = cJSON_IsString(nm) ? nm->valuestring : "";
        const cJSON *l = layer_of(s, n, i++, name, &own, err);
        if (!l)
            return NC_EINVAL;
        if (!add_copy(layers, l))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        const cJSON *in;
        cJSON_ArrayForEach(in, cJSON_GetObjectItemCaseSensitive(own->root, "inputs"))
        {
            const char *ln = jstr(in, "layer");
            if (ln && strcmp(ln, name) == 0 && !add_copy(inputs, in))
                return nc_err_set(err, NC_ENOMEM, "out of memory");
        }
    }
    /* an input file read by two shards must be the same file (generated
     * layers are "memory" inputs, one per layer under a shared label) */
    const cJSON *a, *b;
    cJSON_ArrayForEach(a, inputs)
    {
        for (b = a->next; b; b = b->next) {
            const char *pa = jstr(a, "path"), *pb = jstr(b, "path");
            const char *ha = jstr(a, "sha256"), *hb = jstr(b, "sha256");
            const char *fa = jstr(a, "format");
            if (pa && pb && ha && hb && fa && strcmp(fa, "memory") != 0 &&
                strcmp(pa, pb) == 0 && strcmp(ha, hb) != 0)
                return nc_err_set(err, NC_EINVAL, "merge: input %s has different SHA-256 in "
                                  "two shards (the file changed between their runs)", pa);
        }
    }
    return 0;
}

/* One swap entry of the merged report ({"delta", "delta_se", ...}). */
static nc_swap_entry swap_entry(const cJSON *o)
{
    nc_swap_entry e = {.param = NAN};
    e.delta = jnum(o, "delta");
    e.delta_se = jnum(o, "delta_se");
    e.acc_delta = jnum(o, "accuracy_delta");
    e.acc_delta_se = jnum(o, "accuracy_delta_se");
    e.ok = isfinite(e.delta);
    return e;
}

/* The swap test's results of the merged report (its top-level "swap" and
 * the layers' "swap" blocks, which merge has checked) into plan->swap,
 * for the swap-depth figure. Nothing when the report has none. */
static int numbers_swap(const cJSON *root, const cJSON *layers, nc_plan *plan, nc_err *err)
{
    const cJSON *top = cJSON_GetObjectItemCaseSensitive(root, "swap");
    if (!cJSON_IsObject(top))
        return 0;
    nc_swap *sw = &plan->swap;
    memset(sw, 0, sizeof *sw);
    plan->has_swap = true;
    snprintf(sw->unit, sizeof sw->unit, "%s", jstr(top, "unit") ? jstr(top, "unit") : "nats");
    sw->current = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(top, "current"));
    if (!(sw->layer = calloc(plan->nlayers ? plan->nlayers : 1, sizeof *sw->layer)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(top, "all"), *l;
    for (int k = 0; k < NC_DROPIN_COUNT; k++)
        sw->all[k] = swap_entry(cJSON_GetObjectItemCaseSensitive(all, nc_dropin_name(k)));
    cJSON_ArrayForEach(l, layers)
    {
        const cJSON *ls = cJSON_GetObjectItemCaseSensitive(l, "swap");
        const char *name = jstr(l, "name");
        if (!cJSON_IsObject(ls) || !name)
            continue;
        nc_swap_layer *o = &sw->layer[sw->nlayers];
        if (!(o->name = strdup(name)))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        sw->nlayers++;
        for (int k = 0; k < NC_DROPIN_COUNT; k++) {
            o->s[k] = swap_entry(cJSON_GetObjectItemCaseSensitive(ls, nc_dropin_name(k)));
            sw->has[k] = sw->has[k] || o->s[k].ok;
        }
    }
    return 0;
}

/* A plan holding, per layer, the numbers the run-level figures read, taken
 * from the merged report (JSON numbers round-trip exactly). */
static int numbers_plan(const cJSON *root, const nc_config *cfg, nc_plan *plan, nc_err *err)
{
    memset(plan, 0, sizeof *plan);
    plan->cfg = cfg;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    size_t n = (size_t)cJSON_GetArraySize(layers);
    if (n == 0)
        return 0;
    if (!(plan->layers = calloc(n, sizeof *plan->layers)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        nc_plan_layer *pl = &plan->layers[plan->nlayers++];
        nc_layer_result *r = &pl->result;
        const char *name = jstr(l, "name");
        pl->name = strdup(name ? name : "");
        if (!pl->name)
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        r->name = pl->name;
        pl->done = pl->in_shard = true;
        const char *norm = jstr(l, "norm");
        pl->norm = r->norm = norm && strcmp(norm, "rmsnorm") == 0 ? NC_RMSNORM : NC_LAYERNORM;
        r->eps = pl->eps = jnum(l, "eps");
        r->N = (size_t)jnum(l, "tokens");
        r->d = (size_t)jnum(l, "dim");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(l, "input_stats");
        r->stats.mean = jnum(st, "mean");
        r->stats.std = jnum(st, "std");
        r->stats.rms = jnum(st, "rms");
        r->stats.rho = jnum(st, "rho");
        r->stats.min = jnum(st, "min");
        r->stats.max = jnum(st, "max");
        const char *src = jstr(l, "source"), *role = jstr(l, "role");
        if (src && !(pl->source = strdup(src)))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        snprintf(pl->role.role, sizeof pl->role.role, "%s", role ? role : "unknown");
        double pts = jnum(cJSON_GetObjectItemCaseSensitive(l, "fit_data"), "points");
        r->points = pts > 0 ? (size_t)pts : 0;
        const cJSON *fits = cJSON_GetObjectItemCaseSensitive(l, "fits");
        for (int id = 0; id < NC_FIT_COUNT; id++) {
            const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(fits, s->name);
            nc_fit_result *fr = &r->fits[id];
            fr->enabled = f != NULL;
            fr->ok = f && cJSON_GetObjectItemCaseSensitive(f, "rmse") != NULL;
            for (int q = 0; q < s->nparams; q++)
                fr->params.p[q] = jnum(f, s->param[q]);
            fr->rmse = jnum(f, "rmse");
            fr->r2 = jnum(f, "r2");
        }
    }
    return numbers_swap(root, layers, plan, err);
}

static void numbers_plan_free(nc_plan *plan)
{
    for (size_t k = 0; k < plan->nlayers; k++) {
        free(plan->layers[k].name);
        free(plan->layers[k].source);
    }
    free(plan->layers);
    if (plan->has_swap)
        nc_swap_free(&plan->swap);
}

typedef struct outlist {
    char **name;
    size_t n;
} outlist;

static bool listed(const outlist *o, const char *name)
{
    for (size_t k = 0; k < o->n; k++)
        if (strcmp(o->name[k], name) == 0)
            return true;
    return false;
}

static int list_add(outlist *o, const char *name, nc_err *err)
{
    if (o->n >= MERGE_MAX_FILES)
        return nc_err_set(err, NC_EINVAL, "merge: the shards list more than %d output files",
                          MERGE_MAX_FILES);
    if (!(o->name[o->n] = strdup(name)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    o->n++;
    return 0;
}

/* Copies dir/name into the output set, streamed (never whole in memory),
 * its permissions never wider than the shard's file. */
static int copy_into(nc_outset *set, const char *dir, const char *name, nc_err *err)
{
    char shown[4096];
    int fd;
    struct stat st;
    nc_err e = {0};
    int rc = shard_open(dir, name, "output file", MERGE_COPY_MAX_BYTES, &fd, &st, shown,
                        sizeof shown, &e);
    if (rc)
        return as_merge(err, &e);
    rc = nc_outset_add_copy(set, name, fd, (uint64_t)st.st_size, st.st_mode, shown, err);
    close(fd);
    return rc;
}

/* Whether shard s lists name among its outputs. */
static bool lists_output(const shard *s, const char *name)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(s->root, "outputs"))
    {
        if (strcmp(f->valuestring, name) == 0)
            return true;
    }
    return false;
}

/* The drop-in file kind (report/dropin_out.h) named name, or -1. */
static int dropin_kind(const char *name)
{
    for (int k = 0; k < NC_DROPIN_COUNT; k++)
        if (strcmp(name, nc_dropin_file((nc_dropin_kind)k)) == 0)
            return k;
    return -1;
}

/* One drop-in file from the shards' (docs/dropin.md): each layer's
 * parameters from the shard that analysed it, in plan order. */
static int merge_dropin_kind(const shard *s, size_t n, nc_dropin_kind k, nc_outset *set,
                             outlist *outs, nc_err *err)
{
    const char *file = nc_dropin_file(k);
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(s[0].block, "layers");
    size_t nl = (size_t)cJSON_GetArraySize(layers), l = 0;
    const char **names = calloc(nl + 1, sizeof *names), **paths = calloc(n, sizeof *paths);
    size_t *owner = calloc(nl + 1, sizeof *owner), *len = calloc(n, sizeof *len);
    char **buf = calloc(n, sizeof *buf), (*path)[4096] = calloc(n, sizeof *path);
    nc_membuf mb = {0};
    int rc = names && paths && owner && len && buf && path ? 0
             : nc_err_set(err, NC_ENOMEM, "out of memory");
    const cJSON *nm;
    cJSON_ArrayForEach(nm, layers)
    {
        for (size_t q = 0; !rc && q < n; q++)
            if (l % s[q].count == s[q].index - 1)
                owner[l] = q;
        names[l++] = cJSON_IsString(nm) ? nm->valuestring : "";
    }
    for (size_t q = 0; q < n && !rc; q++) {
        snprintf(path[q], sizeof path[q], "%s/%s", s[q].dir, file);
        paths[q] = path[q];
        nc_err e = {0};
        if (!lists_output(&s[q], file))
            rc = nc_err_set(err, NC_EINVAL, "merge: %s: not in the shard's outputs (expected "
                            "the drop-in file every shard of a run writes; docs/dropin.md)",
                            path[q]);
        else if (shard_read(s[q].dir, file, "drop-in file", DROPIN_MAX_BYTES, &buf[q], &len[q],
                            &e))
            rc = as_merge(err, &e);
    }
    if (!rc)
        rc = nc_report_dropin_merge(names, nl, owner, (const unsigned char *const *)buf, len,
                                    paths, n, k, &mb, err);
    if (!rc)
        rc = nc_outset_add(set, file, mb.data, mb.len, err);
    if (!rc)
        rc = list_add(outs, file, err);
    nc_membuf_free(&mb);
    for (size_t q = 0; buf && q < n; q++)
        free(buf[q]);
    free(buf);
    free(path);
    free(len);
    free(owner);
    free(paths);
    free(names);
    return rc;
}

/* The drop-in files, when the first shard wrote them. */
static int merge_dropin(const shard *s, size_t n, nc_outset *set, outlist *outs, nc_err *err)
{
    for (int k = 0; k < NC_DROPIN_COUNT; k++) {
        if (!lists_output(&s[0], nc_dropin_file((nc_dropin_kind)k)))
            continue;
        int rc = merge_dropin_kind(s, n, (nc_dropin_kind)k, set, outs, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* What merge does with a file a shard's "outputs" lists. A kind of output
 * that merge combines from every shard gets its own case here. */
typedef enum out_kind {
    OUT_COPY,     /* a layer's figure or CSV: written by one shard, copied */
    OUT_ONCE,     /* the config copy: the same in every shard, copied once */
    OUT_REDONE,   /* index.html: written again for the merged report */
    OUT_COMBINED  /* a drop-in file: every shard's layers combined (merge_dropin) */
} out_kind;

static out_kind output_kind(const char *name)
{
    if (strcmp(name, "index.html") == 0)
        return OUT_REDONE;
    if (dropin_kind(name) >= 0)
        return OUT_COMBINED;
    if (strcmp(name, "config.json") == 0)
        return OUT_ONCE;
    return OUT_COPY;
}

/* The shards' files, each name once (their lists are checked: plain,
 * distinct names; report/shardcheck.h). */
static int copy_outputs(const shard *s, size_t n, nc_outset *set, outlist *outs, nc_err *err)
{
    for (size_t k = 0; k < n; k++) {
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(s[k].root, "outputs"))
        {
            const char *name = f->valuestring;
            out_kind kind = output_kind(name);
            if (kind == OUT_REDONE || kind == OUT_COMBINED)
                continue;
            if (listed(outs, name)) {
                if (kind == OUT_ONCE)
                    continue;
                return nc_err_set(err, NC_EINVAL, "merge: two shards wrote '%s' (the second "
                                  "is %s): overlapping shards?", name, s[k].dir);
            }
            int rc = copy_into(set, s[k].dir, name, err);
            if (!rc)
                rc = list_add(outs, name, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}


/* The run-level figures of the config that need only per-layer numbers. */
static int run_figures(const shard *s0, const cJSON *root, const char *command, bool quiet,
                       nc_outset *set, outlist *outs, nc_err *err)
{
    char path[4096], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/config.json", s0->dir);
    if (!lists_output(s0, "config.json"))
        return 0; /* no copy of the config: no figures were asked for */
    nc_err e = {0};
    int rc = shard_read(s0->dir, "config.json", "config file", NC_CONFIG_MAX_BYTES, &text, &len,
                        &e);
    if (rc)
        return as_merge(err, &e);
    nc_config *cfg = NULL;
    const char *source = jstr(cJSON_GetObjectItemCaseSensitive(root, "config"), "source");
    rc = nc_config_parse(text, len, source ? source : path, &cfg, err);
    free(text);
    if (rc)
        return rc;
    size_t nkeep = 0;
    nc_fig_spec *keep = calloc(cfg->nfigures + 1, sizeof *keep);
    for (size_t k = 0; keep && k < cfg->nfigures; k++) {
        nc_fig_kind kind = cfg->figures[k].kind;
        if (kind == NC_FIG_ALPHA_STD || kind == NC_FIG_ALPHA_DEPTH || kind == NC_FIG_TANH_FAMILY ||
            kind == NC_FIG_SWAP_DEPTH)
            keep[nkeep++] = cfg->figures[k];
        else if (kind == NC_FIG_SCATTER_GRID && !quiet)
            fprintf(stderr, "normcmp: merge: figure 'scatter-grid' draws every layer's points "
                            "and is not drawn from shards (docs/whole_models.md)\n");
    }
    nc_plan plan;
    rc = keep ? numbers_plan(root, cfg, &plan, err) : nc_err_set(err, NC_ENOMEM, "out of memory");
    if (!rc && nkeep) {
        char **files = calloc(nkeep * 3 + 1, sizeof *files);
        size_t nf = 0;
        rc = files ? nc_figures_render(&plan, keep, nkeep, command, cfg->threads, set, files,
                                       nkeep * 3, &nf, NULL, err)
                   : nc_err_set(err, NC_ENOMEM, "out of memory");
        for (size_t k = 0; k < nf; k++) {
            if (!rc && listed(outs, files[k]))
                rc = nc_err_set(err, NC_EINVAL, "merge: a shard's outputs list '%s', a run-level "
                                "figure merge draws itself (a shard never writes it)", files[k]);
            if (!rc)
                rc = list_add(outs, files[k], err);
            free(files[k]);
        }
        free(files);
    }
    if (keep)
        numbers_plan_free(&plan);
    free(keep);
    nc_config_free(cfg);
    return rc;
}

/* The swap test's run-level block (docs/swap.md), when the shards read
 * one: the first shard's, `current` only if every shard's is. */
static int merge_swap(const shard *s, size_t n, cJSON *root, nc_err *err)
{
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(s[0].root, "swap");
    if (!sw)
        return 0;
    bool current = true;
    for (size_t k = 0; k < n; k++) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(s[k].root, "swap"), "current");
        current = current && cJSON_IsTrue(c);
    }
    cJSON *copy = cJSON_Duplicate(sw, true), *cur = cJSON_CreateBool(current);
    if (!copy || !cur || !cJSON_ReplaceItemInObjectCaseSensitive(copy, "current", cur) ||
        !cJSON_AddItemToObject(root, "swap", copy)) {
        cJSON_Delete(copy);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    /* each layer's too: an unsharded run judges all layers together */
    cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(root, "layers"))
    {
        cJSON *ls = cJSON_GetObjectItemCaseSensitive(l, "swap");
        cJSON *c = ls ? cJSON_CreateBool(current) : NULL;
        if (ls && (!c || !cJSON_ReplaceItemInObjectCaseSensitive(ls, "current", c))) {
            cJSON_Delete(c);
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        }
    }
    return 0;
}

/* The merged report: the shards' layers and inputs in plan order, the
 * first shard's tool and config (its output set to out). */
static int merged_root(const shard *s, size_t n, const char *out, const char *command,
                       cJSON **rootp, nc_err *err)
{
    cJSON *root = cJSON_CreateObject();
    *rootp = root;
    if (!root)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    cJSON *tool = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(s[0].root, "tool"), true);
    if (!tool || !cJSON_AddItemToObject(root, "tool", tool)) {
        cJSON_Delete(tool);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    if (!cJSON_AddStringToObject(root, "command", command))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    cJSON *config = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(s[0].root, "config"), true);
    if (!config || !cJSON_AddItemToObject(root, "config", config)) {
        cJSON_Delete(config);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    /* config.output is in every checked shard report: it becomes OUT */
    cJSON *output = cJSON_CreateString(out);
    if (!output || !cJSON_ReplaceItemInObjectCaseSensitive(config, "output", output)) {
        cJSON_Delete(output);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    int rc = merge_layers(s, n, root, err);
    if (!rc)
        rc = merge_swap(s, n, root, err);
    if (rc)
        return rc;
    /* the run-level block, from the per-layer numbers just merged, by the
     * function an unsharded run uses */
    if ((rc = nc_report_add_run_from_layers(root, err)) ||
        (rc = nc_report_add_alpha_roles_from_layers(root, err)))
        return rc;
    cJSON *from = cJSON_AddArrayToObject(root, "merged_from");
    for (size_t k = 0; from && k < n; k++) {
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(from, o) || !cJSON_AddStringToObject(o, "dir", s[k].dir) ||
            !cJSON_AddNumberToObject(o, "index", (double)s[k].index) ||
            !cJSON_AddNumberToObject(o, "count", (double)s[k].count))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    return from ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory");
}


/* Writes everything into out through one output set. */
static int write_merged(const shard *s, size_t n, const char *out, const char *command,
                        bool quiet, nc_err *err)
{
    cJSON *root = NULL;
    nc_outset *set = NULL;
    outlist outs = {calloc(MERGE_MAX_FILES, sizeof(char *)), 0};
    char *json = NULL, *html = NULL;
    size_t replaced = 0;
    int rc = outs.name ? 0 : nc_err_set(err, NC_ENOMEM, "out of memory");
    if (!rc)
        rc = merged_root(s, n, out, command, &root, err);
    if (!rc) /* the whole folder appears at once (util/outfile.h) */
        rc = nc_outset_alloc_folder(out, &set, err);
    if (!rc)
        rc = copy_outputs(s, n, set, &outs, err);
    if (!rc)
        rc = merge_dropin(s, n, set, &outs, err);
    if (!rc)
        rc = run_figures(&s[0], root, command, quiet, set, &outs, err);
    if (!rc)
        rc = list_add(&outs, "index.html", err);
    cJSON *list = rc ? NULL : cJSON_AddArrayToObject(root, "outputs");
    for (size_t k = 0; list && k < outs.n; k++)
        if (!cJSON_AddItemToArray(list, cJSON_CreateString(outs.name[k])))
            list = NULL;
    if (!rc && !list)
        rc = nc_err_set(err, NC_ENOMEM, "out of memory");
    if (!rc && !nc_report_exact_numbers(root))
        rc = nc_err_set(err, NC_ENOMEM, "out of memory");
    if (!rc) {
        /* cJSON_Print's text and a final newline, as nc_report_json writes */
        char *text = cJSON_Print(root);
        size_t len = text ? strlen(text) : 0;
        if (text && (json = malloc(len + 2))) {
            memcpy(json, text, len);
            memcpy(json + len, "\n", 2);
        }
        cJSON_free(text);
        rc = json ? nc_outset_add(set, "report.json", json, len + 1, err)
                  : nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    if (!rc)
        rc = nc_report_html(json, &html, err);
    if (!rc)
        rc = nc_outset_add(set, "index.html", html, strlen(html), err);
    if (!rc) {
        rc = nc_outset_commit_ex(set, &replaced, err);
        set = NULL;
    }
    nc_outset_abort(set); /* and the folders it created */
    if (!rc && !quiet)
        cli_note_replaced(out, replaced);
    /* the summary a run prints (one line per layer, the run's verdict),
     * from the report as written (root's numbers are now exact-number
     * texts) */
    cJSON *written = rc ? NULL : cJSON_Parse(json);
    if (written && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(written, "layers")) >= 2) {
        nc_err e2 = {0};
        if (nc_report_show_run_from_layers(written, cli_print_brief, &e2) != 0 ||
            nc_report_show_alpha_roles_from_layers(written, cli_print_alpha_roles, &e2) != 0)
            fprintf(stderr, "normcmp: merge: %s (the summary is not shown; the report is "
                            "written)\n", e2.msg);
    }
    cJSON_Delete(written);
    free(html);
    free(json);
    cJSON_Delete(root);
    for (size_t k = 0; k < outs.n; k++)
        free(outs.name[k]);
    free(outs.name);
    return rc;
}

/* Whether two paths name one existing folder. */
static bool same_dir(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_merge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool quiet = false;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "qh", opts, "merge")) != -1) {
        if (c == CLI_OPT_ERROR) {
            return 2;
        } else if (c == 'q') {
            quiet = true;
        } else if (c == 'h') {
            fputs(merge_help, stdout);
            return cli_finish_stdout(0);
        } else {
            return cli_usage_error("merge", "unknown or incomplete option");
        }
    }
    if (argc - optind < 2)
        return cli_usage_error("merge", "expected OUT and at least one SHARD_DIR");
    const char *out = argv[optind];
    if (strcmp(out, "-") == 0) /* a folder named "-", not standard output */
        return cli_usage_error("merge", "OUT: expected a folder, not '-' (the outputs are files "
                               "in a folder, never standard output; ./- names a folder called -)");
    size_t n = (size_t)(argc - optind - 1);
    shard *s = calloc(n, sizeof *s);
    nc_err err = {0};
    char *command = cli_command_line(argc + 1, argv - 1);
    int rc = s && command ? 0 : nc_err_set(&err, NC_ENOMEM, "out of memory");
    for (size_t k = 0; k < n && !rc; k++)
        rc = load_shard(argv[optind + 1 + (int)k], &s[k], &err);
    if (!rc)
        rc = check_shards(s, n, &err);
    for (size_t k = 0; k < n && !rc; k++)
        if (same_dir(out, s[k].dir))
            rc = nc_err_set(&err, NC_EINVAL, "merge: OUT %s is shard folder %s (expected a "
                            "folder of its own)", out, s[k].dir);
    if (!rc)
        rc = write_merged(s, n, out, command, quiet, &err);
    int status = rc ? cli_fail(&err) : 0;
    if (!rc && !quiet)
        fprintf(stderr, "normcmp: merged %zu shards into %s/report.json and index.html\n", n,
                out);
    if (!rc)
        cli_print_where(out);
    for (size_t k = 0; s && k < n; k++)
        nc_shard_report_free(&s[k].rep);
    free(s);
    free(command);
    return status ? status : cli_finish_stdout(0);
}
