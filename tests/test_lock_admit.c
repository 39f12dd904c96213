/*
 * Admission in front of ticket, clh and mcs (lock_admit.c): at most `admit`
 * threads in the lock's queue, the rest wait outside and are let in when the
 * lock falls idle or, oldest first, every LOCUS_LOCK_ADMIT_NS; and the same
 * queue alone as a gate (stm's), which lets the oldest in when it empties or
 * at the first leave a grant is due.
 *
 * The test hook (lock_test.h) runs in a waiter right after it has taken its
 * place in a queue, the moment at which being descheduled hurts most, and in
 * a clh or mcs locker that has seen the lock free, just before it swaps
 * itself in: the stress test sleeps there now and then, as if the scheduler
 * had taken the CPU away; the ordered tests use it to know who is where, and
 * one to stop a thread between its look and its swap.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "locus/lock.h"
#include "sync/flag.h"
#include "sync/lock_impl.h"
#include "sync/lock_test.h"
#include "sync/nodes.h"
#include "testutil.h"

#define HANG_S (30 * TEST_SLOWDOWN)

/* --- cases: kind x options ----------------------------------------------------- */

struct acase {
	const char *spec;
	int admits; /* 0: strict, nobody waits outside */
};

static const struct acase cases[] = {
	{"ticket:admit=2", 1},	      {"ticket:admit=2,park", 1}, {"ticket:admit=2,spin", 1},
	{"ticket:strict", 0},	      {"clh:admit=2", 1},	  {"clh:admit=2,park", 1},
	{"clh:admit=2,spin", 1},      {"clh:strict", 0},	  {"mcs:admit=2", 1},
	{"mcs:admit=2,park", 1},      {"mcs:admit=2,spin", 1},	  {"mcs:nocr,admit=2", 1},
	{"mcs:nocr,admit=2,park", 1}, {"mcs:nocr,strict", 0},	  {"mcs:strict", 0},
	{"ticket:admit=3", 1},	      {"mcs:nocr,admit=5", 1},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* The three kinds with admit=2, for the ordered tests. */
static const char *const ordered_specs[] = {"ticket:admit=2", "clh:admit=2", "mcs:admit=2",
					    "mcs:nocr,admit=2"};
#define NORDERED ((int)(sizeof ordered_specs / sizeof ordered_specs[0]))

static void init_spec(locus_lock *l, const char *spec)
{
	int rc = locus_lock_init_spec(l, spec);
	ck_assert_msg(rc == 0, "%s: locus_lock_init_spec returned %d", spec, rc);
}

/* Threads admitted to the lock's queue, the holder included: clh's and mcs's
   count, and the holder that took the lock free without counting itself (its
   mark stays in the holder word after it frees the lock: it counts only while
   the lock is held). */
static uint32_t admitted(locus_lock *pl)
{
	struct lock *l = lock_of(pl);
	if (l->kind == LOCUS_LOCK_TICKET) {
		uint64_t w = __atomic_load_n(&l->u.ticket.t.both, __ATOMIC_SEQ_CST);
		return (uint32_t)(w >> 32) - (uint32_t)w;
	}
	if (l->kind == LOCUS_LOCK_CLH) {
		int held = !(__atomic_load_n(&l->u.clh.tail, __ATOMIC_SEQ_CST) & 1);
		return __atomic_load_n(&l->u.clh.active, __ATOMIC_SEQ_CST) +
		       (held &&
			(__atomic_load_n(&l->u.clh.holder, __ATOMIC_SEQ_CST) & LOCK_UNCOUNTED));
	}
	int held = __atomic_load_n(&l->u.mcs.tail, __ATOMIC_SEQ_CST) != NULL;
	return __atomic_load_n(&l->u.mcs.active, __ATOMIC_SEQ_CST) +
	       (held && (__atomic_load_n(&l->u.mcs.holder, __ATOMIC_SEQ_CST) & LOCK_UNCOUNTED));
}

/* At rest: nobody admitted, nobody outside. */
static void assert_at_rest(locus_lock *l, const char *spec)
{
	ck_assert_msg(admitted(l) == 0, "%s: %u still counted as admitted", spec, admitted(l));
	ck_assert_msg(lock_of(l)->adm.tail == NULL && lock_of(l)->adm.head == NULL,
		      "%s: the queue outside is not empty", spec);
}

/* --- the hook ------------------------------------------------------------------- */

static __thread int my_id = -1;		 /* the ordered tests' thread number */
static __thread uint32_t my_rand;	 /* the stress test's per-thread random numbers */
static uint32_t hook_calls[LOCK_HOOK_N]; /* by `where` */
static uint32_t hook_seen[LOCK_HOOK_N];	 /* by `where`: bit my_id, once that thread got there */
static int hook_sleeps;			 /* stress: sleep now and then */
/* taken_between_look_and_swap: the thread of this number (-1: none), having
   seen the lock free, waits there until free_look_go is set (the main thread
   has taken the lock meanwhile) */
static int hold_at_free_look = -1;
static int free_look_go;

static void hook(const struct lock *l, int where)
{
	(void)l;
	__atomic_fetch_add(&hook_calls[where], 1, __ATOMIC_RELAXED);
	if (my_id >= 0)
		__atomic_fetch_or(&hook_seen[where], 1u << my_id, __ATOMIC_SEQ_CST);
	if (where == LOCK_HOOK_FREE && my_id >= 0 &&
	    my_id == __atomic_load_n(&hold_at_free_look, __ATOMIC_SEQ_CST))
		while (!__atomic_load_n(&free_look_go, __ATOMIC_SEQ_CST))
			sched_yield();
	if (__atomic_load_n(&hook_sleeps, __ATOMIC_RELAXED)) {
		my_rand = my_rand * 1103515245u + 12345u;
		if ((my_rand >> 16) % 8 == 0) {
			/* Off the CPU for 50-400 us, just after taking a place in line. */
			struct timespec ts = {0, 50000 + (long)((my_rand >> 8) % 8) * 50000};
			nanosleep(&ts, NULL);
		}
	}
}

static void hook_install(int sleeps)
{
	memset(hook_calls, 0, sizeof hook_calls);
	memset(hook_seen, 0, sizeof hook_seen);
	__atomic_store_n(&hold_at_free_look, -1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&free_look_go, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&hook_sleeps, sleeps, __ATOMIC_RELAXED);
	lock_test_set_enqueued(hook);
}

static void hook_remove(void)
{
	lock_test_set_enqueued(NULL);
}

/* Wait (yielding) until thread `id` has passed the hook at `where`. */
static void wait_seen(int where, int id)
{
	while (!(__atomic_load_n(&hook_seen[where], __ATOMIC_SEQ_CST) & (1u << id)))
		sched_yield();
}

/* --- stress: descheduled waiters, no section twice, no update lost --------------- */

#define STRESS_THREADS 12
#define STRESS_ITERS   (TEST_SANITIZED ? 300 : 1500)

/* STRESS_THREADS threads of fn(arg), with the hook sleeping them now and then;
   each must finish within 8 x HANG_S. */
static void run_stressed(void *(*fn)(void *), void *arg, const char *what)
{
	pthread_t th[STRESS_THREADS];
	hook_install(1);
	for (int t = 0; t < STRESS_THREADS; t++)
		test_start_thread(&th[t], fn, arg);
	for (int t = 0; t < STRESS_THREADS; t++)
		ck_assert_msg(test_join_within(th[t], 8 * HANG_S) == 0,
			      "%s: thread %d did not finish within %d s", what, t, 8 * HANG_S);
	hook_remove();
}

struct stress {
	locus_lock l;
	uint64_t plain; /* under l */
	int inside;	/* under l */
	uint32_t iters;
	uint32_t tries; /* successful trylocks */
	pthread_barrier_t start;
};

static void *stress_thread(void *arg)
{
	struct stress *sh = arg;
	my_rand = (uint32_t)(uintptr_t)&my_rand;
	pthread_barrier_wait(&sh->start);
	for (uint32_t j = 0; j < sh->iters; j++) {
		if (j % 8 == 0 && locus_lock_trylock(&sh->l) == 0)
			__atomic_fetch_add(&sh->tries, 1, __ATOMIC_RELAXED);
		else
			locus_lock_lock(&sh->l);
		ck_assert_int_eq(__atomic_exchange_n(&sh->inside, 1, __ATOMIC_RELAXED), 0);
		sh->plain++;
		/* Give the CPU away now and then while holding, so that the others
		   pile up behind even in a slow (sanitized) build. */
		if (j % 4 == 0)
			sched_yield();
		__atomic_store_n(&sh->inside, 0, __ATOMIC_RELAXED);
		locus_lock_unlock(&sh->l);
	}
	return NULL;
}

START_TEST(descheduled_waiters)
{
	const struct acase *c = &cases[_i];
	struct stress *sh = calloc(1, sizeof *sh);
	ck_assert(sh);
	init_spec(&sh->l, c->spec);
	/* With more spinning threads than CPUs, a hand-off waits for a time slice
	   (the spin policy's known collapse): fewer rounds. */
	sh->iters = strstr(c->spec, "spin") ? STRESS_ITERS / 60 + 15 : STRESS_ITERS;
	ck_assert_int_eq(pthread_barrier_init(&sh->start, NULL, STRESS_THREADS), 0);
	run_stressed(stress_thread, sh, c->spec);
	ck_assert_uint_eq(sh->plain, (uint64_t)STRESS_THREADS * sh->iters);
	assert_at_rest(&sh->l, c->spec);
	ck_assert_msg(hook_calls[LOCK_HOOK_QUEUE] > 0, "%s: nobody ever queued?", c->spec);
	if (c->admits)
		ck_assert_msg(hook_calls[LOCK_HOOK_ADMIT] > 0,
			      "%s: %d threads, and nobody ever waited outside?", c->spec,
			      STRESS_THREADS);
	else
		ck_assert_msg(hook_calls[LOCK_HOOK_ADMIT] == 0, "%s: strict, yet %u waited outside",
			      c->spec, hook_calls[LOCK_HOOK_ADMIT]);
	/* Free and usable: a trylock succeeds at once. */
	ck_assert_int_eq(locus_lock_trylock(&sh->l), 0);
	locus_lock_unlock(&sh->l);
	locus_lock_destroy(&sh->l);
	pthread_barrier_destroy(&sh->start);
	free(sh);
}
END_TEST

/* --- ordered: who gets in, and in which order ------------------------------------ */

struct ordered {
	locus_lock l;
	int order[8]; /* thread ids, in the order they held the lock (under l) */
	int n;
	int go;	  /* the first holder may unlock */
	int held; /* grant test: H holds the lock (its first time) */
};

static void record(struct ordered *sh, int id)
{
	sh->order[sh->n++] = id;
}

struct role {
	struct ordered *sh;
	int id;
};

/* Lock, record, unlock. */
static void *plain_thread(void *arg)
{
	struct role *r = arg;
	my_id = r->id;
	locus_lock_lock(&r->sh->l);
	record(r->sh, r->id);
	locus_lock_unlock(&r->sh->l);
	return NULL;
}

/* Until the head waiting outside is published and asleep: it has looked for
   room for the last time (the ordered tests' policy parks outside at once). */
static void wait_head_published(struct lock *l)
{
	struct locus_qnode *h;
	while (!(h = __atomic_load_n(&l->adm.head, __ATOMIC_SEQ_CST)) ||
	       __atomic_load_n(&h->flag, __ATOMIC_SEQ_CST) != FLAG_PARKED)
		sched_yield();
}

/* A lock of `spec` for an ordered test, with the hook recording (not sleeping). */
static struct ordered *ordered_open(const char *spec)
{
	struct ordered *sh = calloc(1, sizeof *sh);
	ck_assert(sh);
	init_spec(&sh->l, spec);
	hook_install(0);
	return sh;
}

/* Every thread has been joined: the lock is at rest, and goes. */
static void ordered_close(struct ordered *sh, const char *spec)
{
	hook_remove();
	assert_at_rest(&sh->l, spec);
	locus_lock_destroy(&sh->l);
	free(sh);
}

/* With the lock held by the caller: thread 1 queues, thread 2 waits outside. */
static void queue_one_and_one_outside(struct ordered *sh, struct role *r, pthread_t *t)
{
	r[0] = (struct role){sh, 1};
	r[1] = (struct role){sh, 2};
	test_start_thread(&t[0], plain_thread, &r[0]);
	wait_seen(LOCK_HOOK_QUEUE, 1);
	test_start_thread(&t[1], plain_thread, &r[1]);
	wait_seen(LOCK_HOOK_ADMIT, 2);
	wait_head_published(lock_of(&sh->l));
}

/*
 * The main thread holds the lock; thread 1 queues behind it (the queue is then
 * full at admit=2); thread 2 finds it full and waits outside. Thread 1 gets the
 * lock next, and its unlock, which leaves nobody admitted, lets thread 2 in.
 */
START_TEST(idle_lock_lets_the_outside_in)
{
	const char *spec = ordered_specs[_i];
	struct ordered *sh = ordered_open(spec);
	struct role r[2];
	pthread_t t[2];
	locus_lock_lock(&sh->l);
	queue_one_and_one_outside(sh, r, t);
	ck_assert_uint_eq(admitted(&sh->l), 2);
	locus_lock_unlock(&sh->l);
	ck_assert_msg(test_join_within(t[0], HANG_S) == 0, "%s: thread 1 never got the lock", spec);
	ck_assert_msg(test_join_within(t[1], HANG_S) == 0,
		      "%s: the lock fell idle and the thread outside was not let in", spec);
	ck_assert_int_eq(sh->n, 2);
	ck_assert_int_eq(sh->order[0], 1);
	ck_assert_int_eq(sh->order[1], 2);
	ordered_close(sh, spec);
}
END_TEST

/* Busy (on the CPU) for at least ns: the condition under test is time passing. */
static void busy_ns(uint64_t ns)
{
	uint64_t t0 = mono_ns();
	while (mono_ns() - t0 < ns)
		;
}

/* H: hold until told, unlock, queue again at once; then hold until the thread
   outside has been let in while the queue stayed full. */
static void *grant_holder(void *arg)
{
	struct role *r = arg;
	struct ordered *sh = r->sh;
	my_id = r->id;
	locus_lock_lock(&sh->l);
	__atomic_store_n(&sh->held, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&sh->go, __ATOMIC_SEQ_CST))
		sched_yield();
	locus_lock_unlock(&sh->l);
	locus_lock_lock(&sh->l);
	record(sh, r->id);
	/* H holds and nobody has left: only a grant by time can bring W2 in. */
	while (admitted(&sh->l) < 2)
		sched_yield();
	locus_lock_unlock(&sh->l);
	return NULL;
}

