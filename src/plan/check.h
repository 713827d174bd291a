/*
 * check.h - the real-output check of a plan layer, with the norm read back
 * from the real output where it was not given explicitly (check.c).
 */
#ifndef NC_PLAN_CHECK_H
#define NC_PLAN_CHECK_H

#include "plan/plan.h"

/* After the first analysis of l (spec is the spec it ran with): fills
 * l->check. The real output is read against its dtype's noise model
 * (analysis/normcheck.h); a kind or eps from the metadata or the defaults
 * that the data exclude is replaced by what they say (sources "detected")
 * and the layer is analysed again (l->result, l->norm, l->eps and spec
 * updated). A disagreement with an explicit (flag, config) value, a norm
 * that still disagrees, or metadata the data exclude is a warning in
 * l->check.message; status "mismatch_explicit" when a flag or the config
 * gave the norm or eps and it disagrees, "mismatch" when it disagrees
 * otherwise. Errors: those of the check and of the analysis. */
int nc_plan_check_real(nc_plan_layer *l, nc_layer_spec *spec, nc_err *err);

#endif
