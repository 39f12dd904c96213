/*
 * Synchronization objects named by address, the shared heap and trylock,
 * under whatever LOCUS_DSM_PROTOCOL says (T threads per node):
 *
 *   dsm_objects mutex N T     LOCKS mutexes inside malloc'd structs (one per
 *                             struct, thousands): every thread adds to random
 *                             ones under their mutex, N times; trylock too,
 *                             which must never let two in; exact totals
 *   dsm_objects cond N T      producers and consumers through a bounded
 *                             queue guarded by a mutex and two conditions:
 *                             every item consumed once
 *   dsm_objects sem N T       a semaphore that admits at most 2 at a time
 *                             (checked by a count inside), and one used as
 *                             a signal between threads of different nodes
 *   dsm_objects barrier N T   a counted barrier of every thread, N rounds:
 *                             each round's writes seen after it; under lrc
 *                             the writers' diffs pushed at the arrivals are
 *                             what every node's faults take
 *   dsm_objects homelast N T  the same, but the barrier's home node arrives
 *                             last, every round (its threads wait until all
 *                             the others have): its threads arrive there by
 *                             themselves, and the other nodes, whose calls
 *                             the home answers only then, must still see
 *                             the writes they made before it; each of their
 *                             barrier waits is one shipped call (no polls)
 *   dsm_objects apart N T     the barrier's rounds on a barrier alone in its
 *                             page: under sc its home's communication thread
 *                             runs the other nodes' arrivals itself (the
 *                             page is writable there), not its server
 *   dsm_objects heap N T      every thread mallocs, fills and frees blocks of
 *                             many sizes, half freed by a thread of another
 *                             node; no block overlaps another; the heap is
 *                             reused (the same totals fit again and again)
 *
 * Each prints what it checked and exits nonzero on a violation.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm_args.h"
#include "locus/dsm.h"

#define LOCKS 2000

static int me, nodes, team;
static long iters;

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "dsm_objects: node %d: FAIL: ", me);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* What every mode shares, set up by node 0 before the threads start. */
struct shared {
	locus_dsm_barrier_obj all;   /* every thread of every node */
	locus_dsm_barrier_obj after; /* homelast: between a round's checks and the next */
	locus_dsm_mutex qlock;
	locus_dsm_cond not_empty, not_full;
	locus_dsm_sem admit, signal;
	uint64_t inside, most_inside, produced, consumed, head, tail, sum;
	uint64_t queue[16];
	uint64_t round[64][64]; /* barrier: [node][thread] */
	locus_dsm_barrier_obj *apart; /* apart: alone in its page */
	struct counter **counters;
	void **blocks;
};

struct counter {
	locus_dsm_mutex m;
	uint64_t value, inside;
};

static struct shared *sh;

static unsigned everyone(void)
{
	return (unsigned)(nodes * team);
}

static void no_lost_updates(void)
{
	uint64_t sum = 0;
	for (int i = 0; i < LOCKS; i++) {
		locus_dsm_mutex_lock(&sh->counters[i]->m);
		sum += sh->counters[i]->value;
		locus_dsm_mutex_unlock(&sh->counters[i]->m);
	}
	uint64_t want = (uint64_t)everyone() * (uint64_t)iters;
	if (sum != want)
		fail("mutexes: %llu increments counted, %llu made", (unsigned long long)sum,
		     (unsigned long long)want);
}

static void mutex_thread(int t, void *arg)
{
	(void)arg;
	unsigned seed = 31u * (unsigned)(me * team + t + 1);
	for (long i = 0; i < iters; i++) {
		struct counter *c = sh->counters[rand_r(&seed) % LOCKS];
		if (i % 4 == 3) {
			while (!locus_dsm_mutex_trylock(&c->m))
				;
		} else {
			locus_dsm_mutex_lock(&c->m);
		}
		if (c->inside++)
			fail("two threads inside one mutex");
		c->value++;
		c->inside--;
		locus_dsm_mutex_unlock(&c->m);
	}
	locus_dsm_barrier_wait(&sh->all, everyone());
}

static void cond_thread(int t, void *arg)
{
	(void)arg;
	int producer = (me * team + t) % 2 == 0;
	uint64_t share = (uint64_t)iters;
	for (uint64_t i = 0; producer && i < share; i++) {
		locus_dsm_mutex_lock(&sh->qlock);
		while (sh->tail - sh->head == 16)
			locus_dsm_cond_wait(&sh->not_full, &sh->qlock);
		sh->queue[sh->tail++ % 16] = i + 1;
		sh->produced++;
		locus_dsm_cond_broadcast(&sh->not_empty);
		locus_dsm_mutex_unlock(&sh->qlock);
	}
	for (uint64_t i = 0; !producer && i < share; i++) {
		locus_dsm_mutex_lock(&sh->qlock);
		while (sh->tail == sh->head)
			locus_dsm_cond_wait(&sh->not_empty, &sh->qlock);
		sh->sum += sh->queue[sh->head++ % 16];
		sh->consumed++;
		locus_dsm_cond_signal(&sh->not_full);
		locus_dsm_mutex_unlock(&sh->qlock);
	}
	locus_dsm_barrier_wait(&sh->all, everyone());
}

