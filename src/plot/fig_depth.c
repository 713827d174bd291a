/*
 * fig_depth.c - the figures across layers (figures.h): alpha-std (fitted
 * DyT alpha against 1/std(x), each point named, one theory line per model)
 * and alpha-depth (fitted alpha and C against the layer index, one line
 * per model).
 *
 * A model here is the set of the selected layers that share the width d
 * (layers of one model do; models of the same width are drawn as one):
 * nc_model_groups, the run-level block's own grouping.
 * Each model gets one colour of the categorical palette (nc_cat_color),
 * in the order its first layer comes in the plan.
 *
 * The across-layer fit is the run-level analysis' own (analysis/
 * run_summary.h, nc_loglog_fit: OLS of log alpha on log 1/std), one per
 * model over the model's layers the figure shows (3 or more), with its
 * slope's 95 % confidence interval: when the figure shows all of a
 * model's layers, the run-level block's alpha slope of that group.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/run_summary.h"
#include "plan/plan.h"
#include "plot/axes.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"

#define MAX_MODELS 64 /* distinct widths told apart by colour; more share the last colour */
#define MAX_FITS 16   /* model groups drawn with their fit line */

/* The across-layer fit alpha = A (1/std)^b of one model group over its n
 * points (x, y), as the run-level block computes it (nc_loglog_fit); its
 * legend label in *label. False when it gives no slope (under 3 layers). */
static bool run_fit_line(job *j, size_t d, const double *x, const double *y, size_t n,
                         double *A, double *b, const char **label)
{
    nc_loglog f = nc_loglog_fit(x, y, n);
    if (!isfinite(f.slope) || !isfinite(f.intercept))
        return false;
    *A = exp(f.intercept);
    *b = f.slope;
    *label = isfinite(f.ci_lo) ? nc_fig_jprintf(j, "fit d = %zu (%zu layers): \xce\xb1 \xe2\x88\x9d "
                                                   "(1/std)^%.2f [%.2f, %.2f]", d, f.n, f.slope,
                                                f.ci_lo, f.ci_hi)
                               : nc_fig_jprintf(j, "fit d = %zu (%zu layers): \xce\xb1 \xe2\x88\x9d "
                                                   "(1/std)^%.2f", d, f.n, f.slope);
    return *label != NULL;
}

/* The model groups of the selected layers (nc_model_groups, as the run-level
 * block): grp[k] for sel[k], each group's d in ds; returns their number. */
static size_t select_groups(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                            size_t *grp, size_t **ds)
{
    nc_group_key *key = nc_fig_jalloc(j, (nsel ? nsel : 1) * sizeof *key);
    *ds = nc_fig_jalloc(j, (nsel ? nsel : 1) * sizeof **ds);
    if (!key || !*ds)
        return 0;
    for (size_t k = 0; k < nsel; k++)
        key[k] = nc_plan_group_key(&plan->layers[sel[k]]);
    size_t ng = nc_model_groups(key, nsel, grp);
    for (size_t k = 0; k < nsel; k++)
        (*ds)[grp[k]] = key[k].d;
    return ng;
}

/* Per model group with 3 or more points, the fit line (black, dashed
 * differently per group) into cv[*nc]. */
static void group_fit_lines(job *j, nc_panel *p, const double *fx, const double *fy,
                            const size_t *fg, size_t nl, const size_t *ds, size_t ng,
                            nc_curve *cv, size_t *nc)
{
    double *gx = nc_fig_jalloc(j, 2 * (nl ? nl : 1) * sizeof *gx), *gy = gx ? gx + nl : NULL;
    for (size_t g = 0; gx && g < ng && *nc < MAX_MODELS + 2 + MAX_FITS; g++) {
        size_t n = 0;
        for (size_t k = 0; k < nl; k++)
            if (fg[k] == g)
                gx[n] = fx[k], gy[n++] = fy[k];
        double A, b, *xy = nc_fig_jalloc(j, 4 * sizeof *xy);
        const char *label = NULL;
        if (!xy || !run_fit_line(j, ds[g], gx, gy, n, &A, &b, &label))
            continue;
        xy[0] = p->x0, xy[1] = p->x1, xy[2] = A * pow(p->x0, b), xy[3] = A * pow(p->x1, b);
        cv[(*nc)++] = (nc_curve){xy, xy + 2, 2, nc_cat_color((int)(g < MAX_MODELS ? g
                                                                     : MAX_MODELS - 1)),
                                 2.0, false, 0, 0, label};
    }
}

/* alpha-std: per layer, the fitted alpha (circle) and the theory value
 * (nc_dyt_theory_params: 1/(rho sqrt d), LayerNorm 1/(rho sqrt(d-1))) (cross)
 * at 1/std(x), named by the layer; per model the
 * line alpha = (1/std)/sqrt(d) (thin, dashed) and the fit line over its
 * layers (thick, when it has 3 or more); and the line alpha = 1/std. */
