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
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plot/axes.h"
#include "plot/figure.h"
#include "plot/layout.h"

#define CURVE_POINTS 600 /* samples of a fitted curve across the panel */
#define TAIL_RATIO 4.0   /* largest |x| beyond this times the 99.5th percentile: tails on a
                            symmetric log axis */
#define QUANTILE_SAMPLE 32768 /* points (or bins) the percentile is taken over, at most */
#define DEFAULT_TOKENS 8
#define CONTEXT_CLOUD 0x999999 /* a cloud behind coloured points (by-token, by-channel) */
#define CMAP_LO 0.0            /* the part of viridis used for ordered colours: its pale */
#define CMAP_HI 0.85           /* yellow end left out, faint on white */
#define CMAP_LINE_HI 0.7       /* for thin lines, more of it */
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

/* " + 0.1" or " \u2212 0.1": a signed term of a formula, with a real minus,
 * 4 significant digits, never e-notation (nc_fmt_num). */
static const char *term(char *buf, size_t cap, double v)
{
    char num[48];
    snprintf(buf, cap, " %s %s", v < 0 ? "\xe2\x88\x92" : "+", nc_fmt_num(num, sizeof num, fabs(v), 4));
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

/* Whether j's panels are small (under 5 in wide): legends without
 * formulas, and without the entries the labels already give. */
static bool small(const job *j)
{
    return j->fig.width_in / j->fig.cols < 5.0;
}

/* A legend label naming the fit and its parameters: every parameter with
 * 4 significant digits, R^2 with 4 decimals, no e-notation. */
static char *fit_label(job *j, const nc_layer_result *r, int id, bool brief)
{
    const nc_fit_result *f = &r->fits[id];
    const double *p = f->params.p;
    char t1[64], t2[64], a[48], b[48];
    const char *name = nc_surrogate_get((nc_fit_id)id)->label;
    if (brief) /* a grid's shared legend: the name only (R^2 per layer in the metadata) */
        return nc_fig_jprintf(j, "%s", name);
    if (small(j)) /* no formula */
        return nc_fig_jprintf(j, "%s (R\xc2\xb2 %.4f)", name, f->r2);
    switch (id) {
    case NC_FIT_LINEAR:
        return nc_fig_jprintf(j, "affine: %s x%s (R\xc2\xb2 %.4f)", nc_fmt_num(a, sizeof a, p[0], 4),
                              term(t1, sizeof t1, p[1]), f->r2);
    case NC_FIT_DYT:
    case NC_FIT_DYT_THEORY:
        return nc_fig_jprintf(j, "%s: %s tanh(%s x)%s (R\xc2\xb2 %.4f)",
                              id == NC_FIT_DYT ? "DyT" : "DyT theory",
                              nc_fmt_num(a, sizeof a, p[1], 4), nc_fmt_num(b, sizeof b, p[0], 4),
                              p[2] != 0 ? term(t1, sizeof t1, p[2]) : "", f->r2);
    case NC_FIT_DYISRU:
    case NC_FIT_DYISRU_FREE:
    case NC_FIT_DYISRU_THEORY:
        return nc_fig_jprintf(j, "%s: %s x / \xe2\x88\x9a(x\xc2\xb2 + %s) (R\xc2\xb2 %.4f)",
                              id == NC_FIT_DYISRU_THEORY ? "DyISRU theory" : "DyISRU",
                              nc_fmt_num(a, sizeof a, p[1], 4), nc_fmt_num(b, sizeof b, p[0], 4),
                              f->r2);
    case NC_FIT_DERF:
        return nc_fig_jprintf(j, "Derf: %s erf(%s x%s)%s (R\xc2\xb2 %.4f)",
                              nc_fmt_num(a, sizeof a, p[2], 4), nc_fmt_num(b, sizeof b, p[0], 4),
                              term(t1, sizeof t1, p[1]), term(t2, sizeof t2, p[3]), f->r2);
    default:
        return nc_fig_jprintf(j, "%s (R\xc2\xb2 %.4f)", name, f->r2);
    }
}

/* How a fit's curve is drawn, so that curves that coincide stay apart:
 * affine dotted, DyT solid and wide under DyISRU solid and narrow, free
 * DyISRU and Derf dash-dotted, the theory curves dashed. */
static void fit_style(int id, nc_curve *c)
{
    c->color = nc_fit_color(id);
    switch (id) {
    case NC_FIT_LINEAR: c->dashed = NC_DOTTED, c->width_pt = 1.6; break;
    case NC_FIT_DYT: c->dashed = NC_SOLID, c->width_pt = 2.6; break;
    case NC_FIT_DYISRU: c->dashed = NC_SOLID, c->width_pt = 1.2; break;
    case NC_FIT_DYT_THEORY: c->dashed = NC_DASHED, c->width_pt = 1.5; break;
    case NC_FIT_DYISRU_THEORY: c->dashed = NC_DASHED, c->width_pt = 1.1; break;
    default: c->dashed = NC_DASHDOT, c->width_pt = 1.5; break;
    }
}

/* Samples f (or f' when deriv) of a fit across the panel's x range,
 * evenly in the axis' coordinate (symmetric-log axes too). */
static bool sample_curve(job *j, const nc_layer_result *r, int id, const nc_panel *p, bool deriv,
                         nc_curve *c)
{
    double *xy = nc_fig_jalloc(j, 2 * CURVE_POINTS * sizeof *xy);
    if (!xy)
        return false;
    double *x = xy, *y = xy + CURVE_POINTS;
    nc_scale xs = panel_xscale(p);
    double u0 = scale_u(&xs, p->x0), u1 = scale_u(&xs, p->x1);
    for (int k = 0; k < CURVE_POINTS; k++)
        x[k] = scale_v(&xs, u0 + (u1 - u0) * k / (CURVE_POINTS - 1));
    const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
    if (deriv)
        s->deriv(&r->fits[id].params, 0, x, CURVE_POINTS, y);
    else
        s->eval(&r->fits[id].params, 0, x, CURVE_POINTS, y);
    c->x = x;
    c->y = y;
    c->n = CURVE_POINTS;
    fit_style(id, c);
    return true;
}

static double max_abs(double a, double b)
{
    a = fabs(a), b = fabs(b);
    return a > b ? a : b;
}

/* The value below which a share q of the total weight of (a[k], w[k])
 * lies, k < n (n >= 1; a and w reordered): a weighted quickselect, O(n)
 * expected, the pivot the median of three (deterministic). */
static double weighted_select(double *a, double *w, size_t n, double q)
{
    double total = 0;
    for (size_t k = 0; k < n; k++)
        total += w[k];
    double want = q * total;
    size_t lo = 0, hi = n; /* the answer is in a[lo..hi) */
    while (hi - lo > 1) {
        double x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1];
        double piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        size_t i = lo, lt;
        double wl = 0;
        for (size_t k = lo; k < hi; k++) /* values below the pivot first */
            if (a[k] < piv) {
                double t = a[k], u = w[k];
                a[k] = a[i], w[k] = w[i];
                a[i] = t, w[i] = u;
                wl += u;
                i++;
            }
        lt = i;
        double we = 0;
        for (size_t k = lt; k < hi; k++) /* then the values equal to it */
            if (a[k] == piv) {
                double t = a[k], u = w[k];
                a[k] = a[i], w[k] = w[i];
                a[i] = t, w[i] = u;
                we += u;
                i++;
            }
        if (want < wl) {
            hi = lt;
        } else if (want <= wl + we) {
            return piv;
        } else {
            want -= wl + we;
            lo = i;
        }
    }
    return a[lo];
}

