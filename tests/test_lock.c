/*
 * locus_lock, every kind under every waiting policy: trylock never waits,
 * lock() waits exactly until the holder unlocks, nested locks are
 * independent, and counts stay exact while short-lived threads come and go
 * (their queue nodes outlive them in other threads' hands, e.g. in CLH).
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "locus/lock.h"
#include "locus/wait.h"
#include "sync/lock_state.h"
#include "testutil.h"

static const locus_wait_kind policies[] = {LOCUS_WAIT_SPIN, LOCUS_WAIT_SPINPARK, LOCUS_WAIT_PARK};
#define NPOLICIES ((int)(sizeof policies / sizeof policies[0]))
#define NCASES	  (LOCUS_LOCK_NKINDS * NPOLICIES)

/* Bound on anything that must not hang: a trylock, a join after unlock. */
#define HANG_S (30 * TEST_SLOWDOWN)

/* Loop index -> (kind, policy); the name is for messages. */
struct lcase {
	locus_lock_kind kind;
	locus_wait wait;
	char name[64];
};

static struct lcase lcase_of(int i)
{
	struct lcase c;
	c.kind = (locus_lock_kind)(i / NPOLICIES);
	c.wait = locus_wait_default();
	c.wait.kind = policies[i % NPOLICIES];
	snprintf(c.name, sizeof c.name, "%s/%s", locus_lock_kind_name(c.kind),
		 locus_wait_name(&c.wait));
	return c;
}

static void init_lock(locus_lock *l, const struct lcase *c)
{
	int rc = locus_lock_init(l, c->kind, &c->wait);
	ck_assert_msg(rc == 0, "%s: locus_lock_init returned %d", c->name, rc);
}

/* --- trylock ----------------------------------------------------------- */

struct try_arg {
	locus_lock *l;
	int rc;
	int unlock_if_acquired;
};

static void *try_thread(void *arg)
{
	struct try_arg *a = arg;
	a->rc = locus_lock_trylock(a->l);
	if (a->rc == 0 && a->unlock_if_acquired)
		locus_lock_unlock(a->l);
	return NULL;
}

/* trylock from another thread; fails the test if it does not return. */
static int trylock_elsewhere(const struct lcase *c, locus_lock *l, int unlock_if_acquired)
{
	struct try_arg a = {l, -1, unlock_if_acquired};
	pthread_t t;
	test_start_thread(&t, try_thread, &a);
	ck_assert_msg(test_join_within(t, HANG_S) == 0,
		      "%s: trylock in another thread did not return within %d s (it waited)",
		      c->name, HANG_S);
	return a.rc;
}

START_TEST(trylock_semantics)
{
	struct lcase c = lcase_of(_i);
	locus_lock l;
	init_lock(&l, &c);

	ck_assert_msg(locus_lock_trylock(&l) == 0, "%s: trylock of a free lock failed", c.name);
	int rc = trylock_elsewhere(&c, &l, 1);
	ck_assert_msg(rc == EBUSY, "%s: trylock of a held lock returned %d, expected EBUSY (%d)",
		      c.name, rc, EBUSY);
	locus_lock_unlock(&l);

	rc = trylock_elsewhere(&c, &l, 1);
	ck_assert_msg(rc == 0, "%s: trylock after unlock returned %d in another thread", c.name,
		      rc);
	ck_assert_msg(locus_lock_trylock(&l) == 0, "%s: trylock after unlock failed", c.name);
	locus_lock_unlock(&l);

	/* Held by lock() rather than trylock(), released by another thread's trylock+unlock. */
	locus_lock_lock(&l);
	rc = trylock_elsewhere(&c, &l, 1);
	ck_assert_msg(rc == EBUSY, "%s: trylock while held by lock() returned %d", c.name, rc);
	locus_lock_unlock(&l);
	for (int i = 0; i < 100; i++) {
		ck_assert_msg(locus_lock_trylock(&l) == 0, "%s: trylock %d of a free lock failed",
			      c.name, i);
		locus_lock_unlock(&l);
		locus_lock_lock(&l);
		locus_lock_unlock(&l);
	}
	locus_lock_destroy(&l);
}
END_TEST

/* --- lock() waits until unlock ------------------------------------------ */

