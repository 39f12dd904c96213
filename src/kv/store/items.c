/*
 * locus-kv's item operations (store.h): each one a short sequence of
 * sections that never nest — typically one hash section for the key, then
 * the alloc section for what it left to do in the LRU, then dropping
 * references (which may free chunks through the slabs section).
 *
 * Every hash-section request starts with a struct hash_req: the key, the
 * counts to add to, and what the section leaves for after it (items it
 * unlinked, an item to bump). Functions named *_sec run inside the key's
 * stripe's hash section, on the table (struct kv_assoc).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/store/store_impl.h"

#define UPDATE_INTERVAL 60   /* seconds between LRU bumps of one item (flat), as memcached */
#define ALLOC_TRIES	32   /* rounds of reclaim or eviction before an allocation gives up */
#define RETRY_LIMIT	1000 /* measure-again rounds of append and incr before giving up */

struct hash_req {
	kv_store *st;
	struct kv_counts *cnt;
	const char *key;
	size_t nkey;
	uint64_t hv;
	struct kv_item *dropped; /* unlinked items whose hash reference is the caller's */
	struct kv_item *bump;	 /* an item (referenced) for the caller to bump in the LRU */
	enum kv_get_status miss; /* find_live: why it found nothing live */
	/* The lookup of key to report (kv_fetch_hook), unless an earlier section of the same
	   command reported it (quiet). */
	uint8_t looked, quiet;
	enum kv_get_status look;
	unsigned look_cls;
	uint32_t look_nbytes;
};

static void req_init(struct hash_req *h, kv_store *st, struct kv_counts *cnt, const char *key,
		     size_t nkey)
{
	memset(h, 0, sizeof(*h));
	h->st = st;
	h->cnt = cnt;
	h->key = key;
	h->nkey = nkey;
	h->hv = key ? kv_hash(key, nkey) : 0;
}

/* Run fn in the stripe of h->hv on req (whose first member is h). */
static uint64_t hash_run(struct hash_req *h, locus_fn fn, void *req)
{
	kv_assoc_prefetch(&h->st->assoc, h->hv);
	return kv_sec_run(kv_assoc_stripe(&h->st->assoc, h->hv), fn, req);
}

/* A section's lookup of h's key: what it found (it, or why not), to report after it. */
static void looked_up(struct hash_req *h, const struct kv_item *it, enum kv_get_status status)
{
	h->looked = 1;
	h->look = status;
	h->look_cls = it ? it->cls : 0;
	h->look_nbytes = it ? it->nbytes : 0;
}

/* ---------- bumps, batched per thread (store.h) ---------- */

static __thread struct kv_bumps *my_bumps;

void kv_bumps_attach(struct kv_bumps *b)
{
	my_bumps = b;
}

void kv_bumps_drain(kv_store *st)
{
	struct kv_bumps *b = my_bumps;
	if (!b || !b->n)
		return;
	kv_lru_bump_many(&st->alloc_sec, b->it, b->n);
	for (unsigned i = 0; i < b->n; i++)
		kv_item_release(st, b->it[i]);
	b->n = 0;
}

/* it (its reference the caller's, now the batch's) moved in the LRU, now or with others. */
static void bump(kv_store *st, struct kv_item *it)
{
	struct kv_bumps *b = my_bumps;
	if (!b || !kv_lru_segmented(st->lru)) {
		kv_lru_bump(&st->alloc_sec, it);
		kv_item_release(st, it);
		return;
	}
	b->it[b->n++] = it;
	if (b->n == KV_BUMPS)
		kv_bumps_drain(st);
	else if (b->n == 1 && b->first)
		b->first(b->ctx);
}

/* After a hash section: its lookup reported, the bump it asked for, and the references of
   what it unlinked. */
static void req_finish(struct hash_req *h)
{
	kv_store *st = h->st;
	if (h->looked && !h->quiet && st->fetch_hook)
		st->fetch_hook(st->fetch_ctx, h->key, h->nkey, h->look,
			       h->look_cls ? kv_slabs_shown_class(st->slabs, h->look_cls) : 0,
			       h->look_nbytes);
	h->looked = 0;
	if (h->bump) {
		bump(st, h->bump);
		h->bump = NULL;
	}
	kv_items_drop_unlinked(h->st, h->dropped);
	h->dropped = NULL;
}

/* ---------- references ---------- */

/* The last reference to a chunked item gone: its chunks and its header, in one slabs section. */
static void free_chunked(kv_store *st, struct kv_item *it)
{
	struct kv_chunks *ch = kv_item_chunks(it);
	struct kv_item *next = NULL;
	for (unsigned i = ch->n; i-- > 0;) {
		if (!ch->p[i])
			continue; /* not taken yet (kv_item_new gave up) */
		ch->p[i]->hnext = next;
		next = ch->p[i];
	}
	it->hnext = next;
	it->cls = ch->hcls; /* the header's own chunk */
	kv_slabs_free_chain(&st->slabs_sec, it);
}

void kv_item_release(kv_store *st, struct kv_item *it)
{
	uint16_t held = fas_acqrel(&it->refs, 1);
	if (held == 1) {
		if (kv_item_chunked(it))
			free_chunked(st, it);
		else
			kv_slabs_free(&st->slabs_sec, it);
	} else if (held == 0) {
		/* A reference dropped twice: the chunk may already be someone else's. Stop here
		   rather than corrupt the cache. */
		fprintf(stderr, "locus-kv: item %.*s released more often than it was held\n",
			(int)it->nkey, it->data);
		abort();
	}
}

void kv_items_drop_unlinked(kv_store *st, struct kv_item *list)
{
	if (!list)
		return;
	kv_lru_unlink_list(&st->alloc_sec, list);
	while (list) {
		struct kv_item *next = list->hnext;
		if (list->lru_ref)
			kv_item_release(st, list);
		kv_item_release(st, list);
		list = next;
	}
}

/* ---------- helpers of the hash sections ---------- */

/* The cas a client sees: 0 for every item under -C, as memcached. */
static uint64_t shown_cas(const kv_store *st, const struct kv_item *it)
{
	return st->cfg.use_cas ? it->cas : 0;
}

static uint32_t now_of(const struct hash_req *h)
{
	return kv_clock_now(&h->st->clock);
}