double nc_fig_abs_quantile(job *j, const nc_plan_layer *pl, double q)
{
    size_t idx = j->plan ? (size_t)(pl - j->plan->layers) : 0;
    bool cached = j->xq && j->plan && q == 0.995 && idx < j->plan->nlayers;
    if (cached && !isnan(j->xq[idx]))
        return j->xq[idx];
    const nc_fit_data *dt = &pl->result.data;
    double v = NAN;
    /* every stride-th point (or bin), at most QUANTILE_SAMPLE of them: it
     * only places an axis' break, and a layer's raw points are up to 2^18 */
    size_t stride = dt->n > QUANTILE_SAMPLE ? (dt->n + QUANTILE_SAMPLE - 1) / QUANTILE_SAMPLE : 1;
    size_t n = dt->n ? (dt->n + stride - 1) / stride : 0;
    double *a = n ? malloc(2 * n * sizeof *a) : NULL;
    if (a) {
        double *w = a + n;
        for (size_t k = 0; k < n; k++) {
            a[k] = fabs(dt->x[k * stride]);
            w[k] = dt->w ? dt->w[k * stride] : 1.0;
        }
        v = weighted_select(a, w, n, q);
        free(a);
    }
    if (cached)
        j->xq[idx] = v;
    return v;
}

/* The x axis of a layer's panels: the spec's limits, else every point,
 * symmetric: linear when the largest |x| is within TAIL_RATIO times the
 * 99.5th percentile of |x| (the bulk then fills the panel), else a
 * symmetric-log axis, linear over the bulk (to that percentile, rounded
 * up to 1, 2 or 5 times a power of ten) and logarithmic over the tails,
 * which take at most 44 % of each half: so that neither one extreme
 * point squeezes the bulk into a few pixels, nor are the tails (the
 * squashed extremes the DyT paper's Figure 4 shows) cut off. */
