/*
 * Synchronization objects that live in shared memory and are named by
 * their address, as a program written for threads keeps its pthread
 * objects inside its shared structures: any number of them, zero-filled
 * memory a fresh one, no registration. (Splash programs keep thousands of
 * locks in their allocated structs.)
 *
 *   mutex      the DSM lock whose id is the object's place in the region
 *              (dsm_addr_lock), so lock, trylock and unlock are the DSM
 *              lock's, with its hand-offs between a node's threads
 *   condition  a sequence number at the object's home: wait reads it, lets
 *              the mutex go, and waits (polling it with a growing sleep)
 *              until a signal or broadcast has moved it, then takes the
 *              mutex again; every waiter wakes (POSIX allows it)
 *   semaphore  a count at its home, taken by compare-exchange
 *   barrier    a count and a generation at its home: arriving is one
 *              shipped call (the last of `participants` resets the count
 *              and moves the generation); a caller from another node is
 *              answered only then (dsm_ship_park), one at the home sleeps
 *              on the generation
 *
 * Every read and change of an object's words is a shipped call to its home
 * (ship.c, atomic.c): under lrc each one is a release and an acquire, so
 * taking a mutex, returning from a condition wait, taking a semaphore and
 * passing a barrier are acquires, and their counterparts releases. At the
 * home the calling thread does it itself (dsm_call_atomic), and a thread
 * there that waits for a word to move sleeps on the word (a futex) that
 * whoever moves it wakes; a thread on another node ships a wait whose answer
 * the home holds back until the word moves (dsm_ship_park), and polls only
 * where the home cannot hold it (a call its own server makes).
 *
 * On one node there is nobody to carry writes to: a mutex is then the word
 * itself, taken and given as a futex lock (0 free, 1 held, 2 held with
 * sleepers), without the communication thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/futex.h"
#include "internal.h"

/*
 * What this node's threads wait at, for the deadlock watchdog (watch.c,
 * through dsm_sync_describe): a wait that never ends then names its object,
 * its home and its count, so that two nodes waiting at two different
 * barrier objects (each allocated its own with locus_dsm_malloc, say) show
 * two addresses. A few objects at once; the rest are counted.
 */
#define WAITS_NAMED 4
static struct {
	const void *obj;
	const char *what;
	uint64_t count; /* participants of a barrier; 0 for the others */
	uint32_t threads;
} waits[WAITS_NAMED];
static uint32_t waits_other;
static pthread_mutex_t waits_mu = PTHREAD_MUTEX_INITIALIZER;

/* A thread of this node starts waiting at obj: the slot it took, or -1. */
static int wait_begin(const void *obj, const char *what, uint64_t count)
{
	int slot = -1;
	pthread_mutex_lock(&waits_mu);
	for (int i = 0; i < WAITS_NAMED && slot < 0; i++)
		if (waits[i].threads && waits[i].obj == obj)
			slot = i;
	for (int i = 0; i < WAITS_NAMED && slot < 0; i++)
		if (!waits[i].threads) {
			slot = i;
			waits[i].obj = obj;
			waits[i].what = what;
			waits[i].count = count;
		}
	if (slot >= 0)
		waits[slot].threads++;
	else
		waits_other++;
	pthread_mutex_unlock(&waits_mu);
	return slot;
}

static void wait_end(int slot)
{
	pthread_mutex_lock(&waits_mu);
	if (slot >= 0)
		waits[slot].threads--;
	else
		waits_other--;
	pthread_mutex_unlock(&waits_mu);
}

size_t dsm_objects_describe(char *buf, size_t cap, size_t at)
{
	pthread_mutex_lock(&waits_mu);
	for (int i = 0; i < WAITS_NAMED && at < cap; i++) {
		if (!waits[i].threads)
			continue;
		char count[48] = "";
		if (waits[i].count)
			snprintf(count, sizeof(count), ", %llu participants",
				 (unsigned long long)waits[i].count);
		at += (size_t)snprintf(buf + at, cap - at, "%swaits at %s %p (home node %d%s): %u thread%s",
				       at ? "; " : "", waits[i].what, waits[i].obj,
				       locus_dsm_home(waits[i].obj), count, waits[i].threads,
				       waits[i].threads == 1 ? "" : "s");
	}
	if (waits_other && at < cap)
		at += (size_t)snprintf(buf + at, cap - at, "%s%u more waiting at other objects",
				       at ? "; " : "", waits_other);
	pthread_mutex_unlock(&waits_mu);
	return at;
}

