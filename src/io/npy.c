/*
 * npy.c - .npy parsing and header writing (npy.h).
 *
 * Spec: numpy/lib/format.py (format versions 1.0, 2.0, 3.0). The header is
 * a Python dict literal; instead of evaluating Python we accept exactly
 *
 *     header := ws '{' ws [ item ws { ',' ws item ws } [ ',' ws ] ] '}' ws
 *     item   := string ws ':' ws value
 *     string := "'" chars "'" | '"' chars '"'     (no escapes, no newline)
 *     value  := string | 'True' | 'False' | tuple (by key: descr, fortran_order, shape)
 *     tuple  := '(' ws ')' | '(' ws int ws ',' ws ')' | '(' ws int { ws ',' ws int } ws [ ',' ws ] ')'
 *     int    := '0' | [1-9][0-9]*                 (checked against 2^64)
 *     ws     := { ' ' | '\t' | '\n' | '\r' }
 *
 * which covers what every NumPy version writes. Left out: Python 2 long
 * suffixes (3L), underscores in integers, escapes in strings, structured
 * dtypes (refused), any key but the three.
 *
 * Every check is on untrusted bytes: offsets are compared with the file
 * length before any read, integers and the element count are overflow-
 * checked, and the data length must match the shape exactly.
 */
#include "io/npy.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
#define ARRAY_ALIGN 64   /* numpy's ARRAY_ALIGN: data start at a multiple of 64 */
#define GROWTH_DIGITS 21 /* numpy's GROWTH_AXIS_MAX_DIGITS: room to grow axis 0 */
#define V1_MAX_HLEN 65535u

#define FLOATS "float32, float16, float64 or bfloat16"
#define ACCEPTED "expected " FLOATS

/* ------------------------------------------------------------------ */
/* Header tokenizer                                                    */
/* ------------------------------------------------------------------ */

typedef struct cursor {
    const unsigned char *h; /* the header bytes, already checked to be ASCII */
    size_t n;               /* header length */
    size_t pos;             /* next byte to read */
    size_t base;            /* file offset of h[0], for messages */
    const char *path;
    nc_err *err;
} cursor;

typedef struct span {
    const char *s; /* borrowed from the header, not NUL-terminated */
    size_t n;
} span;

static int peek(const cursor *c)
{
    return c->pos < c->n ? c->h[c->pos] : -1;
}

