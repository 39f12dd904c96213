/*
 * locus-kv's LRU lists: the alloc section (memcached's LRU locks; the
 * section seed 000 moved to an asynchronous server).
 *
 * memcached's segmented LRU: each slab class has four lists, most recently
 * used at the head: HOT (new items), WARM (items fetched again while in COLD
 * or HOT), COLD (what is evicted from) and TEMP (items stored with a TTL of at
 * most temporary_ttl, when that is on: never evicted, only reclaimed once
 * expired). The LRU maintainer (maintainer.c) keeps the segments in shape with
 * kv_lru_juggle: HOT down to hot_lru_pct of the class's bytes and items idle
 * less than hot_max_factor times COLD's tail age, WARM likewise with
 * warm_lru_pct and warm_max_factor, the rest to COLD; an item fetched a second
 * time is ACTIVE (item.h), and an ACTIVE item at a tail goes to WARM instead.
 * In flat mode ("lru mode flat", or without the maintainer) every item is in
 * COLD, one list per class as memcached's compat mode.
 *
 * The section chooses which item leaves when a class needs room: an expired or
 * flushed item near a tail first (reclaimed), else the least recently used one
 * of COLD nobody else holds (evicted). Whatever leaves a list hands the list's
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

/* The segments, as an item's `lru` field says which it is on. */
enum kv_lru_seg { KV_LRU_HOT, KV_LRU_WARM, KV_LRU_COLD, KV_LRU_TEMP, KV_LRU_SEGS };

struct kv_lru;

/* NULL if out of memory. The clock tells expired items from live ones. */
struct kv_lru *kv_lru_new(const struct kv_clock *clock, const struct kv_lru_tune *tune);
void kv_lru_delete(struct kv_lru *l);

/* The settings in use (a copy), and changing them (any thread). */
void kv_lru_tune_get(const struct kv_lru *l, struct kv_lru_tune *out);
void kv_lru_tune_set(struct kv_lru *l, const struct kv_lru_tune *t);
/* Segmented (1) or flat (0), without a section: a hint for the hash sections. */
int kv_lru_segmented(const struct kv_lru *l);

/* A new item: at the head of HOT (TEMP for a short TTL, COLD when flat), if it is in the hash
   table and not in a list yet (the list takes its own reference). */
void kv_lru_link(struct kv_sec *sec, struct kv_item *it);
/* The same, to the head of the segment its `lru` field names (a copy made by the page mover). */
void kv_lru_link_kept(struct kv_sec *sec, struct kv_item *it);
/*
 * memcached's do_item_update, for an item in a list: segmented, an ACTIVE item in COLD
 * moves to WARM (moves_to_warm) and its access time is now; flat, the item moves to the
 * head of its list.
 */
void kv_lru_bump(struct kv_sec *sec, struct kv_item *it);
/* kv_lru_bump of n items in one section (a worker's batch, store.h's struct kv_bumps). */
void kv_lru_bump_many(struct kv_sec *sec, struct kv_item *const *it, unsigned n);

enum kv_pull { KV_PULL_NONE, KV_PULL_EXPIRED, KV_PULL_EVICTED };
/*
 * An item of class cls to make room with, off its list, the list's
 * reference now the caller's: an expired or flushed one among the last
 * few of any segment that nobody else holds (KV_PULL_EXPIRED), else, if evict,
 * the least recently used one of COLD (HOT's, then WARM's tails moved to COLD when
 * COLD has none; TEMP's items are never evicted) (KV_PULL_EVICTED). NULL
 * (KV_PULL_NONE) if there is none; with evict that is counted as the
 * class's outofmemory. Items in [skip_lo, skip_hi), the page of the class
 * being moved, are passed over: freeing them would feed the move, not the class.
 */
struct kv_item *kv_lru_pull(struct kv_sec *sec, unsigned cls, int evict, const char *skip_lo,
			    const char *skip_hi, enum kv_pull *kind);

/*
 * One round of the LRU maintainer's juggle of class cls (memcached's lru_maintainer_juggle):
 * with `temp`, TEMP's tail looked at for expired items only; else HOT's and WARM's tails
 * trimmed to their shares and ages (to COLD, or ACTIVE ones to WARM) and COLD's ACTIVE tail
 * items sent to WARM. Expired or flushed items met are taken off their lists into out[]
 * (at most KV_JUGGLE_OUT; the lists' references the caller's, to unlink them from the hash
 * table). Returns what it moved or took: 0 means the class is in shape.
 */
#define KV_JUGGLE_OUT 16
unsigned kv_lru_juggle(struct kv_sec *sec, unsigned cls, int temp, struct kv_item **out,
		       unsigned *nout);

/* Take each item of the list (linked through hnext) off its LRU list; each one's lru_ref
   says whether the list's reference is now the caller's. */
void kv_lru_unlink_list(struct kv_sec *sec, struct kv_item *list);

/* Take every item of class cls whose address is in [lo, hi) off its list, at most max of
   them, into out[]; the list's references are the caller's. Returns how many. chunked: the
   chunked items (item.h) whose header or a chunk is in [lo, hi) instead (otherwise they are
   passed over). */
unsigned kv_lru_take_range(struct kv_sec *sec, unsigned cls, const char *lo, const char *hi,
			   struct kv_item **out, unsigned max, int chunked);

/* "stats cachedump" lines of class cls's COLD list, as memcached's (limit 0: all, up to
   KV_CACHEDUMP_MAX bytes). 0, or -1 out of memory. */
#define KV_CACHEDUMP_MAX (2u << 20)
int kv_lru_cachedump(struct kv_sec *sec, unsigned cls, unsigned limit, struct kv_buf *out);

/*
 * Per class figures, for stats and the automover. The automover needs
 * counts that only grow; "stats reset" zeroes what stats items shows, as
 * memcached's does, by keeping the counts of the moment (kv_lru_stats_reset)
 * and reporting since them (since_reset).
 */
struct kv_lru_class_report {
	uint64_t items, seg[KV_LRU_SEGS]; /* items in all, and in each segment */
	uint64_t mem_requested; /* the items' sizes as memcached counts them (kv_mc_item_size) */
	uint64_t evicted, evicted_unfetched, evicted_nonzero, evicted_active, outofmemory;
	uint64_t lrutail_reflocked; /* tail items passed over because a thread held them */
	uint64_t moves_to_cold, moves_to_warm, moves_within_lru;
	uint32_t evicted_time;	    /* seconds since the last evicted item was used */
	uint32_t age;		    /* seconds since COLD's tail item was used; 0 if empty */
	uint32_t age_hot, age_warm; /* the same of HOT's and WARM's tails */
};
struct kv_lru_report {
	struct kv_lru_class_report cls[KV_CLASSES_MAX + 1];
};
void kv_lru_report(struct kv_sec *sec, struct kv_lru_report *out, int since_reset);
void kv_lru_stats_reset(struct kv_sec *sec);

/*
 * A memory file across a restart (restart.c). Saving: each class's segments as their most
 * recent item and their length (the items' next pointers, in the file, are the rest).
 * Restarting, before the alloc section runs: kv_lru_restore_tail puts a linked item at the
 * tail of the segment its `lru` field names (the list takes a reference), so the lists are
 * rebuilt in order from their heads.
 */
struct kv_lru_heads {
	struct kv_item *head[KV_CLASSES_MAX + 1][KV_LRU_SEGS];
	uint64_t n[KV_CLASSES_MAX + 1][KV_LRU_SEGS];
};
void kv_lru_heads(struct kv_sec *sec, struct kv_lru_heads *out);
void kv_lru_restore_tail(struct kv_lru *l, struct kv_item *it);

#endif
