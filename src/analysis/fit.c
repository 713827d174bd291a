/*
 * fit.c - the solvers of fit.h.
 *
 * Legend: x, y, w are the points; theta the nonlinear parameter searched on
 * u = log(theta); a the amplitude, b the offset (both linear given theta);
 * F(u) = sum w (y - a*phi(x; theta) - b)^2 profiled over (a, b).
 */
#include "analysis/fit.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/v4.h"
#include "core/vmath.h"

static double wt(const nc_points *pts, size_t k)
{
    return pts->w ? pts->w[k] : 1.0;
}

/* ---------------------------------------------------------------- linear */

int nc_fit_linear(const nc_points *pts, nc_fit_out *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    double sw = 0, sx = 0, sy = 0;
    for (size_t k = 0; k < pts->n; k++) {
        double w = wt(pts, k);
        sw += w;
        sx += w * pts->x[k];
        sy += w * pts->y[k];
    }
    if (!(sw > 0))
        return nc_err_set(err, NC_EINVAL, "linear fit: no points");
    double mx = sx / sw, my = sy / sw, sxx = 0, sxy = 0;
    for (size_t k = 0; k < pts->n; k++) {
        double w = wt(pts, k), u = pts->x[k] - mx;
        sxx += w * u * u;
        sxy += w * u * (pts->y[k] - my);
    }
    double slope = sxx > 0 ? sxy / sxx : 0.0;
    out->p[0] = slope;
    out->p[1] = my - slope * mx;
    nc_params p = {.p = {out->p[0], out->p[1]}};
    out->objective = nc_fit_objective(pts, nc_surrogate_get(NC_FIT_LINEAR), &p);
    out->iterations = 1;
    out->converged = sxx > 0;
    snprintf(out->status, sizeof out->status, "%s", sxx > 0 ? "ok" : "all x equal: slope set to 0");
    return 0;
}

/* ------------------------------------------------- profiled 1-D families */

typedef enum { PHI_TANH, PHI_ISRU } phi_kind;

typedef struct profile {
    const nc_points *pts;
    phi_kind kind;
    bool a_fixed;   /* amplitude held at a_value */
    double a_value;
    bool has_b;     /* offset fitted (else 0) */
    double *phi;    /* [n] scratch: phi(x_k; theta) */
    /* results of the last evaluation */
    double a, b, F, G; /* G = dF/du at the profiled (a, b) */
} profile;

/* phi and d phi / d theta for all points (vectorised in profile_eval's
 * clones: nc_tanh and sqrt are straight-line code, core/vmath.h; tanh by
 * runs, which skip the exponential where a run of points allows, with the
 * same bits: the points are bins or tokens' values in order, so most runs
 * of a small theta do). */
NC_VM_INLINE void eval_phi(profile *pr, double theta, double *dphi, bool with_dphi)
{
    const nc_points *pts = pr->pts;
    const double *x = pts->x;
    double *phi = pr->phi;
    if (pr->kind == PHI_TANH) {
        nc_tanh_run(theta, x, pts->n, phi);
        for (size_t k = 0; with_dphi && k < pts->n; k++)
            dphi[k] = x[k] * (1.0 - phi[k] * phi[k]);
    } else if (with_dphi) {
        for (size_t k = 0; k < pts->n; k++) {
            double q = x[k] * x[k] + theta;
            double f = x[k] / sqrt(q);
            phi[k] = f;
            dphi[k] = -0.5 * f / q;
        }
    } else {
        for (size_t k = 0; k < pts->n; k++)
            phi[k] = x[k] / sqrt(x[k] * x[k] + theta);
    }
}

/* The four lanes of a vector sum as an array (the last n mod 4 points are
 * added to them one by one), and their total in a fixed order. */
#define LANES_OUT(arr, v) double arr[4] = {(v)[0], (v)[1], (v)[2], (v)[3]}
#define LANES_SUM(arr) (((arr)[0] + (arr)[1]) + ((arr)[2] + (arr)[3]))

