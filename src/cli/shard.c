/*
 * shard.c - `run --shard K/N`: the flag and the figures a shard draws
 * (docs/whole_models.md). `normcmp merge` is in merge.c.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "io/dump.h"
#include "plot/figures.h"
#include "report/html.h"
#include "util/outfile.h"
#include "util/parse.h"

int cli_parse_shard(const char *arg, size_t *k, size_t *n, nc_err *err)
{
    const char *slash = strchr(arg, '/');
    char head[32];
    uint64_t a, b;
    if (!slash || (size_t)(slash - arg) >= sizeof head || slash == arg)
        return nc_err_set(err, NC_EINVAL, "--shard: '%s' is not K/N (expected, e.g., 2/8: "
                          "the second of 8 shards)", arg);
    memcpy(head, arg, (size_t)(slash - arg));
    head[slash - arg] = '\0';
    int rc = nc_parse_u64(slash + 1, "--shard's N", 1, 100000, &b, err);
    if (!rc)
        rc = nc_parse_u64(head, "--shard's K", 1, b, &a, err);
    if (rc)
        return rc;
    *k = (size_t)a;
    *n = (size_t)b;
    return 0;
}

bool cli_fig_kind_is_run_level(int kind)
{
    return kind == NC_FIG_ALPHA_STD || kind == NC_FIG_ALPHA_DEPTH || kind == NC_FIG_SCATTER_GRID ||
           kind == NC_FIG_TANH_FAMILY || kind == NC_FIG_SWAP_DEPTH;
}

int cli_shard_figures(const nc_plan *plan, const nc_fig_spec *specs, size_t n,
                      nc_fig_spec **out, size_t *nout, nc_err *err)
{
    *out = NULL;
    *nout = 0;
    if (n == 0)
        return 0;
    nc_fig_spec *keep = malloc(n * sizeof *keep);
    if (!keep)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    for (size_t s = 0; s < n; s++) {
        if (cli_fig_kind_is_run_level(specs[s].kind))
            continue; /* drawn by merge, or not at all (docs/whole_models.md) */
        bool any = false;
        for (size_t k = 0; k < plan->nlayers && !any; k++)
            any = plan->layers[k].in_shard && nc_fig_spec_selects(&specs[s], plan->layers[k].name) &&
                  (specs[s].kind != NC_FIG_OUTLIER_STEPS || plan->layers[k].cfg->outlier_steps);
        if (any)
            keep[(*nout)++] = specs[s]; /* shallow: the config keeps ownership */
    }
    *out = keep;
    return 0;
}

int cli_write_index(struct nc_outset *set, const char *report_json, nc_err *err)
{
    char *html;
    int rc = nc_report_html(report_json, &html, err);
    if (rc)
        return rc;
    rc = nc_outset_add(set, "index.html", html, strlen(html), err);
    free(html);
    return rc;
}
