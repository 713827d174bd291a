/*
 * clock.h - wall-clock time for the timings in reports and progress lines.
 *
 * One home for the timer every stage uses (layer statistics, bins, fits,
 * the Jacobian check, sweeps, the progress line), so no file borrows
 * another's.
 */
#ifndef NC_CLOCK_H
#define NC_CLOCK_H

#include <time.h>

/* Seconds on the monotonic clock (an arbitrary origin: use differences). */
static inline double nc_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
