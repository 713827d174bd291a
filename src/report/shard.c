/*
 * shard.c - the "shard" block of a sharded run's report (shard.h).
 */
#include "report/shard.h"

#include "report/jbuild.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha256.h"

bool nc_report_config_sha256(const cJSON *config, char out[65])
{
    cJSON *c = cJSON_Duplicate(config, true);
    if (!c)
        return false;
    static const char *const vary[3] = {"source", "output", "threads"};
    for (int k = 0; k < 3; k++)
        cJSON_DeleteItemFromObjectCaseSensitive(c, vary[k]);
    /* canonical text: the report writes numbers as raw %.17g text, which a
     * reader parses back into numbers; hash what printing the parsed
     * value gives, the same on both sides */
    char *raw = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    c = raw ? cJSON_Parse(raw) : NULL;
    cJSON_free(raw);
    char *text = c ? cJSON_PrintUnformatted(c) : NULL;
    cJSON_Delete(c);
    if (!text)
        return false;
    nc_sha256_hex(text, strlen(text), out);
    cJSON_free(text);
    return true;
}

bool nc_report_add_shard(cJSON *root, const nc_plan *plan)
{
    const nc_config *cfg = plan->cfg;
    if (cfg->shard_count == 0)
        return true;
    char sha[65];
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(root, "config");
    if (!config || !nc_report_config_sha256(config, sha))
        return false;
    cJSON *s = cJSON_AddObjectToObject(root, "shard");
    cJSON *all = s ? cJSON_AddArrayToObject(s, "layers") : NULL;
    cJSON *mine = s ? cJSON_AddArrayToObject(s, "analysed") : NULL;
    bool ok = all && mine && cJSON_AddNumberToObject(s, "index", (double)cfg->shard_index) &&
              cJSON_AddNumberToObject(s, "count", (double)cfg->shard_count) &&
              cJSON_AddStringToObject(s, "config_sha256", sha);
    for (size_t k = 0; ok && k < plan->nlayers; k++) {
        const nc_plan_layer *l = &plan->layers[k];
        ok = cJSON_AddItemToArray(all, cJSON_CreateString(l->name));
        if (ok && l->in_shard)
            ok = cJSON_AddItemToArray(mine, cJSON_CreateString(l->name));
    }
    return ok;
}

bool nc_report_exact_numbers(cJSON *node)
{
    cJSON *c = node->child;
    while (c) {
        cJSON *next = c->next;
        if (cJSON_IsNumber(c) && !isfinite(c->valuedouble)) {
            /* never printed as "inf" (not JSON): null, as the report writes it */
            c->type = (c->type & ~0xff) | cJSON_NULL; /* the flags above stay */
        } else if (cJSON_IsNumber(c)) {
            cJSON *raw = nc_jb_number(c->valuedouble);
            if (!raw)
                return false;
            raw->string = c->string; /* the key moves to the new node */
            c->string = NULL;
            if (!cJSON_ReplaceItemViaPointer(node, c, raw))
                return false;
        } else if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && !nc_report_exact_numbers(c)) {
            return false;
        }
        c = next;
    }
    return true;
}
