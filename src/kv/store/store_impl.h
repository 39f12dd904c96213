/*
 * The store's parts, for the files that make it up (not for its users):
 * store.c (open, close, configuration, clock), items.c (the operations),
 * crawler.c, automove.c, dump.c and the stats_*.c files. Each section's
 * state is its own module's: the slabs section runs on `slabs`, the alloc
 * section on `lru`, the hash sections on `assoc`, the stats section on
 * `counts`.
 */
#ifndef LOCUS_KV_STORE_IMPL_H
#define LOCUS_KV_STORE_IMPL_H

#include "kv/store/assoc.h"
#include "kv/store/automove.h"
#include "kv/store/clock.h"
#include "kv/store/lru.h"
#include "kv/store/restart.h"
#include "kv/store/section.h"
#include "kv/store/slabs.h"
#include "kv/store/stats_prefix.h"
#include "kv/store/store.h"

struct kv_store {
	struct kv_store_config cfg;
	size_t chunk_max;	     /* slab_chunk_max in use */
	char spec[KV_SECTIONS][160]; /* what each section's executors run */
	struct kv_clock clock;
	kv_sectime *times; /* --section-stats, else NULL */
	struct kv_slabs *slabs;
	struct kv_sec slabs_sec;
	struct kv_lru *lru;
	struct kv_sec alloc_sec;
	struct kv_assoc assoc;
	/* The totals every worker adds into after each event: away from what lookups read
	   (the table's description above), which each flush would otherwise take from them. */
	_Alignas(LOCUS_CACHELINE) struct kv_counts counts;
	_Alignas(LOCUS_CACHELINE) struct kv_sec stats_sec;
	struct kv_automove *automove;
	struct kv_crawler *crawler;
	struct kv_maintainer *maintainer;
	struct kv_restart *restart; /* -e: the memory file (restart.c), else NULL */
	kv_evict_hook evict_hook;
	void *evict_ctx;
	kv_fetch_hook fetch_hook;
	void *fetch_ctx;
	/* stats detail (stats_prefix.c): the table, its section, whether on (atomic), the delimiter
	 */
	struct kv_prefixes *prefixes;
	struct kv_sec prefix_sec;
	int detail_on;
	char delimiter;
};

struct kv_crawler *kv_crawler_new(uint32_t sleep_us, uint32_t tocrawl);
void kv_crawler_delete(kv_store *st);
struct kv_maintainer *kv_maintainer_new(void);
void kv_maintainer_delete(kv_store *st);

/*
 * Drop one reference to each item of a list the hash section unlinked
 * (linked through hnext), after taking them off their LRU lists.
 */
void kv_items_drop_unlinked(kv_store *st, struct kv_item *list);
/* The bytes an item takes in its chunks ("stats" bytes): a chunked item's header and chunks. */
uint64_t kv_item_bytes(const kv_store *st, struct kv_item *it);
/*
 * An item the LRU gave up (off its list, the list's reference the caller's): unlinked from
 * the hash table if it is still there (evicted: in any case, counted as an eviction; else
 * only if it is still expired or flushed, counted as reclaimed, and back to its LRU segment
 * if not), and the references dropped. 1 if it was unlinked.
 */
int kv_items_drop_pulled(kv_store *st, struct kv_counts *cnt, struct kv_item *v, int evicted);

#endif
