/*
 * locus-kv's item store. The header explains the sections and the reference
 * counting that keeps them from nesting; this file is organised by section:
 * slabs, alloc (LRU), hash, stats, then the operations that string them
 * together.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "kv/counts.h"
#include "kv/sectime.h"
#include "kv/store.h"
#include "locus/cs.h"

const char *const kv_section_names[KV_SECTIONS] = {"hash", "alloc", "slabs", "stats"};

#define CLASSES_MAX	63
#define PAGE_MIN	(1u << 20) /* memcached's slab page */
#define SMALL_PAGE	(64u << 10) /* a class's first page once the limit is reached */
#define CHUNK_ALIGN	8
#define UPDATE_INTERVAL 60 /* seconds between LRU bumps of one item */
#define EVICT_TRIES	8
#define REALTIME_MAXDELTA (60 * 60 * 24 * 30)
#define KV_RETRY_ ((enum kv_result)100) /* internal: measure again */

/* ---------- buffers ---------- */

int kv_buf_reserve(struct kv_buf *b, size_t more)
{
	if (b->cap - b->len >= more)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < more) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int kv_buf_add(struct kv_buf *b, const void *data, size_t n)
{
	if (kv_buf_reserve(b, n) != 0)
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

int kv_buf_addf(struct kv_buf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	return kv_buf_add(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void kv_buf_free(struct kv_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* ---------- the store ---------- */

struct slab_class {
	uint32_t size;	      /* chunk size */
	uint32_t perpage;     /* chunks in a full page */
	struct kv_item *free; /* free chunks, linked through hnext */
	uint64_t nfree;
	uint64_t pages;	      /* full pages */
	uint64_t small;	      /* single chunks granted past the limit */
	uint64_t total;	      /* chunks ever carved */
	char *cur;	      /* page being carved */
	uint32_t cur_left;
};

struct lru {
	struct kv_item *head, *tail;
	uint64_t items;
	uint64_t evicted, evicted_unfetched, outofmemory;
};

struct stripe {
	locus_cs *cs; /* its sections get the store through their hash_op */
};

struct kv_store {
	struct kv_store_config cfg;
	char spec[KV_SECTIONS][160];
	/* slabs section */
	locus_cs *slabs_cs;
	struct slab_class cls[CLASSES_MAX + 1];
	unsigned ncls; /* classes 1..ncls */
	size_t page_size;
	size_t mem_malloced;
	char **pages; /* every page, for close */
	size_t npages, pages_cap;
	/* alloc section */
	locus_cs *alloc_cs;
	struct lru lru[CLASSES_MAX + 1];
	/* hash sections */
	struct kv_item **buckets;
	uint64_t nbuckets;
	unsigned hashpower;
	struct stripe *stripes;
	unsigned nstripes;
	/* stats section */
	locus_cs *stats_cs;
	struct kv_counts counts;
	/* lock-free: clocks, cas, flush (all but started and mono0 atomic, common/atomic.h) */
	uint64_t next_cas;
	uint32_t now;
	int64_t clock_offset;
	uint64_t started; /* Unix time of server time 0 */
	struct timespec mono0;
	uint32_t oldest_live; /* flush_all with delay: items accessed at or before are dead */
	uint64_t oldest_cas;  /* flush_all: items with a smaller cas are dead */
	kv_sectime *times;    /* --section-stats, else NULL */
};

/*
 * Every section runs through here: locus_cs_run, timed per kind of section
 * when --section-stats asked for it (two clock reads; nothing otherwise).
 */
static uint64_t sec_run(kv_store *st, enum kv_section sec, locus_cs *cs, locus_fn fn, uint64_t a,
			uint64_t b, uint64_t c)
{
	if (!st->times)
		return locus_cs_run(cs, fn, a, b, c);
	uint64_t t0 = mono_ns();
	uint64_t r = locus_cs_run(cs, fn, a, b, c);
	kv_sectime_add(st->times, sec, mono_ns() - t0);
	return r;
}

static void msg(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

void kv_store_config_default(struct kv_store_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mem_limit = (size_t)64 << 20;
	c->item_size_max = (size_t)1 << 20;
	c->factor = 1.25;
	c->chunk_min = 48;
	c->stripes = 1024;
	c->lru_crawler = 1;
	for (int s = 0; s < KV_SECTIONS; s++)
		snprintf(c->sync[s], sizeof(c->sync[s]), "mutex");
}

/* Does arg[i..] start "<section>=" or "all="? Returns the length of the name. */
static size_t section_at(const char *p)
{
	static const char *const names[] = {"hash", "alloc", "slabs", "stats", "all"};
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		size_t n = strlen(names[k]);
		if (strncmp(p, names[k], n) == 0 && p[n] == '=')
			return n;
	}
	return 0;
}

int kv_sync_parse(struct kv_store_config *c, const char *arg, char *err, size_t errlen)
{
	const char *p = arg;
	if (!*p) {
		msg(err, errlen, "--sync: empty; expected section=mechanism, sections: hash, alloc, "
				 "slabs, stats, all");
		return -1;
	}
	while (*p) {
		size_t n = section_at(p);
		if (!n) {
			size_t len = strcspn(p, "=,");
			msg(err, errlen,
			    "--sync: unknown section '%.*s' in '%s'; known sections: hash, alloc, "
			    "slabs, stats, all (e.g. --sync hash=mcs,alloc=async)",
			    (int)len, p, arg);
			return -1;
		}
		const char *spec = p + n + 1;
		const char *end = spec;
		while (*end) {
			if (*end == ',' && section_at(end + 1))
				break;
			end++;
		}
		size_t slen = (size_t)(end - spec);
		if (slen == 0 || slen >= sizeof(c->sync[0])) {
			msg(err, errlen, "--sync: %s '%.*s' in '%s'", slen ? "spec too long" : "no mechanism for",
			    (int)(slen ? slen : n), slen ? spec : p, arg);
			return -1;
		}
		/* Check the spec by opening (and closing) an executor. */
		char tmp[160];
		memcpy(tmp, spec, slen);
		tmp[slen] = 0;
		int dummy = 0;
		locus_cs *cs = locus_cs_open(tmp, &dummy);
		if (!cs) {
			msg(err, errlen, "--sync %.*s=%s: %s", (int)n, p, tmp, locus_cs_error());
			return -1;
		}
		locus_cs_close(cs);
		for (int s = 0; s < KV_SECTIONS; s++)
			if (strncmp(p, "all", n) == 0 || strncmp(p, kv_section_names[s], n) == 0)
				memcpy(c->sync[s], tmp, slen + 1);
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* ---------- clock ---------- */

static uint32_t mono_secs(const kv_store *st)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint32_t)(t.tv_sec - st->mono0.tv_sec);
}

void kv_clock_tick(kv_store *st)
{
	int64_t t = (int64_t)mono_secs(st) + 2 + ld_relaxed(&st->clock_offset);
	st_relaxed(&st->now, (uint32_t)t);
}

void kv_clock_advance(kv_store *st, int64_t secs)
{
	faa_seqcst(&st->clock_offset, secs);
	kv_clock_tick(st);
}

uint32_t kv_now(const kv_store *st)
{
	return ld_relaxed(&st->now);
}

uint64_t kv_process_started(const kv_store *st)
{
	return st->started;
}

uint32_t kv_exptime(const kv_store *st, int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1; /* in the past: server time 1 is always over */
	uint32_t now = kv_now(st);
	if (exptime > REALTIME_MAXDELTA) {
		/* Absolute Unix time. */
		if (exptime <= (int64_t)st->started)
			return 1;
		int64_t rel = exptime - (int64_t)st->started;
		return rel > UINT32_MAX ? UINT32_MAX : (uint32_t)rel;
	}
	uint64_t t = (uint64_t)now + (uint64_t)exptime;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* ---------- slabs section ---------- */

static unsigned class_for(const kv_store *st, size_t total)
{
	for (unsigned i = 1; i <= st->ncls; i++)
		if (st->cls[i].size >= total)
			return i;
	return 0;
}

static int pages_remember(kv_store *st, char *page)
{
	if (st->npages == st->pages_cap) {
		size_t cap = st->pages_cap ? st->pages_cap * 2 : 64;
		char **p = realloc(st->pages, cap * sizeof(*p));
		if (!p)
			return -1;
		st->pages = p;
		st->pages_cap = cap;
	}
	st->pages[st->npages++] = page;
	return 0;
}

/* a = class. A free chunk, or NULL if none is left within the limit. */
static uint64_t slabs_alloc_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct slab_class *sc = &st->cls[a];
	struct kv_item *it = sc->free;
	if (it) {
		sc->free = it->hnext;
		sc->nfree--;
		return (uint64_t)(uintptr_t)it;
	}
	if (sc->cur_left == 0) {
		/*
		 * A new page within the limit. A class that has no memory at all
		 * gets a small page past the limit (memcached grants a whole page),
		 * so every size stays storable however the limit was shared out:
		 * the overshoot is at most SMALL_PAGE (or one chunk, if larger) per
		 * class, documented in docs/kv.md.
		 */
		size_t len = st->page_size;
		if (st->mem_malloced + len > st->cfg.mem_limit) {
			if (sc->pages + sc->small > 0)
				return 0;
			len = sc->size > SMALL_PAGE ? sc->size : SMALL_PAGE / sc->size * sc->size;
		}
		char *page = malloc(len);
		if (!page)
			return 0;
		if (pages_remember(st, page) != 0) {
			free(page);
			return 0;
		}
		st->mem_malloced += len;
		if (len < st->page_size)
			sc->small++;
		else
			sc->pages++;
		sc->cur = page;
		sc->cur_left = (uint32_t)(len / sc->size);
	}
	it = (struct kv_item *)sc->cur;
	sc->cur += sc->size;
	sc->cur_left--;
	sc->total++;
	return (uint64_t)(uintptr_t)it;
}

/* a = item, whose class it goes back to. */
static uint64_t slabs_free_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct kv_item *it = (struct kv_item *)(uintptr_t)a;
	struct slab_class *sc = &st->cls[it->cls];
	it->hnext = sc->free;
	sc->free = it;
	sc->nfree++;
	return 0;
}

struct slab_report {
	struct slab_class cls[CLASSES_MAX + 1];
	size_t malloced;
};
static uint64_t slabs_report_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct slab_report *r = (struct slab_report *)(uintptr_t)a;
	memcpy(r->cls, st->cls, sizeof(r->cls));
	r->malloced = st->mem_malloced;
	return 0;
}

/* ---------- alloc section: the LRU lists ---------- */

static void lru_unlink(struct lru *l, struct kv_item *it)
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
	l->items--;
}

static void lru_push(struct lru *l, struct kv_item *it)
{
	it->prev = NULL;
	it->next = l->head;
	if (l->head)
		l->head->prev = it;
	l->head = it;
	if (!l->tail)
		l->tail = it;
	l->items++;
}

/*
 * a = new item: link it, while it is still in the hash table; the LRU takes
 * its own reference. (Replaced items leave the LRU through drop_unlinked().)
 */
static uint64_t lru_link_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct kv_item *nw = (struct kv_item *)(uintptr_t)a;
	if (ld_relaxed(&nw->in_hash) && !ld_relaxed(&nw->in_lru)) {
		faa_relaxed(&nw->refs, 1);
		st_relaxed(&nw->in_lru, 1);
		lru_push(&st->lru[nw->cls], nw);
	}
	return 0;
}

