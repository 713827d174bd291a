/*
 * run_summary.c - the run-level block (run_summary.h; docs/report.md, "The
 * run-level block"): per-layer rankings and verdicts, and log-log slopes
 * across layers with t-based 95% confidence intervals.
 *
 * The slope's interval is the textbook one for ordinary least squares on
 * (log x_k, log y_k): se = sqrt(SSR / (n - 2) / Sxx), slope -+
 * t(0.975, n - 2) se. It assumes independent, normal residuals on the log
 * scale; with a handful of layers of one model that is a description, not
 * a guarantee (docs/report.md says so). Student's t quantile comes from
 * the regularised incomplete beta function (continued fraction, modified
 * Lentz) by bisection.
 *
 * Left out: reading reports (merge), JSON and printing.
 */
#include "analysis/run_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nc_layer_summary_init(nc_layer_summary *s, const char *name)
{
    memset(s, 0, sizeof *s);
    s->name = name;
    s->std = s->rho = NAN;
    s->alpha = s->gamma = s->theory_alpha = s->affine_slope = NAN;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        s->r2[k] = s->bp[k] = s->bp_se[k] = NAN;
}

void nc_layer_summary_from_result(const nc_layer_result *res, const nc_jac_result *jac,
                                  nc_layer_summary *s)
{
    nc_layer_summary_init(s, res->name);
    s->d = res->d;
    s->std = res->stats.std;
    s->rho = res->stats.rho;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        if (res->fits[k].ok)
            s->r2[k] = res->fits[k].r2;
    const nc_fit_result *dyt = &res->fits[NC_FIT_DYT], *lin = &res->fits[NC_FIT_LINEAR];
    if (dyt->ok) {
        s->alpha = dyt->params.p[0];
        s->gamma = dyt->params.p[1];
        s->theory_alpha = nc_dyt_theory_params(res->norm, res->stats.rho, res->d).p[0];
    }
    if (lin->ok)
        s->affine_slope = lin->params.p[0];
    for (int k = 0; jac && k < NC_FIT_COUNT; k++)
        if (jac->surr[k].ok) {
            s->bp[k] = jac->surr[k].backprop.err;
            s->bp_se[k] = jac->surr[k].backprop.err_se;
        }
}

/* ------------------------------------------------------ t distribution */

/* The continued fraction of the incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x)
{
    const double tiny = 1e-300;
    double c = 1.0, dd = 1.0 - (a + b) * x / (a + 1.0);
    if (fabs(dd) < tiny)
        dd = tiny;
    dd = 1.0 / dd;
    double h = dd;
    for (int m = 1; m <= 10000; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        dd = 1.0 + aa * dd;
        dd = fabs(dd) < tiny ? tiny : dd;
        c = 1.0 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        dd = 1.0 / dd;
        h *= dd * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        dd = 1.0 + aa * dd;
        dd = fabs(dd) < tiny ? tiny : dd;
        c = 1.0 + aa / c;
        c = fabs(c) < tiny ? tiny : c;
        dd = 1.0 / dd;
        double del = dd * c;
        h *= del;
        if (fabs(del - 1.0) < 1e-15)
            break;
    }
    return h;
}

/* The regularised incomplete beta function I_x(a, b), 0 <= x <= 1. */
static double inc_beta(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lbt) * beta_cf(a, b, x) / a;
    return 1.0 - exp(lbt) * beta_cf(b, a, 1.0 - x) / b;
}

/* P(T <= t) for Student's t with nu degrees of freedom. */
static double t_cdf(double t, double nu)
{
    double tail = 0.5 * inc_beta(0.5 * nu, 0.5, nu / (nu + t * t));
    return t >= 0 ? 1.0 - tail : tail;
}

