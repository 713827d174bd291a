/*
 * check.c - the real-output check of a plan layer after its first analysis
 * (check.h; docs/report.md, "real_output_check").
 *
 * The recomputed output (with the affine part) must equal the real output
 * to the dtype's precision (analysis/normcheck.h, nc_real_output_tol). When
 * it does not, the norm kind and eps are read back from the real output
 * (nc_norm_detect_run). What was given explicitly (a flag or the config) is
 * kept: a disagreement with it is a warning. What was not (the dump's
 * metadata, or the default) is replaced by what the data identify, and the
 * layer is analysed again with it.
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

/* "rmsnorm eps 1e-05 (kind from flag, eps from metadata)" */
static void norm_text(nc_norm_kind kind, double eps, nc_src ks, nc_src es, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s eps %.3g (kind from %s, eps from %s)", nc_norm_name(kind), eps,
             nc_src_name(ks), nc_src_name(es));
}

/* What the detection says, for the messages. */
static void detect_text(const nc_norm_detect *det, char *buf, size_t cap)
{
    char e[96];
    if (det->eps_identified)
        snprintf(e, sizeof e, "eps %.4g +- %.2g", det->eps_hat, det->eps_se);
    else if (det->eps_bound == det->eps_bound)
        snprintf(e, sizeof e, "eps not identified by the data (< %.2g)", det->eps_bound);
    else
        snprintf(e, sizeof e, "eps not identified (too few tokens)");
    snprintf(buf, cap, "the real output is %s%s (relative residual %.2g; %s %.2g), %s",
             nc_norm_name(det->kind), det->kind_identified ? "" : " or either kind",
             det->rel_resid[det->kind], nc_norm_name((nc_norm_kind)(1 - det->kind)),
             det->rel_resid[1 - det->kind], e);
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

/* The detected norm, where not explicit; false when nothing would change. */
static bool choose(const nc_plan_layer *l, const nc_norm_detect *det, nc_norm_kind *norm,
                   double *eps, bool *eps_detected)
{
    *eps_detected = false;
    *norm = l->norm;
    *eps = l->eps;
    if (!is_explicit(l->norm_source) && det->kind_identified)
        *norm = det->kind;
    if (l->eps_source == NC_SRC_DEFAULT && *norm != l->norm)
        *eps = *norm == NC_RMSNORM ? NC_RMSNORM_EPS : NC_LAYERNORM_EPS; /* the kind's default */
    if (!is_explicit(l->eps_source) && *norm == det->kind) {
        double e = *eps;
        if (det->eps_identified)
            *eps = det->eps;
        else if (det->eps_bound == det->eps_bound && *eps > det->eps_bound)
            *eps = det->eps_hat > 0 ? det->eps_hat : 0.0;
        *eps_detected = *eps != e;
    }
    return *norm != l->norm || *eps != l->eps;
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
    c->tol = nc_real_output_tol(spec->x, spec->y_real, r->real_max_abs);
    if (!isfinite(r->real_max_abs_diff)) {
        c->status = "nonfinite";
        return 0;
    }
    if (r->real_max_abs_diff <= c->tol) {
        c->status = "ok";
        return 0;
    }
    double u = fmax(nc_dtype_unit_roundoff(spec->x->dtype),
                    nc_dtype_unit_roundoff(spec->y_real->dtype));
    int rc = nc_norm_detect_run(r, spec->x, spec->y_real, spec->weight, spec->bias, u,
                                spec->threads, &c->det, err);
    if (rc)
        return rc;
    c->detected = true;
    char was[160], found[300];
    norm_text(l->norm, l->eps, l->norm_source, l->eps_source, was, sizeof was);
    detect_text(&c->det, found, sizeof found);
    nc_norm_kind norm;
    double eps;
    bool eps_detected;
    if (c->det.fits && choose(l, &c->det, &norm, &eps, &eps_detected)) {
        if (norm != l->norm)
            l->norm_source = NC_SRC_DETECTED;
        if (eps_detected)
            l->eps_source = NC_SRC_DETECTED;
        if ((rc = rerun(l, spec, norm, eps, err)))
            return rc;
        r = &l->result;
        if (r->real_max_abs_diff <= c->tol) {
            c->status = "detected";
            snprintf(c->message, sizeof c->message, "%s: detected %s eps %.3g from the real "
                     "output (max |diff| %.2g, was %.2g with %s): %s", l->name,
                     nc_norm_name(norm), eps, r->real_max_abs_diff, c->first_max_abs_diff, was,
                     found);
            return 0;
        }
    }
    norm_text(l->norm, l->eps, l->norm_source, l->eps_source, was, sizeof was);
    bool expl = is_explicit(l->norm_source) || is_explicit(l->eps_source);
    c->status = expl ? "mismatch_explicit" : "mismatch";
    c->warn = true;
    snprintf(c->message, sizeof c->message, "warning: %s: the real output differs from %s by "
             "up to %.2g (tolerance %.2g)%s: %s", l->name, was, r->real_max_abs_diff, c->tol,
             c->det.fits ? "" : "; neither norm kind reproduces it (affine weight or bias "
                                "missing, or a different norm?)", found);
    return 0;
}
