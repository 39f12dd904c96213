/*
 * liblocus-preload's logic in-process: the lp_* functions that the exported
 * pthread_mutex_* / pthread_cond_* call, on real pthread_mutex_t and
 * pthread_cond_t objects, without interposing anything (so this runs under
 * the sanitizers too). Also locus_lock_init_spec, the spec parser the
 * library configures its locks with.
 *
 * The library configures itself once per process from LOCUS_LOCK and
 * LOCUS_PROFILE at its first call; Check runs each test in its own process,
 * so each test sets the environment and then makes its first call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "locus/lock.h"
#include "preload.h"
#include "sync/lock_impl.h"
#include "testutil.h"

#define HERE __builtin_return_address(0)

/* Misuse that glibc answers with EPERM is also a ThreadSanitizer error report
   ("unlock of an unlocked mutex"): those checks run without it. */
#ifdef LOCUS_TEST_TSAN
#define MISUSE_CHECKS 0
#else
#define MISUSE_CHECKS 1
#endif

static const char *const kinds[] = {"tas", "ttas", "ticket", "mcs", "clh", "futex"};
#define NKINDS ((int)(sizeof(kinds) / sizeof(kinds[0])))

static void configure(const char *lock, const char *profile)
{
	if (lock)
		setenv("LOCUS_LOCK", lock, 1);
	else
		unsetenv("LOCUS_LOCK");
	if (profile)
		setenv("LOCUS_PROFILE", profile, 1);
	else
		unsetenv("LOCUS_PROFILE");
	ck_assert_int_eq(lp_ready(), 1);
}

static void deadline_ms(struct timespec *ts, clockid_t clk, long ms)
{
	clock_gettime(clk, ts);
	ts->tv_nsec += ms * 1000000L;
	ts->tv_sec += ts->tv_nsec / NS_PER_S;
	ts->tv_nsec %= NS_PER_S;
}

/* ---- locus_lock_init_spec --------------------------------------------------- */

START_TEST(spec_parse)
{
	locus_lock lk;
	const struct lock *l = lock_of(&lk);
	ck_assert_int_eq(locus_lock_init_spec(&lk, "mcs"), 0);
	ck_assert_int_eq(l->kind, LOCUS_LOCK_MCS);
	ck_assert_int_eq(l->wait.kind, LOCUS_WAIT_SPINPARK);
	ck_assert_uint_eq(l->wait.spins, LOCUS_WAIT_SPINS_DEFAULT);
	ck_assert_uint_eq(l->flags, 0);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "mcs:nocr,park"), 0);
	ck_assert_uint_eq(l->flags, LOCK_NOCR);
	ck_assert_int_eq(l->wait.kind, LOCUS_WAIT_PARK);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "futex:barge"), 0);
	ck_assert_uint_eq(l->flags, LOCK_BARGE);
	locus_lock_destroy(&lk);
	ck_assert_int_eq(locus_lock_init_spec(&lk, "tas:barge,antistarve"), 0);
	ck_assert_uint_eq(l->flags, 0);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "ttas:spin,backoff_max=8"), 0);
	ck_assert_int_eq(l->kind, LOCUS_LOCK_TTAS);
	ck_assert_int_eq(l->wait.kind, LOCUS_WAIT_SPIN);
	ck_assert_uint_eq(l->backoff_max, 8);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "ttas:nobackoff"), 0);
	ck_assert_uint_eq(l->backoff_max, 1);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "ticket:spins=10"), 0);
	ck_assert_uint_eq(l->wait.spins, 10);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "clh"), 0);
	ck_assert_int_eq(locus_lock_trylock(&lk), 0);
	locus_lock_unlock(&lk);
	locus_lock_destroy(&lk);

	ck_assert_int_eq(locus_lock_init_spec(&lk, "mutex"), 0);
	locus_lock_destroy(&lk);

	/* The queue locks' admission: a limit, the default, or none. */
	ck_assert_int_eq(locus_lock_init_spec(&lk, "clh:admit=5"), 0);
	ck_assert_uint_eq(l->admit, 5);
	ck_assert_uint_eq(l->flags & LOCK_STRICT, 0);
	locus_lock_destroy(&lk);
	ck_assert_int_eq(locus_lock_init_spec(&lk, "ticket:park,strict"), 0);
	ck_assert_uint_eq(l->flags & LOCK_STRICT, LOCK_STRICT);
	locus_lock_destroy(&lk);
	ck_assert_int_eq(locus_lock_init_spec(&lk, "mcs:strict,admit"), 0);
	ck_assert_uint_eq(l->flags & LOCK_STRICT, 0);
	ck_assert_uint_eq(l->admit, admit_default());
	ck_assert_uint_ge(l->admit, 2);
	locus_lock_destroy(&lk);

	const char *unknown[] = {"", "nosuch", "mcsx", ":spin", "MCS"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(*unknown); i++)
		ck_assert_msg(locus_lock_init_spec(&lk, unknown[i]) == ENOENT, "'%s'", unknown[i]);
	const char *bad[] = {"mcs:",	      "mcs:bogus",	    "mcs:nocr,",
			     "mcs:,nocr",     "mutex:spin",	    "tas:nocr",
			     "mcs:barge",     "ttas:backoff_max=0", "ttas:backoff_max=x",
			     "ticket:spins=", "futex:spin,,park",   "ticket:admit=1",
			     "tas:strict",    "futex:admit=2"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(locus_lock_init_spec(&lk, bad[i]) == EINVAL, "'%s'", bad[i]);
}
END_TEST

