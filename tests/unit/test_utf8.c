/*
 * test_utf8.c - the strict UTF-8 validator every reader, config and
 * report uses (util/utf8.h), and the escaping of bytes it refuses.
 *
 * Two ways: every kind of ill-formed sequence RFC 3629 (section 3) and
 * Unicode's Table 3-7 name, one by one, with the offset of the first bad
 * byte; and every sequence of one, two and three bytes, and every
 * four-byte sequence of a set of interesting bytes, against a reference
 * written here from the definition (decode the bits, then the code point
 * must need exactly that many bytes, not be a surrogate, not pass
 * U+10FFFF).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util/utf8.h"

/* s[0..n) must be refused with its first bad byte at bad. */
static void expect_bad(const char *s, size_t n, size_t bad, const char *what)
{
    size_t at = 12345;
    bool ok = nc_utf8_valid(s, n, &at);
    if (ok)
        CHECK_FAIL_("%s: accepted, expected refused at byte %zu", what, bad);
    else if (at != bad)
        CHECK_FAIL_("%s: refused at byte %zu, expected %zu", what, at, bad);
    else
        check_passed_++;
}

static void expect_good(const char *s, size_t n, const char *what)
{
    size_t at = 12345;
    if (nc_utf8_valid(s, n, &at))
        check_passed_++;
    else
        CHECK_FAIL_("%s: refused at byte %zu, expected well-formed", what, at);
}

#define BAD(lit, bad) expect_bad(lit, sizeof lit - 1, bad, #lit)
#define GOOD(lit) expect_good(lit, sizeof lit - 1, #lit)

/* The edges of every range of Table 3-7. */
static void test_well_formed_edges(void)
{
    GOOD("");
    GOOD("plain ASCII \x01\x7f");
    GOOD("\xc2\x80");             /* U+0080, the first two-byte */
    GOOD("\xdf\xbf");             /* U+07FF */
    GOOD("\xe0\xa0\x80");         /* U+0800, the first three-byte */
    GOOD("\xe1\x80\x80");         /* U+1000 */
    GOOD("\xec\xbf\xbf");         /* U+CFFF */
    GOOD("\xed\x80\x80");         /* U+D000 */
    GOOD("\xed\x9f\xbf");         /* U+D7FF, just below the surrogates */
    GOOD("\xee\x80\x80");         /* U+E000, just above them */
    GOOD("\xef\xbf\xbf");         /* U+FFFF */
    GOOD("\xf0\x90\x80\x80");     /* U+10000, the first four-byte */
    GOOD("\xf1\x80\x80\x80");     /* U+40000 */
    GOOD("\xf3\xbf\xbf\xbf");     /* U+FFFFF */
    GOOD("\xf4\x80\x80\x80");     /* U+100000 */
    GOOD("\xf4\x8f\xbf\xbf");     /* U+10FFFF, the last code point */
    GOOD("ln\xc3\xa9 \xe2\x88\x9a d \xf0\x9f\x93\x88"); /* mixed */
}

static void test_overlong(void)
{
    /* two bytes: C0 and C1 lead only overlong forms of U+0000..U+007F */
    BAD("\xc0\x80", 0);
    BAD("\xc0\xaf", 0); /* '/' */
    BAD("\xc1\x80", 0);
    BAD("\xc1\xbf", 0); /* U+007F */
    BAD("ab\xc0\xaf", 2);
    /* three bytes: E0 80..9F */
    BAD("\xe0\x80\x80", 0);
    BAD("\xe0\x80\xaf", 0);
    BAD("\xe0\x9f\xbf", 0); /* U+07FF in three bytes */
    /* four bytes: F0 80..8F */
    BAD("\xf0\x80\x80\x80", 0);
    BAD("\xf0\x80\x80\xaf", 0);
    BAD("\xf0\x8f\xbf\xbf", 0); /* U+FFFF in four bytes */
}

