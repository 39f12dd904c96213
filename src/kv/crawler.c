/*
 * locus-kv's expiry crawler (memcached's crawler.c): it walks the hash
 * table a stripe at a time, each stripe in its own hash section, and
 * unlinks what has expired or been flushed, so that memory held by items
 * nobody asks for again goes back to the slabs.
 */
#include <string.h>

#include "kv/store_impl.h"

struct crawl_req {
	kv_store *st;
	struct kv_counts *cnt;
	unsigned stripe; /* buckets stripe, stripe + nstripes, ... */
	struct kv_item *dropped;
	uint64_t reaped;
};

static uint64_t crawl_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct crawl_req *rq = KV_REQ(struct crawl_req, a);
	kv_store *st = rq->st;
	uint32_t now = kv_clock_now(&st->clock);
	for (uint64_t i = rq->stripe; i < as->nbuckets; i += as->nstripes) {
		struct kv_item **pp = &as->buckets[i];
		while (*pp) {
			struct kv_item *it = *pp;
			int flushed;
			if (!kv_clock_item_dead(&st->clock, it, now, &flushed)) {
				pp = &it->hnext;
				continue;
			}
			if (!flushed && !kv_item_has(it, KV_IT_FETCHED))
				rq->cnt->expired_unfetched++;
			rq->cnt->curr_items--;
			rq->cnt->bytes -= (int64_t)kv_slabs_chunk_size(st->slabs, it->cls);
			rq->cnt->reclaimed++;
			rq->reaped++;
			kv_assoc_unlink_at(pp, &rq->dropped);
		}
	}
	return 0;
}

uint64_t kv_crawl_part(kv_store *st, struct kv_counts *cnt, unsigned first, unsigned count)
{
	uint64_t reaped = 0;
	unsigned n = st->assoc.nstripes;
	for (unsigned k = 0; k < count && k < n; k++) {
		struct crawl_req rq = {.st = st, .cnt = cnt, .stripe = (first + k) % n};
		kv_sec_run(&st->assoc.stripes[rq.stripe], crawl_sec, &rq);
		reaped += rq.reaped;
		kv_items_drop_unlinked(st, rq.dropped);
	}
	return reaped;
}

uint64_t kv_crawl(kv_store *st, struct kv_counts *cnt)
{
	return kv_crawl_part(st, cnt, 0, st->assoc.nstripes);
}

unsigned kv_store_stripes(const kv_store *st)
{
	return st->assoc.nstripes;
}
