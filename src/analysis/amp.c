/*
 * amp.c - amplitude rules (amp.h): names and resolution for a layer.
 */
#include "analysis/amp.h"

#include <math.h>

const char *nc_amp_rule_name(nc_amp_rule rule)
{
    switch (rule) {
    case NC_AMP_FREE: return "free";
    case NC_AMP_SQRT_D: return "sqrt(d)";
    case NC_AMP_SQRT_D_MINUS_1: return "sqrt(d-1)";
    case NC_AMP_AUTO: return "auto";
    default: return "value";
    }
}

bool nc_amp_resolve(nc_amp amp, nc_norm_kind norm, size_t d, double *value,
                    nc_amp_rule *rule_out)
{
    nc_amp_rule r = amp.rule;
    if (r == NC_AMP_AUTO)
        r = norm == NC_RMSNORM ? NC_AMP_SQRT_D : NC_AMP_SQRT_D_MINUS_1;
    *rule_out = r;
    switch (r) {
    case NC_AMP_FREE:
        *value = 0;
        return false;
    case NC_AMP_SQRT_D:
        *value = sqrt((double)d);
        return true;
    case NC_AMP_SQRT_D_MINUS_1:
        *value = d > 1 ? sqrt((double)(d - 1)) : 0.0;
        return true;
    default:
        *value = amp.value;
        return true;
    }
}