static void x_axis(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    if (j->spec->has_xlim) {
        p->x0 = j->spec->xlim[0];
        p->x1 = j->spec->xlim[1];
        return;
    }
    double a = max_abs(r->stats.min, r->stats.max);
    if (!(a > 0) || !isfinite(a))
        a = 1;
    p->x0 = -1.02 * a;
    p->x1 = 1.02 * a;
    double q = nc_fig_abs_quantile(j, pl, 0.995);
    if (!(q > 0) || a <= TAIL_RATIO * q)
        return;
    double lin = nc_nice_step(1.05 * q), decades = log10(1.02 * a / lin);
    p->xlin = lin;
    p->xdecade = fmin(1.0, 0.8 / decades); /* the tails: at most 0.8 / 1.8 of each half */
}

/* "input x", saying where a symmetric-log axis turns logarithmic. */
static const char *x_label(job *j, const nc_panel *p)
{
    char b[32];
    if (!(p->xlin > 0))
        return "input x";
    return nc_fig_jprintf(j, "input x (log beyond \xc2\xb1%s)", nc_fmt_num(b, sizeof b, p->xlin, 3));
}

/* The y axis: the spec's limits, or +-1.06 times the largest |y|. */
static void y_axis(job *j, const nc_layer_result *r, nc_panel *p)
{
    double b = 1.06 * max_abs(r->y_min, r->y_max);
    if (!(b > 0) || !isfinite(b))
        b = 1;
    p->y0 = j->spec->has_ylim ? j->spec->ylim[0] : -b;
    p->y1 = j->spec->has_ylim ? j->spec->ylim[1] : b;
}

static const char *norm_label(nc_norm_kind k)
{
    return k == NC_RMSNORM ? "RMSNorm" : "LayerNorm";
}

