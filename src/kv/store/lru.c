/*
 * locus-kv's LRU lists (lru.h). Every function named *_sec runs inside the
 * alloc section, on the struct kv_lru given to its executor.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/lru.h"

#define PULL_TRIES 5	/* tail items looked at for one to reclaim, move or evict, as memcached */
#define SKIP_MAX   4096 /* items of a page being moved passed over on the way */

struct list {
	struct kv_item *head, *tail;
	uint64_t items, bytes; /* bytes: the items' sizes as memcached counts them */
};

struct lru {
	struct list seg[KV_LRU_SEGS];
	struct kv_lru_class_report r;	 /* the counters, since the start */
	struct kv_lru_class_report base; /* the counters at the last "stats reset" */
};

struct kv_lru {
	const struct kv_clock *clock;
	struct kv_lru_tune tune; /* atomics: "lru" commands change it */
	struct lru cls[KV_CLASSES_MAX + 1];
};

void kv_lru_tune_default(struct kv_lru_tune *t)
{
	*t = (struct kv_lru_tune){.segmented = 1,
				  .temporary_ttl = 61,
				  .hot_pct = 20,
				  .warm_pct = 40,
				  .hot_max_factor = 0.2,
				  .warm_max_factor = 2.0};
}

struct kv_lru *kv_lru_new(const struct kv_clock *clock, const struct kv_lru_tune *tune)
{
	struct kv_lru *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->clock = clock;
	l->tune = *tune;
	return l;
}

void kv_lru_delete(struct kv_lru *l)
{
	free(l);
}

static double ld_double(const double *p)
{
	double v;
	__atomic_load(p, &v, __ATOMIC_RELAXED);
	return v;
}

void kv_lru_tune_get(const struct kv_lru *l, struct kv_lru_tune *out)
{
	const struct kv_lru_tune *t = &l->tune;
	out->segmented = ld_relaxed(&t->segmented);
	out->temp_lru = ld_relaxed(&t->temp_lru);
	out->temporary_ttl = ld_relaxed(&t->temporary_ttl);
	out->hot_pct = ld_relaxed(&t->hot_pct);
	out->warm_pct = ld_relaxed(&t->warm_pct);
	out->hot_max_factor = ld_double(&t->hot_max_factor);
	out->warm_max_factor = ld_double(&t->warm_max_factor);
}

void kv_lru_tune_set(struct kv_lru *l, const struct kv_lru_tune *in)
{
	struct kv_lru_tune *t = &l->tune;
	st_relaxed(&t->segmented, in->segmented);
	st_relaxed(&t->temp_lru, in->temp_lru);
	st_relaxed(&t->temporary_ttl, in->temporary_ttl);
	st_relaxed(&t->hot_pct, in->hot_pct);
	st_relaxed(&t->warm_pct, in->warm_pct);
	st_relaxed_from(&t->hot_max_factor, &in->hot_max_factor);
	st_relaxed_from(&t->warm_max_factor, &in->warm_max_factor);
}

int kv_lru_segmented(const struct kv_lru *l)
{
	return ld_relaxed(&l->tune.segmented);
}

/* ---------- the lists ---------- */

static uint64_t size_of(const struct kv_item *it)
{
	return kv_mc_item_size(it->nkey, it->flags, it->nbytes);
}

static struct list *list_of(struct kv_lru *l, const struct kv_item *it)
{
	return &l->cls[it->cls].seg[it->lru];
}

static void unlink_item(struct kv_lru *l, struct kv_item *it)
{
	struct list *s = list_of(l, it);
	struct lru *cl = &l->cls[it->cls];
	if (it->prev)
		it->prev->next = it->next;
	else
		s->head = it->next;
	if (it->next)
		it->next->prev = it->prev;
	else
		s->tail = it->prev;
	it->prev = it->next = NULL;
	s->items--;
	s->bytes -= size_of(it);
	cl->r.items--;
	cl->r.mem_requested -= size_of(it);
}

