/*
 * test_npy.c - io/npy: parsing NumPy's own headers, round trips through the
 * writer for every dtype and ranks 1..4, and every rejection path with its
 * exact message.
 *
 * Files are built in memory: by nc_npy_write_header, from header bytes
 * NumPy wrote (pasted below), or by hand with make_npy (a preamble around a
 * header string given verbatim, so malformed headers can be tested).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/tensor.h"
#include "core/half.h"
#include "io/npy.h"
#include "util/sink.h"

/* Header bytes written by NumPy 1.24.2 (Debian's python3-numpy), printed by
 *   python3 -c "import numpy as np, io; from numpy.lib import format as F;
 *     b = io.BytesIO(); F.write_array(b, a, version=V); print(b.getvalue())"
 * with a = np.array([1, 2, 3, 4], '<f4') for V = (1, 0), (2, 0), (3, 0), and
 * np.save (version None) of np.zeros((2040, 64), '<f2') and
 * np.zeros((2, 3, 4), '<f8'); the data bytes were cut off. */
static const char NUMPY_V1[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4,), }                                              "
                               "              \n";
static const char NUMPY_V2[] = "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': "
                               "False, 'shape': (4,), }                                       "
                               "                   \n";
static const char NUMPY_V3[] = "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': "
                               "False, 'shape': (4,), }                                       "
                               "                   \n";
static const char NUMPY_F16_2040x64[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': "
                                        "False, 'shape': (2040, 64), }                        "
                                        "                              \n";
static const char NUMPY_F8_2x3x4[] = "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': "
                                     "False, 'shape': (2, 3, 4), }                            "
                                     "                           \n";

/* The worked example's input (docs/theory.md, Worked examples). */
static const float EXAMPLE_X[4] = {1.0f, 2.0f, 3.0f, 4.0f};

/* A file: major.0 preamble, the header text verbatim (no padding added),
 * then ndata bytes of data. Returns the buffer in mb. */
static void make_npy_n(nc_membuf *mb, int major, const char *hdr, size_t hlen, const void *data,
                       size_t ndata)
{
    nc_sink s = nc_membuf_sink(mb);
    unsigned char pre[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)major, 0};
    size_t npre = major == 1 ? 10 : 12;
    for (size_t k = 0; k < npre - 8; k++)
        pre[8 + k] = (unsigned char)(hlen >> (8 * k));
    nc_sink_write(&s, pre, npre, NULL);
    nc_sink_write(&s, hdr, hlen, NULL);
    nc_sink_write(&s, data, ndata, NULL);
}

static void make_npy(nc_membuf *mb, int major, const char *hdr, const void *data, size_t ndata)
{
    make_npy_n(mb, major, hdr, strlen(hdr), data, ndata);
}

/* Parses buf and checks that it fails with code and exactly msg. */
static void expect_fail_buf(const unsigned char *buf, size_t len, int code, const char *msg)
{
    nc_tensor t;
    nc_err err = {0};
    int rc = nc_npy_parse(buf, len, "x.npy", &t, &err);
    CHECK_INT(code, rc);
    CHECK_INT(code, err.code);
    CHECK_STR(msg, err.msg);
}

/* A v1.0 file with header hdr and ndata zero bytes of data must fail. */
static void expect_fail(const char *hdr, size_t ndata, int code, const char *msg)
{
    nc_membuf mb = {0};
    unsigned char *zeros = calloc(ndata ? ndata : 1, 1);
    make_npy(&mb, 1, hdr, zeros, ndata);
    expect_fail_buf(mb.data, mb.len, code, msg);
    free(zeros);
    nc_membuf_free(&mb);
}

/* Parses buf, which must succeed. */
static int parse_ok(const unsigned char *buf, size_t len, nc_tensor *t)
{
    nc_err err = {0};
    int rc = nc_npy_parse(buf, len, "x.npy", t, &err);
    CHECK_INT(0, rc);
    CHECK_STR("", err.msg);
    return rc;
}