/* F(u) and, when with_G, G = dF/du with (a, b) profiled out (G is NaN
 * otherwise: a scan needs F everywhere but G only beside its best point,
 * and F alone skips phi's derivative and its sum). dphi: [n] scratch.
 * The sums run over four interleaved accumulators, point k in lane k mod 4
 * (one running sum is bound by the latency of an add, four are not, and
 * stay deterministic); the lanes are four-double vectors (core/v4.h), so the
 * loops vectorise with the same bits as the plain lane loops. Built for
 * AVX-512, AVX2 and the baseline (NC_VMATH_CLONES): the scans evaluate F
 * some 80 times per fit, which makes this the fixed cost of a small run. */
NC_VMATH_CLONES
static void profile_eval_of(profile *pr, double u, double *dphi, bool with_G)
{
    const nc_points *pts = pr->pts;
    const size_t n = pts->n, n4 = n & ~(size_t)3;
    const double *w = pts->w, *y = pts->y, *phi = pr->phi;
    const double theta = exp(u);
    const v4d one = {1, 1, 1, 1}, zero = {0, 0, 0, 0};
    eval_phi(pr, theta, dphi, with_G);
    v4d vw = zero, vp = zero, vy = zero;
    for (size_t k = 0; k < n4; k += 4) {
        v4d wk = w ? (v4d)V4(w + k) : one;
        vw += wk;
        vp += wk * V4(phi + k);
        vy += wk * V4(y + k);
    }
    LANES_OUT(sw, vw);
    LANES_OUT(sp, vp);
    LANES_OUT(sy, vy);
    for (size_t k = n4; k < n; k++) {
        double wk = w ? w[k] : 1.0;
        sw[k & 3] += wk;
        sp[k & 3] += wk * phi[k];
        sy[k & 3] += wk * y[k];
    }
    double Sw = LANES_SUM(sw), Sp = LANES_SUM(sp), Sy = LANES_SUM(sy);
    double a, b;
    if (pr->a_fixed) {
        a = pr->a_value;
        b = pr->has_b ? (Sy - a * Sp) / Sw : 0.0;
    } else {
        /* centred normal equations: a = cov(phi, y) / var(phi); without an
         * offset, the same about 0 */
        double mp = pr->has_b ? Sp / Sw : 0.0, my = pr->has_b ? Sy / Sw : 0.0;
        v4d vpp = zero, vpy = zero;
        for (size_t k = 0; k < n4; k += 4) {
            v4d wk = w ? (v4d)V4(w + k) : one, v = V4(phi + k) - mp;
            vpp += wk * v * v;
            vpy += wk * v * (V4(y + k) - my);
        }
        LANES_OUT(spp, vpp);
        LANES_OUT(spy, vpy);
        for (size_t k = n4; k < n; k++) {
            double wk = w ? w[k] : 1.0, v = phi[k] - mp;
            spp[k & 3] += wk * v * v;
            spy[k & 3] += wk * v * (y[k] - my);
        }
        double Spp = LANES_SUM(spp), Spy = LANES_SUM(spy);
        a = Spp > 0 ? Spy / Spp : 0.0;
        b = my - a * mp;
    }
    /* F and its derivative from the residuals themselves (no cancellation) */
    v4d vF = zero, vdF = zero;
    if (with_G) {
        for (size_t k = 0; k < n4; k += 4) {
            v4d wk = w ? (v4d)V4(w + k) : one, r = V4(y + k) - a * V4(phi + k) - b;
            vF += wk * r * r;
            vdF += wk * r * V4(dphi + k);
        }
    } else {
        for (size_t k = 0; k < n4; k += 4) {
            v4d wk = w ? (v4d)V4(w + k) : one, r = V4(y + k) - a * V4(phi + k) - b;
            vF += wk * r * r;
        }
    }
    LANES_OUT(F4, vF);
    LANES_OUT(dF4, vdF);
    for (size_t k = n4; k < n; k++) {
        double wk = w ? w[k] : 1.0, r = y[k] - a * phi[k] - b;
        F4[k & 3] += wk * r * r;
        if (with_G)
            dF4[k & 3] += wk * r * dphi[k];
    }
    pr->a = a;
    pr->b = b;
    pr->F = LANES_SUM(F4);
    /* dF/du = theta dF/dtheta, by the envelope theorem (a, b optimal) */
    pr->G = with_G ? -2.0 * a * theta * LANES_SUM(dF4) : NAN;
}

static void profile_eval(profile *pr, double u, double *dphi)
{
    profile_eval_of(pr, u, dphi, true);
}

