/*
 * figures.c - the paper-style figure types (figures.h).
 *
 * Each requested figure becomes a "job": its panels, curves, marks and
 * strings (owned by the job), and the density rasters its panels need,
 * sized to their data areas by nc_figure_data_area. Then, layer by layer,
 * one streaming pass fills every raster requested for that layer; then the
 * jobs render into the output set.
 *
 * Legend: x input, y = (x - c_t) * inv_t the norm's output before the
 * affine part, J_ii the exact diagonal of its Jacobian (jacobian.h).
 */
#include "plot/figures.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jacobian.h"
#include "analysis/plan.h"
#include "io/dump.h"
#include "plot/axes.h"
#include "plot/density.h"
#include "plot/figure.h"
#include "util/outfile.h"
#include "util/version.h"

#define CURVE_POINTS 600 /* samples of a fitted curve across the panel */
#define DEFAULT_TOKENS 8
#define DEFAULT_CHANNELS 4
#define MAX_FIG_CURVES 16

static const char *const kind_names[NC_FIG_COUNT] = {
    "scatter", "scatter-grid", "by-token", "by-channel", "jacobian", "alpha-std", "tanh-family",
    "outlier-steps",
};

const char *nc_fig_kind_name(nc_fig_kind kind)
{
    return (unsigned)kind < NC_FIG_COUNT ? kind_names[kind] : "?";
}

bool nc_fig_kind_parse(const char *s, nc_fig_kind *kind)
{
    for (int k = 0; k < NC_FIG_COUNT; k++)
        if (strcmp(s, kind_names[k]) == 0) {
            *kind = (nc_fig_kind)k;
            return true;
        }
    return false;
}

bool nc_fig_legend_parse(const char *s, int *pos)
{
    static const struct {
        const char *name;
        int pos;
    } names[] = {{"auto", NC_LEGEND_AUTO},
                 {"none", NC_LEGEND_NONE},
                 {"upper right", NC_LEGEND_UPPER_RIGHT},
                 {"upper left", NC_LEGEND_UPPER_LEFT},
                 {"lower left", NC_LEGEND_LOWER_LEFT},
                 {"lower right", NC_LEGEND_LOWER_RIGHT},
                 {"right", NC_LEGEND_RIGHT},
                 {"center left", NC_LEGEND_CENTER_LEFT},
                 {"center right", NC_LEGEND_CENTER_RIGHT},
                 {"lower center", NC_LEGEND_LOWER_CENTER},
                 {"upper center", NC_LEGEND_UPPER_CENTER},
                 {"center", NC_LEGEND_CENTER}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(s, names[k].name) == 0) {
            *pos = names[k].pos;
            return true;
        }
    return false;
}

bool nc_fig_formats_parse(const char *s, unsigned *formats)
{
    unsigned f = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 3 && strncmp(s, "png", 3) == 0)
            f |= NC_FIGFMT_PNG;
        else if (n == 3 && strncmp(s, "pdf", 3) == 0)
            f |= NC_FIGFMT_PDF;
        else if (n == 3 && strncmp(s, "svg", 3) == 0)
            f |= NC_FIGFMT_SVG;
        else
            return false;
        s += n + (s[n] == ',');
    }
    if (!f)
        return false;
    *formats = f;
    return true;
}

void nc_fig_spec_clear(nc_fig_spec *spec)
{
    for (size_t k = 0; k < spec->nlayers; k++)
        free(spec->layers[k]);
    free(spec->layers);
    free(spec->name);
    memset(spec, 0, sizeof *spec);
}

/* ------------------------------------------------------------- jobs */

enum { R_XY, R_JAC };

typedef struct raster_req {
    int kind;
    size_t layer;               /* plan layer index */
    nc_density *d;              /* the final raster (owned by the job) */
} raster_req;

typedef struct job {
    const nc_fig_spec *spec;
    nc_figure fig;
    nc_panel panels[64];
    size_t npanels;
    void **owned; /* everything allocated for this job */
    size_t nowned, capowned;
    bool oom;
    char stem[192];
    char meta_params[2048];
    char meta_panels[1024];
    const char *meta[16];
} job;

static void *own(job *j, void *p)
{
    if (!p) {
        j->oom = true;
        return NULL;
    }
    if (j->nowned == j->capowned) {
        size_t cap = j->capowned ? 2 * j->capowned : 32;
        void **g = realloc(j->owned, cap * sizeof *g);
        if (!g) {
            free(p);
            j->oom = true;
            return NULL;
        }
        j->owned = g;
        j->capowned = cap;
    }
    j->owned[j->nowned++] = p;
    return p;
}

static void *jalloc(job *j, size_t n)
{
    return own(j, calloc(1, n ? n : 1));
}

