/*
 * sha256.h - SHA-256 (FIPS 180-4) of input files, for the report.
 *
 * Incremental (init / update / final) and one-shot. On x86 CPUs with the
 * SHA extensions (CPUID leaf 7, EBX bit 29) the compression function runs
 * on them; elsewhere, or when forced for tests, a portable C version does.
 * Both give identical digests. Messages are whole bytes (no bit-length
 * messages); the length is counted mod 2^64 bits as the standard allows
 * (messages below 2^61 bytes).
 */
#ifndef NC_SHA256_H
#define NC_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hashing state: a plain struct so that it lives on the caller's stack;
 * touch it only through the functions below. */
typedef struct nc_sha256 {
    uint32_t h[8];          /* chaining value H0..H7 */
    uint64_t nbytes;        /* message bytes hashed so far */
    unsigned char buf[64];  /* a partial block, buflen bytes used */
    size_t buflen;          /* 0..63 */
} nc_sha256;

/* Starts a new message in c. */
void nc_sha256_init(nc_sha256 *c);

/* Appends n bytes at data (which may be NULL if n is 0) to the message. */
void nc_sha256_update(nc_sha256 *c, const void *data, size_t n);

/* Pads the message, writes its 32-byte digest to out and wipes c; c must be
 * initialized again before reuse. */
void nc_sha256_final(nc_sha256 *c, unsigned char out[32]);

/* One shot: the digest of n bytes at data as 64 lowercase hex digits and a
 * terminating NUL in out. */
void nc_sha256_hex(const void *data, size_t n, char out[65]);

/* Tests and benchmarks: on = true forces the portable compression function
 * for every later call in the process; false returns to the fastest one the
 * CPU has. Safe at any time, even while other threads hash: both functions
 * give identical results from the same state. */
void nc_sha256_use_portable(bool on);

/* True if the SHA extensions are in use (they exist and were not turned
 * off by nc_sha256_use_portable), for benchmark and report labels. */
bool nc_sha256_uses_shani(void);

#endif
