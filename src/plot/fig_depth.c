/*
 * fig_depth.c - the figures across layers (figures.h): alpha-std (fitted
 * DyT alpha against 1/std(x), coloured by depth) and alpha-depth (fitted
 * alpha and C against the layer index, one line per model).
 *
 * Both start from the depth model of the selected layers (depth_model):
 * each layer's model group and its index in depth. A group here is the
 * run-level block's (analysis/groups.h, nc_model_groups on the layers'
 * nc_plan_group_key: one source, norm kind and width, or one config
 * group; called, never redone here); the index is the first
 * number in the layer's name when those are distinct within each group
 * (ln05 is 5, blocks.3.norm1 is 3), else the layer's order in the run. A
 * figure of another per-layer quantity against depth takes the same
 * model: depth_build, then depth_colour or the index.
 *
 * alpha-std, for a model of 12 to 65 layers: names cannot tell 40 points
 * apart, so each point is coloured by its depth on a sequential map (a
 * colour bar says which), each group has its marker and the dash of its
 * across-layer fit; the layer labels that fit without covering a point, a
 * line or another label are drawn (short: the part of the names that
 * varies, or the layer's index on the colour bar when that is still long),
 * and the note counts the rest. The across-layer fit is the
 * run-level analysis' own (nc_loglog_fit: OLS of log alpha on log 1/std),
 * one per group over its layers the figure shows (3 or more), with its
 * slope's 95 % confidence interval: when the figure shows all of a
 * group's layers, the run-level block's alpha slope of that group.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/groups.h"
#include "analysis/run_summary.h"
#include "plan/plan.h"
#include "plot/axes.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"

#define CMAP_LO 0.0 /* viridis without its pale yellow end (fig_panels.c) */
#define CMAP_HI 0.85
#define GREY_LINE 0x999999
#define SHORT_LABEL 8 /* a point label longer than this is the layer's index instead */
#define FIT_LINE 0x222222

/* The markers and fit-line dashes of the groups, in group order (cycling). */
static const int group_marker[] = {NC_MARKER_CIRCLE, NC_MARKER_SQUARE, NC_MARKER_TRIANGLE,
                                   NC_MARKER_DIAMOND, NC_MARKER_TRIANGLE_DOWN};
static const int group_dash[] = {NC_SOLID, NC_DASHED, NC_DASHDOT, NC_DOTTED};
#define NMARK (sizeof group_marker / sizeof group_marker[0])
#define NDASH (sizeof group_dash / sizeof group_dash[0])

/* ------------------------------------------------------- the depth model */

typedef struct depth_model {
    size_t n;      /* the selected layers */
    size_t *grp;   /* [n] each one's group */
    size_t ng;
    size_t *gd;    /* [ng] each group's d */
    const char **gname; /* [ng] what tells the group apart in a legend */
    double *index; /* [n] each one's index in depth */
    bool by_name;  /* the index is the number in the name (else the order) */
    double lo, hi; /* the range of the indices */
} depth_model;

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

