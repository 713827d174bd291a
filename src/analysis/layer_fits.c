/*
 * layer_fits.c - the fits of one layer on its fit points (layer_internal.h;
 * the "fits" stage of layer.h): no pass over the data.
 *
 * The points are the nonempty bins of x (bins.h), weighted by their counts,
 * or for a layer small enough the raw points. A profiled fit (DyT, DyISRU)
 * runs through levels of these, coarse to fine: its scan on the bins merged
 * into at most COARSE_POINTS (when there are more than twice that many),
 * then a polish on the bins, then on the raw points. Derf starts from the DyT fit; the affine baseline is closed-form
 * from the bins pass's exact sums; the theory curves with one scale for
 * the layer need only the mean token scale rho, the norm and d (those with
 * each token's own scale are evaluated in the verify pass). The fitters themselves are fit.h's.
 *
 * Left out: the per-channel DyT fit (channel.c), which needs exact passes,
 * and the exact error metrics of every fit (the verify pass, layer.c).
 */
#include "analysis/layer_internal.h"

#include <stdio.h>
#include <string.h>

#include "analysis/amp.h"
#include "analysis/fit.h"

static void fit_status(nc_fit_result *fr, const nc_fit_out *fo)
{
    fr->iterations = fo->iterations;
    fr->converged = fo->converged;
    fr->objective = fo->objective;
    snprintf(fr->status, sizeof fr->status, "%s", fo->status);
    fr->ok = true;
}

static void set_amp(nc_fit_result *fr, nc_amp amp, const nc_layer_spec *spec, size_t d,
                    nc_fit_opts *o)
{
    fr->amp_fixed = nc_amp_resolve(amp, spec->norm, d, &fr->amp, &fr->amp_rule);
    o->amp_fixed = fr->amp_fixed;
    o->amp = fr->amp;
}

/* Coarse points for the scans: consecutive groups of the (x-ordered) bins
 * merged into at most `target` weighted means. buf: [3 * target]. */
static nc_points coarsen(const nc_points *bins, size_t target, double *buf)
{
    size_t g = (bins->n + target - 1) / target, k = 0;
    double *x = buf, *y = buf + target, *w = buf + 2 * target;
    for (size_t b0 = 0; b0 < bins->n; b0 += g, k++) {
        double sw = 0, sx = 0, sy = 0;
        for (size_t b = b0; b < b0 + g && b < bins->n; b++) {
            sw += bins->w[b];
            sx += bins->w[b] * bins->x[b];
            sy += bins->w[b] * bins->y[b];
        }
        x[k] = sx / sw;
        y[k] = sy / sw;
        w[k] = sw;
    }
    return (nc_points){.x = x, .y = y, .w = w, .n = k};
}

/* A fit through the levels of data, coarse to fine: the scan (or LM's
 * start) on the coarsest, then each finer level polishes from the previous
 * optimum. levels[] ends with the finest available (bins or raw points). */
typedef struct levels {
    const nc_points *lv[3];
    int n;
} levels;

static int fit_profiled(int fam, const levels *L, nc_fit_opts o, nc_fit_result *fr,
                        nc_err *err)
{
    nc_fit_out fo = {0};
    int (*fit)(const nc_points *, const nc_fit_opts *, nc_fit_out *, nc_err *) =
        fam == NC_FIT_DYT ? nc_fit_dyt : nc_fit_dyisru;
    int iters = 0;
    for (int k = 0; k < L->n; k++) {
        int rc = fit(L->lv[k], &o, &fo, err);
        if (rc)
            return rc;
        iters += fo.iterations;
        if (!fo.converged)
            break; /* report the coarse answer with its status */
        o.start = fo.p[0];
    }
    fo.iterations = iters;
    memcpy(fr->params.p, fo.p, sizeof fo.p);
    fit_status(fr, &fo);
    return 0;
}

/* Points for the scans (at most this many coarse bins). */
#define COARSE_POINTS 2048