uint64_t kv_item_bytes(const kv_store *st, struct kv_item *it)
{
	if (!kv_item_chunked(it))
		return kv_slabs_chunk_size(st->slabs, it->cls);
	struct kv_chunks *ch = kv_item_chunks(it);
	uint64_t b = kv_slabs_chunk_size(st->slabs, ch->hcls);
	for (unsigned i = 0; i < ch->n; i++)
		b += kv_slabs_chunk_size(st->slabs, ch->p[i]->cls);
	return b;
}

static void count_store(struct hash_req *h, struct kv_item *it, int sign)
{
	h->cnt->curr_items += sign;
	h->cnt->bytes += sign * (int64_t)kv_item_bytes(h->st, it);
}

/* A dead item found at *pp: unlink it and count it reclaimed. */
static void reap(struct hash_req *h, struct kv_item **pp, int flushed)
{
	struct kv_item *it = *pp;
	if (!flushed && !kv_item_has(it, KV_IT_FETCHED)) {
		h->cnt->expired_unfetched++;
		kv_count_class(h->cnt, it->cls, KV_CC_EXPIRED_UNFETCHED);
	}
	h->cnt->reclaimed++;
	kv_count_class(h->cnt, it->cls, KV_CC_RECLAIMED);
	count_store(h, it, -1);
	kv_assoc_unlink_at(&h->st->assoc, pp, &h->dropped);
}

/*
 * The live item with h's key, or NULL; a dead one met there is unlinked
 * (and, when count_get, counted as the get's expired or flushed miss).
 */
static struct kv_item *find_live(struct kv_assoc *a, struct hash_req *h, int count_get)
{
	struct kv_item **pp = kv_assoc_find(a, h->hv, h->key, h->nkey);
	struct kv_item *it = *pp;
	h->miss = KV_GET_NOT_FOUND;
	if (!it) {
		looked_up(h, NULL, h->miss);
		return NULL;
	}
	int flushed;
	if (kv_clock_item_dead(&h->st->clock, it, now_of(h), &flushed)) {
		h->miss = flushed ? KV_GET_FLUSHED : KV_GET_EXPIRED;
		looked_up(h, NULL, h->miss);
		if (count_get) {
			if (flushed)
				h->cnt->get_flushed++;
			else
				h->cnt->get_expired++;
		}
		reap(h, pp, flushed);
		return NULL;
	}
	looked_up(h, it, KV_GET_FOUND);
	return it;
}

/*
 * memcached's do_item_update (an incr in place, an add that finds the key): segmented, an
 * ACTIVE item in COLD is for the alloc section to move to WARM (the caller bumps it),
 * any other's access time is now; flat, at most once a minute the caller moves it to its
 * list's head (and the time with it).
 */
static void touch_item(struct hash_req *h, struct kv_item *it)
{
	uint32_t now = now_of(h);
	int ask = kv_lru_segmented(h->st->lru)
			  ? ld_relaxed(&it->lru) == KV_LRU_COLD && kv_item_has(it, KV_IT_ACTIVE)
			  : ld_relaxed(&it->atime) + UPDATE_INTERVAL < now;
	if (ask && !h->bump) {
		faa_relaxed(&it->refs, 1);
		h->bump = it;
	} else if (kv_lru_segmented(h->st->lru)) {
		kv_item_set_atime(it, now);
	}
}

/*
 * memcached's do_item_bump, for a fetch (get, gat, touch, mg without u): segmented, the
 * first fetch marks it FETCHED and the second ACTIVE (then its time is now, or, in COLD,
 * the caller bumps it to WARM); later ones change nothing. Flat: FETCHED, and
 * do_item_update.
 */
static void access_item(struct hash_req *h, struct kv_item *it)
{
	if (!kv_lru_segmented(h->st->lru)) {
		if (!kv_item_has(it, KV_IT_FETCHED))
			kv_item_set(it, KV_IT_FETCHED);
		touch_item(h, it);
		return;
	}
	if (kv_item_has(it, KV_IT_ACTIVE))
		return;
	if (!kv_item_has(it, KV_IT_FETCHED)) {
		kv_item_set(it, KV_IT_FETCHED);
		return;
	}
	kv_item_set(it, KV_IT_ACTIVE);
	if (ld_relaxed(&it->lru) != KV_LRU_COLD)
		kv_item_set_atime(it, now_of(h));
	else
		touch_item(h, it);
}

/* A hit, counted for its class and its segment (stats items' hits_to_*). */
static void count_hit(struct hash_req *h, struct kv_item *it)
{
	static const enum kv_class_count to[KV_LRU_SEGS] = {KV_CC_HITS_HOT, KV_CC_HITS_WARM,
							    KV_CC_HITS_COLD, KV_CC_HITS_TEMP};
	h->cnt->get_hits++;
	kv_count_class(h->cnt, it->cls, KV_CC_GET_HITS);
	uint8_t seg = ld_relaxed(&it->lru);
	if (seg < KV_LRU_SEGS)
		kv_count_class(h->cnt, it->cls, to[seg]);
}

/* ---------- allocation ---------- */

/*
 * An item taken off its LRU list (the list's reference is ours): unlink it
 * from the hash table if it is still there and, for a reclaim, still dead
 * (the LRU's look was a hint). 1 if unlinked; the table's reference then
 * goes onto h->dropped.
 */
struct unlink_req {
	struct hash_req h;
	struct kv_item *victim;
	int only_if_dead;
	int was_dead;
};

static uint64_t unlink_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct unlink_req *rq = KV_REQ(struct unlink_req, a);
	struct kv_item **pp = kv_assoc_find_item(as, rq->victim, rq->h.hv);
	if (!pp)
		return 0;
	int flushed;
	rq->was_dead = kv_clock_item_dead(&rq->h.st->clock, rq->victim, now_of(&rq->h), &flushed);
	if (rq->only_if_dead && !rq->was_dead)
		return 0;
	if (rq->was_dead) {
		reap(&rq->h, pp, flushed);
	} else {
		count_store(&rq->h, rq->victim, -1);
		kv_assoc_unlink_at(as, pp, &rq->h.dropped);
	}
	return 1;
}

/*
 * Make room in class cls with an item the LRU gave up (kv_lru_pull): unlink
 * it from the hash table, count it, drop its references (the last frees its
 * chunk; kv_items_drop_pulled). A reclaim the hash section finds alive after
 * all goes back to the LRU. 1 if a chunk may have been freed.
 */
