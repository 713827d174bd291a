/*
 * test_safetensors.c - io/safetensors: round trips through the writer for
 * every dtype and ranks 0..4, headers as Hugging Face writes them, lookup
 * and metadata, and every rejection path with its exact message.
 *
 * Files are built in memory: by nc_st_write, or by make_st (an 8-byte
 * length around a header given verbatim, so malformed headers can be
 * tested).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/tensor.h"
#include "core/half.h"
#include "io/safetensors.h"
#include "util/sink.h"

/* The worked example's input (docs/theory.md, Worked examples). */
static const float EXAMPLE_X[4] = {1.0f, 2.0f, 3.0f, 4.0f};

/* A file: the header's length (u64 LE), the header verbatim, the data. */
static void make_st(nc_membuf *mb, const char *hdr, const void *data, size_t ndata)
{
    nc_sink s = nc_membuf_sink(mb);
    size_t hlen = strlen(hdr);
    unsigned char len8[8];
    for (int k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)hlen >> (8 * k));
    nc_sink_write(&s, len8, 8, NULL);
    nc_sink_write(&s, hdr, hlen, NULL);
    nc_sink_write(&s, data, ndata, NULL);
}

static void expect_fail_buf(const unsigned char *buf, size_t len, int code, const char *msg)
{
    nc_st *st = (nc_st *)&st; /* not NULL, to see the parser clear it */
    nc_err err = {0};
    int rc = nc_st_parse(buf, len, "x.safetensors", &st, &err);
    CHECK_INT(code, rc);
    CHECK_INT(code, err.code);
    CHECK_STR(msg, err.msg);
    CHECK(st == NULL);
}

/* A file with header hdr and ndata bytes of data (0x5a) must fail. */
static void expect_fail(const char *hdr, size_t ndata, int code, const char *msg)
{
    unsigned char *data = malloc(ndata ? ndata : 1);
    memset(data, 0x5a, ndata);
    nc_membuf mb = {0};
    make_st(&mb, hdr, data, ndata);
    expect_fail_buf(mb.data, mb.len, code, msg);
    nc_membuf_free(&mb);
    free(data);
}

static nc_st *parse_ok(const unsigned char *buf, size_t len)
{
    nc_st *st = NULL;
    nc_err err = {0};
    int rc = nc_st_parse(buf, len, "x.safetensors", &st, &err);
    CHECK_INT(0, rc);
    CHECK_STR("", err.msg);
    CHECK(rc != 0 || st != NULL);
    return st;
}

/* ------------------------------------------------------------------ */
/* Round trips                                                         */
/* ------------------------------------------------------------------ */

/* Element k of a float tensor after storage in dt (high-entropy values). */
static double stored(nc_dtype dt, size_t k)
{
    double v = 2.385 - 0.3125 * (double)(k % 13) + 1e-3 * (double)k;
    switch (dt) {
    case NC_F32:
        return (float)v;
    case NC_F16:
        return nc_f16_to_f32(nc_f32_to_f16((float)v));
    case NC_BF16:
        return nc_bf16_to_f32(nc_f32_to_bf16((float)v));
    default:
        return v;
    }
}

static void fill(nc_dtype dt, size_t nelem, unsigned char *p)
{
    size_t es = nc_dtype_size(dt);
    for (size_t k = 0; k < nelem; k++) {
        double v = stored(dt, k);
        float f = (float)v;
        uint16_t h;
        switch (dt) {
        case NC_F32:
            memcpy(p + k * es, &f, 4);
            break;
        case NC_F64:
            memcpy(p + k * es, &v, 8);
            break;
        case NC_F16:
        case NC_BF16:
            h = dt == NC_F16 ? nc_f32_to_f16(f) : nc_f32_to_bf16(f);
            p[k * es] = (unsigned char)h;
            p[k * es + 1] = (unsigned char)(h >> 8);
            break;
        default: /* integer and fp8 types: any distinct bytes */
            for (size_t b = 0; b < es; b++)
                p[k * es + b] = (unsigned char)(37 * k + 11 * b + 3);
            break;
        }
    }
}

/* Writes every dtype at ranks 0..4 (75 tensors) into one file, parses it
 * back and checks each view: order, name, shape, N, d, data pointer, bytes
 * and, for float types, values. */
