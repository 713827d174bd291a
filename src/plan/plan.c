/*
 * plan.c - resolving a config into layers and running them (plan.h).
 */
#include "plan/plan.h"
#include "plan/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/companion.h"
#include "core/synth.h"
#include "core/half.h"

static int add_dump(nc_plan *plan, nc_dump *dump, nc_err *err)
{
    nc_dump **g = realloc(plan->dumps, (plan->ndumps + 1) * sizeof *g);
    if (!g) {
        nc_dump_close(dump);
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    plan->dumps = g;
    plan->dumps[plan->ndumps++] = dump;
    return 0;
}

/* Opens path once per plan (several layers may share a file). */
static int get_dump(nc_plan *plan, const char *path, nc_dump **out, nc_err *err)
{
    for (size_t k = 0; k < plan->ndumps; k++)
        if (strcmp(nc_dump_path(plan->dumps[k]), path) == 0) {
            *out = plan->dumps[k];
            return 0;
        }
    nc_dump *d;
    int rc = nc_dump_open(path, &d, err);
    if (rc)
        return rc;
    if ((rc = add_dump(plan, d, err)))
        return rc;
    *out = d;
    return 0;
}

static int add_input(nc_plan *plan, nc_dump *dump, const nc_tensor *t, const char *role,
                     size_t layer, nc_err *err)
{
    /* a sharded dump's tensor is read from (and reported as) its shard */
    dump = nc_dump_part(dump, t);
    /* every tensor a layer reads must be a float tensor with at least one axis */
    if (!nc_dtype_is_float(t->dtype))
        return nc_err_set(err, NC_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not supported as "
                          "%s (expected F32, F16, BF16 or F64)", nc_dump_path(dump), t->name,
                          nc_dtype_name(t->dtype), role);
    if (t->rank < 1)
        return nc_err_set(err, NC_EUNSUPPORTED, "%s: tensor '%s': a scalar is not supported as "
                          "%s (expected shape [..., d])", nc_dump_path(dump), t->name, role);
    /* companions must fit the layer's input: output and gradient [N, d],
     * weight and bias [d] */
    const nc_tensor *x = layer < plan->nlayers ? plan->layers[layer].x : NULL;
    if (x && t != x) {
        bool per_token = strcmp(role, "output") == 0 || strcmp(role, "grad_output") == 0;
        bool fits = per_token ? (t->N == x->N && t->d == x->d) : t->nelem == x->d;
        if (!fits) {
            char a[128], b[128];
            nc_tensor_shape_str(t, a, sizeof a);
            nc_tensor_shape_str(x, b, sizeof b);
            return nc_err_set(err, NC_EINVAL, "%s: tensor '%s': %s of layer '%s' has shape %s, "
                              "expected %s for its input of shape %s", nc_dump_path(dump),
                              t->name, role, plan->layers[layer].name, a,
                              per_token ? "the same tokens and channels" : "d values", b);
        }
    }
    /* a layer of another shard is checked, not listed: its shard lists it */
    if (layer < plan->nlayers && !plan->layers[layer].in_shard)
        return 0;
    nc_plan_input *g = realloc(plan->inputs, (plan->ninputs + 1) * sizeof *g);
    if (!g)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    plan->inputs = g;
    plan->inputs[plan->ninputs++] = (nc_plan_input){dump, t, role, layer};
    return 0;
}

static int add_layer(nc_plan *plan, const nc_config_layer *cl, const char *name,
                     const nc_tensor *x, nc_plan_layer **out, nc_err *err)
{
    nc_plan_layer *g = realloc(plan->layers, (plan->nlayers + 1) * sizeof *g);
    if (!g)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    plan->layers = g;
    nc_plan_layer *l = &plan->layers[plan->nlayers];
    memset(l, 0, sizeof *l);
    if (!(l->name = strdup(name)))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    plan->nlayers++;
    l->cfg = cl;
    l->norm = nc_config_layer_norm(plan->cfg, cl);
    l->eps = nc_config_layer_eps(plan->cfg, cl);
    /* a top-level norm or eps is a flag's for `fit` (its config is built
     * from the command line), the config file's for `run` */
    nc_src top = strcmp(plan->cfg->source, "command line") == 0 ? NC_SRC_FLAG : NC_SRC_CONFIG;
    l->norm_source = cl->has_norm ? NC_SRC_CONFIG : plan->cfg->has_norm ? top : NC_SRC_DEFAULT;
    l->eps_source = cl->has_eps ? NC_SRC_CONFIG : plan->cfg->has_eps ? top : NC_SRC_DEFAULT;
    l->x = x;
    l->in_shard = nc_plan_in_shard(plan->cfg, plan->nlayers - 1);
    /* tokens per sequence: the layer's own, the run's, else the shape's
     * (st_metadata may take the dump's metadata instead) */
    bool top_flag = strcmp(plan->cfg->source, "command line") == 0;
    l->token_block = 1;
    l->token_block_source = "default";
    if (cl->token_block) {
        l->token_block = cl->token_block;
        l->token_block_source = "config";
    } else if (plan->cfg->token_block) {
        l->token_block = plan->cfg->token_block;
        l->token_block_source = top_flag ? "flag" : "config";
    } else if (x && x->rank >= 3) {
        l->token_block = (size_t)(x->N / x->shape[0]);
        l->token_block_source = "shape";
    }
    if (!(l->source = strdup(cl->synth ? "synthetic" : cl->file ? cl->file : "")))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    *out = l;
    return 0;
}

nc_group_key nc_plan_group_key(const nc_plan_layer *l)
{
    return (nc_group_key){l->cfg ? l->cfg->group : NULL, l->source, (int)l->result.norm,
                          l->result.d};
}

bool nc_plan_in_shard(const nc_config *cfg, size_t index)
{
    return cfg->shard_count == 0 || index % cfg->shard_count == cfg->shard_index - 1;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* "<prefix>_input.npy" -> "<prefix>_<comp>.npy", or NULL if path is not
 * named that way. Caller frees. */
static char *npy_sibling(const char *path, const char *comp)
{
    size_t n = strlen(path);
    const char *suffix = "_input.npy";
    size_t sn = strlen(suffix);
    if (n < sn || strcmp(path + n - sn, suffix) != 0)
        return NULL;
    size_t cap = n - sn + strlen(comp) + 6;
    char *s = malloc(cap);
    if (s)
        snprintf(s, cap, "%.*s_%s.npy", (int)(n - sn), path, comp);
    return s;
}

/* The companions of a layer read from a .npy file. */
static int npy_companions(nc_plan *plan, nc_plan_layer *l, const nc_config_layer *cl,
                          size_t li, nc_err *err)
{
    for (int c = 0; c < NC_COMP_COUNT; c++) {
        char *auto_path = NULL;
        const char *path = cl->comp[c];
        if (!path) {
            auto_path = npy_sibling(cl->file, nc_comp_name(c));
            if (!auto_path || !file_exists(auto_path)) {
                free(auto_path);
                continue;
            }
            path = auto_path;
        }
        nc_dump *d;
        int rc = get_dump(plan, path, &d, err);
        free(auto_path);
        if (rc)
            return rc;
        if (nc_dump_count(d) != 1)
            return nc_err_set(err, NC_EINVAL, "%s: %s of layer '%s': expected a file with one "
                              "tensor, found %zu", nc_dump_path(d), nc_comp_name(c), l->name,
                              nc_dump_count(d));
        l->comp[c] = nc_dump_tensor(d, 0);
        if ((rc = add_input(plan, d, l->comp[c], nc_comp_name(c), li, err)))
            return rc;
    }
    return 0;
}

/* The layer name of a safetensors tensor: "blocks.0.norm1.input" -> "blocks.0.norm1". */
static char *st_layer_name(const char *tensor)
{
    size_t n = strlen(tensor);
    const char *suffix = ".input";
    size_t sn = strlen(suffix);
    if (n > sn && strcmp(tensor + n - sn, suffix) == 0)
        n -= sn;
    char *s = malloc(n + 1);
    if (s)
        snprintf(s, n + 1, "%.*s", (int)n, tensor);
    return s;
}

/* The norm kind and eps the safetensors __metadata__ gives the module
 * `base` ("<base>.norm", "<base>.eps", as scripts/dump_activations.py
 * writes them), where no flag or config gave them, and the dtype the model
 * ran it in ("<base>.source_dtype"). A value that is there
 * but not valid is an error naming the file and the key. */
static int st_metadata(nc_dump *d, nc_plan_layer *l, const char *base, nc_err *err)
{
    char key[1024];
    snprintf(key, sizeof key, "%s.norm", base);
    const char *v = nc_dump_meta(d, key);
    if (v && l->norm_source == NC_SRC_DEFAULT) {
        if (!nc_norm_parse(v, &l->norm))
            return nc_err_set(err, NC_EFORMAT, "%s: __metadata__[\"%s\"]: expected layernorm or "
                              "rmsnorm, got '%.40s'", nc_dump_path(d), key, v);
        l->norm_source = NC_SRC_METADATA;
    }
    snprintf(key, sizeof key, "%s.tokens_per_sequence", base);
    v = nc_dump_meta(d, key);
    if (v && (strcmp(l->token_block_source, "default") == 0 ||
              strcmp(l->token_block_source, "shape") == 0)) {
        char *end;
        unsigned long long tb = strtoull(v, &end, 10);
        if (end == v || *end || tb < 1 || v[0] == '-')
            return nc_err_set(err, NC_EFORMAT, "%s: __metadata__[\"%s\"]: expected a whole "
                              "number >= 1, got '%.40s'", nc_dump_path(d), key, v);
        l->token_block = (size_t)tb;
        l->token_block_source = "metadata";
    }
    snprintf(key, sizeof key, "%s.eps", base);
    v = nc_dump_meta(d, key);
    if (v && l->eps_source == NC_SRC_DEFAULT) {
        char *end;
        double e = strtod(v, &end);
        if (end == v || *end || !(e >= 0 && e <= 1))
            return nc_err_set(err, NC_EFORMAT, "%s: __metadata__[\"%s\"]: expected a number in "
                              "[0, 1], got '%.40s'", nc_dump_path(d), key, v);
        l->eps = e;
        l->eps_source = NC_SRC_METADATA;
    } else if (l->eps_source == NC_SRC_DEFAULT) {
        l->eps = l->norm == NC_RMSNORM ? NC_RMSNORM_EPS : NC_LAYERNORM_EPS;
    }
    /* the dtype the model ran in (PyTorch's names); another value says
     * nothing the check can use and is ignored */
    static const struct { const char *name; nc_dtype dt; } src[] = {
        {"float32", NC_F32}, {"float16", NC_F16}, {"bfloat16", NC_BF16}, {"float64", NC_F64}};
    snprintf(key, sizeof key, "%s.source_dtype", base);
    v = nc_dump_meta(d, key);
    for (size_t k = 0; v && k < sizeof src / sizeof *src; k++)
        if (strcmp(v, src[k].name) == 0)
            l->source_dtype = src[k].dt;
    return 0;
}

static int st_companions(nc_plan *plan, nc_dump *d, nc_plan_layer *l, const nc_config_layer *cl,
                         const char *base, size_t li, nc_err *err)
{
    for (int c = 0; c < NC_COMP_COUNT; c++) {
        int rc;
        if (cl->comp[c]) {
            nc_dump *cd;
            if ((rc = get_dump(plan, cl->comp[c], &cd, err)))
                return rc;
            if (nc_dump_count(cd) != 1)
                return nc_err_set(err, NC_EINVAL, "%s: %s of layer '%s': expected a file with "
                                  "one tensor, found %zu", cl->comp[c], nc_comp_name(c), l->name,
                                  nc_dump_count(cd));
            l->comp[c] = nc_dump_tensor(cd, 0);
            if ((rc = add_input(plan, cd, l->comp[c], nc_comp_name(c), li, err)))
                return rc;
            continue;
        }
        char name[1024];
        snprintf(name, sizeof name, "%s.%s", base, nc_comp_name(c));
        const nc_tensor *t = nc_dump_find(d, name);
        if (!t)
            continue;
        l->comp[c] = t;
        if ((rc = add_input(plan, d, t, nc_comp_name(c), li, err)))
            return rc;
    }
    return 0;
}

/* Whether a --tensor / "tensor" pattern selects tensor name: matched
 * against the name, or, for a layer input "<module>.input", against the
 * module name as the summary table prints it ("blocks.*.ln1"), unless the
 * pattern itself ends in ".input": it names tensors, so that an exact
 * name (the dump script's configs escape theirs) selects that tensor
 * alone, not also the input of a module named "<module>.input"
 * (docs/config.md). */
static bool tensor_selected(const char *pattern, const char *name)
{
    if (nc_glob_match(pattern, name))
        return true;
    size_t n = strlen(name), pn = strlen(pattern);
    if (pn >= 6 && strcmp(pattern + pn - 6, ".input") == 0)
        return false;
    if (n <= 6 || strcmp(name + n - 6, ".input") != 0 || n - 6 >= 1024)
        return false;
    char module[1024];
    snprintf(module, sizeof module, "%.*s", (int)(n - 6), name);
    return nc_glob_match(pattern, module);
}

/* A pattern such as "ea*" selects "early.input" and also its companions
 * "early.output", "early.weight", ...: those are the layer's companions,
 * not layers of their own. Drops every selected "<m>.<companion>" whose
 * "<m>.input" is selected too; keeps the order of the rest. */
static void drop_companions(const nc_tensor **sel, size_t *nsel)
{
    size_t kept = 0;
    for (size_t k = 0; k < *nsel; k++) {
        const char *name = sel[k]->name;
        bool companion = false;
        for (int c = 0; c < NC_COMP_COUNT && !companion; c++) {
            size_t n = strlen(name), cn = strlen(nc_comp_name(c));
            if (n <= cn + 1 || name[n - cn - 1] != '.' || strcmp(name + n - cn, nc_comp_name(c)))
                continue;
            for (size_t q = 0; q < *nsel && !companion; q++) {
                const char *o = sel[q]->name;
                companion = strncmp(o, name, n - cn) == 0 && strcmp(o + n - cn, "input") == 0;
            }
        }
        if (!companion)
            sel[kept++] = sel[k];
    }
    *nsel = kept;
}

/* Some names a pattern could have meant, for the message when it matches
 * nothing: the file's layer (module) names, else its tensor names, the
 * first few and how many more. */
static void name_examples(nc_dump *d, char *buf, size_t cap)
{
    size_t used = 0, shown = 0, total = 0;
    bool inputs = false;
    for (size_t k = 0; k < nc_dump_count(d) && !inputs; k++)
        inputs = tensor_selected("*.input", nc_dump_tensor(d, k)->name);
    buf[0] = '\0';
    for (size_t k = 0; k < nc_dump_count(d); k++) {
        const char *name = nc_dump_tensor(d, k)->name;
        size_t n = strlen(name);
        if (inputs && !nc_glob_match("*.input", name))
            continue;
        total++;
        if (shown == 4)
            continue;
        int w = snprintf(buf + used, cap - used, "%s%.*s", shown ? ", " : "",
                         (int)(inputs ? n - 6 : n), name);
        if (w < 0 || (size_t)w >= cap - used)
            break;
        used += (size_t)w;
        shown++;
    }
    if (total > shown)
        snprintf(buf + used, cap - used, " and %zu more", total - shown);
}

/* The layer's source: the folder of a .npy file (the files of one model sit
 * together), else the dump's path (a file, or a sharded dump's folder). */
static int set_source(nc_plan_layer *l, nc_dump *d, bool npy, nc_err *err)
{
    const char *path = nc_dump_path(d);
    const char *slash = npy ? strrchr(path, '/') : NULL;
    char *s = npy ? (slash ? strndup(path, (size_t)(slash - path) + 1) : strdup("./"))
                  : strdup(path);
    if (!s)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    free(l->source);
    l->source = s;
    return 0;
}

/* The tensors a file-backed config layer selects. */
static int open_file_layer(nc_plan *plan, const nc_config_layer *cl, size_t cfg_index,
                           nc_err *err)
{
    nc_dump *d;
    int rc = get_dump(plan, cl->file, &d, err);
    if (rc)
        return rc;
    bool npy = strcmp(nc_dump_format(d), "npy") == 0;
    const nc_tensor **sel = calloc(nc_dump_count(d) + 1, sizeof *sel);
    if (!sel)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    size_t nsel = 0;
    if (npy) {
        sel[nsel++] = nc_dump_tensor(d, 0);
    } else if (cl->ntensors == 0) {
        /* default: every "*.input" tensor */
        for (size_t k = 0; k < nc_dump_count(d); k++)
            if (nc_glob_match("*.input", nc_dump_tensor(d, k)->name))
                sel[nsel++] = nc_dump_tensor(d, k);
        if (nsel == 0) {
            free(sel);
            return nc_err_set(err, NC_EINVAL, "%s: no tensor named '*.input'; name the layer "
                              "inputs with 'tensor' (layers[%zu].tensor or --tensor)", cl->file,
                              cfg_index);
        }
    } else {
        for (size_t j = 0; j < cl->ntensors; j++) {
            size_t before = nsel;
            for (size_t k = 0; k < nc_dump_count(d); k++) {
                const nc_tensor *t = nc_dump_tensor(d, k);
                bool dup = false;
                for (size_t q = 0; q < nsel; q++)
                    dup = dup || sel[q] == t;
                if (!dup && tensor_selected(cl->tensors[j], t->name))
                    sel[nsel++] = t;
            }
            if (nsel == before) {
                char names[512];
                name_examples(d, names, sizeof names);
                free(sel);
                char where[48];
                if (strcmp(plan->cfg->source, "command line") == 0)
                    snprintf(where, sizeof where, "--tensor");
                else
                    snprintf(where, sizeof where, "layers[%zu].tensor", cfg_index);
                return nc_err_set(err, NC_EINVAL, "%s: tensor pattern '%s' matches no tensor "
                                  "(%s; layers in the file: %s; `normcmp inspect %s` lists "
                                  "every tensor)", cl->file, cl->tensors[j], where, names,
                                  cl->file);
            }
        }
    }
    if (!npy)
        drop_companions(sel, &nsel);
    if (cl->label && nsel > 1) {
        free(sel);
        return nc_err_set(err, NC_EINVAL, "%s: layers[%zu].label: one label for %zu tensors "
                          "(expected a pattern matching one tensor, or no label)", cl->file,
                          cfg_index, nsel);
    }
    for (size_t k = 0; k < nsel && !rc; k++) {
        const nc_tensor *t = sel[k];
        char *base = npy ? strdup(t->name) : st_layer_name(t->name);
        if (!base) {
            rc = nc_err_set(err, NC_ENOMEM, "out of memory");
            break;
        }
        /* "ln00_input" -> "ln00" for the usual sibling layout */
        size_t bn = strlen(base);
        if (npy && bn > 6 && strcmp(base + bn - 6, "_input") == 0)
            base[bn - 6] = '\0';
        nc_plan_layer *l;
        size_t li = plan->nlayers;
        rc = add_layer(plan, cl, cl->label ? cl->label : base, t, &l, err);
        if (!rc)
            rc = set_source(l, d, npy, err);
        if (!rc)
            rc = add_input(plan, d, t, "input", li, err);
        if (!rc)
            rc = npy ? npy_companions(plan, l, cl, li, err)
                     : st_companions(plan, d, l, cl, base, li, err);
        if (!rc && !npy)
            rc = st_metadata(d, l, base, err);
        free(base);
    }
    free(sel);
    return rc;
}

/* Synthetic layers: generated into an in-memory dump. With synth.affine, a
 * seeded weight and bias and the real output (LayerNorm/RMSNorm then the
 * affine part, stored as float32) are generated too, so the real-output
 * check has something to check. */
static int open_synth_layer(nc_plan *plan, const nc_config_layer *cl, nc_err *err)
{
    const nc_synth_params *sp = &cl->synth_params;
    /* for "outlier-steps", tokens is the number of steps k = 1..N (paper: 9)
     * and dim the token length (paper: 100) */
    size_t N = sp->N, d = sp->d;
    if (!nc_plan_in_shard(plan->cfg, plan->nlayers)) {
        /* another shard's layer: named (for the uniqueness check), not generated */
        nc_plan_layer *l;
        return add_layer(plan, cl, cl->label ? cl->label : cl->synth_preset, NULL, &l, err);
    }
    nc_dump *dump;
    char label[128];
    snprintf(label, sizeof label, "synth:%s", cl->synth_preset);
    int rc = nc_dump_mem_alloc(label, &dump, err);
    if (rc)
        return rc;
    if ((rc = add_dump(plan, dump, err)))
        return rc;
    float *x = malloc(N * d * sizeof *x);
    if (!x)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu x %zu", label, N, d);
    if (cl->outlier_steps) {
        size_t channel;
        rc = nc_synth_outlier_steps(sp->seed, d, (int)N, 5.0, 2.0, cl->synth_rng, x, &channel,
                                    err);
    } else {
        rc = nc_synth_fill(sp, x, plan->cfg->threads, err);
    }
    if (rc) {
        free(x);
        return rc;
    }
    uint64_t shape[2] = {N, d};
    if ((rc = nc_dump_mem_add(dump, "input", NC_F32, 2, shape, x, err)))
        return rc;
    nc_plan_layer *l;
    size_t li = plan->nlayers;
    const char *name = cl->label ? cl->label : cl->synth_preset;
    if ((rc = add_layer(plan, cl, name, nc_dump_tensor(dump, 0), &l, err)) ||
        (rc = add_input(plan, dump, l->x, "input", li, err)))
        return rc;
    if (!cl->synth_affine)
        return 0;

    float *w = malloc(d * sizeof *w), *b = malloc(d * sizeof *b), *y = malloc(N * d * sizeof *y);
    if (!w || !b || !y) {
        free(w);
        free(b);
        free(y);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", label);
    }
    nc_companion_affine(x, N, d, l->norm, l->eps, sp->seed, w, b, y);
    uint64_t dshape[1] = {d};
    if ((rc = nc_dump_mem_add(dump, "weight", NC_F32, 1, dshape, w, err))) {
        free(b);
        free(y);
        return rc;
    }
    if (l->norm == NC_LAYERNORM) {
        if ((rc = nc_dump_mem_add(dump, "bias", NC_F32, 1, dshape, b, err))) {
            free(y);
            return rc;
        }
    } else {
        free(b);
    }
    if ((rc = nc_dump_mem_add(dump, "output", NC_F32, 2, shape, y, err)))
        return rc;
    l->comp[NC_COMP_OUTPUT] = nc_dump_find(dump, "output");
    l->comp[NC_COMP_WEIGHT] = nc_dump_find(dump, "weight");
    l->comp[NC_COMP_BIAS] = nc_dump_find(dump, "bias");
    for (int c = 0; c < NC_COMP_COUNT; c++)
        if (l->comp[c] && (rc = add_input(plan, dump, l->comp[c], nc_comp_name(c), li, err)))
            return rc;
    return 0;
}

/* Every layer pattern of every figure matches a layer of the plan: a
 * figure that would select nothing is refused before any analysis, naming
 * the config file and the key path (or the --layer flag). */
static int check_figure_layers(const nc_plan *plan, nc_err *err)
{
    const nc_config *cfg = plan->cfg;
    bool flags = strcmp(cfg->source, "command line") == 0;
    for (size_t f = 0; f < cfg->nfigures; f++) {
        const nc_fig_spec *spec = &cfg->figures[f];
        for (size_t q = 0; q < spec->nlayers; q++) {
            bool hit = false;
            for (size_t k = 0; k < plan->nlayers && !hit; k++)
                hit = nc_glob_match(spec->layers[q], plan->layers[k].name);
            if (hit)
                continue;
            /* the names that fit in 176 bytes, then " and N more" */
            char names[200];
            size_t o = 0, k = 0;
            names[0] = '\0';
            for (; k < plan->nlayers; k++) {
                size_t need = (k ? 2 : 0) + strlen(plan->layers[k].name);
                if (o + need >= sizeof names - 24)
                    break;
                o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", k ? ", " : "",
                                      plan->layers[k].name);
            }
            if (k < plan->nlayers)
                snprintf(names + o, sizeof names - o, " and %zu more", plan->nlayers - k);
            if (flags)
                return nc_err_set(err, NC_EINVAL, "--layer '%s' matches no layer (the layers: "
                                  "%s)", spec->layers[q], names);
            return nc_err_set(err, NC_EINVAL, "%s: figures[%zu].layers[%zu]: '%s' matches no "
                              "layer (the layers: %s)", cfg->source, f, q, spec->layers[q],
                              names);
        }
    }
    return 0;
}

/* Each layer's role and depth from the names of all the plan's layers
 * (roles.h), the config's patterns first. */
static int assign_roles(nc_plan *plan, nc_err *err)
{
    const struct nc_config_dropin *D = &plan->cfg->dropin;
    int rc = nc_roles_compile((const char *const *)D->role_regex,
                              (const char *const *)D->role_name, D->role_origin, D->nroles,
                              &plan->roles, err);
    const char **names = rc ? NULL : malloc((plan->nlayers + 1) * sizeof *names);
    nc_role_info *info = names ? malloc((plan->nlayers + 1) * sizeof *info) : NULL;
    if (!rc && !info)
        rc = nc_err_set(err, NC_ENOMEM, "out of memory");
    for (size_t k = 0; !rc && k < plan->nlayers; k++)
        names[k] = plan->layers[k].name;
    if (!rc)
        rc = nc_roles_assign(plan->roles, names, plan->nlayers, info, err);
    for (size_t k = 0; !rc && k < plan->nlayers; k++)
        plan->layers[k].role = info[k];
    free(names);
    free(info);
    return rc;
}

/* path when it names an existing file. */
static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* The swap test's results (swap.h): the config's file, else the first of
 * DUMP.swap.json beside the run's one safetensors dump (a file X.safetensors,
 * a folder DIR or DIR/, its index DIR/...index.json) and swap.json in the
 * output folder that exists. */
