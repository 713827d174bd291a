/*
 * axes.c - nice ticks, tick labels and range helpers (axes.h).
 *
 * Tick values are computed as k * step (linear) or m * 10^k (log) from
 * integers k and m, never by repeated addition, so that they carry no
 * accumulated rounding; the labels then print them with the decimals the
 * step needs. All tolerances below are relative to the step (1e-9 steps):
 * wide enough for the rounding of a division, far below anything visible.
 */
#include "plot/axes.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TOL 1e-9            /* in steps: how far outside the range a tick may sit */
#define PLAIN_MAX 1e5       /* |values| from here on get mantissa-exponent labels */
#define PLAIN_MIN_STEP 1e-4 /* ... and so do steps below this */
#define LOG_PLAIN_LO (-3)   /* log axes: when every tick is within 1e-3 .. 1e3, plain */
#define LOG_PLAIN_HI 3      /* decimals; else every decade as 10^k */
#define K_MAX 1e15 /* |k| beyond this: the step is too fine for doubles (2^53 ~ 9e15) */

double nc_nice_step(double raw)
{
    double e = floor(log10(raw));
    double p = pow(10.0, e);
    /* raw / p is in [1, 10) up to the rounding of log10 and pow */
    static const double m[] = {1.0, 2.0, 5.0, 10.0, 20.0};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (m[i] * p >= raw * (1.0 - 1e-12))
            return m[i] * p;
    return 20.0 * p;
}

/* The 1-2-5 step below step (5 -> 2 -> 1 -> 0.5). */
static double prev_step(double step)
{
    double m = step / pow(10.0, floor(log10(step) + 1e-9));
    return step / (fabs(m - 5.0) < 1e-6 ? 2.5 : 2.0);
}

/* The power of ten of a 1-2-5 step: step = m * 10^e with m in {1, 2, 5}. */
static int step_exponent(double step)
{
    return (int)floor(log10(step) + 1e-9);
}

static bool use_exponent_labels(double maxabs, double step)
{
    return maxabs >= PLAIN_MAX || step < PLAIN_MIN_STEP;
}

/* "%.*e" without padding: mantissa with its trailing zeros cut, "e", the
 * exponent without '+' or leading zeros ("1.5e6", "2e-5"). */
static void format_exponent(double v, int decimals, char *buf, size_t cap)
{
    int e = (int)floor(log10(fabs(v)) + 1e-9);
    double m = v / pow(10.0, e);
    char mant[32];
    snprintf(mant, sizeof mant, "%.*f", decimals, m);
    if (strchr(mant, '.')) {
        size_t n = strlen(mant);
        while (mant[n - 1] == '0')
            mant[--n] = '\0';
        if (mant[n - 1] == '.')
            mant[--n] = '\0';
    }
    snprintf(buf, cap, "%se%d", mant, e);
}

void nc_tick_format(double v, double step, double maxabs, char *buf, size_t cap)
{
    int e = step_exponent(step);
    if (fabs(v) < TOL * step) {
        /* plain +0 with the axis' decimals ("0", "0.0"): never "-0" */
        if (use_exponent_labels(maxabs, step))
            snprintf(buf, cap, "0");
        else
            snprintf(buf, cap, "%.*f", e < 0 ? -e : 0, 0.0);
        return;
    }
    if (use_exponent_labels(fmax(maxabs, fabs(v)), step)) {
        /* enough mantissa digits to tell ticks one step apart */
        int ev = (int)floor(log10(fabs(v)) + 1e-9);
        int dec = ev - e;
        format_exponent(v, dec < 0 ? 0 : dec > 6 ? 6 : dec, buf, cap);
        return;
    }
    snprintf(buf, cap, "%.*f", e < 0 ? -e : 0, v);
}

/* The number of multiples of step inside [lo, hi] (with tolerance), and the
 * first one's multiplier. */
