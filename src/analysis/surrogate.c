/*
 * surrogate.c - the surrogate table (surrogate.h).
 *
 * Every f and f' is a plain loop over x calling the branch-free inline
 * functions of core/vmath.h, so the compiler vectorises it; tanh and erf
 * go through vmath's runs (nc_tanh_run, nc_erf_run), which take the cheap
 * first region alone wherever a run of values allows, with the same bits.
 * The hot passes call these once per chunk of a token row.
 */
#include "analysis/surrogate.h"

#include <math.h>
#include <string.h>

#include "core/vmath.h"

/* ---- linear: slope, intercept ---- */

NC_VMATH_CLONES static void linear_f(const nc_params *p, size_t i0, const double *x, size_t n, double *y)
{
    (void)i0;
    const double a = p->p[0], b = p->p[1];
    for (size_t k = 0; k < n; k++)
        y[k] = a * x[k] + b;
}

NC_VMATH_CLONES static void linear_df(const nc_params *p, size_t i0, const double *x, size_t n, double *dy)
{
    (void)i0;
    (void)x;
    for (size_t k = 0; k < n; k++)
        dy[k] = p->p[0];
}

NC_VMATH_CLONES static void linear_both(const nc_params *p, size_t i0, const double *x, size_t n,
                                        double *y, double *dy)
{
    (void)i0;
    const double a = p->p[0], b = p->p[1];
    for (size_t k = 0; k < n; k++) {
        y[k] = a * x[k] + b;
        dy[k] = a;
    }
}

/* ---- DyT: alpha, gamma, beta ---- */

NC_VMATH_CLONES static void dyt_f(const nc_params *p, size_t i0, const double *x, size_t n, double *y)
{
    (void)i0;
    const double alpha = p->p[0], gamma = p->p[1], beta = p->p[2];
    nc_tanh_run(alpha, x, n, y);
    for (size_t k = 0; k < n; k++)
        y[k] = gamma * y[k] + beta;
}

NC_VMATH_CLONES static void dyt_df(const nc_params *p, size_t i0, const double *x, size_t n, double *dy)
{
    (void)i0;
    const double alpha = p->p[0], ag = p->p[0] * p->p[1];
    nc_tanh_run(alpha, x, n, dy);
    for (size_t k = 0; k < n; k++)
        dy[k] = ag * (1.0 - dy[k] * dy[k]);
}

NC_VMATH_CLONES static void dyt_both(const nc_params *p, size_t i0, const double *x, size_t n,
                                     double *y, double *dy)
{
    (void)i0;
    const double alpha = p->p[0], gamma = p->p[1], beta = p->p[2], ag = p->p[0] * p->p[1];
    nc_tanh_run(alpha, x, n, y);
    for (size_t k = 0; k < n; k++) {
        double t = y[k];
        y[k] = gamma * t + beta;
        dy[k] = ag * (1.0 - t * t);
    }
}

/* ---- DyT per channel: alpha; gamma_i, beta_i in pc ---- */

NC_VMATH_CLONES static void dytc_f(const nc_params *p, size_t i0, const double *x, size_t n, double *y)
{
    const double *g = p->pc, *b = p->pc + p->d;
    size_t i = i0 % p->d;
    nc_tanh_run(p->p[0], x, n, y);
    if (i + n <= p->d) { /* within one row: the vectorised case */
        for (size_t k = 0; k < n; k++)
            y[k] = g[i + k] * y[k] + b[i + k];
        return;
    }
    for (size_t k = 0; k < n; k++) {
        y[k] = g[i] * y[k] + b[i];
        if (++i == p->d)
            i = 0;
    }
}

NC_VMATH_CLONES static void dytc_df(const nc_params *p, size_t i0, const double *x, size_t n, double *dy)
{
    const double alpha = p->p[0];
    const double *g = p->pc;
    size_t i = i0 % p->d;
    nc_tanh_run(alpha, x, n, dy);
    if (i + n <= p->d) {
        for (size_t k = 0; k < n; k++)
            dy[k] = alpha * g[i + k] * (1.0 - dy[k] * dy[k]);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        dy[k] = alpha * g[i] * (1.0 - dy[k] * dy[k]);
        if (++i == p->d)
            i = 0;
    }
}