static void test_surrogates(void)
{
    BAD("\xed\xa0\x80", 0); /* U+D800 */
    BAD("\xed\xad\xbf", 0); /* U+DB7F */
    BAD("\xed\xae\x80", 0); /* U+DB80 */
    BAD("\xed\xaf\xbf", 0); /* U+DBFF */
    BAD("\xed\xb0\x80", 0); /* U+DC00 */
    BAD("\xed\xbe\x80", 0); /* U+DF80 */
    BAD("\xed\xbf\xbf", 0); /* U+DFFF */
    BAD("\xed\xa0\x80\xed\xb0\x80", 0); /* a pair, as CESU-8 writes it */
    BAD("x\xed\xbf\xbf", 1);
}

static void test_above_max(void)
{
    BAD("\xf4\x90\x80\x80", 0);     /* U+110000 */
    BAD("\xf4\xbf\xbf\xbf", 0);     /* U+13FFFF */
    BAD("\xf5\x80\x80\x80", 0);     /* F5..F7: U+140000 and above */
    BAD("\xf6\x80\x80\x80", 0);
    BAD("\xf7\xbf\xbf\xbf", 0);
    BAD("\xf8\x88\x80\x80\x80", 0); /* the old five-byte form */
    BAD("\xfb\xbf\xbf\xbf\xbf", 0);
    BAD("\xfc\x84\x80\x80\x80\x80", 0); /* and six-byte */
    BAD("\xfd\xbf\xbf\xbf\xbf\xbf", 0);
    BAD("\xfe", 0);
    BAD("\xff", 0);
    BAD("\xfe\xff", 0); /* a UTF-16 byte-order mark */
    BAD("ok\xff", 2);
}

static void test_truncated(void)
{
    BAD("\xc2", 0);
    BAD("\xdf", 0);
    BAD("\xe0\xa0", 0);
    BAD("\xe1\x80", 0);
    BAD("\xed\x9f", 0);
    BAD("\xef\xbf", 0);
    BAD("\xe1", 0);
    BAD("\xf0\x90\x80", 0);
    BAD("\xf1\x80\x80", 0);
    BAD("\xf4\x8f\xbf", 0);
    BAD("\xf4", 0);
    BAD("abc\xe2\x88", 3);   /* cut at the end of the text */
    BAD("\xc2" "A", 0);      /* followed by ASCII */
    BAD("\xe1\x80" "A", 0);
    BAD("\xf0\x90\x80" "A", 0);
    BAD("\xe1" "A\x80", 0);  /* the second byte not a continuation */
    BAD("\xf1\x80" "A\x80", 0);
    BAD("\xc2\xc2\x80", 0);  /* a lead byte where a continuation belongs */
    BAD("\xe1\x80\xe1\x80\x80", 0);
    /* n cuts a well-formed sequence short */
    expect_bad("\xe2\x88\x9a", 2, 0, "U+221A cut after 2 of 3 bytes");
    expect_bad("\xf0\x9f\x93\x88", 3, 0, "U+1F4C8 cut after 3 of 4 bytes");
}

static void test_lone_continuation(void)
{
    BAD("\x80", 0);
    BAD("\xbf", 0);
    BAD("a\x80", 1);
    BAD("\xc3\xa9\xa9", 2); /* one continuation too many */
    BAD("\xe2\x88\x9a\x80", 3);
    BAD("\xf0\x9f\x93\x88\xbf", 4);
    for (int c = 0x80; c <= 0xbf; c++) {
        char s[2] = {(char)c, 0};
        expect_bad(s, 1, 0, "a continuation byte alone");
    }
}

/* ---------------------------------------------- against the definition */

/* The reference: whether s[0..n) is one well-formed sequence. */
static bool ref_one(const unsigned char *s, size_t n)
{
    if (n == 1)
        return s[0] < 0x80;
    unsigned lead_bits = n == 2 ? 0xe0 : n == 3 ? 0xf0 : 0xf8;
    unsigned lead_val = n == 2 ? 0xc0 : n == 3 ? 0xe0 : 0xf0;
    if ((s[0] & lead_bits) != lead_val)
        return false;
    uint32_t cp = s[0] & (0x7f >> n);
    for (size_t k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80)
            return false;
        cp = (cp << 6) | (s[k] & 0x3f);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    return cp >= least[n] && !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
}

