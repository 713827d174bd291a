/*
 * synth.c - `normcmp synth -o OUT`: seeded synthetic activations.
 *
 * Presets early/middle/late (core/synth.h) give LayerNorm scatters from
 * nearly linear to a clear S-curve; "all" writes the three as layers of one
 * safetensors file; "outlier-steps" writes the DyISRU paper's token set.
 * With --affine, a seeded weight and bias and the real output
 * (norm, then affine, in float32) are written beside the input, named the
 * way `fit` finds companions: "<layer>.output" etc. in a safetensors file,
 * "<prefix>_output.npy" etc. next to "<prefix>_input.npy". All files of one
 * call appear together or not at all.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/companion.h"
#include "core/norm.h"
#include "core/synth.h"
#include "core/half.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "util/outfile.h"
#include "util/parse.h"

static const char help[] =
    "usage: normcmp synth -o OUT.npy|OUT.safetensors [options]\n"
    "Writes seeded synthetic activations [tokens, dim] (bit-identical on every machine).\n"
    "\n"
    "  -o, --out FILE          output; .npy (one layer) or .safetensors (one or more)\n"
    "  -p, --preset NAME       early, middle, late, all (three layers, safetensors only)\n"
    "                          or outlier-steps (default late)\n"
    "      --tokens N          tokens (default 4096; outlier-steps: steps, default 9)\n"
    "      --dim D             channels (default 256; outlier-steps: 100)\n"
    "      --seed S            seed (default 1)\n"
    "      --rng NAME          outlier-steps: normcmp (default) or numpy, NumPy's legacy\n"
    "                          generator: np.random.seed(S); np.random.normal(0, 2, dim)\n"
    "                          bit for bit (S < 2^32; rounded to float32 unless\n"
    "                          --dtype f64)\n"
    "      --dtype T           f32, f16, bf16 or f64 (default f32)\n"
    "      --affine            also write weight, bias and the real output\n"
    "  -n, --norm NAME         norm of the real output: layernorm or rmsnorm (default layernorm)\n"
    "  -e, --eps E             its eps (default 1e-5 LayerNorm, 1e-6 RMSNorm)\n"
    "      --scale-median X    override the preset: median per-token scale\n"
    "      --scale-spread X    override: sigma of the per-token log scale\n"
    "      --outliers K        override: outlier channels\n"
    "      --outlier-mag M     override: their median magnitude, in token scales (the\n"
    "                          presets scale theirs by sqrt(dim/256))\n"
    "      --outlier-spread S  override: sigma of the per-token log outlier magnitude\n"
    "      --nu NU             override: Student-t degrees of freedom (> 2)\n"
    "      --offset-std X      override: per-token mean offset\n"
    "  -h, --help              this help\n";

enum {
    OPT_TOKENS = 256, OPT_DIM, OPT_SEED, OPT_DTYPE, OPT_AFFINE, OPT_SMED, OPT_SSPREAD,
    OPT_OUTLIERS, OPT_OMAG, OPT_OSPREAD, OPT_NU, OPT_OFFSET, OPT_RNG,
};

/* The bytes of n float values as dtype dt (owned by the caller); with v64
 * (the same values in double) and dt f64, those doubles themselves. */
static void *encode(const float *v, const double *v64, size_t n, nc_dtype dt)
{
    size_t es = nc_dtype_size(dt);
    unsigned char *out = malloc(n * es > 0 ? n * es : 1);
    if (!out)
        return NULL;
    if (v64 && dt == NC_F64) {
        memcpy(out, v64, n * es);
        return out;
    }
    for (size_t k = 0; k < n; k++) {
        if (dt == NC_F32) {
            memcpy(out + 4 * k, &v[k], 4);
        } else if (dt == NC_F64) {
            double x = v[k];
            memcpy(out + 8 * k, &x, 8);
        } else {
            uint16_t h = dt == NC_F16 ? nc_f32_to_f16(v[k]) : nc_f32_to_bf16(v[k]);
            out[2 * k] = (unsigned char)(h & 0xff);
            out[2 * k + 1] = (unsigned char)(h >> 8);
        }
    }
    return out;
}

