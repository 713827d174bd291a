/*
 * fig_panels.c - the panels of each paper-style figure kind (figures.h):
 * scatter (and the scatter-grid's panels), jacobian, by-token, by-channel,
 * outlier-steps, alpha-std and tanh-family. A builder sets a panel's
 * title, labels, data ranges, fitted curves (sampled from the surrogate
 * table), marks, reference lines and legend, everything allocated in the
 * job (figures_internal.h).
 *
 * Legend: x input, y = (x - c_t) * inv_t the norm's output before the
 * affine part, J_ii the exact diagonal of its Jacobian (jacobian.h).
 *
 * Left out: the density clouds (the raster pass of figures.c fills them
 * after the layout is known), layout and drawing (figure.h), and the sweep
 * figures (fig_sweep.c).
 */
#include "plot/figures_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/plan.h"
#include "plot/axes.h"
#include "plot/figure.h"

#define CURVE_POINTS 600 /* samples of a fitted curve across the panel */
#define DEFAULT_TOKENS 8
#define MAX_FIG_CURVES 16

static bool curve_wanted(const nc_fig_spec *spec, int id, bool jacobian)
{
    bool any = false;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        any = any || spec->curves[k];
    if (any)
        return spec->curves[id];
    return id == NC_FIT_LINEAR || id == NC_FIT_DYT || id == NC_FIT_DYISRU ||
           (jacobian && (id == NC_FIT_DYT_THEORY || id == NC_FIT_DYISRU_THEORY));
}

/* " + 0.1" or " \u2212 0.1": a signed term of a formula, with a real minus. */
static const char *term(char *buf, size_t cap, double v)
{
    snprintf(buf, cap, " %s %.3g", v < 0 ? "\xe2\x88\x92" : "+", fabs(v));
    return buf;
}