int kv_items_drop_pulled(kv_store *st, struct kv_counts *cnt, struct kv_item *v, int evicted)
{
	struct unlink_req rq;
	req_init(&rq.h, st, cnt, NULL, 0);
	rq.h.hv = kv_item_hash(v);
	rq.victim = v;
	rq.only_if_dead = !evicted;
	rq.was_dead = 0;
	int unlinked = (int)hash_run(&rq.h, unlink_sec, &rq);
	if (!evicted && !unlinked)
		kv_lru_link_kept(&st->alloc_sec,
				 v); /* alive (touched meanwhile): back, if linked */
	if (unlinked && evicted && !rq.was_dead) {
		if (st->evict_hook)
			st->evict_hook(st->evict_ctx, v, kv_clock_now(&st->clock));
		cnt->evictions++;
		if (!kv_item_has(v, KV_IT_FETCHED))
			cnt->evicted_unfetched++;
	}
	req_finish(&rq.h);
	kv_item_release(st, v); /* the LRU's reference */
	return unlinked;
}

static int make_room(kv_store *st, struct kv_counts *cnt, unsigned cls, int evict)
{
	enum kv_pull kind;
	const char *lo, *hi;
	kv_slabs_moving_page(st->slabs, cls, &lo, &hi);
	struct kv_item *v = kv_lru_pull(&st->alloc_sec, cls, evict, lo, hi, &kind);
	if (!v)
		return 0;
	if (kv_items_drop_pulled(st, cnt, v, kind == KV_PULL_EVICTED)) {
		cnt->direct_reclaims++;
		kv_count_class(cnt, cls, KV_CC_DIRECT_RECLAIMS);
	}
	return 1;
}

/*
 * A chunk of class cls, in memcached's order: a free one; else an expired
 * item at the tail of the class's LRU, before any new memory; else a new
 * page within the limit; else the least recently used item, evicted.
 */
static struct kv_item *alloc_chunk(kv_store *st, struct kv_counts *cnt, unsigned cls)
{
	for (int tries = 0; tries < ALLOC_TRIES; tries++) {
		int full = 0;
		struct kv_item *it = kv_slabs_alloc(&st->slabs_sec, cls, 0, &full);
		if (it)
			return it;
		if (make_room(st, cnt, cls, 0))
			continue;
		it = kv_slabs_alloc(&st->slabs_sec, cls, 1, &full);
		if (it)
			return it;
		if (!full || !st->cfg.evict || !make_room(st, cnt, cls, 1))
			return NULL;
	}
	return NULL;
}

/*
 * The chunks of a chunked item whose header `it` is made (item.h): each of the class of
 * slab_chunk_max, but the last, from the smallest class that holds what is left when that has
 * a free chunk or can take a page within the limit, else of slab_chunk_max (memcached's
 * do_item_alloc_chunk, which also evicts in the smaller class). 0, or -1 when one could not be
 * had (those taken are freed with the header).
 */
static int alloc_chunks(kv_store *st, struct kv_counts *cnt, struct kv_item *it, unsigned ccls)
{
	struct kv_chunks *ch = kv_item_chunks(it);
	size_t total = (size_t)it->nbytes + 2;
	for (unsigned i = 0; i < ch->n; i++) {
		size_t left = total - (size_t)i * ch->size;
		unsigned cls = ccls;
		if (left < ch->size)
			cls = kv_slabs_class_for(st->slabs, sizeof(struct kv_item) + left);
		/* The last chunk from a smaller class only if it has room to spare: it evicts
		   nothing there, nor takes a small page past the limit, which the class's own
		   items need. */
		int full;
		struct kv_item *c =
			cls == ccls ? alloc_chunk(st, cnt, cls)
				    : kv_slabs_alloc(&st->slabs_sec, cls, KV_GROW_LIMIT, &full);
		if (!c && cls != ccls)
			c = alloc_chunk(st, cnt, cls = ccls);
		if (!c)
			return -1;
		memset(c, 0, sizeof(*c));
		c->cls = (uint8_t)cls;
		c->state = KV_IT_CHUNK;
		ch->p[i] = c;
	}
	return 0;
}

/*
 * An item above slab_chunk_max: a header of the class that holds its key and its table of
 * chunks, listed in the class of slab_chunk_max, and its chunks. NULL with *hcls 0 when the
 * table does not fit a chunk of slab_chunk_max (then the item takes one chunk of the class
 * of -I, as before chunks), else with *hcls its class when there was no memory.
 */
static struct kv_item *new_chunked(kv_store *st, struct kv_counts *cnt, size_t nkey,
				   uint32_t nbytes, unsigned *hcls)
{
	unsigned ccls = kv_slabs_class_for(st->slabs, st->chunk_max);
	size_t size = kv_slabs_chunk_size(st->slabs, ccls) - sizeof(struct kv_item);
	size_t n = ((size_t)nbytes + 2 + size - 1) / size;
	*hcls = 0;
	if (n > UINT16_MAX || kv_chunked_header(nkey, n) > st->chunk_max)
		return NULL;
	*hcls = kv_slabs_class_for(st->slabs, kv_chunked_header(nkey, n));
	struct kv_item *it = alloc_chunk(st, cnt, *hcls);
	/* A header class with nothing of its own to evict (only headers, listed with their
	   items): an item evicted from the class of slab_chunk_max gives back its header. */
	for (int tries = 0; !it && st->cfg.evict && tries < ALLOC_TRIES; tries++) {
		int full;
		if (!make_room(st, cnt, ccls, 1))
			break;
		it = kv_slabs_alloc(&st->slabs_sec, *hcls, 0, &full);
	}
	if (!it)
		return NULL;
	memset(it, 0, kv_chunked_header(nkey, n));
	st_relaxed(&it->refs, 1);
	it->cls = (uint8_t)ccls;
	it->nkey = (uint8_t)nkey;
	it->nbytes = nbytes;
	it->state = KV_IT_CHUNKED;
	struct kv_chunks *ch = kv_item_chunks(it);
	ch->size = (uint32_t)size;
	ch->n = (uint16_t)n;
	ch->hcls = (uint8_t)*hcls;
	if (alloc_chunks(st, cnt, it, ccls) != 0) {
		kv_item_release(st, it);
		return NULL;
	}
	return it;
}

