/*
 * normeps.c - eps from the tokens' fitted scales: the estimate, its
 * cluster-robust standard error, the rounding bias and the interval
 * (normeps.h; docs/report.md, "real_output_check").
 *
 * Legend: t a token, m_t its mean square (about its centre), a_t its fitted
 * scale, w_t the weight a_t^6 uu_t (normeps.h). Rows are sorted by (m, a)
 * so that identical tokens are adjacent: each run of them is one cluster.
 */
#include "analysis/normeps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double nc_scale_bias(double uc, double uy)
{
    double out = uy == 0x1p-8 ? NC_NORMCHECK_BIAS_BF16 : uy == 0x1p-11 ? NC_NORMCHECK_BIAS_F16 : 0.0;
    return NC_NORMCHECK_BIAS_ULPS * uc + out * uy;
}

typedef struct eps_row {
    double m, a; /* the token's m_t and fitted scale (sort keys: identical tokens) */
    double lw;   /* log of its weight a^6 uu */
} eps_row;

static int cmp_row(const void *pa, const void *pb)
{
    const eps_row *p = pa, *q = pb;
    if (p->m != q->m)
        return p->m < q->m ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return 0;
}

/* eps with the slope fixed at 1: the weighted mean of 1/a^2 - m, its
 * cluster-robust standard error. w[] the weights (rows sorted). */
static void eps_fixed(const eps_row *r, const double *w, size_t n, size_t C, nc_eps_fit *e)
{
    double sw = 0, swe = 0;
    for (size_t j = 0; j < n; j++) {
        sw += w[j];
        swe += w[j] * (1.0 / (r[j].a * r[j].a) - r[j].m);
    }
    double est = swe / sw, meat = 0, g = 0;
    for (size_t j = 0; j < n; j++) {
        g += w[j] * (1.0 / (r[j].a * r[j].a) - r[j].m - est);
        if (j + 1 == n || cmp_row(&r[j], &r[j + 1])) {
            meat += g * g;
            g = 0;
        }
    }
    e->estimate = est;
    e->se = sqrt(meat * (double)C / (double)(C - 1)) / sw;
    e->assessed = true;
}

/* eps from the weighted line 1/a^2 = beta (m - mbar) + gamma', eps =
 * gamma'/beta - mbar, with the cluster-robust covariance and the delta
 * method. */
static void eps_line(const eps_row *r, const double *w, size_t n, size_t C, nc_eps_fit *e)
{
    double sw = 0, swm = 0, swy = 0;
    for (size_t j = 0; j < n; j++) {
        sw += w[j];
        swm += w[j] * r[j].m;
        swy += w[j] / (r[j].a * r[j].a);
    }
    const double mbar = swm / sw, ybar = swy / sw;
    double sxx = 0, sxy = 0;
    for (size_t j = 0; j < n; j++) {
        double dm = r[j].m - mbar;
        sxx += w[j] * dm * dm;
        sxy += w[j] * dm * (1.0 / (r[j].a * r[j].a) - ybar);
    }
    if (!(sxx > 0))
        return;
    const double beta = sxy / sxx, gam = ybar;
    if (!(beta > 0))
        return;
    double m00 = 0, m01 = 0, m11 = 0, g0 = 0, g1 = 0;
    for (size_t j = 0; j < n; j++) {
        double dm = r[j].m - mbar;
        double res = 1.0 / (r[j].a * r[j].a) - (beta * dm + gam);
        g0 += w[j] * dm * res;
        g1 += w[j] * res;
        if (j + 1 == n || cmp_row(&r[j], &r[j + 1])) {
            m00 += g0 * g0;
            m01 += g0 * g1;
            m11 += g1 * g1;
            g0 = g1 = 0;
        }
    }
    double f = (double)C / (double)(C - 1);
    double vbb = f * m00 / (sxx * sxx), vbg = f * m01 / (sxx * sw), vgg = f * m11 / (sw * sw);
    e->beta = beta;
    e->estimate = gam / beta - mbar;
    double var = vgg / (beta * beta) - 2.0 * gam * vbg / (beta * beta * beta) +
                 gam * gam * vbb / (beta * beta * beta * beta);
    e->se = sqrt(var > 0 ? var : 0.0);
    e->assessed = true;
}