/* a = item: move it to the head if it is in the LRU. */
static uint64_t lru_bump_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct kv_item *it = (struct kv_item *)(uintptr_t)a;
	if (ld_relaxed(&it->in_lru)) {
		struct lru *l = &st->lru[it->cls];
		if (l->head != it) {
			lru_unlink(l, it);
			lru_push(l, it);
		}
	}
	return 0;
}

/*
 * a = class. Take the least recently used item that nobody else holds off
 * the class's LRU and hand the LRU's reference to the caller; 0 if none.
 * b = the hash-and-LRU-only reference count to prefer (2).
 */
static uint64_t lru_evict_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct lru *l = &st->lru[a];
	struct kv_item *it = l->tail;
	int tries = 0;
	while (it && tries < 5 && ld_relaxed(&it->refs) > b) {
		it = it->prev;
		tries++;
	}
	if (!it || tries == 5)
		it = l->tail; /* everything near the tail is busy: take the tail anyway */
	if (!it) {
		l->outofmemory++;
		return 0;
	}
	lru_unlink(l, it);
	st_relaxed(&it->in_lru, 0);
	l->evicted++;
	if (!ld_relaxed(&it->fetched))
		l->evicted_unfetched++;
	return (uint64_t)(uintptr_t)it;
}

/* a = list of items linked through hnext: take each off the LRU; pad_ = 1 where the LRU reference is now the caller's. */
static uint64_t lru_unlink_list_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	for (struct kv_item *it = (struct kv_item *)(uintptr_t)a; it; it = it->hnext) {
		if (ld_relaxed(&it->in_lru)) {
			lru_unlink(&st->lru[it->cls], it);
			st_relaxed(&it->in_lru, 0);
			it->pad_ = 1; /* the LRU's reference is the caller's now */
		} else {
			it->pad_ = 0;
		}
	}
	return 0;
}

struct lru_report {
	struct lru lru[CLASSES_MAX + 1];
};
static uint64_t lru_report_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	kv_store *st = state;
	struct lru_report *r = (struct lru_report *)(uintptr_t)a;
	memcpy(r->lru, st->lru, sizeof(r->lru));
	return 0;
}

/* ---------- reference counts ---------- */

void kv_item_release(kv_store *st, struct kv_item *it)
{
	if (fas_acqrel(&it->refs, 1) == 1)
		sec_run(st, KV_SEC_SLABS, st->slabs_cs, slabs_free_fn, (uint64_t)(uintptr_t)it, 0, 0);
}

