/*
 * progress.c - a rate-limited progress line on stderr (progress.h).
 */
#include "util/progress.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

struct nc_progress {
    pthread_mutex_t lock;
    char label[48];
    char stage[24];
    uint64_t total, done;
    double t0, last_draw;
    bool drawn;
    size_t layer, nlayers;          /* the run's layer k of n (0: no run) */
    uint64_t run_done, run_total;   /* points of the layers before, and in all */
    double run_t0;                  /* when the run's first layer began */
};

nc_progress *nc_progress_alloc(bool enabled)
{
    if (!enabled || !isatty(STDERR_FILENO))
        return NULL;
    nc_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

static void draw(nc_progress *p, double t)
{
    enum { WIDTH = 24 };
    double frac = p->total ? (double)p->done / (double)p->total : 0.0;
    if (frac > 1.0)
        frac = 1.0;
    char bar[WIDTH + 1];
    int full = (int)(frac * WIDTH);
    for (int k = 0; k < WIDTH; k++)
        bar[k] = k < full ? '#' : '.';
    bar[WIDTH] = '\0';
    char eta[48] = "";
    if (p->nlayers && p->run_done > 0 && p->run_total > p->run_done) {
        double s = (t - p->run_t0) / (double)p->run_done * (double)(p->run_total - p->run_done);
        if (s >= 60)
            snprintf(eta, sizeof eta, "  ETA %dm%02ds", (int)(s / 60), (int)s % 60);
        else
            snprintf(eta, sizeof eta, "  ETA %.0fs", s);
    }
    if (p->nlayers) {
        fprintf(stderr, "\r\033[Knormcmp: layer %zu of %zu  %-16.16s %-8.8s [%s] %3d%%%s",
                p->layer, p->nlayers, p->label, p->stage, bar, (int)(100 * frac), eta);
    } else {
        double rate = t > p->t0 ? (double)p->done / (t - p->t0) : 0.0;
        fprintf(stderr, "\r\033[Knormcmp: %-16.16s %-12.12s [%s] %3d%%  %.1f Mpt/s", p->label,
                p->stage, bar, (int)(100 * frac), rate / 1e6);
    }
    fflush(stderr);
    p->drawn = true;
    p->last_draw = t;
}

void nc_progress_begin(nc_progress *p, const char *label, const char *stage, uint64_t total)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    snprintf(p->stage, sizeof p->stage, "%s", stage ? stage : "");
    p->total = total;
    p->done = 0;
    p->t0 = nc_now_s();
    draw(p, p->t0);
    pthread_mutex_unlock(&p->lock);
}

void nc_progress_layer(nc_progress *p, size_t k, size_t n, uint64_t points_before,
                       uint64_t total)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    if (!p->nlayers)
        p->run_t0 = nc_now_s();
    p->layer = k;
    p->nlayers = n;
    p->run_done = points_before;
    p->run_total = total;
    pthread_mutex_unlock(&p->lock);
}

void nc_progress_add(nc_progress *p, uint64_t done)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->done += done;
    double t = nc_now_s();
    if (t - p->last_draw >= 0.1)
        draw(p, t);
    pthread_mutex_unlock(&p->lock);
}

void nc_progress_end(nc_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    if (p->drawn)
        fputs("\r\033[K", stderr);
    fflush(stderr);
    p->drawn = false;
    pthread_mutex_unlock(&p->lock);
}

void nc_progress_free(nc_progress *p)
{
    if (!p)
        return;
    nc_progress_end(p);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