/* ------------------------------------------------------------------ */
/* NumPy's headers                                                     */
/* ------------------------------------------------------------------ */

/* np.save(np.array([1, 2, 3, 4], '<f4')) parses; the data are the worked example's vector. */
static void test_numpy_v1_brief_vector(void)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_sink_write(&s, NUMPY_V1, sizeof NUMPY_V1 - 1, NULL);
    nc_sink_write(&s, EXAMPLE_X, sizeof EXAMPLE_X, NULL);
    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(NC_F32, t.dtype);
        CHECK_INT(1, t.rank);
        CHECK_INT(4, t.shape[0]);
        CHECK_INT(1, t.N);
        CHECK_INT(4, t.d);
        CHECK_INT(4, t.nelem);
        CHECK_INT(16, t.nbytes);
        CHECK_INT(128, t.file_offset);
        CHECK(t.data == mb.data + 128);
        CHECK(t.name == NULL);
        double x[4];
        nc_tensor_rows(&t, 0, 1, x);
        for (int i = 0; i < 4; i++) /* float -> double is exact */
            CHECK_ABS(EXAMPLE_X[i], x[i], 0.0);
    }
    nc_membuf_free(&mb);
}

static void check_v2_v3(const char *hdr, size_t hdr_len)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_sink_write(&s, hdr, hdr_len, NULL);
    nc_sink_write(&s, EXAMPLE_X, sizeof EXAMPLE_X, NULL);
    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(NC_F32, t.dtype);
        CHECK_INT(4, t.d);
        CHECK_INT(128, t.file_offset);
        double x[4];
        nc_tensor_rows(&t, 0, 1, x);
        CHECK_ABS(3.0, x[2], 0.0);
    }
    nc_membuf_free(&mb);
}

static void test_numpy_v2_v3(void)
{
    check_v2_v3(NUMPY_V2, sizeof NUMPY_V2 - 1);
    check_v2_v3(NUMPY_V3, sizeof NUMPY_V3 - 1);
}

/* The writer produces byte for byte what np.save writes. */
static void check_writer_matches(nc_dtype dt, int rank, const uint64_t *shape, const char *want,
                                 size_t want_len)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_npy_write_header(&s, dt, rank, shape, &err));
    CHECK_INT(want_len, mb.len);
    CHECK(mb.len == want_len && memcmp(mb.data, want, want_len) == 0);
    nc_membuf_free(&mb);
}

static void test_writer_matches_numpy(void)
{
    check_writer_matches(NC_F32, 1, (const uint64_t[]){4}, NUMPY_V1, sizeof NUMPY_V1 - 1);
    check_writer_matches(NC_F16, 2, (const uint64_t[]){2040, 64}, NUMPY_F16_2040x64,
                         sizeof NUMPY_F16_2040x64 - 1);
    check_writer_matches(NC_F64, 3, (const uint64_t[]){2, 3, 4}, NUMPY_F8_2x3x4,
                         sizeof NUMPY_F8_2x3x4 - 1);
}

/* ------------------------------------------------------------------ */
/* Round trips                                                         */
/* ------------------------------------------------------------------ */