static int64_t count_multiples(double lo, double hi, double step, int64_t *k0)
{
    double a = ceil(lo / step - TOL), b = floor(hi / step + TOL);
    *k0 = (int64_t)a;
    return b >= a ? (int64_t)(b - a) + 1 : 0;
}

static int check_range(double lo, double hi, int target, const char *what, nc_err *err)
{
    if (!(isfinite(lo) && isfinite(hi) && lo < hi))
        return nc_err_set(err, NC_EINVAL, "%s axis range [%g, %g]: expected finite lo < hi", what,
                          lo, hi);
    if (target < 1 || target > NC_TICKS_MAX - 1)
        return nc_err_set(err, NC_EINVAL, "%s axis: %d ticks asked for, expected 1 to %d", what,
                          target, NC_TICKS_MAX - 1);
    return 0;
}

int nc_ticks_linear(double lo, double hi, int target, nc_ticks *t, nc_err *err)
{
    memset(t, 0, sizeof *t);
    int rc = check_range(lo, hi, target, "linear", err);
    if (rc)
        return rc;
    double step = nc_nice_step((hi - lo) / target);
    if (!(step > 0.0) || !isfinite(step) || fmax(fabs(lo), fabs(hi)) / step > K_MAX)
        return nc_err_set(err, NC_EINVAL,
                          "linear axis range [%.17g, %.17g] is too narrow for its magnitude", lo,
                          hi);
    int64_t k0, n;
    /* the rounding of the division can let one tick too many in: step up */
    while ((n = count_multiples(lo, hi, step, &k0)) > target + 1)
        step = nc_nice_step(step * 1.5);
    /* a narrow range between two multiples may hold fewer than two: step
     * down (1-2-5) until two fit; a step below span / 2 always does */
    while (n < 2) {
        step = prev_step(step);
        n = count_multiples(lo, hi, step, &k0);
    }
    t->step = step;
    t->n = (size_t)n;
    double maxabs = 0.0;
    for (int64_t i = 0; i < n; i++) {
        t->v[i] = (double)(k0 + i) * step;
        maxabs = fmax(maxabs, fabs(t->v[i]));
    }
    t->offset[0] = '\0';
    double f = 1.0;
    if (use_exponent_labels(maxabs, step) && maxabs > 0) {
        /* Matplotlib's shared factor: plain mantissas, "x10^E" once */
        int E = (int)floor(log10(maxabs) + 1e-9);
        f = pow(10.0, E);
        nc_superscript_power(E, t->offset, sizeof t->offset);
    }
    for (size_t i = 0; i < t->n; i++)
        nc_tick_format(t->v[i] / f, step / f, maxabs / f, t->label[i], NC_TICK_LABEL_MAX);
    return 0;
}

/* A symmetric-log tick label: plain below 1e4, else "10^k" or "m\u00d710^k". */
static void symlog_label(double v, double step, char *buf, size_t cap)
{
    double a = fabs(v);
    if (a < 1e4) {
        nc_tick_format(v, step, a, buf, cap);
        return;
    }
    int e = (int)floor(log10(a) + 1e-9);
    int m = (int)lround(a / pow(10.0, e));
    if (m == 1)
        snprintf(buf, cap, "%s10^%d", v < 0 ? "-" : "", e);
    else
        snprintf(buf, cap, "%s%d\xc3\x97" "10^%d", v < 0 ? "-" : "", m, e);
}

/* The ticks of one tail of a symmetric-log axis, from lin out to a > lin
 * (sign -1 or +1), at most nt of them (at least one): 1, 2 and 5 times the
 * decades when they fit, else the decades, else every second, third, ...
 * decade, counted down from the largest; none within 1.3 lin (the linear
 * part's last tick). Appended to v[*n]. */
