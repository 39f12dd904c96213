/*
 * Shipped calls (locus_dsm_call/post, the atomics, homes), under whatever
 * LOCUS_DSM_PROTOCOL says:
 *
 *   dsm_ship counters N T   T threads per node; each makes N shipped
 *                           increments of counters homed at every node
 *                           (calls and posts), N increments of the same
 *                           counters page-based under a DSM lock that the
 *                           shipped function takes too, and N atomic
 *                           fetch-adds: every total exact
 *   dsm_ship bank N T       accounts at node 0's home; every transfer is one
 *                           shipped call, every audit (one call) sees the
 *                           total unchanged, and so does the end
 *   dsm_ship callbacks N T  posts' callbacks run once each, on the posting
 *                           thread, in order, all of them by drain
 *   dsm_ship nested N       a shipped call that ships calls (to another home,
 *                           to its own, and back to the caller's node)
 *   dsm_ship atomics N      compare-exchange and exchange from every node;
 *                           a flag stored atomically publishes data written
 *                           page-based (release/acquire under lrc)
 *   dsm_ship executor N T   locus_cs on one shared counter: every thread runs
 *                           sections through "home" (run and post) and "mcs"
 *                           or "ticket" in place, mixed; exact total; ffwd on
 *                           shared state and home on private state refused
 *   dsm_ship entered N      N rounds: node 0 posts a call to every other node's
 *                           server that waits there until its node has entered
 *                           the barrier, then writes a page and calls node 0,
 *                           which enters only when every such call has reached
 *                           it; after the barrier every node reads what was
 *                           written before the entry and after it
 *   dsm_ship collect N      N rounds: node 0's server posts to every other
 *                           node's server a call that waits there until its
 *                           node has entered the barrier, then writes a page
 *                           (an interval no node hears of at that barrier,
 *                           which lrc may collect: LOCUS_DSM_GC_BYTES=1);
 *                           after one more barrier every node reads it
 *   dsm_ship publish N      N rounds: every other node posts node 0's server a
 *                           call that writes the round into a page of data,
 *                           then posts a semaphore homed at node 0 (a word
 *                           call the server runs inline), and waits on the
 *                           semaphore: once the wait returns, the node reads
 *                           the round in the page (lrc: the wait's answer
 *                           carries the server's writes before the post,
 *                           whether it found the count up or was parked
 *                           until the post; here it mostly finds it up)
 *   dsm_ship parked N       N rounds: every other node waits on its condition
 *                           homed at node 0; once node 0's server has parked
 *                           every wait, node 0 posts its own server a call
 *                           that writes a page, then signals without the
 *                           mutex (a call the server runs inline): each wait
 *                           ends parked, and its answer carries the writes
 *                           (lrc)
 *   dsm_ship refuse         a function outside the image and a bad node are
 *                           refused with a message (post: -1)
 *
 * Each prints what it checked and exits nonzero on a violation.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "locus/cs.h"
#include "dsm_args.h"
#include "locus/dsm.h"

#define PAGE	  4096
#define LOCK_BASE 100

static int me, nodes, team;
static long iters;

static void fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "dsm_ship: node %d: FAIL: ", me);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* ---- counters ---- */

/* One page per home: word 0 counts everything, word 1 the shipped part. */
static uint64_t *counter_page[64];

static uint64_t add_locked(void *state, uint64_t v, uint64_t lock, uint64_t c)
{
	(void)c;
	uint64_t *w = state;
	locus_dsm_lock((uint32_t)lock); /* page-based writers of the word take it too */
	w[0] += v;
	w[1] += v;
	uint64_t now = w[0];
	locus_dsm_unlock((uint32_t)lock);
	return now;
}

static void count_cb(void *ctx, uint64_t result)
{
	(void)result;
	(*(long *)ctx)++;
}

