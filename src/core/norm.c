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
    if (strcmp(s, "layernorm") == 0 || strcmp(s, "ln") == 0) {
        *kind = NC_LAYERNORM;
        return true;
    }
    if (strcmp(s, "rmsnorm") == 0 || strcmp(s, "rms") == 0) {
        *kind = NC_RMSNORM;
        return true;
    }
    return false;
}

nc_token_stat nc_norm_token(nc_norm_kind kind, double eps, const double *x, size_t d)
{
    nc_token_stat st = {.status = NC_TOKEN_NONFINITE};
    /* pass 1: sum and a finiteness probe (x - x is 0 only for finite x);
     * NC_LANES partial sums (core/sum.h) */
    double s[NC_LANES] = {0}, p[NC_LANES] = {0};
    size_t i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            s[j] += x[i + j];
            p[j] += x[i + j] - x[i + j];
        }
    for (int j = 0; i < d; i++, j++) {
        s[j] += x[i];
        p[j] += x[i] - x[i];
    }
    double sum = nc_lanes_total(s), probe = nc_lanes_total(p);
    if (probe != 0.0 || !isfinite(sum) || isnan(probe))
        return st;
    double mean = sum / (double)d;
    /* pass 2: squared deviations, and squares for the RMS */
    double m[NC_LANES] = {0}, q[NC_LANES] = {0};
    i = 0;
    for (; i + NC_LANES <= d; i += NC_LANES)
        for (int j = 0; j < NC_LANES; j++) {
            double u = x[i + j] - mean;
            m[j] += u * u;
            q[j] += x[i + j] * x[i + j];
        }
    for (int j = 0; i < d; i++, j++) {
        double u = x[i] - mean;
        m[j] += u * u;
        q[j] += x[i] * x[i];
    }
    double m2 = nc_lanes_total(m), sq = nc_lanes_total(q);
    if (!isfinite(m2) || !isfinite(sq)) /* finite values whose squares overflow */
        return st;
    st.mean = mean;
    st.var = m2 / (double)d;
    st.ms = sq / (double)d;
    if (kind == NC_LAYERNORM) {
        st.centre = mean;
        st.scale = sqrt(st.var + eps);
    } else {
        st.centre = 0.0;
        st.scale = sqrt(st.ms + eps);
    }
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