static void test_round_trip_all_dtypes_and_ranks(void)
{
    static const uint64_t dims[4] = {3, 2, 5, 6}; /* rank r uses the last r */
    enum { NT = (NC_DT_COUNT - 1) * 5 };
    nc_st_entry e[NT];
    char names[NT][48];
    unsigned char *data[NT];
    size_t n = 0;
    for (int dt = NC_DT_NONE + 1; dt < NC_DT_COUNT; dt++) {
        for (int rank = 0; rank <= 4; rank++, n++) {
            size_t nelem = 1;
            for (int k = 4 - rank; k < 4; k++)
                nelem *= dims[k];
            snprintf(names[n], sizeof names[n], "blocks.%d.norm%d.%s", rank, dt,
                     nc_dtype_name((nc_dtype)dt));
            data[n] = malloc(nelem * nc_dtype_size((nc_dtype)dt));
            fill((nc_dtype)dt, nelem, data[n]);
            e[n] = (nc_st_entry){names[n], (nc_dtype)dt, rank, dims + 4 - rank, data[n]};
        }
    }
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    const char *meta[] = {"format", "pt", "model", "gpt2 \"small\"\n", NULL};
    CHECK_INT(0, nc_st_write(&s, e, n, meta, &err));
    CHECK_STR("", err.msg);
    uint64_t H = 0;
    for (int k = 7; k >= 0; k--)
        H = H << 8 | mb.data[k];
    CHECK_INT(0, H % 8);

    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        CHECK_INT(n, nc_st_count(st));
        size_t off = 0;
        for (size_t i = 0; i < n && i < nc_st_count(st); i++) {
            const nc_tensor *t = nc_st_tensor(st, i);
            size_t es = nc_dtype_size(e[i].dtype);
            CHECK_STR(names[i], t->name);
            CHECK_INT(e[i].dtype, t->dtype);
            CHECK_INT(e[i].rank, t->rank);
            size_t nelem = 1;
            for (int k = 0; k < t->rank; k++) {
                CHECK_INT(e[i].shape[k], t->shape[k]);
                nelem *= e[i].shape[k];
            }
            CHECK_INT(nelem, t->nelem);
            CHECK_INT(t->rank == 0 ? 1 : t->rank == 1 ? 1 : nelem / 6, t->N);
            CHECK_INT(t->rank == 0 ? 1 : 6, t->d);
            CHECK_INT(nelem * es, t->nbytes);
            CHECK_INT(8 + H + off, t->file_offset);
            CHECK(t->data == mb.data + 8 + H + off);
            CHECK(memcmp(t->data, data[i], t->nbytes) == 0);
            if (nc_dtype_is_float(t->dtype)) {
                double x[180];
                nc_tensor_rows(t, 0, t->N, x);
                int bad = 0;
                for (size_t k = 0; k < nelem; k++) /* widening is exact */
                    bad += x[k] != stored(t->dtype, k);
                CHECK_INT(0, bad);
            }
            CHECK(nc_st_find(st, names[i]) == t);
            off += t->nbytes;
        }
        CHECK_INT(mb.len, 8 + H + off);
        CHECK(nc_st_tensor(st, n) == NULL);
        CHECK_STR("pt", nc_st_meta(st, "format"));
        CHECK_STR("gpt2 \"small\"\n", nc_st_meta(st, "model"));
        CHECK(nc_st_meta(st, "Format") == NULL);
        nc_st_free(st);
    }
    nc_membuf_free(&mb);
    for (size_t i = 0; i < n; i++)
        free(data[i]);
}

/* The writer's exact bytes: metadata first, contiguous offsets, spaces to
 * a multiple of 8, then the data. */
static void test_writer_bytes(void)
{
    nc_st_entry e[2] = {
        {"x", NC_F32, 1, (const uint64_t[]){4}, EXAMPLE_X},
        {"a\\b\"c\x01", NC_F16, 2, (const uint64_t[]){1, 1}, "\x00\x3c"},
    };
    const char *meta[] = {"format", "pt", NULL};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_st_write(&s, e, 2, meta, &err));
    const char want[] = "{\"__metadata__\":{\"format\":\"pt\"},"
                        "\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
                        "\"a\\\\b\\\"c\\u0001\":{\"dtype\":\"F16\",\"shape\":[1,1],"
                        "\"data_offsets\":[16,18]}}";
    size_t hlen = sizeof want - 1, padded = (hlen + 7) / 8 * 8;
    CHECK_INT(8 + padded + 18, mb.len);
    if (mb.len == 8 + padded + 18) {
        CHECK_INT(padded, mb.data[0] | mb.data[1] << 8);
        CHECK(memcmp(mb.data + 8, want, hlen) == 0);
        for (size_t k = hlen; k < padded; k++)
            CHECK_INT(' ', mb.data[8 + k]);
        CHECK(memcmp(mb.data + 8 + padded, EXAMPLE_X, 16) == 0);
        nc_st *st = parse_ok(mb.data, mb.len);
        if (st) {
            CHECK(nc_st_find(st, "a\\b\"c\x01") != NULL);
            nc_st_free(st);
        }
    }
    nc_membuf_free(&mb);
}

/* No tensors, no metadata: "{}" padded to 8. */
static void test_writer_empty(void)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_st_write(&s, NULL, 0, NULL, &err));
    CHECK_INT(16, mb.len);
    CHECK(mb.len == 16 && memcmp(mb.data, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0);
    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        CHECK_INT(0, nc_st_count(st));
        CHECK(nc_st_find(st, "x") == NULL);
        CHECK(nc_st_meta(st, "format") == NULL);
        nc_st_free(st);
    }
    nc_membuf_free(&mb);
    nc_st_free(NULL);
}

/* ------------------------------------------------------------------ */
/* Headers written by others                                           */
/* ------------------------------------------------------------------ */

/* A header laid out as the Hugging Face library writes it (compact JSON,
 * __metadata__ first, trailing spaces to a multiple of 8), holding the worked
 * example's vector; hand-written after the format documentation. */
