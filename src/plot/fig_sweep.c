/*
 * fig_sweep.c - the sweep figures (figures.h, nc_figures_sweeps): per layer
 * and swept parameter (DyT's alpha, DyISRU's C; analysis/sweep.h), the
 * output and Jacobian-diagonal errors against the parameter on a log axis,
 * refitted and fixed, with the theory value, the fitted value and the
 * optimum marked.
 *
 * Left out: computing the sweeps (analysis/sweep.c) and their CSV files
 * (the caller writes them); the jobs and rendering are figures.c's
 * (figures_internal.h).
 */
#include "plot/figures.h"

#include <math.h>
#include <stdio.h>

#include "plan/plan.h"
#include "analysis/sweep.h"
#include "plot/axes.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"

static bool all_positive(const double *v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!(v[k] > 0) || !isfinite(v[k]))
            return false;
    return true;
}

/* The range of the finite values of ys[2][n]: log when all are > 0. */
static void y_range(const double *const ys[2], size_t n, nc_panel *p)
{
    double lo = INFINITY, hi = 0;
    bool logy = true;
    for (int k = 0; k < 2; k++) {
        logy = logy && all_positive(ys[k], n);
        for (size_t q = 0; q < n; q++)
            if (isfinite(ys[k][q])) {
                lo = fmin(lo, ys[k][q]);
                hi = fmax(hi, ys[k][q]);
            }
    }
    if (!(hi > 0) || !isfinite(lo))
        lo = 0.5, hi = 1;
    p->ylog = logy;
    p->y0 = logy ? lo / 1.5 : 0;
    p->y1 = logy ? hi * 1.5 : hi * 1.05;
}

/* Colours of the sweeps, none a fit's (which mean a surrogate
 * elsewhere): the refitted and fixed series black and grey, the theory
 * and fitted values indigo and wine (the categorical palette). */
#define SWEEP_REFIT 0x000000
#define SWEEP_FIXED 0x777777
#define SWEEP_THEORY 0x332288
#define SWEEP_FITTED 0x882255

/* The two panels of a sweep: the output's RMSE (left) and the Jacobian
 * diagonal's (right), one quantity per axis; refitted solid, fixed
 * dashed; the theory and fitted values as vertical lines (the theory's
 * formula for the layer's norm from the surrogate table), the optimum as
 * a diamond on the left. Returns 0 or -1 (memory). */
