/*
 * avr (LOCUS_DSM_PROTOCOL=avr): optimism that must fail, optimism that must
 * succeed, and rollbacks that must restore everything a thread had.
 *
 *   true R    true sharing: the nodes take turns (a turn word they spin on)
 *             to increment one counter on the same page; the count is exact
 *             and some interval was rolled back (what a spinning node read
 *             was overwritten)
 *   false R   false sharing: every node increments its own word of one page
 *             (64 bytes apart), computing between the read and the write;
 *             the counts are exact, intervals opened (the page starts at
 *             its manager: every other node's first access is remote), and
 *             none was rolled back
 *   regs R    node 0 writes x each round; the others read it inside an asm
 *             block that keeps a value in xmm8 across the load and updates
 *             it after: the rollback must restore xmm8 (the FP/SSE state)
 *   deep R    a fault 24 frames deep (~72 KB of stack) resolved, and rolled
 *             back, after returning to main; and a fault in main rolled back
 *             from a fault 24 frames deep
 *   signal R  the application's own SIGUSR2 handler reads shared memory:
 *             the interval opens inside the handler and is rolled back
 *             after the handler has returned; the handler's read is right
 *   pending R several pages per run (LOCUS_DSM_AVR_PENDING): every node
 *             reads its own word of each of 4 pages, computes, then writes
 *             them all (false sharing across pages), and then the nodes take
 *             turns to increment a counter on each of the 4 pages (true
 *             sharing: rollbacks of intervals awaiting several pages, each
 *             page restored). Every count is exact, some interval was rolled
 *             back, and with LOCUS_DSM_AVR_PENDING > 1 on more than one node
 *             some run went on through a fault on another page (none with 1)
 *   turns R   the nodes take turns, one barrier per turn, to increment one
 *             word on each of 4 pages; after every round each node checks
 *             the 4 counts, paused. First with a barrier after the check:
 *             every count is exact. Then without it, as a program that
 *             forgets it would: node 0's next turn may then run while a
 *             slower node still checks, and sequential consistency lets that
 *             node see node 0's next increment (sc shows it too), so there
 *             a count may also be one more, except on node 0; the final
 *             counts are exact. Some interval was rolled back
 *
 *   pointer R each round one node publishes a pointer (NULL the round
 *             before, when every node read it) and every node follows it
 *             after a barrier: a run on the old copy follows NULL, and that
 *             fault outside the region must roll the run back, never end the
 *             process; every value followed is right
 *
 * regs, deep, signal and pointer also fail if no interval was rolled back.
 *
 * Results are checked with avr paused (a check must not print twice). Every
 * node leaves with node 0's verdict; exit 0 when every check held.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/dsm.h"

#define PAGE  4096
#define DEPTH 24

static int me, nodes;
static long bad;
static volatile uint64_t *verdicts; /* [node] */

static void fail(const char *what, long round, long got, long want)
{
	if (bad++ < 10)
		fprintf(stderr, "dsm_avr: node %d: %s, round %ld: got %ld, expected %ld\n", me,
			what, round, got, want);
}

/* This node's intervals rolled back (rolled = 1) or opened (0) so far. */
static uint64_t avr_count(int rolled)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	const uint64_t *c = rolled ? s.avr_rollbacks : s.avr_checkpoints;
	int kinds = rolled ? LOCUS_DSM_AVR_ROLL_KINDS : LOCUS_DSM_AVR_CKPT_KINDS;
	uint64_t n = 0;
	for (int k = 0; k < kinds; k++)
		n += c[k];
	return n;
}

static uint64_t rollbacks(void)
{
	return avr_count(1);
}

static uint64_t checkpoints(void)
{
	return avr_count(0);
}

/* Sum of every node's value (a collective; avr paused by the caller). */
static uint64_t sum_over_nodes(volatile uint64_t *slots, uint64_t mine)
{
	slots[me * 8] = mine;
	locus_dsm_barrier();
	uint64_t s = 0;
	for (int n = 0; n < nodes; n++)
		s += slots[n * 8];
	locus_dsm_barrier();
	return s;
}

/* Every node's rollbacks since r0, summed; node 0 prints them and fails the
   test if a run on more than one node had none (avr paused by the caller). */
