/*
 * bigmem.c - large allocations, mapped on their own (bigmem.h).
 */
#include "util/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* The alignment and mapped length of a block of bytes (len 0 on overflow):
 * 2 MB for huge blocks, the page size below. */
static size_t block_align(size_t bytes)
{
    return bytes >= NC_BIGMEM_HUGE ? (size_t)2 << 20 : (size_t)sysconf(_SC_PAGESIZE);
}

static size_t mapped_len(size_t bytes)
{
    size_t a = block_align(bytes), len = (bytes + a - 1) / a * a;
    return len < bytes ? 0 : len;
}

void *nc_big_alloc(size_t bytes)
{
    if (bytes < NC_BIGMEM_MAP)
        return malloc(bytes ? bytes : 1);
    size_t len = mapped_len(bytes);
    if (len == 0)
        return NULL;
    if (bytes < NC_BIGMEM_HUGE) {
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return m == MAP_FAILED ? NULL : m;
    }
    /* map one huge page more, then cut the mapping to an aligned block */
    const size_t huge = block_align(bytes);
    if (len + huge < len)
        return NULL;
    unsigned char *m = mmap(NULL, len + huge, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + huge - 1) & ~(uintptr_t)(huge - 1);
    unsigned char *p = (unsigned char *)a;
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (p + len < m + len + huge)
        munmap(p + len, (size_t)(m + len + huge - (p + len)));
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* advice only: no huge pages is fine */
#endif
    return p;
}

void nc_big_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < NC_BIGMEM_MAP)
        free(p);
    else
        munmap(p, mapped_len(bytes));
}