/* At the head of segment seg of its class. */
static void push_head(struct kv_lru *l, struct kv_item *it, unsigned seg)
{
	st_relaxed(&it->lru, (uint8_t)seg);
	struct list *s = list_of(l, it);
	struct lru *cl = &l->cls[it->cls];
	it->prev = NULL;
	it->next = s->head;
	if (s->head)
		s->head->prev = it;
	s->head = it;
	if (!s->tail)
		s->tail = it;
	s->items++;
	s->bytes += size_of(it);
	cl->r.items++;
	cl->r.mem_requested += size_of(it);
}

static void move_to(struct kv_lru *l, struct kv_item *it, unsigned seg)
{
	unlink_item(l, it);
	push_head(l, it, seg);
}

/* Off the list; the list's reference is the caller's. */
static void take(struct kv_lru *l, struct kv_item *it)
{
	unlink_item(l, it);
	kv_item_clear(it, KV_IT_LRU);
}

/* The segment a new item starts in (memcached's do_item_alloc). */
static unsigned first_segment(const struct kv_lru *l, const struct kv_item *it, uint32_t now)
{
	if (ld_relaxed(&l->tune.temp_lru) &&
	    (uint32_t)(ld_relaxed(&it->exptime) - now) <= ld_relaxed(&l->tune.temporary_ttl))
		return KV_LRU_TEMP;
	return kv_lru_segmented(l) ? KV_LRU_HOT : KV_LRU_COLD;
}

static int link_into(struct kv_lru *l, struct kv_item *it, int kept)
{
	if (!kv_item_has(it, KV_IT_HASH) || kv_item_has(it, KV_IT_LRU))
		return 0;
	faa_relaxed(&it->refs, 1);
	kv_item_set(it, KV_IT_LRU);
	unsigned seg = kept && it->lru < KV_LRU_SEGS ? it->lru
						     : first_segment(l, it, kv_clock_now(l->clock));
	push_head(l, it, seg);
	return 0;
}

static uint64_t link_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)link_into(state, KV_REQ(struct kv_item, a), 0);
}

static uint64_t link_kept_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)link_into(state, KV_REQ(struct kv_item, a), 1);
}

void kv_lru_link(struct kv_sec *sec, struct kv_item *it)
{
	kv_sec_run(sec, link_sec, it);
}

void kv_lru_link_kept(struct kv_sec *sec, struct kv_item *it)
{
	kv_sec_run(sec, link_kept_sec, it);
}

#define UPDATE_INTERVAL 60 /* seconds between two moves of an item to its list's head (flat) */

static void bump_one(struct kv_lru *l, struct kv_item *it)
{
	if (!kv_item_has(it, KV_IT_LRU))
		return;
	uint32_t now = kv_clock_now(l->clock);
	if (kv_lru_segmented(l)) {
		if (it->lru == KV_LRU_COLD && kv_item_has(it, KV_IT_ACTIVE)) {
			kv_item_clear(it, KV_IT_ACTIVE);
			move_to(l, it, KV_LRU_WARM);
			l->cls[it->cls].r.moves_to_warm++;
		}
		kv_item_set_atime(it, now);
	} else if (ld_relaxed(&it->atime) + UPDATE_INTERVAL < now) {
		kv_item_set_atime(it, now);
		if (list_of(l, it)->head != it)
			move_to(l, it, it->lru);
	}
}

static uint64_t bump_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	bump_one(state, KV_REQ(struct kv_item, a));
	return 0;
}

void kv_lru_bump(struct kv_sec *sec, struct kv_item *it)
{
	kv_sec_run(sec, bump_sec, it);
}

struct bump_many_req {
	struct kv_item *const *it;
	unsigned n;
};

static uint64_t bump_many_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct bump_many_req *rq = KV_REQ(struct bump_many_req, a);
	for (unsigned i = 0; i < rq->n; i++)
		bump_one(state, rq->it[i]);
	return 0;
}

void kv_lru_bump_many(struct kv_sec *sec, struct kv_item *const *it, unsigned n)
{
	struct bump_many_req rq = {.it = it, .n = n};
	kv_sec_run(sec, bump_many_sec, &rq);
}

/* ---------- making room ---------- */

struct pull_req {
	unsigned cls;
	int evict;
	const char *skip_lo, *skip_hi; /* a page being moved: its items are not pulled */
	enum kv_pull kind;
	struct kv_item *it;
};