static void test_hf_layout_example_vector(void)
{
    const char hdr[] = "{\"__metadata__\":{\"format\":\"pt\"},\"blocks.0.norm1.input\":"
                       "{\"dtype\":\"F32\",\"shape\":[1,4],\"data_offsets\":[0,16]}}     ";
    CHECK_INT(0, (sizeof hdr - 1) % 8);
    nc_membuf mb = {0};
    make_st(&mb, hdr, EXAMPLE_X, sizeof EXAMPLE_X);
    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        CHECK_INT(1, nc_st_count(st));
        const nc_tensor *t = nc_st_find(st, "blocks.0.norm1.input");
        CHECK(t == nc_st_tensor(st, 0));
        if (t) {
            CHECK_INT(NC_F32, t->dtype);
            CHECK_INT(2, t->rank);
            CHECK_INT(1, t->N);
            CHECK_INT(4, t->d);
            CHECK_INT(8 + sizeof hdr - 1, t->file_offset);
            double x[4];
            nc_tensor_rows(t, 0, 1, x);
            for (int i = 0; i < 4; i++) /* float -> double is exact */
                CHECK_ABS(EXAMPLE_X[i], x[i], 0.0);
        }
        CHECK_STR("pt", nc_st_meta(st, "format"));
        nc_st_free(st);
    }
    nc_membuf_free(&mb);
}

/* Pretty-printed JSON, keys in another order, unaligned offsets: all
 * accepted (a gap between tensors is not: test_coverage). */
static void test_formatted_header(void)
{
    const char hdr[] = "{\n  \"b\" : { \"data_offsets\" : [ 1, 5 ],\n \"shape\" : [ 2 ],\n"
                       "  \"dtype\" : \"BF16\" } ,\n  \"a\": {\"shape\": [1], \"dtype\": "
                       "\"U8\", \"data_offsets\": [0, 1]}\n}";
    unsigned char data[5] = {9, 0x80, 0x3f, 0x00, 0xc0}; /* bf16 1.0, -2.0 at 1 */
    nc_membuf mb = {0};
    make_st(&mb, hdr, data, sizeof data);
    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        CHECK_INT(2, nc_st_count(st));
        const nc_tensor *b = nc_st_tensor(st, 0), *a = nc_st_tensor(st, 1);
        CHECK_STR("b", b->name);
        CHECK_STR("a", a->name);
        CHECK(nc_st_find(st, "a") == a);
        CHECK(nc_st_find(st, "b") == b);
        CHECK(nc_st_find(st, "") == NULL);
        CHECK(nc_st_find(st, "bb") == NULL);
        CHECK_INT(NC_BF16, b->dtype);
        CHECK(b->data == mb.data + 8 + sizeof hdr - 1 + 1);
        double x[2];
        nc_tensor_rows(b, 0, 1, x);
        CHECK_ABS(1.0, x[0], 0.0);
        CHECK_ABS(-2.0, x[1], 0.0);
        CHECK_INT(9, a->data[0]);
        nc_st_free(st);
    }
    nc_membuf_free(&mb);
}

/* The safetensors rule: the tensors cover the data section exactly. A
 * gap, a leading gap and trailing bytes are refused, naming the place. */
static void test_coverage(void)
{
    static const struct {
        const char *hdr;
        size_t nbytes;
        const char *msg;
    } cases[] = {
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[2,4]}}",
         4, "x.safetensors: tensor 'b': data_offsets [2, 4]: found a gap at offset 1 of the data "
            "section, expected each tensor to begin where the previous one ends"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]}}", 4,
         "x.safetensors: tensor 'a': data_offsets [3, 4]: found a gap at offset 0 of the data "
         "section, expected each tensor to begin where the previous one ends"},
        {"{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 3,
         "x.safetensors: found 2 bytes after the last tensor's data (offset 1 of the data "
         "section), expected the tensors to cover it to the end of the file"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        nc_membuf mb = {0};
        make_st(&mb, cases[k].hdr, "\1\2\3\4", cases[k].nbytes);
        nc_st *st = NULL;
        nc_err err = {0};
        CHECK_INT(NC_EFORMAT, nc_st_parse(mb.data, mb.len, "x.safetensors", &st, &err));
        CHECK_STR(cases[k].msg, err.msg);
        CHECK(st == NULL);
        nc_membuf_free(&mb);
    }
}

/* Zero tokens, zero channels, a scalar, and empty tensors sharing an
 * offset with others (empty tensors overlap nothing). */
static void test_empty_and_scalar_tensors(void)
{
    const char hdr[] = "{\"none\":{\"dtype\":\"F32\",\"shape\":[0,64],\"data_offsets\":[4,4]},"
                       "\"flat\":{\"dtype\":\"F16\",\"shape\":[5,0],\"data_offsets\":[2,2]},"
                       "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                       "\"e\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[0,0]}}";
    nc_membuf mb = {0};
    make_st(&mb, hdr, "\x00\x00\x80\x3f", 4);
    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        CHECK_INT(4, nc_st_count(st));
        const nc_tensor *t = nc_st_find(st, "none");
        CHECK_INT(0, t ? t->N : 99);
        CHECK_INT(64, t ? t->d : 99);
        CHECK_INT(0, t ? t->nbytes : 99);
        t = nc_st_find(st, "flat");
        CHECK_INT(5, t ? t->N : 99);
        CHECK_INT(0, t ? t->d : 99);
        t = nc_st_find(st, "s");
        CHECK_INT(0, t ? t->rank : 99);
        CHECK_INT(1, t ? t->nelem : 99);
        if (t) {
            double x;
            nc_tensor_elems(t, 0, 1, &x);
            CHECK_ABS(1.0, x, 0.0);
        }
        nc_st_free(st);
    }
    nc_membuf_free(&mb);
}