int nc_layer_run_fits(const run *r, nc_layer_result *res, const nc_points *bins,
                      const nc_points *raw, double xs, const affine_sums *aff, nc_err *err)
{
    const nc_layer_spec *spec = r->spec;
    const size_t d = r->d;
    nc_fit_result *F = res->fits;
    const nc_points *pts = raw->n > 0 ? raw : bins; /* the finest data there is */
    int rc;
    double coarse_buf[3 * COARSE_POINTS];
    nc_points coarse;
    levels L = {.n = 0};
    if (bins->n > 2 * COARSE_POINTS) {
        coarse = coarsen(bins, COARSE_POINTS, coarse_buf);
        L.lv[L.n++] = &coarse;
    }
    L.lv[L.n++] = bins;
    if (raw->n > 0)
        L.lv[L.n++] = raw;

    if (spec->fit[NC_FIT_LINEAR]) {
        /* closed form from the exact centred sums of the bins pass */
        double n = (double)res->points, sxx = aff->sxx, sxy = aff->sxy;
        double slope = sxx > 0 ? sxy / sxx : 0;
        F[NC_FIT_LINEAR].params.p[0] = slope;
        F[NC_FIT_LINEAR].params.p[1] = aff->sy / n - slope * aff->xmean;
        F[NC_FIT_LINEAR].iterations = 1;
        F[NC_FIT_LINEAR].converged = sxx > 0;
        snprintf(F[NC_FIT_LINEAR].status, sizeof F[0].status, "%s",
                 sxx > 0 ? "ok" : "all x equal: slope set to 0");
        F[NC_FIT_LINEAR].ok = true;
    }
    bool need_dyt = spec->fit[NC_FIT_DYT] || spec->fit[NC_FIT_DERF] ||
                    spec->fit[NC_FIT_DYT_PER_CHANNEL];
    nc_fit_opts o = {.x_scale = xs};
    if (need_dyt) {
        set_amp(&F[NC_FIT_DYT], spec->amp_dyt, spec, d, &o);
        if ((rc = fit_profiled(NC_FIT_DYT, &L, o, &F[NC_FIT_DYT], err)))
            return rc;
    }
    if (spec->fit[NC_FIT_DYISRU]) {
        nc_fit_result *fr = &F[NC_FIT_DYISRU];
        o = (nc_fit_opts){.x_scale = xs};
        set_amp(fr, spec->amp_dyisru, spec, d, &o); /* config validation keeps it fixed */
        if ((rc = fit_profiled(NC_FIT_DYISRU, &L, o, fr, err)))
            return rc;
    }
    if (spec->fit[NC_FIT_DYISRU_FREE]) {
        o = (nc_fit_opts){.x_scale = xs};
        if ((rc = fit_profiled(NC_FIT_DYISRU, &L, o, &F[NC_FIT_DYISRU_FREE], err)))
            return rc;
    }
    if (spec->fit[NC_FIT_DERF] && F[NC_FIT_DYT].ok) {
        nc_fit_result *fr = &F[NC_FIT_DERF];
        nc_fit_out fo;
        o = (nc_fit_opts){.x_scale = xs};
        set_amp(fr, spec->amp_derf, spec, d, &o);
        /* tanh(z) ~ erf(z sqrt(pi)/2) near 0: start from the DyT fit on the
         * coarsest level, then polish level by level */
        const double *p = F[NC_FIT_DYT].params.p;
        double init[4] = {p[0] * 0.886226925452758, 0.0, p[1], p[2]};
        int iters = 0;
        for (int k = 0; k < L.n; k++) {
            if ((rc = nc_fit_derf(L.lv[k], &o, init, &fo, err)))
                return rc;
            iters += fo.iterations;
            memcpy(init, fo.p, sizeof init);
        }
        fo.iterations = iters;
        memcpy(fr->params.p, fo.p, sizeof fo.p);
        fit_status(fr, &fo);
    }
    double rho = res->stats.rho;
    if (spec->fit[NC_FIT_DYT_THEORY]) {
        nc_fit_result *fr = &F[NC_FIT_DYT_THEORY];
        fr->params = nc_dyt_theory_params(spec->norm, rho, d);
        fr->ok = fr->converged = true;
        snprintf(fr->status, sizeof fr->status, "ok");
    }
    if (spec->fit[NC_FIT_DYISRU_THEORY]) {
        nc_fit_result *fr = &F[NC_FIT_DYISRU_THEORY];
        fr->params = nc_dyisru_theory_params(spec->norm, rho, d);
        fr->ok = fr->converged = true;
        snprintf(fr->status, sizeof fr->status, "ok");
    }
    /* the solver's objective for the closed-form and theory curves too */
    for (int j = 0; j < NC_FIT_COUNT; j++)
        if (F[j].ok && j != NC_FIT_DYT_PER_CHANNEL &&
            (j == NC_FIT_LINEAR || nc_surrogate_get((nc_fit_id)j)->theory))
            F[j].objective = nc_fit_objective(pts, nc_surrogate_get((nc_fit_id)j), &F[j].params);
    return 0;
}
