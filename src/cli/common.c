/*
 * common.c - what the subcommands share: errors, the command line, and the
 * plan -> report -> summary path of `fit` and `run`.
 */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/run_summary.h"
#include "plan/plan.h"
#include "plot/figures.h"
#include "report/report.h"
#include "util/outfile.h"
#include "util/progress.h"
#include "util/readfile.h"

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

int cli_option_fail(const char *cmd, const nc_err *err)
{
    return cli_usage_error(cmd, "%s", err->msg[0] ? err->msg : "bad option value");
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

bool cli_summary_jacobian_only;
bool cli_verbose;
bool cli_json;

/* Most files one run writes besides report.json. */
#define MAX_OUTPUT_FILES 4096

/* The ranked surrogate (run_summary.h) with the lowest backprop error of
 * layer l's Jacobian comparison: the verdict's "best backprop"; -1: none. */
static int best_backprop(const nc_jac_result *j)
{
    int best = -1;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (nc_fit_ranked((nc_fit_id)k) && j->surr[k].ok && isfinite(j->surr[k].backprop.err) &&
            (best < 0 || j->surr[k].backprop.err < j->surr[best].backprop.err))
            best = k;
    return best;
}

/* The Jacobian table: one line per layer (docs/jacobian.md), its columns
 * explained once above it. */
static void print_jacobian_summary(const nc_plan *plan)
{
    int w = cli_name_width(plan);
    printf("Jacobian J of the norm against diagonals (docs/jacobian.md), pooled over tokens; (G): the "
           "value for\nGaussian inputs at the layer's d (jacobian.gaussian_reference). diag share: "
           "share of ||J||_F^2 on the\ndiagonal; bp err: relative error of backpropagating "
           "white-noise gradients through diag(J)\ninstead of J; radial: how much of the radial "
           "direction diag(J) keeps (J removes it); DyT/ISRU\nJ-rmse: RMSE of the fitted curve's "
           "f'(x) to J_ii; DyT/ISRU bp err: bp err of diag(f'(x)); best bp:\nthe surrogate with "
           "the lowest bp err (the verdict's best backprop) and that bp err.\n");
    printf("%-*s %10s %8s %9s %8s %8s %8s %11s %11s %10s %11s  %s\n", w, "layer", "diag share",
           "(G)", "bp err", "(G)", "radial", "(G)", "DyT J-rmse", "ISRU J-rmse", "DyT bp err",
           "ISRU bp err", "best bp");
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        if (!l->has_jacobian)
            continue;
        const nc_jac_result *j = &l->jacobian;
        const nc_jac_surrogate *dyt = &j->surr[NC_FIT_DYT], *isru = &j->surr[NC_FIT_DYISRU];
        printf("%-*s", w, l->name);
        cli_print_num(j->diag_frobenius_share, 10, 6);
        cli_print_num(j->gauss.diag_frobenius_share, 8, 6);
        cli_print_num(j->backprop.err, 9, 6);
        cli_print_num(j->gauss.offdiag_frobenius_share, 8, 6);
        cli_print_num(j->radial_retention, 8, 6);
        cli_print_num(j->gauss.radial_retention, 8, 6);
        cli_print_num(dyt->ok ? dyt->diag_rmse : NAN, 11, 6);
        cli_print_num(isru->ok ? isru->diag_rmse : NAN, 11, 6);
        cli_print_num(dyt->ok ? dyt->backprop.err : NAN, 10, 6);
        cli_print_num(isru->ok ? isru->backprop.err : NAN, 11, 6);
        int b = best_backprop(j);
        if (b >= 0)
            printf("  %s %.4g", nc_surrogate_get((nc_fit_id)b)->name, j->surr[b].backprop.err);
        else
            printf("  -");
        printf("\n");
    }
}