typedef struct gen_layer {
    char name[32];
    size_t N, d;
    float *x, *w, *b, *y; /* y, w, b with --affine (b: LayerNorm only) */
    double *x64;          /* outlier-steps with --dtype f64: x in double */
} gen_layer;

static void free_layers(gen_layer *g, int n)
{
    for (int k = 0; k < n; k++) {
        free(g[k].x);
        free(g[k].x64);
        free(g[k].w);
        free(g[k].b);
        free(g[k].y);
    }
}

static int write_npy(nc_outset *set, const char *name, const float *v, const double *v64,
                     int rank, const uint64_t *shape, nc_dtype dt, size_t n, nc_err *err)
{
    nc_membuf mb = {0};
    nc_sink sink = nc_membuf_sink(&mb);
    void *bytes = encode(v, v64, n, dt);
    int rc = bytes ? nc_npy_write_header(&sink, dt, rank, shape, err)
                   : nc_err_set(err, NC_ENOMEM, "out of memory");
    if (!rc)
        rc = nc_sink_write(&sink, bytes, n * nc_dtype_size(dt), err);
    if (!rc)
        rc = nc_outset_add(set, name, mb.data, mb.len, err);
    free(bytes);
    nc_membuf_free(&mb);
    return rc;
}

/* The command line, parsed. */
typedef struct synth_opts {
    const char *out, *preset;
    uint64_t tokens, dim, seed, outliers;
    bool has_outliers, affine, has_rng;
    double smed, sspread, omag, ospread, nu, offset, eps;
    nc_dtype dt;
    nc_norm_kind norm;
    nc_synth_rng rng;
    bool st, npy;         /* the output's kind */
    bool all, steps;      /* --preset all / outlier-steps */
} synth_opts;

static const struct option long_opts[] = {
    {"out", required_argument, NULL, 'o'},
    {"preset", required_argument, NULL, 'p'},
    {"tokens", required_argument, NULL, OPT_TOKENS},
    {"dim", required_argument, NULL, OPT_DIM},
    {"seed", required_argument, NULL, OPT_SEED},
    {"rng", required_argument, NULL, OPT_RNG},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"affine", no_argument, NULL, OPT_AFFINE},
    {"norm", required_argument, NULL, 'n'},
    {"eps", required_argument, NULL, 'e'},
    {"scale-median", required_argument, NULL, OPT_SMED},
    {"scale-spread", required_argument, NULL, OPT_SSPREAD},
    {"outliers", required_argument, NULL, OPT_OUTLIERS},
    {"outlier-mag", required_argument, NULL, OPT_OMAG},
    {"outlier-spread", required_argument, NULL, OPT_OSPREAD},
    {"nu", required_argument, NULL, OPT_NU},
    {"offset-std", required_argument, NULL, OPT_OFFSET},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One option c with its argument into o. Returns -1 to go on, else the
 * exit status (0 after --help). */