/* ---- configuration ---------------------------------------------------------- */

START_TEST(config_modes)
{
	configure("mcs:nocr", NULL);
	ck_assert_int_eq(lp_cfg.mode, LP_REPLACE);
	ck_assert_int_eq(lp_cfg.profiling, 0);
	/* admit=N: the CPUs this process may run on (at least 2), as the lock says. */
	char expect[64];
	snprintf(expect, sizeof expect, "mcs:spinpark,spins=2048,nocr,admit=%u", admit_default());
	ck_assert_str_eq(lp_cfg.lock_spec, expect);
}
END_TEST

START_TEST(config_unknown_lock)
{
	configure("nosuch", "1");
	ck_assert_int_eq(lp_cfg.mode, LP_PROFILE);
	ck_assert_str_eq(lp_cfg.lock_spec, "pthread");
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	ck_assert_int_eq(lp_mutex_lock(&m, HERE), 0);
	ck_assert_int_eq(lp_mutex_trylock(&m, HERE), EBUSY);
	ck_assert_int_eq(lp_mutex_unlock(&m), 0);
}
END_TEST

START_TEST(config_pass)
{
	configure("mutex", NULL);
	ck_assert_int_eq(lp_cfg.mode, LP_PASS);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	ck_assert_int_eq(lp_mutex_lock(&m, HERE), 0);
	ck_assert_int_eq(m.__data.__lock, 1); /* glibc's own lock word */
	ck_assert_int_eq(lp_mutex_unlock(&m), 0);
}
END_TEST

/* ---- a shared counter ----------------------------------------------------- */

#define WORKERS 4

struct counter {
	pthread_mutex_t m;
	long n;
	int iters;
};

static void *count_worker(void *p)
{
	struct counter *c = p;
	for (int i = 0; i < c->iters; i++) {
		lp_mutex_lock(&c->m, HERE);
		c->n++;
		lp_mutex_unlock(&c->m);
	}
	return NULL;
}

static void run_counter(struct counter *c, int iters)
{
	pthread_t t[WORKERS];
	c->iters = iters;
	for (int i = 0; i < WORKERS; i++)
		test_start_thread(&t[i], count_worker, c);
	for (int i = 0; i < WORKERS; i++)
		ck_assert_int_eq(test_join_within(t[i], 60 * TEST_SLOWDOWN), 0);
	ck_assert_int_eq(c->n, (long)WORKERS * iters);
}

static int counter_iters(const char *kind)
{
	/* clh hands off in FIFO order to preempted waiters: slow when oversubscribed */
	int n = strcmp(kind, "clh") == 0 ? 2000 : 20000;
	return TEST_SANITIZED ? n / 4 : n;
}

START_TEST(counter_each_lock)
{
	configure(kinds[_i], NULL);
	struct counter c = {.m = PTHREAD_MUTEX_INITIALIZER};
	run_counter(&c, counter_iters(kinds[_i]));
	struct lp_shadow *sh = lp_shadow_peek(&c.m, LP_LOCUS);
	ck_assert_ptr_nonnull(sh);
	ck_assert_int_eq(sh->lock.kind, lp_cfg.tpl.kind);
	ck_assert_int_eq(sh->owner, 0);
	/* glibc's own fields were never touched: glibc's destroy accepts it */
	ck_assert_int_eq(c.m.__data.__lock, 0);
	ck_assert_int_eq(lp_mutex_destroy(&c.m), 0);
	ck_assert_ptr_null(lp_shadow_peek(&c.m, LP_LOCUS));
}
END_TEST