/* 1048576 -> "1,048,576" */
static const char *thousands(char *buf, size_t cap, size_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%zu", n), o = 0;
    for (int k = 0; k < len && (size_t)o + 2 < cap; k++) {
        if (k && (len - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[k];
    }
    buf[o] = '\0';
    return buf;
}

/* A legend label naming the fit and its parameters. */
static char *fit_label(job *j, const nc_layer_result *r, int id, bool brief)
{
    const nc_fit_result *f = &r->fits[id];
    const double *p = f->params.p;
    char t1[48], t2[48];
    if (brief) /* a grid's shared legend: the name only (R^2 per layer in the metadata) */
        return nc_fig_jprintf(j, "%s", nc_surrogate_get((nc_fit_id)id)->label);
    if (j->fig.width_in / j->fig.cols < 5.0) /* small: no formula */
        return nc_fig_jprintf(j, "%s (R\xc2\xb2 %.4f)", nc_surrogate_get((nc_fit_id)id)->label,
                              f->r2);
    switch (id) {
    case NC_FIT_LINEAR:
        return nc_fig_jprintf(j, "affine: %.4g x%s (R\xc2\xb2 %.4f)", p[0],
                              term(t1, sizeof t1, p[1]), f->r2);
    case NC_FIT_DYT:
    case NC_FIT_DYT_THEORY:
        return nc_fig_jprintf(j, "%s: %.4g tanh(%.4g x)%s (R\xc2\xb2 %.4f)",
                              id == NC_FIT_DYT ? "DyT" : "DyT theory", p[1], p[0],
                              p[2] != 0 ? term(t1, sizeof t1, p[2]) : "", f->r2);
    case NC_FIT_DYISRU:
    case NC_FIT_DYISRU_FREE:
    case NC_FIT_DYISRU_THEORY:
        return nc_fig_jprintf(j, "%s: %.4g x / \xe2\x88\x9a(x\xc2\xb2 + %.4g) (R\xc2\xb2 %.4f)",
                              id == NC_FIT_DYISRU_THEORY ? "DyISRU theory" : "DyISRU", p[1],
                              p[0], f->r2);
    case NC_FIT_DERF:
        return nc_fig_jprintf(j, "Derf: %.4g erf(%.4g x%s)%s (R\xc2\xb2 %.4f)", p[2], p[0],
                              term(t1, sizeof t1, p[1]), term(t2, sizeof t2, p[3]), f->r2);
    default:
        return nc_fig_jprintf(j, "%s (R\xc2\xb2 %.4f)", nc_surrogate_get((nc_fit_id)id)->label,
                              f->r2);
    }
}

/* Samples f (or f' when deriv) of a fit across [x0, x1]. */
static bool sample_curve(job *j, const nc_layer_result *r, int id, double x0, double x1,
                         bool deriv, nc_curve *c)
{
    double *xy = nc_fig_jalloc(j, 2 * CURVE_POINTS * sizeof *xy);
    if (!xy)
        return false;
    double *x = xy, *y = xy + CURVE_POINTS;
    for (int k = 0; k < CURVE_POINTS; k++)
        x[k] = x0 + (x1 - x0) * k / (CURVE_POINTS - 1);
    const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
    if (deriv)
        s->deriv(&r->fits[id].params, 0, x, CURVE_POINTS, y);
    else
        s->eval(&r->fits[id].params, 0, x, CURVE_POINTS, y);
    c->x = x;
    c->y = y;
    c->n = CURVE_POINTS;
    c->color = nc_fit_color(id);
    c->width_pt = 1.6;
    c->dashed = s->theory;
    return true;
}

static double max_abs(double a, double b)
{
    a = fabs(a), b = fabs(b);
    return a > b ? a : b;
}

/* The symmetric x range of a layer's panels. */
static void x_range(const nc_layer_result *r, double *x0, double *x1)
{
    double a = max_abs(r->stats.min, r->stats.max);
    if (!(a > 0) || !isfinite(a))
        a = 1;
    *x0 = -1.02 * a;
    *x1 = 1.02 * a;
}

static const char *norm_label(nc_norm_kind k)
{
    return k == NC_RMSNORM ? "RMSNorm" : "LayerNorm";
}

/* The input-vs-output panel of a layer: cloud, fitted curves, legend. */
bool nc_fig_scatter_panel(job *j, const nc_plan_layer *pl, nc_panel *p, bool brief)
{
    const nc_layer_result *r = &pl->result;
    x_range(r, &p->x0, &p->x1);
    double b = 1.06 * max_abs(r->y_min, r->y_max);
    if (!(b > 0) || !isfinite(b))
        b = 1;
    p->y0 = -b;
    p->y1 = b;
    p->title = brief ? pl->name
                     : nc_fig_jprintf(j, "%s \xe2\x80\x94 %s, %zu \xc3\x97 %zu", pl->name,
                                      norm_label(r->norm), r->N, r->d);
    p->xlabel = "input x";
    p->ylabel = nc_fig_jprintf(j, "%s(x)", norm_label(r->norm)); /* before the affine part */
    p->density_color = nc_rgb_hex(0x1f4e79);
    p->density_label = "all points";
    char nbuf[32];
    p->note = nc_fig_jprintf(j, "%s points", thousands(nbuf, sizeof nbuf, r->points));
    nc_curve *c = nc_fig_jalloc(j, MAX_FIG_CURVES * sizeof *c);
    if (!c)
        return false;
    size_t n = 0;
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        if (!r->fits[id].ok || id == NC_FIT_DYT_PER_CHANNEL || !curve_wanted(j->spec, id, false))
            continue;
        if (!sample_curve(j, r, id, p->x0, p->x1, false, &c[n]))
            return false;
        c[n].label = fit_label(j, r, id, brief);
        n++;
    }
    p->curves = c;
    p->ncurves = n;
    p->grid = true;
    return !j->oom;
}

/* J_ii against x, with the surrogates' derivatives. */
bool nc_fig_jacobian_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    x_range(r, &p->x0, &p->x1);
    double inv_max = 1.0 / r->stats.scale_min;
    p->y0 = 0;
    p->y1 = isfinite(inv_max) && inv_max > 0 ? 1.06 * inv_max : 1;
    p->title = nc_fig_jprintf(j, "%s \xe2\x80\x94 diagonal of the %s Jacobian", pl->name,
                              norm_label(r->norm));
    p->xlabel = "input x";
    p->ylabel = "J\xe1\xb5\xa2\xe1\xb5\xa2 = \xe2\x88\x82y\xe1\xb5\xa2/\xe2\x88\x82x\xe1\xb5\xa2";
    p->density_color = nc_rgb_hex(0x1f4e79);
    p->density_label = "exact J\xe1\xb5\xa2\xe1\xb5\xa2";
    if (pl->has_jacobian)
        p->note = nc_fig_jprintf(j, "diagonal share %.4f, backprop error %.3f",
                                 pl->jacobian.diag_frobenius_share, pl->jacobian.backprop.err);
    nc_curve *c = nc_fig_jalloc(j, MAX_FIG_CURVES * sizeof *c);
    if (!c)
        return false;
    size_t n = 0;
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        if (!r->fits[id].ok || id == NC_FIT_DYT_PER_CHANNEL || id == NC_FIT_LINEAR ||
            !curve_wanted(j->spec, id, true))
            continue;
        if (!sample_curve(j, r, id, p->x0, p->x1, true, &c[n]))
            return false;
        c[n].label = nc_fig_jprintf(j, "%s\xe2\x80\xb2(x)", nc_surrogate_get((nc_fit_id)id)->label);
        n++;
    }
    p->curves = c;
    p->ncurves = n;
    p->grid = true;
    return !j->oom;
}

