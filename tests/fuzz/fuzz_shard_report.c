/*
 * fuzz_shard_report.c - libFuzzer target for a shard's report.json as
 * `normcmp merge` reads it (report/shardcheck.h, nc_shard_report_parse; it
 * opens no file).
 *
 * Each input is parsed twice: from an exact-size heap copy (ASan checks
 * both ends) and from a copy ending at a PROT_NONE page (guard.h), so an
 * over-read inside the uninstrumented cJSON faults too. On failure the
 * error must be a documented code with a one-line message naming the file,
 * and no result. On success every promise of the checks is checked again
 * here (every string UTF-8, every number finite, the shard's numbers in
 * range, the outputs plain names), and then what merge builds from an
 * accepted report: the run-level block computed from its layers
 * (nc_report_add_run_from_layers) and the whole report printed with
 * merge's exact numbers (nc_report_exact_numbers), which must be strict
 * UTF-8 JSON that reads back (no "inf", no invalid byte). A
 * broken invariant aborts. Never prints.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "guard.h"
#include "io/jsondoc.h"
#include "report/run_block.h"
#include "report/shard.h"
#include "report/shardcheck.h"
#include "util/err.h"
#include "util/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PATH "s/report.json"

/* Every key and string UTF-8, every number finite, below v. */
static void require_clean(const cJSON *v)
{
    for (const cJSON *c = v->child; c; c = c->next) {
        if (c->string)
            REQUIRE(nc_utf8_valid(c->string, strlen(c->string), NULL));
        if (cJSON_IsString(c))
            REQUIRE(nc_utf8_valid(c->valuestring, strlen(c->valuestring), NULL));
        if (cJSON_IsNumber(c))
            REQUIRE(isfinite(c->valuedouble));
        require_clean(c);
    }
}

/* What merge writes from an accepted report reads back as strict JSON. */
static void require_mergeable(const cJSON *root)
{
    cJSON *copy = cJSON_Duplicate(root, true);
    if (!copy)
        return; /* out of memory */
    nc_err err = {0};
    int rc = nc_report_add_run_from_layers(copy, &err);
    REQUIRE(rc == 0 || rc == NC_ENOMEM);
    char *text = rc || !nc_report_exact_numbers(copy) ? NULL : cJSON_Print(copy);
    if (text) {
        size_t n = strlen(text);
        REQUIRE(nc_utf8_valid(text, n, NULL));
        nc_err e2 = {0};
        cJSON *back = nc_json_parse_doc(text, n, "merged", NC_EFORMAT, "", &e2);
        REQUIRE(back || e2.code == NC_ENOMEM);
        if (back)
            require_clean(back);
        cJSON_Delete(back);
        cJSON_free(text);
    }
    cJSON_Delete(copy);
}

static void one(const unsigned char *buf, size_t size)
{
    nc_shard_report r;
    memset(&r, 0xa5, sizeof r); /* the parser must set it (empty on failure) */
    nc_err err = {0};
    int rc = nc_shard_report_parse((const char *)buf, size, PATH, &r, &err);
    if (rc) {
        REQUIRE(r.root == NULL && r.sha == NULL && r.index == 0 && r.count == 0);
        REQUIRE(rc == NC_EFORMAT || rc == NC_ENOMEM);
        REQUIRE(err.code == rc && err.msg[0] && !strchr(err.msg, '\n'));
        REQUIRE(rc == NC_ENOMEM || strncmp(err.msg, PATH ": ", sizeof PATH + 1) == 0);
        return;
    }
    REQUIRE(r.root && err.code == 0 && !err.msg[0]);
    REQUIRE(r.count >= 1 && r.count <= NC_SHARD_COUNT_MAX && r.index >= 1 && r.index <= r.count);
    REQUIRE(r.sha && strlen(r.sha) == 64);
    char sha[65];
    if (nc_report_config_sha256(cJSON_GetObjectItemCaseSensitive(r.root, "config"), sha))
        REQUIRE(strcmp(sha, r.sha) == 0);
    require_clean(r.root);
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(r.root, "outputs"))
    {
        REQUIRE(cJSON_IsString(o) && o->valuestring[0] && !strchr(o->valuestring, '/'));
        REQUIRE(strcmp(o->valuestring, "..") != 0 && strcmp(o->valuestring, ".") != 0);
    }
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(r.root, "layers");
    const cJSON *mine = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(r.root, "shard"), "analysed");
    REQUIRE(cJSON_GetArraySize(layers) == cJSON_GetArraySize(mine));
    require_mergeable(r.root);
    nc_shard_report_free(&r);
    REQUIRE(r.root == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *heap = heap_copy(data, size);
    one(heap, size);
    free(heap);
    one(guard_copy(data, size), size);
    return 0;
}
