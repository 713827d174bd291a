/*
 * norm.c - `normcmp norm FILE --norm layernorm|rmsnorm -o OUT.npy`: writes
 * the normalized output of a tensor as float32, streamed token by token
 * (BRIEF.md "The objects"; with --affine, the weight and bias found beside
 * it are applied). A token with a non-finite value, or of zero scale,
 * gives NaN outputs, as PyTorch does.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cli_norm(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},     {"tensor", required_argument, NULL, 't'},
        {"norm", required_argument, NULL, 'n'},    {"eps", required_argument, NULL, 'e'},
        {"affine", no_argument, NULL, 'a'},        {"weight", required_argument, NULL, 'w'},
        {"bias", required_argument, NULL, 'b'},    {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    nc_err err = {0};
    const char *out = NULL, *tensor = NULL, *wpath = NULL, *bpath = NULL;
    nc_norm_kind kind = NC_LAYERNORM;
    double eps = -1;
    bool affine = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:t:n:e:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 't': tensor = optarg; break;
        case 'n':
            if (!nc_norm_parse(optarg, &kind))
                return cli_usage_error("norm", "--norm: expected layernorm or rmsnorm, got '%s'",
                                       optarg);
            break;
        case 'e':
            if (nc_parse_double(optarg, "--eps", 0, 1, &eps, &err) != 0)
                return cli_fail(&err);
            break;
        case 'a': affine = true; break;
        case 'w': wpath = optarg; affine = true; break;
        case 'b': bpath = optarg; affine = true; break;
        case 'h':
            fputs(help, stdout);
            return cli_finish_stdout(0);
        default:
            return cli_usage_error("norm", "unknown or incomplete option");
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("norm", "expected one input FILE");
    if (!out)
        return cli_usage_error("norm", "expected -o OUT.npy");

    /* resolve the tensor and its weight/bias through a one-layer plan */
    nc_config *cfg = NULL;
    nc_plan *plan = NULL;
    nc_outfile *of = NULL;
    double *row = NULL, *w = NULL, *b = NULL;
    float *row32 = NULL;
    int status = 0;
    nc_config_layer *l;
    if (nc_config_alloc("command line", &cfg, &err) || nc_config_add_layer(cfg, &l, &err))
        goto fail;
    cfg->norm = kind;
    if (eps >= 0) {
        cfg->has_eps = true;
        cfg->eps = eps;
    }
    l->file = strdup(argv[optind]);
    if (tensor && (l->tensors = calloc(1, sizeof *l->tensors)))
        l->ntensors = (l->tensors[0] = strdup(tensor)) != NULL;
    if (wpath)
        l->comp[NC_COMP_WEIGHT] = strdup(wpath);
    if (bpath)
        l->comp[NC_COMP_BIAS] = strdup(bpath);
    if (!l->file || (tensor && !l->ntensors) || (wpath && !l->comp[NC_COMP_WEIGHT]) ||
        (bpath && !l->comp[NC_COMP_BIAS])) {
        nc_err_set(&err, NC_ENOMEM, "out of memory");
        goto fail;
    }
    if (nc_plan_open(cfg, &plan, &err) != 0)
        goto fail;
    if (plan->nlayers != 1) {
        nc_err_set(&err, NC_EINVAL, "%s: %zu tensors selected; name one with --tensor",
                   argv[optind], plan->nlayers);
        goto fail;
    }
    const nc_plan_layer *pl = &plan->layers[0];
    const nc_tensor *x = pl->x;
    const size_t d = x->d;
    if (!nc_dtype_is_float(x->dtype)) {
        nc_err_set(&err, NC_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not supported (expected "
                   "F32, F16, BF16 or F64)", argv[optind], x->name, nc_dtype_name(x->dtype));
        goto fail;
    }
    const nc_tensor *wt = affine ? pl->comp[NC_COMP_WEIGHT] : NULL;
    const nc_tensor *bt = affine ? pl->comp[NC_COMP_BIAS] : NULL;
    if (affine && !wt && !bt) {
        nc_err_set(&err, NC_EINVAL, "%s: --affine: no weight or bias found beside the input "
                   "(expected %s)", argv[optind], strcmp(nc_dump_format(plan->dumps[0]), "npy") == 0
                       ? "<prefix>_weight.npy next to <prefix>_input.npy"
                       : "<layer>.weight in the file");
        goto fail;
    }
    const nc_tensor *ab[2] = {wt, bt};
    for (int k = 0; k < 2; k++)
        if (ab[k] && (ab[k]->nelem != d || !nc_dtype_is_float(ab[k]->dtype))) {
            nc_err_set(&err, NC_EINVAL, "%s: %s '%s' must be a float tensor of %zu values, "
                       "found %zu of %s", argv[optind], k ? "bias" : "weight", ab[k]->name, d,
                       ab[k]->nelem, nc_dtype_name(ab[k]->dtype));
            goto fail;
        }
    row = malloc((d ? d : 1) * sizeof *row);
    row32 = malloc((d ? d : 1) * sizeof *row32);
    w = wt ? malloc(d * sizeof *w) : NULL;
    b = bt ? malloc(d * sizeof *b) : NULL;
    if (!row || !row32 || (wt && !w) || (bt && !b)) {
        nc_err_set(&err, NC_ENOMEM, "out of memory");
        goto fail;
    }
    if (w)
        nc_tensor_elems(wt, 0, d, w);
    if (b)
        nc_tensor_elems(bt, 0, d, b);

    for (size_t k = 0; k < plan->ndumps; k++)
        if (nc_out_not_input(out, nc_dump_path(plan->dumps[k]), &err) != 0)
            goto fail;
    if (nc_outfile_open(out, &of, &err) != 0)
        goto fail;
    nc_sink sink = nc_outfile_sink(of);
    if (nc_npy_write_header(&sink, NC_F32, x->rank, x->shape, &err) != 0)
        goto fail;
    for (size_t t = 0; t < x->N && d > 0; t++) {
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
        if (nc_sink_write(&sink, row32, d * sizeof *row32, &err) != 0)
            goto fail;
    }
    int rc = nc_outfile_commit(of, &err);
    of = NULL;
    if (rc != 0)
        goto fail;
    goto out;
fail:
    status = cli_fail(&err);
out:
    nc_outfile_abort(of);
    free(row);
    free(row32);
    free(w);
    free(b);
    nc_plan_close(plan);
    nc_config_free(cfg);
    return status;
}
