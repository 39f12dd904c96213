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
 *
 * Chunked items (memcached's ITEM_CHUNKED). An item larger than slab_chunk_max has its
 * value, with its "\r\n", in chunks: the item itself (the header) holds the key and then,
 * 8-byte aligned, a struct kv_chunks: the bytes of value each chunk holds, and a pointer to
 * each chunk. A chunk is a slab chunk whose own 56-byte header says only that it is one
 * (KV_IT_CHUNK) and its class, its value bytes following (kv_chunk_data). The header's
 * `cls` is the class of slab_chunk_max, whose LRU lists it is on (as memcached's), and
 * kv_chunks.hcls the class its own chunk is of. The chunk pointers change only when the
 * page mover moves a chunk, in the item's hash section, while nobody else holds the item
 * (automove.c); the alloc section reads them (atomically) to find the items a moved page
 * holds chunks of.
 */
#ifndef LOCUS_KV_ITEM_H
#define LOCUS_KV_ITEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/atomic.h"

/* state: atomic bits */
#define KV_IT_HASH    1	 /* linked in the hash table */
#define KV_IT_LRU     2	 /* linked in its class's LRU */
#define KV_IT_FETCHED 4	 /* read since it was stored */
#define KV_IT_ACTIVE  8	 /* read again since: the segmented LRU keeps it (lru.h) */
#define KV_IT_CHUNKED 16 /* its value is in chunks (below); set when made, then read-only */
#define KV_IT_CHUNK   32 /* not an item: a chunk of a chunked item's value */
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

/* A chunked item's table of chunks (item.h's top). */
struct kv_chunks {
	uint32_t size; /* value bytes each chunk holds (the last: the rest) */
	uint16_t n;    /* chunks */
	uint8_t hcls;  /* the header's own slab class */
	uint8_t pad;
	struct kv_item *p[]; /* the chunks, in order */
};

static inline int kv_item_chunked(const struct kv_item *it)
{
	return kv_item_has(it, KV_IT_CHUNKED);
}

static inline size_t kv_chunks_offset(size_t nkey)
{
	return (nkey + 7) & ~(size_t)7;
}

static inline struct kv_chunks *kv_item_chunks(struct kv_item *it)
{
	return (struct kv_chunks *)(it->data + kv_chunks_offset(it->nkey));
}

/* The bytes a chunked item's header takes with n chunks. */
static inline size_t kv_chunked_header(size_t nkey, size_t n)
{
	return sizeof(struct kv_item) + kv_chunks_offset(nkey) + sizeof(struct kv_chunks) +
	       n * sizeof(struct kv_item *);
}

static inline char *kv_chunk_data(struct kv_item *chunk)
{
	return chunk->data;
}

/*
 * The value (with its "\r\n") from byte off: a pointer to it and, in *len, how many bytes
 * follow there in one piece (the rest of the value, or of the chunk off is in).
 */
static inline char *kv_item_span(struct kv_item *it, size_t off, size_t *len)
{
	size_t total = (size_t)it->nbytes + 2;
	if (!kv_item_chunked(it)) {
		*len = total - off;
		return kv_item_value(it) + off;
	}
	struct kv_chunks *ch = kv_item_chunks(it);
	size_t i = off / ch->size, in = off % ch->size;
	size_t end = (i + 1) * (size_t)ch->size;
	*len = (end < total ? end : total) - off;
	return kv_chunk_data(ch->p[i]) + in;
}

/* n bytes of the value (with its "\r\n") from byte off, copied out, or in. */
static inline void kv_item_read(struct kv_item *it, size_t off, void *dst, size_t n)
{
	char *d = dst;
	while (n) {
		size_t len;
		const char *p = kv_item_span(it, off, &len);
		if (len > n)
			len = n;
		memcpy(d, p, len);
		d += len;
		off += len;
		n -= len;
	}
}

static inline void kv_item_write(struct kv_item *it, size_t off, const void *src, size_t n)
{
	const char *s = src;
	while (n) {
		size_t len;
		char *p = kv_item_span(it, off, &len);
		if (len > n)
			len = n;
		memcpy(p, s, len);
		s += len;
		off += len;
		n -= len;
	}
}

/* The bytes an item with this key and value takes in its chunk. */
static inline size_t kv_item_total(size_t nkey, size_t nbytes)
{
	return sizeof(struct kv_item) + nkey + nbytes + 2;
}

#endif
