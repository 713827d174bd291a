/*
 * safetensors.c - safetensors parsing and writing (safetensors.h).
 *
 * Spec: https://huggingface.co/docs/safetensors (the "Format" section) and
 * the reference Rust crate's validation. The header JSON is parsed by cJSON
 * with an explicit length (the file is not NUL-terminated); then every
 * entry is checked here, because cJSON accepts much that safetensors does
 * not: duplicate keys (it keeps both), any number as a size (it stores a
 * double), any value type.
 *
 * Integers arrive as doubles, so sizes are accepted only when integral and
 * below 2^53, where a double is exact; integral spellings such as 1.0 or
 * 1e3 cannot be told apart from 1 and 1000 and are accepted. Tensor names
 * and metadata keys are compared as C strings: a name containing \u0000 is
 * cut there by cJSON.
 *
 * The writer builds the header text itself (not with cJSON's printer, which
 * may print large integers in exponent form that strict readers refuse).
 */
#include "io/safetensors.h"
#include "io/npy.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "util/jsonscan.h"
#include "util/utf8.h"

/* Sizes are exact in a double below 2^53. */
#define EXACT_LIMIT 9007199254740992.0

struct nc_st {
    cJSON *root;          /* owns every name and metadata string */
    const cJSON *meta;    /* the __metadata__ object in root, or NULL */
    nc_tensor *tensors;   /* [count], header order */
    size_t count;
    const nc_tensor **by_name; /* [count], sorted by name, for nc_st_find */
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

/* A string as messages show it: at most 200 bytes, control characters
 * (which could drive a terminal) replaced by '?'. A struct so that
 * show(x).s can be an argument: it lives to the end of the full expression. */
typedef struct shown {
    char s[201];
} shown;

static shown show(const char *str)
{
    shown out;
    size_t k = 0;
    bool utf8 = nc_utf8_valid(str, strlen(str), NULL);
    for (; str[k] && k < sizeof out.s - 1; k++) {
        unsigned char ch = (unsigned char)str[k];
        out.s[k] = ch < 0x20 || ch == 0x7f || (ch >= 0x80 && !utf8) ? '?' : (char)ch;
    }
    out.s[k] = '\0';
    return out;
}

/* What a JSON value is, for "found X" in messages. */
static void describe(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsNumber(v))
        snprintf(buf, cap, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, cap, "the string \"%.40s\"", show(v->valuestring ? v->valuestring : "").s);
    else if (cJSON_IsTrue(v))
        snprintf(buf, cap, "true");
    else if (cJSON_IsFalse(v))
        snprintf(buf, cap, "false");
    else if (cJSON_IsNull(v))
        snprintf(buf, cap, "null");
    else if (cJSON_IsArray(v))
        snprintf(buf, cap, "an array of length %d", cJSON_GetArraySize(v));
    else if (cJSON_IsObject(v))
        snprintf(buf, cap, "an object");
    else
        snprintf(buf, cap, "an invalid value");
}

/* A JSON number that is an integer in [0, 2^53). NaN fails the range test. */
static bool json_size(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return false;
    double x = v->valuedouble;
    if (!(x >= 0.0 && x < EXACT_LIMIT) || x != floor(x))
        return false;
    *out = (uint64_t)x;
    return true;
}

/* The number of elements of a JSON array, counting no further than cap + 1
 * (cJSON_GetArraySize returns int and walks the whole list). */
static size_t array_len(const cJSON *a, size_t cap)
{
    size_t n = 0;
    for (const cJSON *c = a->child; c && n <= cap; c = c->next)
        n++;
    return n;
}

static int cmp_names(const void *a, const void *b)
{
    const nc_tensor *ta = *(const nc_tensor *const *)a, *tb = *(const nc_tensor *const *)b;
    int c = strcmp(ta->name, tb->name);
    /* ties in header order, so that sorting is deterministic */
    return c ? c : (ta < tb ? -1 : ta > tb);
}

static int cmp_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ------------------------------------------------------------------ */
/* Parsing one tensor entry                                            */
/* ------------------------------------------------------------------ */

