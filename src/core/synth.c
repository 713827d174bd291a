/*
 * synth.c - the synthetic activation generator and the outlier-steps token
 * set (model, presets and measurements in synth.h).
 *
 * Legend: N tokens, d channels, t indexes tokens, i channels, j outlier
 * channels (0 .. k-1, ascending channel order). x[t * d + i] is float;
 * everything before the final rounding is double, from core/rng.h's
 * IEEE-exact arithmetic only, so the bits are the same on every machine.
 *
 * Draw order (it defines the tensor; changing it changes the golden
 * checksums in tests/unit/test_synth.c):
 *   stream 0:      selection sampling of the k outlier channels (one
 *                  nc_rng_below per channel 0 .. d-1 until k are chosen),
 *                  then per outlier channel, ascending: the sign (top bit of
 *                  one u64), then w_j (one normal).
 *   stream b + 1:  tokens b*NC_SYNTH_BLOCK .. in order; per token a_t, b_t,
 *                  u_t (only when k > 0), then per channel i ascending
 *                  z[t,i] and, on an outlier channel, v[t,j] right after.
 */
#include "core/synth.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/rng_numpy.h"

/* No fused multiply-add: see core/rng.h, "What bit-identity assumes". */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* ---- presets ------------------------------------------------------------- */

typedef struct preset {
    const char *name;
    double scale_median, scale_spread;
    size_t outliers;
    double outlier_mag; /* at d = 256; scaled by sqrt(d / 256) */
    double outlier_spread, nu, offset_std;
} preset;

