/* locus-kv's hash table (assoc.h). */
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/store/assoc.h"

#define GROW_LIMIT 32 /* memcached's largest hashpower */

/* A stripe's share of a table of 2^hashpower buckets. */
static unsigned stripe_power(const struct kv_assoc *a, unsigned hashpower)
{
	return hashpower > a->stripe_bits ? hashpower - a->stripe_bits : 0;
}

int kv_assoc_init(struct kv_assoc *a, unsigned hashpower, unsigned nstripes, int grow)
{
	memset(a, 0, sizeof(*a));
	while ((1u << a->stripe_bits) < nstripes)
		a->stripe_bits++;
	unsigned hp = hashpower ? hashpower : 16; /* memcached's HASHPOWER_DEFAULT */
	if (hp < a->stripe_bits)
		hp = a->stripe_bits;
	a->nstripes = nstripes;
	a->grow = grow;
	a->grown = nstripes;
	a->stripes = calloc(nstripes, sizeof(*a->stripes));
	a->tables = calloc(nstripes, sizeof(*a->tables));
	if (!a->stripes || !a->tables) {
		kv_assoc_destroy(a);
		return -1;
	}
	unsigned sp = stripe_power(a, hp);
	for (unsigned s = 0; s < nstripes; s++) {
		a->tables[s].power = sp;
		if (!(a->tables[s].b = calloc((size_t)1 << sp, sizeof(struct kv_item *)))) {
			kv_assoc_destroy(a);
			return -1;
		}
	}
	a->hashpower = hp;
	a->nbuckets = (uint64_t)nstripes << sp;
	return 0;
}

void kv_assoc_destroy(struct kv_assoc *a)
{
	if (a->tables)
		for (unsigned s = 0; s < a->nstripes; s++)
			free(a->tables[s].b);
	free(a->tables);
	free(a->stripes);
	kv_sizes_free(&a->sizes);
	a->tables = NULL;
	a->stripes = NULL;
}

uint64_t kv_hash(const char *key, size_t n)
{
	/* 64-bit multiply-and-rotate over 8-byte words, finished with a mix. */
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, key + i, 8);
		h ^= w * 0xc2b2ae3d27d4eb4full;
		h = (h << 31 | h >> 33) * 0x9e3779b97f4a7c15ull;
	}
	uint64_t w = 0;
	memcpy(&w, key + i, n - i);
	h ^= w * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static struct kv_item **bucket_of(struct kv_assoc *a, uint64_t hv)
{
	struct kv_assoc_stripe *t = &a->tables[hv & (a->nstripes - 1)];
	return &t->b[(hv >> a->stripe_bits) & (((uint64_t)1 << t->power) - 1)];
}

struct kv_item **kv_assoc_find(struct kv_assoc *a, uint64_t hv, const char *key, size_t nkey)
{
	struct kv_item **pp = bucket_of(a, hv);
	for (; *pp; pp = &(*pp)->hnext) {
		struct kv_item *it = *pp;
		if (it->nkey == nkey && memcmp(it->data, key, nkey) == 0)
			return pp;
	}
	return pp;
}

struct kv_item **kv_assoc_find_item(struct kv_assoc *a, const struct kv_item *it, uint64_t hv)
{
	if (!kv_item_has(it, KV_IT_HASH))
		return NULL;
	struct kv_item **pp = bucket_of(a, hv);
	while (*pp && *pp != it)
		pp = &(*pp)->hnext;
	return *pp ? pp : NULL;
}

void kv_assoc_link(struct kv_assoc *a, struct kv_item *it, uint64_t hv)
{
	struct kv_item **b = bucket_of(a, hv);
	it->hnext = *b;
	*b = it;
	faa_relaxed(&it->refs, 1);
	kv_item_set(it, KV_IT_HASH);
	kv_sizes_note(&a->sizes, it, +1);
}

void kv_assoc_unlink_at(struct kv_assoc *a, struct kv_item **pp, struct kv_item **dropped)
{
	struct kv_item *it = *pp;
	*pp = it->hnext;
	kv_item_clear(it, KV_IT_HASH);
	kv_sizes_note(&a->sizes, it, -1);
	it->hnext = *dropped;
	*dropped = it;
}

/* ---------- growing ---------- */

struct grow_req {
	unsigned stripe, power;
	uint64_t items, before; /* out: the items it holds, its buckets before */
	int done;
};

/* One stripe to 2^power buckets: its chains rehashed into a new array (kept as it is if
   there is no memory for one; the next step tries again). */
static uint64_t grow_sec(void *state, uint64_t x, uint64_t y, uint64_t z)
{
	struct kv_assoc *a = state;
	struct grow_req *rq = KV_REQ(struct grow_req, x);
	struct kv_assoc_stripe *t = &a->tables[rq->stripe];
	rq->before = (uint64_t)1 << t->power;
	if (t->power >= rq->power) {
		rq->done = 1;
		return 0;
	}
	uint64_t n = (uint64_t)1 << rq->power;
	struct kv_item **nb = calloc(n, sizeof(*nb));
	if (!nb)
		return 0;
	for (uint64_t i = 0; i < ((uint64_t)1 << t->power); i++)
		for (struct kv_item *it = t->b[i], *next; it; it = next) {
			next = it->hnext;
			struct kv_item **b = &nb[(kv_item_hash(it) >> a->stripe_bits) & (n - 1)];
			it->hnext = *b;
			*b = it;
			rq->items++;
		}
	free(t->b);
	st_relaxed(&t->b, nb); /* atomic for kv_assoc_prefetch, which reads them outside */
	st_relaxed(&t->power, rq->power);
	rq->done = 1;
	return 0;
}

int kv_assoc_grow_step(struct kv_assoc *a, uint64_t items, uint64_t budget)
{
	unsigned hp = ld_relaxed(&a->hashpower);
	if (a->grown == a->nstripes) {
		if (!a->grow || hp >= GROW_LIMIT || items <= ((uint64_t)3 << hp) / 2)
			return 0;
		st_relaxed(&a->hashpower, ++hp); /* as memcached: the new size from the start */
		a->grown = 0;
		st_relaxed(&a->expanding, 1);
	}
	uint64_t moved = 0;
	unsigned sp = stripe_power(a, hp);
	while (a->grown < a->nstripes && moved <= budget) {
		struct grow_req rq = {.stripe = a->grown, .power = sp};
		kv_sec_run(&a->stripes[a->grown], grow_sec, &rq);
		if (!rq.done)
			break; /* out of memory: again at the next step */
		faa_relaxed(&a->nbuckets, ((uint64_t)1 << sp) - rq.before);
		moved += rq.items + 1;
		a->grown++;
	}
	if (a->grown == a->nstripes)
		st_relaxed(&a->expanding, 0);
	return a->grown < a->nstripes;
}