/* Drop the references of items the hash section unlinked (one each) after taking them off the LRU. */
static void drop_unlinked(kv_store *st, struct kv_item *list)
{
	if (!list)
		return;
	sec_run(st, KV_SEC_ALLOC, st->alloc_cs, lru_unlink_list_fn, (uint64_t)(uintptr_t)list, 0, 0);
	while (list) {
		struct kv_item *next = list->hnext;
		int lru_ref = list->pad_;
		if (lru_ref)
			kv_item_release(st, list);
		kv_item_release(st, list);
		list = next;
	}
}

/* ---------- hash sections ---------- */

static uint64_t hash_key(const char *key, size_t n)
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

static size_t item_total(size_t nkey, size_t nbytes)
{
	return sizeof(struct kv_item) + nkey + nbytes + 2;
}

static struct stripe *stripe_of(kv_store *st, uint64_t hv)
{
	return &st->stripes[hv & (st->nstripes - 1)];
}

static struct kv_item **bucket_of(kv_store *st, uint64_t hv)
{
	return &st->buckets[hv & (st->nbuckets - 1)];
}

/* Is a linked item dead: expired, or flushed? (hash section of its stripe) */
static int item_dead(kv_store *st, const struct kv_item *it, uint32_t now, int *flushed)
{
	uint32_t ol = ld_relaxed(&st->oldest_live);
	if ((ol != 0 && ol <= now && it->atime <= ol) || it->cas < ld_relaxed(&st->oldest_cas)) {
		*flushed = 1;
		return 1;
	}
	*flushed = 0;
	return it->exptime != 0 && it->exptime <= now;
}

static struct kv_item **find_slot(kv_store *st, uint64_t hv, const char *key, size_t nkey)
{
	struct kv_item **pp = bucket_of(st, hv);
	for (; *pp; pp = &(*pp)->hnext) {
		struct kv_item *it = *pp;
		if (it->hv == hv && it->nkey == nkey && memcmp(it->data, key, nkey) == 0)
			return pp;
	}
	return pp;
}

/* Unlink *pp from its chain; its hash reference goes onto *dropped. */
static void hash_unlink_at(struct kv_item **pp, struct kv_item **dropped)
{
	struct kv_item *it = *pp;
	*pp = it->hnext;
	st_relaxed(&it->in_hash, 0);
	it->hnext = *dropped;
	*dropped = it;
}

/*
 * Find a live item (hash section). Dead ones met on the way are unlinked
 * onto *dropped. NULL if none.
 */
static struct kv_item *find_live(kv_store *st, uint64_t hv, const char *key, size_t nkey,
				 struct kv_item **dropped, struct kv_counts *cnt, int count_get)
{
	struct kv_item **pp = find_slot(st, hv, key, nkey);
	struct kv_item *it = *pp;
	if (!it)
		return NULL;
	int flushed;
	if (item_dead(st, it, kv_now(st), &flushed)) {
		if (count_get) {
			if (flushed)
				cnt->get_flushed++;
			else
				cnt->get_expired++;
		}
		if (!flushed && !ld_relaxed(&it->fetched))
			cnt->expired_unfetched++;
		cnt->reclaimed++;
		cnt->curr_items--;
		cnt->bytes -= (int64_t)st->cls[it->cls].size;
		hash_unlink_at(pp, dropped);
		return NULL;
	}
	return it;
}

static void hash_link(kv_store *st, struct kv_item *it)
{
	struct kv_item **b = bucket_of(st, it->hv);
	it->hnext = *b;
	*b = it;
	faa_relaxed(&it->refs, 1);
	st_relaxed(&it->in_hash, 1);
}

/* The operation a hash section runs, passed by pointer in `a`. */
struct hash_op {
	kv_store *st;
	struct kv_counts *cnt;
	const char *key;
	size_t nkey;
	uint64_t hv;
	struct kv_item *dropped; /* unlinked items whose hash reference is the caller's */
	/* store */
	struct kv_item *item;
	enum kv_store_mode mode;
	uint64_t cas;
	enum kv_result result;
	struct kv_item *bump; /* referenced item for the caller to bump in the LRU */
	/* get */
	int with_cas, touch;
	uint32_t exptime;
	struct kv_buf *out;
	int oom;
	/* arith */
	int incr;
	uint64_t delta, value;
	uint32_t need; /* arith/append: the new item must hold this many bytes */
	uint64_t expect_cas;
	struct kv_item *linked; /* arith, vivify: a new item the section linked into the hash */
	/* meta */
	const struct kv_meta_req *mrq;
	struct kv_meta_view *view;
	int invalidate;
	/* crawl */
	uint64_t reaped;
};

static int want_bump(const struct kv_item *it, uint32_t now)
{
	return it->atime + UPDATE_INTERVAL <= now;
}

/* Take a reference for the caller to bump the item in the LRU after the section. */
static void touch_item(struct hash_op *op, struct kv_item *it, int bump_allowed)
{
	uint32_t now = kv_now(op->st);
	if (bump_allowed && want_bump(it, now) && !op->bump) {
		faa_relaxed(&it->refs, 1);
		op->bump = it;
	}
	if (bump_allowed)
		it->atime = now;
}

/* A read of the item: bump it (unless told not to) and mark it fetched. */
static void access_item(struct hash_op *op, struct kv_item *it, int bump_allowed)
{
	touch_item(op, it, bump_allowed);
	st_relaxed(&it->fetched, 1);
}

static uint64_t next_cas(kv_store *st)
{
	return faa_relaxed(&st->next_cas, 1);
}

static void count_store(struct hash_op *op, struct kv_item *it, int sign)
{
	op->cnt->curr_items += sign;
	op->cnt->bytes += sign * (int64_t)op->st->cls[it->cls].size;
}

static uint64_t hash_store_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	kv_store *st = op->st;
	struct kv_item *it = op->item;
	struct kv_item **pp = find_slot(st, it->hv, it->data, it->nkey);
	struct kv_item *old = *pp;
	int flushed;
	if (old && item_dead(st, old, kv_now(st), &flushed)) {
		count_store(op, old, -1);
		op->cnt->reclaimed++;
		hash_unlink_at(pp, &op->dropped);
		old = NULL;
		pp = find_slot(st, it->hv, it->data, it->nkey);
	}
	switch (op->mode) {
	case KV_ADD:
		if (old) {
			/* memcached refreshes the existing item's place in the LRU. */
			access_item(op, old, 1);
			op->result = KV_NOT_STORED;
			return 0;
		}
		break;
	case KV_REPLACE:
	case KV_APPEND:
	case KV_PREPEND:
		if (!old) {
			op->result = KV_NOT_STORED;
			return 0;
		}
		break;
	case KV_CAS:
	case KV_CAS_STALE:
		if (!old) {
			op->result = KV_NOT_FOUND;
			op->cnt->cas_misses++;
			return 0;
		}
		if (old->cas != op->cas) {
			if (op->mode == KV_CAS_STALE && op->cas < old->cas) {
				it->stale = 1; /* an older writer's value: store it as stale */
				it->won = 0;
				break;
			}
			op->result = KV_EXISTS;
			op->cnt->cas_badval++;
			return 0;
		}
		op->cnt->cas_hits++;
		break;
	case KV_SET:
		break;
	}
	if (op->mode == KV_APPEND || op->mode == KV_PREPEND) {
		/* The caller sized `it` for the old value it measured; redo if it changed since. */
		if (old->cas != op->expect_cas || old->nbytes != op->need) {
			op->result = KV_RETRY_;
			return 0;
		}
		uint32_t add = (uint32_t)op->delta; /* bytes of new data, at the start of it's value */
		char *v = kv_item_value(it);
		if (op->mode == KV_APPEND) {
			memmove(v + old->nbytes, v, add);
			memcpy(v, kv_item_value(old), old->nbytes);
		} else {
			memcpy(v + add, kv_item_value(old), old->nbytes);
		}
		memcpy(v + it->nbytes, "\r\n", 2);
		it->flags = old->flags;
		it->exptime = old->exptime;
	}
	it->cas = next_cas(st);
	it->atime = kv_now(st);
	if (old) {
		count_store(op, old, -1);
		hash_unlink_at(pp, &op->dropped);
	}
	hash_link(st, it);
	count_store(op, it, +1);
	op->cnt->total_items++;
	op->cas = it->cas;
	op->result = KV_STORED;
	return 0;
}