enum { F_DTYPE, F_SHAPE, F_OFFSETS, F_COUNT };
static const char *const FIELDS[F_COUNT] = {"dtype", "shape", "data_offsets"};

/* The context every message needs. */
typedef struct ctx {
    const unsigned char *buf;
    const char *path;
    size_t data_start; /* 8 + H: file offset of the data section */
    size_t data_len;   /* bytes in the data section */
    nc_err *err;
} ctx;

#define NAME_FMT "'%s'" /* with show(name).s */

static int unsupported_dtype(const ctx *c, const char *name, const char *found)
{
    char list[256];
    size_t used = 0;
    list[0] = '\0';
    for (int dt = NC_DT_NONE + 1; dt < NC_DT_COUNT; dt++) {
        const char *sep = dt == NC_DT_NONE + 1 ? "" : dt == NC_DT_COUNT - 1 ? " or " : ", ";
        int w = snprintf(list + used, sizeof list - used, "%s%s", sep,
                         nc_dtype_name((nc_dtype)dt));
        if (w < 0 || (size_t)w >= sizeof list - used)
            break;
        used += (size_t)w;
    }
    return nc_err_set(c->err, NC_EUNSUPPORTED,
                      "%s: tensor " NAME_FMT ": unsupported dtype '%.40s' (expected %s)", c->path,
                      show(name).s, show(found).s, list);
}

static int parse_dtype(const ctx *c, const char *name, const cJSON *v, nc_tensor *t)
{
    if (!cJSON_IsString(v) || !v->valuestring) {
        char found[64];
        describe(v, found, sizeof found);
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": dtype: found %s, expected a string such as "
                          "\"F32\"",
                          c->path, show(name).s, found);
    }
    t->dtype = nc_dtype_from_name(v->valuestring);
    if (t->dtype == NC_DT_NONE)
        return unsupported_dtype(c, name, v->valuestring);
    return 0;
}

static int parse_shape(const ctx *c, const char *name, const cJSON *v, nc_tensor *t)
{
    char found[64];
    if (!cJSON_IsArray(v)) {
        describe(v, found, sizeof found);
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": shape: found %s, expected an array of "
                          "non-negative integers",
                          c->path, show(name).s, found);
    }
    size_t rank = array_len(v, NC_MAX_RANK);
    if (rank > NC_MAX_RANK)
        return nc_err_set(c->err, NC_EUNSUPPORTED,
                          "%s: tensor " NAME_FMT ": shape: found more than %d axes, expected at "
                          "most %d",
                          c->path, show(name).s, NC_MAX_RANK, NC_MAX_RANK);
    t->rank = (int)rank;
    int k = 0;
    for (const cJSON *x = v->child; x; x = x->next, k++) {
        if (!json_size(x, &t->shape[k])) {
            describe(x, found, sizeof found);
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: tensor " NAME_FMT ": shape[%d]: found %s, expected a "
                              "non-negative integer below 2^53",
                              c->path, show(name).s, k, found);
        }
    }
    return 0;
}

static int parse_offsets(const ctx *c, const char *name, const cJSON *v, uint64_t off[2])
{
    char found[64];
    if (!cJSON_IsArray(v) || array_len(v, 2) != 2) {
        describe(v, found, sizeof found);
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": data_offsets: found %s, expected an array "
                          "of two integers [begin, end]",
                          c->path, show(name).s, found);
    }
    int k = 0;
    for (const cJSON *x = v->child; x; x = x->next, k++) {
        if (!json_size(x, &off[k])) {
            describe(x, found, sizeof found);
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: tensor " NAME_FMT ": data_offsets[%d]: found %s, expected a "
                              "non-negative integer below 2^53",
                              c->path, show(name).s, k, found);
        }
    }
    return 0;
}

