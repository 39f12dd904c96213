/*
 * The store's parts, for the files that make it up (not for its users):
 * store.c (open, close, configuration, clock), items.c (the operations),
 * crawler.c, automove.c and stats.c. Each section's state is its own
 * module's: the slabs section runs on `slabs`, the alloc section on `lru`,
 * the hash sections on `assoc`, the stats section on `counts`.
 */
#ifndef LOCUS_KV_STORE_IMPL_H
#define LOCUS_KV_STORE_IMPL_H

#include "kv/assoc.h"
#include "kv/automove.h"
#include "kv/clock.h"
#include "kv/lru.h"
#include "kv/section.h"
#include "kv/slabs.h"
#include "kv/store.h"

struct kv_store {
	struct kv_store_config cfg;
	char spec[KV_SECTIONS][160]; /* what each section's executors run */
	struct kv_clock clock;
	kv_sectime *times; /* --section-stats, else NULL */
	struct kv_slabs *slabs;
	struct kv_sec slabs_sec;
	struct kv_lru *lru;
	struct kv_sec alloc_sec;
	struct kv_assoc assoc;
	struct kv_counts counts;
	struct kv_sec stats_sec;
	struct kv_automove *automove;
};

/*
 * Drop one reference to each item of a list the hash section unlinked
 * (linked through hnext), after taking them off their LRU lists.
 */
void kv_items_drop_unlinked(kv_store *st, struct kv_item *list);

#endif