static int skipped(const struct pull_req *rq, const struct kv_item *it, int *n)
{
	const char *p = (const char *)it;
	return p >= rq->skip_lo && p < rq->skip_hi && (*n)++ < SKIP_MAX;
}

/* An expired or flushed item nobody else holds among the last few of a segment, or NULL. */
static struct kv_item *dead_at_tail(struct kv_lru *l, struct pull_req *rq, struct list *s,
				    uint32_t now)
{
	int n = 0, skips = 0, flushed;
	for (struct kv_item *it = s->tail; it && n < PULL_TRIES; it = it->prev) {
		if (skipped(rq, it, &skips))
			continue;
		n++;
		if (ld_relaxed(&it->refs) > 2)
			continue;
		if (kv_clock_item_dead(l->clock, it, now, &flushed))
			return it;
	}
	return NULL;
}

/* The tail item of COLD to evict: nobody else holds it (else, all being held, the last
   looked at; all in the page being moved, the tail). */
static struct kv_item *victim(struct kv_lru *l, struct pull_req *rq, struct lru *cl)
{
	struct kv_item *it = cl->seg[KV_LRU_COLD].tail, *last = NULL;
	for (int i = 0, skips = 0; it && i < PULL_TRIES; it = it->prev) {
		if (skipped(rq, it, &skips))
			continue;
		i++;
		last = it;
		if (ld_relaxed(&it->refs) > 2) {
			cl->r.lrutail_reflocked++;
			continue;
		}
		return it;
	}
	return last ? last : cl->seg[KV_LRU_COLD].tail;
}

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
	static const unsigned order[] = {KV_LRU_COLD, KV_LRU_HOT, KV_LRU_WARM, KV_LRU_TEMP};
	for (unsigned k = 0; k < KV_LRU_SEGS; k++) {
		struct kv_item *it = dead_at_tail(l, rq, &cl->seg[order[k]], now);
		if (it) {
			take(l, it);
			rq->kind = KV_PULL_EXPIRED;
			rq->it = it;
			return 0;
		}
	}
	if (!rq->evict)
		return 0;
	/* COLD has nothing to give: HOT's tail (then WARM's) goes down to it, as memcached's
	   alloc does with HOT, TEMP's never. */
	for (unsigned from = KV_LRU_HOT; !cl->seg[KV_LRU_COLD].tail && from <= KV_LRU_WARM; from++)
		for (int i = 0; i < PULL_TRIES && cl->seg[from].tail; i++) {
			struct kv_item *it = cl->seg[from].tail;
			move_to(l, it, KV_LRU_COLD);
			cl->r.moves_to_cold++;
		}
	struct kv_item *it = victim(l, rq, cl);
	if (!it) {
		cl->r.outofmemory++;
		return 0;
	}
	take(l, it);
	cl->r.evicted++;
	if (!kv_item_has(it, KV_IT_FETCHED))
		cl->r.evicted_unfetched++;
	if (kv_item_has(it, KV_IT_ACTIVE))
		cl->r.evicted_active++;
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

/* ---------- the maintainer's juggle ---------- */

struct juggle_req {
	unsigned cls;
	int temp;
	struct kv_item **out;
	unsigned nout;
};

/* An expired or flushed item at a tail: off its list, for the caller to unlink. */
static int reclaim(struct kv_lru *l, struct juggle_req *rq, struct kv_item *it, uint32_t now)
{
	int flushed;
	if (rq->nout == KV_JUGGLE_OUT || !kv_clock_item_dead(l->clock, it, now, &flushed))
		return 0;
	take(l, it);
	rq->out[rq->nout++] = it;
	return 1;
}

/*
 * memcached's lru_pull_tail without eviction: up to PULL_TRIES items from the tail of
 * segment seg, moving them as their segment's limits say. Returns what it moved or took.
 */