static int find_swap(nc_plan *plan, nc_err *err)
{
    const nc_config *cfg = plan->cfg;
    char cand[2][4096];
    int nc = 0;
    if (cfg->swap) {
        snprintf(cand[nc++], sizeof cand[0], "%s", cfg->swap);
    } else {
        size_t nst = 0, which = 0;
        for (size_t k = 0; k < plan->ndumps; k++)
            if (strcmp(nc_dump_format(plan->dumps[k]), "safetensors") == 0) {
                nst++;
                which = k;
            }
        const char *p = nst == 1 ? nc_dump_path(plan->dumps[which]) : NULL;
        size_t n = p ? strlen(p) : 0;
        while (n > 1 && p[n - 1] == '/')
            n--;
        const char *idx = ".safetensors.index.json", *st = ".safetensors";
        if (p && n > strlen(idx) && strncmp(p + n - strlen(idx), idx, strlen(idx)) == 0) {
            const char *slash = memrchr(p, '/', n);
            n = slash ? (size_t)(slash - p) : 0; /* the index's folder */
        } else if (p && n > strlen(st) && strncmp(p + n - strlen(st), st, strlen(st)) == 0) {
            n -= strlen(st);
        }
        if (p && n)
            snprintf(cand[nc++], sizeof cand[0], "%.*s.swap.json", (int)n, p);
        if (cfg->output)
            snprintf(cand[nc++], sizeof cand[0], "%s/swap.json", cfg->output);
    }
    for (int k = 0; k < nc; k++) {
        if (!cfg->swap && !exists(cand[k]))
            continue;
        int rc = nc_swap_read(cand[k], &plan->swap, err);
        if (rc)
            return rc;
        plan->has_swap = true;
        return 0;
    }
    return 0;
}