/* W1: queued behind H; holds until H is queued behind it and the admission
   period has passed, so that its unlock is due to let W2 in. */
static void *grant_first(void *arg)
{
	struct role *r = arg;
	struct ordered *sh = r->sh;
	my_id = r->id;
	locus_lock_lock(&sh->l);
	record(sh, r->id);
	wait_seen(LOCK_HOOK_QUEUE, 0);
	busy_ns(LOCUS_LOCK_ADMIT_NS + LOCUS_LOCK_ADMIT_NS / 4);
	locus_lock_unlock(&sh->l);
	return NULL;
}

/*
 * H (thread 0) holds, W1 (1) queues, W2 (2) waits outside. H unlocks (W1
 * holds) and queues again at once, so the queue stays full and the lock is
 * never idle. W1 holds for longer than LOCUS_LOCK_ADMIT_NS: its unlock lets W2
 * in although the queue is full, and H, holding next, sees W2 admitted.
 * Without the timed grant H would wait for that forever.
 */
START_TEST(full_queue_lets_the_oldest_in_on_time)
{
	const char *spec = ordered_specs[_i];
	struct ordered *sh = ordered_open(spec);
	struct role r0 = {sh, 0}, r1 = {sh, 1}, r2 = {sh, 2};
	pthread_t t0, t1, t2;
	test_start_thread(&t0, grant_holder, &r0);
	/* Holding, not just counted: counted, H may not have queued yet, and W1
	   could then take the lock before it. */
	while (!__atomic_load_n(&sh->held, __ATOMIC_SEQ_CST))
		sched_yield();
	test_start_thread(&t1, grant_first, &r1);
	wait_seen(LOCK_HOOK_QUEUE, 1);
	test_start_thread(&t2, plain_thread, &r2);
	wait_seen(LOCK_HOOK_ADMIT, 2);
	wait_head_published(lock_of(&sh->l));
	/* H's second place in line is its second pass through the hook: clear the first. */
	__atomic_fetch_and(&hook_seen[LOCK_HOOK_QUEUE], ~1u, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->go, 1, __ATOMIC_SEQ_CST);
	ck_assert_msg(test_join_within(t0, HANG_S) == 0,
		      "%s: the queue stayed full and the thread outside was never let in", spec);
	ck_assert_msg(test_join_within(t1, HANG_S) == 0, "%s: W1 did not finish", spec);
	ck_assert_msg(test_join_within(t2, HANG_S) == 0, "%s: W2 did not finish", spec);
	ck_assert_int_eq(sh->n, 3);
	ck_assert_int_eq(sh->order[0], 1);
	ck_assert_int_eq(sh->order[1], 0);
	ck_assert_int_eq(sh->order[2], 2);
	ordered_close(sh, spec);
}
END_TEST