#define NWAITERS 3

struct block_shared {
	locus_lock l;
	int released;	/* set by the holder just before it unlocks */
	int acquired;	/* waiters that got the lock */
	uint64_t plain; /* incremented under the lock, without atomics */
};

struct block_arg {
	struct block_shared *sh;
	int saw_released;
};

static void *blocking_waiter(void *arg)
{
	struct block_arg *a = arg;
	locus_lock_lock(&a->sh->l);
	a->saw_released = __atomic_load_n(&a->sh->released, __ATOMIC_ACQUIRE);
	__atomic_fetch_add(&a->sh->acquired, 1, __ATOMIC_RELEASE);
	a->sh->plain++;
	locus_lock_unlock(&a->sh->l);
	return NULL;
}

START_TEST(lock_waits_for_unlock)
{
	struct lcase c = lcase_of(_i);
	struct block_shared sh = {0};
	struct block_arg args[NWAITERS];
	pthread_t th[NWAITERS];
	init_lock(&sh.l, &c);

	locus_lock_lock(&sh.l);
	for (int i = 0; i < NWAITERS; i++) {
		args[i] = (struct block_arg){&sh, -1};
		test_start_thread(&th[i], blocking_waiter, &args[i]);
	}
	/* Give the waiters time to queue up (and park); correctness does not depend on it. */
	test_sleep_ms(50);
	int rc = trylock_elsewhere(&c, &sh.l, 1);
	ck_assert_msg(rc == EBUSY, "%s: trylock with waiters queued returned %d", c.name, rc);
	ck_assert_msg(__atomic_load_n(&sh.acquired, __ATOMIC_ACQUIRE) == 0,
		      "%s: a waiter got the lock while it was held", c.name);

	__atomic_store_n(&sh.released, 1, __ATOMIC_RELEASE);
	locus_lock_unlock(&sh.l);
	for (int i = 0; i < NWAITERS; i++)
		ck_assert_msg(test_join_within(th[i], HANG_S) == 0,
			      "%s: waiter %d still blocked %d s after unlock", c.name, i, HANG_S);
	for (int i = 0; i < NWAITERS; i++)
		ck_assert_msg(args[i].saw_released == 1,
			      "%s: waiter %d acquired the lock before the holder released it",
			      c.name, i);
	ck_assert_uint_eq(sh.plain, NWAITERS);
	ck_assert_msg(locus_lock_trylock(&sh.l) == 0, "%s: lock not free after the waiters",
		      c.name);
	locus_lock_unlock(&sh.l);
	locus_lock_destroy(&sh.l);
}
END_TEST

/* --- thread churn -------------------------------------------------------- */

/*
 * CHURN_WAVES waves of CHURN_WAVE short-lived threads, started together, while
 * CHURN_RESIDENT threads run throughout: queue nodes made by a thread that has
 * exited are then still in use by the residents and by the lock itself.
 */
#define CHURN_WAVE     8
#define CHURN_WAVES    25
#define CHURN_RESIDENT 2
#define CHURN_THREADS  (CHURN_WAVE * CHURN_WAVES + CHURN_RESIDENT)
#define CHURN_LOCKS    3

struct churn_shared {
	locus_lock locks[CHURN_LOCKS];
	uint64_t counts[CHURN_LOCKS]; /* counts[i] is protected by locks[i] */
	uint64_t nested;	      /* protected by holding locks[0] and locks[1] */
	uint32_t ops;		      /* per short-lived thread */
	int stop;		      /* residents: finish now */
	pthread_barrier_t wave_start;
};

struct churn_arg {
	struct churn_shared *sh;
	uint32_t id;
	int resident;
	uint64_t did[CHURN_LOCKS]; /* what this thread added to each count */
	uint64_t did_nested;
};

/* Acquire by trylock, retrying a while (yielding), then fall back to lock(). */
static void acquire_by_retry(locus_lock *l)
{
	for (int i = 0; i < 64; i++) {
		if (locus_lock_trylock(l) == 0)
			return;
		sched_yield();
	}
	locus_lock_lock(l);
}