/* Fills t from the entry e (a child of the header object, named). */
static int parse_entry(const ctx *c, const cJSON *e, nc_tensor *t)
{
    const char *name = e->string;
    char found[64];
    if (!cJSON_IsObject(e)) {
        describe(e, found, sizeof found);
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": found %s, expected an object with dtype, "
                          "shape and data_offsets",
                          c->path, show(name).s, found);
    }
    const cJSON *field[F_COUNT] = {NULL};
    for (const cJSON *f = e->child; f; f = f->next) {
        const char *key = f->string ? f->string : "";
        int k = 0;
        while (k < F_COUNT && strcmp(key, FIELDS[k]) != 0)
            k++;
        if (k == F_COUNT)
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: tensor " NAME_FMT ": found field '%.40s', expected only dtype, "
                              "shape and data_offsets",
                              c->path, show(name).s, show(key).s);
        if (field[k])
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: tensor " NAME_FMT ": found field '%s' twice, expected it once",
                              c->path, show(name).s, FIELDS[k]);
        field[k] = f;
    }
    for (int k = 0; k < F_COUNT; k++)
        if (!field[k])
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: tensor " NAME_FMT ": field '%s' is missing (expected dtype, "
                              "shape and data_offsets)",
                              c->path, show(name).s, FIELDS[k]);

    int rc;
    uint64_t off[2];
    t->name = name;
    if ((rc = parse_dtype(c, name, field[F_DTYPE], t)) ||
        (rc = parse_shape(c, name, field[F_SHAPE], t)) ||
        (rc = parse_offsets(c, name, field[F_OFFSETS], off)))
        return rc;

    char shape_str[256];
    nc_tensor_shape_str(t, shape_str, sizeof shape_str);
    const char *dt = nc_dtype_name(t->dtype);
    /* The second test guards nbytes = nelem * size against wrapping. */
    if (nc_tensor_set_shape(t) != 0 || t->nelem > SIZE_MAX / nc_dtype_size(t->dtype))
        return nc_err_set(c->err, NC_ERANGE,
                          "%s: tensor " NAME_FMT ": shape %s: found too many elements for %s, "
                          "expected at most 2^62 elements and 2^64 bytes",
                          c->path, show(name).s, shape_str, dt);
    if (t->nelem == 0 && t->N > NC_EMPTY_MAX_TOKENS) /* per-token state is O(N) */
        return nc_err_set(c->err, NC_ERANGE,
                          "%s: tensor " NAME_FMT ": shape %s: found %zu tokens without data, "
                          "expected at most %zu tokens for a tensor with no elements",
                          c->path, show(name).s, shape_str, t->N, (size_t)NC_EMPTY_MAX_TOKENS);
    unsigned long long begin = off[0], end = off[1];
    if (begin > end)
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": data_offsets [%llu, %llu]: found begin after "
                          "end, expected begin <= end",
                          c->path, show(name).s, begin, end);
    if (end > c->data_len)
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": data_offsets [%llu, %llu]: found end past the "
                          "data section, expected at most %zu (data start at offset %zu)",
                          c->path, show(name).s, begin, end, c->data_len, c->data_start);
    if (end - begin != t->nbytes)
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: tensor " NAME_FMT ": data_offsets [%llu, %llu]: expected %zu "
                          "bytes for %s %s, found %llu",
                          c->path, show(name).s, begin, end, t->nbytes, dt, shape_str, end - begin);
    t->data = c->buf + c->data_start + begin;
    t->file_offset = c->data_start + begin;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Whole-header checks                                                 */
/* ------------------------------------------------------------------ */

static int parse_meta(const ctx *c, const cJSON *m)
{
    char found[64];
    if (!cJSON_IsObject(m)) {
        describe(m, found, sizeof found);
        return nc_err_set(c->err, NC_EFORMAT,
                          "%s: __metadata__: found %s, expected an object of strings", c->path,
                          found);
    }
    size_t n = 0;
    for (const cJSON *v = m->child; v; v = v->next, n++) {
        const char *key = v->string ? v->string : "";
        if (cJSON_IsString(v) && v->valuestring &&
            (!nc_utf8_valid(key, strlen(key), NULL) ||
             !nc_utf8_valid(v->valuestring, strlen(v->valuestring), NULL)))
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: __metadata__ key '%s': found a key or value that is not "
                              "UTF-8, expected UTF-8 text", c->path, show(key).s);
        if (!cJSON_IsString(v) || !v->valuestring) {
            describe(v, found, sizeof found);
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: __metadata__ key '%s': found %s, expected a string",
                              c->path, show(v->string ? v->string : "").s, found);
        }
    }
    if (n < 2)
        return 0;
    const char **keys = malloc(n * sizeof *keys);
    if (!keys)
        return nc_err_set(c->err, NC_ENOMEM, "%s: __metadata__: out of memory for %zu keys",
                          c->path, n);
    size_t k = 0;
    for (const cJSON *v = m->child; v; v = v->next)
        keys[k++] = v->string ? v->string : "";
    qsort(keys, n, sizeof *keys, cmp_strings);
    int rc = 0;
    for (k = 1; k < n && !rc; k++)
        if (strcmp(keys[k - 1], keys[k]) == 0)
            rc = nc_err_set(c->err, NC_EFORMAT,
                            "%s: __metadata__: found key '%s' twice, expected each key once",
                            c->path, show(keys[k]).s);
    free(keys);
    return rc;
}

