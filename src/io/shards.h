/*
 * shards.h - a dump spread over several safetensors files ("shards"), as
 * scripts/dump_activations.py writes one into a folder and as Hugging Face
 * shards checkpoints: the list of shard files a folder, an index file or a
 * glob names, and a strict parser for the index file.
 *
 * An index is the JSON Hugging Face writes beside sharded checkpoints
 * (model.safetensors.index.json):
 *
 *     {"metadata": {"total_size": 123}, "weight_map": {"<tensor>": "<shard file>", ...}}
 *
 * Shard files are named relative to the index's folder. Keys other than
 * weight_map are allowed and ignored (Hugging Face puts total_size there).
 */
#ifndef NC_SHARDS_H
#define NC_SHARDS_H

#include <stddef.h>

#include "util/err.h"

/* The largest index file read, in bytes. */
#define NC_INDEX_MAX_BYTES ((size_t)64 << 20)

typedef struct nc_index {
    size_t n;        /* entries of weight_map, in file order */
    char **tensor;   /* [n] tensor names (owned) */
    size_t *shard;   /* [n] index into files */
    char **files;    /* [nfiles] distinct shard names as written (owned), sorted by strcmp */
    size_t nfiles;
} nc_index;

/* Parses an index file's text[0..len) (not NUL-terminated); path is used
 * only in messages. Checks: one JSON object (only white space after it), no
 * raw control character in a string, "weight_map" an object with at least
 * one entry, each key a non-empty tensor name listed once, each value a
 * non-empty relative file name (not starting with '/', no ".." step: a
 * shard is in the index's folder or below it). Returns 0 with *out
 * owned by the caller (nc_index_free), or NC_EFORMAT with a one-line
 * message naming path and the field (NC_ENOMEM when out of memory); *out is
 * NULL on failure. */
int nc_index_parse(const char *text, size_t len, const char *path, nc_index **out, nc_err *err);

/* Releases ix. Accepts NULL. */
void nc_index_free(nc_index *ix);

/* True if path's name says it is an index (ends in ".index.json"). */
int nc_index_named(const char *path);

/* The shard files spec names, as paths to open (owned: free each and the
 * array), sorted by strcmp so a dump's layers come in the order of its
 * numbered shards:
 *  - a folder: its one *.safetensors.index.json if it has one (more than
 *    one is an error), else every *.safetensors file in it;
 *  - an index file: the files of its weight_map (*ix is then its parse,
 *    owned by the caller, to check against the shards);
 *  - a glob pattern (shell syntax) that names no existing file: the files
 *    it matches, every one of which must be a regular file (a dangling
 *    link or a FIFO among them is refused, not skipped).
 * An index file is read without blocking and only if it is a regular file
 * (util/readfile.h). *ix is NULL unless an index was read. Errors
 * (NC_EINVAL, exit 2): no shard found, an unreadable folder or index, an
 * index that is not a regular file, a bad index. */
int nc_shards_resolve(const char *spec, char ***files, size_t *nfiles, nc_index **ix,
                      nc_err *err);

#endif
