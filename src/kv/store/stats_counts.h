/*
 * locus-kv's stats section: the functions the store runs on its stats
 * executor, whose state is the global struct kv_counts. a = the caller's
 * struct kv_counts (add: the counts to add in; read: where to copy the
 * totals); reset takes no argument. They touch nothing but the two structs,
 * so they have transactional clones in builds with stm (stats_counts.c).
 */
#ifndef LOCUS_KV_STATS_COUNTS_H
#define LOCUS_KV_STATS_COUNTS_H

#include <stdint.h>

#include "kv/store/store.h"
#include "locus/fn.h"

/* g += *a, field by field. */
LOCUS_TM_CALLABLE uint64_t kv_counts_add_fn(void *state, uint64_t a, uint64_t b, uint64_t c);
/* *a = g. */
LOCUS_TM_CALLABLE uint64_t kv_counts_read_fn(void *state, uint64_t a, uint64_t b, uint64_t c);
/* Zero the totals since a reset; keep the gauges (curr_items, bytes, curr_connections). */
LOCUS_TM_CALLABLE uint64_t kv_counts_reset_fn(void *state, uint64_t a, uint64_t b, uint64_t c);

#endif
