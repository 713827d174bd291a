/*
 * err.h - error codes and the one-line error message every library call
 * reports through.
 *
 * Library functions return 0 on success or a negative NC_E* code, and fill
 * a caller-provided nc_err with one line naming the file, the place in it,
 * what was found and what was expected (docs/internals.md, rule 4). All errors go
 * through nc_err_set, so one breakpoint catches them all.
 *
 * The CLI maps codes to exit statuses with nc_err_exit_status: input the
 * user must fix (format, unsupported, range, invalid) is 2; anything else
 * (I/O, memory, internal) is 1.
 */
#ifndef NC_ERR_H
#define NC_ERR_H

#include <stddef.h>

enum {
    NC_OK = 0,
    NC_EIO = -1,          /* the OS refused: open, read, write, rename, mmap */
    NC_EFORMAT = -2,      /* malformed input: bad magic, truncated, bad header */
    NC_EUNSUPPORTED = -3, /* well-formed but not handled: dtype, order, version */
    NC_ERANGE = -4,       /* a size or offset out of range, an overflow */
    NC_ENOMEM = -5,       /* an allocation failed */
    NC_EINVAL = -6,       /* an invalid argument or configuration value */
    NC_EINTERNAL = -7,    /* a broken invariant of our own */
};

#define NC_ERR_MSG_MAX 512

typedef struct nc_err {
    int code;                 /* the NC_E* code of the first error set, or 0 */
    char msg[NC_ERR_MSG_MAX]; /* one line, no trailing newline */
} nc_err;

/* Records code and a printf-style message in err (which may be NULL) and
 * returns code, so that callers can write `return nc_err_set(...)`. Only the
 * first error is kept: a later call does not overwrite it, so the message
 * stays the one closest to the cause. Newlines in the message become spaces. */
int nc_err_set(nc_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Like nc_err_set, with ": strerror(errnum)" appended. */
int nc_err_set_errno(nc_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clears err to "no error". */
void nc_err_clear(nc_err *err);

/* Exit status for an error code: 0 for NC_OK, 2 for input the user must fix
 * (NC_EFORMAT, NC_EUNSUPPORTED, NC_ERANGE, NC_EINVAL), 1 otherwise. */
int nc_err_exit_status(int code);

/* A short name for a code ("format", "io", ...), for tests and logs. */
const char *nc_err_name(int code);

#endif
