/*
 * jacobian_dense.h - the dense check of the diagonal-Jacobian comparison
 * (jacobian.h; docs/jacobian.md "The checks"): for a sample of a layer's
 * tokens, every entry of the norm's Jacobian J computed from its formula
 * and J^T g summed explicitly over the d entries of each row, held against
 * the O(d) forms the streaming pass uses (jac_forms.h).
 *
 * What it proves. For each checked token and column g: the pass's J^T g
 * agrees with the explicit sum at every channel within a rounding bound
 * that holds whatever the summation order (dense_tol = gamma_{2d+12}, u =
 * 2^-53, relative to the size of the summed terms), and the closed forms
 * of ||J||_F^2 and of the off-diagonal energy agree with the explicit sums
 * of squares within (d + 16) u of d inv^2. A wrong formula (a missing
 * rank-one term, a wrong mean term) misses by ~1/sqrt(d) or more, on any
 * token and any random column, so one token with one column would catch
 * it; more tokens check the same formulas on more of the layer's values
 * (outliers, tiny and huge scales), more columns on more directions.
 *
 * Its size. By default the sample holds about as many matrix entries as
 * the layer has points (N d), at most NC_JAC_DENSE_ENTRIES: min(N d,
 * 2^24) / d^2 tokens, at least one, at most NC_JAC_DENSE_MAX_TOKENS and
 * the layer's usable tokens. So the check never costs more than a pass's
 * worth of entries (each used for every column: 2 + 2 columns flops),
 * except for the one token a layer with fewer tokens than channels still
 * gets (d^2 entries), and its cost is at most ~20 ms (one token at d =
 * 4096, 9 columns). Memory O(d x columns): no d x d matrix, no BLAS.
 *
 * Legend: d channels; t a token; i, j channels; y = (x - c_t) * inv_t; J
 * the exact Jacobian; G the d x ncols block of columns g.
 */
#ifndef NC_JACOBIAN_DENSE_H
#define NC_JACOBIAN_DENSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/layer.h"
#include "core/norm.h"
#include "core/tensor.h"
#include "util/err.h"

#define NC_JAC_PROBES 8 /* random probe columns per token (the default) */
/* The default sample: about min(N d, NC_JAC_DENSE_ENTRIES) matrix entries,
 * that is as many whole tokens (d^2 entries each), at least 1 and at most
 * NC_JAC_DENSE_MAX_TOKENS. */
#define NC_JAC_DENSE_ENTRIES ((size_t)1 << 24)
#define NC_JAC_DENSE_MAX_TOKENS 4096
/* Skip the dense check when one token's d^2 entries exceed this many
 * (the time of one token grows as d^2; d = 65536 would be 2^32). */
#define NC_JAC_DENSE_MAX_ENTRIES ((size_t)1 << 30)
#define NC_JAC_DENSE_ALL SIZE_MAX /* a sample size: every usable token */

/* The outcome of a dense check. */
typedef struct nc_jac_dense {
    bool ran;                 /* it ran (status says why not) */
    size_t tokens;            /* tokens checked */
    size_t columns;           /* columns of G per token (probes [+ 1 real]) */
    double max_rel_diff;      /* dense J^T G against the pass's, relative to the size
                               * of the summed terms s_i (NaN: not run) */
    double frob_max_rel_diff; /* dense ||J||_F^2 against the closed form,
                               * relative to d inv^2 */
    double off_max_rel_diff;  /* dense off-diagonal energy against off_t,
                               * relative to d inv^2 */
    double tol;               /* the rounding bound of max_rel_diff */
    double frob_tol;          /* ... of the two Frobenius differences */
    char status[128];         /* "ok", "MISMATCH: ..." or why it did not run */
    double flops;             /* d^2 (2 + 2 columns) per token */
} nc_jac_dense;

/* The default sample size for a layer of width d with `used` usable tokens
 * (see above; 0 when d or used is 0). */
size_t nc_jac_dense_default_tokens(size_t d, size_t used);

/* The default number of probe columns: NC_JAC_PROBES, and fewer when the
 * layer has fewer tokens than channels (its one token's d^2 entries exceed
 * its N d points by d / N; the columns shrink as much, to NC_JAC_PROBES N /
 * d, at least one): a short, wide layer's check costs ~2 + 2 flops per
 * entry instead of 2 + 2 x 8. */
size_t nc_jac_dense_default_probes(size_t d, size_t used);

/* The check on m of the layer's used tokens (used of them in res->tok;
 * 1 <= m <= used), spread evenly over them, with P probe columns per token
 * from the streams of pseed (row = the token's row in x) and, when grad is
 * given, the real gradient (times weight, if not NULL). Fills out. Memory
 * O(d (P + 6)). Errors: NC_ENOMEM. */
int nc_jac_dense_check(const nc_layer_result *res, const nc_tensor *x, const nc_tensor *grad,
                       const double *weight, size_t m, size_t used, uint64_t pseed, size_t P,
                       nc_jac_dense *out, nc_err *err);

/* J[i*d + j] = J_ij, the dense d x d Jacobian, row-major. (J is symmetric
 * in exact arithmetic; the two halves may differ in the last bit.) */
void nc_jac_token_dense(nc_norm_kind norm, const double *y, double inv, size_t d, double *J);

/* JG[k d + i] = sum_j J_ij G[k d + j] for the ncols columns of G [d x ncols,
 * column k at G + k d], every entry J_ij computed from its formula (as
 * nc_jac_token_dense) row by row and summed explicitly in double (O(d^2)
 * per column, never the whole matrix); f2[0] = sum_ij J_ij^2, f2[1] =
 * sum_{i != j} J_ij^2. row: d doubles of scratch. The dense check's
 * product. */
void nc_jac_token_dense_apply(nc_norm_kind norm, const double *y, double inv, size_t d,
                              const double *G, size_t ncols, double *JG, double *row,
                              double f2[2]);

#endif
