/*
 * fuzz_index.c - libFuzzer target for the safetensors index parser
 * (io/shards.h, nc_index_parse: the JSON text of a
 * model.safetensors.index.json; it opens no file).
 *
 * Each input is parsed twice: from an exact-size heap copy (ASan checks
 * both ends) and from a copy ending at a PROT_NONE page (guard.h), so an
 * over-read inside the uninstrumented cJSON faults too. On success every
 * entry is checked (a non-empty name listed once, a non-empty relative
 * shard name, its shard index in range, the shard list sorted and
 * distinct); on failure the error must be a documented code with a
 * one-line message naming the file, and no result. A broken invariant
 * aborts. Never prints.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "io/shards.h"
#include "util/err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PATH "m.safetensors.index.json"

static void one(const unsigned char *buf, size_t size)
{
    static nc_index poison;
    nc_index *ix = &poison; /* the parser must set it (NULL on failure) */
    nc_err err = {0};
    int rc = nc_index_parse((const char *)buf, size, PATH, &ix, &err);
    if (rc) {
        REQUIRE(ix == NULL);
        REQUIRE(rc == NC_EFORMAT || rc == NC_ENOMEM);
        REQUIRE(err.code == rc && err.msg[0] && !strchr(err.msg, '\n'));
        REQUIRE(rc == NC_ENOMEM || strncmp(err.msg, PATH ": ", sizeof PATH + 1) == 0);
        return;
    }
    REQUIRE(ix && err.code == 0 && ix->n > 0 && ix->nfiles > 0 && ix->nfiles <= ix->n);
    for (size_t k = 0; k < ix->nfiles; k++) {
        REQUIRE(ix->files[k][0] && ix->files[k][0] != '/');
        REQUIRE(k == 0 || strcmp(ix->files[k - 1], ix->files[k]) < 0);
    }
    for (size_t k = 0; k < ix->n; k++) {
        REQUIRE(ix->tensor[k][0] && ix->shard[k] < ix->nfiles);
        for (size_t j = 0; j < k; j++)
            REQUIRE(strcmp(ix->tensor[j], ix->tensor[k]) != 0);
    }
    nc_index_free(ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *heap = heap_copy(data, size);
    one(heap, size);
    free(heap);
    one(guard_copy(data, size), size);
    return 0;
}
