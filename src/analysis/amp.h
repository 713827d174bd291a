/*
 * amp.h - how a fit's amplitude (DyT's or Derf's gamma, DyISRU's scale) is
 * set: fitted, fixed to a bound of the norm (sqrt(d) for RMSNorm,
 * sqrt(d-1) for LayerNorm: the largest |y_i| a token can reach), or fixed
 * to a given number.
 *
 * Shared by the layer analysis (layer.c, layer_fits.c), the plan, the
 * outlier experiment and the report: it sits below all of them.
 */
#ifndef NC_AMP_H
#define NC_AMP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/norm.h"

/* How a fit's amplitude (gamma, or DyISRU's scale) is set. */
typedef enum nc_amp_rule {
    NC_AMP_FREE,          /* fitted */
    NC_AMP_SQRT_D,        /* fixed to sqrt(d): the RMSNorm bound */
    NC_AMP_SQRT_D_MINUS_1, /* fixed to sqrt(d-1): the LayerNorm bound */
    NC_AMP_AUTO,          /* sqrt(d) for RMSNorm, sqrt(d-1) for LayerNorm */
    NC_AMP_VALUE,         /* fixed to a given number */
} nc_amp_rule;

typedef struct nc_amp {
    nc_amp_rule rule;
    double value; /* for NC_AMP_VALUE */
} nc_amp;

/* "free", "sqrt(d)", "sqrt(d-1)", "auto", "value". */
const char *nc_amp_rule_name(nc_amp_rule rule);

/* Resolves an amplitude rule for a layer: false for free, else true with
 * *value and *rule_out the concrete rule (auto becomes sqrt(d) or
 * sqrt(d-1)). */
bool nc_amp_resolve(nc_amp amp, nc_norm_kind norm, size_t d, double *value,
                    nc_amp_rule *rule_out);

#endif