static void counters_thread(int t, void *arg)
{
	(void)arg;
	long called_back = 0, posted = 0;
	for (long i = 0; i < iters; i++) {
		int home = (int)((i + t + me) % nodes);
		uint64_t *w = counter_page[home];
		if (i % 2) {
			if (locus_dsm_call_home(add_locked, w, 1, LOCK_BASE + (uint64_t)home, 0) ==
			    0)
				fail("a shipped increment returned 0");
		} else {
			if (locus_dsm_post_home(add_locked, w, 1, LOCK_BASE + (uint64_t)home, 0,
						count_cb, &called_back) != 0)
				fail("post refused");
			posted++;
		}
		locus_dsm_lock(LOCK_BASE + (uint32_t)home); /* the same counter, page-based */
		w[0] += 1;
		locus_dsm_unlock(LOCK_BASE + (uint32_t)home);
		locus_dsm_fetch_add(&w[2], 1);
	}
	locus_dsm_drain();
	if (called_back != posted)
		fail("%ld callbacks for %ld posts", called_back, posted);
}

static uint64_t count_every_home(void)
{
	uint64_t sum = 0;
	for (int h = 0; h < nodes; h++)
		sum += locus_dsm_load(&counter_page[h][0]);
	return sum;
}

static int mode_counters(void)
{
	for (int h = 0; h < nodes; h++)
		counter_page[h] = locus_dsm_alloc_at(PAGE, h);
	for (int h = 0; h < nodes; h++)
		if (!counter_page[h] || locus_dsm_home(counter_page[h]) != h)
			fail("page placed at %d is at home %d", h, locus_dsm_home(counter_page[h]));
	locus_dsm_barrier();
	locus_dsm_parallel(team, counters_thread, NULL);
	locus_dsm_barrier();
	uint64_t want = (uint64_t)nodes * (uint64_t)team * (uint64_t)iters;
	uint64_t all = count_every_home(), shipped = 0, atomics = 0;
	for (int h = 0; h < nodes; h++) {
		shipped += locus_dsm_load(&counter_page[h][1]);
		atomics += locus_dsm_load(&counter_page[h][2]);
	}
	if (all != 2 * want || shipped != want || atomics != want)
		fail("totals %llu (want %llu), shipped %llu and atomic %llu (want %llu)",
		     (unsigned long long)all, (unsigned long long)(2 * want),
		     (unsigned long long)shipped, (unsigned long long)atomics,
		     (unsigned long long)want);
	if (me == 0)
		printf("counters: %llu increments, half shipped, and %llu atomic, exact on %d "
		       "nodes x %d threads\n",
		       (unsigned long long)all, (unsigned long long)atomics, nodes, team);
	return 0;
}

/* ---- bank ---- */

#define ACCOUNTS 64
#define OPENING	 1000

static uint64_t *accounts;

static uint64_t transfer(void *state, uint64_t from, uint64_t to, uint64_t amount)
{
	int64_t *acct = state;
	if (acct[from] < (int64_t)amount)
		return 0;
	acct[from] -= (int64_t)amount;
	acct[to] += (int64_t)amount;
	return 1;
}

static uint64_t audit(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a, (void)b, (void)c;
	const int64_t *acct = state;
	int64_t sum = 0;
	for (int i = 0; i < ACCOUNTS; i++) {
		if (acct[i] < 0)
			return UINT64_MAX;
		sum += acct[i];
	}
	return (uint64_t)sum;
}

static void bank_thread(int t, void *arg)
{
	(void)arg;
	unsigned seed = 77u * (unsigned)(me * team + t + 1);
	for (long i = 0; i < iters; i++) {
		uint64_t from = (uint64_t)rand_r(&seed) % ACCOUNTS,
			 to = (uint64_t)rand_r(&seed) % ACCOUNTS;
		if (i % 3)
			locus_dsm_call_home(transfer, accounts, from, to,
					    (uint64_t)rand_r(&seed) % 50);
		else
			locus_dsm_post_home(transfer, accounts, from, to,
					    (uint64_t)rand_r(&seed) % 50, NULL, NULL);
		if (i % 16 == 0) {
			uint64_t sum = locus_dsm_call_home(audit, accounts, 0, 0, 0);
			if (sum != ACCOUNTS * OPENING)
				fail("an audit saw %lld, want %d", (long long)sum,
				     ACCOUNTS * OPENING);
		}
	}
	locus_dsm_drain();
}

