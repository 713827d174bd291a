/*
 * fuzz_config.c - libFuzzer target for the config parser
 * (config/config.h, nc_config_parse: JSON text, the whole schema; it opens
 * no file).
 *
 * Each input is parsed twice: from an exact-size heap copy (ASan checks
 * both ends) and from a copy ending at a PROT_NONE page (guard.h), so an
 * over-read inside the uninstrumented cJSON faults too; the text is not
 * NUL-terminated. On success the config is walked (every string read,
 * every list) and the ranges the schema promises are checked; on failure
 * the error must be a documented code with a one-line message naming the
 * file, and no result. Then everything is freed (libFuzzer's leak check
 * sees what is not). A broken invariant aborts. Never prints.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "strict_json.h"
#include "plot/figures.h"
#include "config/config.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* In a folder, so that relative input paths are resolved against it. */
#define PATH "fz/in.json"

/* A non-empty owned string (reads every byte). */
static void check_str(const char *s)
{
    REQUIRE(s && strlen(s) > 0);
    /* every accepted string is UTF-8 and goes into report.json strictly */
    REQUIRE(nc_utf8_valid(s, strlen(s), NULL));
    const char *one_string[1] = {s};
    require_strict_report(one_string, 1);
}

/* An input path: absolute, or resolved against the config's folder. */
static void check_input_path(const char *s)
{
    check_str(s);
    REQUIRE(s[0] == '/' || strncmp(s, "fz/", 3) == 0);
}

static void check_strings(char *const *v, size_t n)
{
    REQUIRE(n == 0 || v);
    for (size_t k = 0; k < n; k++)
        check_str(v[k]);
}

static void check_grid(const double *g, size_t n)
{
    REQUIRE(n == 0 || g);
    for (size_t k = 0; k < n; k++)
        REQUIRE(g[k] > 0 && isfinite(g[k]) && (k == 0 || g[k] > g[k - 1]));
}

static void check_layer(const nc_config *cfg, const nc_config_layer *l)
{
    REQUIRE(l->synth == (l->file == NULL));
    if (l->file)
        check_input_path(l->file);
    if (l->label)
        check_str(l->label);
    check_strings(l->tensors, l->ntensors);
    for (int c = 0; c < NC_COMP_COUNT; c++) {
        if (l->comp[c]) {
            REQUIRE(!l->synth);
            check_input_path(l->comp[c]);
        }
    }
    if (l->synth) {
        const nc_synth_params *p = &l->synth_params;
        check_str(l->synth_preset);
        REQUIRE(p->N >= 1 && p->d >= 1 && (double)p->N * (double)p->d <= 1e9);
        REQUIRE(p->outliers <= p->d);
    }
    double eps = nc_config_layer_eps(cfg, l);
    REQUIRE(eps >= 0 && eps <= 1);
    nc_norm_kind norm = nc_config_layer_norm(cfg, l);
    (void)norm;
}

static void check_figure(const nc_fig_spec *f)
{
    REQUIRE((unsigned)f->kind < NC_FIG_COUNT);
    check_strings(f->layers, f->nlayers);
    REQUIRE(f->formats <= (NC_FIGFMT_PNG | NC_FIGFMT_PDF | NC_FIGFMT_SVG));
    REQUIRE(f->nalphas <= NC_FIG_MAX_ALPHAS);
    for (size_t k = 0; k < f->nalphas; k++)
        REQUIRE(f->alphas[k] > 0 && isfinite(f->alphas[k]));
    REQUIRE(f->tokens <= 64 && f->cols >= 0 && f->cols <= 16);
    if (f->name)
        check_str(f->name);
}

static void check_config(const nc_config *cfg)
{
    REQUIRE(cfg->source && strcmp(cfg->source, PATH) == 0);
    check_str(cfg->name);
    if (cfg->output)
        check_str(cfg->output);
    REQUIRE(!cfg->has_eps || (cfg->eps >= 0 && cfg->eps <= 1));
    REQUIRE(cfg->threads >= 0 && cfg->threads <= 16);
    REQUIRE(cfg->nlayers > 0 || cfg->nfigures > 0);
    for (size_t k = 0; k < cfg->nlayers; k++)
        check_layer(cfg, &cfg->layers[k]);
    for (size_t k = 0; k < cfg->nfigures; k++)
        check_figure(&cfg->figures[k]);
    const struct nc_config_sweep *sw = &cfg->sweep;
    if (sw->enabled)
        REQUIRE(sw->nalpha || sw->alpha_auto || sw->nC || sw->C_auto);
    check_grid(sw->alpha, sw->nalpha);
    check_grid(sw->C, sw->nC);
    check_strings(sw->layers, sw->nlayers);
}

static void one(const char *text, size_t size)
{
    static nc_config poison;
    nc_config *cfg = &poison; /* the parser must set it (NULL on failure) */
    nc_err err = {0};
    int rc = nc_config_parse(text, size, PATH, &cfg, &err);
    if (rc == 0) {
        REQUIRE(cfg && err.code == 0 && !err.msg[0]);
        check_config(cfg);
        nc_config_free(cfg);
        return;
    }
    REQUIRE(cfg == NULL);
    REQUIRE(rc == NC_EINVAL || rc == NC_ENOMEM);
    REQUIRE(err.code == rc && err.msg[0] && !strchr(err.msg, '\n'));
    REQUIRE(rc == NC_ENOMEM || strncmp(err.msg, PATH ": ", sizeof PATH + 1) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *heap = heap_copy(data, size);
    one((const char *)heap, size);
    free(heap);
    one((const char *)guard_copy(data, size), size);
    return 0;
}
