/*
 * Threads per node: teams of T threads on every node (locus_dsm_parallel).
 *
 *   dsm_threads locks N T     every thread of every node adds 1 to shared
 *                             counters N times under DSM locks: the totals
 *                             must be exact (nodes * T * N), and a lock word
 *                             checks that two holders never overlap
 *   dsm_threads barrier R T   R rounds: every thread writes its slot, enters
 *                             the barrier over all threads, then reads every
 *                             other thread's slot of that round; each node
 *                             must send one barrier message per round; the
 *                             same through the node's team barrier with
 *                             private memory
 *   dsm_threads combine T     T threads of the last node read one page held
 *                             by node 0 at once, K times: one request per
 *                             page, never T (run with a large
 *                             LOCUS_DSM_DELAY_US so that they overlap)
 *
 * Each prints what it checked and exits nonzero on a violation.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/dsm.h"

#define PAGE 4096

static int me, nodes, team;
static long iters;
static volatile uint64_t *shared;  /* counters, slots: see each test */
static volatile uint64_t *verdict; /* node 0's verdict for every node */
static volatile uint64_t *errors;  /* per node and thread: violations seen */

static long arg(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (*s == '\0' || *end || v < lo || v > hi) {
		fprintf(stderr, "dsm_threads: %s must be %ld to %ld, not '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

/* ---- locks: counters on their own pages, and packed on one page ---- */

#define NLOCKS 3

static void locks_thread(int t, void *unused)
{
	(void)unused;
	unsigned seed = 1234u * (unsigned)(me * team + t + 1);
	volatile uint64_t *packed = shared + NLOCKS * (PAGE / 8);
	volatile uint64_t *inside = packed + 16; /* one per lock: 1 while held */
	for (long k = 0; k < iters; k++) {
		uint32_t l = (uint32_t)(rand_r(&seed) % NLOCKS);
		locus_dsm_lock(l);
		if (inside[l] != 0)
			errors[me * team + t]++;
		inside[l] = 1;
		uint64_t v = shared[l * (PAGE / 8)];
		packed[l] += 1;
		shared[l * (PAGE / 8)] = v + 1;
		inside[l] = 0;
		locus_dsm_unlock(l);
	}
}

static int test_locks(void)
{
	shared = locus_dsm_alloc((NLOCKS + 1) * PAGE);
	if (!shared || locus_dsm_parallel(team, locks_thread, NULL) != 0)
		return 1;
	locus_dsm_barrier();
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	int bad = 0;
	if (me == 0) {
		volatile uint64_t *packed = shared + NLOCKS * (PAGE / 8);
		uint64_t own = 0, pk = 0, errs = 0;
		for (int l = 0; l < NLOCKS; l++) {
			own += shared[l * (PAGE / 8)];
			pk += packed[l];
		}
		for (int i = 0; i < nodes * team; i++)
			errs += errors[i];
		uint64_t want = (uint64_t)nodes * (uint64_t)team * (uint64_t)iters;
		bad = own != want || pk != want || errs != 0;
		printf("threads locks: %d nodes x %d threads x %ld: totals %llu and %llu, "
		       "expected %llu; %llu overlapping holders; node 0: %llu hand-offs, %llu "
		       "remote acquires: %s\n",
		       nodes, team, iters, (unsigned long long)own, (unsigned long long)pk,
		       (unsigned long long)want, (unsigned long long)errs,
		       (unsigned long long)s.lock_handoffs, (unsigned long long)s.remote_locks,
		       bad ? "WRONG" : "exact");
	}
	const char *h = getenv("LOCUS_DSM_LOCK_HANDOFF");
	if (h && !strcmp(h, "0") && s.lock_handoffs != 0) {
		printf("threads locks: node %d: %llu hand-offs with LOCUS_DSM_LOCK_HANDOFF=0\n", me,
		       (unsigned long long)s.lock_handoffs);
		bad = 1;
	}
	if (s.threads != (uint64_t)team || s.lock_acquires != (uint64_t)(team * iters)) {
		printf("threads locks: node %d: statistics say %llu threads, %llu acquires; "
		       "expected %d and %ld\n",
		       me, (unsigned long long)s.threads, (unsigned long long)s.lock_acquires, team,
		       team * iters);
		bad = 1;
	}
	return bad;
}

/* ---- barrier: a write before it is seen after it, by every thread ---- */

static volatile uint64_t local[LOCUS_DSM_MAX_THREADS]; /* this node's, not shared */

static void barrier_thread(int t, void *unused)
{
	(void)unused;
	int total = nodes * team, id = me * team + t;
	/* One page per thread: rounds move every page to every node. */
	for (long r = 1; r <= iters; r++) {
		shared[(size_t)id * (PAGE / 8)] = (uint64_t)r;
		locus_dsm_barrier();
		for (int o = 0; o < total; o++)
			if (shared[(size_t)o * (PAGE / 8)] != (uint64_t)r)
				errors[id]++;
		/* The node's own barrier orders the node's threads: private memory. */
		local[t] = (uint64_t)r;
		locus_dsm_team_barrier();
		for (int o = 0; o < team; o++)
			if (local[o] != (uint64_t)r)
				errors[id]++;
		locus_dsm_barrier(); /* nobody writes round r+1 before all have read r */
	}
}

static int test_barrier(void)
{
	shared = locus_dsm_alloc((size_t)nodes * (size_t)team * PAGE);
	if (!shared)
		return 1;
	locus_dsm_stats_reset();
	if (locus_dsm_parallel(team, barrier_thread, NULL) != 0)
		return 1;
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	int bad = 0;
	uint64_t want_node_barriers = 2 * (uint64_t)iters;
	uint64_t sent = s.msgs_sent[LOCUS_DSM_MSG_BAR_ENTER];
	if (s.barriers != want_node_barriers || (me != 0 && sent != want_node_barriers) ||
	    s.barrier_waits != want_node_barriers * (uint64_t)team) {
		printf("threads barrier: node %d: %llu node barriers, %llu barrier messages sent, "
		       "%llu thread waits; expected %llu, %llu and %llu\n",
		       me, (unsigned long long)s.barriers, (unsigned long long)sent,
		       (unsigned long long)s.barrier_waits, (unsigned long long)want_node_barriers,
		       (unsigned long long)(me ? want_node_barriers : 0),
		       (unsigned long long)(want_node_barriers * (uint64_t)team));
		bad = 1;
	}
	locus_dsm_barrier();
	if (me == 0) {
		uint64_t errs = 0;
		for (int i = 0; i < nodes * team; i++)
			errs += errors[i];
		printf("threads barrier: %d nodes x %d threads, %ld rounds: %llu stale reads: %s\n",
		       nodes, team, iters, (unsigned long long)errs, errs ? "WRONG" : "ordered");
		bad |= errs != 0;
	}
	return bad;
}

/* ---- combine: T threads faulting on one page send one request ---- */

#define COMBINE_PAGES 3

static void combine_thread(int t, void *page)
{
	(void)t;
	locus_dsm_barrier(); /* start together */
	volatile uint64_t v = *(volatile uint64_t *)page;
	(void)v;
}

static int test_combine(void)
{
	/* Dealt round robin (LOCUS_DSM_HOME_SPREAD), pages `nodes` apart share
	   one home; node 0 writes them first, so it holds them. */
	char *region = locus_dsm_alloc_at((size_t)COMBINE_PAGES * (size_t)nodes * PAGE,
					  LOCUS_DSM_HOME_SPREAD);
	if (!region)
		return 1;
	int reader = nodes - 1, bad = 0;
	uint64_t req0 = 0, combined0 = 0;
	locus_dsm_stats s;
	if (me == 0)
		for (int k = 0; k < COMBINE_PAGES; k++)
			region[(size_t)k * (size_t)nodes * PAGE] =
				(char)(k + 1); /* owned, written */
	locus_dsm_barrier();
	locus_dsm_stats_get(&s);
	req0 = s.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ];
	combined0 = s.faults[LOCUS_DSM_FAULT_COMBINED];
	for (int k = 0; k < COMBINE_PAGES; k++) {
		void *page = region + (size_t)k * (size_t)nodes * PAGE;
		int threads = me == reader ? team : 1;
		if (me == reader) {
			if (locus_dsm_parallel(threads, combine_thread, page) != 0)
				return 1;
		} else {
			locus_dsm_barrier();
		}
	}
	locus_dsm_stats_get(&s);
	if (me == reader && nodes > 1) {
		uint64_t req = s.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ] - req0;
		uint64_t comb = s.faults[LOCUS_DSM_FAULT_COMBINED] - combined0;
		int want_comb = team > 1;
		bad = req != COMBINE_PAGES || (want_comb && comb == 0);
		printf("threads combine: %d threads on node %d read %d pages held by node 0: %llu "
		       "page requests sent (expected %d), %llu faults combined: %s\n",
		       team, me, COMBINE_PAGES, (unsigned long long)req, COMBINE_PAGES,
		       (unsigned long long)comb, bad ? "WRONG" : "combined");
	}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: dsm_threads locks N T | barrier R T | combine T\n");
		return 2;
	}
	const char *test = argv[1];
	int is_combine = !strcmp(test, "combine");
	if (!is_combine && argc < 4) {
		fprintf(stderr, "usage: dsm_threads locks N T | barrier R T | combine T\n");
		return 2;
	}
	iters = is_combine ? 1 : arg(argv[2], 1, 1000000, "N or R");
	team = (int)arg(argv[is_combine ? 2 : 3], 1, LOCUS_DSM_MAX_THREADS, "T");
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	verdict = locus_dsm_alloc(PAGE);
	errors = locus_dsm_alloc((size_t)nodes * (size_t)team * sizeof(uint64_t));
	int bad;
	if (!strcmp(test, "locks"))
		bad = test_locks();
	else if (!strcmp(test, "barrier"))
		bad = test_barrier();
	else if (is_combine)
		bad = test_combine();
	else {
		fprintf(stderr, "dsm_threads: unknown test '%s'\n", test);
		bad = 2;
	}
	/* Every node's verdict reaches node 0, and node 0's reaches everyone. */
	locus_dsm_lock(0);
	*verdict += (uint64_t)(bad != 0);
	locus_dsm_unlock(0);
	locus_dsm_barrier();
	int any = *verdict != 0;
	locus_dsm_finalize();
	return any ? 1 : 0;
}