/*
 * clh and mcs: a locker that saw the lock free and then found it taken when
 * it swapped itself into the queue. Thread 1 sees the lock free and stops
 * there (the hook); the main thread takes the lock, uncounted; thread 1
 * swaps itself in behind it and must count itself in, although it never
 * asked for room: two admitted. Thread 2 then finds the queue full and
 * waits outside; thread 1, counted, lets it in when it leaves, and nothing
 * stays counted at the end.
 */
START_TEST(taken_between_look_and_swap)
{
	const char *spec = ordered_specs[_i];
	struct ordered *sh = ordered_open(spec);
	struct role r[2] = {{sh, 1}, {sh, 2}};
	pthread_t t[2];
	__atomic_store_n(&hold_at_free_look, 1, __ATOMIC_SEQ_CST);
	test_start_thread(&t[0], plain_thread, &r[0]);
	wait_seen(LOCK_HOOK_FREE, 1);
	locus_lock_lock(&sh->l);
	__atomic_store_n(&free_look_go, 1, __ATOMIC_SEQ_CST);
	wait_seen(LOCK_HOOK_QUEUE, 1);
	ck_assert_msg(admitted(&sh->l) == 2, "%s: %u admitted, not the holder and thread 1", spec,
		      admitted(&sh->l));
	test_start_thread(&t[1], plain_thread, &r[1]);
	wait_seen(LOCK_HOOK_ADMIT, 2);
	wait_head_published(lock_of(&sh->l));
	locus_lock_unlock(&sh->l);
	ck_assert_msg(test_join_within(t[0], HANG_S) == 0, "%s: thread 1 never got the lock", spec);
	ck_assert_msg(test_join_within(t[1], HANG_S) == 0,
		      "%s: thread 1 left, and the thread outside was not let in", spec);
	ck_assert_int_eq(sh->n, 2);
	ck_assert_int_eq(sh->order[0], 1);
	ck_assert_int_eq(sh->order[1], 2);
	__atomic_store_n(&hold_at_free_look, -1, __ATOMIC_SEQ_CST);
	ordered_close(sh, spec);
}
END_TEST

