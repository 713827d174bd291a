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
#include "plot/figure.h"
#include "plot/figures_internal.h"

static bool all_positive(const double *v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!(v[k] > 0) || !isfinite(v[k]))
            return false;
    return true;
}

int nc_figures_sweeps(const struct nc_plan *plan, unsigned formats, const char *command,
                      struct nc_outset *set, char **files, size_t cap, size_t *nfiles,
                      nc_err *err)
{
    nc_fig_spec spec = {.formats = formats, .kind = NC_FIG_ALPHA_STD};
    int rc = 0;
    for (size_t l = 0; l < plan->nlayers && !rc; l++) {
        const nc_plan_layer *pl = &plan->layers[l];
        for (int p = 0; p < 2 && !rc; p++) {
            if (!pl->has_sweep[p])
                continue;
            const nc_sweep_result *sw = &pl->sweep[p];
            bool alpha = p == NC_SWEEP_ALPHA;
            job jb = {.spec = &spec}, *j = &jb;
            j->fig.dpi = 150;
            nc_fig_set_grid(j, 1, 1, 7.0, 5.0, &spec);
            nc_panel *pn = &j->panels[0];
            j->npanels = 1;
            const double *ys[4] = {sw->rmse_refit, sw->rmse_fixed, sw->jac_refit, sw->jac_fixed};
            const char *names[4] = {
                alpha ? "output, \xce\xb3 and \xce\xb2 refitted" : "output, scale refitted",
                alpha ? nc_fig_jprintf(j, "output, \xce\xb3 = %.4g, \xce\xb2 = %.4g fixed",
                                       sw->fixed_amp, sw->fixed_off)
                      : nc_fig_jprintf(j, "output, scale = %.4g fixed", sw->fixed_amp),
                "J\xe1\xb5\xa2\xe1\xb5\xa2 vs f\xe2\x80\xb2, refitted",
                "J\xe1\xb5\xa2\xe1\xb5\xa2 vs f\xe2\x80\xb2, fixed"};
            nc_curve *c = nc_fig_jalloc(j, 4 * sizeof *c);
            nc_vline *vl = nc_fig_jalloc(j, 3 * sizeof *vl);
            nc_mark *mk = nc_fig_jalloc(j, sizeof *mk);
            if (!c || !vl || !mk) {
                nc_fig_job_free(j);
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            }
            bool logy = true;
            double lo = INFINITY, hi = 0;
            for (int k = 0; k < 4; k++) {
                c[k] = (nc_curve){.x = sw->grid, .y = ys[k], .n = sw->n,
                                  .color = nc_palette(k < 2 ? 1 : 2), .width_pt = 1.6,
                                  .dashed = k % 2 == 1, .label = names[k]};
                logy = logy && all_positive(ys[k], sw->n);
                for (size_t q = 0; q < sw->n; q++)
                    if (isfinite(ys[k][q])) {
                        lo = fmin(lo, ys[k][q]);
                        hi = fmax(hi, ys[k][q]);
                    }
            }
            size_t nv = 0;
            if (isfinite(sw->theory))
                vl[nv++] = (nc_vline){sw->theory, nc_palette(3), true,
                                      nc_fig_jprintf(j, "theory %s = %.4g",
                                                     alpha ? "1/(\xcf\x81\xe2\x88\x9a" "d)"
                                                           : "d\xcf\x81\xc2\xb2",
                                                     sw->theory)};
            if (isfinite(sw->fitted))
                vl[nv++] = (nc_vline){sw->fitted, nc_palette(4), true,
                                      nc_fig_jprintf(j, "fitted %s = %.4g",
                                                     alpha ? "\xce\xb1" : "C", sw->fitted)};
            size_t nm = 0;
            if (isfinite(sw->opt_refit)) {
                mk[nm++] = (nc_mark){sw->opt_refit, sw->min_refit, nc_rgb_hex(0x000000),
                                     NC_MARKER_DIAMOND, 8,
                                     nc_fig_jprintf(j, "optimum %s = %.4g",
                                                    alpha ? "\xce\xb1" : "C", sw->opt_refit)};
            }
            *pn = (nc_panel){.title = nc_fig_jprintf(j, "%s \xe2\x80\x94 %s error against %s",
                                                     pl->name, alpha ? "DyT" : "DyISRU",
                                                     alpha ? "\xce\xb1" : "C"),
                             .xlabel = alpha ? "\xce\xb1" : "C", .ylabel = "RMSE",
                             .x0 = sw->grid[0], .x1 = sw->grid[sw->n - 1], .xlog = true,
                             .ylog = logy, .y0 = logy ? lo / 1.5 : 0,
                             .y1 = logy ? hi * 1.5 : hi * 1.05,
                             .grid = true, .curves = c, .ncurves = 4, .vlines = vl,
                             .nvlines = nv, .marks = mk, .nmarks = nm,
                             .note = sw->exact ? "exact (raw points)" : "on bins of x"};
            j->fig.npanels = 1;
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
