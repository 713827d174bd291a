/*
 * html.h - index.html: a self-contained page to browse a run's results
 * (docs/whole_models.md "index.html").
 *
 * Built from the text of report.json alone, so that `run` and `merge`
 * write the same page. No network and no external file but the run's own
 * figures: the style sheet and the script are inline. At the top the run's
 * verdict (when the report has one) and the run-level figures; then one
 * row per layer with its numbers, its verdict and thumbnails linking to
 * its figures, sortable by clicking a column header (or with
 * "#sort=<column>" / "#sort=-<column>" in the address, descending).
 *
 * A figure belongs to a layer when its file name starts with the layer's
 * file-name stem (plot/figures.h: characters other than letters, digits,
 * '.' and '-' replaced by '_') and '_'; the longest such layer wins.
 * Figures of no layer are run-level.
 */
#ifndef NC_REPORT_HTML_H
#define NC_REPORT_HTML_H

#include "util/err.h"

/* index.html for the report whose JSON text is report_json; *html is
 * malloc'd (free()). Errors: the text is not a report (NC_EINVAL), memory. */
int nc_report_html(const char *report_json, char **html, nc_err *err);

#endif
