/*
 * A walk's pages asked for together, under whatever LOCUS_DSM_PROTOCOL says:
 *
 *   dsm_walk R   R rounds: node 0 writes a fresh block of 64 pages placed at
 *                it (manager and owner of every page); the last node reads
 *                the block in order and checks every page; node 0 writes it
 *                again (the last node's copies are invalidated) and the last
 *                node reads the new values; then the last node writes the
 *                block in order and node 0 reads what it wrote. Then R
 *                rounds of columns: node 0 writes a word in each of the 32
 *                rows (5 pages each) of two fresh blocks; the last node
 *                reads the first block's column downwards and the second's
 *                upwards, one page a row, and checks each; then it writes
 *                a column of each and node 0 reads it; and the last node
 *                reads two halves of a fresh 64-page block at once (page i
 *                of the first, then page i of the second). Then R rounds of
 *                neighbours: the last node writes the first half of a
 *                64-page block in order while node 0 writes the second,
 *                four passes; then the last node writes the second half,
 *                and two more passes.
 *
 * Under sc and avr (the second point: sc only, as avr resolves such writes
 * its own way):
 * - a miss asks for the walk's next pages with its own in one message to
 *   their manager (proto_sc.c, ask): the last node's first read walk of the
 *   block costs at most a quarter as many requests as pages (the windows
 *   double up to LOCUS_DSM_RUN, 32: seven requests for 64 pages), and
 *   brings every page once;
 * - the last node, which took the ownership of the pages it read (sc: the
 *   reader becomes the owner), node 0 holding copies, writes them in order:
 *   each write fault's walk invalidates the next pages' other copies with
 *   its own (proto_sc.c, run_ahead), at most a quarter as many remote
 *   misses as pages;
 * - a miss that continues a column fetches the next rows' pages with it
 *   (proto.c, dsm_run_ahead): the last node's reads of the columns cost
 *   at most half as many remote misses as rows (under lrc too);
 * - two walks at once, 32 pages apart, are two walks (not a column going
 *   back and forth): at most a fifth as many remote misses as pages (eleven
   for 64; a walk taken over by the other half's misses, a column of one
   step going back and forth, costs sixteen).
 * - a write walk that runs into pages another node writes stops there once
 *   that node took them back unwritten (proto_sc.c, lost; sc only, as above):
 *   once the last node's walk ran into node 0's half of a neighbours' block,
 *   node 0 writes that half without a remote miss in the passes after
 *   (run_ahead_lost counts the pages marked); after the last node wrote
 *   node 0's half itself, its walk runs in again (node 0 misses).
 * Under sc node 0 serves a walk's request with one protection change for
 * its run of pages (region.c, dsm_region_protect_later): while the last
 * node reads, node 0 changes protections at most a quarter as often as it
 * sends pages. Under lrc only the values and the columns are checked.
 *
 * Exits 0 when every check held; prints what was wrong otherwise.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsm_verdict.h"
#include "locus/dsm.h"

#define PAGE 4096
#define WALK 64 /* pages walked */
#define ROWS 32 /* rows of a column */
#define ROW  5	/* pages a row */

static int me, nodes;
static long bad;

static void fail(const char *what, long round, long got, long want)
{
	dsm_test_fail("dsm_walk", &bad, what, round, got, want);
}

static int32_t value(long round, int pass, size_t page)
{
	return (int32_t)(round * 1000000 + pass * 10000 + (long)page + 1);
}

/* Every word the writer set in each page (the first and the last of it),
   paused under avr: a check run on a copy its interval then rolls back
   would count a failure it never saw (a no-op elsewhere). */
static void check(volatile int32_t *b, long round, int pass, const char *what)
{
	locus_dsm_avr_pause();
	for (size_t p = 0; p < WALK; p++) {
		int32_t want = value(round, pass, p);
		if (b[p * PAGE / 4] != want)
			fail(what, round, b[p * PAGE / 4], want);
		if (b[p * PAGE / 4 + PAGE / 4 - 1] != want)
			fail(what, round, b[p * PAGE / 4 + PAGE / 4 - 1], want);
	}
	locus_dsm_avr_resume();
}