/* Trylock still succeeds exactly when the lock is free, with threads outside or not. */
START_TEST(trylock_with_threads_outside)
{
	const char *spec = ordered_specs[_i];
	struct ordered *sh = ordered_open(spec);
	struct role r[2];
	pthread_t t[2];
	ck_assert_int_eq(locus_lock_trylock(&sh->l), 0);
	ck_assert_int_eq(locus_lock_trylock(&sh->l), EBUSY);
	queue_one_and_one_outside(sh, r, t);
	ck_assert_int_eq(locus_lock_trylock(&sh->l), EBUSY);
	locus_lock_unlock(&sh->l);
	ck_assert(test_join_within(t[0], HANG_S) == 0);
	ck_assert(test_join_within(t[1], HANG_S) == 0);
	assert_at_rest(&sh->l, spec);
	ck_assert_int_eq(locus_lock_trylock(&sh->l), 0);
	locus_lock_unlock(&sh->l);
	ordered_close(sh, spec);
}
END_TEST

START_TEST(default_admit_is_the_cpus)
{
	locus_lock l;
	ck_assert_int_eq(locus_lock_init(&l, LOCUS_LOCK_TICKET, NULL), 0);
	cpu_set_t set;
	ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
	uint32_t cpus = (uint32_t)CPU_COUNT(&set);
	ck_assert_uint_eq(lock_of(&l)->admit, cpus < 2 ? 2 : cpus);
	ck_assert_uint_eq(lock_of(&l)->flags & LOCK_STRICT, 0);
	locus_lock_destroy(&l);
}
END_TEST

