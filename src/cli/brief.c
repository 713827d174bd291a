/*
 * brief.c - the default summary on stdout (cli.h cli_print_brief): what a
 * run concluded, in the terminal's width.
 *
 *   one line per layer: its label with the share of the affine residual
 *   removed and that share's 95% interval, the best fit by R^2 (or the
 *   tie), and DyT's slope at the origin over the theory's
 *   then the run's verdict, wrapped: how many layers saturate, the fit
 *   most often best, each model group's slopes
 *   then where the report and index.html are
 *
 * Every number is one of report.json's (docs/report.md, "What fit
 * prints"); --verbose prints the full tables instead (summary.c). The
 * width is the terminal's (stdout), else $COLUMNS, else 80.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"
#include "plan/plan.h"

static void wrapped(const char *text, int width, int first, int indent);

int cli_terminal_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    const char *c = getenv("COLUMNS");
    long v = c ? strtol(c, NULL, 10) : 0;
    return v >= 40 && v <= 1000 ? (int)v : 80;
}

void cli_print_wrapped(const char *text, int first, int indent)
{
    wrapped(text, cli_terminal_width(), first, indent);
}

/* Prints text wrapped at width: the first line indented by first, the
 * others by indent. */
static void wrapped(const char *text, int width, int first, int indent)
{
    printf("%*s", first, "");
    int col = first;
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t w = strcspn(p, " ");
        if (!w)
            break;
        if (col > first && col > indent && col + 1 + (int)w > width) {
            printf("\n%*s", indent, "");
            col = indent;
        } else if (col > first && col > indent) {
            putchar(' ');
            col++;
        }
        printf("%.*s", (int)w, p);
        col += (int)w;
        p += w;
    }
    putchar('\n');
}

/* The name in at most w columns: cut in the middle with '~' when longer
 * (the full name is in report.json and index.html). */
static void name_cell(const char *name, int w, char *buf, size_t cap)
{
    int n = (int)strlen(name);
    if (n <= w) {
        snprintf(buf, cap, "%-*s", w, name);
        return;
    }
    int head = (w - 1) / 2, tail = w - 1 - head;
    snprintf(buf, cap, "%.*s~%s", head, name, name + n - tail);
}

/* "saturating  36% [34-37]" style cells of one layer */
/* The length of the prefix all n names share, ending at a separator
 * ('.', '_', '-', '/'): "model.layers." of model.layers.0.input_layernorm
 * and model.layers.1.mlp_norm; 0 for fewer than two names. */
static size_t common_prefix(const nc_layer_summary *L, size_t n)
{
    if (n < 2 || !L[0].name)
        return 0;
    size_t p = strlen(L[0].name);
    for (size_t k = 1; k < n && p; k++) {
        const char *a = L[0].name, *b = L[k].name ? L[k].name : "";
        size_t q = 0;
        while (q < p && a[q] && a[q] == b[q])
            q++;
        p = q;
    }
    while (p > 0 && !strchr("._-/", L[0].name[p - 1]))
        p--;
    return p;
}