/* The value element k round-trips to, after storage in dt. */
static double stored(nc_dtype dt, size_t k)
{
    double v = -3.8125 + 0.4375 * (double)(k % 17) + 1e-3 * (double)k; /* high entropy */
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

static void put_elem(nc_dtype dt, double v, unsigned char *p)
{
    float f = (float)v;
    uint16_t h;
    switch (dt) {
    case NC_F32:
        memcpy(p, &f, 4);
        break;
    case NC_F64:
        memcpy(p, &v, 8);
        break;
    default:
        h = dt == NC_F16 ? nc_f32_to_f16(f) : nc_f32_to_bf16(f);
        p[0] = (unsigned char)h;
        p[1] = (unsigned char)(h >> 8);
        break;
    }
}

static void check_round_trip(nc_dtype dt, int rank)
{
    static const uint64_t dims[4] = {3, 5, 2, 7};
    const uint64_t *shape = dims + 4 - rank; /* the last axis is always 7 */
    size_t nelem = 1;
    for (int k = 0; k < rank; k++)
        nelem *= shape[k];
    size_t es = nc_dtype_size(dt);
    unsigned char *data = malloc(nelem * es);
    for (size_t k = 0; k < nelem; k++)
        put_elem(dt, stored(dt, k), data + k * es);

    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_npy_write_header(&s, dt, rank, shape, &err));
    size_t off = mb.len;
    CHECK_INT(0, off % 64);
    nc_sink_write(&s, data, nelem * es, NULL);

    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(dt, t.dtype);
        CHECK_INT(rank, t.rank);
        for (int k = 0; k < rank; k++)
            CHECK_INT(shape[k], t.shape[k]);
        CHECK_INT(nelem / 7, t.N);
        CHECK_INT(7, t.d);
        CHECK_INT(nelem, t.nelem);
        CHECK_INT(nelem * es, t.nbytes);
        CHECK_INT(off, t.file_offset);
        CHECK(t.data == mb.data + off);
        double *x = malloc(nelem * sizeof *x);
        nc_tensor_rows(&t, 0, t.N, x);
        int bad = 0;
        for (size_t k = 0; k < nelem; k++) /* widening from storage is exact */
            bad += x[k] != stored(dt, k);
        CHECK_INT(0, bad);
        /* one row from the middle, through the row offset */
        nc_tensor_rows(&t, t.N - 1, 1, x);
        CHECK_ABS(stored(dt, nelem - 7 + 3), x[3], 0.0);
        free(x);
    }
    nc_membuf_free(&mb);
    free(data);
}

static void test_round_trip_all_dtypes_and_ranks(void)
{
    const nc_dtype dts[] = {NC_F32, NC_F16, NC_F64, NC_BF16};
    for (int i = 0; i < 4; i++)
        for (int rank = 1; rank <= 4; rank++)
            check_round_trip(dts[i], rank);
}

/* The writer spells bfloat16 as ml_dtypes does. */
static void test_writer_bf16_descr(void)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(0, nc_npy_write_header(&s, NC_BF16, 2, (const uint64_t[]){6, 2}, &err));
    const char want[] = "{'descr': '<V2', 'fortran_order': False, 'shape': (6, 2), }";
    CHECK(mb.len > 10 + sizeof want - 1 && memcmp(mb.data + 10, want, sizeof want - 1) == 0);
    CHECK_INT(128, mb.len); /* 10 + 60 + 20 growth spaces + 1 is past 64 */
    CHECK_INT('\n', mb.data[mb.len - 1]);
    nc_membuf_free(&mb);
}

/* ------------------------------------------------------------------ */
/* Accepted variants of the grammar                                    */
/* ------------------------------------------------------------------ */

static void check_variant(const char *hdr, nc_dtype dt, int rank, uint64_t d0, uint64_t d1)
{
    size_t nbytes = nc_dtype_size(dt) * d0 * (rank == 2 ? d1 : 1);
    unsigned char *data = calloc(nbytes ? nbytes : 1, 1);
    nc_membuf mb = {0};
    make_npy(&mb, 1, hdr, data, nbytes);
    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(dt, t.dtype);
        CHECK_INT(rank, t.rank);
        CHECK_INT(d0, t.shape[0]);
        if (rank == 2)
            CHECK_INT(d1, t.shape[1]);
        CHECK_INT(nbytes, t.nbytes);
    }
    nc_membuf_free(&mb);
    free(data);
}