/* --- the gate: admission alone, in front of stm's transactions -------------------- */

struct gate {
	struct lock g;
	int inside;	 /* threads between enter and leave */
	int most_inside; /* stress: the most seen at once */
	int order[8], n; /* thread ids in the order they got in */
	int stay[8];	 /* thread id may leave once this is 0 */
	uint32_t passes; /* stress: passes through the gate */
	uint32_t iters;	 /* stress: per thread */
	pthread_barrier_t start;
};

struct gate_role {
	struct gate *sh;
	int id;
};

static struct gate *gate_open(const locus_wait *w)
{
	struct gate *sh = calloc(1, sizeof *sh);
	ck_assert(sh);
	admit_gate_init(&sh->g, w, 2);
	ck_assert_uint_eq(sh->g.admit, 2);
	return sh;
}

static void gate_assert_at_rest(struct gate *sh)
{
	ck_assert_msg(__atomic_load_n(&sh->g.u.gate.active, __ATOMIC_SEQ_CST) == 0,
		      "%u still counted inside the gate", sh->g.u.gate.active);
	ck_assert_msg(sh->g.adm.tail == NULL && sh->g.adm.head == NULL,
		      "the queue outside the gate is not empty");
}

static void gate_in(struct gate *sh, int id)
{
	admit_gate_enter(&sh->g);
	__atomic_fetch_add(&sh->inside, 1, __ATOMIC_SEQ_CST);
	sh->order[__atomic_fetch_add(&sh->n, 1, __ATOMIC_SEQ_CST)] = id;
}

