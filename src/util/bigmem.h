/*
 * bigmem.h - allocations of several megabytes that a pass fills at once
 * (the bins of every shard, the per-channel sums, value tables, figure
 * rasters).
 *
 * Blocks from NC_BIGMEM_MAP (2 MB) on are mapped on their own and unmapped
 * when freed, so the memory goes back at once: from the heap, a layer's
 * blocks stayed with the process (glibc raises its mmap threshold to the
 * largest block freed), and a 32-layer run that way peaked at 385 MB
 * against 157 MB.
 *
 * A fresh process gets such memory as 4 KB pages, each zeroed by the
 * kernel on its first touch: 16 MB of bins cost 4096 page faults. On this
 * project's benchmark machine the bins pass of a 4096 x 4096 layer took
 * 0.040-0.054 s in a fresh process against 0.027 s with its memory reused
 * (normcmp fit and build/normcmp-bench, 2026-11-25). So blocks from NC_BIGMEM_HUGE (8 MB) on are also aligned to 2 MB
 * and marked MADV_HUGEPAGE: 8 faults where the kernel has transparent huge
 * pages (enabled or "madvise"), ordinary pages elsewhere. Not below: with
 * huge pages the whole rounded-up block is resident, so a 2.3 MB figure
 * raster would take 4 MB (a review measured a 32-layer figure run at
 * 511 MB that way, against 386 MB).
 */
#ifndef NC_BIGMEM_H
#define NC_BIGMEM_H

#include <stddef.h>

#define NC_BIGMEM_MAP ((size_t)2 << 20)  /* from here on: mapped on its own */
#define NC_BIGMEM_HUGE ((size_t)8 << 20) /* from here on: also huge pages */

/* bytes of uninitialised memory, or NULL when out of memory. */
void *nc_big_alloc(size_t bytes);

/* Releases a block of nc_big_alloc(bytes) (the same bytes). Accepts NULL. */
void nc_big_free(void *p, size_t bytes);

#endif
