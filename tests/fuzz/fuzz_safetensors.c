/*
 * fuzz_safetensors.c - libFuzzer target for the safetensors parser
 * (io/safetensors.h).
 *
 * Each input is parsed twice: from an exact-size heap copy (ASan checks
 * both ends) and from a copy ending at a PROT_NONE page (guard.h), so an
 * over-read inside the uninstrumented cJSON faults too. On success every
 * tensor's invariants are checked (inside the file, no overlap, found by
 * name), the first and last element of each float tensor read, and the
 * tensors written again with nc_st_write and parsed back, which must give
 * the same names, types, shapes and bytes. On failure the error must be a
 * documented code with a one-line message and no result. A broken
 * invariant aborts. Never prints.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "guard.h"
#include "strict_json.h"
#include "io/safetensors.h"
#include "util/err.h"
#include "util/sink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PATH "f.safetensors"

static void check_error(int rc, const nc_st *st, const nc_err *err)
{
    REQUIRE(st == NULL);
    REQUIRE(rc == NC_EFORMAT || rc == NC_EUNSUPPORTED || rc == NC_ERANGE || rc == NC_ENOMEM);
    REQUIRE(err->code == rc);
    REQUIRE(err->msg[0] && !strchr(err->msg, '\n'));
    REQUIRE(rc == NC_ENOMEM || strncmp(err->msg, PATH ": ", sizeof PATH + 1) == 0);
}

static int cmp_offset(const void *a, const void *b)
{
    const nc_tensor *ta = *(const nc_tensor *const *)a, *tb = *(const nc_tensor *const *)b;
    return ta->file_offset < tb->file_offset ? -1 : ta->file_offset > tb->file_offset;
}

/* One accepted tensor: its fields agree, its bytes are inside the file. */
static void check_tensor(const nc_st *st, const nc_tensor *t, const unsigned char *buf,
                         size_t len)
{
    REQUIRE(t->name != NULL && nc_st_find(st, t->name) == t);
    REQUIRE(nc_dtype_size(t->dtype) > 0);
    REQUIRE(t->rank >= 0 && t->rank <= NC_MAX_RANK);
    if (t->rank == 0) {
        REQUIRE(t->N == 1 && t->d == 1);
    } else {
        REQUIRE(t->d == t->shape[t->rank - 1]);
    }
    REQUIRE(t->nelem == t->N * t->d);
    REQUIRE(t->nbytes == t->nelem * nc_dtype_size(t->dtype));
    REQUIRE(t->file_offset >= 8 && t->file_offset <= len && t->data == buf + t->file_offset);
    REQUIRE(t->nbytes <= len - t->file_offset);
    if (t->nbytes) {
        volatile unsigned char first = t->data[0], last = t->data[t->nbytes - 1];
        (void)first;
        (void)last;
    }
    if (nc_dtype_is_float(t->dtype) && t->nelem) {
        double v[2];
        nc_tensor_elems(t, 0, 1, v);
        nc_tensor_elems(t, t->nelem - 1, 1, v + 1);
        volatile double keep = v[0] + v[1];
        (void)keep;
    }
}

/* The non-empty tensors do not overlap. */
static void check_disjoint(const nc_st *st, size_t n)
{
    const nc_tensor **order = malloc((n ? n : 1) * sizeof *order);
    REQUIRE(order);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (nc_st_tensor(st, i)->nbytes)
            order[m++] = nc_st_tensor(st, i);
    qsort(order, m, sizeof *order, cmp_offset);
    for (size_t i = 1; i < m; i++)
        REQUIRE(order[i - 1]->file_offset + order[i - 1]->nbytes <= order[i]->file_offset);
    free(order);
}

/* Writing the tensors again and parsing the result gives them back. The
 * writer refuses only names that are not UTF-8 (the parser keeps any
 * bytes cJSON accepts). */
static void check_round_trip(const nc_st *st, size_t n)
{
    nc_st_entry *e = malloc((n ? n : 1) * sizeof *e);
    REQUIRE(e);
    for (size_t i = 0; i < n; i++) {
        const nc_tensor *t = nc_st_tensor(st, i);
        e[i] = (nc_st_entry){t->name, t->dtype, t->rank, t->shape, t->data};
    }
    static const char *const meta[] = {"format", "pt", NULL};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    int rc = nc_st_write(&s, e, n, meta, &err);
    if (rc) {
        REQUIRE(rc == NC_EINVAL && strstr(err.msg, ": name invalid, expected a UTF-8 name"));
    } else {
        nc_st *back = NULL;
        REQUIRE(nc_st_parse(mb.data, mb.len, PATH, &back, &err) == 0);
        REQUIRE(nc_st_count(back) == n);
        const char *fmt = nc_st_meta(back, "format");
        REQUIRE(fmt && strcmp(fmt, "pt") == 0);
        for (size_t i = 0; i < n; i++) {
            const nc_tensor *t = nc_st_tensor(st, i), *u = nc_st_tensor(back, i);
            REQUIRE(strcmp(t->name, u->name) == 0 && u->dtype == t->dtype &&
                    u->rank == t->rank && u->nbytes == t->nbytes);
            REQUIRE(memcmp(u->shape, t->shape, (size_t)t->rank * sizeof *t->shape) == 0);
            REQUIRE(!t->nbytes || memcmp(u->data, t->data, t->nbytes) == 0);
        }
        nc_st_free(back);
    }
    nc_membuf_free(&mb);
    free(e);
}

static void one(const unsigned char *buf, size_t size)
{
    static unsigned char poison;
    nc_st *st = (nc_st *)(void *)&poison; /* the parser must set it (NULL on failure) */
    nc_err err = {0};
    int rc = nc_st_parse(buf, size, PATH, &st, &err);
    if (rc) {
        check_error(rc, st, &err);
        return;
    }
    REQUIRE(st && err.code == 0 && !err.msg[0]);
    size_t n = nc_st_count(st);
    REQUIRE(nc_st_tensor(st, n) == NULL);
    for (size_t i = 0; i < n; i++)
        check_tensor(st, nc_st_tensor(st, i), buf, size);
    check_disjoint(st, n);
    const char *fmt = nc_st_meta(st, "format");
    if (fmt)
        (void)strlen(fmt);
    /* accepted names are UTF-8: a report holding them is strict JSON */
    const char **names = malloc((n + 2) * sizeof *names);
    REQUIRE(names);
    for (size_t i = 0; i < n; i++) {
        names[i] = nc_st_tensor(st, i)->name;
        REQUIRE(nc_utf8_valid(names[i], strlen(names[i]), NULL));
    }
    names[n] = fmt ? fmt : "";
    require_strict_report(names, n + 1);
    free(names);
    check_round_trip(st, n);
    nc_st_free(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *heap = heap_copy(data, size);
    one(heap, size);
    free(heap);
    one(guard_copy(data, size), size);
    return 0;
}
