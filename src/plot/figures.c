/*
 * figures.c - the paper-style figure types (figures.h): the driver.
 *
 * Each requested figure becomes a "job": its panels, curves, marks and
 * strings (owned by the job), and the density rasters its panels need,
 * sized to their data areas by nc_figure_data_area. Then, layer by layer,
 * one streaming pass fills every raster requested for that layer; then the
 * jobs render into the output set, with their metadata. Also here: a
 * job's memory.
 *
 * Legend: x input, y = (x - c_t) * inv_t the norm's output before the
 * affine part, J_ii the exact diagonal of its Jacobian (jacobian.h).
 *
 * Left out: what each kind's panels show (fig_panels.c) and the sweep
 * figures (fig_sweep.c); figures_internal.h is what the three share.
 */
#include "plot/figures.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jacobian.h"
#include "plan/plan.h"
#include "io/dump.h"
#include "plot/axes.h"
#include "plot/density.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"
#include "util/outfile.h"
#include "util/version.h"

#define DEFAULT_CHANNELS 4

/* ------------------------------------------------------------- jobs */

enum { R_XY, R_JAC };

typedef struct raster_req {
    int kind;
    size_t layer;               /* plan layer index */
    nc_density *d;              /* the final raster (owned by the job) */
} raster_req;

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

void *nc_fig_jalloc(job *j, size_t n)
{
    return own(j, calloc(1, n ? n : 1));
}

__attribute__((format(printf, 2, 3))) char *nc_fig_jprintf(job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = nc_fig_jalloc(j, (size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

void nc_fig_job_free(job *j)
{
    for (size_t k = 0; k < j->nowned; k++)
        free(j->owned[k]);
    free(j->owned);
    for (size_t k = 0; k < j->npanels; k++)
        nc_density_free((nc_density *)j->panels[k].density);
}

/* A file stem from text: letters, digits, '.', '_' and '-' kept. */
void nc_fig_sanitize(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    for (; *src && k + 1 < cap; src++)
        dst[k++] = (*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z') ||
                           (*src >= '0' && *src <= '9') || *src == '.' || *src == '-'
                       ? *src
                       : '_';
    dst[k] = '\0';
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

void nc_fig_set_grid(job *j, size_t n, int cols, double w_in, double h_in,
                     const nc_fig_spec *s)
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
        nc_fig_sanitize(base, sizeof base, pl ? pl->name : "");
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
            nc_fig_set_grid(j, 1, 1, 7.0, 5.2, spec);
            if (!(jac ? nc_fig_jacobian_panel(j, pl, &j->panels[0])
                      : nc_fig_scatter_panel(j, pl, &j->panels[0], false)))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            rc = request_raster(c, j, 0, jac ? R_JAC : R_XY, sel[q], err);
            break;
        }
        case NC_FIG_BY_TOKEN:
            nc_fig_set_grid(j, 1, 1, 7.0, 5.2, spec);
            if (!nc_fig_by_token_panel(j, pl, &j->panels[0]))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            rc = request_raster(c, j, 0, R_XY, sel[q], err);
            break;
        case NC_FIG_BY_CHANNEL: {
            size_t k = spec->channels ? spec->channels : DEFAULT_CHANNELS;
            if (k > pl->result.stats.ntop)
                k = pl->result.stats.ntop;
            nc_fig_set_grid(j, 1, 1, 7.0, 5.2, spec);
            if (!nc_fig_by_channel_panel(j, pl, &j->panels[0], k))
                return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = 1;
            rc = request_raster(c, j, 0, R_XY, sel[q], err);
            break;
        }
        case NC_FIG_SCATTER_GRID:
            nc_fig_set_grid(j, nsel, spec->cols, 4.3, 3.5, spec);
            for (size_t k = 0; k < nsel; k++)
                if (!nc_fig_scatter_panel(j, &plan->layers[sel[k]], &j->panels[k], true))
                    return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
            j->npanels = nsel;
            j->fig.title = "Input vs output of each normalization layer";
            for (size_t k = 0; k < nsel && !rc; k++)
                rc = request_raster(c, j, k, R_XY, sel[k], err);
            break;
        case NC_FIG_ALPHA_STD:
            nc_fig_set_grid(j, 1, 1, 6.4, 4.8, spec);
            if ((rc = nc_fig_alpha_std_panel(j, plan, sel, nsel, &j->panels[0], err)))
                return rc;
            j->npanels = 1;
            break;
        case NC_FIG_TANH_FAMILY:
            nc_fig_set_grid(j, 1, 1, 6.0, 4.2, spec);
            if ((rc = nc_fig_tanh_panel(j, &j->panels[0], err)))
                return rc;
            j->npanels = 1;
            break;
        case NC_FIG_OUTLIER_STEPS:
            nc_fig_set_grid(j, 1, 1, 6.4, 4.8, spec);
            if (!nc_fig_outlier_panel(j, pl, &j->panels[0]))
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

int nc_fig_render_job(job *j, const char *command, struct nc_outset *set, char **files,
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
        rc = nc_fig_render_job(c.jobs[k], command, set, files, cap, nfiles, plan, err);
    for (size_t k = 0; k < c.njobs; k++) {
        nc_fig_job_free(c.jobs[k]);
        free(c.jobs[k]);
    }
    free(c.jobs);
    free(c.req);
    return rc;
}
