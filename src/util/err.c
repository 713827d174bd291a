/*
 * err.c - the single place errors are recorded (see err.h).
 */
#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void flatten(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

__attribute__((format(printf, 4, 0))) static int vset(nc_err *err, int code, int errnum,
                                                     const char *fmt, va_list ap)
{
    if (!err || err->code != NC_OK)
        return code;
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (errnum) {
        size_t n = strlen(err->msg);
        snprintf(err->msg + n, sizeof err->msg - n, ": %s", strerror(errnum));
    }
    flatten(err->msg);
    return code;
}

int nc_err_set(nc_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, 0, fmt, ap);
    va_end(ap);
    return code;
}

int nc_err_set_errno(nc_err *err, int code, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, errnum, fmt, ap);
    va_end(ap);
    return code;
}

void nc_err_clear(nc_err *err)
{
    if (!err)
        return;
    err->code = NC_OK;
    err->msg[0] = '\0';
}

int nc_err_exit_status(int code)
{
    switch (code) {
    case NC_OK:
        return 0;
    case NC_EFORMAT:
    case NC_EUNSUPPORTED:
    case NC_ERANGE:
    case NC_EINVAL:
        return 2;
    default:
        return 1;
    }
}

const char *nc_err_name(int code)
{
    switch (code) {
    case NC_OK: return "ok";
    case NC_EIO: return "io";
    case NC_EFORMAT: return "format";
    case NC_EUNSUPPORTED: return "unsupported";
    case NC_ERANGE: return "range";
    case NC_ENOMEM: return "nomem";
    case NC_EINVAL: return "invalid";
    case NC_EINTERNAL: return "internal";
    default: return "unknown";
    }
}
