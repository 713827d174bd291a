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
    s->source = "";
    s->norm = -1;
    s->std = s->rho = NAN;
    s->alpha = s->gamma = s->theory_alpha = s->affine_slope = NAN;
    for (int k = 0; k < NC_FIT_COUNT; k++)
        s->r2[k] = s->bp[k] = s->bp_se[k] = s->r2_gap_lo[k] = s->bp_gap_lo[k] = NAN;
    s->boot_best = s->boot_bp_best = -1;
    s->removed_lo = s->removed_hi = NAN;
    s->slope_ratio = s->slope_ratio_lo = s->slope_ratio_hi = s->alpha_lo = s->alpha_hi = NAN;
    s->dropin_rmse_real = s->dropin_rmse_rec = NAN;
    s->swap_delta = s->swap_delta_se = NAN;
}

/* The bootstrap's numbers of a finished layer (layer.h nc_layer_boot). */
static void summary_boot(const nc_layer_boot *B, nc_layer_summary *s)
{
    s->boot_too_few = B->too_few;
    if (!B->done)
        return;
    s->boot = true;
    s->boot_best = B->best;
    s->boot_bp_best = B->bp_best;
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        s->r2_gap_lo[k] = B->r2_gap_ci[k].lo;
        s->bp_gap_lo[k] = B->bp_gap_ci[k].lo;
    }
    s->removed_lo = B->removed_ci.lo;
    s->removed_hi = B->removed_ci.hi;
    s->slope_ratio_lo = B->slope_ratio_ci.lo;
    s->slope_ratio_hi = B->slope_ratio_ci.hi;
    s->alpha_lo = B->alpha.lo;
    s->alpha_hi = B->alpha.hi;
    s->nrep = B->rep_ok ? nc_boot_run_replicates(B->replicates) : 0;
    for (int j = 0; j < NC_BOOT_REP; j++)
        s->rep[j] = B->rep + (size_t)j * B->replicates;
}

void nc_layer_summary_from_result(const nc_layer_result *res, const nc_jac_result *jac,
                                  nc_layer_summary *s)
{
    nc_layer_summary_init(s, res->name);
    s->norm = (int)res->norm;
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
    s->slope_ratio = s->alpha * s->gamma * s->rho;
    for (int k = 0; jac && k < NC_FIT_COUNT; k++)
        if (jac->surr[k].ok) {
            s->bp[k] = jac->surr[k].backprop.err;
            s->bp_se[k] = jac->surr[k].backprop.err_se;
        }
    summary_boot(&res->boot, s);
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

static bool ranked(int k)
{
    return nc_fit_ranked((nc_fit_id)k);
}

/* The best of the ranked fits with a finite value: the largest (R^2) or
 * smallest (backprop error); ties as run_summary.h says. gap_lo: the lower
 * ends of the bootstrap intervals of each fit's gap to boot_best (NULL: no
 * bootstrap; then se: standard errors, or NULL for R^2's fixed rule). */
static nc_rank rank_fits(const double *v, const double *se, bool larger_better,
                         const double *gap_lo, int boot_best)
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
    if (gap_lo && boot_best >= 0 && isfinite(v[boot_best])) { /* the bootstrap's own best */
        R.best = boot_best;
        R.value = v[boot_best];
    }
    R.se = se ? se[R.best] : NAN;
    for (int k = 0; k < NC_FIT_COUNT; k++) {
        if (!ranked(k) || k == R.best || !isfinite(v[k]))
            continue;
        double gap = fabs(v[k] - R.value), lim;
        bool tie;
        if (gap_lo) {
            tie = !(gap_lo[k] > 0); /* the interval reaches 0, or is undefined */
        } else {
            if (se)
                lim = isfinite(se[k]) && isfinite(R.se) ? 2.0 * sqrt(se[k] * se[k] + R.se * R.se)
                                                        : 0.0;
            else
                lim = NC_R2_TIE;
            tie = gap < lim || gap == 0;
        }
        if (tie) {
            R.tie[k] = true;
            R.nties++;
        }
    }
    return R;
}

/* Thresholds of the share of the affine residual removed. */
#define SATURATING 0.1
#define STRONGLY 0.5

const char *nc_layer_verdict_kind(const nc_layer_verdict *v)
{
    if (v->by_r2.best < 0)
        return "no fit";
    if (!isfinite(v->residual_removed))
        return "no affine baseline";
    if (v->too_few)
        return "undecided";
    if (!v->boot)
        return v->residual_removed >= STRONGLY     ? "strongly saturating"
               : v->residual_removed >= SATURATING ? "saturating"
                                                   : "near-linear";
    if (!isfinite(v->removed_lo) || !isfinite(v->removed_hi))
        return "undecided";
    return v->removed_lo >= STRONGLY     ? "strongly saturating"
           : v->removed_lo >= SATURATING ? "saturating"
           : v->removed_hi < SATURATING  ? "near-linear"
                                         : "undecided";
}

