/*
 * locus-kv's expiry crawler (memcached's crawler.c): it walks the hash
 * table a stripe at a time, each stripe in its own hash section, and
 * unlinks what has expired or been flushed, so that memory held by items
 * nobody asks for again goes back to the slabs.
 *
 * The crawler thread (kv_crawler_enable) sweeps the whole table every
 * SWEEP_S seconds, a slice of stripes each second, and runs the crawls
 * "lru_crawler crawl" asks for, one at a time, over the classes asked;
 * a crawl sleeps lru_crawler_sleep microseconds after every 1000 items it
 * looks at and looks at no more than lru_crawler_tocrawl items of a class
 * (0: all), as memcached's does. kv_crawl and kv_crawl_part crawl on the
 * caller's thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "kv/store/store_impl.h"

#define SWEEP_S		8    /* seconds the background sweep takes over the whole table */
#define ITEMS_PER_SLEEP 1000 /* as memcached's crawls_persleep */

struct crawl_req {
	kv_store *st;
	struct kv_counts *cnt;
	unsigned stripe;  /* the stripe of the table to crawl */
	uint64_t classes; /* bit c: look at class c's items */
	uint32_t tocrawl; /* at most this many items of a class (0: all) */
	uint32_t *looked; /* per class, items looked at so far (with tocrawl) */
	struct kv_item *dropped;
	uint64_t reaped, checked;
};

static uint64_t crawl_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct crawl_req *rq = KV_REQ(struct crawl_req, a);
	kv_store *st = rq->st;
	uint32_t now = kv_clock_now(&st->clock);
	uint64_t nb;
	struct kv_item **buckets = kv_assoc_buckets(as, rq->stripe, &nb);
	for (uint64_t i = 0; i < nb; i++) {
		struct kv_item **pp = &buckets[i];
		while (*pp) {
			struct kv_item *it = *pp;
			int flushed;
			if (!(rq->classes & ((uint64_t)1 << it->cls)) ||
			    (rq->tocrawl && rq->looked[it->cls]++ >= rq->tocrawl)) {
				pp = &it->hnext;
				continue;
			}
			rq->checked++;
			rq->cnt->crawler_items_checked++;
			kv_count_class(rq->cnt, it->cls, KV_CC_CRAWLER_CHECKED);
			if (!kv_clock_item_dead(&st->clock, it, now, &flushed)) {
				pp = &it->hnext;
				continue;
			}
			if (!flushed && !kv_item_has(it, KV_IT_FETCHED)) {
				rq->cnt->expired_unfetched++;
				kv_count_class(rq->cnt, it->cls, KV_CC_EXPIRED_UNFETCHED);
			}
			rq->cnt->curr_items--;
			rq->cnt->bytes -= (int64_t)kv_slabs_chunk_size(st->slabs, it->cls);
			rq->cnt->reclaimed++;
			rq->cnt->crawler_reclaimed++;
			kv_count_class(rq->cnt, it->cls, KV_CC_RECLAIMED);
			kv_count_class(rq->cnt, it->cls, KV_CC_CRAWLER_RECLAIMED);
			rq->reaped++;
			kv_assoc_unlink_at(as, pp, &rq->dropped);
		}
	}
	return 0;
}

/* One stripe: its dead items of the classes asked unlinked and dropped. */
static void crawl_stripe(struct crawl_req *rq)
{
	rq->dropped = NULL;
	kv_sec_run(&rq->st->assoc.stripes[rq->stripe], crawl_sec, rq);
	kv_items_drop_unlinked(rq->st, rq->dropped);
}

uint64_t kv_crawl_part(kv_store *st, struct kv_counts *cnt, unsigned first, unsigned count)
{
	unsigned n = st->assoc.nstripes;
	struct crawl_req rq = {.st = st, .cnt = cnt, .classes = ~(uint64_t)0};
	for (unsigned k = 0; k < count && k < n; k++) {
		rq.stripe = (first + k) % n;
		crawl_stripe(&rq);
	}
	return rq.reaped;
}

uint64_t kv_crawl(kv_store *st, struct kv_counts *cnt)
{
	return kv_crawl_part(st, cnt, 0, st->assoc.nstripes);
}

/* ---------- the crawler thread ---------- */

struct kv_crawler {
	pthread_t thread;
	int joinable;	      /* a thread was started and not joined yet */
	int alive;	      /* atomic: the thread runs and has not been told to stop */
	pthread_mutex_t lock; /* stop, want, and the wake-up */
	pthread_cond_t wake;
	int stop;	   /* atomic */
	uint64_t want;	   /* classes a crawl was asked for, not started yet */
	int busy;	   /* atomic: a crawl asked for is being run */
	uint32_t sleep_us; /* atomic */
	uint32_t tocrawl;  /* atomic */
	unsigned next_stripe;
	struct kv_counts cnt;
	uint32_t looked[KV_CLASSES];
};

struct kv_crawler *kv_crawler_new(uint32_t sleep_us, uint32_t tocrawl)
{
	struct kv_crawler *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->wake, &ca);
	pthread_condattr_destroy(&ca);
	k->sleep_us = sleep_us;
	k->tocrawl = tocrawl;
	return k;
}

/* Sleep us microseconds, or less if told to stop. */
static void nap(struct kv_crawler *k, uint32_t us)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += (long)(us % 1000000) * 1000;
	t.tv_sec += us / 1000000 + t.tv_nsec / NS_PER_S;
	t.tv_nsec %= NS_PER_S;
	pthread_mutex_lock(&k->lock);
	while (!ld_relaxed(&k->stop) && pthread_cond_timedwait(&k->wake, &k->lock, &t) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&k->lock);
}