int nc_plan_open(const nc_config *cfg, nc_plan **out, nc_err *err)
{
    *out = NULL;
    nc_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    plan->cfg = cfg;
    int rc = 0;
    for (size_t k = 0; k < cfg->nlayers && !rc; k++) {
        const nc_config_layer *cl = &cfg->layers[k];
        rc = cl->synth ? open_synth_layer(plan, cl, err) : open_file_layer(plan, cl, k, err);
    }
    /* layer names must be unique: they key the report and the figures */
    for (size_t a = 0; a < plan->nlayers && !rc; a++)
        for (size_t b = a + 1; b < plan->nlayers && !rc; b++)
            if (strcmp(plan->layers[a].name, plan->layers[b].name) == 0)
                rc = nc_err_set(err, NC_EINVAL, "%s: two layers are named '%s' (give them "
                                "distinct 'label's)", cfg->source, plan->layers[a].name);
    if (!rc)
        rc = check_figure_layers(plan, err);
    if (!rc)
        rc = assign_roles(plan, err);
    if (!rc)
        rc = find_swap(plan, err);
    if (rc) {
        nc_plan_close(plan);
        return rc;
    }
    *out = plan;
    return 0;
}

/* The sweeps of the config's sweep section for one layer. */
static int run_sweeps(const nc_config *cfg, nc_plan_layer *l, nc_err *err)
{
    const struct nc_config_sweep *sw = &cfg->sweep;
    bool selected = sw->nlayers == 0;
    for (size_t k = 0; k < sw->nlayers; k++)
        selected = selected || nc_glob_match(sw->layers[k], l->name);
    if (!selected || l->result.points == 0)
        return 0;
    const nc_layer_result *r = &l->result;
    for (int p = 0; p < 2; p++) {
        const double *grid = p == NC_SWEEP_ALPHA ? sw->alpha : sw->C;
        size_t n = p == NC_SWEEP_ALPHA ? sw->nalpha : sw->nC;
        bool is_auto = p == NC_SWEEP_ALPHA ? sw->alpha_auto : sw->C_auto;
        double *own = NULL;
        if (is_auto) {
            /* a log grid spanning the theory and fitted values, a decade (alpha)
             * or two (C) beyond each */
            double th = p == NC_SWEEP_ALPHA
                            ? nc_dyt_theory_params(r->norm, r->stats.rho, r->d).p[0]
                            : nc_dyisru_theory_params(r->norm, r->stats.rho, r->d).p[0];
            const nc_fit_result *f = &r->fits[p == NC_SWEEP_ALPHA ? NC_FIT_DYT : NC_FIT_DYISRU];
            double fit = f->ok ? f->params.p[0] : th;
            double lo = fmin(th, fit), hi = fmax(th, fit), span = p == NC_SWEEP_ALPHA ? 10 : 100;
            if (!(lo > 0) || !isfinite(hi))
                continue;
            n = sw->auto_steps;
            if (!(own = malloc(n * sizeof *own)))
                return nc_err_set(err, NC_ENOMEM, "out of memory");
            nc_sweep_grid(lo / span, hi * span, n, true, own);
            grid = own;
        }
        if (!grid || n == 0)
            continue;
        double amp;
        nc_amp_rule rule;
        nc_amp a = p == NC_SWEEP_ALPHA ? sw->gamma : sw->scale;
        nc_amp_resolve(a, l->norm, r->d, &amp, &rule);
        int rc = nc_sweep_run(r, (nc_sweep_param)p, grid, n, amp, sw->beta, &l->sweep[p], err);
        free(own);
        if (rc)
            return rc;
        l->has_sweep[p] = true;
    }
    return 0;
}

