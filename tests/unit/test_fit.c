/*
 * test_fit.c - the solvers of analysis/fit.h on points whose answer is
 * known, the surrogate table, and the bin map.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/bins.h"
#include "analysis/fit.h"
#include "analysis/surrogate.h"
#include "check.h"

enum { NPTS = 2001 };
static double X[NPTS], Y[NPTS], W[NPTS];

/* x spread over [-7.3, 9.1] unevenly, so that nothing is symmetric by luck */
static void make_x(void)
{
    for (int k = 0; k < NPTS; k++) {
        double u = (double)k / (NPTS - 1);
        X[k] = -7.3 + 16.4 * u * u * (3 - 2 * u) + 0.01 * sin(37.0 * k);
        W[k] = 1.0 + (k % 7);
    }
}

static void make_y(const nc_surrogate *s, const nc_params *p)
{
    s->eval(p, 0, X, NPTS, Y);
}

static void test_surrogate_values(void)
{
    /* the DyT worked example (docs/theory.md): alpha 0.5, gamma 1, beta 0 */
    const double x[4] = {0.14115588, 0.00372817, 0.24126647, 0.22183601};
    const double want[4] = {0.0705, 0.0019, 0.1201, 0.1105};
    double y[4];
    nc_params p = {.p = {0.5, 1.0, 0.0}};
    nc_surrogate_get(NC_FIT_DYT)->eval(&p, 0, x, 4, y);
    for (int i = 0; i < 4; i++) {
        CHECK_ABS(want[i], y[i], 5e-5);
        CHECK_REL(tanh(0.5 * x[i]), y[i], 1e-15);
    }
    /* matching DyT and DyISRU slopes at 0 with the same amplitude: C = 1/alpha^2
     * (docs/theory.md: alpha0 = 0.5 corresponds to C0 = 4) */
    const nc_surrogate *dyt = nc_surrogate_get(NC_FIT_DYT), *isru = nc_surrogate_get(NC_FIT_DYISRU);
    nc_params pd = {.p = {0.5, 2.385, 0.0}}, pi = {.p = {4.0, 2.385}};
    CHECK_REL(nc_surrogate_df(dyt, &pd, 0, 0.0), nc_surrogate_df(isru, &pi, 0, 0.0), 1e-15);
    /* derivatives agree with central differences */
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        double pc[6] = {1.7, -0.3, 0.9, 0.05, -0.2, 0.11};
        nc_params p2 = {.p = {0.61, 1.9, -0.07, 0.3}, .pc = pc, .d = 3};
        if (id == NC_FIT_DYISRU || id == NC_FIT_DYISRU_FREE || id == NC_FIT_DYISRU_THEORY)
            p2.p[0] = 2.7; /* C > 0 */
        for (double x0 = -3.1; x0 < 3.2; x0 += 0.77) {
            double h = 1e-5, f1 = nc_surrogate_f(s, &p2, 2, x0 + h), f0 = nc_surrogate_f(s, &p2, 2, x0 - h);
            CHECK_ABS((f1 - f0) / (2 * h), nc_surrogate_df(s, &p2, 2, x0), 1e-8);
        }
    }
    CHECK(nc_surrogate_find("dyisru_free") == nc_surrogate_get(NC_FIT_DYISRU_FREE));
    CHECK(nc_surrogate_find("nope") == NULL);
}

static void test_fit_linear(void)
{
    for (int k = 0; k < NPTS; k++)
        Y[k] = -1.25 * X[k] + 0.375;
    nc_points pts = {X, Y, W, NPTS};
    nc_fit_out o;
    nc_err err = {0};
    CHECK_INT(0, nc_fit_linear(&pts, &o, &err));
    CHECK_REL(-1.25, o.p[0], 1e-13);
    CHECK_REL(0.375, o.p[1], 1e-12);
    CHECK_ABS(0.0, o.objective, 1e-20);
}