/* NC_MAX_RANK axes are accepted; sizes up to 2^53 - 1 parse exactly. */
static void test_limits_accepted(void)
{
    char hdr[512];
    size_t n = (size_t)snprintf(hdr, sizeof hdr, "{\"t\":{\"dtype\":\"U8\",\"shape\":[");
    for (int k = 0; k < NC_MAX_RANK; k++)
        n += (size_t)snprintf(hdr + n, sizeof hdr - n, "%s", k ? ",1" : "3");
    snprintf(hdr + n, sizeof hdr - n, "],\"data_offsets\":[0,3]},\"z\":{\"dtype\":\"U8\","
                                      "\"shape\":[0,9007199254740991],\"data_offsets\":[3,3]}}");
    nc_membuf mb = {0};
    make_st(&mb, hdr, "abc", 3);
    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        const nc_tensor *t = nc_st_find(st, "t");
        CHECK_INT(NC_MAX_RANK, t ? t->rank : 0);
        t = nc_st_find(st, "z");
        CHECK_INT(9007199254740991ull, t ? t->shape[1] : 0);
        nc_st_free(st);
    }
    nc_membuf_free(&mb);
}

/* ------------------------------------------------------------------ */
/* Rejections: the length and the JSON                                 */
/* ------------------------------------------------------------------ */

static void test_reject_empty(void)
{
    expect_fail_buf((const unsigned char *)"", 0, NC_EFORMAT,
                    "x.safetensors: empty file, expected a safetensors file");
}

static void test_reject_short(void)
{
    expect_fail_buf((const unsigned char *)"\x02\0\0\0\0", 5, NC_EFORMAT,
                    "x.safetensors: file too short: found 5 bytes, expected at least 8 (the header "
                    "length)");
}

static void test_reject_header_past_end(void)
{
    expect_fail_buf((const unsigned char *)"\x10\0\0\0\0\0\0\0{}", 10, NC_EFORMAT,
                    "x.safetensors: header length at offset 0: found 16 bytes, expected at most 2 "
                    "(the file has 10 bytes)");
    /* a header claiming 3 GiB: the file size is named, nothing is allocated */
    expect_fail_buf((const unsigned char *)"\0\0\0\xc0\0\0\0\0{}", 10, NC_EFORMAT,
                    "x.safetensors: header length at offset 0: found 3221225472 bytes, expected "
                    "at most 2 (the file has 10 bytes)");
    expect_fail_buf((const unsigned char *)"\xff\xff\xff\xff\xff\xff\xff\xff", 8, NC_EFORMAT,
                    "x.safetensors: header length at offset 0: found 18446744073709551615 bytes, "
                    "expected at most 0 (the file has 8 bytes)");
}

static void test_reject_header_over_limit(void)
{
    /* 100 MiB + 8 of spaces after "{}": within the file, beyond the limit */
    size_t H = (size_t)NC_ST_MAX_HEADER + 8;
    unsigned char *buf = malloc(8 + H);
    if (!buf)
        return;
    for (int k = 0; k < 8; k++)
        buf[k] = (unsigned char)((uint64_t)H >> (8 * k));
    memset(buf + 8, ' ', H);
    buf[8] = '{';
    buf[9] = '}';
    expect_fail_buf(buf, 8 + H, NC_ERANGE,
                    "x.safetensors: header length at offset 0: found 104857608 bytes, expected at "
                    "most 104857600 (100 MiB; the file has 104857616 bytes)");
    free(buf);
}

static void test_reject_not_an_object(void)
{
    expect_fail("", 0, NC_EFORMAT,
                "x.safetensors: header at offset 8: found an empty header, expected a JSON object "
                "starting with '{'");
    expect_fail("[1, 2]", 0, NC_EFORMAT,
                "x.safetensors: header at offset 8: found '[', expected a JSON object starting "
                "with '{'");
    expect_fail(" {}", 0, NC_EFORMAT,
                "x.safetensors: header at offset 8: found ' ', expected a JSON object starting "
                "with '{'");
    expect_fail("\xef\xbb\xbf{}", 0, NC_EFORMAT,
                "x.safetensors: header at offset 8: found byte 0xef, expected a JSON object "
                "starting with '{'");
}

