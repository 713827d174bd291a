/*
 * parse.h - strict parsing of numbers from the command line.
 *
 * Empty strings, leading or trailing garbage (including spaces), non-finite
 * values and values outside [lo, hi] are rejected with a message naming the
 * option ("--eps: expected a number in [0, 1], got '1e'"). Nothing is
 * clamped.
 */
#ifndef NC_PARSE_H
#define NC_PARSE_H

#include <stdint.h>

#include "util/err.h"

/* A finite double in [lo, hi]. `what` names the option in messages. */
int nc_parse_double(const char *s, const char *what, double lo, double hi, double *out,
                    nc_err *err);

/* A decimal integer in [lo, hi]. */
int nc_parse_u64(const char *s, const char *what, uint64_t lo, uint64_t hi, uint64_t *out,
                 nc_err *err);

#endif