static void fill(volatile int32_t *b, long round, int pass)
{
	for (size_t p = 0; p < WALK; p++) {
		b[p * PAGE / 4] = value(round, pass, p);
		b[p * PAGE / 4 + PAGE / 4 - 1] = value(round, pass, p);
	}
}

/* This node's remote misses so far. */
static uint64_t misses_now(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.remote_misses;
}

/* The word of row r in a block of rows (its first page's first word). */
static volatile int32_t *cell(volatile int32_t *b, int r)
{
	return b + (size_t)r * ROW * PAGE / 4;
}

/* A column of two blocks: the first read downwards, the second upwards.
   Returns the last node's remote misses reading them. */
static uint64_t columns(long round)
{
	int last = nodes - 1;
	volatile int32_t *b[2];
	for (int k = 0; k < 2; k++)
		b[k] = locus_dsm_alloc_at(ROWS * ROW * PAGE, 0);
	if (!b[0] || !b[1]) {
		fail("blocks of rows placed at node 0", round, 0, 1);
		return 0;
	}
	if (me == 0)
		for (int k = 0; k < 2; k++)
			for (int r = 0; r < ROWS; r++)
				*cell(b[k], r) = value(round, 3 + k, (size_t)r);
	locus_dsm_barrier();
	uint64_t misses = 0;
	if (me == last) {
		uint64_t m0 = misses_now();
		locus_dsm_avr_pause();
		for (int r = ROWS - 1; r >= 0; r--)
			if (*cell(b[0], r) != value(round, 3, (size_t)r))
				fail("a column read downwards", round, *cell(b[0], r),
				     value(round, 3, (size_t)r));
		for (int r = 0; r < ROWS; r++)
			if (*cell(b[1], r) != value(round, 4, (size_t)r))
				fail("a column read upwards", round, *cell(b[1], r),
				     value(round, 4, (size_t)r));
		locus_dsm_avr_resume();
		misses = misses_now() - m0;
		for (int k = 0; k < 2; k++)
			for (int r = 0; r < ROWS; r++)
				*cell(b[k], k ? r : ROWS - 1 - r) += 1;
	}
	locus_dsm_barrier();
	if (me == 0) {
		locus_dsm_avr_pause();
		for (int k = 0; k < 2; k++)
			for (int r = 0; r < ROWS; r++)
				if (*cell(b[k], r) != value(round, 3 + k, (size_t)r) + 1)
					fail("node 0's read of a column the last node wrote", round,
					     *cell(b[k], r), value(round, 3 + k, (size_t)r) + 1);
		locus_dsm_avr_resume();
	}
	locus_dsm_barrier();
	return misses;
}

/* Two halves of a block read at once; the last node's remote misses. */
static uint64_t two_walks(long round)
{
	int last = nodes - 1;
	volatile int32_t *b = locus_dsm_alloc_at(WALK * PAGE, 0);
	if (!b) {
		fail("a block placed at node 0", round, 0, 1);
		return 0;
	}
	if (me == 0)
		fill(b, round, 5);
	locus_dsm_barrier();
	uint64_t misses = 0;
	if (me == last) {
		uint64_t m0 = misses_now();
		locus_dsm_avr_pause();
		for (size_t i = 0; i < WALK / 2; i++)
			for (size_t h = 0; h < 2; h++) {
				size_t p = h * WALK / 2 + i;
				if (b[p * PAGE / 4] != value(round, 5, p))
					fail("two walks at once", round, b[p * PAGE / 4],
					     value(round, 5, p));
			}
		locus_dsm_avr_resume();
		misses = misses_now() - m0;
	}
	locus_dsm_barrier();
	return misses;
}

/* One pass of neighbours: the last node writes the first half of a block
   in order, node 0 the second (its own), then node 0 checks the first and
   writes it too, so that the last node's next pass misses again; barriers
   between. Returns node 0's remote misses writing its half. */