static int mode_bank(void)
{
	accounts = locus_dsm_alloc_at(ACCOUNTS * sizeof(uint64_t), 0);
	if (me == 0)
		for (int i = 0; i < ACCOUNTS; i++)
			accounts[i] = OPENING;
	locus_dsm_barrier();
	locus_dsm_parallel(team, bank_thread, NULL);
	locus_dsm_barrier();
	uint64_t sum = locus_dsm_call_home(audit, accounts, 0, 0, 0);
	if (sum != ACCOUNTS * OPENING)
		fail("the bank holds %lld at the end, want %d", (long long)sum, ACCOUNTS * OPENING);
	if (me == 0)
		printf("bank: %ld transfers per thread on %d nodes x %d threads, every audit "
		       "exact\n",
		       iters, nodes, team);
	return 0;
}

/* ---- callbacks ---- */

struct cb_log {
	pthread_t thread;
	long next, calls, wrong_thread, out_of_order;
};

static uint64_t echo(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)b, (void)c;
	return a;
}

static void logged_cb(void *ctx, uint64_t result)
{
	struct cb_log *log = ctx;
	log->calls++;
	if (!pthread_equal(pthread_self(), log->thread))
		log->wrong_thread++;
	if ((long)result != log->next)
		log->out_of_order++;
	log->next = (long)result + 1;
}

static uint64_t *cb_page;

static void callbacks_thread(int t, void *arg)
{
	(void)t, (void)arg;
	struct cb_log log = {.thread = pthread_self()};
	for (long i = 0; i < iters; i++)
		if (locus_dsm_post((int)(i % nodes), echo, cb_page, (uint64_t)i, 0, 0, logged_cb,
				   &log) != 0)
			fail("post refused");
	locus_dsm_drain();
	if (log.calls != iters || log.wrong_thread || log.out_of_order)
		fail("%ld callbacks for %ld posts, %ld on another thread, %ld out of order",
		     log.calls, iters, log.wrong_thread, log.out_of_order);
	locus_dsm_drain(); /* nothing left: returns at once */
}

static int mode_callbacks(void)
{
	cb_page = locus_dsm_alloc(PAGE);
	locus_dsm_parallel(team, callbacks_thread, NULL);
	locus_dsm_barrier();
	if (me == 0)
		printf("callbacks: %ld posts per thread, each called back once, in order, on "
		       "its thread\n",
		       iters);
	return 0;
}

/* ---- nested ---- */

static uint64_t *nest_page[64];

/* At home h: add v here, then ship to the next home, to this one (inline)
   and, with depth left, on around the ring (back to the caller's node). */
static uint64_t around(void *state, uint64_t v, uint64_t depth, uint64_t c)
{
	(void)c;
	uint64_t *w = state;
	__atomic_fetch_add(w, v, __ATOMIC_SEQ_CST);
	int here = locus_dsm_node();
	uint64_t more = locus_dsm_call(here, echo, w, 1, 0, 0); /* its own: inline */
	if (!depth)
		return v + more - 1;
	int next = (here + 1) % locus_dsm_nodes();
	return v + locus_dsm_call_home(around, nest_page[next], v, depth - 1, 0);
}

static int mode_nested(void)
{
	for (int h = 0; h < nodes; h++)
		nest_page[h] = locus_dsm_alloc_at(PAGE, h);
	locus_dsm_barrier();
	int depth = 2 * nodes; /* around the ring twice: back through every node */
	for (long i = 0; i < iters; i++) {
		uint64_t r = locus_dsm_call_home(around, nest_page[me], 1, (uint64_t)depth, 0);
		if (r != (uint64_t)depth + 1)
			fail("a chain of %d nested calls returned %llu", depth + 1,
			     (unsigned long long)r);
	}
	locus_dsm_barrier();
	uint64_t sum = 0;
	for (int h = 0; h < nodes; h++)
		sum += locus_dsm_load(nest_page[h]);
	uint64_t want = (uint64_t)nodes * (uint64_t)iters * (uint64_t)(depth + 1);
	if (sum != want)
		fail("nested calls added %llu, want %llu", (unsigned long long)sum,
		     (unsigned long long)want);
	if (me == 0)
		printf("nested: %ld chains of %d calls from every node, each through every "
		       "node\n",
		       iters, depth + 1);
	return 0;
}

/* ---- entered ---- */

/* A node's server may ship calls while its node waits in a barrier, to node
   0 too, which has the node's barrier entry but takes it in only when the
   barrier ends (lrc): what such a call carries cannot count on the entry. */
static uint64_t *entry_page[64], *late_page[64];
static uint32_t late_calls; /* node 0: the calls made after an entry that reached it */