static void report_rollbacks(const char *mode, long rounds, volatile uint64_t *slots, uint64_t r0)
{
	uint64_t rolled = sum_over_nodes(slots, rollbacks() - r0);
	if (me == 0) {
		printf("dsm_avr %s: %ld rounds, %llu rollbacks\n", mode, rounds,
		       (unsigned long long)rolled);
		if (rolled == 0 && nodes > 1)
			fail("no interval was rolled back", rounds, 0, 1);
	}
}

static void spin_work(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void true_sharing(long rounds)
{
	volatile uint64_t *t = locus_dsm_alloc(PAGE), *slots = locus_dsm_alloc(PAGE);
	locus_dsm_barrier();
	for (long r = 0; r < rounds; r++) {
		while (t[0] != (uint64_t)me)
			;
		t[8] = t[8] + 1;
		t[0] = (uint64_t)((me + 1) % nodes);
	}
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	if (t[8] != (uint64_t)(rounds * nodes))
		fail("true sharing: count", rounds, (long)t[8], rounds * nodes);
	uint64_t rolled = sum_over_nodes(slots, rollbacks());
	if (me == 0) {
		printf("dsm_avr true: %d nodes x %ld turns, count %llu, %llu rollbacks\n", nodes,
		       rounds, (unsigned long long)t[8], (unsigned long long)rolled);
		if (rolled == 0)
			fail("true sharing: no interval was rolled back", rounds, 0, 1);
	}
	locus_dsm_avr_resume();
}

static void false_sharing(long rounds)
{
	volatile uint64_t *w = locus_dsm_alloc(PAGE), *slots = locus_dsm_alloc(PAGE);
	locus_dsm_barrier();
	uint64_t c0 = checkpoints(), r0 = rollbacks();
	unsigned seed = 99u + (unsigned)me;
	for (long r = 0; r < rounds; r++) {
		uint64_t v = w[me * 8];
		spin_work((unsigned)(rand_r(&seed) % 20000));
		w[me * 8] = v + 1;
	}
	uint64_t c = checkpoints() - c0, rolled = rollbacks() - r0;
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	for (int n = 0; n < nodes; n++)
		if (w[n * 8] != (uint64_t)rounds)
			fail("false sharing: a node's word", rounds, (long)w[n * 8], rounds);
	c = sum_over_nodes(slots, c);
	rolled = sum_over_nodes(slots, rolled);
	if (me == 0) {
		printf("dsm_avr false: %d nodes x %ld increments: %llu intervals, %llu rolled "
		       "back\n",
		       nodes, rounds, (unsigned long long)c, (unsigned long long)rolled);
		if (c == 0)
			fail("false sharing: no interval opened", rounds, 0, 1);
		if (rolled != 0)
			fail("false sharing: rollbacks", rounds, (long)rolled, 0);
	}
	locus_dsm_avr_resume();
}

#define REG_K 1000.0

/* xmm8 = K; rax = *x (the fault); xmm8 = 2 * xmm8 + rax; return xmm8. */
static double fp_across(volatile uint64_t *x)
{
	double k = REG_K, out;
	__asm__ volatile("movsd %[k], %%xmm8\n\t"
			 "mov (%[x]), %%rax\n\t"
			 "cvtsi2sd %%rax, %%xmm9\n\t"
			 "addsd %%xmm8, %%xmm8\n\t"
			 "addsd %%xmm9, %%xmm8\n\t"
			 "movsd %%xmm8, %[out]\n\t"
			 : [out] "=m"(out)
			 : [k] "m"(k), [x] "r"(x)
			 : "rax", "xmm8", "xmm9", "memory");
	return out;
}

static void regs(long rounds)
{
	volatile uint64_t *x = locus_dsm_alloc(PAGE), *slots = locus_dsm_alloc(PAGE);
	(void)x[0];
	locus_dsm_barrier();
	uint64_t r0 = rollbacks();
	for (long r = 0; r < rounds; r++) {
		if (me == 0)
			x[0] = (uint64_t)r + 1;
		locus_dsm_barrier();
		double got = me ? fp_across(x) : 0;
		locus_dsm_barrier(); /* resolves here: the copy read was stale */
		locus_dsm_avr_pause();
		if (me && got != 2 * REG_K + (double)(r + 1))
			fail("xmm8 across a rollback", r, (long)got, (long)(2 * REG_K) + r + 1);
		locus_dsm_avr_resume();
	}
	locus_dsm_avr_pause();
	report_rollbacks("regs", rounds, slots, r0);
	locus_dsm_avr_resume();
}

/* Each frame keeps 3 KB of its own, checked on the way out. */
static __attribute__((noinline)) uint64_t deep_read(volatile uint64_t *p, int depth)
{
	volatile unsigned char pad[3000];
	for (size_t i = 0; i < sizeof(pad); i += 64)
		pad[i] = (unsigned char)(depth + i / 64);
	uint64_t v = depth == 0 ? *p : deep_read(p, depth - 1);
	for (size_t i = 0; i < sizeof(pad); i += 64)
		if (pad[i] != (unsigned char)(depth + i / 64))
			return UINT64_MAX; /* a frame came back changed */
	return v;
}

static void deep(long rounds)
{
	volatile uint64_t *a = locus_dsm_alloc(PAGE), *b = locus_dsm_alloc(PAGE);
	volatile uint64_t *slots = locus_dsm_alloc(PAGE);
	(void)a[0];
	(void)b[0];
	locus_dsm_barrier();
	uint64_t r0 = rollbacks();
	for (long r = 0; r < rounds; r++) {
		if (me == 0) {
			a[0] = (uint64_t)r + 1;
			b[0] = (uint64_t)r + 1;
		}
		locus_dsm_barrier();
		uint64_t deep_v = 0, shallow_v = 0, then_deep = 0;
		if (me) {
			/* Deep fault, resolved at the barrier in this frame. */
			deep_v = deep_read(a, DEPTH);
		}
		locus_dsm_barrier();
		if (me == 0) {
			a[0] = (uint64_t)r + 1000;
			b[0] = (uint64_t)r + 1000;
		}
		locus_dsm_barrier();
		if (me) {
			/* Shallow fault, resolved at a fault 24 frames deeper. */
			shallow_v = a[0];
			then_deep = deep_read(b, DEPTH);
		}
		locus_dsm_barrier();
		locus_dsm_avr_pause();
		if (me && deep_v != (uint64_t)r + 1)
			fail("deep fault rolled back in main", r, (long)deep_v, r + 1);
		if (me && shallow_v != (uint64_t)r + 1000)
			fail("main's fault rolled back from deep", r, (long)shallow_v, r + 1000);
		if (me && then_deep != (uint64_t)r + 1000)
			fail("deep read after the rollback", r, (long)then_deep, r + 1000);
		locus_dsm_avr_resume();
	}
	locus_dsm_avr_pause();
	report_rollbacks("deep", rounds, slots, r0);
	locus_dsm_avr_resume();
}

static volatile uint64_t *sig_x;
static volatile uint64_t sig_seen;
static volatile int sig_runs;

static void on_usr2(int sig)
{
	(void)sig;
	sig_runs++;
	sig_seen = *sig_x;
}

static void signal_handler(long rounds)
{
	sig_x = locus_dsm_alloc(PAGE);
	volatile uint64_t *slots = locus_dsm_alloc(PAGE);
	(void)sig_x[0];
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	locus_dsm_barrier();
	uint64_t r0 = rollbacks();
	for (long r = 0; r < rounds; r++) {
		if (me == 0)
			sig_x[0] = (uint64_t)r + 1;
		locus_dsm_barrier();
		if (me)
			raise(SIGUSR2);
		locus_dsm_barrier();
		locus_dsm_avr_pause();
		if (me && sig_seen != (uint64_t)r + 1)
			fail("read in the application's signal handler", r, (long)sig_seen, r + 1);
		locus_dsm_avr_resume();
	}
	locus_dsm_avr_pause();
	report_rollbacks("signal", rounds, slots, r0);
	if (me && sig_runs < rounds)
		fail("signal handler runs", rounds, sig_runs, rounds);
	locus_dsm_avr_resume();
}

#define NPAGES 4

static uint64_t added(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.avr_added;
}

static uint64_t asked(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.avr_asked;
}

static void pending(long rounds)
{
	volatile uint64_t *pg[NPAGES];
	for (int j = 0; j < NPAGES; j++)
		pg[j] = locus_dsm_alloc(PAGE);
	volatile uint64_t *t = locus_dsm_alloc(PAGE), *slots = locus_dsm_alloc(PAGE);
	const char *e = getenv("LOCUS_DSM_AVR_PENDING");
	long k = e ? atol(e) : 1;
	e = getenv("LOCUS_DSM_AVR_ASK");
	int ask = !e || atol(e) != 0;
	locus_dsm_barrier();

	/* False sharing across pages: a run reads all four words, then writes. */
	uint64_t a0 = added(), q0 = asked(), r0 = rollbacks();
	unsigned seed = 7u + (unsigned)me;
	for (long r = 0; r < rounds; r++) {
		uint64_t v[NPAGES];
		for (int j = 0; j < NPAGES; j++)
			v[j] = pg[j][8 + me * 8];
		spin_work((unsigned)(rand_r(&seed) % 20000));
		for (int j = 0; j < NPAGES; j++)
			pg[j][8 + me * 8] = v[j] + 1;
	}
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	for (int j = 0; j < NPAGES; j++)
		for (int n = 0; n < nodes; n++)
			if (pg[j][8 + n * 8] != (uint64_t)rounds)
				fail("pending: a node's word", rounds, (long)pg[j][8 + n * 8],
				     rounds);
	locus_dsm_avr_resume();

	/* True sharing across pages: turns, a counter on each page. */
	locus_dsm_barrier();
	for (long r = 0; r < rounds; r++) {
		while (t[0] != (uint64_t)me)
			;
		for (int j = 0; j < NPAGES; j++)
			pg[j][0] = pg[j][0] + 1;
		t[0] = (uint64_t)((me + 1) % nodes);
	}
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	for (int j = 0; j < NPAGES; j++)
		if (pg[j][0] != (uint64_t)(rounds * nodes))
			fail("pending: a page's counter", rounds, (long)pg[j][0], rounds * nodes);
	uint64_t n_added = sum_over_nodes(slots, added() - a0);
	uint64_t n_asked = sum_over_nodes(slots, asked() - q0);
	if (me == 0) {
		printf("dsm_avr pending: %d nodes x %ld rounds over %d pages, "
		       "LOCUS_DSM_AVR_PENDING=%ld, LOCUS_DSM_AVR_ASK=%d: %llu pages added to "
		       "open intervals, %llu asked for at a run's end\n",
		       nodes, rounds, NPAGES, k, ask, (unsigned long long)n_added,
		       (unsigned long long)n_asked);
		/* With one page awaited, the run ends at the second of the four. */
		if (ask && k == 1 && nodes > 1 && n_asked == 0)
			fail("pending: no page asked for at a run's end", rounds, 0, 1);
		if (!ask && n_asked != 0)
			fail("pending: pages asked for with LOCUS_DSM_AVR_ASK=0", rounds,
			     (long)n_asked, 0);
		if (k > 1 && nodes > 1 && n_added == 0)
			fail("pending: no run went on through a fault on another page", rounds, 0,
			     1);
		if (k == 1 && n_added != 0)
			fail("pending: pages added with LOCUS_DSM_AVR_PENDING=1", rounds,
			     (long)n_added, 0);
	}
	report_rollbacks("pending", rounds, slots, r0);
	locus_dsm_avr_resume();
}

/* One round of turns: every node increments the word on each page in its
   turn, and each checks them all, paused. A count may be one more than
   exact where node 0's next turn may already have run (slack). */
static void turns_round(volatile uint64_t **pg, long r, int slack)
{
	for (int n = 0; n < nodes; n++) {
		if (n == me)
			for (int j = 0; j < NPAGES; j++)
				pg[j][0] = pg[j][0] + 1;
		locus_dsm_barrier();
	}
	uint64_t want = (uint64_t)(r + 1) * (uint64_t)nodes;
	locus_dsm_avr_pause();
	for (int j = 0; j < NPAGES; j++) {
		uint64_t got = pg[j][0];
		if (got != want && !(slack && me != 0 && got == want + 1))
			fail("turns: a page's counter", r, (long)got, (long)want);
	}
	locus_dsm_avr_resume();
}

/* A load through p, NULL included: the fault is the test (UBSan's check of
   NULL would see the speculative value first). */
__attribute__((noinline, no_sanitize("null"))) static uint64_t follow(uint64_t *p)
{
	return *(volatile uint64_t *)p;
}

static void pointer(long rounds)
{
	uint64_t *volatile *slot = locus_dsm_alloc(PAGE);
	volatile uint64_t *target = locus_dsm_alloc(PAGE), *slots = locus_dsm_alloc(PAGE);
	locus_dsm_barrier();
	uint64_t r0 = rollbacks();
	for (long r = 0; r < rounds; r++) {
		int writer = (int)(r % nodes);
		if (me == writer)
			slot[0] = NULL;
		locus_dsm_barrier();
		uint64_t *p = slot[0]; /* every node holds the page, NULL in it */
		locus_dsm_barrier();
		if (p != NULL)
			fail("pointer: NULL published", r, 1, 0);
		if (me == writer) {
			target[r % 64] = (uint64_t)r + 1;
			slot[0] = (uint64_t *)&target[r % 64];
		}
		locus_dsm_barrier();
		uint64_t v = follow(slot[0]); /* a run on the old copy follows NULL */
		locus_dsm_barrier();	      /* v stands (checked after a call: never twice) */
		if (v != (uint64_t)r + 1)
			fail("pointer: the value followed", r, (long)v, r + 1);
	}
	locus_dsm_avr_pause();
	report_rollbacks("pointer", rounds, slots, r0);
	locus_dsm_avr_resume();
}

static void turns(long rounds)
{
	volatile uint64_t *pg[NPAGES];
	for (int j = 0; j < NPAGES; j++)
		pg[j] = locus_dsm_alloc(PAGE);
	volatile uint64_t *slots = locus_dsm_alloc(PAGE);
	locus_dsm_barrier();
	uint64_t r0 = rollbacks();
	for (long r = 0; r < rounds; r++) {
		turns_round(pg, r, 0);
		/* Node 0's next turn must not overtake another node's check. */
		locus_dsm_barrier();
	}
	for (long r = rounds; r < 2 * rounds; r++)
		turns_round(pg, r, 1);
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	for (int j = 0; j < NPAGES; j++)
		if (pg[j][0] != (uint64_t)(2 * rounds * nodes))
			fail("turns: a page's final counter", 2 * rounds, (long)pg[j][0],
			     2 * rounds * nodes);
	report_rollbacks("turns", 2 * rounds, slots, r0);
	locus_dsm_avr_resume();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr,
			"usage: %s true|false|regs|deep|signal|pending|turns|pointer [rounds]\n",
			argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	long rounds = argc > 2 ? atol(argv[2]) : 100;
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	verdicts = locus_dsm_alloc(PAGE);
	if (strcmp(locus_dsm_protocol(), "avr") != 0) {
		if (me == 0)
			fprintf(stderr, "dsm_avr: run with LOCUS_DSM_PROTOCOL=avr\n");
		bad = 1;
	} else if (!strcmp(mode, "true")) {
		true_sharing(rounds);
	} else if (!strcmp(mode, "false")) {
		false_sharing(rounds);
	} else if (!strcmp(mode, "regs")) {
		regs(rounds);
	} else if (!strcmp(mode, "deep")) {
		deep(rounds);
	} else if (!strcmp(mode, "signal")) {
		signal_handler(rounds);
	} else if (!strcmp(mode, "pending")) {
		pending(rounds);
	} else if (!strcmp(mode, "turns")) {
		turns(rounds);
	} else if (!strcmp(mode, "pointer")) {
		pointer(rounds);
	} else {
		if (me == 0)
			fprintf(stderr, "dsm_avr: unknown mode %s\n", mode);
		bad = 1;
	}
	locus_dsm_avr_pause();
	verdicts[me * 8] = (uint64_t)(bad != 0);
	locus_dsm_barrier();
	int any = 0;
	for (int n = 0; n < nodes; n++)
		any |= verdicts[n * 8] != 0;
	locus_dsm_finalize();
	return any;
}
