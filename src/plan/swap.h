/*
 * swap.h - the swap test's results (docs/swap.md: what replacing each norm
 * by its drop-in does to the model's loss), read back into a run.
 *
 * scripts/swap_test.py measures the model's loss with norms replaced by
 * the drop-in parameters normcmp wrote (docs/dropin.md) and writes a JSON
 * file (format "normcmp swap test", version 1). A run reads it when named
 * (--swap FILE, config "swap") or when it sits where the swap test puts it
 * by default: beside the run's one safetensors dump (OUT.safetensors ->
 * OUT.swap.json, a folder DIR -> DIR.swap.json) or in the output folder
 * (swap.json). The file is untrusted input: every field read is checked
 * (type, range, finite numbers, UTF-8 names) and a bad one is an error
 * naming the file and the field.
 *
 * A result is "current" when the drop-in parameters it was measured with
 * (each layer's alpha and C, as the file records them) are the ones this
 * run wrote; otherwise it is reported but marked stale.
 */
#ifndef NC_SWAP_H
#define NC_SWAP_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/dropin.h"
#include "util/err.h"

/* One replacement: the paired change of the loss (and accuracy) against
 * the original model, with its standard error over batches. */
typedef struct nc_swap_entry {
    bool ok;                        /* measured, with a finite delta */
    double param;                   /* the drop-in's alpha or C it was measured with */
    double delta, delta_se;         /* loss change (se NAN: one batch) */
    double acc_delta, acc_delta_se; /* accuracy change (NAN: no labels) */
} nc_swap_entry;

typedef struct nc_swap_layer {
    char *name;                     /* owned: the layer's report name */
    nc_swap_entry s[NC_DROPIN_COUNT];
} nc_swap_layer;

typedef struct nc_swap_role {
    char *role;                     /* owned */
    size_t nlayers;                 /* layers replaced together */
    nc_swap_entry s[NC_DROPIN_COUNT];
} nc_swap_role;

typedef struct nc_swap {
    char *path;                     /* owned: the file read */
    char unit[64];                  /* the loss's unit, e.g. "nats per token" */
    char loss[256];                 /* the loss's name */
    size_t batches, examples;
    double loss0, loss0_se;         /* the original model's loss */
    double acc0;                    /* its accuracy (NAN: no labels) */
    bool has[NC_DROPIN_COUNT];      /* surrogates measured */
    nc_swap_layer *layer;           /* [nlayers] owned */
    size_t nlayers;
    nc_swap_role *role;             /* [nroles] owned */
    size_t nroles;
    nc_swap_entry all[NC_DROPIN_COUNT]; /* every layer replaced at once */
    bool current;                   /* measured with this run's drop-ins (set by the plan) */
} nc_swap;

/* Reads and checks the results file at path into *out (free with
 * nc_swap_free). Errors: NC_EINVAL/NC_EFORMAT (not a results file, a field
 * of the wrong type or range: one line naming the file and the field),
 * NC_EIO, NC_ENOMEM. */
int nc_swap_read(const char *path, nc_swap *out, nc_err *err);

/* The layer called name, or NULL. */
const nc_swap_layer *nc_swap_find(const nc_swap *s, const char *name);

/* Frees what s owns. Accepts NULL. */
void nc_swap_free(nc_swap *s);

#endif
