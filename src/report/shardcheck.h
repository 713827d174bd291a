/*
 * shardcheck.h - a shard's report.json as `normcmp merge` reads it.
 *
 * A shard folder is untrusted input: its report is checked as strictly as
 * a config before merge uses any of it (docs/whole_models.md "What merge
 * checks in a shard's report"). The whole document: one strict JSON text
 * (io/jsondoc.h), every key and string well-formed UTF-8, every number
 * finite, no key twice in one object. Then every field merge reads, with
 * its type, range and encoding:
 *
 *   tool.name "normcmp", tool.version a string; command a string;
 *   config an object with name and output strings (source, if present, a
 *     string), whose hash (report/shard.h) is shard.config_sha256;
 *   shard.index, shard.count whole numbers, 1 <= index <= count <=
 *     NC_SHARD_COUNT_MAX; shard.config_sha256 64 lowercase hex digits;
 *     shard.layers non-empty distinct names; shard.analysed exactly the
 *     names i with i mod count = index - 1, in order;
 *   layers the analysed layers in that order, each with norm ("layernorm"
 *     or "rmsnorm"), eps (a number >= 0), tokens and dim (whole numbers
 *     below 2^53), and, where present, the input statistics, fit
 *     parameters, R^2, RMSE, points and backprop errors merge reads
 *     (numbers or null);
 *   inputs objects with path, format and layer strings (layer one of the
 *     analysed ones), sha256 64 hex digits where present;
 *   outputs distinct plain file names (no '/', not "." or "..", at most
 *     255 bytes, not report.json), at most NC_SHARD_MAX_OUTPUTS of them.
 *
 * Every other field is copied into the merged report as it is, and is only
 * held to the whole-document rules.
 */
#ifndef NC_REPORT_SHARDCHECK_H
#define NC_REPORT_SHARDCHECK_H

#include <stddef.h>

#include <cJSON.h>

#include "util/err.h"

/* The largest shard count (`run --shard K/N`: N). */
#define NC_SHARD_COUNT_MAX 100000

/* The largest shard report read, in bytes: a report of thousands of layers
 * of d = 8192 with every fit (the per-channel fit's 2d numbers dominate)
 * stays well below it. */
#define NC_SHARD_REPORT_MAX_BYTES ((size_t)1 << 30)

/* The most files one shard's outputs may list. */
#define NC_SHARD_MAX_OUTPUTS 65536

/* A checked shard report. */
typedef struct nc_shard_report {
    cJSON *root;         /* the parsed report (owned) */
    size_t index, count; /* K and N */
    const char *sha;     /* shard.config_sha256 (borrowed from root) */
} nc_shard_report;

/* Parses text[0..len) (not NUL-terminated), a shard's report.json named
 * path in messages, and checks it as above. Returns 0 with *out filled
 * (release with nc_shard_report_free), or NC_EFORMAT with one line
 * "<path>: <field>: found ..., expected ..." (NC_ENOMEM when out of
 * memory); *out is then empty. */
int nc_shard_report_parse(const char *text, size_t len, const char *path, nc_shard_report *out,
                          nc_err *err);

/* Releases r's tree and empties it. Accepts an empty r. */
void nc_shard_report_free(nc_shard_report *r);

#endif