int nc_fig_alpha_std_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                           nc_panel *p, nc_err *err)
{
    nc_mark *m = nc_fig_jalloc(j, 2 * nsel * sizeof *m);
    nc_label *lb = nc_fig_jalloc(j, nsel * sizeof *lb);
    double *fx = nc_fig_jalloc(j, 2 * nsel * sizeof *fx), *fy = fx ? fx + nsel : NULL;
    nc_curve *cv = nc_fig_jalloc(j, (MAX_MODELS + 2 + MAX_FITS) * sizeof *cv);
    size_t *grp = nc_fig_jalloc(j, 2 * nsel * sizeof *grp), *fg = grp ? grp + nsel : NULL;
    size_t *ds = NULL, nm = 0, nl = 0;
    if (!m || !lb || !cv || !fx || !grp)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    size_t nd = select_groups(j, plan, sel, nsel, grp, &ds);
    if (!ds)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    double lo = INFINITY, hi = 0, ylo = INFINITY, yhi = 0;
    for (size_t k = 0; k < nsel; k++) {
        const nc_plan_layer *pl = &plan->layers[sel[k]];
        const nc_layer_result *r = &pl->result;
        const nc_fit_result *f = &r->fits[NC_FIT_DYT];
        double ix = 1.0 / r->stats.std, al = f->ok ? f->params.p[0] : NAN;
        double th = nc_dyt_theory_params(r->norm, r->stats.rho, r->d).p[0];
        if (!(al > 0 && isfinite(al) && ix > 0 && isfinite(ix)))
            continue;
        nc_rgb col = nc_cat_color((int)(grp[k] < MAX_MODELS ? grp[k] : MAX_MODELS - 1));
        m[nm++] = (nc_mark){ix, al, col, NC_MARKER_CIRCLE, 6, "fitted \xce\xb1 (DyT)"};
        if (th > 0 && isfinite(th)) {
            m[nm++] = (nc_mark){ix, th, col, NC_MARKER_CROSS, 6,
                                "theory \xce\xb1"};
            ylo = fmin(ylo, th);
            yhi = fmax(yhi, th);
        }
        fx[nl] = ix, fy[nl] = al, fg[nl] = grp[k];
        lb[nl++] = (nc_label){ix, al, pl->name, col};
        ylo = fmin(ylo, al);
        yhi = fmax(yhi, al);
        lo = fmin(lo, ix);
        hi = fmax(hi, ix);
    }
    if (nm == 0)
        return nc_err_set(err, NC_EINVAL, "figure 'alpha-std': no layer has a DyT fit");
    p->xlog = p->ylog = true;
    p->x0 = lo / 2, p->x1 = hi * 2, p->y0 = ylo / 2.5, p->y1 = yhi * 2.5;
    size_t nc = 0;
    for (size_t q = 0; q < nd && q < MAX_MODELS; q++) { /* alpha = (1/std)/sqrt(d), per model */
        double *xy = nc_fig_jalloc(j, 4 * sizeof *xy), s = sqrt((double)ds[q]);
        if (!xy)
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        xy[0] = p->x0, xy[1] = p->x1, xy[2] = p->x0 / s, xy[3] = p->x1 / s;
        cv[nc++] = (nc_curve){xy, xy + 2, 2, nc_cat_color((int)q), 1.0, true, 0, 0,
                              nc_fig_jprintf(j, "(1/std)/\xe2\x88\x9a" "d, d = %zu",
                                             ds[q])};
    }
    double *xy = nc_fig_jalloc(j, 4 * sizeof *xy);
    if (!xy)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    xy[0] = p->x0, xy[1] = p->x1, xy[2] = p->x0, xy[3] = p->x1;
    if (p->x1 > p->y0 && p->x0 < p->y1) /* alpha = 1/std, when it crosses the panel */
        cv[nc++] = (nc_curve){xy, xy + 2, 2, nc_rgb_hex(0x888888), 1.0, true, 0, 0,
                              "\xce\xb1 = 1/std"};
    group_fit_lines(j, p, fx, fy, fg, nl, ds, nd, cv, &nc);
    *p = (nc_panel){.title = "DyT \xce\xb1 against 1/std(x) across layers",
                    .xlabel = "1/std(x)", .ylabel = "\xce\xb1", .xlog = true, .ylog = true,
                    .x0 = p->x0, .x1 = p->x1, .y0 = p->y0, .y1 = p->y1, .grid = true,
                    .curves = cv, .ncurves = nc, .marks = m, .nmarks = nm, .labels = lb,
                    .nlabels = nl};
    return j->oom ? nc_err_set(err, NC_ENOMEM, "out of memory for figures") : 0;
}

