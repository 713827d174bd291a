/*
 * sum.h - compensated (Neumaier) summation in double.
 *
 * Sums over all N * d points of a layer (moments, SSE and SST for R^2,
 * Jacobian error norms) use this (STYLE.md section 6). The streaming passes
 * add one token's d terms in a plain double (a vectorised loop, relative
 * error ~ d * 2^-53 at worst) and feed that partial to a compensated sum, so
 * that 16M terms lose no more than that. Partial sums are merged in a fixed
 * order, so results do not depend on the thread count.
 */
#ifndef NC_SUM_H
#define NC_SUM_H

#include <math.h>

typedef struct nc_sum {
    double s; /* running sum */
    double c; /* running compensation: the low-order bits s lost */
} nc_sum;

static inline void nc_sum_add(nc_sum *a, double v)
{
    double t = a->s + v;
    if (fabs(a->s) >= fabs(v))
        a->c += (a->s - t) + v;
    else
        a->c += (v - t) + a->s;
    a->s = t;
}

/* a += b (both compensated). */
static inline void nc_sum_merge(nc_sum *a, const nc_sum *b)
{
    nc_sum_add(a, b->s);
    a->c += b->c;
}

static inline double nc_sum_get(const nc_sum *a)
{
    return a->s + a->c;
}

#endif
