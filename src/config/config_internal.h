/*
 * config_internal.h - what the files of the config reader share (internal
 * to src/config/config*.c): the walker that carries the file name and key
 * path into every message, its helpers, and the optional sections.
 *
 *   config.c           the config object, the top level, layers, loading
 *   config_walk.c      the walker's helpers: keys, typed values, paths
 *   config_sections.c  the optional sections: fits, amplitude, jacobian,
 *                      sweep, figures
 *   values.c           amplitude rules and fit lists (config.h), fit names
 *   figspec.c          figure kinds, legend positions, formats (figspec.h)
 *
 * Calls run one way: config.c -> config_sections.c -> the rest.
 *
 * Every helper that reads a key does nothing when the key is absent (the
 * default stays), and otherwise checks the value's type and range and
 * fails with "<file>: <path>: expected <what>" (NC_EINVAL), the path
 * naming the key ("layers[2].eps"); NC_ENOMEM for allocations. Paths are
 * cut at PATH_MAX_LEN, which is only ever seen in messages.
 *
 * Left out: everything a caller outside these files may use (config.h).
 */
#ifndef NC_CONFIG_INTERNAL_H
#define NC_CONFIG_INTERNAL_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "util/err.h"

#define PATH_MAX_LEN 192

typedef struct walker {
    const char *file;
    char dir[4096]; /* the config's folder, for relative paths ("" = cwd) */
    nc_err *err;
} walker;

/* "<file>: <path>: expected <expected>" (NC_EINVAL), returned. */
static inline int bad(walker *w, const char *path, const char *expected)
{
    return nc_err_set(w->err, NC_EINVAL, "%s: %s: expected %s", w->file, path, expected);
}

/* ---- config_walk.c ----------------------------------------------------- */

/* out[PATH_MAX_LEN] = parent.key (just key when parent is ""), cut to fit. */
void nc_config_child_path(char *out, const char *parent, const char *key);

/* Every key of obj (at path) must be in allowed (NULL-terminated), once:
 * else an error naming the key and listing the allowed ones. */
int nc_config_check_keys(walker *w, const cJSON *obj, const char *path,
                         const char *const *allowed);

/* The non-empty string obj.key into *out (owned: any old *out is freed). */
int nc_config_get_string(walker *w, const cJSON *obj, const char *key, const char *path,
                         char **out);

/* The finite number obj.key in [lo, hi] (hi may be INFINITY) into *out;
 * *present set to true when present is not NULL and the key is there. */
int nc_config_get_number(walker *w, const cJSON *obj, const char *key, const char *path,
                         double lo, double hi, double *out, bool *present);

/* The whole number obj.key in [lo, hi] into *out. */
int nc_config_get_uint(walker *w, const cJSON *obj, const char *key, const char *path,
                       double lo, double hi, uint64_t *out);

/* true or false obj.key into *out. */
int nc_config_get_bool(walker *w, const cJSON *obj, const char *key, const char *path,
                       bool *out);

/* The value v at path, a non-empty string or an array of them, into the
 * owned array *out of *n strings (both set as far as they got on error). */
int nc_config_get_strings(walker *w, const cJSON *v, const char *path, char ***out, size_t *n);

/* An input path p resolved against the config's folder (absolute paths as
 * given) into *out (owned: any old *out is freed). */
int nc_config_resolve(walker *w, const char *p, char **out);

/* Every key and string value under v (at path) is UTF-8: else an error
 * naming the key path (NC_EINVAL). */
int nc_config_check_utf8(walker *w, const cJSON *v, const char *path);

/* ---- values.c ---------------------------------------------------------- */

/* The fit names of the surrogate table, ", "-separated, into buf[cap]. */
void nc_config_fit_names(char *buf, size_t cap);

/* ---- config_sections.c ------------------------------------------------- */

/* The top-level sections, each given its JSON value, into cfg: "fits"
 * (arr), "amplitude", "jacobian", "sweep" (obj) and figures[idx] (obj, into f, already added to cfg). */
int nc_config_parse_fits(walker *w, const cJSON *arr, nc_config *cfg);
int nc_config_parse_amplitude(walker *w, const cJSON *obj, nc_config *cfg);
int nc_config_parse_jacobian(walker *w, const cJSON *obj, nc_config *cfg);
int nc_config_parse_sweep(walker *w, const cJSON *obj, nc_config *cfg);
int nc_config_parse_figure(walker *w, const cJSON *obj, int idx, nc_fig_spec *f);
/* A figure's "width", "height" and "dpi", and its "legend", "title" and
 * "labels", in obj at path (a "figures" entry or the "sweep" section). */
int nc_config_parse_size(walker *w, const cJSON *obj, const char *path, nc_fig_spec *f);
int nc_config_parse_look(walker *w, const cJSON *obj, const char *path, nc_fig_spec *f);

#endif
