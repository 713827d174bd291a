/*
 * jacobian_stats.c - the summaries of the diagonal-Jacobian comparison
 * (jacobian.h, docs/jacobian.md): a backprop error over tokens with its
 * standard errors, the rankings of the surrogates, and the Gaussian
 * reference values.
 *
 * Legend: t a token (an index into the per-token arrays), n the tokens
 * summarised; num_t a squared error ||(D - J) g||^2 (or its expectation
 * over probes), den_t ||J g||^2 (idem); r_t = sqrt(num_t / den_t); err =
 * sqrt(sum num / sum den). Sums are compensated (nc_sum) and serial, so
 * nothing depends on the thread count.
 *
 * Left out: the per-token numbers themselves (jacobian.c).
 */
#include "analysis/jacobian.h"

#include <math.h>
#include <stdlib.h>

#include "core/quantile.h"
#include "core/sum.h"

/* r = sqrt(e2 / v2) with the conventions of jacobian.h: +inf for a nonzero
 * error over a zero denominator, 0 for 0/0; never NaN from a zero
 * denominator. */
static double rel_err(double e2, double v2)
{
    if (v2 > 0)
        return sqrt(e2 / v2);
    return e2 > 0 ? INFINITY : (e2 == 0 ? 0.0 : e2);
}

/* Phi(z), the standard normal distribution function */
static double phi_cdf(double z)
{
    return 0.5 * erfc(-z / M_SQRT2);
}

double nc_jac_median_se(const double *sorted, size_t n)
{
    if (n < 2)
        return NAN;
    /* Maritz-Jarrett: the sample median is the order statistic whose
     * uniform U ~ Beta, here N(1/2, 1/(4n)); W_i = P((i-1)/n < U <= i/n),
     * se^2 = sum W_i x_(i)^2 - (sum W_i x_(i))^2, moments taken about the
     * median (exact cancellation); ranks beyond 9 sd of U weigh < 1e-18 */
    const double sn = 2.0 * sqrt((double)n), med = nc_quantile_sorted(sorted, n, 0.5);
    const double reach = 9.0 * 0.5 * sqrt((double)n) + 2.0;
    size_t i0 = (double)n / 2.0 > reach ? (size_t)((double)n / 2.0 - reach) : 0;
    size_t i1 = (double)n / 2.0 + reach < (double)n ? (size_t)((double)n / 2.0 + reach) : n;
    double c1 = 0, c2 = 0, prev = phi_cdf(((double)i0 / (double)n - 0.5) * sn);
    for (size_t i = i0 + 1; i <= i1; i++) {
        double cur = phi_cdf(((double)i / (double)n - 0.5) * sn), w = cur - prev, v = sorted[i - 1] - med;
        prev = cur;
        c1 += w * v;
        c2 += w * v * v;
    }
    double var = c2 - c1 * c1;
    return var > 0 ? sqrt(var) : 0.0;
}

#define TOK(idx, k) ((idx) ? (idx)[k] : (k))

double nc_jac_ratio_se(const double *num, const double *num2, const double *den, const size_t *idx,
                       size_t n)
{
    if (n < 2)
        return 0.0;
    nc_sum A = {0, 0}, A2 = {0, 0}, B = {0, 0};
    for (size_t k = 0; k < n; k++) {
        size_t t = TOK(idx, k);
        nc_sum_add(&A, num[t]);
        nc_sum_add(&B, den[t]);
        if (num2)
            nc_sum_add(&A2, num2[t]);
    }
    const double b = nc_sum_get(&B), R = nc_sum_get(&A) / b, R2 = nc_sum_get(&A2) / b;
    const double e = sqrt(R), e2 = sqrt(R2);
    if (!(b > 0) || !isfinite(R) || !isfinite(R2))
        return NAN;
    /* phi_t = (num_t - R den_t) / (2 e B), zero when e = 0 */
    const double c = e > 0 ? 1.0 / (2.0 * e * b) : 0.0, c2 = e2 > 0 ? 1.0 / (2.0 * e2 * b) : 0.0;
    nc_sum ss = {0, 0};
    for (size_t k = 0; k < n; k++) {
        size_t t = TOK(idx, k);
        double phi = c * (num[t] - R * den[t]);
        if (num2)
            phi -= c2 * (num2[t] - R2 * den[t]);
        nc_sum_add(&ss, phi * phi);
    }
    return sqrt((double)n / (double)(n - 1) * nc_sum_get(&ss));
}