static unsigned trim(struct kv_lru *l, struct juggle_req *rq, unsigned seg, uint64_t total,
		     uint32_t max_age, const struct kv_lru_tune *t, uint32_t now)
{
	struct lru *cl = &l->cls[rq->cls];
	struct list *s = &cl->seg[seg];
	unsigned done = 0;
	struct kv_item *it = s->tail, *prev;
	for (int tries = 0; it && tries < PULL_TRIES; tries++, it = prev) {
		prev = it->prev; /* it may move below */
		if (ld_relaxed(&it->refs) > 2)
			cl->r.lrutail_reflocked++; /* held by a thread: it may still move */
		if (reclaim(l, rq, it, now)) {
			done++;
			continue; /* expired ones: look on */
		}
		if (seg == KV_LRU_TEMP)
			break;
		int active = kv_item_has(it, KV_IT_ACTIVE);
		if (seg == KV_LRU_COLD) {
			if (active && t->segmented) {
				kv_item_clear(it, KV_IT_ACTIVE);
				move_to(l, it, KV_LRU_WARM);
				cl->r.moves_to_warm++;
				done++;
			}
			break;
		}
		uint64_t limit = total * (seg == KV_LRU_HOT ? t->hot_pct : t->warm_pct) / 100;
		uint32_t at = ld_relaxed(&it->atime);
		if (active) {
			kv_item_clear(it, KV_IT_ACTIVE);
			done++;
			if (seg == KV_LRU_WARM) {
				move_to(l, it, KV_LRU_WARM); /* and look on */
				cl->r.moves_within_lru++;
				continue;
			}
			move_to(l, it, KV_LRU_WARM);
			cl->r.moves_to_warm++;
		} else if (s->bytes > limit || (now > at && now - at > max_age)) {
			move_to(l, it, KV_LRU_COLD);
			cl->r.moves_to_cold++;
			done++;
		}
		break;
	}
	return done;
}

static uint64_t juggle_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct juggle_req *rq = KV_REQ(struct juggle_req, a);
	struct lru *cl = &l->cls[rq->cls];
	uint32_t now = kv_clock_now(l->clock);
	struct kv_lru_tune t;
	kv_lru_tune_get(l, &t);
	if (rq->temp)
		return trim(l, rq, KV_LRU_TEMP, 0, 0, &t, now);
	/* Flat: everything drains into COLD (ages and shares 0). */
	uint64_t total = 0;
	uint32_t hot_age = 0, warm_age = 0;
	if (t.segmented) {
		const struct kv_item *tail = cl->seg[KV_LRU_COLD].tail;
		uint32_t at = tail ? ld_relaxed(&tail->atime) : now;
		uint32_t cold_age = now > at ? now - at : 0;
		hot_age = (uint32_t)(cold_age * t.hot_max_factor);
		warm_age = (uint32_t)(cold_age * t.warm_max_factor);
		total = cl->seg[KV_LRU_HOT].bytes + cl->seg[KV_LRU_WARM].bytes +
			cl->seg[KV_LRU_COLD].bytes;
	}
	unsigned done = trim(l, rq, KV_LRU_HOT, total, hot_age, &t, now);
	if (!done)
		done = trim(l, rq, KV_LRU_WARM, total, warm_age, &t, now);
	if (t.segmented)
		done += trim(l, rq, KV_LRU_COLD, total, 0, &t, now);
	return done;
}

unsigned kv_lru_juggle(struct kv_sec *sec, unsigned cls, int temp, struct kv_item **out,
		       unsigned *nout)
{
	struct juggle_req rq = {.cls = cls, .temp = temp, .out = out};
	unsigned done = (unsigned)kv_sec_run(sec, juggle_sec, &rq);
	*nout = rq.nout;
	return done;
}

/* ---------- taking items off ---------- */

static uint64_t unlink_list_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	for (struct kv_item *it = KV_REQ(struct kv_item, a); it; it = it->hnext) {
		it->lru_ref = kv_item_has(it, KV_IT_LRU);
		if (it->lru_ref)
			take(l, it);
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
	int chunked;
};

static int in_range(const struct range_req *rq, const void *p)
{
	const char *c = p;
	return c >= rq->lo && c < rq->hi;
}

/* Is the item one take_range_sec takes: a plain one in the range, or (chunked) a chunked one
   with its header or a chunk there. The chunk pointers are read atomically: the page mover
   changes them in the item's hash section. */
