/*
 * bench.c - stage timings of normcmp on one layer (`make bench`).
 *
 *   build/normcmp-bench FILE.npy [REPEATS]
 *
 * Times, as medians of REPEATS runs (min and max beside them): a plain
 * streaming read of the mapped input (the floor a pass cannot beat), the
 * SHA-256 of the file, the whole layer analysis with its stages (stats,
 * bins, fits, per-channel Newton, the verify pass with the exact metrics and
 * the Jacobian's per-token sums, as in a run) and its number of passes, the
 * Jacobian stage (its own pass, which runs only for real gradients:
 * 0 here; summaries; dense check, its GFLOP/s) and
 * OpenBLAS's own sgemm/dgemm rate on this machine, and the time to render
 * the layer's scatter figure with its fitted curves (the raster pass over
 * all points, layout, drawing, PNG encoding). The machine is shared
 * and noisy: read ratios and medians, not single numbers.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/jacobian.h"
#include "analysis/layer.h"
#include "plan/plan.h"
#include "io/dump.h"
#include "plot/figures.h"
#include "config/config.h"
#include "util/outfile.h"
#include "util/sha256.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Times OpenBLAS on an n x n x n product, cblas_sgemm (single) or
 * cblas_dgemm: one small warm-up call, then the best of reps calls (reps 0
 * means 1). *gflops = 2 n^3 / best time / 1e9, *elapsed_s = the best time.
 * Returns 0, NC_EINVAL or NC_ENOMEM. (The only use of BLAS: no analysis
 * calls it, so only this benchmark links OpenBLAS.) */
static int blas_rate(size_t n, bool single, int reps, double *gflops, double *elapsed_s,
                     nc_err *err)
{
    if (n == 0 || n > INT_MAX || n > SIZE_MAX / 3 / n / sizeof(double))
        return nc_err_set(err, NC_EINVAL, "BLAS benchmark size %zu out of range", n);
    size_t es = single ? sizeof(float) : sizeof(double);
    void *mem = malloc(3 * n * n * es);
    if (!mem)
        return nc_err_set(err, NC_ENOMEM, "out of memory for a %zu x %zu BLAS benchmark", n, n);
    /* deterministic, well-scaled entries in [-1, 1) */
    for (size_t k = 0; k < 3 * n * n; k++) {
        double v = (double)((k * 2654435761u) % 2048) / 1024.0 - 1.0;
        if (single)
            ((float *)mem)[k] = (float)v;
        else
            ((double *)mem)[k] = v;
    }
    const int ni = (int)n;
    double best = INFINITY;
    for (int r = -1; r < (reps > 0 ? reps : 1); r++) {
        int m = r < 0 ? (ni < 256 ? ni : 256) : ni; /* r = -1: the warm-up */
        double t0 = now_s();
        if (single) {
            float *A = mem, *B = A + n * n, *C = B + n * n;
            cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0f, A, m, B, m,
                        0.0f, C, m);
        } else {
            double *A = mem, *B = A + n * n, *C = B + n * n;
            cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0, A, m, B, m,
                        0.0, C, m);
        }
        double dt = now_s() - t0;
        if (r >= 0 && dt < best)
            best = dt;
    }
    free(mem);
    *elapsed_s = best;
    *gflops = 2.0 * (double)n * (double)n * (double)n / best / 1e9;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct series {
    const char *name;
    double v[64];
    int n;
} series;

static void add(series *s, double v)
{
    if (s->n < 64)
        s->v[s->n++] = v;
}

static double median(series *s)
{
    qsort(s->v, (size_t)s->n, sizeof s->v[0], cmp_double);
    return s->n ? (s->n % 2 ? s->v[s->n / 2] : 0.5 * (s->v[s->n / 2 - 1] + s->v[s->n / 2]))
                : NAN;
}

static void print_row(series *s, double ref, const char *unit)
{
    double m = median(s);
    printf("  %-26s %10.4f %10.4f %10.4f  %s", s->name, m, s->v[0], s->v[s->n - 1], unit);
    if (ref > 0)
        printf("  (%.1fx the plain read)", m / ref);
    printf("\n");
}

