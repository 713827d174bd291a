/*
 * utf8.h - strict UTF-8: validation, and escaping what cannot be refused.
 *
 * Names that come in through files we parse (safetensors headers, configs)
 * must be UTF-8 and are refused otherwise; file names cannot be refused, so
 * the JSON report escapes every byte that is not part of a well-formed
 * UTF-8 sequence as the four characters \xNN (docs/report.md).
 */
#ifndef NC_UTF8_H
#define NC_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* True if s[0..n) is well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF); else *bad (if not NULL) is the
 * offset of the first byte that is not. */
bool nc_utf8_valid(const char *s, size_t n, size_t *bad);

/* A malloc'd copy of the NUL-terminated JSON text json in which every byte
 * outside a well-formed UTF-8 sequence becomes "\\xNN" (JSON for the four
 * characters \xNN; such bytes only occur inside strings of cJSON's
 * output). NULL when out of memory. */
char *nc_utf8_escape_json(const char *json);

#endif