/* The layer's spec from the plan and the config. */
static void layer_spec(const nc_plan *plan, const nc_plan_layer *l, nc_progress *progress,
                       nc_layer_spec *spec)
{
    const nc_config *cfg = plan->cfg;
    nc_layer_spec_defaults(spec);
    spec->name = l->name;
    spec->norm = l->norm;
    spec->eps = l->eps;
    spec->x = l->x;
    spec->y_real = l->comp[NC_COMP_OUTPUT];
    spec->weight = l->comp[NC_COMP_WEIGHT];
    spec->bias = l->comp[NC_COMP_BIAS];
    memcpy(spec->fit, cfg->fit, sizeof spec->fit);
    spec->amp_dyt = cfg->amp_dyt;
    spec->amp_dyisru = cfg->amp_dyisru;
    spec->amp_derf = cfg->amp_derf;
    spec->sample_tokens = cfg->sample_tokens;
    spec->seed = cfg->seed;
    spec->max_bins = cfg->max_bins;
    spec->max_exact_points = cfg->max_exact_points;
    spec->threads = cfg->threads;
    /* the verify pass gathers the Jacobian's sums (the Jacobian pass then
     * runs only for real gradients, which need it anyway) */
    spec->jacobian = cfg->jacobian.enabled && !l->comp[NC_COMP_GRAD];
    spec->boot_replicates = cfg->boot_replicates;
    spec->token_block = l->token_block;
    spec->progress = progress;
}