static const preset presets[] = {
    {"early", 0.5, 0.03, 4, 1.5, 0.2, INFINITY, 0.01},
    {"middle", 1.5, 0.05, 4, 0.7, 1.2, 10.0, 0.02},
    {"late", 4.0, 0.07, 4, 1.0, 1.3, 8.0, 0.03},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

int nc_synth_preset(const char *name, nc_synth_params *p, nc_err *err)
{
    /* The outlier count and magnitude follow d: a preset applied before d
     * is known would silently give a tensor without outliers. */
    if (p->d < 1)
        return nc_err_set(err, NC_EINVAL,
                          "synth: preset \"%s\" applied with d = 0: set N, d and seed first",
                          name);
    for (size_t n = 0; n < NPRESETS; n++) {
        const preset *q = &presets[n];
        if (strcmp(name, q->name) != 0)
            continue;
        p->scale_median = q->scale_median;
        p->scale_spread = q->scale_spread;
        /* at least 16 ordinary channels per outlier channel */
        p->outliers = q->outliers < p->d / 16 ? q->outliers : p->d / 16;
        /* k o^2 / d fixed across widths: the bend does not depend on d */
        p->outlier_mag = q->outlier_mag * sqrt((double)p->d / 256.0);
        p->outlier_spread = q->outlier_spread;
        p->nu = q->nu;
        p->offset_std = q->offset_std;
        return 0;
    }
    return nc_err_set(err, NC_EINVAL,
                      "synth: unknown preset \"%s\": expected early, middle or late", name);
}

/* ---- validation ------------------------------------------------------------ */

/* NC_EINVAL unless lo <= v <= hi (NaN fails too). */
static int check_range(const char *field, double v, double lo, double hi, nc_err *err)
{
    if (v >= lo && v <= hi)
        return 0;
    return nc_err_set(err, NC_EINVAL, "synth: %s = %g: expected a value in [%g, %g]", field, v,
                      lo, hi);
}

static int check_params(const nc_synth_params *p, nc_err *err)
{
    if (p->N < 1)
        return nc_err_set(err, NC_EINVAL, "synth: N = 0: expected at least 1 token");
    if (p->d < 1)
        return nc_err_set(err, NC_EINVAL, "synth: d = 0: expected at least 1 channel");
    if (p->N > SIZE_MAX / sizeof(float) / p->d)
        return nc_err_set(err, NC_ERANGE, "synth: N * d = %zu * %zu floats overflow size_t",
                          p->N, p->d);
    int rc;
    if ((rc = check_range("scale_median", p->scale_median, 1e-6, 1e6, err)) ||
        (rc = check_range("scale_spread", p->scale_spread, 0.0, 2.0, err)) ||
        (rc = check_range("outlier_mag", p->outlier_mag, 0.0, 1e3, err)) ||
        (rc = check_range("outlier_spread", p->outlier_spread, 0.0, 2.0, err)) ||
        (rc = check_range("offset_std", p->offset_std, 0.0, 1e3, err)))
        return rc;
    if (p->outliers > p->d)
        return nc_err_set(err, NC_EINVAL,
                          "synth: outliers = %zu: expected at most d = %zu channels", p->outliers,
                          p->d);
    if (!(p->nu > 2.0)) /* NaN fails too; INFINITY is the Gaussian */
        return nc_err_set(err, NC_EINVAL,
                          "synth: nu = %g: expected a value > 2 or inf "
                          "(a finite variance to rescale to 1)",
                          p->nu);
    return 0;
}

/* ---- outlier channels ------------------------------------------------------- */

/* Selection sampling (Knuth, TAOCP vol. 2, 3.4.2, Algorithm S): channel i
 * is taken with probability (still needed) / (channels left), which makes
 * every k-subset of the d channels equally likely and yields it ascending.
 * Writes idx[k]. */
static void select_channels(nc_rng *r, size_t d, size_t k, size_t *idx)
{
    size_t need = k;
    for (size_t i = 0, j = 0; need > 0; i++) {
        if (nc_rng_below(r, d - i) < need) {
            idx[j++] = i;
            need--;
        }
    }
}

void nc_synth_outlier_channels(const nc_synth_params *p, size_t *idx)
{
    assert(p->outliers <= p->d);
    nc_rng r;
    nc_rng_seed(&r, p->seed, 0);
    select_channels(&r, p->d, p->outliers, idx);
}

/* One outlier channel as the generator uses it. */
typedef struct outlier {
    size_t i;   /* channel */
    double mag; /* sign_j * outlier_mag * c_j, in units of the token's scale */
} outlier;

/* The k outliers of p, with the draws of stream 0 after the selection. */
static void outlier_table(const nc_synth_params *p, outlier *tab, size_t *idx)
{
    nc_rng r;
    nc_rng_seed(&r, p->seed, 0);
    select_channels(&r, p->d, p->outliers, idx);
    /* r goes on where nc_synth_outlier_channels' generator stops. */
    for (size_t j = 0; j < p->outliers; j++) {
        double sign = (nc_rng_u64(&r) >> 63) ? -1.0 : 1.0;
        double c = nc_det_exp(NC_SYNTH_CHANNEL_SPREAD * nc_rng_normal(&r));
        tab[j].i = idx[j];
        tab[j].mag = sign * p->outlier_mag * c;
    }
}

/* ---- generation --------------------------------------------------------------- */

typedef struct job {
    const nc_synth_params *p;
    const outlier *tab; /* [p->outliers], ascending channel */
    float *x;           /* [N * d] */
    size_t b0, b1;      /* blocks [b0, b1) */
} job;

/* Tokens of block b, x[t * d + i] for t in the block (model in synth.h). */
static void gen_block(const job *jb, size_t b)
{
    const nc_synth_params *p = jb->p;
    size_t d = p->d, k = p->outliers;
    bool gaussian = isinf(p->nu);
    double tscale = gaussian ? 1.0 : sqrt((p->nu - 2.0) / p->nu); /* unit variance */
    nc_rng r;
    nc_rng_seed(&r, p->seed, (uint64_t)b + 1);
    size_t t0 = b * NC_SYNTH_BLOCK;
    size_t t1 = t0 + NC_SYNTH_BLOCK < p->N ? t0 + NC_SYNTH_BLOCK : p->N;
    for (size_t t = t0; t < t1; t++) {
        double scale = p->scale_median * nc_det_exp(p->scale_spread * nc_rng_normal(&r));
        double offset = p->offset_std * p->scale_median * nc_rng_normal(&r);
        double swing = k > 0 ? nc_det_exp(p->outlier_spread * nc_rng_normal(&r)) : 0.0;
        float *row = jb->x + t * d;
        size_t j = 0; /* the next outlier channel */
        for (size_t i = 0; i < d; i++) {
            double z = gaussian ? nc_rng_normal(&r) : tscale * nc_rng_student_t(&r, p->nu);
            double o = 0.0;
            if (j < k && jb->tab[j].i == i) {
                double jitter = nc_det_exp(NC_SYNTH_JITTER * nc_rng_normal(&r));
                o = jb->tab[j].mag * swing * jitter;
                j++;
            }
            row[i] = (float)(offset + scale * (z + o));
        }
    }
}

static void *run_job(void *arg)
{
    const job *jb = arg;
    for (size_t b = jb->b0; b < jb->b1; b++)
        gen_block(jb, b);
    return NULL;
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        return 1;
    return n > NC_SYNTH_MAX_THREADS ? NC_SYNTH_MAX_THREADS : (int)n;
}

int nc_synth_fill(const nc_synth_params *p, float *x, int threads, nc_err *err)
{
    int rc = check_params(p, err);
    if (rc)
        return rc;
    if (threads < 0 || threads > NC_SYNTH_MAX_THREADS)
        return nc_err_set(err, NC_EINVAL,
                          "synth: threads = %d: expected 0 (the online CPUs) .. %d", threads,
                          NC_SYNTH_MAX_THREADS);
    if (threads == 0)
        threads = online_cpus();

    size_t k = p->outliers;
    outlier *tab = NULL;
    size_t *idx = NULL;
    job *jobs = NULL;
    pthread_t *tids = NULL;
    bool *started = NULL;
    size_t nblocks = (p->N + NC_SYNTH_BLOCK - 1) / NC_SYNTH_BLOCK;
    size_t nthreads = (size_t)threads < nblocks ? (size_t)threads : nblocks;

    tab = malloc((k ? k : 1) * sizeof *tab);
    idx = malloc((k ? k : 1) * sizeof *idx);
    jobs = malloc(nthreads * sizeof *jobs);
    tids = malloc(nthreads * sizeof *tids);
    started = calloc(nthreads, sizeof *started);
    if (!tab || !idx || !jobs || !tids || !started) {
        rc = nc_err_set(err, NC_ENOMEM, "synth: out of memory for %zu outlier channels", k);
        goto out;
    }
    outlier_table(p, tab, idx);

    /* Contiguous runs of blocks, the first nblocks % nthreads one longer;
     * job 0 runs on the calling thread. */
    size_t per = nblocks / nthreads, extra = nblocks % nthreads;
    for (size_t w = 0, b = 0; w < nthreads; w++) {
        size_t nb = per + (w < extra);
        jobs[w] = (job){p, tab, x, b, b + nb};
        b += nb;
    }
    for (size_t w = 1; w < nthreads; w++)
        started[w] = pthread_create(&tids[w], NULL, run_job, &jobs[w]) == 0;
    run_job(&jobs[0]);
    for (size_t w = 1; w < nthreads; w++) {
        if (started[w])
            pthread_join(tids[w], NULL);
        else
            run_job(&jobs[w]); /* the same blocks, the same streams, the same bits */
    }
out:
    free(tab);
    free(idx);
    free(jobs);
    free(tids);
    free(started);
    return rc;
}

/* ---- outlier steps ---------------------------------------------------------- */

bool nc_synth_rng_parse(const char *s, nc_synth_rng *out)
{
    if (strcmp(s, "normcmp") == 0)
        *out = NC_SYNTH_RNG_NORMCMP;
    else if (strcmp(s, "numpy") == 0)
        *out = NC_SYNTH_RNG_NUMPY;
    else
        return false;
    return true;
}

const char *nc_synth_rng_name(nc_synth_rng rng)
{
    return rng == NC_SYNTH_RNG_NUMPY ? "numpy" : "normcmp";
}

/* The argument checks of the outlier-steps functions (elem: the element size). */
static int steps_check(uint64_t seed, size_t d, int steps, double step, double sigma,
                       nc_synth_rng rng, size_t elem, nc_err *err)
{
    if (d < 1)
        return nc_err_set(err, NC_EINVAL, "outlier steps: d = 0: expected at least 1 channel");
    if (steps < 1)
        return nc_err_set(err, NC_EINVAL, "outlier steps: steps = %d: expected at least 1",
                          steps);
    if ((size_t)steps > SIZE_MAX / elem / d)
        return nc_err_set(err, NC_ERANGE,
                          "outlier steps: steps * d = %d * %zu values overflow size_t", steps, d);
    if (!(step > 0.0 && step <= 1e6))
        return nc_err_set(err, NC_EINVAL,
                          "outlier steps: step = %g: expected a value in (0, 1e+06]", step);
    if (!(sigma > 0.0 && sigma <= 1e6))
        return nc_err_set(err, NC_EINVAL,
                          "outlier steps: sigma = %g: expected a value in (0, 1e+06]", sigma);
    if (rng == NC_SYNTH_RNG_NUMPY && !nc_rng_numpy_seed_ok(seed))
        return nc_err_set(err, NC_EINVAL,
                          "outlier steps: seed = %llu: expected 0 .. 4294967295 for the numpy "
                          "generator (np.random.seed's range)",
                          (unsigned long long)seed);
    return 0;
}

/* The base token's d draws of N(0, sigma^2), in double, into v[d]. */
static void steps_base(uint64_t seed, size_t d, double sigma, nc_synth_rng rng, double *v)
{
    nc_rng r;
    nc_rng_numpy rn;
    if (rng == NC_SYNTH_RNG_NUMPY)
        nc_rng_numpy_seed(&rn, (uint32_t)seed);
    else
        nc_rng_seed(&r, seed, 0);
    for (size_t i = 0; i < d; i++)
        v[i] = rng == NC_SYNTH_RNG_NUMPY ? nc_rng_numpy_normal(&rn, 0.0, sigma)
                                         : sigma * nc_rng_normal(&r);
}

int nc_synth_outlier_steps(uint64_t seed, size_t d, int steps, double step, double sigma,
                           nc_synth_rng rng, float *x, size_t *channel, nc_err *err)
{
    int rc = steps_check(seed, d, steps, step, sigma, rng, sizeof(float), err);
    if (rc)
        return rc;
    double *base = malloc(d * sizeof *base);
    if (!base)
        return nc_err_set(err, NC_ENOMEM, "outlier steps: out of memory for %zu values", d);
    steps_base(seed, d, sigma, rng, base);
    /* The base token, in row 0 for now, rounded to float. */
    size_t c = 0;
    for (size_t i = 0; i < d; i++) {
        x[i] = (float)base[i];
        if (x[i] > x[c])
            c = i;
    }
    free(base);
    /* Rows k - 1 = base with entry c raised by step * k; from the last row
     * down so that row 0 keeps the base value until it is written itself. */
    float base_c = x[c];
    for (int k = steps; k >= 1; k--) {
        float *row = x + (size_t)(k - 1) * d;
        if (k > 1)
            memcpy(row, x, d * sizeof *row);
        row[c] = base_c + (float)(step * k);
    }
    *channel = c;
    return 0;
}

int nc_synth_outlier_steps_f64(uint64_t seed, size_t d, int steps, double step, double sigma,
                               nc_synth_rng rng, double *x, size_t *channel, nc_err *err)
{
    int rc = steps_check(seed, d, steps, step, sigma, rng, sizeof(double), err);
    if (rc)
        return rc;
    steps_base(seed, d, sigma, rng, x);
    size_t c = 0;
    for (size_t i = 1; i < d; i++)
        if (x[i] > x[c])
            c = i;
    double base_c = x[c];
    for (int k = steps; k >= 1; k--) {
        double *row = x + (size_t)(k - 1) * d;
        if (k > 1)
            memcpy(row, x, d * sizeof *row);
        row[c] = base_c + step * k;
    }
    *channel = c;
    return 0;
}