/* "dyisru" or "tie: dyisru, dyt, derf" (the best first), or "dyisru
 * (point estimate)" when nothing can be decided */
static void rank_text(const nc_rank *R, bool undecided, char *buf, size_t cap)
{
    const char *best = nc_surrogate_get((nc_fit_id)R->best)->name;
    if (undecided) {
        snprintf(buf, cap, "%s (point estimate)", best);
        return;
    }
    size_t o = (size_t)snprintf(buf, cap, "%s%s", R->nties ? "tie: " : "", best);
    for (int k = 0; k < NC_FIT_COUNT && o < cap; k++)
        if (R->tie[k])
            o += (size_t)snprintf(buf + o, cap - o, ", %s", nc_surrogate_get((nc_fit_id)k)->name);
}

/* " [lo, hi]" in percent, or "" */
static void pct_ci(double lo, double hi, char *buf, size_t cap)
{
    if (isfinite(lo) && isfinite(hi))
        snprintf(buf, cap, " [%.0f%%, %.0f%%]", 100.0 * lo, 100.0 * hi);
    else
        snprintf(buf, cap, "%s", "");
}

/* "; <what> +0.012 +- 0.003 nats per token" (a stale result says so) */
static void swap_text(double delta, double se, const char *unit, bool stale, const char *what,
                      char *buf, size_t cap)
{
    char sev[32] = "";
    if (isfinite(se))
        snprintf(sev, sizeof sev, " +- %.2g", se);
    snprintf(buf, cap, "; %s %+.3g%s %s%s", what, delta, sev, unit ? unit : "",
             stale ? " (swap test of other drop-ins: rerun it)" : "");
}

void nc_run_summary_swap(nc_run_summary *R, double delta, double se, const char *unit,
                         bool stale)
{
    R->has_swap = true;
    R->swap_all = delta;
    R->swap_all_se = se;
    R->swap_unit = unit;
    R->swap_stale = stale;
    char t[256];
    swap_text(delta, se, unit, stale, "every norm replaced by its drop-in DyT costs", t, sizeof t);
    /* after the layers' counts, before the groups (" | ") */
    char *bar = strstr(R->verdict, " | ");
    size_t at = bar ? (size_t)(bar - R->verdict) : strlen(R->verdict), tl = strlen(t);
    if (strlen(R->verdict) + tl < sizeof R->verdict) {
        memmove(R->verdict + at + tl, R->verdict + at, strlen(R->verdict) - at + 1);
        memcpy(R->verdict + at, t, tl);
    }
}