/* The header of a VALUE line for it. */
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

/* Append "VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n" (inside the item's hash section). */
static int add_value(struct kv_buf *out, struct kv_item *it, int with_cas)
{
	char hdr[72];
	size_t n = put_u64(hdr, it->flags);
	n += put_u64(hdr + n, it->nbytes);
	if (with_cas)
		n += put_u64(hdr + n, it->cas);
	hdr[n++] = '\r';
	hdr[n++] = '\n';
	if (kv_buf_reserve(out, 6 + it->nkey + n + it->nbytes + 2) != 0)
		return -1;
	kv_buf_add(out, "VALUE ", 6);
	kv_buf_add(out, it->data, it->nkey);
	kv_buf_add(out, hdr, n);
	kv_buf_add(out, kv_item_value(it), (size_t)it->nbytes + 2);
	return 0;
}

static uint64_t hash_get_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	struct kv_item *it = find_live(op->st, op->hv, op->key, op->nkey, &op->dropped, op->cnt, 1);
	if (!it) {
		if (op->touch)
			op->cnt->touch_misses++;
		op->cnt->get_misses++;
		return 0;
	}
	if (op->touch) {
		it->exptime = op->exptime;
		op->cnt->touch_hits++;
	}
	op->cnt->get_hits++;
	access_item(op, it, 1);
	if (add_value(op->out, it, op->with_cas) != 0)
		op->oom = 1;
	return 1;
}

static uint64_t hash_delete_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	kv_store *st = op->st;
	struct kv_item *it = find_live(st, op->hv, op->key, op->nkey, &op->dropped, op->cnt, 0);
	if (!it) {
		op->cnt->delete_misses++;
		op->result = KV_NOT_FOUND;
		return 0;
	}
	if (op->cas && it->cas != op->cas) {
		op->result = KV_EXISTS;
		return 0;
	}
	if (op->invalidate) {
		/* meta "md ... I": keep the item, marked stale, for stale_ttl. */
		it->stale = 1;
		it->won = 0;
		if (op->exptime != UINT32_MAX)
			it->exptime = op->exptime;
		it->cas = next_cas(st);
		op->result = KV_DELETED;
		op->cnt->delete_hits++;
		return 0;
	}
	count_store(op, it, -1);
	hash_unlink_at(find_slot(st, op->hv, op->key, op->nkey), &op->dropped);
	op->cnt->delete_hits++;
	op->result = KV_DELETED;
	return 0;
}

static uint64_t hash_touch_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	struct kv_item *it = find_live(op->st, op->hv, op->key, op->nkey, &op->dropped, op->cnt, 0);
	if (!it) {
		op->cnt->touch_misses++;
		op->result = KV_NOT_FOUND;
		return 0;
	}
	it->exptime = op->exptime;
	access_item(op, it, 1);
	op->cnt->touch_hits++;
	op->result = KV_TOUCHED;
	return 0;
}

/* The decimal value of an item, as memcached reads it: digits, then anything (spaces of padding). */
static int parse_number(const char *p, uint32_t n, uint64_t *out)
{
	uint64_t v = 0;
	uint32_t i = 0;
	if (n == 0)
		return -1;
	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (i == 0)
		return -1;
	/* memcached accepts trailing spaces (its own padding) and nothing else. */
	for (; i < n; i++)
		if (p[i] != ' ')
			return -1;
	*out = v;
	return 0;
}

static uint64_t hash_arith_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	kv_store *st = op->st;
	struct kv_item *it = find_live(st, op->hv, op->key, op->nkey, &op->dropped, op->cnt, 0);
	if (!it) {
		if (op->incr)
			op->cnt->incr_misses++;
		else
			op->cnt->decr_misses++;
		op->result = KV_NOT_FOUND;
		return 0;
	}
	if (op->expect_cas && it->cas != op->expect_cas) {
		op->result = KV_EXISTS;
		return 0;
	}
	uint64_t v;
	if (parse_number(kv_item_value(it), it->nbytes, &v) != 0) {
		op->result = KV_NON_NUMERIC;
		return 0;
	}
	if (op->touch)
		it->exptime = op->exptime;
	if (op->incr)
		v += op->delta;
	else
		v = v > op->delta ? v - op->delta : 0;
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, v);
	struct kv_item *nw = op->item;
	if ((uint32_t)n <= it->nbytes) {
		/* In place, padded with spaces as memcached does. */
		char *val = kv_item_value(it);
		memcpy(val, num, (size_t)n);
		memset(val + n, ' ', it->nbytes - (uint32_t)n);
		it->cas = next_cas(st);
	} else if (!nw || nw->nbytes != (uint32_t)n) {
		op->need = (uint32_t)n; /* the caller brings an item of this size and comes back */
		op->result = KV_RETRY_;
		return 0;
	} else {
		memcpy(kv_item_value(nw), num, (size_t)n);
		memcpy(kv_item_value(nw) + n, "\r\n", 2);
		nw->flags = it->flags;
		nw->exptime = it->exptime;
		nw->cas = next_cas(st);
		nw->atime = kv_now(st);
		count_store(op, it, -1);
		hash_unlink_at(find_slot(st, op->hv, op->key, op->nkey), &op->dropped);
		hash_link(st, nw);
		count_store(op, nw, +1);
		op->item = NULL;
		op->linked = nw; /* for the caller to put into the LRU */
		it = nw;
	}
	if (op->incr)
		op->cnt->incr_hits++;
	else
		op->cnt->decr_hits++;
	touch_item(op, it, it != op->linked); /* memcached does not count incr as a fetch */
	op->value = v;
	op->cas = it->cas;
	op->exptime = it->exptime;
	op->result = KV_OK;
	return 0;
}

