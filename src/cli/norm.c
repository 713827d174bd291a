/*
 * norm.c - `normcmp norm FILE --norm layernorm|rmsnorm -o OUT.npy`: writes
 * the normalized output of a tensor as float32, streamed token by token
 * (docs/theory.md "RMSNorm", "LayerNorm"; with --affine, the weight and bias found beside
 * it are applied). A token with a non-finite value, or of zero scale,
 * gives NaN outputs, as PyTorch does.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "plan/plan.h"
#include "core/norm.h"
#include "io/npy.h"
#include "util/outfile.h"
#include "util/parse.h"

static const char help[] =
    "usage: normcmp norm FILE -o OUT.npy [options]\n"
    "Writes LayerNorm(x) or RMSNorm(x) over the last axis of a tensor as float32 .npy.\n"
    "\n"
    "  -o, --out FILE        output .npy (required)\n"
    "  -t, --tensor NAME     the tensor (safetensors: required if the file has several)\n"
    "  -n, --norm NAME       layernorm or rmsnorm (default layernorm)\n"
    "  -e, --eps E           eps, a number >= 0 (default 1e-5 LayerNorm, 1e-6 RMSNorm)\n"
    "      --affine          apply the weight (and bias) found beside the input\n"
    "                        (<prefix>_weight.npy / <layer>.weight) or given below\n"
    "      --weight FILE     affine weight .npy (implies --affine)\n"
    "      --bias FILE       affine bias .npy (implies --affine)\n"
    "  -h, --help            this help\n";

typedef struct norm_args {
    const char *in, *out, *tensor, *wpath, *bpath;
    nc_norm_kind kind;
    double eps; /* < 0: the norm's default */
    bool affine;
} norm_args;

/* The options and the input into a: -1 to go on, else the exit status
 * (after --help, or an error printed). */
