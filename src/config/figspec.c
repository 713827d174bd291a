/*
 * figspec.c - the names and parsers of a figure request (figspec.h).
 */
#include "config/figspec.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/dump.h"
#include "util/parse.h"

static const char *const kind_names[NC_FIG_COUNT] = {
    "scatter", "scatter-grid", "by-token", "by-channel", "jacobian", "alpha-std", "tanh-family",
    "outlier-steps", "alpha-depth", "swap-depth",
};

const char *nc_fig_kind_name(nc_fig_kind kind)
{
    return (unsigned)kind < NC_FIG_COUNT ? kind_names[kind] : "?";
}

bool nc_fig_kind_parse(const char *s, nc_fig_kind *kind)
{
    for (int k = 0; k < NC_FIG_COUNT; k++)
        if (strcmp(s, kind_names[k]) == 0) {
            *kind = (nc_fig_kind)k;
            return true;
        }
    return false;
}

bool nc_fig_legend_parse(const char *s, int *pos)
{
    static const struct {
        const char *name;
        int pos;
    } names[] = {{"auto", NC_LEGEND_AUTO},
                 {"none", NC_LEGEND_NONE},
                 {"outside", NC_LEGEND_OUTSIDE},
                 {"upper right", NC_LEGEND_UPPER_RIGHT},
                 {"upper left", NC_LEGEND_UPPER_LEFT},
                 {"lower left", NC_LEGEND_LOWER_LEFT},
                 {"lower right", NC_LEGEND_LOWER_RIGHT},
                 {"right", NC_LEGEND_RIGHT},
                 {"center left", NC_LEGEND_CENTER_LEFT},
                 {"center right", NC_LEGEND_CENTER_RIGHT},
                 {"lower center", NC_LEGEND_LOWER_CENTER},
                 {"upper center", NC_LEGEND_UPPER_CENTER},
                 {"center", NC_LEGEND_CENTER}};
    char t[32];
    size_t n = 0;
    for (; s[n] && n + 1 < sizeof t; n++)
        t[n] = s[n] == '-' || s[n] == '_' ? ' ' : s[n];
    t[n] = '\0';
    if (s[n])
        return false;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (strcmp(t, names[k].name) == 0) {
            *pos = names[k].pos;
            return true;
        }
    return false;
}

bool nc_fig_formats_parse(const char *s, unsigned *formats)
{
    unsigned f = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 3 && strncmp(s, "png", 3) == 0)
            f |= NC_FIGFMT_PNG;
        else if (n == 3 && strncmp(s, "pdf", 3) == 0)
            f |= NC_FIGFMT_PDF;
        else if (n == 3 && strncmp(s, "svg", 3) == 0)
            f |= NC_FIGFMT_SVG;
        else
            return false;
        s += n + (s[n] == ',');
    }
    if (!f)
        return false;
    *formats = f;
    return true;
}

void nc_fig_spec_clear(nc_fig_spec *spec)
{
    for (size_t k = 0; k < spec->nlayers; k++)
        free(spec->layers[k]);
    free(spec->layers);
    free(spec->name);
    free(spec->title);
    memset(spec, 0, sizeof *spec);
}

bool nc_fig_limits_parse(const char *s, double lim[2])
{
    const char *comma = strchr(s, ',');
    char a[64];
    if (!comma || (size_t)(comma - s) >= sizeof a)
        return false;
    snprintf(a, sizeof a, "%.*s", (int)(comma - s), s);
    double v[2];
    for (int k = 0; k < 2; k++) {
        if (nc_parse_double(k ? comma + 1 : a, "limit", -DBL_MAX, DBL_MAX, &v[k], NULL) != 0)
            return false;
    }
    if (!(v[0] < v[1]))
        return false;
    lim[0] = v[0];
    lim[1] = v[1];
    return true;
}

bool nc_fig_pixels_ok(double w_in, double h_in, double dpi, double *wpx, double *hpx)
{
    if (!(dpi > 0))
        dpi = NC_FIG_DEFAULT_DPI;
    *wpx = round(w_in * dpi);
    *hpx = round(h_in * dpi);
    return *wpx >= NC_FIG_MIN_SIDE_PX && *hpx >= NC_FIG_MIN_SIDE_PX &&
           *wpx <= NC_FIG_MAX_SIDE_PX && *hpx <= NC_FIG_MAX_SIDE_PX;
}

bool nc_fig_spec_selects(const nc_fig_spec *spec, const char *name)
{
    if (spec->nlayers == 0)
        return true;
    for (size_t k = 0; k < spec->nlayers; k++)
        if (nc_glob_match(spec->layers[k], name))
            return true;
    return false;
}