/* The input-vs-output panel of a layer: cloud, fitted curves, legend. */
bool nc_fig_scatter_panel(job *j, const nc_plan_layer *pl, nc_panel *p, bool brief)
{
    const nc_layer_result *r = &pl->result;
    x_axis(j, pl, p);
    y_axis(j, r, p);
    p->title = brief ? pl->name
                     : nc_fig_title(j, nc_fig_jprintf(j, "%s \xe2\x80\x94 %s, %zu \xc3\x97 %zu",
                                                  pl->name, norm_label(r->norm), r->N, r->d));
    p->xlabel = x_label(j, p);
    p->ylabel = nc_fig_jprintf(j, "%s(x)", norm_label(r->norm)); /* before the affine part */
    p->density_color = nc_rgb_hex(0x1f4e79);
    p->density_label = small(j) ? NULL : "all points"; /* the note counts them */
    char nbuf[32];
    p->note = nc_fig_jprintf(j, "%s points", thousands(nbuf, sizeof nbuf, r->points));
    nc_curve *c = nc_fig_jalloc(j, MAX_FIG_CURVES * sizeof *c);
    if (!c)
        return false;
    size_t n = 0;
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        if (!r->fits[id].ok || id == NC_FIT_DYT_PER_CHANNEL || !curve_wanted(j->spec, id, false))
            continue;
        if (!sample_curve(j, r, id, p, false, &c[n]))
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
    x_axis(j, pl, p);
    double inv_max = 1.0 / r->stats.scale_min;
    p->y0 = j->spec->has_ylim ? j->spec->ylim[0] : 0;
    p->y1 = j->spec->has_ylim ? j->spec->ylim[1]
            : isfinite(inv_max) && inv_max > 0 ? 1.06 * inv_max
                                               : 1;
    p->title = nc_fig_title(j, nc_fig_jprintf(j, "%s \xe2\x80\x94 diagonal of the %s Jacobian",
                                          pl->name, norm_label(r->norm)));
    p->xlabel = x_label(j, p);
    p->ylabel = "J\xe1\xb5\xa2\xe1\xb5\xa2 = \xe2\x88\x82y\xe1\xb5\xa2/\xe2\x88\x82x\xe1\xb5\xa2";
    p->density_color = nc_rgb_hex(0x1f4e79);
    p->density_label = small(j) ? NULL : "exact J\xe1\xb5\xa2\xe1\xb5\xa2"; /* the y label says */
    if (pl->has_jacobian)
        p->note = nc_fig_jprintf(j, "diagonal share %.4f, backprop error %.4f",
                                 pl->jacobian.diag_frobenius_share, pl->jacobian.backprop.err);
    nc_curve *c = nc_fig_jalloc(j, MAX_FIG_CURVES * sizeof *c);
    if (!c)
        return false;
    size_t n = 0;
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        if (!r->fits[id].ok || id == NC_FIT_DYT_PER_CHANNEL || id == NC_FIT_LINEAR ||
            !curve_wanted(j->spec, id, true))
            continue;
        if (!sample_curve(j, r, id, p, true, &c[n]))
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

/* Marks beyond the spec's axis limits, drawn at the frame as triangles
 * pointing out (x) or clipped away (y); the note counts them. */
static size_t clamp_marks(job *j, nc_panel *p, nc_mark *m, size_t nm)
{
    size_t beyond = 0;
    if (!j->spec->has_xlim && !j->spec->has_ylim)
        return 0;
    for (size_t k = 0; k < nm; k++) {
        bool out = m[k].y < p->y0 || m[k].y > p->y1;
        if (m[k].x > p->x1 || m[k].x < p->x0) {
            m[k].shape = m[k].x > p->x1 ? NC_MARKER_TRIANGLE : NC_MARKER_TRIANGLE_DOWN;
            m[k].x = m[k].x > p->x1 ? p->x1 : p->x0;
            out = true;
        }
        beyond += out;
    }
    return beyond;
}

/* by-token: the cloud in grey, and tokens spread over the range of token
 * scales drawn as points coloured by their scale on a sequential map
 * with a colour bar (each token's points lie on its line y = (x - mu_t) /
 * s_t). The token scale is ordinal: viridis, light for the largest, reads
 * as an order where eight categories merge. The axes are the scatter's:
 * every point, the tails on a symmetric log axis when they reach far. */
bool nc_fig_by_token_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    const nc_layer_tokens *tk = &r->tok;
    if (!nc_fig_scatter_panel(j, pl, p, true))
        return false;
    p->title = nc_fig_title(j, nc_fig_jprintf(j, "%s \xe2\x80\x94 points by token", pl->name));
    p->ncurves = 0; /* the paper's figure: tokens only */
    p->density_color = nc_rgb_hex(CONTEXT_CLOUD);
    p->density_label = "all tokens";
    size_t used, want = j->spec->tokens ? j->spec->tokens : DEFAULT_TOKENS;
    size_t *order = tokens_by_scale(j, tk, &used);
    size_t *pick = nc_fig_jalloc(j, (want ? want : 1) * sizeof *pick);
    double *row = nc_fig_jalloc(j, r->d * sizeof *row);
    size_t stride = r->d > TOKEN_POINTS ? (r->d + TOKEN_POINTS - 1) / TOKEN_POINTS : 1;
    size_t per = (r->d + stride - 1) / stride;
    nc_mark *m = nc_fig_jalloc(j, (want ? want : 1) * per * sizeof *m);
    nc_colorbar *cb = nc_fig_jalloc(j, sizeof *cb);
    if (!order || !pick || !row || !m || !cb)
        return false;
    size_t n = used ? pick_tokens(tk, order, used, want, pick) : 0, nm = 0;
    double slo = n ? 1.0 / tk->inv[order[pick[0]]] : 1, shi = n ? 1.0 / tk->inv[order[pick[n - 1]]] : 1;
    bool spread = n > 1 && shi > slo * (1 + 1e-9);
    for (size_t q = 0; q < n; q++) {
        size_t t = order[pick[q]], tok = tk->index ? tk->index[t] : t;
        double f = spread ? log(1.0 / tk->inv[t] / slo) / log(shi / slo) : 0.5;
        nc_rgb col = nc_colormap(CMAP_LO + (CMAP_HI - CMAP_LO) * f);
        nc_tensor_rows(pl->x, tok, 1, row);
        for (size_t i = 0; i < r->d; i += stride)
            m[nm++] = (nc_mark){row[i], (row[i] - tk->centre[t]) * tk->inv[t], col,
                                NC_MARKER_CIRCLE, 2.8, NULL};
    }
    size_t beyond = clamp_marks(j, p, m, nm);
    if (spread) {
        *cb = (nc_colorbar){slo, shi, shi / slo > 3, CMAP_LO, CMAP_HI, "token scale"};
        p->cbar = cb;
    }
    p->marks = m;
    p->nmarks = nm;
    if (stride > 1)
        p->note = nc_fig_jprintf(j, "%s\n%zu tokens, 1 channel in %zu", p->note, n, stride);
    if (beyond)
        p->note = nc_fig_jprintf(j, "%s\n%zu token points beyond the limits", p->note, beyond);
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
    p->title = nc_fig_title(j, nc_fig_jprintf(j, "%s \xe2\x80\x94 points by channel", pl->name));
    p->ncurves = 0; /* the paper's figure: channels only */
    p->density_color = nc_rgb_hex(CONTEXT_CLOUD);
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
    size_t beyond = clamp_marks(j, p, m, nm);
    p->marks = m;
    p->nmarks = nm;
    p->legend_title = stride > 1 ? nc_fig_jprintf(j, "channel (max |x|), 1 token in %zu", stride)
                                 : "channel (max |x|)";
    if (beyond)
        p->note = nc_fig_jprintf(j, "%s\n%zu channel points beyond the limits", p->note, beyond);
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
    char a[32], b[32], e1[32], e2[32], rb[32];
    nc_fmt_num(e1, sizeof e1, os->dyt.mean_abs_res, 4);
    nc_fmt_num(e2, sizeof e2, os->dyisru.mean_abs_res, 4);
    c[0] = (nc_curve){gx, gd, CURVE_POINTS, nc_fit_color(NC_FIT_DYT), 2.6, NC_SOLID, 0, 0,
                      small ? nc_fig_jprintf(j, "DyT (mean |res| %s)", e1)
                            : nc_fig_jprintf(j, "DyT: %s tanh(%s x), mean |residual| %s",
                                             nc_fmt_num(a, sizeof a, A, 4),
                                             nc_fmt_num(b, sizeof b, al, 4), e1)};
    c[1] = (nc_curve){gx, gi, CURVE_POINTS, nc_fit_color(NC_FIT_DYISRU), 1.2, NC_SOLID, 0, 0,
                      small ? nc_fig_jprintf(j, "DyISRU (mean |res| %s)", e2)
                            : nc_fig_jprintf(j, "DyISRU: %s x / \xe2\x88\x9a(x\xc2\xb2 + %s), "
                                                "mean |residual| %s",
                                             nc_fmt_num(a, sizeof a, A, 4),
                                             nc_fmt_num(b, sizeof b, Cc, 4), e2)};
    h[0] = (nc_hline){A, nc_rgb_hex(0x999999), NC_DASHED,
                      nc_fig_jprintf(j, "\xc2\xb1 amplitude %s", nc_fmt_num(a, sizeof a, A, 4))};
    h[1] = (nc_hline){-A, nc_rgb_hex(0x999999), NC_DASHED, NULL};
    *p = (nc_panel){.title = nc_fig_title(j, nc_fig_jprintf(j, "%s \xe2\x80\x94 residual ratio %s",
                                                        pl->name, nc_fmt_num(rb, sizeof rb,
                                                                             os->ratio, 3))),
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
        char ab[32];
        size_t rank = 0; /* coloured in the order of alpha, on the sequential map */
        for (size_t q = 0; q < na; q++)
            rank += al[q] < al[k] || (al[q] == al[k] && q < k);
        double f = na > 1 ? (double)rank / (double)(na - 1) : 0.5;
        cv[k] = (nc_curve){xy, xy + CURVE_POINTS, CURVE_POINTS,
                           nc_colormap(CMAP_LO + (CMAP_LINE_HI - CMAP_LO) * f),
                           1.8, (int)(k % 4), 0, 0,
                           nc_fig_jprintf(j, "\xce\xb1 = %s", nc_fmt_num(ab, sizeof ab, al[k], 4))};
    }
    hl[0] = (nc_hline){1.0, nc_rgb_hex(0x999999), NC_DASHED, NULL};
    hl[1] = (nc_hline){-1.0, nc_rgb_hex(0x999999), NC_DASHED, NULL};
    *p = (nc_panel){.title = nc_fig_title(j, "tanh(\xce\xb1x): the squashing DyT applies"),
                    .xlabel = "x", .ylabel = "tanh(\xce\xb1x)", .x0 = -xm, .x1 = xm,
                    .y0 = -1.25, .y1 = 1.25, .grid = true, .curves = cv, .ncurves = na,
                    .hlines = hl, .nhlines = 2};
    return 0;
}