/* The offset is where cJSON stopped, which is near the fault, not on it. */
static void test_reject_invalid_json(void)
{
    expect_fail("{\"a\": {\"dtype\": \"F32\",}}", 0, NC_EFORMAT,
                "x.safetensors: header near offset 31: found invalid JSON (or a nesting deeper "
                "than 1000), expected a JSON object");
    /* the JSON is cut by the header length */
    expect_fail("{\"a\":", 16, NC_EFORMAT,
                "x.safetensors: header near offset 12: found invalid JSON (or a nesting deeper "
                "than 1000), expected a JSON object");
    /* 1001 levels: cJSON's nesting limit keeps hostile input off the stack */
    char deep[2 * 1000 + 16];
    size_t n = (size_t)snprintf(deep, sizeof deep, "{\"a\":");
    memset(deep + n, '[', 1000);
    memset(deep + n + 1000, ']', 1000);
    snprintf(deep + n + 2000, sizeof deep - n - 2000, "}");
    expect_fail(deep, 0, NC_EFORMAT,
                "x.safetensors: header near offset 1012: found invalid JSON (or a nesting "
                "deeper than 1000), expected a JSON object");
}

/* cJSON decodes \u0000 into a NUL that ends the name early: "a\u0000b"
 * would be read as "a". */
static void test_reject_escaped_nul(void)
{
    expect_fail("{\"a\\u0000b\": {\"dtype\": \"F32\", \"shape\": [0], \"data_offsets\": [0, 0]}}", 0,
                NC_EFORMAT,
                "x.safetensors: header at offset 11: found the escape \\u0000 inside a string, "
                "expected names and values without NUL");
}

static void test_reject_trailing_bytes(void)
{
    expect_fail("{}  \n", 0, NC_EFORMAT,
                "x.safetensors: header at offset 12: found byte 0x0a after the JSON object, "
                "expected only trailing spaces");
    expect_fail("{} {}", 0, NC_EFORMAT,
                "x.safetensors: header at offset 11: found byte 0x7b after the JSON object, "
                "expected only trailing spaces");
    nc_membuf mb = {0};
    make_st(&mb, "{}\0\0\0\0\0\0", NULL, 0); /* strlen: the NULs are not in the header */
    mb.data[0] = 8;
    nc_sink s = nc_membuf_sink(&mb);
    nc_sink_write(&s, "\0\0\0\0\0\0", 6, NULL);
    expect_fail_buf(mb.data, mb.len, NC_EFORMAT,
                    "x.safetensors: header at offset 10: found byte 0x00 after the JSON object, "
                    "expected only trailing spaces");
    nc_membuf_free(&mb);
}

/* ------------------------------------------------------------------ */
/* Rejections: tensor entries                                          */
/* ------------------------------------------------------------------ */

static void test_reject_entry_not_object(void)
{
    expect_fail("{\"w\": [1, 2]}", 0, NC_EFORMAT,
                "x.safetensors: tensor 'w': found an array of length 2, expected an object "
                "with dtype, shape and data_offsets");
    expect_fail("{\"w\": \"F32\"}", 0, NC_EFORMAT,
                "x.safetensors: tensor 'w': found the string \"F32\", expected an object with "
                "dtype, shape and data_offsets");
}

static void test_reject_entry_fields(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4], "
                "\"offsets\": 1}}",
                4, NC_EFORMAT,
                "x.safetensors: tensor 'w': found field 'offsets', expected only dtype, shape "
                "and data_offsets");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"dtype\": \"F16\", "
                "\"data_offsets\": [0, 4]}}",
                4, NC_EFORMAT, "x.safetensors: tensor 'w': found field 'dtype' twice, expected it once");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4, NC_EFORMAT,
                "x.safetensors: tensor 'w': field 'shape' is missing (expected dtype, shape and "
                "data_offsets)");
    expect_fail("{\"w\": {}}", 0, NC_EFORMAT,
                "x.safetensors: tensor 'w': field 'dtype' is missing (expected dtype, shape and "
                "data_offsets)");
}

static void test_reject_dtype(void)
{
    expect_fail("{\"w\": {\"dtype\": 32, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': dtype: found 32, expected a string such as \"F32\"");
    expect_fail("{\"blocks.0.norm1.input\": {\"dtype\": \"f32\", \"shape\": [1], "
                "\"data_offsets\": [0, 4]}}",
                4, NC_EUNSUPPORTED,
                "x.safetensors: tensor 'blocks.0.norm1.input': unsupported dtype 'f32' (expected "
                "F32, F16, BF16, F64, BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F8_E4M3 or "
                "F8_E5M2)");
    expect_fail("{\"w\": {\"dtype\": \"C64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8,
                NC_EUNSUPPORTED,
                "x.safetensors: tensor 'w': unsupported dtype 'C64' (expected F32, F16, BF16, "
                "F64, BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F8_E4M3 or F8_E5M2)");
}

static void test_reject_shape(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": 4, \"data_offsets\": [0, 16]}}", 16,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': shape: found 4, expected an array of non-negative "
                "integers");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [2, -2], \"data_offsets\": [0, 16]}}",
                16, NC_EFORMAT,
                "x.safetensors: tensor 'w': shape[1]: found -2, expected a non-negative integer "
                "below 2^53");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [2.5], \"data_offsets\": [0, 10]}}", 10,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': shape[0]: found 2.5, expected a non-negative integer "
                "below 2^53");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [\"4\"], \"data_offsets\": [0, 16]}}",
                16, NC_EFORMAT,
                "x.safetensors: tensor 'w': shape[0]: found the string \"4\", expected a "
                "non-negative integer below 2^53");
    expect_fail("{\"w\": {\"dtype\": \"U8\", \"shape\": [9007199254740992, 0], "
                "\"data_offsets\": [0, 0]}}",
                0, NC_EFORMAT,
                "x.safetensors: tensor 'w': shape[0]: found 9007199254740992, expected a "
                "non-negative integer below 2^53");
    expect_fail("{\"w\": {\"dtype\": \"U8\", \"shape\": [1e400], \"data_offsets\": [0, 0]}}", 0,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': shape[0]: found inf, expected a non-negative integer "
                "below 2^53");
    expect_fail("{\"w\": {\"dtype\": \"U8\", \"shape\": [null], \"data_offsets\": [0, 0]}}", 0,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': shape[0]: found null, expected a non-negative "
                "integer below 2^53");
}