struct kv_item *kv_item_new(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			    uint32_t flags, uint32_t exptime, uint32_t nbytes, enum kv_result *why)
{
	/* memcached's limit and class, by its count of the item's size (item.h). */
	uint64_t total = kv_mc_item_size(nkey, flags, nbytes);
	unsigned cls = total <= st->cfg.item_size_max ? kv_slabs_class_for(st->slabs, total) : 0;
	if (!cls) {
		cnt->store_too_large++;
		*why = KV_TOO_LARGE;
		return NULL;
	}
	struct kv_item *it = NULL;
	unsigned hcls = 0;
	if (total > st->chunk_max)
		it = new_chunked(st, cnt, nkey, nbytes, &hcls);
	if (!it && !hcls)
		it = alloc_chunk(st, cnt, cls);
	if (!it) {
		cnt->store_no_memory++;
		*why = KV_NO_MEMORY;
		return NULL;
	}
	if (!hcls) {
		memset(it, 0, sizeof(*it));
		st_relaxed(&it->refs, 1);
		it->cls = (uint8_t)cls;
	}
	it->nkey = (uint8_t)nkey;
	it->nbytes = nbytes;
	it->flags = flags;
	it->exptime = exptime;
	memcpy(it->data, key, nkey);
	return it;
}

/* After a store: link the new item into the LRU; bump and drop what the section left. */
static void after_store(kv_store *st, struct hash_req *h, struct kv_item *linked)
{
	if (linked)
		kv_lru_link(&st->alloc_sec, linked);
	req_finish(h);
}

/* ---------- store ---------- */

#define KV_RETRY_ ((enum kv_result)100) /* internal: measure again */

struct store_req {
	struct hash_req h;
	struct kv_item *item;
	enum kv_store_mode mode;
	uint64_t cas;		/* in: the client's (cas); out: the stored item's */
	uint32_t add;		/* append/prepend: bytes of new data at the start of item's value */
	uint32_t old_nbytes;	/* append/prepend: the old value's size, as measured */
	uint64_t old_cas;	/* append/prepend: the old item's cas, as measured */
	uint32_t stored_nbytes; /* append/prepend: the joined value's size */
	enum kv_result result;
};

/* n bytes of src's value from soff into dst's from doff (either may be chunked). */
static void copy_value(struct kv_item *dst, size_t doff, struct kv_item *src, size_t soff, size_t n)
{
	while (n) {
		size_t len;
		const char *p = kv_item_span(src, soff, &len);
		if (len > n)
			len = n;
		kv_item_write(dst, doff, p, len);
		doff += len;
		soff += len;
		n -= len;
	}
}

/* n bytes of the item's value from off onto out (which has room: kv_buf_reserve). */
static void buf_add_value(struct kv_buf *out, struct kv_item *it, size_t off, size_t n)
{
	kv_item_read(it, off, out->p + out->len, n);
	out->len += n;
}

/* The old value into the new item, whose new data the caller put in place (append/prepend). */
static void compose(struct kv_item *it, struct kv_item *old, enum kv_store_mode mode, uint32_t add)
{
	copy_value(it, mode == KV_APPEND ? 0 : add, old, 0, old->nbytes);
	kv_item_write(it, it->nbytes, "\r\n", 2);
	it->flags = old->flags;
	it->exptime = old->exptime;
}

static uint64_t store_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct store_req *rq = KV_REQ(struct store_req, a);
	struct hash_req *h = &rq->h;
	struct kv_item *it = rq->item;
	struct kv_item **pp = kv_assoc_find(as, h->hv, it->data, it->nkey);
	struct kv_item *old = *pp;
	int flushed;
	if (old && kv_clock_item_dead(&h->st->clock, old, now_of(h), &flushed)) {
		looked_up(h, NULL, flushed ? KV_GET_FLUSHED : KV_GET_EXPIRED);
		reap(h, pp, flushed);
		old = NULL;
		pp = kv_assoc_find(as, h->hv, it->data, it->nkey);
	} else {
		looked_up(h, old, old ? KV_GET_FOUND : KV_GET_NOT_FOUND);
	}
	switch (rq->mode) {
	case KV_ADD:
		if (old) {
			/* memcached refreshes the existing item's place in the LRU. */
			touch_item(h, old);
			rq->result = KV_NOT_STORED;
			return 0;
		}
		break;
	case KV_REPLACE:
	case KV_APPEND:
	case KV_PREPEND:
		if (!old) {
			rq->result = KV_NOT_STORED;
			return 0;
		}
		/* As memcached: append and prepend given a cas (binary, ms with C) need it to
		   match. */
		if (rq->mode != KV_REPLACE && rq->cas && h->st->cfg.use_cas &&
		    rq->cas != old->cas) {
			rq->result = KV_EXISTS;
			return 0;
		}
		break;
	case KV_CAS:
	case KV_CAS_STALE:
		if (!old) {
			rq->result = KV_NOT_FOUND;
			h->cnt->cas_misses++;
			return 0;
		}
		if (shown_cas(h->st, old) != rq->cas || rq->cas == 0) {
			if (rq->mode == KV_CAS_STALE && rq->cas < shown_cas(h->st, old)) {
				/*
				 * An older writer's value: stored as stale, as memcached does,
				 * keeping the item's exptime and its handed-out recache token,
				 * so the invalidation's window and its one winner still hold.
				 */
				it->mark = (uint8_t)((it->mark & ~KV_IT_WON) | KV_IT_STALE |
						     (old->mark & KV_IT_WON));
				kv_item_set_exptime(it, old->exptime);
				break;
			}
			rq->result = KV_EXISTS;
			h->cnt->cas_badval++;
			kv_count_class(h->cnt, old->cls, KV_CC_CAS_BADVAL);
			return 0;
		}
		h->cnt->cas_hits++;
		kv_count_class(h->cnt, old->cls, KV_CC_CAS_HITS);
		break;
	case KV_SET:
		break;
	}
	if (rq->mode == KV_APPEND || rq->mode == KV_PREPEND) {
		/* The caller sized `it` for the old value it measured; redo if it changed since. */
		if (old->cas != rq->old_cas || old->nbytes != rq->old_nbytes) {
			rq->result = KV_RETRY_;
			return 0;
		}
		compose(it, old, rq->mode, rq->add);
	}
	it->cas = kv_clock_next_cas(&h->st->clock);
	it->atime = now_of(h);
	if (old) {
		count_store(h, old, -1);
		kv_assoc_unlink_at(&h->st->assoc, pp, &h->dropped);
	}
	kv_assoc_link(as, it, h->hv);
	count_store(h, it, +1);
	h->cnt->total_items++;
	rq->cas = shown_cas(h->st, it);
	rq->result = KV_STORED;
	return 0;
}