static void gate_out(struct gate *sh)
{
	__atomic_fetch_sub(&sh->inside, 1, __ATOMIC_SEQ_CST);
	admit_gate_leave(&sh->g);
}

/* Enter, stay until told, leave. */
static void *gate_thread(void *arg)
{
	struct gate_role *r = arg;
	my_id = r->id;
	gate_in(r->sh, r->id);
	while (__atomic_load_n(&r->sh->stay[r->id], __ATOMIC_SEQ_CST))
		sched_yield();
	gate_out(r->sh);
	return NULL;
}

static const locus_wait park_wait = {.kind = LOCUS_WAIT_PARK};

/* Until `n` threads have got in. */
static void gate_wait_in(struct gate *sh, int n)
{
	while (__atomic_load_n(&sh->n, __ATOMIC_SEQ_CST) < n)
		sched_yield();
}

/*
 * admit=2. Threads 0 and 1 get in and stay; 2 and then 3 find the gate full
 * and wait outside, and neither gets in while it stays full. 1 leaves while 0
 * stays (a grant is due: none has been made yet): 2 gets in. 2 leaves, then
 * 0: 3 gets in. (3 looks for room every 2 ms, but the place 2 is given is
 * counted as 2's from the grant on, also while 2 is waking up: 3 cannot take
 * it and enter first.)
 */