START_TEST(counter_profiled)
{
	configure(kinds[_i], "1");
	struct counter c = {.m = PTHREAD_MUTEX_INITIALIZER};
	int iters = counter_iters(kinds[_i]);
	lp_mutex_lock(&c.m, HERE); /* first locked here */
	pthread_t t[WORKERS];
	c.iters = iters;
	for (int i = 0; i < WORKERS; i++)
		test_start_thread(&t[i], count_worker, &c);
	test_sleep_ms(20);
	lp_mutex_unlock(&c.m);
	for (int i = 0; i < WORKERS; i++)
		ck_assert_int_eq(test_join_within(t[i], 60 * TEST_SLOWDOWN), 0);
	ck_assert_int_eq(c.n, (long)WORKERS * iters);
	struct lp_shadow *sh = lp_shadow_peek(&c.m, LP_LOCUS);
	ck_assert_ptr_nonnull(sh);
	const struct lp_stats *s = &sh->st;
	ck_assert_uint_eq(s->acquisitions, 1 + (uint64_t)WORKERS * iters);
	ck_assert_uint_ge(s->contended, 1);
	ck_assert_uint_le(s->contended, s->acquisitions);
	ck_assert_uint_ge(s->changes, 1);
	ck_assert_uint_ge(s->wait_total, s->wait_max);
	ck_assert_uint_ge(s->hold_total, s->hold_max);
	ck_assert_uint_gt(s->hold_max, 0);
	ck_assert_ptr_nonnull(s->hist);
	uint64_t n = 0;
	for (int i = 0; i < LP_HIST_BUCKETS; i++)
		n += s->hist[i];
	ck_assert_uint_eq(n, s->contended);
	ck_assert_int_eq(s->depth, 0);
}
END_TEST

/* Any number of threads, on a mutex in zeroed memory that was never initialized. */
struct many {
	pthread_mutex_t *m;
	long *n;
};

static void *many_worker(void *p)
{
	struct many *a = p;
	for (int i = 0; i < 50; i++) {
		lp_mutex_lock(a->m, HERE);
		(*a->n)++;
		lp_mutex_unlock(a->m);
	}
	return NULL;
}

START_TEST(many_threads)
{
	configure(kinds[_i], NULL);
	enum { T = 48 };
	pthread_mutex_t *m = calloc(1, sizeof(*m));
	long n = 0;
	struct many a = {m, &n};
	pthread_t t[T];
	for (int i = 0; i < T; i++)
		test_start_thread(&t[i], many_worker, &a);
	for (int i = 0; i < T; i++)
		ck_assert_int_eq(test_join_within(t[i], 120 * TEST_SLOWDOWN), 0);
	ck_assert_int_eq(n, 50L * T);
	ck_assert_int_eq(lp_mutex_destroy(m), 0);
	free(m);
}
END_TEST

/* ---- trylock, timedlock, ownership errors ---------------------------------- */

struct other {
	pthread_mutex_t *m;
	int op; /* 0 trylock, 1 timedlock 30 ms, 2 clocklock 20 ms, 3 timedlock bad, 4 unlock */
	int rc;
};

static void *other_main(void *p)
{
	struct other *o = p;
	struct timespec ts;
	switch (o->op) {
	case 0:
		o->rc = lp_mutex_trylock(o->m, HERE);
		break;
	case 1:
		deadline_ms(&ts, CLOCK_REALTIME, 30);
		o->rc = lp_mutex_timedlock(o->m, &ts, HERE);
		break;
	case 2:
		deadline_ms(&ts, CLOCK_MONOTONIC, 20);
		o->rc = lp_mutex_clocklock(o->m, CLOCK_MONOTONIC, &ts, HERE);
		break;
	case 3:
		ts.tv_sec = time(NULL) + 10;
		ts.tv_nsec = NS_PER_S;
		o->rc = lp_mutex_timedlock(o->m, &ts, HERE);
		break;
	default: {
		/* A queue lock's unlock leaves a node in the unlocking thread's pool,
		   which locus frees at thread exit only once that thread has
		   allocated a node itself (docs/preload.md, limits): lock something
		   first, as any thread that unlocks a mutex has. */
		pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
		lp_mutex_lock(&own, HERE);
		lp_mutex_unlock(&own);
		lp_mutex_destroy(&own);
		o->rc = lp_mutex_unlock(o->m);
		return NULL;
	}
	}
	if (o->rc == 0)
		lp_mutex_unlock(o->m);
	return NULL;
}

