/*
 * synth.h - synthetic activations whose LayerNorm input-output scatter goes
 * from a straight line to a tanh-like S-curve (BRIEF.md, "The observations
 * to reproduce", 1-3), and the DyISRU paper's outlier-steps token set
 * (BRIEF.md, "Further facts").
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
 * factor from token to token. That last swing is what bends the pooled
 * scatter: a token whose outliers are strong has a large LayerNorm scale s,
 * so its outlier points land on y = x / s, close to the saturating curve
 * sqrt(d/k) x / sqrt(x^2 + ...) of BRIEF.md's single-outlier exactness,
 * while ordinary tokens keep a steep line through the origin. Per-token
 * scale spread, heavy tails and offsets thicken the cloud instead (a fan of
 * lines), which is why the presets keep scale_spread small and put the
 * order-of-magnitude spread of the LayerNorm scale s into the outliers.
 *
 * Presets (nc_synth_preset; m_d = sqrt(d / 256) keeps k o^2 / d, hence the
 * amount of bending, the same for every width):
 *
 *     preset  scale_median spread  k  outlier_mag  outlier_spread  nu   offset_std
 *     early   0.5          0.05    4  1.5 m_d      0.2             inf  0.02
 *     middle  1.5          0.1     4  0.7 m_d      1.2             8    0.02
 *     late    4.0          0.1     4  1.0 m_d      1.4             6    0.05
 *
 * (k = min(4, d / 16) for d < 64.)
 *
 * Measured (seed 1, N = 4096; pooled R^2 of the best affine fit y ~ a x + b
 * and of the best y ~ gamma tanh(alpha x) + beta, scipy curve_fit; y the
 * LayerNorm of x with eps 1e-5, no affine):
 *
 *     (filled in by the tuning run)
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
    double nu;             /* Student-t degrees of freedom of the bulk, (2, 1e6]
                              or INFINITY (Gaussian) */
    double offset_std;     /* std of the per-token offset, in units of
                              scale_median, [0, 1e3] */
    uint64_t seed;
} nc_synth_params;

/* Fills the distribution fields of p (everything but N, d and seed, which
 * it reads and keeps) with the preset `name`: "early", "middle" or "late"
 * (table above; they depend on p->d). Returns 0, or NC_EINVAL naming the
 * unknown preset and the known ones (p untouched). */
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

/* The DyISRU paper's outlier-steps simulation: one base token of d values
 * drawn from N(0, sigma^2) (stream 0 of seed; paper: d = 100, sigma = 2),
 * rounded to float; token k - 1 (k = 1 .. steps) is that token with its
 * largest entry (the first, on a tie) raised by step * k, in float:
 * x[(k-1) d + c] = base[c] + (float)(step * k) (paper: step 5, steps 9).
 * Writes x[steps * d] (caller-owned) and *channel = c. Returns 0, or
 * NC_EINVAL naming the argument for d < 1, steps < 1, or step or sigma
 * outside (0, 1e6] (NC_ERANGE if steps * d floats overflow size_t). */
int nc_synth_outlier_steps(uint64_t seed, size_t d, int steps, double step, double sigma,
                           float *x, size_t *channel, nc_err *err);

#endif
