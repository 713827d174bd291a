/*
 * ode.c - the Dormand-Prince 5(4) integrator (ode.h).
 *
 * Tableau (Hairer, Norsett and Wanner, table II.5.2; the code DOPRI5):
 *
 *   c     a
 *   0
 *   1/5   1/5
 *   3/10  3/40        9/40
 *   4/5   44/45       -56/15       32/9
 *   8/9   19372/6561  -25360/2187  64448/6561  -212/729
 *   1     9017/3168   -355/33      46732/5247  49/176   -5103/18656
 *   1     35/384      0            500/1113    125/192  -2187/6784  11/84
 *
 * The 5th-order weights b are the last row (so stage 7 is f at the new
 * point: FSAL); the error weights e = b - b^ (b^ the 4th-order weights) are
 * 71/57600, 0, -71/16695, 71/1920, -17253/339200, 22/525, -1/40.
 */
#include "analysis/ode.h"

#include <math.h>

/* Step-size control (Hairer's DOPRI5 defaults): new h = h * clamp(SAFETY *
 * err^(-1/5), FAC_MIN, FAC_MAX). */
#define SAFETY 0.9
#define FAC_MIN 0.2
#define FAC_MAX 10.0

const char *nc_ode_status_name(nc_ode_status st)
{
    switch (st) {
    case NC_ODE_OK: return "ok";
    case NC_ODE_MAX_STEPS_REACHED: return "step limit reached";
    case NC_ODE_NONFINITE: return "non-finite derivative";
    default: return "step size underflow";
    }
}

void nc_ode_begin(nc_ode *s, nc_ode_fn f, void *ctx, double x0, double y0,
                  const nc_ode_opts *o)
{
    *s = (nc_ode){.f = f, .ctx = ctx, .x = x0, .y = y0};
    s->rtol = o && o->rtol > 0 ? o->rtol : NC_ODE_RTOL;
    s->atol = o && o->atol > 0 ? o->atol : NC_ODE_ATOL;
    s->max_steps = o && o->max_steps > 0 ? o->max_steps : NC_ODE_MAX_STEPS;
    s->h = o && o->h0 > 0 ? o->h0 : 0.0;
    s->k1 = f(x0, y0, ctx);
    s->fevals = 1;
    s->status = isfinite(s->k1) ? NC_ODE_OK : NC_ODE_NONFINITE;
}

/* Hairer's starting step (II.4): h0 from the sizes of y and f, one explicit
 * Euler step to estimate the second derivative, then h1 such that
 * h1^5 * max(|f|, |f'|) / sc = 0.01; the smaller of 100 h0 and h1. The
 * constants 1e-5, 1e-6, 1e-15 and 0.01 are Hairer's. */
static double initial_step(nc_ode *s, double span)
{
    double sc = s->atol + s->rtol * fabs(s->y);
    double d0 = fabs(s->y) / sc, d1 = fabs(s->k1) / sc;
    double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    if (h0 > span)
        h0 = span;
    double f1 = s->f(s->x + h0, s->y + h0 * s->k1, s->ctx);
    s->fevals++;
    double d2 = fabs(f1 - s->k1) / sc / h0;
    double dm = fmax(d1, d2);
    double h1 = dm <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / dm, 1.0 / 5.0);
    double h = fmin(100.0 * h0, h1);
    return isfinite(h) && h > 0 ? h : span;
}

nc_ode_status nc_ode_step(nc_ode *s, double x_end)
{
    if (s->status != NC_ODE_OK || !(x_end > s->x))
        return s->status;
    if (!(s->h > 0))
        s->h = initial_step(s, x_end - s->x);
    bool nonfinite = false;
    for (;;) {
        if (s->accepted + s->rejected >= s->max_steps)
            return s->status = NC_ODE_MAX_STEPS_REACHED;
        const double x = s->x, y = s->y, k1 = s->k1;
        bool lands = x + s->h >= x_end;
        double h = lands ? x_end - x : s->h;
        if (!(x + h > x))
            return s->status = nonfinite ? NC_ODE_NONFINITE : NC_ODE_STEP_UNDERFLOW;

        double k2 = s->f(x + h / 5, y + h * (k1 / 5), s->ctx);
        double k3 = s->f(x + 3 * h / 10, y + h * (3.0 / 40 * k1 + 9.0 / 40 * k2), s->ctx);
        double k4 = s->f(x + 4 * h / 5,
                         y + h * (44.0 / 45 * k1 - 56.0 / 15 * k2 + 32.0 / 9 * k3), s->ctx);
        double k5 = s->f(x + 8 * h / 9,
                         y + h * (19372.0 / 6561 * k1 - 25360.0 / 2187 * k2 +
                                  64448.0 / 6561 * k3 - 212.0 / 729 * k4),
                         s->ctx);
        double k6 = s->f(x + h,
                         y + h * (9017.0 / 3168 * k1 - 355.0 / 33 * k2 + 46732.0 / 5247 * k3 +
                                  49.0 / 176 * k4 - 5103.0 / 18656 * k5),
                         s->ctx);
        double y5 = y + h * (35.0 / 384 * k1 + 500.0 / 1113 * k3 + 125.0 / 192 * k4 -
                             2187.0 / 6784 * k5 + 11.0 / 84 * k6);
        double x_new = lands ? x_end : x + h;
        double k7 = s->f(x_new, y5, s->ctx);
        s->fevals += 6;
        double ev = h * (71.0 / 57600 * k1 - 71.0 / 16695 * k3 + 71.0 / 1920 * k4 -
                         17253.0 / 339200 * k5 + 22.0 / 525 * k6 - 1.0 / 40 * k7);
        double err = fabs(ev) / (s->atol + s->rtol * fmax(fabs(y), fabs(y5)));

        if (!isfinite(err) || !isfinite(k7)) {
            /* a stage left the domain of f: retry with a much smaller step */
            nonfinite = true;
            s->rejected++;
            s->last_rejected = true;
            s->h = h * FAC_MIN;
            continue;
        }
        double fac = err > 0 ? SAFETY * pow(err, -1.0 / 5.0) : FAC_MAX;
        if (err <= 1.0) {
            fac = fmin(fac, s->last_rejected ? 1.0 : FAC_MAX);
            s->x = x_new;
            s->y = y5;
            s->k1 = k7;
            s->accepted++;
            s->last_rejected = false;
            /* a step shortened to land on x_end says little about the next
             * one: then the proposal stays as it was */
            if (!lands)
                s->h = h * fmax(FAC_MIN, fac);
            return NC_ODE_OK;
        }
        s->rejected++;
        s->last_rejected = true;
        s->h = h * fmax(FAC_MIN, fac);
    }
}