/* Brent-Dekker root finding on the profile's G over [ua, ub], where G
 * changes sign (Ga <= 0 <= Gb): the root's u, *done when within tol
 * before max_iter steps; *evals counts the evaluations. */
static double brent_root(profile *pr, double ua, double ub, double Ga, double Gb, double tol,
                         int max_iter, double *dphi, int *evals, bool *done)
{
    double a = ua, b = ub, fa = Ga, fb = Gb, c = a, fc = fa, dd = b - a, e = dd;
    for (int it = 0; it < max_iter; it++) {
        if ((fb > 0 && fc > 0) || (fb < 0 && fc < 0)) {
            c = a;
            fc = fa;
            dd = e = b - a;
        }
        if (fabs(fc) < fabs(fb)) {
            a = b, b = c, c = a;
            fa = fb, fb = fc, fc = fa;
        }
        double tol1 = 2 * DBL_EPSILON * fabs(b) + 0.5 * tol;
        double xm = 0.5 * (c - b);
        if (fabs(xm) <= tol1 || fb == 0) {
            *done = true;
            break;
        }
        if (fabs(e) >= tol1 && fabs(fa) > fabs(fb)) {
            double s = fb / fa, p, q;
            if (a == c) {
                p = 2 * xm * s;
                q = 1 - s;
            } else {
                double qq = fa / fc, r = fb / fc;
                p = s * (2 * xm * qq * (qq - r) - (b - a) * (r - 1));
                q = (qq - 1) * (r - 1) * (s - 1);
            }
            if (p > 0)
                q = -q;
            p = fabs(p);
            if (2 * p < fmin(3 * xm * q - fabs(tol1 * q), fabs(e * q))) {
                e = dd;
                dd = p / q;
            } else {
                dd = xm;
                e = dd;
            }
        } else {
            dd = xm;
            e = dd;
        }
        a = b;
        fa = fb;
        b += fabs(dd) > tol1 ? dd : (xm > 0 ? tol1 : -tol1);
        profile_eval(pr, b, dphi);
        (*evals)++;
        fb = pr->G;
    }
    return b;
}

/* Scan u, then Brent's root finder on G inside the best cell's neighbours.
 * Fills out->p via the caller from pr->a, pr->b and the returned u. */
