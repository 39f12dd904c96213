/*
 * Remote misses whose request the faulting thread sends itself (comm.c,
 * stand_in; sc and lrc): while the communication thread sleeps, a fault that
 * needs a message is taken by the faulting thread, which hands the request to
 * MPI, and then waits for the answer on its doorbell and takes it out of MPI
 * itself (await_answer), unless LOCUS_DSM_TAKE_ANSWERS=0 leaves that to the
 * communication thread.
 *
 *   dsm_sent miss R       R rounds: node r % nodes writes every word it
 *                         checks of a block of 32 pages, then, after a
 *                         barrier, every node reads the block from its last
 *                         page down (no walk: each page is its own miss) and
 *                         checks every word; a second barrier ends the
 *                         round. No node may have sent more misses in
 *                         place than it had remote misses, and the nodes
 *                         together must have sent some. (Not each node:
 *                         under lrc a node fetches a writer's pages in a
 *                         few batches, as soon as the barrier lets it go,
 *                         while its communication thread is still at work
 *                         on the barrier: it may have none to send.) The
 *                         same for the answers the faulting threads took,
 *                         woken by the ring of the node that answered (a
 *                         look after a timeout does not count: without the
 *                         rings none would), which are never more than the
 *                         misses they sent; none with
 *                         LOCUS_DSM_TAKE_ANSWERS=0. And the answers their
 *                         thread found while it looked for them before it
 *                         slept (for LOCUS_DSM_SPIN_US): never more than the
 *                         misses sent, none with LOCUS_DSM_SPIN_US=0, and
 *                         some on some node when it looks for a whole
 *                         second (LOCUS_DSM_SPIN_US=1000000).
 *   dsm_sent miss_alt R   the same with a small alternate signal stack set
 *                         up first, which the fault handler runs on: no
 *                         miss is sent in place from it, no answer taken.
 *   dsm_sent first R      R rounds: every node allocates a fresh block of 32
 *                         pages homed at each node and touches its own for
 *                         the first time (reads the even pages first, writes
 *                         the odd ones), then, after a barrier, checks every
 *                         node's block. Under sc such first touches need no
 *                         message and are taken by the faulting thread
 *                         (proto_sc.c, untouched): the nodes together must
 *                         have taken some in place, and no node more than
 *                         its faults.
 *   dsm_sent barrier R    R rounds: every node writes its word of a shared
 *                         page, then, after a barrier, checks every node's
 *                         word; a second barrier ends the round. A barrier
 *                         is entered in place (comm.c, stand_in) by the
 *                         thread whose arrival makes its node enter: no node
 *                         may count more barriers in place than barriers,
 *                         every node counts the 2R barriers, and the nodes
 *                         together must have entered some in place under sc
 *                         and lrc; none under avr, whose faults run on the
 *                         faulting thread. The answers of barriers are not
 *                         counted as answers taken or found looking: never
 *                         more of those than misses sent in place.
 *   dsm_sent walk R       R rounds: node r % nodes writes every word it
 *                         checks of a block of 32 pages, then, after a
 *                         barrier, every other node reads the block in
 *                         order (a walk: its pages are asked for together)
 *                         and checks every word. Messages a turn sends to
 *                         one node leave together (comm.c, send_held): no
 *                         node may count a bundle of fewer than two, nor
 *                         more bundled messages than messages it sent, and
 *                         under sc the nodes together must have sent some
 *                         bundle (a walk's pages, its forwards).
 *
 * Exits 0 when every check held; prints what was wrong otherwise.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm_verdict.h"
#include "locus/dsm.h"

#define PAGE  4096
#define PAGES 32
#define STEP  64 /* words apart: 16 checked in each page */

static int me, nodes;
static long bad;

static void fail(const char *what, long round, long got, long want)
{
	dsm_test_fail("dsm_sent", &bad, what, round, got, want);
}

/* The variable is set to value (NULL: to anything but "", "0" and "none"). */
static int set(const char *var, const char *value)
{
	const char *v = getenv(var);
	if (!v || !*v)
		return 0;
	if (value)
		return !strcmp(v, value);
	return strcmp(v, "0") && strcmp(v, "none");
}

static int32_t value(long round, size_t i)
{
	return (int32_t)(round * 1000003 + (long)i);
}

/* The sum over every node of v (a collective call). */
static long sum_over_nodes(long v)
{
	volatile int64_t *all = locus_dsm_alloc((size_t)nodes * sizeof(int64_t));
	all[me] = v;
	locus_dsm_barrier();
	long total = 0;
	for (int n = 0; n < nodes; n++)
		total += (long)all[n];
	return total;
}

