/*
 * locus-kv's LRU lists (lru.h). Every function named *_sec runs inside the
 * alloc section, on the struct kv_lru given to its executor.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/lru.h"

#define PULL_TRIES 5	/* tail items looked at for one to reclaim or evict, as memcached */
#define SKIP_MAX   4096 /* items of a page being moved passed over on the way */

struct lru {
	struct kv_item *head, *tail;
	struct kv_lru_class_report r;	 /* items and the counters, since the start */
	struct kv_lru_class_report base; /* the counters at the last "stats reset" */
};

struct kv_lru {
	const struct kv_clock *clock;
	struct lru cls[KV_CLASSES_MAX + 1];
};

struct kv_lru *kv_lru_new(const struct kv_clock *clock)
{
	struct kv_lru *l = calloc(1, sizeof(*l));
	if (l)
		l->clock = clock;
	return l;
}

void kv_lru_delete(struct kv_lru *l)
{
	free(l);
}

static void unlink_item(struct lru *l, struct kv_item *it)
{
	if (it->prev)
		it->prev->next = it->next;
	else
		l->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		l->tail = it->prev;
	it->prev = it->next = NULL;
	l->r.items--;
	l->r.mem_requested -= kv_mc_item_size(it->nkey, it->flags, it->nbytes);
}

static void push_head(struct lru *l, struct kv_item *it)
{
	it->prev = NULL;
	it->next = l->head;
	if (l->head)
		l->head->prev = it;
	l->head = it;
	if (!l->tail)
		l->tail = it;
	l->r.items++;
	l->r.mem_requested += kv_mc_item_size(it->nkey, it->flags, it->nbytes);
}

/* Off the list; the list's reference is the caller's. */
static void take(struct lru *l, struct kv_item *it)
{
	unlink_item(l, it);
	kv_item_clear(it, KV_IT_LRU);
}

static uint64_t link_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct kv_item *it = KV_REQ(struct kv_item, a);
	if (kv_item_has(it, KV_IT_HASH) && !kv_item_has(it, KV_IT_LRU)) {
		faa_relaxed(&it->refs, 1);
		kv_item_set(it, KV_IT_LRU);
		push_head(&l->cls[it->cls], it);
	}
	return 0;
}

void kv_lru_link(struct kv_sec *sec, struct kv_item *it)
{
	kv_sec_run(sec, link_sec, it);
}

static uint64_t bump_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct kv_item *it = KV_REQ(struct kv_item, a);
	if (kv_item_has(it, KV_IT_LRU)) {
		struct lru *cl = &l->cls[it->cls];
		if (cl->head != it) {
			unlink_item(cl, it);
			push_head(cl, it);
		}
	}
	return 0;
}

void kv_lru_bump(struct kv_sec *sec, struct kv_item *it)
{
	kv_sec_run(sec, bump_sec, it);
}

struct pull_req {
	unsigned cls;
	int evict;
	const char *skip_lo, *skip_hi; /* a page being moved: its items are not pulled */
	enum kv_pull kind;
	struct kv_item *it;
};

/*
 * Only the hash table and the list hold an item whose count is 2; anything
 * more is a thread between sections, which the item must outlive. The
 * expired test reads fields the hash section owns, atomically: it is a
 * hint, which the caller's hash section confirms before unlinking.
 */
static uint64_t pull_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct pull_req *rq = KV_REQ(struct pull_req, a);
	struct lru *cl = &l->cls[rq->cls];
	uint32_t now = kv_clock_now(l->clock);
	struct kv_item *it = cl->tail, *idle = NULL;
	for (int i = 0, skipped = 0; it && i < PULL_TRIES; it = it->prev) {
		int flushed;
		const char *p = (const char *)it;
		if (p >= rq->skip_lo && p < rq->skip_hi && skipped++ < SKIP_MAX)
			continue; /* in the page being moved: the mover frees those */
		i++;
		if (ld_relaxed(&it->refs) > 2) {
			cl->r.lrutail_reflocked++;
			continue;
		}
		if (kv_clock_item_dead(l->clock, it, now, &flushed)) {
			take(cl, it);
			rq->kind = KV_PULL_EXPIRED;
			rq->it = it;
			return 0;
		}
		if (!idle)
			idle = it;
	}
	if (!rq->evict)
		return 0;
	it = idle ? idle : cl->tail; /* everything near the tail is busy: the tail anyway */
	if (!it) {
		cl->r.outofmemory++;
		return 0;
	}
	take(cl, it);
	cl->r.evicted++;
	if (!kv_item_has(it, KV_IT_FETCHED))
		cl->r.evicted_unfetched++;
	if (ld_relaxed(&it->exptime) != 0)
		cl->r.evicted_nonzero++;
	uint32_t at = ld_relaxed(&it->atime);
	cl->r.evicted_time = now > at ? now - at : 0;
	rq->kind = KV_PULL_EVICTED;
	rq->it = it;
	return 0;
}

struct kv_item *kv_lru_pull(struct kv_sec *sec, unsigned cls, int evict, const char *skip_lo,
			    const char *skip_hi, enum kv_pull *kind)
{
	struct pull_req rq = {.cls = cls, .evict = evict, .skip_lo = skip_lo, .skip_hi = skip_hi};
	kv_sec_run(sec, pull_sec, &rq);
	*kind = rq.kind;
	return rq.it;
}