static void tail_ticks(double lin, double a, int sign, int nt, double *v, size_t *n)
{
    static const int mant[3] = {1, 2, 5};
    int k0 = (int)floor(log10(lin) + 1e-9), k1 = (int)floor(log10(a) + 1e-9);
    double c[3 * 40];
    int nc = 0, nd = 0;
    for (int k = k0; k <= k1 && nc + 3 <= (int)(sizeof c / sizeof c[0]); k++)
        for (int q = 0; q < 3; q++) {
            double x = mant[q] * pow(10.0, k);
            if (x > 1.3 * lin && x <= a * (1 + 1e-9)) {
                c[nc++] = x;
                nd += q == 0;
            }
        }
    nt = nt < 1 ? 1 : nt;
    int every = 1;
    while (nd > 0 && (nd + every - 1) / every > nt)
        every++;
    int seen = 0;
    for (int i = nc - 1; i >= 0 && *n < NC_TICKS_MAX; i--) { /* from the end inwards */
        bool decade = fabs(c[i] - pow(10.0, floor(log10(c[i]) + 1e-9))) < 1e-9 * c[i];
        bool take = nc <= nt ? true : nd > 0 ? decade && seen++ % every == 0 : i == nc - 1;
        if (take)
            v[(*n)++] = sign * c[i];
    }
}

int nc_ticks_symlog(double lo, double hi, double lin, double dec, int target, nc_ticks *t,
                    nc_err *err)
{
    memset(t, 0, sizeof *t);
    int rc = check_range(lo, hi, target, "symmetric log", err);
    if (rc)
        return rc;
    if (!(lin > 0 && isfinite(lin) && dec > 0 && isfinite(dec)))
        return nc_err_set(err, NC_EINVAL, "symmetric log axis: linear range %g, decade %g, "
                          "expected > 0", lin, dec);
    /* each part gets ticks by its share of the axis */
    double u_lo = lo >= -lin ? lo : -lin * (1 + dec * log10(-lo / lin));
    double u_hi = hi <= lin ? hi : lin * (1 + dec * log10(hi / lin));
    double span = u_hi - u_lo, span_lin = fmin(hi, lin) - fmax(lo, -lin), step = 0;
    if (span_lin > 0) {
        int tl = (int)floor(target * span_lin / span);
        step = nc_nice_step(span_lin / (tl > 2 ? tl : 2));
        int64_t k0, n = count_multiples(fmax(lo, -lin), fmin(hi, lin), step, &k0);
        for (int64_t i = 0; i < n && t->n < NC_TICKS_MAX; i++)
            t->v[t->n++] = (double)(k0 + i) * step;
    }
    if (lo < -lin)
        tail_ticks(lin, -lo, -1, (int)floor(target * (-lin - u_lo) / span), t->v, &t->n);
    if (hi > lin)
        tail_ticks(lin, hi, 1, (int)floor(target * (u_hi - lin) / span), t->v, &t->n);
    for (size_t i = 1; i < t->n; i++) /* ascending */
        for (size_t j = i; j > 0 && t->v[j - 1] > t->v[j]; j--) {
            double x = t->v[j];
            t->v[j] = t->v[j - 1];
            t->v[j - 1] = x;
        }
    for (size_t i = 0; i < t->n; i++)
        symlog_label(t->v[i], step > 0 ? step : 1, t->label[i], NC_TICK_LABEL_MAX);
    t->step = step;
    return 0;
}

