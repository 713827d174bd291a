/*
 * fig_job.c - a paper-style figure being built (figures_internal.h): the
 * memory a job owns, its grid, its file stem, and rendering it with its
 * metadata into the output set.
 *
 * This file sits below the driver (figures.c), the panel builders
 * (fig_panels.c, fig_depth.c) and the sweep figures (fig_sweep.c): they
 * call it, it calls none of them, so the calls between the figure files
 * run one way.
 *
 * Metadata of each PNG (text chunks): Software, Title, Command, Layer (the
 * plan layers the figure shows), Parameters (their fits), Figure (the
 * kind) and, added by figure.c, Panels (each panel's data area in pixels
 * and its data range, enough to read values off the picture) and Layout
 * (the box of every text item and legend; figure.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"
#include "plot/text.h"
#include "util/outfile.h"
#include "util/sink.h"
#include "util/version.h"

static void *own(job *j, void *p)
{
    if (!p) {
        j->oom = true;
        return NULL;
    }
    if (j->nowned == j->capowned) {
        size_t cap = j->capowned ? 2 * j->capowned : 32;
        void **g = realloc(j->owned, cap * sizeof *g);
        if (!g) {
            free(p);
            j->oom = true;
            return NULL;
        }
        j->owned = g;
        j->capowned = cap;
    }
    j->owned[j->nowned++] = p;
    return p;
}

void *nc_fig_jalloc(job *j, size_t n)
{
    return own(j, calloc(1, n ? n : 1));
}

__attribute__((format(printf, 2, 3))) char *nc_fig_jprintf(job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = nc_fig_jalloc(j, (size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* A string built by appending (util/sink.h's buffer doubles when full, so
 * that building the metadata of a figure over n layers takes O(n) time
 * and memory; a copy per append kept every intermediate string: quadratic
 * in the layers). ok turns false on the first failed allocation. */
typedef struct strbuf {
    nc_membuf mb;
    bool ok;
} strbuf;

__attribute__((format(printf, 2, 3))) static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (!b->ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    nc_err err;
    if (nc_membuf_vprintf(&b->mb, &err, fmt, ap))
        b->ok = false;
    va_end(ap);
}

/* The finished string, handed to job j ("" when nothing was appended);
 * NULL when out of memory (the buffer is freed either way). */
static char *sb_finish(job *j, strbuf *b)
{
    if (b->ok && !b->mb.data)
        sb_printf(b, "%s", "");
    if (!b->ok) {
        nc_membuf_free(&b->mb);
        j->oom = true;
        return NULL;
    }
    return own(j, b->mb.data);
}

const char *nc_fig_title(const job *j, const char *own)
{
    return j->spec->no_title ? NULL : j->spec->title ? j->spec->title : own;
}

bool nc_fig_job_panels(job *j, size_t n)
{
    j->panels = nc_fig_jalloc(j, (n ? n : 1) * sizeof *j->panels);
    j->cap_panels = j->panels ? n : 0;
    return j->panels != NULL;
}

bool nc_fig_job_shows(job *j, const size_t *layers, size_t n)
{
    size_t *v = nc_fig_jalloc(j, (n ? n : 1) * sizeof *v);
    if (!v)
        return false;
    if (n)
        memcpy(v, layers, n * sizeof *v);
    j->shown = v;
    j->nshown = n;
    return true;
}

void nc_fig_job_free(job *j)
{
    for (size_t k = 0; k < j->npanels && j->panels; k++)
        nc_density_free((nc_density *)j->panels[k].density);
    for (size_t k = 0; k < j->nowned; k++)
        free(j->owned[k]);
    free(j->owned);
}

