/*
 * config_walk.h - the config walker: it carries the file name and the key
 * path into every message, and reads one key at a time (internal to
 * src/config/: config.c reads the top level and the layers with it,
 * config_sections.c the optional sections).
 *
 * Every reader does nothing when the key is absent (the default stays),
 * and otherwise checks the value's type and range and fails with
 * "<file>: <path>: expected <what>" (NC_EINVAL), the path naming the key
 * ("layers[2].eps"); NC_ENOMEM for allocations. Paths are cut at
 * NC_CONFIG_PATH_MAX bytes, which is only ever seen in messages.
 *
 * Left out: what the keys mean and which are allowed where (config.c,
 * config_sections.c), and JSON parsing itself (cJSON).
 */
#ifndef NC_CONFIG_WALK_H
#define NC_CONFIG_WALK_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define NC_CONFIG_PATH_MAX 192

typedef struct nc_config_walker {
    const char *file;
    char dir[4096]; /* the config's folder, for relative paths ("" = cwd) */
    nc_err *err;
} nc_config_walker;

/* "<file>: <path>: expected <expected>" (NC_EINVAL), returned. */
int nc_config_bad(nc_config_walker *w, const char *path, const char *expected);

/* out[NC_CONFIG_PATH_MAX] = parent.key (just key when parent is ""), cut to
 * fit. */
void nc_config_child_path(char *out, const char *parent, const char *key);

/* Every key of obj (at path) must be in allowed (NULL-terminated), once:
 * else an error naming the key and listing the allowed ones. */
int nc_config_check_keys(nc_config_walker *w, const cJSON *obj, const char *path,
                         const char *const *allowed);

/* The non-empty string obj.key into *out (owned: any old *out is freed). */
int nc_config_get_string(nc_config_walker *w, const cJSON *obj, const char *key,
                         const char *path, char **out);

/* The finite number obj.key in [lo, hi] (hi may be INFINITY) into *out;
 * *present set to true when present is not NULL and the key is there. */
int nc_config_get_number(nc_config_walker *w, const cJSON *obj, const char *key,
                         const char *path, double lo, double hi, double *out, bool *present);

/* The whole number obj.key in [lo, hi] into *out. */
int nc_config_get_uint(nc_config_walker *w, const cJSON *obj, const char *key,
                       const char *path, double lo, double hi, uint64_t *out);

/* true or false obj.key into *out. */
int nc_config_get_bool(nc_config_walker *w, const cJSON *obj, const char *key,
                       const char *path, bool *out);

/* The value v at path, a non-empty string or an array of them, into the
 * owned array *out of *n strings (both set as far as they got on error). */
int nc_config_get_strings(nc_config_walker *w, const cJSON *v, const char *path, char ***out,
                          size_t *n);

/* An input path p resolved against the config's folder (absolute paths as
 * given) into *out (owned: any old *out is freed). */
int nc_config_resolve(nc_config_walker *w, const char *p, char **out);

/* Every key and string value under v (at path) is UTF-8: else an error
 * naming the key path (NC_EINVAL). */
int nc_config_check_utf8(nc_config_walker *w, const cJSON *v, const char *path);

#endif