/* (group, number) pairs, by group then number. */
static int cmp_pair(const void *a, const void *b)
{
    const double *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Whether every selected name has a number, distinct within its group
 * (sorted per group: linear in memory, n log n in time). */
static bool names_numbered(job *j, const nc_plan *plan, const size_t *sel, const depth_model *m)
{
    double *key = nc_fig_jalloc(j, (m->n ? m->n : 1) * 2 * sizeof *key);
    if (!key)
        return false;
    for (size_t a = 0; a < m->n; a++) {
        const char *s = plan->layers[sel[a]].name;
        if (!strpbrk(s, "0123456789"))
            return false;
        key[2 * a] = (double)m->grp[a];
        key[2 * a + 1] = layer_index(s, 0, true);
    }
    qsort(key, m->n, 2 * sizeof *key, cmp_pair);
    for (size_t a = 1; a < m->n; a++) /* pairs compare as (group, number) */
        if (key[2 * a] == key[2 * a - 2] && key[2 * a + 1] == key[2 * a - 1])
            return false;
    return true;
}

/* How a legend names the group of layer k among key[n] (grouped as
 * grp[n]): "d = 768"; with the config's group name, or the source's file
 * name, in front when another group has the same d ("gpt2, d = 768"). */
static const char *group_name(job *j, const nc_group_key *key, const size_t *grp, size_t n,
                              size_t k)
{
    bool shared = false;
    for (size_t i = 0; i < n && !shared; i++)
        shared = grp[i] != grp[k] && key[i].d == key[k].d;
    const char *who = key[k].group;
    if (!who && key[k].source) {
        who = strrchr(key[k].source, '/');
        who = who && who[1] ? who + 1 : key[k].source;
    }
    if (!shared || !who)
        return nc_fig_jprintf(j, "d = %zu", key[k].d);
    return nc_fig_jprintf(j, "%s, d = %zu", who, key[k].d);
}

/* The depth model of the plan layers sel[n] (memory in the job). */
static bool depth_build(job *j, const nc_plan *plan, const size_t *sel, size_t n, depth_model *m)
{
    *m = (depth_model){.n = n, .lo = INFINITY, .hi = -INFINITY};
    nc_group_key *key = nc_fig_jalloc(j, (n ? n : 1) * sizeof *key);
    m->grp = nc_fig_jalloc(j, (n ? n : 1) * sizeof *m->grp);
    m->gd = nc_fig_jalloc(j, (n ? n : 1) * sizeof *m->gd);
    m->gname = nc_fig_jalloc(j, (n ? n : 1) * sizeof *m->gname);
    m->index = nc_fig_jalloc(j, (n ? n : 1) * sizeof *m->index);
    size_t *count = nc_fig_jalloc(j, (n ? n : 1) * sizeof *count);
    if (!key || !m->grp || !m->gd || !m->gname || !m->index || !count)
        return false;
    for (size_t k = 0; k < n; k++)
        key[k] = nc_plan_group_key(&plan->layers[sel[k]]);
    m->ng = nc_model_groups(key, n, m->grp);
    for (size_t k = 0; k < n; k++) {
        m->gd[m->grp[k]] = key[k].d;
        m->gname[m->grp[k]] = group_name(j, key, m->grp, n, k);
    }
    m->by_name = names_numbered(j, plan, sel, m);
    for (size_t k = 0; k < n; k++) {
        m->index[k] = layer_index(plan->layers[sel[k]].name, count[m->grp[k]]++, m->by_name);
        m->lo = fmin(m->lo, m->index[k]);
        m->hi = fmax(m->hi, m->index[k]);
    }
    return !j->oom;
}

/* The colour of depth index v on the sequential map. */
static nc_rgb depth_colour(const depth_model *m, double v)
{
    double t = m->hi > m->lo ? (v - m->lo) / (m->hi - m->lo) : 0.5;
    return nc_colormap(CMAP_LO + (CMAP_HI - CMAP_LO) * t);
}

/* The part of the layer names that varies (their common prefix and
 * suffix cut at '.', '_' or '-'), for short point labels: "blocks.12.norm"
 * among blocks.*.norm is "12". The name itself when that is empty. */
static const char *short_name(job *j, const char *name, size_t pre, size_t suf)
{
    size_t n = strlen(name);
    if (pre + suf >= n)
        return name;
    return nc_fig_jprintf(j, "%.*s", (int)(n - pre - suf), name + pre);
}

/* The common prefix and suffix of the names, ending and starting at a
 * separator. */
static void common_affixes(const nc_plan *plan, const size_t *sel, size_t n, size_t *pre,
                           size_t *suf)
{
    *pre = *suf = 0;
    if (n < 2)
        return;
    const char *a = plan->layers[sel[0]].name;
    size_t la = strlen(a), p = la, s = la;
    for (size_t k = 1; k < n; k++) {
        const char *b = plan->layers[sel[k]].name;
        size_t lb = strlen(b), q = 0, r = 0;
        while (q < p && q < lb && a[q] == b[q])
            q++;
        while (r < s && r < lb && r < la && a[la - 1 - r] == b[lb - 1 - r])
            r++;
        p = q, s = r;
    }
    while (p > 0 && !strchr("._-", a[p - 1]))
        p--;
    while (s > 0 && !strchr("._-", a[la - s]))
        s--;
    *pre = p, *suf = s;
}

/* ------------------------------------------------------------ alpha-std */

/* Per group with 3 or more points, the fit line (dark, the group's dash)
 * into cv[*nc], and the group's legend entry (its marker and dash, named
 * with d, layer count and slope) into legend[]; groups without a fit get
 * an entry with their marker alone (a mark at NaN: drawn in the legend
 * only). */
static void group_lines(job *j, nc_panel *p, const double *fx, const double *fy, const size_t *fg,
                        size_t nl, const depth_model *m, nc_curve *cv, size_t *nc, nc_mark *hm,
                        size_t *nh)
{
    double *gx = nc_fig_jalloc(j, 2 * (nl ? nl : 1) * sizeof *gx), *gy = gx ? gx + nl : NULL;
    bool small = j->fig.width_in < 5.0;
    for (size_t g = 0; gx && g < m->ng; g++) {
        size_t n = 0;
        for (size_t k = 0; k < nl; k++)
            if (fg[k] == g)
                gx[n] = fx[k], gy[n++] = fy[k];
        if (n == 0)
            continue;
        nc_loglog f = nc_loglog_fit(gx, gy, n);
        int mk = group_marker[g % NMARK], dash = group_dash[g % NDASH];
        const char *what = nc_fig_jprintf(j, "%s, %zu layer%s", m->gname[g], n, n == 1 ? "" : "s");
        if (!(isfinite(f.slope) && isfinite(f.intercept))) {
            hm[(*nh)++] = (nc_mark){NAN, NAN, nc_rgb_hex(FIT_LINE), mk, 6, what};
            continue;
        }
        double A = exp(f.intercept), b = f.slope, *xy = nc_fig_jalloc(j, 4 * sizeof *xy);
        if (!xy)
            return;
        xy[0] = p->x0, xy[1] = p->x1, xy[2] = A * pow(p->x0, b), xy[3] = A * pow(p->x1, b);
        cv[(*nc)++] = (nc_curve){xy, xy + 2, 2, nc_rgb_hex(FIT_LINE), 1.4, dash, 0, 0, NULL};
        const char *ci = isfinite(f.ci_lo) ? nc_fig_jprintf(j, " [%.2f, %.2f]", f.ci_lo, f.ci_hi)
                                           : "";
        cv[(*nc)++] = (nc_curve){NULL, NULL, 0, nc_rgb_hex(FIT_LINE), 1.4, dash, mk, 6,
                                 small ? nc_fig_jprintf(j, "%s: slope %.2f%s", what, f.slope, ci)
                                       : nc_fig_jprintf(j, "%s: \xce\xb1 \xe2\x88\x9d "
                                                           "(1/std)^{%.2f}%s", what, f.slope, ci)};
    }
}

/* The labels of the points in order of importance: each group's first
 * and last layer, then the rest by repeated halving, so that what fits
 * is spread over depth. order[] gets positions in the labels' array. */
static void label_order(const size_t *fg, size_t nl, size_t *order, bool *taken)
{
    size_t no = 0;
    for (size_t k = 0; k < nl; k++)
        taken[k] = false;
    for (size_t k = 0; k < nl; k++) { /* first and last of each group */
        bool first = true, last = true;
        for (size_t q = 0; q < nl; q++) {
            first = first && !(q < k && fg[q] == fg[k]);
            last = last && !(q > k && fg[q] == fg[k]);
        }
        if (first || last)
            order[no++] = k, taken[k] = true;
    }
    for (size_t step = nl; step >= 1 && no < nl; step /= 2) /* then halving */
        for (size_t k = 0; k < nl; k += step ? step : 1)
            if (!taken[k])
                order[no++] = k, taken[k] = true;
    for (size_t k = 0; k < nl; k++)
        if (!taken[k])
            order[no++] = k;
}

/* The points: per layer the fitted alpha (the group's marker) and the
 * theory value (a cross), coloured by depth, at 1/std(x); into m[], their
 * coordinates and groups into fx, fy, fg (nl of them); the ranges. */
static size_t alpha_points(const nc_plan *plan, const size_t *sel, const depth_model *dm,
                           nc_mark *m, double *fx, double *fy, size_t *fg, size_t *pos,
                           size_t *nl, double r[4])
{
    size_t nm = 0;
    r[0] = r[2] = INFINITY, r[1] = r[3] = 0;
    for (size_t k = 0; k < dm->n; k++) {
        const nc_layer_result *res = &plan->layers[sel[k]].result;
        const nc_fit_result *f = &res->fits[NC_FIT_DYT];
        double ix = 1.0 / res->stats.std, al = f->ok ? f->params.p[0] : NAN;
        double th = nc_dyt_theory_params(res->norm, res->stats.rho, res->d).p[0];
        if (!(al > 0 && isfinite(al) && ix > 0 && isfinite(ix)))
            continue;
        nc_rgb col = depth_colour(dm, dm->index[k]);
        if (th > 0 && isfinite(th)) {
            m[nm++] = (nc_mark){ix, th, col, NC_MARKER_CROSS, 5, NULL};
            r[2] = fmin(r[2], th), r[3] = fmax(r[3], th);
        }
        m[nm++] = (nc_mark){ix, al, col, group_marker[dm->grp[k] % NMARK], 6, NULL};
        fx[*nl] = ix, fy[*nl] = al, fg[*nl] = dm->grp[k], pos[*nl] = k;
        (*nl)++;
        r[2] = fmin(r[2], al), r[3] = fmax(r[3], al);
        r[0] = fmin(r[0], ix), r[1] = fmax(r[1], ix);
    }
    return nm;
}

/* The grey reference lines: alpha = (1/std)/sqrt(d) per group (dashed,
 * one legend entry), alpha = 1/std where it crosses (dotted); left out of
 * a small figure (under 5 in wide), whose legend has room for the fits
 * and the theory only. */
static bool reference_lines(job *j, nc_panel *p, const depth_model *dm, nc_curve *cv, size_t *nc)
{
    if (j->fig.width_in < 5.0)
        return true;
    for (size_t g = 0; g < dm->ng; g++) {
        double *xy = nc_fig_jalloc(j, 4 * sizeof *xy), s = sqrt((double)dm->gd[g]);
        if (!xy)
            return false;
        xy[0] = p->x0, xy[1] = p->x1, xy[2] = p->x0 / s, xy[3] = p->x1 / s;
        cv[(*nc)++] = (nc_curve){xy, xy + 2, 2, nc_rgb_hex(GREY_LINE), 0.9, NC_DASHED, 0, 0,
                                 dm->ng > 1 ? "(1/std)/\xe2\x88\x9a" "d, each d"
                                            : "(1/std)/\xe2\x88\x9a" "d"};
    }
    double *xy = nc_fig_jalloc(j, 4 * sizeof *xy);
    if (!xy)
        return false;
    xy[0] = p->x0, xy[1] = p->x1, xy[2] = p->x0, xy[3] = p->x1;
    if (p->x1 > p->y0 && p->x0 < p->y1) /* alpha = 1/std, when it crosses the panel */
        cv[(*nc)++] = (nc_curve){xy, xy + 2, 2, nc_rgb_hex(0x666666), 1.0, NC_DOTTED, 0, 0,
                                 "\xce\xb1 = 1/std"};
    return true;
}

/* The theory entry of the legend: a grey cross named with the formula
 * when every layer shown has the same norm. */
static nc_mark theory_entry(job *j, const nc_plan *plan, const size_t *sel, size_t n)
{
    int norm = -1;
    for (size_t k = 0; k < n; k++) {
        int nk = (int)plan->layers[sel[k]].result.norm;
        norm = norm == -1 || norm == nk ? nk : -2;
    }
    const char *f = norm >= 0 ? nc_theory_param_formula(NC_FIT_DYT_THEORY, (nc_norm_kind)norm)
                              : NULL;
    return (nc_mark){NAN, NAN, nc_rgb_hex(0x555555), NC_MARKER_CROSS, 5,
                     f ? nc_fig_jprintf(j, "theory \xce\xb1 = %s", f) : "theory \xce\xb1"};
}

int nc_fig_alpha_std_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                           nc_panel *p, nc_err *err)
{
    depth_model dm;
    size_t n1 = nsel ? nsel : 1, nm = 0, nl = 0, nc = 0;
    double r[4];
    if (!depth_build(j, plan, sel, nsel, &dm))
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    nc_mark *m = nc_fig_jalloc(j, (2 * n1 + dm.ng + 1) * sizeof *m);
    nc_label *lb = nc_fig_jalloc(j, n1 * sizeof *lb);
    double *fx = nc_fig_jalloc(j, 2 * n1 * sizeof *fx), *fy = fx ? fx + n1 : NULL;
    size_t *fg = nc_fig_jalloc(j, 3 * n1 * sizeof *fg), *pos = fg ? fg + n1 : NULL;
    size_t *order = fg ? fg + 2 * n1 : NULL;
    bool *taken = nc_fig_jalloc(j, n1 * sizeof *taken);
    nc_curve *cv = nc_fig_jalloc(j, (3 * dm.ng + 2) * sizeof *cv);
    nc_colorbar *cb = nc_fig_jalloc(j, sizeof *cb);
    if (!m || !lb || !fx || !fg || !taken || !cv || !cb)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    nm = alpha_points(plan, sel, &dm, m, fx, fy, fg, pos, &nl, r);
    if (nm == 0)
        return nc_err_set(err, NC_EINVAL, "figure 'alpha-std': no layer has a DyT fit");
    *p = (nc_panel){.xlog = true, .ylog = true, .x0 = r[0] / 2, .x1 = r[1] * 2,
                    .y0 = r[2] / 2.5, .y1 = r[3] * 2.5, .grid = true};
    if (!reference_lines(j, p, &dm, cv, &nc))
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    group_lines(j, p, fx, fy, fg, nl, &dm, cv, &nc, m, &nm); /* legend-only marks after */
    m[nm++] = theory_entry(j, plan, sel, nsel);
    size_t pre, suf;
    common_affixes(plan, sel, nsel, &pre, &suf);
    label_order(fg, nl, order, taken);
    for (size_t q = 0; q < nl; q++) {
        size_t k = order[q];
        const char *name = short_name(j, plan->layers[sel[pos[k]]].name, pre, suf);
        if (name && strlen(name) > SHORT_LABEL) /* too long to fit: its index in depth */
            name = nc_fig_jprintf(j, "%g", dm.index[pos[k]]);
        lb[q] = (nc_label){fx[k], fy[k], name, nc_rgb_hex(0x333333)};
    }
    if (dm.hi > dm.lo) {
        *cb = (nc_colorbar){dm.lo, dm.hi, false, CMAP_LO, CMAP_HI,
                            dm.by_name ? "layer" : "layer (order in the run)"};
        p->cbar = cb;
    }
    p->title = nc_fig_title(j, "DyT \xce\xb1 against 1/std(x) across layers");
    p->xlabel = "1/std(x)";
    p->ylabel = "\xce\xb1";
    p->curves = cv, p->ncurves = nc;
    p->marks = m, p->nmarks = nm;
    p->labels = j->spec->no_labels ? NULL : lb, p->nlabels = j->spec->no_labels ? 0 : nl;
    p->labels_what = "layers";
    return j->oom ? nc_err_set(err, NC_ENOMEM, "out of memory for figures") : 0;
}