__attribute__((format(printf, 2, 3))) static char *jprintf(job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = jalloc(j, (size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void job_free(job *j)
{
    for (size_t k = 0; k < j->nowned; k++)
        free(j->owned[k]);
    free(j->owned);
    for (size_t k = 0; k < j->npanels; k++)
        nc_density_free((nc_density *)j->panels[k].density);
}

/* A file stem from text: letters, digits, '.', '_' and '-' kept. */
static void sanitize(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    for (; *src && k + 1 < cap; src++)
        dst[k++] = (*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z') ||
                           (*src >= '0' && *src <= '9') || *src == '.' || *src == '-'
                       ? *src
                       : '_';
    dst[k] = '\0';
}

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
        return jprintf(j, "%s (R\xc2\xb2 %.4f)", nc_surrogate_get((nc_fit_id)id)->label, f->r2);
    switch (id) {
    case NC_FIT_LINEAR:
        return jprintf(j, "affine: %.4g x%s (R\xc2\xb2 %.4f)", p[0], term(t1, sizeof t1, p[1]),
                       f->r2);
    case NC_FIT_DYT:
    case NC_FIT_DYT_THEORY:
        return jprintf(j, "%s: %.4g tanh(%.4g x)%s (R\xc2\xb2 %.4f)",
                       id == NC_FIT_DYT ? "DyT" : "DyT theory", p[1], p[0],
                       p[2] != 0 ? term(t1, sizeof t1, p[2]) : "", f->r2);
    case NC_FIT_DYISRU:
    case NC_FIT_DYISRU_FREE:
    case NC_FIT_DYISRU_THEORY:
        return jprintf(j, "%s: %.4g x / \xe2\x88\x9a(x\xc2\xb2 + %.4g) (R\xc2\xb2 %.4f)",
                       id == NC_FIT_DYISRU_THEORY ? "DyISRU theory" : "DyISRU", p[1], p[0], f->r2);
    case NC_FIT_DERF:
        return jprintf(j, "Derf: %.4g erf(%.4g x%s)%s (R\xc2\xb2 %.4f)", p[2], p[0],
                       term(t1, sizeof t1, p[1]), term(t2, sizeof t2, p[3]), f->r2);
    default:
        return jprintf(j, "%s (R\xc2\xb2 %.4f)", nc_surrogate_get((nc_fit_id)id)->label, f->r2);
    }
}

/* Samples f (or f' when deriv) of a fit across [x0, x1]. */
static bool sample_curve(job *j, const nc_layer_result *r, int id, double x0, double x1,
                         bool deriv, nc_curve *c)
{
    double *xy = jalloc(j, 2 * CURVE_POINTS * sizeof *xy);
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
static bool scatter_panel(job *j, const nc_plan_layer *pl, nc_panel *p, bool brief)
{
    const nc_layer_result *r = &pl->result;
    x_range(r, &p->x0, &p->x1);
    double b = 1.06 * max_abs(r->y_min, r->y_max);
    if (!(b > 0) || !isfinite(b))
        b = 1;
    p->y0 = -b;
    p->y1 = b;
    p->title = jprintf(j, "%s \xe2\x80\x94 %s, %zu \xc3\x97 %zu", pl->name, norm_label(r->norm),
                       r->N, r->d);
    p->xlabel = "input x";
    p->ylabel = jprintf(j, "%s(x), before the affine part", norm_label(r->norm));
    p->density_color = nc_rgb_hex(0x1f4e79);
    p->density_label = "all points";
    char nbuf[32];
    p->note = jprintf(j, "%s points", thousands(nbuf, sizeof nbuf, r->points));
    nc_curve *c = jalloc(j, MAX_FIG_CURVES * sizeof *c);
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
static bool jacobian_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    x_range(r, &p->x0, &p->x1);
    double inv_max = 1.0 / r->stats.scale_min;
    p->y0 = 0;
    p->y1 = isfinite(inv_max) && inv_max > 0 ? 1.06 * inv_max : 1;
    p->title = jprintf(j, "%s \xe2\x80\x94 diagonal of the %s Jacobian", pl->name,
                       norm_label(r->norm));
    p->xlabel = "input x";
    p->ylabel = "J\xe1\xb5\xa2\xe1\xb5\xa2 = \xe2\x88\x82y\xe1\xb5\xa2/\xe2\x88\x82x\xe1\xb5\xa2";
    p->density_color = nc_rgb_hex(0x1f4e79);
    p->density_label = "exact J\xe1\xb5\xa2\xe1\xb5\xa2";
    if (pl->has_jacobian)
        p->note = jprintf(j, "diagonal share %.4f, backprop error %.3f",
                          pl->jacobian.diag_frobenius_share, pl->jacobian.backprop.median);
    nc_curve *c = jalloc(j, MAX_FIG_CURVES * sizeof *c);
    if (!c)
        return false;
    size_t n = 0;
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        if (!r->fits[id].ok || id == NC_FIT_DYT_PER_CHANNEL || id == NC_FIT_LINEAR ||
            !curve_wanted(j->spec, id, true))
            continue;
        if (!sample_curve(j, r, id, p->x0, p->x1, true, &c[n]))
            return false;
        c[n].label = jprintf(j, "%s\xe2\x80\xb2(x)", nc_surrogate_get((nc_fit_id)id)->label);
        n++;
    }
    p->curves = c;
    p->ncurves = n;
    p->grid = true;
    return !j->oom;
}

/* by-token: tokens spread over the range of token scales, each drawn as
 * its points' line y = (x - mu_t) / s_t between its smallest and largest x. */
static bool by_token_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_layer_result *r = &pl->result;
    if (!scatter_panel(j, pl, p, true))
        return false;
    p->title = jprintf(j, "%s \xe2\x80\x94 points by token", pl->name);
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
    size_t *order = jalloc(j, used * sizeof *order);
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
    nc_curve *c = jalloc(j, (p->ncurves + want) * sizeof *c);
    double *row = jalloc(j, r->d * sizeof *row);
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
        double *xy = jalloc(j, 4 * sizeof *xy);
        if (!xy)
            return false;
        xy[0] = lo;
        xy[1] = hi;
        xy[2] = (lo - tk->centre[t]) * tk->inv[t];
        xy[3] = (hi - tk->centre[t]) * tk->inv[t];
        c[n] = (nc_curve){.x = xy, .y = xy + 2, .n = 2, .width_pt = 1.4,
                          .color = nc_colormap(want > 1 ? 0.92 * q / (want - 1) : 0.5),
                          .label = jprintf(j, "token %zu: scale %.3g", tok, 1.0 / tk->inv[t])};
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
static bool by_channel_panel(job *j, const nc_plan_layer *pl, nc_panel *p, size_t k)
{
    const nc_layer_result *r = &pl->result;
    const nc_layer_tokens *tk = &r->tok;
    if (!scatter_panel(j, pl, p, true))
        return false;
    p->title = jprintf(j, "%s \xe2\x80\x94 points by channel", pl->name);
    p->density_color = nc_rgb_hex(0xb0b0b0);
    p->density_label = "other channels";
    size_t used = 0;
    for (size_t t = 0; t < tk->nt; t++)
        used += tk->status[t] == NC_TOKEN_OK;
    size_t stride = used > CHANNEL_MARKS ? (used + CHANNEL_MARKS - 1) / CHANNEL_MARKS : 1;
    nc_mark *m = jalloc(j, k * (CHANNEL_MARKS + 1) * sizeof *m);
    if (!m)
        return false;
    size_t nm = 0;
    for (size_t q = 0; q < k; q++) {
        size_t ch = r->stats.top[q].channel, seen = 0;
        nc_rgb col = nc_palette((int)q + 1);
        const char *label = jprintf(j, "channel %zu (max |x| %.3g)", ch, r->stats.top[q].max_abs);
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
    p->legend_title = stride > 1 ? jprintf(j, "fits and channels (1 token in %zu)", stride)
                                 : "fits and channels";
    return !j->oom;
}

/* outlier-steps: the points, both fixed-amplitude fits, the bounds. */
static bool outlier_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    const nc_outlier_steps *os = &pl->outlier_steps;
    double xm = 0;
    for (size_t k = 0; k < os->points; k++)
        xm = fmax(xm, fabs(os->x[k]));
    xm *= 1.1;
    nc_mark *m = jalloc(j, os->points * sizeof *m);
    nc_curve *c = jalloc(j, 2 * sizeof *c);
    nc_hline *h = jalloc(j, 2 * sizeof *h);
    double *xy = jalloc(j, 3 * CURVE_POINTS * sizeof *xy);
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
                      jprintf(j, "DyT: %.4g tanh(%.4g x), mean |residual| %.3g", A, al,
                              os->dyt.mean_abs_res)};
    c[1] = (nc_curve){gx, gi, CURVE_POINTS, fit_color(NC_FIT_DYISRU), 1.6, false, 0, 0,
                      jprintf(j, "DyISRU: %.4g x / \xe2\x88\x9a(x\xc2\xb2 + %.4g), mean |residual| %.3g",
                              A, Cc, os->dyisru.mean_abs_res)};
    h[0] = (nc_hline){A, nc_rgb_hex(0x999999), true, jprintf(j, "\xc2\xb1 amplitude %.4g", A)};
    h[1] = (nc_hline){-A, nc_rgb_hex(0x999999), true, NULL};
    *p = (nc_panel){.title = jprintf(j, "%s \xe2\x80\x94 outlier steps (DyT/DyISRU residual "
                                        "ratio %.3g)", pl->name, os->ratio),
                    .xlabel = "the token's largest input x", .ylabel = "its normalized output y",
                    .x0 = -xm, .x1 = xm, .y0 = -1.15 * A, .y1 = 1.15 * A, .grid = true,
                    .curves = c, .ncurves = 2, .marks = m, .nmarks = os->points, .hlines = h,
                    .nhlines = 2, .legend_pos = NC_LEGEND_LOWER_RIGHT};
    return !j->oom;
}

/* ---------------------------------------------------------- rasters */

typedef struct raster_ctx {
    const nc_plan_layer *pl;
    raster_req *req;
    size_t nreq;
    pthread_mutex_t lock;
    nc_density **thread_sets[NC_SHARDS]; /* per thread: one density per request */
    size_t nsets;
    bool oom;
} raster_ctx;

typedef struct raster_scratch {
    nc_density **set; /* this thread's densities (NULL until first use) */
    double y[];       /* [d] */
} raster_scratch;

static nc_density **thread_set(raster_ctx *ctx, raster_scratch *sc)
{
    if (sc->set)
        return sc->set;
    nc_density **set = calloc(ctx->nreq, sizeof *set);
    nc_err e = {0};
    bool ok = set != NULL;
    for (size_t k = 0; ok && k < ctx->nreq; k++) {
        const nc_density *d = ctx->req[k].d;
        ok = nc_density_alloc(d->w, d->h, d->x0, d->x1, d->y0, d->y1, false, &set[k], &e) == 0;
    }
    pthread_mutex_lock(&ctx->lock);
    if (!ok || ctx->nsets == NC_SHARDS) {
        ctx->oom = true;
        ok = false;
    } else {
        ctx->thread_sets[ctx->nsets++] = set;
    }
    pthread_mutex_unlock(&ctx->lock);
    if (!ok) {
        for (size_t k = 0; set && k < ctx->nreq; k++)
            nc_density_free(set[k]);
        free(set);
        return NULL;
    }
    return sc->set = set;
}

static void raster_block(void *vctx, int shard, size_t t0, size_t nt, const double *rows,
                         void *scratch)
{
    (void)shard;
    raster_ctx *ctx = vctx;
    const nc_layer_result *r = &ctx->pl->result;
    const nc_layer_tokens *tk = &r->tok;
    raster_scratch *sc = scratch;
    nc_density **set = thread_set(ctx, sc);
    if (!set)
        return;
    const size_t d = r->d;
    const double jc = r->norm == NC_LAYERNORM ? 1.0 - 1.0 / (double)d : 1.0;
    const double invd = 1.0 / (double)d;
    double *y = sc->y;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (tk->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double c = tk->centre[t], inv = tk->inv[t];
        for (size_t i = 0; i < d; i++)
            y[i] = (x[i] - c) * inv;
        for (size_t q = 0; q < ctx->nreq; q++) {
            nc_density *dn = set[q];
            if (ctx->req[q].kind == R_XY) {
                for (size_t i = 0; i < d; i++)
                    nc_density_add(dn, x[i], y[i]);
            } else {
                /* J_ii = inv (1 - 1/d - y_i^2/d) (LayerNorm), inv (1 - y_i^2/d) (RMSNorm) */
                for (size_t i = 0; i < d; i++)
                    nc_density_add(dn, x[i], inv * (jc - y[i] * y[i] * invd));
            }
        }
    }
}

static int raster_pass(const nc_plan_layer *pl, raster_req *req, size_t nreq, int threads,
                       nc_err *err)
{
    raster_ctx ctx = {.pl = pl, .req = req, .nreq = nreq};
    pthread_mutex_init(&ctx.lock, NULL);
    nc_pass pass = nc_layer_pass(&pl->result, pl->x, threads, NULL);
    pass.scratch_bytes = sizeof(raster_scratch) + pl->result.d * sizeof(double);
    int rc = nc_pass_run(&pass, raster_block, &ctx, err);
    if (!rc && ctx.oom)
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the figure rasters", pl->name);
    /* merge the threads' rasters; counts are integers, so the order of the
     * merge does not matter for them */
    for (size_t s = 0; s < ctx.nsets; s++) {
        for (size_t q = 0; q < nreq; q++) {
            if (!rc)
                nc_density_merge(req[q].d, ctx.thread_sets[s][q]);
            nc_density_free(ctx.thread_sets[s][q]);
        }
        free(ctx.thread_sets[s]);
    }
    pthread_mutex_destroy(&ctx.lock);
    return rc;
}

/* ----------------------------------------------------------- driver */

static double dflt(double v, double d)
{
    return v > 0 ? v : d;
}

static bool layer_selected(const nc_fig_spec *spec, const char *name)
{
    if (spec->nlayers == 0)
        return true;
    for (size_t k = 0; k < spec->nlayers; k++)
        if (nc_glob_match(spec->layers[k], name))
            return true;
    return false;
}

typedef struct ctx {
    const nc_plan *plan;
    job **jobs; /* each allocated once: a job's figure points into itself */
    size_t njobs, capjobs;
    raster_req *req;
    size_t nreq, capreq;
} ctx;

static job *new_job(ctx *c, const nc_fig_spec *spec, nc_err *err)
{
    if (c->njobs == c->capjobs) {
        size_t cap = c->capjobs ? 2 * c->capjobs : 8;
        job **g = realloc(c->jobs, cap * sizeof *g);
        if (!g) {
            nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            return NULL;
        }
        c->jobs = g;
        c->capjobs = cap;
    }
    job *j = calloc(1, sizeof *j);
    if (!j) {
        nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        return NULL;
    }
    c->jobs[c->njobs++] = j;
    j->spec = spec;
    j->fig.dpi = dflt(spec->dpi, 150);
    return j;
}

static int add_req(ctx *c, int kind, size_t layer, nc_density *d, nc_err *err)
{
    if (c->nreq == c->capreq) {
        size_t cap = c->capreq ? 2 * c->capreq : 16;
        raster_req *g = realloc(c->req, cap * sizeof *g);
        if (!g)
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        c->req = g;
        c->capreq = cap;
    }
    c->req[c->nreq++] = (raster_req){kind, layer, d};
    return 0;
}

/* Allocates the raster of panel k to its data area and requests it. */
static int request_raster(ctx *c, job *j, size_t k, int kind, size_t layer, nc_err *err)
{
    int w, h;
    int rc = nc_figure_data_area(&j->fig, k, &w, &h, err);
    if (rc)
        return rc;
    nc_panel *p = &j->panels[k];
    nc_density *d;
    if ((rc = nc_density_alloc(w, h, p->x0, p->x1, p->y0, p->y1, false, &d, err)))
        return rc;
    p->density = d;
    return add_req(c, kind, layer, d, err);
}

static void set_grid(job *j, size_t n, int cols, double w_in, double h_in, const nc_fig_spec *s)
{
    if (cols <= 0)
        cols = n < 3 ? (int)n : 3;
    int rows = (int)((n + (size_t)cols - 1) / (size_t)cols);
    j->fig.rows = rows;
    j->fig.cols = cols;
    j->fig.width_in = dflt(s->width_in, w_in * cols);
    j->fig.height_in = dflt(s->height_in, h_in * rows + (n > 1 ? 0.3 : 0.0)); /* + title */
    j->fig.panels = j->panels;
    j->fig.npanels = n;
}

static const char *fit_params_text(const nc_layer_result *r, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int id = 0; id < NC_FIT_COUNT && used < cap; id++) {
        const nc_fit_result *f = &r->fits[id];
        if (!f->ok)
            continue;
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        int w = snprintf(buf + used, cap - used, "%s%s:", used ? "; " : "", s->name);
        for (int q = 0; q < s->nparams && w > 0 && used + (size_t)w < cap; q++) {
            int w2 = snprintf(buf + used + w, cap - used - (size_t)w, " %s=%.6g", s->param[q],
                              f->params.p[q]);
            w = w2 > 0 ? w + w2 : w;
        }
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return buf;
}

static int build_jobs(ctx *c, const nc_fig_spec *spec, nc_err *err)
{
    const nc_plan *plan = c->plan;
    size_t sel[64], nsel = 0;
    for (size_t k = 0; k < plan->nlayers && nsel < 64; k++)
        if (plan->layers[k].result.points > 0 && layer_selected(spec, plan->layers[k].name))
            sel[nsel++] = k;
    bool per_layer = spec->kind == NC_FIG_SCATTER || spec->kind == NC_FIG_BY_TOKEN ||
                     spec->kind == NC_FIG_BY_CHANNEL || spec->kind == NC_FIG_JACOBIAN ||
                     spec->kind == NC_FIG_OUTLIER_STEPS;
    if (spec->kind == NC_FIG_OUTLIER_STEPS) { /* only the layers that ran the experiment */
        size_t m = 0;
        for (size_t k = 0; k < nsel; k++)
            if (plan->layers[sel[k]].has_outlier_steps)
                sel[m++] = sel[k];
        nsel = m;
        if (nsel == 0)
            return nc_err_set(err, NC_EINVAL, "figure 'outlier-steps': no layer ran the "
                              "outlier-steps experiment (\"experiment\": \"outlier-steps\", or "
                              "the synth preset \"outlier-steps\")");
    }
    if (nsel == 0 && spec->kind != NC_FIG_TANH_FAMILY)
        return nc_err_set(err, NC_EINVAL, "figure '%s': no layer with data matches %s%s",
                          nc_fig_kind_name(spec->kind), spec->nlayers ? "'" : "",
                          spec->nlayers ? spec->layers[0] : "(all layers)");
    size_t nj = per_layer ? nsel : 1;
    for (size_t q = 0; q < nj; q++) {
        job *j = new_job(c, spec, err);
        if (!j)
            return NC_ENOMEM;
        const nc_plan_layer *pl = per_layer ? &plan->layers[sel[q]] : NULL;
        char base[160];
        sanitize(base, sizeof base, pl ? pl->name : "");
        const char *kname = nc_fig_kind_name(spec->kind);
        if (spec->name && per_layer && nsel > 1)
            snprintf(j->stem, sizeof j->stem, "%s_%s", spec->name, base);
        else if (spec->name)
            snprintf(j->stem, sizeof j->stem, "%s", spec->name);
        else if (pl)
            snprintf(j->stem, sizeof j->stem, "%s_%s", base, kname);
        else
            snprintf(j->stem, sizeof j->stem, "%s", kname);
        for (char *s = j->stem; *s; s++)
            *s = *s == '-' ? '_' : *s;
        int rc = 0;
        switch (spec->kind) {
        case NC_FIG_SCATTER:
        case NC_FIG_JACOBIAN: {
            bool jac = spec->kind == NC_FIG_JACOBIAN;
            set_grid(j, 1, 1, 7.0, 5.2, spec);
            if (!(jac ? jacobian_panel(j, pl, &j->panels[0]) : scatter_panel(j, pl, &j->panels[0], false)))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            rc = request_raster(c, j, 0, jac ? R_JAC : R_XY, sel[q], err);
            break;
        }
        case NC_FIG_BY_TOKEN:
            set_grid(j, 1, 1, 7.0, 5.2, spec);
            if (!by_token_panel(j, pl, &j->panels[0]))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            rc = request_raster(c, j, 0, R_XY, sel[q], err);
            break;
        case NC_FIG_BY_CHANNEL: {
            size_t k = spec->channels ? spec->channels : DEFAULT_CHANNELS;
            if (k > pl->result.stats.ntop)
                k = pl->result.stats.ntop;
            set_grid(j, 1, 1, 7.0, 5.2, spec);
            if (!by_channel_panel(j, pl, &j->panels[0], k))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            rc = request_raster(c, j, 0, R_XY, sel[q], err);
            break;
        }
        case NC_FIG_SCATTER_GRID:
            set_grid(j, nsel, spec->cols, 4.3, 3.5, spec);
            for (size_t k = 0; k < nsel; k++)
                if (!scatter_panel(j, &plan->layers[sel[k]], &j->panels[k], true))
                    return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = nsel;
            j->fig.title = "Input vs output of each normalization layer";
            for (size_t k = 0; k < nsel && !rc; k++)
                rc = request_raster(c, j, k, R_XY, sel[k], err);
            break;
        case NC_FIG_ALPHA_STD: {
            set_grid(j, 1, 1, 6.4, 4.8, spec);
            nc_panel *p = &j->panels[0];
            nc_mark *m = jalloc(j, 3 * nsel * sizeof *m);
            nc_curve *cv = jalloc(j, 4 * sizeof *cv);
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
                                         "theory 1/(\xcf\x81\xe2\x88\x9a" "d)"};
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
            double *xy = jalloc(j, 8 * sizeof *xy);
            if (!xy)
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            xy[0] = p->x0, xy[1] = p->x1, xy[2] = p->x0 / sqrt(dm), xy[3] = p->x1 / sqrt(dm);
            xy[4] = p->x0, xy[5] = p->x1, xy[6] = p->x0, xy[7] = p->x1;
            cv[0] = (nc_curve){xy, xy + 2, 2, nc_palette(3), 1.2, true, 0, 0,
                               jprintf(j, "\xce\xb1 = (1/std)/\xe2\x88\x9a" "d, d = %.0f", dm)};
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
            j->npanels = 1;
            break;
        }
        case NC_FIG_TANH_FAMILY: {
            set_grid(j, 1, 1, 6.0, 4.2, spec);
            nc_panel *p = &j->panels[0];
            static const double dflt_alphas[3] = {0.5, 1.0, 2.0};
            size_t na = spec->nalphas ? spec->nalphas : 3;
            const double *al = spec->nalphas ? spec->alphas : dflt_alphas;
            nc_curve *cv = jalloc(j, na * sizeof *cv);
            nc_hline *hl = jalloc(j, 2 * sizeof *hl);
            if (!cv || !hl)
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            double amin = al[0];
            for (size_t k = 1; k < na; k++)
                amin = fmin(amin, al[k]);
            double xm = 4.0 / (amin > 0 ? amin : 1.0);
            for (size_t k = 0; k < na; k++) {
                double *xy = jalloc(j, 2 * CURVE_POINTS * sizeof *xy);
                if (!xy)
                    return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
                for (int i = 0; i < CURVE_POINTS; i++) {
                    xy[i] = -xm + 2 * xm * i / (CURVE_POINTS - 1);
                    xy[CURVE_POINTS + i] = tanh(al[k] * xy[i]);
                }
                cv[k] = (nc_curve){xy, xy + CURVE_POINTS, CURVE_POINTS, nc_palette((int)k + 1),
                                   1.8, false, 0, 0, jprintf(j, "\xce\xb1 = %g", al[k])};
            }
            hl[0] = (nc_hline){1.0, nc_rgb_hex(0x999999), true, NULL};
            hl[1] = (nc_hline){-1.0, nc_rgb_hex(0x999999), true, NULL};
            *p = (nc_panel){.title = "tanh(\xce\xb1x): the squashing DyT applies",
                            .xlabel = "x", .ylabel = "tanh(\xce\xb1x)", .x0 = -xm, .x1 = xm,
                            .y0 = -1.25, .y1 = 1.25, .grid = true, .curves = cv, .ncurves = na,
                            .hlines = hl, .nhlines = 2, .legend_pos = NC_LEGEND_LOWER_RIGHT};
            j->npanels = 1;
            break;
        }
        case NC_FIG_OUTLIER_STEPS:
            set_grid(j, 1, 1, 6.4, 4.8, spec);
            if (!outlier_panel(j, pl, &j->panels[0]))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            break;
        default:
            break;
        }
        if (rc)
            return rc;
        if (j->oom)
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        j->fig.npanels = j->npanels;
        if (spec->legend)
            for (size_t k = 0; k < j->npanels; k++)
                j->panels[k].legend_pos = spec->legend;
    }
    return 0;
}

static int render_job(job *j, const char *command, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, const nc_plan *plan, nc_err *err)
{
    /* metadata: tool, command, layers and their fitted parameters */
    char layers[512] = "";
    size_t used = 0;
    j->meta_params[0] = '\0';
    size_t mp = 0;
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *pl = &plan->layers[k];
        bool in = false;
        for (size_t p = 0; p < j->npanels; p++)
            in = in || (j->panels[p].title && strncmp(j->panels[p].title, pl->name,
                                                       strlen(pl->name)) == 0);
        if (!in && j->spec->kind != NC_FIG_ALPHA_STD)
            continue;
        int w = snprintf(layers + used, sizeof layers - used, "%s%s", used ? ", " : "", pl->name);
        used = w > 0 && used + (size_t)w < sizeof layers ? used + (size_t)w : used;
        char buf[1024];
        fit_params_text(&pl->result, buf, sizeof buf);
        w = snprintf(j->meta_params + mp, sizeof j->meta_params - mp, "%s%s: %s",
                     mp ? " | " : "", pl->name, buf);
        mp = w > 0 && mp + (size_t)w < sizeof j->meta_params ? mp + (size_t)w : mp;
    }
    int m = 0;
    j->meta[m++] = "Software";
    j->meta[m++] = NC_TOOL_NAME " " NC_VERSION;
    j->meta[m++] = "Title";
    j->meta[m++] = j->fig.title ? j->fig.title : (j->panels[0].title ? j->panels[0].title : "");
    j->meta[m++] = "Command";
    j->meta[m++] = command ? command : "";
    j->meta[m++] = "Layer";
    j->meta[m++] = layers;
    j->meta[m++] = "Parameters";
    j->meta[m++] = j->meta_params;
    j->meta[m++] = "Figure";
    j->meta[m++] = nc_fig_kind_name(j->spec->kind);
    /* where each panel's data area is in the PNG, and the data range it
     * shows: enough to read values off the picture (tests do) */
    size_t pu = 0;
    j->meta_panels[0] = '\0';
    for (size_t k = 0; k < j->npanels; k++) {
        nc_rect a;
        int rc = nc_figure_layout(&j->fig, k, &a, err);
        if (rc)
            return rc;
        const nc_panel *p = &j->panels[k];
        int w = snprintf(j->meta_panels + pu, sizeof j->meta_panels - pu,
                         "%spanel %zu: area %d %d %d %d; x %.17g %.17g%s; y %.17g %.17g%s",
                         k ? "\n" : "", k, a.x, a.y, a.w, a.h, p->x0, p->x1,
                         p->xlog ? " log" : "", p->y0, p->y1, p->ylog ? " log" : "");
        if (w > 0 && pu + (size_t)w < sizeof j->meta_panels)
            pu += (size_t)w;
    }
    j->meta[m++] = "Panels";
    j->meta[m++] = j->meta_panels;
    j->meta[m] = NULL;
    j->fig.meta = j->meta;

    unsigned formats = j->spec->formats ? j->spec->formats : NC_FIGFMT_PNG;
    static const struct {
        unsigned bit;
        nc_format fmt;
        const char *ext;
    } fmts[3] = {{NC_FIGFMT_PNG, NC_FMT_PNG, "png"},
                 {NC_FIGFMT_PDF, NC_FMT_PDF, "pdf"},
                 {NC_FIGFMT_SVG, NC_FMT_SVG, "svg"}};
    for (int f = 0; f < 3; f++) {
        if (!(formats & fmts[f].bit))
            continue;
        nc_membuf mb = {0};
        nc_sink sink = nc_membuf_sink(&mb);
        int rc = nc_figure_render(&j->fig, fmts[f].fmt, &sink, err);
        char name[256];
        snprintf(name, sizeof name, "%s.%s", j->stem, fmts[f].ext);
        if (!rc)
            rc = nc_outset_add(set, name, mb.data, mb.len, err);
        nc_membuf_free(&mb);
        if (rc)
            return rc;
        if (files && *nfiles < cap && (files[*nfiles] = strdup(name)))
            (*nfiles)++;
    }
    return 0;
}

