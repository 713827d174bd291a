/*
 * values.h - the value parsers that config files and command-line flags
 * share: amplitude rules ("free", "sqrt(d)", ..., or a number) and lists
 * of fit names; and the list of fit names for messages.
 */
#ifndef NC_VALUES_H
#define NC_VALUES_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/amp.h"
#include "analysis/surrogate.h"
#include "util/err.h"

/* Parses an amplitude rule given as text ("free", "sqrt(d)", "sqrt(d-1)",
 * "auto" or a positive number). */
bool nc_amp_parse(const char *s, nc_amp *amp);

/* Parses a comma-separated list of fit names into fit[] (all false first);
 * flag ("--fits", "--curves") names the option in messages. */
int nc_fits_parse(const char *flag, const char *list, bool fit[NC_FIT_COUNT], nc_err *err);

/* The fit names of the surrogate table, ", "-separated, into buf[cap]. */
void nc_config_fit_names(char *buf, size_t cap);

#endif
