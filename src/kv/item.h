/*
 * locus-kv's item: the header every stored key/value carries in its slab
 * chunk, then the key, the value and "\r\n".
 *
 * Which section writes which field (store.h explains the sections):
 *   hnext          the hash chain: the item's stripe's hash section; while
 *                  the chunk is free, the slabs section's free list
 *   prev, next     the LRU list: the alloc section
 *   cas, exptime, atime, flags, value, won, stale
 *                  the item's stripe's hash section, once the item is linked;
 *                  before that, the one thread that made it. cas, exptime
 *                  and atime are stored atomically (kv_item_set_*), as the
 *                  alloc section reads them to find expired items
 *                  (clock.h, kv_clock_item_dead)
 *   refs, in_hash, in_lru, fetched
 *                  atomics (common/atomic.h): read outside sections
 *   nkey, nbytes, hv, cls
 *                  set when made, then read-only
 */
#ifndef LOCUS_KV_ITEM_H
#define LOCUS_KV_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "common/atomic.h"

struct kv_item {
	struct kv_item *hnext;
	struct kv_item *prev, *next;
	uint64_t cas;
	uint32_t exptime; /* server time it expires at; 0 = never */
	uint32_t atime;	  /* server time of the last access */
	uint32_t flags;	  /* client flags */
	uint32_t nbytes;  /* value length without "\r\n" */
	uint64_t hv;	  /* hash of the key */
	uint32_t refs;	  /* holders: the hash table, the LRU, threads between sections */
	uint8_t nkey;
	uint8_t cls;	 /* slab class */
	uint8_t in_hash; /* linked in the hash table */
	uint8_t in_lru;	 /* linked in its class's LRU */
	uint8_t fetched; /* read since it was stored */
	uint8_t won;	 /* meta: a client holds the recache token */
	uint8_t stale;	 /* meta: invalidated, served as stale */
	uint8_t lru_ref; /* kv_lru_unlink_list: the LRU's reference went to the caller */
	char data[];	 /* key (nkey), value (nbytes), "\r\n" */
};

static inline char *kv_item_key(struct kv_item *it)
{
	return it->data;
}

static inline char *kv_item_value(struct kv_item *it)
{
	return it->data + it->nkey;
}

static inline void kv_item_set_exptime(struct kv_item *it, uint32_t t)
{
	st_relaxed(&it->exptime, t);
}

static inline void kv_item_set_atime(struct kv_item *it, uint32_t t)
{
	st_relaxed(&it->atime, t);
}

static inline void kv_item_set_cas(struct kv_item *it, uint64_t cas)
{
	st_relaxed(&it->cas, cas);
}

/* The bytes an item with this key and value takes in its chunk. */
static inline size_t kv_item_total(size_t nkey, size_t nbytes)
{
	return sizeof(struct kv_item) + nkey + nbytes + 2;
}

#endif