static int parse_args(int argc, char **argv, norm_args *a, nc_err *err)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},     {"tensor", required_argument, NULL, 't'},
        {"norm", required_argument, NULL, 'n'},    {"eps", required_argument, NULL, 'e'},
        {"affine", no_argument, NULL, 'a'},        {"weight", required_argument, NULL, 'w'},
        {"bias", required_argument, NULL, 'b'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *a = (norm_args){.kind = NC_LAYERNORM, .eps = -1};
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:t:n:e:h", opts, "norm")) != -1) {
        switch (c) {
        case CLI_OPT_ERROR: return 2;
        case 'o': a->out = optarg; break;
        case 't': a->tensor = optarg; break;
        case 'n':
            if (!nc_norm_parse(optarg, &a->kind))
                return cli_usage_error("norm", "--norm: expected " NC_NORM_NAMES ", got '%s'",
                                       optarg);
            break;
        case 'e':
            if (nc_parse_double(optarg, "--eps", 0, 1, &a->eps, err) != 0)
                return cli_option_fail("norm", err);
            break;
        case 'a': a->affine = true; break;
        case 'w': a->wpath = optarg; a->affine = true; break;
        case 'b': a->bpath = optarg; a->affine = true; break;
        case 'h':
            fputs(help, stdout);
            return cli_finish_stdout(0);
        default:
            return cli_usage_error("norm", "unknown or incomplete option");
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("norm", "expected one input FILE");
    if (!a->out)
        return cli_usage_error("norm", "expected -o OUT.npy");
    if (strcmp(a->out, "-") == 0) /* a file named "-", not standard output */
        return cli_usage_error("norm", "-o: expected a file name, not '-' (the output is a .npy "
                               "file, never standard output; ./- names a file called -)");
    a->in = argv[optind];
    return -1;
}

/* The output's folder must exist (it is not created): -1, or 2 after
 * saying so. */
static int check_out_folder(const char *out)
{
    const char *slash = strrchr(out, '/');
    if (!slash)
        return -1;
    size_t n = slash == out ? 1 : (size_t)(slash - out);
    char *dir = strndup(out, n);
    struct stat st;
    bool ok = !dir || (stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    int status = ok ? -1
                    : cli_usage_error("norm", "-o %s: folder '%s' does not exist (create it "
                                      "first)", out, dir);
    free(dir);
    return status;
}

/* The tensor and its weight/bias, resolved through a one-layer plan:
 * exactly one float tensor, and with --affine a weight or bias of d
 * float values. */
static int open_plan(const norm_args *a, nc_config **cfgp, nc_plan **planp, nc_err *err)
{
    nc_config_layer *l;
    if (nc_config_alloc("command line", cfgp, err) || nc_config_add_layer(*cfgp, &l, err))
        return -1;
    nc_config *cfg = *cfgp;
    cfg->norm = a->kind;
    cfg->has_norm = true; /* norm's kind is the flag's or its default, never the file's */
    if (a->eps >= 0) {
        cfg->has_eps = true;
        cfg->eps = a->eps;
    }
    l->file = strdup(a->in);
    if (a->tensor && (l->tensors = calloc(1, sizeof *l->tensors)))
        l->ntensors = (l->tensors[0] = strdup(a->tensor)) != NULL;
    if (a->wpath)
        l->comp[NC_COMP_WEIGHT] = strdup(a->wpath);
    if (a->bpath)
        l->comp[NC_COMP_BIAS] = strdup(a->bpath);
    if (!l->file || (a->tensor && !l->ntensors) || (a->wpath && !l->comp[NC_COMP_WEIGHT]) ||
        (a->bpath && !l->comp[NC_COMP_BIAS]))
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    if (nc_plan_open(cfg, planp, err) != 0)
        return -1;
    const nc_plan *plan = *planp;
    if (plan->nlayers != 1)
        return nc_err_set(err, NC_EINVAL, "%s: %zu tensors selected; name one with --tensor",
                          a->in, plan->nlayers);
    const nc_plan_layer *pl = &plan->layers[0];
    const nc_tensor *x = pl->x;
    const size_t d = x->d;
    if (!nc_dtype_is_float(x->dtype))
        return nc_err_set(err, NC_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not supported "
                          "(expected F32, F16, BF16 or F64)", a->in, x->name,
                          nc_dtype_name(x->dtype));
    const nc_tensor *ab[2] = {a->affine ? pl->comp[NC_COMP_WEIGHT] : NULL,
                              a->affine ? pl->comp[NC_COMP_BIAS] : NULL};
    if (a->affine && !ab[0] && !ab[1])
        return nc_err_set(err, NC_EINVAL, "%s: --affine: no weight or bias found beside the "
                          "input (expected %s)", a->in,
                          strcmp(nc_dump_format(plan->dumps[0]), "npy") == 0
                              ? "<prefix>_weight.npy next to <prefix>_input.npy"
                              : "<layer>.weight in the file");
    for (int k = 0; k < 2; k++)
        if (ab[k] && (ab[k]->nelem != d || !nc_dtype_is_float(ab[k]->dtype)))
            return nc_err_set(err, NC_EINVAL, "%s: %s '%s' must be a float tensor of %zu "
                              "values, found %zu of %s", a->in, k ? "bias" : "weight",
                              ab[k]->name, d, ab[k]->nelem, nc_dtype_name(ab[k]->dtype));
    return 0;
}

/* The normalized tensor (with w and b when not NULL) as float32 .npy at
 * out, streamed token by token; NaN rows for tokens without a norm. */
static int write_normalized(const char *out, const nc_plan_layer *pl, const double *w,
                            const double *b, nc_err *err)
{
    const nc_tensor *x = pl->x;
    const size_t d = x->d;
    double *row = malloc((d ? d : 1) * sizeof *row);
    float *row32 = malloc((d ? d : 1) * sizeof *row32);
    nc_outfile *of = NULL;
    int rc = !row || !row32 ? nc_err_set(err, NC_ENOMEM, "out of memory") : 0;
    if (!rc && (rc = nc_outfile_open(out, &of, err)) == 0) {
        nc_sink sink = nc_outfile_sink(of);
        rc = nc_npy_write_header(&sink, NC_F32, x->rank, x->shape, err);
        for (size_t t = 0; t < x->N && d > 0 && !rc; t++) {
            nc_tensor_rows(x, t, 1, row);
            nc_token_stat st = nc_norm_token(pl->norm, pl->eps, row, d);
            if (st.status == NC_TOKEN_OK) {
                nc_norm_apply(&st, row, d, row);
                nc_norm_affine(w, b, d, row);
            } else {
                for (size_t i = 0; i < d; i++)
                    row[i] = NAN;
            }
            for (size_t i = 0; i < d; i++)
                row32[i] = (float)row[i];
            rc = nc_sink_write(&sink, row32, d * sizeof *row32, err);
        }
        if (!rc) {
            rc = nc_outfile_commit(of, err);
            of = NULL;
        }
    }
    nc_outfile_abort(of);
    free(row);
    free(row32);
    return rc;
}

int cli_norm(int argc, char **argv)
{
    nc_err err = {0};
    norm_args a;
    int status = parse_args(argc, argv, &a, &err);
    if (status >= 0 || (status = check_out_folder(a.out)) >= 0)
        return status;
    nc_config *cfg = NULL;
    nc_plan *plan = NULL;
    double *w = NULL, *b = NULL;
    status = 0;
    if (open_plan(&a, &cfg, &plan, &err) != 0)
        goto fail;
    const nc_plan_layer *pl = &plan->layers[0];
    const nc_tensor *wt = a.affine ? pl->comp[NC_COMP_WEIGHT] : NULL;
    const nc_tensor *bt = a.affine ? pl->comp[NC_COMP_BIAS] : NULL;
    const size_t d = pl->x->d;
    w = wt ? malloc(d * sizeof *w) : NULL;
    b = bt ? malloc(d * sizeof *b) : NULL;
    if ((wt && !w) || (bt && !b)) {
        nc_err_set(&err, NC_ENOMEM, "out of memory");
        goto fail;
    }
    if (w)
        nc_tensor_elems(wt, 0, d, w);
    if (b)
        nc_tensor_elems(bt, 0, d, b);
    for (size_t k = 0; k < plan->ndumps; k++)
        if (nc_out_not_input(a.out, nc_dump_path(plan->dumps[k]), &err) != 0)
            goto fail;
    if (write_normalized(a.out, pl, w, b, &err) == 0)
        goto out;
fail:
    status = cli_fail(&err);
out:
    free(w);
    free(b);
    nc_plan_close(plan);
    nc_config_free(cfg);
    return status;
}
