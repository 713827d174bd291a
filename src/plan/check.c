/*
 * check.c - the real-output check of a plan layer after its first analysis
 * (check.h; docs/report.md, "real_output_check").
 *
 * The real output is read against the noise model of its dtype
 * (analysis/normcheck.h): which norm kind reproduces it to rounding and
 * which eps the tokens allow. What was given explicitly (a flag or the
 * config) is kept, and a contradiction is a warning. What came from the
 * dump's metadata is kept where the data allow it and otherwise replaced
 * (with a warning: the metadata is wrong); the defaults are replaced by
 * what the data identify. A layer whose norm changed is analysed again.
 */
#include "plan/check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *nc_src_name(nc_src src)
{
    switch (src) {
    case NC_SRC_FLAG: return "flag";
    case NC_SRC_CONFIG: return "config";
    case NC_SRC_METADATA: return "metadata";
    case NC_SRC_DETECTED: return "detected";
    default: return "default";
    }
}

static bool is_explicit(nc_src s)
{
    return s == NC_SRC_FLAG || s == NC_SRC_CONFIG;
}

static double kind_default_eps(nc_norm_kind k)
{
    return k == NC_RMSNORM ? NC_RMSNORM_EPS : NC_LAYERNORM_EPS;
}

/* "bf16", "f16", "f32", "f64": the precision in messages. */
static const char *precision_name(nc_dtype dt)
{
    switch (dt) {
    case NC_BF16: return "bf16";
    case NC_F16: return "f16";
    case NC_F64: return "f64";
    default: return "f32";
    }
}

/* "0.012", or "undefined" for a q without tokens. */
static const char *q_text(double q, char *buf, size_t cap)
{
    if (q == q)
        snprintf(buf, cap, "%.2g", q);
    else
        snprintf(buf, cap, "undefined");
    return buf;
}

/* "rmsnorm eps 1e-05 (kind from flag, eps from metadata)" */
static void norm_text(nc_norm_kind kind, double eps, nc_src ks, nc_src es, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s eps %.3g (kind from %s, eps from %s)", nc_norm_name(kind), eps,
             nc_src_name(ks), nc_src_name(es));
}

/* What the data say, for the messages: the kind with both q, then eps
 * under `kind`. */
static void found_text(const nc_norm_check *det, nc_norm_kind kind, char *buf, size_t cap)
{
    const nc_kind_check *K = &det->k[det->kind], *O = &det->k[1 - det->kind];
    const char *other = nc_norm_name((nc_norm_kind)(1 - det->kind));
    char kt[200], e[160], q1[24], q2[24];
    q_text(K->q_free, q1, sizeof q1);
    q_text(O->q_free, q2, sizeof q2);
    if (det->verdict == NC_KIND_NEITHER)
        snprintf(kt, sizeof kt, "neither norm kind reproduces the real output (q %s %s, %s %s)",
                 nc_norm_name(det->kind), q1, other, q2);
    else
        snprintf(kt, sizeof kt, "the real output is %s%s (q %s; %s q %s)",
                 nc_norm_name(det->kind),
                 det->verdict == NC_KIND_UNDETERMINED ? " or either kind" : "", q1, other, q2);
    const nc_eps_fit *f = &det->k[kind].eps;
    if (!f->assessed)
        snprintf(e, sizeof e, "eps not assessed (too few distinct tokens)");
    else if (f->identified)
        snprintf(e, sizeof e, "eps %.4g +- %.2g (allowed %.3g..%.3g with the rounding bias)",
                 f->estimate, f->se, f->lo, f->hi);
    else
        snprintf(e, sizeof e, "eps not identified by the data (< %.2g)", fmax(f->hi, 0.0));
    const nc_kind_check *U = &det->k[kind];
    snprintf(buf, cap, "%s, %s%s", kt, e,
             U->weight == NC_AFFINE_ESTIMATED
                 ? (U->bias == NC_AFFINE_ESTIMATED ? "; weight and bias estimated from it"
                                                   : "; weight estimated from it")
                 : "");
}

/* Runs the analysis again with norm and eps; the old result goes. */
static int rerun(nc_plan_layer *l, nc_layer_spec *spec, nc_norm_kind norm, double eps,
                 nc_err *err)
{
    nc_layer_result_free(&l->result);
    spec->norm = l->norm = norm;
    spec->eps = l->eps = eps;
    l->check.rerun = true;
    return nc_layer_analyze(spec, &l->result, err);
}

/* The norm to use: a given kind or eps is kept unless the data contradict
 * it and it is not explicit; the defaults yield to what the data say. The
 * sources of what changes become "detected". */
