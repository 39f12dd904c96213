/*
 * lrc's settings (LOCUS_DSM_GC_BYTES) and its statistics' rows: what the
 * protocol table (proto_lrc.c) hands the runtime for them.
 */
#include <stddef.h>

#include "lrc.h"

struct lrc_settings lrc_set = {.gc_bytes = 32ull << 20};

#define LRC_STAT_ROW(id, f, json, label, kind)                                                     \
	{json, label, offsetof(locus_dsm_stats, f), DSM_STAT_##kind},
const struct dsm_stat lrc_stats[LRC_NSTATS] = {LRC_STATS(LRC_STAT_ROW)};

int lrc_config(void)
{
	uint64_t gc_bytes = 32ull << 20;
	if (dsm_env_u64("LOCUS_DSM_GC_BYTES", &gc_bytes, 1) != 0)
		return -1;
	lrc_set.gc_bytes = gc_bytes;
	return 0;
}