static int from_other(pthread_mutex_t *m, int op)
{
	struct other o = {m, op, -1};
	pthread_t t;
	test_start_thread(&t, other_main, &o);
	ck_assert_int_eq(test_join_within(t, 30 * TEST_SLOWDOWN), 0);
	return o.rc;
}

START_TEST(try_and_timed)
{
	configure(kinds[_i], _i % 2 ? "1" : NULL);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	ck_assert_int_eq(lp_mutex_unlock(&m), EPERM); /* never locked */
	ck_assert_int_eq(lp_mutex_lock(&m, HERE), 0);
	ck_assert_int_eq(lp_mutex_trylock(&m, HERE), EBUSY);
	ck_assert_int_eq(from_other(&m, 0), EBUSY);
	ck_assert_int_eq(from_other(&m, 1), ETIMEDOUT);
	ck_assert_int_eq(from_other(&m, 2), ETIMEDOUT);
	ck_assert_int_eq(from_other(&m, 3), EINVAL);
	ck_assert_int_eq(lp_mutex_destroy(&m), EBUSY);
	ck_assert_int_eq(lp_mutex_unlock(&m), 0);
	ck_assert_int_eq(lp_mutex_unlock(&m), EPERM); /* not held */
	ck_assert_int_eq(from_other(&m, 0), 0);
	ck_assert_int_eq(from_other(&m, 1), 0);
	ck_assert_int_eq(from_other(&m, 2), 0);
	ck_assert_int_eq(lp_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, NULL, HERE), EINVAL);
	/* a normal mutex may be unlocked by another thread, as with glibc */
	ck_assert_int_eq(lp_mutex_lock(&m, HERE), 0);
	ck_assert_int_eq(from_other(&m, 4), 0);
	ck_assert_int_eq(lp_mutex_trylock(&m, HERE), 0);
	ck_assert_int_eq(lp_mutex_unlock(&m), 0);
	ck_assert_int_eq(lp_mutex_destroy(&m), 0);
}
END_TEST

/* ---- types a locus lock cannot honour ------------------------------------- */

START_TEST(recursive_errorcheck_fallback)
{
	configure("mcs", _i ? "1" : NULL);
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_t r, s = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	ck_assert_int_eq(lp_mutex_init(&r, &a), 0);
	pthread_mutex_t *rs[] = {&r, &s};
	for (int k = 0; k < 2; k++) {
		pthread_mutex_t *m = rs[k];
		ck_assert_int_eq(lp_label_of(m, 1), LP_RECURSIVE);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(lp_mutex_lock(m, HERE), 0);
		ck_assert_int_eq(lp_mutex_trylock(m, HERE), 0);
		ck_assert_int_eq(from_other(m, 0), EBUSY);
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(lp_mutex_unlock(m), 0);
		ck_assert_int_eq(from_other(m, 0), EBUSY);
		ck_assert_int_eq(lp_mutex_unlock(m), 0);
		ck_assert_int_eq(from_other(m, 0), 0);
		if (MISUSE_CHECKS)
			ck_assert_int_eq(lp_mutex_unlock(m), EPERM);
		if (_i) {
			struct lp_shadow *sh = lp_shadow_peek(m, LP_RECURSIVE);
			ck_assert_ptr_nonnull(sh);
			ck_assert_uint_eq(sh->st.acquisitions, 5);
			ck_assert_uint_eq(sh->st.try_busy, 2);
			ck_assert_int_eq(sh->st.depth, 0);
			ck_assert_int_eq(sh->owner, 0);
		} else {
			ck_assert_ptr_null(lp_shadow_peek(m, LP_RECURSIVE)); /* not tracked */
		}
	}
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_t e;
	ck_assert_int_eq(lp_mutex_init(&e, &a), 0);
	ck_assert_int_eq(lp_label_of(&e, 1), LP_ERRORCHECK);
	ck_assert_int_eq(lp_mutex_lock(&e, HERE), 0);
	ck_assert_int_eq(lp_mutex_lock(&e, HERE), EDEADLK);
	if (MISUSE_CHECKS)
		ck_assert_int_eq(from_other(&e, 4), EPERM);
	ck_assert_int_eq(lp_mutex_unlock(&e), 0);
	if (MISUSE_CHECKS)
		ck_assert_int_eq(lp_mutex_unlock(&e), EPERM);
	ck_assert_int_eq(lp_mutex_destroy(&e), 0);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_t rb;
	ck_assert_int_eq(lp_mutex_init(&rb, &a), 0);
	ck_assert_int_eq(lp_label_of(&rb, 1), LP_UNTRACKED);
	ck_assert_int_eq(lp_mutex_lock(&rb, HERE), 0);
	ck_assert_int_eq(lp_mutex_unlock(&rb), 0);
	ck_assert_int_eq(lp_mutex_destroy(&rb), 0);
	pthread_mutexattr_destroy(&a);
	ck_assert_int_eq(lp_mutex_destroy(&r), 0);
}
END_TEST