void nc_superscript_power(int e, char *buf, size_t cap)
{
    static const char *const sup[10] = {"\xe2\x81\xb0", "\xc2\xb9", "\xc2\xb2", "\xc2\xb3",
                                        "\xe2\x81\xb4", "\xe2\x81\xb5", "\xe2\x81\xb6",
                                        "\xe2\x81\xb7", "\xe2\x81\xb8", "\xe2\x81\xb9"};
    char digits[16];
    snprintf(digits, sizeof digits, "%d", e < 0 ? -e : e);
    size_t o = (size_t)snprintf(buf, cap, "\xc3\x97" "10%s", e < 0 ? "\xe2\x81\xbb" : "");
    for (const char *d = digits; *d && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s", sup[*d - '0']);
}

const char *nc_fmt_num(char *buf, size_t cap, double v, int sig)
{
    double a = fabs(v);
    if (!isfinite(v) || a == 0 || (a >= 1e-3 && a < 1e5)) {
        snprintf(buf, cap, "%.*g", sig, v);
        if (!strchr(buf, 'e'))
            return buf;
        int dec = sig - 1 - (int)floor(log10(a));
        snprintf(buf, cap, "%.*f", dec > 0 ? dec : 0, v); /* 1900, not 1.9e+03 */
        return buf;
    }
    int e = (int)floor(log10(a) + 1e-9);
    double m = v / pow(10.0, e);
    if (fabs(m) >= 9.9999999) { /* rounding of log10 */
        e++;
        m /= 10;
    }
    char pw[32];
    nc_superscript_power(e, pw, sizeof pw);
    snprintf(buf, cap, "%.*g%s", sig > 1 ? sig - 1 : 1, m, pw);
    /* "1x10^5" reads better as "10^5" */
    if (strncmp(buf, "1\xc3\x97", 3) == 0)
        memmove(buf, buf + 3, strlen(buf + 3) + 1);
    else if (strncmp(buf, "-1\xc3\x97", 4) == 0)
        memmove(buf + 1, buf + 4, strlen(buf + 4) + 1);
    return buf;
}

/* Label of m * 10^k (m in 1..9): plain decimals, or "10^k" for decades
 * and "2e-5" for the others. */
static void format_log(int m, int k, bool plain, char *buf, size_t cap)
{
    if (plain)
        snprintf(buf, cap, "%.*f", k < 0 ? -k : 0, m * pow(10.0, k));
    else if (m == 1)
        snprintf(buf, cap, "10^%d", k);
    else
        snprintf(buf, cap, "%d\xc3\x97" "10^%d", m, k);
}

/* How many of the mantissas mset[0..nm) times a power of ten lie in
 * [lo, hi]; with t, also appends them as ticks and the other integers
 * m * 10^k (m = 2..9) as minor ticks. */
static size_t log_mantissa_ticks(double lo, double hi, const int *mset, size_t nm, nc_ticks *t)
{
    int kfirst = (int)floor(log10(lo)) - 1, klast = (int)ceil(log10(hi));
    bool plain = kfirst + 1 >= LOG_PLAIN_LO && klast <= LOG_PLAIN_HI;
    size_t n = 0;
    for (int k = kfirst; k <= klast; k++)
        for (int m = 1; m <= 9; m++) {
            double v = m * pow(10.0, k);
            if (!(v >= lo * (1 - TOL) && v <= hi * (1 + TOL)))
                continue;
            bool major = false;
            for (size_t i = 0; i < nm; i++)
                major |= m == mset[i];
            if (major && t && t->n < NC_TICKS_MAX) {
                t->v[t->n] = v;
                format_log(m, k, plain, t->label[t->n], NC_TICK_LABEL_MAX);
                t->n++;
            } else if (!major && t && t->nminor < NC_MINOR_TICKS_MAX) {
                t->minor[t->nminor++] = v;
            }
            n += major;
        }
    return n;
}

int nc_ticks_log(double lo, double hi, int target, nc_ticks *t, nc_err *err)
{
    memset(t, 0, sizeof *t);
    int rc = check_range(lo, hi, target, "log", err);
    if (rc)
        return rc;
    if (!(lo > 0.0))
        return nc_err_set(err, NC_EINVAL, "log axis range [%g, %g]: expected lo > 0", lo, hi);
    double llo = log10(lo), lhi = log10(hi);
    int klo = (int)ceil(llo - TOL), khi = (int)floor(lhi + TOL);
    int ndec = khi - klo + 1; /* decades inside the range */
    t->log = true;

    /* Up to two decades inside: ticks at 1-2-5 (or 1-5) times the powers
     * of ten, if that gives between 2 and target + 1 of them. */
    static const int m125[] = {1, 2, 5}, m15[] = {1, 5};
    if (ndec <= 2) {
        size_t n125 = log_mantissa_ticks(lo, hi, m125, 3, NULL);
        size_t n15 = log_mantissa_ticks(lo, hi, m15, 2, NULL);
        if (n125 >= 2 && n125 <= (size_t)target + 1) {
            log_mantissa_ticks(lo, hi, m125, 3, t);
            return 0;
        }
        if (n15 >= 2 && n15 <= (size_t)target + 1) {
            log_mantissa_ticks(lo, hi, m15, 2, t);
            return 0;
        }
    }
    if (ndec < 2) {
        /* a range within one decade, like [3, 4.5]: linear ticks */
        rc = nc_ticks_linear(lo, hi, target, t, err);
        t->log = true;
        return rc;
    }

    /* Every s-th decade, s the smallest 1-2-5 number giving at most
     * target + 1 ticks; with s = 1, minor ticks at 2..9 times each decade. */
    int s = 1;
    for (;;) {
        int first = (int)ceil((double)klo / s), last = (int)floor((double)khi / s);
        if (last - first + 1 <= target + 1)
            break;
        s = (int)nc_nice_step(s * 1.5);
    }
    t->step = s;
    bool plain = klo >= LOG_PLAIN_LO && khi <= LOG_PLAIN_HI;
    for (int k = klo; k <= khi; k++) {
        if (k % s != 0)
            continue;
        t->v[t->n] = pow(10.0, k);
        format_log(1, k, plain, t->label[t->n], NC_TICK_LABEL_MAX);
        t->n++;
    }
    if (s == 1 && (lhi - llo + 2) * 8 <= NC_MINOR_TICKS_MAX) {
        for (int k = klo - 1; k <= khi; k++)
            for (int m = 2; m <= 9; m++) {
                double v = m * pow(10.0, k);
                if (v >= lo * (1 - TOL) && v <= hi * (1 + TOL))
                    t->minor[t->nminor++] = v;
            }
    } else if (s > 1) {
        /* the decades between labelled ones */
        for (int k = klo; k <= khi && t->nminor < NC_MINOR_TICKS_MAX; k++)
            if (k % s != 0)
                t->minor[t->nminor++] = pow(10.0, k);
    }
    return 0;
}

void nc_range_symmetric(double lo, double hi, double *out_lo, double *out_hi)
{
    double a = fmax(fabs(lo), fabs(hi));
    if (!(a > 0.0))
        a = 1.0;
    *out_lo = -a;
    *out_hi = a;
}

int nc_range_nice(double lo, double hi, int target, bool log, double *out_lo, double *out_hi,
                  nc_err *err)
{
    if (!(isfinite(lo) && isfinite(hi) && lo <= hi))
        return nc_err_set(err, NC_EINVAL, "data range [%g, %g]: expected finite lo <= hi", lo, hi);
    if (target < 1 || target > NC_TICKS_MAX - 1)
        return nc_err_set(err, NC_EINVAL, "%d ticks asked for, expected 1 to %d", target,
                          NC_TICKS_MAX - 1);
    if (log) {
        if (!(lo > 0.0))
            return nc_err_set(err, NC_EINVAL, "log data range [%g, %g]: expected lo > 0", lo, hi);
        double a = floor(log10(lo) + TOL), b = ceil(log10(hi) - TOL);
        if (b <= a) {
            a -= 1.0;
            b += 1.0;
        }
        *out_lo = pow(10.0, a);
        *out_hi = pow(10.0, b);
        return 0;
    }
    if (lo == hi) {
        double pad = lo == 0.0 ? 1.0 : 0.1 * fabs(lo);
        lo -= pad;
        hi += pad;
    }
    double step = nc_nice_step((hi - lo) / target);
    if (fmax(fabs(lo), fabs(hi)) / step > K_MAX)
        return nc_err_set(err, NC_EINVAL,
                          "data range [%.17g, %.17g] is too narrow for its magnitude", lo, hi);
    *out_lo = floor(lo / step + TOL) * step;
    *out_hi = ceil(hi / step - TOL) * step;
    return 0;
}