static void test_fit_dyt_recovers(void)
{
    nc_params truth = {.p = {0.3127, 2.385, -0.0415}};
    make_y(nc_surrogate_get(NC_FIT_DYT), &truth);
    nc_points pts = {X, Y, W, NPTS};
    nc_fit_opts o = {0};
    nc_fit_out r;
    nc_err err = {0};
    CHECK_INT(0, nc_fit_dyt(&pts, &o, &r, &err));
    CHECK(r.converged);
    CHECK_REL(0.3127, r.p[0], 1e-10);
    CHECK_REL(2.385, r.p[1], 1e-10);
    CHECK_REL(-0.0415, r.p[2], 1e-9);
    /* fixed amplitude, no offset */
    truth.p[2] = 0;
    make_y(nc_surrogate_get(NC_FIT_DYT), &truth);
    o.amp_fixed = true;
    o.amp = 2.385;
    o.no_offset = true;
    CHECK_INT(0, nc_fit_dyt(&pts, &o, &r, &err));
    CHECK_REL(0.3127, r.p[0], 1e-10);
    CHECK_REL(2.385, r.p[1], 0);
    CHECK_ABS(0.0, r.p[2], 0);
}

static void test_fit_dyt_noisy_is_stationary(void)
{
    /* with noise, the optimum is where the gradient of F in every parameter
     * vanishes: check by perturbing each parameter both ways */
    nc_params truth = {.p = {0.7, 1.3, 0.2}};
    make_y(nc_surrogate_get(NC_FIT_DYT), &truth);
    for (int k = 0; k < NPTS; k++)
        Y[k] += 0.05 * sin(12.9898 * k) * cos(78.233 * k);
    nc_points pts = {X, NULL, NULL, NPTS};
    pts.y = Y;
    nc_fit_opts o = {0};
    nc_fit_out r;
    nc_err err = {0};
    CHECK_INT(0, nc_fit_dyt(&pts, &o, &r, &err));
    const nc_surrogate *s = nc_surrogate_get(NC_FIT_DYT);
    nc_params best = {.p = {r.p[0], r.p[1], r.p[2]}};
    double F0 = nc_fit_objective(&pts, s, &best);
    CHECK_REL(F0, r.objective, 1e-12);
    for (int j = 0; j < 3; j++)
        for (int sg = -1; sg <= 1; sg += 2) {
            nc_params q = best;
            q.p[j] *= 1 + sg * 1e-6;
            CHECK(nc_fit_objective(&pts, s, &q) >= F0 * (1 - 1e-15));
        }
}

static void test_fit_dyisru_recovers(void)
{
    nc_params truth = {.p = {3.7, 7.9372539331937721}}; /* scale sqrt(63) */
    make_y(nc_surrogate_get(NC_FIT_DYISRU), &truth);
    nc_points pts = {X, Y, W, NPTS};
    nc_fit_opts o = {.amp_fixed = true, .amp = truth.p[1]};
    nc_fit_out r;
    nc_err err = {0};
    CHECK_INT(0, nc_fit_dyisru(&pts, &o, &r, &err));
    CHECK(r.converged);
    CHECK_REL(3.7, r.p[0], 1e-10);
    CHECK_REL(truth.p[1], r.p[1], 0);
    o.amp_fixed = false;
    CHECK_INT(0, nc_fit_dyisru(&pts, &o, &r, &err));
    CHECK_REL(3.7, r.p[0], 1e-9);
    CHECK_REL(truth.p[1], r.p[1], 1e-10);
}

static void test_fit_derf_recovers(void)
{
    nc_params truth = {.p = {0.45, 0.12, 1.8, -0.3}};
    make_y(nc_surrogate_get(NC_FIT_DERF), &truth);
    nc_points pts = {X, Y, W, NPTS};
    nc_fit_opts o = {0};
    nc_fit_out r;
    nc_err err = {0};
    const double init[4] = {0.6, 0.0, 1.5, 0.0};
    CHECK_INT(0, nc_fit_derf(&pts, &o, init, &r, &err));
    CHECK(r.converged);
    for (int j = 0; j < 4; j++)
        CHECK_REL(truth.p[j], r.p[j], 1e-8);
}

