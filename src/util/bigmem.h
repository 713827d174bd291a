/*
 * bigmem.h - allocations of several megabytes that a pass fills at once
 * (the bins of every shard, the per-channel sums, value tables, figure
 * rasters).
 *
 * A fresh process gets such memory as 4 KB pages, each zeroed by the
 * kernel on its first touch: 16 MB of bins cost 4096 page faults, about 15
 * ms on this project's benchmark machine, more than the pass that fills
 * them. So blocks from 2 MB on are mapped on their own, aligned to 2 MB and
 * marked MADV_HUGEPAGE: 8 faults where the kernel has transparent huge
 * pages (enabled or "madvise"), ordinary pages elsewhere; and they are
 * unmapped when freed, so that memory goes back at once (from the heap, a
 * layer's blocks would stay with the process: a 32-layer run peaked at 385
 * MB that way, against 135 MB).
 */
#ifndef NC_BIGMEM_H
#define NC_BIGMEM_H

#include <stddef.h>

/* Blocks from this size on are mapped on their own and offered huge pages. */
#define NC_BIGMEM_HUGE ((size_t)2 << 20)

/* bytes of uninitialised memory, or NULL when out of memory. */
void *nc_big_alloc(size_t bytes);

/* Releases a block of nc_big_alloc(bytes) (the same bytes). Accepts NULL. */
void nc_big_free(void *p, size_t bytes);

#endif
