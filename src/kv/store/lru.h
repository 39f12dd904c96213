/*
 * locus-kv's LRU lists: the alloc section (memcached's LRU locks; the
 * section seed 000 moved to an asynchronous server).
 *
 * One list per slab class, most recently used at the head. The section
 * chooses which item leaves when a class needs room: an expired or flushed
 * item near the tail first (reclaimed), else the least recently used one
 * nobody else holds (evicted). Whatever leaves the list hands the list's
 * reference to the caller, who unlinks it from the hash table in its own
 * section and drops the references (store.h: sections never nest).
 */
#ifndef LOCUS_KV_LRU_H
#define LOCUS_KV_LRU_H

#include <stdint.h>

#include "kv/store/buf.h"
#include "kv/store/clock.h"
#include "kv/store/item.h"
#include "kv/store/section.h"
#include "kv/store/slabs.h"

struct kv_lru;

/* NULL if out of memory. The clock tells expired items from live ones. */
struct kv_lru *kv_lru_new(const struct kv_clock *clock);
void kv_lru_delete(struct kv_lru *l);

/* Put it at the head of its class's list if it is in the hash table and not in a list yet
   (the list takes its own reference). */
void kv_lru_link(struct kv_sec *sec, struct kv_item *it);
/* Move it to the head if it is in a list. */
void kv_lru_bump(struct kv_sec *sec, struct kv_item *it);

enum kv_pull { KV_PULL_NONE, KV_PULL_EXPIRED, KV_PULL_EVICTED };
/*
 * An item of class cls to make room with, off its list, the list's
 * reference now the caller's: an expired or flushed one among the last
 * few that nobody else holds (KV_PULL_EXPIRED), else, if evict, the least
 * recently used one (KV_PULL_EVICTED). NULL (KV_PULL_NONE) if there is
 * none; with evict that is counted as the class's outofmemory. Items in
 * [skip_lo, skip_hi), the page of the class being moved, are passed over:
 * freeing them would feed the move, not the class.
 */
struct kv_item *kv_lru_pull(struct kv_sec *sec, unsigned cls, int evict, const char *skip_lo,
			    const char *skip_hi, enum kv_pull *kind);

/* Take each item of the list (linked through hnext) off its LRU list; each one's lru_ref
   says whether the list's reference is now the caller's. */
void kv_lru_unlink_list(struct kv_sec *sec, struct kv_item *list);

/* Take every item of class cls whose address is in [lo, hi) off its list, at most max of
   them, into out[]; the list's references are the caller's. Returns how many. */
unsigned kv_lru_take_range(struct kv_sec *sec, unsigned cls, const char *lo, const char *hi,
			   struct kv_item **out, unsigned max);

/* "stats cachedump" lines of class cls (limit 0: all, up to KV_CACHEDUMP_MAX bytes). 0, or -1
   out of memory. */
#define KV_CACHEDUMP_MAX (2u << 20)
int kv_lru_cachedump(struct kv_sec *sec, unsigned cls, unsigned limit, struct kv_buf *out);

/*
 * Per class figures, for stats items and the automover. The automover needs
 * counts that only grow; "stats reset" zeroes what stats items shows, as
 * memcached's does, by keeping the counts of the moment (kv_lru_stats_reset)
 * and reporting since them (since_reset).
 */
struct kv_lru_class_report {
	uint64_t items;
	uint64_t mem_requested; /* the items' sizes as memcached counts them (kv_mc_item_size) */
	uint64_t evicted, evicted_unfetched, evicted_nonzero, outofmemory;
	uint64_t lrutail_reflocked; /* tail items passed over because a thread held them */
	uint32_t evicted_time;	    /* seconds since the last evicted item was used */
	uint32_t age;		    /* seconds since the tail item was used; 0 if empty */
};
struct kv_lru_report {
	struct kv_lru_class_report cls[KV_CLASSES_MAX + 1];
};
void kv_lru_report(struct kv_sec *sec, struct kv_lru_report *out, int since_reset);
void kv_lru_stats_reset(struct kv_sec *sec);

/*
 * A memory file across a restart (restart.c). Saving: each class's list as its most recent
 * item and its length (the items' next pointers, in the file, are the rest of it).
 * Restarting, before the alloc section runs: kv_lru_restore_tail puts a linked item at the
 * tail of its class's list (the list takes a reference), so the lists are rebuilt in order
 * from their heads.
 */
struct kv_lru_heads {
	struct kv_item *head[KV_CLASSES_MAX + 1];
	uint64_t n[KV_CLASSES_MAX + 1];
};
void kv_lru_heads(struct kv_sec *sec, struct kv_lru_heads *out);
void kv_lru_restore_tail(struct kv_lru *l, struct kv_item *it);

#endif