/* ---------------------------------------------------------- alpha-depth */

/* One line per group of fits[id].params.p[0] against the layer index. */
static bool depth_lines(job *j, const nc_plan *plan, const size_t *sel, const depth_model *dm,
                        int id, nc_panel *p)
{
    size_t n = dm->n;
    nc_curve *cv = nc_fig_jalloc(j, (dm->ng ? dm->ng : 1) * sizeof *cv);
    double *xy = nc_fig_jalloc(j, 2 * (n ? n : 1) * sizeof *xy);
    if (!cv || !xy)
        return false;
    double lo = INFINITY, hi = 0, xlo = INFINITY, xhi = -INFINITY;
    size_t used = 0;
    for (size_t g = 0; g < dm->ng; g++) {
        double *x = xy + used, *y = xy + n + used;
        size_t m = 0;
        for (size_t k = 0; k < n; k++) {
            if (dm->grp[k] != g)
                continue;
            const nc_fit_result *f = &plan->layers[sel[k]].result.fits[id];
            x[m] = dm->index[k];
            y[m] = f->ok && f->params.p[0] > 0 ? f->params.p[0] : NAN;
            if (isfinite(y[m])) {
                lo = fmin(lo, y[m]), hi = fmax(hi, y[m]);
                xlo = fmin(xlo, x[m]), xhi = fmax(xhi, x[m]);
            }
            m++;
        }
        used += m;
        cv[g] = (nc_curve){x, y, m, nc_cat_color((int)g), 1.4, group_dash[g % NDASH],
                           group_marker[g % NMARK], 5, dm->gname[g]};
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
    p->ncurves = dm->ng;
    p->grid = true;
    p->xlabel = dm->by_name ? "layer" : "layer (order in the run)";
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
    depth_model dm;
    if (!depth_build(j, plan, sel, nsel, &dm) || !depth_lines(j, plan, sel, &dm, NC_FIT_DYT, p) ||
        !depth_lines(j, plan, sel, &dm, NC_FIT_DYISRU, q))
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    p->title = nc_fig_title(j, "DyT \xce\xb1 by layer");
    p->ylabel = "fitted \xce\xb1";
    q->title = nc_fig_title(j, "DyISRU C by layer");
    q->ylabel = "fitted C";
    if (j->spec->title && !j->spec->no_title) { /* one title for the figure, not each panel */
        j->fig.title = j->spec->title;
        p->title = q->title = NULL;
    }
    return 0;
}

/* ----------------------------------------------------------- swap-depth */

/* The surrogates of the swap test, in the figure's order, and their names
 * in the legend. */
static const struct {
    int id;
    const char *label;
} swap_series[] = {
    {NC_DROPIN_DYT, "DyT, fitted \xce\xb1"},
    {NC_DROPIN_DYT_ALPHA0, "DyT, paper \xce\xb1\xe2\x82\x80"},
    {NC_DROPIN_DYISRU, "DyISRU, fitted C"},
};
#define NSERIES (sizeof swap_series / sizeof swap_series[0])
#define Z95 1.959963984540054 /* the bars: +-1.96 standard errors */

/* The marker of a role (attention input, MLP input, final, other). */
static int role_marker(const char *role)
{
    return strcmp(role, "attn_norm") == 0  ? NC_MARKER_CIRCLE
           : strcmp(role, "mlp_norm") == 0 ? NC_MARKER_SQUARE
           : strcmp(role, "final_norm") == 0 ? NC_MARKER_TRIANGLE
                                             : NC_MARKER_DIAMOND;
}

/* swap-depth: per layer with swap results (plan->swap, docs/swap.md) and
 * per surrogate, the loss change with that norm alone replaced, at the
 * layer's index (the surrogates side by side), with its 95 % bar; the
 * marker says the layer's role; a line at 0 (no change). */
int nc_fig_swap_depth_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                            nc_panel *p, nc_err *err)
{
    const nc_swap *sw = plan->has_swap ? &plan->swap : NULL;
    depth_model dm;
    size_t cap = NSERIES * (nsel ? nsel : 1);
    nc_mark *m = nc_fig_jalloc(j, (cap + NSERIES + 4) * sizeof *m);
    nc_curve *cv = nc_fig_jalloc(j, cap * sizeof *cv);
    double *xy = nc_fig_jalloc(j, 4 * cap * sizeof *xy);
    nc_hline *zero = nc_fig_jalloc(j, sizeof *zero);
    if (!m || !cv || !xy || !zero || !depth_build(j, plan, sel, nsel, &dm))
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    size_t nm = 0, nc = 0;
    double ylo = 0, yhi = 0, xlo = INFINITY, xhi = -INFINITY;
    bool roles[4] = {false}, unknown = true;
    for (size_t k = 0; k < nsel; k++)
        unknown = unknown && strcmp(plan->layers[sel[k]].role.role, "unknown") == 0;
    /* markers no wider than a third of a layer's room (a whole model at
     * 3.3 in), 4.5 pt at most */
    double room = 0.75 * 72 * j->fig.width_in / ((dm.hi - dm.lo + 1) * (double)NSERIES);
    double msize = fmax(1.8, fmin(4.5, room));
    for (size_t k = 0; sw && k < nsel; k++) {
        const nc_plan_layer *pl = &plan->layers[sel[k]];
        const nc_swap_layer *sl = nc_swap_find(sw, pl->name);
        int shape = unknown ? NC_MARKER_CIRCLE : role_marker(pl->role.role);
        for (size_t s = 0; sl && s < NSERIES; s++) {
            const nc_swap_entry *e = &sl->s[swap_series[s].id];
            if (!e->ok)
                continue;
            double x = dm.index[k] + 0.22 * ((double)s - 1.0), y = e->delta;
            double h = isfinite(e->delta_se) ? Z95 * e->delta_se : 0;
            nc_rgb col = nc_cat_color((int)s);
            m[nm++] = (nc_mark){x, y, col, shape, msize, NULL};
            if (h > 0) {
                double *b = xy + 4 * nc;
                b[0] = b[1] = x, b[2] = y - h, b[3] = y + h;
                cv[nc++] = (nc_curve){b, b + 2, 2, col, 0.9, NC_SOLID, NC_MARKER_NONE, 0, NULL};
            }
            ylo = fmin(ylo, y - h), yhi = fmax(yhi, y + h);
            xlo = fmin(xlo, x), xhi = fmax(xhi, x);
            roles[shape == NC_MARKER_CIRCLE ? 0 : shape == NC_MARKER_SQUARE ? 1
                  : shape == NC_MARKER_TRIANGLE ? 2 : 3] = true;
        }
    }
    if (nm == 0)
        return nc_err_set(err, NC_EINVAL, "figure 'swap-depth': no selected layer has swap test "
                                          "results (scripts/swap_test.py, then --swap FILE; "
                                          "docs/swap.md)");
    /* the legend: a colour per surrogate, a grey marker per role shown */
    for (size_t s = 0; s < NSERIES; s++)
        if (sw->has[swap_series[s].id])
            m[nm++] = (nc_mark){NAN, NAN, nc_cat_color((int)s), NC_MARKER_NONE, 4.5,
                                swap_series[s].label};
    static const char *const role_label[4] = {"attention norm", "MLP norm", "final norm",
                                              "other norm"};
    static const int role_shape[4] = {NC_MARKER_CIRCLE, NC_MARKER_SQUARE, NC_MARKER_TRIANGLE,
                                      NC_MARKER_DIAMOND};
    for (int r = 0; r < 4 && !unknown; r++)
        if (roles[r])
            m[nm++] = (nc_mark){NAN, NAN, nc_rgb_hex(GREY_LINE), role_shape[r], 4.5,
                                role_label[r]};
    *zero = (nc_hline){0, nc_rgb_hex(GREY_LINE), NC_SOLID, NULL};
    double span = yhi - ylo > 0 ? yhi - ylo : 1;
    if (xhi <= xlo)
        xlo -= 1, xhi += 1;
    double pad = 0.05 * (xhi - xlo) + 0.3;
    const nc_swap_entry *all = &sw->all[NC_DROPIN_DYT];
    *p = (nc_panel){
        .title = nc_fig_title(j, sw->current ? "Loss change with one norm replaced"
                                             : "Loss change with one norm replaced "
                                               "(earlier drop-ins)"),
        .xlabel = dm.by_name ? "layer" : "layer (order in the run)",
        .ylabel = nc_fig_jprintf(j, "\xce\x94 loss, %s", sw->unit),
        .x0 = xlo - pad, .x1 = xhi + pad, .y0 = ylo - 0.08 * span, .y1 = yhi + 0.08 * span,
        .grid = true, .curves = cv, .ncurves = nc, .marks = m, .nmarks = nm, .hlines = zero,
        .nhlines = 1,
        .note = all->ok && isfinite(all->delta_se)
                    ? nc_fig_jprintf(j, "95 %% bars; all replaced (DyT): %+.2g \xc2\xb1 %.2g SE",
                                     all->delta, all->delta_se)
                    : "95 % bars"};
    return j->oom ? nc_err_set(err, NC_ENOMEM, "out of memory for figures") : 0;
}
