/*
 * nearest.h - "did you mean ...?": the known name nearest to a mistyped
 * one, for unknown options and commands (cli/) and unknown config keys
 * (config/).
 */
#ifndef NC_NEAREST_H
#define NC_NEAREST_H

#include <stddef.h>

/* The name of names[0..count) nearest to given[0..n) (optimal string
 * alignment distance: an insertion, deletion, substitution or swap of two
 * neighbours is one edit), if it is close enough to be a typo: at most 2
 * edits, and fewer edits than given has characters; else NULL. The first
 * of equally near names wins. Borrowed from names. */
const char *nc_nearest(const char *given, size_t n, const char *const *names, size_t count);

#endif