static void layer_verdict(const nc_layer_summary *s, nc_layer_verdict *v)
{
    v->boot = s->boot;
    v->too_few = s->boot_too_few && !s->boot;
    v->by_r2 = rank_fits(s->r2, NULL, true, s->boot ? s->r2_gap_lo : NULL, s->boot_best);
    bool bp_boot = s->boot && s->boot_bp_best >= 0;
    v->by_bp = rank_fits(s->bp, s->bp_se, false, bp_boot ? s->bp_gap_lo : NULL, s->boot_bp_best);
    v->bp_ties_known = v->by_bp.best >= 0 && (bp_boot || isfinite(s->bp_se[v->by_bp.best]));
    v->affine_r2 = s->r2[NC_FIT_LINEAR];
    v->gain_r2 = v->by_r2.value - v->affine_r2;
    v->residual_removed = 1.0 - (1.0 - v->by_r2.value) / (1.0 - v->affine_r2);
    v->removed_lo = s->removed_lo;
    v->removed_hi = s->removed_hi;
    v->slope_ratio = s->slope_ratio;
    v->slope_ratio_lo = s->slope_ratio_lo;
    v->slope_ratio_hi = s->slope_ratio_hi;
    if (v->by_r2.best < 0) {
        snprintf(v->verdict, sizeof v->verdict, "no surrogate was fitted");
        return;
    }
    char r2t[128], bpt[256] = "", rm[48], sr[384] = "";
    rank_text(&v->by_r2, v->too_few, r2t, sizeof r2t);
    if (v->by_bp.best >= 0) {
        char t[128];
        rank_text(&v->by_bp, v->too_few, t, sizeof t);
        snprintf(bpt, sizeof bpt, "; best backprop: %s, bp err %.4g%s", t, v->by_bp.value,
                 v->bp_ties_known ? "" : " (no uncertainty: ties not decided)");
    }
    size_t so = 0;
    if (isfinite(v->slope_ratio))
        so = (size_t)snprintf(sr, sizeof sr, isfinite(v->slope_ratio_lo)
                              ? "; slope at 0 / theory %.3g [%.3g, %.3g]"
                              : "; slope at 0 / theory %.3g", v->slope_ratio, v->slope_ratio_lo,
                              v->slope_ratio_hi);
    if (so < sizeof sr && (isfinite(s->dropin_rmse_real) || isfinite(s->dropin_rmse_rec)))
        so += (size_t)snprintf(sr + so, sizeof sr - so, "; drop-in DyT RMSE %.3g (%s output)",
                               isfinite(s->dropin_rmse_real) ? s->dropin_rmse_real
                                                             : s->dropin_rmse_rec,
                               isfinite(s->dropin_rmse_real) ? "real" : "recomputed");
    if (so < sizeof sr && isfinite(s->swap_delta))
        swap_text(s->swap_delta, s->swap_delta_se, s->swap_unit, s->swap_stale,
                  "replacing it alone costs", sr + so, sizeof sr - so);
    const char *point = v->boot      ? ""
                        : v->too_few ? " (point estimates: too few blocks of tokens for a "
                                       "bootstrap, nothing decided)"
                                     : " (point estimates: no bootstrap)";
    if (!isfinite(v->affine_r2)) {
        snprintf(v->verdict, sizeof v->verdict, "best R^2: %s %.4f%s%s%s", r2t, v->by_r2.value,
                 bpt, sr, point);
        return;
    }
    char pct[16];
    if (isfinite(v->residual_removed))
        snprintf(pct, sizeof pct, "%.0f%%", 100.0 * v->residual_removed);
    else
        snprintf(pct, sizeof pct, "undefined");
    pct_ci(v->removed_lo, v->removed_hi, rm, sizeof rm);
    snprintf(v->verdict, sizeof v->verdict, "%s: removes %s%s of the affine residual "
             "(best R^2 %s %.4f vs affine %.4f)%s%s%s", nc_layer_verdict_kind(v), pct, rm, r2t,
             v->by_r2.value, v->affine_r2, bpt, sr, point);
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

/* The last component of a source path ("data/vit4mnist/" -> "vit4mnist"),
 * into buf. */
static const char *short_source(const char *src, char *buf, size_t cap)
{
    size_t n = src ? strlen(src) : 0;
    while (n > 1 && src[n - 1] == '/')
        n--;
    size_t a = n;
    while (a > 0 && src[a - 1] != '/')
        a--;
    snprintf(buf, cap, "%.*s", (int)(n - a), src ? src + a : "");
    return buf;
}

/* "vit4mnist: LayerNorm, d = 64, 3 layers" (or the config's group name) */
static void group_head(const nc_run_group *G, char *buf, size_t cap)
{
    char sb[96];
    const char *kind = G->norm == NC_LAYERNORM ? "LayerNorm" : G->norm == NC_RMSNORM ? "RMSNorm"
                                                                                    : "norm ?";
    snprintf(buf, cap, "%s: %s, d = %zu, %zu layer%s",
             G->name ? G->name : short_source(G->source, sb, sizeof sb), kind, G->d, G->nlayers,
             G->nlayers == 1 ? "" : "s");
}

/* A group's line: "<head>: alpha ~ ...; alpha*gamma ~ ...; affine slope ~
 * ...; <comparison>" (the layers' names are in the groups' lists). */
static void group_verdict(nc_run_group *G)
{
    char head[160], a[96], ag[96], af[96];
    group_head(G, head, sizeof head);
    if (G->nlayers < 3) {
        snprintf(G->verdict, sizeof G->verdict, "%s: no slopes (needs 3 layers)", head);
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
    snprintf(G->verdict, sizeof G->verdict, "%s: %s; %s; %s; %s", head, a, ag, af, cmp);
}

static void run_verdict(nc_run_summary *R)
{
    const char *best = R->most_best_r2 >= 0 ? nc_surrogate_get((nc_fit_id)R->most_best_r2)->name
                                            : "none";
    size_t o = (size_t)snprintf(R->verdict, sizeof R->verdict,
                                "%zu of %zu layers saturating, %zu near-linear, %zu undecided",
                                R->saturating, R->nlayers, R->near_linear, R->undecided);
    if (R->decided_best)
        o += (size_t)snprintf(R->verdict + o, sizeof R->verdict - o,
                              "; best R^2 most often: %s (%zu of the %zu layers with a decided "
                              "best, %zu ties)", best, R->most_best_r2_count, R->decided_best,
                              R->nlayers - R->decided_best);
    else
        o += (size_t)snprintf(R->verdict + o, sizeof R->verdict - o,
                              "; no layer has a best R^2 outside a tie");
    if (!R->boot && o < sizeof R->verdict)
        o += (size_t)snprintf(R->verdict + o, sizeof R->verdict - o,
                              " (point estimates: some layers have no bootstrap)");
    for (size_t g = 0; g < R->ngroups && o < sizeof R->verdict; g++) {
        group_verdict(&R->group[g]);
        o += (size_t)snprintf(R->verdict + o, sizeof R->verdict - o, " | %s",
                              R->group[g].verdict);
    }
}

/* The token bootstrap of a group's slopes: the OLS slope on each replicate
 * (the layers' replicate r are paired: the same draws), summarised. */
static void group_boot(const nc_layer_summary *L, nc_run_group *G, double *v)
{
    const nc_boot_ci none = {NAN, NAN, NAN};
    G->boot_alpha = G->boot_alpha_gamma = G->boot_affine = none;
    size_t B = SIZE_MAX;
    for (size_t m = 0; m < G->nlayers; m++)
        B = L[G->layer[m]].nrep < B ? L[G->layer[m]].nrep : B;
    if (G->nlayers < 3 || B == SIZE_MAX || B < 2)
        return;
    G->boot_n = B;
    double *x = v, *y = v + G->nlayers, *sl = v + 2 * G->nlayers, *work = sl + 3 * B;
    const int ys[3] = {NC_BOOT_REP_ALPHA, NC_BOOT_REP_ALPHA_GAMMA, NC_BOOT_REP_AFFINE};
    for (size_t r = 0; r < B; r++)
        for (int q = 0; q < 3; q++) {
            for (size_t m = 0; m < G->nlayers; m++) {
                const nc_layer_summary *s = &L[G->layer[m]];
                x[m] = exp(s->rep[NC_BOOT_REP_INV_STD][r]);
                y[m] = exp(s->rep[ys[q]][r]);
            }
            sl[q * B + r] = nc_loglog_fit(x, y, G->nlayers).slope;
        }
    G->boot_alpha = nc_boot_summary(sl, 1, B, work);
    G->boot_alpha_gamma = nc_boot_summary(sl + B, 1, B, work);
    G->boot_affine = nc_boot_summary(sl + 2 * B, 1, B, work);
}

/* The groups of the run and their slopes (v: scratch of 4 n doubles). */
static int run_groups(const nc_layer_summary *L, size_t n, nc_run_summary *out, double *v)
{
    nc_group_key *key = malloc((n ? n : 1) * sizeof *key);
    size_t *idx = calloc(n ? n : 1, sizeof *idx);
    out->group_of = malloc((n ? n : 1) * sizeof *out->group_of);
    double *bv = malloc((2 * n + 4 * NC_BOOT_RUN_REPLICATES + 1) * sizeof *bv);
    if (!key || !idx || !out->group_of || !bv) {
        free(key);
        free(idx);
        free(bv);
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        key[k] = (nc_group_key){L[k].group, L[k].source, L[k].norm, L[k].d};
    out->ngroups = nc_model_groups(key, n, out->group_of);
    free(key);
    out->group = calloc(out->ngroups ? out->ngroups : 1, sizeof *out->group);
    if (!out->group || out->ngroups == 0) { /* no layers: nothing to slice idx for */
        free(idx);
        free(bv);
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
                G->norm = L[k].norm;
                G->source = L[k].source;
                G->name = L[k].group;
                x[m] = 1.0 / L[k].std;
                al[m] = L[k].alpha;
                ag[m] = L[k].alpha * L[k].gamma;
                af[m] = L[k].affine_slope;
            }
        used += G->nlayers;
        G->alpha = nc_loglog_fit(x, al, G->nlayers);
        G->alpha_gamma = nc_loglog_fit(x, ag, G->nlayers);
        G->affine = nc_loglog_fit(x, af, G->nlayers);
        group_boot(L, G, bv);
    }
    free(bv);
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
    out->boot = n > 0;
    for (size_t k = 0; k < n; k++) {
        const nc_layer_verdict *lv = &out->layer[k];
        layer_verdict(&L[k], &out->layer[k]);
        const char *kind = nc_layer_verdict_kind(lv);
        out->saturating += strstr(kind, "saturating") != NULL;
        out->near_linear += strcmp(kind, "near-linear") == 0;
        out->undecided += strcmp(kind, "undecided") == 0;
        out->boot &= lv->boot;
        if (lv->by_r2.best >= 0 && lv->by_r2.nties == 0 && !lv->too_few) {
            count[lv->by_r2.best]++;
            out->decided_best++;
        }
    }
    for (int f = 0; f < NC_FIT_COUNT; f++)
        if (count[f] > out->most_best_r2_count) {
            out->most_best_r2 = f;
            out->most_best_r2_count = count[f];
        }
    run_verdict(out);
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
