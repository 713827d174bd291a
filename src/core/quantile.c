/*
 * quantile.c - sorting and NumPy's linear quantile (quantile.h).
 */
#include "core/quantile.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void nc_sort_doubles(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
}

double nc_quantile_sorted(const double *a, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo >= n - 1)
        return a[n - 1];
    double t = pos - (double)lo, lo_v = a[lo], hi_v = a[lo + 1];
    if (t == 0 || lo_v == hi_v)
        return lo_v;
    if (isinf(hi_v))
        return hi_v;
    double diff = hi_v - lo_v;
    return t >= 0.5 ? hi_v - diff * (1.0 - t) : lo_v + diff * t;
}