static void test_grammar_variants(void)
{
    check_variant("{\"descr\": \"<f2\", \"fortran_order\": False, \"shape\": (3, 5)}", NC_F16, 2,
                  3, 5);
    check_variant("{'shape':(3,5,),'descr':'<f8','fortran_order':False}", NC_F64, 2, 3, 5);
    check_variant(" \n{ 'fortran_order' :\tFalse ,\r\n 'shape' : ( 11 , ) , 'descr' : '<f4' , }"
                  " \n",
                  NC_F32, 1, 11, 0);
    check_variant("{'descr': 'bfloat16', 'fortran_order': False, 'shape': (2, 3), }", NC_BF16, 2,
                  2, 3);
    check_variant("{'descr': '<V2', 'fortran_order': False, 'shape': (9,), }", NC_BF16, 1, 9, 0);
    check_variant("{'descr':'<f4','fortran_order':False,'shape':(0,)}", NC_F32, 1, 0, 0);
}

/* Zero tokens: shape (0, 5) parses with N = 0 and no data. */
static void test_zero_tokens(void)
{
    nc_membuf mb = {0};
    make_npy(&mb, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }", NULL, 0);
    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(0, t.N);
        CHECK_INT(5, t.d);
        CHECK_INT(0, t.nelem);
        CHECK_INT(0, t.nbytes);
        CHECK(t.data == mb.data + mb.len);
    }
    nc_membuf_free(&mb);
}

/* Zero channels: shape (3, 0) parses with d = 0. */
static void test_zero_channels(void)
{
    nc_membuf mb = {0};
    make_npy(&mb, 2, "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 0), }", NULL, 0);
    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(3, t.N);
        CHECK_INT(0, t.d);
        CHECK_INT(0, t.nbytes);
        CHECK_INT(12 + 59, t.file_offset);
    }
    nc_membuf_free(&mb);
}

/* The largest accepted rank: NC_MAX_RANK axes. */
static void test_max_rank(void)
{
    char hdr[512];
    size_t n = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int k = 0; k < NC_MAX_RANK; k++)
        n += (size_t)snprintf(hdr + n, sizeof hdr - n, "%s", k == NC_MAX_RANK - 1 ? "2)}" : "1, ");
    nc_membuf mb = {0};
    make_npy(&mb, 1, hdr, EXAMPLE_X, 8);
    nc_tensor t;
    if (parse_ok(mb.data, mb.len, &t) == 0) {
        CHECK_INT(NC_MAX_RANK, t.rank);
        CHECK_INT(1, t.N);
        CHECK_INT(2, t.d);
    }
    nc_membuf_free(&mb);
}

/* ------------------------------------------------------------------ */
/* Rejections: the preamble                                            */
/* ------------------------------------------------------------------ */

static void test_reject_empty(void)
{
    expect_fail_buf((const unsigned char *)"", 0, NC_EFORMAT, "x.npy: empty file, expected a .npy file");
}

static void test_reject_short(void)
{
    expect_fail_buf((const unsigned char *)"\x93NUMPY\x01", 7, NC_EFORMAT,
                    "x.npy: file too short: found 7 bytes, expected at least 10 (the .npy "
                    "preamble)");
}

static void test_reject_bad_magic(void)
{
    expect_fail_buf((const unsigned char *)"PK\x03\x04\x14\x00\x00\x00\x08\x00", 10, NC_EFORMAT,
                    "x.npy: not a .npy file: magic at offset 0: found \"PK\\x03\\x04\\x14\\x00\", "
                    "expected \"\\x93NUMPY\"");
}

static void test_reject_unknown_version(void)
{
    expect_fail_buf((const unsigned char *)"\x93NUMPY\x04\x00\x00\x00\x00\x00", 12,
                    NC_EUNSUPPORTED,
                    "x.npy: .npy format version at offset 6: found 4.0, expected 1.0, 2.0 or 3.0");
    expect_fail_buf((const unsigned char *)"\x93NUMPY\x01\x01\x00\x00", 10, NC_EUNSUPPORTED,
                    "x.npy: .npy format version at offset 6: found 1.1, expected 1.0, 2.0 or 3.0");
}

static void test_reject_short_v2_preamble(void)
{
    expect_fail_buf((const unsigned char *)"\x93NUMPY\x02\x00\x10\x00\x00", 11, NC_EFORMAT,
                    "x.npy: file too short: found 11 bytes, expected at least 12 (the .npy 2.0 "
                    "preamble)");
}

