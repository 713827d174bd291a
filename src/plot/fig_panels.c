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
#include "plot/figure.h"

#define CURVE_POINTS 600 /* samples of a fitted curve across the panel */
#define DEFAULT_TOKENS 8
#define MAX_FIG_CURVES 16

/* The curve colour of a fit: one fixed colour per surrogate, theory curves
 * dashed in the colour of their family. */
static nc_rgb fit_color(int id)
{
    switch (id) {
    case NC_FIT_LINEAR: return nc_rgb_hex(0x555555);
    case NC_FIT_DYT:
    case NC_FIT_DYT_THEORY: return nc_palette(1);
    case NC_FIT_DYISRU:
    case NC_FIT_DYISRU_THEORY: return nc_palette(2);
    case NC_FIT_DYISRU_FREE: return nc_palette(3);
    case NC_FIT_DERF: return nc_palette(4);
    default: return nc_palette(5);
    }
}

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
    if (brief)
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
    c->color = fit_color(id);
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
    p->title = nc_fig_jprintf(j, "%s \xe2\x80\x94 %s, %zu \xc3\x97 %zu", pl->name,
                              norm_label(r->norm), r->N, r->d);
    p->xlabel = "input x";
    p->ylabel = nc_fig_jprintf(j, "%s(x), before the affine part", norm_label(r->norm));
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
                                 pl->jacobian.diag_frobenius_share, pl->jacobian.backprop.median);
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

/* by-token: tokens spread over the range of token scales, each drawn as
 * its points' line y = (x - mu_t) / s_t between its smallest and largest x. */
