/*
 * dump.h - an activation dump: a memory-mapped .npy or .safetensors file (or
 * tensors generated in memory), and the tensors in it.
 *
 * The format is told by the bytes, not the name: "\x93NUMPY" starts a .npy;
 * a little-endian u64 header length followed by '{' starts a safetensors.
 * Files are mapped read-only and never copied; tensor views point into the
 * mapping and live until nc_dump_close. A .npy holds one tensor, named after
 * the file without its folder and ".npy" (ln00_input.npy -> "ln00_input").
 *
 * A sharded dump (io/shards.h) opens as one dump too: a folder, an index
 * (*.safetensors.index.json, or any file that starts with '{') or a glob
 * pattern that names no file. Its tensors are the shards' tensors, shard by
 * shard in the order of the shards' names, each name in one shard only;
 * nc_dump_part gives the shard a tensor is in.
 */
#ifndef NC_DUMP_H
#define NC_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "util/err.h"

typedef struct nc_dump nc_dump;

/* Opens and validates path: a file, or a sharded dump's folder, index or
 * glob. Errors: a missing or unreadable file, an empty file, an unknown
 * format (NC_EINVAL/NC_EFORMAT), every parser error; for shards also a bad
 * index, a tensor in two shards, or an index entry its shard does not hold. */
int nc_dump_open(const char *path, nc_dump **out, nc_err *err);

/* An empty in-memory dump called name (shown as its path), for generated
 * tensors. */
int nc_dump_mem_alloc(const char *name, nc_dump **out, nc_err *err);

/* Adds a tensor to an in-memory dump, taking ownership of data (malloc'd,
 * nelem * dtype size bytes, little-endian) even on failure. */
int nc_dump_mem_add(nc_dump *dump, const char *name, nc_dtype dt, int rank,
                    const uint64_t *shape, void *data, nc_err *err);

/* Unmaps and frees. Accepts NULL. */
void nc_dump_close(nc_dump *dump);

const char *nc_dump_path(const nc_dump *dump);
const char *nc_dump_format(const nc_dump *dump); /* "npy", "safetensors" (sharded too) or "memory" */
uint64_t nc_dump_bytes(const nc_dump *dump);     /* file size, all shards' (0 in memory) */
size_t nc_dump_count(const nc_dump *dump);
const nc_tensor *nc_dump_tensor(const nc_dump *dump, size_t i);

/* The tensor called name, or NULL. */
const nc_tensor *nc_dump_find(const nc_dump *dump, const char *name);

/* The safetensors __metadata__ value for key, or NULL (a .npy or an
 * in-memory dump has none). Borrowed: valid until nc_dump_close. Use this,
 * not the file's parser, so that a dump of several files (a folder, an index
 * or a glob of shards) answers too: there the first shard holding key does. */
const char *nc_dump_meta(const nc_dump *dump, const char *key);

/* The file dump holding t (one of dump's tensors): its shard for a sharded
 * dump, else dump itself. */
nc_dump *nc_dump_part(nc_dump *dump, const nc_tensor *t);

/* The number of files behind dump: its shards, or 1. */
size_t nc_dump_nparts(const nc_dump *dump);

/* True if pattern has glob characters (* ? [). */
bool nc_glob_is_pattern(const char *pattern);

/* True if name matches the shell-style glob pattern ('*' also matches '.'). */
bool nc_glob_match(const char *pattern, const char *name);

/* Hex SHA-256 of the file's bytes (computed once, then cached); for an
 * in-memory dump, of the tensors' bytes in order. When a hasher (below) has
 * the dump, waits for its digest. */
void nc_dump_sha256(nc_dump *dump, char hex[65]);

/* A background hasher: one thread that computes, in order, the SHA-256 of
 * each file dump given, while the caller goes on (the analysis), so that
 * the digests are ready when the report asks for them. It reads each file
 * with pread into a 4 MB buffer, not through the mapping, so the process's
 * memory does not grow and the analysis's pages are left alone; first it
 * checks the file is still the one that was mapped (device, inode, size,
 * modification time). A file that changed or cannot be read again, or a
 * read that comes up short, is left undone: nc_dump_sha256 then hashes the
 * mapping itself (and a file that shrank raises SIGBUS there, as in the
 * analysis). nc_dump_sha256 also checks the file again before it takes a
 * digest made early: a file modified since it was mapped (rewritten in
 * place, the mapping shows the new bytes) is hashed again from the
 * mapping, as it would have been without the hasher. Dumps without a file
 * (in memory) are skipped. */
typedef struct nc_dump_hasher nc_dump_hasher;

/* Below this many bytes of files in all, no hasher starts: nc_dump_sha256
 * hashes them from the mapping when the report asks (1 MB: under a
 * millisecond with SHA-NI, less than starting a thread and its 4 MB
 * buffer costs a small run). */
#define NC_DUMP_HASH_THREAD_BYTES ((size_t)1 << 20)

/* Starts hashing dumps[0..n) (borrowed: they must outlive the hasher).
 * Returns NULL (and hashes nothing in the background) when the files hold
 * fewer than NC_DUMP_HASH_THREAD_BYTES, when out of memory or when the
 * thread cannot be started: nc_dump_sha256 still works. */
nc_dump_hasher *nc_dump_hasher_start(nc_dump *const *dumps, size_t n);

/* Stops the hasher (it finishes the file it is reading at most 4 MB
 * later), waits for its thread and frees it; digests already made stay
 * cached in their dumps. Accepts NULL. */
void nc_dump_hasher_stop(nc_dump_hasher *h);

/* The path of the mapped dump whose mapping contains addr (the whole
 * path, as the dump was opened), or NULL. Async-signal-safe (walks a list
 * of the live mappings with no fixed length, without locks): for the CLI's
 * SIGBUS handler, which names the file that shrank while it was read. */
const char *nc_dump_fault_path(const void *addr);

/* Memory of a mapped tensor (docs/whole_models.md): need = true maps its
 * pages in at once (MADV_POPULATE_READ; read-ahead on older kernels) before
 * a layer's passes; need = false drops them from this process afterwards
 * (MADV_DONTNEED: they stay in the page cache, and a later read maps them
 * again, so it only costs time). Does nothing for in-memory tensors. */
void nc_dump_advise(const nc_tensor *t, bool need);

#endif