static void test_reject_header_past_end(void)
{
    /* v1.0 claiming 0x7677 = 30327 header bytes in a 20-byte file */
    expect_fail_buf((const unsigned char *)"\x93NUMPY\x01\x00wv{'descr': ", 20, NC_EFORMAT,
                    "x.npy: header length at offset 8: found 30327 bytes, expected at most 10 "
                    "(the file has 20 bytes)");
    /* v2.0 with a u32 length near 4 GiB */
    expect_fail_buf((const unsigned char *)"\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14, NC_EFORMAT,
                    "x.npy: header length at offset 8: found 4294967295 bytes, expected at most "
                    "2 (the file has 14 bytes)");
}

/* ------------------------------------------------------------------ */
/* Rejections: the header dict                                         */
/* ------------------------------------------------------------------ */

static void test_reject_non_ascii(void)
{
    expect_fail("{'descr': '<f4\xc3\xa9', 'fortran_order': False, 'shape': (4,), }", 16,
                NC_EFORMAT, "x.npy: header at offset 24: found byte 0xc3, expected printable ASCII");
    static const char nul[] = "{'descr': '<f4',\x00 'fortran_order': False, 'shape': (4,), }";
    nc_membuf mb = {0};
    make_npy_n(&mb, 1, nul, sizeof nul - 1, EXAMPLE_X, 16);
    expect_fail_buf(mb.data, mb.len, NC_EFORMAT,
                    "x.npy: header at offset 26: found byte 0x00, expected printable ASCII");
    nc_membuf_free(&mb);
}

static void test_reject_empty_header(void)
{
    expect_fail("", 0, NC_EFORMAT,
                "x.npy: header at offset 10: found the end of the header, expected '{' starting "
                "the header dict");
    expect_fail("   \n", 0, NC_EFORMAT,
                "x.npy: header at offset 14: found the end of the header, expected '{' starting "
                "the header dict");
}

static void test_reject_syntax(void)
{
    expect_fail("['descr', '<f4']", 0, NC_EFORMAT,
                "x.npy: header at offset 10: found '[', expected '{' starting the header dict");
    expect_fail("{'descr' '<f4'}", 0, NC_EFORMAT,
                "x.npy: header at offset 19: found ''', expected ':'");
    expect_fail("{'descr': '<f4' 'fortran_order': False}", 0, NC_EFORMAT,
                "x.npy: header at offset 26: found ''', expected ',' or '}'");
    expect_fail("{descr: '<f4'}", 0, NC_EFORMAT,
                "x.npy: header at offset 11: found 'd', expected a quoted string");
    expect_fail("{'descr': '<f4", 0, NC_EFORMAT,
                "x.npy: header at offset 24: found the end of the header, expected the closing "
                "quote");
    expect_fail("{'descr': '<f4\n', 'fortran_order': False, 'shape': (4,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 24: found '\\n', expected the closing quote");
    expect_fail("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (4,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 23: found '\\', expected a string without escapes");
    expect_fail("{'descr': '<f4', 'fortran_order': false, 'shape': (4,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 44: found 'f', expected True or False");
    expect_fail("{'descr': '<f4', 'fortran_order': Falsely, 'shape': (4,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 44: found 'F', expected True or False");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': 4}", 0, NC_EFORMAT,
                "x.npy: header at offset 60: found '4', expected '(' starting the shape tuple");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4)}", 0, NC_EFORMAT,
                "x.npy: header at offset 62: found ')', expected ',' (a one-axis shape is "
                "written (n,))");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", 0, NC_EFORMAT,
                "x.npy: header at offset 63: found '3', expected ',' (a one-axis shape is "
                "written (n,))");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3 4)}", 0, NC_EFORMAT,
                "x.npy: header at offset 66: found '4', expected ',' or ')'");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 61: found '-', expected a non-negative integer");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 61: found ',', expected a non-negative integer");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (04,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 62: found '4', expected ',' (a one-axis shape is "
                "written (n,))");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", 0, NC_EFORMAT,
                "x.npy: header at offset 62: found '.', expected ',' (a one-axis shape is "
                "written (n,))");
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }}", 16, NC_EFORMAT,
                "x.npy: header at offset 67: found '}', expected only spaces after the header "
                "dict");
    expect_fail("{,}", 0, NC_EFORMAT,
                "x.npy: header at offset 11: found ',', expected a quoted string");
}

