/*
 * cli.h - the subcommands and what they share.
 *
 * Each subcommand parses its flags with getopt_long, builds what the
 * library needs, calls it, and turns an nc_err into "normcmp: <message>"
 * on stderr and an exit status: 0 success, 2 the user must fix something,
 * 1 anything else (docs/internals.md, rule 4).
 */
#ifndef NC_CLI_H
#define NC_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/run_summary.h"
#include "config/config.h"
#include "util/err.h"

int cli_inspect(int argc, char **argv);
int cli_synth(int argc, char **argv);
int cli_norm(int argc, char **argv);
int cli_fit(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_jacobian(int argc, char **argv);
int cli_plot(int argc, char **argv);
int cli_sweep(int argc, char **argv);

int cli_merge(int argc, char **argv);

/* Parses --shard's "K/N" (1 <= K <= N <= 100000) into *k and *n. */
int cli_parse_shard(const char *arg, size_t *k, size_t *n, nc_err *err);

/* Whether figures of this nc_fig_kind span layers (alpha-std, alpha-depth,
 * scatter-grid, tanh-family): a shard leaves them to merge. */
bool cli_fig_kind_is_run_level(int kind);

struct nc_plan;
struct nc_fig_spec;
struct nc_alpha_roles;
/* The figure specs a shard draws (shallow copies, *out to free()): the
 * per-layer kinds selecting at least one of its layers. */
int cli_shard_figures(const struct nc_plan *plan, const struct nc_fig_spec *specs, size_t n,
                      struct nc_fig_spec **out, size_t *nout, nc_err *err);

struct nc_outset;
/* Adds index.html, made from the report's JSON text, to the output set. */
int cli_write_index(struct nc_outset *set, const char *report_json, nc_err *err);

/* Prints err's message and returns its exit status. */
/* The FILE arguments of fit/jacobian/plot as the files that are layers
 * (inputs.c): folders of .npy files expanded, companions named beside their
 * layer's input and one-dimensional files among others left out (named on
 * stderr unless quiet). *out (owned: free each and the array), *nout. */
int cli_input_files(char **args, int nargs, bool quiet, char ***out, int *nout, nc_err *err);

int cli_fail(const nc_err *err);

/* Prints "normcmp: <cmd>: <message>" and a hint, returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An option's bad value (err from nc_parse_*): printed like cli_usage_error,
 * "normcmp: CMD: <err> (see 'normcmp CMD --help')". Returns 2. */
int cli_option_fail(const char *cmd, const nc_err *err);

struct option; /* getopt.h */

/* What cli_getopt returns after it printed why an option is bad. */
#define CLI_OPT_ERROR '?'

/* getopt_long for subcommand cmd with getopt's own messages off: returns
 * the next option as getopt_long does, -1 at the end, or CLI_OPT_ERROR
 * after printing one line about an unknown option (naming the nearest
 * known one), an option missing its value, an ambiguous abbreviation, or
 * "-out" written for "--out" (which getopt would read as "-o ut"); the
 * caller then returns 2. Set optind = 1 before the first call. */
int cli_getopt(int argc, char **argv, const char *shorts, const struct option *longs,
               const char *cmd);


/* The command line, shell-quoted where needed (owned by the caller). */
char *cli_command_line(int argc, char **argv);

/* Resolves and runs cfg, writes <output>/report.json (and, when
 * config_path is given, a copy of the config as <output>/config.json), and
 * prints the summary table on stdout. Returns the exit status. */
int cli_execute(const nc_config *cfg, const char *command, const char *config_path, bool quiet);

/* The summary printed by cli_execute: the fits table (and a Jacobian table
 * when computed), or the Jacobian table alone (`normcmp jacobian`). */
extern bool cli_summary_jacobian_only;

/* --verbose: the full tables on stdout instead of the brief summary. */
extern bool cli_verbose;

/* --json: report.json on stdout instead of the summary. */
extern bool cli_json;

/* The width summaries wrap at: the terminal's (stdout), else $COLUMNS,
 * else 80. */
int cli_terminal_width(void);

/* The outlier-steps experiment's lines of every layer that ran it. */
void cli_print_experiments(const struct nc_plan *plan);

/* One line on stderr when a run's output folder dir held an earlier run
 * whose replaced outputs (replaced of them) went (nothing for 0). */
void cli_note_replaced(const char *dir, size_t replaced);

/* The alpha-by-role block in a few lines (dropin.c). */
void cli_print_roles_brief(const struct nc_plan *plan);
/* The same block for a computed alpha-by-role table (merge: from the
 * merged report). */
void cli_print_alpha_roles(const struct nc_alpha_roles *A);

/* The brief summary (brief.c): a line per layer, the run's verdict
 * wrapped to the terminal, where the report is. */
void cli_print_brief(const nc_layer_summary *L, const nc_run_summary *R);

/* "Open <dir>/index.html ..." wrapped to the terminal. */
void cli_print_where(const char *out_dir);

/* text wrapped to the terminal's width, the first line indented by first
 * columns, the others by indent. */
void cli_print_wrapped(const char *text, int first, int indent);

/* Test-only hooks from the environment (cli/hooks.c): the only place
 * normcmp reads its environment. NORMCMP_TEST_STEP_MS=N sleeps N ms
 * between the steps of writing and committing outputs. */
void cli_test_hooks(void);

struct nc_plan;
/* The fits table of a finished plan on stdout: every fit that ran, the
 * norm used and its source (summary.c). */
void cli_print_fit_summary(const struct nc_plan *plan);
/* " <v>" right-aligned in width columns with prec significant digits, or
 * " -" for a non-finite v (summary.c; the tables' cells). */
void cli_print_num(double v, int width, int prec);
/* The widest name of a finished layer, at least 5 (the tables' first
 * column). */
int cli_name_width(const struct nc_plan *plan);

/* The verdict per layer and, for two or more layers, the run-level lines
 * (plan->run); nothing without a run summary. */
void cli_print_run_summary(const struct nc_plan *plan);

/* The drop-in parameter files (cli/dropin.c; docs/dropin.md) of a finished
 * plan into set when the config asks for them, their names appended to
 * names[*n] (at most cap, strdup'd). Returns 0 or the error. */
int cli_write_dropin(const struct nc_plan *plan, struct nc_outset *set, char **names,
                     size_t *n, size_t cap, nc_err *err);

/* The drop-in block on stdout (after the verdicts): per layer its role,
 * depth, each surrogate's parameter and RMSEs; for two or more layers the
 * run-level alpha by role. Nothing when no layer has drop-in parameters. */
void cli_print_dropin(const struct nc_plan *plan);

/* The real-output check's lines on stderr, detections and warnings; none
 * when quiet (--quiet leaves stderr to errors: the report keeps them). */
void cli_print_checks(const struct nc_plan *plan, bool quiet);

/* 2 with a message when strict and a layer's real output still disagrees
 * with the norm used, else 0. */
int cli_strict_status(const struct nc_plan *plan, bool strict);

/* Checks stdout for write errors before a successful exit; returns the
 * status to exit with. */
int cli_finish_stdout(int status);

#endif
