/*
 * ode.h - an adaptive Dormand-Prince 5(4) integrator for one scalar ODE
 * y' = f(x, y).
 *
 * Used by the Jacobian comparison (jacobian.h) to check the derivation of
 * docs/theory.md: that sqrt(d) tanh(x / (rho sqrt d)) solves ODE-1 and
 * sqrt(d) x / sqrt(x^2 + d rho^2) solves ODE-2, by integrating both ODEs
 * numerically and comparing with the closed forms.
 *
 * Method: the explicit Runge-Kutta pair of Dormand and Prince (1980), "A
 * family of embedded Runge-Kutta formulae", J. Comp. Appl. Math. 6, with
 * the coefficients and the step-size control of Hairer, Norsett and Wanner,
 * "Solving Ordinary Differential Equations I", section II.4 (code DOPRI5):
 * 7 stages, FSAL (the last stage is the next step's first), the 5th-order
 * solution propagated (local extrapolation), the 4th-order embedded solution
 * giving the error estimate
 *
 *     err = |y5 - y4| / (atol + rtol * max(|y_old|, |y_new|)),
 *
 * a step accepted when err <= 1, and the next step h * min(facmax, max(
 * facmin, safety * err^(-1/5))) (facmax = 1 right after a rejection). The
 * first step is chosen by Hairer's starting-step algorithm (II.4, "Starting
 * step size").
 *
 * Interface in the begin / step / test style of docs/internals.md, rule 3: begin
 * sets the state, each step makes one accepted step towards a target (never
 * past it), and the caller loops while x < target, looking at (x, y) after
 * every step. Only forward integration (target > x).
 *
 * Left out: systems of equations, dense output (the 4th-order continuous
 * extension), stiffness detection. Scalar is all the Jacobian check needs.
 */
#ifndef NC_ODE_H
#define NC_ODE_H

#include <stdbool.h>
#include <stddef.h>

/* Defaults (used where an option is 0). */
#define NC_ODE_RTOL 1e-12
#define NC_ODE_ATOL 1e-12
#define NC_ODE_MAX_STEPS 1000000 /* attempted steps (accepted + rejected) */

/* The right-hand side f(x, y). ctx is the caller's. */
typedef double (*nc_ode_fn)(double x, double y, void *ctx);

typedef struct nc_ode_opts {
    double rtol;      /* relative tolerance per step (0: NC_ODE_RTOL) */
    double atol;      /* absolute tolerance per step (0: NC_ODE_ATOL) */
    double h0;        /* first step size (0: Hairer's starting-step algorithm) */
    size_t max_steps; /* attempted steps allowed in all (0: NC_ODE_MAX_STEPS) */
} nc_ode_opts;

/* Why the integration stopped early: a status, not an error (the caller
 * reports it). */
typedef enum nc_ode_status {
    NC_ODE_OK = 0,
    NC_ODE_MAX_STEPS_REACHED, /* max_steps attempted steps used */
    NC_ODE_NONFINITE,         /* f returned NaN or infinity (a singularity) */
    NC_ODE_STEP_UNDERFLOW,    /* the step became too small to change x */
} nc_ode_status;

/* "ok", "step limit reached", "non-finite derivative", "step size underflow". */
const char *nc_ode_status_name(nc_ode_status st);

/* The integrator's state: read x and y after each step. Plain struct, no
 * resources. */
typedef struct nc_ode {
    nc_ode_fn f;
    void *ctx;
    double rtol, atol;
    size_t max_steps;
    double x, y;        /* the current point (after the last accepted step) */
    double h;           /* the step size the next step tries (0: not chosen yet) */
    double k1;          /* f(x, y) (FSAL) */
    bool last_rejected; /* the previous attempt was rejected (limits growth) */
    size_t accepted, rejected, fevals;
    nc_ode_status status;
} nc_ode;

/* Starts an integration at (x0, y0). o may be NULL (all defaults). Evaluates
 * f once; if that is not finite, status is NC_ODE_NONFINITE. */
void nc_ode_begin(nc_ode *s, nc_ode_fn f, void *ctx, double x0, double y0,
                  const nc_ode_opts *o);

/* Makes one accepted step from s->x towards x_end (> s->x), landing exactly
 * on x_end when the step would pass it; rejected attempts are retried with
 * a smaller step inside this call. Returns s->status: NC_ODE_OK after an
 * accepted step (s->x, s->y updated), otherwise the reason it stopped, with
 * (x, y) left at the last accepted point. Calling it with x_end <= s->x
 * does nothing and returns s->status. */
nc_ode_status nc_ode_step(nc_ode *s, double x_end);

#endif
