/*
 * check.h - the assertion macros every unit test uses.
 *
 * Each check prints file:line, what was expected, what came and the
 * tolerance when it fails, counts the failure and goes on, so that one run
 * shows every broken behaviour. A test binary ends with CHECK_DONE(), which
 * prints "<binary>: N passed, N failed" and returns the exit status.
 *
 *   CHECK(cond)                 a condition
 *   CHECK_INT(want, got)        integers, exactly
 *   CHECK_STR(want, got)        strings, exactly
 *   CHECK_ABS(want, got, tol)   |got - want| <= tol
 *   CHECK_REL(want, got, tol)   |got - want| <= tol * max(|want|, tiny)
 *   CHECK_CONTAINS(hay, needle) strstr(hay, needle) != NULL
 *
 * NaN never passes a numeric check, whatever the tolerance.
 */
#ifndef NC_CHECK_H
#define NC_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed_, check_failed_;

#define CHECK_FAIL_(...)                                                                  \
    do {                                                                                  \
        check_failed_++;                                                                  \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                   \
        fprintf(stderr, __VA_ARGS__);                                                     \
        fputc('\n', stderr);                                                              \
    } while (0)

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (cond)                                                                         \
            check_passed_++;                                                              \
        else                                                                              \
            CHECK_FAIL_("check failed: %s", #cond);                                       \
    } while (0)

#define CHECK_INT(want, got)                                                              \
    do {                                                                                  \
        long long w_ = (long long)(want), g_ = (long long)(got);                          \
        if (w_ == g_)                                                                     \
            check_passed_++;                                                              \
        else                                                                              \
            CHECK_FAIL_("%s: expected %lld, got %lld", #got, w_, g_);                     \
    } while (0)

#define CHECK_STR(want, got)                                                              \
    do {                                                                                  \
        const char *w_ = (want), *g_ = (got);                                             \
        if (g_ && strcmp(w_, g_) == 0)                                                    \
            check_passed_++;                                                              \
        else                                                                              \
            CHECK_FAIL_("%s: expected \"%s\", got \"%s\"", #got, w_, g_ ? g_ : "(null)"); \
    } while (0)

#define CHECK_CONTAINS(hay, needle)                                                       \
    do {                                                                                  \
        const char *h_ = (hay), *n_ = (needle);                                           \
        if (h_ && strstr(h_, n_))                                                         \
            check_passed_++;                                                              \
        else                                                                              \
            CHECK_FAIL_("%s: expected to contain \"%s\", got \"%s\"", #hay, n_,           \
                        h_ ? h_ : "(null)");                                              \
    } while (0)

#define CHECK_ABS(want, got, tol)                                                         \
    do {                                                                                  \
        double w_ = (double)(want), g_ = (double)(got), t_ = (double)(tol);               \
        if (fabs(g_ - w_) <= t_)                                                          \
            check_passed_++;                                                              \
        else                                                                              \
            CHECK_FAIL_("%s: expected %.17g, got %.17g (abs tol %.3g, off by %.3g)", #got, \
                        w_, g_, t_, fabs(g_ - w_));                                       \
    } while (0)

#define CHECK_REL(want, got, tol)                                                         \
    do {                                                                                  \
        double w_ = (double)(want), g_ = (double)(got), t_ = (double)(tol);               \
        double s_ = fabs(w_) > 1e-300 ? fabs(w_) : 1e-300;                                \
        if (fabs(g_ - w_) <= t_ * s_)                                                     \
            check_passed_++;                                                              \
        else                                                                              \
            CHECK_FAIL_("%s: expected %.17g, got %.17g (rel tol %.3g, off by %.3g)", #got, \
                        w_, g_, t_, fabs(g_ - w_) / s_);                                  \
    } while (0)

#define CHECK_DONE()                                                                      \
    (printf("%s: %d passed, %d failed\n", __FILE__, check_passed_, check_failed_),        \
     check_failed_ ? 1 : 0)

#endif