/* ---- lifecycle: copies, re-initialization without destroy ------------------ */

START_TEST(copies_and_reuse)
{
	configure(kinds[_i], NULL);
	pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER, b;
	ck_assert_int_eq(lp_mutex_lock(&a, HERE), 0);
	ck_assert_int_eq(lp_mutex_unlock(&a), 0);
	memcpy(&b, &a, sizeof(a)); /* carries a's shadow pointer */
	ck_assert_int_eq(lp_mutex_lock(&a, HERE), 0);
	ck_assert_int_eq(from_other(&b, 0), 0); /* b is a mutex of its own */
	ck_assert_int_eq(lp_mutex_lock(&b, HERE), 0);
	ck_assert_ptr_ne(lp_shadow_peek(&a, LP_LOCUS), lp_shadow_peek(&b, LP_LOCUS));
	ck_assert_int_eq(lp_mutex_unlock(&b), 0);
	ck_assert_int_eq(lp_mutex_unlock(&a), 0);
	/* re-initialized without destroy (reused memory): the shadow is recycled */
	struct lp_shadow *before = lp_shadow_peek(&a, LP_LOCUS);
	uint64_t made = lp_shadow_count();
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(lp_mutex_init(&a, NULL), 0);
		ck_assert_ptr_null(lp_shadow_peek(&a, LP_LOCUS));
		ck_assert_int_eq(lp_mutex_lock(&a, HERE), 0);
		ck_assert_int_eq(from_other(&a, 0), EBUSY);
		ck_assert_int_eq(lp_mutex_unlock(&a), 0);
	}
	ck_assert_uint_le(lp_shadow_count(), made + 1);
	ck_assert_ptr_nonnull(before);
	ck_assert_int_eq(lp_mutex_destroy(&a), 0);
	ck_assert_int_eq(lp_mutex_destroy(&b), 0);
}
END_TEST

/* ---- condition variables ----------------------------------------------------- */

#define SLOTS 3

struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	long buf[SLOTS];
	int head, count, done, items;
	long sum, taken;
};

static void *producer(void *p)
{
	struct queue *q = p;
	for (long i = 1; i <= q->items; i++) {
		lp_mutex_lock(&q->m, HERE);
		while (q->count == SLOTS) {
			struct timespec ts;
			deadline_ms(&ts, CLOCK_MONOTONIC, 10000);
			ck_assert_int_eq(lp_cond_timedwait(&q->not_full, &q->m, &ts, HERE), 0);
		}
		q->buf[(q->head + q->count++) % SLOTS] = i;
		lp_cond_signal(&q->not_empty);
		lp_mutex_unlock(&q->m);
	}
	return NULL;
}

static void *consumer(void *p)
{
	struct queue *q = p;
	lp_mutex_lock(&q->m, HERE);
	for (;;) {
		while (q->count == 0 && !q->done)
			lp_cond_wait(&q->not_empty, &q->m, HERE);
		if (q->count == 0)
			break;
		q->sum += q->buf[q->head];
		q->head = (q->head + 1) % SLOTS;
		q->count--;
		q->taken++;
		lp_cond_signal(&q->not_full);
	}
	lp_mutex_unlock(&q->m);
	return NULL;
}

