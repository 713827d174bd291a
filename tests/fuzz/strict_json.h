/*
 * strict_json.h - the fuzz targets' check that a report holding the
 * strings an input brought in (tensor names, metadata, config names and
 * labels, file names) is strict UTF-8 JSON, as nc_report_json writes it:
 * cJSON's printer, then nc_utf8_escape_json. Include after guard.h.
 */
#ifndef NC_FUZZ_STRICT_JSON_H
#define NC_FUZZ_STRICT_JSON_H

#include <cJSON.h>
#include <stdbool.h>

#include "util/utf8.h"

/* Prints {"strings": [s...]} the way the report does and REQUIREs strict
 * UTF-8 JSON that reads back; when every string was UTF-8 already, the
 * strings must read back unchanged. */
static inline void require_strict_report(const char *const *s, size_t n)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = cJSON_AddArrayToObject(root, "strings");
    REQUIRE(root && arr);
    bool all_utf8 = true;
    for (size_t k = 0; k < n; k++) {
        REQUIRE(cJSON_AddItemToArray(arr, cJSON_CreateString(s[k])));
        all_utf8 = all_utf8 && nc_utf8_valid(s[k], strlen(s[k]), NULL);
    }
    char *printed = cJSON_PrintUnformatted(root);
    REQUIRE(printed);
    char *text = nc_utf8_escape_json(printed);
    REQUIRE(text);
    REQUIRE(nc_utf8_valid(text, strlen(text), NULL));
    cJSON *back = cJSON_Parse(text);
    REQUIRE(back);
    const cJSON *barr = cJSON_GetObjectItemCaseSensitive(back, "strings");
    REQUIRE(cJSON_GetArraySize(barr) == (int)n);
    size_t k = 0;
    for (const cJSON *c = barr ? barr->child : NULL; c; c = c->next, k++) {
        REQUIRE(cJSON_IsString(c));
        REQUIRE(nc_utf8_valid(c->valuestring, strlen(c->valuestring), NULL));
        REQUIRE(!all_utf8 || strcmp(c->valuestring, s[k]) == 0);
    }
    cJSON_Delete(back);
    free(text);
    cJSON_free(printed);
    cJSON_Delete(root);
}

#endif
