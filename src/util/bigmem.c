/*
 * bigmem.c - large allocations offered huge pages (bigmem.h).
 */
#include "util/bigmem.h"

#include <stdlib.h>
#include <sys/mman.h>

void *nc_big_alloc(size_t bytes)
{
    if (bytes < NC_BIGMEM_HUGE)
        return malloc(bytes ? bytes : 1);
    size_t len = (bytes + NC_BIGMEM_HUGE - 1) / NC_BIGMEM_HUGE * NC_BIGMEM_HUGE;
    void *p = NULL;
    if (len < bytes || posix_memalign(&p, NC_BIGMEM_HUGE, len) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE); /* advice only: no huge pages is fine */
#endif
    return p;
}
