/*
 * jsonscan.h - what cJSON lets through that JSON forbids.
 *
 * cJSON accepts raw control characters (bytes below 0x20, NUL included)
 * inside strings, and a NUL silently ends the string: a config path
 * "x<NUL>.npy" would become "x". JSON (RFC 8259, section 7) requires them
 * escaped. This scan runs before cJSON on configs and safetensors headers.
 */
#ifndef NC_JSONSCAN_H
#define NC_JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

/* True if text[0..n) has a byte below 0x20 inside a string; *pos is then
 * its offset. Strings are found by their quotes, honouring backslash
 * escapes; bytes outside strings are left to the JSON parser. */
bool nc_json_raw_control(const char *text, size_t n, size_t *pos);

/* True if text[0..n) has, outside strings, a byte below 0x20 other than
 * JSON's white space (tab, line feed, carriage return): cJSON skips any
 * such byte, NUL included, as if it were a space. *pos is its offset. */
bool nc_json_bad_space(const char *text, size_t n, size_t *pos);

/* True if text[0..n) has the escape \u0000 inside a string: cJSON decodes
 * it into a NUL byte, which silently ends the C string ("x\u0000.npy"
 * would become "x"). *pos is the offset of its backslash. */
bool nc_json_escaped_nul(const char *text, size_t n, size_t *pos);

#endif