/* Most points drawn per token (channels taken with a stride). */
#define TOKEN_POINTS 400

/* The used tokens of r ordered by scale (inv descending = scale
 * ascending), into a job array; *used their count. */
static size_t *tokens_by_scale(job *j, const nc_layer_tokens *tk, size_t *used)
{
    size_t n = 0;
    for (size_t t = 0; t < tk->nt; t++)
        n += tk->status[t] == NC_TOKEN_OK;
    *used = n;
    size_t *order = nc_fig_jalloc(j, (n ? n : 1) * sizeof *order);
    if (!order)
        return NULL;
    n = 0;
    for (size_t t = 0; t < tk->nt; t++)
        if (tk->status[t] == NC_TOKEN_OK)
            order[n++] = t;
    /* shell sort by inv, descending (qsort would need a global for the key) */
    for (size_t gap = n / 3 + 1;; gap = gap / 3 + 1) {
        for (size_t a = gap; a < n; a++) {
            size_t v = order[a], b = a;
            while (b >= gap && tk->inv[order[b - gap]] < tk->inv[v]) {
                order[b] = order[b - gap];
                b -= gap;
            }
            order[b] = v;
        }
        if (gap == 1)
            break;
    }
    return order;
}

/* want tokens spread evenly in log scale between the 5th and 95th
 * percentile of the token scales (each the token nearest its target,
 * no token twice): the paper's choice across scales, robust to one token
 * of extreme scale. pick[] gets positions in order[]. */
static size_t pick_tokens(const nc_layer_tokens *tk, const size_t *order, size_t used,
                          size_t want, size_t *pick)
{
    if (want > used)
        want = used;
    double lo = -log(tk->inv[order[(size_t)(0.05 * (double)(used - 1))]]);
    double hi = -log(tk->inv[order[(size_t)(0.95 * (double)(used - 1))]]);
    size_t n = 0, pos = 0;
    for (size_t q = 0; q < want; q++) {
        double target = want > 1 ? lo + (hi - lo) * (double)q / (double)(want - 1) : (lo + hi) / 2;
        while (pos + 1 < used && -log(tk->inv[order[pos + 1]]) <= target)
            pos++;
        size_t best = pos;
        if (pos + 1 < used && fabs(-log(tk->inv[order[pos + 1]]) - target) <
                                  fabs(-log(tk->inv[order[pos]]) - target))
            best = pos + 1;
        if (n > 0 && best <= pick[n - 1])
            best = pick[n - 1] + 1;
        if (best >= used)
            break;
        pick[n++] = best;
    }
    return n;
}

/* by-token: the cloud in light grey, and tokens spread over the range of
 * token scales drawn as points coloured by token (each token's points lie
 * on its line y = (x - mu_t) / s_t). The x range is the 99.5th percentile
 * of |x| over the drawn tokens' points, so one extreme token does not
 * squeeze the rest; points beyond it are drawn at the frame as triangles
 * pointing out. */