/* The sweep table: one line per layer and swept parameter. */
static void print_sweep_summary(const nc_plan *plan)
{
    int w = cli_name_width(plan);
    printf("%-*s %6s %6s %11s %11s %11s %11s %11s\n", w, "layer", "param", "grid", "optimum",
           "fitted", "theory", "min RMSE", "J optimum");
    for (size_t k = 0; k < plan->nlayers; k++)
        for (int p = 0; p < 2; p++) {
            const nc_plan_layer *l = &plan->layers[k];
            if (!l->has_sweep[p])
                continue;
            const nc_sweep_result *s = &l->sweep[p];
            printf("%-*s %6s %6zu", w, l->name, nc_sweep_param_name(s->param), s->n);
            cli_print_num(s->opt_refit, 11, 6);
            cli_print_num(s->fitted, 11, 6);
            cli_print_num(s->theory, 11, 6);
            cli_print_num(s->min_refit, 11, 6);
            cli_print_num(s->opt_jac, 11, 6);
            printf("\n");
        }
}

/* The config as read again for its copy: without blocking, a regular file,
 * no larger than a config may be (util/readfile.h). */
static int copy_config(nc_outset *set, const char *config_path, nc_err *err)
{
    const nc_infile in = {.noun = "config file", .max_bytes = NC_CONFIG_MAX_BYTES,
                          .dirfd = AT_FDCWD};
    char *text;
    size_t len;
    int rc = nc_infile_read(config_path, &in, &text, &len, err);
    if (!rc)
        rc = nc_outset_add(set, "config.json", text, len, err);
    free(text);
    return rc;
}

/* The files of one run besides report.json: the output set they go to
 * and their names, for the report. */
typedef struct run_files {
    nc_outset *set;
    char *names[MAX_OUTPUT_FILES];
    size_t n;
    size_t replaced; /* files of an earlier run in the folder, replaced or removed */
} run_files;

static void add_name(run_files *o, const char *name)
{
    if (o->n < MAX_OUTPUT_FILES)
        o->names[o->n++] = strdup(name);
}

/* The config's figures (a shard draws its own layers' only). */
static int write_figures(const nc_config *cfg, const nc_plan *plan, const char *command,
                         bool quiet, run_files *o, nc_err *err)
{
    size_t nfig = 0, nspecs = cfg->nfigures;
    nc_fig_spec *shard_specs = NULL;
    if (cfg->shard_count &&
        cli_shard_figures(plan, cfg->figures, cfg->nfigures, &shard_specs, &nspecs, err))
        return -1;
    if (!quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "\rnormcmp: rendering figures...");
    char *refused = NULL;
    int rc = nc_figures_render(plan, shard_specs ? shard_specs : cfg->figures, nspecs, command,
                               cfg->threads, o->set, o->names + o->n, MAX_OUTPUT_FILES - o->n,
                               &nfig, &refused, err);
    free(shard_specs);
    if (!quiet && isatty(STDERR_FILENO))
        fprintf(stderr, "\r\033[K");
    /* a figure that cannot be drawn does not stop the others: said here */
    for (const char *r = refused; r && *r;) {
        size_t n = strcspn(r, "\n");
        if (!quiet) /* a warning: -q keeps only errors */
            fprintf(stderr, "normcmp: not drawn: %.*s\n", (int)n, r);
        r += n + (r[n] == '\n');
    }
    free(refused);
    o->n += nfig;
    return rc;
}

/* <layer>_sweep_<param>.csv for swept parameter p of layer l, the layer
 * name made safe for a file name. */