static uint64_t hash_meta_get_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	kv_store *st = op->st;
	const struct kv_meta_req *rq = op->mrq;
	struct kv_meta_view *v = op->view;
	memset(v, 0, sizeof(*v));
	struct kv_item *it = find_live(st, op->hv, op->key, op->nkey, &op->dropped, op->cnt, !rq->peek);
	if (rq->peek) {
		if (!it)
			return 0;
		v->found = 1;
		v->fetched = ld_relaxed(&it->fetched);
		v->atime = it->atime;
		v->flags = it->flags;
		v->nbytes = it->nbytes;
		v->exptime = it->exptime;
		v->cas = it->cas;
		v->cls = it->cls;
		v->total = (uint32_t)item_total(it->nkey, it->nbytes);
		return 1;
	}
	if (!it) {
		op->cnt->get_misses++;
		if (rq->vivify && op->item) {
			/* Autovivify: link the empty item the caller brought; this client wins. */
			struct kv_item *nw = op->item;
			nw->cas = next_cas(st);
			nw->atime = kv_now(st);
			nw->won = 1;
			hash_link(st, nw);
			count_store(op, nw, +1);
			op->cnt->total_items++;
			op->item = NULL;
			op->linked = nw;
			v->found = 1;
			v->win = 1;
			v->flags = nw->flags;
			v->nbytes = 0;
			v->exptime = nw->exptime;
			v->atime = nw->atime;
			v->cas = nw->cas;
			v->cls = nw->cls;
			if (rq->want_value)
				kv_buf_add(op->out, "\r\n", 2);
			return 1;
		}
		return 0;
	}
	op->cnt->get_hits++;
	v->found = 1;
	v->fetched = ld_relaxed(&it->fetched);
	v->atime = it->atime;
	if (rq->set_ttl) {
		it->exptime = rq->ttl;
		op->cnt->touch_hits++;
	}
	uint32_t now = kv_now(st);
	if (it->stale) {
		v->stale = 1;
		if (!it->won) {
			it->won = 1;
			v->win = 1;
		} else {
			v->already_won = 1;
		}
	} else if (rq->recache && it->exptime != 0 && it->exptime - now < rq->recache_below) {
		if (!it->won) {
			it->won = 1;
			v->win = 1;
		} else {
			v->already_won = 1;
		}
	} else if (it->won) {
		v->already_won = 1;
	}
	v->flags = it->flags;
	v->nbytes = it->nbytes;
	v->exptime = it->exptime;
	v->cas = it->cas;
	v->cls = it->cls;
	v->total = (uint32_t)item_total(it->nkey, it->nbytes);
	access_item(op, it, !rq->no_bump);
	if (rq->want_value && kv_buf_add(op->out, kv_item_value(it), (size_t)it->nbytes + 2) != 0)
		op->oom = 1;
	return 1;
}

/* a = victim: unlink it if it is still linked (eviction). */
static uint64_t hash_unlink_item_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	struct kv_item *victim = op->item;
	if (!ld_relaxed(&victim->in_hash))
		return 0;
	struct kv_item **pp = bucket_of(op->st, victim->hv);
	while (*pp && *pp != victim)
		pp = &(*pp)->hnext;
	if (!*pp)
		return 0; /* cannot happen: in_hash says it is here */
	count_store(op, victim, -1);
	hash_unlink_at(pp, &op->dropped);
	return 1;
}

/* b = first bucket, c = stride: unlink every dead item of the stripe. */
static uint64_t hash_crawl_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	kv_store *st = op->st;
	uint32_t now = kv_now(st);
	for (uint64_t i = b; i < st->nbuckets; i += c) {
		struct kv_item **pp = &st->buckets[i];
		while (*pp) {
			int flushed;
			if (item_dead(st, *pp, now, &flushed)) {
				if (!flushed && !ld_relaxed(&(*pp)->fetched))
					op->cnt->expired_unfetched++;
				count_store(op, *pp, -1);
				op->cnt->reclaimed++;
				op->reaped++;
				hash_unlink_at(pp, &op->dropped);
			} else {
				pp = &(*pp)->hnext;
			}
		}
	}
	return 0;
}

static void op_init(struct hash_op *op, kv_store *st, struct kv_counts *cnt, const char *key,
		    size_t nkey)
{
	memset(op, 0, sizeof(*op));
	op->st = st;
	op->cnt = cnt;
	op->key = key;
	op->nkey = nkey;
	op->hv = key ? hash_key(key, nkey) : 0;
}

/* Run a hash section for op's key; op_finish() then does what it left for after. */
static uint64_t hash_run(struct hash_op *op, locus_fn fn)
{
	return sec_run(op->st, KV_SEC_HASH, stripe_of(op->st, op->hv)->cs, fn,
		       (uint64_t)(uintptr_t)op, 0, 0);
}

static void op_finish(struct hash_op *op)
{
	if (op->bump) {
		sec_run(op->st, KV_SEC_ALLOC, op->st->alloc_cs, lru_bump_fn, (uint64_t)(uintptr_t)op->bump, 0, 0);
		kv_item_release(op->st, op->bump);
		op->bump = NULL;
	}
	drop_unlinked(op->st, op->dropped);
	op->dropped = NULL;
}

/* ---------- items ---------- */

struct kv_item *kv_item_new(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			    uint32_t flags, uint32_t exptime, uint32_t nbytes, enum kv_result *why)
{
	size_t total = item_total(nkey, nbytes);
	unsigned cls = total <= st->cfg.item_size_max ? class_for(st, total) : 0;
	if (!cls) {
		*why = KV_TOO_LARGE;
		return NULL;
	}
	struct kv_item *it = NULL;
	for (int tries = 0; tries < EVICT_TRIES * 4; tries++) {
		it = (struct kv_item *)(uintptr_t)sec_run(st, KV_SEC_SLABS, st->slabs_cs,
							  slabs_alloc_fn, cls, 0, 0);
		if (it)
			break;
		/* No chunk: evict the class's least recently used item. */
		struct kv_item *victim =
			(struct kv_item *)(uintptr_t)sec_run(st, KV_SEC_ALLOC, st->alloc_cs, lru_evict_fn, cls, 2, 0);
		if (!victim)
			break;
		struct hash_op op;
		op_init(&op, st, cnt, NULL, 0);
		op.hv = victim->hv;
		op.item = victim;
		if (sec_run(st, KV_SEC_HASH, stripe_of(st, victim->hv)->cs, hash_unlink_item_fn,
				 (uint64_t)(uintptr_t)&op, 0, 0))
			kv_item_release(st, victim); /* the hash table's reference */
		cnt->evictions++;
		if (!ld_relaxed(&victim->fetched))
			cnt->evicted_unfetched++;
		kv_item_release(st, victim); /* the LRU's reference */
	}
	if (!it) {
		cnt->oom++;
		*why = KV_NO_MEMORY;
		return NULL;
	}
	memset(it, 0, sizeof(*it));
	st_relaxed(&it->refs, 1);
	it->cls = (uint8_t)cls;
	it->nkey = (uint8_t)nkey;
	it->nbytes = nbytes;
	it->flags = flags;
	it->exptime = exptime;
	it->hv = hash_key(key, nkey);
	memcpy(it->data, key, nkey);
	return it;
}

/* After a store: link the new item into the LRU, take the old one off; drop references. */
static void after_store(kv_store *st, struct hash_op *op, struct kv_item *linked)
{
	if (linked)
		sec_run(st, KV_SEC_ALLOC, st->alloc_cs, lru_link_fn, (uint64_t)(uintptr_t)linked, 0, 0);
	op_finish(op);
}

