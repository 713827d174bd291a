/*
 * ink.h - where a panel's data has ink, on a grid of INK_CELL px cells
 * (internal to src/plot/): the share of each cell the cloud covers (from
 * the counts, each point as the dot it prints as), and how many curves,
 * markers or lines pass within their half width; and the nine places a box
 * (a legend, a note) can take inside a panel, the least inked chosen. The
 * legend and the point labels (legend.c) are placed on it.
 *
 * Left out: text (labels and legends mark their boxes as taken, but the
 * map does not draw or measure them).
 */
#ifndef NC_INK_H
#define NC_INK_H

#include <stdbool.h>

#include "plot/figure.h"
#include "plot/layout.h"

#define INK_CELL 4 /* px per cell */

/* Where ink is in the data area, on a grid of INK_CELL px cells: the
 * share of each cell's pixels the cloud covers (0 to 1), and how many
 * curves, markers or lines pass through it. */
typedef struct nc_inkmap {
    int gw, gh;
    float *cloud; /* [gh][gw] */
    float *line;  /* [gh][gw] */
} nc_inkmap;

/* The ink map of panel p on area a: the cloud (copied from pl's cloud
 * map when pl has one of the same area), then the curves, markers and
 * lines. m->cloud is owned by the caller (free; m->line is in the same
 * block). 0, or -1 when out of memory. */
int nc_ink_build(const layout *L, const nc_panel *p, const panel_layout *pl, const nc_rect *a,
                 nc_inkmap *m);

/* The ink under the box (bx, by, bw, bh) px: the share of it the cloud
 * covers, and the line counts of its cells summed. */
void nc_ink_under(const nc_inkmap *m, const nc_rect *a, double bx, double by, double bw,
                  double bh, double *cloud, double *lines);

/* Marks the box as taken: as full of lines. */
void nc_ink_block(nc_inkmap *m, const nc_rect *a, double bx, double by, double bw, double bh);

/* The top-left corner of a box bw x bh at place pos (an nc_legend_pos
 * inside the frame) of area a, pad px from its edges. */
void nc_ink_box_at(int pos, const nc_rect *a, double pad, double bw, double bh, double *x,
                   double *y);

/* The place among the nine with the least ink (lines weighing
 * INK_LINE_WEIGHT a cell, then the cloud; ties to the earlier in
 * figure.h's order); *clean (when not NULL) tells whether it covers no
 * line and at most a share sliver of cloud, and fits in the area. */
int nc_ink_best(const nc_inkmap *m, const nc_rect *a, double pad, double bw, double bh,
                double sliver, bool *clean);

#endif
