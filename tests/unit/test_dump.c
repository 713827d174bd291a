/*
 * test_dump.c - io/dump and io/shards: a dump in several safetensors files
 * opened as one (a folder, an index, a glob, an index under another name),
 * its tensors in shard order, metadata and the shard of each tensor, and
 * every rejection of a bad index or a bad set of shards with its message.
 *
 * Shards are written by nc_st_write into a mkdtemp folder.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "io/dump.h"
#include "io/safetensors.h"
#include "io/shards.h"
#include "util/sha256.h"
#include "util/sink.h"

static char dir[64];

static void write_file(const char *name, const void *data, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

static void write_text(const char *name, const char *text)
{
    write_file(name, text, strlen(text));
}

/* A shard with the tensors "<layer>.input" [2, 3] and "<layer>.weight" [3],
 * and metadata "<layer>.norm" = norm. */
static void write_shard(const char *name, const char *layer, const char *norm, float base)
{
    float x[6], w[3];
    for (int k = 0; k < 6; k++)
        x[k] = base + (float)k;
    for (int k = 0; k < 3; k++)
        w[k] = 1.0f + (float)k;
    uint64_t sx[2] = {2, 3}, sw[1] = {3};
    char n1[64], n2[64], mk[64];
    snprintf(n1, sizeof n1, "%s.input", layer);
    snprintf(n2, sizeof n2, "%s.weight", layer);
    snprintf(mk, sizeof mk, "%s.norm", layer);
    nc_st_entry e[2] = {{n1, NC_F32, 2, sx, x}, {n2, NC_F32, 1, sw, w}};
    const char *meta[] = {"format", "normcmp activation dump", mk, norm, NULL};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_st_write(&s, e, 2, meta, &err));
    write_file(name, mb.data, mb.len);
    nc_membuf_free(&mb);
}

