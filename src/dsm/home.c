/*
 * Homes: the node a page lives at. A page's home is its manager under every
 * protocol (sc's manager, which owns it first; lrc's manager, which keeps it
 * current) and the node its shipped calls run at. By default the pages are
 * dealt round robin (page p: node p % nodes); locus_dsm_alloc_at places a
 * block's pages at one node, on every node alike (the allocation is
 * collective), so every node agrees on every page's home.
 */
#include <stdio.h>

#include "internal.h"

/* By page: 1 + its home, or 0 for the default (a table: zero until set). */
static uint8_t *homes;

int dsm_home_init(void)
{
	homes = dsm_table_new(dsm.npages, 1);
	return homes ? 0 : -1;
}

void dsm_home_fini(void)
{
	dsm_table_free(homes, dsm.npages, 1);
	homes = NULL;
}

int dsm_home_of(size_t p)
{
	uint8_t h = homes[p];
	return h ? h - 1 : (int)(p % (size_t)dsm.nodes);
}

void dsm_home_place(size_t first, size_t count, int home)
{
	for (size_t p = first; p < first + count; p++)
		homes[p] = home < 0 ? 0 : (uint8_t)(home + 1);
}

int locus_dsm_home(const void *addr)
{
	const char *a = addr;
	if (dsm_phase != DSM_RUNNING || !dsm.app || a < dsm.app || a >= dsm.app + dsm.size)
		return -1;
	return dsm_home_of((size_t)(a - dsm.app) / dsm.page_size);
}