bool nc_fig_by_token_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    const nc_layer_tokens *tk = &r->tok;
    if (!nc_fig_scatter_panel(j, pl, p, true))
        return false;
    p->title = nc_fig_jprintf(j, "%s \xe2\x80\x94 points by token", pl->name);
    p->ncurves = 0; /* the paper's figure: tokens only */
    p->density_color = nc_rgb_hex(0xbbbbbb);
    p->density_label = "all tokens";
    size_t used, want = j->spec->tokens ? j->spec->tokens : DEFAULT_TOKENS;
    size_t *order = tokens_by_scale(j, tk, &used);
    size_t *pick = nc_fig_jalloc(j, (want ? want : 1) * sizeof *pick);
    double *row = nc_fig_jalloc(j, r->d * sizeof *row);
    size_t stride = r->d > TOKEN_POINTS ? (r->d + TOKEN_POINTS - 1) / TOKEN_POINTS : 1;
    size_t per = (r->d + stride - 1) / stride;
    nc_mark *m = nc_fig_jalloc(j, (want ? want : 1) * per * sizeof *m);
    double *ax = nc_fig_jalloc(j, (want ? want : 1) * per * sizeof *ax);
    if (!order || !pick || !row || !m || !ax)
        return false;
    size_t n = used ? pick_tokens(tk, order, used, want, pick) : 0, nm = 0;
    for (size_t q = 0; q < n; q++) {
        size_t t = order[pick[q]], tok = tk->index ? tk->index[t] : t;
        char sb[32];
        const char *label = nc_fig_jprintf(j, "%s", nc_fmt_num(sb, sizeof sb, 1.0 / tk->inv[t], 3));
        nc_tensor_rows(pl->x, tok, 1, row);
        for (size_t i = 0; i < r->d; i += stride) {
            ax[nm] = fabs(row[i]);
            m[nm++] = (nc_mark){row[i], (row[i] - tk->centre[t]) * tk->inv[t], nc_cat_color((int)q),
                                NC_MARKER_CIRCLE, 2.8, label};
        }
    }
    /* the x range: the 99.5th percentile of |x| of the drawn points */
    double xm = p->x1;
    if (nm > 0) {
        size_t kq = (size_t)(0.995 * (double)(nm - 1));
        for (size_t a = 0; a <= kq && a < nm; a++) /* partial selection: nm is small */
            for (size_t b = a + 1; b < nm; b++)
                if (ax[b] > ax[a]) {
                    double t = ax[a];
                    ax[a] = ax[b], ax[b] = t;
                }
        xm = fmin(p->x1, 1.08 * ax[nm - 1 - kq] > 0 ? 1.08 * ax[nm - 1 - kq] : p->x1);
        xm = fmax(xm, 1.08 * ax[nm - 1]);
    }
    size_t beyond = 0;
    for (size_t k = 0; k < nm; k++)
        if (fabs(m[k].x) > xm) {
            m[k].x = m[k].x > 0 ? xm : -xm;
            m[k].shape = m[k].x > 0 ? NC_MARKER_TRIANGLE : NC_MARKER_TRIANGLE_DOWN;
            beyond++;
        }
    double ym = 0;
    for (size_t k = 0; k < nm; k++)
        ym = fmax(ym, fabs(m[k].y));
    p->x0 = -xm;
    p->x1 = xm;
    if (ym > 0 && ym < p->y1) {
        p->y0 = -1.1 * ym;
        p->y1 = 1.1 * ym;
    }
    p->marks = m;
    p->nmarks = nm;
    p->legend_title = stride > 1 ? nc_fig_jprintf(j, "token scales (1 channel in %zu)", stride)
                                 : "token scales";
    p->density_label = NULL;
    if (beyond)
        p->note = nc_fig_jprintf(j, "%zu points beyond the frame (\xe2\x96\xb2)", beyond);
    return !j->oom;
}

/* Most marks drawn per highlighted channel (tokens taken with a stride). */
#define CHANNEL_MARKS 1500