double nc_t_quantile(double p, double nu)
{
    if (!(p > 0 && p < 1) || !(nu > 0))
        return NAN;
    if (p == 0.5)
        return 0;
    if (p < 0.5)
        return -nc_t_quantile(1.0 - p, nu);
    double lo = 0, hi = 1;
    while (t_cdf(hi, nu) < p && hi < 1e300)
        hi *= 2;
    for (int it = 0; it < 200 && hi - lo > 1e-13 * (1.0 + hi); it++) {
        double mid = 0.5 * (lo + hi);
        if (t_cdf(mid, nu) < p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* ------------------------------------------------------------- log-log */

nc_loglog nc_loglog_fit(const double *x, const double *y, size_t n)
{
    nc_loglog L = {.slope = NAN, .intercept = NAN, .r = NAN, .slope_se = NAN, .ci_lo = NAN,
                   .ci_hi = NAN};
    double mx = 0, my = 0;
    for (size_t k = 0; k < n; k++)
        if (isfinite(x[k]) && isfinite(y[k]) && x[k] > 0 && y[k] > 0) {
            L.n++;
            mx += log(x[k]);
            my += log(y[k]);
        }
    if (L.n < 3) {
        snprintf(L.status, sizeof L.status, "%zu layer%s with both values > 0: no slope (needs 3; "
                 "two points always give r = 1)", L.n, L.n == 1 ? "" : "s");
        return L;
    }
    mx /= (double)L.n;
    my /= (double)L.n;
    double sxx = 0, syy = 0, sxy = 0;
    for (size_t k = 0; k < n; k++)
        if (isfinite(x[k]) && isfinite(y[k]) && x[k] > 0 && y[k] > 0) {
            double u = log(x[k]) - mx, v = log(y[k]) - my;
            sxx += u * u;
            syy += v * v;
            sxy += u * v;
        }
    if (!(sxx > 0)) {
        snprintf(L.status, sizeof L.status, "1/std is the same in every layer: no slope");
        return L;
    }
    L.slope = sxy / sxx;
    L.intercept = my - L.slope * mx;
    L.r = syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
    double ssr = syy - L.slope * sxy;
    ssr = ssr > 0 ? ssr : 0;
    L.slope_se = sqrt(ssr / (double)(L.n - 2) / sxx);
    double t = nc_t_quantile(0.975, (double)(L.n - 2));
    L.ci_lo = L.slope - t * L.slope_se;
    L.ci_hi = L.slope + t * L.slope_se;
    snprintf(L.status, sizeof L.status, "%s", syy > 0 ? "ok" : "y is the same in every layer");
    return L;
}

/* ------------------------------------------------------------- ranking */

/* Ranked: the shared-parameter surrogates; not the affine map (the
 * baseline) nor the per-channel DyT (2d + 1 parameters: not like for like). */
static bool ranked(int k)
{
    return k != NC_FIT_LINEAR && k != NC_FIT_DYT_PER_CHANNEL;
}

/* The best of the ranked fits with a finite value: the largest (R^2) or
 * smallest (backprop error); ties as run_summary.h says. se: standard
 * errors or NULL (R^2). */
static nc_rank rank_fits(const double *v, const double *se, bool larger_better)
{
    nc_rank R = {.best = -1, .value = NAN, .se = NAN};
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        if (!ranked(k) || !isfinite(v[k]))
            continue;
        R.candidates++;
        if (R.best < 0 || (larger_better ? v[k] > R.value : v[k] < R.value)) {
            R.best = k;
            R.value = v[k];
        }
    }
    if (R.best < 0)
        return R;
    R.se = se ? se[R.best] : NAN;
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        if (!ranked(k) || k == R.best || !isfinite(v[k]))
            continue;
        double gap = fabs(v[k] - R.value), lim;
        if (se)
            lim = isfinite(se[k]) && isfinite(R.se) ? 2.0 * sqrt(se[k] * se[k] + R.se * R.se)
                                                    : 0.0;
        else
            lim = NC_R2_TIE;
        if (gap < lim || gap == 0) {
            R.tie[k] = true;
            R.nties++;
        }
    }
    return R;
}

const char *nc_layer_verdict_kind(const nc_layer_verdict *v)
{
    if (v->by_r2.best < 0)
        return "no fit";
    if (!isfinite(v->residual_removed))
        return "no affine baseline";
    return v->residual_removed >= 0.5   ? "strongly saturating"
           : v->residual_removed >= 0.1 ? "saturating"
                                        : "near-linear";
}

/* "dyisru (tie: dyt, derf)" */
static void rank_text(const nc_rank *R, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "%s", nc_surrogate_get((nc_fit_id)R->best)->name);
    const char *sep = " (tie: ";
    for (int k = 0; k < NC_FIT_COUNT && o < cap; k++)
        if (R->tie[k]) {
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", sep,
                                  nc_surrogate_get((nc_fit_id)k)->name);
            sep = ", ";
        }
    if (R->nties && o < cap)
        snprintf(buf + o, cap - o, ")");
}

