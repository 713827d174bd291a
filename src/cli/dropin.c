/*
 * dropin.c - what the drop-in parameters add to `fit` and `run`
 * (docs/dropin.md): the three safetensors files in the run's output set,
 * and two short blocks on stdout after the verdicts: the parameters and
 * RMSEs per layer, and the run-level alpha by role.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "plan/plan.h"
#include "report/dropin_out.h"
#include "util/outfile.h"

int cli_write_dropin(const nc_plan *plan, struct nc_outset *set, char **names, size_t *n,
                     size_t cap, nc_err *err)
{
    if (!plan->cfg->dropin.enabled)
        return 0;
    for (int k = 0; k < NC_DROPIN_COUNT; k++) {
        nc_membuf mb = {0};
        int rc = nc_report_dropin_file(plan, (nc_dropin_kind)k, &mb, err);
        if (!rc)
            rc = nc_outset_add(set, nc_dropin_file((nc_dropin_kind)k), mb.data, mb.len, err);
        nc_membuf_free(&mb);
        if (rc)
            return rc;
        if (*n < cap && !(names[(*n)++] = strdup(nc_dropin_file((nc_dropin_kind)k))))
            return nc_err_set(err, NC_ENOMEM, "out of memory");
    }
    return 0;
}

/* One line per layer: role, depth, and each surrogate's parameter with its
 * RMSEs against the recomputed and the real output. */
static void print_layers(const nc_plan *plan)
{
    int w = cli_name_width(plan);
    printf("Drop-in parameters (dropin_dyt, dropin_dyt_alpha0, dropin_dyisru .safetensors; "
           "docs/dropin.md):\nper surrogate its alpha or C and the RMSE of weight*f(x)+bias "
           "against the layer's output with its\naffine part, recomputed (rec) and the dump's "
           "real one (real); alpha0: the DyT paper's\n(x: extrapolated from the nearest width "
           "it lists; the rule in report.json).\n");
    printf("%-*s %-14s %5s %9s %9s %9s %7s %9s %9s %9s %9s %9s\n", w, "layer", "role", "depth",
           "DyT alpha", "rec", "real", "alpha0", "rec", "real", "ISRU C", "rec", "real");
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        if (!l->done || !l->has_dropin)
            continue;
        const nc_dropin *dr = &l->dropin;
        printf("%-*s %-14s", w, l->name, l->role.role);
        if (l->role.has_depth)
            printf(" %5zu", l->role.depth);
        else
            printf(" %5s", "-");
        if (!dr->done) {
            printf("  %s\n", dr->status);
            continue;
        }
        for (int f = 0; f < NC_DROPIN_COUNT; f++) {
            const nc_dropin_fit *F = &dr->fit[f];
            if (f == NC_DROPIN_DYT_ALPHA0)
                printf(" %6.3g%s", dr->alpha0.value, dr->alpha0.extrapolated ? "x" : " ");
            else
                cli_print_num(F->ok ? F->param : NAN, 9, 4);
            cli_print_num(F->ok ? F->rmse_rec : NAN, 9, 4);
            cli_print_num(F->ok ? F->rmse_real : NAN, 9, 4);
        }
        printf("\n");
    }
}

/* The run-level alpha by role (alpha_roles.h). */
static void print_roles(const nc_plan *plan)
{
    const nc_alpha_roles *A = &plan->alpha_roles;
    const nc_role_layer *L = plan->role_layers;
    printf("\nAlpha by role (per model group = layers of one source, norm kind and d): the "
           "median of the\ndrop-in DyT's fitted alpha over the role's layers and its range over "
           "depth, beside the\nDyT paper's alpha0. A trained model's fitted alpha is what its "
           "norm behaves like,\nnot a proven initialisation for training from scratch.\n");
    for (size_t r = 0; r < A->nrows; r++) {
        const nc_role_row *R = &A->row[r];
        const nc_group_key *g = &A->group[R->group];
        printf("  d = %zu %-9s %-14s %3zu layer%s", g->d, nc_norm_name((nc_norm_kind)g->norm), R->role,
               R->nlayers, R->nlayers == 1 ? " " : "s");
        if (R->nalpha == 0)
            printf("  no fitted alpha");
        else if (R->nalpha == 1)
            printf("  alpha %.4g (%s)", R->median, L[R->min_layer].name);
        else
            printf("  median alpha %.4g, range %.4g (%s) .. %.4g (%s)", R->median, R->min,
                   L[R->min_layer].name, R->max, L[R->max_layer].name);
        const char *rule = R->alpha0_rule ? R->alpha0_rule : "";
        if (!isfinite(R->alpha0))
            printf("; alpha0 differs between its layers\n");
        else if (strncmp(rule, "DyT paper", 9) == 0)
            printf("; paper alpha0 %.3g%s\n", R->alpha0,
                   strstr(rule, "extrapolated") ? " (extrapolated)" : "");
        else
            printf("; alpha0 %.3g (%s)\n", R->alpha0,
                   strncmp(rule, "config", 6) == 0 ? "config alpha0" : "--alpha0");
    }
}

void cli_print_roles_brief(const nc_plan *plan)
{
    if (plan->has_alpha_roles && plan->has_run && plan->run.nlayers >= 2)
        cli_print_alpha_roles(&plan->alpha_roles);
}

void cli_print_alpha_roles(const nc_alpha_roles *A)
{
    if (A->nrows == 0)
        return;
    const int width = cli_terminal_width();
    cli_print_wrapped("Alpha by role: the drop-in DyT's fitted alpha, median [range over depth], "
                      "beside the DyT paper's alpha0 (a fitted alpha is what a trained norm "
                      "behaves like, not an initialisation):", 0, 2);
    for (size_t r = 0; r < A->nrows; r++) {
        const nc_role_row *R = &A->row[r];
        const nc_group_key *g = &A->group[R->group];
        char line[512];
        int n = snprintf(line, sizeof line, "  %s d=%zu %-12s %2zu layer%s ",
                         g->norm == NC_RMSNORM ? "RMSNorm" : "LayerNorm", g->d, R->role,
                         R->nlayers, R->nlayers == 1 ? " " : "s");
        if (R->nalpha == 0)
            n += snprintf(line + n, sizeof line - (size_t)n, "no fitted alpha");
        else if (R->nalpha == 1)
            n += snprintf(line + n, sizeof line - (size_t)n, "%.3g", R->median);
        else
            n += snprintf(line + n, sizeof line - (size_t)n, "%.3g [%.3g-%.3g]", R->median,
                          R->min, R->max);
        if (isfinite(R->alpha0) && n > 0 && (size_t)n < sizeof line)
            snprintf(line + n, sizeof line - (size_t)n, " vs %.3g%s", R->alpha0,
                     R->alpha0_rule && strstr(R->alpha0_rule, "extrapolated") ? " (extrap.)"
                                                                             : "");
        printf("%.*s\n", width, line);
    }
}

void cli_print_dropin(const nc_plan *plan)
{
    bool any = false;
    for (size_t k = 0; k < plan->nlayers; k++)
        any = any || (plan->layers[k].done && plan->layers[k].has_dropin);
    if (!any)
        return;
    printf("\n");
    print_layers(plan);
    if (plan->has_alpha_roles && plan->has_run && plan->run.nlayers >= 2)
        print_roles(plan);
}
