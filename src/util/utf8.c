/*
 * utf8.c - strict UTF-8 validation and escaping (utf8.h).
 */
#include "util/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed sequence at s (n bytes left), or 0. */
static size_t seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0; /* no overlongs */
        if (c == 0xed)
            hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        if (c == 0xf4)
            hi = 0x8f; /* nothing above U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xc0) != 0x80)
            return 0;
    return len;
}

bool nc_utf8_valid(const char *s, size_t n, size_t *bad)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t k = 0; k < n;) {
        size_t l = seq_len(u + k, n - k);
        if (!l) {
            if (bad)
                *bad = k;
            return false;
        }
        k += l;
    }
    return true;
}

char *nc_utf8_escape_json(const char *json)
{
    size_t n = strlen(json);
    char *out = malloc(5 * n + 1);
    if (!out)
        return NULL;
    const unsigned char *u = (const unsigned char *)json;
    size_t o = 0;
    for (size_t k = 0; k < n;) {
        size_t l = seq_len(u + k, n - k);
        if (l) {
            memcpy(out + o, u + k, l);
            o += l;
            k += l;
        } else {
            o += (size_t)snprintf(out + o, 6, "\\\\x%02x", u[k]);
            k++;
        }
    }
    out[o] = '\0';
    return out;
}
