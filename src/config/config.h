/*
 * config.h - an experiment description: the layers to analyse and how.
 *
 * A config comes from a JSON file (`normcmp run CONFIG.json`) or is built
 * from command-line flags (`normcmp fit FILE ...`); either way the rest of
 * the tool sees this struct. The JSON schema is in docs/config.md. Validation
 * is strict: an unknown key, a wrong type or a value out
 * of range is an error that names the file and the key path
 * ("configs/x.json: layers[2].eps: expected a number >= 0").
 *
 * Paths of input files are resolved against the config file's folder; the
 * output folder (`output`, default out/<name>) against the current folder.
 */
#ifndef NC_CONFIG_H
#define NC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/layer.h"
#include "analysis/roles.h"
#include "core/norm.h"
#include "core/synth.h"
#include "config/config_sections.h"
#include "config/figspec.h"
#include "config/values.h"
#include "util/err.h"

/* Companion tensors of a layer (README "Companions"). */
enum { NC_COMP_OUTPUT, NC_COMP_WEIGHT, NC_COMP_BIAS, NC_COMP_GRAD, NC_COMP_COUNT };

/* "output", "weight", "bias", "grad_output". */
const char *nc_comp_name(int comp);

typedef struct nc_config_layer {
    char *label;              /* optional layer name (one tensor only) */
    char *file;               /* input file (resolved), or NULL for a synthetic layer */
    char **tensors;           /* names or glob patterns; none: the defaults */
    size_t ntensors;
    char *comp[NC_COMP_COUNT]; /* companion .npy paths (resolved), or NULL: found by name */
    bool has_norm;
    nc_norm_kind norm;
    bool has_eps;
    double eps;
    bool outlier_steps;       /* "experiment": "outlier-steps" */
    bool synth;               /* generated in memory */
    char *synth_preset;       /* "early", "middle", "late", "outlier-steps" */
    nc_synth_params synth_params;
    bool synth_affine;        /* also generate weight, bias and the real output */
    nc_synth_rng synth_rng;   /* outlier-steps: the base token's generator ("rng") */
    size_t synth_draws;       /* outlier-steps: draws of the spread, seeds seed .. ("draws") */
    size_t token_block;       /* tokens per sequence, for the bootstrap (0: not given) */
    char *group;              /* the model group it belongs to ("group"), or NULL */
} nc_config_layer;

typedef struct nc_config {
    char *source;             /* the config file, or "command line" */
    char *name;               /* run name (default: the config file's base name) */
    char *output;             /* output folder */
    bool has_norm;            /* norm given (a flag, or the config's top-level "norm") */
    nc_norm_kind norm;
    bool has_eps;
    double eps;
    bool strict;              /* --strict: a real output that disagrees is exit 2 */
    bool fit[NC_FIT_COUNT];
    nc_amp amp_dyt, amp_dyisru, amp_derf;
    size_t max_bins, max_exact_points, sample_tokens;
    size_t boot_replicates;   /* token bootstrap replicates ("bootstrap"; 0: none) */
    size_t token_block;       /* tokens per sequence ("token_block"; 0: not given) */
    uint64_t seed;
    int threads;
    /* `run --shard K/N` (docs/whole_models.md): only the plan layers i
     * (0-based, plan order) with i % shard_count == shard_index - 1 are
     * analysed; shard_count 0: every layer. Not a config file key. */
    size_t shard_index, shard_count;
    nc_config_jacobian jacobian; /* config_sections.h */
    nc_config_sweep sweep;
    char *swap;               /* the swap test's results file ("swap", --swap; NULL: looked
                               * for beside the dump and in the output folder: plan/swap.h) */
    nc_config_dropin dropin;  /* config_sections.h (docs/dropin.md) */
    nc_fig_spec *figures;     /* figures to render into the output folder */
    size_t nfigures;
    nc_config_layer *layers;
    size_t nlayers;
} nc_config;



/* Appends an empty figure spec and returns it (owned by cfg). */
int nc_config_add_figure(nc_config *cfg, nc_fig_spec **spec, nc_err *err);

/* A config with the defaults and no layers; source names it in messages. */
int nc_config_alloc(const char *source, nc_config **out, nc_err *err);

/* Appends an empty layer and returns it through *layer (owned by cfg). */
int nc_config_add_layer(nc_config *cfg, nc_config_layer **layer, nc_err *err);

/* The largest config file read, in bytes. */
#define NC_CONFIG_MAX_BYTES (16u << 20)

/* Reads and validates a config file. */
int nc_config_load(const char *path, nc_config **out, nc_err *err);

/* Validates JSON text already in memory (path for messages and for
 * resolving relative input paths). */
int nc_config_parse(const char *text, size_t len, const char *path, nc_config **out,
                    nc_err *err);

/* Frees cfg and everything it owns. Accepts NULL. */
void nc_config_free(nc_config *cfg);

/* The effective eps of a layer: its own, the config's, or the norm's default. */
double nc_config_layer_eps(const nc_config *cfg, const nc_config_layer *layer);
nc_norm_kind nc_config_layer_norm(const nc_config *cfg, const nc_config_layer *layer);

#endif
