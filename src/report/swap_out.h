/*
 * swap_out.h - the swap test's results in report.json (swap_out.c;
 * docs/swap.md, "In normcmp's report").
 */
#ifndef NC_SWAP_OUT_H
#define NC_SWAP_OUT_H

#include <cJSON.h>

#include "plan/plan.h"
#include "report/jbuild.h"

/* Layer name's swap test results under lo ("swap"), when the run has them. */
void nc_report_add_swap_layer(nc_jb *b, cJSON *lo, const nc_plan *plan, const char *name);

/* The swap test's run-level results ("swap") under root. */
void nc_report_add_swap(nc_jb *b, cJSON *root, const nc_plan *plan);

#endif
