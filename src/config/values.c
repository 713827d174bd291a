/*
 * values.c - the parsers shared by config files and command-line flags
 * (values.h): amplitude rules ("free", "sqrt(d)", ..., or a number) and
 * lists of fit names; and the list of fit names for messages.
 */
#include "config/values.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


bool nc_amp_parse(const char *s, nc_amp *amp)
{
    static const struct {
        const char *name;
        nc_amp_rule rule;
    } rules[] = {{"free", NC_AMP_FREE},
                 {"sqrt(d)", NC_AMP_SQRT_D},
                 {"sqrt(d-1)", NC_AMP_SQRT_D_MINUS_1},
                 {"auto", NC_AMP_AUTO}};
    for (size_t k = 0; k < sizeof rules / sizeof rules[0]; k++)
        if (strcmp(s, rules[k].name) == 0) {
            *amp = (nc_amp){rules[k].rule, 0};
            return true;
        }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*s && *end == '\0' && errno == 0 && isfinite(v) && v > 0) {
        *amp = (nc_amp){NC_AMP_VALUE, v};
        return true;
    }
    return false;
}

void nc_config_fit_names(char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < NC_FIT_COUNT && used < cap; k++) {
        int w = snprintf(buf + used, cap - used, "%s%s", k ? ", " : "",
                         nc_surrogate_get((nc_fit_id)k)->name);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int nc_fits_parse(const char *flag, const char *list, bool fit[NC_FIT_COUNT], nc_err *err)
{
    for (int k = 0; k < NC_FIT_COUNT; k++)
        fit[k] = false;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        if (n == 0 || n >= sizeof name)
            return nc_err_set(err, NC_EINVAL, "%s: empty or overlong name in '%s'", flag,
                              list);
        memcpy(name, p, n);
        name[n] = '\0';
        const nc_surrogate *s = nc_surrogate_find(name);
        if (!s) {
            char names[256];
            nc_config_fit_names(names, sizeof names);
            return nc_err_set(err, NC_EINVAL, "%s: unknown fit '%s' (expected some of: %s)",
                              flag, name, names);
        }
        fit[s->id] = true;
        p += n + (e ? 1 : 0);
    }
    return 0;
}