bool nc_fig_by_token_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    if (!nc_fig_scatter_panel(j, pl, p, true))
        return false;
    p->title = nc_fig_jprintf(j, "%s \xe2\x80\x94 points by token", pl->name);
    p->density_color = nc_rgb_hex(0xb0b0b0);
    p->density_label = "all tokens";
    size_t want = j->spec->tokens ? j->spec->tokens : DEFAULT_TOKENS;
    /* the used tokens ordered by scale (inv descending = scale ascending) */
    const nc_layer_tokens *tk = &r->tok;
    size_t used = 0;
    for (size_t t = 0; t < tk->nt; t++)
        used += tk->status[t] == NC_TOKEN_OK;
    if (used == 0)
        return true;
    size_t *order = nc_fig_jalloc(j, used * sizeof *order);
    if (!order)
        return false;
    used = 0;
    for (size_t t = 0; t < tk->nt; t++)
        if (tk->status[t] == NC_TOKEN_OK)
            order[used++] = t;
    /* shell sort by inv, descending (qsort would need a global for the key) */
    for (size_t gap = used / 3 + 1;; gap = gap / 3 + 1) {
        for (size_t a = gap; a < used; a++) {
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
    if (want > used)
        want = used;
    nc_curve *c = nc_fig_jalloc(j, (p->ncurves + want) * sizeof *c);
    double *row = nc_fig_jalloc(j, r->d * sizeof *row);
    if (!c || !row)
        return false;
    memcpy(c, p->curves, p->ncurves * sizeof *c);
    for (size_t k = 0; k < p->ncurves; k++)
        c[k].width_pt = 1.2;
    size_t n = p->ncurves;
    for (size_t q = 0; q < want; q++) {
        size_t t = order[want > 1 ? q * (used - 1) / (want - 1) : used / 2];
        size_t tok = tk->index ? tk->index[t] : t;
        nc_tensor_rows(pl->x, tok, 1, row);
        double lo = row[0], hi = row[0];
        for (size_t i = 1; i < r->d; i++) {
            lo = row[i] < lo ? row[i] : lo;
            hi = row[i] > hi ? row[i] : hi;
        }
        double *xy = nc_fig_jalloc(j, 4 * sizeof *xy);
        if (!xy)
            return false;
        xy[0] = lo;
        xy[1] = hi;
        xy[2] = (lo - tk->centre[t]) * tk->inv[t];
        xy[3] = (hi - tk->centre[t]) * tk->inv[t];
        c[n] = (nc_curve){.x = xy, .y = xy + 2, .n = 2, .width_pt = 1.4,
                          .color = nc_colormap(want > 1 ? 0.92 * q / (want - 1) : 0.5),
                          .label = nc_fig_jprintf(j, "token %zu: scale %.3g", tok,
                                                  1.0 / tk->inv[t])};
        n++;
    }
    p->curves = c;
    p->ncurves = n;
    p->legend_title = "fits and tokens (slope 1/scale)";
    return !j->oom;
}

/* Most marks drawn per highlighted channel (tokens taken with a stride). */
#define CHANNEL_MARKS 1500

/* by-channel: the cloud in grey, and the top outlier channels (by max |x|)
 * as coloured dots, one per token of a strided token sample, named in the
 * legend. Dots, not a mixed colour per pixel: an outlier channel must stay
 * visible where it crosses the dense core. */
bool nc_fig_by_channel_panel(job *j, const nc_plan_layer *pl, nc_panel *p, size_t k)
{
    const nc_layer_result *r = &pl->result;
    const nc_layer_tokens *tk = &r->tok;
    if (!nc_fig_scatter_panel(j, pl, p, true))
        return false;
    p->title = nc_fig_jprintf(j, "%s \xe2\x80\x94 points by channel", pl->name);
    p->density_color = nc_rgb_hex(0xb0b0b0);
    p->density_label = "other channels";
    size_t used = 0;
    for (size_t t = 0; t < tk->nt; t++)
        used += tk->status[t] == NC_TOKEN_OK;
    size_t stride = used > CHANNEL_MARKS ? (used + CHANNEL_MARKS - 1) / CHANNEL_MARKS : 1;
    nc_mark *m = nc_fig_jalloc(j, k * (CHANNEL_MARKS + 1) * sizeof *m);
    if (!m)
        return false;
    size_t nm = 0;
    for (size_t q = 0; q < k; q++) {
        size_t ch = r->stats.top[q].channel, seen = 0;
        nc_rgb col = nc_palette((int)q + 1);
        const char *label =
            nc_fig_jprintf(j, "channel %zu (max |x| %.3g)", ch, r->stats.top[q].max_abs);
        for (size_t t = 0; t < tk->nt; t++) {
            if (tk->status[t] != NC_TOKEN_OK || seen++ % stride)
                continue;
            double v;
            nc_tensor_elems(pl->x, (tk->index ? tk->index[t] : t) * r->d + ch, 1, &v);
            m[nm++] = (nc_mark){v, (v - tk->centre[t]) * tk->inv[t], col, NC_MARKER_CIRCLE, 2.6,
                                label};
            label = NULL; /* one legend entry per channel */
        }
    }
    p->marks = m;
    p->nmarks = nm;
    p->legend_title = stride > 1 ? nc_fig_jprintf(j, "fits and channels (1 token in %zu)", stride)
                                 : "fits and channels";
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
    c[0] = (nc_curve){gx, gd, CURVE_POINTS, fit_color(NC_FIT_DYT), 1.6, false, 0, 0,
                      nc_fig_jprintf(j, "DyT: %.4g tanh(%.4g x), mean |residual| %.3g", A, al,
                                     os->dyt.mean_abs_res)};
    c[1] = (nc_curve){gx, gi, CURVE_POINTS, fit_color(NC_FIT_DYISRU), 1.6, false, 0, 0,
                      nc_fig_jprintf(j, "DyISRU: %.4g x / \xe2\x88\x9a(x\xc2\xb2 + %.4g), "
                                        "mean |residual| %.3g", A, Cc, os->dyisru.mean_abs_res)};
    h[0] = (nc_hline){A, nc_rgb_hex(0x999999), true,
                      nc_fig_jprintf(j, "\xc2\xb1 amplitude %.4g", A)};
    h[1] = (nc_hline){-A, nc_rgb_hex(0x999999), true, NULL};
    *p = (nc_panel){.title = nc_fig_jprintf(j, "%s \xe2\x80\x94 outlier steps (DyT/DyISRU "
                                               "residual ratio %.3g)", pl->name, os->ratio),
                    .xlabel = "the token's largest input x", .ylabel = "its normalized output y",
                    .x0 = -xm, .x1 = xm, .y0 = -1.15 * A, .y1 = 1.15 * A, .grid = true,
                    .curves = c, .ncurves = 2, .marks = m, .nmarks = os->points, .hlines = h,
                    .nhlines = 2, .legend_pos = NC_LEGEND_LOWER_RIGHT};
    return !j->oom;
}

/* alpha-std: fitted alpha, alpha * gamma and the theory value against
 * 1/std(x), one mark each per layer, with two reference lines. */
int nc_fig_alpha_std_panel(job *j, const nc_plan *plan, const size_t *sel, size_t nsel,
                           nc_panel *p, nc_err *err)
{
    nc_mark *m = nc_fig_jalloc(j, 3 * nsel * sizeof *m);
    nc_curve *cv = nc_fig_jalloc(j, 4 * sizeof *cv);
    if (!m || !cv)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    double lo = INFINITY, hi = 0, ylo = INFINITY, yhi = 0;
    size_t nm = 0;
    double dsum = 0;
    for (size_t k = 0; k < nsel; k++) {
        const nc_layer_result *r = &plan->layers[sel[k]].result;
        const nc_fit_result *f = &r->fits[NC_FIT_DYT];
        double ix = 1.0 / r->stats.std, th = 1.0 / (r->stats.rho * sqrt((double)r->d));
        dsum += (double)r->d;
        double vals[3] = {f->ok ? f->params.p[0] : NAN,
                          f->ok ? f->params.p[0] * f->params.p[1] : NAN, th};
        const int shapes[3] = {NC_MARKER_CIRCLE, NC_MARKER_SQUARE, NC_MARKER_TRIANGLE};
        const char *labels[3] = {"fitted \xce\xb1 (DyT)", "\xce\xb1\xc2\xb7\xce\xb3 (slope at 0)",
                                 ("theory 1/(\xcf\x81\xe2\x88\x9a" "d)")};
        for (int s = 0; s < 3; s++) {
            if (!(vals[s] > 0) || !isfinite(vals[s]) || !(ix > 0) || !isfinite(ix))
                continue;
            m[nm++] = (nc_mark){ix, vals[s], nc_palette(s + 1), shapes[s], 7,
                                k == 0 ? labels[s] : NULL};
            ylo = fmin(ylo, vals[s]);
            yhi = fmax(yhi, vals[s]);
        }
        lo = fmin(lo, ix);
        hi = fmax(hi, ix);
    }
    if (nm == 0 || !(hi > 0))
        return nc_err_set(err, NC_EINVAL, "figure 'alpha-std': no layer has a DyT fit");
    /* log axes: 1/std spans decades across layers */
    p->xlog = p->ylog = true;
    p->x0 = lo / 1.6;
    p->x1 = hi * 1.6;
    p->y0 = ylo / 2;
    p->y1 = yhi * 2;
    /* reference lines: alpha = (1/std) / sqrt(d) (theory with rho = std) and
     * alpha = 1/std */
    double dm = dsum / (double)nsel;
    double *xy = nc_fig_jalloc(j, 8 * sizeof *xy);
    if (!xy)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    xy[0] = p->x0, xy[1] = p->x1, xy[2] = p->x0 / sqrt(dm), xy[3] = p->x1 / sqrt(dm);
    xy[4] = p->x0, xy[5] = p->x1, xy[6] = p->x0, xy[7] = p->x1;
    cv[0] = (nc_curve){xy, xy + 2, 2, nc_palette(3), 1.2, true, 0, 0,
                       nc_fig_jprintf(j, "\xce\xb1 = (1/std)/\xe2\x88\x9a" "d, d = %.0f", dm)};
    cv[1] = (nc_curve){xy + 4, xy + 6, 2, nc_rgb_hex(0x888888), 1.0, true, 0, 0,
                       "\xce\xb1 = 1/std"};
    p->curves = cv;
    p->ncurves = 2;
    p->marks = m;
    p->nmarks = nm;
    p->title = "DyT \xce\xb1 against 1/std(x) across layers";
    p->xlabel = "1/std(x)";
    p->ylabel = "\xce\xb1";
    p->grid = true;
    return 0;
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
                    .hlines = hl, .nhlines = 2, .legend_pos = NC_LEGEND_LOWER_RIGHT};
    return 0;
}
