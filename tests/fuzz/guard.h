/*
 * guard.h - what the fuzz targets share: the guarded copies of an input,
 * and REQUIRE, their check (a broken invariant aborts, which libFuzzer and
 * the replay build both report as a failure).
 *
 * guard_copy puts the bytes so that they end exactly where a PROT_NONE page
 * begins: reading one byte past the input faults, even inside code that is
 * not instrumented (the system cJSON) and in the plain replay build. The
 * targets also parse an exact-size malloc copy, which ASan checks at both
 * ends. The region is mapped once and grows (remapped) for a larger input;
 * it is never unmapped, so a leak checker does not see it.
 */
#ifndef NC_FUZZ_GUARD_H
#define NC_FUZZ_GUARD_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

/* A copy of data[0..size) whose last byte is followed by an unreadable
 * page. Valid until the next call. Aborts if the mapping fails. */
static inline unsigned char *guard_copy(const unsigned char *data, size_t size)
{
    static unsigned char *region;
    static size_t cap; /* readable bytes before the guard page */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!region || size > cap) {
        if (region)
            munmap(region, cap + page);
        size_t want = (size + page - 1) / page * page;
        if (want < ((size_t)1 << 16))
            want = (size_t)1 << 16;
        void *m = mmap(NULL, want + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (m == MAP_FAILED)
            abort();
        region = m;
        cap = want;
        if (mprotect(region + cap, page, PROT_NONE))
            abort();
    }
    unsigned char *p = region + cap - size;
    if (size)
        memcpy(p, data, size);
    return p;
}

/* An exact-size heap copy (ASan's redzones on both sides; calloc(1, 0) too,
 * so even an empty input has no readable byte); free() it. */
static inline unsigned char *heap_copy(const unsigned char *data, size_t size)
{
    unsigned char *p = calloc(1, size);
    if (!p && size)
        abort();
    if (size)
        memcpy(p, data, size);
    return p;
}

#endif
