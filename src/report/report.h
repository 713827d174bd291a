/*
 * report.h - the JSON report of a run (docs/report.md).
 *
 * Every number the tool computes, with where it came from: the tool and its
 * version, the command, the effective config, each input file (path, size,
 * SHA-256, tensor, dtype, shape) and per layer the input statistics, the
 * real-output check, every fit with its parameters and exact error
 * metrics. A number that is not finite is written as null, and the object
 * holding it carries a "status" saying why (docs/internals.md, rule 5).
 */
#ifndef NC_REPORT_H
#define NC_REPORT_H

#include "plan/plan.h"
#include "util/err.h"

/* The report of a finished plan as JSON text (owned by the caller, free()).
 * command: the command line as run; files[nfiles]: the other files written
 * beside the report (figures, CSVs, the config copy), listed in "outputs". */
int nc_report_json(const nc_plan *plan, const char *command, const char *const *files,
                   size_t nfiles, char **json, nc_err *err);

/* The sweep as CSV text (owned by the caller): a header line, then one row
 * per grid value: value, rmse_refit, amp_refit, off_refit, rmse_fixed,
 * jac_refit, jac_fixed (17 significant digits). */
int nc_report_sweep_csv(const nc_sweep_result *s, char **csv, nc_err *err);

#endif
