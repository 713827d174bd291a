/*
 * jbuild.h - building report.json's cJSON tree with one check at the end.
 *
 * Every helper takes the builder b; an allocation or insertion that fails
 * clears b->ok and leaves the tree as it was (a NULL parent, left by an
 * earlier failure, is one, and the value setters skip it), so a writer
 * adds a whole block without checking each call and turns !b.ok into one
 * NC_ENOMEM when it is done. Numbers are written as raw
 * text that reads back as exactly the same double (the shortest of %.15g,
 * %.16g, %.17g that round-trips: cJSON's own printer keeps 15 digits,
 * which only come close), and a number that is not finite as null beside
 * a "status" saying why (docs/internals.md, rule 5; docs/report.md).
 *
 * Used by report.c (the report), run_block.c (the run-level block) and
 * `normcmp merge` (the numbers of a merged report).
 */
#ifndef NC_JBUILD_H
#define NC_JBUILD_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

typedef struct nc_jb {
    bool ok; /* start true; false after any failure */
} nc_jb;

/* A new object under parent: at key, or appended when key is NULL (parent
 * an array). NULL on failure. */
cJSON *nc_jb_obj(nc_jb *b, cJSON *parent, const char *key);

/* A new array at parent.key; NULL on failure. */
cJSON *nc_jb_arr(nc_jb *b, cJSON *parent, const char *key);

/* A detached number node that reads back as exactly v (raw text), or a
 * null node when v is not finite; NULL when out of memory. */
cJSON *nc_jb_number(double v);

/* o.key = v (null when not finite). */
void nc_jb_num(nc_jb *b, cJSON *o, const char *key, double v);

/* o.key = the n numbers v[0..n) as an array. */
void nc_jb_num_array(nc_jb *b, cJSON *o, const char *key, const double *v, size_t n);

/* o.key = s ("" for NULL). */
void nc_jb_str(nc_jb *b, cJSON *o, const char *key, const char *s);

/* o.key = true or false. */
void nc_jb_bool(nc_jb *b, cJSON *o, const char *key, bool v);

/* If o holds a null and no "status" yet, adds "status": reason (every null
 * of the report sits beside a status saying why). */
void nc_jb_ensure_status(nc_jb *b, cJSON *o, const char *reason);

/* o.key = {"value" (left out when value_too is false), "se" (left out
 * when NaN), "ci95": [lo, hi] (left out, with a status, when not finite)}:
 * a number with its uncertainty (the token bootstrap's). */
void nc_jb_ci_of(nc_jb *b, cJSON *o, const char *key, bool value_too, double value, double se,
                 double lo, double hi);

/* nc_jb_ci_of with the value. */
void nc_jb_ci(nc_jb *b, cJSON *o, const char *key, double value, double se, double lo,
              double hi);

#endif
