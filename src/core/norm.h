/*
 * norm.h - the exact references: LayerNorm and RMSNorm, per token.
 *
 * docs/theory.md, "RMSNorm" and "LayerNorm". For a token x of length d:
 *   LayerNorm: mu = mean(x), s = sqrt(var(x) + eps) (biased variance),
 *              y = (x - mu) / s
 *   RMSNorm:   r = sqrt(mean(x^2) + eps), y = x / r
 * and with the affine part y' = weight * y + bias (RMSNorm: no bias).
 *
 * Every later pass needs only two numbers per token, so a norm is described
 * by its per-token centre c (mu for LayerNorm, 0 for RMSNorm) and scale
 * (s or r): y = (x - c) * (1 / scale). The output is recomputed from x
 * wherever it is needed and never stored (docs/internals.md "How it computes").
 *
 * Statistics are two-pass per token in double (mean, then the sum of squared
 * deviations), never E[x^2] - E[x]^2 (docs/internals.md, rule 5).
 */
#ifndef NC_NORM_H
#define NC_NORM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum nc_norm_kind { NC_LAYERNORM, NC_RMSNORM } nc_norm_kind;

/* Default eps: PyTorch's LayerNorm and LLaMA's RMSNorm. */
#define NC_LAYERNORM_EPS 1e-5
#define NC_RMSNORM_EPS 1e-6

/* "layernorm" / "rmsnorm". */
const char *nc_norm_name(nc_norm_kind kind);

/* Parses a norm's name: "layernorm" or "rmsnorm" (also "ln", "rms"), in
 * any case and with any '_', '-' or ' ' (PyTorch's "LayerNorm" and
 * "RMSNorm", "layer_norm", "rms_norm"); false if neither. */
bool nc_norm_parse(const char *s, nc_norm_kind *kind);

/* What nc_norm_parse accepts, for messages. */
#define NC_NORM_NAMES "layernorm or rmsnorm (any case, e.g. LayerNorm, rms_norm)"

/* Why a token is left out of every pass (counted and reported). */
typedef enum nc_token_status {
    NC_TOKEN_OK = 0,
    NC_TOKEN_NONFINITE,  /* a NaN or infinity among its values (or squares overflowing) */
    NC_TOKEN_ZERO_SCALE, /* scale 0: a constant token with eps = 0 (or all zeros, RMSNorm) */
} nc_token_status;

/* One token's statistics. */
typedef struct nc_token_stat {
    double mean;  /* mean(x) */
    double var;   /* biased variance of x */
    double ms;    /* mean(x^2) */
    double centre; /* c: mean for LayerNorm, 0 for RMSNorm */
    double scale; /* s = sqrt(var + eps) or r = sqrt(ms + eps) */
    nc_token_status status; /* not NC_TOKEN_OK: the fields above are 0 (nonfinite)
                             * or scale is 0 (zero scale), and no output exists */
} nc_token_stat;

/* Statistics of one token x[0..d). d >= 1. */
nc_token_stat nc_norm_token(nc_norm_kind kind, double eps, const double *x, size_t d);

/* y[i] = (x[i] - centre) * (1 / scale), i < d. y may alias x. */
void nc_norm_apply(const nc_token_stat *st, const double *x, size_t d, double *y);

/* y[i] = weight[i] * y[i] + bias[i]; either array may be NULL (1 and 0). */
void nc_norm_affine(const double *weight, const double *bias, size_t d, double *y);

#endif
