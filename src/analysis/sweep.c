/*
 * sweep.c - error curves over alpha and C (sweep.h).
 *
 * Legend: points k with weight w_k (1 for raw points), abscissa x_k, means
 * ybar_k and jbar_k; phi_k the surrogate's shape at the grid value (tanh of
 * alpha x, or x / sqrt(x^2 + C)); a the amplitude, b the offset.
 */
#include "analysis/sweep.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/sum.h"
#include "core/vmath.h"
#include "util/clock.h"

const char *nc_sweep_param_name(nc_sweep_param p)
{
    return p == NC_SWEEP_C ? "C" : "alpha";
}

void nc_sweep_grid(double from, double to, size_t n, bool log_scale, double *grid)
{
    for (size_t k = 0; k < n; k++) {
        double t = n > 1 ? (double)k / (double)(n - 1) : 0.0;
        grid[k] = log_scale ? exp(log(from) + t * (log(to) - log(from)))
                            : from + t * (to - from);
    }
    if (n > 1) {
        grid[0] = from; /* the ends exactly as given */
        grid[n - 1] = to;
    }
}

/* The shape phi and its derivative in x, dphi, at the grid value v. */
NC_VMATH_CLONES static void shape(nc_sweep_param param, double v, const double *x, size_t n,
                                  double *phi, double *dphi)
{
    if (param == NC_SWEEP_ALPHA) {
        for (size_t k = 0; k < n; k++) {
            double t = nc_tanh(v * x[k]);
            phi[k] = t;
            dphi[k] = v * (1.0 - t * t);
        }
    } else {
        for (size_t k = 0; k < n; k++) {
            double q = x[k] * x[k] + v;
            phi[k] = x[k] / sqrt(q);
            dphi[k] = v / (q * sqrt(q));
        }
    }
}

/* sum over k of w_k a_k b_k (b NULL: 1), in lanes (core/sum.h); w may be
 * NULL (1 each). */
static double wsum(const double *w, const double *a, const double *b, size_t n)
{
    double s[NC_LANES] = {0};
    size_t k = 0;
    if (w) {
        for (; k + NC_LANES <= n; k += NC_LANES)
            for (int j = 0; j < NC_LANES; j++)
                s[j] += w[k + j] * a[k + j] * (b ? b[k + j] : 1.0);
        for (int j = 0; k < n; k++, j++)
            s[j] += w[k] * a[k] * (b ? b[k] : 1.0);
    } else {
        for (; k + NC_LANES <= n; k += NC_LANES)
            for (int j = 0; j < NC_LANES; j++)
                s[j] += a[k + j] * (b ? b[k + j] : 1.0);
        for (int j = 0; k < n; k++, j++)
            s[j] += a[k] * (b ? b[k] : 1.0);
    }
    return nc_lanes_total(s);
}

/* sum over k of w_k (t_k - a u_k - b)^2 */
static double wsse(const double *w, const double *t, const double *u, double a, double b,
                   size_t n)
{
    double s[NC_LANES] = {0};
    size_t k = 0;
    for (; k + NC_LANES <= n; k += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            double r = t[k + j] - a * u[k + j] - b;
            s[j] += (w ? w[k + j] : 1.0) * r * r;
        }
    for (int j = 0; k < n; k++, j++) {
        double r = t[k] - a * u[k] - b;
        s[j] += (w ? w[k] : 1.0) * r * r;
    }
    return nc_lanes_total(s);
}

/* The minimiser of a curve on the grid: the best point, refined by the
 * parabola through it and its neighbours in log(value); NaN at an end. */
static double argmin(const double *grid, const double *e, size_t n, double *min)
{
    size_t best = 0;
    for (size_t k = 1; k < n; k++)
        if (e[k] < e[best] || (isnan(e[best]) && !isnan(e[k])))
            best = k;
    *min = e[best];
    if (best == 0 || best + 1 >= n)
        return NAN;
    double u0 = log(grid[best - 1]), u1 = log(grid[best]), u2 = log(grid[best + 1]);
    double f0 = e[best - 1], f1 = e[best], f2 = e[best + 1];
    double den = (u1 - u0) * (f1 - f2) - (u1 - u2) * (f1 - f0);
    if (den == 0)
        return grid[best];
    double u = u1 - 0.5 * ((u1 - u0) * (u1 - u0) * (f1 - f2) - (u1 - u2) * (u1 - u2) * (f1 - f0)) /
                        den;
    return u > u0 && u < u2 ? exp(u) : grid[best];
}

