/*
 * density.c - allocation, merging and totals of density rasters
 * (density.h). The per-point code is inline in the header.
 */
#include "plot/density.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/bigmem.h"

#define NC_DENSITY_MAX_SIDE 65536

int nc_density_alloc(int w, int h, double x0, double x1, double y0, double y1, bool coloured,
                     nc_density **out, nc_err *err)
{
    *out = NULL;
    if (w < 1 || h < 1 || w > NC_DENSITY_MAX_SIDE || h > NC_DENSITY_MAX_SIDE)
        return nc_err_set(err, NC_EINVAL, "density raster %d x %d, expected 1 to %d pixels a side",
                          w, h, NC_DENSITY_MAX_SIDE);
    if (!(isfinite(x0) && isfinite(x1) && x0 < x1 && isfinite(y0) && isfinite(y1) && y0 < y1))
        return nc_err_set(err, NC_EINVAL,
                          "density range x [%g, %g], y [%g, %g]: expected finite, increasing "
                          "bounds",
                          x0, x1, y0, y1);
    /* 2^-40 short, so that the closed right and bottom edges fall inside
     * (density.h, nc_density_pixel) */
    double shrink = 1.0 - 0x1p-40;
    double sx = w / (x1 - x0) * shrink, sy = h / (y1 - y0) * shrink;
    if (!isfinite(sx) || !isfinite(sy))
        return nc_err_set(err, NC_EINVAL, "density range x [%g, %g], y [%g, %g] is too narrow",
                          x0, x1, y0, y1);

    size_t npix = (size_t)w * (size_t)h;
    nc_density *d = calloc(1, sizeof *d);
    if (!d)
        return nc_err_set(err, NC_ENOMEM, "density raster: out of memory");
    d->w = w;
    d->h = h;
    d->x0 = x0;
    d->x1 = x1;
    d->y0 = y0;
    d->y1 = y1;
    d->sx = sx;
    d->sy = sy;
    /* malloc and memset, not calloc: a counter's first access is a read
     * (+=), which would map the shared zero page, and the write after it a
     * copy-on-write fault that flushes the TLB of every thread of the
     * process; written first, each page faults once, without a flush */
    d->count = nc_big_alloc(npix * sizeof *d->count);
    d->rgb = coloured ? nc_big_alloc(3 * npix * sizeof *d->rgb) : NULL;
    if (!d->count || (coloured && !d->rgb)) {
        nc_density_free(d);
        return nc_err_set(err, NC_ENOMEM, "density raster %d x %d: out of memory", w, h);
    }
    nc_density_clear(d);
    *out = d;
    return 0;
}

void nc_density_clear(nc_density *d)
{
    size_t npix = (size_t)d->w * (size_t)d->h;
    memset(d->count, 0, npix * sizeof *d->count);
    if (d->rgb)
        memset(d->rgb, 0, 3 * npix * sizeof *d->rgb);
    d->outside = 0;
}

void nc_density_merge(nc_density *into, const nc_density *from)
{
    assert(into->w == from->w && into->h == from->h);
    assert(into->x0 == from->x0 && into->x1 == from->x1);
    assert(into->y0 == from->y0 && into->y1 == from->y1);
    assert(into->rgb || !from->rgb);
    size_t npix = (size_t)into->w * (size_t)into->h;
    for (size_t p = 0; p < npix; p++) {
        /* saturating add: a + b, or UINT32_MAX when that wraps */
        uint32_t s = into->count[p] + from->count[p];
        into->count[p] = s < into->count[p] ? UINT32_MAX : s;
    }
    if (from->rgb)
        for (size_t k = 0; k < 3 * npix; k++)
            into->rgb[k] += from->rgb[k];
    into->outside += from->outside;
}

uint64_t nc_density_total(const nc_density *d, uint32_t *max_count)
{
    size_t npix = (size_t)d->w * (size_t)d->h;
    uint64_t total = 0;
    uint32_t mx = 0;
    for (size_t p = 0; p < npix; p++) {
        total += d->count[p];
        mx = d->count[p] > mx ? d->count[p] : mx;
    }
    if (max_count)
        *max_count = mx;
    return total;
}

void nc_density_free(nc_density *d)
{
    if (!d)
        return;
    size_t npix = (size_t)d->w * (size_t)d->h;
    nc_big_free(d->count, npix * sizeof *d->count);
    nc_big_free(d->rgb, 3 * npix * sizeof *d->rgb);
    free(d);
}