static uint64_t note_late_call(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)b, (void)c;
	__atomic_fetch_add(&late_calls, 1, __ATOMIC_SEQ_CST);
	return a;
}

/* Until this node has entered its barrier number `barriers` (its
   communication thread counts it as it sends the entry): a condition. */
static void wait_entered(uint64_t barriers)
{
	for (;;) {
		locus_dsm_stats s;
		locus_dsm_stats_get(&s);
		if (s.barriers >= barriers)
			return;
		sched_yield();
	}
}

/* At a node's server: once the node has entered its barrier number
   `barriers` (its communication thread counts it as it sends the entry),
   write a page (an interval after the one the entry carries) and call node 0. */
static uint64_t after_entry(void *state, uint64_t value, uint64_t barriers, uint64_t c)
{
	(void)c;
	wait_entered(barriers);
	((uint64_t *)state)[0] = value;
	return locus_dsm_call(0, note_late_call, state, value, 0, 0);
}

static int mode_entered(void)
{
	for (int h = 0; h < nodes; h++) {
		entry_page[h] = locus_dsm_alloc_at(PAGE, h);
		late_page[h] = locus_dsm_alloc_at(PAGE, h);
	}
	locus_dsm_barrier();
	for (long i = 1; i <= iters; i++) {
		long answered = 0;
		if (me == 0) {
			/* Every node makes the same collective calls: the others
			   enter the next barrier as their count passes this one. */
			locus_dsm_stats s;
			locus_dsm_stats_get(&s);
			for (int n = 1; n < nodes; n++)
				if (locus_dsm_post(n, after_entry, late_page[n], (uint64_t)i,
						   s.barriers + 1, 0, count_cb, &answered) != 0)
					fail("post refused");
			/* Node 0 must not let the barrier end before they have come. */
			uint32_t want = (uint32_t)((nodes - 1) * i);
			while (__atomic_load_n(&late_calls, __ATOMIC_SEQ_CST) < want)
				sched_yield();
		} else {
			entry_page[me][0] = (uint64_t)i; /* an interval the entry carries */
		}
		locus_dsm_barrier(); /* node 0's drains its posts */
		if (me == 0 && answered != nodes - 1)
			fail("%ld of %d posts answered by the barrier", answered, nodes - 1);
		locus_dsm_avr_pause(); /* avr: read what is current, not a guess (no rollback) */
		for (int n = 1; n < nodes; n++)
			if (entry_page[n][0] != (uint64_t)i || late_page[n][0] != (uint64_t)i)
				fail("round %ld: node %d wrote %ld before entering the barrier and "
				     "%ld after, read %llu and %llu",
				     i, n, i, i, (unsigned long long)entry_page[n][0],
				     (unsigned long long)late_page[n][0]);
		locus_dsm_avr_resume();
		locus_dsm_barrier(); /* read before the next round writes */
	}
	if (me == 0)
		printf("entered: %ld rounds of calls made after a barrier entry, each seen "
		       "everywhere after the barrier\n",
		       iters);
	return 0;
}

/* ---- collect ---- */

/* Writes a node's server makes between its node's barrier entry and the
   barrier's end, which no synchronization carries to another node before
   that end: node 0's server posts the calls (a barrier drains only the
   calling thread's posts) and they answer with posts. Under lrc the
   interval they end is news to every other node at the next barrier, even
   when the barrier between collects. */
static uint64_t *collect_page[64];

static uint64_t write_after_entry(void *state, uint64_t value, uint64_t barriers, uint64_t c)
{
	(void)c;
	wait_entered(barriers);
	((uint64_t *)state)[1] = value;
	if (locus_dsm_post(0, note_late_call, state, value, 0, 0, NULL, NULL) != 0)
		fail("post refused");
	return value;
}

static uint64_t post_to_every_node(void *state, uint64_t value, uint64_t barriers, uint64_t c)
{
	(void)state, (void)c;
	for (int n = 1; n < locus_dsm_nodes(); n++)
		if (locus_dsm_post(n, write_after_entry, collect_page[n], value, barriers, 0, NULL,
				   NULL) != 0)
			fail("post refused");
	return value;
}

