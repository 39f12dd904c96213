/*
 * locus-kv's stats section: the global counters that workers add their own
 * counts into (see stats_counts.h).
 *
 * In builds with stm this file is compiled with -fgnu-tm -DLOCUS_TM, so under
 * --sync stats=stm these functions run as real transactions (their loads and
 * stores instrumented by libitm under the method chosen, ml_wt or serialirr)
 * rather than serial-irrevocably: seed 003's stats_lock-as-transactions.
 */
#include "kv/store/stats_counts.h"

#include <stddef.h>
#include <string.h>

/* clang-format off */
#define COUNT_FIELDS(X)                                                                            \
	X(cmd_get) X(get_hits) X(get_misses) X(cmd_set) X(total_items) X(bytes_read)               \
	X(bytes_written) X(curr_items) X(bytes) X(evictions) X(cmd_touch) X(cmd_meta) X(cmd_flush) \
	X(get_expired) X(get_flushed) X(delete_hits) X(delete_misses) X(incr_hits)                 \
	X(incr_misses) X(decr_hits) X(decr_misses) X(cas_hits) X(cas_misses) X(cas_badval)         \
	X(touch_hits) X(touch_misses) X(store_too_large) X(store_no_memory) X(reclaimed)           \
	X(expired_unfetched) X(evicted_unfetched) X(oom) X(crawler_reclaimed)                      \
	X(crawler_items_checked) X(direct_reclaims) X(total_connections) X(rejected_connections)   \
	X(curr_connections) X(conn_yields) X(idle_kicks) X(slab_reassign_rescues)                  \
	X(slab_reassign_evictions_nomem) X(slab_reassign_inline_reclaim)                           \
	X(slab_reassign_busy_items) X(slab_reassign_chunk_rescues) X(lru_crawler_starts)
/* clang-format on */

/* Every counter of struct kv_counts is listed above (they are all 8 bytes). */
#define ONE(f) +1
enum { COUNTED = 0 COUNT_FIELDS(ONE) };
#undef ONE
_Static_assert(COUNTED * sizeof(uint64_t) == offsetof(struct kv_counts, cls_touched),
	       "a counter of struct kv_counts is missing from COUNT_FIELDS");

LOCUS_TM_CALLABLE uint64_t kv_counts_add_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_counts *g = state;
	const struct kv_counts *l = (const struct kv_counts *)(uintptr_t)a;
	/* Only what moved: a line of the totals that no counter of it changed stays unwritten,
	   and shared, where every worker's flush would otherwise take it over. */
#define ADD(f)                                                                                     \
	if (l->f)                                                                                  \
		g->f += l->f;
	COUNT_FIELDS(ADD)
#undef ADD
	for (uint64_t m = l->cls_touched; m; m &= m - 1) {
		unsigned cls = (unsigned)__builtin_ctzll(m);
		for (unsigned k = 0; k < KV_CLASS_COUNTS; k++)
			if (l->cls[cls][k])
				g->cls[cls][k] += l->cls[cls][k];
	}
	return 0;
}

LOCUS_TM_CALLABLE uint64_t kv_counts_read_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	memcpy((void *)(uintptr_t)a, state, sizeof(struct kv_counts));
	return 0;
}

/* Zero the counters that are totals since a reset; keep the gauges. */
LOCUS_TM_CALLABLE uint64_t kv_counts_reset_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_counts *g = state;
	struct kv_counts keep = {.curr_items = g->curr_items,
				 .bytes = g->bytes,
				 .curr_connections = g->curr_connections};
	*g = keep;
	return 0;
}