struct peek_req {
	struct hash_req h;
	uint32_t nbytes, flags;
	uint64_t cas;
};

/* The size and cas of the live item with this key (append/prepend measure first). */
static uint64_t peek_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct peek_req *rq = KV_REQ(struct peek_req, a);
	struct kv_item *it = find_live(state, &rq->h, 0);
	if (!it)
		return 0;
	rq->nbytes = it->nbytes;
	rq->flags = it->flags;
	rq->cas = it->cas;
	return 1;
}

static int mode_append(const struct store_req *rq)
{
	return rq->mode == KV_APPEND;
}

/*
 * append/prepend: the new value is old + data, in an item of that size;
 * the store section composes it if the old item is still the one measured
 * (same cas), else we measure again. Consumes the data item's reference.
 */
static enum kv_result store_joined(kv_store *st, struct kv_counts *cnt, struct kv_item *data,
				   struct store_req *rq)
{
	for (int tries = 0; tries < RETRY_LIMIT; tries++) {
		struct peek_req peek;
		req_init(&peek.h, st, cnt, kv_item_key(data), data->nkey);
		peek.h.quiet = tries > 0; /* one lookup reported per command */
		int found = (int)hash_run(&peek.h, peek_sec, &peek);
		req_finish(&peek.h);
		if (!found) {
			kv_item_release(st, data);
			return KV_NOT_STORED;
		}
		/* As memcached: sized with the old item's flags; no room (too large included)
		   is NOT_STORED, and the old value stays. */
		uint64_t total = (uint64_t)peek.nbytes + data->nbytes;
		enum kv_result why;
		struct kv_item *nw = total > UINT32_MAX
					     ? NULL
					     : kv_item_new(st, cnt, kv_item_key(data), data->nkey,
							   peek.flags, 0, (uint32_t)total, &why);
		if (!nw) {
			kv_item_release(st, data);
			return KV_NOT_STORED;
		}
		copy_value(nw, mode_append(rq) ? peek.nbytes : 0, data, 0, data->nbytes);
		req_init(&rq->h, st, cnt, kv_item_key(nw), nw->nkey);
		rq->h.quiet = 1; /* the peek reported it */
		rq->item = nw;
		rq->add = data->nbytes;
		rq->old_cas = peek.cas;
		rq->old_nbytes = peek.nbytes;
		hash_run(&rq->h, store_sec, rq);
		if (rq->result != KV_RETRY_) {
			rq->stored_nbytes = nw->nbytes;
			kv_item_release(st, data);
			after_store(st, &rq->h, rq->result == KV_STORED ? nw : NULL);
			kv_item_release(st, nw);
			return rq->result;
		}
		req_finish(&rq->h);
		kv_item_release(st, nw);
	}
	kv_item_release(st, data);
	return KV_NOT_STORED;
}

enum kv_result kv_store_item(kv_store *st, struct kv_counts *cnt, struct kv_item *it,
			     enum kv_store_mode mode, uint64_t cas, uint64_t *cas_out)
{
	return kv_store_item_info(st, cnt, it, mode, cas, cas_out, NULL);
}

enum kv_result kv_store_item_info(kv_store *st, struct kv_counts *cnt, struct kv_item *it,
				  enum kv_store_mode mode, uint64_t cas, uint64_t *cas_out,
				  struct kv_store_info *info)
{
	if (info)
		*info = (struct kv_store_info){.cls = kv_slabs_shown_class(st->slabs, it->cls),
					       .nbytes = it->nbytes,
					       .exptime = it->exptime};
	cnt->cmd_set++;
	kv_count_class(cnt, it->cls, KV_CC_CMD_SET);
	struct store_req rq = {.mode = mode, .cas = cas};
	enum kv_result r;
	if (mode == KV_APPEND || mode == KV_PREPEND) {
		r = store_joined(st, cnt, it, &rq);
		if (info && r == KV_STORED)
			info->nbytes = rq.stored_nbytes;
	} else {
		req_init(&rq.h, st, cnt, kv_item_key(it), it->nkey);
		rq.item = it;
		hash_run(&rq.h, store_sec, &rq);
		after_store(st, &rq.h, rq.result == KV_STORED ? it : NULL);
		kv_item_release(st, it); /* the caller's; the hash table and LRU hold theirs */
		r = rq.result;
	}
	if (cas_out)
		*cas_out = rq.cas;
	return r;
}

/* ---------- get, touch, delete ---------- */

/* " <v>" in decimal at p; returns the bytes written (at most 21). */
static size_t put_u64(char *p, uint64_t v)
{
	char tmp[20];
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	p[0] = ' ';
	for (size_t i = 0; i < n; i++)
		p[1 + i] = tmp[n - 1 - i];
	return n + 1;
}

/*
 * Append "VALUE <key> <flags> <bytes>[ <cas>]\r\n", then, unless `held`, "<data>\r\n"
 * (inside the item's hash section).
 */
static int add_value(struct kv_buf *out, struct kv_item *it, int with_cas, uint64_t cas, int held)
{
	char hdr[72];
	size_t n = put_u64(hdr, it->flags);
	n += put_u64(hdr + n, it->nbytes);
	if (with_cas)
		n += put_u64(hdr + n, cas);
	hdr[n++] = '\r';
	hdr[n++] = '\n';
	size_t data = held ? 0 : (size_t)it->nbytes + 2;
	if (kv_buf_reserve(out, 6 + it->nkey + n + data) != 0)
		return -1;
	kv_buf_add(out, "VALUE ", 6);
	kv_buf_add(out, it->data, it->nkey);
	kv_buf_add(out, hdr, n);
	buf_add_value(out, it, 0, data);
	return 0;
}

struct get_req {
	struct hash_req h;
	int with_cas, touch;
	uint32_t exptime;
	struct kv_buf *out;
	int oom;
	unsigned cls;
	uint32_t nbytes;
	size_t hold_min;      /* kv_get_hold: values of this size and more are held, not copied */
	struct kv_item *held; /* the item held (a reference taken) */
};

/* The binary protocol's get: the item's flags and cas come back as well. */
struct value_req {
	struct get_req g;
	uint32_t flags;
	uint64_t cas;
};