/* Sorts st->by_name and refuses duplicate names. */
static int check_names(const ctx *c, nc_st *st)
{
    for (size_t i = 0; i < st->count; i++)
        st->by_name[i] = &st->tensors[i];
    if (st->count > 1)
        qsort(st->by_name, st->count, sizeof *st->by_name, cmp_names);
    for (size_t i = 1; i < st->count; i++)
        if (strcmp(st->by_name[i - 1]->name, st->by_name[i]->name) == 0)
            return nc_err_set(c->err, NC_EFORMAT,
                              "%s: tensor " NAME_FMT ": found twice in the header, expected "
                              "unique names",
                              c->path, show(st->by_name[i]->name).s);
    return 0;
}

static int cmp_begin(const void *a, const void *b)
{
    const nc_tensor *ta = *(const nc_tensor *const *)a, *tb = *(const nc_tensor *const *)b;
    if (ta->file_offset != tb->file_offset)
        return ta->file_offset < tb->file_offset ? -1 : 1;
    if (ta->nbytes != tb->nbytes)
        return ta->nbytes < tb->nbytes ? -1 : 1;
    return ta < tb ? -1 : ta > tb;
}

/* Refuses overlapping tensors; empty ones overlap nothing. Sorted by begin,
 * a tensor overlaps an earlier one exactly when it begins before the
 * largest end so far. */
static int check_overlap(const ctx *c, const nc_tensor *const *order, size_t n)
{
    int rc = 0;
    const nc_tensor *reach = NULL; /* the tensor ending furthest so far */
    for (size_t i = 0; i < n && !rc; i++) {
        const nc_tensor *t = order[i];
        if (reach && t->file_offset < reach->file_offset + reach->nbytes) {
            unsigned long long base = c->data_start;
            rc = nc_err_set(c->err, NC_EFORMAT,
                            "%s: tensor " NAME_FMT ": data_offsets [%llu, %llu]: found overlap "
                            "with tensor " NAME_FMT " [%llu, %llu], expected disjoint ranges",
                            c->path, show(t->name).s, t->file_offset - base,
                            t->file_offset + t->nbytes - base, show(reach->name).s,
                            reach->file_offset - base, reach->file_offset + reach->nbytes - base);
        }
        if (!reach || t->file_offset + t->nbytes > reach->file_offset + reach->nbytes)
            reach = t;
    }
    return rc;
}

/* The safetensors format's own rule (the reference crate's validation):
 * sorted by offsets, the tensors cover the data section exactly, each
 * beginning where the previous one ends, the first at 0, the last ending at
 * the end of the file. A gap, a tensor inside another's range or bytes
 * after the last tensor are refused. Runs after check_overlap. Tensors
 * with no elements hold no bytes and may sit at any offset in range (the
 * reference crate also wants them in the chain; they hide nothing). */
