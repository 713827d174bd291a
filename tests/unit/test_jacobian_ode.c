/*
 * test_jacobian_ode.c - the ODE integrator (analysis/ode.h) against
 * closed-form solutions, and the Jacobian comparison's ODE check
 * (nc_jac_ode_check, analysis/jacobian.h) against the tanh and ISRU closed
 * forms.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jacobian.h"
#include "analysis/ode.h"
#include "check.h"

/* ============================================================ the ODE */

static double rhs_gauss(double x, double y, void *c)
{
    (void)c;
    return -2.0 * x * y; /* y = exp(-x^2) */
}

static double rhs_sincos(double x, double y, void *c)
{
    (void)c;
    return y * cos(x); /* y = exp(sin x) */
}

static double rhs_logistic(double x, double y, void *c)
{
    (void)x;
    (void)c;
    return 2.385 * y * (1.0 - y); /* y = 1 / (1 + 9 exp(-2.385 x)) from y(0) = 0.1 */
}

static double rhs_blowup(double x, double y, void *c)
{
    (void)x;
    (void)c;
    return y * y; /* y = 1 / (1 - x): infinite at x = 1 */
}

static double rhs_nan(double x, double y, void *c)
{
    (void)x;
    (void)c;
    return y > 0 ? NAN : 1.0;
}

/* Integrates to x_end checking |y - exact(x)| at every accepted step. */
static double ode_max_err(nc_ode_fn f, double x0, double y0, double x_end, double (*exact)(double),
                          const nc_ode_opts *o, nc_ode *s)
{
    nc_ode_begin(s, f, NULL, x0, y0, o);
    double m = 0;
    while (s->status == NC_ODE_OK && s->x < x_end)
        if (nc_ode_step(s, x_end) == NC_ODE_OK)
            m = fmax(m, fabs(s->y - exact(s->x)) / fmax(1.0, fabs(exact(s->x))));
    return m;
}

static double exact_gauss(double x)
{
    return exp(-x * x);
}
static double exact_sincos(double x)
{
    return exp(sin(x));
}
static double exact_logistic(double x)
{
    return 1.0 / (1.0 + 9.0 * exp(-2.385 * x));
}

static void test_ode_known_solutions(void)
{
    nc_ode s;
    double e = ode_max_err(rhs_gauss, 0.0, 1.0, 3.1, exact_gauss, NULL, &s);
    CHECK_INT(NC_ODE_OK, s.status);
    CHECK_ABS(3.1, s.x, 0); /* lands exactly on the end */
    CHECK(e < 1e-11);
    CHECK(s.accepted > 10 && s.accepted < 2000);
    e = ode_max_err(rhs_sincos, 0.0, 1.0, 17.3, exact_sincos, NULL, &s);
    CHECK_INT(NC_ODE_OK, s.status);
    CHECK(e < 1e-10);
    e = ode_max_err(rhs_logistic, 0.0, 0.1, 9.7, exact_logistic, NULL, &s);
    CHECK_INT(NC_ODE_OK, s.status);
    CHECK(e < 1e-11);
    CHECK_INT(6 * (s.accepted + s.rejected) + 2, s.fevals); /* FSAL + starting step */

    /* a looser tolerance gives a larger error and fewer steps: the control works */
    nc_ode_opts loose = {.rtol = 1e-6, .atol = 1e-6};
    nc_ode s2;
    double e2 = ode_max_err(rhs_sincos, 0.0, 1.0, 17.3, exact_sincos, &loose, &s2);
    ode_max_err(rhs_sincos, 0.0, 1.0, 17.3, exact_sincos, NULL, &s);
    CHECK(e2 > 1e-9 && e2 < 1e-4);
    CHECK(s2.accepted * 4 < s.accepted);
    /* fifth order: 1e6 times tighter costs about 1e6^(1/5) = 16 times the steps */
    CHECK(s.accepted < 40 * s2.accepted);

    /* stops, with a status, at a singularity, at the step limit, on NaN */
    ode_max_err(rhs_blowup, 0.0, 1.0, 2.0, exact_gauss, NULL, &s);
    CHECK(s.status != NC_ODE_OK);
    CHECK(s.x < 1.0 && s.x > 0.99);
    nc_ode_opts few = {.max_steps = 5};
    ode_max_err(rhs_sincos, 0.0, 1.0, 17.3, exact_sincos, &few, &s);
    CHECK_INT(NC_ODE_MAX_STEPS_REACHED, s.status);
    CHECK_STR("step limit reached", nc_ode_status_name(s.status));
    nc_ode_begin(&s, rhs_nan, NULL, 0.0, 1.0, NULL);
    CHECK_INT(NC_ODE_NONFINITE, s.status);
    CHECK_INT(NC_ODE_NONFINITE, nc_ode_step(&s, 1.0));
    CHECK_ABS(0.0, s.x, 0);
}

static void test_ode_check_closed_forms(void)
{
    /* docs/theory.md: ODE-1 is solved by sqrt(d) tanh(x / (rho sqrt d)), ODE-2 with
     * slope 1/rho at 0 by sqrt(d) x / sqrt(x^2 + d rho^2) */
    const struct {
        double rho;
        size_t d;
        double xmax;
    } cases[] = {{1.37, 64, 25.3}, {0.0731, 4096, 41.9}, {2.385, 7, 0.9}, {11.2, 768, 3000.0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nc_jac_ode o;
        nc_jac_ode_check(cases[k].rho, cases[k].d, cases[k].xmax, &o);
        CHECK(o.ok);
        CHECK_STR("ok", o.status);
        double sd = sqrt((double)cases[k].d);
        CHECK_ABS(0.0, o.ode1_max_dev, 1e-10 * sd);
        CHECK_ABS(0.0, o.ode2_max_dev, 1e-10 * sd);
        CHECK(o.ode2_x0 > 0 && o.ode2_x0 < o.x_max);
        CHECK(o.ode1_steps > 0 && o.ode2_steps > 0);
    }
    nc_jac_ode o;
    nc_jac_ode_check(NAN, 64, 3.0, &o);
    CHECK(!o.ok);
    CHECK_CONTAINS(o.status, "not run");
    CHECK(isnan(o.ode1_max_dev) && isnan(o.ode2_max_dev));
    nc_jac_ode_check(1.0, 64, 0.0, &o);
    CHECK(!o.ok);
}

int main(void)
{
    test_ode_known_solutions();
    test_ode_check_closed_forms();
    return CHECK_DONE();
}