NC_VMATH_CLONES static void dytc_both(const nc_params *p, size_t i0, const double *x, size_t n,
                                      double *y, double *dy)
{
    const double alpha = p->p[0];
    const double *g = p->pc, *b = p->pc + p->d;
    size_t i = i0 % p->d;
    nc_tanh_run(alpha, x, n, y);
    if (i + n <= p->d) {
        for (size_t k = 0; k < n; k++) {
            double t = y[k];
            y[k] = g[i + k] * t + b[i + k];
            dy[k] = alpha * g[i + k] * (1.0 - t * t);
        }
        return;
    }
    for (size_t k = 0; k < n; k++) {
        double t = y[k];
        y[k] = g[i] * t + b[i];
        dy[k] = alpha * g[i] * (1.0 - t * t);
        if (++i == p->d)
            i = 0;
    }
}

/* ---- DyISRU: C, scale ---- */

NC_VMATH_CLONES static void isru_f(const nc_params *p, size_t i0, const double *x, size_t n, double *y)
{
    (void)i0;
    const double C = p->p[0], s = p->p[1];
    for (size_t k = 0; k < n; k++)
        y[k] = s * x[k] / sqrt(x[k] * x[k] + C);
}

/* d/dx s*x/sqrt(x^2+C) = s*C/(x^2+C)^(3/2) */
NC_VMATH_CLONES static void isru_df(const nc_params *p, size_t i0, const double *x, size_t n, double *dy)
{
    (void)i0;
    const double C = p->p[0], s = p->p[1];
    for (size_t k = 0; k < n; k++) {
        double q = x[k] * x[k] + C;
        dy[k] = s * C / (q * sqrt(q));
    }
}

NC_VMATH_CLONES static void isru_both(const nc_params *p, size_t i0, const double *x, size_t n,
                                      double *y, double *dy)
{
    (void)i0;
    const double C = p->p[0], s = p->p[1];
    for (size_t k = 0; k < n; k++) {
        double q = x[k] * x[k] + C, r = sqrt(q);
        y[k] = s * x[k] / r;
        dy[k] = s * C / (q * r);
    }
}

/* ---- Derf: alpha, shift, gamma, beta ---- */

NC_VMATH_CLONES static void derf_f(const nc_params *p, size_t i0, const double *x, size_t n, double *y)
{
    (void)i0;
    const double alpha = p->p[0], shift = p->p[1], gamma = p->p[2], beta = p->p[3];
    nc_erf_run(alpha, shift, x, n, y);
    for (size_t k = 0; k < n; k++)
        y[k] = gamma * y[k] + beta;
}

NC_VMATH_CLONES static void derf_df(const nc_params *p, size_t i0, const double *x, size_t n, double *dy)
{
    (void)i0;
    const double alpha = p->p[0], shift = p->p[1], ag = p->p[0] * p->p[2];
    for (size_t k = 0; k < n; k++)
        dy[k] = ag * nc_erf_deriv(alpha * x[k] + shift);
}

NC_VMATH_CLONES static void derf_both(const nc_params *p, size_t i0, const double *x, size_t n,
                                      double *y, double *dy)
{
    (void)i0;
    const double alpha = p->p[0], shift = p->p[1], gamma = p->p[2], beta = p->p[3];
    const double ag = p->p[0] * p->p[2];
    nc_erf_run(alpha, shift, x, n, y);
    for (size_t k = 0; k < n; k++) {
        y[k] = gamma * y[k] + beta;
        dy[k] = ag * nc_erf_deriv(alpha * x[k] + shift);
    }
}

static const nc_surrogate table[NC_FIT_COUNT] = {
    [NC_FIT_LINEAR] = {NC_FIT_LINEAR, "linear", "affine", "slope*x+intercept", 2,
                       {"slope", "intercept"}, false, false, linear_f, linear_df, linear_both},
    [NC_FIT_DYT] = {NC_FIT_DYT, "dyt", "DyT", "gamma*tanh(alpha*x)+beta", 3,
                    {"alpha", "gamma", "beta"}, false, false, dyt_f, dyt_df, dyt_both},
    [NC_FIT_DYT_PER_CHANNEL] = {NC_FIT_DYT_PER_CHANNEL, "dyt_per_channel", "DyT (per channel)",
                                "gamma_i*tanh(alpha*x)+beta_i", 1, {"alpha"}, true, false,
                                dytc_f, dytc_df, dytc_both},
    [NC_FIT_DYISRU] = {NC_FIT_DYISRU, "dyisru", "DyISRU", "scale*x/sqrt(x^2+C)", 2,
                       {"C", "scale"}, false, false, isru_f, isru_df, isru_both},
    [NC_FIT_DYISRU_FREE] = {NC_FIT_DYISRU_FREE, "dyisru_free", "DyISRU (free scale)",
                            "scale*x/sqrt(x^2+C)", 2, {"C", "scale"}, false, false, isru_f,
                            isru_df, isru_both},
    [NC_FIT_DYT_THEORY] = {NC_FIT_DYT_THEORY, "dyt_theory", "DyT theory",
                           "A*tanh(u/(A*rho)), A = sqrt(d) (RMSNorm) or sqrt(d-1) (LayerNorm)",
                           3, {"alpha", "gamma", "beta"},
                           false, true, dyt_f, dyt_df, dyt_both},
    [NC_FIT_DYISRU_THEORY] = {NC_FIT_DYISRU_THEORY, "dyisru_theory", "DyISRU theory",
                              "A*u/sqrt(u^2+A^2*rho^2), A = sqrt(d) (RMSNorm) or sqrt(d-1) "
                              "(LayerNorm)",
                              2, {"C", "scale"}, false, true,
                              isru_f, isru_df, isru_both},
    [NC_FIT_DERF] = {NC_FIT_DERF, "derf", "Derf", "gamma*erf(alpha*x+shift)+beta", 4,
                     {"alpha", "shift", "gamma", "beta"}, false, false, derf_f, derf_df, derf_both},
};