static int check_coverage(const ctx *c, const nc_tensor *const *order, size_t n)
{
    int rc = 0;
    unsigned long long at = 0, base = c->data_start;
    for (size_t i = 0; i < n && !rc; i++) {
        const nc_tensor *t = order[i];
        unsigned long long b = t->file_offset - base, e = b + t->nbytes;
        if (b != at)
            rc = nc_err_set(c->err, NC_EFORMAT,
                            "%s: tensor " NAME_FMT ": data_offsets [%llu, %llu]: found %s at "
                            "offset %llu of the data section, expected each tensor to begin "
                            "where the previous one ends",
                            c->path, show(t->name).s, b, e, b > at ? "a gap" : "a start inside "
                            "another tensor", at);
        at = e;
    }
    if (!rc && at != c->data_len)
        rc = nc_err_set(c->err, NC_EFORMAT,
                        "%s: found %llu bytes after the last tensor's data (offset %llu of the "
                        "data section), expected the tensors to cover it to the end of the file",
                        c->path, (unsigned long long)c->data_len - at, at);
    return rc;
}

/* The tensors holding bytes, sorted by where they begin: no overlap, and
 * together they cover the data section exactly (the two checks above). */
static int check_layout(const ctx *c, const nc_st *st)
{
    const nc_tensor **order = malloc((st->count ? st->count : 1) * sizeof *order);
    if (!order)
        return nc_err_set(c->err, NC_ENOMEM, "%s: out of memory for %zu tensors", c->path,
                          st->count);
    size_t n = 0;
    for (size_t i = 0; i < st->count; i++)
        if (st->tensors[i].nbytes > 0)
            order[n++] = &st->tensors[i];
    qsort(order, n, sizeof *order, cmp_begin);
    int rc = check_overlap(c, order, n);
    if (!rc)
        rc = check_coverage(c, order, n);
    free(order);
    return rc;
}

/* A tensor name must be UTF-8 (it goes into report.json). */
static int check_utf8_name(const char *path, const char *name, nc_err *err)
{
    size_t bad;
    if (nc_utf8_valid(name, strlen(name), &bad))
        return 0;
    return nc_err_set(err, NC_EFORMAT,
                      "%s: tensor " NAME_FMT ": name: found byte 0x%02x at position %zu that is "
                      "not UTF-8, expected a UTF-8 name",
                      path, show(name).s, (unsigned char)name[bad], bad);
}

/* What cJSON lets through in strings and JSON forbids (util/jsonscan.h):
 * a raw control byte, and the escape \u0000 that would cut a name short. */