static void crawl_classes(kv_store *st, struct kv_crawler *k, uint64_t classes)
{
	struct crawl_req rq = {.st = st,
			       .cnt = &k->cnt,
			       .classes = classes,
			       .tocrawl = ld_relaxed(&k->tocrawl),
			       .looked = k->looked};
	memset(k->looked, 0, sizeof(k->looked));
	uint64_t since_sleep = 0;
	for (unsigned s = 0; s < st->assoc.nstripes; s++) {
		rq.stripe = s;
		uint64_t before = rq.checked;
		crawl_stripe(&rq);
		since_sleep += rq.checked - before;
		uint32_t us = ld_relaxed(&k->sleep_us);
		if (since_sleep >= ITEMS_PER_SLEEP && us) {
			kv_counts_flush(st, &k->cnt);
			nap(k, us);
			since_sleep = 0;
		}
		if (ld_relaxed(&k->stop))
			break;
	}
	kv_counts_flush(st, &k->cnt);
}

static void *crawler_main(void *arg)
{
	kv_store *st = arg;
	struct kv_crawler *k = st->crawler;
	pthread_mutex_lock(&k->lock);
	while (!ld_relaxed(&k->stop)) {
		if (k->want) {
			uint64_t classes = k->want;
			k->want = 0;
			pthread_mutex_unlock(&k->lock);
			k->cnt.lru_crawler_starts++;
			crawl_classes(st, k, classes);
			st_seqcst(&k->busy, 0);
			pthread_mutex_lock(&k->lock);
			continue;
		}
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_sec += 1;
		if (pthread_cond_timedwait(&k->wake, &k->lock, &t) != ETIMEDOUT ||
		    ld_relaxed(&k->stop) || k->want)
			continue;
		/* A slice of the background sweep, every second. */
		pthread_mutex_unlock(&k->lock);
		unsigned n = st->assoc.nstripes, slice = (n + SWEEP_S - 1) / SWEEP_S;
		kv_crawl_part(st, &k->cnt, k->next_stripe, slice);
		k->next_stripe = (k->next_stripe + slice) % n;
		kv_counts_flush(st, &k->cnt);
		pthread_mutex_lock(&k->lock);
	}
	st_seqcst(&k->alive, 0);
	pthread_mutex_unlock(&k->lock);
	return NULL;
}

int kv_crawler_enable(kv_store *st)
{
	struct kv_crawler *k = st->crawler;
	pthread_mutex_lock(&k->lock);
	if (ld_seqcst(&k->alive)) {
		pthread_mutex_unlock(&k->lock);
		return -1; /* memcached's "failed to start": it is running */
	}
	if (k->joinable) {
		pthread_mutex_unlock(&k->lock);
		pthread_join(k->thread,
			     NULL); /* it has stopped: alive was cleared on its way out */
		pthread_mutex_lock(&k->lock);
		k->joinable = 0;
	}
	st_seqcst(&k->stop, 0);
	k->want = 0;
	st_seqcst(&k->alive, 1);
	int e = pthread_create(&k->thread, NULL, crawler_main, st);
	if (e == 0)
		k->joinable = 1;
	else
		st_seqcst(&k->alive, 0);
	pthread_mutex_unlock(&k->lock);
	return e == 0 ? 0 : -1;
}

/* Returns once the thread has exited, as memcached's "lru_crawler disable"
   does: an enable right after the answer then starts a new thread instead
   of finding the old one still on its way out ("failed to start"). */
void kv_crawler_disable(kv_store *st)
{
	struct kv_crawler *k = st->crawler;
	pthread_mutex_lock(&k->lock);
	st_seqcst(&k->stop, 1);
	pthread_cond_broadcast(&k->wake);
	int join = k->joinable;
	k->joinable = 0;
	pthread_mutex_unlock(&k->lock);
	if (join)
		pthread_join(k->thread, NULL);
}

int kv_crawler_enabled(const kv_store *st)
{
	return ld_seqcst(&st->crawler->alive) && !ld_relaxed(&st->crawler->stop);
}

int kv_crawler_busy(const kv_store *st)
{
	return ld_seqcst(&st->crawler->busy);
}

int kv_crawler_crawl(kv_store *st, uint64_t classes)
{
	struct kv_crawler *k = st->crawler;
	int r = 0;
	pthread_mutex_lock(&k->lock);
	if (!ld_seqcst(&k->alive) || ld_relaxed(&k->stop)) {
		r = -1;
	} else if (k->want || ld_seqcst(&k->busy)) {
		r = 1;
	} else {
		k->want = classes;
		st_seqcst(&k->busy, 1);
		pthread_cond_signal(&k->wake);
	}
	pthread_mutex_unlock(&k->lock);
	return r;
}

void kv_crawler_set(kv_store *st, int64_t sleep_us, int64_t tocrawl)
{
	if (sleep_us >= 0)
		st_relaxed(&st->crawler->sleep_us, (uint32_t)sleep_us);
	if (tocrawl >= 0)
		st_relaxed(&st->crawler->tocrawl, (uint32_t)tocrawl);
}

void kv_crawler_get(const kv_store *st, uint32_t *sleep_us, uint32_t *tocrawl)
{
	*sleep_us = ld_relaxed(&st->crawler->sleep_us);
	*tocrawl = ld_relaxed(&st->crawler->tocrawl);
}

/* Stop and join the thread, and free the crawler (kv_store_close). */
void kv_crawler_delete(kv_store *st)
{
	struct kv_crawler *k = st->crawler;
	if (!k)
		return;
	kv_crawler_disable(st);
	if (k->joinable)
		pthread_join(k->thread, NULL);
	kv_counts_flush(st, &k->cnt);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
	st->crawler = NULL;
}

unsigned kv_store_stripes(const kv_store *st)
{
	return st->assoc.nstripes;
}