static double profile_solve(profile *pr, double u_centre, const nc_fit_opts *o, double *dphi,
                            nc_fit_out *out)
{
    const double tol = o->tol > 0 ? o->tol : NC_FIT_TOL;
    const int max_iter = o->max_iter > 0 ? o->max_iter : NC_FIT_MAX_ITER;
    const int nscan = (int)(2 * NC_FIT_SCAN_HALF_WIDTH / NC_FIT_SCAN_STEP) + 1;
    double best_u = u_centre, best_F = INFINITY;
    int best_j = -1, evals = 0;
    double Gs[256];
    double ua, ub, Ga, Gb;
    if (o->start > 0 && isfinite(o->start)) {
        /* polish: a narrow bracket around the given start, widened as needed */
        double u0 = log(o->start);
        for (double h = NC_FIT_POLISH_WIDTH; h < NC_FIT_SCAN_HALF_WIDTH; h *= 8) {
            profile_eval(pr, u0 - h, dphi);
            Ga = pr->G;
            profile_eval(pr, u0 + h, dphi);
            Gb = pr->G;
            evals += 2;
            if (Ga <= 0 && Gb >= 0) {
                ua = u0 - h;
                ub = u0 + h;
                goto brent;
            }
        }
    }
    for (int j = 0; j < nscan && j < 256; j++) {
        double u = u_centre - NC_FIT_SCAN_HALF_WIDTH + j * NC_FIT_SCAN_STEP;
        profile_eval_of(pr, u, dphi, false); /* F alone */
        evals++;
        if (pr->F < best_F) {
            best_F = pr->F;
            best_u = u;
            best_j = j;
        }
    }
    /* G where the bracket needs it: beside the best point (the same
     * evaluations again, with G, so the same bits as a scan with G) */
    for (int j = best_j - 1; best_j >= 0 && j <= best_j + 1; j++)
        if (j >= 0 && j < nscan && j < 256) {
            profile_eval(pr, u_centre - NC_FIT_SCAN_HALF_WIDTH + j * NC_FIT_SCAN_STEP, dphi);
            Gs[j] = pr->G;
        }
    if (best_j < 0) {
        out->iterations = evals;
        out->converged = false;
        snprintf(out->status, sizeof out->status, "objective not finite anywhere on the scan");
        return best_u;
    }
    const double ulo = u_centre - NC_FIT_SCAN_HALF_WIDTH;
    /* the root of G lies where G changes sign next to the best scan point;
     * a best point at either end of the scan is reported as such even if
     * rounding noise in a flat F gives G a sign change there */
    bool inner = best_j > 0 && best_j < nscan - 1;
    if (inner && Gs[best_j - 1] <= 0 && Gs[best_j] >= 0) {
        ua = ulo + (best_j - 1) * NC_FIT_SCAN_STEP, Ga = Gs[best_j - 1];
        ub = ulo + best_j * NC_FIT_SCAN_STEP, Gb = Gs[best_j];
    } else if (inner && Gs[best_j] <= 0 && Gs[best_j + 1] >= 0) {
        ua = ulo + best_j * NC_FIT_SCAN_STEP, Ga = Gs[best_j];
        ub = ulo + (best_j + 1) * NC_FIT_SCAN_STEP, Gb = Gs[best_j + 1];
    } else {
        /* no sign change: the optimum is at the edge of the range or F is flat */
        profile_eval(pr, best_u, dphi);
        evals++;
        out->iterations = evals;
        out->converged = false;
        snprintf(out->status, sizeof out->status,
                 "no interior optimum: the best value is at %s of the scanned range "
                 "(theta = %.6g)",
                 best_j == 0 ? "the lower end" : best_j == nscan - 1 ? "the upper end" : "a flat part",
                 exp(best_u));
        return best_u;
    }
brent:;
    bool done = false;
    double b = brent_root(pr, ua, ub, Ga, Gb, tol, max_iter, dphi, &evals, &done);
    profile_eval(pr, b, dphi); /* leave (a, b, F) at the returned u */
    evals++;
    out->iterations = evals;
    out->converged = done;
    snprintf(out->status, sizeof out->status, "%s",
             done ? "ok" : "iteration limit reached before the tolerance");
    return b;
}

static int run_profile(const nc_points *pts, phi_kind kind, const nc_fit_opts *o, bool has_b,
                       double u_centre, nc_fit_out *out, double *theta, nc_err *err)
{
    memset(out, 0, sizeof *out);
    if (pts->n == 0)
        return nc_err_set(err, NC_EINVAL, "fit: no points");
    double *buf = malloc(2 * pts->n * sizeof *buf);
    if (!buf)
        return nc_err_set(err, NC_ENOMEM, "fit: out of memory for %zu points", pts->n);
    profile pr = {.pts = pts, .kind = kind, .a_fixed = o->amp_fixed, .a_value = o->amp,
                  .has_b = has_b, .phi = buf};
    double u = profile_solve(&pr, u_centre, o, buf + pts->n, out);
    *theta = exp(u);
    out->objective = pr.F;
    out->p[1] = pr.a;
    out->p[2] = pr.b;
    free(buf);
    return 0;
}

static double x_scale_of(const nc_points *pts, const nc_fit_opts *o)
{
    if (o->x_scale > 0 && isfinite(o->x_scale))
        return o->x_scale;
    double sw = 0, sxx = 0;
    for (size_t k = 0; k < pts->n; k++) {
        sw += wt(pts, k);
        sxx += wt(pts, k) * pts->x[k] * pts->x[k];
    }
    double s = sw > 0 ? sqrt(sxx / sw) : 1.0;
    return s > 0 && isfinite(s) ? s : 1.0;
}

int nc_fit_dyt(const nc_points *pts, const nc_fit_opts *o, nc_fit_out *out, nc_err *err)
{
    double alpha;
    int rc = run_profile(pts, PHI_TANH, o, !o->no_offset, -log(x_scale_of(pts, o)), out, &alpha,
                         err);
    if (rc)
        return rc;
    out->p[0] = alpha; /* p[1] = gamma, p[2] = beta set by run_profile */
    return 0;
}