/* by-channel: the cloud in grey, and the top outlier channels (by max |x|)
 * as coloured dots, one per token of a strided token sample, named in the
 * legend. Dots, not a mixed colour per pixel: an outlier channel must stay
 * visible where it crosses the dense core; the channels' dots are
 * interleaved (token by token), so none hides under another. */
bool nc_fig_by_channel_panel(job *j, const nc_plan_layer *pl, nc_panel *p, size_t k)
{
    const nc_layer_result *r = &pl->result;
    const nc_layer_tokens *tk = &r->tok;
    if (!nc_fig_scatter_panel(j, pl, p, true))
        return false;
    p->title = nc_fig_jprintf(j, "%s \xe2\x80\x94 points by channel", pl->name);
    p->ncurves = 0; /* the paper's figure: channels only */
    p->density_color = nc_rgb_hex(0xbbbbbb);
    p->density_label = "other channels";
    size_t used = 0;
    for (size_t t = 0; t < tk->nt; t++)
        used += tk->status[t] == NC_TOKEN_OK;
    size_t stride = used > CHANNEL_MARKS ? (used + CHANNEL_MARKS - 1) / CHANNEL_MARKS : 1;
    nc_mark *m = nc_fig_jalloc(j, (k ? k : 1) * (CHANNEL_MARKS + 1) * sizeof *m);
    const char **labels = nc_fig_jalloc(j, (k ? k : 1) * sizeof *labels);
    if (!m || !labels)
        return false;
    for (size_t q = 0; q < k; q++) {
        char sb[32];
        labels[q] = nc_fig_jprintf(j, "%zu (%s)", r->stats.top[q].channel,
                                   nc_fmt_num(sb, sizeof sb, r->stats.top[q].max_abs, 3));
    }
    size_t nm = 0, seen = 0;
    for (size_t t = 0; t < tk->nt; t++) {
        if (tk->status[t] != NC_TOKEN_OK || seen++ % stride)
            continue;
        size_t tok = tk->index ? tk->index[t] : t;
        for (size_t q = 0; q < k; q++) {
            double v;
            nc_tensor_elems(pl->x, tok * r->d + r->stats.top[q].channel, 1, &v);
            m[nm++] = (nc_mark){v, (v - tk->centre[t]) * tk->inv[t], nc_cat_color((int)q),
                                NC_MARKER_CIRCLE, 2.6, labels[q]};
        }
    }
    p->marks = m;
    p->nmarks = nm;
    p->legend_title = stride > 1 ? nc_fig_jprintf(j, "channel (max |x|), 1 token in %zu", stride)
                                 : "channel (max |x|)";
    return !j->oom;
}