static void run_queue(pthread_mutex_t init)
{
	struct queue q = {.m = init, .not_empty = PTHREAD_COND_INITIALIZER};
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ck_assert_int_eq(lp_cond_init(&q.not_full, &ca), 0);
	pthread_condattr_destroy(&ca);
	q.items = TEST_SANITIZED ? 500 : 3000;
	pthread_t t[4];
	test_start_thread(&t[0], consumer, &q);
	test_start_thread(&t[1], consumer, &q);
	test_start_thread(&t[2], producer, &q);
	test_start_thread(&t[3], producer, &q);
	ck_assert_int_eq(test_join_within(t[2], 120 * TEST_SLOWDOWN), 0);
	ck_assert_int_eq(test_join_within(t[3], 120 * TEST_SLOWDOWN), 0);
	lp_mutex_lock(&q.m, HERE);
	q.done = 1;
	lp_cond_broadcast(&q.not_empty);
	lp_mutex_unlock(&q.m);
	ck_assert_int_eq(test_join_within(t[0], 60 * TEST_SLOWDOWN), 0);
	ck_assert_int_eq(test_join_within(t[1], 60 * TEST_SLOWDOWN), 0);
	ck_assert_int_eq(q.taken, 2L * q.items);
	ck_assert_int_eq(q.sum, (long)q.items * (q.items + 1));
	ck_assert_int_eq(lp_cond_destroy(&q.not_full), 0);
	ck_assert_int_eq(lp_cond_destroy(&q.not_empty), 0);
}

START_TEST(producer_consumer)
{
	configure(kinds[_i], _i % 2 ? "1" : NULL);
	pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	run_queue(normal);
	run_queue(recursive); /* our condvar over glibc's mutex */
}
END_TEST

START_TEST(producer_consumer_original)
{
	configure(NULL, _i ? "1" : NULL);
	pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
	run_queue(normal);
}
END_TEST

START_TEST(cond_timeouts)
{
	configure(kinds[_i], NULL);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts;
	lp_mutex_lock(&m, HERE);
	deadline_ms(&ts, CLOCK_REALTIME, 20);
	int rc;
	while ((rc = lp_cond_timedwait(&c, &m, &ts, HERE)) == 0)
		;
	ck_assert_int_eq(rc, ETIMEDOUT);
	ck_assert_int_eq(from_other(&m, 0), EBUSY); /* held again */
	deadline_ms(&ts, CLOCK_MONOTONIC, 20);
	while ((rc = lp_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts, HERE)) == 0)
		;
	ck_assert_int_eq(rc, ETIMEDOUT);
	ck_assert_int_eq(lp_cond_clockwait(&c, &m, CLOCK_THREAD_CPUTIME_ID, &ts, HERE), EINVAL);
	ts.tv_nsec = -1;
	ck_assert_int_eq(lp_cond_timedwait(&c, &m, &ts, HERE), EINVAL);
	ck_assert_int_eq(lp_mutex_unlock(&m), 0);
	/* waiting with a mutex we do not hold fails without waiting */
	ck_assert_int_eq(lp_cond_wait(&c, &m, HERE), EPERM);
	ck_assert_int_eq(lp_cond_signal(&c), 0);
	ck_assert_int_eq(lp_cond_broadcast(&c), 0);
	ck_assert_int_eq(lp_cond_destroy(&c), 0);
}
END_TEST

/* ---- fork ------------------------------------------------------------------------ */

struct forkwait {
	pthread_mutex_t *m;
	int ready;
};

static void *fork_waiter(void *p)
{
	struct forkwait *f = p;
	__atomic_store_n(&f->ready, 1, __ATOMIC_SEQ_CST);
	lp_mutex_lock(f->m, HERE);
	lp_mutex_unlock(f->m);
	return NULL;
}

START_TEST(fork_child)
{
	configure(kinds[_i], NULL);
	static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER, idle = PTHREAD_MUTEX_INITIALIZER;
	lp_mutex_lock(&idle, HERE);
	lp_mutex_unlock(&idle);
	lp_mutex_lock(&held, HERE);
	struct forkwait f = {&held, 0};
	pthread_t t;
	test_start_thread(&t, fork_waiter, &f);
	while (!__atomic_load_n(&f.ready, __ATOMIC_SEQ_CST))
		test_sleep_ms(1);
	test_sleep_ms(20); /* queued behind us */
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(20);
		int bad = lp_mutex_unlock(&held) != 0 || lp_mutex_lock(&held, HERE) != 0 ||
			  lp_mutex_unlock(&held) != 0 || lp_mutex_lock(&idle, HERE) != 0 ||
			  lp_mutex_unlock(&idle) != 0;
		_exit(bad);
	}
	lp_mutex_unlock(&held);
	ck_assert_int_eq(test_join_within(t, 30 * TEST_SLOWDOWN), 0);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
}
END_TEST