static uint64_t hash_peek_fn(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct hash_op *op = (struct hash_op *)(uintptr_t)a;
	struct kv_item *it = find_live(op->st, op->hv, op->key, op->nkey, &op->dropped, op->cnt, 0);
	if (!it)
		return 0;
	op->need = it->nbytes;
	op->expect_cas = it->cas;
	return 1;
}

enum kv_result kv_store_item(kv_store *st, struct kv_counts *cnt, struct kv_item *it,
			     enum kv_store_mode mode, uint64_t cas, uint64_t *cas_out)
{
	cnt->cmd_set++;
	struct hash_op op;
	struct kv_item *data = NULL;
	for (int tries = 0;; tries++) {
		op_init(&op, st, cnt, kv_item_key(it), it->nkey);
		op.hv = it->hv;
		op.mode = mode;
		op.cas = cas;
		op.item = it;
		if (mode != KV_APPEND && mode != KV_PREPEND)
			break;
		/*
		 * append/prepend: the new value is old + data, in an item of that
		 * size; the store section composes it if the old item is still the
		 * one measured (same cas), else we measure again.
		 */
		if (!data)
			data = it;
		else
			kv_item_release(st, it); /* the previous attempt's new item */
		struct hash_op peek;
		op_init(&peek, st, cnt, kv_item_key(data), data->nkey);
		int found = (int)hash_run(&peek, hash_peek_fn);
		op_finish(&peek);
		if (!found || tries > 1000) {
			kv_item_release(st, data);
			return KV_NOT_STORED;
		}
		enum kv_result why;
		uint64_t total = (uint64_t)peek.need + data->nbytes;
		struct kv_item *nw =
			total > UINT32_MAX ? NULL
					   : kv_item_new(st, cnt, kv_item_key(data), data->nkey, 0, 0,
							 (uint32_t)total, &why);
		if (!nw) {
			kv_item_release(st, data);
			return total > UINT32_MAX ? KV_TOO_LARGE : why;
		}
		memcpy(kv_item_value(nw), kv_item_value(data), data->nbytes);
		it = nw;
		op.item = nw;
		op.delta = data->nbytes;
		op.expect_cas = peek.expect_cas;
		op.need = peek.need;
		hash_run(&op, hash_store_fn);
		if (op.result != KV_RETRY_)
			break;
		op_finish(&op);
	}
	if (mode != KV_APPEND && mode != KV_PREPEND)
		hash_run(&op, hash_store_fn);
	if (data)
		kv_item_release(st, data);
	after_store(st, &op, op.result == KV_STORED ? it : NULL);
	kv_item_release(st, it); /* the caller's reference; the hash table and LRU hold theirs */
	if (cas_out)
		*cas_out = op.cas;
	return op.result;
}

int kv_get(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey, int with_cas,
	   int touch, uint32_t exptime, struct kv_buf *out)
{
	struct hash_op op;
	op_init(&op, st, cnt, key, nkey);
	op.with_cas = with_cas;
	op.touch = touch;
	op.exptime = exptime;
	op.out = out;
	cnt->cmd_get++;
	if (touch)
		cnt->cmd_touch++;
	int hit = (int)hash_run(&op, hash_get_fn);
	op_finish(&op);
	return op.oom ? -1 : hit;
}

enum kv_result kv_delete(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey)
{
	return kv_meta_delete(st, cnt, key, nkey, 0, 0, 0);
}

enum kv_result kv_meta_delete(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			      uint64_t cas, int invalidate, uint32_t stale_ttl)
{
	struct hash_op op;
	op_init(&op, st, cnt, key, nkey);
	op.cas = cas;
	op.invalidate = invalidate;
	op.exptime = stale_ttl;
	hash_run(&op, hash_delete_fn);
	op_finish(&op);
	return op.result;
}

enum kv_result kv_touch(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			uint32_t exptime)
{
	struct hash_op op;
	op_init(&op, st, cnt, key, nkey);
	op.exptime = exptime;
	cnt->cmd_touch++;
	hash_run(&op, hash_touch_fn);
	op_finish(&op);
	return op.result;
}

enum kv_result kv_arith(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			int incr, uint64_t delta, uint64_t *value, uint64_t *cas_out)
{
	struct kv_arith_req rq = {.incr = incr, .delta = delta};
	struct kv_arith_res res;
	enum kv_result r = kv_arith_ex(st, cnt, key, nkey, &rq, &res);
	if (r == KV_OK) {
		*value = res.value;
		if (cas_out)
			*cas_out = res.cas;
	}
	return r;
}

enum kv_result kv_arith_ex(kv_store *st, struct kv_counts *cnt, const char *key, size_t nkey,
			   const struct kv_arith_req *rq, struct kv_arith_res *res)
{
	struct kv_item *nw = NULL;
	struct hash_op op;
	for (int tries = 0;; tries++) {
		op_init(&op, st, cnt, key, nkey);
		op.incr = rq->incr;
		op.delta = rq->delta;
		op.expect_cas = rq->compare_cas;
		op.touch = rq->set_ttl;
		op.exptime = rq->ttl;
		op.item = nw;
		hash_run(&op, hash_arith_fn);
		if (op.result != KV_RETRY_ || tries > 1000)
			break;
		/* The number grew past the value's room: bring an item that fits. */
		op_finish(&op);
		if (nw)
			kv_item_release(st, nw);
		enum kv_result why;
		nw = kv_item_new(st, cnt, key, nkey, 0, 0, op.need, &why);
		if (!nw)
			return KV_NO_MEMORY;
	}
	if (op.result == KV_RETRY_)
		op.result = KV_NO_MEMORY;
	after_store(st, &op, op.linked);
	if (nw)
		kv_item_release(st, nw); /* ours; linked or not */
	if (op.result == KV_OK) {
		res->value = op.value;
		res->cas = op.cas;
		res->exptime = op.exptime;
	}
	return op.result;
}

void kv_flush(kv_store *st, struct kv_counts *cnt, int64_t delay)
{
	cnt->cmd_flush++;
	if (delay > 0) {
		uint32_t t = kv_exptime(st, delay);
		st_relaxed(&st->oldest_live, t > 1 ? t - 1 : 1);
	} else {
		/* Everything stored so far has a smaller cas than the next one. */
		uint64_t c = ld_relaxed(&st->next_cas);
		uint64_t cur = ld_relaxed(&st->oldest_cas);
		while (cur < c && !cas_seqcst_weak(&st->oldest_cas, &cur, c))
			;
		st_relaxed(&st->oldest_live, 0);
	}
}

int kv_meta_get(kv_store *st, struct kv_counts *cnt, const struct kv_meta_req *rq,
		struct kv_meta_view *v, struct kv_buf *value)
{
	struct kv_item *nw = NULL;
	if (rq->vivify) {
		enum kv_result why;
		nw = kv_item_new(st, cnt, rq->key, rq->nkey, 0, rq->vivify_ttl, 0, &why);
		if (nw)
			memcpy(kv_item_value(nw), "\r\n", 2);
	}
	struct hash_op op;
	op_init(&op, st, cnt, rq->key, rq->nkey);
	op.mrq = rq;
	op.view = v;
	op.out = value;
	op.item = nw;
	if (!rq->peek)
		cnt->cmd_get++;
	if (rq->set_ttl)
		cnt->cmd_touch++;
	hash_run(&op, hash_meta_get_fn);
	after_store(st, &op, op.linked);
	if (nw)
		kv_item_release(st, nw);
	return op.oom ? -1 : 0;
}