/* The diagonal-Jacobian comparison of an analysed layer. */
static int run_jacobian(const nc_config *cfg, nc_plan_layer *l, nc_progress *progress,
                        nc_err *err)
{
    nc_jac_opts jo;
    nc_jac_opts_defaults(&jo);
    jo.probes = cfg->jacobian.probes;
    jo.dense_tokens = cfg->jacobian.dense_tokens;
    jo.seed = cfg->jacobian.has_seed ? cfg->jacobian.seed : cfg->seed;
    double *w = NULL;
    const nc_tensor *wt = l->comp[NC_COMP_WEIGHT];
    if (wt && l->comp[NC_COMP_GRAD]) {
        /* the gradient at the norm's output is weight * grad_output */
        if (!(w = malloc(wt->nelem * sizeof *w)))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        nc_tensor_elems(wt, 0, wt->nelem, w);
    }
    int rc = nc_jacobian_run(&l->result, l->x, l->comp[NC_COMP_GRAD], w, &jo, cfg->threads,
                             progress, &l->jacobian, err);
    free(w);
    if (rc)
        return rc;
    l->has_jacobian = true;
    return 0;
}

/* The drop-in parameters of an analysed layer (analysis/dropin.h), with
 * the alpha0 of its role, norm and width. */
static int run_dropin(const nc_config *cfg, nc_plan_layer *l, nc_progress *progress,
                      nc_err *err)
{
    nc_dropin_spec ds = {.name = l->name, .x = l->x, .y_real = l->comp[NC_COMP_OUTPUT],
                         .weight = l->comp[NC_COMP_WEIGHT], .bias = l->comp[NC_COMP_BIAS],
                         .threads = cfg->threads, .progress = progress};
    ds.alpha0 = nc_alpha0_for(&l->role, l->result.norm, l->result.d, &cfg->dropin.alpha0);
    int rc = nc_dropin_run(&ds, &l->result, &l->dropin, err);
    if (!rc)
        l->has_dropin = true;
    return rc;
}

