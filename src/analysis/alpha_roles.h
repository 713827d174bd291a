/*
 * alpha_roles.h - the run-level "alpha by role" block (docs/dropin.md,
 * "Alpha by role"): per model group and role, how many layers, the median
 * of their fitted drop-in DyT alpha and its range over depth, beside the
 * DyT paper's alpha0 for that role.
 *
 * Computed from per-layer numbers that are all in report.json (each field
 * of nc_role_layer names its JSON path), so `normcmp merge` rebuilds the
 * same block from shard reports, as run_summary.h does for the "run"
 * block.
 *
 * A trained model's fitted alpha is what its norm behaves like; the
 * paper's alpha0 is an initial value for training DyT from scratch. The
 * block puts them side by side; it does not say one is the other.
 *
 * Left out: the bootstrap interval of the median (a field is there, null
 * with a status); JSON and printing.
 */
#ifndef NC_ALPHA_ROLES_H
#define NC_ALPHA_ROLES_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/groups.h"
#include "core/norm.h"
#include "util/err.h"

/* A layer as the block sees it (NAN or NULL: not in the report). */
typedef struct nc_role_layer {
    const char *name;        /* layers[].name (borrowed) */
    const char *role;        /* layers[].role (borrowed) */
    bool has_depth;
    double depth;            /* layers[].depth */
    nc_group_key key;        /* layers[].group, .source, .norm, .dim (groups.h) */
    double alpha;            /* layers[].dropin.dyt.alpha */
    double alpha0;           /* layers[].dropin.dyt_alpha0.alpha */
    const char *alpha0_rule; /* layers[].dropin.dyt_alpha0.alpha0_rule (borrowed) */
} nc_role_layer;

/* One role of one model group. */
typedef struct nc_role_row {
    size_t group;            /* its model group */
    const char *role;        /* borrowed from the layers */
    size_t nlayers;          /* the group's layers with this role */
    size_t *layer;           /* [nlayers] their indices, run order */
    size_t nalpha;           /* of them, those with a fitted alpha */
    double median;           /* median of those alphas (the mean of the middle two for an
                              * even count); NAN when nalpha = 0 */
    double min, max;         /* their range */
    size_t min_layer, max_layer; /* the layers (indices) at the ends of the range */
    double alpha0;           /* the layers' alpha0; NAN when they differ or none has one */
    const char *alpha0_rule; /* the first layer's rule (borrowed), or NULL */
} nc_role_row;

typedef struct nc_alpha_roles {
    size_t ngroups;
    nc_group_key *group;     /* [ngroups] owned: each group's first layer's key */
    size_t *group_layers;    /* [ngroups] owned: layers per group */
    size_t nrows;
    nc_role_row *row;        /* [nrows] owned: by group, then by each role's first layer */
    size_t *idx;             /* owned: the rows' index lists */
} nc_alpha_roles;

/* The block over n layers L[0..n) (free with nc_alpha_roles_free).
 * Errors: NC_ENOMEM. */
int nc_alpha_roles_compute(const nc_role_layer *L, size_t n, nc_alpha_roles *out,
                           nc_err *err);

void nc_alpha_roles_free(nc_alpha_roles *a);

#endif