static void sem_thread(int t, void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++) {
		locus_dsm_sem_wait(&sh->admit);
		uint64_t in = locus_dsm_fetch_add(&sh->inside, 1) + 1;
		if (in > 2)
			fail("%llu threads inside a semaphore of 2", (unsigned long long)in);
		locus_dsm_fetch_add(&sh->inside, (uint64_t)-1);
		locus_dsm_sem_post(&sh->admit);
	}
	/* A signal across nodes: the first thread of the last node waits for one
	   post from each thread of node 0. */
	if (me == 0)
		locus_dsm_sem_post(&sh->signal);
	if (me == nodes - 1 && t == 0)
		for (int k = 0; k < team; k++)
			locus_dsm_sem_wait(&sh->signal);
	locus_dsm_barrier_wait(&sh->all, everyone());
}

/* Thread t's rounds of writes, each seen by every thread after b. */
static void rounds(locus_dsm_barrier_obj *b, int t)
{
	for (long r = 1; r <= iters; r++) {
		sh->round[me][t] = (uint64_t)r;
		locus_dsm_barrier_wait(b, everyone());
		for (int n = 0; n < nodes; n++)
			for (int k = 0; k < team; k++)
				if (sh->round[n][k] != (uint64_t)r)
					fail("round %ld: thread %d of node %d shows %llu", r, k, n,
					     (unsigned long long)sh->round[n][k]);
		locus_dsm_barrier_wait(b, everyone());
	}
}

static void barrier_thread(int t, void *arg)
{
	(void)arg;
	rounds(&sh->all, t);
}

static void apart_thread(int t, void *arg)
{
	(void)arg;
	rounds(sh->apart, t);
}

/* Every thread but those of all's home arrives, then those: the generation
   moves at the home, by one of its own threads. */
static void homelast_thread(int t, void *arg)
{
	(void)arg;
	int home = locus_dsm_home(&sh->all);
	unsigned others = everyone() - (unsigned)team;
	for (long r = 1; r <= iters; r++) {
		if (me == home)
			while (locus_dsm_load(&sh->all.count) < others)
				sched_yield();
		sh->round[me][t] = (uint64_t)r;
		locus_dsm_barrier_wait(&sh->all, everyone());
		for (int n = 0; n < nodes; n++)
			for (int k = 0; k < team; k++)
				if (sh->round[n][k] != (uint64_t)r)
					fail("homelast round %ld: thread %d of node %d shows %llu "
					     "(the home is node %d)",
					     r, k, n, (unsigned long long)sh->round[n][k], home);
		locus_dsm_barrier_wait(&sh->after, everyone());
	}
}

/* homelast: a thread of another node waits for the home's threads as one
   call per barrier, answered when the barrier opens (the home holds the
   answer back), never polling the generation: exactly two calls a round. */
static void no_polls(const locus_dsm_stats *s0, const locus_dsm_stats *s1)
{
	if (nodes == 1)
		return;
	uint64_t shipped = s1->calls_shipped - s0->calls_shipped;
	uint64_t parked = s1->calls_parked - s0->calls_parked;
	uint64_t others = everyone() - (uint64_t)team;
	if (me != locus_dsm_home(&sh->all) && shipped != 2 * (uint64_t)iters * (uint64_t)team)
		fail("homelast: %llu calls shipped for %ld rounds of two barriers by %d threads: "
		     "a wait polled",
		     (unsigned long long)shipped, iters, team);
	/* (An arrival whose server had not parked it yet when the home's last
	   thread opened the barrier is answered at once, open: not parked.) */
	if (me == locus_dsm_home(&sh->all) && parked == 0)
		fail("homelast: no call parked at the home in %ld rounds of %llu threads "
		     "that wait for it",
		     iters, (unsigned long long)others);
}

/* apart, under sc: the other nodes' arrivals at the barrier's home, whose page
   stays writable there, are run by the communication thread, not queued for
   the server (some may be, while a turn has protections pending). */
static void run_by_comm(const locus_dsm_stats *s0, const locus_dsm_stats *s1)
{
	if (nodes == 1 || strcmp(locus_dsm_protocol(), "sc") || me != locus_dsm_home(sh->apart))
		return;
	uint64_t ran = s1->calls_run_by_comm - s0->calls_run_by_comm;
	if (ran == 0)
		fail("apart: none of %ld rounds' arrivals from other nodes was run by the "
		     "communication thread",
		     iters);
}

/* barrier, under lrc (pushes on): every node reads what the others wrote each
   round, so after its first fetches the writers push their diffs when they
   arrive (and the home when it answers an arrival), and its faults take them
   without asking. */