static uint64_t neighbour_pass(volatile int32_t *b, long round, int pass)
{
	enum { HALF = WALK / 2 };
	int32_t v = (int32_t)(round * 1000 + pass);
	uint64_t m = 0;
	if (me == nodes - 1)
		for (size_t p = 0; p < HALF; p++)
			b[p * PAGE / 4] = v;
	locus_dsm_barrier();
	if (me == 0) {
		uint64_t m0 = misses_now();
		for (size_t p = HALF; p < WALK; p++)
			b[p * PAGE / 4] = v;
		m = misses_now() - m0;
		locus_dsm_avr_pause();
		for (size_t p = 0; p < HALF; p++)
			if (b[p * PAGE / 4] != v)
				fail("node 0's read of the last node's half", round, b[p * PAGE / 4],
				     v);
		locus_dsm_avr_resume();
		for (size_t p = 0; p < HALF; p++)
			b[p * PAGE / 4] = -v;
	}
	locus_dsm_barrier();
	return m;
}

/* Neighbours: PASSES passes; *taken: node 0's remote misses writing its
   half in the passes after the first that had any (the pages the last
   node's walks took from it again once they had run into its half). Then
   the last node writes node 0's half itself (its own write faults clear
   the marks), node 0 takes it back, and two more passes: *again, node 0's
   misses in them (the walks run in again). */
static void neighbours(long round, uint64_t *taken, uint64_t *again)
{
	enum { PASSES = 4, HALF = WALK / 2 };
	int last = nodes - 1;
	volatile int32_t *b = locus_dsm_alloc_at(WALK * PAGE, 0);
	if (!b) {
		fail("a block placed at node 0", round, 0, 1);
		return;
	}
	if (me == 0)
		fill(b, round, 6);
	locus_dsm_barrier();
	int ran_in = 0; /* the last node's walk ran into node 0's half once */
	for (int pass = 0; pass < PASSES; pass++) {
		uint64_t m = neighbour_pass(b, round, pass);
		if (ran_in)
			*taken += m;
		ran_in |= m != 0;
	}
	int32_t mine = (int32_t)(round * 1000 + 999);
	if (me == last)
		for (size_t p = HALF; p < WALK; p++)
			b[p * PAGE / 4] = mine;
	locus_dsm_barrier();
	if (me == 0) {
		locus_dsm_avr_pause();
		for (size_t p = HALF; p < WALK; p++)
			if (b[p * PAGE / 4] != mine)
				fail("node 0's read of its half, written by the last node", round,
				     b[p * PAGE / 4], mine);
		locus_dsm_avr_resume();
		for (size_t p = HALF; p < WALK; p++) /* its alone again */
			b[p * PAGE / 4] = mine + 1;
	}
	locus_dsm_barrier();
	for (int pass = PASSES; pass < PASSES + 2; pass++)
		*again += neighbour_pass(b, round, pass);
	if (me == last) {
		locus_dsm_avr_pause();
		for (size_t p = 0; p < WALK; p++) {
			int32_t want = (int32_t)(round * 1000 + PASSES + 1);
			if (p < HALF)
				want = -want;
			if (b[p * PAGE / 4] != want)
				fail("the last node's read of the neighbours' block", round,
				     b[p * PAGE / 4], want);
		}
		locus_dsm_avr_resume();
	}
	locus_dsm_barrier();
}

