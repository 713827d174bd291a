/*
 * dropin_out.h - the drop-in parameter files written beside report.json
 * (docs/dropin.md, "The files"), and what `merge` needs to combine them.
 *
 * One safetensors file per surrogate: dropin_dyt.safetensors,
 * dropin_dyt_alpha0.safetensors, dropin_dyisru.safetensors. Per layer M
 * (its name: the module name of a dump, the file prefix of a .npy) whose
 * fit was written, in plan order: "M.alpha" (DyT files) or "M.C" (DyISRU),
 * F32 [1], then "M.weight" and "M.bias", F32 [d], such that
 * weight * tanh(alpha * x) + bias (or weight * x / sqrt(x^2 + C) + bias)
 * stands in for the layer's output with its affine part. __metadata__:
 * "format" = "normcmp-dropin 1", "surrogate" (dyt, dyt_alpha0, dyisru),
 * and per layer "M.role", "M.affine" ("companions" or "none: weight 1,
 * bias 0"), "M.rmse_vs_recomputed", "M.rmse_vs_real" (when the dump has a
 * real output) and, in the alpha0 file, "M.alpha0_rule"; numbers as the
 * shortest decimal text that reads back as the same double.
 */
#ifndef NC_REPORT_DROPIN_OUT_H
#define NC_REPORT_DROPIN_OUT_H

#include <stddef.h>

#include <cJSON.h>

#include "analysis/dropin.h"
#include "plan/plan.h"
#include "report/jbuild.h"
#include "util/err.h"
#include "util/sink.h"

#define NC_DROPIN_FORMAT "normcmp-dropin 1"

/* "dropin_dyt.safetensors", "dropin_dyt_alpha0.safetensors",
 * "dropin_dyisru.safetensors". */
const char *nc_dropin_file(nc_dropin_kind k);

/* The file of surrogate k for the plan's analysed layers, into out (an
 * empty membuf, freed by the caller). Errors: NC_ENOMEM, NC_EINVAL from
 * the writer (a layer name that is not UTF-8 cannot get here). */
int nc_report_dropin_file(const nc_plan *plan, nc_dropin_kind k, nc_membuf *out, nc_err *err);

/* merge: the file of surrogate k from the shards' files. names[nl]: the
 * plan's layers in order; owner[l] the shard (0 .. ns-1) that analysed
 * layer l; buf[s], len[s]: shard s's file (path[s] in messages). Each
 * layer's tensors and metadata are taken from its shard's file, so the
 * result has the bytes an unsharded run writes. Errors: NC_EINVAL (a
 * malformed file, one of another surrogate or format, a tensor of the
 * wrong dtype or shape), NC_ENOMEM. */
int nc_report_dropin_merge(const char *const *names, size_t nl, const size_t *owner,
                           const unsigned char *const *buf, const size_t *len,
                           const char *const *path, size_t ns, nc_dropin_kind k,
                           nc_membuf *out, nc_err *err);

/* merge: adds "alpha_by_role" to root's "run" block, computed from the
 * per-layer numbers in root's "layers" as an unsharded run computes it
 * (nothing when root has no "run"). Errors: NC_ENOMEM. */
int nc_report_add_alpha_roles_from_layers(cJSON *root, nc_err *err);

/* The same table handed to show instead (merge prints it as a run does:
 * cli_print_alpha_roles). */
typedef void (*nc_roles_show)(const nc_alpha_roles *A);
int nc_report_show_alpha_roles_from_layers(const cJSON *root, nc_roles_show show, nc_err *err);

/* The config's "dropin" block (enabled, alpha0, roles), a layer's "role",
 * "role_source" and "depth" (at its top level), its "dropin" block (when
 * computed), and the run-level "alpha_by_role" block of layers L under run
 * (docs/dropin.md). */
void nc_report_add_dropin_config(nc_jb *b, cJSON *config, const nc_config *cfg);
void nc_report_add_role(nc_jb *b, cJSON *lo, const nc_plan_layer *pl);
void nc_report_add_dropin(nc_jb *b, cJSON *lo, const nc_plan_layer *pl);
void nc_report_add_alpha_roles(nc_jb *b, cJSON *run, const nc_role_layer *L,
                               const nc_alpha_roles *A);

#endif