/* One operation, chosen by (thread, op index): one lock, or two nested. */
static void churn_op(struct churn_arg *a, uint32_t j)
{
	struct churn_shared *sh = a->sh;
	uint32_t sel = (a->id * 7u + j) % 5u;
	if (sel < CHURN_LOCKS) {
		locus_lock *l = &sh->locks[sel];
		if (j % 3 == 0)
			acquire_by_retry(l);
		else
			locus_lock_lock(l);
		sh->counts[sel]++;
		a->did[sel]++;
		locus_lock_unlock(l);
	} else if (sel == 3) {
		/* Two locks at once, in lock order; released first-acquired first. */
		locus_lock_lock(&sh->locks[0]);
		locus_lock_lock(&sh->locks[1]);
		sh->nested++;
		sh->counts[0]++;
		sh->counts[1]++;
		a->did_nested++;
		a->did[0]++;
		a->did[1]++;
		locus_lock_unlock(&sh->locks[0]);
		locus_lock_unlock(&sh->locks[1]);
	} else {
		locus_lock_lock(&sh->locks[1]);
		acquire_by_retry(&sh->locks[2]);
		sh->counts[1]++;
		sh->counts[2]++;
		a->did[1]++;
		a->did[2]++;
		locus_lock_unlock(&sh->locks[2]);
		locus_lock_unlock(&sh->locks[1]);
	}
}

static void *churn_thread(void *arg)
{
	struct churn_arg *a = arg;
	struct churn_shared *sh = a->sh;
	if (a->resident) {
		for (uint32_t j = 0; !__atomic_load_n(&sh->stop, __ATOMIC_RELAXED); j++) {
			churn_op(a, j);
			if (j % 16 == 15)
				sched_yield(); /* leave the waves room to run */
		}
		return NULL;
	}
	pthread_barrier_wait(&sh->wave_start);
	for (uint32_t j = 0; j < sh->ops; j++)
		churn_op(a, j);
	return NULL;
}

START_TEST(thread_churn)
{
	struct lcase c = lcase_of(_i);
	struct churn_shared *sh = calloc(1, sizeof *sh);
	struct churn_arg *args = calloc(CHURN_THREADS, sizeof *args);
	pthread_t *th = calloc(CHURN_THREADS, sizeof *th);
	ck_assert(sh && args && th);
	for (int i = 0; i < CHURN_LOCKS; i++)
		init_lock(&sh->locks[i], &c);
	/* Waiters that never park make oversubscription slow: fewer ops for them. */
	int spins_forever = c.wait.kind == LOCUS_WAIT_SPIN && c.kind != LOCUS_LOCK_MUTEX;
	sh->ops = spins_forever ? 80 : 300;
	if (TEST_SANITIZED)
		sh->ops /= spins_forever ? 4 : 3;

	for (int r = 0; r < CHURN_RESIDENT; r++) {
		int t = CHURN_WAVE * CHURN_WAVES + r;
		args[t] = (struct churn_arg){.sh = sh, .id = (uint32_t)t, .resident = 1};
		test_start_thread(&th[t], churn_thread, &args[t]);
	}
	for (int wave = 0; wave < CHURN_WAVES; wave++) {
		ck_assert_int_eq(pthread_barrier_init(&sh->wave_start, NULL, CHURN_WAVE), 0);
		for (int k = 0; k < CHURN_WAVE; k++) {
			int t = wave * CHURN_WAVE + k;
			args[t] = (struct churn_arg){.sh = sh, .id = (uint32_t)t};
			test_start_thread(&th[t], churn_thread, &args[t]);
		}
		for (int k = 0; k < CHURN_WAVE; k++)
			ck_assert_msg(test_join_within(th[wave * CHURN_WAVE + k], HANG_S) == 0,
				      "%s: thread %d of wave %d did not finish within %d s", c.name,
				      k, wave, HANG_S);
		pthread_barrier_destroy(&sh->wave_start);
	}
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (int r = 0; r < CHURN_RESIDENT; r++)
		ck_assert_msg(test_join_within(th[CHURN_WAVE * CHURN_WAVES + r], HANG_S) == 0,
			      "%s: resident thread %d did not finish within %d s", c.name, r,
			      HANG_S);

	uint64_t want[CHURN_LOCKS] = {0}, want_nested = 0;
	for (int t = 0; t < CHURN_THREADS; t++) {
		for (int i = 0; i < CHURN_LOCKS; i++)
			want[i] += args[t].did[i];
		want_nested += args[t].did_nested;
	}
	for (int i = 0; i < CHURN_LOCKS; i++) {
		ck_assert_msg(sh->counts[i] == want[i], "%s: lock %d: count %llu, expected %llu",
			      c.name, i, (unsigned long long)sh->counts[i],
			      (unsigned long long)want[i]);
		ck_assert_msg(locus_lock_trylock(&sh->locks[i]) == 0,
			      "%s: lock %d not free at the end", c.name, i);
		locus_lock_unlock(&sh->locks[i]);
		locus_lock_destroy(&sh->locks[i]);
	}
	ck_assert_msg(sh->nested == want_nested, "%s: nested count %llu, expected %llu", c.name,
		      (unsigned long long)sh->nested, (unsigned long long)want_nested);
	free(th);
	free(args);
	free(sh);
}
END_TEST