static int check_strings(const char *json, size_t H, const char *path, nc_err *err)
{
    size_t at;
    if (nc_json_raw_control(json, H, &at))
        return nc_err_set(err, NC_EFORMAT,
                          "%s: header at offset %zu: found byte 0x%02x inside a string, expected "
                          "control characters escaped (JSON)",
                          path, 8 + at, (unsigned char)json[at]);
    if (nc_json_escaped_nul(json, H, &at))
        return nc_err_set(err, NC_EFORMAT,
                          "%s: header at offset %zu: found the escape \\u0000 inside a string, "
                          "expected names and values without NUL",
                          path, 8 + at);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Public: parse and access                                            */
/* ------------------------------------------------------------------ */

int nc_st_parse(const unsigned char *buf, size_t len, const char *path, nc_st **out,
                nc_err *err)
{
    *out = NULL;
    if (len == 0)
        return nc_err_set(err, NC_EFORMAT, "%s: empty file, expected a safetensors file", path);
    if (len < 8)
        return nc_err_set(err, NC_EFORMAT,
                          "%s: file too short: found %zu bytes, expected at least 8 (the header "
                          "length)",
                          path, len);
    uint64_t H = le64(buf);
    if (H > (uint64_t)(len - 8))
        return nc_err_set(err, NC_EFORMAT,
                          "%s: header length at offset 0: found %llu bytes, expected at most %zu "
                          "(the file has %zu bytes)",
                          path, (unsigned long long)H, len - 8, len);
    if (H > NC_ST_MAX_HEADER)
        return nc_err_set(err, NC_ERANGE,
                          "%s: header length at offset 0: found %llu bytes, expected at most "
                          "%llu (100 MiB; the file has %zu bytes)",
                          path, (unsigned long long)H, (unsigned long long)NC_ST_MAX_HEADER, len);
    const char *json = (const char *)buf + 8;
    if (H == 0 || json[0] != '{') {
        char found[32];
        if (H == 0)
            snprintf(found, sizeof found, "an empty header");
        else if (buf[8] >= 0x20 && buf[8] < 0x7f)
            snprintf(found, sizeof found, "'%c'", buf[8]);
        else
            snprintf(found, sizeof found, "byte 0x%02x", buf[8]);
        return nc_err_set(err, NC_EFORMAT,
                          "%s: header at offset 8: found %s, expected a JSON object starting "
                          "with '{'",
                          path, found);
    }

    int rc = check_strings(json, (size_t)H, path, err);
    if (rc)
        return rc;
    nc_st *st = calloc(1, sizeof *st);
    if (!st)
        return nc_err_set(err, NC_ENOMEM, "%s: out of memory", path);
    const char *end = NULL;
    st->root = cJSON_ParseWithLengthOpts(json, (size_t)H, &end, 0);
    if (!st->root) {
        size_t at = (end && end >= json && end <= json + H) ? (size_t)(end - json) : 0;
        rc = nc_err_set(err, NC_EFORMAT,
                        "%s: header near offset %zu: found invalid JSON (or a nesting deeper "
                        "than %d), expected a JSON object",
                        path, 8 + at, CJSON_NESTING_LIMIT);
        goto out;
    }
    for (const char *p = end; p < json + H; p++) {
        if (*p != ' ') {
            unsigned char ch = (unsigned char)*p;
            rc = nc_err_set(err, NC_EFORMAT,
                            "%s: header at offset %zu: found byte 0x%02x after the JSON object, "
                            "expected only trailing spaces",
                            path, (size_t)(p - (const char *)buf), ch);
            goto out;
        }
    }
    if (!cJSON_IsObject(st->root)) { /* cannot happen after '{'; kept as a guard */
        rc = nc_err_set(err, NC_EFORMAT, "%s: header: found no JSON object, expected one", path);
        goto out;
    }

    ctx c = {buf, path, 8 + (size_t)H, len - 8 - (size_t)H, err};
    size_t n = 0;
    for (const cJSON *e = st->root->child; e; e = e->next) {
        if (!e->string) { /* cJSON names every object member; kept as a guard */
            rc = nc_err_set(err, NC_EFORMAT, "%s: header: found a member without a name", path);
            goto out;
        }
        if ((rc = check_utf8_name(path, e->string, err)))
            goto out;
        if (strcmp(e->string, "__metadata__") != 0)
            n++;
        else if (st->meta) {
            rc = nc_err_set(err, NC_EFORMAT,
                            "%s: header: found __metadata__ twice, expected it at most once",
                            path);
            goto out;
        } else {
            st->meta = e;
        }
    }
    if (st->meta && (rc = parse_meta(&c, st->meta)))
        goto out;

    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    st->by_name = calloc(n ? n : 1, sizeof *st->by_name);
    if (!st->tensors || !st->by_name) {
        rc = nc_err_set(err, NC_ENOMEM, "%s: out of memory for %zu tensors", path, n);
        goto out;
    }
    for (const cJSON *e = st->root->child; e; e = e->next) {
        if (e == st->meta)
            continue;
        if ((rc = parse_entry(&c, e, &st->tensors[st->count])))
            goto out;
        st->count++;
    }
    if ((rc = check_names(&c, st)) || (rc = check_layout(&c, st)))
        goto out;
    *out = st;
    st = NULL;
out:
    nc_st_free(st);
    return rc;
}

size_t nc_st_count(const nc_st *st)
{
    return st->count;
}

const nc_tensor *nc_st_tensor(const nc_st *st, size_t i)
{
    return i < st->count ? &st->tensors[i] : NULL;
}

const nc_tensor *nc_st_find(const nc_st *st, const char *name)
{
    size_t lo = 0, hi = st->count; /* binary search over by_name in [lo, hi) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(st->by_name[mid]->name, name);
        if (c == 0)
            return st->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const char *nc_st_meta(const nc_st *st, const char *key)
{
    if (!st->meta)
        return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(st->meta, key);
    return v ? v->valuestring : NULL;
}

void nc_st_free(nc_st *st)
{
    if (!st)
        return;
    cJSON_Delete(st->root);
    free(st->tensors);
    free(st->by_name);
    free(st);
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

/* True when s is well-formed UTF-8 (no overlongs, surrogates or values
 * above U+10FFFF), which JSON requires and cJSON does not check. */
static bool valid_utf8(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned char b = *s;
        int more;
        uint32_t cp;
        if (b < 0x80) {
            s++;
            continue;
        } else if (b >= 0xc2 && b <= 0xdf) {
            more = 1, cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
            more = 2, cp = b & 0x0f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            more = 3, cp = b & 0x07;
        } else {
            return false;
        }
        s++;
        for (int k = 0; k < more; k++, s++) {
            if ((*s & 0xc0) != 0x80) /* also stops at the NUL */
                return false;
            cp = cp << 6 | (*s & 0x3f);
        }
        if ((more == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (more == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
    }
    return true;
}

/* Appends s as a JSON string literal. */
static int put_string(const nc_sink *hs, const char *s, nc_err *err)
{
    int rc = nc_sink_write(hs, "\"", 1, err);
    for (const char *p = s; *p && !rc; p++) {
        unsigned char ch = (unsigned char)*p;
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\', esc[1] = (char)ch;
            rc = nc_sink_write(hs, esc, 2, err);
        } else if (ch < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            rc = nc_sink_write(hs, esc, 6, err);
        } else {
            rc = nc_sink_write(hs, p, 1, err);
        }
    }
    return rc ? rc : nc_sink_write(hs, "\"", 1, err);
}

static int put_text(const nc_sink *hs, const char *s, nc_err *err)
{
    return nc_sink_write(hs, s, strlen(s), err);
}

static int put_u64(const nc_sink *hs, uint64_t v, nc_err *err)
{
    char num[24];
    int w = snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    return nc_sink_write(hs, num, (size_t)w, err);
}

/* Checks the entries and metadata; fills nbytes[i]. */
static int check_entries(const nc_st_entry *e, size_t n, const char *const *meta,
                         size_t *nbytes, nc_err *err)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = e[i].name;
        if (!name || !valid_utf8(name) || strcmp(name, "__metadata__") == 0)
            return nc_err_set(err, NC_EINVAL,
                              "safetensors writer: tensor %zu: name %s, expected a UTF-8 name "
                              "other than __metadata__",
                              i, name ? "invalid" : "missing");
        for (size_t j = 0; j < i; j++)
            if (strcmp(e[j].name, name) == 0)
                return nc_err_set(err, NC_EINVAL,
                                  "safetensors writer: tensor " NAME_FMT
                                  ": found twice, expected unique names",
                                  show(name).s);
        if (nc_dtype_size(e[i].dtype) == 0 || e[i].rank < 0 || e[i].rank > NC_MAX_RANK ||
            (e[i].rank > 0 && !e[i].shape))
            return nc_err_set(err, NC_EINVAL,
                              "safetensors writer: tensor " NAME_FMT
                              ": dtype %s rank %d, expected a known dtype and rank 0 to %d",
                              show(name).s, nc_dtype_name(e[i].dtype), e[i].rank, NC_MAX_RANK);
        nc_tensor t = {.dtype = e[i].dtype, .rank = e[i].rank};
        if (t.rank > 0)
            memcpy(t.shape, e[i].shape, (size_t)t.rank * sizeof *t.shape);
        bool shape_ok = true;
        for (int k = 0; k < t.rank; k++)
            shape_ok = shape_ok && t.shape[k] < (uint64_t)EXACT_LIMIT;
        if (!shape_ok || nc_tensor_set_shape(&t) != 0 ||
            t.nelem > SIZE_MAX / nc_dtype_size(t.dtype) ||
            (uint64_t)t.nbytes >= (uint64_t)EXACT_LIMIT - total) {
            char shape_str[256];
            nc_tensor_shape_str(&t, shape_str, sizeof shape_str);
            return nc_err_set(err, NC_ERANGE,
                              "safetensors writer: tensor " NAME_FMT
                              ": shape %s: too many bytes, expected a file below 2^53 bytes",
                              show(name).s, shape_str);
        }
        if (t.nbytes > 0 && !e[i].data)
            return nc_err_set(err, NC_EINVAL,
                              "safetensors writer: tensor " NAME_FMT ": data missing", show(name).s);
        nbytes[i] = t.nbytes;
        total += t.nbytes;
    }
    for (size_t k = 0; meta && meta[k]; k += 2) {
        if (!meta[k + 1] || !valid_utf8(meta[k]) || !valid_utf8(meta[k + 1]))
            return nc_err_set(err, NC_EINVAL,
                              "safetensors writer: __metadata__ key '%s': found a missing "
                              "or non-UTF-8 string, expected UTF-8 key and value",
                              show(meta[k]).s);
        for (size_t j = 0; j < k; j += 2)
            if (strcmp(meta[j], meta[k]) == 0)
                return nc_err_set(err, NC_EINVAL,
                                  "safetensors writer: __metadata__ key '%s': found twice, "
                                  "expected unique keys",
                                  show(meta[k]).s);
    }
    return 0;
}

static int build_header(const nc_sink *hs, const nc_st_entry *e, size_t n,
                        const char *const *meta, const size_t *nbytes, nc_err *err)
{
    int rc = put_text(hs, "{", err);
    if (!rc && meta && meta[0]) {
        rc = put_text(hs, "\"__metadata__\":{", err);
        for (size_t k = 0; meta[k] && !rc; k += 2) {
            if (k)
                rc = put_text(hs, ",", err);
            if (!rc)
                rc = put_string(hs, meta[k], err);
            if (!rc)
                rc = put_text(hs, ":", err);
            if (!rc)
                rc = put_string(hs, meta[k + 1], err);
        }
        if (!rc)
            rc = put_text(hs, n ? "}," : "}", err);
    }
    uint64_t begin = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (i)
            rc = put_text(hs, ",", err);
        if (!rc)
            rc = put_string(hs, e[i].name, err);
        if (!rc)
            rc = put_text(hs, ":{\"dtype\":\"", err);
        if (!rc)
            rc = put_text(hs, nc_dtype_name(e[i].dtype), err);
        if (!rc)
            rc = put_text(hs, "\",\"shape\":[", err);
        for (int k = 0; k < e[i].rank && !rc; k++) {
            if (k)
                rc = put_text(hs, ",", err);
            if (!rc)
                rc = put_u64(hs, e[i].shape[k], err);
        }
        if (!rc)
            rc = put_text(hs, "],\"data_offsets\":[", err);
        if (!rc)
            rc = put_u64(hs, begin, err);
        if (!rc)
            rc = put_text(hs, ",", err);
        begin += nbytes[i];
        if (!rc)
            rc = put_u64(hs, begin, err);
        if (!rc)
            rc = put_text(hs, "]}", err);
    }
    return rc ? rc : put_text(hs, "}", err);
}

