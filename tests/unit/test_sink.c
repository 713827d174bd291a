/*
 * test_sink.c - the in-memory buffer of util/sink.h: writes and printf
 * appends across the doubling boundary, the NUL kept after the text, and
 * the two mixed, against a string built independently with snprintf.
 */
#include "util/sink.h"

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 3000 appends of "layer.<k>: <k/7>, " (about 60 KB, past the first
 * 4096-byte capacity many times) read back as one C string. */
static void test_printf_appends(void)
{
    nc_membuf mb = {0};
    nc_err err;
    size_t cap = 1 << 17, n = 0;
    char *want = malloc(cap);
    CHECK(want != NULL);
    if (!want)
        return;
    want[0] = '\0';
    int fails = 0;
    for (int k = 0; k < 3000; k++) {
        fails += nc_membuf_printf(&mb, &err, "layer.%d: %.6g, ", k, k / 7.0) != 0;
        n += (size_t)snprintf(want + n, cap - n, "layer.%d: %.6g, ", k, k / 7.0);
    }
    CHECK_INT(0, fails);
    CHECK(mb.len == n);
    CHECK(mb.cap > mb.len); /* room for the NUL */
    CHECK(mb.data != NULL && mb.data[mb.len] == '\0');
    CHECK(mb.data != NULL && strcmp((const char *)mb.data, want) == 0);
    /* an empty append changes nothing but stays terminated */
    CHECK_INT(0, nc_membuf_printf(&mb, &err, "%s", ""));
    CHECK(mb.len == n && mb.data[mb.len] == '\0');
    nc_membuf_free(&mb);
    CHECK(mb.data == NULL && mb.len == 0 && mb.cap == 0);
    free(want);
}

/* One append longer than the first capacity, after bytes written through
 * the sink: both land in order. */
static void test_mixed_and_long(void)
{
    nc_membuf mb = {0};
    nc_err err;
    nc_sink s = nc_membuf_sink(&mb);
    CHECK_INT(0, nc_sink_write(&s, "abc", 3, &err));
    char big[10001];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_INT(0, nc_membuf_printf(&mb, &err, "[%s]", big));
    CHECK(mb.len == 3 + 2 + 10000);
    CHECK(memcmp(mb.data, "abc[", 4) == 0);
    CHECK(mb.data[mb.len - 1] == ']' && mb.data[mb.len] == '\0');
    CHECK_INT(0, nc_sink_write(&s, "!", 1, &err));
    CHECK(mb.len == 3 + 2 + 10000 + 1 && mb.data[mb.len - 1] == '!');
    nc_membuf_free(&mb);
}

int main(void)
{
    test_printf_appends();
    test_mixed_and_long();
    return CHECK_DONE();
}
