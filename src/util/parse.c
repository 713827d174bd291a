/*
 * parse.c - strict number parsing (parse.h), after suckless sbase's estrtonum.
 */
#include "util/parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

int nc_parse_double(const char *s, const char *what, double lo, double hi, double *out,
                    nc_err *err)
{
    if (!s || !*s || isspace((unsigned char)*s))
        return nc_err_set(err, NC_EINVAL, "%s: expected a number in [%g, %g], got '%s'", what,
                          lo, hi, s ? s : "");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end != '\0' || end == s || !isfinite(v) || errno == ERANGE)
        return nc_err_set(err, NC_EINVAL, "%s: expected a number in [%g, %g], got '%s'", what,
                          lo, hi, s);
    if (v < lo || v > hi)
        return nc_err_set(err, NC_EINVAL, "%s: %s is out of range: expected [%g, %g]", what,
                          s, lo, hi);
    *out = v;
    return 0;
}

int nc_parse_u64(const char *s, const char *what, uint64_t lo, uint64_t hi, uint64_t *out,
                 nc_err *err)
{
    if (!s || !isdigit((unsigned char)*s))
        return nc_err_set(err, NC_EINVAL, "%s: expected a whole number in [%llu, %llu], got '%s'",
                          what, (unsigned long long)lo, (unsigned long long)hi, s ? s : "");
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0' || errno == ERANGE)
        return nc_err_set(err, NC_EINVAL, "%s: expected a whole number in [%llu, %llu], got '%s'",
                          what, (unsigned long long)lo, (unsigned long long)hi, s);
    if (v < lo || v > hi)
        return nc_err_set(err, NC_EINVAL, "%s: %s is out of range: expected [%llu, %llu]", what,
                          s, (unsigned long long)lo, (unsigned long long)hi);
    *out = v;
    return 0;
}