/*
 * A get's item, counted as memcached counts a get, or a touch for a gat (not
 * a get), and accessed; NULL on a miss. Inlined into the text protocol's
 * section and the binary protocol's, which differ in what they copy out.
 */
static inline __attribute__((always_inline)) struct kv_item *get_find(void *state,
								      struct get_req *rq)
{
	struct hash_req *h = &rq->h;
	struct kv_item *it = find_live(state, h, 1);
	/* As memcached: gat and gats count as touches, not as gets. */
	if (!it) {
		if (rq->touch)
			h->cnt->touch_misses++;
		else
			h->cnt->get_misses++;
		return NULL;
	}
	if (rq->touch) {
		kv_item_set_exptime(it, rq->exptime);
		h->cnt->touch_hits++;
		kv_count_class(h->cnt, it->cls, KV_CC_TOUCH_HITS);
	} else {
		count_hit(h, it);
	}
	access_item(h, it);
	rq->cls = it->cls;
	rq->nbytes = it->nbytes;
	return it;
}

/* The text protocol's: "VALUE ..." appended to out. */
static uint64_t get_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct get_req *rq = KV_REQ(struct get_req, a);
	struct kv_item *it = get_find(state, rq);
	if (!it)
		return 0;
	int hold = rq->hold_min && (size_t)it->nbytes + 2 >= rq->hold_min;
	if (add_value(rq->out, it, rq->with_cas, shown_cas(rq->h.st, it), hold) != 0) {
		rq->oom = 1;
	} else if (hold) {
		faa_relaxed(&it->refs, 1);
		rq->held = it;
	}
	return 1;
}

/* The binary protocol's: the flags and cas noted, the value alone appended (out NULL: not). */
static uint64_t value_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct value_req *rq = KV_REQ(struct value_req, a);
	struct kv_item *it = get_find(state, &rq->g);
	if (!it)
		return 0;
	rq->flags = it->flags;
	rq->cas = shown_cas(rq->g.h.st, it);
	if (rq->g.out) {
		if (kv_buf_reserve(rq->g.out, it->nbytes) != 0)
			rq->g.oom = 1;
		else
			buf_add_value(rq->g.out, it, 0, it->nbytes);
	}
	return 1;
}

static inline __attribute__((always_inline)) int get_run(kv_store *st, struct kv_counts *cnt,
							 const char *key, size_t nkey,
							 struct get_req *rq, locus_fn fn,
							 struct kv_get_info *info)
{
	req_init(&rq->h, st, cnt, key, nkey);
	if (rq->touch)
		cnt->cmd_touch++;
	else
		cnt->cmd_get++;
	int hit = (int)hash_run(&rq->h, fn, rq);
	req_finish(&rq->h);
	if (info)
		*info = (struct kv_get_info){.status = hit ? KV_GET_FOUND : rq->h.miss,
					     .cls = hit ? kv_slabs_shown_class(st->slabs, rq->cls)
							: 0,
					     .nbytes = hit ? rq->nbytes : 0};
	return rq->oom ? -1 : hit;
}

int kv_get_info(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
		int touch, uint32_t exptime, struct kv_buf *out, struct kv_get_info *info)
{
	struct get_req rq = {.with_cas = with_cas, .touch = touch, .exptime = exptime, .out = out};
	return get_run(st, cnt, key, nkey, &rq, get_sec, info);
}

int kv_get_value(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int touch,
		 uint32_t exptime, struct kv_buf *value, struct kv_get_info *info, uint32_t *flags,
		 uint64_t *cas)
{
	struct value_req rq = {.g = {.touch = touch, .exptime = exptime, .out = value}};
	int hit = get_run(st, cnt, key, nkey, &rq.g, value_sec, info);
	*flags = rq.flags;
	*cas = rq.cas;
	return hit;
}

int kv_get_hold(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
		int touch, uint32_t exptime, struct kv_buf *out, size_t hold_min,
		struct kv_item **held)
{
	struct get_req rq = {.with_cas = with_cas,
			     .touch = touch,
			     .exptime = exptime,
			     .out = out,
			     .hold_min = hold_min};
	int hit = get_run(st, cnt, key, nkey, &rq, get_sec, NULL);
	*held = rq.held;
	return hit;
}

int kv_get(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
	   int touch, uint32_t exptime, struct kv_buf *out)
{
	return kv_get_info(st, cnt, key, nkey, with_cas, touch, exptime, out, NULL);
}

struct touch_req {
	struct hash_req h;
	uint32_t exptime;
	enum kv_result result;
};

static uint64_t touch_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct touch_req *rq = KV_REQ(struct touch_req, a);
	struct kv_item *it = find_live(state, &rq->h, 0);
	if (!it) {
		rq->h.cnt->touch_misses++;
		rq->result = KV_NOT_FOUND;
		return 0;
	}
	kv_item_set_exptime(it, rq->exptime);
	access_item(&rq->h, it);
	rq->h.cnt->touch_hits++;
	kv_count_class(rq->h.cnt, it->cls, KV_CC_TOUCH_HITS);
	rq->result = KV_TOUCHED;
	return 0;
}

enum kv_result kv_touch(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			uint32_t exptime)
{
	struct touch_req rq = {.exptime = exptime};
	req_init(&rq.h, st, cnt, key, nkey);
	cnt->cmd_touch++;
	hash_run(&rq.h, touch_sec, &rq);
	req_finish(&rq.h);
	return rq.result;
}

struct delete_req {
	struct hash_req h;
	int drop;     /* a failed set's old value: counted as memcached's item_get, not a delete */
	uint64_t cas; /* 0: any */
	int invalidate;	    /* meta: mark stale instead */
	uint32_t stale_ttl; /* invalidate: the new exptime; UINT32_MAX keeps it */
	enum kv_result result;
};