static int sweep_panels(job *j, const nc_plan_layer *pl, const nc_sweep_result *sw, bool alpha)
{
    const char *par = alpha ? "\xce\xb1" : "C";
    bool small = j->fig.width_in < 5.0; /* shorter labels: two legend columns */
    nc_curve *c = nc_fig_jalloc(j, 4 * sizeof *c);
    nc_vline *vl = nc_fig_jalloc(j, 2 * sizeof *vl);
    nc_mark *mk = nc_fig_jalloc(j, sizeof *mk);
    char b1[32], b2[32];
    const char *fixed = alpha ? nc_fig_jprintf(j, "fixed \xce\xb3 = %s, \xce\xb2 = %s",
                                               nc_fmt_num(b1, sizeof b1, sw->fixed_amp, 4),
                                               nc_fmt_num(b2, sizeof b2, sw->fixed_off, 4))
                              : nc_fig_jprintf(j, "fixed scale = %s",
                                               nc_fmt_num(b1, sizeof b1, sw->fixed_amp, 4));
    if (!c || !vl || !mk || !fixed)
        return -1;
    const double *ys[4] = {sw->rmse_refit, sw->rmse_fixed, sw->jac_refit, sw->jac_fixed};
    for (int k = 0; k < 4; k++)
        c[k] = (nc_curve){.x = sw->grid, .y = ys[k], .n = sw->n,
                          .color = nc_rgb_hex(k % 2 ? SWEEP_FIXED : SWEEP_REFIT),
                          .width_pt = 1.6, .dashed = k % 2 ? NC_DASHED : NC_SOLID,
                          .label = k % 2 ? fixed
                                   : small ? "refitted"
                                   : (alpha ? "\xce\xb3, \xce\xb2 refitted" : "scale refitted")};
    size_t nv = 0, nm = 0;
    const char *formula = nc_theory_param_formula(alpha ? NC_FIT_DYT_THEORY : NC_FIT_DYISRU_THEORY,
                                                  pl->result.norm);
    formula = formula ? formula : "?";
    if (isfinite(sw->theory))
        vl[nv++] = (nc_vline){sw->theory, nc_rgb_hex(SWEEP_THEORY), NC_DASHED,
                              nc_fig_jprintf(j, "theory %s%s = %s", small ? "" : par,
                                             small ? formula : nc_fig_jprintf(j, " = %s", formula),
                                             nc_fmt_num(b1, sizeof b1, sw->theory, 4))};
    if (isfinite(sw->fitted))
        vl[nv++] = (nc_vline){sw->fitted, nc_rgb_hex(SWEEP_FITTED), NC_DASHDOT,
                              nc_fig_jprintf(j, "fitted %s%s%s", small ? "" : par, small ? "" : " = ",
                                             nc_fmt_num(b1, sizeof b1, sw->fitted, 4))};
    if (isfinite(sw->opt_refit))
        mk[nm++] = (nc_mark){sw->opt_refit, sw->min_refit, nc_rgb_hex(SWEEP_REFIT),
                             NC_MARKER_DIAMOND, 7,
                             nc_fig_jprintf(j, "optimum %s%s%s", small ? "" : par, small ? "" : " = ",
                                            nc_fmt_num(b1, sizeof b1, sw->opt_refit, 4))};
    for (int q = 0; q < 2; q++) {
        nc_panel *pn = &j->panels[q];
        *pn = (nc_panel){.title = small ? NULL /* the y labels say it */
                                  : q   ? "J\xe1\xb5\xa2\xe1\xb5\xa2 against f\xe2\x80\xb2"
                                        : "output against y",
                         .xlabel = par, .ylabel = q ? "RMSE of f\xe2\x80\xb2(x) to J\xe1\xb5\xa2\xe1\xb5\xa2"
                                                    : "RMSE of f(x) to y",
                         .x0 = sw->grid[0], .x1 = sw->grid[sw->n - 1], .xlog = true,
                         .grid = true, .curves = c + 2 * q, .ncurves = 2, .vlines = vl,
                         .nvlines = nv, .marks = q ? NULL : mk, .nmarks = q ? 0 : nm,
                         .note = q ? NULL : (sw->exact ? "exact (raw points)" : "on bins of x"),
                         .legend_pos = j->spec->legend};
        y_range(ys + 2 * q, sw->n, pn);
    }
    return j->oom ? -1 : 0;
}

int nc_figures_sweeps(const struct nc_plan *plan, const nc_fig_spec *look, const char *command,
                      struct nc_outset *set, char **files, size_t cap, size_t *nfiles,
                      nc_err *err)
{
    nc_fig_spec spec = *look;
    spec.kind = NC_FIG_ALPHA_STD; /* a figure across panels: no per-layer raster */
    int rc = 0;
    for (size_t l = 0; l < plan->nlayers && !rc; l++) {
        const nc_plan_layer *pl = &plan->layers[l];
        for (int p = 0; p < 2 && !rc; p++) {
            if (!pl->has_sweep[p])
                continue;
            const nc_sweep_result *sw = &pl->sweep[p];
            bool alpha = p == NC_SWEEP_ALPHA;
            job jb = {.spec = &spec}, *j = &jb;
            j->fig.dpi = spec.dpi > 0 ? spec.dpi : 150;
            if (!nc_fig_job_panels(j, 2) || !nc_fig_job_shows(j, &l, 1))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 2;
            nc_fig_set_grid(j, 2, 2, 4.2, 3.8, &spec);
            j->fig.shared_legend = true;
            j->fig.title = spec.no_title ? NULL
                           : spec.title  ? spec.title
                                         : nc_fig_jprintf(j, "%s \xe2\x80\x94 %s error against %s",
                                                          pl->name, alpha ? "DyT" : "DyISRU",
                                                          alpha ? "\xce\xb1" : "C");
            rc = sweep_panels(j, pl, sw, alpha);
            if (rc) {
                nc_fig_job_free(j);
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            }
            j->fig.npanels = 2;
            char base[160];
            nc_fig_sanitize(base, sizeof base, pl->name);
            snprintf(j->stem, sizeof j->stem, "%s_sweep_%s", base, alpha ? "alpha" : "C");
            if (j->oom)
                rc = nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            else
                rc = nc_fig_render_job(j, command, set, files, cap, nfiles, plan, err);
            nc_fig_job_free(j);
        }
    }
    return rc;
}
