/*
 * par.c - the sharded, threaded streaming pass (par.h).
 *
 * Threads take whole shards from an atomic counter; within a shard, rows are
 * converted to double a block at a time into the thread's own buffer.
 */
#include "core/par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

size_t nc_shard_begin(size_t n, int k)
{
    /* n * k / NC_SHARDS without overflow for any n < 2^62 */
    return (n / NC_SHARDS) * (size_t)k + (n % NC_SHARDS) * (size_t)k / NC_SHARDS;
}

int nc_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > NC_SHARDS ? NC_SHARDS : (int)n;
}

typedef struct job {
    const nc_pass *pass;
    nc_block_fn fn;
    void *ctx;
    atomic_int next_shard;
    size_t block_rows;
} job;

typedef struct worker {
    job *job;
    double *rows;
    uint16_t *codes; /* [block_rows * d] when the pass asks for codes */
    void *scratch;
} worker;

/* The 16-bit codes of n elements at byte p (little-endian, any alignment). */
static void copy_codes(const unsigned char *p, size_t n, uint16_t *out)
{
    for (size_t k = 0; k < n; k++)
        out[k] = (uint16_t)(p[2 * k] | (p[2 * k + 1] << 8));
}

static void run_shard(worker *w, int shard)
{
    const nc_pass *p = w->job->pass;
    const nc_tensor *x = p->x;
    size_t n = p->tokens ? p->ntokens : x->N;
    size_t b = nc_shard_begin(n, shard), e = nc_shard_begin(n, shard + 1);
    for (size_t t0 = b; t0 < e; t0 += w->job->block_rows) {
        size_t nt = e - t0 < w->job->block_rows ? e - t0 : w->job->block_rows;
        if (p->tokens)
            for (size_t k = 0; k < nt; k++)
                nc_tensor_rows(x, p->tokens[t0 + k], 1, w->rows + k * x->d);
        else
            nc_tensor_rows(x, t0, nt, w->rows);
        if (w->codes && p->tokens)
            for (size_t k = 0; k < nt; k++)
                copy_codes(x->data + 2 * p->tokens[t0 + k] * x->d, x->d, w->codes + k * x->d);
        else if (w->codes)
            copy_codes(x->data + 2 * t0 * x->d, nt * x->d, w->codes);
        w->job->fn(w->job->ctx, shard, t0, nt, w->rows, w->codes, w->scratch);
        nc_progress_add(p->progress, (uint64_t)(nt * x->d));
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (;;) {
        int s = atomic_fetch_add(&w->job->next_shard, 1);
        if (s >= NC_SHARDS)
            break;
        run_shard(w, s);
    }
    return NULL;
}

int nc_pass_run(const nc_pass *pass, nc_block_fn fn, void *ctx, nc_err *err)
{
    const nc_tensor *x = pass->x;
    int nthreads = pass->threads > 0 ? pass->threads : nc_default_threads();
    if (nthreads > NC_SHARDS)
        nthreads = NC_SHARDS;
    size_t d = x->d ? x->d : 1, n = pass->tokens ? pass->ntokens : x->N;
    /* no more threads than the work is worth (par.h) */
    size_t useful = n / NC_PASS_POINTS_PER_THREAD * d + (n % NC_PASS_POINTS_PER_THREAD) * d /
                                                            NC_PASS_POINTS_PER_THREAD + 1;
    if ((size_t)nthreads > useful)
        nthreads = (int)useful;
    /* a block is at most a shard: no buffer beyond what a shard can fill */
    size_t block_rows = NC_BLOCK_BYTES / (d * sizeof(double));
    if (block_rows > n / NC_SHARDS + 1)
        block_rows = n / NC_SHARDS + 1;
    if (block_rows < 1)
        block_rows = 1;

    job j = {.pass = pass, .fn = fn, .ctx = ctx, .block_rows = block_rows};
    atomic_init(&j.next_shard, 0);
    worker ws[NC_SHARDS] = {{0}};
    pthread_t tids[NC_SHARDS];
    int started = 0, rc = 0;
    const bool codes = pass->codes && (x->dtype == NC_F16 || x->dtype == NC_BF16);
    for (int k = 0; k < nthreads; k++) {
        ws[k].job = &j;
        ws[k].rows = malloc(block_rows * d * sizeof(double));
        ws[k].codes = codes ? malloc(block_rows * d * sizeof(uint16_t)) : NULL;
        ws[k].scratch = pass->scratch_bytes ? calloc(1, pass->scratch_bytes) : NULL;
        if (!ws[k].rows || (codes && !ws[k].codes) || (pass->scratch_bytes && !ws[k].scratch)) {
            rc = nc_err_set(err, NC_ENOMEM, "out of memory for a pass buffer (%zu bytes)",
                            block_rows * d * (sizeof(double) + (codes ? sizeof(uint16_t) : 0)) +
                                pass->scratch_bytes);
            nthreads = k + 1;
            goto out;
        }
    }
    /* worker 0 is this thread; the others are started */
    for (int k = 1; k < nthreads; k++) {
        if (pthread_create(&tids[k], NULL, worker_main, &ws[k]) != 0)
            break; /* fewer threads: still correct, shards are taken dynamically */
        started = k;
    }
    worker_main(&ws[0]);
    for (int k = 1; k <= started; k++)
        pthread_join(tids[k], NULL);
out:
    for (int k = 0; k < nthreads; k++) {
        free(ws[k].rows);
        free(ws[k].codes);
        free(ws[k].scratch);
    }
    return rc;
}