static void skip_ws(cursor *c)
{
    while (c->pos < c->n) {
        unsigned char ch = c->h[c->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r')
            break;
        c->pos++;
    }
}

static bool is_ident(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_';
}

/* "'x'", "'\n'" or "the end of the header": the byte at the cursor. */
static void describe(const cursor *c, char *buf, size_t cap)
{
    int ch = peek(c);
    if (ch < 0)
        snprintf(buf, cap, "the end of the header");
    else if (ch == '\n')
        snprintf(buf, cap, "'\\n'");
    else if (ch == '\t')
        snprintf(buf, cap, "'\\t'");
    else if (ch == '\r')
        snprintf(buf, cap, "'\\r'");
    else if (ch >= 0x20 && ch < 0x7f)
        snprintf(buf, cap, "'%c'", ch);
    else
        snprintf(buf, cap, "byte 0x%02x", (unsigned)ch);
}

static int syntax(const cursor *c, const char *expected)
{
    char found[32];
    describe(c, found, sizeof found);
    return nc_err_set(c->err, NC_EFORMAT, "%s: header at offset %zu: found %s, expected %s",
                      c->path, c->base + c->pos, found, expected);
}

static int expect(cursor *c, char ch, const char *expected)
{
    if (peek(c) != (unsigned char)ch)
        return syntax(c, expected);
    c->pos++;
    return 0;
}

static int parse_string(cursor *c, span *out)
{
    int q = peek(c);
    if (q != '\'' && q != '"')
        return syntax(c, "a quoted string");
    size_t start = ++c->pos;
    for (;;) {
        int ch = peek(c);
        if (ch == q)
            break;
        if (ch < 0 || ch == '\n' || ch == '\r')
            return syntax(c, "the closing quote");
        if (ch == '\\')
            return syntax(c, "a string without escapes");
        c->pos++;
    }
    out->s = (const char *)c->h + start;
    out->n = c->pos - start;
    c->pos++; /* the closing quote */
    return 0;
}

static bool word_at(const cursor *c, const char *w)
{
    size_t k = strlen(w);
    if (c->n - c->pos < k || memcmp(c->h + c->pos, w, k) != 0)
        return false;
    return c->pos + k == c->n || !is_ident(c->h[c->pos + k]);
}

static int parse_bool(cursor *c, bool *out)
{
    if (word_at(c, "True")) {
        *out = true;
        c->pos += 4;
    } else if (word_at(c, "False")) {
        *out = false;
        c->pos += 5;
    } else {
        return syntax(c, "True or False");
    }
    return 0;
}

static int parse_uint(cursor *c, uint64_t *out)
{
    int ch = peek(c);
    if (ch < '0' || ch > '9')
        return syntax(c, "a non-negative integer");
    size_t start = c->pos;
    uint64_t v = 0;
    if (ch == '0') { /* Python allows no leading zeros: "01" fails at the '1' */
        c->pos++;
    } else {
        while ((ch = peek(c)) >= '0' && ch <= '9') {
            unsigned digit = (unsigned)(ch - '0');
            if (v > (UINT64_MAX - digit) / 10)
                return nc_err_set(c->err, NC_ERANGE,
                                  "%s: header at offset %zu: shape: found an integer above "
                                  "2^64 - 1, expected at most 18446744073709551615",
                                  c->path, c->base + start);
            v = v * 10 + digit;
            c->pos++;
        }
    }
    *out = v;
    return 0;
}

/* A Python tuple of integers into shape[0 .. *rank-1]. "(5)" is an integer
 * in Python, not a tuple, and is refused. */
static int parse_shape(cursor *c, uint64_t *shape, int *rank)
{
    int rc;
    *rank = 0;
    if ((rc = expect(c, '(', "'(' starting the shape tuple")))
        return rc;
    skip_ws(c);
    if (peek(c) == ')') {
        c->pos++;
        return 0;
    }
    for (;;) {
        if (*rank == NC_MAX_RANK)
            return nc_err_set(c->err, NC_EUNSUPPORTED,
                              "%s: header at offset %zu: shape: found more than %d axes, "
                              "expected at most %d",
                              c->path, c->base + c->pos, NC_MAX_RANK, NC_MAX_RANK);
        if ((rc = parse_uint(c, &shape[*rank])))
            return rc;
        (*rank)++;
        skip_ws(c);
        if (peek(c) == ',') {
            c->pos++;
            skip_ws(c);
            if (peek(c) == ')')
                break;
        } else if (peek(c) == ')' && *rank > 1) {
            break;
        } else {
            return syntax(c, *rank == 1 ? "',' (a one-axis shape is written (n,))"
                                        : "',' or ')'");
        }
    }
    c->pos++; /* ')' */
    return 0;
}

/* ------------------------------------------------------------------ */
/* The header dict                                                     */
/* ------------------------------------------------------------------ */

enum { KEY_DESCR, KEY_FORTRAN, KEY_SHAPE, KEY_COUNT };
static const char *const KEYS[KEY_COUNT] = {"descr", "fortran_order", "shape"};

typedef struct header {
    span descr;
    bool fortran_order;
    uint64_t shape[NC_MAX_RANK];
    int rank;
} header;

static bool span_is(span s, const char *w)
{
    return s.n == strlen(w) && memcmp(s.s, w, s.n) == 0;
}

static int parse_value(cursor *c, int key, header *hd)
{
    switch (key) {
    case KEY_DESCR:
        if (peek(c) == '[')
            return nc_err_set(c->err, NC_EUNSUPPORTED,
                              "%s: header field 'descr': found a structured dtype (a list of "
                              "fields), " ACCEPTED,
                              c->path);
        return parse_string(c, &hd->descr);
    case KEY_FORTRAN:
        return parse_bool(c, &hd->fortran_order);
    default:
        return parse_shape(c, hd->shape, &hd->rank);
    }
}

static int parse_dict(cursor *c, header *hd)
{
    bool seen[KEY_COUNT] = {false};
    int rc;
    skip_ws(c);
    if ((rc = expect(c, '{', "'{' starting the header dict")))
        return rc;
    skip_ws(c);
    while (peek(c) != '}') {
        size_t key_pos = c->pos;
        span k;
        if ((rc = parse_string(c, &k)))
            return rc;
        int key = 0;
        while (key < KEY_COUNT && !span_is(k, KEYS[key]))
            key++;
        if (key == KEY_COUNT)
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: header at offset %zu: found key '%.*s', expected 'descr', "
                              "'fortran_order' or 'shape'",
                              c->path, c->base + key_pos, (int)(k.n > 64 ? 64 : k.n), k.s);
        if (seen[key])
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: header at offset %zu: found key '%s' a second time, "
                              "expected each key once",
                              c->path, c->base + key_pos, KEYS[key]);
        seen[key] = true;
        skip_ws(c);
        if ((rc = expect(c, ':', "':'")))
            return rc;
        skip_ws(c);
        if ((rc = parse_value(c, key, hd)))
            return rc;
        skip_ws(c);
        if (peek(c) == ',') {
            c->pos++;
            skip_ws(c);
        } else if (peek(c) != '}') {
            return syntax(c, "',' or '}'");
        }
    }
    c->pos++; /* '}' */
    skip_ws(c);
    if (c->pos != c->n)
        return syntax(c, "only spaces after the header dict");
    for (int key = 0; key < KEY_COUNT; key++)
        if (!seen[key])
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: header: key '%s' is missing (expected 'descr', "
                              "'fortran_order' and 'shape')",
                              c->path, KEYS[key]);
    return 0;
}