/* outlier-steps: the points, both fixed-amplitude fits, the bounds. */
bool nc_fig_outlier_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_outlier_steps *os = &pl->outlier_steps;
    double xm = 0;
    for (size_t k = 0; k < os->points; k++)
        xm = fmax(xm, fabs(os->x[k]));
    xm *= 1.1;
    nc_mark *m = nc_fig_jalloc(j, os->points * sizeof *m);
    nc_curve *c = nc_fig_jalloc(j, 2 * sizeof *c);
    nc_hline *h = nc_fig_jalloc(j, 2 * sizeof *h);
    double *xy = nc_fig_jalloc(j, 3 * CURVE_POINTS * sizeof *xy);
    if (!m || !c || !h || !xy)
        return false;
    for (size_t k = 0; k < os->points; k++)
        m[k] = (nc_mark){os->x[k], os->y[k], nc_rgb_hex(0x222222), NC_MARKER_CIRCLE, 5.5,
                         k == 0 ? "outlier points (mirrored)" : NULL};
    double *gx = xy, *gd = xy + CURVE_POINTS, *gi = xy + 2 * CURVE_POINTS;
    const double A = os->amplitude, al = os->dyt.param, Cc = os->dyisru.param;
    for (int k = 0; k < CURVE_POINTS; k++) {
        gx[k] = -xm + 2 * xm * k / (CURVE_POINTS - 1);
        gd[k] = A * tanh(al * gx[k]);
        gi[k] = A * gx[k] / sqrt(gx[k] * gx[k] + Cc);
    }
    bool small = j->fig.width_in < 5.0; /* no formulas in a small figure's legend */
    c[0] = (nc_curve){gx, gd, CURVE_POINTS, nc_fit_color(NC_FIT_DYT), 1.6, false, 0, 0,
                      small ? nc_fig_jprintf(j, "DyT (mean |res| %.3g)", os->dyt.mean_abs_res)
                            : nc_fig_jprintf(j, "DyT: %.4g tanh(%.4g x), mean |residual| %.3g", A,
                                             al, os->dyt.mean_abs_res)};
    c[1] = (nc_curve){gx, gi, CURVE_POINTS, nc_fit_color(NC_FIT_DYISRU), 1.6, false, 0, 0,
                      small ? nc_fig_jprintf(j, "DyISRU (mean |res| %.3g)",
                                             os->dyisru.mean_abs_res)
                            : nc_fig_jprintf(j, "DyISRU: %.4g x / \xe2\x88\x9a(x\xc2\xb2 + %.4g), "
                                                "mean |residual| %.3g",
                                             A, Cc, os->dyisru.mean_abs_res)};
    h[0] = (nc_hline){A, nc_rgb_hex(0x999999), true,
                      nc_fig_jprintf(j, "\xc2\xb1 amplitude %.4g", A)};
    h[1] = (nc_hline){-A, nc_rgb_hex(0x999999), true, NULL};
    *p = (nc_panel){.title = nc_fig_jprintf(j, "%s \xe2\x80\x94 residual ratio %.3g", pl->name,
                                            os->ratio),
                    .xlabel = "the token's largest input x", .ylabel = "normalized output y",
                    .x0 = -xm, .x1 = xm, .y0 = -1.15 * A, .y1 = 1.15 * A, .grid = true,
                    .curves = c, .ncurves = 2, .marks = m, .nmarks = os->points, .hlines = h,
                    .nhlines = 2};
    return !j->oom;
}

/* tanh-family: tanh(alpha x) for the spec's alphas (default 0.5, 1, 2). */
int nc_fig_tanh_panel(job *j, nc_panel *p, nc_err *err)
{
    const nc_fig_spec *spec = j->spec;
    static const double dflt_alphas[3] = {0.5, 1.0, 2.0};
    size_t na = spec->nalphas ? spec->nalphas : 3;
    const double *al = spec->nalphas ? spec->alphas : dflt_alphas;
    nc_curve *cv = nc_fig_jalloc(j, na * sizeof *cv);
    nc_hline *hl = nc_fig_jalloc(j, 2 * sizeof *hl);
    if (!cv || !hl)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    double amin = al[0];
    for (size_t k = 1; k < na; k++)
        amin = fmin(amin, al[k]);
    double xm = 4.0 / (amin > 0 ? amin : 1.0);
    for (size_t k = 0; k < na; k++) {
        double *xy = nc_fig_jalloc(j, 2 * CURVE_POINTS * sizeof *xy);
        if (!xy)
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        for (int i = 0; i < CURVE_POINTS; i++) {
            xy[i] = -xm + 2 * xm * i / (CURVE_POINTS - 1);
            xy[CURVE_POINTS + i] = tanh(al[k] * xy[i]);
        }
        cv[k] = (nc_curve){xy, xy + CURVE_POINTS, CURVE_POINTS, nc_palette((int)k + 1),
                           1.8, false, 0, 0, nc_fig_jprintf(j, "\xce\xb1 = %g", al[k])};
    }
    hl[0] = (nc_hline){1.0, nc_rgb_hex(0x999999), true, NULL};
    hl[1] = (nc_hline){-1.0, nc_rgb_hex(0x999999), true, NULL};
    *p = (nc_panel){.title = "tanh(\xce\xb1x): the squashing DyT applies",
                    .xlabel = "x", .ylabel = "tanh(\xce\xb1x)", .x0 = -xm, .x1 = xm,
                    .y0 = -1.25, .y1 = 1.25, .grid = true, .curves = cv, .ncurves = na,
                    .hlines = hl, .nhlines = 2};
    return 0;
}
