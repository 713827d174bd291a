/*
 * synth.h - synthetic activations whose LayerNorm input-output scatter goes
 * from a straight line to a tanh-like S-curve (the DyT paper's observations
 * that docs/figures.md reproduces), and the DyISRU paper's outlier-steps
 * token set (docs/outlier_steps.md).
 *
 * The model. N tokens of d channels, float32, row-major: token t, channel i
 * at x[t * d + i]. For token t
 *
 *     x[t,i] = offset_t + scale_t * (z[t,i] + o[t,i])
 *
 *     scale_t  = scale_median * exp(scale_spread * a_t)     a_t ~ N(0, 1)
 *     offset_t = offset_std * scale_median * b_t            b_t ~ N(0, 1)
 *     z[t,i]   = Student-t(nu) * sqrt((nu - 2) / nu)        unit variance
 *                (a standard normal when nu = INFINITY)
 *     o[t,i]   = 0 on ordinary channels; on the k = `outliers` outlier
 *                channels j (distinct, chosen by the seed):
 *                sign_j * outlier_mag * c_j * exp(outlier_spread * u_t
 *                                                 + NC_SYNTH_JITTER * v[t,j])
 *                sign_j = +-1 and c_j = exp(NC_SYNTH_CHANNEL_SPREAD * w_j)
 *                fixed per channel; u_t ~ N(0, 1) shared by the token's
 *                outlier channels; v[t,j], w_j ~ N(0, 1).
 *
 * So outlier channels keep their sign, their magnitude is outlier_mag times
 * the token's bulk scale in the median, and it swings by a log-normal
 * factor from token to token. That swing is what bends the pooled scatter:
 * a token with outliers of size o (in units of its scale) has LayerNorm
 * scale s ~ scale * sqrt(1 + k o^2 / d), so its outlier points land near
 * y = o / sqrt(1 + k o^2 / d), which saturates at sqrt(d / k) as o grows
 * (a single moving entry makes the norm exactly an ISRU: docs/theory.md),
 * while its other points lie on a flatter line and ordinary tokens keep a
 * steep one (the paper's observations of docs/figures.md).
 * Identical outliers in every token would give every token the same s,
 * hence a straight scatter; spread in the bulk scale, heavy tails and
 * offsets thicken the cloud into a fan of lines rather than bend it. So the
 * presets keep scale_spread small and let the outliers spread the LayerNorm
 * scale s: in "late" (d = 256) 80% of the tokens have s within 0.88 ..
 * 1.23 of the median and the top 1% above 2.8 times it, up to 14 times.
 *
 * Presets (nc_synth_preset; m_d = sqrt(d / 256) keeps k o^2 / d, hence the
 * amount of bending, the same for every width):
 *
 *     preset  scale_median  spread  k  outlier_mag  outlier_spread  nu   offset_std
 *     early   0.5           0.03    4  1.5 m_d      0.2             inf  0.01
 *     middle  1.5           0.05    4  0.7 m_d      1.2             10   0.02
 *     late    4.0           0.07    4  1.0 m_d      1.3             8    0.03
 *
 * (k = min(4, d / 16): at least 16 ordinary channels per outlier channel.)
 * Deeper presets have larger scales, heavier tails, more spread and a wider
 * swing of the outliers; "early" has outlier channels too, but steady ones,
 * which keep the scatter straight.
 *
 * Measured pooled R^2 of the best affine fit y ~ a x + b and of the best
 * y ~ gamma tanh(alpha x) + beta, y the LayerNorm of x (eps 1e-5, no
 * affine), N = 4096, seed 1 / seed 2:
 *
 *     preset  d      affine R^2         tanh R^2
 *     early   64     0.9768 / 0.9757    0.9772 / 0.9761
 *     early   256    0.9932 / 0.9934    0.9933 / 0.9934
 *     early   1024   0.9975 / 0.9976    0.9975 / 0.9976
 *     middle  64     0.9293 / 0.9276    0.9656 / 0.9642
 *     middle  256    0.9512 / 0.9497    0.9835 / 0.9847
 *     middle  1024   0.9366 / 0.9578    0.9882 / 0.9885
 *     late    64     0.8292 / 0.8423    0.9537 / 0.9506
 *     late    256    0.8168 / 0.8359    0.9702 / 0.9725
 *     late    1024   0.8574 / 0.7599    0.9754 / 0.9761
 *
 * measured with NumPy/SciPy (all N * d points pooled) on
 *
 *     normcmp synth -o x.npy --preset P --tokens 4096 --dim D --seed S
 *     x = np.load("x.npy").astype(np.float64)
 *     y = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
 *     affine: np.linalg.lstsq(np.c_[x.ravel(), np.ones(x.size)], y.ravel())
 *     tanh:   scipy.optimize.curve_fit(lambda x, g, a, b: g * np.tanh(a * x) + b,
 *             x.ravel(), y.ravel(), p0=...), p0 the best of 12 starts
 *             (alpha0 in {0.1, 0.3, 1, 3} / std(x), gamma0 in {2, 5, max|y|},
 *             beta0 = 0) fitted on a 200000-point subsample
 *     R^2 = 1 - sum((y - fit)^2) / sum((y - mean(y))^2)
 *
 * At d = 64 even i.i.d. Gaussian tokens reach only R^2 = 1 - 1.5/d = 0.977
 * (the sampling noise of each token's mean and scale tilts its line), so
 * "early" cannot pass 0.99 there; at d >= 256 it does. The late scatter's
 * extremes come from a few tokens with huge outliers, so its affine R^2
 * varies from seed to seed (0.76 .. 0.86 above); the tanh R^2 does not.
 *
 * Generation runs in blocks of NC_SYNTH_BLOCK tokens; block b draws from
 * stream b + 1 of the seed (core/rng.h), token after token, so the tensor
 * does not depend on how blocks are shared among threads, and the first
 * tokens do not depend on N. Stream 0 picks the outlier channels and their
 * signs and magnitudes. Everything is computed with core/rng.h's IEEE-exact
 * arithmetic: the same parameters give the same bits on every machine.
 *
 * Not modelled: correlations between channels other than the shared
 * outlier factor, position effects, attention sinks.
 */
