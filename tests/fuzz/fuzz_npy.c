/*
 * fuzz_npy.c - libFuzzer target for the .npy parser (io/npy.h).
 *
 * Each input is parsed twice: from an exact-size heap copy (ASan checks
 * both ends) and from a copy ending at a PROT_NONE page (guard.h). On
 * success the view's invariants are checked, the first and last elements
 * read, and the header is written back with nc_npy_write_header and parsed
 * again, which must give the same tensor; on failure the error must be one
 * documented code with a one-line message. A broken invariant aborts, so
 * libFuzzer (or the replay in `make test`) reports it. Never prints.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "guard.h"
#include "strict_json.h"
#include "io/npy.h"
#include "util/err.h"
#include "util/sink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(int rc, const nc_err *err)
{
    REQUIRE(rc == NC_EFORMAT || rc == NC_EUNSUPPORTED || rc == NC_ERANGE);
    REQUIRE(err->code == rc);
    REQUIRE(err->msg[0] && !strchr(err->msg, '\n'));
    REQUIRE(strncmp(err->msg, "f.npy: ", 7) == 0);
}

/* A tensor the parser accepted: invariants, a read of its ends, and the
 * writer's header for it parses back to the same view. */
static void check_tensor(const nc_tensor *t, const unsigned char *buf, size_t len)
{
    REQUIRE(t->name == NULL);
    REQUIRE(t->dtype == NC_F32 || t->dtype == NC_F16 || t->dtype == NC_BF16 ||
            t->dtype == NC_F64);
    REQUIRE(t->rank >= 1 && t->rank <= NC_MAX_RANK);
    REQUIRE(t->d == t->shape[t->rank - 1]);
    REQUIRE(t->nelem == t->N * t->d);
    REQUIRE(t->nbytes == t->nelem * nc_dtype_size(t->dtype));
    REQUIRE(t->file_offset <= len && t->data == buf + t->file_offset);
    REQUIRE(t->nbytes == len - t->file_offset);
    if (t->nelem) {
        double v[2];
        nc_tensor_elems(t, 0, 1, v);
        nc_tensor_elems(t, t->nelem - 1, 1, v + 1);
        volatile double keep = v[0] + v[1];
        (void)keep;
    }

    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    REQUIRE(nc_npy_write_header(&s, t->dtype, t->rank, t->shape, &err) == 0);
    size_t off = mb.len;
    REQUIRE(off % 64 == 0);
    REQUIRE(nc_sink_write(&s, t->data, t->nbytes, &err) == 0);
    nc_tensor u;
    REQUIRE(nc_npy_parse(mb.data, mb.len, "f.npy", &u, &err) == 0);
    REQUIRE(u.dtype == t->dtype && u.rank == t->rank && u.nelem == t->nelem &&
            u.N == t->N && u.d == t->d && u.nbytes == t->nbytes && u.file_offset == off);
    REQUIRE(memcmp(u.shape, t->shape, (size_t)t->rank * sizeof *t->shape) == 0);
    REQUIRE(!t->nbytes || memcmp(u.data, t->data, t->nbytes) == 0);
    nc_membuf_free(&mb);
}

/* The input's first bytes as a file name (which cannot be refused): the
 * report holding it is strict UTF-8 JSON. */
static void check_name_in_report(const unsigned char *buf, size_t size)
{
    char name[257];
    size_t n = size < 256 ? size : 256;
    memcpy(name, buf, n);
    name[n] = '\0';
    const char *s[1] = {name};
    require_strict_report(s, 1);
}

static void one(const unsigned char *buf, size_t size)
{
    nc_tensor t;
    nc_err err = {0};
    int rc = nc_npy_parse(buf, size, "f.npy", &t, &err);
    if (rc == 0) {
        REQUIRE(err.code == 0 && !err.msg[0]);
        check_tensor(&t, buf, size);
    } else {
        check_error(rc, &err);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *heap = heap_copy(data, size);
    one(heap, size);
    check_name_in_report(heap, size);
    free(heap);
    one(guard_copy(data, size), size);
    return 0;
}