int nc_eps_fit_run(const double *m, const double *a, const double *uu, size_t nt, bool slope,
                   double uc, double uy, nc_eps_fit *e, nc_err *err)
{
    memset(e, 0, sizeof *e);
    e->slope_fitted = slope;
    e->beta = 1.0;
    e->estimate = e->se = e->bias = NAN;
    e->lo = -INFINITY;
    e->hi = INFINITY;
    eps_row *r = malloc((nt ? nt : 1) * sizeof *r);
    double *w = malloc((nt ? nt : 1) * sizeof *w);
    if (!r || !w) {
        free(r);
        free(w);
        return nc_err_set(err, NC_ENOMEM, "out of memory for the eps estimate");
    }
    size_t n = 0;
    double lmax = -INFINITY;
    for (size_t t = 0; t < nt; t++) {
        double at = a[t];
        if (!(at > 0) || !(uu[t] > 0) || !isfinite(at) || !isfinite(uu[t]))
            continue;
        r[n] = (eps_row){m[t], at, 6.0 * log(at) + log(uu[t])};
        lmax = fmax(lmax, r[n].lw);
        n++;
    }
    qsort(r, n, sizeof *r, cmp_row);
    size_t C = 0;
    for (size_t j = 0; j < n; j++) {
        w[j] = exp(r[j].lw - lmax);
        C += j == 0 || cmp_row(&r[j - 1], &r[j]) != 0;
    }
    e->tokens = n;
    e->clusters = C;
    if (C >= (slope ? 3u : 2u)) {
        if (slope)
            eps_line(r, w, n, C, e);
        else
            eps_fixed(r, w, n, C, e);
    }
    if (e->assessed) {
        double sw = 0, swm = 0;
        for (size_t j = 0; j < n; j++) {
            sw += w[j];
            swm += w[j] * (r[j].m + fmax(e->estimate, 0.0));
        }
        e->bias = 2.0 * nc_scale_bias(uc, uy) * swm / sw;
        e->lo = e->estimate - NC_NORMCHECK_Z * e->se - e->bias;
        e->hi = e->estimate + NC_NORMCHECK_Z * e->se + e->bias;
        e->identified = e->lo > 0;
    }
    free(r);
    free(w);
    return 0;
}

bool nc_eps_fit_allows(const nc_eps_fit *e, double eps)
{
    return !e->assessed || (eps >= e->lo && eps <= e->hi);
}

/* The value nearest target with `digits` significant digits, if in [lo, hi]. */
static bool round_in(double target, int digits, double lo, double hi, double *out)
{
    double step = pow(10.0, floor(log10(target)) - (digits - 1));
    double v = round(target / step) * step;
    *out = v;
    return v >= lo && v <= hi;
}

double nc_eps_pick(const nc_eps_fit *e, double preferred)
{
    if (nc_eps_fit_allows(e, preferred) && preferred >= 0)
        return preferred;
    if (!(e->hi > 0))
        return 0.0;
    if (!e->identified)
        return pow(10.0, floor(log10(e->hi)));
    double lo = e->lo, hi = e->hi, target = fmin(fmax(e->estimate, lo), hi);
    double best = NAN;
    for (double k = ceil(log10(lo)); k <= floor(log10(hi)); k++) {
        double p = pow(10.0, k);
        if (p >= lo && p <= hi &&
            (best != best || fabs(log10(p / target)) < fabs(log10(best / target))))
            best = p;
    }
    if (best == best)
        return best;
    for (int digits = 1; digits <= 3; digits++)
        if (round_in(target, digits, lo, hi, &best))
            return best;
    return target;
}