static void test_reject_unknown_key(void)
{
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'order': 'C'}", 16,
                NC_EFORMAT,
                "x.npy: header at offset 66: found key 'order', expected 'descr', "
                "'fortran_order' or 'shape'");
}

static void test_reject_duplicate_key(void)
{
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'descr': '<f8'}", 16,
                NC_EFORMAT,
                "x.npy: header at offset 66: found key 'descr' a second time, expected each "
                "key once");
}

static void test_reject_missing_key(void)
{
    expect_fail("{'descr': '<f4', 'fortran_order': False}", 0, NC_EFORMAT,
                "x.npy: header: key 'shape' is missing (expected 'descr', 'fortran_order' and "
                "'shape')");
    expect_fail("{}", 0, NC_EFORMAT,
                "x.npy: header: key 'descr' is missing (expected 'descr', 'fortran_order' and "
                "'shape')");
}

/* ------------------------------------------------------------------ */
/* Rejections: dtype, order, shape, data                               */
/* ------------------------------------------------------------------ */

static void test_reject_structured_dtype(void)
{
    expect_fail("{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (4,)}",
                32, NC_EUNSUPPORTED,
                "x.npy: header field 'descr': found a structured dtype (a list of fields), "
                "expected float32, float16, float64 or bfloat16");
}

static void test_reject_big_endian(void)
{
    expect_fail("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", 16, NC_EUNSUPPORTED,
                "x.npy: header field 'descr': found big-endian '>f4', expected little-endian "
                "'<f4' (save with arr.astype('<f4'))");
    expect_fail("{'descr': '>f8', 'fortran_order': False, 'shape': (4,), }", 32, NC_EUNSUPPORTED,
                "x.npy: header field 'descr': found big-endian '>f8', expected little-endian "
                "'<f8' (save with arr.astype('<f8'))");
}

static void test_reject_native_order(void)
{
    expect_fail("{'descr': '=f2', 'fortran_order': False, 'shape': (4,), }", 8, NC_EUNSUPPORTED,
                "x.npy: header field 'descr': found native byte order '=f2', expected "
                "little-endian '<f2'");
}

static void test_reject_other_dtypes(void)
{
    static const char *const bad[] = {"<i8", "|b1", "<c8", "|O", "<U3", "|S3", "<f16", "|u1",
                                      ">V2", "float32", ""};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char hdr[128], msg[256];
        snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (4,), }",
                 bad[k]);
        snprintf(msg, sizeof msg,
                 "x.npy: header field 'descr': unsupported dtype '%s' (expected float32, "
                 "float16, float64 or bfloat16)",
                 bad[k]);
        expect_fail(hdr, 16, NC_EUNSUPPORTED, msg);
    }
}

static void test_reject_plain_void(void)
{
    expect_fail("{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", 4, NC_EUNSUPPORTED,
                "x.npy: header field 'descr': found '|V2', which is ambiguous: a plain 2-byte "
                "void, not necessarily bfloat16 (expected '<V2' as ml_dtypes writes bfloat16, "
                "or float32, float16 or float64)");
}

static void test_reject_fortran_order(void)
{
    expect_fail("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
                NC_EUNSUPPORTED,
                "x.npy: header field 'fortran_order': found True, expected False (Fortran order "
                "is not supported; save with np.ascontiguousarray)");
}

static void test_reject_scalar(void)
{
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 4, NC_EUNSUPPORTED,
                "x.npy: header field 'shape': found (), a scalar, expected at least one axis");
}