static int parse_opt(int c, synth_opts *o, nc_err *err)
{
    int rc = 0;
    switch (c) {
    case 'o': o->out = optarg; break;
    case 'p': o->preset = optarg; break;
    case OPT_TOKENS: rc = nc_parse_u64(optarg, "--tokens", 1, 100000000, &o->tokens, err); break;
    case OPT_DIM: rc = nc_parse_u64(optarg, "--dim", 1, 1000000, &o->dim, err); break;
    case OPT_SEED: rc = nc_parse_u64(optarg, "--seed", 0, UINT64_MAX, &o->seed, err); break;
    case OPT_RNG:
        if (!nc_synth_rng_parse(optarg, &o->rng))
            return cli_usage_error("synth", "--rng: expected normcmp or numpy, got '%s'", optarg);
        o->has_rng = true;
        break;
    case OPT_DTYPE:
        if (strcmp(optarg, "f32") == 0) o->dt = NC_F32;
        else if (strcmp(optarg, "f16") == 0) o->dt = NC_F16;
        else if (strcmp(optarg, "bf16") == 0) o->dt = NC_BF16;
        else if (strcmp(optarg, "f64") == 0) o->dt = NC_F64;
        else
            return cli_usage_error("synth", "--dtype: expected f32, f16, bf16 or f64, got '%s'",
                                   optarg);
        break;
    case OPT_AFFINE: o->affine = true; break;
    case 'n':
        if (!nc_norm_parse(optarg, &o->norm))
            return cli_usage_error("synth", "--norm: expected " NC_NORM_NAMES ", got '%s'",
                                   optarg);
        break;
    case 'e': rc = nc_parse_double(optarg, "--eps", 0, 1, &o->eps, err); break;
    case OPT_SMED: rc = nc_parse_double(optarg, "--scale-median", 1e-6, 1e6, &o->smed, err); break;
    case OPT_SSPREAD: rc = nc_parse_double(optarg, "--scale-spread", 0, 2, &o->sspread, err); break;
    case OPT_OUTLIERS:
        rc = nc_parse_u64(optarg, "--outliers", 0, 1000000, &o->outliers, err);
        o->has_outliers = true;
        break;
    case OPT_OMAG: rc = nc_parse_double(optarg, "--outlier-mag", 0, 1e3, &o->omag, err); break;
    case OPT_OSPREAD:
        rc = nc_parse_double(optarg, "--outlier-spread", 0, 2, &o->ospread, err);
        break;
    case OPT_NU: rc = nc_parse_double(optarg, "--nu", 2.0000001, 1e300, &o->nu, err); break;
    case OPT_OFFSET: rc = nc_parse_double(optarg, "--offset-std", 0, 1e3, &o->offset, err); break;
    case 'h':
        fputs(help, stdout);
        return cli_finish_stdout(0);
    default:
        return cli_usage_error("synth", "unknown or incomplete option");
    }
    return rc ? cli_option_fail("synth", err) : -1;
}

/* The options and what follows from them: the output kind, eps's default,
 * the combinations that make no sense. Returns -1 to go on, else the exit
 * status. */
static int parse_args(int argc, char **argv, synth_opts *o, nc_err *err)
{
    *o = (synth_opts){.preset = "late", .seed = 1, .smed = NAN, .sspread = NAN, .omag = NAN,
                      .ospread = NAN, .nu = NAN, .offset = NAN, .eps = -1, .dt = NC_F32,
                      .norm = NC_LAYERNORM, .rng = NC_SYNTH_RNG_NORMCMP};
    int c, st;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:p:n:e:h", long_opts, "synth")) != -1)
        if (c == CLI_OPT_ERROR || (st = parse_opt(c, o, err)) >= 0)
            return c == CLI_OPT_ERROR ? 2 : st;
    if (optind != argc)
        return cli_usage_error("synth", "unexpected argument '%s'", argv[optind]);
    if (!o->out)
        return cli_usage_error("synth", "expected -o OUT.npy or -o OUT.safetensors");
    size_t olen = strlen(o->out);
    o->st = olen > 12 && strcmp(o->out + olen - 12, ".safetensors") == 0;
    o->npy = olen > 4 && strcmp(o->out + olen - 4, ".npy") == 0;
    if (!o->st && !o->npy)
        return cli_usage_error("synth", "-o: expected a name ending in .npy or .safetensors");
    if (o->eps < 0)
        o->eps = o->norm == NC_RMSNORM ? NC_RMSNORM_EPS : NC_LAYERNORM_EPS;

    o->all = strcmp(o->preset, "all") == 0;
    o->steps = strcmp(o->preset, "outlier-steps") == 0;
    if (!o->all && !o->steps && strcmp(o->preset, "early") && strcmp(o->preset, "middle") &&
        strcmp(o->preset, "late"))
        return cli_usage_error("synth", "--preset: expected early, middle, late, all or "
                               "outlier-steps, got '%s'", o->preset);
    if (o->all && o->npy)
        return cli_usage_error("synth", "--preset all writes three layers: use a .safetensors "
                               "output");
    if (o->npy && o->affine && (olen < 10 || strcmp(o->out + olen - 10, "_input.npy") != 0))
        return cli_usage_error("synth", "--affine with .npy: name the output <prefix>_input.npy "
                               "so that <prefix>_output.npy etc. go beside it");
    if (o->has_rng && !o->steps)
        return cli_usage_error("synth", "--rng: only the outlier-steps preset takes a generator");
    if (o->rng == NC_SYNTH_RNG_NUMPY && o->seed > UINT32_MAX)
        return cli_usage_error("synth", "--seed: expected 0 .. 4294967295 with --rng numpy "
                               "(np.random.seed's range)");
    return -1;
}

