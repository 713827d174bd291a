/*
 * shard.h - what a sharded run records so that `normcmp merge` can check
 * and combine its shards (docs/whole_models.md).
 *
 * A run with --shard K/N writes, in report.json, a "shard" block:
 *   index, count        K and N
 *   config_sha256       SHA-256 of the effective config block (compact JSON)
 *                       without "source", "output" and "threads", which
 *                       may differ between shards of one run
 *   layers              every layer of the plan, in plan order
 *   analysed            the layers this shard analysed (i % N == K - 1)
 */
#ifndef NC_REPORT_SHARD_H
#define NC_REPORT_SHARD_H

#include <stdbool.h>

#include <cJSON.h>

#include "plan/plan.h"
#include "util/err.h"

/* The config hash of a report's "config" object as 64 hex digits; false
 * when out of memory. */
bool nc_report_config_sha256(const cJSON *config, char out[65]);

/* Adds the "shard" block to root (which already holds "config") when the
 * plan's config has a shard; false when out of memory. */
bool nc_report_add_shard(cJSON *root, const nc_plan *plan);

/* Turns every number below node into raw text that reads back as the same
 * double, as the report writes them (report/jbuild.h nc_jb_number), and a
 * number that is not finite into null (never "inf", which is not JSON).
 * For `normcmp merge`, which copies numbers from shard reports. False when
 * out of memory. */
bool nc_report_exact_numbers(cJSON *node);

#endif