static void test_reject_too_many_axes(void)
{
    char hdr[512];
    size_t n = (size_t)snprintf(hdr, sizeof hdr, "{\"w\":{\"dtype\":\"U8\",\"shape\":[");
    for (int k = 0; k < NC_MAX_RANK + 1; k++)
        n += (size_t)snprintf(hdr + n, sizeof hdr - n, "%s", k ? ",1" : "1");
    snprintf(hdr + n, sizeof hdr - n, "],\"data_offsets\":[0,1]}}");
    expect_fail(hdr, 1, NC_EUNSUPPORTED,
                "x.safetensors: tensor 'w': shape: found more than 32 axes, expected at most 32");
}

static void test_reject_element_overflow(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], "
                "\"data_offsets\": [0, 0]}}",
                0, NC_ERANGE,
                "x.safetensors: tensor 'w': shape [4294967296, 4294967296]: found too many "
                "elements for F32, expected at most 2^62 elements and 2^64 bytes");
    /* 2^62 elements of 8 bytes: the byte count would wrap */
    expect_fail("{\"w\": {\"dtype\": \"I64\", \"shape\": [2147483648, 2147483648], "
                "\"data_offsets\": [0, 0]}}",
                0, NC_ERANGE,
                "x.safetensors: tensor 'w': shape [2147483648, 2147483648]: found too many "
                "elements for I64, expected at most 2^62 elements and 2^64 bytes");
}

static void test_reject_offsets_shape(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4, 8]}}", 8,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets: found an array of length 3, expected "
                "an array of two integers [begin, end]");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": {\"0\": 4}}}", 4,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets: found an object, expected an array of "
                "two integers [begin, end]");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4.5]}}", 8,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets[1]: found 4.5, expected a non-negative "
                "integer below 2^53");
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [-4, 0]}}", 8,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets[0]: found -4, expected a non-negative "
                "integer below 2^53");
}

static void test_reject_offsets_reversed(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", 8,
                NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets [8, 4]: found begin after end, expected "
                "begin <= end");
}

static void test_reject_offsets_past_end(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [4, 8], \"data_offsets\": [0, 128]}}",
                100, NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets [0, 128]: found end past the data "
                "section, expected at most 100 (data start at offset 74)");
}

/* The boundary: an end one byte past the data section (a check off by one
 * would accept it, read a byte past the file, and then report 2^64 - 1
 * bytes after the last tensor). */
static void test_reject_offsets_one_past_end(void)
{
    expect_fail("{\"w\": {\"dtype\": \"F32\", \"shape\": [4, 8], \"data_offsets\": [0, 128]}}",
                127, NC_EFORMAT,
                "x.safetensors: tensor 'w': data_offsets [0, 128]: found end past the data "
                "section, expected at most 127 (data start at offset 74)");
    /* the second of two tensors */
    expect_fail("{\"a\": {\"dtype\": \"F32\", \"shape\": [16], \"data_offsets\": [0, 64]}, "
                "\"b\": {\"dtype\": \"F32\", \"shape\": [16], \"data_offsets\": [64, 128]}}",
                127, NC_EFORMAT,
                "x.safetensors: tensor 'b': data_offsets [64, 128]: found end past the data "
                "section, expected at most 127 (data start at offset 136)");
    /* and the end exactly at the end of the file is fine */
    nc_membuf mb = {0};
    unsigned char data[128] = {0};
    make_st(&mb, "{\"w\": {\"dtype\": \"F32\", \"shape\": [4, 8], \"data_offsets\": [0, 128]}}",
            data, sizeof data);
    nc_st *st = parse_ok(mb.data, mb.len);
    CHECK(st && nc_st_count(st) == 1);
    nc_st_free(st);
    nc_membuf_free(&mb);
}

static void test_reject_size_mismatch(void)
{
    expect_fail("{\"blocks.0.norm1.input\": {\"dtype\": \"F32\", \"shape\": [4, 8], "
                "\"data_offsets\": [0, 100]}}",
                128, NC_EFORMAT,
                "x.safetensors: tensor 'blocks.0.norm1.input': data_offsets [0, 100]: expected "
                "128 bytes for F32 [4, 8], found 100");
    expect_fail("{\"s\": {\"dtype\": \"BF16\", \"shape\": [], \"data_offsets\": [0, 4]}}", 4,
                NC_EFORMAT,
                "x.safetensors: tensor 's': data_offsets [0, 4]: expected 2 bytes for BF16 [], "
                "found 4");
}