/* Everything for one layer: the analysis, then the Jacobian comparison,
 * the sweeps, the drop-in parameters and the outlier-steps experiment
 * where asked for. */
static int run_layer(nc_plan *plan, nc_plan_layer *l, nc_progress *progress, nc_err *err)
{
    const nc_config *cfg = plan->cfg;
    nc_layer_spec spec;
    layer_spec(plan, l, progress, &spec);
    int rc = nc_layer_analyze(&spec, &l->result, err);
    if (rc || (rc = nc_plan_check_real(l, &spec, err)))
        return rc;
    l->done = true;
    plan->disagreeing += l->check.warn;
    if (cfg->jacobian.enabled && l->result.points > 0 &&
        (rc = run_jacobian(cfg, l, progress, err)))
        return rc;
    if (cfg->sweep.enabled && (rc = run_sweeps(cfg, l, err)))
        return rc;
    if (cfg->dropin.enabled && (rc = run_dropin(cfg, l, progress, err)))
        return rc;
    if (l->cfg->outlier_steps) {
        if ((rc = nc_outlier_steps_run(l->x, l->norm, l->eps, &l->outlier_steps, err)))
            return rc;
        l->has_outlier_steps = true;
        const nc_config_layer *cl = l->cfg;
        if (cl->synth && cl->synth_draws > 0 &&
            (rc = nc_outlier_steps_spread(cl->synth_params.d, (int)cl->synth_params.N,
                                          cl->synth_rng, cl->synth_params.seed,
                                          cl->synth_draws, l->norm, l->eps,
                                          &l->outlier_steps, err)))
            return rc;
    }
    return 0;
}