int nc_fit_dyisru(const nc_points *pts, const nc_fit_opts *o, nc_fit_out *out, nc_err *err)
{
    double xs = x_scale_of(pts, o), C;
    int rc = run_profile(pts, PHI_ISRU, o, false, 2 * log(xs), out, &C, err);
    if (rc)
        return rc;
    double scale = out->p[1];
    out->p[0] = C;
    out->p[1] = scale;
    out->p[2] = 0;
    return 0;
}

/* ------------------------------------------------- Levenberg-Marquardt */

/* Solves the n x n system A z = g (A symmetric positive definite) by
 * Cholesky; false if A is not numerically positive definite. */
static bool cholesky_solve(int n, const double *A, const double *g, double *z)
{
    double L[NC_MAX_PARAMS * NC_MAX_PARAMS] = {0};
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) {
            double s = A[i * n + j];
            for (int k = 0; k < j; k++)
                s -= L[i * n + k] * L[j * n + k];
            if (i == j) {
                if (!(s > 0))
                    return false;
                L[i * n + i] = sqrt(s);
            } else {
                L[i * n + j] = s / L[j * n + j];
            }
        }
    }
    double t[NC_MAX_PARAMS];
    for (int i = 0; i < n; i++) {
        double s = g[i];
        for (int k = 0; k < i; k++)
            s -= L[i * n + k] * t[k];
        t[i] = s / L[i * n + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = t[i];
        for (int k = i + 1; k < n; k++)
            s -= L[k * n + i] * z[k];
        z[i] = s / L[i * n + i];
    }
    return true;
}

/* Derf residuals and Jacobian: f = gamma*erf(alpha*x + shift) + beta, with
 * dF/dalpha = gamma x E', dF/dshift = gamma E', dF/dgamma = E, dF/dbeta = 1
 * (E = erf(z), E' its derivative). Free parameters are picked by `free_`
 * (indices into p), nf of them. Accumulates JtJ (nf^2), Jtr (nf) and returns
 * F. E and E' are computed first in a vectorised loop over a chunk (in the
 * AVX-512, AVX2 and baseline copies of NC_VMATH_CLONES; the sums stay in
 * their plain order); E is taken from E[n] instead when given (the values
 * derf_trial left there for the same p). */
NC_VMATH_CLONES
static double derf_normal(const nc_points *pts, const double p[4], const double *E,
                          const int *free_, int nf, double *JtJ, double *Jtr)
{
    enum { CHUNK = 512 };
    const double alpha = p[0], shift = p[1], gamma = p[2], beta = p[3];
    double e_own[CHUNK], de[CHUNK];
    double A[10] = {0}, g[4] = {0}, F = 0; /* A: the upper triangle of the full 4x4 */
    for (size_t k0 = 0; k0 < pts->n; k0 += CHUNK) {
        size_t m = pts->n - k0 < CHUNK ? pts->n - k0 : CHUNK;
        const double *x = pts->x + k0, *e = e_own;
        if (E)
            e = E + k0;
        else
            nc_erf_run(alpha, shift, x, m, e_own);
        for (size_t k = 0; k < m; k++)
            de[k] = nc_erf_deriv(alpha * x[k] + shift);
        for (size_t k = 0; k < m; k++) {
            double w = wt(pts, k0 + k), r = pts->y[k0 + k] - (gamma * e[k] + beta);
            double J0 = gamma * x[k] * de[k], J1 = gamma * de[k], J2 = e[k];
            double wJ0 = w * J0, wJ1 = w * J1, wJ2 = w * J2;
            A[0] += wJ0 * J0, A[1] += wJ0 * J1, A[2] += wJ0 * J2, A[3] += wJ0;
            A[4] += wJ1 * J1, A[5] += wJ1 * J2, A[6] += wJ1;
            A[7] += wJ2 * J2, A[8] += wJ2;
            A[9] += w;
            g[0] += wJ0 * r, g[1] += wJ1 * r, g[2] += wJ2 * r, g[3] += w * r;
            F += w * r * r;
        }
    }
    static const int tri[4][4] = {{0, 1, 2, 3}, {1, 4, 5, 6}, {2, 5, 7, 8}, {3, 6, 8, 9}};
    for (int i = 0; i < nf; i++) {
        Jtr[i] = g[free_[i]];
        for (int j = 0; j < nf; j++)
            JtJ[i * nf + j] = A[tri[free_[i]][free_[j]]];
    }
    return F;
}

