/*
 * check.h - the real-output check of a plan layer, with the norm read back
 * from the real output where it was not given explicitly (check.c).
 */
#ifndef NC_PLAN_CHECK_H
#define NC_PLAN_CHECK_H

#include "plan/plan.h"

/* After the first analysis of l (spec is the spec it ran with): fills
 * l->check. When the real output disagrees with the recomputed one beyond
 * the tolerance, detects the norm kind and eps from it; those not given by
 * a flag or the config are replaced by what the data identify (sources
 * "detected") and the layer is analysed again (l->result, l->norm, l->eps
 * and spec updated). A disagreement that remains is a warning in
 * l->check.message, status "mismatch_explicit" when a flag or the config
 * gave the norm or eps, else "mismatch". Errors: those of the analysis. */
int nc_plan_check_real(nc_plan_layer *l, nc_layer_spec *spec, nc_err *err);

#endif