static void layer_line(const nc_layer_summary *s, const nc_layer_verdict *v, int namew,
                       size_t pre, int width, bool swap)
{
    char nm[256], removed[48] = "", best[160] = "", slope[48] = "", cost[48] = "";
    if (swap && isfinite(s->swap_delta))
        snprintf(cost, sizeof cost, isfinite(s->swap_delta_se) ? "%+.3f~%.3f" : "%+.3f",
                 s->swap_delta, s->swap_delta_se);
    name_cell(s->name ? s->name + pre : "?", namew, nm, sizeof nm);
    const char *kind = nc_layer_verdict_kind(v);
    if (isfinite(v->residual_removed)) {
        if (isfinite(v->removed_lo) && isfinite(v->removed_hi))
            snprintf(removed, sizeof removed, "%3.0f%% [%.0f-%.0f]", 100 * v->residual_removed,
                     100 * v->removed_lo, 100 * v->removed_hi);
        else
            snprintf(removed, sizeof removed, "%3.0f%%", 100 * v->residual_removed);
    }
    if (v->by_r2.best >= 0) {
        size_t o = (size_t)snprintf(best, sizeof best, "%s%s", v->by_r2.nties ? "tie " : "",
                                    nc_surrogate_get((nc_fit_id)v->by_r2.best)->name);
        for (int k = 0; k < NC_FIT_COUNT && o < sizeof best; k++)
            if (v->by_r2.tie[k])
                o += (size_t)snprintf(best + o, sizeof best - o, ",%s",
                                      nc_surrogate_get((nc_fit_id)k)->name);
        if (v->too_few && o < sizeof best)
            snprintf(best + o, sizeof best - o, "?");
    }
    if (isfinite(v->slope_ratio))
        snprintf(slope, sizeof slope, "%.2f", v->slope_ratio);
    char line[1024];
    int n = swap ? snprintf(line, sizeof line, "%s  %-19s %-14s %5s %13s  %s", nm, kind, removed,
                            slope, cost, best)
                 : snprintf(line, sizeof line, "%s  %-19s %-14s %5s  %s", nm, kind, removed,
                            slope, best);
    if (n > width && v->by_r2.nties) { /* the ties give: their count, the names in the report */
        snprintf(best, sizeof best, "tie of %zu fits", v->by_r2.nties + 1);
        n = swap ? snprintf(line, sizeof line, "%s  %-19s %-14s %5s %13s  %s", nm, kind, removed,
                            slope, cost, best)
                 : snprintf(line, sizeof line, "%s  %-19s %-14s %5s  %s", nm, kind, removed,
                            slope, best);
    }
    if (n > width) /* still too wide: the end goes, the label and numbers stay */
        snprintf(line + width - 3, sizeof line - (size_t)(width - 3), "...");
    puts(line);
}

void cli_print_brief(const nc_layer_summary *L, const nc_run_summary *R)
{
    const int width = cli_terminal_width();
    int namew = 5;
    for (size_t k = 0; k < R->nlayers; k++) {
        int n = L[k].name ? (int)strlen(L[k].name) : 1;
        namew = n > namew ? n : namew;
    }
    /* names too long for a third of the line lose the prefix they share
     * (said above the table), so that what tells them apart stays */
    size_t pre = namew > width / 3 ? common_prefix(L, R->nlayers) : 0;
    if (pre) {
        namew -= (int)pre;
        printf("layer names below follow \"%.*s\"\n", (int)pre, L[0].name);
    }
    if (namew > width / 3)
        namew = width / 3;
    bool swap = false;
    for (size_t k = 0; k < R->nlayers; k++)
        swap |= isfinite(L[k].swap_delta);
    if (swap)
        printf("%-*s  %-19s %-14s %5s %13s  %s\n", namew, "layer", "verdict", "removed [95%]",
               "slope", "swap cost~se", "best R^2");
    else
        printf("%-*s  %-19s %-14s %5s  %s\n", namew, "layer", "verdict", "removed [95%]",
               "slope", "best R^2");
    for (size_t k = 0; k < R->nlayers; k++)
        layer_line(&L[k], &R->layer[k], namew, pre, width, swap);
    bool too_few = false;
    for (size_t k = 0; k < R->nlayers; k++)
        too_few |= R->layer[k].too_few;
    char legend[768];
    snprintf(legend, sizeof legend, "removed: the share of the affine map's residual that the "
             "best curve removes (saturating above 10%%, near-linear below, else undecided); "
             "slope: DyT's slope at 0 over the theory's; %s%s",
             R->boot ? "[95%]: over resampled blocks of tokens"
             : too_few ? "no [95%]: too few blocks of tokens to resample (bootstrap.status in "
                         "the report), so nothing is decided"
                       : "point estimates: no bootstrap",
             swap ? "; swap cost: the model's loss change with this norm alone replaced by "
                    "its drop-in DyT, ~ its standard error (the swap test, docs/swap.md)" : "");
    wrapped(legend, width, 0, 2);
    if (R->nlayers >= 2) {
        char text[8192];
        snprintf(text, sizeof text, "Run: %s", R->verdict);
        /* the run verdict lists the groups after " | ": one paragraph each */
        char *p = text;
        int first = 0, indent = 2;
        for (char *bar; (bar = strstr(p, " | "));) {
            *bar = '\0';
            wrapped(p, width, first, indent);
            p = bar + 3;
            first = 2;
            indent = 4;
        }
        wrapped(p, width, first, indent);
    }
}

void cli_print_where(const char *out_dir)
{
    char where[2048];
    snprintf(where, sizeof where, "Open %s/index.html (the report: %s/report.json; every column "
             "and number: docs/report.md; the full tables: --verbose)", out_dir, out_dir);
    wrapped(where, cli_terminal_width(), 0, 2);
}