static char *at(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* A dump opened from spec: two layers, a before b, across two shards. */
static void check_two(const char *spec)
{
    nc_dump *d = NULL;
    nc_err err = {0};
    int rc = nc_dump_open(spec, &d, &err);
    CHECK_INT(0, rc);
    if (rc) {
        fprintf(stderr, "%s: %s\n", spec, err.msg);
        return;
    }
    CHECK_STR("safetensors", nc_dump_format(d));
    CHECK_INT(2, nc_dump_nparts(d));
    CHECK_INT(4, nc_dump_count(d));
    CHECK_STR("a.input", nc_dump_tensor(d, 0)->name);
    CHECK_STR("a.weight", nc_dump_tensor(d, 1)->name);
    CHECK_STR("b.input", nc_dump_tensor(d, 2)->name);
    const nc_tensor *bx = nc_dump_find(d, "b.input");
    CHECK(bx != NULL);
    if (bx)
        CHECK(((const float *)bx->data)[5] == 15.0f);
    CHECK_STR("rmsnorm", nc_dump_meta(d, "b.norm"));
    CHECK_STR("layernorm", nc_dump_meta(d, "a.norm"));
    CHECK(nc_dump_meta(d, "c.norm") == NULL);
    nc_dump *pa = nc_dump_part(d, nc_dump_find(d, "a.weight"));
    nc_dump *pb = nc_dump_part(d, bx);
    CHECK(pa != d && pb != d && pa != pb);
    CHECK_CONTAINS(nc_dump_path(pb), "model-00002-of-00002.safetensors");
    CHECK_INT(1, nc_dump_nparts(pb));
    CHECK(nc_dump_bytes(d) == nc_dump_bytes(pa) + nc_dump_bytes(pb));
    nc_dump_close(d);
}

static void expect_open_fail(const char *spec, int code, const char *msg)
{
    nc_dump *d = (nc_dump *)&d;
    nc_err err = {0};
    CHECK_INT(code, nc_dump_open(spec, &d, &err));
    CHECK(d == NULL);
    CHECK_CONTAINS(err.msg, msg);
    CHECK(strchr(err.msg, '\n') == NULL);
}

static void expect_index_fail(const char *text, const char *msg)
{
    nc_index *ix = (nc_index *)&ix;
    nc_err err = {0};
    CHECK_INT(NC_EFORMAT, nc_index_parse(text, strlen(text), "m.safetensors.index.json", &ix,
                                         &err));
    CHECK(ix == NULL);
    CHECK_STR(msg, err.msg);
}

static void index_parser(void)
{
    const char *ok = "{\"metadata\": {\"total_size\": 9}, \"weight_map\": "
                     "{\"b.x\": \"s2.safetensors\", \"a.x\": \"s1.safetensors\", "
                     "\"a.y\": \"s2.safetensors\"}}  \n";
    nc_index *ix = NULL;
    nc_err err = {0};
    CHECK_INT(0, nc_index_parse(ok, strlen(ok), "m.json", &ix, &err));
    if (ix) {
        CHECK_INT(3, ix->n);
        CHECK_INT(2, ix->nfiles);
        CHECK_STR("s1.safetensors", ix->files[0]);
        CHECK_STR("b.x", ix->tensor[0]);
        CHECK_INT(1, ix->shard[0]);
        CHECK_INT(0, ix->shard[1]);
    }
    nc_index_free(ix);
    expect_index_fail("[1]", "m.safetensors.index.json: expected a JSON object with "
                             "\"weight_map\" (a safetensors index)");
    expect_index_fail("{\"metadata\": {}}", "m.safetensors.index.json: weight_map: missing "
                      "(expected an object of \"<tensor>\": \"<shard file>\")");
    expect_index_fail("{\"weight_map\": []}", "m.safetensors.index.json: weight_map: expected "
                      "an object of \"<tensor>\": \"<shard file>\"");
    expect_index_fail("{\"weight_map\": {}}", "m.safetensors.index.json: weight_map: empty "
                      "(expected at least one tensor)");
    expect_index_fail("{\"weight_map\": {\"a\": 3}}", "m.safetensors.index.json: "
                      "weight_map.\"a\": expected a shard file name (a non-empty string)");
    expect_index_fail("{\"weight_map\": {\"a\": \"\"}}", "m.safetensors.index.json: "
                      "weight_map.\"a\": expected a shard file name (a non-empty string)");
    expect_index_fail("{\"weight_map\": {\"\": \"s\"}}", "m.safetensors.index.json: "
                      "weight_map: an empty tensor name (expected \"<tensor>\": \"<shard "
                      "file>\")");
    expect_index_fail("{\"weight_map\": {\"a\": \"/etc/s\"}}", "m.safetensors.index.json: "
                      "weight_map.\"a\": \"/etc/s\" is an absolute path (expected a file name "
                      "relative to the index's folder)");
    expect_index_fail("{\"weight_map\": {\"a\": \"s\", \"a\": \"t\"}}",
                      "m.safetensors.index.json: weight_map.\"a\": listed twice (expected each "
                      "tensor once)");
    expect_index_fail("{\"weight_map\": {\"a\": \"s\"}} x", "m.safetensors.index.json: "
                      "malformed JSON at line 1, column 28 (expected a safetensors index: "
                      "{\"weight_map\": {\"<tensor>\": \"<shard file>\"}})");
    expect_index_fail("{\"weight_map\": {\"a\": \"s\n\"}}", "m.safetensors.index.json: "
                      "malformed JSON at line 1, column 24: a raw control character (byte "
                      "0x0a) inside a string (write it escaped)");
    /* a control byte between tokens: cJSON would skip it as white space */
    expect_index_fail("{\"weight_map\":\x01{\"a\": \"s\"}}", "m.safetensors.index.json: "
                      "malformed JSON at line 1, column 15: a raw control character (byte "
                      "0x01) outside a string (expected JSON white space)");
}

/* The SHA-256 of the files' bytes, concatenated, as hex. */
static void sha_of_files(const char *const *names, int n, char hex[65])
{
    nc_sha256 c;
    nc_sha256_init(&c);
    for (int k = 0; k < n; k++) {
        FILE *f = fopen(at(names[k]), "rb");
        CHECK(f != NULL);
        unsigned char buf[65536];
        size_t got;
        while (f && (got = fread(buf, 1, sizeof buf, f)) > 0)
            nc_sha256_update(&c, buf, got);
        if (f)
            fclose(f);
    }
    unsigned char h[32];
    nc_sha256_final(&c, h);
    for (int k = 0; k < 32; k++)
        snprintf(hex + 2 * k, 3, "%02x", h[k]);
}

/* A safetensors file with one float tensor "big.input" [n / 64, 64]. */
static void write_big(const char *name, size_t n, float base)
{
    float *x = malloc(n * sizeof *x);
    CHECK(x != NULL);
    if (!x)
        return;
    for (size_t k = 0; k < n; k++)
        x[k] = base + (float)(k % 1000);
    uint64_t sh[2] = {n / 64, 64};
    nc_st_entry e[1] = {{"big.input", NC_F32, 2, sh, x}};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_st_write(&s, e, 1, NULL, &err));
    write_file(name, mb.data, mb.len);
    nc_membuf_free(&mb);
    free(x);
}