static void layer_verdict(const nc_layer_summary *s, nc_layer_verdict *v)
{
    v->by_r2 = rank_fits(s->r2, NULL, true);
    v->by_bp = rank_fits(s->bp, s->bp_se, false);
    v->bp_ties_known = v->by_bp.best >= 0 && isfinite(s->bp_se[v->by_bp.best]);
    v->affine_r2 = s->r2[NC_FIT_LINEAR];
    v->gain_r2 = v->by_r2.value - v->affine_r2;
    v->residual_removed = 1.0 - (1.0 - v->by_r2.value) / (1.0 - v->affine_r2);
    v->alpha_over_theory = s->alpha / s->theory_alpha;
    if (v->by_r2.best < 0) {
        snprintf(v->verdict, sizeof v->verdict, "no surrogate was fitted");
        return;
    }
    char r2t[128], bpt[192] = "";
    rank_text(&v->by_r2, r2t, sizeof r2t);
    if (v->by_bp.best >= 0) {
        char t[128];
        rank_text(&v->by_bp, t, sizeof t);
        snprintf(bpt, sizeof bpt, "; best backprop: %s%s", t,
                 v->bp_ties_known ? "" : " (no standard errors: ties not decided)");
    }
    if (!isfinite(v->affine_r2))
        snprintf(v->verdict, sizeof v->verdict, "best R^2: %s %.4f%s", r2t, v->by_r2.value, bpt);
    else
        snprintf(v->verdict, sizeof v->verdict, "%s: best R^2 %s %.4f vs affine %.4f "
                 "(removes %.0f%% of its residual)%s", nc_layer_verdict_kind(v), r2t,
                 v->by_r2.value, v->affine_r2, 100.0 * v->residual_removed, bpt);
}

/* "alpha*gamma ~ (1/std)^0.98 [0.90, 1.06]" or without the interval */
static int slope_text(const char *what, const nc_loglog *L, char *buf, size_t cap)
{
    if (!isfinite(L->slope))
        return snprintf(buf, cap, "%s: no slope", what);
    if (!isfinite(L->ci_lo))
        return snprintf(buf, cap, "%s ~ (1/std)^%.2f", what, L->slope);
    return snprintf(buf, cap, "%s ~ (1/std)^%.2f [%.2f, %.2f]", what, L->slope, L->ci_lo,
                    L->ci_hi);
}

/* Whether two slopes' intervals overlap (false without intervals). */
static bool overlap(const nc_loglog *a, const nc_loglog *b)
{
    return isfinite(a->ci_lo) && isfinite(b->ci_lo) && a->ci_lo <= b->ci_hi &&
           b->ci_lo <= a->ci_hi;
}

/* A group's line: "d = 256 (3 layers: early, middle, late): alpha ~ ...;
 * alpha*gamma ~ ...; affine slope ~ ...; <comparison>". */
static void group_verdict(const nc_layer_summary *L, nc_run_group *G)
{
    char names[160] = "", a[96], ag[96], af[96];
    size_t o = 0;
    for (size_t k = 0; k < G->nlayers && o < sizeof names; k++)
        o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", k ? ", " : "",
                              L[G->layer[k]].name ? L[G->layer[k]].name : "?");
    if (o >= sizeof names) /* cut: end on "..." */
        memcpy(names + sizeof names - 4, "...", 4);
    const char *head = G->nlayers == 1 ? "layer" : "layers";
    if (G->nlayers < 3) {
        snprintf(G->verdict, sizeof G->verdict, "d = %zu (%zu %s: %s): no slopes (needs 3 "
                 "layers)", G->d, G->nlayers, head, names);
        return;
    }
    slope_text("alpha", &G->alpha, a, sizeof a);
    slope_text("alpha*gamma", &G->alpha_gamma, ag, sizeof ag);
    slope_text("affine slope", &G->affine, af, sizeof af);
    const char *cmp = !isfinite(G->alpha_gamma.ci_lo) || !isfinite(G->affine.ci_lo)
                          ? "too few layers to compare the slopes"
                      : overlap(&G->alpha_gamma, &G->affine)
                          ? "alpha*gamma follows 1/std no differently from the affine slope "
                            "(intervals overlap)"
                          : "alpha*gamma and the affine slope follow 1/std differently "
                            "(intervals apart)";
    snprintf(G->verdict, sizeof G->verdict, "d = %zu (%zu %s: %s): %s; %s; %s; %s", G->d,
             G->nlayers, head, names, a, ag, af, cmp);
}

