/*
 * common.c - what the subcommands share: errors, the command line, and the
 * plan -> report -> summary path of `fit` and `run`.
 */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plan/plan.h"
#include "plot/figures.h"
#include "report/report.h"
#include "report/report.h"
#include "util/outfile.h"
#include "util/progress.h"

int cli_fail(const nc_err *err)
{
    fprintf(stderr, "normcmp: %s\n", err->msg[0] ? err->msg : "unknown error");
    int st = nc_err_exit_status(err->code);
    return st ? st : 1;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "normcmp: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'normcmp %s --help')\n", cmd);
    va_end(ap);
    return 2;
}

char *cli_command_line(int argc, char **argv)
{
    size_t n = 1;
    for (int k = 0; k < argc; k++)
        n += 3 + 4 * strlen(argv[k]);
    char *s = malloc(n), *p = s;
    if (!s)
        return NULL;
    for (int k = 0; k < argc; k++) {
        const char *a = argv[k];
        bool plain = *a != '\0';
        for (const char *c = a; *c; c++)
            plain = plain && (strchr("-_./=:,+@%", *c) || (*c >= '0' && *c <= '9') ||
                              (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'));
        if (k)
            *p++ = ' ';
        if (plain) {
            p += sprintf(p, "%s", a);
            continue;
        }
        *p++ = '\'';
        for (const char *c = a; *c; c++) {
            if (*c == '\'')
                p += sprintf(p, "'\\''");
            else
                *p++ = *c;
        }
        *p++ = '\'';
    }
    *p = '\0';
    return s;
}

int cli_finish_stdout(int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "normcmp: cannot write to standard output: %s\n", strerror(errno));
        return 1;
    }
    return status;
}

static void print_num(double v, int width)
{
    if (isfinite(v))
        printf(" %*.*g", width, 6, v);
    else
        printf(" %*s", width, "-");
}

bool cli_summary_jacobian_only;

/* Most files one run writes besides report.json. */
#define MAX_OUTPUT_FILES 4096

static int name_width(const nc_plan *plan)
{
    int w = 5;
    for (size_t k = 0; k < plan->nlayers; k++) {
        int n = (int)strlen(plan->layers[k].name);
        w = n > w ? n : w;
    }
    return w;
}

/* The Jacobian table: one line per layer (BRIEF.md "The gradient derivation"). */
static void print_jacobian_summary(const nc_plan *plan)
{
    int w = name_width(plan);
    printf("%-*s %11s %11s %11s %11s %11s %11s %11s\n", w, "layer", "diag share", "bp err",
           "radial", "DyT J-rmse", "ISRU J-rmse", "DyT bp err", "ISRU bp err");
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        if (!l->has_jacobian)
            continue;
        const nc_jac_result *j = &l->jacobian;
        const nc_jac_surrogate *dyt = &j->surr[NC_FIT_DYT], *isru = &j->surr[NC_FIT_DYISRU];
        printf("%-*s", w, l->name);
        print_num(j->diag_frobenius_share, 11);
        print_num(j->backprop.median, 11);
        print_num(j->radial_retention, 11);
        print_num(dyt->ok ? dyt->diag_rmse : NAN, 11);
        print_num(isru->ok ? isru->diag_rmse : NAN, 11);
        print_num(dyt->ok ? dyt->backprop.mean : NAN, 11);
        print_num(isru->ok ? isru->backprop.mean : NAN, 11);
        printf("\n");
    }
}

/* The sweep table: one line per layer and swept parameter. */
static void print_sweep_summary(const nc_plan *plan)
{
    int w = name_width(plan);
    printf("%-*s %6s %6s %11s %11s %11s %11s %11s\n", w, "layer", "param", "grid", "optimum",
           "fitted", "theory", "min RMSE", "J optimum");
    for (size_t k = 0; k < plan->nlayers; k++)
        for (int p = 0; p < 2; p++) {
            const nc_plan_layer *l = &plan->layers[k];
            if (!l->has_sweep[p])
                continue;
            const nc_sweep_result *s = &l->sweep[p];
            printf("%-*s %6s %6zu", w, l->name, nc_sweep_param_name(s->param), s->n);
            print_num(s->opt_refit, 11);
            print_num(s->fitted, 11);
            print_num(s->theory, 11);
            print_num(s->min_refit, 11);
            print_num(s->opt_jac, 11);
            printf("\n");
        }
}