static void test_reject_overlap(void)
{
    expect_fail("{\"a\": {\"dtype\": \"F32\", \"shape\": [25], \"data_offsets\": [0, 100]},"
                " \"b\": {\"dtype\": \"F32\", \"shape\": [16], \"data_offsets\": [64, 128]}}",
                128, NC_EFORMAT,
                "x.safetensors: tensor 'b': data_offsets [64, 128]: found overlap with tensor 'a' "
                "[0, 100], expected disjoint ranges");
    /* the same tensor twice under two names; the later one named first */
    expect_fail("{\"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [2, 6]},"
                " \"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [2, 6]}}",
                6, NC_EFORMAT,
                "x.safetensors: tensor 'a': data_offsets [2, 6]: found overlap with tensor 'b' "
                "[2, 6], expected disjoint ranges");
    /* two tensors starting at the same offset */
    expect_fail("{\"a\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [0, 8]},"
                " \"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}}",
                8, NC_EFORMAT,
                "x.safetensors: tensor 'a': data_offsets [0, 8]: found overlap with tensor 'b' "
                "[0, 4], expected disjoint ranges");
    /* a long tensor covering a later short one, with one in between */
    expect_fail("{\"long\": {\"dtype\": \"U8\", \"shape\": [10], \"data_offsets\": [0, 10]},"
                " \"x\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [10, 11]},"
                " \"y\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [3, 5]}}",
                11, NC_EFORMAT,
                "x.safetensors: tensor 'y': data_offsets [3, 5]: found overlap with tensor 'long' "
                "[0, 10], expected disjoint ranges");
}

/* Control characters in names do not reach the terminal; long names are
 * cut at 200 bytes so that the rest of the message shows. */
static void test_message_names_sanitised(void)
{
    expect_fail("{\"\\u001b[31mred\\nx\": {\"dtype\": \"F32\", \"shape\": [1], "
                "\"data_offsets\": [0, 2]}}",
                4, NC_EFORMAT,
                "x.safetensors: tensor '?[31mred?x': data_offsets [0, 2]: expected 4 bytes for "
                "F32 [1], found 2");
    char hdr[400], msg[400];
    snprintf(hdr, sizeof hdr, "{\"%0300d\": 1}", 7);
    snprintf(msg, sizeof msg,
             "x.safetensors: tensor '%0200d': found 1, expected an object with dtype, shape and "
             "data_offsets",
             0);
    expect_fail(hdr, 0, NC_EFORMAT, msg);
}

static void test_reject_duplicate_name(void)
{
    expect_fail("{\"w\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]},"
                " \"v\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [0, 0]},"
                " \"w\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1, 2]}}",
                2, NC_EFORMAT,
                "x.safetensors: tensor 'w': found twice in the header, expected unique names");
}

/* ------------------------------------------------------------------ */
/* Rejections: __metadata__                                            */
/* ------------------------------------------------------------------ */

static void test_reject_metadata(void)
{
    expect_fail("{\"__metadata__\": [\"pt\"]}", 0, NC_EFORMAT,
                "x.safetensors: __metadata__: found an array of length 1, expected an object "
                "of strings");
    expect_fail("{\"__metadata__\": {\"format\": \"pt\", \"step\": 1200}}", 0, NC_EFORMAT,
                "x.safetensors: __metadata__ key 'step': found 1200, expected a string");
    expect_fail("{\"__metadata__\": {\"ok\": \"yes\", \"quantized\": false}}", 0, NC_EFORMAT,
                "x.safetensors: __metadata__ key 'quantized': found false, expected a string");
    expect_fail("{\"__metadata__\": {\"nested\": {\"a\": \"b\"}}}", 0, NC_EFORMAT,
                "x.safetensors: __metadata__ key 'nested': found an object, expected a string");
    expect_fail("{\"__metadata__\": {\"format\": \"pt\", \"format\": \"np\"}}", 0, NC_EFORMAT,
                "x.safetensors: __metadata__: found key 'format' twice, expected each key once");
    expect_fail("{\"__metadata__\": {}, \"__metadata__\": {}}", 0, NC_EFORMAT,
                "x.safetensors: header: found __metadata__ twice, expected it at most once");
}

/* ------------------------------------------------------------------ */
/* Writer rejections                                                   */
/* ------------------------------------------------------------------ */

static void expect_write_fail(const nc_st_entry *e, size_t n, const char *const *meta, int code,
                              const char *msg)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(code, nc_st_write(&s, e, n, meta, &err));
    CHECK_STR(msg, err.msg);
    CHECK_INT(0, mb.len);
    nc_membuf_free(&mb);
}

/* Names are UTF-8: multi-byte characters pass, malformed sequences are
 * refused (JSON requires UTF-8; cJSON does not check it). */
