/*
 * Homes: the node a page lives at. A page's home is its manager under every
 * protocol (sc's manager, which owns it first; lrc's manager, which keeps it
 * current) and the node its shipped calls run at. The lower half of the
 * region is for collective allocations, on every node alike (the allocation
 * is collective). A block's pages are cut in one run per node, node 0's
 * first (LOCUS_DSM_HOME_BLOCKS, locus_dsm_alloc's default: the part of an
 * array a loop split in blocks gives each node, whose misses and asks then
 * stay on the node), dealt round robin (LOCUS_DSM_HOME_SPREAD, and a block of
 * fewer pages than nodes: page p at node p % nodes), or placed at one node
 * (locus_dsm_alloc_at). The upper half is the shared heap, one partition per
 * node, homed there (malloc.c). So every node agrees on every page's home
 * without a message.
 */
#include <stdio.h>

#include "internal.h"

/* By page: 1 + its home, or 0 for the default (a table: zero until set). */
static uint8_t *homes;

/* The shared heap (malloc.c): pages from heap_first up, one partition of
   part_pages per node, homed there. Below it, collective allocations. */
static size_t heap_first, part_pages;

int dsm_home_init(void)
{
	homes = dsm_table_new(dsm.npages, 1);
	heap_first = dsm.npages / 2;
	part_pages = (dsm.npages - heap_first) / (size_t)dsm.nodes;
	return homes ? 0 : -1;
}

size_t dsm_heap_first(void)
{
	return heap_first;
}

void dsm_heap_partition(int node, uintptr_t *lo, uintptr_t *hi)
{
	size_t first = heap_first + (size_t)node * part_pages;
	*lo = (uintptr_t)(dsm.app + first * dsm.page_size);
	*hi = *lo + part_pages * dsm.page_size;
}

int dsm_heap_owner(const void *addr)
{
	const char *a = addr;
	if (!dsm.app || a < dsm.app + heap_first * dsm.page_size || a >= dsm.app + dsm.size)
		return -1;
	size_t k = ((size_t)(a - dsm.app) / dsm.page_size - heap_first) / part_pages;
	return k < (size_t)dsm.nodes ? (int)k : -1;
}

void dsm_home_fini(void)
{
	dsm_table_free(homes, dsm.npages, 1);
	homes = NULL;
}

int dsm_home_of(size_t p)
{
	uint8_t h = homes[p];
	if (h)
		return h - 1;
	if (p >= heap_first && part_pages && p < heap_first + part_pages * (size_t)dsm.nodes)
		return (int)((p - heap_first) / part_pages);
	return (int)(p % (size_t)dsm.nodes);
}

size_t dsm_walk_end(size_t p)
{
	if (p >= heap_first)
		return dsm.npages;
	return __atomic_load_n(&dsm.alloc_next, __ATOMIC_ACQUIRE) / dsm.page_size;
}

size_t dsm_walk_start(size_t p)
{
	return p >= heap_first ? heap_first : 0;
}

/* home < 0: the default (round robin). */
static void home_place(size_t first, size_t count, int home)
{
	for (size_t p = first; p < first + count; p++)
		homes[p] = home < 0 ? 0 : (uint8_t)(home + 1);
}

void dsm_home_deal(size_t first, size_t count, int home)
{
	size_t nodes = (size_t)dsm.nodes;
	if (home != LOCUS_DSM_HOME_BLOCKS || count < nodes) {
		home_place(first, count, home == LOCUS_DSM_HOME_BLOCKS ? -1 : home);
		return;
	}
	for (size_t k = 0; k < nodes; k++) {
		size_t lo = count * k / nodes, hi = count * (k + 1) / nodes;
		home_place(first + lo, hi - lo, (int)k);
	}
}

uint32_t dsm_addr_lock(const void *addr)
{
	addr = dsm_canon(addr);
	long g = dsm_fork_mode ? dsm_globals_offset(addr) : -1;
	if (g >= 0) /* after the region's words */
		return 0x80000000u | (uint32_t)((dsm.size / 8 + (uint64_t)g / 8) & 0x7fffffffu);
	uint64_t words = (uint64_t)((const char *)addr - dsm.app) / 8;
	return 0x80000000u | (uint32_t)(words & 0x7fffffffu);
}

int locus_dsm_home(const void *addr)
{
	const char *a = dsm_canon(addr);
	if (dsm_phase != DSM_RUNNING || !dsm.app)
		return -1;
	/* A fork-style run's globals that are not shared (copied at a spawn): node 0's. */
	if (a < dsm.app || a >= dsm.app + dsm.size)
		return dsm_fork_mode && dsm_globals_offset(a) >= 0 ? 0 : -1;
	return dsm_home_of((size_t)(a - dsm.app) / dsm.page_size);
}