int nc_sweep_run(const nc_layer_result *res, nc_sweep_param param, const double *grid, size_t n,
                 double fixed_amp, double fixed_off, nc_sweep_result *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    const nc_fit_data *fd = &res->data;
    if (n == 0 || fd->n == 0)
        return nc_err_set(err, NC_EINVAL, "%s: sweep of %s: no %s", res->name,
                          nc_sweep_param_name(param), n == 0 ? "grid values" : "data");
    double t0 = nc_now_s();
    double *block = malloc(7 * n * sizeof *block);
    double *scratch = malloc(2 * fd->n * sizeof *scratch);
    if (!block || !scratch) {
        free(block);
        free(scratch);
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory for the sweep", res->name);
    }
    out->param = param;
    out->n = n;
    out->grid = block;
    out->rmse_refit = block + n;
    out->amp_refit = block + 2 * n;
    out->off_refit = block + 3 * n;
    out->rmse_fixed = block + 4 * n;
    out->jac_refit = block + 5 * n;
    out->jac_fixed = block + 6 * n;
    memcpy(out->grid, grid, n * sizeof *grid);
    out->fixed_amp = fixed_amp;
    out->fixed_off = param == NC_SWEEP_ALPHA ? fixed_off : 0.0;
    out->exact = fd->raw;

    const size_t m = fd->n;
    const double *w = fd->w, *x = fd->x, *y = fd->y, *jd = fd->j;
    double *phi = scratch, *dphi = scratch + m;
    const double N = fd->points;
    /* within-bin parts: exact totals minus the bin means' share (0 for raw points) */
    double within_y = fd->raw ? 0.0 : fd->syy - wsum(w, y, y, m);
    double within_j = fd->raw ? 0.0 : fd->sjj - wsum(w, jd, jd, m);
    within_y = within_y > 0 ? within_y : 0.0;
    within_j = within_j > 0 ? within_j : 0.0;
    const double my = fd->sy / N; /* the weights sum to N */
    for (size_t g = 0; g < n; g++) {
        shape(param, grid[g], x, m, phi, dphi);
        double a, b;
        if (param == NC_SWEEP_ALPHA) {
            /* centred normal equations for (gamma, beta) */
            double mp = wsum(w, phi, NULL, m) / N;
            double spp[NC_LANES] = {0}, spy[NC_LANES] = {0};
            size_t k = 0;
            for (; k + NC_LANES <= m; k += NC_LANES)
                for (int j = 0; j < NC_LANES; j++) {
                    double wk = w ? w[k + j] : 1.0, u = phi[k + j] - mp;
                    spp[j] += wk * u * u;
                    spy[j] += wk * u * (y[k + j] - my);
                }
            for (int j = 0; k < m; k++, j++) {
                double wk = w ? w[k] : 1.0, u = phi[k] - mp;
                spp[j] += wk * u * u;
                spy[j] += wk * u * (y[k] - my);
            }
            double Spp = nc_lanes_total(spp), Spy = nc_lanes_total(spy);
            a = Spp > 0 ? Spy / Spp : 0.0;
            b = my - a * mp;
        } else {
            double spp = wsum(w, phi, phi, m);
            a = spp > 0 ? wsum(w, phi, y, m) / spp : 0.0;
            b = 0.0;
        }
        out->amp_refit[g] = a;
        out->off_refit[g] = b;
        out->rmse_refit[g] = sqrt((wsse(w, y, phi, a, b, m) + within_y) / N);
        out->rmse_fixed[g] = sqrt((wsse(w, y, phi, fixed_amp, out->fixed_off, m) + within_y) / N);
        out->jac_refit[g] = sqrt((wsse(w, jd, dphi, a, 0.0, m) + within_j) / N);
        out->jac_fixed[g] = sqrt((wsse(w, jd, dphi, fixed_amp, 0.0, m) + within_j) / N);
    }
    out->opt_refit = argmin(out->grid, out->rmse_refit, n, &out->min_refit);
    out->opt_fixed = argmin(out->grid, out->rmse_fixed, n, &out->min_fixed);
    out->opt_jac = argmin(out->grid, out->jac_refit, n, &out->min_jac);
    const double rho = res->stats.rho;
    if (param == NC_SWEEP_ALPHA) {
        out->fitted = res->fits[NC_FIT_DYT].ok ? res->fits[NC_FIT_DYT].params.p[0] : NAN;
        out->theory = nc_dyt_theory_params(res->norm, rho, res->d).p[0];
    } else {
        /* the refitted-scale curve is minimised by the free-scale fit */
        out->fitted = res->fits[NC_FIT_DYISRU_FREE].ok ? res->fits[NC_FIT_DYISRU_FREE].params.p[0]
                                                        : NAN;
        out->theory = nc_dyisru_theory_params(res->norm, rho, res->d).p[0];
    }
    free(scratch);
    out->time_s = nc_now_s() - t0;
    return 0;
}

void nc_sweep_result_free(nc_sweep_result *r)
{
    if (!r)
        return;
    free(r->grid);
    memset(r, 0, sizeof *r);
}