int main(int argc, char **argv)
{
	if (argc < 2 || atol(argv[1]) < 1) {
		fprintf(stderr, "usage: dsm_walk ROUNDS\n");
		return 2;
	}
	long rounds = atol(argv[1]);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	int last = nodes - 1;
	const char *proto = locus_dsm_protocol();
	int asks_together = !strcmp(proto, "sc") || !strcmp(proto, "avr");
	int serves_together = !strcmp(proto, "sc");
	uint64_t reqs = 0, got = 0, protects = 0, sent = 0, column_misses = 0, upgrade_misses = 0,
		 two_misses = 0, taken = 0, again = 0, marks = 0;
	for (long r = 0; r < rounds; r++) {
		volatile int32_t *b = locus_dsm_alloc_at(WALK * PAGE, 0);
		if (!b) {
			fail("a block placed at node 0", r, 0, 1);
			break;
		}
		locus_dsm_stats s0, s1;
		if (me == 0)
			fill(b, r, 0);
		locus_dsm_stats_get(&s0);
		locus_dsm_barrier();
		if (me == last) {
			check(b, r, 0, "the last node's first read walk");
			locus_dsm_stats_get(&s1);
			reqs += s1.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ] -
				s0.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ];
			got += s1.msgs_recv[LOCUS_DSM_MSG_PAGE] - s0.msgs_recv[LOCUS_DSM_MSG_PAGE];
		}
		locus_dsm_barrier();
		if (me == 0) {
			locus_dsm_stats_get(&s1);
			protects += s1.protects - s0.protects;
			sent += s1.msgs_sent[LOCUS_DSM_MSG_PAGE] - s0.msgs_sent[LOCUS_DSM_MSG_PAGE];
			fill(b, r, 1);
		}
		locus_dsm_barrier();
		if (me == last) {
			check(b, r, 1, "the last node's read after node 0 wrote again");
			uint64_t m0 = misses_now();
			fill(b, r, 2);
			upgrade_misses += misses_now() - m0;
		}
		locus_dsm_barrier();
		if (me == 0)
			check(b, r, 2, "node 0's read of the last node's writes");
		locus_dsm_barrier();
	}
	/* After the walks: a column walk that ran on to the next block's first
	   page would take a walk's first miss there (proto.c). */
	for (long r = 0; r < rounds; r++) {
		column_misses += columns(r);
		two_misses += two_walks(r);
	}
	locus_dsm_stats n0, n1;
	locus_dsm_stats_get(&n0);
	for (long r = 0; r < rounds; r++)
		neighbours(r, &taken, &again);
	locus_dsm_stats_get(&n1);
	marks = n1.run_ahead_lost - n0.run_ahead_lost;
	if (me == last) {
		printf("dsm_walk: node %d marked %llu pages of node 0's halves (run_ahead_lost)\n",
		       me, (unsigned long long)marks);
		if (serves_together && marks == 0)
			fail("pages of node 0's halves marked (run_ahead_lost, at least one)", -1, 0,
			     1);
		printf("dsm_walk: node %d read %llu pages of node 0 with %llu requests\n", me,
		       (unsigned long long)got, (unsigned long long)reqs);
		if (asks_together && got != (uint64_t)(WALK * rounds))
			fail("pages received in the first read walks", -1, (long)got,
			     WALK * rounds);
		if (asks_together && reqs * 4 > got)
			fail("requests for them (at most a quarter of the pages)", -1, (long)reqs,
			     (long)got / 4);
		printf("dsm_walk: node %d wrote %ld pages it had read with %llu remote misses\n",
		       me, WALK * rounds, (unsigned long long)upgrade_misses);
		if (serves_together && upgrade_misses * 4 > (uint64_t)(WALK * rounds))
			fail("remote misses writing them (at most a quarter of the pages)", -1,
			     (long)upgrade_misses, WALK * rounds / 4);
		printf("dsm_walk: node %d read %ld pages in two walks at once with %llu remote "
		       "misses\n",
		       me, WALK * rounds, (unsigned long long)two_misses);
		if (asks_together && two_misses * 5 > (uint64_t)(WALK * rounds))
			fail("remote misses in two walks at once (at most a fifth of the pages)",
			     -1, (long)two_misses, WALK * rounds / 5);
		printf("dsm_walk: node %d read %ld rows of columns with %llu remote misses\n", me,
		       2 * ROWS * rounds, (unsigned long long)column_misses);
		if (column_misses * 2 > (uint64_t)(2 * ROWS * rounds)) /* every protocol */
			fail("remote misses reading columns (at most half the rows)", -1,
			     (long)column_misses, ROWS * rounds);
	}
	if (me == 0) {
		printf("dsm_walk: node 0 sent %llu pages with %llu protection changes\n",
		       (unsigned long long)sent, (unsigned long long)protects);
		if (serves_together && protects * 4 > sent)
			fail("protection changes serving them (at most a quarter of the pages)", -1,
			     (long)protects, (long)sent / 4);
		printf("dsm_walk: node 0 wrote its half of the neighbours' blocks with %llu remote "
		       "misses\n",
		       (unsigned long long)taken);
		if (serves_together && taken != 0)
			fail("remote misses writing node 0's half once the last node's walks "
			     "stopped before it",
			     -1, (long)taken, 0);
		printf("dsm_walk: node 0 wrote its half with %llu remote misses once the last node "
		       "had written it\n",
		       (unsigned long long)again);
		if (serves_together && again == 0)
			fail("remote misses writing node 0's half once the last node's own writes "
			     "cleared the marks (at least one)",
			     -1, 0, 1);
	}
	return dsm_test_verdict(bad, "dsm_walk");
}