static int mode_collect(void)
{
	for (int h = 0; h < nodes; h++)
		collect_page[h] = locus_dsm_alloc_at(PAGE, h);
	locus_dsm_barrier();
	for (long i = 1; i <= iters; i++) {
		if (me == 0) {
			/* Every node makes the same collective calls: the others
			   enter the next barrier as their count passes this one. */
			locus_dsm_stats s;
			locus_dsm_stats_get(&s);
			locus_dsm_call(0, post_to_every_node, collect_page[0], (uint64_t)i,
				       s.barriers + 1, 0);
			/* Node 0 must not let the barrier end before they have run. */
			uint32_t want = (uint32_t)((nodes - 1) * i);
			while (__atomic_load_n(&late_calls, __ATOMIC_SEQ_CST) < want)
				sched_yield();
		} else {
			collect_page[me][0] = (uint64_t)i; /* this node has records to collect */
		}
		locus_dsm_barrier(); /* the calls' writes: after the others' entries */
		if (me != 0)
			collect_page[me][2] = (uint64_t)i; /* an interval after the writes' */
		locus_dsm_barrier();
		locus_dsm_avr_pause(); /* avr: read what is current, not a guess (no rollback) */
		for (int n = 1; n < nodes; n++)
			for (int w = 0; w < 3; w++)
				if (collect_page[n][w] != (uint64_t)i)
					fail("round %ld: word %d of node %d's page is %llu, want "
					     "%ld",
					     i, w, n, (unsigned long long)collect_page[n][w], i);
		locus_dsm_avr_resume();
		locus_dsm_barrier(); /* read before the next round writes */
	}
	if (me == 0)
		printf("collect: %ld rounds of writes made after a barrier entry, each seen "
		       "everywhere one barrier later\n",
		       iters);
	return 0;
}

/* ---- publish ---- */

struct pub {
	locus_dsm_sem sem[64];
	uint64_t pad[512 - 64]; /* the data in pages of their own */
	uint64_t data[64][PAGE / 8];
};

/* A node's page of data: every 64th word the round (written by a server),
   read back after the wait that follows its post or signal. */
static void write_round(uint64_t *data, uint64_t round)
{
	for (size_t k = 0; k < PAGE / 8; k += 64)
		data[k] = round;
}

static void check_round(const uint64_t *data, long round, const char *what)
{
	locus_dsm_avr_pause();
	for (size_t k = 0; k < PAGE / 8; k += 64)
		if (data[k] != (uint64_t)round)
			fail("%s: round %ld: after the wait, word %zu holds %llu", what, round, k,
			     (unsigned long long)data[k]);
	locus_dsm_avr_resume();
}

static uint64_t publish(void *state, uint64_t round, uint64_t node, uint64_t c)
{
	(void)c;
	struct pub *p = state;
	write_round(p->data[node], round);
	locus_dsm_sem_post(&p->sem[node]);
	return 0;
}

static int mode_publish(void)
{
	if (nodes > 64)
		fail("publish: at most 64 nodes");
	struct pub *p = locus_dsm_alloc_at(sizeof(*p), 0);
	if (me == 0)
		for (int n = 0; n < nodes; n++)
			locus_dsm_sem_init(&p->sem[n], 0);
	locus_dsm_barrier();
	if (me != 0)
		for (long round = 1; round <= iters; round++) {
			if (locus_dsm_post(0, publish, p, (uint64_t)round, (uint64_t)me, 0, NULL,
					   NULL) != 0)
				fail("publish: the post was refused");
			locus_dsm_sem_wait(&p->sem[me]);
			check_round(p->data[me], round, "publish");
		}
	locus_dsm_drain();
	locus_dsm_barrier();
	if (me == 0)
		printf("publish: %ld rounds, each node read the server's writes after the "
		       "semaphore\n",
		       iters);
	return 0;
}

/* ---- parked ---- */

struct parked {
	locus_dsm_mutex mu[64];
	locus_dsm_cond cond[64];
	uint64_t pad[512 - 128];
	uint64_t data[64][PAGE / 8];
};

/* Until this node's server has parked `want` waits in all. */
static void until_parked(uint64_t want)
{
	for (;;) {
		locus_dsm_stats s;
		locus_dsm_stats_get(&s);
		if (s.calls_parked >= want)
			return;
		sched_yield();
	}
}

/* Writes, then a signal without the mutex: the server runs the signal
   inline, and the parked wait's answer is the only message that can carry
   the writes (the waiter's mutex stays at its node). */