/* The reference for a whole text: split at each lead byte's length. */
static bool ref_valid(const unsigned char *s, size_t n)
{
    for (size_t k = 0; k < n;) {
        size_t len = s[k] < 0x80 ? 1 : (s[k] & 0xe0) == 0xc0 ? 2 : (s[k] & 0xf0) == 0xe0 ? 3
                                                             : (s[k] & 0xf8) == 0xf0 ? 4
                                                                                     : 0;
        if (!len || k + len > n || !ref_one(s + k, len))
            return false;
        k += len;
    }
    return true;
}

static void test_every_short_sequence(void)
{
    /* all 256 + 65536 + 16777216 sequences of one to three bytes */
    long disagree = 0, valid = 0;
    unsigned char s[4];
    for (uint32_t v = 0; v < (1u << 24); v++) {
        s[0] = (unsigned char)(v >> 16);
        s[1] = (unsigned char)(v >> 8);
        s[2] = (unsigned char)v;
        for (size_t n = 1; n <= 3; n++) {
            if (n < 3 && (v & ((1u << (8 * (3 - n))) - 1)) != 0)
                continue; /* each shorter sequence once */
            bool got = nc_utf8_valid((const char *)s, n, NULL);
            valid += got;
            if (got != ref_valid(s, n) && disagree++ < 5)
                CHECK_FAIL_("sequence %02x %02x %02x (%zu bytes): validator says %d", s[0], s[1],
                            s[2], n, got);
        }
    }
    CHECK_INT(0, disagree);
    /* well-formed: 128 one-byte, 1920 two-byte (U+0080..07FF), 61440
     * three-byte (U+0800..FFFF without 2048 surrogates); shorter ones
     * again as prefixes of the longer, e.g. "a" + two-byte */
    long ones = 128, twos = 1920, threes = 61440;
    CHECK_INT(ones + (ones * ones + twos) + (ones * ones * ones + 2 * ones * twos + threes), valid);
    /* four bytes: every lead byte with a second byte from each region of
     * interest and third and fourth bytes at the edges */
    static const unsigned char second[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0,
                                           0xbf, 0xc0, 0xc2, 0xe0, 0xf0, 0xff};
    static const unsigned char rest[] = {0x41, 0x80, 0xbf, 0xc0};
    disagree = 0;
    for (int a = 0; a < 256; a++)
        for (size_t b = 0; b < sizeof second; b++)
            for (size_t c = 0; c < sizeof rest; c++)
                for (size_t d = 0; d < sizeof rest; d++) {
                    s[0] = (unsigned char)a;
                    s[1] = second[b];
                    s[2] = rest[c];
                    s[3] = rest[d];
                    bool got = nc_utf8_valid((const char *)s, 4, NULL);
                    if (got != ref_valid(s, 4) && disagree++ < 5)
                        CHECK_FAIL_("sequence %02x %02x %02x %02x: validator says %d", s[0],
                                    s[1], s[2], s[3], got);
                }
    CHECK_INT(0, disagree);
}

/* What cannot be refused (file names) is escaped byte by byte as \xNN
 * (a JSON string's "\\xNN"), and the rest kept. */
static void test_escape(void)
{
    char *e = nc_utf8_escape_json("\"n\xffm\xc3\xa9\xc0\xaf\xed\xa0\x80\"");
    CHECK_STR("\"n\\\\xffm\xc3\xa9\\\\xc0\\\\xaf\\\\xed\\\\xa0\\\\x80\"", e);
    CHECK(e && nc_utf8_valid(e, strlen(e), NULL));
    free(e);
    e = nc_utf8_escape_json("\xe2\x88");
    CHECK_STR("\\\\xe2\\\\x88", e);
    free(e);
}

int main(void)
{
    test_well_formed_edges();
    test_overlong();
    test_surrogates();
    test_above_max();
    test_truncated();
    test_lone_continuation();
    test_every_short_sequence();
    test_escape();
    return CHECK_DONE();
}