/* ---- the report --------------------------------------------------------------- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	static char buf[1 << 16];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

START_TEST(report_json_and_text)
{
	char json[] = "/tmp/locus-preload-test-XXXXXX";
	int fd = mkstemp(json);
	ck_assert_int_ge(fd, 0);
	close(fd);
	configure("ticket", json);
	ck_assert_str_eq(lp_cfg.json_path, json);
	struct counter c = {.m = PTHREAD_MUTEX_INITIALIZER};
	lp_mutex_lock(&c.m, HERE);
	pthread_t t[WORKERS];
	c.iters = 1000;
	for (int i = 0; i < WORKERS; i++)
		test_start_thread(&t[i], count_worker, &c);
	test_sleep_ms(20);
	lp_mutex_unlock(&c.m);
	for (int i = 0; i < WORKERS; i++)
		ck_assert_int_eq(test_join_within(t[i], 60 * TEST_SLOWDOWN), 0);
	pthread_mutex_t quiet = PTHREAD_MUTEX_INITIALIZER;
	lp_mutex_lock(&quiet, HERE);
	lp_mutex_unlock(&quiet);

	char text[] = "/tmp/locus-preload-text-XXXXXX";
	int tfd = mkstemp(text);
	ck_assert_int_ge(tfd, 0);
	lp_profile_write(tfd, json);
	close(tfd);
	const char *j = slurp(json);
	ck_assert_msg(strstr(j, "\"tool\": \"locus-preload\"") != NULL, "%s", j);
	char lock[64];
	snprintf(lock, sizeof lock, "\"lock\": \"ticket:spinpark,spins=2048,admit=%u\"",
		 admit_default());
	ck_assert_msg(strstr(j, lock) != NULL, "%s", j);
	ck_assert_msg(strstr(j, "\"replaced\": true") != NULL, "%s", j);
	ck_assert_msg(strstr(j, "\"mutexes_used\": 2,") != NULL, "%s", j);
	/* the contended counter first, with every acquisition counted */
	const char *first = strstr(j, "\"rank\": 1,");
	ck_assert_ptr_nonnull(first);
	ck_assert_msg(strstr(first, "\"acquisitions\": 4001,") != NULL, "%s", j);
	ck_assert_msg(strstr(j, "\"acquisitions\": 1,") > strstr(j, "\"rank\": 2,"), "%s", j);
	ck_assert_msg(strstr(j, "\"first_locked_at\": {\"address\": \"0x") != NULL, "%s", j);
	const char *txt = slurp(text);
	ck_assert_msg(strstr(txt, "locus-preload: profile of") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, "Mutex#") != NULL, "%s", txt);
	ck_assert_msg(strstr(txt, " ticket ") != NULL, "%s", txt);
	unlink(json);
	unlink(text);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("preload_core");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, spec_parse);
	tcase_add_test(tc, config_modes);
	tcase_add_test(tc, config_unknown_lock);
	tcase_add_test(tc, config_pass);
	suite_add_tcase(s, tc);

	tc = tcase_create("mutex");
	tcase_set_timeout(tc, 120 * TEST_SLOWDOWN);
	tcase_add_loop_test(tc, counter_each_lock, 0, NKINDS);
	tcase_add_loop_test(tc, counter_profiled, 0, NKINDS);
	tcase_add_loop_test(tc, many_threads, 0, NKINDS);
	tcase_add_loop_test(tc, try_and_timed, 0, NKINDS);
	tcase_add_loop_test(tc, recursive_errorcheck_fallback, 0, 2);
	tcase_add_loop_test(tc, copies_and_reuse, 0, NKINDS);
	tcase_add_loop_test(tc, fork_child, 0, NKINDS);
	suite_add_tcase(s, tc);

	tc = tcase_create("cond");
	tcase_set_timeout(tc, 120 * TEST_SLOWDOWN);
	tcase_add_loop_test(tc, producer_consumer, 0, NKINDS);
	tcase_add_loop_test(tc, producer_consumer_original, 0, 2);
	tcase_add_loop_test(tc, cond_timeouts, 0, NKINDS);
	suite_add_tcase(s, tc);

	tc = tcase_create("profile");
	tcase_set_timeout(tc, 60 * TEST_SLOWDOWN);
	tcase_add_test(tc, report_json_and_text);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run_suite(suite());
}