static void run_verdict(const nc_layer_summary *L, nc_run_summary *R)
{
    const char *best = R->most_best_r2 >= 0 ? nc_surrogate_get((nc_fit_id)R->most_best_r2)->name
                                            : "none";
    size_t o = (size_t)snprintf(R->verdict, sizeof R->verdict,
                                "%zu of %zu layers saturating; best R^2 most often: %s (%zu)",
                                R->saturating, R->nlayers, best, R->most_best_r2_count);
    for (size_t g = 0; g < R->ngroups && o < sizeof R->verdict; g++) {
        group_verdict(L, &R->group[g]);
        o += (size_t)snprintf(R->verdict + o, sizeof R->verdict - o, " | %s",
                              R->group[g].verdict);
    }
}

size_t nc_width_groups(const size_t *d, size_t n, size_t *group_of)
{
    size_t ng = 0;
    for (size_t k = 0; k < n; k++) {
        size_t q = 0;
        while (q < k && d[q] != d[k]) /* the first earlier layer of width d */
            q++;
        group_of[k] = q < k ? group_of[q] : ng++;
    }
    return ng;
}

/* The groups of the run and their slopes (v: scratch of 4 n doubles). */
static int run_groups(const nc_layer_summary *L, size_t n, nc_run_summary *out, double *v)
{
    size_t *d = malloc((n ? n : 1) * sizeof *d), *idx = calloc(n ? n : 1, sizeof *idx);
    out->group_of = malloc((n ? n : 1) * sizeof *out->group_of);
    if (!d || !idx || !out->group_of) {
        free(d);
        free(idx);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        d[k] = L[k].d;
    out->ngroups = nc_width_groups(d, n, out->group_of);
    free(d);
    out->group = calloc(out->ngroups ? out->ngroups : 1, sizeof *out->group);
    if (!out->group || out->ngroups == 0) { /* no layers: nothing to slice idx for */
        free(idx);
        return out->group ? 0 : -1;
    }
    size_t used = 0; /* the groups' index lists share idx, one slice each */
    double *x = v, *al = v + n, *ag = v + 2 * n, *af = v + 3 * n;
    for (size_t g = 0; g < out->ngroups; g++) {
        nc_run_group *G = &out->group[g];
        G->layer = idx + used;
        for (size_t k = 0; k < n; k++)
            if (out->group_of[k] == g) {
                size_t m = G->nlayers++;
                G->layer[m] = k;
                G->d = L[k].d;
                x[m] = 1.0 / L[k].std;
                al[m] = L[k].alpha;
                ag[m] = L[k].alpha * L[k].gamma;
                af[m] = L[k].affine_slope;
            }
        used += G->nlayers;
        G->alpha = nc_loglog_fit(x, al, G->nlayers);
        G->alpha_gamma = nc_loglog_fit(x, ag, G->nlayers);
        G->affine = nc_loglog_fit(x, af, G->nlayers);
    }
    return 0;
}

int nc_run_summary_compute(const nc_layer_summary *L, size_t n, nc_run_summary *out,
                           nc_err *err)
{
    memset(out, 0, sizeof *out);
    out->most_best_r2 = -1;
    out->layer = calloc(n ? n : 1, sizeof *out->layer);
    double *v = malloc(4 * (n ? n : 1) * sizeof *v);
    if (!out->layer || !v || run_groups(L, n, out, v) != 0) {
        free(v);
        nc_run_summary_free(out);
        return nc_err_set(err, NC_ENOMEM, "out of memory for the run summary");
    }
    out->nlayers = n;
    size_t count[NC_FIT_COUNT] = {0};
    for (size_t k = 0; k < n; k++) {
        layer_verdict(&L[k], &out->layer[k]);
        if (strstr(nc_layer_verdict_kind(&out->layer[k]), "saturating"))
            out->saturating++;
        if (out->layer[k].by_r2.best >= 0)
            count[out->layer[k].by_r2.best]++;
    }
    for (int f = 0; f < NC_FIT_COUNT; f++)
        if (count[f] > out->most_best_r2_count) {
            out->most_best_r2 = f;
            out->most_best_r2_count = count[f];
        }
    run_verdict(L, out);
    free(v);
    return 0;
}

void nc_run_summary_free(nc_run_summary *s)
{
    if (!s)
        return;
    free(s->layer);
    if (s->group) /* one index array, sliced per group: its start is group 0's */
        free(s->group[0].layer);
    free(s->group);
    free(s->group_of);
    memset(s, 0, sizeof *s);
}