/* ---------- crawler ---------- */

uint64_t kv_crawl(kv_store *st, struct kv_counts *cnt)
{
	return kv_crawl_part(st, cnt, 0, st->nstripes);
}

uint64_t kv_crawl_part(kv_store *st, struct kv_counts *cnt, unsigned first, unsigned count)
{
	uint64_t reaped = 0;
	for (unsigned k = 0; k < count && k < st->nstripes; k++) {
		unsigned s = (first + k) % st->nstripes;
		struct hash_op op;
		op_init(&op, st, cnt, NULL, 0);
		sec_run(st, KV_SEC_HASH, st->stripes[s].cs, hash_crawl_fn, (uint64_t)(uintptr_t)&op,
			s, st->nstripes);
		reaped += op.reaped;
		op_finish(&op);
	}
	return reaped;
}

/* ---------- stats section ---------- */

/* The section functions are in counts.c, compiled with transactional clones (stm). */

void kv_counts_flush(kv_store *st, struct kv_counts *cnt)
{
	static const struct kv_counts zero;
	if (memcmp(cnt, &zero, sizeof(zero)) == 0)
		return;
	sec_run(st, KV_SEC_STATS, st->stats_cs, kv_counts_add_fn, (uint64_t)(uintptr_t)cnt, 0, 0);
	memset(cnt, 0, sizeof(*cnt));
}

void kv_counts_read(kv_store *st, struct kv_counts *out)
{
	sec_run(st, KV_SEC_STATS, st->stats_cs, kv_counts_read_fn, (uint64_t)(uintptr_t)out, 0, 0);
}

void kv_stats_reset(kv_store *st)
{
	sec_run(st, KV_SEC_STATS, st->stats_cs, kv_counts_reset_fn, 0, 0, 0);
}

int kv_stats_general(kv_store *st, struct kv_buf *out, const char *extra_lines)
{
	struct kv_counts c;
	kv_counts_read(st, &c);
	int r = 0;
	if (extra_lines)
		r |= kv_buf_add(out, extra_lines, strlen(extra_lines));
#define LINE(f) r |= kv_buf_addf(out, "STAT " #f " %" PRIu64 "\r\n", (uint64_t)c.f);
	LINE(cmd_get)
	LINE(cmd_set)
	LINE(cmd_flush)
	LINE(cmd_touch)
	LINE(cmd_meta)
	LINE(get_hits)
	LINE(get_misses)
	LINE(get_expired)
	LINE(get_flushed)
	LINE(delete_misses)
	LINE(delete_hits)
	LINE(incr_misses)
	LINE(incr_hits)
	LINE(decr_misses)
	LINE(decr_hits)
	LINE(cas_misses)
	LINE(cas_hits)
	LINE(cas_badval)
	LINE(touch_hits)
	LINE(touch_misses)
	LINE(bytes_read)
	LINE(bytes_written)
#undef LINE
	r |= kv_buf_addf(out, "STAT limit_maxbytes %zu\r\n", st->cfg.mem_limit);
	r |= kv_buf_addf(out, "STAT hash_power_level %u\r\n", st->hashpower);
	r |= kv_buf_addf(out, "STAT hash_bytes %zu\r\n", (size_t)st->nbuckets * sizeof(struct kv_item *));
	r |= kv_buf_addf(out, "STAT curr_items %" PRId64 "\r\n", c.curr_items);
	r |= kv_buf_addf(out, "STAT total_items %" PRIu64 "\r\n", c.total_items);
	r |= kv_buf_addf(out, "STAT expired_unfetched %" PRIu64 "\r\n", c.expired_unfetched);
	r |= kv_buf_addf(out, "STAT evicted_unfetched %" PRIu64 "\r\n", c.evicted_unfetched);
	r |= kv_buf_addf(out, "STAT evictions %" PRIu64 "\r\n", c.evictions);
	r |= kv_buf_addf(out, "STAT reclaimed %" PRIu64 "\r\n", c.reclaimed);
	r |= kv_buf_addf(out, "STAT bytes %" PRId64 "\r\n", c.bytes);
	r |= kv_buf_addf(out, "STAT outofmemory %" PRIu64 "\r\n", c.oom);
	for (int s = 0; s < KV_SECTIONS; s++)
		r |= kv_buf_addf(out, "STAT sync_%s %s\r\n", kv_section_names[s], st->spec[s]);
	r |= kv_buf_add(out, "END\r\n", 5);
	return r ? -1 : 0;
}

int kv_stats_slabs(kv_store *st, struct kv_buf *out)
{
	struct slab_report *r = malloc(sizeof(*r));
	if (!r)
		return -1;
	sec_run(st, KV_SEC_SLABS, st->slabs_cs, slabs_report_fn, (uint64_t)(uintptr_t)r, 0, 0);
	int e = 0, active = 0;
	for (unsigned i = 1; i <= st->ncls; i++) {
		struct slab_class *c = &r->cls[i];
		if (c->total == 0 && c->pages + c->small == 0)
			continue;
		active++;
		uint64_t used = c->total - c->nfree;
		e |= kv_buf_addf(out, "STAT %u:chunk_size %u\r\n", i, c->size);
		e |= kv_buf_addf(out, "STAT %u:chunks_per_page %u\r\n", i, c->perpage);
		e |= kv_buf_addf(out, "STAT %u:total_pages %" PRIu64 "\r\n", i, c->pages + c->small);
		e |= kv_buf_addf(out, "STAT %u:total_chunks %" PRIu64 "\r\n", i, c->total + c->cur_left);
		e |= kv_buf_addf(out, "STAT %u:used_chunks %" PRIu64 "\r\n", i, used);
		e |= kv_buf_addf(out, "STAT %u:free_chunks %" PRIu64 "\r\n", i, c->nfree + c->cur_left);
		e |= kv_buf_addf(out, "STAT %u:free_chunks_end %u\r\n", i, c->cur_left);
	}
	e |= kv_buf_addf(out, "STAT active_slabs %d\r\n", active);
	e |= kv_buf_addf(out, "STAT total_malloced %zu\r\n", r->malloced);
	e |= kv_buf_add(out, "END\r\n", 5);
	free(r);
	return e ? -1 : 0;
}