/* An object's words must be aligned words of the region. */
static void check(const char *call, const void *obj)
{
	if (locus_dsm_home(obj) < 0 || (uintptr_t)obj % 8) {
		fprintf(stderr,
			"locus-dsm: %s: %p is not an aligned object in the shared region "
			"(allocate it with locus_dsm_malloc or locus_dsm_alloc)\n",
			call, obj);
		exit(1);
	}
}

/* Between polls of a word another node will change: from 20 us to 1 ms. */
static void pause_for(unsigned *us)
{
	struct timespec t = {0, (long)*us * 1000};
	nanosleep(&t, NULL);
	if (*us < 1000)
		*us *= 2;
}

/* At a word's home, for a caller elsewhere: the word once it no longer
   holds seen. The answer waits until whoever moves it (add_wake, arrive)
   says so (dsm_ship_park); where it cannot wait so, seen, and the caller
   pauses before it looks again. */
static uint64_t moved_from(void *w, uint64_t seen, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	uint64_t v = __atomic_load_n((uint64_t *)w, __ATOMIC_SEQ_CST);
	if (v != seen)
		return v;
	int parked = dsm_ship_park(w, seen, ~seen);
	return parked > 0 ? 0 : parked < 0 ? ~seen : seen;
}

/* Until *word (an object's, 8-aligned: its low half is a futex word) is no
   longer seen: a sleep on the word at its home, a call answered when it
   moves elsewhere. */
static void wait_moved(uint64_t *word, uint64_t seen, unsigned *us)
{
	if (!dsm_atomic_here(word)) {
		if (dsm_call_atomic_wait("locus-dsm wait", moved_from, word, seen) == seen)
			pause_for(us);
		return;
	}
	/* A stall, as a wait shipped from elsewhere is (ship.c): under
	   LOCUS_DSM_SWITCH=sync it gives the node's run token up, without
	   which the team thread that would move the word never runs. */
	struct dsm_stall st;
	dsm_stall_begin_lazy(&st, STALL_OTHER);
	if (!dsm_await_word(word, seen)) {
		/* A backstop against a wake lost to a page taken away meanwhile. */
		struct timespec backstop = {0, 10 * 1000 * 1000};
		dsm_stall_waits();
		futex_wait_for((uint32_t *)word, (uint32_t)seen, &backstop);
	}
	dsm_stall_end(&st, mono_ns(), DSM_LOCAL);
}

/* At the word's home, after it moved: every thread of the node sleeping on
   it, and those waiting on the doorbell (dsm_await_word). */
static void wake_all(uint64_t *word)
{
	futex_call((uint32_t *)word, FUTEX_WAKE_PRIVATE, FUTEX_WAKE_ALL, NULL, 0);
	dsm_bell_answer_wake_waiting();
}

static uint64_t add_wake(void *w, uint64_t v, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	uint64_t old = __atomic_fetch_add((uint64_t *)w, v, __ATOMIC_SEQ_CST);
	wake_all(w);
	dsm_ship_unpark(w);
	return old;
}

/* One node: the mutex word as a futex lock. */
static uint32_t *lock_word(locus_dsm_mutex *m)
{
	return (uint32_t *)&m->word;
}

static int word_trylock(locus_dsm_mutex *m)
{
	uint32_t free_ = 0;
	return __atomic_compare_exchange_n(lock_word(m), &free_, 1, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static void word_lock(locus_dsm_mutex *m)
{
	uint32_t *w = lock_word(m);
	for (int i = 0; i < 100; i++) {
		if (word_trylock(m))
			return;
		cpu_relax();
	}
	while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0)
		futex_wait(w, 2);
}

static void word_unlock(locus_dsm_mutex *m)
{
	uint32_t *w = lock_word(m);
	if (__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) == 2)
		futex_call(w, FUTEX_WAKE_PRIVATE, 1, NULL, 0);
}

static int one_node(const char *call)
{
	dsm_require_running(call);
	if (dsm.nodes != 1)
		return 0;
	dsm_sync_point();
	return 1;
}

void locus_dsm_mutex_init(locus_dsm_mutex *m)
{
	check("locus_dsm_mutex_init", m);
}

void locus_dsm_cond_init(locus_dsm_cond *c)
{
	check("locus_dsm_cond_init", c);
}

void locus_dsm_barrier_init(locus_dsm_barrier_obj *b)
{
	check("locus_dsm_barrier_init", b);
	locus_dsm_store(&b->count, 0);
}

void locus_dsm_mutex_lock(locus_dsm_mutex *m)
{
	check("locus_dsm_mutex_lock", m);
	if (!one_node("locus_dsm_mutex_lock")) {
		locus_dsm_lock(dsm_addr_lock(m));
		return;
	}
	word_lock(m);
	dsm_self.locks++;
}

