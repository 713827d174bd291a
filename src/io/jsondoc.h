/*
 * jsondoc.h - one strict JSON document from a buffer (configs, safetensors
 * index files): what cJSON lets through and JSON forbids is refused (raw
 * control bytes inside strings, stray control bytes between tokens, the
 * escape \u0000 (which would cut a string short), text after the
 * document), with the line and column in the message.
 */
#ifndef NC_JSONDOC_H
#define NC_JSONDOC_H

#include <cJSON.h>
#include <stddef.h>

#include "util/err.h"

/* Parses text[0..len) as exactly one JSON document (only white space may
 * follow it). Returns the root, owned by the caller (cJSON_Delete), or NULL
 * with err set to code and one line "<path>: malformed JSON at line L,
 * column C" followed, for a raw control byte or a comment (// or slash-star:
 * JSON has none), by what was found, else by hint (may be "": e.g.
 * " (expected ...)"). */
cJSON *nc_json_parse_doc(const char *text, size_t len, const char *path, int code,
                         const char *hint, nc_err *err);

#endif