/* F at p as nc_fit_objective computes it for Derf (the same residuals
 * summed in the same order, so the same bits), leaving E[k] = erf(alpha x_k
 * + shift) for derf_normal when the step is taken. */
NC_VMATH_CLONES
static double derf_trial(const nc_points *pts, const double p[4], double *E)
{
    const double alpha = p[0], shift = p[1], gamma = p[2], beta = p[3];
    nc_erf_run(alpha, shift, pts->x, pts->n, E);
    double F = 0;
    for (size_t k = 0; k < pts->n; k++) {
        double r = pts->y[k] - (gamma * E[k] + beta);
        F += wt(pts, k) * r * r;
    }
    return F;
}

int nc_fit_derf(const nc_points *pts, const nc_fit_opts *o, const double init[4],
                nc_fit_out *out, nc_err *err)
{
    memset(out, 0, sizeof *out);
    if (pts->n == 0)
        return nc_err_set(err, NC_EINVAL, "derf fit: no points");
    const double tol = o->tol > 0 ? o->tol : NC_FIT_TOL;
    const int max_iter = o->max_iter > 0 ? o->max_iter : NC_FIT_MAX_ITER;
    double p[4] = {init[0], init[1], o->amp_fixed ? o->amp : init[2], o->no_offset ? 0 : init[3]};
    int free_[4], nf = 0;
    free_[nf++] = 0;
    free_[nf++] = 1;
    if (!o->amp_fixed)
        free_[nf++] = 2;
    if (!o->no_offset)
        free_[nf++] = 3;

    double JtJ[16], Jtr[4], lambda = 1e-3;
    double *E = malloc(pts->n * sizeof *E); /* erf at the trial point */
    if (!E)
        return nc_err_set(err, NC_ENOMEM, "derf fit: out of memory for %zu points", pts->n);
    double F = derf_normal(pts, p, NULL, free_, nf, JtJ, Jtr);
    bool done = false;
    int it;
    for (it = 0; it < max_iter && !done; it++) {
        bool accepted = false;
        while (!accepted) {
            double A[16], z[4];
            memcpy(A, JtJ, sizeof A);
            for (int i = 0; i < nf; i++)
                A[i * nf + i] += lambda * (JtJ[i * nf + i] > 0 ? JtJ[i * nf + i] : 1.0);
            if (!cholesky_solve(nf, A, Jtr, z)) {
                lambda *= 10;
                if (lambda > 1e16)
                    break;
                continue;
            }
            double q[4];
            memcpy(q, p, sizeof q);
            double step = 0, size = 0;
            for (int i = 0; i < nf; i++) {
                q[free_[i]] += z[i];
                step += z[i] * z[i];
                size += p[free_[i]] * p[free_[i]];
            }
            double Fq = derf_trial(pts, q, E);
            if (Fq <= F) {
                double rel_drop = F > 0 ? (F - Fq) / F : 0;
                memcpy(p, q, sizeof p);
                F = derf_normal(pts, p, E, free_, nf, JtJ, Jtr);
                lambda = fmax(lambda / 3, 1e-12);
                accepted = true;
                if (sqrt(step) <= tol * (sqrt(size) + tol) || rel_drop < 1e-15)
                    done = true;
            } else {
                lambda *= 4;
                if (lambda > 1e16)
                    break;
            }
        }
        if (!accepted) {
            done = true; /* no step lowers F: a minimum to machine precision */
            break;
        }
    }
    free(E);
    memcpy(out->p, p, sizeof p);
    out->objective = F;
    out->iterations = it;
    out->converged = done;
    snprintf(out->status, sizeof out->status, "%s",
             done ? "ok" : "iteration limit reached before the tolerance");
    return 0;
}

double nc_fit_objective(const nc_points *pts, const nc_surrogate *s, const nc_params *p)
{
    enum { CHUNK = 256 };
    double f[CHUNK], F = 0;
    for (size_t k0 = 0; k0 < pts->n; k0 += CHUNK) {
        size_t m = pts->n - k0 < CHUNK ? pts->n - k0 : CHUNK;
        s->eval(p, k0, pts->x + k0, m, f);
        for (size_t k = 0; k < m; k++) {
            double r = pts->y[k0 + k] - f[k];
            F += wt(pts, k0 + k) * r * r;
        }
    }
    return F;
}