/* The summary table: one line per layer. */
static void print_summary(const nc_plan *plan)
{
    int w = name_width(plan);
    printf("%-*s %8s %6s %11s %11s %11s %11s %11s\n", w, "layer", "N", "d", "DyT alpha",
           "alpha*std", "R2 affine", "R2 DyT", "R2 DyISRU");
    for (size_t k = 0; k < plan->nlayers; k++) {
        if (!plan->layers[k].done)
            continue; /* another shard's */
        const nc_layer_result *r = &plan->layers[k].result;
        const nc_fit_result *dyt = &r->fits[NC_FIT_DYT], *lin = &r->fits[NC_FIT_LINEAR],
                            *isru = &r->fits[NC_FIT_DYISRU];
        double alpha = dyt->ok ? dyt->params.p[0] : NAN;
        printf("%-*s %8zu %6zu", w, r->name, r->N, r->d);
        print_num(alpha, 11);
        print_num(alpha * r->stats.std, 11);
        print_num(lin->ok ? lin->r2 : NAN, 11);
        print_num(dyt->ok ? dyt->r2 : NAN, 11);
        print_num(isru->ok ? isru->r2 : NAN, 11);
        printf("\n");
        if (plan->layers[k].has_outlier_steps) {
            const nc_outlier_steps *os = &plan->layers[k].outlier_steps;
            printf("%-*s   outlier steps: mean |residual| DyT %.4g, DyISRU %.4g, ratio %.3g\n",
                   w, "", os->dyt.mean_abs_res, os->dyisru.mean_abs_res, os->ratio);
            if (os->has_spread) {
                const nc_outlier_spread *sp = &os->spread;
                printf("%-*s   over %zu draws (seeds %llu..%llu): ratio median %.3g "
                       "(5-95%% %.3g..%.3g), DyT |residual| median %.3g (5-95%% %.3g..%.3g)\n",
                       w, "", sp->draws, (unsigned long long)sp->seed0,
                       (unsigned long long)(sp->seed0 + sp->draws - 1), sp->ratio.median,
                       sp->ratio.p05, sp->ratio.p95, sp->dyt_res.median, sp->dyt_res.p05,
                       sp->dyt_res.p95);
            }
        }
    }
}

static int copy_config(nc_outset *set, const char *config_path, nc_err *err)
{
    FILE *f = fopen(config_path, "rb");
    if (!f)
        return nc_err_set_errno(err, NC_EIO, errno, "%s: cannot reopen config file", config_path);
    nc_membuf mb = {0};
    nc_sink sink = nc_membuf_sink(&mb);
    char buf[65536];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(buf, 1, sizeof buf, f)) > 0)
        rc = nc_sink_write(&sink, buf, n, err);
    if (!rc && ferror(f))
        rc = nc_err_set_errno(err, NC_EIO, errno, "%s: cannot read config file", config_path);
    fclose(f);
    if (!rc)
        rc = nc_outset_add(set, "config.json", mb.data ? (const char *)mb.data : "", mb.len, err);
    nc_membuf_free(&mb);
    return rc;
}