int locus_dsm_mutex_trylock(locus_dsm_mutex *m)
{
	check("locus_dsm_mutex_trylock", m);
	if (!one_node("locus_dsm_mutex_trylock"))
		return locus_dsm_trylock(dsm_addr_lock(m));
	if (!word_trylock(m))
		return 0;
	dsm_self.locks++;
	return 1;
}

void locus_dsm_mutex_unlock(locus_dsm_mutex *m)
{
	check("locus_dsm_mutex_unlock", m);
	if (!one_node("locus_dsm_mutex_unlock")) {
		locus_dsm_unlock(dsm_addr_lock(m));
		return;
	}
	word_unlock(m);
	if (dsm_self.locks > 0)
		dsm_self.locks--;
}

void locus_dsm_cond_wait(locus_dsm_cond *c, locus_dsm_mutex *m)
{
	check("locus_dsm_cond_wait", c);
	/* Read before the mutex goes: a signal after this moves it. */
	uint64_t seq = locus_dsm_load(&c->seq);
	locus_dsm_mutex_unlock(m);
	int slot = wait_begin(c, "condition", 0);
	for (unsigned us = 20; locus_dsm_load(&c->seq) == seq;)
		wait_moved(&c->seq, seq, &us);
	wait_end(slot);
	locus_dsm_mutex_lock(m);
}

void locus_dsm_cond_signal(locus_dsm_cond *c)
{
	check("locus_dsm_cond_signal", c);
	dsm_call_atomic("locus_dsm_cond_signal", add_wake, &c->seq, 1, 0, 0);
}

void locus_dsm_cond_broadcast(locus_dsm_cond *c)
{
	check("locus_dsm_cond_broadcast", c);
	dsm_call_atomic("locus_dsm_cond_broadcast", add_wake, &c->seq, 1, 0, 0);
}

void locus_dsm_sem_init(locus_dsm_sem *s, uint64_t value)
{
	check("locus_dsm_sem_init", s);
	locus_dsm_store(&s->count, value);
}

void locus_dsm_sem_wait(locus_dsm_sem *s)
{
	check("locus_dsm_sem_wait", s);
	unsigned us = 20;
	uint64_t v = locus_dsm_load(&s->count);
	for (;;) {
		if (v > 0 && locus_dsm_compare_exchange(&s->count, &v, v - 1))
			return;
		if (v == 0) {
			int slot = wait_begin(s, "semaphore", 0);
			wait_moved(&s->count, 0, &us);
			wait_end(slot);
			v = locus_dsm_load(&s->count);
		}
	}
}

void locus_dsm_sem_post(locus_dsm_sem *s)
{
	check("locus_dsm_sem_post", s);
	dsm_call_atomic("locus_dsm_sem_post", add_wake, &s->count, 1, 0, 0);
}

/* At the barrier's home: one more has arrived. Returns the generation it
   arrived in, with bit 63 set for the last one (which opened the next). */
static uint64_t arrive(void *state, uint64_t participants, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	locus_dsm_barrier_obj *bar = state;
	uint64_t gen = __atomic_load_n(&bar->generation, __ATOMIC_SEQ_CST);
	if (__atomic_add_fetch(&bar->count, 1, __ATOMIC_SEQ_CST) < participants) {
		/* A caller from another node is answered when the barrier opens,
		   instead of polling the generation. */
		int parked = dsm_ship_park(&bar->generation, gen, gen | 1ull << 63);
		return parked > 0 ? 0 /* answered later */ : parked < 0 ? gen | 1ull << 63 : gen;
	}
	__atomic_store_n(&bar->count, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&bar->generation, gen + 1, __ATOMIC_SEQ_CST);
	wake_all(&bar->generation);
	dsm_ship_unpark(&bar->generation);
	return gen | 1ull << 63;
}

size_t dsm_object_fn_len(locus_fn fn)
{
	if (fn == add_wake || fn == moved_from)
		return sizeof(uint64_t);
	return fn == arrive ? sizeof(locus_dsm_barrier_obj) : 0;
}

void locus_dsm_barrier_wait(locus_dsm_barrier_obj *b, unsigned participants)
{
	check("locus_dsm_barrier_wait", b);
	if (participants == 0) {
		fprintf(stderr, "locus-dsm: locus_dsm_barrier_wait: 0 participants\n");
		exit(1);
	}
	int slot = wait_begin(b, "barrier object", participants);
	uint64_t gen = dsm_call_atomic_barrier("locus_dsm_barrier_wait", arrive, b, participants);
	if (!(gen >> 63))
		for (unsigned us = 20; locus_dsm_load(&b->generation) == gen;)
			wait_moved(&b->generation, gen, &us);
	wait_end(slot);
}