/* The background hasher (io/dump.h): digests of a file larger than its
 * buffer and of a sharded dump (its shards in order) equal the files'
 * own; a file replaced after it was mapped is not read again but hashed
 * from the mapping (the bytes the analysis read); a hasher stopped at once
 * leaves the digests to nc_dump_sha256. */
static void hasher(void)
{
    write_big("h_big.safetensors", (size_t)3 << 20, 0.5f); /* 12 MB: three reads */
    write_big("h_swap.safetensors", 4096, 1.5f);
    char want_big[65], want_two[65], want_swap[65], got[65];
    const char *big[] = {"h_big.safetensors"}, *swap[] = {"h_swap.safetensors"};
    const char *two[] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    sha_of_files(big, 1, want_big);
    sha_of_files(two, 2, want_two);
    sha_of_files(swap, 1, want_swap);
    char spec[256];
    snprintf(spec, sizeof spec, "%s/model-*.safetensors", dir);
    nc_dump *d[3] = {NULL, NULL, NULL};
    nc_err err = {0};
    CHECK_INT(0, nc_dump_open(at("h_big.safetensors"), &d[0], &err));
    CHECK_INT(0, nc_dump_open(spec, &d[1], &err));
    CHECK_INT(0, nc_dump_open(at("h_swap.safetensors"), &d[2], &err));
    if (!d[0] || !d[1] || !d[2])
        goto out;
    /* replace h_swap by other bytes of the same size: a new file (inode) */
    write_big("h_swap.tmp", 4096, 2.5f);
    char from[256];
    snprintf(from, sizeof from, "%s", at("h_swap.tmp"));
    CHECK_INT(0, rename(from, at("h_swap.safetensors")));
    nc_dump_hasher *h = nc_dump_hasher_start(d, 3);
    CHECK(h != NULL);
    nc_dump_sha256(d[0], got);
    CHECK_STR(want_big, got);
    nc_dump_sha256(d[1], got);
    CHECK_STR(want_two, got);
    nc_dump_sha256(d[2], got);
    CHECK_STR(want_swap, got); /* the mapped bytes, not the new file's */
    nc_dump_hasher_stop(h);
    for (int k = 0; k < 3; k++)
        nc_dump_close(d[k]);
    /* rewritten in place after the hasher read it: the digest is of the new
     * bytes (which the mapping, and so an analysis, sees), not the hasher's
     * (a file of 1 MB: a smaller one starts no hasher, below) */
    write_big("h_swap.safetensors", (size_t)1 << 18, 1.5f);
    CHECK_INT(0, nc_dump_open(at("h_swap.safetensors"), &d[0], &err));
    if (d[0]) {
        nc_dump_hasher *h2 = nc_dump_hasher_start(d, 1);
        CHECK(h2 != NULL);
        usleep(300000); /* a 1 MB file: long done */
        FILE *f = fopen(at("h_swap.safetensors"), "r+b");
        CHECK(f != NULL);
        if (f) {
            CHECK(fseek(f, -8, SEEK_END) == 0);
            CHECK(fwrite("\x01\x02\x03\x04\x05\x06\x07\x08", 1, 8, f) == 8);
            fclose(f);
        }
        struct timespec later[2] = {{0, UTIME_NOW}, {time(NULL) + 100, 0}};
        CHECK_INT(0, utimensat(AT_FDCWD, at("h_swap.safetensors"), later, 0));
        char want_new[65];
        sha_of_files(swap, 1, want_new);
        CHECK(strcmp(want_new, want_swap) != 0);
        nc_dump_sha256(d[0], got);
        CHECK_STR(want_new, got);
        nc_dump_hasher_stop(h2);
        nc_dump_close(d[0]);
    }
    /* under NC_DUMP_HASH_THREAD_BYTES in all: no thread; the digest is made
     * from the mapping when asked */
    write_big("h_small.safetensors", 4096, 3.5f);
    const char *small[] = {"h_small.safetensors"};
    char want_small[65];
    sha_of_files(small, 1, want_small);
    CHECK_INT(0, nc_dump_open(at("h_small.safetensors"), &d[0], &err));
    if (d[0]) {
        CHECK(nc_dump_hasher_start(d, 1) == NULL);
        nc_dump_sha256(d[0], got);
        CHECK_STR(want_small, got);
        nc_dump_close(d[0]);
        d[0] = NULL;
    }
    unlink(at("h_small.safetensors"));
    /* stopped at once: nc_dump_sha256 hashes whatever was left */
    CHECK_INT(0, nc_dump_open(at("h_big.safetensors"), &d[0], &err));
    d[1] = d[2] = NULL;
    if (d[0]) {
        nc_dump_hasher_stop(nc_dump_hasher_start(d, 1));
        nc_dump_sha256(d[0], got);
        CHECK_STR(want_big, got);
    }
out:
    for (int k = 0; k < 3; k++)
        nc_dump_close(d[k]);
    unlink(at("h_big.safetensors"));
    unlink(at("h_swap.safetensors"));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/nc_test_dump_XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    index_parser();

    write_shard("model-00001-of-00002.safetensors", "a", "layernorm", 0.0f);
    write_shard("model-00002-of-00002.safetensors", "b", "rmsnorm", 10.0f);
    /* a folder of shards without an index, and a glob */
    check_two(dir);
    char spec[256];
    snprintf(spec, sizeof spec, "%s/", dir);
    check_two(spec);
    snprintf(spec, sizeof spec, "%s/model-*.safetensors", dir);
    check_two(spec);
    /* an index (named as Hugging Face names it, or otherwise: told by '{') */
    const char *index = "{\"metadata\": {\"total_size\": 96}, \"weight_map\": {"
                        "\"b.input\": \"model-00002-of-00002.safetensors\", "
                        "\"a.input\": \"model-00001-of-00002.safetensors\"}}\n";
    write_text("model.safetensors.index.json", index);
    check_two(at("model.safetensors.index.json"));
    write_text("shards.txt", index);
    check_two(at("shards.txt"));
    check_two(dir); /* the folder now reads its index */
    hasher();

    /* a single shard still opens as a plain file */
    nc_dump *one = NULL;
    nc_err err = {0};
    CHECK_INT(0, nc_dump_open(at("model-00001-of-00002.safetensors"), &one, &err));
    if (one) {
        CHECK_INT(1, nc_dump_nparts(one));
        CHECK(nc_dump_part(one, nc_dump_tensor(one, 0)) == one);
        CHECK_STR("layernorm", nc_dump_meta(one, "a.norm"));
    }
    nc_dump_close(one);

    /* an index naming the wrong shard, a missing shard, bad JSON */
    write_text("bad1.safetensors.index.json", "{\"weight_map\": {\"a.input\": "
                                  "\"model-00002-of-00002.safetensors\"}}");
    expect_open_fail(at("bad1.safetensors.index.json"), NC_EFORMAT, "bad1.safetensors.index.json: weight_map.\"a.input\": "
                     "no such tensor in ");
    write_text("bad2.safetensors.index.json", "{\"weight_map\": {\"a.input\": \"gone.safetensors\"}}");
    expect_open_fail(at("bad2.safetensors.index.json"), NC_EINVAL, "gone.safetensors: cannot open input "
                     "file");
    write_text("bad3.safetensors.index.json", "{\"weight_map\": 7}");
    expect_open_fail(at("bad3.safetensors.index.json"), NC_EFORMAT, "bad3.safetensors.index.json: weight_map: expected "
                     "an object");
    /* the folder now has several indexes */
    expect_open_fail(dir, NC_EINVAL, "index files (");
    snprintf(spec, sizeof spec, "%s/nothing-*.safetensors", dir);
    expect_open_fail(spec, NC_EINVAL, "nothing-*.safetensors: no such file, and no file matches "
                     "it as a pattern");
    /* a tensor in two shards */
    write_shard("model-00003-of-00003.safetensors", "a", "layernorm", 0.0f);
    snprintf(spec, sizeof spec, "%s/model-*.safetensors", dir);
    expect_open_fail(spec, NC_EFORMAT, "tensor 'a.input' is in both ");

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_INT(0, system(cmd));
    return CHECK_DONE();
}
