/*
 * inspect.c - `normcmp inspect FILE...`: one line per tensor with its name,
 * dtype, shape and the min, max, mean, std and non-finite count of its
 * values (over all elements; non-finite values are counted and left out).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "io/dump.h"

static const char help[] =
    "usage: normcmp inspect FILE...\n"
    "Lists every tensor of each .npy or .safetensors file: name, dtype, shape, and\n"
    "min, max, mean, std and the count of non-finite values (float tensors).\n"
    "\n"
    "  -h, --help   this help\n";

typedef struct tstats {
    double n, mean, m2, min, max;
    size_t nonfinite;
} tstats;

static void tensor_stats(const nc_tensor *t, double *buf, size_t cap, tstats *s)
{
    *s = (tstats){.min = INFINITY, .max = -INFINITY};
    for (size_t i0 = 0; i0 < t->nelem; i0 += cap) {
        size_t n = t->nelem - i0 < cap ? t->nelem - i0 : cap;
        nc_tensor_elems(t, i0, n, buf);
        /* block mean and squared deviations, then Chan et al.'s merge */
        double sum = 0, cnt = 0;
        for (size_t k = 0; k < n; k++) {
            if (!isfinite(buf[k])) {
                s->nonfinite++;
                continue;
            }
            sum += buf[k];
            cnt += 1;
            s->min = fmin(s->min, buf[k]);
            s->max = fmax(s->max, buf[k]);
        }
        if (cnt == 0)
            continue;
        double mean = sum / cnt, m2 = 0;
        for (size_t k = 0; k < n; k++)
            if (isfinite(buf[k]))
                m2 += (buf[k] - mean) * (buf[k] - mean);
        double tot = s->n + cnt, delta = mean - s->mean;
        s->mean += delta * cnt / tot;
        s->m2 += m2 + delta * delta * s->n * cnt / tot;
        s->n = tot;
    }
}

static void cell(double v, bool defined)
{
    if (defined && isfinite(v))
        printf(" %13.6g", v);
    else
        printf(" %13s", "-");
}

int cli_inspect(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "h", opts, "inspect")) != -1) {
        if (c == CLI_OPT_ERROR)
            return 2;
        if (c == 'h') {
            fputs(help, stdout);
            return cli_finish_stdout(0);
        }
        return cli_usage_error("inspect", "unknown option");
    }
    if (optind >= argc)
        return cli_usage_error("inspect", "expected at least one FILE");

    /* open every file first, so that a bad one fails before any output */
    int nfiles = argc - optind, status = 0;
    nc_dump **dumps = calloc((size_t)nfiles, sizeof *dumps);
    enum { CAP = 1 << 16 };
    double *buf = malloc(CAP * sizeof *buf);
    nc_err err = {0};
    if (!dumps || !buf) {
        nc_err_set(&err, NC_ENOMEM, "out of memory");
        status = cli_fail(&err);
        goto out;
    }
    int namew = 4;
    for (int k = 0; k < nfiles; k++) {
        if (nc_dump_open(argv[optind + k], &dumps[k], &err) != 0) {
            status = cli_fail(&err);
            goto out;
        }
        for (size_t j = 0; j < nc_dump_count(dumps[k]); j++) {
            int n = (int)strlen(nc_dump_tensor(dumps[k], j)->name);
            namew = n > namew ? n : namew;
        }
    }
    for (int k = 0; k < nfiles; k++) {
        if (nfiles > 1)
            printf("%s%s:\n", k ? "\n" : "", nc_dump_path(dumps[k]));
        printf("%-*s %-7s %-16s %13s %13s %13s %13s %10s\n", namew, "name", "dtype", "shape",
               "min", "max", "mean", "std", "nonfinite");
        for (size_t j = 0; j < nc_dump_count(dumps[k]); j++) {
            const nc_tensor *t = nc_dump_tensor(dumps[k], j);
            char shape[256], *o = shape;
            nc_tensor_shape_str(t, shape, sizeof shape);
            for (const char *p = shape; *p; p++) /* "[30,7]": one column for awk */
                if (*p != ' ')
                    *o++ = *p;
            *o = '\0';
            printf("%-*s %-7s %-16s", namew, t->name, nc_dtype_name(t->dtype), shape);
            if (!nc_dtype_is_float(t->dtype)) {
                printf(" %13s %13s %13s %13s %10s\n", "-", "-", "-", "-", "-");
                continue;
            }
            tstats s;
            tensor_stats(t, buf, CAP, &s);
            bool any = s.n > 0;
            cell(s.min, any);
            cell(s.max, any);
            cell(s.mean, any);
            cell(any ? sqrt(s.m2 / s.n) : NAN, any);
            printf(" %10zu\n", s.nonfinite);
        }
    }
    status = cli_finish_stdout(0);
out:
    for (int k = 0; dumps && k < nfiles; k++)
        nc_dump_close(dumps[k]);
    free(dumps);
    free(buf);
    return status;
}