static void test_reject_too_many_axes(void)
{
    char hdr[512];
    size_t n = (size_t)snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
    for (int k = 0; k < NC_MAX_RANK + 1; k++)
        n += (size_t)snprintf(hdr + n, sizeof hdr - n, "1, ");
    snprintf(hdr + n, sizeof hdr - n, ")}");
    /* the 33rd axis starts at 10 + 51 + 32 * 3 */
    expect_fail(hdr, 4, NC_EUNSUPPORTED,
                "x.npy: header at offset 157: shape: found more than 32 axes, expected at most "
                "32");
}

static void test_reject_integer_overflow(void)
{
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,)}", 0,
                NC_ERANGE,
                "x.npy: header at offset 61: shape: found an integer above 2^64 - 1, expected at "
                "most 18446744073709551615");
}

static void test_reject_element_overflow(void)
{
    /* 2^32 x 2^32 elements: the product overflows 2^62 */
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", 0,
                NC_ERANGE,
                "x.npy: header field 'shape': found [4294967296, 4294967296], too many elements "
                "for F32 (expected at most 2^62 elements and 2^64 bytes)");
    /* 2^62 elements pass the element limit, but 2^62 x 4 bytes wrap to 0:
     * without the byte check an empty file would claim 2^62 elements */
    expect_fail("{'descr': '<f4', 'fortran_order': False, 'shape': (2147483648, 2147483648)}", 0,
                NC_ERANGE,
                "x.npy: header field 'shape': found [2147483648, 2147483648], too many elements "
                "for F32 (expected at most 2^62 elements and 2^64 bytes)");
    expect_fail("{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,)}", 0,
                NC_ERANGE,
                "x.npy: header field 'shape': found [4611686018427387904], too many elements "
                "for F64 (expected at most 2^62 elements and 2^64 bytes)");
}

static void test_reject_truncated_data(void)
{
    /* NumPy's header, 3 of the 4 floats */
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_sink_write(&s, NUMPY_V1, sizeof NUMPY_V1 - 1, NULL);
    nc_sink_write(&s, EXAMPLE_X, 12, NULL);
    expect_fail_buf(mb.data, mb.len, NC_EFORMAT,
                    "x.npy: data truncated: expected 16 bytes for F32 [4] at offset 128, found "
                    "12");
    nc_membuf_free(&mb);
    expect_fail("{'descr': '<f2', 'fortran_order': False, 'shape': (2040, 64), }", 1000,
                NC_EFORMAT,
                "x.npy: data truncated: expected 261120 bytes for F16 [2040, 64] at offset 73, "
                "found 1000");
}

/* The boundary: one byte short of the data (a check off by one would read
 * a byte past the end of the file). */
static void test_reject_truncated_one_byte(void)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_sink_write(&s, NUMPY_V1, sizeof NUMPY_V1 - 1, NULL);
    nc_sink_write(&s, EXAMPLE_X, 15, NULL);
    expect_fail_buf(mb.data, mb.len, NC_EFORMAT,
                    "x.npy: data truncated: expected 16 bytes for F32 [4] at offset 128, found "
                    "15");
    nc_membuf_free(&mb);
    expect_fail("{'descr': '<f2', 'fortran_order': False, 'shape': (2040, 64), }", 261119,
                NC_EFORMAT,
                "x.npy: data truncated: expected 261120 bytes for F16 [2040, 64] at offset 73, "
                "found 261119");
}

static void test_reject_extra_data(void)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_sink_write(&s, NUMPY_V1, sizeof NUMPY_V1 - 1, NULL);
    nc_sink_write(&s, EXAMPLE_X, 16, NULL);
    nc_sink_write(&s, "\n", 1, NULL);
    expect_fail_buf(mb.data, mb.len, NC_EFORMAT,
                    "x.npy: extra bytes after the data: expected 16 bytes for F32 [4] at offset "
                    "128, found 17");
    nc_membuf_free(&mb);
}

