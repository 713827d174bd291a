/*
 * outlier.c - the outlier-steps experiment (outlier.h).
 */
#include "analysis/outlier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fit.h"
#include "analysis/layer.h"
#include "core/quantile.h"

static void residuals(const nc_points *pts, const nc_surrogate *s, const nc_params *p,
                      nc_outlier_fit *f)
{
    double sabs = 0, ssq = 0, m = 0;
    for (size_t k = 0; k < pts->n; k++) {
        double e = fabs(pts->y[k] - nc_surrogate_f(s, p, 0, pts->x[k]));
        sabs += e;
        ssq += e * e;
        m = e > m ? e : m;
    }
    f->mean_abs_res = sabs / (double)pts->n;
    f->rmse = sqrt(ssq / (double)pts->n);
    f->max_abs_res = m;
}

/* The outlier point of one token row[d] (its largest value) and its mirror,
 * appended at px/py[*n]; nothing for a token with non-finite values. */
static void add_token(const double *row, size_t d, nc_norm_kind norm, double eps, double *px,
                      double *py, size_t *n)
{
    nc_token_stat st = nc_norm_token(norm, eps, row, d);
    if (st.status != NC_TOKEN_OK)
        return;
    size_t imax = 0;
    for (size_t i = 1; i < d; i++)
        if (row[i] > row[imax])
            imax = i;
    double y = (row[imax] - st.centre) / st.scale;
    px[*n] = row[imax];
    py[*n] = y;
    px[*n + 1] = -row[imax];
    py[*n + 1] = -y;
    *n += 2;
}

/* DyT and DyISRU with the amplitude fixed to the norm's bound and no
 * offset, fitted to the n points; fills out's fits, counts and ratio. */
static int fit_points(double *px, double *py, size_t n, nc_norm_kind norm, size_t d,
                      nc_outlier_steps *out, nc_err *err)
{
    if (n == 0)
        return nc_err_set(err, NC_EINVAL, "outlier steps: no token with finite values");
    out->tokens = n / 2;
    out->points = n;
    nc_amp_rule rule;
    nc_amp_resolve((nc_amp){NC_AMP_AUTO, 0}, norm, d, &out->amplitude, &rule);

    nc_points pts = {.x = px, .y = py, .n = n};
    nc_fit_opts o = {.amp_fixed = true, .amp = out->amplitude, .no_offset = true};
    nc_fit_out fo;
    int rc;
    if ((rc = nc_fit_dyt(&pts, &o, &fo, err)))
        return rc;
    nc_params p = {.p = {fo.p[0], out->amplitude, 0}};
    out->dyt.param = fo.p[0];
    out->dyt.converged = fo.converged;
    residuals(&pts, nc_surrogate_get(NC_FIT_DYT), &p, &out->dyt);

    if ((rc = nc_fit_dyisru(&pts, &o, &fo, err)))
        return rc;
    p = (nc_params){.p = {fo.p[0], out->amplitude}};
    out->dyisru.param = fo.p[0];
    out->dyisru.converged = fo.converged;
    residuals(&pts, nc_surrogate_get(NC_FIT_DYISRU), &p, &out->dyisru);
    out->ratio = out->dyisru.mean_abs_res > 0 ? out->dyt.mean_abs_res / out->dyisru.mean_abs_res
                                              : INFINITY;
    return 0;
}

int nc_outlier_steps_run(const nc_tensor *x, nc_norm_kind norm, double eps,
                         nc_outlier_steps *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    const size_t N = x->N, d = x->d;
    int rc = 0;
    double *row = malloc((d ? d : 1) * sizeof *row);
    double *px = malloc(4 * (N ? N : 1) * sizeof *px);
    double *py = px ? px + 2 * (N ? N : 1) : NULL;
    if (!row || !px) {
        rc = nc_err_set(err, NC_ENOMEM, "outlier steps: out of memory");
        goto out;
    }
    size_t n = 0;
    for (size_t t = 0; t < N && d > 0; t++) {
        nc_tensor_rows(x, t, 1, row);
        add_token(row, d, norm, eps, px, py, &n);
    }
    rc = fit_points(px, py, n, norm, d, out, err);
out:
    free(row);
    if (rc) {
        free(px);
    } else {
        out->x = px; /* the block holds y after x */
        out->y = py;
    }
    return rc;
}