/* The parameters of preset layer k: the preset for the width, then the
 * overrides. */
static int preset_params(const synth_opts *o, const char *name, int k, gen_layer *g,
                         nc_synth_params *p, nc_err *err)
{
    /* presets depend on the width: N, d and the seed first */
    p->N = g->N = o->tokens ? o->tokens : 4096;
    p->d = g->d = o->dim ? o->dim : 256;
    p->seed = o->seed + (uint64_t)k;
    if (nc_synth_preset(name, p, err) != 0)
        return -1;
    if (!isnan(o->smed)) p->scale_median = o->smed;
    if (!isnan(o->sspread)) p->scale_spread = o->sspread;
    if (o->has_outliers) p->outliers = (size_t)o->outliers;
    if (!isnan(o->omag)) p->outlier_mag = o->omag;
    if (!isnan(o->ospread)) p->outlier_spread = o->ospread;
    if (!isnan(o->nu)) p->nu = o->nu;
    if (!isnan(o->offset)) p->offset_std = o->offset;
    return 0;
}

/* Layer k (preset name) into g: its input, and with --affine its weight,
 * bias and real output. Returns 0 or -1 with err set. */
static int generate_layer(const synth_opts *o, const char *name, int k, gen_layer *g,
                          nc_err *err)
{
    snprintf(g->name, sizeof g->name, "%s", name);
    nc_synth_params p = {0};
    if (o->steps) {
        g->N = o->tokens ? o->tokens : 9;
        g->d = o->dim ? o->dim : 100;
        if (g->N > 1000) {
            nc_err_set(err, NC_EINVAL, "--tokens: outlier-steps takes at most 1000 steps");
            return -1;
        }
    } else if (preset_params(o, name, k, g, &p, err) != 0) {
        return -1;
    }
    size_t n = g->N * g->d;
    if (!(g->x = malloc(n * sizeof(float)))) {
        nc_err_set(err, NC_ENOMEM, "out of memory for %zu x %zu", g->N, g->d);
        return -1;
    }
    size_t channel;
    int rc = o->steps ? nc_synth_outlier_steps(o->seed, g->d, (int)g->N, 5.0, 2.0, o->rng, g->x,
                                               &channel, err)
                      : nc_synth_fill(&p, g->x, 0, err);
    if (!rc && o->steps && o->dt == NC_F64) {
        /* the f64 file carries the draws unrounded (NumPy's, bit for bit) */
        if (!(g->x64 = malloc(n * sizeof(double))))
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for %zu x %zu", g->N, g->d);
        else
            rc = nc_synth_outlier_steps_f64(o->seed, g->d, (int)g->N, 5.0, 2.0, o->rng, g->x64,
                                            &channel, err);
    }
    if (rc)
        return -1;
    if (!o->affine)
        return 0;
    g->w = malloc(g->d * sizeof(float));
    g->b = o->norm == NC_LAYERNORM ? malloc(g->d * sizeof(float)) : NULL;
    g->y = malloc(n * sizeof(float));
    if (!g->w || (o->norm == NC_LAYERNORM && !g->b) || !g->y) {
        nc_err_set(err, NC_ENOMEM, "out of memory");
        return -1;
    }
    nc_companion_affine(g->x, g->N, g->d, o->norm, o->eps, o->seed + (uint64_t)k, g->w, g->b,
                        g->y);
    return 0;
}

/* The .npy output: the input as base, and with --affine the companions
 * "<prefix>_output.npy" etc. beside it. */
static int add_npy_files(nc_outset *set, const char *base, const gen_layer *g, nc_dtype dt,
                         bool affine, nc_err *err)
{
    uint64_t shape[2] = {g->N, g->d}, dshape[1] = {g->d};
    size_t n = g->N * g->d;
    if (write_npy(set, base, g->x, g->x64, 2, shape, dt, n, err) != 0)
        return -1;
    if (!affine)
        return 0;
    char name[4096];
    size_t pre = strlen(base) - 10; /* without "_input.npy" */
    const char *comp[3] = {"output", "weight", "bias"};
    const float *data[3] = {g->y, g->w, g->b};
    for (int k = 0; k < 3; k++) {
        if (!data[k])
            continue;
        snprintf(name, sizeof name, "%.*s_%s.npy", (int)pre, base, comp[k]);
        if (write_npy(set, name, data[k], NULL, k ? 1 : 2, k ? dshape : shape, NC_F32, k ? g->d : n,
                      err) != 0)
            return -1;
    }
    return 0;
}