int nc_figures_render(const struct nc_plan *plan, const nc_fig_spec *specs, size_t n,
                      const char *command, int threads, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, nc_err *err)
{
    ctx c = {.plan = plan};
    int rc = 0;
    if (nfiles)
        *nfiles = 0;
    for (size_t k = 0; k < n && !rc; k++)
        rc = build_jobs(&c, &specs[k], err);
    /* one raster pass per layer, filling every raster requested for it */
    for (size_t l = 0; l < plan->nlayers && !rc; l++) {
        size_t m = 0;
        for (size_t q = 0; q < c.nreq; q++)
            if (c.req[q].layer == l)
                m++;
        if (m == 0)
            continue;
        raster_req *mine = malloc(m * sizeof *mine);
        if (!mine) {
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            break;
        }
        m = 0;
        for (size_t q = 0; q < c.nreq; q++)
            if (c.req[q].layer == l)
                mine[m++] = c.req[q];
        rc = raster_pass(&plan->layers[l], mine, m, threads, err);
        free(mine);
    }
    for (size_t k = 0; k < c.njobs && !rc; k++)
        rc = render_job(c.jobs[k], command, set, files, cap, nfiles, plan, err);
    for (size_t k = 0; k < c.njobs; k++) {
        job_free(c.jobs[k]);
        free(c.jobs[k]);
    }
    free(c.jobs);
    free(c.req);
    return rc;
}

