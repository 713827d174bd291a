/*
 * axes.h - tick positions, tick labels and axis ranges.
 *
 * Linear axes get "nice" ticks: multiples of a step 1, 2 or 5 times a power
 * of ten, the smallest such step that gives at most target + 1 ticks
 * inside the range (Matplotlib's MaxNLocator with steps [1, 2, 5, 10]).
 * Log axes get ticks at decades, every 1, 2, 5, 10, ... decades, with
 * unlabelled minor ticks at 2..9 times each decade when every decade is
 * labelled, else at the unlabelled decades; a range of up to two decades
 * gets 1-2-5 (or 1-5) ticks inside the decades instead (0.2, 0.5, 1, 2, 5)
 * when that gives enough, and a range within one decade linear ticks.
 *
 * Labels are short and consistent along an axis: every label of a linear
 * axis has the same number of decimals, just enough for the step (-2, -1,
 * 0, 1, 2 or 0.2, 0.4, 0.6), and never "-0". When the labels would need
 * more than 5 digits (|v| >= 1e5, or a step below 1e-4) the whole axis
 * switches to short mantissa-exponent labels ("2e-5", "1.5e6"). Log axes
 * label decades 1e-4 .. 1e4 in plain decimals (0.001, 0.01, ..., 1000) and
 * others as "10^-5": '^' marks the rest of the label as an exponent, which
 * text.c draws raised and smaller. Labels use the ASCII '-'; the
 * renderer draws it as the minus sign U+2212.
 *
 * Range helpers: a symmetric range [-a, a] that treats negative and
 * positive values alike, and a "nice" range padded out to tick boundaries.
 */
#ifndef NC_AXES_H
#define NC_AXES_H

#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define NC_TICKS_MAX 24       /* major ticks an axis can carry */
#define NC_MINOR_TICKS_MAX 96 /* minor ticks (log axes) */
#define NC_TICK_LABEL_MAX 24  /* bytes per label, NUL included */

typedef struct nc_ticks {
    size_t n;                                   /* major ticks, ascending, inside the range */
    double v[NC_TICKS_MAX];                     /* their data values */
    char label[NC_TICKS_MAX][NC_TICK_LABEL_MAX]; /* their labels (see the top of this file) */
    size_t nminor;                              /* minor ticks (log axes only), unlabelled */
    double minor[NC_MINOR_TICKS_MAX];
    double step; /* linear: the tick spacing in data units; log: the spacing in decades (a
                    1-2-5 number) or, for 1-2-5 ticks inside decades, 0 */
    bool log;    /* computed by nc_ticks_log */
    char offset[NC_TICK_LABEL_MAX]; /* "" or the factor shared by every label of the axis,
                                       "\u00d710\u2076" (multiply the labels by it) */
} nc_ticks;

/* The smallest step 1, 2 or 5 times a power of ten that is >= raw (> 0,
 * finite). */
double nc_nice_step(double raw);

/* Ticks for the linear axis [lo, hi]: multiples of the smallest 1-2-5
 * step >= (hi - lo) / target, so at most target + 1 of them (target in
 * 1 .. NC_TICKS_MAX - 1), every tick inside the range (with a tolerance of
 * 1e-9 steps, so that an end that is a multiple of the step carries a
 * tick). Always at least two: when a narrow range falls between two
 * multiples, the step goes down the 1-2-5 ladder until two fit (then there
 * may be more than target + 1, at most 2.5 x as many). Labelled per the
 * rules above.
 * Returns 0, or NC_EINVAL when lo, hi are not finite with lo < hi, or target
 * is out of range. */
int nc_ticks_linear(double lo, double hi, int target, nc_ticks *t, nc_err *err);

/* Ticks for the log axis [lo, hi], 0 < lo < hi (finite), with at most about
 * target + 1 labelled ticks, as described above. When the range holds
 * fewer than two 1-2-5 values, falls back to linear ticks (t->log is still
 * true; labels as for a linear axis). Returns 0 or NC_EINVAL. */
int nc_ticks_log(double lo, double hi, int target, nc_ticks *t, nc_err *err);

/* Ticks for a symmetric-log axis [lo, hi] (figure.h: linear within
 * +-lin, a decade beyond spanning dec * lin): linear ticks within +-lin, as
 * many as its share of the axis allows, and the decades 10^k beyond
 * 1.5 lin (every second or third decade when there are many); labels
 * plain below 1e4, else "10^k". Returns 0 or NC_EINVAL. */
int nc_ticks_symlog(double lo, double hi, double lin, double dec, int target, nc_ticks *t,
                    nc_err *err);

/* Formats the tick value v of a linear axis with step `step` whose largest
 * |value| is maxabs, into buf[0..cap): the decimals of the step, or
 * mantissa-exponent labels when maxabs or the step call for them (see the
 * top of this file). Values within 1e-9 steps of zero print "0". This is
 * what nc_ticks_linear labels with; public for reports and tests. */
void nc_tick_format(double v, double step, double maxabs, char *buf, size_t cap);

/* The symmetric range [-a, a] with a = max(|lo|, |hi|), so that an S-curve
 * through the origin sits centred and negative and positive sides get the
 * same room. lo, hi in any order; a == 0 gives [-1, 1]. */
void nc_range_symmetric(double lo, double hi, double *out_lo, double *out_hi);

/* Pads the data range [lo, hi] out to the nearest enclosing tick
 * boundaries of the linear ticks nc_ticks_linear would choose for target
 * ticks (or, when log, of whole decades). A degenerate range (lo == hi) is
 * widened first: by 1 either side around 0, else by 10 % of |lo| (log: a
 * decade either side). Returns 0, or NC_EINVAL for non-finite bounds,
 * lo > hi, or (log) lo <= 0. */
int nc_range_nice(double lo, double hi, int target, bool log, double *out_lo, double *out_hi,
                  nc_err *err);

/* "\u00d710" followed by e in Unicode superscript digits ("x10^-5" as
 * one string that any font with those glyphs draws), into buf. */
void nc_superscript_power(int e, char *buf, size_t cap);

/* v with sig significant digits for a legend or title: "%g" within
 * 1e-3 <= |v| < 1e5 (and 0), else "1.9\u00d710\u00b3" (never "1.9e+03");
 * returns buf. */
const char *nc_fmt_num(char *buf, size_t cap, double v, int sig);

#endif