static int sweep_csv(const nc_plan_layer *l, int p, run_files *o, nc_err *err)
{
    char *csv, name[256], base[200];
    size_t n = 0;
    for (const char *c = l->name; *c && n + 1 < sizeof base; c++)
        base[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                            (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'
                        ? *c
                        : '_';
    base[n] = '\0';
    snprintf(name, sizeof name, "%s_sweep_%s.csv", base, nc_sweep_param_name((nc_sweep_param)p));
    if (nc_report_sweep_csv(&l->sweep[p], &csv, err) != 0)
        return -1;
    int rc = nc_outset_add(o->set, name, csv, strlen(csv), err);
    free(csv);
    if (rc == 0)
        add_name(o, name);
    return rc;
}

/* A CSV and a figure per layer and swept parameter. */
static int write_sweeps(const nc_config *cfg, const nc_plan *plan, const char *command,
                        run_files *o, nc_err *err)
{
    for (size_t k = 0; k < plan->nlayers && cfg->sweep.csv; k++)
        for (int p = 0; p < 2; p++)
            if (plan->layers[k].has_sweep[p] && sweep_csv(&plan->layers[k], p, o, err) != 0)
                return -1;
    if (!cfg->sweep.figure)
        return 0;
    size_t nfig = 0;
    int rc = nc_figures_sweeps(plan, &cfg->sweep.look, command, o->set, o->names + o->n,
                               MAX_OUTPUT_FILES - o->n, &nfig, err);
    o->n += nfig;
    return rc;
}

/* Every output of a finished plan into a temporary first, then all
 * renamed together (or none): the config copy, figures, sweeps,
 * report.json and index.html. */
static int write_outputs(const nc_config *cfg, const nc_plan *plan, const char *command,
                         const char *config_path, bool quiet, run_files *o, nc_err *err)
{
    char *json = NULL;
    int rc = 0; /* o->set: allocated by cli_execute before the analysis */
    if (config_path && (rc = copy_config(o->set, config_path, err)) == 0)
        add_name(o, "config.json");
    if (!rc && cfg->nfigures)
        rc = write_figures(cfg, plan, command, quiet, o, err);
    if (!rc && cfg->sweep.enabled)
        rc = write_sweeps(cfg, plan, command, o, err);
    if (!rc) /* docs/dropin.md */
        rc = cli_write_dropin(plan, o->set, o->names, &o->n, MAX_OUTPUT_FILES, err);
    if (!rc) {
        add_name(o, "index.html");
        rc = nc_report_json(plan, command, (const char *const *)o->names, o->n, &json, err);
    }
    if (!rc)
        rc = nc_outset_add(o->set, "report.json", json, strlen(json), err);
    if (!rc)
        rc = cli_write_index(o->set, json, err); /* docs/whole_models.md */
    free(json);
    if (!rc) {
        rc = nc_outset_commit_ex(o->set, &o->replaced, err);
        o->set = NULL;
    }
    nc_outset_abort(o->set);
    o->set = NULL;
    return rc;
}

void cli_note_replaced(const char *dir, size_t replaced)
{
    if (replaced)
        fprintf(stderr, "normcmp: %s held an earlier run: its %zu output%s replaced or removed "
                        "(other files stay)\n", dir, replaced, replaced == 1 ? "" : "s");
}

/* The summary tables on stdout: fits (unless `jacobian`), Jacobian,
 * sweeps, then the verdicts and the run-level lines (summary.c). */
static void print_tables(const nc_config *cfg, const nc_plan *plan)
{
    bool any_jac = false;
    for (size_t k = 0; k < plan->nlayers; k++)
        any_jac = any_jac || plan->layers[k].has_jacobian;
    if (!cli_verbose && !cli_summary_jacobian_only) {
        if (cfg->sweep.enabled) {
            print_sweep_summary(plan);
            printf("\n");
        }
        if (plan->has_run)
            cli_print_brief(plan->summaries, &plan->run);
        cli_print_roles_brief(plan);
        cli_print_experiments(plan);
        cli_print_where(cfg->output);
        return;
    }
    if (!cli_summary_jacobian_only && plan->nlayers > 0)
        cli_print_fit_summary(plan);
    if (any_jac) {
        if (!cli_summary_jacobian_only)
            printf("\n");
        print_jacobian_summary(plan);
    }
    if (cfg->sweep.enabled) {
        printf("\n");
        print_sweep_summary(plan);
    }
    if (plan->has_run) {
        printf("\n");
        cli_print_run_summary(plan);
    }
    if (!cli_summary_jacobian_only)
        cli_print_dropin(plan);
}

/* Whether name ends in "<sep><suffix>" for sep '.' or '_'. */
static bool named_like(const char *name, const char *suffix)
{
    size_t n = strlen(name), m = strlen(suffix);
    return n > m + 1 && strcmp(name + n - m, suffix) == 0 &&
           (name[n - m - 1] == '.' || name[n - m - 1] == '_');
}

/* One warning per layer whose input tensor is named like a companion (a
 * norm's output, weight, bias or gradient): it is analysed as an input
 * all the same, which is rarely what was meant. */
static void warn_companion_inputs(const nc_plan *plan)
{
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        for (int c = 0; l->x && c < NC_COMP_COUNT; c++)
            if (named_like(l->x->name, nc_comp_name(c))) {
                fprintf(stderr, "normcmp: warning: layer '%s': tensor '%s' is named like a "
                        "norm's %s, not its input; analysed as an input all the same\n",
                        l->name, l->x->name, nc_comp_name(c));
                break;
            }
    }
}

/* One line per layer that left tokens out for NaN or infinite values (the
 * report counts them as nonfinite_tokens). */
static void note_dropped_tokens(const nc_plan *plan)
{
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_input_stats *s = &plan->layers[k].result.stats;
        if (plan->layers[k].done && s->nonfinite_tokens > 0)
            fprintf(stderr, "normcmp: layer '%s': %zu of %zu tokens left out: they hold NaN or "
                    "infinite values (%zu values)\n", plan->layers[k].name, s->nonfinite_tokens,
                    s->tokens, s->nonfinite_values);
    }
}