static void decide(nc_plan_layer *l, nc_real_check *c, nc_norm_kind *norm, double *eps)
{
    const nc_norm_check *det = &c->det;
    *norm = l->norm;
    *eps = l->eps;
    if (det->verdict == NC_KIND_IDENTIFIED && det->kind != l->norm) {
        c->kind_contradicted = l->norm_source != NC_SRC_DEFAULT;
        if (!is_explicit(l->norm_source)) {
            *norm = det->kind;
            l->norm_source = NC_SRC_DETECTED;
            if (l->eps_source == NC_SRC_DEFAULT)
                *eps = kind_default_eps(*norm);
        }
    }
    if (!det->k[*norm].consistent)
        return; /* eps is judged under a kind that fits only */
    const nc_eps_fit *f = &det->k[*norm].eps;
    if (nc_eps_fit_allows(f, *eps))
        return;
    c->eps_contradicted = l->eps_source != NC_SRC_DEFAULT;
    if (!is_explicit(l->eps_source)) {
        *eps = nc_eps_pick(f, kind_default_eps(*norm));
        l->eps_source = NC_SRC_DETECTED;
    }
}

/* The message line and status once the norm is final. */
static void conclude(nc_plan_layer *l, nc_real_check *c, bool changed, const char *was)
{
    const nc_norm_check *det = &c->det;
    char found[400], now[160], q[24];
    q_text(c->q, q, sizeof q);
    found_text(det, l->norm, found, sizeof found);
    const char *prec = precision_name(det->precision);
    bool expl = is_explicit(l->norm_source) || is_explicit(l->eps_source);
    if (!c->agrees) {
        norm_text(l->norm, l->eps, l->norm_source, l->eps_source, now, sizeof now);
        c->status = expl ? "mismatch_explicit" : "mismatch";
        c->warn = true;
        snprintf(c->message, sizeof c->message, "warning: %s: the real output differs from %s "
                 "beyond %s rounding (q %s): %s", l->name, now, prec, q, found);
        return;
    }
    c->warn = c->kind_contradicted || c->eps_contradicted;
    if (changed) {
        c->status = "detected";
        snprintf(c->message, sizeof c->message, "%s%s: detected %s eps %.3g from the real "
                 "output (q %s, was %s): %s", c->warn ? "warning: " : "", l->name,
                 nc_norm_name(l->norm), l->eps, q, was, found);
        return;
    }
    c->status = "ok";
    if (det->verdict == NC_KIND_UNDETERMINED)
        snprintf(c->message, sizeof c->message, "%s: the norm kind is undetermined at %s "
                 "precision (both reproduce the real output: q layernorm %.2g, rmsnorm %.2g); "
                 "used %s (%s)", l->name, prec, det->k[NC_LAYERNORM].q_free,
                 det->k[NC_RMSNORM].q_free, nc_norm_name(l->norm), nc_src_name(l->norm_source));
}

int nc_plan_check_real(nc_plan_layer *l, nc_layer_spec *spec, nc_err *err)
{
    nc_real_check *c = &l->check;
    const nc_layer_result *r = &l->result;
    memset(c, 0, sizeof *c);
    if (!spec->y_real || !r->has_real)
        return 0;
    c->checked = true;
    c->first_norm = l->norm;
    c->first_eps = l->eps;
    c->first_max_abs_diff = r->real_max_abs_diff;
    c->first_rms_diff = r->real_rms_diff;
    if (!isfinite(r->real_max_abs_diff)) {
        c->status = "nonfinite";
        return 0;
    }
    nc_normcheck_opts o = {.source_dtype = l->source_dtype};
    for (int k = 0; k < 2; k++)
        o.eps_guess[k] = k == (int)l->norm || l->eps_source != NC_SRC_DEFAULT
                             ? l->eps : kind_default_eps((nc_norm_kind)k);
    nc_norm_check det;
    int rc = nc_norm_check_run(r, spec->x, spec->y_real, spec->weight, spec->bias, &o,
                               spec->threads, &det, err);
    if (rc)
        return rc;
    c->detected = true;
    char was[160];
    norm_text(l->norm, l->eps, l->norm_source, l->eps_source, was, sizeof was);
    c->det = det;
    nc_norm_kind norm;
    double eps;
    decide(l, c, &norm, &eps);
    const nc_eps_fit *f = &det.k[norm].eps;
    c->q = nc_norm_check_q(&det, norm, eps);
    c->agrees = det.k[norm].consistent && nc_eps_fit_allows(f, eps) &&
                c->q <= NC_NORMCHECK_Q_MAX;
    for (int k = 0; k < 2; k++)
        c->det.k[k].m = c->det.k[k].a = c->det.k[k].uu = c->det.k[k].rss = NULL;
    nc_norm_check_free(&det);
    bool changed = norm != l->norm || eps != l->eps;
    if (changed && (rc = rerun(l, spec, norm, eps, err)))
        return rc;
    conclude(l, c, changed, was);
    return 0;
}