/* ------------------------------------------------------------------ */
/* Writer rejections                                                   */
/* ------------------------------------------------------------------ */

static void expect_write_fail(nc_dtype dt, int rank, const uint64_t *shape, int code,
                              const char *msg)
{
    nc_membuf mb = {0};
    nc_sink s = nc_membuf_sink(&mb);
    nc_err err = {0};
    CHECK_INT(code, nc_npy_write_header(&s, dt, rank, shape, &err));
    CHECK_STR(msg, err.msg);
    CHECK_INT(0, mb.len);
    nc_membuf_free(&mb);
}

static void test_writer_rejects(void)
{
    const uint64_t shape[NC_MAX_RANK + 1] = {4294967296u, 4294967296u};
    expect_write_fail(NC_I32, 1, shape, NC_EINVAL,
                      ".npy header: dtype I32 cannot be written, expected F32, F16, F64 or BF16");
    expect_write_fail(NC_F32, 0, shape, NC_EINVAL, ".npy header: rank 0, expected 1 to 32");
    expect_write_fail(NC_F32, NC_MAX_RANK + 1, shape, NC_EINVAL,
                      ".npy header: rank 33, expected 1 to 32");
    expect_write_fail(NC_F16, 2, shape, NC_ERANGE,
                      ".npy header: shape [4294967296, 4294967296] has too many elements for F16");
}

/* The array conversions (what every pass over a half tensor uses) give, for
 * all 65536 codes, the bits of the scalar ones widened to double (NaNs:
 * a NaN, quiet, sign and payload kept), from any alignment. */
static void test_half_arrays_all_codes(void)
{
    unsigned char *src = malloc(2 * 65536 + 1);
    double *out = malloc(65536 * sizeof *out);
    CHECK(src && out);
    if (!src || !out)
        goto done;
    for (int odd = 0; odd < 2; odd++) {
        for (uint32_t h = 0; h < 65536; h++) {
            src[odd + 2 * h] = (unsigned char)(h & 0xff);
            src[odd + 2 * h + 1] = (unsigned char)(h >> 8);
        }
        for (int bf = 0; bf < 2; bf++) {
            if (bf)
                nc_bf16_to_f64(src + odd, 65536, out);
            else
                nc_f16_to_f64(src + odd, 65536, out);
            size_t bad = 0;
            for (uint32_t h = 0; h < 65536; h++) {
                double want = bf ? (double)nc_bf16_to_f32((uint16_t)h)
                                 : (double)nc_f16_to_f32((uint16_t)h);
                bad += memcmp(&want, &out[h], sizeof want) != 0;
            }
            CHECK_INT(0, bad);
        }
    }
done:
    free(src);
    free(out);
}

int main(void)
{
    test_half_arrays_all_codes();
    test_numpy_v1_brief_vector();
    test_numpy_v2_v3();
    test_writer_matches_numpy();
    test_round_trip_all_dtypes_and_ranks();
    test_writer_bf16_descr();
    test_grammar_variants();
    test_zero_tokens();
    test_zero_channels();
    test_max_rank();
    test_reject_empty();
    test_reject_short();
    test_reject_bad_magic();
    test_reject_unknown_version();
    test_reject_short_v2_preamble();
    test_reject_header_past_end();
    test_reject_non_ascii();
    test_reject_empty_header();
    test_reject_syntax();
    test_reject_unknown_key();
    test_reject_duplicate_key();
    test_reject_missing_key();
    test_reject_structured_dtype();
    test_reject_big_endian();
    test_reject_native_order();
    test_reject_other_dtypes();
    test_reject_plain_void();
    test_reject_fortran_order();
    test_reject_scalar();
    test_reject_too_many_axes();
    test_reject_integer_overflow();
    test_reject_element_overflow();
    test_reject_truncated_data();
    test_reject_truncated_one_byte();
    test_reject_extra_data();
    test_writer_rejects();
    return CHECK_DONE();
}