static uint64_t signal_after(void *state, uint64_t round, uint64_t node, uint64_t c)
{
	(void)c;
	struct parked *p = state;
	write_round(p->data[node], round);
	locus_dsm_cond_signal(&p->cond[node]);
	return 0;
}

static int mode_parked(void)
{
	if (nodes > 64)
		fail("parked: at most 64 nodes");
	struct parked *p = locus_dsm_alloc_at(sizeof(*p), 0);
	if (me == 0)
		for (int n = 0; n < nodes; n++)
			locus_dsm_cond_init(&p->cond[n]);
	locus_dsm_barrier();
	for (long round = 1; round <= iters; round++) {
		if (me == 0) {
			until_parked((uint64_t)round * (uint64_t)(nodes - 1));
			for (int n = 1; n < nodes; n++)
				if (locus_dsm_post(0, signal_after, p, (uint64_t)round,
						   (uint64_t)n, 0, NULL, NULL) != 0)
					fail("parked: the post was refused");
			continue;
		}
		locus_dsm_mutex_lock(&p->mu[me]);
		locus_dsm_cond_wait(&p->cond[me], &p->mu[me]);
		locus_dsm_mutex_unlock(&p->mu[me]);
		check_round(p->data[me], round, "parked");
	}
	locus_dsm_drain();
	locus_dsm_barrier();
	if (me == 0)
		printf("parked: %ld rounds, each node's condition wait parked at node 0 read "
		       "the writes its server made before the signal\n",
		       iters);
	return 0;
}

/* ---- atomics ---- */

static int mode_atomics(void)
{
	uint64_t *words = locus_dsm_alloc_at(PAGE, nodes - 1);
	uint64_t *data = locus_dsm_alloc_at(4 * PAGE, 0);
	locus_dsm_barrier();
	for (long i = 0; i < iters; i++) { /* a counter by compare-exchange */
		uint64_t seen = locus_dsm_load(&words[0]);
		while (!locus_dsm_compare_exchange(&words[0], &seen, seen + 1))
			;
		locus_dsm_exchange(&words[1 + me], (uint64_t)i);
	}
	locus_dsm_barrier();
	if (locus_dsm_load(&words[0]) != (uint64_t)nodes * (uint64_t)iters)
		fail("compare-exchange counted %llu, want %llu",
		     (unsigned long long)locus_dsm_load(&words[0]),
		     (unsigned long long)nodes * (uint64_t)iters);
	for (int n = 0; n < nodes; n++)
		if (locus_dsm_load(&words[1 + n]) != (uint64_t)iters - 1)
			fail("node %d's exchanged word holds %llu", n,
			     (unsigned long long)locus_dsm_load(&words[1 + n]));
	/* Message passing: data written page-based, published by an atomic store
	   of a flag, read after an atomic load sees it. */
	uint64_t *flag = &words[100];
	for (long round = 1; round <= iters / 10 + 1; round++) {
		int writer = (int)(round % nodes);
		if (me == writer) {
			for (int k = 0; k < 4; k++)
				data[k * (PAGE / 8)] = (uint64_t)round;
			locus_dsm_store(flag, (uint64_t)round);
		} else {
			while (locus_dsm_load(flag) != (uint64_t)round)
				;
			locus_dsm_avr_pause();
			for (int k = 0; k < 4; k++)
				if (data[k * (PAGE / 8)] != (uint64_t)round)
					fail("round %ld: after the flag, page %d holds %llu", round,
					     k, (unsigned long long)data[k * (PAGE / 8)]);
			locus_dsm_avr_resume();
		}
		locus_dsm_barrier();
	}
	if (me == 0)
		printf("atomics: compare-exchange and exchange exact; a flag published data "
		       "%ld times\n",
		       iters / 10 + 1);
	return 0;
}

/* ---- executor ---- */

static uint64_t *shared_counter;

static uint64_t bump(void *state, uint64_t v, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	uint64_t *w = state;
	w[0] += v;
	return w[0];
}