/* The dtype named by descr, or an error saying why it is refused. */
static int descr_dtype(span s, const char *path, nc_err *err, nc_dtype *dt)
{
    static const struct {
        const char *descr;
        nc_dtype dt;
    } known[] = {{"<f4", NC_F32}, {"<f2", NC_F16},      {"<f8", NC_F64},
                 {"<V2", NC_BF16}, {"bfloat16", NC_BF16}};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        if (span_is(s, known[k].descr)) {
            *dt = known[k].dt;
            return 0;
        }
    }
    int n = (int)(s.n > 64 ? 64 : s.n);
    if (span_is(s, "|V2"))
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: header field 'descr': found '|V2', which is ambiguous: a plain "
                          "2-byte void, not necessarily bfloat16 (expected '<V2' as ml_dtypes "
                          "writes bfloat16, or float32, float16 or float64)",
                          path);
    bool is_float = s.n == 3 && s.s[1] == 'f' && (s.s[2] == '2' || s.s[2] == '4' || s.s[2] == '8');
    if (is_float && s.s[0] == '>')
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: header field 'descr': found big-endian '%.3s', expected "
                          "little-endian '<%.2s' (save with arr.astype('<%.2s'))",
                          path, s.s, s.s + 1, s.s + 1);
    if (is_float && s.s[0] == '=')
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: header field 'descr': found native byte order '%.3s', expected "
                          "little-endian '<%.2s'",
                          path, s.s, s.s + 1);
    return nc_err_set(err, NC_EUNSUPPORTED, "%s: header field 'descr': unsupported dtype '%.*s' (" ACCEPTED ")",
                      path, n, s.s);
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

