/*
 * locus-kv's hash table: the hash sections (memcached's assoc.c and item
 * locks).
 *
 * A power-of-two table of bucket chains (linked through the items' hnext),
 * cut into stripes: bucket b belongs to stripe b mod stripes, and each
 * stripe has its own executor, whose sections own that stripe's chains and
 * the items linked in them. The table's size is fixed at start (one bucket
 * per 256 bytes of -m, at least 2^16): it does not grow, so a stripe's
 * buckets never move.
 */
#ifndef LOCUS_KV_ASSOC_H
#define LOCUS_KV_ASSOC_H

#include <stddef.h>
#include <stdint.h>

#include "kv/store/item.h"
#include "kv/store/section.h"
#include "kv/store/stats_sizes.h"

struct kv_assoc {
	struct kv_item **buckets;
	uint64_t nbuckets;
	unsigned hashpower;
	struct kv_sec *stripes; /* executors: the caller opens them with the table as state */
	unsigned nstripes;
	struct kv_sizes sizes; /* "stats sizes": linking and unlinking count */
};

/* Buckets for a memory limit (at least 2^hashpower), and room for nstripes stripes. 0, or -1
   out of memory. */
int kv_assoc_init(struct kv_assoc *a, size_t mem_limit, unsigned hashpower, unsigned nstripes);
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

/* In the stripe's section, from here on. */

/* The slot holding the item with this key, or the empty slot ending its chain. */
struct kv_item **kv_assoc_find(struct kv_assoc *a, uint64_t hv, const char *key, size_t nkey);
/* The slot holding this very item (whose key hashes to hv), or NULL if it is not linked. */
struct kv_item **kv_assoc_find_item(struct kv_assoc *a, const struct kv_item *it, uint64_t hv);
/* Link it (its key hashes to hv) at the head of its chain; the table takes a reference. */
void kv_assoc_link(struct kv_assoc *a, struct kv_item *it, uint64_t hv);
/* Unlink *pp; its reference goes onto the *dropped list (linked through hnext). */
void kv_assoc_unlink_at(struct kv_assoc *a, struct kv_item **pp, struct kv_item **dropped);

#endif
