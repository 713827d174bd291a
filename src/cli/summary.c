/*
 * summary.c - what `fit` and `run` print on stdout after the report is
 * written: the fits table (every fit that ran), a verdict per layer and,
 * for two or more layers, the run-level lines (plan.h's run summary;
 * docs/report.md defines each number). And, on stderr, the real-output
 * check's lines (detected norms, warnings).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "plan/plan.h"

/* Short column headings of the fits, in nc_fit_id order. */
static const char *const fit_head[NC_FIT_COUNT] = {
    [NC_FIT_LINEAR] = "affine",         [NC_FIT_DYT] = "DyT",
    [NC_FIT_DYT_PER_CHANNEL] = "DyT/ch", [NC_FIT_DYISRU] = "DyISRU",
    [NC_FIT_DYISRU_FREE] = "ISRUfree",  [NC_FIT_DYT_THEORY] = "DyT-th",
    [NC_FIT_DYISRU_THEORY] = "ISRU-th", [NC_FIT_DERF] = "Derf",
};

void cli_print_num(double v, int width, int prec)
{
    if (isfinite(v))
        printf(" %*.*g", width, prec, v);
    else
        printf(" %*s", width, "-");
}

int cli_name_width(const nc_plan *plan)
{
    int w = 5;
    for (size_t k = 0; k < plan->nlayers; k++)
        if (plan->layers[k].done) {
            int n = (int)strlen(plan->layers[k].name);
            w = n > w ? n : w;
        }
    return w;
}

/* "rms/meta", "ln/def!", "ln/def?" : the norm used, where it came from,
 * "!" when the real output disagrees with it or contradicts a given kind or
 * eps, "?" when the real output cannot tell the kinds apart. */
static void norm_cell(const nc_plan_layer *l, char *buf, size_t cap)
{
    static const char *const src[] = {"def", "flag", "cfg", "meta", "det"};
    nc_src s = l->norm_source;
    bool undetermined = l->check.detected && l->check.det.verdict == NC_KIND_UNDETERMINED;
    snprintf(buf, cap, "%s/%s%s%s", l->norm == NC_RMSNORM ? "rms" : "ln", src[s],
             l->check.warn ? "!" : "", undetermined ? "?" : "");
}

/* The theory curves' R^2 with each token's own scale and with one scale
 * for the layer (docs/theory.md), when they ran. */
static void print_theory(const nc_layer_result *r, int w)
{
    const nc_fit_result *f[2] = {&r->fits[NC_FIT_DYT_THEORY], &r->fits[NC_FIT_DYISRU_THEORY]};
    if (!r->theory_token[0].ok && !r->theory_token[1].ok)
        return;
    printf("%-*s   theory R2, token's own scale / one scale for the layer:", w, "");
    const char *names[2] = {"DyT", "DyISRU"};
    for (int k = 0; k < 2; k++)
        if (r->theory_token[k].ok && f[k]->ok)
            printf("%s %s %.4f / %.4f", k && r->theory_token[0].ok ? "," : "", names[k],
                   r->theory_token[k].r2, f[k]->r2);
    printf("\n");
}

/* The outlier-steps experiment's lines of layer l, after a name (or w
 * blank columns). */
static void print_outlier(const nc_plan_layer *l, const char *name, int w)
{
    const nc_outlier_steps *os = &l->outlier_steps;
    printf("%-*s   outlier steps: mean |residual| DyT %.4g, DyISRU %.4g, ratio %.3g\n", w,
           name, os->dyt.mean_abs_res, os->dyisru.mean_abs_res, os->ratio);
    if (os->has_spread) {
        const nc_outlier_spread *sp = &os->spread;
        printf("%-*s   over %zu draws (seeds %llu..%llu): ratio median %.3g "
               "(5-95%% %.3g..%.3g), DyT |residual| median %.3g (5-95%% %.3g..%.3g)\n",
               w, "", sp->draws, (unsigned long long)sp->seed0,
               (unsigned long long)(sp->seed0 + sp->draws - 1), sp->ratio.median, sp->ratio.p05,
               sp->ratio.p95, sp->dyt_res.median, sp->dyt_res.p05, sp->dyt_res.p95);
    }
}

static void print_fits_table(const nc_plan *plan, const bool *ran)
{
    int w = cli_name_width(plan);
    printf("%-*s %7s %5s %-9s", w, "layer", "used", "d", "norm");
    for (int f = 0; f < NC_FIT_COUNT; f++)
        if (ran[f])
            printf(" %8s", fit_head[f]);
    printf(" %9s %9s\n", "alpha", "alpha*std");
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        if (!l->done)
            continue;
        const nc_layer_result *r = &l->result;
        char nc[16];
        norm_cell(l, nc, sizeof nc);
        printf("%-*s %7zu %5zu %-9s", w, r->name, r->stats.tokens_used, r->d, nc);
        for (int f = 0; f < NC_FIT_COUNT; f++)
            if (ran[f])
                cli_print_num(r->fits[f].ok ? r->fits[f].r2 : NAN, 8, 6);
        double alpha = r->fits[NC_FIT_DYT].ok ? r->fits[NC_FIT_DYT].params.p[0] : NAN;
        cli_print_num(alpha, 9, 4);
        cli_print_num(alpha * r->stats.std, 9, 4);
        printf("\n");
        print_theory(r, w);
        if (l->has_outlier_steps)
            print_outlier(l, "", w);
    }
}