/* --- mcs: passive waiters are readmitted within a bound ------------------- */

/*
 * lock.h's promise for mcs with concurrency restriction (the default): a
 * waiter that restriction moved aside is readmitted, oldest first, at the
 * first hand-off at which MCS_CR_READMIT_NS have passed since the previous
 * readmission (or 8192 hand-offs, if sooner; never here). Every section here
 * lasts at least BYPASS_SECTION_NS, so at most BYPASS_PER_READMIT hand-offs
 * pass between two readmissions, and a waiter k-th in the passive list waits
 * at most k times that many. The test counts hand-offs, not time: each thread
 * counts the sections completed between just before its lock() and its
 * acquisition; the sections' length enters only as a minimum, which a sleep
 * guarantees however slow the machine.
 *
 * The holder sleeps, leaving the cores to the others, so the thread it handed
 * to is usually queued again by the next hand-off and restriction moves every
 * other thread aside: the case where the lock used to starve them (it looked
 * at the clock only every 256 hand-offs). The sleep is the section's work,
 * not synchronization.
 */
#define MCS_CR_READMIT_NS  2000000 /* lock.h, mcs */
#define BYPASS_SECTION_NS  500000
#define BYPASS_THREADS	   16
#define BYPASS_ITERS	   50
#define BYPASS_PER_READMIT ((MCS_CR_READMIT_NS + BYPASS_SECTION_NS - 1) / BYPASS_SECTION_NS)
/*
 * A waiter is passive behind at most all the others but the holder; before
 * it is moved aside it passes the few threads queued ahead of it and any
 * readmissions in between. A thread held up between reading the count and
 * queueing (preempted, or its virtual CPU descheduled on a loaded machine)
 * also counts the sections that ran meanwhile: an allowance of 16 sections
 * per thread covers a hold-up of about 100 ms. The lock's own bound here is
 * about 60; before readmission was checked at every hand-off, waits of 640
 * sections were the rule.
 */
#define BYPASS_BOUND ((BYPASS_THREADS - 1) * BYPASS_PER_READMIT + 16 * BYPASS_THREADS)

struct bypass_shared {
	locus_lock l;
	uint64_t sections; /* completed; written under the lock, read anywhere (atomics) */
	uint64_t plain;	   /* sections again, without atomics: mutual exclusion */
	int use_trylock;
	pthread_barrier_t start;
};

struct bypass_arg {
	struct bypass_shared *sh;
	uint64_t max_bypass;
	uint32_t max_at; /* the iteration of that wait */
};

