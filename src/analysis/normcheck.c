/*
 * normcheck.c - the real output's tolerance and the norm read back from the
 * real output (normcheck.h, which derives the method).
 *
 * Legend: t a visited token, i a channel, x the input, y the real output,
 * w, b the affine weight and bias, z = (y - b) / w over the channels with
 * w_i != 0, u = x - mean(x) (LayerNorm) or x (RMSNorm). One pass; per
 * shard sums merged in shard order, per-token values in arrays reduced
 * serially: results do not depend on the thread count.
 */
#include "analysis/normcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/par.h"
#include "core/sum.h"

double nc_dtype_unit_roundoff(nc_dtype dt)
{
    switch (dt) {
    case NC_F16: return ldexp(1.0, -11);
    case NC_BF16: return ldexp(1.0, -8);
    case NC_F64: return ldexp(1.0, -53);
    default: return ldexp(1.0, -24);
    }
}

double nc_real_output_tol(const nc_tensor *x, const nc_tensor *y_real, double real_max_abs)
{
    double ux = nc_dtype_unit_roundoff(x->dtype), uy = nc_dtype_unit_roundoff(y_real->dtype);
    return 16.0 * (ux > uy ? ux : uy) * real_max_abs;
}

typedef struct detect_ctx {
    const nc_layer_result *res;
    const nc_tensor *y;
    const double *w, *b;    /* [d] or NULL */
    double *eps_t, *m_t;    /* [nt][2]: per token and kind; NAN where undefined */
    nc_sum resid[NC_SHARDS][2], szz[NC_SHARDS];
    size_t used[NC_SHARDS];
} detect_ctx;

/* One token: z, the least-squares scale per kind, its residual and eps_t. */
static void detect_token(detect_ctx *c, int shard, size_t t, const double *x, double *z)
{
    const size_t d = c->res->d;
    size_t tok = c->res->tok.index ? c->res->tok.index[t] : t;
    nc_tensor_rows(c->y, tok, 1, z);
    double sx = 0, sxx = 0;
    for (size_t i = 0; i < d; i++) {
        sx += x[i];
        sxx += x[i] * x[i];
    }
    const double mu = sx / (double)d;
    double var = 0;
    for (size_t i = 0; i < d; i++)
        var += (x[i] - mu) * (x[i] - mu);
    const double m[2] = {[NC_LAYERNORM] = var / (double)d, [NC_RMSNORM] = sxx / (double)d};
    const double centre[2] = {[NC_LAYERNORM] = mu, [NC_RMSNORM] = 0.0};
    double suu[2] = {0}, szu[2] = {0}, szz = 0;
    for (size_t i = 0; i < d; i++) {
        double wi = c->w ? c->w[i] : 1.0, bi = c->b ? c->b[i] : 0.0;
        if (wi == 0)
            continue;
        double zi = (z[i] - bi) / wi;
        szz += zi * zi;
        for (int k = 0; k < 2; k++) {
            double u = x[i] - centre[k];
            suu[k] += u * u;
            szu[k] += zi * u;
        }
    }
    double *eps_t = c->eps_t + 2 * t, *m_t = c->m_t + 2 * t;
    eps_t[0] = eps_t[1] = m_t[0] = m_t[1] = NAN;
    if (!isfinite(szz) || !isfinite(sxx) || !(szz > 0))
        return;
    c->used[shard]++;
    nc_sum_add(&c->szz[shard], szz);
    for (int k = 0; k < 2; k++) {
        double a = suu[k] > 0 ? szu[k] / suu[k] : 0.0;
        double r = suu[k] > 0 ? szz - szu[k] * a : szz;
        nc_sum_add(&c->resid[shard][k], r > 0 ? r : 0.0);
        if (a > 0 && m[k] > 0) {
            eps_t[k] = 1.0 / (a * a) - m[k];
            m_t[k] = m[k];
        }
    }
}

