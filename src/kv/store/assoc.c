/* locus-kv's hash table (assoc.h). */
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/store/assoc.h"

int kv_assoc_init(struct kv_assoc *a, size_t mem_limit, unsigned hashpower, unsigned nstripes)
{
	memset(a, 0, sizeof(*a));
	unsigned hp = hashpower > 16 ? hashpower : 16;
	while (hp < 30 && ((uint64_t)1 << hp) < mem_limit / 256)
		hp++;
	a->hashpower = hp;
	a->nbuckets = (uint64_t)1 << hp;
	a->buckets = calloc(a->nbuckets, sizeof(*a->buckets));
	a->nstripes = nstripes;
	a->stripes = calloc(nstripes, sizeof(*a->stripes));
	if (!a->buckets || !a->stripes) {
		kv_assoc_destroy(a);
		return -1;
	}
	return 0;
}

void kv_assoc_destroy(struct kv_assoc *a)
{
	free(a->buckets);
	free(a->stripes);
	kv_sizes_free(&a->sizes);
	a->buckets = NULL;
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
	return &a->buckets[hv & (a->nbuckets - 1)];
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