/* A section that lasts at least BYPASS_SECTION_NS, with the holder off its core. */
static void bypass_section(void)
{
	struct timespec ts = {0, BYPASS_SECTION_NS};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void *bypass_thread(void *arg)
{
	struct bypass_arg *a = arg;
	struct bypass_shared *sh = a->sh;
	pthread_barrier_wait(&sh->start);
	for (uint32_t j = 0; j < BYPASS_ITERS; j++) {
		uint64_t c0 = __atomic_load_n(&sh->sections, __ATOMIC_RELAXED);
		/* A trylock succeeds only when nobody waits, passive waiters included. */
		if (!(sh->use_trylock && j % 4 == 0 && locus_lock_trylock(&sh->l) == 0))
			locus_lock_lock(&sh->l);
		uint64_t bypass = __atomic_load_n(&sh->sections, __ATOMIC_RELAXED) - c0;
		if (bypass > a->max_bypass) {
			a->max_bypass = bypass;
			a->max_at = j;
		}
		bypass_section();
		sh->plain++;
		__atomic_store_n(&sh->sections, sh->plain, __ATOMIC_RELAXED);
		locus_lock_unlock(&sh->l);
	}
	return NULL;
}

START_TEST(mcs_passive_bypass_bounded)
{
	const char *name = _i ? "mcs (some trylock)" : "mcs";
	struct bypass_shared *sh = calloc(1, sizeof *sh);
	struct bypass_arg args[BYPASS_THREADS];
	pthread_t th[BYPASS_THREADS];
	ck_assert(sh);
	ck_assert_int_eq(locus_lock_init(&sh->l, LOCUS_LOCK_MCS, NULL), 0);
	sh->use_trylock = _i;
	ck_assert_int_eq(pthread_barrier_init(&sh->start, NULL, BYPASS_THREADS), 0);
	for (int t = 0; t < BYPASS_THREADS; t++) {
		args[t] = (struct bypass_arg){.sh = sh};
		test_start_thread(&th[t], bypass_thread, &args[t]);
	}
	for (int t = 0; t < BYPASS_THREADS; t++)
		ck_assert_msg(test_join_within(th[t], 4 * HANG_S) == 0,
			      "%s: thread %d did not finish within %d s", name, t, 4 * HANG_S);
	ck_assert_uint_eq(sh->plain, (uint64_t)BYPASS_THREADS * BYPASS_ITERS);
	int worst = 0;
	for (int t = 1; t < BYPASS_THREADS; t++)
		if (args[t].max_bypass > args[worst].max_bypass)
			worst = t;
	ck_assert_msg(args[worst].max_bypass <= BYPASS_BOUND,
		      "%s: thread %d waited while %llu sections ran (iteration %u); with %d "
		      "threads the bound is %d",
		      name, worst, (unsigned long long)args[worst].max_bypass, args[worst].max_at,
		      BYPASS_THREADS, BYPASS_BOUND);
	pthread_barrier_destroy(&sh->start);
	locus_lock_destroy(&sh->l);
	free(sh);
}
END_TEST

/* --- tas, ttas, futex: the reservation for a starving waiter ------------------ */

static const locus_lock_kind word_kinds[] = {LOCUS_LOCK_TAS, LOCUS_LOCK_TTAS, LOCUS_LOCK_FUTEX};
#define NWORD_CASES (3 * NPOLICIES)

static struct lcase word_case(int i)
{
	struct lcase c = lcase_of(0);
	c.kind = word_kinds[i / NPOLICIES];
	c.wait.kind = policies[i % NPOLICIES];
	snprintf(c.name, sizeof c.name, "%s/%s", locus_lock_kind_name(c.kind),
		 locus_wait_name(&c.wait));
	return c;
}

static int reservation_out(locus_lock *pl)
{
	struct lock *l = lock_of(pl);
	return __atomic_load_n(&l->u.word.urgent_next, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&l->u.word.urgent_owner, __ATOMIC_ACQUIRE);
}

/* While a ticket is out the lock is not for the taking, even free, even by trylock. */
START_TEST(word_reserved_refuses_others)
{
	struct lcase c = word_case(_i);
	locus_lock l;
	init_lock(&l, &c);
	__atomic_store_n(&lock_of(&l)->u.word.urgent_next, 1,
			 __ATOMIC_RELEASE); /* a waiter's ticket */
	ck_assert_msg(locus_lock_trylock(&l) == EBUSY, "%s: trylock took a reserved lock", c.name);
	ck_assert_int_eq(trylock_elsewhere(&c, &l, 1), EBUSY);
	__atomic_store_n(&lock_of(&l)->u.word.urgent_owner, 1,
			 __ATOMIC_RELEASE); /* its turn has passed */
	ck_assert_msg(locus_lock_trylock(&l) == 0, "%s: trylock failed once unreserved", c.name);
	locus_lock_unlock(&l);
	locus_lock_destroy(&l);
}
END_TEST

struct starve_shared {
	locus_lock l;
	uint32_t seq;	  /* under l */
	uint32_t victim;  /* seq when the victim held l */
	uint32_t barger;  /* seq when the barger first held l */
	int barger_going; /* about to call lock() */
};

static void *starve_victim(void *arg)
{
	struct starve_shared *sh = arg;
	locus_lock_lock(&sh->l);
	sh->victim = ++sh->seq;
	locus_lock_unlock(&sh->l);
	return NULL;
}

static void *starve_barger(void *arg)
{
	struct starve_shared *sh = arg;
	__atomic_store_n(&sh->barger_going, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 1000; i++) {
		locus_lock_lock(&sh->l);
		if (!sh->barger)
			sh->barger = ++sh->seq;
		locus_lock_unlock(&sh->l);
	}
	return NULL;
}

/*
 * The holder keeps the lock until the victim, blocked behind it, has waited
 * the threshold and reserved; a barger then hammers the lock from the moment
 * it is released. The victim must hold it first, whatever the policy.
 */
START_TEST(word_starving_waiter_goes_first)
{
	struct lcase c = word_case(_i);
	struct starve_shared *sh = calloc(1, sizeof *sh);
	ck_assert(sh);
	init_lock(&sh->l, &c);
	locus_lock_lock(&sh->l);
	pthread_t v, b;
	test_start_thread(&v, starve_victim, sh);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!reservation_out(&sh->l)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		ck_assert_msg(now.tv_sec - t0.tv_sec < HANG_S,
			      "%s: the blocked waiter did not reserve within %d s", c.name, HANG_S);
		sched_yield();
	}
	test_start_thread(&b, starve_barger, sh);
	while (!__atomic_load_n(&sh->barger_going, __ATOMIC_ACQUIRE))
		sched_yield();
	locus_lock_unlock(&sh->l);
	ck_assert_msg(test_join_within(v, HANG_S) == 0, "%s: the reserving waiter hung", c.name);
	ck_assert_msg(test_join_within(b, HANG_S) == 0, "%s: the barger hung", c.name);
	ck_assert_msg(sh->victim == 1 && sh->barger == 2,
		      "%s: the barger held the lock (%u) before the waiter that reserved it (%u)",
		      c.name, sh->barger, sh->victim);
	ck_assert_msg(!reservation_out(&sh->l), "%s: a reservation left behind", c.name);
	ck_assert_int_eq(locus_lock_trylock(&sh->l), 0);
	locus_lock_unlock(&sh->l);
	locus_lock_destroy(&sh->l);
	free(sh);
}
END_TEST

