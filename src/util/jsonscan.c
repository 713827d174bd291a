/*
 * jsonscan.c - raw control characters and escaped NULs in JSON strings
 * (jsonscan.h).
 */
#include "util/jsonscan.h"

#include <string.h>

bool nc_json_raw_control(const char *text, size_t n, size_t *pos)
{
    bool in_string = false;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)text[k];
        if (!in_string) {
            in_string = c == '"';
            continue;
        }
        if (c < 0x20) {
            *pos = k;
            return true;
        }
        if (c == '\\')
            k++; /* the escaped character, whatever it is */
        else if (c == '"')
            in_string = false;
    }
    return false;
}

bool nc_json_bad_space(const char *text, size_t n, size_t *pos)
{
    bool in_string = false;
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)text[k];
        if (in_string) {
            if (c == '\\')
                k++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            *pos = k;
            return true;
        }
    }
    return false;
}

bool nc_json_escaped_nul(const char *text, size_t n, size_t *pos)
{
    bool in_string = false;
    for (size_t k = 0; k < n; k++) {
        char c = text[k];
        if (!in_string) {
            in_string = c == '"';
            continue;
        }
        if (c == '"') {
            in_string = false;
        } else if (c == '\\') {
            if (k + 5 < n && text[k + 1] == 'u' && memcmp(text + k + 2, "0000", 4) == 0) {
                *pos = k;
                return true;
            }
            k++; /* the escaped character */
        }
    }
    return false;
}