static void miss(long rounds, int alt)
{
	static char altstack[16 << 10];
	if (alt) {
		stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
		if (sigaltstack(&ss, NULL) != 0)
			fail("sigaltstack", 0, -1, 0);
	}
	const size_t words = PAGES * PAGE / 4, per_page = PAGE / 4;
	volatile int32_t *w = locus_dsm_alloc(PAGES * PAGE);
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	for (long r = 1; r <= rounds; r++) {
		if (me == (int)(r % nodes))
			for (size_t i = 0; i < words; i += STEP)
				w[i] = value(r, i);
		locus_dsm_barrier();
		for (size_t p = PAGES; p-- > 0;)
			for (size_t i = p * per_page; i < (p + 1) * per_page; i += STEP)
				if (w[i] != value(r, i))
					fail("a word written by another node", r, w[i],
					     value(r, i));
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	uint64_t sent = s1.misses_in_place - s0.misses_in_place;
	uint64_t taken = s1.answers_taken - s0.answers_taken;
	uint64_t remote = s1.remote_misses - s0.remote_misses;
	uint64_t spun = s1.answers_spun - s0.answers_spun;
	/* Answers are taken where every peer rings this node (its doorbells
	   reach them all: one host) and no delay is emulated. */
	int take = !set("LOCUS_DSM_TAKE_ANSWERS", "0") && s1.bell_peers == (uint64_t)(nodes - 1) &&
		   !set("LOCUS_DSM_DELAY_US", NULL) && !set("LOCUS_DSM_DELAY_NS_PER_BYTE", NULL) &&
		   !set("LOCUS_DSM_NETWORK", NULL);
	printf("dsm_sent: node %d: %ld rounds, %llu remote misses, %llu sent in place, %llu "
	       "answers taken, %llu found looking\n",
	       me, rounds, (unsigned long long)remote, (unsigned long long)sent,
	       (unsigned long long)taken, (unsigned long long)spun);
	if (sent > remote)
		fail("misses sent in place that were not remote misses", rounds, (long)sent,
		     (long)remote);
	if (taken > sent)
		fail("answers taken by threads that did not send their misses", rounds, (long)taken,
		     (long)sent);
	if (alt && sent)
		fail("misses sent in place from a small alternate signal stack", rounds, (long)sent,
		     0);
	if (set("LOCUS_DSM_TAKE_ANSWERS", "0") && taken)
		fail("answers taken with LOCUS_DSM_TAKE_ANSWERS=0", rounds, (long)taken, 0);
	if (spun > sent)
		fail("answers found looking for misses not sent in place", rounds, (long)spun,
		     (long)sent);
	if (set("LOCUS_DSM_SPIN_US", "0") && spun)
		fail("answers found looking with LOCUS_DSM_SPIN_US=0", rounds, (long)spun, 0);
	long total_spun = sum_over_nodes((long)spun);
	if (me == 0 && !alt && take && nodes > 1 && set("LOCUS_DSM_SPIN_US", "1000000") &&
	    !total_spun)
		fail("no answer found looking on any node, looking for a second", rounds, 0, 1);
	long total_sent = sum_over_nodes((long)sent), total_taken = sum_over_nodes((long)taken);
	if (me == 0 && !alt && nodes > 1 && !total_sent)
		fail("no miss sent in place on any node", rounds, 0, 1);
	if (me == 0 && !alt && take && nodes > 1 && !total_taken)
		fail("no answer taken by a faulting thread on any node", rounds, 0, 1);
}

static void walk(long rounds)
{
	const size_t words = PAGES * PAGE / 4;
	volatile int32_t *w = locus_dsm_alloc(PAGES * PAGE);
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	for (long r = 1; r <= rounds; r++) {
		int writer = (int)(r % nodes);
		if (me == writer)
			for (size_t i = 0; i < words; i += STEP)
				w[i] = value(r, i);
		locus_dsm_barrier();
		if (me != writer)
			for (size_t i = 0; i < words; i += STEP)
				if (w[i] != value(r, i))
					fail("a word written by another node, read in order", r,
					     w[i], value(r, i));
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	uint64_t bundles = s1.bundles - s0.bundles, bundled = s1.bundled - s0.bundled, msgs = 0;
	for (int k = 0; k < LOCUS_DSM_MSG_KINDS; k++)
		msgs += s1.msgs_sent[k] - s0.msgs_sent[k];
	printf("dsm_sent: node %d: %ld rounds, %llu messages sent, %llu of them in %llu "
	       "bundles\n",
	       me, rounds, (unsigned long long)msgs, (unsigned long long)bundled,
	       (unsigned long long)bundles);
	if (bundled < 2 * bundles)
		fail("bundles of fewer than two messages", rounds, (long)bundled,
		     (long)(2 * bundles));
	if (bundled > msgs)
		fail("more messages bundled than sent", rounds, (long)bundled, (long)msgs);
	long total = sum_over_nodes((long)bundles);
	if (me == 0 && nodes > 1 && !strcmp(locus_dsm_protocol(), "sc") && !total)
		fail("no bundle sent on any node while nodes walked pages", rounds, 0, 1);
}

static void first(long rounds)
{
	const size_t per_page = PAGE / 4;
	volatile int32_t **blk = calloc((size_t)nodes, sizeof(*blk));
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	for (long r = 1; r <= rounds; r++) {
		for (int n = 0; n < nodes; n++)
			blk[n] = locus_dsm_alloc_at(PAGES * PAGE, n);
		volatile int32_t *w = blk[me];
		for (size_t p = 0; p < PAGES; p++) {
			size_t i = p * per_page;
			if (p % 2 == 0 && w[i] != 0)
				fail("the first read of a fresh page", r, w[i], 0);
			w[i] = value(r, i + (size_t)me);
		}
		locus_dsm_barrier();
		for (int n = 0; n < nodes; n++)
			for (size_t p = 0; p < PAGES; p++) {
				size_t i = p * per_page;
				if (blk[n][i] != value(r, i + (size_t)n))
					fail("a word its node wrote at its first touch", r,
					     blk[n][i], value(r, i + (size_t)n));
				if (blk[n][i + 1] != 0)
					fail("a word nobody wrote", r, blk[n][i + 1], 0);
			}
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	uint64_t in_place = s1.faults_in_place - s0.faults_in_place, faults = 0;
	for (int k = 0; k < LOCUS_DSM_FAULT_KINDS; k++)
		faults += s1.faults[k] - s0.faults[k];
	printf("dsm_sent: node %d: %ld rounds, %llu faults, %llu taken in place\n", me, rounds,
	       (unsigned long long)faults, (unsigned long long)in_place);
	if (in_place > faults)
		fail("faults taken in place, more than the faults", rounds, (long)in_place,
		     (long)faults);
	long total = sum_over_nodes((long)in_place);
	if (me == 0 && !strcmp(locus_dsm_protocol(), "sc") && !total)
		fail("first touches taken in place on any node", rounds, 0, 1);
	free(blk);
}

static void barrier(long rounds)
{
	volatile int64_t *w = locus_dsm_alloc((size_t)nodes * sizeof(int64_t));
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	int64_t seen[64];
	if (nodes > 64)
		fail("more nodes than the test keeps words of", 0, nodes, 64);
	for (long r = 1; r <= rounds && nodes <= 64; r++) {
		w[me] = value(r, (size_t)me);
		locus_dsm_barrier();
		/* Read into the stack, checked after the next locus-dsm call: avr
		   may run the reads ahead with old values and roll them back
		   (a rollback restores the stack, not what fail() printed). */
		for (int n = 0; n < nodes; n++)
			seen[n] = w[n];
		locus_dsm_barrier();
		for (int n = 0; n < nodes; n++)
			if (seen[n] != value(r, (size_t)n))
				fail("a word another node wrote before the barrier", r,
				     (long)seen[n], value(r, (size_t)n));
	}
	locus_dsm_stats_get(&s1);
	uint64_t bars = s1.barriers - s0.barriers;
	uint64_t in_place = s1.barriers_in_place - s0.barriers_in_place;
	uint64_t sent = s1.misses_in_place - s0.misses_in_place;
	uint64_t taken = s1.answers_taken - s0.answers_taken;
	uint64_t spun = s1.answers_spun - s0.answers_spun;
	printf("dsm_sent: node %d: %ld rounds, %llu barriers, %llu in place\n", me, rounds,
	       (unsigned long long)bars, (unsigned long long)in_place);
	if (bars != (uint64_t)(2 * rounds))
		fail("barriers counted", rounds, (long)bars, 2 * rounds);
	if (in_place > bars)
		fail("barriers in place, more than the barriers", rounds, (long)in_place, (long)bars);
	if (taken > sent || spun > sent)
		fail("answers taken or found looking, more than the misses sent in place", rounds,
		     (long)(taken > spun ? taken : spun), (long)sent);
	int avr = !strcmp(locus_dsm_protocol(), "avr");
	if (avr && in_place)
		fail("barriers in place under avr", rounds, (long)in_place, 0);
	long total = sum_over_nodes((long)in_place);
	if (me == 0 && !avr && !total)
		fail("no barrier entered in place on any node", rounds, 0, 1);
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "miss") && strcmp(argv[1], "miss_alt") &&
			 strcmp(argv[1], "first") && strcmp(argv[1], "barrier") &&
			 strcmp(argv[1], "walk"))) {
		fprintf(stderr, "usage: dsm_sent miss|miss_alt|first|barrier|walk ROUNDS\n");
		return 2;
	}
	long rounds = atol(argv[2]);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	if (!strcmp(argv[1], "first"))
		first(rounds);
	else if (!strcmp(argv[1], "barrier"))
		barrier(rounds);
	else if (!strcmp(argv[1], "walk"))
		walk(rounds);
	else
		miss(rounds, !strcmp(argv[1], "miss_alt"));
	char what[96];
	snprintf(what, sizeof(what), "dsm_sent %s (%s, %d nodes, %ld rounds)", argv[1],
		 locus_dsm_protocol(), nodes, rounds);
	return dsm_test_verdict(bad, what);
}