START_TEST(gate_keeps_the_surplus_outside_in_order)
{
	struct gate *sh = gate_open(&park_wait);
	struct gate_role r[4];
	pthread_t t[4];
	hook_install(0);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct gate_role){sh, i};
		sh->stay[i] = i < 2;
		test_start_thread(&t[i], gate_thread, &r[i]);
		if (i < 2)
			gate_wait_in(sh, i + 1);
		else
			wait_seen(LOCK_HOOK_ADMIT, i);
		if (i == 2)
			wait_head_published(&sh->g);
	}
	/* 2 is asleep outside and 3 is queued behind it: neither can be in. */
	ck_assert_int_eq(__atomic_load_n(&sh->inside, __ATOMIC_SEQ_CST), 2);
	ck_assert_int_eq(__atomic_load_n(&sh->n, __ATOMIC_SEQ_CST), 2);
	__atomic_store_n(&sh->stay[1], 0, __ATOMIC_SEQ_CST);
	ck_assert_msg(test_join_within(t[1], HANG_S) == 0, "thread 1 could not leave");
	ck_assert_msg(test_join_within(t[2], HANG_S) == 0,
		      "a leave with a grant due did not let the oldest outside in");
	__atomic_store_n(&sh->stay[0], 0, __ATOMIC_SEQ_CST);
	ck_assert_msg(test_join_within(t[0], HANG_S) == 0, "thread 0 could not leave");
	ck_assert_msg(test_join_within(t[3], HANG_S) == 0,
		      "the gate emptied and the thread outside was not let in");
	hook_remove();
	ck_assert_int_eq(sh->n, 4);
	ck_assert_int_eq(sh->order[2], 2);
	ck_assert_int_eq(sh->order[3], 3);
	gate_assert_at_rest(sh);
	free(sh);
}
END_TEST

/* Thread 1 for the next test: in, then out and in again until 2 has been in. */
static void *gate_rotate(void *arg)
{
	struct gate_role *r = arg;
	struct gate *sh = r->sh;
	my_id = r->id;
	gate_in(sh, r->id);
	wait_head_published(&sh->g);
	for (;;) {
		int done = __atomic_load_n(&sh->stay[2], __ATOMIC_SEQ_CST);
		gate_out(sh);
		if (done)
			return NULL;
		admit_gate_enter(&sh->g);
		__atomic_fetch_add(&sh->inside, 1, __ATOMIC_SEQ_CST);
	}
}

/* Thread 2: once in, say so, and leave. */
static void *gate_once(void *arg)
{
	struct gate_role *r = arg;
	my_id = r->id;
	gate_in(r->sh, r->id);
	__atomic_store_n(&r->sh->stay[2], 1, __ATOMIC_SEQ_CST);
	gate_out(r->sh);
	return NULL;
}

/*
 * admit=2, and the gate never empties: thread 0 stays in until the others
 * are done, while thread 1 leaves and comes back, finding room again. Thread
 * 2, asleep outside, must still get in (it looks for room every
 * LOCUS_LOCK_ADMIT_NS and, finding none, asks for a place that one of 1's
 * leaves then gives it; or it finds room itself). Once 2 is in, 1 finds the
 * gate full and waits outside; 2 leaves, with nothing asked of it, and only
 * thread 0 is left inside, waiting for 1: 1 must find the room by itself.
 */
START_TEST(gate_never_empty_lets_the_oldest_in_on_time)
{
	struct gate *sh = gate_open(&park_wait);
	struct gate_role r[3] = {{sh, 0}, {sh, 1}, {sh, 2}};
	pthread_t t[3];
	hook_install(0);
	sh->stay[0] = 1;
	test_start_thread(&t[0], gate_thread, &r[0]);
	gate_wait_in(sh, 1);
	test_start_thread(&t[1], gate_rotate, &r[1]);
	gate_wait_in(sh, 2);
	test_start_thread(&t[2], gate_once, &r[2]);
	ck_assert_msg(test_join_within(t[2], HANG_S) == 0,
		      "the gate stayed busy and the thread outside was never let in");
	ck_assert_msg(test_join_within(t[1], HANG_S) == 0, "thread 1 did not finish");
	ck_assert_int_eq(__atomic_load_n(&sh->stay[0], __ATOMIC_SEQ_CST), 1);
	__atomic_store_n(&sh->stay[0], 0, __ATOMIC_SEQ_CST);
	ck_assert_msg(test_join_within(t[0], HANG_S) == 0, "thread 0 could not leave");
	hook_remove();
	gate_assert_at_rest(sh);
	free(sh);
}
END_TEST