static void executor_thread(int t, void *arg)
{
	(void)arg;
	locus_cs *home = locus_cs_open("home", shared_counter);
	locus_cs *here = locus_cs_open(t % 2 ? "mcs" : "ticket", shared_counter);
	if (!home || !here)
		fail("locus_cs_open on shared state: %s", locus_cs_error());
	long called_back = 0, posted = 0;
	for (long i = 0; i < iters; i++) {
		if (i % 3 == 0) {
			locus_cs_run(home, bump, 1, 0, 0);
		} else if (i % 3 == 1) {
			locus_cs_post(home, bump, 1, 0, 0, count_cb, &called_back);
			posted++;
		} else {
			locus_cs_run(here, bump, 1, 0, 0);
		}
	}
	locus_cs_drain();
	if (called_back != posted)
		fail("%ld callbacks for %ld posts", called_back, posted);
	locus_cs_close(home);
	locus_cs_close(here);
}

static int mode_executor(void)
{
	shared_counter = locus_dsm_alloc_at(PAGE, nodes - 1);
	uint64_t private_word = 0;
	if (locus_cs_open("ffwd", shared_counter) || !strstr(locus_cs_error(), "ffwd runs"))
		fail("ffwd on shared state: '%s'", locus_cs_error());
	if (locus_cs_open("home", &private_word) || !strstr(locus_cs_error(), "not in the shared"))
		fail("home on private state: '%s'", locus_cs_error());
	if (locus_cs_open("home:bogus", shared_counter) || !strstr(locus_cs_error(), "bogus"))
		fail("home:bogus: '%s'", locus_cs_error());
	int listed = 0;
	for (const char *const *m = locus_cs_mechanisms(); *m; m++)
		listed |= !strcmp(*m, "home");
	if (!listed)
		fail("home is not among locus_cs_mechanisms()");
	locus_dsm_barrier();
	locus_dsm_parallel(team, executor_thread, NULL);
	locus_dsm_barrier();
	uint64_t want = (uint64_t)nodes * (uint64_t)team * (uint64_t)iters;
	locus_cs *home = locus_cs_open("home", shared_counter);
	uint64_t got = locus_cs_run(home, bump, 0, 0, 0);
	locus_cs_close(home);
	if (got != want)
		fail("sections through home and in place added %llu, want %llu",
		     (unsigned long long)got, (unsigned long long)want);
	if (me == 0)
		printf("executor: %llu sections on one shared counter through home (run, post) "
		       "and mcs/ticket in place, exact\n",
		       (unsigned long long)want);
	return 0;
}

/* ---- refuse ---- */

static int mode_refuse(void)
{
	void *code = mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *page = locus_dsm_alloc(PAGE);
	if (code == MAP_FAILED || !page)
		fail("set-up");
	if (locus_dsm_post(0, (locus_fn)code, page, 0, 0, 0, NULL, NULL) != -1)
		fail("a function outside the image was accepted");
	if (locus_dsm_post(nodes, echo, page, 0, 0, 0, NULL, NULL) != -1 ||
	    locus_dsm_post(-1, echo, page, 0, 0, 0, NULL, NULL) != -1)
		fail("a bad node was accepted");
	if (locus_dsm_post_home(echo, &me, 0, 0, 0, NULL, NULL) != -1)
		fail("a home outside the region was accepted");
	if (locus_dsm_alloc_at(PAGE, nodes) != NULL)
		fail("a block placed at node %d was allocated", nodes);
	if (me == 0)
		printf("refuse: unshippable function, bad nodes and homes refused\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: dsm_ship MODE [N [T]] (see the source)\n");
		return 2;
	}
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	iters = argc > 2 ? dsm_test_arg("dsm_ship", argv[2], 1, 100000000) : 100;
	team = argc > 3 ? (int)dsm_test_arg("dsm_ship", argv[3], 1, 64) : 1;
	const char *mode = argv[1];
	static const struct {
		const char *name;
		int (*run)(void);
	} modes[] = {{"counters", mode_counters},   {"bank", mode_bank},
		     {"callbacks", mode_callbacks}, {"nested", mode_nested},
		     {"atomics", mode_atomics},	    {"executor", mode_executor},
		     {"entered", mode_entered},	    {"collect", mode_collect},
		     {"publish", mode_publish},	    {"parked", mode_parked},
		     {"refuse", mode_refuse}};
	int rc = 2;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(mode, modes[i].name))
			rc = modes[i].run();
	if (rc == 2)
		fprintf(stderr, "dsm_ship: unknown mode %s\n", mode);
	locus_dsm_finalize();
	return rc;
}
