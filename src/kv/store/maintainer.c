/*
 * locus-kv's LRU maintainer thread (memcached's lru_maintainer_thread): it keeps each
 * class's segmented LRU in shape (kv_lru_juggle, lru.h) and reclaims the expired and
 * flushed items it meets at the lists' tails, so that memory held by items nobody will
 * read again goes back to the slabs within about a second (the crawler, crawler.c, sweeps
 * the whole table more slowly).
 *
 * As memcached's: each class has its own pace. A class whose juggle did something is
 * looked at again soon (its wait halves, down to none), one that was in shape later (its
 * wait grows by an eighth, from 1 ms up to a second); the thread sleeps until the next
 * class is due, at least 1 ms, and counts each time it wakes (lru_maintainer_juggles).
 * Everything it does runs in the alloc and hash sections; it touches nothing else.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kv/store/store_impl.h"

#define MIN_SLEEP_US	  1000
#define MAX_SLEEP_US	  1000000
#define ROUNDS_PER_JUGGLE 500 /* as memcached: rounds of a class's juggle per wake, at most */

struct kv_maintainer {
	pthread_t thread;
	int joinable;
	int alive; /* atomic */
	int stop;  /* atomic */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint64_t juggles; /* atomic */
	uint32_t next[KV_CLASSES], backoff[KV_CLASSES];
	struct kv_counts cnt;
};

struct kv_maintainer *kv_maintainer_new(void)
{
	struct kv_maintainer *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	pthread_mutex_init(&m->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->wake, &ca);
	pthread_condattr_destroy(&ca);
	return m;
}

/* The expired items a round took off their lists: unlinked, counted reclaimed, dropped. */
static void drop(kv_store *st, struct kv_counts *cnt, struct kv_item **out, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		kv_items_drop_pulled(st, cnt, out[i], 0);
}

/* memcached's lru_maintainer_juggle: TEMP's expired items, then the segments' shapes. */
static unsigned juggle(kv_store *st, struct kv_maintainer *m, unsigned cls)
{
	struct kv_item *out[KV_JUGGLE_OUT];
	unsigned moves = 0, n;
	struct kv_lru_tune t;
	kv_lru_tune_get(st->lru, &t);
	for (int i = 0; t.temp_lru && i < ROUNDS_PER_JUGGLE; i++) {
		unsigned done = kv_lru_juggle(&st->alloc_sec, cls, 1, out, &n);
		drop(st, &m->cnt, out, n);
		if (!done)
			break;
		moves++;
	}
	for (int i = 0; i < ROUNDS_PER_JUGGLE; i++) {
		unsigned done = kv_lru_juggle(&st->alloc_sec, cls, 0, out, &n);
		drop(st, &m->cnt, out, n);
		if (!done)
			break;
		moves++;
	}
	return moves;
}

/* Sleep us microseconds, or less if told to stop. */
static void nap(struct kv_maintainer *m, uint32_t us)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += (long)(us % 1000000) * 1000;
	t.tv_sec += us / 1000000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	pthread_mutex_lock(&m->lock);
	while (!ld_relaxed(&m->stop) && pthread_cond_timedwait(&m->wake, &m->lock, &t) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&m->lock);
}

static void *maintainer_main(void *arg)
{
	kv_store *st = arg;
	struct kv_maintainer *m = st->maintainer;
	unsigned ncls = kv_slabs_nclasses(st->slabs);
	uint32_t to_sleep = MIN_SLEEP_US;
	while (!ld_relaxed(&m->stop)) {
		if (to_sleep) /* none: a class is due now (as memcached, no sleep at all) */
			nap(m, to_sleep);
		if (ld_relaxed(&m->stop))
			break;
		uint32_t slept = to_sleep > MIN_SLEEP_US ? to_sleep : MIN_SLEEP_US;
		to_sleep = MAX_SLEEP_US;
		faa_relaxed(&m->juggles, 1);
		for (unsigned c = 1; c <= ncls; c++) {
			m->next[c] = m->next[c] > slept ? m->next[c] - slept : 0;
			if (m->next[c] == 0) {
				uint32_t *b = &m->backoff[c];
				if (juggle(st, m, c) == 0) {
					*b = *b ? *b + *b / 8 : MIN_SLEEP_US;
					if (*b > MAX_SLEEP_US)
						*b = MAX_SLEEP_US;
				} else if (*b > 0) {
					*b /= 2;
					if (*b < MIN_SLEEP_US)
						*b = 0;
				}
				m->next[c] = *b;
			}
			if (m->next[c] < to_sleep)
				to_sleep = m->next[c];
		}
		kv_counts_flush(st, &m->cnt);
	}
	kv_counts_flush(st, &m->cnt);
	st_seqcst(&m->alive, 0);
	return NULL;
}

int kv_maintainer_start(kv_store *st)
{
	struct kv_maintainer *m = st->maintainer;
	if (ld_seqcst(&m->alive))
		return -1;
	if (m->joinable) {
		pthread_join(m->thread, NULL);
		m->joinable = 0;
	}
	st_seqcst(&m->stop, 0);
	st_seqcst(&m->alive, 1);
	if (pthread_create(&m->thread, NULL, maintainer_main, st) != 0) {
		st_seqcst(&m->alive, 0);
		return -1;
	}
	m->joinable = 1;
	return 0;
}

void kv_maintainer_stop(kv_store *st)
{
	struct kv_maintainer *m = st->maintainer;
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	st_seqcst(&m->stop, 1);
	pthread_cond_broadcast(&m->wake);
	pthread_mutex_unlock(&m->lock);
	if (m->joinable) {
		pthread_join(m->thread, NULL);
		m->joinable = 0;
	}
}

int kv_maintainer_running(const kv_store *st)
{
	return st->maintainer && ld_seqcst(&st->maintainer->alive);
}

uint64_t kv_maintainer_juggles(const kv_store *st)
{
	return st->maintainer ? ld_relaxed(&st->maintainer->juggles) : 0;
}

void kv_maintainer_delete(kv_store *st)
{
	struct kv_maintainer *m = st->maintainer;
	if (!m)
		return;
	kv_maintainer_stop(st);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m);
	st->maintainer = NULL;
}
