/*
 * plan.h - from a config to analysed layers.
 *
 * nc_plan_open resolves everything before any number is computed: it opens
 * (maps) every input file, matches tensor names and patterns, finds each
 * layer's companions (real output, weight, bias, upstream gradient) and
 * generates synthetic layers. Any bad input therefore fails here, before an
 * output folder is touched. nc_plan_run then analyses the layers in order.
 *
 * Companions are found by name (README "Companions"): in a safetensors file,
 * "<layer>.output", "<layer>.weight", "<layer>.bias", "<layer>.grad_output"
 * beside "<layer>.input"; for "<prefix>_input.npy", the files
 * "<prefix>_output.npy", "<prefix>_weight.npy", ... next to it; a config's
 * (or the command line's) explicit companion paths take precedence.
 */
#ifndef NC_PLAN_H
#define NC_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/alpha_roles.h"
#include "analysis/dropin.h"
#include "analysis/layer.h"
#include "analysis/roles.h"
#include "plan/swap.h"
#include "analysis/normcheck.h"
#include "analysis/jacobian.h"
#include "analysis/outlier.h"
#include "analysis/run_summary.h"
#include "analysis/sweep.h"
#include "io/dump.h"
#include "config/config.h"
#include "util/err.h"
#include "util/progress.h"

/* Where a layer's norm kind or eps came from ("norm_source", "eps_source"
 * in the report): a command-line flag, the config file, the safetensors
 * __metadata__ ("<layer>.norm", "<layer>.eps", as the dump script writes
 * them), detected from the real output (analysis/normcheck.h), or the
 * default (LayerNorm; eps 1e-5 LayerNorm, 1e-6 RMSNorm). */
typedef enum nc_src {
    NC_SRC_DEFAULT,
    NC_SRC_FLAG,
    NC_SRC_CONFIG,
    NC_SRC_METADATA,
    NC_SRC_DETECTED,
} nc_src;

/* "default", "flag", "config", "metadata", "detected" (plan/check.c). */
const char *nc_src_name(nc_src src);

/* The real-output check of a layer (report: "real_output_check"). */
typedef struct nc_real_check {
    bool checked;             /* the layer has a real output */
    const char *status;       /* "ok", "detected", "mismatch", "mismatch_explicit",
                               * "nonfinite" (report docs) */
    bool detected;            /* the check ran (det and q are set) */
    nc_norm_check det;        /* what the real output says (its per-token arrays freed) */
    double q;                 /* q of the norm finally used (normcheck.h) */
    bool agrees;              /* that norm reproduces the real output to rounding */
    bool kind_contradicted;   /* a given kind (flag, config, metadata) the data exclude */
    bool eps_contradicted;    /* a given eps the data exclude */
    bool rerun;               /* analysed again with the norm the data gave */
    nc_norm_kind first_norm;  /* the first pass's norm, eps and differences */
    double first_eps, first_max_abs_diff, first_rms_diff;
    bool warn;                /* a disagreement or a contradicted value: a warning */
    char message[1024];       /* the stderr line ("" when nothing to say) */
} nc_real_check;

/* One tensor the run reads, for the report's "inputs" list. */
typedef struct nc_plan_input {
    nc_dump *dump;          /* borrowed from the plan */
    const nc_tensor *tensor;
    const char *role;       /* "input", "output", "weight", "bias", "grad_output" */
    size_t layer;           /* index of the layer that uses it */
} nc_plan_input;

typedef struct nc_plan_layer {
    char *name;             /* owned */
    char *source;           /* owned: the dump it came from (the file, or the folder of
                             * a sharded dump or of .npy files; "synthetic"): with its
                             * norm kind and d, what makes its model group */
    size_t token_block;     /* tokens per sequence for the bootstrap's blocks (>= 1) */
    const char *token_block_source; /* "flag", "config", "metadata", "shape", "default" */
    const nc_config_layer *cfg; /* borrowed from the config */
    nc_norm_kind norm;
    double eps;
    nc_src norm_source, eps_source;
    nc_dtype source_dtype;  /* the dtype the model ran the layer in, when the dump's
                             * metadata says ("<layer>.source_dtype"); else NC_DT_NONE */
    nc_real_check check;    /* filled by nc_plan_run */
    const nc_tensor *x;
    const nc_tensor *comp[NC_COMP_COUNT]; /* or NULL */
    nc_layer_result result; /* filled by nc_plan_run */
    bool has_outlier_steps;
    nc_outlier_steps outlier_steps;
    bool has_jacobian;
    nc_jac_result jacobian;
    bool has_sweep[2];             /* indexed by nc_sweep_param */
    nc_sweep_result sweep[2];
    nc_role_info role;      /* from the name (nc_plan_open; roles.h) */
    bool has_dropin;
    nc_dropin dropin;       /* the drop-in parameters (analysis/dropin.h) */
    bool done;
    bool in_shard;          /* analysed by this run (always, unless --shard) */
} nc_plan_layer;

typedef struct nc_plan {
    const nc_config *cfg;   /* borrowed */
    nc_dump **dumps;        /* owned */
    size_t ndumps;
    nc_plan_layer *layers;
    size_t nlayers;
    nc_plan_input *inputs;
    size_t ninputs;
    /* the run-level block (two or more analysed layers; nc_plan_run) */
    size_t disagreeing;     /* layers whose real output still disagrees (--strict: exit 2) */
    bool has_run;
    nc_layer_summary *summaries; /* [layers done], in layer order; names borrowed */
    nc_run_summary run;
    nc_roles *roles;        /* owned: the config's role patterns, compiled */
    bool has_alpha_roles;   /* the run-level alpha-by-role block (beside `run`) */
    nc_role_layer *role_layers; /* [layers done], in layer order; strings borrowed */
    nc_alpha_roles alpha_roles;
    bool has_swap;          /* the swap test's results were found (swap.h) */
    nc_swap swap;
    nc_dump **hash_order;   /* owned list (dumps borrowed): the inputs' dumps, once each */
    nc_dump_hasher *hasher; /* their digests, made in the background during nc_plan_run */
} nc_plan;

/* Resolves cfg (which must outlive the plan). */
int nc_plan_open(const nc_config *cfg, nc_plan **out, nc_err *err);

/* Whether plan layer `index` (plan order) belongs to the config's shard:
 * always when cfg->shard_count is 0, else index % count == shard_index - 1. */
bool nc_plan_in_shard(const nc_config *cfg, size_t index);

/* Analyses every layer of the shard (plan.h nc_plan_in_shard); progress may
 * be NULL. Meanwhile a background thread hashes the inputs' files for the
 * report (io/dump.h nc_dump_hasher), stopped by nc_plan_close. */
int nc_plan_run(nc_plan *plan, nc_progress *progress, nc_err *err);

/* Brings a layer's mapped tensors into memory (need) or drops them from
 * the process (io/dump.h nc_dump_advise): nc_plan_run and the figures'
 * passes hold one layer at a time, so a model's run stays bounded by about
 * one layer's inputs. */
void nc_plan_layer_memory(const nc_plan_layer *l, bool need);

/* A plan layer's model-group key (run_summary.h nc_model_groups). */
nc_group_key nc_plan_group_key(const nc_plan_layer *l);

/* Frees the plan, its results and its dumps. Accepts NULL. */
void nc_plan_close(nc_plan *plan);

#endif
