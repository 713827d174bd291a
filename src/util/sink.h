/*
 * sink.h - where writers put bytes: a write function and its context.
 *
 * Every writer (npy, safetensors, report JSON, PNG) takes a sink, so that
 * output can be tested in memory and written to disk through util/outfile
 * (temporary name, then rename) without the writer knowing which.
 */
#ifndef NC_SINK_H
#define NC_SINK_H

#include <stdarg.h>
#include <stddef.h>

#include "util/err.h"

typedef struct nc_sink {
    /* Writes all n bytes or fails: returns 0 or a negative NC_E* code with
     * err set. */
    int (*write)(void *ctx, const void *buf, size_t n, nc_err *err);
    void *ctx;
} nc_sink;

/* Writes n bytes through sink. */
int nc_sink_write(const nc_sink *sink, const void *buf, size_t n, nc_err *err);

/* A growable in-memory buffer; zero-initialise it before use. */
typedef struct nc_membuf {
    unsigned char *data; /* owned; len bytes of output (not NUL-terminated) */
    size_t len;
    size_t cap;
} nc_membuf;

/* A sink appending to mb. */
nc_sink nc_membuf_sink(nc_membuf *mb);

/* Appends printf(fmt, ...) to mb and keeps a NUL after it (not counted in
 * len), so mb->data reads as a C string. 0, or NC_ENOMEM / NC_EINVAL with
 * err set; mb is unchanged on failure. */
int nc_membuf_printf(nc_membuf *mb, nc_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with a va_list (consumed). */
int nc_membuf_vprintf(nc_membuf *mb, nc_err *err, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Releases mb's storage and zeroes it. Accepts NULL. */
void nc_membuf_free(nc_membuf *mb);

#endif