static void detect_block(void *vctx, int shard, size_t t0, size_t nt, const double *rows,
                         const uint16_t *codes, void *scratch)
{
    (void)codes;
    detect_ctx *c = vctx;
    const size_t d = c->res->d;
    for (size_t k = 0; k < nt; k++) {
        size_t t = t0 + k;
        if (c->res->tok.status[t] == NC_TOKEN_NONFINITE) {
            c->eps_t[2 * t] = c->eps_t[2 * t + 1] = NAN;
            c->m_t[2 * t] = c->m_t[2 * t + 1] = NAN;
            continue;
        }
        detect_token(c, shard, t, rows + k * d, scratch);
    }
}

/* The weighted estimate of eps under kind k (weights 1/m_t^2), its
 * standard error, and what to use. */
static void estimate_eps(const detect_ctx *c, size_t nt, int k, nc_norm_detect *out)
{
    double sw = 0, swe = 0;
    size_t n = 0;
    for (size_t t = 0; t < nt; t++) {
        double e = c->eps_t[2 * t + k], m = c->m_t[2 * t + k];
        if (!isfinite(e) || !(m > 0))
            continue;
        double w = 1.0 / (m * m);
        sw += w;
        swe += w * e;
        n++;
    }
    out->eps_hat = out->eps_se = out->eps_bound = out->eps = NAN;
    if (n < 2 || !(sw > 0))
        return;
    double mean = swe / sw, ss = 0;
    for (size_t t = 0; t < nt; t++) {
        double e = c->eps_t[2 * t + k], m = c->m_t[2 * t + k];
        if (isfinite(e) && m > 0)
            ss += (e - mean) * (e - mean) / (m * m);
    }
    out->eps_hat = mean;
    out->eps_se = sqrt(ss / ((double)(n - 1) * sw));
    out->eps_identified = mean > 3.0 * out->eps_se;
    if (!out->eps_identified) {
        double bound = mean + 3.0 * out->eps_se;
        out->eps_bound = bound > 0 ? bound : 0.0;
        return;
    }
    out->eps = mean;
    double p = pow(10.0, round(log10(mean)));
    double lim = fmax(3.0 * out->eps_se, 0.02 * p);
    if (fabs(mean - p) <= lim)
        out->eps = p;
}

int nc_norm_detect_run(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *y_real,
                       const nc_tensor *weight, const nc_tensor *bias, double u_round,
                       int threads, nc_norm_detect *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    const size_t d = res->d, nt = res->tok.nt;
    int rc = 0;
    detect_ctx *c = calloc(1, sizeof *c);
    double *wb = malloc(2 * (d ? d : 1) * sizeof *wb);
    double *per = malloc(4 * (nt ? nt : 1) * sizeof *per);
    if (!c || !wb || !per) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for the norm detection", res->name);
        goto out;
    }
    c->res = res;
    c->y = y_real;
    if (weight) {
        nc_tensor_elems(weight, 0, d, wb);
        c->w = wb;
    }
    if (bias) {
        nc_tensor_elems(bias, 0, d, wb + d);
        c->b = wb + d;
    }
    c->eps_t = per;
    c->m_t = per + 2 * nt;
    nc_pass pass = nc_layer_pass(res, x, threads, NULL);
    pass.scratch_bytes = d * sizeof(double);
    if (nt && d && (rc = nc_pass_run(&pass, detect_block, c, err)))
        goto out;
    for (int s = 1; s < NC_SHARDS; s++) {
        nc_sum_merge(&c->szz[0], &c->szz[s]);
        nc_sum_merge(&c->resid[0][0], &c->resid[s][0]);
        nc_sum_merge(&c->resid[0][1], &c->resid[s][1]);
        c->used[0] += c->used[s];
    }
    out->tokens = c->used[0];
    double szz = nc_sum_get(&c->szz[0]);
    for (int k = 0; k < 2; k++)
        out->rel_resid[k] = szz > 0 ? sqrt(nc_sum_get(&c->resid[0][k]) / szz) : NAN;
    int best = out->rel_resid[NC_RMSNORM] < out->rel_resid[NC_LAYERNORM] ? NC_RMSNORM
                                                                          : NC_LAYERNORM;
    out->kind = (nc_norm_kind)best;
    const double noise = 64.0 * u_round;
    out->fits = out->rel_resid[best] < noise;
    out->kind_identified = out->fits && !(out->rel_resid[1 - best] < noise);
    estimate_eps(c, nt, best, out);
out:
    free(per);
    free(wb);
    free(c);
    return rc;
}
