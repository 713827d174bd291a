/*
 * figures.c - the paper-style figure types (figures.h): the driver.
 *
 * Each requested figure becomes a "job": its panels, curves, marks and
 * strings (owned by the job), and the density rasters its panels need,
 * sized to their data areas by nc_figure_areas. Then, layer by layer, one
 * streaming pass fills every raster requested for that layer; the legends
 * and notes are placed on the filled clouds and pinned, and the rasters
 * whose panels that resized are filled again at their final size; then
 * the jobs render into the output set, with their metadata (fig_draw.c).
 * A figure that cannot be drawn is refused without stopping the others.
 *
 * Legend: x input, y = (x - c_t) * inv_t the norm's output before the
 * affine part, J_ii the exact diagonal of its Jacobian (jacobian.h).
 *
 * Left out: what each kind's panels show (fig_panels.c, fig_depth.c,
 * fig_grid.c) and the sweep figures (fig_sweep.c); figures_internal.h is
 * what they share.
 */
#include "plot/figures.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jacobian.h"
#include "core/vmath.h"
#include "plan/plan.h"
#include "io/dump.h"
#include "plot/axes.h"
#include "plot/density.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"
#include "plot/layout.h"
#include "util/outfile.h"
#include "util/version.h"

#define DEFAULT_CHANNELS 4

/* ------------------------------------------------------------- jobs */

enum { R_XY, R_JAC };

typedef struct raster_req {
    int kind;
    size_t layer;               /* plan layer index */
    nc_density *d;              /* the final raster (owned by the job) */
    double lin, dec;            /* a symmetric-log x axis (lin > 0): x binned as its
                                   coordinate (figure.h, nc_panel xlin) */
    job *j;                     /* the job and panel it belongs to */
    size_t panel;
} raster_req;

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
    int32_t *col, *row; /* [d] each: pixels of a token's points */
    double *j;          /* [d] J_ii of a token */
    double *u;          /* [d] x in a symmetric-log axis' coordinate */
    double y[];         /* [d] */
} raster_scratch;

/* u[i] = the symmetric-log coordinate of x[i] (figure.h): x within +-lin,
 * else sign(x) lin (1 + dec log10(|x| / lin)); the logarithm only for the
 * few points beyond lin. */
static void symlog_u(const double *x, size_t n, double lin, double dec, double *u)
{
    for (size_t i = 0; i < n; i++) {
        double a = fabs(x[i]);
        u[i] = a <= lin ? x[i] : copysign(lin * (1 + dec * log10(a / lin)), x[i]);
    }
}

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

