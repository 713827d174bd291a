/*
 * sink.c - byte sinks (sink.h): the dispatch and the in-memory buffer.
 */
#include "util/sink.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int nc_sink_write(const nc_sink *sink, const void *buf, size_t n, nc_err *err)
{
    if (n == 0)
        return 0;
    return sink->write(sink->ctx, buf, n, err);
}

static int membuf_write(void *ctx, const void *buf, size_t n, nc_err *err)
{
    nc_membuf *mb = ctx;
    if (n > SIZE_MAX - mb->len)
        return nc_err_set(err, NC_ENOMEM, "in-memory output: size overflow");
    if (mb->len + n > mb->cap) {
        size_t cap = mb->cap ? mb->cap : 4096;
        while (cap < mb->len + n)
            cap = cap > SIZE_MAX / 2 ? mb->len + n : cap * 2;
        unsigned char *p = realloc(mb->data, cap);
        if (!p)
            return nc_err_set(err, NC_ENOMEM, "in-memory output: out of memory (%zu bytes)", cap);
        mb->data = p;
        mb->cap = cap;
    }
    memcpy(mb->data + mb->len, buf, n);
    mb->len += n;
    return 0;
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