/* The alpha-by-role block over the n analysed layers (alpha_roles.h). */
static int alpha_roles(nc_plan *plan, size_t n, nc_err *err)
{
    if (!(plan->role_layers = calloc(n, sizeof *plan->role_layers)))
        return nc_err_set(err, NC_ENOMEM, "out of memory for the alpha-by-role block");
    for (size_t k = 0, j = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        if (!l->done)
            continue;
        const nc_dropin *dr = &l->dropin;
        const nc_dropin_fit *f = &dr->fit[NC_DROPIN_DYT];
        plan->role_layers[j++] = (nc_role_layer){
            .name = l->name, .role = l->role.role, .has_depth = l->role.has_depth,
            .depth = (double)l->role.depth, .key = nc_plan_group_key(l),
            .alpha = dr->done && f->ok ? f->param : NAN, .alpha0 = dr->alpha0.value,
            .alpha0_rule = dr->alpha0.rule};
    }
    int rc = nc_alpha_roles_compute(plan->role_layers, n, &plan->alpha_roles, err);
    if (!rc)
        plan->has_alpha_roles = true;
    return rc;
}

/* Whether the swap test's results were measured with this run's drop-in
 * parameters: every measured layer's alpha or C equals what this run
 * wrote (as float32, the files' type). */
static bool swap_current(const nc_plan *plan)
{
    const nc_swap *sw = &plan->swap;
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        const nc_swap_layer *e = l->done ? nc_swap_find(sw, l->name) : NULL;
        for (int f = 0; e && f < NC_DROPIN_COUNT; f++) {
            if (!sw->has[f] || !isfinite(e->s[f].param))
                continue;
            if (!l->has_dropin || !l->dropin.done || !l->dropin.fit[f].ok ||
                e->s[f].param != (double)l->dropin.fit[f].param32)
                return false;
        }
    }
    return true;
}

/* The run-level block over the analysed layers (run_summary.h; the
 * report writes it for two or more, the summary prints the verdicts). Not for a shard (run --shard): `normcmp merge`
 * computes it over all shards' layers with the same function. */
