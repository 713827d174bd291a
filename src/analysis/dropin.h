/*
 * dropin.h - drop-in replacement parameters for one norm layer
 * (docs/dropin.md): DyT with its alpha fitted, DyT with alpha fixed at the
 * DyT paper's alpha0, and DyISRU, each as one shared parameter and a
 * weight and bias per channel such that
 *
 *     weight_i * g(x_i) + bias_i,  g = tanh(alpha x) or x / sqrt(x^2 + C)
 *
 * reproduces the layer's output *with* its affine part, w_i y_i + b_i (y
 * the norm's output, w and b the layer's weight and bias; 1 and 0 without
 * them), as closely as a per-channel surrogate can.
 *
 * How: per channel the best gamma_i, beta_i for y at a given alpha (or C)
 * are a least-squares solve (channel.c); composed with the affine part,
 * weight_i = w_i gamma_i and bias_i = w_i beta_i + b_i are then the best
 * for w_i y + b_i too, and that channel's squared error is w_i^2 times
 * y's. So the shared parameter minimises sum_i w_i^2 SSE_i: the error of
 * what the next layer sees. With no weight, or one value in every channel,
 * that is the unweighted per-channel fit ("dyt_per_channel"), reused; else
 * the fit runs again with the weights. At alpha0 the per-channel solves
 * need sums of tanh(alpha0 x), which the DyISRU fit's first pass over all
 * tokens makes beside its own (channel.c): no pass of their own.
 *
 * The parameters are rounded to float32 (the files' dtype), and both RMSEs
 * are those of the rounded parameters, exact over all used points (one
 * pass): against w y + b recomputed from the input, and against the
 * dump's real output when there is one.
 *
 * Left out: the safetensors files and the JSON (report/dropin_out.c);
 * which alpha0 applies (roles.h).
 */
#ifndef NC_DROPIN_H
#define NC_DROPIN_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/layer.h"
#include "analysis/roles.h"
#include "core/tensor.h"
#include "util/err.h"
#include "util/progress.h"

/* The three drop-in surrogates, in the order of the files. */
typedef enum nc_dropin_kind {
    NC_DROPIN_DYT,        /* dropin_dyt.safetensors: alpha fitted */
    NC_DROPIN_DYT_ALPHA0, /* dropin_dyt_alpha0.safetensors: alpha = the paper's alpha0 */
    NC_DROPIN_DYISRU,     /* dropin_dyisru.safetensors: C fitted */
    NC_DROPIN_COUNT
} nc_dropin_kind;

/* "dyt", "dyt_alpha0", "dyisru": the report's keys and the files' stems. */
const char *nc_dropin_name(nc_dropin_kind k);

/* "alpha" or "C": the shared parameter's name in the report and the file. */
const char *nc_dropin_param(nc_dropin_kind k);

typedef struct nc_dropin_fit {
    bool ok;              /* parameters fitted and representable in float32 */
    double param;         /* alpha or C as fitted (alpha0 as given) */
    float param32;        /* as written */
    float *weight, *bias; /* [d] owned: as written (w_i gamma_i, w_i beta_i + b_i) */
    double objective;     /* sum_i w_i^2 SSE_i at the fit, from the fit's sums (NAN for
                           * alpha0) */
    int iterations;       /* passes of the fit (0: the dyt_per_channel fit reused) */
    bool converged;
    double rmse_rec;      /* RMSE of the written parameters against w y + b */
    double rmse_real;     /* the same against the real output (NAN without one) */
    char status[200];
} nc_dropin_fit;

typedef struct nc_dropin {
    bool done;                 /* computed (else status says why not) */
    char status[200];
    size_t d, points;          /* channels, and points in the RMSEs (tokens used x d) */
    bool has_weight, has_bias, has_real;
    bool weighted;             /* alpha and C fitted with the weights w_i^2 */
    nc_alpha0 alpha0;          /* the alpha0 used and its rule */
    nc_dropin_fit fit[NC_DROPIN_COUNT];
    int passes;                /* passes over the input */
    double fits_s, rmse_s;     /* wall seconds of the fits and of the RMSE pass */
    double time_s;             /* of the whole stage */
} nc_dropin;

typedef struct nc_dropin_spec {
    const char *name;        /* the layer's name, in messages */
    const nc_tensor *x;      /* the input the result was analysed from */
    const nc_tensor *y_real; /* optional: the real output (after the affine part) */
    const nc_tensor *weight; /* optional: [d] */
    const nc_tensor *bias;   /* optional: [d] */
    nc_alpha0 alpha0;        /* the alpha fixed in NC_DROPIN_DYT_ALPHA0 */
    int threads;             /* 0: online CPUs */
    nc_progress *progress;   /* optional */
} nc_dropin_spec;

/* The drop-in parameters of an analysed layer res (nc_layer_analyze on
 * spec->x, same tokens). A layer with nothing to fit (no usable token,
 * fewer than 3, or an input beyond the double range) is not an error: out
 * is not done and its status says why. Free with nc_dropin_free. Errors:
 * NC_ENOMEM and those of the passes. */
int nc_dropin_run(const nc_dropin_spec *spec, const nc_layer_result *res, nc_dropin *out,
                  nc_err *err);

void nc_dropin_free(nc_dropin *dr);

#endif
