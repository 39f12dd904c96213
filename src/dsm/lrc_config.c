/*
 * lrc's settings (LOCUS_DSM_GC_BYTES, LOCUS_DSM_LRC_PRIVATE) and its
 * statistics' rows: what the protocol table (proto_lrc.c) hands the runtime
 * for them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "lrc.h"

struct lrc_settings lrc_set = {.gc_bytes = 32ull << 20, .private_pages = -1};

#define LRC_STAT_ROW(id, f, json, label, kind)                                                     \
	{json, label, offsetof(locus_dsm_stats, f), DSM_STAT_##kind},
const struct dsm_stat lrc_stats[LRC_NSTATS] = {LRC_STATS(LRC_STAT_ROW)};

int lrc_config(void)
{
	uint64_t gc_bytes = 32ull << 20, private_pages = 2; /* 2: unset */
	if (dsm_env_u64("LOCUS_DSM_GC_BYTES", &gc_bytes, 1) != 0 ||
	    dsm_env_u64("LOCUS_DSM_LRC_PRIVATE", &private_pages, 0) != 0)
		return -1;
	if (private_pages > 1 && getenv("LOCUS_DSM_LRC_PRIVATE") &&
	    *getenv("LOCUS_DSM_LRC_PRIVATE")) {
		fprintf(stderr,
			"locus-dsm: LOCUS_DSM_LRC_PRIVATE=%s: expected 1 (a page only one node "
			"uses goes without twins, diffs and notices) or 0 (every page is "
			"shared)\n",
			getenv("LOCUS_DSM_LRC_PRIVATE"));
		return -1;
	}
	lrc_set.gc_bytes = gc_bytes;
	lrc_set.private_pages = private_pages > 1 ? -1 : (int)private_pages;
	return 0;
}

/*
 * Unset, private pages are on where a page's message takes less than 10 us
 * (no emulated delay, LOCUS_DSM_NETWORK=rdma), off from `tcp` up. Taking a
 * page back costs a node's first access a hop more than fetching diffs would
 * (lrc_class.c), and with slow messages that outweighs the twins and diffs
 * it saves: radix on 2 nodes takes 4.1x sc's time with them at the seed's
 * 500 us, 1.6x without, and 2.1x against 1.1x at `tcp`'s 20 us; at no delay
 * Jacobi with first touch goes from 3.3x sc to 0.8x with them
 * (docs/results/dsm-speed.md).
 */
#define PRIVATE_BELOW_NS 10000
void lrc_config_resolve(void)
{
	if (lrc_set.private_pages >= 0)
		return;
	uint64_t page_ns = dsm.cfg.delay_ns + dsm.cfg.delay_ns_per_byte * dsm.page_size;
	lrc_set.private_pages = page_ns < PRIVATE_BELOW_NS;
}