#ifndef NC_SYNTH_H
#define NC_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* Tokens per generation block (one random stream each). */
#define NC_SYNTH_BLOCK 64

/* Sigma of the log of an outlier channel's own magnitude factor c_j. */
#define NC_SYNTH_CHANNEL_SPREAD 0.2

/* Sigma of the per-(token, channel) log jitter of an outlier value. */
#define NC_SYNTH_JITTER 0.1

/* The largest thread count nc_synth_fill accepts. */
#define NC_SYNTH_MAX_THREADS 256

typedef struct nc_synth_params {
    size_t N, d;           /* tokens, channels: N >= 1, d >= 1 */
    double scale_median;   /* median per-token scale, [1e-6, 1e6] */
    double scale_spread;   /* sigma of the per-token log scale, [0, 2] */
    size_t outliers;       /* k outlier channels, [0, d] */
    double outlier_mag;    /* their median magnitude, in units of the token's
                              scale, [0, 1e3] */
    double outlier_spread; /* sigma of the per-token log outlier magnitude, [0, 2] */
    double nu;             /* Student-t degrees of freedom of the bulk, > 2,
                              or INFINITY (Gaussian) */
    double offset_std;     /* std of the per-token offset, in units of
                              scale_median, [0, 1e3] */
    uint64_t seed;
} nc_synth_params;

/* Fills the distribution fields of p (everything but N, d and seed, which
 * it keeps) with the preset `name`: "early", "middle" or "late" (table
 * above). The outlier count and magnitude depend on p->d, so set d first
 * (and apply the preset again if d changes). Returns 0, or NC_EINVAL, p
 * untouched, naming the unknown preset and the known ones, or when
 * p->d == 0. */
int nc_synth_preset(const char *name, nc_synth_params *p, nc_err *err);

/* Writes the N x d tensor of p into x[N * d] (row-major, caller-owned) with
 * `threads` threads (1 .. NC_SYNTH_MAX_THREADS; 0 means the online CPUs);
 * the bits do not depend on the thread count. Checks every field first and
 * returns NC_EINVAL naming the field, its value and the accepted range
 * (NC_ERANGE when N * d floats overflow size_t), with x untouched; NC_ENOMEM
 * if the outlier table cannot be allocated. A thread that cannot be started
 * leaves its blocks to the calling thread. */
int nc_synth_fill(const nc_synth_params *p, float *x, int threads, nc_err *err);

/* Writes the p->outliers channel indices the generator uses into
 * idx[p->outliers], ascending (distinct, each < p->d). p->outliers <= p->d
 * is required; the other distribution fields are not read. */
void nc_synth_outlier_channels(const nc_synth_params *p, size_t *idx);

/* The generator of the outlier-steps base token. */
typedef enum nc_synth_rng {
    NC_SYNTH_RNG_NORMCMP, /* core/rng.h: stream 0 of the seed, nc_rng_normal */
    NC_SYNTH_RNG_NUMPY,   /* core/rng_numpy.h: np.random.seed(seed);
                           * np.random.normal(0, sigma, d), bit for bit */
} nc_synth_rng;

/* Parses "normcmp" or "numpy"; false for anything else. */
bool nc_synth_rng_parse(const char *s, nc_synth_rng *out);

/* "normcmp" or "numpy". */
const char *nc_synth_rng_name(nc_synth_rng rng);

/* The DyISRU paper's outlier-steps simulation: one base token of d values
 * drawn from N(0, sigma^2) (paper: d = 100, sigma = 2) by the generator
 * rng: stream 0 of seed (NC_SYNTH_RNG_NORMCMP), or NumPy's legacy
 * generator seeded with seed, sigma * gauss per value, which is exactly
 * np.random.seed(seed); np.random.normal(0, sigma, d) (NC_SYNTH_RNG_NUMPY,
 * the paper's; seed must be < 2^32 then), rounded to float; token k - 1
 * (k = 1 .. steps) is that token with its largest entry (the first, on a
 * tie) raised by step * k, in float: x[(k-1) d + c] = base[c] +
 * (float)(step * k) (paper: step 5, steps 9). Writes x[steps * d]
 * (caller-owned) and *channel = c. Returns 0, or NC_EINVAL naming the
 * argument for d < 1, steps < 1, step or sigma outside (0, 1e6], or a NumPy
 * seed >= 2^32 (NC_ERANGE if steps * d floats overflow size_t). */
int nc_synth_outlier_steps(uint64_t seed, size_t d, int steps, double step, double sigma,
                           nc_synth_rng rng, float *x, size_t *channel, nc_err *err);

/* The same token set in double throughout (synth --dtype f64): the base
 * token is not rounded to float, so with NC_SYNTH_RNG_NUMPY row k - 1 is
 * exactly np.random.seed(seed); np.random.normal(0, sigma, d) with entry c
 * raised by step * k (in double). The channel c may differ from the float
 * version's only on a tie after rounding. Same arguments and errors. */
int nc_synth_outlier_steps_f64(uint64_t seed, size_t d, int steps, double step, double sigma,
                               nc_synth_rng rng, double *x, size_t *channel, nc_err *err);

#endif