const nc_surrogate *nc_surrogate_get(nc_fit_id id)
{
    return (unsigned)id < NC_FIT_COUNT ? &table[id] : NULL;
}

const nc_surrogate *nc_surrogate_find(const char *name)
{
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (strcmp(table[k].name, name) == 0)
            return &table[k];
    return NULL;
}

bool nc_fit_ranked(nc_fit_id k)
{
    return k != NC_FIT_LINEAR && k != NC_FIT_DYT_PER_CHANNEL;
}

double nc_surrogate_f(const nc_surrogate *s, const nc_params *p, size_t channel, double x)
{
    double y;
    s->eval(p, channel, &x, 1, &y);
    return y;
}

double nc_surrogate_df(const nc_surrogate *s, const nc_params *p, size_t channel, double x)
{
    double dy;
    s->deriv(p, channel, &x, 1, &dy);
    return dy;
}

double nc_theory_amp(nc_norm_kind norm, size_t d)
{
    return norm == NC_LAYERNORM && d >= 2 ? sqrt((double)d - 1.0) : sqrt((double)d);
}

/* The curves in one variable (docs/theory.md): ODE-1 in the token's own
 * variable, dy/du = (1/rho)(1 - y^2/A^2), A^2 = d (RMSNorm, u = x) or d - 1
 * (LayerNorm, u = x - mu), gives gamma = A, alpha = 1/(A rho): slope 1/rho
 * at the origin, the token's own slope; ODE-2 gives the ISRU with C =
 * A^2 rho^2. For RMSNorm these are the expressions used before LayerNorm
 * got its own, so their bits do not change. */
nc_params nc_dyt_theory_params(nc_norm_kind norm, double rho, size_t d)
{
    double a = nc_theory_amp(norm, d);
    return (nc_params){.p = {1.0 / (rho * a), a, 0.0}};
}

const char *nc_theory_param_formula(nc_fit_id id, nc_norm_kind norm)
{
    /* the parameters of nc_dyt_theory_params and nc_dyisru_theory_params,
     * written out: keep the two in step */
    bool rms = norm == NC_RMSNORM;
    if (id == NC_FIT_DYT_THEORY)
        return rms ? "1/(\xcf\x81\xe2\x88\x9a" "d)"
                   : "1/(\xcf\x81\xe2\x88\x9a(d\xe2\x88\x92" "1))";
    if (id == NC_FIT_DYISRU_THEORY)
        return rms ? "d\xcf\x81\xc2\xb2" : "(d\xe2\x88\x92" "1)\xcf\x81\xc2\xb2";
    return NULL;
}

nc_params nc_dyisru_theory_params(nc_norm_kind norm, double rho, size_t d)
{
    double a = nc_theory_amp(norm, d);
    double a2 = a == sqrt((double)d) ? (double)d : (double)d - 1.0; /* exactly A^2 */
    return (nc_params){.p = {a2 * rho * rho, a}};
}

const char *nc_theory_definition(nc_fit_id id)
{
    return id == NC_FIT_DYT_THEORY ? "1/(A*rho), A = sqrt(d) (RMSNorm) or sqrt(d-1) (LayerNorm)"
                                   : "A^2*rho^2, A = sqrt(d) (RMSNorm) or sqrt(d-1) (LayerNorm)";
}

double nc_theory_width(nc_norm_kind norm, size_t d)
{
    return norm == NC_LAYERNORM && d >= 2 ? (double)d - 1.0 : (double)d;
}