/* The index of a layer in its model: the first number in its name when
 * the model's names all have distinct ones (ln00, blocks.3.norm1), else
 * its position among the model's layers. */
static double layer_index(const char *name, size_t pos, bool by_name)
{
    const char *s = name;
    while (*s && (*s < '0' || *s > '9'))
        s++;
    return by_name && *s ? strtod(s, NULL) : (double)pos;
}

static bool names_numbered(const nc_plan *plan, const size_t *sel, size_t nsel)
{
    for (size_t a = 0; a < nsel; a++) {
        const char *s = plan->layers[sel[a]].name;
        if (!strpbrk(s, "0123456789"))
            return false;
        for (size_t b = 0; b < a; b++)
            if (plan->layers[sel[a]].result.d == plan->layers[sel[b]].result.d &&
                layer_index(s, 0, true) == layer_index(plan->layers[sel[b]].name, 0, true))
                return false;
    }
    return true;
}

/* One line per model of fits[id].params.p[0] against the layer index. */
static bool depth_lines(job *j, const nc_plan *plan, const size_t *sel, size_t nsel, int id,
                        nc_panel *p)
{
    size_t *grp = nc_fig_jalloc(j, (nsel ? nsel : 1) * sizeof *grp), *ds = NULL;
    size_t count[MAX_MODELS] = {0}, nd = grp ? select_groups(j, plan, sel, nsel, grp, &ds) : 0;
    if (!ds)
        return false;
    nd = nd < MAX_MODELS ? nd : MAX_MODELS; /* more widths: drawn as the first MAX_MODELS */
    nc_curve *cv = nc_fig_jalloc(j, (nd ? nd : 1) * sizeof *cv);
    double *xy = nc_fig_jalloc(j, 2 * (nsel ? nsel : 1) * sizeof *xy);
    if (!cv || !xy)
        return false;
    bool by_name = names_numbered(plan, sel, nsel);
    double lo = INFINITY, hi = 0, xlo = INFINITY, xhi = -INFINITY;
    size_t used = 0;
    for (size_t q = 0; q < nd; q++) {
        double *x = xy + used, *y = xy + nsel + used;
        size_t n = 0;
        for (size_t k = 0; k < nsel; k++) {
            const nc_plan_layer *pl = &plan->layers[sel[k]];
            if (pl->result.d != ds[q])
                continue;
            const nc_fit_result *f = &pl->result.fits[id];
            x[n] = layer_index(pl->name, count[q]++, by_name);
            y[n] = f->ok && f->params.p[0] > 0 ? f->params.p[0] : NAN;
            if (isfinite(y[n])) {
                lo = fmin(lo, y[n]), hi = fmax(hi, y[n]);
                xlo = fmin(xlo, x[n]), xhi = fmax(xhi, x[n]);
            }
            n++;
        }
        used += n;
        cv[q] = (nc_curve){x, y, n, nc_cat_color((int)q), 1.4, false, NC_MARKER_CIRCLE, 5,
                           nc_fig_jprintf(j, "d = %zu", ds[q])};
    }
    if (!(hi > 0))
        lo = 0.5, hi = 2, xlo = 0, xhi = 1;
    if (xhi <= xlo)
        xlo -= 1, xhi += 1;
    double pad = 0.06 * (xhi - xlo);
    p->x0 = xlo - pad, p->x1 = xhi + pad;
    p->ylog = hi / lo > 20;
    double span = fmax(hi - lo, 0.2 * hi); /* one layer, or all alike: +-20 % */
    p->y0 = p->ylog ? lo / 1.5 : fmax(0, lo - 0.15 * span);
    p->y1 = p->ylog ? hi * 1.5 : hi + 0.15 * span;
    p->curves = cv;
    p->ncurves = nd;
    p->grid = true;
    p->xlabel = by_name ? "layer" : "layer (order in the run)";
    return !j->oom;
}

int nc_fig_alpha_depth_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                             nc_panel *p, nc_err *err)
{
    nc_panel *q = p + 1; /* the job has room for two panels */
    bool any = false;
    for (size_t k = 0; k < nsel; k++)
        any = any || plan->layers[sel[k]].result.fits[NC_FIT_DYT].ok ||
              plan->layers[sel[k]].result.fits[NC_FIT_DYISRU].ok;
    if (!any)
        return nc_err_set(err, NC_EINVAL, "figure 'alpha-depth': no layer has a DyT or DyISRU "
                                          "fit");
    if (!depth_lines(j, plan, sel, nsel, NC_FIT_DYT, p) ||
        !depth_lines(j, plan, sel, nsel, NC_FIT_DYISRU, q))
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    p->title = "DyT \xce\xb1 by layer";
    p->ylabel = "fitted \xce\xb1";
    q->title = "DyISRU C by layer";
    q->ylabel = "fitted C";
    return 0;
}