static uint64_t delete_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct delete_req *rq = KV_REQ(struct delete_req, a);
	struct hash_req *h = &rq->h;
	struct kv_item *it = find_live(as, h, rq->drop);
	if (!it) {
		if (!rq->drop)
			h->cnt->delete_misses++;
		rq->result = KV_NOT_FOUND;
		return 0;
	}
	if (rq->cas && shown_cas(h->st, it) != rq->cas) {
		rq->result = KV_EXISTS;
		return 0;
	}
	if (rq->invalidate) {
		/* meta "md ... I": keep the item, marked stale, for stale_ttl. */
		it->mark = (uint8_t)((it->mark | KV_IT_STALE) & ~KV_IT_WON);
		if (rq->stale_ttl != UINT32_MAX)
			kv_item_set_exptime(it, rq->stale_ttl);
		kv_item_set_cas(it, kv_clock_next_cas(&h->st->clock));
	} else {
		count_store(h, it, -1);
		kv_assoc_unlink_at(as, kv_assoc_find(as, h->hv, h->key, h->nkey), &h->dropped);
	}
	if (!rq->drop) {
		h->cnt->delete_hits++;
		kv_count_class(h->cnt, it->cls, KV_CC_DELETE_HITS);
	}
	rq->result = KV_DELETED;
	return 0;
}

enum kv_result kv_meta_delete(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			      uint64_t cas, int invalidate, uint32_t stale_ttl)
{
	struct delete_req rq = {.cas = cas, .invalidate = invalidate, .stale_ttl = stale_ttl};
	req_init(&rq.h, st, cnt, key, nkey);
	hash_run(&rq.h, delete_sec, &rq);
	req_finish(&rq.h);
	return rq.result;
}

enum kv_result kv_delete(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey)
{
	return kv_meta_delete(st, cnt, key, nkey, 0, 0, 0);
}

void kv_drop(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey)
{
	struct delete_req rq = {.drop = 1};
	req_init(&rq.h, st, cnt, key, nkey);
	hash_run(&rq.h, delete_sec, &rq);
	req_finish(&rq.h);
}

/* ---------- incr, decr ---------- */

/* The number in an item's value, as memcached reads it: with strtoull (kv_num_u64). */
static int parse_number(const char *p, uint32_t n, uint64_t *out)
{
	return n && kv_num_u64(p, n, out) ? 0 : -1;
}

struct arith_req {
	struct hash_req h;
	const struct kv_arith_req *in;
	struct kv_item *item;	/* an item of `need` bytes the caller brought, or NULL */
	uint32_t need;		/* out, with KV_RETRY_: the number needs this many bytes */
	struct kv_item *linked; /* the caller's item, now in the table: for the LRU */
	struct kv_arith_res res;
	enum kv_result result;
};

static uint64_t arith_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct arith_req *rq = KV_REQ(struct arith_req, a);
	struct hash_req *h = &rq->h;
	const struct kv_arith_req *in = rq->in;
	struct kv_item *it = find_live(as, h, 0);
	if (!it) {
		if (in->incr)
			h->cnt->incr_misses++;
		else
			h->cnt->decr_misses++;
		rq->result = KV_NOT_FOUND;
		return 0;
	}
	/* memcached: an empty value is not a number, whatever the cas says; nor is a chunked one
	   (too large to be). */
	if (it->nbytes == 0 || kv_item_chunked(it)) {
		rq->result = KV_NON_NUMERIC;
		return 0;
	}
	if (in->compare_cas && shown_cas(h->st, it) != in->compare_cas) {
		rq->result = KV_EXISTS;
		return 0;
	}
	uint64_t v;
	if (parse_number(kv_item_value(it), it->nbytes, &v) != 0) {
		rq->result = KV_NON_NUMERIC;
		return 0;
	}
	if (in->set_ttl)
		kv_item_set_exptime(it, in->ttl);
	if (in->incr)
		v += in->delta;
	else
		v = v > in->delta ? v - in->delta : 0;
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	struct kv_item *nw = rq->item;
	/* The hash table's reference and the LRU's: more is a holder, a connection
	   perhaps sending the value (kv_get_hold). Acquire: a sender's release of its
	   reference comes after its last read of the value. */
	int alone = ld_acquire(&it->refs) <= 1 + (kv_item_has(it, KV_IT_LRU) ? 1 : 0);
	if ((uint32_t)n <= it->nbytes && alone) {
		/* In place, padded with spaces as memcached does; held, a new item (memcached
		   likewise). */
		char *val = kv_item_value(it);
		memcpy(val, num, (size_t)n);
		memset(val + n, ' ', it->nbytes - (uint32_t)n);
		kv_item_set_cas(it, kv_clock_next_cas(&h->st->clock));
	} else if (!nw || nw->nbytes != (uint32_t)n) {
		rq->need = (uint32_t)n; /* the caller brings an item of this size and comes back */
		rq->result = KV_RETRY_;
		return 0;
	} else {
		kv_item_write(nw, 0, num, (size_t)n);
		kv_item_write(nw, (size_t)n, "\r\n", 2);
		nw->flags = it->flags;
		nw->exptime = it->exptime;
		nw->cas = kv_clock_next_cas(&h->st->clock);
		nw->atime = now_of(h);
		count_store(h, it, -1);
		kv_assoc_unlink_at(as, kv_assoc_find(as, h->hv, h->key, h->nkey), &h->dropped);
		kv_assoc_link(as, nw, h->hv);
		count_store(h, nw, +1);
		rq->item = NULL;
		rq->linked = nw;
		it = nw;
	}
	if (in->incr)
		h->cnt->incr_hits++;
	else
		h->cnt->decr_hits++;
	kv_count_class(h->cnt, it->cls, in->incr ? KV_CC_INCR_HITS : KV_CC_DECR_HITS);
	if (it != rq->linked)
		touch_item(h, it); /* memcached's do_item_update: not counted as a fetch */
	rq->res.value = v;
	rq->res.cas = shown_cas(h->st, it);
	rq->res.exptime = it->exptime;
	rq->result = KV_OK;
	return 0;
}

enum kv_result kv_arith_ex(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			   const struct kv_arith_req *in, struct kv_arith_res *res)
{
	struct kv_item *nw = NULL;
	struct arith_req rq;
	for (int tries = 0;; tries++) {
		memset(&rq, 0, sizeof(rq));
		req_init(&rq.h, st, cnt, key, nkey);
		rq.h.quiet = tries > 0; /* one lookup reported per command */
		rq.in = in;
		rq.item = nw;
		hash_run(&rq.h, arith_sec, &rq);
		if (rq.result != KV_RETRY_ || tries > RETRY_LIMIT)
			break;
		/* The number grew past the value's room: bring an item that fits. */
		req_finish(&rq.h);
		if (nw)
			kv_item_release(st, nw);
		enum kv_result why;
		nw = kv_item_new(st, cnt, key, nkey, 0, 0, rq.need, &why);
		if (!nw)
			return KV_NO_MEMORY;
	}
	if (rq.result == KV_RETRY_)
		rq.result = KV_NO_MEMORY;
	after_store(st, &rq.h, rq.linked);
	if (nw)
		kv_item_release(st, nw); /* ours; linked or not */
	if (rq.result == KV_OK)
		*res = rq.res;
	return rq.result;
}