static uint64_t unlink_list_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	for (struct kv_item *it = KV_REQ(struct kv_item, a); it; it = it->hnext) {
		it->lru_ref = kv_item_has(it, KV_IT_LRU);
		if (it->lru_ref)
			take(&l->cls[it->cls], it);
	}
	return 0;
}

void kv_lru_unlink_list(struct kv_sec *sec, struct kv_item *list)
{
	kv_sec_run(sec, unlink_list_sec, list);
}

struct range_req {
	unsigned cls;
	const char *lo, *hi;
	struct kv_item **out;
	unsigned max, n;
};

static uint64_t take_range_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct range_req *rq = KV_REQ(struct range_req, a);
	struct lru *cl = &l->cls[rq->cls];
	for (struct kv_item *it = cl->tail; it && rq->n < rq->max;) {
		struct kv_item *prev = it->prev;
		const char *p = (const char *)it;
		if (p >= rq->lo && p < rq->hi) {
			take(cl, it);
			rq->out[rq->n++] = it;
		}
		it = prev;
	}
	return 0;
}

unsigned kv_lru_take_range(struct kv_sec *sec, unsigned cls, const char *lo, const char *hi,
			   struct kv_item **out, unsigned max)
{
	struct range_req rq = {.cls = cls, .lo = lo, .hi = hi, .out = out, .max = max};
	kv_sec_run(sec, take_range_sec, &rq);
	return rq.n;
}

struct report_req {
	struct kv_lru_report *out;
	int since_reset;
};

static uint64_t report_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct report_req *rq = KV_REQ(struct report_req, a);
	struct kv_lru_report *r = rq->out;
	uint32_t now = kv_clock_now(l->clock);
	for (unsigned i = 1; i <= KV_CLASSES_MAX; i++) {
		struct kv_lru_class_report *o = &r->cls[i];
		const struct lru *cl = &l->cls[i];
		*o = cl->r;
		if (rq->since_reset) {
			o->evicted -= cl->base.evicted;
			o->evicted_unfetched -= cl->base.evicted_unfetched;
			o->evicted_nonzero -= cl->base.evicted_nonzero;
			o->outofmemory -= cl->base.outofmemory;
			o->lrutail_reflocked -= cl->base.lrutail_reflocked;
			if (o->evicted == 0)
				o->evicted_time = 0;
		}
		const struct kv_item *t = cl->tail;
		uint32_t at = t ? ld_relaxed(&t->atime) : now;
		o->age = now > at ? now - at : 0;
	}
	return 0;
}

void kv_lru_report(struct kv_sec *sec, struct kv_lru_report *out, int since_reset)
{
	struct report_req rq = {.out = out, .since_reset = since_reset};
	memset(out, 0, sizeof(*out));
	kv_sec_run(sec, report_sec, &rq);
}

static uint64_t reset_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	for (unsigned i = 1; i <= KV_CLASSES_MAX; i++)
		l->cls[i].base = l->cls[i].r;
	return 0;
}

void kv_lru_stats_reset(struct kv_sec *sec)
{
	kv_sec_run(sec, reset_sec, NULL);
}

struct dump_req {
	unsigned cls, limit;
	struct kv_buf *out;
	int err;
};

/* "stats cachedump": memcached's line for each item, most recently used first. */
static uint64_t cachedump_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct dump_req *rq = KV_REQ(struct dump_req, a);
	unsigned n = 0;
	for (struct kv_item *it = l->cls[rq->cls].head; it; it = it->next) {
		if ((rq->limit && n >= rq->limit) || rq->out->len >= KV_CACHEDUMP_MAX)
			break;
		uint32_t exp = ld_relaxed(&it->exptime);
		rq->err |= kv_buf_addf(rq->out, "ITEM %.*s [%" PRIu32 " b; %" PRIu64 " s]\r\n",
				       (int)it->nkey, it->data, it->nbytes,
				       exp ? (uint64_t)exp + l->clock->started : 0);
		n++;
	}
	return 0;
}

int kv_lru_cachedump(struct kv_sec *sec, unsigned cls, unsigned limit, struct kv_buf *out)
{
	struct dump_req rq = {.cls = cls, .limit = limit, .out = out};
	kv_sec_run(sec, cachedump_sec, &rq);
	return rq.err ? -1 : 0;
}

/* ---------- across a restart (restart.c) ---------- */

static uint64_t heads_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct kv_lru_heads *h = KV_REQ(struct kv_lru_heads, a);
	for (unsigned i = 1; i <= KV_CLASSES_MAX; i++) {
		h->head[i] = l->cls[i].head;
		h->n[i] = l->cls[i].r.items;
	}
	return 0;
}

void kv_lru_heads(struct kv_sec *sec, struct kv_lru_heads *out)
{
	memset(out, 0, sizeof(*out));
	kv_sec_run(sec, heads_sec, out);
}

void kv_lru_restore_tail(struct kv_lru *l, struct kv_item *it)
{
	struct lru *cl = &l->cls[it->cls];
	faa_relaxed(&it->refs, 1);
	kv_item_set(it, KV_IT_LRU);
	it->next = NULL;
	it->prev = cl->tail;
	if (cl->tail)
		cl->tail->next = it;
	else
		cl->head = it;
	cl->tail = it;
	cl->r.items++;
	cl->r.mem_requested += kv_mc_item_size(it->nkey, it->flags, it->nbytes);
}