nc_jac_summary nc_jac_summarize(const double *num, const double *den, const size_t *idx, size_t n,
                                bool exact, double *work)
{
    nc_jac_summary s = {NAN, NAN, exact, NAN, NAN, NAN, NAN, NAN, n, 0};
    if (n == 0)
        return s;
    nc_sum A = {0, 0}, B = {0, 0}, sr = {0, 0};
    bool has_nan = false;
    for (size_t k = 0; k < n; k++) {
        size_t t = TOK(idx, k);
        double r = rel_err(num[t], den[t]);
        has_nan |= isnan(r);
        s.n_inf += isinf(r) != 0;
        nc_sum_add(&A, num[t]);
        nc_sum_add(&B, den[t]);
        nc_sum_add(&sr, r);
        work[k] = r;
    }
    if (has_nan)
        return s;
    s.err = rel_err(nc_sum_get(&A), nc_sum_get(&B));
    s.err_se = exact ? 0.0 : (isfinite(s.err) ? nc_jac_ratio_se(num, NULL, den, idx, n) : NAN);
    if (s.n_inf) {
        s.mean = INFINITY;
        s.mean_se = NAN;
    } else {
        s.mean = nc_sum_get(&sr) / (double)n;
        nc_sum dev = {0, 0};
        for (size_t k = 0; k < n; k++)
            nc_sum_add(&dev, (work[k] - s.mean) * (work[k] - s.mean));
        s.mean_se = n > 1 ? sqrt(nc_sum_get(&dev) / (double)(n - 1) / (double)n) : NAN;
    }
    nc_sort_doubles(work, n);
    s.median = nc_quantile_sorted(work, n, 0.5);
    s.p95 = nc_quantile_sorted(work, n, 0.95);
    s.median_se = s.n_inf ? NAN : nc_jac_median_se(work, n);
    return s;
}

/* ============================================================ rankings */

/* a before b: smaller err first, NaN last, ties in err by fit id */
static bool ranks_before(double ea, int ia, double eb, int ib)
{
    if (isnan(ea) || isnan(eb))
        return isnan(ea) == isnan(eb) ? ia < ib : !isnan(ea);
    return ea < eb || (ea == eb && ia < ib);
}

void nc_jac_rank_surrogates(const nc_jac_summary *const *S, const double *const *num,
                            const double *den, const size_t *idx, size_t n, const int *sid, int ns,
                            nc_jac_rank *out)
{
    int order[NC_FIT_COUNT];
    for (int j = 0; j < ns; j++) { /* insertion sort of slots j by err */
        int k = j;
        while (k > 0 && ranks_before(S[j]->err, sid[j], S[order[k - 1]]->err, sid[order[k - 1]])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = j;
    }
    for (int r = 0; r < ns; r++) {
        const int j = order[r];
        nc_jac_rank *o = &out[r];
        o->id = sid[j];
        o->err = S[j]->err;
        o->se = S[j]->err_se;
        o->gap_se = 0;
        o->tie = false;
        if (r == 0)
            continue;
        const int p = order[r - 1];
        const double gap = S[j]->err - S[p]->err;
        if (S[j]->exact || S[p]->exact) {
            o->tie = gap == 0;
            continue;
        }
        o->gap_se = nc_jac_ratio_se(num[j], num[p], den, idx, n);
        o->tie = fabs(gap) <= 2.0 * o->gap_se;
    }
}

/* ============================================================ Gaussian reference */

/*
 * docs/jacobian.md derives these. With eps -> 0, y = sqrt(d) u where u is
 * uniform on the unit sphere: of R^d for RMSNorm (zero-mean inputs), of the
 * (d-1)-dimensional subspace orthogonal to 1 for LayerNorm, independent of
 * the token's scale, so the pooled ratios tend to ratios of expectations.
 * With k the dimension of the sphere (d or d - 1) and p = ||P e_i||^2 the
 * squared length of a channel's axis projected on it (1 or 1 - 1/d):
 * E u_i^4 = 3 p^2 / (k (k + 2)), E u_i^6 = 15 p^3 / (k (k + 2) (k + 4)).
 */
nc_jac_gauss_ref nc_jac_gaussian_ref(nc_norm_kind norm, size_t d)
{
    nc_jac_gauss_ref g = {NAN, NAN, NAN, NAN};
    const double dd = (double)d;
    if (norm == NC_RMSNORM) {
        if (d < 2)
            return g;
        g.diag_frobenius_share = (dd + 1.0) / (dd + 2.0);
        g.offdiag_frobenius_share = sqrt(1.0 / (dd + 2.0));
        g.radial_retention = sqrt(1.0 - 6.0 / (dd + 2.0) + 15.0 / ((dd + 2.0) * (dd + 4.0)));
        return g;
    }
    if (d < 3)
        return g;
    g.diag_frobenius_share = (dd - 1.0) / (dd + 1.0);
    g.offdiag_frobenius_share = sqrt(2.0 / (dd + 1.0));
    g.radial_retention =
        (dd - 1.0) / dd * sqrt(1.0 - 6.0 / (dd + 1.0) + 15.0 / ((dd + 1.0) * (dd + 3.0)));
    g.ones_retention = sqrt((dd - 1.0) * (dd - 2.0) / (dd * (dd + 1.0)));
    return g;
}