NC_VMATH_CLONES static void raster_block(void *vctx, int shard, size_t t0, size_t nt,
                                         const double *rows, const uint16_t *codes,
                                         void *scratch)
{
    (void)shard;
    (void)codes;
    raster_ctx *ctx = vctx;
    const nc_layer_result *r = &ctx->pl->result;
    const nc_layer_tokens *tk = &r->tok;
    raster_scratch *sc = scratch;
    nc_density **set = thread_set(ctx, sc);
    if (!set)
        return;
    const size_t d = r->d;
    if (!sc->col) { /* the scratch after y: J_ii, u, then the pixels */
        sc->j = sc->y + d;
        sc->u = sc->j + d;
        sc->col = (int32_t *)(void *)(sc->u + d);
        sc->row = sc->col + d;
    }
    const double jc = r->norm == NC_LAYERNORM ? 1.0 - 1.0 / (double)d : 1.0;
    const double invd = 1.0 / (double)d;
    double *y = sc->y, *jd = sc->j;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (tk->status[t] != NC_TOKEN_OK)
            continue;
        const double *x = rows + k * d;
        const double c = tk->centre[t], inv = tk->inv[t];
        for (size_t i = 0; i < d; i++)
            y[i] = (x[i] - c) * inv;
        double ulin = -1; /* the symmetric-log axis x was last transformed for */
        for (size_t q = 0; q < ctx->nreq; q++) {
            nc_density *dn = set[q];
            const raster_req *rq = &ctx->req[q];
            const double *xs = x;
            if (rq->lin > 0) {
                if (rq->lin != ulin)
                    symlog_u(x, d, rq->lin, rq->dec, sc->u);
                ulin = rq->lin;
                xs = sc->u;
            }
            if (rq->kind == R_XY) {
                nc_density_add_n(dn, xs, y, d, sc->col, sc->row);
            } else {
                /* J_ii = inv (1 - 1/d - y_i^2/d) (LayerNorm), inv (1 - y_i^2/d) (RMSNorm) */
                for (size_t i = 0; i < d; i++)
                    jd[i] = inv * (jc - y[i] * y[i] * invd);
                nc_density_add_n(dn, xs, jd, d, sc->col, sc->row);
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
    pass.scratch_bytes = sizeof(raster_scratch) + 3 * pl->result.d * sizeof(double) +
                         2 * pl->result.d * sizeof(int32_t);
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

typedef struct ctx {
    const nc_plan *plan;
    job **jobs; /* each allocated once: a job's figure points into itself */
    size_t njobs, capjobs;
    raster_req *req;
    size_t nreq, capreq;
    size_t *sel, nsel; /* the plan layers of the spec being built */
    size_t nrun;       /* the layers it selects in the whole run, shards included
                        * (file names must not depend on the sharding) */
    double *xq;        /* [plan->nlayers] the jobs' cache of |x| percentiles (job.xq) */
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
    j->plan = c->plan;
    j->xq = c->xq;
    j->fig.dpi = spec->dpi > 0 ? spec->dpi : 150;
    return j;
}

static int add_req(ctx *c, raster_req r, nc_err *err)
{
    if (c->nreq == c->capreq) {
        size_t cap = c->capreq ? 2 * c->capreq : 16;
        raster_req *g = realloc(c->req, cap * sizeof *g);
        if (!g)
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        c->req = g;
        c->capreq = cap;
    }
    c->req[c->nreq++] = r;
    return 0;
}

/* Allocates the raster of panel k to its data area (over the panel's
 * range, in the symmetric-log coordinate on such an axis). */
static int size_raster(job *j, size_t k, int w, int h, nc_err *err)
{
    int rc;
    nc_panel *p = &j->panels[k];
    nc_scale xs = panel_xscale(p);
    double x0 = p->xlin > 0 ? scale_u(&xs, p->x0) : p->x0;
    double x1 = p->xlin > 0 ? scale_u(&xs, p->x1) : p->x1;
    nc_density *d;
    if ((rc = nc_density_alloc(w, h, x0, x1, p->y0, p->y1, false, &d, err)))
        return rc;
    nc_density_free((nc_density *)p->density);
    p->density = d;
    j->has_raster = true;
    return 0;
}

/* The data areas of job j's panels, from one layout, in its memory. */
static const nc_rect *job_areas(job *j, nc_err *err)
{
    nc_rect *a = nc_fig_jalloc(j, (j->npanels ? j->npanels : 1) * sizeof *a);
    if (!a) {
        nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        return NULL;
    }
    return nc_figure_areas(&j->fig, a, err) ? NULL : a;
}

/* Allocates the raster of panel k to its data area (areas: the job's)
 * and requests it. */
static int request_raster(ctx *c, job *j, const nc_rect *areas, size_t k, int kind, size_t layer,
                          nc_err *err)
{
    int rc = size_raster(j, k, areas[k].w, areas[k].h, err);
    const nc_panel *p = &j->panels[k];
    return rc ? rc
              : add_req(c, (raster_req){kind, layer, (nc_density *)p->density, p->xlin,
                                        p->xdecade, j, k},
                        err);
}

/* The plan layers spec selects (its patterns; outlier-steps: only the
 * layers that ran that experiment), in plan order, into c->sel. Layers
 * without usable points are kept: their panels say so (as fit's report
 * does), rather than vanishing; layers another shard analyses are not. NC_EINVAL when none is left. */
static int select_layers(ctx *c, const nc_fig_spec *spec, nc_err *err)
{
    const nc_plan *plan = c->plan;
    free(c->sel);
    c->nsel = 0;
    c->sel = malloc((plan->nlayers ? plan->nlayers : 1) * sizeof *c->sel);
    if (!c->sel)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    c->nrun = 0;
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *pl = &plan->layers[k];
        if (nc_fig_spec_selects(spec, pl->name) &&
            (spec->kind != NC_FIG_OUTLIER_STEPS || pl->has_outlier_steps ||
             (pl->cfg && pl->cfg->outlier_steps)))
            c->nrun++;
        if (!nc_fig_spec_selects(spec, pl->name) || (!pl->in_shard && pl->result.points == 0))
            continue; /* another shard's layer (plan.h) */
        if (spec->kind == NC_FIG_OUTLIER_STEPS && !pl->has_outlier_steps)
            continue;
        c->sel[c->nsel++] = k;
    }
    if (c->nsel == 0 && spec->kind == NC_FIG_OUTLIER_STEPS)
        return nc_err_set(err, NC_EINVAL, "figure 'outlier-steps': no layer ran the "
                          "outlier-steps experiment (add --experiment outlier-steps; in a "
                          "config: \"experiment\": \"outlier-steps\", or the synth preset "
                          "\"outlier-steps\")");
    if (c->nsel == 0 && spec->kind != NC_FIG_TANH_FAMILY)
        return nc_err_set(err, NC_EINVAL, "figure '%s': no layer matches %s%s%s",
                          nc_fig_kind_name(spec->kind), spec->nlayers ? "'" : "",
                          spec->nlayers ? spec->layers[0] : "(all layers)",
                          spec->nlayers ? "'" : "");
    return 0;
}

static bool per_layer_kind(nc_fig_kind k)
{
    return k == NC_FIG_SCATTER || k == NC_FIG_BY_TOKEN || k == NC_FIG_BY_CHANNEL ||
           k == NC_FIG_JACOBIAN || k == NC_FIG_OUTLIER_STEPS;
}

/* The file stem of a figure: "<layer>_<kind>" per layer, "<kind>" across
 * layers, or the spec's name (with "_<layer>" when it gives several
 * files); never a part twice ("outlier_steps", not
 * "outlier_steps_outlier_steps"); '-' becomes '_'. */
static void job_stem(job *j, const nc_fig_spec *spec, const nc_plan_layer *pl, size_t nfiles)
{
    char base[160], kind[32];
    nc_fig_sanitize(base, sizeof base, pl ? pl->name : "");
    nc_fig_sanitize(kind, sizeof kind, nc_fig_kind_name(spec->kind));
    for (char *t = base; *t; t++)
        *t = *t == '-' ? '_' : *t;
    for (char *t = kind; *t; t++)
        *t = *t == '-' ? '_' : *t;
    const char *tail = spec->name ? spec->name : kind;
    size_t nb = strlen(base), nt = strlen(tail);
    bool repeats = nb >= nt && strcmp(base + nb - nt, tail) == 0;
    if (spec->name && !(pl && nfiles > 1))
        snprintf(j->stem, sizeof j->stem, "%s", spec->name);
    else if (!pl || repeats)
        snprintf(j->stem, sizeof j->stem, "%s", pl ? base : kind);
    else if (spec->name)
        snprintf(j->stem, sizeof j->stem, "%s_%s", spec->name, base);
    else
        snprintf(j->stem, sizeof j->stem, "%s_%s", base, kind);
    for (char *t = j->stem; *t; t++)
        *t = *t == '-' ? '_' : *t;
}

/* A layer with nothing to draw: its panel's ranges and the reason, as
 * fit reports it. */
static void empty_panel(job *j, const nc_plan_layer *pl, nc_panel *p)
{
    *p = (nc_panel){.title = nc_fig_jprintf(j, "%s \xe2\x80\x94 no data", pl->name),
                    .xlabel = "input x", .ylabel = "output y", .x0 = -1, .x1 = 1, .y0 = -1,
                    .y1 = 1, .legend_pos = NC_LEGEND_NONE,
                    .note = nc_fig_jprintf(j, "no usable token: nothing to fit (%zu tokens)",
                                           pl->result.N)};
}

/* The one panel of a per-layer figure of plan layer `layer`. */
static int layer_panel(ctx *c, job *j, size_t layer, nc_err *err)
{
    const nc_fig_spec *spec = j->spec;
    const nc_plan_layer *pl = &c->plan->layers[layer];
    nc_panel *p = &j->panels[0];
    int kind = spec->kind == NC_FIG_JACOBIAN ? R_JAC : R_XY;
    j->npanels = 1;
    nc_fig_set_grid(j, 1, 1, spec->kind == NC_FIG_OUTLIER_STEPS ? 6.4 : 7.0,
                    spec->kind == NC_FIG_OUTLIER_STEPS ? 4.8 : 5.2, spec);
    if (pl->result.points == 0 && spec->kind != NC_FIG_OUTLIER_STEPS) {
        empty_panel(j, pl, p);
        return j->oom ? nc_err_set(err, NC_ENOMEM, "out of memory for figures") : 0;
    }
    bool ok;
    switch (spec->kind) {
    case NC_FIG_JACOBIAN: ok = nc_fig_jacobian_panel(j, pl, p); break;
    case NC_FIG_BY_TOKEN: ok = nc_fig_by_token_panel(j, pl, p); break;
    case NC_FIG_BY_CHANNEL: {
        size_t k = spec->channels ? spec->channels : DEFAULT_CHANNELS;
        ok = nc_fig_by_channel_panel(j, pl, p, k < pl->result.stats.ntop ? k
                                                                          : pl->result.stats.ntop);
        break;
    }
    case NC_FIG_OUTLIER_STEPS: ok = nc_fig_outlier_panel(j, pl, p); break;
    default: ok = nc_fig_scatter_panel(j, pl, p, false); break;
    }
    if (!ok || j->oom)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    if (spec->kind == NC_FIG_OUTLIER_STEPS)
        return 0;
    j->fig.npanels = 1;
    const nc_rect *areas = job_areas(j, err);
    return areas ? request_raster(c, j, areas, 0, kind, layer, err) : err->code;
}

/* scatter-grid: one panel per layer shown (all that fit, fig_grid.c),
 * one legend for the grid. */
static int grid_panels(ctx *c, job *j, nc_err *err)
{
    const nc_fig_spec *spec = j->spec;
    nc_panel *all = nc_fig_jalloc(j, (c->nsel ? c->nsel : 1) * sizeof *all);
    size_t *pick = nc_fig_jalloc(j, (c->nsel ? c->nsel : 1) * sizeof *pick), k = 0;
    if (!all || !pick)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    for (size_t q = 0; q < c->nsel; q++) {
        const nc_plan_layer *pl = &c->plan->layers[c->sel[q]];
        if (pl->result.points == 0)
            empty_panel(j, pl, &all[q]);
        else if (!nc_fig_scatter_panel(j, pl, &all[q], true))
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    }
    j->fig.title = spec->no_title ? NULL
                   : spec->title  ? spec->title
                                  : "Input vs output of each normalization layer";
    j->fig.shared_legend = true;
    int rc = nc_fig_grid_shape(j, all, c->nsel, pick, &k, err);
    for (size_t q = 0; q < k && !rc; q++) /* the layers shown, in the metadata too */
        pick[q] = c->sel[pick[q]];
    if (!rc && !nc_fig_job_shows(j, pick, k))
        rc = nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    const nc_rect *areas = rc ? NULL : job_areas(j, err);
    if (!rc && !areas)
        rc = err->code;
    for (size_t q = 0; q < k && !rc; q++)
        if (c->plan->layers[pick[q]].result.points > 0)
            rc = request_raster(c, j, areas, q, R_XY, pick[q], err);
    return rc;
}

/* The plan layers job j shows (its metadata): the q-th selected layer of
 * a per-layer figure (q < SIZE_MAX), else every selected layer, those
 * with a DyT or DyISRU fit for the figures across layers. */
static bool shown_layers(ctx *c, job *j, size_t q)
{
    if (q != SIZE_MAX)
        return nc_fig_job_shows(j, &c->sel[q], 1);
    if (j->spec->kind == NC_FIG_TANH_FAMILY)
        return nc_fig_job_shows(j, NULL, 0);
    bool across = j->spec->kind == NC_FIG_ALPHA_STD || j->spec->kind == NC_FIG_ALPHA_DEPTH;
    size_t *v = nc_fig_jalloc(j, (c->nsel ? c->nsel : 1) * sizeof *v), n = 0;
    if (!v)
        return false;
    for (size_t k = 0; k < c->nsel; k++) {
        const nc_layer_result *r = &c->plan->layers[c->sel[k]].result;
        if (!across || r->fits[NC_FIT_DYT].ok || r->fits[NC_FIT_DYISRU].ok)
            v[n++] = c->sel[k];
    }
    j->shown = v;
    j->nshown = n;
    return true;
}

/* The figures of one spec: a job per selected layer (per-layer kinds) or
 * one job. */
static int build_jobs(ctx *c, const nc_fig_spec *spec, nc_err *err)
{
    int rc = select_layers(c, spec, err);
    if (rc)
        return rc;
    bool per_layer = per_layer_kind(spec->kind);
    size_t nj = per_layer ? c->nsel : 1;
    for (size_t q = 0; q < nj && !rc; q++) {
        job *j = new_job(c, spec, err);
        if (!j)
            return NC_ENOMEM;
        size_t np = spec->kind == NC_FIG_SCATTER_GRID ? c->nsel
                    : spec->kind == NC_FIG_ALPHA_DEPTH ? 2
                                                        : 1;
        if (!nc_fig_job_panels(j, np))
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        job_stem(j, spec, per_layer ? &c->plan->layers[c->sel[q]] : NULL,
                 per_layer ? c->nrun : 1);
        if (!shown_layers(c, j, per_layer ? q : SIZE_MAX)) /* the grid: its own, below */
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        switch (spec->kind) {
        case NC_FIG_SCATTER_GRID: rc = grid_panels(c, j, err); break;
        case NC_FIG_ALPHA_STD:
            nc_fig_set_grid(j, 1, 1, 6.4, 4.8, spec);
            j->npanels = 1;
            rc = nc_fig_alpha_std_panel(j, c->plan, c->sel, c->nsel, &j->panels[0], err);
            break;
        case NC_FIG_ALPHA_DEPTH:
            nc_fig_set_grid(j, 2, 2, 4.0, 3.6, spec);
            j->npanels = 2;
            j->fig.shared_legend = true;
            rc = nc_fig_alpha_depth_panel(j, c->plan, c->sel, c->nsel, &j->panels[0], err);
            break;
        case NC_FIG_SWAP_DEPTH:
            nc_fig_set_grid(j, 1, 1, 6.4, 4.0, spec);
            j->npanels = 1;
            rc = nc_fig_swap_depth_panel(j, c->plan, c->sel, c->nsel, &j->panels[0], err);
            break;
        case NC_FIG_TANH_FAMILY:
            nc_fig_set_grid(j, 1, 1, 6.0, 4.2, spec);
            j->npanels = 1;
            rc = nc_fig_tanh_panel(j, &j->panels[0], err);
            break;
        default: rc = layer_panel(c, j, c->sel[q], err); break;
        }
        if (!rc && j->oom)
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        j->fig.npanels = j->npanels;
        if (spec->legend)
            for (size_t k = 0; k < j->npanels; k++)
                j->panels[k].legend_pos = spec->legend;
    }
    return rc;
}

static int by_layer(const void *a, const void *b)
{
    const raster_req *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return x->d < y->d ? -1 : x->d > y->d; /* any fixed order: the counts are integers */
}

/* One raster pass per layer over the requests req[n] (in a copy sorted
 * by layer), filling every raster requested for it, one layer resident at
 * a time. */
static int raster_all(const nc_plan *plan, const raster_req *reqs, size_t n, int threads,
                      nc_err *err)
{
    raster_req *req = malloc((n ? n : 1) * sizeof *req);
    if (!req)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    if (n)
        memcpy(req, reqs, n * sizeof *req);
    qsort(req, n, sizeof *req, by_layer);
    int rc = 0;
    for (size_t a = 0; a < n && !rc;) {
        size_t b = a;
        while (b < n && req[b].layer == req[a].layer)
            b++;
        const nc_plan_layer *pl = &plan->layers[req[a].layer];
        nc_plan_layer_memory(pl, true);
        rc = raster_pass(pl, req + a, b - a, threads, err);
        nc_plan_layer_memory(pl, false);
        a = b;
    }
    free(req);
    return rc;
}

/* Pins where each figure's legends and notes go, now that the clouds are
 * known (nc_figure_placements), and fills again the rasters whose panels
 * that resized: a legend that moved to the strip below shrinks its panel,
 * and a raster drawn into an area of another size would be resampled
 * (white stripes where it is stretched). */
static int pin_and_resize(ctx *c, int threads, nc_err *err)
{
    int rc = 0;
    for (size_t q = 0; q < c->njobs && !rc; q++) {
        job *j = c->jobs[q];
        if (!j->has_raster)
            continue;
        nc_placement *pl = malloc(j->npanels * sizeof *pl);
        j->areas = nc_fig_jalloc(j, j->npanels * sizeof *j->areas);
        if (!pl || !j->areas) {
            free(pl);
            return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
        }
        /* the areas of this layout are those of the pinned one: the same decisions */
        rc = nc_figure_placements(&j->fig, pl, j->areas, err);
        for (size_t k = 0; k < j->npanels && !rc; k++) {
            j->panels[k].legend_pos = pl[k].legend_pos;
            j->panels[k].legend_cols = pl[k].legend_cols;
            j->panels[k].legend_pt = pl[k].legend_pt;
            j->panels[k].note_pos = pl[k].note_pos;
        }
        free(pl);
    }
    raster_req *redo = malloc((c->nreq ? c->nreq : 1) * sizeof *redo);
    size_t nredo = 0;
    if (!redo)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    for (size_t q = 0; q < c->nreq && !rc; q++) {
        raster_req *r = &c->req[q];
        const nc_rect *a = &r->j->areas[r->panel];
        if (a->w == r->d->w && a->h == r->d->h)
            continue;
        if ((rc = size_raster(r->j, r->panel, a->w, a->h, err)))
            break;
        r->d = (nc_density *)r->j->panels[r->panel].density;
        redo[nredo++] = *r;
    }
    if (!rc && nredo)
        rc = raster_all(c->plan, redo, nredo, threads, err);
    free(redo);
    return rc;
}

/* Drops the jobs from the first-th on and the raster requests from the
 * req-th on (a refused spec's). */
static void drop_jobs(ctx *c, size_t first, size_t req)
{
    for (size_t k = first; k < c->njobs; k++) {
        nc_fig_job_free(c->jobs[k]);
        free(c->jobs[k]);
    }
    c->njobs = first;
    c->nreq = req;
}

/* Appends msg as a line of *text (owned by the caller). */
static int add_refusal(char **text, const char *msg, nc_err *err)
{
    size_t old = *text ? strlen(*text) : 0, n = old + strlen(msg) + 2;
    char *t = realloc(*text, n);
    if (!t)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    snprintf(t + old, n - old, "%s%s", old ? "\n" : "", msg);
    *text = t;
    return 0;
}

int nc_figures_render(const struct nc_plan *plan, const nc_fig_spec *specs, size_t n,
                      const char *command, int threads, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, char **refused, nc_err *err)
{
    ctx c = {.plan = plan};
    int rc = 0;
    size_t drawn = 0;
    if (!(c.xq = malloc((plan->nlayers ? plan->nlayers : 1) * sizeof *c.xq)))
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    for (size_t l = 0; l < plan->nlayers; l++)
        c.xq[l] = NAN;
    if (nfiles)
        *nfiles = 0;
    if (refused)
        *refused = NULL;
    for (size_t k = 0; k < n && !rc; k++) {
        size_t first = c.njobs, req = c.nreq;
        rc = build_jobs(&c, &specs[k], err);
        if (rc == NC_EINVAL && refused) { /* the others are drawn; this one is said */
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            nc_err_clear(err);
            drop_jobs(&c, first, req);
            rc = add_refusal(refused, msg, err);
        } else if (!rc) {
            drawn++;
        }
    }
    if (!rc && drawn == 0 && refused && *refused) { /* nothing to draw: the first refusal */
        rc = nc_err_set(err, NC_EINVAL, "%.*s", (int)strcspn(*refused, "\n"), *refused);
        free(*refused);
        *refused = NULL;
    }
    if (!rc)
        rc = raster_all(plan, c.req, c.nreq, threads, err);
    if (!rc)
        rc = pin_and_resize(&c, threads, err);
    if (!rc)
        rc = nc_fig_draw_all(c.jobs, c.njobs, plan, command, threads, set, files, cap, nfiles,
                             err);
    drop_jobs(&c, 0, 0);
    free(c.jobs);
    free(c.req);
    free(c.sel);
    free(c.xq);
    return rc;
}
