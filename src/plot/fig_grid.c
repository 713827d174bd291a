/*
 * fig_grid.c - the shape of a scatter-grid (figures_internal.h): how
 * many panels, in how many columns, for the canvas.
 *
 * Every panel's data area must be at least GRID_MIN_W x GRID_MIN_H
 * inches (readable: a few ticks a side, the S-curve's shape). Without a
 * size, the canvas grows with the panels (DEFAULT_W x DEFAULT_H inches
 * each, in about as many columns as rows, up to MAX_DEFAULT_COLS), up to
 * the largest image drawn (NC_FIG_MAX_SIDE_PX a side). With a size (a
 * paper's column), the grid takes as many layers as fit at that minimum,
 * in the shape whose smallest panel is the largest. When not every layer
 * fits, the layers shown are spread evenly over the run's order (depth),
 * first and last included, and the figure's note says so; the panels'
 * titles name them.
 *
 * Left out: paging (several files for one grid).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plot/figure.h"
#include "plot/figures_internal.h"

#define GRID_MIN_W 0.8 /* inches of data area, at least, each panel */
#define GRID_MIN_H 0.6
#define DEFAULT_W 4.3 /* a panel's share of a default-sized grid */
#define DEFAULT_H 3.5
#define MAX_DEFAULT_COLS 8

/* Layers evenly over nsel for k panels: pick[i] = round(i (nsel-1) / (k-1)). */
static void spread(size_t nsel, size_t k, size_t *pick)
{
    for (size_t i = 0; i < k; i++)
        pick[i] = k > 1 ? (size_t)llround((double)i * (double)(nsel - 1) / (double)(k - 1)) : 0;
}

/* Lays j out as k of the all[] panels (the layers pick[k]) in cols
 * columns; the axis labels once per row and column. */
static void arrange(job *j, const nc_panel *all, const size_t *pick, size_t k, int cols)
{
    for (size_t q = 0; q < k; q++) {
        j->panels[q] = all[pick[q]];
        if (q % (size_t)cols)
            j->panels[q].ylabel = NULL;
        if (q + (size_t)cols < k)
            j->panels[q].xlabel = NULL;
    }
    j->npanels = k;
    j->fig.panels = j->panels;
    j->fig.rows = (int)((k + (size_t)cols - 1) / (size_t)cols);
    j->fig.cols = cols;
    j->fig.npanels = k;
}

/* The smallest data area of j's panels, in inches (0 when the layout
 * fails: no room). */
static void smallest_area(job *j, double *w, double *h)
{
    *w = *h = 0;
    nc_rect *a = malloc((j->npanels ? j->npanels : 1) * sizeof *a);
    nc_err e = {0};
    if (!a || nc_figure_areas(&j->fig, a, &e) != 0) {
        free(a);
        return;
    }
    *w = *h = HUGE_VAL;
    for (size_t q = 0; q < j->npanels; q++) {
        *w = fmin(*w, a[q].w / j->fig.dpi);
        *h = fmin(*h, a[q].h / j->fig.dpi);
    }
    free(a);
}

/* An estimate of the smallest data area (in units of the minimum) of k
 * panels in cols columns on a w x h inch canvas: each panel loses about
 * 5 ems across (tick labels, y label, gap) and 6 down (title, tick
 * labels, x label, gap) at the font its cell gets, the figure 5 ems down
 * (its title and the legend strip). Only to choose what to lay out. */
static double estimate(double w, double h, size_t k, int cols)
{
    size_t rows = (k + (size_t)cols - 1) / (size_t)cols;
    double cw = w / cols, ch = h / (double)rows;
    double em = fmin(10.0, fmax(7.5, 10.0 * sqrt(cw * ch / (6.4 * 4.8)))) / 72.0;
    double dw = (w - 0.5 * em) / cols - 5 * em, dh = (h - 5 * em) / (double)rows - 6 * em;
    return fmin(dw / GRID_MIN_W, dh / GRID_MIN_H);
}

/* The column count whose estimate is the best for k panels, and that
 * estimate. */
static int best_cols(double w, double h, size_t k, double *score)
{
    int best = 1;
    *score = -HUGE_VAL;
    for (int cols = 1; cols <= (int)k && cols <= 64; cols++) {
        if ((k + (size_t)cols - 1) / (size_t)cols > 64)
            continue;
        double s = estimate(w, h, k, cols);
        if (s > *score) {
            *score = s;
            best = cols;
        }
    }
    return best;
}

/* Whether j's smallest panel, laid out, is at least the minimum. */
static bool fits(job *j)
{
    double w, h;
    smallest_area(j, &w, &h);
    return w >= GRID_MIN_W - 1e-9 && h >= GRID_MIN_H - 1e-9;
}

int nc_fig_grid_shape(job *j, const nc_panel *all, size_t nsel, size_t *pick, size_t *npick,
                      nc_err *err)
{
    const nc_fig_spec *spec = j->spec;
    size_t k = nsel;
    int cols = spec->cols;
    if (spec->width_in > 0) { /* a fixed canvas: as many as fit at the minimum */
        j->fig.width_in = spec->width_in;
        j->fig.height_in = spec->height_in;
        for (; k >= 1; k--) {
            double score;
            int c = cols > 0 ? cols : best_cols(spec->width_in, spec->height_in, k, &score);
            if (cols == 0 && score < 0.9 && k > 1)
                continue; /* far from fitting: not worth a layout */
            spread(nsel, k, pick);
            arrange(j, all, pick, k, c > (int)k ? (int)k : c);
            if (k == 1 || fits(j))
                break;
        }
    } else { /* the canvas grows, up to the largest image */
        double dpi = j->fig.dpi, most = NC_FIG_MAX_SIDE_PX / dpi;
        for (; k >= 1; k--) {
            int c = cols > 0 ? cols : (int)fmin(MAX_DEFAULT_COLS, ceil(sqrt((double)k)));
            c = c > (int)k ? (int)k : c;
            size_t rows = (k + (size_t)c - 1) / (size_t)c;
            double w = DEFAULT_W * c, h = DEFAULT_H * (double)rows + 0.3;
            if ((w <= most && h <= most && rows <= 64) || k == 1) {
                j->fig.width_in = w;
                j->fig.height_in = h;
                spread(nsel, k, pick);
                arrange(j, all, pick, k, c);
                break;
            }
        }
    }
    *npick = k;
    if (k < nsel)
        j->fig.note = nc_fig_jprintf(j, "%zu of %zu layers shown, evenly over the run's order",
                                     k, nsel);
    if (j->oom)
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    return 0;
}
