/*
 * inputs.c - the FILE arguments of fit, jacobian and plot as layers
 * (cli.h cli_input_files): what a glob of a dump folder or a folder of
 * .npy files means.
 *
 *   - A folder that holds .npy files and no .safetensors file is its .npy
 *     files, in name order (a folder of safetensors shards stays one
 *     sharded dump, io/shards.h).
 *   - A companion named beside its layer's input (<prefix>_output.npy,
 *     _weight, _bias, _grad_output with <prefix>_input.npy among the
 *     files, as a shell glob of data/vit4mnist gives them) belongs to that layer,
 *     which finds it by name (plan.h): it is not a layer of its own.
 *   - A one-dimensional .npy (a weight or a bias) is not a layer unless it
 *     is the only file given.
 *
 * What was left out is said in one line on stderr (unless quiet).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "io/dump.h"

static const char *const comps[] = {"output", "weight", "bias", "grad_output"};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct list {
    char **v;
    size_t n, cap;
} list;

static int push(list *l, char *s, nc_err *err)
{
    if (!s)
        return nc_err_set(err, NC_ENOMEM, "out of memory");
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v) {
            free(s);
            return nc_err_set(err, NC_ENOMEM, "out of memory");
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

/* The .npy files of folder dir, sorted, when it has some and no
 * .safetensors file (else nothing is added and *used is false). */
static int npy_folder(const char *dir, list *out, bool *used, nc_err *err)
{
    *used = false;
    DIR *d = opendir(dir);
    if (!d)
        return 0; /* the dump reader says why */
    list found = {0};
    bool safetensors = false;
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        safetensors |= ends_with(e->d_name, ".safetensors") ||
                       ends_with(e->d_name, ".safetensors.index.json");
        if (!ends_with(e->d_name, ".npy") || e->d_name[0] == '.')
            continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(n);
        if (p)
            snprintf(p, n, "%s%s%s", dir, ends_with(dir, "/") ? "" : "/", e->d_name);
        rc = push(&found, p, err);
    }
    closedir(d);
    if (!rc && found.n && !safetensors) {
        qsort(found.v, found.n, sizeof *found.v, cmp_str);
        for (size_t k = 0; k < found.n && !rc; k++) {
            rc = push(out, found.v[k], err);
            found.v[k] = NULL;
        }
        *used = true;
    }
    for (size_t k = 0; k < found.n; k++)
        free(found.v[k]);
    free(found.v);
    return rc;
}

/* Whether path is "<prefix>_<companion>.npy" with "<prefix>_input.npy"
 * among files. */
static bool companion_of_listed(const char *path, const list *files)
{
    for (size_t c = 0; c < sizeof comps / sizeof *comps; c++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "_%s.npy", comps[c]);
        if (!ends_with(path, suffix))
            continue;
        size_t pre = strlen(path) - strlen(suffix);
        for (size_t k = 0; k < files->n; k++) {
            const char *o = files->v[k];
            if (strlen(o) == pre + strlen("_input.npy") && strncmp(o, path, pre) == 0 &&
                strcmp(o + pre, "_input.npy") == 0)
                return true;
        }
    }
    return false;
}

/* Whether path is a .npy file of one dimension (unreadable files count as
 * not: the dump reader reports them). */
static bool one_dimensional(const char *path)
{
    if (!ends_with(path, ".npy"))
        return false;
    nc_dump *d;
    nc_err e = {0};
    if (nc_dump_open(path, &d, &e) != 0)
        return false;
    bool one = nc_dump_count(d) == 1 && nc_dump_tensor(d, 0)->rank == 1;
    nc_dump_close(d);
    return one;
}

/* "normcmp: <what>: a, b, c (and N more)" on stderr */
static void note(const char *what, char **names, size_t n)
{
    if (n == 0)
        return;
    fprintf(stderr, "normcmp: %s:", what);
    for (size_t k = 0; k < n && k < 3; k++)
        fprintf(stderr, "%s %s", k ? "," : "", names[k]);
    if (n > 3)
        fprintf(stderr, " and %zu more", n - 3);
    fputc('\n', stderr);
}

int cli_input_files(char **args, int nargs, bool quiet, char ***out, int *nout, nc_err *err)
{
    list all = {0}, keep = {0}, comp = {0}, flat = {0};
    int rc = 0;
    for (int k = 0; k < nargs && !rc; k++) {
        struct stat st;
        bool used = false;
        if (stat(args[k], &st) == 0 && S_ISDIR(st.st_mode))
            rc = npy_folder(args[k], &all, &used, err);
        if (!rc && !used)
            rc = push(&all, strdup(args[k]), err);
    }
    for (size_t k = 0; k < all.n && !rc; k++)
        rc = push(companion_of_listed(all.v[k], &all) ? &comp : &keep, strdup(all.v[k]), err);
    if (!rc && keep.n > 1) { /* one-dimensional files are no layers among others */
        size_t m = 0;
        for (size_t k = 0; k < keep.n; k++) {
            if (one_dimensional(keep.v[k]) && !(rc = push(&flat, keep.v[k], err)))
                continue;
            keep.v[m++] = keep.v[k];
        }
        keep.n = m;
    }
    if (!rc && keep.n == 0 && flat.n) /* only 1-D files: analysed as asked */
        for (size_t k = 0; k < flat.n; k++) {
            keep.v[keep.n++] = flat.v[k];
            flat.v[k] = NULL;
        }
    if (!rc && !quiet) {
        if (comp.n)
            fprintf(stderr, "normcmp: %zu companion file%s (_output, _weight, _bias, "
                    "_grad_output.npy beside a layer's _input.npy) go%s with %s layer%s, not "
                    "analysed as layer%s\n", comp.n, comp.n == 1 ? "" : "s",
                    comp.n == 1 ? "es" : "", comp.n == 1 ? "its" : "their",
                    comp.n == 1 ? "" : "s", comp.n == 1 ? "" : "s");
        note("left out, one-dimensional (a weight or bias; name one alone to analyse it "
             "as one token)", flat.v, flat.n);
    }
    for (size_t k = 0; k < all.n; k++)
        free(all.v[k]);
    for (size_t k = 0; k < comp.n; k++)
        free(comp.v[k]);
    for (size_t k = 0; k < flat.n; k++)
        free(flat.v[k]);
    free(all.v);
    free(comp.v);
    free(flat.v);
    if (rc) {
        for (size_t k = 0; k < keep.n; k++)
            free(keep.v[k]);
        free(keep.v);
        return rc;
    }
    *out = keep.v;
    *nout = (int)keep.n;
    return 0;
}