/* One streaming pass over the float32 data: what memory bandwidth allows. */
static double plain_read(const nc_tensor *t)
{
    const float *p = (const float *)(const void *)t->data;
    double s[8] = {0};
    size_t n = t->nelem, i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            s[j] += p[i + j];
    for (; i < n; i++)
        s[0] += p[i];
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

/* LeakSanitizer: fontconfig keeps its configuration for the process's life. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libfontconfig.so\n";
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench FILE.npy [REPEATS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 64)
        reps = 5;
    nc_err err = {0};
    nc_dump *dump;
    if (nc_dump_open(argv[1], &dump, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    const nc_tensor *x = nc_dump_tensor(dump, 0);
    if (x->dtype != NC_F32) {
        fprintf(stderr, "bench: expected a float32 tensor\n");
        return 1;
    }
    double mb = (double)x->nbytes / 1e6;
    printf("layer %s: %zu x %zu float32 (%.1f MB), %d repeats, threads: all CPUs\n", x->name,
           x->N, x->d, mb, reps);

    series read = {"plain read", .n = 0}, hash = {"sha256 of the file", .n = 0};
    series total = {"analysis (all fits)", .n = 0}, stats = {"  stats", .n = 0},
           bins = {"  bins", .n = 0}, fits = {"  fits (on the bins)", .n = 0},
           chan = {"  per-channel DyT", .n = 0}, verify = {"  exact metrics + J sums", .n = 0},
           boot = {"  token bootstrap (1000)", .n = 0};
    series jac = {"jacobian stage", .n = 0}, jan = {"  own pass (real grads)", .n = 0},
           jst = {"  summaries, ranking", .n = 0}, jde = {"  dense check", .n = 0},
           jgf = {"  dense GFLOP/s", .n = 0};
    series fig = {"scatter figure (PNG)", .n = 0};
    int passes = 0;
    volatile double sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        sink += plain_read(x);
        add(&read, now_s() - t0);

        t0 = now_s();
        nc_sha256 c;
        unsigned char h[32];
        nc_sha256_init(&c);
        nc_sha256_update(&c, x->data - x->file_offset, nc_dump_bytes(dump));
        nc_sha256_final(&c, h);
        add(&hash, now_s() - t0);

        nc_layer_spec spec;
        nc_layer_spec_defaults(&spec);
        spec.name = "bench";
        spec.x = x;
        spec.jacobian = true; /* as a run with the Jacobian: its sums in the verify pass */
        nc_layer_result res;
        t0 = now_s();
        if (nc_layer_analyze(&spec, &res, &err) != 0) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        add(&total, now_s() - t0);
        add(&stats, res.time_stats_s);
        add(&bins, res.time_bins_s);
        add(&fits, res.time_fits_s);
        add(&chan, res.time_channel_s);
        add(&verify, res.time_verify_s);
        add(&boot, res.time_boot_s);
        passes = res.passes;

        nc_jac_result jr;
        t0 = now_s();
        if (nc_jacobian_run(&res, x, NULL, NULL, NULL, 0, NULL, &jr, &err) != 0) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        add(&jac, now_s() - t0);
        add(&jan, jr.time_analytic_s);
        add(&jde, jr.time_dense_s);
        add(&jst, jr.time_stats_s);
        add(&jgf, jr.time_dense_s > 0 ? jr.dense.flops / jr.time_dense_s / 1e9 : 0);
        nc_jac_result_free(&jr);
        nc_layer_result_free(&res);
    }

    /* the scatter figure: a plan (fits, no Jacobian) then the figure alone */
    char json[4096], dir[] = "/tmp/normcmp_bench_XXXXXX";
    snprintf(json, sizeof json,
             "{\"name\": \"bench\", \"jacobian\": {\"enabled\": false}, "
             "\"layers\": [{\"file\": \"%s\", \"label\": \"bench\"}], "
             "\"figures\": [{\"type\": \"scatter\"}]}", argv[1]);
    nc_config *cfg;
    nc_plan *plan;
    if (!mkdtemp(dir) || nc_config_parse(json, strlen(json), "bench.json", &cfg, &err) != 0 ||
        nc_plan_open(cfg, &plan, &err) != 0 || nc_plan_run(plan, NULL, &err) != 0) {
        fprintf(stderr, "bench: %s\n", err.msg);
        return 1;
    }
    for (int r = 0; r < reps; r++) {
        nc_outset *set;
        size_t nfiles = 0;
        char *files[4];
        if (nc_outset_alloc(dir, &set, &err) != 0)
            return 1;
        double t0 = now_s();
        if (nc_figures_render(plan, cfg->figures, cfg->nfigures, "bench", 0, set, files, 4,
                              &nfiles, NULL, &err) != 0) {
            fprintf(stderr, "bench: %s\n", err.msg);
            return 1;
        }
        add(&fig, now_s() - t0);
        nc_outset_abort(set); /* nothing is kept */
        for (size_t k = 0; k < nfiles; k++)
            free(files[k]);
    }
    rmdir(dir);
    nc_plan_close(plan);
    nc_config_free(cfg);
    double ref = median(&read);
    printf("\n  %-26s %10s %10s %10s\n", "stage", "median s", "min s", "max s");
    print_row(&read, 0, "s");
    printf("  %-26s %10.1f GB/s\n", "  plain read rate", (double)x->nbytes / ref / 1e9);
    print_row(&hash, ref, "s");
    print_row(&total, ref, "s");
    print_row(&stats, ref, "s");
    print_row(&bins, ref, "s");
    print_row(&fits, ref, "s");
    print_row(&chan, ref, "s");
    print_row(&verify, ref, "s");
    print_row(&boot, ref, "s");
    printf("  %-26s %10d\n", "  passes over the data", passes);
    print_row(&jac, ref, "s");
    print_row(&jan, ref, "s");
    print_row(&jst, ref, "s");
    print_row(&jde, ref, "s");
    print_row(&jgf, 0, "GFLOP/s");
    print_row(&fig, ref, "s");

    double sg = 0, dg = 0, el;
    if (blas_rate(2048, true, 3, &sg, &el, &err) == 0 &&
        blas_rate(2048, false, 3, &dg, &el, &err) == 0)
        printf("  %-26s %10.1f GFLOP/s sgemm, %.1f GFLOP/s dgemm (2048^3, best of 3)\n",
               "OpenBLAS on this machine", sg, dg);
    nc_dump_close(dump);
    return sink == 12345.678 ? 3 : 0;
}
