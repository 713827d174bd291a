/*
 * config_sections.h - the optional top-level sections of a config
 * ("fits", "amplitude", "jacobian", "sweep" and each entry of "figures";
 * the docs/config.md): what each holds, and their readers, which
 * validate a section's JSON value as strictly as the rest of the config
 * (config_walk.h) into the part of nc_config (config.h) it fills.
 *
 * Left out: the top level, the layers and the config object itself
 * (config.c).
 */
#ifndef NC_CONFIG_SECTIONS_H
#define NC_CONFIG_SECTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/amp.h"
#include "analysis/roles.h"
#include "analysis/surrogate.h"
#include "config/figspec.h"
#include "util/err.h"

struct cJSON;            /* <cJSON.h> */
struct nc_config_walker; /* config_walk.h */

/* "jacobian": the diagonal-Jacobian comparison of each layer. */
typedef struct nc_config_jacobian {
    bool enabled;        /* run it (default on) */
    size_t probes;       /* random probes per token (0: default) */
    size_t dense_tokens; /* tokens materialised as d x d (0: default) */
    bool has_seed;
    uint64_t seed;       /* probe seed (default: the config's seed) */
} nc_config_jacobian;

/* "sweep": the error against alpha (DyT) and C (DyISRU) over grids. */
typedef struct nc_config_sweep {
    bool enabled;      /* a sweep section was given */
    double *alpha;     /* DyT's alpha grid (owned), or NULL */
    size_t nalpha;
    bool alpha_auto;   /* a log grid around the layer's theory value */
    double *C;         /* DyISRU's C grid (owned), or NULL */
    size_t nC;
    bool C_auto;
    size_t auto_steps; /* points of an "auto" grid (default 200) */
    nc_amp gamma;      /* the fixed amplitude of DyT's fixed series (default 1) */
    double beta;       /* its fixed offset (default 0) */
    nc_amp scale;      /* DyISRU's fixed scale (default auto) */
    char **layers;     /* patterns (owned); none: every layer */
    size_t nlayers;
    bool figure, csv;  /* write a figure and a CSV per layer and parameter (default yes) */
    nc_fig_spec look;  /* the figures' formats, size, dpi, legend and title ("format",
                        * "width", "height", "dpi", "legend", "title"; owned) */
} nc_config_sweep;

/* The drop-in parameters' settings (docs/dropin.md): the top-level keys
 * "dropin", "alpha0" and "roles", and their flags. */
typedef struct nc_config_dropin {
    bool enabled;         /* drop-in parameters per layer (default on) */
    nc_alpha0_opt alpha0; /* an override of the DyT paper's alpha0 (n = 0: none) */
    size_t nroles;        /* role patterns, first match wins: the flags', then the
                           * config's "roles" */
    char **role_regex, **role_name; /* [nroles] owned */
    const char **role_origin;       /* [nroles] "--role" or "config roles" (static) */
} nc_config_dropin;

/* "fits" (an array of fit names) into fit[]: only those true. */
int nc_config_parse_fits(struct nc_config_walker *w, const struct cJSON *arr,
                         bool fit[NC_FIT_COUNT]);

/* "amplitude" (an object with keys dyt, dyisru, derf) into the three
 * rules; an absent key leaves its rule as it was. */
int nc_config_parse_amplitude(struct nc_config_walker *w, const struct cJSON *obj, nc_amp *dyt,
                              nc_amp *dyisru, nc_amp *derf);

/* "jacobian" into j (absent keys keep their values). */
int nc_config_parse_jacobian(struct nc_config_walker *w, const struct cJSON *obj,
                             nc_config_jacobian *j);

/* "sweep" into s (absent keys keep their values; sets s->enabled). */
int nc_config_parse_sweep(struct nc_config_walker *w, const struct cJSON *obj,
                          nc_config_sweep *s);

/* The drop-in keys of the top level root into D: "dropin" (true or
 * false), "alpha0" (a number, or [attention-input norm, other norms]) and
 * "roles" ({"REGEX": "NAME", ...}: each a POSIX extended regular
 * expression and a role name, appended in order). */
int nc_config_parse_dropin(struct nc_config_walker *w, const struct cJSON *root,
                           nc_config_dropin *D);

/* Inserts the role pattern regex -> role (copied) at position `at` (at most
 * D->nroles) of D's list; origin is a static string ("--role", "config
 * roles"). Errors: NC_ENOMEM. */
int nc_config_dropin_add_role(nc_config_dropin *D, size_t at, const char *regex,
                              const char *role, const char *origin, nc_err *err);

/* A figure's "width", "height" and "dpi", and its "legend", "title" and
 * "labels", in obj at path (a "figures" entry or the "sweep" section). */
int nc_config_parse_size(struct nc_config_walker *w, const struct cJSON *obj, const char *path,
                         nc_fig_spec *f);
int nc_config_parse_look(struct nc_config_walker *w, const struct cJSON *obj, const char *path,
                         nc_fig_spec *f);

/* figures[idx] into f. */
int nc_config_parse_figure(struct nc_config_walker *w, const struct cJSON *obj, int idx,
                           nc_fig_spec *f);

#endif