void cli_print_experiments(const nc_plan *plan)
{
    for (size_t k = 0; k < plan->nlayers; k++)
        if (plan->layers[k].done && plan->layers[k].has_outlier_steps)
            print_outlier(&plan->layers[k], plan->layers[k].name, 0);
}

static void print_slope(const char *what, const nc_loglog *L, const nc_boot_ci *tok)
{
    printf("  %-12s", what);
    if (!isfinite(L->slope)) {
        printf(" -  (%s)\n", L->status);
        return;
    }
    printf(" %6.3f", L->slope);
    if (isfinite(L->ci_lo))
        printf("  [%6.3f, %6.3f]", L->ci_lo, L->ci_hi);
    else
        printf("  %16s", "-");
    printf("  r = %.4f", L->r);
    if (isfinite(tok->se))
        printf("  tokens: se %.3f [%.3f, %.3f]", tok->se, tok->lo, tok->hi);
    printf("  (%zu layers)\n", L->n);
}

void cli_print_fit_summary(const nc_plan *plan)
{
    bool ran[NC_FIT_COUNT] = {false}, any = false;
    for (size_t k = 0; k < plan->nlayers; k++) {
        any = any || plan->layers[k].done;
        for (int f = 0; f < NC_FIT_COUNT; f++)
            if (plan->layers[k].done && plan->layers[k].result.fits[f].enabled)
                ran[f] = true;
    }
    if (!any)
        return;
    printf("R^2 of each fit against the norm's output (1 = exact; columns: the fits that ran, "
           "docs/report.md);\nused: tokens in the fits (input_stats.tokens_used: tokens with a NaN/inf value or\nscale 0 left out, the sample if --sample-tokens); norm: kind/source (def, flag, cfg, meta, det = detected from "
           "the real output; ! = the real output disagrees, or contradicts a given kind or eps;\n"
           "? = it cannot tell LayerNorm from RMSNorm); alpha: DyT's fitted alpha.\n");
    print_fits_table(plan, ran);
}

void cli_print_run_summary(const nc_plan *plan)
{
    if (!plan->has_run)
        return;
    const nc_run_summary *R = &plan->run;
    printf("Verdict per layer ([lo, hi]: 95%% intervals over resampled blocks of tokens, "
           "docs/report.md\n\"Uncertainty from the tokens\"; saturating / near-linear: the "
           "interval of the affine\nresidual removed is above / below 10%%, else undecided; "
           "tie: fits whose R^2 or backprop\nerror the tokens do not tell apart; slope at 0 / "
           "theory: DyT's alpha*gamma*rho):\n");
    int w = cli_name_width(plan);
    for (size_t k = 0; k < R->nlayers; k++)
        printf("  %-*s  %s\n", w, plan->summaries[k].name, R->layer[k].verdict);
    if (R->nlayers < 2)
        return;
    printf("\nRun (%zu layers, %zu model group%s = layers of one source, norm kind and d): per "
           "group,\nlog-log OLS slope against 1/std(x), t-based 95%% CI over the layers, Pearson "
           "r of the logs,\nand the slope's uncertainty from the tokens (no slope under 3 "
           "layers):\n", R->nlayers, R->ngroups, R->ngroups == 1 ? "" : "s");
    for (size_t g = 0; g < R->ngroups; g++) {
        const nc_run_group *G = &R->group[g];
        printf(" %s %s d = %zu (%zu layer%s:", G->name ? G->name : G->source,
               G->norm == NC_LAYERNORM ? "LayerNorm" : "RMSNorm", G->d, G->nlayers,
               G->nlayers == 1 ? "" : "s");
        for (size_t k = 0; k < G->nlayers; k++)
            printf(" %s", plan->summaries[G->layer[k]].name);
        printf(")\n");
        print_slope("alpha", &G->alpha, &G->boot_alpha);
        print_slope("alpha*gamma", &G->alpha_gamma, &G->boot_alpha_gamma);
        print_slope("affine slope", &G->affine, &G->boot_affine);
    }
    printf("Verdict: %s\n", R->verdict);
}

void cli_print_checks(const nc_plan *plan, bool quiet)
{
    for (size_t k = 0; k < plan->nlayers; k++) {
        const nc_real_check *c = &plan->layers[k].check;
        if (c->message[0] && !quiet) /* --quiet: the warnings too (they are in the report) */
            fprintf(stderr, "normcmp: %s\n", c->message);
    }
}

int cli_strict_status(const nc_plan *plan, bool strict)
{
    if (strict && plan->disagreeing) {
        fprintf(stderr, "normcmp: --strict: the real output of %zu layer%s disagrees with the "
                "norm used (report.json: real_output_check)\n", plan->disagreeing,
                plan->disagreeing == 1 ? "" : "s");
        return 2;
    }
    return 0;
}
