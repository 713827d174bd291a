/*
 * bigmem.c - large allocations offered huge pages (bigmem.h).
 */
#include "util/bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

/* The mapped length of a block of bytes (0 on overflow). */
static size_t mapped_len(size_t bytes)
{
    size_t len = (bytes + NC_BIGMEM_HUGE - 1) / NC_BIGMEM_HUGE * NC_BIGMEM_HUGE;
    return len < bytes ? 0 : len;
}

void *nc_big_alloc(size_t bytes)
{
    if (bytes < NC_BIGMEM_HUGE)
        return malloc(bytes ? bytes : 1);
    size_t len = mapped_len(bytes);
    if (len == 0 || len + NC_BIGMEM_HUGE < len)
        return NULL;
    /* map one huge page more, then cut the mapping to an aligned block */
    unsigned char *m = mmap(NULL, len + NC_BIGMEM_HUGE, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)m + NC_BIGMEM_HUGE - 1) & ~(uintptr_t)(NC_BIGMEM_HUGE - 1);
    unsigned char *p = (unsigned char *)a;
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (p + len < m + len + NC_BIGMEM_HUGE)
        munmap(p + len, (size_t)(m + len + NC_BIGMEM_HUGE - (p + len)));
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* advice only: no huge pages is fine */
#endif
    return p;
}

void nc_big_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < NC_BIGMEM_HUGE)
        free(p);
    else
        munmap(p, mapped_len(bytes));
}
