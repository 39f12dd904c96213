/*
 * locus-kv's item: the header every stored key/value carries in its slab
 * chunk, then the key, the value and "\r\n".
 *
 * The header is 56 bytes: memcached 1.6's 48-byte item plus its 8-byte cas,
 * so that an item never needs more room than memcached gives it and the slab
 * classes, the largest storable value and the sizes "me" and "stats sizes"
 * report are memcached's (kv_mc_item_size in kv/protocol/proto.h is the count classes
 * are chosen by). The key's hash is not kept: it is computed again when an
 * item is unlinked by address (kv_item_hash).
 *
 * Which section writes which field (store.h explains the sections):
 *   hnext          the hash chain: the item's stripe's hash section; while
 *                  the chunk is free, the slabs section's free list
 *   prev, next     the LRU list, and lru_ref and lru: the alloc section
 *                  (lru stored atomically: the hash section reads it to count
 *                  hits per segment)
 *   cas, exptime, atime, flags, value, mark
 *                  the item's stripe's hash section, once the item is linked;
 *                  before that, the one thread that made it. cas, exptime
 *                  and atime are stored atomically (kv_item_set_*), as the
 *                  alloc section reads them to find expired items
 *                  (clock.h, kv_clock_item_dead); the alloc section also
 *                  sets atime when it moves a fetched item (lru.c, as
 *                  memcached's do_item_update), so a hash section reads
 *                  atime atomically too
 *   refs, state    atomics (common/atomic.h), read outside sections; of the
 *                  state, ACTIVE is set by the hash section (a second fetch)
 *                  and cleared by the alloc section (when the LRU moves it)
 *   nkey, nbytes, cls
 *                  set when made, then read-only
 */
#ifndef LOCUS_KV_ITEM_H
#define LOCUS_KV_ITEM_H

#include <stddef.h>
#include <stdint.h>

#include "common/atomic.h"

/* state: atomic bits */
#define KV_IT_HASH    1 /* linked in the hash table */
#define KV_IT_LRU     2 /* linked in its class's LRU */
#define KV_IT_FETCHED 4 /* read since it was stored */
#define KV_IT_ACTIVE  8 /* read again since: the segmented LRU keeps it (lru.h) */
/* mark: the hash section's bits */
#define KV_IT_WON   1 /* meta: a client holds the recache token */
#define KV_IT_STALE 2 /* meta: invalidated, served as stale */
#define KV_IT_B64   4 /* meta: stored with a base64 key ("me" shows it so) */

struct kv_item {
	struct kv_item *hnext;
	struct kv_item *prev, *next;
	uint64_t cas;
	uint32_t exptime; /* server time it expires at; 0 = never */
	uint32_t atime;	  /* server time of the last access */
	uint32_t nbytes;  /* value length without "\r\n" */
	uint32_t flags;	  /* client flags */
	uint16_t refs;	  /* holders: the hash table, the LRU, threads between sections */
	uint8_t nkey;
	uint8_t cls;	 /* slab class */
	uint8_t state;	 /* KV_IT_HASH, KV_IT_LRU, KV_IT_FETCHED, KV_IT_ACTIVE */
	uint8_t mark;	 /* KV_IT_WON, KV_IT_STALE, KV_IT_B64 */
	uint8_t lru_ref; /* kv_lru_unlink_list: the LRU's reference went to the caller */
	uint8_t lru;	 /* the LRU segment it is on (lru.h): atomic, the alloc section's */
	char data[];	 /* key (nkey), value (nbytes), "\r\n" */
};

_Static_assert(sizeof(struct kv_item) == 56, "memcached's item header and cas");

static inline char *kv_item_key(struct kv_item *it)
{
	return it->data;
}

static inline char *kv_item_value(struct kv_item *it)
{
	return it->data + it->nkey;
}

static inline int kv_item_has(const struct kv_item *it, uint8_t bit)
{
	return (ld_relaxed(&it->state) & bit) != 0;
}

static inline void kv_item_set(struct kv_item *it, uint8_t bit)
{
	for_relaxed(&it->state, bit);
}

static inline void kv_item_clear(struct kv_item *it, uint8_t bit)
{
	fand_relaxed(&it->state, (uint8_t)~bit);
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
