/*
 * sink.c - byte sinks (sink.h): the dispatch and the in-memory buffer.
 */
#include "util/sink.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nc_sink_write(const nc_sink *sink, const void *buf, size_t n, nc_err *err)
{
    if (n == 0)
        return 0;
    return sink->write(sink->ctx, buf, n, err);
}

/* Room for extra more bytes after mb's len: capacity doubles when short. */
static int membuf_reserve(nc_membuf *mb, size_t extra, nc_err *err)
{
    if (extra > SIZE_MAX - mb->len)
        return nc_err_set(err, NC_ENOMEM, "in-memory output: size overflow");
    if (mb->len + extra > mb->cap) {
        size_t cap = mb->cap ? mb->cap : 4096;
        while (cap < mb->len + extra)
            cap = cap > SIZE_MAX / 2 ? mb->len + extra : cap * 2;
        unsigned char *p = realloc(mb->data, cap);
        if (!p)
            return nc_err_set(err, NC_ENOMEM, "in-memory output: out of memory (%zu bytes)", cap);
        mb->data = p;
        mb->cap = cap;
    }
    return 0;
}

static int membuf_write(void *ctx, const void *buf, size_t n, nc_err *err)
{
    nc_membuf *mb = ctx;
    int rc = membuf_reserve(mb, n, err);
    if (rc)
        return rc;
    memcpy(mb->data + mb->len, buf, n);
    mb->len += n;
    return 0;
}

int nc_membuf_vprintf(nc_membuf *mb, nc_err *err, const char *fmt, va_list ap)
{
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    if (n < 0)
        return nc_err_set(err, NC_EINVAL, "in-memory output: cannot format \"%s\"", fmt);
    int rc = membuf_reserve(mb, (size_t)n + 1, err);
    if (rc)
        return rc;
    vsnprintf((char *)mb->data + mb->len, (size_t)n + 1, fmt, ap);
    mb->len += (size_t)n;
    return 0;
}

int nc_membuf_printf(nc_membuf *mb, nc_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = nc_membuf_vprintf(mb, err, fmt, ap);
    va_end(ap);
    return rc;
}

nc_sink nc_membuf_sink(nc_membuf *mb)
{
    return (nc_sink){membuf_write, mb};
}

void nc_membuf_free(nc_membuf *mb)
{
    if (!mb)
        return;
    free(mb->data);
    memset(mb, 0, sizeof *mb);
}