static void test_fit_boundary_is_reported(void)
{
    /* exactly linear data: DyT's best alpha runs to 0, which the scan
     * cannot contain: not converged, with a status saying why */
    for (int k = 0; k < NPTS; k++)
        Y[k] = 0.8 * X[k];
    nc_points pts = {X, Y, NULL, NPTS};
    nc_fit_opts o = {0};
    nc_fit_out r;
    nc_err err = {0};
    CHECK_INT(0, nc_fit_dyt(&pts, &o, &r, &err));
    CHECK(!r.converged);
    CHECK_CONTAINS(r.status, "lower end");
    CHECK_REL(0.8, r.p[0] * r.p[1], 1e-6); /* the slope at 0 is still right */
}

static void test_binmap(void)
{
    nc_binmap bm = nc_binmap_make(1.5, 40.0, 32768);
    size_t nb = nc_binmap_count(&bm);
    CHECK(nb <= 32768);
    CHECK(nb >= 16384); /* the finest map that fits: at least half the budget */
    double prev_hi = 0;
    for (size_t b = bm.half; b < nb; b++) {
        double lo, hi;
        nc_bin_edges(&bm, b, &lo, &hi);
        CHECK_ABS(prev_hi, lo, 0); /* contiguous */
        prev_hi = hi;
        if (b > bm.half + 3)
            break;
    }
    /* every x lands in a bin whose edges contain it, mirrored for x < 0 */
    for (double x = -40; x <= 40; x += 0.0137) {
        size_t b = nc_bin_of(&bm, x);
        double lo, hi;
        nc_bin_edges(&bm, b, &lo, &hi);
        CHECK(b < nb);
        CHECK(fabs(x) >= lo && fabs(x) < hi);
        CHECK((x < 0) == (b < bm.half));
        /* relative width bounded: hi - lo <= (w + |x|) 2^-m */
        CHECK(hi - lo <= (1.5 + fabs(x)) * ldexp(1.0, -bm.m) * (1 + 1e-12));
    }
    /* a heavy tail costs octaves, not bins */
    nc_binmap wide = nc_binmap_make(1.0, 1e30, 32768);
    CHECK(nc_binmap_count(&wide) <= 32768);
    CHECK(nc_bin_of(&wide, 1e30) == nc_binmap_count(&wide) - 1);
    CHECK(nc_bin_of(&wide, -1e30) == 0);
}

/* both() gives the bits of eval() and deriv() for every surrogate, across
 * a row boundary of the per-channel parameters and for lengths that are
 * not a multiple of any vector width (the verify pass uses both, the sweeps
 * and figures eval or deriv: their numbers must agree exactly). */
static void test_surrogate_both(void)
{
    enum { M = 203 };
    double x[M], f[M], df[M], fb[M], dfb[M], pc[2 * 37];
    for (int k = 0; k < M; k++)
        x[k] = (k % 3 ? 1.0 : -1.0) * pow(1.21, (double)(k % 61) - 30.0) + 0.01 * k;
    for (int k = 0; k < 2 * 37; k++)
        pc[k] = 0.3 + 0.01 * k * (k % 2 ? -1 : 1);
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        nc_params p = {.p = {0.61, 1.9, -0.07, 0.3}, .pc = pc, .d = 37};
        if (id == NC_FIT_DYISRU || id == NC_FIT_DYISRU_FREE || id == NC_FIT_DYISRU_THEORY)
            p.p[0] = 2.7;
        for (size_t i0 = 0; i0 < 40; i0 += 13) {
            s->eval(&p, i0, x, M, f);
            s->deriv(&p, i0, x, M, df);
            s->both(&p, i0, x, M, fb, dfb);
            size_t bad = 0;
            for (int k = 0; k < M; k++)
                bad += memcmp(&f[k], &fb[k], sizeof f[k]) != 0 ||
                       memcmp(&df[k], &dfb[k], sizeof df[k]) != 0;
            CHECK_INT(0, bad);
        }
    }
}

int main(void)
{
    make_x();
    test_surrogate_values();
    test_surrogate_both();
    test_fit_linear();
    test_fit_dyt_recovers();
    test_fit_dyt_noisy_is_stationary();
    test_fit_dyisru_recovers();
    test_fit_derf_recovers();
    test_fit_boundary_is_reported();
    test_binmap();
    return CHECK_DONE();
}
