/*
 * test_norm.c - LayerNorm and RMSNorm against the worked examples of docs/theory.md and
 * the single-outlier identity.
 */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "core/norm.h"

static void test_layernorm_worked_example(void)
{
    /* docs/theory.md: LayerNorm of [1, 2, 3, 4] (eps 1e-5) = [-1.3416, -0.4472, 0.4472, 1.3416] */
    const double x[4] = {1, 2, 3, 4};
    double y[4];
    nc_token_stat st = nc_norm_token(NC_LAYERNORM, 1e-5, x, 4);
    CHECK_INT(NC_TOKEN_OK, st.status);
    CHECK_REL(2.5, st.mean, 1e-15);
    CHECK_REL(1.25, st.var, 1e-15);
    CHECK_REL(sqrt(1.25 + 1e-5), st.scale, 1e-15);
    nc_norm_apply(&st, x, 4, y);
    const double want[4] = {-1.3416, -0.4472, 0.4472, 1.3416};
    for (int i = 0; i < 4; i++) {
        CHECK_ABS(want[i], y[i], 5e-5);
        CHECK_REL((x[i] - 2.5) / sqrt(1.25 + 1e-5), y[i], 1e-15);
    }
}

static void test_rmsnorm_worked_example(void)
{
    /* docs/theory.md: RMSNorm of [1, 2, 3, 4]: r = sqrt(7.5) = 2.7386,
     * y = [0.3651, 0.7303, 1.0954, 1.4606] */
    const double x[4] = {1, 2, 3, 4};
    double y[4];
    nc_token_stat st = nc_norm_token(NC_RMSNORM, 0.0, x, 4);
    CHECK_ABS(2.7386, st.scale, 5e-5);
    CHECK_REL(sqrt(7.5), st.scale, 1e-15);
    CHECK_ABS(0.0, st.centre, 0);
    nc_norm_apply(&st, x, 4, y);
    const double want[4] = {0.3651, 0.7303, 1.0954, 1.4606};
    for (int i = 0; i < 4; i++)
        CHECK_ABS(want[i], y[i], 5e-5);
    /* with LLaMA's eps the scale is sqrt(7.5 + 1e-6) */
    st = nc_norm_token(NC_RMSNORM, 1e-6, x, 4);
    CHECK_REL(sqrt(7.5 + 1e-6), st.scale, 1e-15);
}

/* docs/theory.md, "Single-entry exactness": holding d-1 entries fixed and moving
 * one entry x, RMSNorm gives sqrt(d) x / sqrt(x^2 + P + d eps), P the sum of
 * squares of the others (d eps appears because r^2 = mean(x^2) + eps). */
static void test_single_outlier_identity(void)
{
    enum { D = 37 };
    double x[D], y[D];
    double P = 0;
    for (int i = 1; i < D; i++) {
        x[i] = sin(2.385 * i) * (1.0 + 0.3 * i); /* high-entropy fixed entries */
        P += x[i] * x[i];
    }
    const double eps = 1e-6, moves[] = {-73.1, -4.2, -0.37, 0.0, 0.0123, 1.9, 12.5, 408.0};
    for (size_t k = 0; k < sizeof moves / sizeof moves[0]; k++) {
        x[0] = moves[k];
        nc_token_stat st = nc_norm_token(NC_RMSNORM, eps, x, D);
        nc_norm_apply(&st, x, D, y);
        double want = sqrt((double)D) * x[0] / sqrt(x[0] * x[0] + P + D * eps);
        CHECK_ABS(want, y[0], 4e-16 * fmax(1.0, fabs(want)));
    }
}

static void test_bounds(void)
{
    /* |y_i| <= sqrt(d) for RMSNorm, <= sqrt(d-1) for LayerNorm (no affine) */
    enum { D = 16 };
    double x[D], y[D];
    for (int i = 0; i < D; i++)
        x[i] = i == 5 ? 1e6 : 0.01 * i;
    nc_token_stat st = nc_norm_token(NC_RMSNORM, 0, x, D);
    nc_norm_apply(&st, x, D, y);
    CHECK(fabs(y[5]) <= sqrt((double)D));
    CHECK_REL(sqrt((double)D), y[5], 1e-9);
    st = nc_norm_token(NC_LAYERNORM, 0, x, D);
    nc_norm_apply(&st, x, D, y);
    CHECK(fabs(y[5]) <= sqrt(D - 1.0) * (1 + 1e-15));
    CHECK_REL(sqrt(D - 1.0), y[5], 1e-9);
}

static void test_degenerate_tokens(void)
{
    double x[5] = {2.5, 2.5, 2.5, 2.5, 2.5}, y[5];
    /* constant token: eps decides */
    nc_token_stat st = nc_norm_token(NC_LAYERNORM, 0.0, x, 5);
    CHECK_INT(NC_TOKEN_ZERO_SCALE, st.status);
    st = nc_norm_token(NC_LAYERNORM, 1e-5, x, 5);
    CHECK_INT(NC_TOKEN_OK, st.status);
    CHECK_REL(sqrt(1e-5), st.scale, 1e-15);
    nc_norm_apply(&st, x, 5, y);
    for (int i = 0; i < 5; i++)
        CHECK_ABS(0.0, y[i], 0);
    /* all zeros under RMSNorm with eps 0 */
    double z[3] = {0, 0, 0};
    CHECK_INT(NC_TOKEN_ZERO_SCALE, nc_norm_token(NC_RMSNORM, 0.0, z, 3).status);
    /* non-finite values */
    x[2] = NAN;
    CHECK_INT(NC_TOKEN_NONFINITE, nc_norm_token(NC_LAYERNORM, 1e-5, x, 5).status);
    x[2] = -INFINITY;
    CHECK_INT(NC_TOKEN_NONFINITE, nc_norm_token(NC_RMSNORM, 1e-5, x, 5).status);
    /* d = 1: LayerNorm output is 0 (x - mean = 0), RMSNorm is sign(x) up to eps */
    double one[1] = {-3.7};
    st = nc_norm_token(NC_LAYERNORM, 1e-5, one, 1);
    nc_norm_apply(&st, one, 1, y);
    CHECK_ABS(0.0, y[0], 0);
    st = nc_norm_token(NC_RMSNORM, 1e-6, one, 1);
    nc_norm_apply(&st, one, 1, y);
    CHECK_REL(-3.7 / sqrt(3.7 * 3.7 + 1e-6), y[0], 1e-15);
}

static void test_affine(void)
{
    double y[3] = {1.5, -2.0, 0.25};
    const double w[3] = {2.0, 0.5, -4.0}, b[3] = {0.1, 0.2, 0.3};
    nc_norm_affine(w, b, 3, y);
    CHECK_REL(3.1, y[0], 1e-15);
    CHECK_REL(-0.8, y[1], 1e-15);
    CHECK_REL(-0.7, y[2], 1e-15);
    nc_norm_affine(NULL, NULL, 3, y);
    CHECK_REL(3.1, y[0], 0);
}

int main(void)
{
    test_layernorm_worked_example();
    test_rmsnorm_worked_example();
    test_single_outlier_identity();
    test_bounds();
    test_degenerate_tokens();
    test_affine();
    return CHECK_DONE();
}