int cli_execute(const nc_config *cfg, const char *command, const char *config_path, bool quiet)
{
    nc_err err = {0};
    nc_plan *plan = NULL;
    nc_progress *progress = NULL;
    nc_outset *set = NULL;
    char *json = NULL;
    char *files[MAX_OUTPUT_FILES] = {NULL};
    size_t nfiles = 0;
    int status = 0;

    if (nc_plan_open(cfg, &plan, &err) != 0)
        goto fail;
    /* every output goes to the folder's set; all appear together or none */
    if (nc_outset_alloc_folder(cfg->output, &set, &err) != 0)
        goto fail;
    for (size_t k = 0; k < plan->ndumps; k++)
        if (nc_outset_protect(set, nc_dump_path(plan->dumps[k])) != 0)
            goto nomem;
    if (config_path && nc_outset_protect(set, config_path) != 0)
        goto nomem;
    progress = nc_progress_alloc(!quiet);
    if (nc_plan_run(plan, progress, &err) != 0)
        goto fail;
    nc_progress_free(progress);
    progress = NULL;
    if (config_path) {
        if (copy_config(set, config_path, &err) != 0)
            goto fail;
        files[nfiles++] = strdup("config.json");
    }
    if (cfg->nfigures) {
        size_t nfig = 0, nspecs = cfg->nfigures;
        nc_fig_spec *shard_specs = NULL; /* a shard draws its layers' figures only */
        if (cfg->shard_count &&
            cli_shard_figures(plan, cfg->figures, cfg->nfigures, &shard_specs, &nspecs, &err))
            goto fail;
        if (!quiet && isatty(STDERR_FILENO))
            fprintf(stderr, "\rnormcmp: rendering figures...");
        int rc = nc_figures_render(plan, shard_specs ? shard_specs : cfg->figures, nspecs,
                                   command, cfg->threads, set, files + nfiles,
                                   MAX_OUTPUT_FILES - nfiles, &nfig, &err);
        free(shard_specs);
        if (!quiet && isatty(STDERR_FILENO))
            fprintf(stderr, "\r\033[K");
        nfiles += nfig;
        if (rc != 0)
            goto fail;
    }
    if (cfg->sweep.enabled) {
        /* a CSV and a figure per layer and swept parameter */
        for (size_t k = 0; k < plan->nlayers && cfg->sweep.csv; k++) {
            for (int p = 0; p < 2; p++) {
                const nc_plan_layer *l = &plan->layers[k];
                if (!l->has_sweep[p])
                    continue;
                char *csv, name[256], base[200];
                size_t o = 0;
                for (const char *c = l->name; *c && o + 1 < sizeof base; c++)
                    base[o++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                                        (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'
                                    ? *c
                                    : '_';
                base[o] = '\0';
                snprintf(name, sizeof name, "%s_sweep_%s.csv", base,
                         nc_sweep_param_name((nc_sweep_param)p));
                if (nc_report_sweep_csv(&l->sweep[p], &csv, &err) != 0)
                    goto fail;
                int rc = nc_outset_add(set, name, csv, strlen(csv), &err);
                free(csv);
                if (rc != 0)
                    goto fail;
                if (nfiles < MAX_OUTPUT_FILES)
                    files[nfiles++] = strdup(name);
            }
        }
        if (cfg->sweep.figure) {
            size_t nfig = 0;
            int rc = nc_figures_sweeps(plan, cfg->sweep.formats, command, set, files + nfiles,
                                       MAX_OUTPUT_FILES - nfiles, &nfig, &err);
            nfiles += nfig;
            if (rc != 0)
                goto fail;
        }
    }
    if (nfiles < MAX_OUTPUT_FILES)
        files[nfiles++] = strdup("index.html");
    if (nc_report_json(plan, command, (const char *const *)files, nfiles, &json, &err) != 0)
        goto fail;
    if (nc_outset_add(set, "report.json", json, strlen(json), &err) != 0)
        goto fail;
    if (cli_write_index(set, json, &err) != 0) /* docs/whole_models.md */
        goto fail;
    int rc = nc_outset_commit(set, &err);
    set = NULL;
    if (rc != 0)
        goto fail;
    bool any_jac = false;
    for (size_t k = 0; k < plan->nlayers; k++)
        any_jac = any_jac || plan->layers[k].has_jacobian;
    if (!cli_summary_jacobian_only && plan->nlayers > 0)
        print_summary(plan);
    if (any_jac) {
        if (!cli_summary_jacobian_only)
            printf("\n");
        print_jacobian_summary(plan);
    }
    if (cfg->sweep.enabled) {
        printf("\n");
        print_sweep_summary(plan);
    }
    if (!quiet)
        fprintf(stderr, "normcmp: wrote %s/report.json%s\n", cfg->output,
                nfiles > (config_path ? 1u : 0u) ? " and figures" : "");
    goto out;
nomem:
    nc_err_set(&err, NC_ENOMEM, "out of memory");
fail:
    nc_progress_free(progress);
    progress = NULL;
    nc_outset_abort(set); /* and the folders it created */
    status = cli_fail(&err);
out:
    free(json);
    for (size_t k = 0; k < nfiles; k++)
        free(files[k]);
    nc_plan_close(plan);
    return status ? status : cli_finish_stdout(0);
}