int nc_st_write(const nc_sink *sink, const nc_st_entry *e, size_t n, const char *const *meta,
                nc_err *err)
{
    int rc = 0;
    nc_membuf hb = {0};
    size_t *nbytes = malloc((n ? n : 1) * sizeof *nbytes);
    if (!nbytes)
        return nc_err_set(err, NC_ENOMEM, "safetensors writer: out of memory for %zu tensors",
                          n);
    nc_sink hs = nc_membuf_sink(&hb);
    if ((rc = check_entries(e, n, meta, nbytes, err)) ||
        (rc = build_header(&hs, e, n, meta, nbytes, err)))
        goto out;
    /* Spaces up to a multiple of 8, so that the data start 8-aligned. */
    while (hb.len % 8 != 0 && !rc)
        rc = put_text(&hs, " ", err);
    if (rc)
        goto out;
    unsigned char len8[8];
    for (int k = 0; k < 8; k++)
        len8[k] = (unsigned char)((uint64_t)hb.len >> (8 * k));
    if ((rc = nc_sink_write(sink, len8, 8, err)) || (rc = nc_sink_write(sink, hb.data, hb.len, err)))
        goto out;
    for (size_t i = 0; i < n && !rc; i++)
        rc = nc_sink_write(sink, e[i].data, nbytes[i], err);
out:
    nc_membuf_free(&hb);
    free(nbytes);
    return rc;
}