static int wanted(const struct range_req *rq, struct kv_item *it)
{
	if (!kv_item_chunked(it))
		return !rq->chunked && in_range(rq, it);
	if (!rq->chunked)
		return 0;
	if (in_range(rq, it))
		return 1;
	struct kv_chunks *ch = kv_item_chunks(it);
	for (unsigned i = 0; i < ch->n; i++)
		if (in_range(rq, ld_relaxed(&ch->p[i])))
			return 1;
	return 0;
}

static uint64_t take_range_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct range_req *rq = KV_REQ(struct range_req, a);
	struct lru *cl = &l->cls[rq->cls];
	for (unsigned seg = 0; seg < KV_LRU_SEGS; seg++)
		for (struct kv_item *it = cl->seg[seg].tail; it && rq->n < rq->max;) {
			struct kv_item *prev = it->prev;
			if (wanted(rq, it)) {
				take(l, it);
				rq->out[rq->n++] = it;
			}
			it = prev;
		}
	return 0;
}

unsigned kv_lru_take_range(struct kv_sec *sec, unsigned cls, const char *lo, const char *hi,
			   struct kv_item **out, unsigned max, int chunked)
{
	struct range_req rq = {
		.cls = cls, .lo = lo, .hi = hi, .out = out, .max = max, .chunked = chunked};
	kv_sec_run(sec, take_range_sec, &rq);
	return rq.n;
}

/* ---------- figures ---------- */

struct report_req {
	struct kv_lru_report *out;
	int since_reset;
};

static uint32_t tail_age(const struct list *s, uint32_t now)
{
	uint32_t at = s->tail ? ld_relaxed(&s->tail->atime) : now;
	return now > at ? now - at : 0;
}

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
			const struct kv_lru_class_report *z = &cl->base;
			o->evicted -= z->evicted;
			o->evicted_unfetched -= z->evicted_unfetched;
			o->evicted_nonzero -= z->evicted_nonzero;
			o->evicted_active -= z->evicted_active;
			o->outofmemory -= z->outofmemory;
			o->lrutail_reflocked -= z->lrutail_reflocked;
			o->moves_to_cold -= z->moves_to_cold;
			o->moves_to_warm -= z->moves_to_warm;
			o->moves_within_lru -= z->moves_within_lru;
			if (o->evicted == 0)
				o->evicted_time = 0;
		}
		for (unsigned s = 0; s < KV_LRU_SEGS; s++)
			o->seg[s] = cl->seg[s].items;
		o->age = tail_age(&cl->seg[KV_LRU_COLD], now);
		o->age_hot = tail_age(&cl->seg[KV_LRU_HOT], now);
		o->age_warm = tail_age(&cl->seg[KV_LRU_WARM], now);
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

/* "stats cachedump": memcached's line for each item of COLD, most recently used first. */
static uint64_t cachedump_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_lru *l = state;
	struct dump_req *rq = KV_REQ(struct dump_req, a);
	unsigned n = 0;
	for (struct kv_item *it = l->cls[rq->cls].seg[KV_LRU_COLD].head; it; it = it->next) {
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
	for (unsigned i = 1; i <= KV_CLASSES_MAX; i++)
		for (unsigned s = 0; s < KV_LRU_SEGS; s++) {
			h->head[i][s] = l->cls[i].seg[s].head;
			h->n[i][s] = l->cls[i].seg[s].items;
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
	/* A segment the settings of this start do not use (the last run's were others): COLD.
	   restart.c appends the segments in order, HOT first, so COLD's old items stay at the
	   tail. */
	unsigned seg = it->lru;
	if (seg >= KV_LRU_SEGS || (seg == KV_LRU_TEMP && !l->tune.temp_lru) ||
	    ((seg == KV_LRU_HOT || seg == KV_LRU_WARM) && !l->tune.segmented))
		it->lru = KV_LRU_COLD;
	struct list *s = list_of(l, it);
	struct lru *cl = &l->cls[it->cls];
	faa_relaxed(&it->refs, 1);
	kv_item_set(it, KV_IT_LRU);
	it->next = NULL;
	it->prev = s->tail;
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
	s->items++;
	s->bytes += size_of(it);
	cl->r.items++;
	cl->r.mem_requested += size_of(it);
}