/* Many waiters reserving at once: tickets are served one after another, none is lost. */
#define CHAIN_THREADS 12
#define CHAIN_ITERS   (TEST_SANITIZED ? 15 : 30) /* per thread: 12 x that many 1 ms sections */

struct chain_shared {
	locus_lock l;
	uint64_t plain; /* under l */
	int inside;	/* under l: 1 while a section runs */
};

static void *chain_thread(void *arg)
{
	struct chain_shared *sh = arg;
	for (int i = 0; i < CHAIN_ITERS; i++) {
		locus_lock_lock(&sh->l);
		ck_assert_int_eq(sh->inside, 0);
		sh->inside = 1;
		/* A 1 ms section, so that waiters behind 11 others pass the 10 ms mark. */
		struct timespec t0, now;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &now);
		while ((now.tv_sec - t0.tv_sec) * NS_PER_S + (now.tv_nsec - t0.tv_nsec) < 1000000L);
		sh->plain++;
		sh->inside = 0;
		locus_lock_unlock(&sh->l);
	}
	return NULL;
}

START_TEST(word_reservation_chains)
{
	struct lcase c = word_case(_i);
	struct chain_shared *sh = calloc(1, sizeof *sh);
	pthread_t th[CHAIN_THREADS];
	ck_assert(sh);
	init_lock(&sh->l, &c);
	for (int t = 0; t < CHAIN_THREADS; t++)
		test_start_thread(&th[t], chain_thread, sh);
	for (int t = 0; t < CHAIN_THREADS; t++)
		ck_assert_msg(test_join_within(th[t], 4 * HANG_S) == 0,
			      "%s: thread %d did not finish within %d s", c.name, t, 4 * HANG_S);
	ck_assert_uint_eq(sh->plain, (uint64_t)CHAIN_THREADS * CHAIN_ITERS);
	ck_assert_msg(!reservation_out(&sh->l), "%s: tickets %u, served %u: one was lost", c.name,
		      lock_of(&sh->l)->u.word.urgent_next, lock_of(&sh->l)->u.word.urgent_owner);
	ck_assert_msg(lock_of(&sh->l)->u.word.urgent_next > 0,
		      "%s: nobody waited 10 ms to reserve?", c.name);
	ck_assert_int_eq(locus_lock_trylock(&sh->l), 0);
	locus_lock_unlock(&sh->l);
	locus_lock_destroy(&sh->l);
	free(sh);
}
END_TEST