/* Up to n bytes as a C-escaped string ("\x93NUMPZ"), for the magic message. */
static void escape_bytes(const unsigned char *b, size_t n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; k < n && used + 5 < cap; k++) {
        if (b[k] >= 0x20 && b[k] < 0x7f && b[k] != '"' && b[k] != '\\')
            out[used++] = (char)b[k];
        else
            used += (size_t)snprintf(out + used, cap - used, "\\x%02x", b[k]);
        out[used] = '\0';
    }
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int nc_npy_parse(const unsigned char *buf, size_t len, const char *path, nc_tensor *t,
                 nc_err *err)
{
    if (len == 0)
        return nc_err_set(err, NC_EFORMAT, "%s: empty file, expected a .npy file", path);
    if (len < 10)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: file too short: found %zu bytes, expected at least 10 (the .npy "
                          "preamble)",
                          path, len);
    if (memcmp(buf, MAGIC, MAGIC_LEN) != 0) {
        char found[64];
        escape_bytes(buf, MAGIC_LEN, found, sizeof found);
        return nc_err_set(err, NC_EFORMAT,
                          "%s: not a .npy file: magic at offset 0: found \"%s\", expected "
                          "\"\\x93NUMPY\"",
                          path, found);
    }

    /* Version 1.0: u16 header length at 8; 2.0 and 3.0 (UTF-8, which our
     * ASCII-only grammar treats like 2.0): u32 at 8. */
    unsigned major = buf[6], minor = buf[7];
    size_t start, hlen;
    if (major == 1 && minor == 0) {
        start = 10;
        hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (len < 12)
            return nc_err_set(err, NC_EFORMAT,
                              "%s: file too short: found %zu bytes, expected at least 12 (the "
                              ".npy %u.0 preamble)",
                              path, len, major);
        start = 12;
        hlen = le32(buf + 8);
    } else {
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: .npy format version at offset 6: found %u.%u, expected 1.0, 2.0 "
                          "or 3.0",
                          path, major, minor);
    }
    if (hlen > len - start)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: header length at offset 8: found %zu bytes, expected at most "
                          "%zu (the file has %zu bytes)",
                          path, hlen, len - start, len);

    const unsigned char *h = buf + start;
    for (size_t k = 0; k < hlen; k++) {
        unsigned char ch = h[k];
        if (!(ch >= 0x20 && ch < 0x7f) && ch != '\n' && ch != '\t' && ch != '\r')
            return nc_err_set(err, NC_EFORMAT,
                              "%s: header at offset %zu: found byte 0x%02x, expected printable "
                              "ASCII",
                              path, start + k, ch);
    }

    header hd = {0};
    cursor c = {h, hlen, 0, start, path, err};
    int rc = parse_dict(&c, &hd);
    if (rc)
        return rc;

    memset(t, 0, sizeof *t);
    if ((rc = descr_dtype(hd.descr, path, err, &t->dtype)))
        return rc;
    if (hd.fortran_order)
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: header field 'fortran_order': found True, expected False "
                          "(Fortran order is not supported; save with np.ascontiguousarray)",
                          path);
    if (hd.rank == 0)
        return nc_err_set(err, NC_EUNSUPPORTED,
                          "%s: header field 'shape': found (), a scalar, expected at least one "
                          "axis",
                          path);
    t->rank = hd.rank;
    memcpy(t->shape, hd.shape, sizeof hd.shape);
    char shape_str[256];
    nc_tensor_shape_str(t, shape_str, sizeof shape_str);
    size_t esize = nc_dtype_size(t->dtype);
    /* The second test guards nbytes = nelem * esize against wrapping. */
    if (nc_tensor_set_shape(t) != 0 || t->nelem > SIZE_MAX / esize)
        return nc_err_set(err, NC_ERANGE,
                          "%s: header field 'shape': found %s, too many elements for %s "
                          "(expected at most 2^62 elements and 2^64 bytes)",
                          path, shape_str, nc_dtype_name(t->dtype));
    if (t->nelem == 0 && t->N > NC_EMPTY_MAX_TOKENS) /* per-token state is O(N) */
        return nc_err_set(err, NC_ERANGE,
                          "%s: header field 'shape': found %s, %zu tokens without data, "
                          "expected at most %zu tokens for a tensor with no elements",
                          path, shape_str, t->N, (size_t)NC_EMPTY_MAX_TOKENS);

    size_t off = start + hlen, found = len - off;
    if (found < t->nbytes)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: data truncated: expected %zu bytes for %s %s at offset %zu, "
                          "found %zu",
                          path, t->nbytes, nc_dtype_name(t->dtype), shape_str, off, found);
    if (found > t->nbytes)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: extra bytes after the data: expected %zu bytes for %s %s at "
                          "offset %zu, found %zu",
                          path, t->nbytes, nc_dtype_name(t->dtype), shape_str, off, found);
    t->data = buf + off;
    t->file_offset = off;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

