/*
 * quantile.h - sorting doubles and NumPy's default quantile of sorted
 * values, for the statistics that are compared with NumPy (the Jacobian's
 * per-token summaries, the outlier-steps spread).
 */
#ifndef NC_QUANTILE_H
#define NC_QUANTILE_H

#include <stddef.h>

/* Sorts v[0..n) ascending (values compare with < and >: +-inf sort to the
 * ends; the caller keeps NaNs out). */
void nc_sort_doubles(double *v, size_t n);

/* np.quantile(a, q) of sorted a[0..n) (n >= 1, 0 <= q <= 1) with NumPy's
 * default "linear" method: position q (n - 1), interpolated between its two
 * neighbours as numpy's _lerp does (from the upper one when the fraction
 * is 1/2 or more, so the two agree to the bit); an infinite upper
 * neighbour gives +inf unless the position falls on the lower one. */
double nc_quantile_sorted(const double *a, size_t n, double q);

#endif