/* The .safetensors output: "<layer>.input" (dtype dt), and the float32
 * "<layer>.output", ".weight", ".bias" that exist, for the nl layers. */
static int add_safetensors_file(nc_outset *set, const char *base, const gen_layer *g, int nl,
                                nc_dtype dt, nc_err *err)
{
    nc_st_entry e[12];
    uint64_t shapes[3][2], dshapes[3][1];
    void *bytes[12] = {NULL};
    char tnames[12][64];
    size_t ne = 0;
    int rc = 0;
    for (int k = 0; k < nl && !rc; k++) {
        shapes[k][0] = g[k].N;
        shapes[k][1] = g[k].d;
        dshapes[k][0] = g[k].d;
        const char *comp[4] = {"input", "output", "weight", "bias"};
        const float *data[4] = {g[k].x, g[k].y, g[k].w, g[k].b};
        for (int j = 0; j < 4; j++) {
            if (!data[j])
                continue;
            size_t n = j < 2 ? g[k].N * g[k].d : g[k].d;
            nc_dtype edt = j == 0 ? dt : NC_F32;
            snprintf(tnames[ne], sizeof tnames[ne], "%.40s.%s", g[k].name, comp[j]);
            if (!(bytes[ne] = encode(data[j], j == 0 ? g[k].x64 : NULL, n, edt))) {
                rc = nc_err_set(err, NC_ENOMEM, "out of memory");
                break;
            }
            e[ne] = (nc_st_entry){tnames[ne], edt, j < 2 ? 2 : 1,
                                  j < 2 ? shapes[k] : dshapes[k], bytes[ne]};
            ne++;
        }
    }
    nc_membuf mb = {0};
    nc_sink sink = nc_membuf_sink(&mb);
    const char *meta[] = {"producer", "normcmp synth", NULL};
    if (!rc)
        rc = nc_st_write(&sink, e, ne, meta, err);
    if (!rc)
        rc = nc_outset_add(set, base, mb.data, mb.len, err);
    nc_membuf_free(&mb);
    for (size_t k = 0; k < ne; k++)
        free(bytes[k]);
    return rc ? -1 : 0;
}

/* Writes the nl layers to o->out, all files together or none. */
static int write_output(const synth_opts *o, const gen_layer *g, int nl, nc_err *err)
{
    const char *out = o->out;
    const char *slash = strrchr(out, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - out) : 1, slash ? out : ".");
    if (slash == out)
        snprintf(dir, sizeof dir, "/");
    const char *base = slash ? slash + 1 : out;
    nc_outset *set = NULL;
    if (nc_outset_alloc(dir, &set, err) != 0)
        return -1;
    int rc = o->npy ? add_npy_files(set, base, &g[0], o->dt, o->affine, err)
                    : add_safetensors_file(set, base, g, nl, o->dt, err);
    if (rc == 0) {
        rc = nc_outset_commit(set, err) ? -1 : 0;
        set = NULL;
    }
    nc_outset_abort(set);
    return rc;
}

int cli_synth(int argc, char **argv)
{
    nc_err err = {0};
    synth_opts o;
    int st = parse_args(argc, argv, &o, &err);
    if (st >= 0)
        return st;
    const char *names[3] = {o.preset, NULL, NULL};
    int nl = 1;
    if (o.all) {
        names[0] = "early";
        names[1] = "middle";
        names[2] = "late";
        nl = 3;
    }
    gen_layer g[3];
    memset(g, 0, sizeof g);
    int status = 0;
    for (int k = 0; k < nl && status == 0; k++)
        if (generate_layer(&o, names[k], k, &g[k], &err) != 0)
            status = cli_fail(&err);
    if (status == 0 && write_output(&o, g, nl, &err) != 0)
        status = cli_fail(&err);
    free_layers(g, nl);
    return status;
}
