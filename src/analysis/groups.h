/*
 * groups.h - model groups: which layers belong to one model, for the
 * run-level slopes (run_summary.h), the alpha-by-role block
 * (alpha_roles.h) and the alpha-std figure (docs/report.md, "run").
 *
 * Layers are one model when they come from one source (a dump, a sharded
 * dump, or a folder of .npy files) and share the norm kind and the width
 * d, or when a config puts them in one named group. A slope or a median
 * across two models would mix their scales; across two norm kinds it
 * would mix two different maps.
 */
#ifndef NC_GROUPS_H
#define NC_GROUPS_H

#include <stddef.h>

/* What puts a layer in a model group: a config's group name (when not
 * NULL, alone), else its source, norm kind (nc_norm_kind, -1: unknown)
 * and d. Strings borrowed. */
typedef struct nc_group_key {
    const char *group;
    const char *source;
    int norm;
    size_t d;
} nc_group_key;

/* Groups n layers by their keys: group_of[k] is layer k's group, numbered
 * 0.. in the order of each group's first layer; returns the number of
 * groups. The one grouping of the run-level block, the alpha-by-role block
 * and the alpha-std figure. */
size_t nc_model_groups(const nc_group_key *key, size_t n, size_t *group_of);

#endif