enum kv_result kv_arith(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int incr,
			uint64_t delta, uint64_t *value, uint64_t *cas_out)
{
	struct kv_arith_req in = {.incr = incr, .delta = delta};
	struct kv_arith_res res;
	enum kv_result r = kv_arith_ex(st, cnt, key, nkey, &in, &res);
	if (r == KV_OK) {
		*value = res.value;
		if (cas_out)
			*cas_out = res.cas;
	}
	return r;
}

/* ---------- flush ---------- */

void kv_flush(kv_store *st, struct kv_counts *cnt, int64_t delay)
{
	cnt->cmd_flush++;
	kv_clock_flush(&st->clock, delay, st->cfg.use_cas);
}

/* ---------- meta get ---------- */

struct meta_req {
	struct hash_req h;
	const struct kv_meta_req *in;
	struct kv_meta_view *view;
	struct kv_buf *value;
	struct kv_item *item;	/* vivify: the empty item the caller brought */
	struct kv_item *linked; /* vivify: that item, now in the table */
	int oom;
};

static void view_of(struct kv_meta_view *v, const struct kv_item *it, const kv_store *st)
{
	v->flags = it->flags;
	v->nbytes = it->nbytes;
	v->exptime = it->exptime;
	v->cas = shown_cas(st, it);
	v->cls = (uint8_t)kv_slabs_shown_class(st->slabs, it->cls);
	v->b64key = (it->mark & KV_IT_B64) != 0;
}

/* Autovivify on a miss: link the empty item the caller brought; this client wins. */
static uint64_t vivify(struct kv_assoc *as, struct meta_req *rq)
{
	struct hash_req *h = &rq->h;
	struct kv_item *nw = rq->item;
	struct kv_meta_view *v = rq->view;
	nw->cas = kv_clock_next_cas(&h->st->clock);
	nw->atime = now_of(h);
	nw->mark |= KV_IT_WON;
	kv_assoc_link(as, nw, h->hv);
	count_store(h, nw, +1);
	h->cnt->total_items++;
	rq->item = NULL;
	rq->linked = nw;
	v->found = 1;
	v->win = 1;
	view_of(v, nw, h->st);
	v->exptime_before = nw->exptime;
	v->nbytes = 0;
	v->atime = nw->atime;
	if (rq->in->want_value)
		kv_buf_add(rq->value, "\r\n", 2);
	return 1;
}

static uint64_t meta_get_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct meta_req *rq = KV_REQ(struct meta_req, a);
	struct hash_req *h = &rq->h;
	const struct kv_meta_req *in = rq->in;
	struct kv_meta_view *v = rq->view;
	memset(v, 0, sizeof(*v));
	struct kv_item *it = find_live(as, h, !in->peek);
	if (in->peek) {
		if (!it)
			return 0;
		v->found = 1;
		v->fetched = kv_item_has(it, KV_IT_FETCHED);
		v->atime = ld_relaxed(&it->atime);
		v->exptime_before = it->exptime;
		view_of(v, it, h->st);
		return 1;
	}
	/* As memcached: a hit with T counts as a touch, any other as a get; a miss (whose T
	   changed nothing) as a get's. */
	if (!it) {
		h->cnt->cmd_get++;
		h->cnt->get_misses++;
		return in->vivify && rq->item ? vivify(as, rq) : 0;
	}
	if (in->set_ttl) {
		h->cnt->cmd_touch++;
	} else {
		h->cnt->cmd_get++;
		count_hit(h, it);
	}
	v->found = 1;
	v->fetched = kv_item_has(it, KV_IT_FETCHED);
	v->atime = ld_relaxed(&it->atime);
	v->exptime_before = it->exptime;
	if (in->set_ttl) {
		kv_item_set_exptime(it, in->ttl);
		h->cnt->touch_hits++;
		kv_count_class(h->cnt, it->cls, KV_CC_TOUCH_HITS);
	}
	uint32_t now = now_of(h);
	int stale = (it->mark & KV_IT_STALE) != 0;
	if (stale || (in->recache && it->exptime != 0 && it->exptime - now < in->recache_below)) {
		v->stale = stale;
		if (!(it->mark & KV_IT_WON)) {
			it->mark |= KV_IT_WON;
			v->win = 1;
		} else {
			v->already_won = 1;
		}
	} else if (it->mark & KV_IT_WON) {
		v->already_won = 1;
	}
	view_of(v, it, h->st);
	if (!in->no_bump)
		access_item(h, it);
	if (in->want_value) {
		if (kv_buf_reserve(rq->value, (size_t)it->nbytes + 2) != 0)
			rq->oom = 1;
		else
			buf_add_value(rq->value, it, 0, (size_t)it->nbytes + 2);
	}
	return 1;
}

int kv_meta_get(kv_store *st, struct kv_counts *cnt, const struct kv_meta_req *in,
		struct kv_meta_view *v, struct kv_buf *value)
{
	struct kv_item *nw = NULL;
	if (in->vivify) {
		enum kv_result why;
		nw = kv_item_new(st, cnt, in->key, in->nkey, 0, in->vivify_ttl, 0, &why);
		if (nw) {
			kv_item_write(nw, 0, "\r\n", 2);
			if (in->b64key)
				nw->mark |= KV_IT_B64;
		}
	}
	struct meta_req rq = {.in = in, .view = v, .value = value, .item = nw};
	req_init(&rq.h, st, cnt, in->key, in->nkey);
	hash_run(&rq.h, meta_get_sec, &rq); /* counts cmd_get or cmd_touch */
	after_store(st, &rq.h, rq.linked);
	if (nw)
		kv_item_release(st, nw);
	return rq.oom ? -1 : 0;
}

void kv_store_set_evict_hook(kv_store *st, kv_evict_hook hook, void *ctx)
{
	st->evict_hook = hook;
	st->evict_ctx = ctx;
}

void kv_store_set_fetch_hook(kv_store *st, kv_fetch_hook hook, void *ctx)
{
	st->fetch_hook = hook;
	st->fetch_ctx = ctx;
}
