/*
 * lrc's settings (LOCUS_DSM_GC_BYTES, LOCUS_DSM_LRC_PRIVATE) and its
 * statistics' rows: what the protocol table (proto_lrc.c) hands the runtime
 * for them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "lrc.h"

struct lrc_settings lrc_set = {.gc_bytes = 32ull << 20, .private_pages = 1};

#define LRC_STAT_ROW(id, f, json, label, kind)                                                     \
	{json, label, offsetof(locus_dsm_stats, f), DSM_STAT_##kind},
const struct dsm_stat lrc_stats[LRC_NSTATS] = {LRC_STATS(LRC_STAT_ROW)};

int lrc_config(void)
{
	uint64_t gc_bytes = 32ull << 20, private_pages = 1;
	if (dsm_env_u64("LOCUS_DSM_GC_BYTES", &gc_bytes, 1) != 0 ||
	    dsm_env_u64("LOCUS_DSM_LRC_PRIVATE", &private_pages, 0) != 0)
		return -1;
	if (private_pages > 1) {
		fprintf(stderr,
			"locus-dsm: LOCUS_DSM_LRC_PRIVATE=%s: expected 1 (a page only one node "
			"uses goes without twins, diffs and notices) or 0 (every page is "
			"shared)\n",
			getenv("LOCUS_DSM_LRC_PRIVATE"));
		return -1;
	}
	lrc_set.gc_bytes = gc_bytes;
	lrc_set.private_pages = (int)private_pages;
	return 0;
}
