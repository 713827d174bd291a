/*
 * sum.h - compensated (Neumaier) summation in double.
 *
 * Sums over all N * d points of a layer (moments, SSE and SST for R^2,
 * Jacobian error norms) use this (docs/internals.md, rule 5). The streaming passes
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

/* Lanes: a loop over a token's d values keeps NC_LANES independent partial
 * sums, lane j taking elements i = j mod NC_LANES:
 *
 *     double s[NC_LANES] = {0};
 *     size_t i = 0;
 *     for (; i + NC_LANES <= d; i += NC_LANES)
 *         for (int j = 0; j < NC_LANES; j++)
 *             s[j] += x[i + j];
 *     for (int j = 0; i < d; i++, j++)
 *         s[j] += x[i];
 *     double sum = nc_lanes_total(s);
 *
 * One running double sum is bound by the latency of an add and cannot be
 * vectorised (additions may not be reordered); eight fixed lanes can (the
 * inner loop becomes two or four vector adds), and the order of additions
 * stays fixed, so results are still deterministic. */
#define NC_LANES 8

static inline double nc_lanes_total(const double *s)
{
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

#endif
