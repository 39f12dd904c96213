/*
 * lrc's settings (LOCUS_DSM_GC_BYTES, LOCUS_DSM_LRC_PRIVATE,
 * LOCUS_DSM_LRC_PUSH, LOCUS_DSM_LRC_MOVE, LOCUS_DSM_LRC_BLOCKS) and its
 * statistics' rows: what the protocol table (proto_lrc.c) hands the runtime
 * for them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lrc.h"

struct lrc_settings lrc_set = {
	.gc_bytes = 32ull << 20, .private_pages = -1, .push = 1, .move = 1, .write_blocks = 1};

#define LRC_STAT_ROW(id, f, json, label, kind)                                                     \
	{json, label, offsetof(locus_dsm_stats, f), DSM_STAT_##kind},
const struct dsm_stat lrc_stats[LRC_NSTATS] = {LRC_STATS(LRC_STAT_ROW)};

/* A switch: 0 or 1 (unset: *v is left as it is). */
static int env_switch(const char *name, uint64_t *v, const char *on, const char *off)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return 0;
	if (strcmp(s, "0") && strcmp(s, "1")) {
		fprintf(stderr, "locus-dsm: %s=%s: expected 1 (%s) or 0 (%s)\n", name, s, on, off);
		return -1;
	}
	*v = s[0] == '1';
	return 0;
}

int lrc_config(void)
{
	uint64_t gc_bytes = 32ull << 20, private_pages = 2 /* unset */, push = 1, move = 1,
		 blocks = 1;
	if (dsm_env_u64("LOCUS_DSM_GC_BYTES", &gc_bytes, 1) != 0 ||
	    env_switch("LOCUS_DSM_LRC_PRIVATE", &private_pages,
		       "a page only one node uses goes without twins, diffs and notices",
		       "every page is shared") != 0 ||
	    env_switch("LOCUS_DSM_LRC_PUSH", &push,
		       "a writer sends its diffs at a barrier to the nodes that read them",
		       "diffs are fetched at a fault only") != 0 ||
	    env_switch("LOCUS_DSM_LRC_MOVE", &move,
		       "a private page another node asks for moves to it the first time",
		       "it becomes shared") != 0 ||
	    env_switch("LOCUS_DSM_LRC_BLOCKS", &blocks,
		       "a write down a column makes the rows between its pages writable too",
		       "the column's pages only") != 0)
		return -1;
	lrc_set.gc_bytes = gc_bytes;
	lrc_set.private_pages = private_pages > 1 ? -1 : (int)private_pages;
	lrc_set.push = (int)push;
	lrc_set.move = (int)move;
	lrc_set.write_blocks = (int)blocks;
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
