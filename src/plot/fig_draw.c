/*
 * fig_draw.c - drawing and storing the jobs of nc_figures_render
 * (figures_internal.h, nc_fig_draw_all): PNGs on worker threads, PDF and
 * SVG in order, everything stored into the output set in job order.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core/par.h"
#include "plan/plan.h"
#include "plot/figures_internal.h"
#include "util/outfile.h"

/* ------------------------------------------------------ drawing jobs */

/* The jobs' PNGs are drawn (laid out, rendered, encoded: cairo and libpng,
 * one core each) by `threads` worker threads at once, each taking the next
 * job, into buffers, while this thread stores them in job order, drawing
 * their PDF and SVG first; so the output set and the file list do not depend
 * on the threads. PNG-only runs stream: the workers run at most two jobs per
 * thread ahead of the storing, so memory stays a few figures whatever their
 * number. With PDF or SVG asked for, all PNGs are drawn first: cairo numbers
 * those formats' elements from one counter of the process, which every
 * surface drawn before moves on, so each PDF and SVG must follow the same
 * surfaces on every run (figures_internal.h). A run over a model's layers
 * draws one scatter per layer: about half the wall time on two cores. */
typedef struct draw_ctx {
    job **jobs;           /* [n] */
    size_t n;
    const nc_plan *plan;
    const char *command;
    nc_membuf (*out)[3]; /* [njobs][3] */
    int *rc;             /* [njobs] */
    nc_err *errs;        /* [njobs] */
    bool *drawn;         /* [njobs] its PNG is drawn (rc set) */
    size_t next;         /* the next job to draw */
    size_t stored;       /* jobs stored so far */
    size_t ahead;        /* how far drawing may run ahead of storing */
    bool stop;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} draw_ctx;

static void draw_png(draw_ctx *dc, size_t k)
{
    dc->rc[k] = nc_fig_draw_job(dc->jobs[k], dc->command, dc->plan, NC_FIGFMT_PNG,
                                dc->out[k], &dc->errs[k]);
}

static void *draw_worker(void *arg)
{
    draw_ctx *dc = arg;
    const size_t n = dc->n;
    pthread_mutex_lock(&dc->lock);
    for (;;) {
        while (!dc->stop && dc->next < n && dc->next >= dc->stored + dc->ahead)
            pthread_cond_wait(&dc->cond, &dc->lock);
        if (dc->stop || dc->next >= n)
            break;
        size_t k = dc->next++;
        pthread_mutex_unlock(&dc->lock);
        draw_png(dc, k);
        pthread_mutex_lock(&dc->lock);
        dc->drawn[k] = true;
        pthread_cond_broadcast(&dc->cond);
    }
    pthread_mutex_unlock(&dc->lock);
    return NULL;
}

/* Waits until job k's PNG is drawn (by a worker, or here when there are
 * none). */
static void await_png(draw_ctx *dc, size_t k, int workers)
{
    if (workers == 0) {
        if (!dc->drawn[k])
            draw_png(dc, k);
        dc->drawn[k] = true;
        return;
    }
    pthread_mutex_lock(&dc->lock);
    while (!dc->drawn[k])
        pthread_cond_wait(&dc->cond, &dc->lock);
    pthread_mutex_unlock(&dc->lock);
}

/* Job k, its PNG drawn: its PDF and SVG, then all stored into set; its
 * buffers freed. */
static int store_one(draw_ctx *dc, size_t k, struct nc_outset *set, char **files, size_t cap,
                     size_t *nfiles, nc_err *err)
{
    int rc = dc->rc[k];
    if (rc)
        *err = dc->errs[k];
    else
        rc = nc_fig_draw_job(dc->jobs[k], dc->command, dc->plan, ~(unsigned)NC_FIGFMT_PNG,
                             dc->out[k], err);
    if (!rc)
        rc = nc_fig_store_job(dc->jobs[k], dc->out[k], set, files, cap, nfiles, err);
    for (int f = 0; f < 3; f++)
        nc_membuf_free(&dc->out[k][f]);
    return rc;
}

int nc_fig_draw_all(job **jobs, size_t n, const nc_plan *plan, const char *command, int threads,
                    struct nc_outset *set, char **files, size_t cap, size_t *nfiles, nc_err *err)
{
    if (n == 0)
        return 0;
    draw_ctx dc = {.jobs = jobs, .n = n, .plan = plan, .command = command};
    dc.out = calloc(n, sizeof *dc.out);
    dc.rc = calloc(n, sizeof *dc.rc);
    dc.errs = calloc(n, sizeof *dc.errs);
    dc.drawn = calloc(n, sizeof *dc.drawn);
    if (!dc.out || !dc.rc || !dc.errs || !dc.drawn) {
        free(dc.out);
        free(dc.rc);
        free(dc.errs);
        free(dc.drawn);
        return nc_err_set(err, NC_ENOMEM, "out of memory for figures");
    }
    pthread_mutex_init(&dc.lock, NULL);
    pthread_cond_init(&dc.cond, NULL);
    bool vector = false;
    for (size_t k = 0; k < n; k++)
        vector = vector || (jobs[k]->spec->formats & (NC_FIGFMT_PDF | NC_FIGFMT_SVG));
    int nt = threads > 0 ? threads : nc_default_threads();
    if ((size_t)nt > n)
        nt = (int)n;
    dc.ahead = vector ? n : 2 * (size_t)nt;
    pthread_t tids[NC_SHARDS];
    int workers = 0; /* one thread: everything here, in order */
    for (int k = 0; nt > 1 && k < nt && k < NC_SHARDS; k++) {
        if (pthread_create(&tids[workers], NULL, draw_worker, &dc) != 0)
            break; /* fewer threads: the jobs are taken dynamically */
        workers++;
    }
    for (size_t k = 0; vector && k < n; k++) /* every PNG before any PDF or SVG */
        await_png(&dc, k, workers);
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        await_png(&dc, k, workers);
        rc = store_one(&dc, k, set, files, cap, nfiles, err);
        pthread_mutex_lock(&dc.lock);
        dc.stored = k + 1;
        pthread_cond_broadcast(&dc.cond);
        pthread_mutex_unlock(&dc.lock);
    }
    pthread_mutex_lock(&dc.lock);
    dc.stop = true;
    pthread_cond_broadcast(&dc.cond);
    pthread_mutex_unlock(&dc.lock);
    for (int k = 0; k < workers; k++)
        pthread_join(tids[k], NULL);
    for (size_t k = 0; k < n; k++) /* jobs drawn ahead of a failure */
        for (int f = 0; f < 3; f++)
            nc_membuf_free(&dc.out[k][f]);
    pthread_mutex_destroy(&dc.lock);
    pthread_cond_destroy(&dc.cond);
    free(dc.out);
    free(dc.rc);
    free(dc.errs);
    free(dc.drawn);
    return rc;
}

