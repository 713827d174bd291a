/*
 * config_sections.h - the optional top-level sections of a config
 * ("fits", "amplitude", "jacobian", "sweep" and each entry of "figures";
 * the README's "Config files"): what each holds, and their readers, which
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
#include "analysis/surrogate.h"
#include "config/figspec.h"

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
    unsigned formats;  /* figure formats (0: PNG) */
} nc_config_sweep;

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

/* figures[idx] into f. */
int nc_config_parse_figure(struct nc_config_walker *w, const struct cJSON *obj, int idx,
                           nc_fig_spec *f);

#endif