void nc_fig_sanitize(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    bool lead = true; /* leading dots become '_': no hidden file, no ".." */
    for (; *src && k + 1 < cap; src++) {
        lead = lead && *src == '.';
        dst[k++] = (*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z') ||
                           (*src >= '0' && *src <= '9') || (*src == '.' && !lead) ||
                           *src == '-'
                       ? *src
                       : '_';
    }
    dst[k] = '\0';
}

static double dflt(double v, double d)
{
    return v > 0 ? v : d;
}

void nc_fig_set_grid(job *j, size_t n, int cols, double w_in, double h_in,
                     const nc_fig_spec *s)
{
    if (cols <= 0)
        cols = n < 3 ? (int)n : 3;
    int rows = (int)((n + (size_t)cols - 1) / (size_t)cols);
    j->fig.rows = rows;
    j->fig.cols = cols;
    j->fig.width_in = dflt(s->width_in, w_in * cols);
    j->fig.height_in = dflt(s->height_in, h_in * rows + (n > 1 ? 0.3 : 0.0)); /* + title */
    j->fig.panels = j->panels;
    j->fig.npanels = n;
}

/* "DyT: alpha=0.5 gamma=1; ..." for the fits of r that succeeded. */
static void fit_params_text(strbuf *out, const nc_layer_result *r)
{
    bool first = true;
    for (int id = 0; id < NC_FIT_COUNT; id++) {
        const nc_fit_result *f = &r->fits[id];
        if (!f->ok)
            continue;
        const nc_surrogate *s = nc_surrogate_get((nc_fit_id)id);
        sb_printf(out, "%s%s:", first ? "" : "; ", s->name);
        first = false;
        for (int q = 0; q < s->nparams; q++)
            sb_printf(out, " %s=%.6g", s->param[q], f->params.p[q]);
    }
}

/* Appends label (its script marks plain: "R^2") and a newline to b,
 * unless it is there already (entries with one label are one legend
 * entry). */
static void legend_line(strbuf *b, const char *label)
{
    char plain[512], line[520];
    if (!label || !*label)
        return;
    nc_text_plain(label, plain, sizeof plain);
    snprintf(line, sizeof line, "\n%s\n", plain);
    const char *have = (const char *)b->mb.data;
    if (have && (strncmp(have, line + 1, strlen(line + 1)) == 0 || strstr(have, line)))
        return;
    sb_printf(b, "%s\n", plain);
}

/* The labels of panel p's legend entries (curves, marks, lines) into b. */
static void legend_text(strbuf *b, const nc_panel *p)
{
    for (size_t c = 0; c < p->ncurves; c++)
        legend_line(b, p->curves[c].label);
    for (size_t c = 0; c < p->nmarks; c++)
        legend_line(b, p->marks[c].label);
    for (size_t c = 0; c < p->nvlines; c++)
        legend_line(b, p->vlines[c].label);
    for (size_t c = 0; c < p->nhlines; c++)
        legend_line(b, p->hlines[c].label);
}

/* The metadata of job j: the pairs of figure.h's meta, owned by the job. */
static int job_meta(job *j, const char *command, const nc_plan *plan, nc_err *err)
{
    strbuf lb = {.ok = true}, pb = {.ok = true}, gb = {.ok = true};
    bool first = true;
    for (size_t k = 0; k < j->nshown && lb.ok && pb.ok; k++) {
        const nc_plan_layer *pl = &plan->layers[j->shown[k]];
        sb_printf(&lb, "%s%s", first ? "" : ", ", pl->name);
        sb_printf(&pb, "%s%s: ", first ? "" : " | ", pl->name);
        fit_params_text(&pb, &pl->result);
        first = false;
    }
    for (size_t p = 0; p < j->npanels; p++) /* the legend entries, one a line, plain */
        legend_text(&gb, &j->panels[p]);
    if (gb.ok && gb.mb.len) /* no newline after the last */
        gb.mb.data[--gb.mb.len] = '\0';
    char *layers = sb_finish(j, &lb), *params = sb_finish(j, &pb), *legend = sb_finish(j, &gb);
    if (!layers || !params || !legend)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    const char *title = j->fig.title ? j->fig.title : (j->panels[0].title ? j->panels[0].title : "");
    const char *pairs[] = {"Software", NC_TOOL_NAME " " NC_VERSION, "Title", title, "Command",
                           command ? command : "", "Layer", layers, "Parameters", params,
                           "Figure", nc_fig_kind_name(j->spec->kind), "Legend", legend};
    size_t n = sizeof pairs / sizeof pairs[0];
    memcpy(j->meta, pairs, sizeof pairs);
    j->meta[n] = NULL;
    j->fig.meta = j->meta;
    return 0;
}

/* The formats a figure is written in, in out[] order. */
static const struct {
    unsigned bit;
    nc_format fmt;
    const char *ext;
} fmts[3] = {{NC_FIGFMT_PNG, NC_FMT_PNG, "png"},
             {NC_FIGFMT_PDF, NC_FMT_PDF, "pdf"},
             {NC_FIGFMT_SVG, NC_FMT_SVG, "svg"}};

static unsigned job_formats(const job *j)
{
    return j->spec->formats ? j->spec->formats : NC_FIGFMT_PNG;
}

int nc_fig_draw_job(job *j, const char *command, const nc_plan *plan, unsigned formats,
                    nc_membuf out[3], nc_err *err)
{
    int rc = j->fig.meta ? 0 : job_meta(j, command, plan, err);
    for (int f = 0; f < 3 && !rc; f++) {
        if (!(job_formats(j) & formats & fmts[f].bit))
            continue;
        nc_sink sink = nc_membuf_sink(&out[f]);
        rc = nc_figure_render(&j->fig, fmts[f].fmt, &sink, err);
    }
    return rc;
}

int nc_fig_store_job(const job *j, nc_membuf out[3], struct nc_outset *set, char **files,
                     size_t cap, size_t *nfiles, nc_err *err)
{
    for (int f = 0; f < 3; f++) {
        if (!(job_formats(j) & fmts[f].bit))
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s.%s", j->stem, fmts[f].ext);
        int rc = nc_outset_add(set, name, out[f].data, out[f].len, err);
        if (rc)
            return rc;
        if (files && *nfiles < cap && (files[*nfiles] = strdup(name)))
            (*nfiles)++;
    }
    return 0;
}

int nc_fig_render_job(job *j, const char *command, struct nc_outset *set, char **files,
                      size_t cap, size_t *nfiles, const nc_plan *plan, nc_err *err)
{
    nc_membuf out[3] = {{0}};
    int rc = nc_fig_draw_job(j, command, plan, ~0u, out, err);
    if (!rc)
        rc = nc_fig_store_job(j, out, set, files, cap, nfiles, err);
    for (int f = 0; f < 3; f++)
        nc_membuf_free(&out[f]);
    return rc;
}
