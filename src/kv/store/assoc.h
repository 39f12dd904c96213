/*
 * locus-kv's hash table: the hash sections (memcached's assoc.c and item
 * locks).
 *
 * The table is cut into stripes by the low bits of a key's hash, and each
 * stripe has its own executor and its own power-of-two array of bucket chains
 * (linked through the items' hnext), indexed by the hash's next bits; a stripe's
 * sections own its chains and the items linked in them. The table starts at
 * 2^hashpower buckets in all (memcached's default 2^16, -o hashpower) and
 * doubles, as memcached's does, once it holds more than 1.5 items per bucket:
 * kv_assoc_grow_step, on the main thread, doubles one stripe at a time inside
 * that stripe's section, so a stripe is never seen half grown and the others
 * go on meanwhile.
 */
#ifndef LOCUS_KV_ASSOC_H
#define LOCUS_KV_ASSOC_H

#include <stddef.h>
#include <stdint.h>

#include "common/atomic.h"
#include "kv/store/item.h"
#include "kv/store/section.h"
#include "kv/store/stats_sizes.h"

struct kv_assoc_stripe {
	struct kv_item **b; /* 2^power buckets */
	unsigned power;
};

struct kv_assoc {
	struct kv_assoc_stripe *tables; /* one per stripe, each its stripe's section's */
	unsigned stripe_bits;		/* log2(nstripes) */
	unsigned hashpower;		/* atomic: the size it has or is growing to, log2 */
	uint64_t nbuckets;		/* atomic: buckets in all */
	int grow;			/* double when full (-o no_hashexpand: 0) */
	unsigned grown;			/* the main thread's: stripes at hashpower (growing) */
	int expanding;			/* atomic: a doubling is under way */
	struct kv_sec *stripes; /* executors: the caller opens them with the table as state */
	unsigned nstripes;
	struct kv_sizes sizes; /* "stats sizes": linking and unlinking count */
};

/* 2^hashpower buckets in all (at least one per stripe), nstripes stripes. 0, or -1 out of
   memory. */
int kv_assoc_init(struct kv_assoc *a, unsigned hashpower, unsigned nstripes, int grow);
void kv_assoc_destroy(struct kv_assoc *a);

uint64_t kv_hash(const char *key, size_t n);

/* The hash of an item's key (items do not keep it: item.h). */
static inline uint64_t kv_item_hash(struct kv_item *it)
{
	return kv_hash(kv_item_key(it), it->nkey);
}

static inline struct kv_sec *kv_assoc_stripe(struct kv_assoc *a, uint64_t hv)
{
	return &a->stripes[hv & (a->nstripes - 1)];
}

/*
 * Main thread: given the items the cache holds, start doubling the table if they are more
 * than 1.5 per bucket, and double at most `budget` items' worth of stripes of a doubling
 * under way. Returns 1 while a doubling is under way (memcached's hash_is_expanding).
 */
int kv_assoc_grow_step(struct kv_assoc *a, uint64_t items, uint64_t budget);

/*
 * Outside the section, before taking it: ask for the cache line of hv's bucket, so that
 * the miss on it overlaps the section's entry. Only a hint: the stripe may be growing (the
 * array and its size are read atomically, and a stale one is only a wasted prefetch).
 */
static inline void kv_assoc_prefetch(struct kv_assoc *a, uint64_t hv)
{
	struct kv_assoc_stripe *t = &a->tables[hv & (a->nstripes - 1)];
	struct kv_item **b = ld_relaxed(&t->b);
	unsigned power = ld_relaxed(&t->power);
	__builtin_prefetch(&b[(hv >> a->stripe_bits) & (((uint64_t)1 << power) - 1)]);
}

/* In the stripe's section, from here on. */

/* The slot holding the item with this key, or the empty slot ending its chain. */
struct kv_item **kv_assoc_find(struct kv_assoc *a, uint64_t hv, const char *key, size_t nkey);
/* The slot holding this very item (whose key hashes to hv), or NULL if it is not linked. */
struct kv_item **kv_assoc_find_item(struct kv_assoc *a, const struct kv_item *it, uint64_t hv);
/* Link it (its key hashes to hv) at the head of its chain; the table takes a reference. */
void kv_assoc_link(struct kv_assoc *a, struct kv_item *it, uint64_t hv);
/* Unlink *pp; its reference goes onto the *dropped list (linked through hnext). */
void kv_assoc_unlink_at(struct kv_assoc *a, struct kv_item **pp, struct kv_item **dropped);
/* A stripe's buckets, for walks over it (the crawler, dumps): the array and its length. */
static inline struct kv_item **kv_assoc_buckets(struct kv_assoc *a, unsigned stripe, uint64_t *n)
{
	*n = (uint64_t)1 << a->tables[stripe].power;
	return a->tables[stripe].b;
}

#endif