/* --- nesting --------------------------------------------------------------- */

/* Two locks of the given kinds held at once by one thread, released in either order. */
static void nest(locus_lock_kind k1, locus_lock_kind k2, const locus_wait *w)
{
	const char *n1 = locus_lock_kind_name(k1), *n2 = locus_lock_kind_name(k2);
	locus_lock a, b;
	ck_assert_int_eq(locus_lock_init(&a, k1, w), 0);
	ck_assert_int_eq(locus_lock_init(&b, k2, w), 0);
	for (int round = 0; round < 4; round++) {
		locus_lock_lock(&a);
		if (round % 2)
			ck_assert_msg(locus_lock_trylock(&b) == 0,
				      "%s->%s: trylock of inner failed", n1, n2);
		else
			locus_lock_lock(&b);
		/* Both held: another thread sees both busy. */
		struct lcase c1 = {.kind = k1}, c2 = {.kind = k2};
		snprintf(c1.name, sizeof c1.name, "%s (outer)", n1);
		snprintf(c2.name, sizeof c2.name, "%s (inner)", n2);
		ck_assert_int_eq(trylock_elsewhere(&c1, &a, 1), EBUSY);
		ck_assert_int_eq(trylock_elsewhere(&c2, &b, 1), EBUSY);
		if (round < 2) {
			locus_lock_unlock(&b);
			ck_assert_int_eq(trylock_elsewhere(&c2, &b, 1), 0);
			ck_assert_int_eq(trylock_elsewhere(&c1, &a, 1), EBUSY);
			locus_lock_unlock(&a);
		} else {
			locus_lock_unlock(&a);
			ck_assert_int_eq(trylock_elsewhere(&c1, &a, 1), 0);
			ck_assert_int_eq(trylock_elsewhere(&c2, &b, 1), EBUSY);
			locus_lock_unlock(&b);
		}
		ck_assert_int_eq(trylock_elsewhere(&c1, &a, 1), 0);
		ck_assert_int_eq(trylock_elsewhere(&c2, &b, 1), 0);
	}
	locus_lock_destroy(&a);
	locus_lock_destroy(&b);
}

START_TEST(nested_same_kind)
{
	locus_wait w = locus_wait_default();
	nest((locus_lock_kind)_i, (locus_lock_kind)_i, &w);
}
END_TEST

START_TEST(nested_mixed_kinds)
{
	locus_wait w = locus_wait_default();
	for (int k = 0; k < LOCUS_LOCK_NKINDS; k++)
		if (k != _i)
			nest((locus_lock_kind)_i, (locus_lock_kind)k, &w);
}
END_TEST

/* Deep nesting in one thread: a queue lock's per-thread node pool must supply many nodes. */
START_TEST(nested_deep)
{
	enum { DEPTH = 40 };
	locus_lock ls[DEPTH];
	locus_wait w = locus_wait_default();
	for (int i = 0; i < DEPTH; i++)
		ck_assert_int_eq(locus_lock_init(&ls[i], (locus_lock_kind)_i, &w), 0);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < DEPTH; i++)
			locus_lock_lock(&ls[i]);
		for (int i = 0; i < DEPTH; i++) {
			int j = round == 0 ? DEPTH - 1 - i : round == 1 ? i : (i * 7) % DEPTH;
			locus_lock_unlock(&ls[j]);
		}
	}
	for (int i = 0; i < DEPTH; i++) {
		ck_assert_int_eq(locus_lock_trylock(&ls[i]), 0);
		locus_lock_unlock(&ls[i]);
		locus_lock_destroy(&ls[i]);
	}
}
END_TEST