/* --json: the report just written, on stdout. */
static int print_report(const char *dir, nc_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/report.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return nc_err_set_errno(err, NC_EIO, errno, "%s: cannot read the report back", path);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, n, stdout) != n)
            break;
    bool bad = ferror(f) != 0;
    fclose(f);
    return bad ? nc_err_set(err, NC_EIO, "%s: read failed", path) : 0;
}

int cli_execute(const nc_config *cfg, const char *command, const char *config_path, bool quiet)
{
    nc_err err = {0};
    nc_plan *plan = NULL;
    nc_progress *progress = NULL;
    run_files *o = calloc(1, sizeof *o);
    int status = 0;

    if (!o) {
        nc_err_set(&err, NC_ENOMEM, "out of memory");
        goto fail;
    }
    /* the output folder's set: lock, staging folder; all or nothing */
    if (nc_plan_open(cfg, &plan, &err) != 0 ||
        nc_outset_alloc_folder(cfg->output, &o->set, &err) != 0)
        goto fail;
    for (size_t k = 0; k < plan->ndumps; k++)
        if (nc_outset_protect(o->set, nc_dump_path(plan->dumps[k])) != 0)
            goto nomem;
    if (config_path && nc_outset_protect(o->set, config_path) != 0)
        goto nomem;
    if (!quiet)
        warn_companion_inputs(plan);
    progress = nc_progress_alloc(!quiet);
    if (nc_plan_run(plan, progress, &err) != 0)
        goto fail;
    nc_progress_free(progress);
    progress = NULL;
    if (!quiet)
        note_dropped_tokens(plan);
    cli_print_checks(plan, quiet);
    if (write_outputs(cfg, plan, command, config_path, quiet, o, &err) != 0)
        goto fail;
    if (!quiet)
        cli_note_replaced(cfg->output, o->replaced);
    if (cli_json && print_report(cfg->output, &err) != 0) {
        status = cli_fail(&err); /* the outputs stay: they are complete */
        goto out;
    }
    if (!cli_json)
        print_tables(cfg, plan);
    if (!quiet && (cli_verbose || cli_json || cli_summary_jacobian_only))
        fprintf(stderr, "normcmp: wrote %s/report.json%s\n", cfg->output,
                o->n > (config_path ? 2u : 1u) ? " and figures" : "");
    status = cli_strict_status(plan, cfg->strict);
    goto out;
nomem:
    nc_err_set(&err, NC_ENOMEM, "out of memory");
fail:
    nc_progress_free(progress);
    if (o)
        nc_outset_abort(o->set); /* and the folders it created */
    status = cli_fail(&err);
out:
    for (size_t k = 0; o && k < o->n; k++)
        free(o->names[k]);
    free(o);
    nc_plan_close(plan);
    return status ? status : cli_finish_stdout(0);
}