/* np.percentile(v, 50, 5, 95), min and max; sorts v[n]. */
static nc_outlier_quantiles quantiles(double *v, size_t n)
{
    nc_sort_doubles(v, n);
    return (nc_outlier_quantiles){nc_quantile_sorted(v, n, 0.50), nc_quantile_sorted(v, n, 0.05),
                                  nc_quantile_sorted(v, n, 0.95), v[0], v[n - 1]};
}

enum { Q_RATIO, Q_DYT, Q_DYISRU, Q_MEAN, Q_RATIO_M, Q_COUNT };

/* One draw of the spread: the token set of seed, its fits, and m' (the
 * mean of the base token's d - 1 entries other than the pushed one). */
static int spread_draw(size_t d, int steps, nc_synth_rng rng, uint64_t seed, nc_norm_kind norm,
                       double eps, float *xf, double *row, double *px, double *py,
                       double q[Q_COUNT], nc_err *err)
{
    size_t c, n = 0;
    int rc = nc_synth_outlier_steps(seed, d, steps, 5.0, 2.0, rng, xf, &c, err);
    if (rc)
        return rc;
    double others = 0.0;
    for (size_t i = 0; i < d; i++)
        others += i == c ? 0.0 : (double)xf[i];
    for (int k = 0; k < steps; k++) {
        for (size_t i = 0; i < d; i++)
            row[i] = xf[(size_t)k * d + i];
        add_token(row, d, norm, eps, px, py, &n);
    }
    nc_outlier_steps one;
    memset(&one, 0, sizeof one);
    if ((rc = fit_points(px, py, n, norm, d, &one, err)))
        return rc;
    double m = d > 1 ? fabs(others / (double)(d - 1)) : 0.0;
    q[Q_RATIO] = one.ratio;
    q[Q_DYT] = one.dyt.mean_abs_res;
    q[Q_DYISRU] = one.dyisru.mean_abs_res;
    q[Q_MEAN] = m;
    q[Q_RATIO_M] = one.ratio * m;
    return 0;
}

int nc_outlier_steps_spread(size_t d, int steps, nc_synth_rng rng, uint64_t seed0, size_t draws,
                            nc_norm_kind norm, double eps, nc_outlier_steps *out, nc_err *err)
{
    if (draws < 1 || d < 1 || steps < 1)
        return nc_err_set(err, NC_EINVAL,
                          "outlier steps: draws = %zu, d = %zu, steps = %d: expected each >= 1",
                          draws, d, steps);
    int rc = 0;
    float *xf = malloc((size_t)steps * d * sizeof *xf);
    double *row = malloc(d * sizeof *row);
    double *px = malloc(4 * (size_t)steps * sizeof *px);
    double *q = malloc(Q_COUNT * draws * sizeof *q); /* q[j * draws + k]: quantity j, draw k */
    if (!xf || !row || !px || !q) {
        rc = nc_err_set(err, NC_ENOMEM, "outlier steps: out of memory for %zu draws", draws);
        goto out;
    }
    for (size_t k = 0; k < draws && !rc; k++) {
        double one[Q_COUNT];
        rc = spread_draw(d, steps, rng, seed0 + k, norm, eps, xf, row, px, px + 2 * steps, one,
                         err);
        for (int j = 0; j < Q_COUNT && !rc; j++)
            q[(size_t)j * draws + k] = one[j];
    }
    if (rc)
        goto out;
    nc_outlier_spread *s = &out->spread;
    s->draws = draws;
    s->seed0 = seed0;
    s->rng = rng;
    s->ratio = quantiles(q + Q_RATIO * draws, draws);
    s->dyt_res = quantiles(q + Q_DYT * draws, draws);
    s->dyisru_res = quantiles(q + Q_DYISRU * draws, draws);
    s->mean_others = quantiles(q + Q_MEAN * draws, draws);
    s->ratio_m = quantiles(q + Q_RATIO_M * draws, draws);
    out->has_spread = true;
out:
    free(xf);
    free(row);
    free(px);
    free(q);
    return rc;
}

void nc_outlier_steps_free(nc_outlier_steps *os)
{
    if (!os)
        return;
    free(os->x);
    os->x = os->y = NULL;
}