/* --- names ----------------------------------------------------------------- */

START_TEST(kind_names_round_trip)
{
	static const char *const expect[LOCUS_LOCK_NKINDS] = {"mutex", "tas", "ttas", "ticket",
							      "mcs",   "clh", "futex"};
	for (int k = 0; k < LOCUS_LOCK_NKINDS; k++) {
		const char *name = locus_lock_kind_name((locus_lock_kind)k);
		ck_assert_pstr_eq(name, expect[k]);
		locus_lock_kind parsed = LOCUS_LOCK_NKINDS;
		ck_assert_int_eq(locus_lock_kind_parse(name, &parsed), 0);
		ck_assert_int_eq(parsed, k);
	}
	ck_assert_ptr_null(locus_lock_kind_name(LOCUS_LOCK_NKINDS));
	locus_lock_kind untouched = LOCUS_LOCK_MCS;
	ck_assert_int_eq(locus_lock_kind_parse("nosuch", &untouched), -1);
	ck_assert_int_eq(locus_lock_kind_parse("", &untouched), -1);
	ck_assert_int_eq(locus_lock_kind_parse("mcsx", &untouched), -1);
	ck_assert_int_eq(locus_lock_kind_parse("mc", &untouched), -1);
}
END_TEST

START_TEST(init_rejects_bad_kind)
{
	locus_lock l;
	ck_assert_int_ne(locus_lock_init(&l, LOCUS_LOCK_NKINDS, NULL), 0);
}
END_TEST

START_TEST(init_default_wait)
{
	/* wait = NULL: the default policy. */
	locus_lock l;
	ck_assert_int_eq(locus_lock_init(&l, (locus_lock_kind)_i, NULL), 0);
	locus_lock_lock(&l);
	locus_lock_unlock(&l);
	ck_assert_int_eq(locus_lock_trylock(&l), 0);
	locus_lock_unlock(&l);
	locus_lock_destroy(&l);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lock");

	TCase *tc = tcase_create("semantics");
	tcase_set_timeout(tc, 4 * HANG_S);
	tcase_add_loop_test(tc, trylock_semantics, 0, NCASES);
	tcase_add_loop_test(tc, lock_waits_for_unlock, 0, NCASES);
	tcase_add_loop_test(tc, init_default_wait, 0, LOCUS_LOCK_NKINDS);
	tcase_add_test(tc, kind_names_round_trip);
	tcase_add_test(tc, init_rejects_bad_kind);
	suite_add_tcase(s, tc);

	tc = tcase_create("nesting");
	tcase_set_timeout(tc, 4 * HANG_S);
	tcase_add_loop_test(tc, nested_same_kind, 0, LOCUS_LOCK_NKINDS);
	tcase_add_loop_test(tc, nested_mixed_kinds, 0, LOCUS_LOCK_NKINDS);
	tcase_add_loop_test(tc, nested_deep, 0, LOCUS_LOCK_NKINDS);
	suite_add_tcase(s, tc);

	tc = tcase_create("mcs_restriction");
	tcase_set_timeout(tc, 8 * HANG_S);
	tcase_add_loop_test(tc, mcs_passive_bypass_bounded, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("word_reservation");
	tcase_set_timeout(tc, 8 * HANG_S);
	tcase_add_loop_test(tc, word_reserved_refuses_others, 0, NWORD_CASES);
	tcase_add_loop_test(tc, word_starving_waiter_goes_first, 0, NWORD_CASES);
	tcase_add_loop_test(tc, word_reservation_chains, 0, NWORD_CASES);
	suite_add_tcase(s, tc);

	tc = tcase_create("churn");
	tcase_set_timeout(tc, 6 * HANG_S);
	tcase_add_loop_test(tc, thread_churn, 0, NCASES);
	suite_add_tcase(s, tc);

	return test_run_suite(s);
}