static int append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int append(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= cap - *used)
        return -1;
    *used += (size_t)w;
    return 0;
}

int nc_npy_write_header(const nc_sink *sink, nc_dtype dt, int rank, const uint64_t *shape,
                        nc_err *err)
{
    const char *descr = dt == NC_F32    ? "<f4"
                        : dt == NC_F16  ? "<f2"
                        : dt == NC_F64  ? "<f8"
                        : dt == NC_BF16 ? "<V2"
                                        : NULL;
    if (!descr)
        return nc_err_set(err, NC_EINVAL,
                          ".npy header: dtype %s cannot be written, expected F32, F16, F64 or "
                          "BF16",
                          nc_dtype_name(dt));
    if (rank < 1 || rank > NC_MAX_RANK)
        return nc_err_set(err, NC_EINVAL, ".npy header: rank %d, expected 1 to %d", rank,
                          NC_MAX_RANK);
    nc_tensor t = {.dtype = dt, .rank = rank};
    memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
    if (nc_tensor_set_shape(&t) != 0 || t.nelem > SIZE_MAX / nc_dtype_size(dt)) {
        char shape_str[256];
        nc_tensor_shape_str(&t, shape_str, sizeof shape_str);
        return nc_err_set(err, NC_ERANGE, ".npy header: shape %s has too many elements for %s",
                          shape_str, nc_dtype_name(dt));
    }

    /* numpy's _write_array_header: keys sorted, repr(shape), growth padding
     * for axis 0; then _wrap_header: spaces and '\n' to a multiple of 64.
     * Worst case here: 32 axes of 20 digits, well under the buffer. */
    char dict[1536];
    size_t n = 0;
    int bad = append(dict, sizeof dict, &n, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     descr);
    for (int k = 0; k < rank; k++)
        bad |= append(dict, sizeof dict, &n, "%s%llu", k ? ", " : "",
                      (unsigned long long)shape[k]);
    bad |= append(dict, sizeof dict, &n, "%s), }", rank == 1 ? "," : "");
    char axis0[24];
    int digits = snprintf(axis0, sizeof axis0, "%llu", (unsigned long long)shape[0]);
    for (int k = digits; k < GROWTH_DIGITS; k++)
        bad |= append(dict, sizeof dict, &n, " ");
    if (bad)
        return nc_err_set(err, NC_EINTERNAL, ".npy header: header buffer too small");

    size_t hlen = n + 1; /* with the final '\n' */
    unsigned major = 1;
    size_t pre = 10;
    size_t pad = ARRAY_ALIGN - (pre + hlen) % ARRAY_ALIGN;
    if (hlen + pad > V1_MAX_HLEN) { /* unreachable for NC_MAX_RANK <= 2000 axes */
        major = 2;
        pre = 12;
        pad = ARRAY_ALIGN - (pre + hlen) % ARRAY_ALIGN;
    }
    size_t total = hlen + pad; /* the header length field */
    unsigned char out[12 + sizeof dict + ARRAY_ALIGN + 1];
    memcpy(out, MAGIC, MAGIC_LEN);
    out[6] = (unsigned char)major;
    out[7] = 0;
    for (size_t k = 0; k < pre - 8; k++)
        out[8 + k] = (unsigned char)(total >> (8 * k));
    memcpy(out + pre, dict, n);
    memset(out + pre + n, ' ', pad);
    out[pre + n + pad] = '\n';
    return nc_sink_write(sink, out, pre + total, err);
}