static int run_summary(nc_plan *plan, nc_err *err)
{
    size_t n = 0;
    for (size_t k = 0; k < plan->nlayers; k++)
        n += plan->layers[k].done;
    if (n < 1)
        return 0;
    if (!(plan->summaries = calloc(n, sizeof *plan->summaries)))
        return nc_err_set(err, NC_ENOMEM, "out of memory for the run summary");
    for (size_t k = 0, j = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        if (!l->done)
            continue;
        nc_layer_summary *s = &plan->summaries[j++];
        nc_layer_summary_from_result(&l->result, l->has_jacobian ? &l->jacobian : NULL, s);
        s->source = l->source;
        s->group = l->cfg ? l->cfg->group : NULL;
        if (l->has_dropin && l->dropin.done && l->dropin.fit[NC_DROPIN_DYT].ok) {
            s->dropin_rmse_real = l->dropin.fit[NC_DROPIN_DYT].rmse_real;
            s->dropin_rmse_rec = l->dropin.fit[NC_DROPIN_DYT].rmse_rec;
        }
        const nc_swap_layer *e = plan->has_swap ? nc_swap_find(&plan->swap, l->name) : NULL;
        if (e && e->s[NC_DROPIN_DYT].ok) {
            s->swap_delta = e->s[NC_DROPIN_DYT].delta;
            s->swap_delta_se = e->s[NC_DROPIN_DYT].delta_se;
            s->swap_unit = plan->swap.unit;
            s->swap_stale = !plan->swap.current;
        }
    }
    int rc = nc_run_summary_compute(plan->summaries, n, &plan->run, err);
    if (rc)
        return rc;
    if (plan->has_swap && plan->swap.all[NC_DROPIN_DYT].ok && n >= 2)
        nc_run_summary_swap(&plan->run, plan->swap.all[NC_DROPIN_DYT].delta,
                            plan->swap.all[NC_DROPIN_DYT].delta_se, plan->swap.unit,
                            !plan->swap.current);
    plan->has_run = true;
    return plan->cfg->dropin.enabled ? alpha_roles(plan, n, err) : 0;
}

/* Starts hashing the inputs' files in the background (the report's
 * digests), each dump once, in the order of the inputs. Without memory or
 * a thread, nothing starts and the report hashes them itself. */
static void start_hashing(nc_plan *plan)
{
    if (plan->hasher || plan->ninputs == 0 ||
        !(plan->hash_order = malloc(plan->ninputs * sizeof *plan->hash_order)))
        return;
    size_t n = 0;
    for (size_t k = 0; k < plan->ninputs; k++) {
        nc_dump *d = plan->inputs[k].dump;
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++)
            seen = plan->hash_order[j] == d;
        if (!seen)
            plan->hash_order[n++] = d;
    }
    plan->hasher = nc_dump_hasher_start(plan->hash_order, n);
}

int nc_plan_run(nc_plan *plan, nc_progress *progress, nc_err *err)
{
    start_hashing(plan);
    uint64_t total = 0, before = 0;
    size_t n = 0, k1 = 0;
    for (size_t k = 0; k < plan->nlayers; k++)
        if (plan->layers[k].in_shard && plan->layers[k].x) {
            total += plan->layers[k].x->nelem;
            n++;
        }
    for (size_t k = 0; k < plan->nlayers; k++) {
        if (!plan->layers[k].in_shard)
            continue; /* another shard's (run --shard) */
        if (plan->layers[k].x) {
            nc_progress_layer(progress, ++k1, n, before, total);
            before += plan->layers[k].x->nelem;
        }
        nc_plan_layer_memory(&plan->layers[k], true);
        int rc = run_layer(plan, &plan->layers[k], progress, err);
        if (rc)
            return rc;
        nc_plan_layer_memory(&plan->layers[k], false); /* one layer resident at a time */
    }
    if (plan->has_swap)
        plan->swap.current = swap_current(plan);
    /* a shard's block would cover only its layers: merge writes the run's */
    return plan->cfg->shard_count ? 0 : run_summary(plan, err);
}

void nc_plan_layer_memory(const nc_plan_layer *l, bool need)
{
    nc_dump_advise(l->x, need);
    for (int c = 0; c < NC_COMP_COUNT; c++)
        nc_dump_advise(l->comp[c], need);
}

void nc_plan_close(nc_plan *plan)
{
    if (!plan)
        return;
    for (size_t k = 0; k < plan->nlayers; k++) {
        free(plan->layers[k].name);
        free(plan->layers[k].source);
        nc_layer_result_free(&plan->layers[k].result);
        if (plan->layers[k].has_jacobian)
            nc_jac_result_free(&plan->layers[k].jacobian);
        for (int p = 0; p < 2; p++)
            if (plan->layers[k].has_sweep[p])
                nc_sweep_result_free(&plan->layers[k].sweep[p]);
        nc_outlier_steps_free(&plan->layers[k].outlier_steps);
        nc_dropin_free(&plan->layers[k].dropin);
    }
    nc_roles_free(plan->roles);
    free(plan->role_layers);
    nc_alpha_roles_free(&plan->alpha_roles);
    nc_swap_free(&plan->swap);
    nc_dump_hasher_stop(plan->hasher); /* before the dumps it reads are closed */
    free(plan->hash_order);
    free(plan->layers);
    free(plan->inputs);
    free(plan->summaries);
    nc_run_summary_free(&plan->run);
    for (size_t k = 0; k < plan->ndumps; k++)
        nc_dump_close(plan->dumps[k]);
    free(plan->dumps);
    free(plan);
}
