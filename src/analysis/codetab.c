/*
 * codetab.c - the codes a table covers and their values (codetab.h).
 */
#include "analysis/codetab.h"

#include <math.h>
#include <stdlib.h>

#include "core/half.h"
#include "util/err.h"

bool nc_codetab_wanted(nc_dtype dt, size_t points)
{
    return (dt == NC_F16 || dt == NC_BF16) && points >= NC_CODETAB_MIN_POINTS;
}

/* The largest positive code whose value is <= amax (codes of one sign
 * order their magnitudes; 0x7c00 / 0x7f80 and up are inf and NaN). */
static uint32_t top_code(nc_dtype dt, double amax)
{
    uint32_t lo = 0, hi = dt == NC_F16 ? 0x7bffu : 0x7f7fu;
    while (lo < hi) { /* the largest c in [lo, hi] with value(c) <= amax */
        uint32_t mid = lo + (hi - lo + 1) / 2;
        double v = dt == NC_F16 ? nc_f16_to_f32((uint16_t)mid) : nc_bf16_to_f32((uint16_t)mid);
        if (v <= amax)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int nc_codetab_span_make(nc_dtype dt, double amax, nc_codetab_span *span)
{
    span->x = malloc(65536 * sizeof *span->x);
    if (!span->x)
        return NC_ENOMEM;
    uint32_t c = top_code(dt, isfinite(amax) && amax > 0 ? amax : 0.0);
    span->lo[0] = 0;
    span->hi[0] = c + 1;
    span->lo[1] = 0x8000u;
    span->hi[1] = 0x8000u + c + 1;
    for (int k = 0; k < 2; k++)
        for (uint32_t h = span->lo[k]; h < span->hi[k]; h++)
            span->x[h] = dt == NC_F16 ? nc_f16_to_f32((uint16_t)h) : nc_bf16_to_f32((uint16_t)h);
    return 0;
}

void nc_codetab_span_free(nc_codetab_span *span)
{
    if (span) {
        free(span->x);
        span->x = NULL;
    }
}
