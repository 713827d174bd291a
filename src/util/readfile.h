/*
 * readfile.h - opening the files normcmp reads whole (index files, shard
 * reports, the config it copies, old reports, files merge copies) as
 * untrusted input: never blocking, only regular files, a bound on the
 * bytes read that fits what the file claims to be, and, for a folder that
 * is not the user's own choice of file (a shard folder), no path or link
 * leading out of it (docs/outputs.md "Inputs are untrusted").
 *
 * Every open uses O_NONBLOCK, so a FIFO (or a link to one) is refused by
 * fstat instead of blocking the open; a directory, a device or a socket is
 * refused the same way. Messages name the file and say what was expected.
 */
#ifndef NC_READFILE_H
#define NC_READFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "util/err.h"

/* What is being opened, for the checks and the messages. */
typedef struct nc_infile {
    const char *noun;   /* "index file", "shard report": "cannot open <noun>" */
    uint64_t max_bytes; /* a larger file is refused (NC_ERANGE) */
    int dirfd;          /* a relative path is resolved in this folder (AT_FDCWD: the current one) */
    bool beneath;       /* refuse an absolute path, "..", and any link leading out of dirfd */
    bool nofollow;      /* refuse a symbolic link as the last step of the path */
    const char *shown;  /* the path as messages name it (NULL: the path as given) */
} nc_infile;

/* Opens path for reading as described by in: a regular file of at most
 * in->max_bytes bytes. On success *fd is open (O_RDONLY | O_CLOEXEC; close
 * it) and *st its fstat. Errors, each one line naming the file (exit
 * class in brackets): missing, unreadable, a directory, not a regular
 * file, a path or link leading out of the folder, too large (NC_EINVAL or
 * NC_ERANGE: the user's to fix); out of file descriptors, memory or
 * another OS failure (NC_EIO). *fd is -1 on failure. */
int nc_infile_open(const char *path, const nc_infile *in, int *fd, struct stat *st, nc_err *err);

/* nc_infile_open, then the whole file into *buf (malloc'd, NUL-terminated,
 * owned by the caller) of *len bytes. Never reads more than max_bytes + 1
 * bytes, so a file that grows while it is read is refused as too large. */
int nc_infile_read(const char *path, const nc_infile *in, char **buf, size_t *len, nc_err *err);

/* The kind of a non-regular file as a noun phrase ("a FIFO", "a directory",
 * "a character device", ...), for messages. */
const char *nc_file_kind(mode_t mode);

#endif