static void pushed_at_arrivals(const locus_dsm_stats *s0, const locus_dsm_stats *s1)
{
	const char *push = getenv("LOCUS_DSM_LRC_PUSH");
	if (nodes == 1 || strcmp(locus_dsm_protocol(), "lrc") || (push && push[0] == '0'))
		return;
	uint64_t used = s1->pushed_used - s0->pushed_used;
	if (used == 0)
		fail("barrier: no pushed diff taken in %ld rounds of reading the others' writes",
		     iters);
}

/* Every thread: blocks of many sizes, each filled with its own tag. */
static void heap_thread(int t, void *arg)
{
	(void)arg;
	int me_t = me * team + t;
	void **mine = &sh->blocks[(size_t)me_t * 64];
	unsigned seed = 7u * (unsigned)(me_t + 1);
	for (long r = 0; r < iters; r++) {
		size_t sizes[64];
		for (int k = 0; k < 64; k++) {
			sizes[k] = (size_t)1 << (rand_r(&seed) % 18); /* 1 B to 128 KiB */
			char *b = locus_dsm_malloc(sizes[k]);
			if (!b)
				fail("malloc(%zu) failed in round %ld", sizes[k], r);
			memset(b, me_t + 1, sizes[k]);
			mine[k] = b;
		}
		for (int k = 0; k < 64; k++) { /* nobody else wrote into mine */
			const unsigned char *b = mine[k];
			if (b[0] != me_t + 1 || b[sizes[k] - 1] != me_t + 1)
				fail("a block of %zu bytes was overwritten", sizes[k]);
		}
		locus_dsm_barrier_wait(&sh->all, everyone());
		/* Free the odd blocks of the thread one place on: another node's
		   (or this one's, on one node), then its own even ones. */
		int next = (me_t + team) % (int)everyone();
		for (int k = 1; k < 64; k += 2)
			locus_dsm_free(sh->blocks[(size_t)next * 64 + (size_t)k]);
		for (int k = 0; k < 64; k += 2)
			locus_dsm_free(mine[k]);
		locus_dsm_drain(); /* frees shipped to other nodes have run */
		locus_dsm_barrier_wait(&sh->all, everyone());
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: dsm_objects MODE [N [T]] (see the source)\n");
		return 2;
	}
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	iters = argc > 2 ? dsm_test_arg("dsm_objects", argv[2], 1, 10000000) : 100;
	team = argc > 3 ? (int)dsm_test_arg("dsm_objects", argv[3], 1, 64) : 1;
	const char *mode = argv[1];
	sh = locus_dsm_alloc(sizeof(*sh));
	struct counter **counters = locus_dsm_alloc(LOCKS * sizeof(*counters));
	void **blocks = locus_dsm_alloc(64 * 64 * 8 * sizeof(void *));
	locus_dsm_barrier_obj *apart = locus_dsm_alloc(4096); /* a page of its own */
	if (me == 0) {
		sh->counters = counters;
		sh->blocks = blocks;
		sh->apart = apart;
		for (int i = 0; i < LOCKS; i++) /* each in its own malloc'd struct */
			if (!(counters[i] = locus_dsm_malloc(sizeof(struct counter))))
				fail("malloc of a counter");
		locus_dsm_sem_init(&sh->admit, 2);
	}
	locus_dsm_barrier();
	void (*fn)(int, void *) = !strcmp(mode, "mutex")      ? mutex_thread
				  : !strcmp(mode, "cond")     ? cond_thread
				  : !strcmp(mode, "sem")      ? sem_thread
				  : !strcmp(mode, "barrier")  ? barrier_thread
				  : !strcmp(mode, "homelast") ? homelast_thread
				  : !strcmp(mode, "apart")    ? apart_thread
				  : !strcmp(mode, "heap")     ? heap_thread
							      : NULL;
	if (!fn || (!strcmp(mode, "cond") && everyone() % 2)) {
		fprintf(stderr,
			"dsm_objects: unknown mode %s (cond needs an even number of "
			"threads in all)\n",
			mode);
		return 2;
	}
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	locus_dsm_parallel(team, fn, NULL);
	locus_dsm_stats_get(&s1);
	if (!strcmp(mode, "homelast"))
		no_polls(&s0, &s1);
	if (!strcmp(mode, "apart"))
		run_by_comm(&s0, &s1);
	if (!strcmp(mode, "barrier"))
		pushed_at_arrivals(&s0, &s1);
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	if (!strcmp(mode, "mutex"))
		no_lost_updates();
	if (!strcmp(mode, "cond")) {
		uint64_t n = (uint64_t)iters * everyone() / 2;
		if (sh->consumed != n || sh->produced != n ||
		    sh->sum != n * ((uint64_t)iters + 1) / 2)
			fail("produced %llu, consumed %llu, sum %llu (want %llu, %llu)",
			     (unsigned long long)sh->produced, (unsigned long long)sh->consumed,
			     (unsigned long long)sh->sum, (unsigned long long)n,
			     (unsigned long long)(n * ((uint64_t)iters + 1) / 2));
	}
	locus_dsm_avr_resume();
	if (me == 0)
		printf("%s: %d nodes x %d threads, %ld rounds: exact\n", mode, nodes, team, iters);
	locus_dsm_finalize();
	return 0;
}