int kv_stats_items(kv_store *st, struct kv_buf *out)
{
	struct lru_report *r = malloc(sizeof(*r));
	if (!r)
		return -1;
	sec_run(st, KV_SEC_ALLOC, st->alloc_cs, lru_report_fn, (uint64_t)(uintptr_t)r, 0, 0);
	int e = 0;
	for (unsigned i = 1; i <= st->ncls; i++) {
		struct lru *l = &r->lru[i];
		if (l->items == 0 && l->evicted == 0 && l->outofmemory == 0)
			continue;
		e |= kv_buf_addf(out, "STAT items:%u:number %" PRIu64 "\r\n", i, l->items);
		e |= kv_buf_addf(out, "STAT items:%u:evicted %" PRIu64 "\r\n", i, l->evicted);
		e |= kv_buf_addf(out, "STAT items:%u:evicted_unfetched %" PRIu64 "\r\n", i,
			  l->evicted_unfetched);
		e |= kv_buf_addf(out, "STAT items:%u:outofmemory %" PRIu64 "\r\n", i, l->outofmemory);
	}
	e |= kv_buf_add(out, "END\r\n", 5);
	free(r);
	return e ? -1 : 0;
}

/* ---------- open / close ---------- */

int kv_stats_sync(kv_store *st, struct kv_buf *out)
{
	struct kv_sectime_total t[KV_SECTIONS];
	if (st->times)
		kv_sectime_read(st->times, t);
	int r = kv_buf_addf(out, "STAT section_stats %s\r\n", st->times ? "on" : "off");
	for (int s = 0; s < KV_SECTIONS; s++) {
		const char *n = kv_section_names[s];
		r |= kv_buf_addf(out, "STAT %s:sync %s\r\n", n, st->spec[s]);
		if (!st->times)
			continue;
		r |= kv_buf_addf(out, "STAT %s:runs %" PRIu64 "\r\n", n, t[s].runs);
		r |= kv_buf_addf(out, "STAT %s:time_ns %" PRIu64 "\r\n", n, t[s].ns);
		r |= kv_buf_addf(out, "STAT %s:avg_ns %" PRIu64 "\r\n", n,
				 t[s].runs ? t[s].ns / t[s].runs : 0);
		r |= kv_buf_addf(out, "STAT %s:max_ns %" PRIu64 "\r\n", n, t[s].max_ns);
	}
	r |= kv_buf_addf(out, "END\r\n");
	return r ? -1 : 0;
}

const struct kv_store_config *kv_store_config(const kv_store *st)
{
	return &st->cfg;
}

unsigned kv_store_stripes(const kv_store *st)
{
	return st->nstripes;
}

const char *kv_store_sync_spec(const kv_store *st, enum kv_section s)
{
	return st->spec[s];
}

static locus_cs *open_section(kv_store *st, enum kv_section s, void *state, char *err,
			      size_t errlen)
{
	locus_cs *cs = locus_cs_open(st->cfg.sync[s], state);
	if (!cs)
		msg(err, errlen, "--sync %s=%s: %s", kv_section_names[s], st->cfg.sync[s],
		    locus_cs_error());
	return cs;
}

static void build_classes(kv_store *st)
{
	size_t size = sizeof(struct kv_item) + st->cfg.chunk_min;
	size = (size + CHUNK_ALIGN - 1) & ~(size_t)(CHUNK_ALIGN - 1);
	unsigned i = 0;
	while (i < CLASSES_MAX - 1 && size <= st->page_size / 2 && size < st->cfg.item_size_max) {
		i++;
		st->cls[i].size = (uint32_t)size;
		st->cls[i].perpage = (uint32_t)(st->page_size / size);
		size_t next = (size_t)((double)size * st->cfg.factor);
		next = (next + CHUNK_ALIGN - 1) & ~(size_t)(CHUNK_ALIGN - 1);
		if (next <= size)
			next = size + CHUNK_ALIGN;
		size = next;
	}
	i++;
	st->cls[i].size = (uint32_t)st->cfg.item_size_max;
	st->cls[i].perpage = (uint32_t)(st->page_size / st->cfg.item_size_max);
	st->ncls = i;
}

kv_store *kv_store_open(const struct kv_store_config *c, char *err, size_t errlen)
{
	kv_store *st = calloc(1, sizeof(*st));
	if (!st) {
		msg(err, errlen, "out of memory");
		return NULL;
	}
	st->cfg = *c;
	if (st->cfg.stripes == 0 || (st->cfg.stripes & (st->cfg.stripes - 1)))
		st->cfg.stripes = 1024;
	st->page_size = st->cfg.item_size_max > PAGE_MIN ? st->cfg.item_size_max : PAGE_MIN;
	build_classes(st);
	/* One bucket per 256 bytes of the limit, at least one per stripe (2^16 minimum). */
	unsigned hp = 16;
	while (hp < 30 && ((uint64_t)1 << hp) < st->cfg.mem_limit / 256)
		hp++;
	st->hashpower = hp;
	st->nbuckets = (uint64_t)1 << hp;
	st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
	st->nstripes = st->cfg.stripes;
	st->stripes = calloc(st->nstripes, sizeof(*st->stripes));
	if (!st->buckets || !st->stripes) {
		msg(err, errlen, "out of memory for a hash table of %" PRIu64 " buckets", st->nbuckets);
		kv_store_close(st);
		return NULL;
	}
	st_relaxed(&st->next_cas, 1);
	clock_gettime(CLOCK_MONOTONIC, &st->mono0);
	st->started = (uint64_t)time(NULL) - 2;
	kv_clock_tick(st);
	if (st->cfg.section_stats && !(st->times = kv_sectime_new())) {
		msg(err, errlen, "out of memory for section timing");
		kv_store_close(st);
		return NULL;
	}
	if (!(st->slabs_cs = open_section(st, KV_SEC_SLABS, st, err, errlen)) ||
	    !(st->alloc_cs = open_section(st, KV_SEC_ALLOC, st, err, errlen)) ||
	    !(st->stats_cs = open_section(st, KV_SEC_STATS, &st->counts, err, errlen))) {
		kv_store_close(st);
		return NULL;
	}
	for (unsigned s = 0; s < st->nstripes; s++) {
		if (!(st->stripes[s].cs = open_section(st, KV_SEC_HASH, &st->stripes[s], err, errlen))) {
			kv_store_close(st);
			return NULL;
		}
	}
	snprintf(st->spec[KV_SEC_HASH], sizeof(st->spec[0]), "%s", locus_cs_spec(st->stripes[0].cs));
	snprintf(st->spec[KV_SEC_ALLOC], sizeof(st->spec[0]), "%s", locus_cs_spec(st->alloc_cs));
	snprintf(st->spec[KV_SEC_SLABS], sizeof(st->spec[0]), "%s", locus_cs_spec(st->slabs_cs));
	snprintf(st->spec[KV_SEC_STATS], sizeof(st->spec[0]), "%s", locus_cs_spec(st->stats_cs));
	return st;
}

void kv_store_close(kv_store *st)
{
	if (!st)
		return;
	if (st->stripes)
		for (unsigned s = 0; s < st->nstripes; s++)
			if (st->stripes[s].cs)
				locus_cs_close(st->stripes[s].cs);
	if (st->stats_cs)
		locus_cs_close(st->stats_cs);
	if (st->alloc_cs)
		locus_cs_close(st->alloc_cs);
	if (st->slabs_cs)
		locus_cs_close(st->slabs_cs);
	for (size_t i = 0; i < st->npages; i++)
		free(st->pages[i]);
	free(st->pages);
	free(st->stripes);
	free(st->buckets);
	kv_sectime_free(st->times);
	free(st);
}
