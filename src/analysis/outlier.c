/*
 * outlier.c - the outlier-steps experiment (outlier.h).
 */
#include "analysis/outlier.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/fit.h"
#include "analysis/layer.h"

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
        nc_token_stat st = nc_norm_token(norm, eps, row, d);
        if (st.status != NC_TOKEN_OK)
            continue;
        size_t imax = 0;
        for (size_t i = 1; i < d; i++)
            if (row[i] > row[imax])
                imax = i;
        double y = (row[imax] - st.centre) / st.scale;
        px[n] = row[imax];
        py[n] = y;
        px[n + 1] = -row[imax];
        py[n + 1] = -y;
        n += 2;
    }
    if (n == 0) {
        rc = nc_err_set(err, NC_EINVAL, "outlier steps: no token with finite values");
        goto out;
    }
    out->tokens = n / 2;
    out->points = n;
    nc_amp_rule rule;
    nc_amp_resolve((nc_amp){NC_AMP_AUTO, 0}, norm, d, &out->amplitude, &rule);

    nc_points pts = {.x = px, .y = py, .n = n};
    nc_fit_opts o = {.amp_fixed = true, .amp = out->amplitude, .no_offset = true};
    nc_fit_out fo;
    if ((rc = nc_fit_dyt(&pts, &o, &fo, err)))
        goto out;
    nc_params p = {.p = {fo.p[0], out->amplitude, 0}};
    out->dyt.param = fo.p[0];
    out->dyt.converged = fo.converged;
    residuals(&pts, nc_surrogate_get(NC_FIT_DYT), &p, &out->dyt);

    if ((rc = nc_fit_dyisru(&pts, &o, &fo, err)))
        goto out;
    p = (nc_params){.p = {fo.p[0], out->amplitude}};
    out->dyisru.param = fo.p[0];
    out->dyisru.converged = fo.converged;
    residuals(&pts, nc_surrogate_get(NC_FIT_DYISRU), &p, &out->dyisru);
    out->ratio = out->dyisru.mean_abs_res > 0 ? out->dyt.mean_abs_res / out->dyisru.mean_abs_res
                                              : INFINITY;
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

void nc_outlier_steps_free(nc_outlier_steps *os)
{
    if (!os)
        return;
    free(os->x);
    os->x = os->y = NULL;
}