/* ----------------------------------------------------------- sweeps */

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
            set_grid(j, 1, 1, 7.0, 5.0, &spec);
            nc_panel *pn = &j->panels[0];
            j->npanels = 1;
            const double *ys[4] = {sw->rmse_refit, sw->rmse_fixed, sw->jac_refit, sw->jac_fixed};
            const char *names[4] = {
                alpha ? "output, \xce\xb3 and \xce\xb2 refitted" : "output, scale refitted",
                alpha ? jprintf(j, "output, \xce\xb3 = %.4g, \xce\xb2 = %.4g fixed", sw->fixed_amp,
                                sw->fixed_off)
                      : jprintf(j, "output, scale = %.4g fixed", sw->fixed_amp),
                "J\xe1\xb5\xa2\xe1\xb5\xa2 vs f\xe2\x80\xb2, refitted",
                "J\xe1\xb5\xa2\xe1\xb5\xa2 vs f\xe2\x80\xb2, fixed"};
            nc_curve *c = jalloc(j, 4 * sizeof *c);
            nc_vline *vl = jalloc(j, 3 * sizeof *vl);
            nc_mark *mk = jalloc(j, sizeof *mk);
            if (!c || !vl || !mk) {
                job_free(j);
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
                                      jprintf(j, "theory %s = %.4g", alpha ? "1/(\xcf\x81\xe2\x88\x9a" "d)" : "d\xcf\x81\xc2\xb2",
                                              sw->theory)};
            if (isfinite(sw->fitted))
                vl[nv++] = (nc_vline){sw->fitted, nc_palette(4), true,
                                      jprintf(j, "fitted %s = %.4g", alpha ? "\xce\xb1" : "C", sw->fitted)};
            size_t nm = 0;
            if (isfinite(sw->opt_refit)) {
                mk[nm++] = (nc_mark){sw->opt_refit, sw->min_refit, nc_rgb_hex(0x000000),
                                     NC_MARKER_DIAMOND, 8,
                                     jprintf(j, "optimum %s = %.4g", alpha ? "\xce\xb1" : "C",
                                             sw->opt_refit)};
            }
            *pn = (nc_panel){.title = jprintf(j, "%s \xe2\x80\x94 %s error against %s", pl->name,
                                              alpha ? "DyT" : "DyISRU", alpha ? "\xce\xb1" : "C"),
                             .xlabel = alpha ? "\xce\xb1" : "C", .ylabel = "RMSE",
                             .x0 = sw->grid[0], .x1 = sw->grid[sw->n - 1], .xlog = true,
                             .ylog = logy, .y0 = logy ? lo / 1.5 : 0, .y1 = logy ? hi * 1.5 : hi * 1.05,
                             .grid = true, .curves = c, .ncurves = 4, .vlines = vl,
                             .nvlines = nv, .marks = mk, .nmarks = nm,
                             .note = sw->exact ? "exact (raw points)" : "on bins of x"};
            j->fig.npanels = 1;
            char base[160];
            sanitize(base, sizeof base, pl->name);
            snprintf(j->stem, sizeof j->stem, "%s_sweep_%s", base, alpha ? "alpha" : "C");
            if (j->oom)
                rc = nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            else
                rc = render_job(j, command, set, files, cap, nfiles, plan, err);
            job_free(j);
        }
    }
    return rc;
}