static void *gate_stress_thread(void *arg)
{
	struct gate *sh = arg;
	my_rand = (uint32_t)(uintptr_t)&my_rand;
	pthread_barrier_wait(&sh->start);
	for (uint32_t j = 0; j < sh->iters; j++) {
		admit_gate_enter(&sh->g);
		int in = __atomic_add_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST);
		int most = __atomic_load_n(&sh->most_inside, __ATOMIC_RELAXED);
		while (in > most &&
		       !__atomic_compare_exchange_n(&sh->most_inside, &most, in, 0,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			;
		__atomic_fetch_add(&sh->passes, 1, __ATOMIC_RELAXED);
		if (j % 4 == 0)
			sched_yield();
		__atomic_fetch_sub(&sh->inside, 1, __ATOMIC_SEQ_CST);
		admit_gate_leave(&sh->g);
	}
	return NULL;
}

static const locus_wait gate_waits[] = {
	{.kind = LOCUS_WAIT_SPINPARK, .spins = 100},
	{.kind = LOCUS_WAIT_PARK},
	{.kind = LOCUS_WAIT_SPIN},
};

/* Twelve threads through a gate of two, descheduled now and then just after
   queueing outside: never more than two inside, nobody is lost, and the gate
   ends empty. */
START_TEST(gate_descheduled_waiters)
{
	struct gate *sh = gate_open(&gate_waits[_i]);
	sh->iters = gate_waits[_i].kind == LOCUS_WAIT_SPIN ? STRESS_ITERS / 10 : STRESS_ITERS;
	ck_assert_int_eq(pthread_barrier_init(&sh->start, NULL, STRESS_THREADS), 0);
	run_stressed(gate_stress_thread, sh, "gate");
	ck_assert_uint_eq(sh->passes, (uint32_t)STRESS_THREADS * sh->iters);
	ck_assert_msg(sh->most_inside <= 2, "%d threads inside a gate of 2 at once",
		      sh->most_inside);
	ck_assert_msg(hook_calls[LOCK_HOOK_ADMIT] > 0,
		      "%d threads through a gate of 2, and nobody ever waited outside?",
		      STRESS_THREADS);
	gate_assert_at_rest(sh);
	pthread_barrier_destroy(&sh->start);
	free(sh);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lock_admit");
	TCase *tc = tcase_create("ordered");
	tcase_set_timeout(tc, 4 * HANG_S);
	tcase_add_loop_test(tc, idle_lock_lets_the_outside_in, 0, NORDERED);
	tcase_add_loop_test(tc, full_queue_lets_the_oldest_in_on_time, 0, NORDERED);
	tcase_add_loop_test(tc, trylock_with_threads_outside, 0, NORDERED);
	/* ordered_specs[0] is ticket's, which takes a ticket without a look first */
	tcase_add_loop_test(tc, taken_between_look_and_swap, 1, NORDERED);
	tcase_add_test(tc, default_admit_is_the_cpus);
	tcase_add_test(tc, gate_keeps_the_surplus_outside_in_order);
	tcase_add_test(tc, gate_never_empty_lets_the_oldest_in_on_time);
	suite_add_tcase(s, tc);

	tc = tcase_create("stress");
	tcase_set_timeout(tc, 10 * HANG_S);
	tcase_add_loop_test(tc, descheduled_waiters, 0, NCASES);
	tcase_add_loop_test(tc, gate_descheduled_waiters, 0,
			    (int)(sizeof gate_waits / sizeof gate_waits[0]));
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
