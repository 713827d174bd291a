/*
 * bigmem.h - allocations of several megabytes that a pass fills at once
 * (the bins of every shard, the per-channel sums, value tables, figure
 * rasters).
 *
 * A fresh process gets such memory as 4 KB pages, each zeroed by the
 * kernel on its first touch: 16 MB of bins cost 4096 page faults, about 15
 * ms on this project's benchmark machine, more than the pass that fills
 * them. Aligned to 2 MB and marked MADV_HUGEPAGE, the same block takes 8
 * faults where the kernel has transparent huge pages (enabled or
 * "madvise"); elsewhere it is ordinary memory. Free with free().
 */
#ifndef NC_BIGMEM_H
#define NC_BIGMEM_H

#include <stddef.h>

/* Blocks from this size on are aligned to it and offered huge pages. */
#define NC_BIGMEM_HUGE ((size_t)2 << 20)

/* bytes of uninitialised memory (NULL when out of memory), aligned to
 * NC_BIGMEM_HUGE and advised MADV_HUGEPAGE when bytes >= NC_BIGMEM_HUGE;
 * a plain malloc below. */
void *nc_big_alloc(size_t bytes);

#endif
