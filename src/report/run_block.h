/*
 * run_block.h - the run-level block of report.json ("run";
 * analysis/run_summary.h, docs/report.md "The run-level block").
 */
#ifndef NC_RUN_BLOCK_H
#define NC_RUN_BLOCK_H

#include <cJSON.h>

#include "analysis/run_summary.h"
#include "report/jbuild.h"
#include "util/err.h"

/* Adds the block "run" of n = R->nlayers layers L under parent (report.c,
 * for a plan with two or more layers). */
void nc_report_add_run(nc_jb *b, cJSON *parent, const nc_layer_summary *L,
                       const nc_run_summary *R);

/* Adds the block "run" to a merged report root, computed by
 * nc_run_summary_compute from the per-layer numbers in root's "layers"
 * (fields as run_summary.h names them), as nc_report_json does for an
 * unsharded run; nothing for fewer than two layers. Errors: NC_ENOMEM. */
int nc_report_add_run_from_layers(cJSON *root, nc_err *err);

/* The same summary of a report's layers (two or more), handed to show
 * instead (merge prints it as a run does: cli_print_brief). */
typedef void (*nc_run_show)(const nc_layer_summary *L, const nc_run_summary *R);
int nc_report_show_run_from_layers(const cJSON *root, nc_run_show show, nc_err *err);

#endif
