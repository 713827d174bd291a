/*
 * norm.c - LayerNorm and RMSNorm per token (norm.h).
 */
#include "core/norm.h"

#include <math.h>
#include <string.h>

#include "core/sum.h"

const char *nc_norm_name(nc_norm_kind kind)
{
    return kind == NC_RMSNORM ? "rmsnorm" : "layernorm";
}

bool nc_norm_parse(const char *s, nc_norm_kind *kind)
{
    /* the letters alone, lower case: "LayerNorm", "layer_norm", "RMS-Norm" */
    char k[16];
    size_t n = 0;
    for (; *s; s++) {
        char c = *s;
        if (c == '_' || c == '-' || c == ' ')
            continue;
        if (n + 1 >= sizeof k)
            return false;
        k[n++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
    }
    k[n] = '\0';
    if (strcmp(k, "layernorm") == 0 || strcmp(k, "ln") == 0) {
        *kind = NC_LAYERNORM;
        return true;
    }
    if (strcmp(k, "rmsnorm") == 0 || strcmp(k, "rms") == 0) {
        *kind = NC_RMSNORM;
        return true;
    }
    return false;
}

/* The two-pass statistics of x * f (f a power of two, 1 when unscaled):
 * mean, sum of squared deviations and sum of squares, each in NC_LANES
 * partial sums (core/sum.h). */
static void token_moments(const double *x, size_t d, double f, double *mean, double *m2,
                          double *sq)
{
    double s[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++)
            s[j] += x[i + j] * f;
    for (int j = 0; i < d; i++, j++)
        s[j] += x[i] * f;
    double mu = nc_lanes_total(s) / (double)d;
    double m[NC_LANES] = {0}, q[NC_LANES] = {0};
    i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            double v = x[i + j] * f, u = v - mu;
            m[j] += u * u;
            q[j] += v * v;
        }
    for (int j = 0; i < d; i++, j++) {
        double v = x[i] * f, u = v - mu;
        m[j] += u * u;
        q[j] += v * v;
    }
    *mean = mu;
    *m2 = nc_lanes_total(m);
    *sq = nc_lanes_total(q);
}

nc_token_stat nc_norm_token(nc_norm_kind kind, double eps, const double *x, size_t d)
{
    nc_token_stat st = {.status = NC_TOKEN_NONFINITE};
    /* a finiteness probe (x - x is 0 only for finite x) and max |x| */
    double p[NC_LANES] = {0}, a[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            p[j] += x[i + j] - x[i + j];
            double ax = fabs(x[i + j]);
            a[j] = ax > a[j] ? ax : a[j];
        }
    for (int j = 0; i < d; i++, j++) {
        p[j] += x[i] - x[i];
        double ax = fabs(x[i]);
        a[j] = ax > a[j] ? ax : a[j];
    }
    double probe = nc_lanes_total(p), amax = 0.0;
    for (int j = 0; j < NC_LANES; j++)
        amax = a[j] > amax ? a[j] : amax;
    if (probe != 0.0 || isnan(probe))
        return st;
    /* Values whose squares (or sums) would overflow, or underflow to 0, are
     * scaled by a power of two (exact) so that max |x| is about 1; the
     * results are scaled back. Every finite token so gets a finite centre
     * and scale; var and ms themselves overflow to +inf when the scale
     * exceeds about 1e154. Tokens in [2^-500, 2^500] are computed
     * unscaled, bit for bit as before. */
    int k = 0;
    if (amax > 0x1p500 || (amax > 0.0 && amax < 0x1p-500))
        k = ilogb(amax);
    double mean, m2, sq;
    token_moments(x, d, ldexp(1.0, -k), &mean, &m2, &sq);
    double var = m2 / (double)d, ms = sq / (double)d;
    st.mean = ldexp(mean, k);
    st.var = ldexp(var, 2 * k);
    st.ms = ldexp(ms, 2 * k);
    /* eps in the scaled units; infinite for tiny tokens (|x| < 2^-500)
     * with eps > 0, where eps dominates and the unscaled sqrt(var + eps)
     * is exact to rounding (var underflows harmlessly beside eps). */
    double e = ldexp(eps, -2 * k);
    double m = kind == NC_LAYERNORM ? var : ms;
    st.centre = kind == NC_LAYERNORM ? st.mean : 0.0;
    st.scale = isfinite(e) ? ldexp(sqrt(m + e), k) : sqrt(ldexp(m, 2 * k) + eps);
    st.status = st.scale > 0.0 ? NC_TOKEN_OK : NC_TOKEN_ZERO_SCALE;
    return st;
}

void nc_norm_apply(const nc_token_stat *st, const double *x, size_t d, double *y)
{
    const double c = st->centre, inv = 1.0 / st->scale;
    for (size_t i = 0; i < d; i++)
        y[i] = (x[i] - c) * inv;
}

void nc_norm_affine(const double *weight, const double *bias, size_t d, double *y)
{
    if (weight)
        for (size_t i = 0; i < d; i++)
            y[i] *= weight[i];
    if (bias)
        for (size_t i = 0; i < d; i++)
            y[i] += bias[i];
}