static void test_writer_utf8_names(void)
{
    static const char *const good[] = {"caf\xc3\xa9", "\xe4\xb8\xad.norm", "\xf0\x9f\x98\x80",
                                       "\xef\xbf\xbd"};
    static const uint64_t one[1] = {1}; /* outlives the loop, unlike a compound literal */
    nc_st_entry e[4];
    for (int i = 0; i < 4; i++)
        e[i] = (nc_st_entry){good[i], NC_U8, 1, one, "z"};
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_st_write(&s, e, 4, NULL, &err));
    nc_st *st = parse_ok(mb.data, mb.len);
    if (st) {
        for (int i = 0; i < 4; i++)
            CHECK(nc_st_find(st, good[i]) == nc_st_tensor(st, (size_t)i));
        nc_st_free(st);
    }
    nc_membuf_free(&mb);

    static const char *const bad[] = {
        "\xc0\x80",         /* overlong NUL */
        "\xe0\x80\xaf",     /* overlong '/' */
        "\xed\xa0\x80",     /* a UTF-16 surrogate */
        "\xf4\x90\x80\x80", /* above U+10FFFF */
        "\xe4\xb8",         /* cut short */
        "\x80",             /* a lone continuation byte */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        e[0].name = bad[k];
        expect_write_fail(e, 1, NULL, NC_EINVAL,
                          "safetensors writer: tensor 0: name invalid, expected a UTF-8 name "
                          "other than __metadata__");
    }
}

static void test_writer_rejects(void)
{
    const uint64_t four[1] = {4}, huge[2] = {1u << 31, 1u << 31};
    const uint64_t big53[1] = {(uint64_t)1 << 53};
    nc_st_entry ok = {"x", NC_F32, 1, four, EXAMPLE_X};
    nc_st_entry e[2] = {ok, ok};
    expect_write_fail(e, 2, NULL, NC_EINVAL,
                      "safetensors writer: tensor 'x': found twice, expected unique names");
    e[1].name = "__metadata__";
    expect_write_fail(e, 2, NULL, NC_EINVAL,
                      "safetensors writer: tensor 1: name invalid, expected a UTF-8 name other "
                      "than __metadata__");
    e[1].name = "bad\xff";
    expect_write_fail(e, 2, NULL, NC_EINVAL,
                      "safetensors writer: tensor 1: name invalid, expected a UTF-8 name other "
                      "than __metadata__");
    e[1].name = NULL;
    expect_write_fail(e, 2, NULL, NC_EINVAL,
                      "safetensors writer: tensor 1: name missing, expected a UTF-8 name other "
                      "than __metadata__");
    e[1] = ok;
    e[1].name = "y";
    e[1].dtype = NC_DT_NONE;
    expect_write_fail(e, 2, NULL, NC_EINVAL,
                      "safetensors writer: tensor 'y': dtype ? rank 1, expected a known dtype and "
                      "rank 0 to 32");
    e[1].dtype = NC_F32;
    e[1].rank = NC_MAX_RANK + 1;
    expect_write_fail(e, 2, NULL, NC_EINVAL,
                      "safetensors writer: tensor 'y': dtype F32 rank 33, expected a known dtype "
                      "and rank 0 to 32");
    e[1].rank = 2;
    e[1].shape = huge;
    expect_write_fail(e, 2, NULL, NC_ERANGE,
                      "safetensors writer: tensor 'y': shape [2147483648, 2147483648]: too many "
                      "bytes, expected a file below 2^53 bytes");
    e[1].rank = 1;
    e[1].shape = big53;
    e[1].dtype = NC_U8;
    expect_write_fail(e, 2, NULL, NC_ERANGE,
                      "safetensors writer: tensor 'y': shape [9007199254740992]: too many bytes, "
                      "expected a file below 2^53 bytes");
    e[1].shape = four;
    e[1].data = NULL;
    expect_write_fail(e, 2, NULL, NC_EINVAL, "safetensors writer: tensor 'y': data missing");
    const char *meta_odd[] = {"format", NULL};
    expect_write_fail(&ok, 1, meta_odd, NC_EINVAL,
                      "safetensors writer: __metadata__ key 'format': found a missing or non-UTF-8 "
                      "string, expected UTF-8 key and value");
    const char *meta_dup[] = {"format", "pt", "format", "np", NULL};
    expect_write_fail(&ok, 1, meta_dup, NC_EINVAL,
                      "safetensors writer: __metadata__ key 'format': found twice, expected unique "
                      "keys");
}

int main(void)
{
    test_round_trip_all_dtypes_and_ranks();
    test_writer_bytes();
    test_writer_empty();
    test_hf_layout_example_vector();
    test_formatted_header();
    test_coverage();
    test_empty_and_scalar_tensors();
    test_limits_accepted();
    test_reject_empty();
    test_reject_short();
    test_reject_header_past_end();
    test_reject_header_over_limit();
    test_reject_not_an_object();
    test_reject_invalid_json();
    test_reject_escaped_nul();
    test_reject_trailing_bytes();
    test_reject_entry_not_object();
    test_reject_entry_fields();
    test_reject_dtype();
    test_reject_shape();
    test_reject_too_many_axes();
    test_reject_element_overflow();
    test_reject_offsets_shape();
    test_reject_offsets_reversed();
    test_reject_offsets_past_end();
    test_reject_offsets_one_past_end();
    test_reject_size_mismatch();
    test_reject_overlap();
    test_reject_duplicate_name();
    test_message_names_sanitised();
    test_reject_metadata();
    test_writer_rejects();
    test_writer_utf8_names();
    return CHECK_DONE();
}
