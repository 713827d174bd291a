/*
 * bins.c - choosing the bin map and computing bin edges (bins.h).
 */
#include "analysis/bins.h"

#include "core/vmath.h"

nc_binmap nc_binmap_make(double w, double xmax, size_t max_bins)
{
    if (!(w > 0) || !isfinite(w))
        w = 1.0;
    if (!(xmax >= 0) || !isfinite(xmax))
        xmax = w;
    if (max_bins < 4)
        max_bins = 4;
    nc_binmap bm = {.inv_w = 1.0 / w};
    double vmax = 1.0 + xmax * bm.inv_w;
    uint64_t span = nc_vm_double_to_bits(vmax) - nc_vm_double_to_bits(1.0);
    for (int m = 20; m >= 0; m--) {
        uint64_t half = (span >> (52 - m)) + 1;
        if (2 * half <= max_bins || m == 0) {
            bm.m = m;
            bm.half = (size_t)half;
            break;
        }
    }
    return bm;
}

void nc_bin_edges(const nc_binmap *bm, size_t b, double *lo, double *hi)
{
    size_t k = b >= bm->half ? b - bm->half : bm->half - 1 - b;
    uint64_t base = nc_vm_double_to_bits(1.0);
    double vlo = nc_vm_bits_to_double(base + ((uint64_t)k << (52 - bm->m)));
    double vhi = nc_vm_bits_to_double(base + ((uint64_t)(k + 1) << (52 - bm->m)));
    double w = 1.0 / bm->inv_w;
    *lo = (vlo - 1.0) * w;
    *hi = (vhi - 1.0) * w;
}
