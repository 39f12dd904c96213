/*
 * locus-kv's dumps of what the store holds: "stats cachedump" (the LRU's
 * view, lru.c), "lru_crawler metadump" (the hash table's, here, a stripe per
 * call so that a server can send a large dump piece by piece), and the
 * size histogram ("stats sizes", stats_sizes.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kv/store/store_impl.h"

int kv_cachedump(kv_store *st, unsigned cls, unsigned limit, struct kv_buf *out)
{
	int e = 0;
	if (cls >= 1 && cls <= kv_slabs_nclasses(st->slabs))
		e = kv_lru_cachedump(&st->alloc_sec, cls, limit, out);
	return e | kv_buf_add(out, "END\r\n", 5);
}

unsigned kv_store_classes(const kv_store *st)
{
	return kv_slabs_nclasses(st->slabs);
}

struct metadump_req {
	kv_store *st;
	unsigned stripe;
	uint64_t classes;
	struct kv_buf *out;
	int err;
};

static uint64_t metadump_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct metadump_req *rq = KV_REQ(struct metadump_req, a);
	kv_store *st = rq->st;
	uint32_t now = kv_clock_now(&st->clock);
	uint64_t started = st->clock.started;
	uint64_t nb;
	struct kv_item **buckets = kv_assoc_buckets(as, rq->stripe, &nb);
	for (uint64_t i = 0; i < nb; i++) {
		for (struct kv_item *it = buckets[i]; it; it = it->hnext) {
			int flushed;
			unsigned cls = kv_slabs_shown_class(st->slabs, it->cls);
			if (!(rq->classes & ((uint64_t)1 << it->cls)) ||
			    kv_clock_item_dead(&st->clock, it, now, &flushed))
				continue;
			rq->err |= kv_buf_add(rq->out, "key=", 4);
			rq->err |= kv_buf_add_uri(rq->out, it->data, it->nkey);
			char exp[24];
			if (it->exptime)
				snprintf(exp, sizeof(exp), "%" PRIu64,
					 (uint64_t)it->exptime + started);
			else
				snprintf(exp, sizeof(exp), "-1");
			rq->err |= kv_buf_addf(rq->out,
					       " exp=%s la=%" PRIu64 " cas=%" PRIu64
					       " fetch=%s cls=%u size=%" PRIu64 "\n",
					       exp, (uint64_t)ld_relaxed(&it->atime) + started,
					       st->cfg.use_cas ? it->cas : 0,
					       kv_item_has(it, KV_IT_FETCHED) ? "yes" : "no", cls,
					       kv_mc_item_size(it->nkey, it->flags, it->nbytes));
		}
	}
	return 0;
}

int kv_metadump_stripe(kv_store *st, unsigned stripe, uint64_t classes, struct kv_buf *out)
{
	struct metadump_req rq = {.st = st, .stripe = stripe, .classes = classes, .out = out};
	rq.stripe = stripe % st->assoc.nstripes;
	kv_sec_run(&st->assoc.stripes[rq.stripe], metadump_sec, &rq);
	return rq.err ? -1 : 0;
}

int kv_sizes_set(kv_store *st, int on)
{
	if (!on) {
		kv_sizes_disable(&st->assoc.sizes);
		return 0;
	}
	if (!st->cfg.use_cas)
		return -1; /* memcached: sizes need cas to tell items stored since */
	return kv_sizes_enable(&st->assoc.sizes, st->cfg.item_size_max,
			       ld_relaxed(&st->clock.next_cas));
}

int kv_sizes_on(const kv_store *st)
{
	return ld_relaxed(&st->assoc.sizes.on);
}

int kv_sizes_text(kv_store *st, struct kv_buf *out)
{
	return kv_sizes_dump(&st->assoc.sizes, out);
}
