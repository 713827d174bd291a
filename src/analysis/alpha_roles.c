/*
 * alpha_roles.c - the run-level "alpha by role" block (alpha_roles.h;
 * docs/dropin.md): model groups, then per group the roles in the order of
 * their first layer, each with the median and range of its layers' fitted
 * drop-in alpha and the DyT paper's alpha0 beside it.
 *
 * Left out: JSON, printing, and the bootstrap interval.
 */
#include "analysis/alpha_roles.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The numbers of row R from its layers (v: scratch of R->nlayers doubles). */
static void row_stats(const nc_role_layer *L, nc_role_row *R, double *v)
{
    R->median = R->min = R->max = NAN;
    R->nalpha = 0;
    for (size_t j = 0; j < R->nlayers; j++) {
        size_t k = R->layer[j];
        double a = L[k].alpha;
        if (!isfinite(a))
            continue;
        if (R->nalpha == 0 || a < R->min) {
            R->min = a;
            R->min_layer = k;
        }
        if (R->nalpha == 0 || a > R->max) {
            R->max = a;
            R->max_layer = k;
        }
        v[R->nalpha++] = a;
    }
    if (R->nalpha > 0) {
        qsort(v, R->nalpha, sizeof *v, cmp_double);
        size_t m = R->nalpha / 2;
        R->median = R->nalpha % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
    }
    /* the paper's alpha0: one value when every layer of the row agrees */
    R->alpha0 = NAN;
    R->alpha0_rule = NULL;
    for (size_t j = 0; j < R->nlayers; j++) {
        const nc_role_layer *l = &L[R->layer[j]];
        if (j == 0) {
            R->alpha0 = l->alpha0;
            R->alpha0_rule = l->alpha0_rule;
        } else if (!(l->alpha0 == R->alpha0)) {
            R->alpha0 = NAN;
        }
    }
}

/* The rows of group g: each role in the order of its first layer. */
static void group_rows(const nc_role_layer *L, size_t n, const size_t *group_of, size_t g,
                       nc_alpha_roles *out, size_t *used)
{
    for (size_t k = 0; k < n; k++) {
        if (group_of[k] != g)
            continue;
        size_t r = 0; /* the row of this role in this group, if there is one */
        while (r < out->nrows &&
               !(out->row[r].group == g && strcmp(out->row[r].role, L[k].role) == 0))
            r++;
        if (r == out->nrows) { /* a new role: its layers are taken in one go */
            nc_role_row *R = &out->row[out->nrows++];
            R->group = g;
            R->role = L[k].role;
            R->layer = out->idx + *used;
            for (size_t j = k; j < n; j++)
                if (group_of[j] == g && strcmp(L[j].role, L[k].role) == 0)
                    R->layer[R->nlayers++] = j;
            *used += R->nlayers;
        }
    }
}

int nc_alpha_roles_compute(const nc_role_layer *L, size_t n, nc_alpha_roles *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    size_t m = n ? n : 1;
    size_t *group_of = malloc(m * sizeof *group_of);
    nc_group_key *keys = calloc(m, sizeof *keys);
    double *v = malloc(m * sizeof *v);
    out->group = malloc(m * sizeof *out->group);
    out->group_layers = calloc(m, sizeof *out->group_layers);
    out->row = calloc(m, sizeof *out->row);
    out->idx = malloc(m * sizeof *out->idx);
    if (!group_of || !keys || !v || !out->group || !out->group_layers || !out->row ||
        !out->idx) {
        free(group_of);
        free(keys);
        free(v);
        nc_alpha_roles_free(out);
        return nc_err_set(err, NC_ENOMEM, "out of memory for the alpha-by-role block");
    }
    for (size_t k = 0; k < n; k++)
        keys[k] = L[k].key;
    out->ngroups = nc_model_groups(keys, n, group_of);
    for (size_t k = 0; k < n; k++) {
        out->group[group_of[k]] = L[k].key;
        out->group_layers[group_of[k]]++;
    }
    size_t used = 0;
    for (size_t g = 0; g < out->ngroups; g++)
        group_rows(L, n, group_of, g, out, &used);
    for (size_t r = 0; r < out->nrows; r++)
        row_stats(L, &out->row[r], v);
    free(group_of);
    free(keys);
    free(v);
    return 0;
}

void nc_alpha_roles_free(nc_alpha_roles *a)
{
    if (!a)
        return;
    free(a->group);
    free(a->group_layers);
    free(a->row);
    free(a->idx);
    memset(a, 0, sizeof *a);
}
