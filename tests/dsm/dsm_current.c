/*
 * sc: pages that travel without their contents (proto_sc.c). A write
 * request from a node whose read-only copy is current gets the ownership
 * alone (PAGE_CURRENT): under sc the node that reads a page becomes its
 * owner, and its last owner keeps a read-only copy, listed in the copy set;
 * its next write takes the ownership back, and needs no contents. And a
 * page nobody has written since the run began goes without them to anyone
 * (PAGE_PRISTINE): every node's memory holds it as it began.
 *
 *   dsm_current R      first a fresh block of 32 pages homed at node 0: every
 *                      other node reads it (all zeros), then the last node
 *                      writes a word of each page and node 0 reads them, then
 *                      the nodes between node 0 and the last read them again;
 *                      then R rounds over another block of 32 pages homed at node 0:
 *                      node 0 writes every word it checks, then (after a
 *                      barrier) every other node reads them all and checks
 *                      them, then a barrier ends the round. From the second
 *                      round on, each of node 0's writes asks for a page
 *                      another node owns while node 0's copy is current.
 *
 * Checks, besides every word: under plain sc, the readers of the fresh
 * block received its pages without contents, and node 0 received the ones
 * the last node wrote with theirs (a write ends a page's first state);
 * under avr every page came with its contents. Then, under plain sc, node 0 received the pages it
 * asked for (one a page a round from the second on, at least) without their
 * contents (a message's header only); under avr (built on sc, with its own
 * copies) every page came with its contents.
 *
 * Exits 0 when every check held; prints what was wrong otherwise.
 */
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
	dsm_test_fail("dsm_current", &bad, what, round, got, want);
}

static int32_t value(long round, size_t i)
{
	return (int32_t)(round * 1000003 + (long)i);
}

/* Page messages this node received between two snapshots, and their bytes. */
static void pages_between(const locus_dsm_stats *a, const locus_dsm_stats *b, uint64_t *msgs,
			  uint64_t *bytes)
{
	*msgs = b->msgs_recv[LOCUS_DSM_MSG_PAGE] - a->msgs_recv[LOCUS_DSM_MSG_PAGE];
	*bytes = b->bytes_recv[LOCUS_DSM_MSG_PAGE] - a->bytes_recv[LOCUS_DSM_MSG_PAGE];
}

/* Whether the page messages counted came as under this protocol they should:
   whole (1) or a header only (0). */
static void check_contents(const char *what, uint64_t msgs, uint64_t bytes, int whole)
{
	if (msgs < PAGES)
		fail(what, 0, (long)msgs, PAGES);
	else if (!whole && bytes / msgs >= 256)
		fail(what, 0, (long)(bytes / msgs), 40);
	else if (whole && bytes / msgs < PAGE)
		fail(what, 0, (long)(bytes / msgs), PAGE);
}

/* If this node is a reader: every checked word of the fresh block, as the
   last node's writes left it (one word a page; before them, zeros). */
static void check_written(volatile int32_t *w, int reader, int written, const char *what)
{
	const size_t words = PAGES * PAGE / 4;
	locus_dsm_avr_pause();
	if (reader)
		for (size_t i = 0; i < words; i += STEP) {
			int32_t want = written && i % (PAGE / 4) == 0 ? value(0, i) : 0;
			if (w[i] != want)
				fail(what, 0, w[i], want);
		}
	locus_dsm_avr_resume();
	locus_dsm_barrier();
}

static void fresh_block(void)
{
	const size_t words = PAGES * PAGE / 4;
	volatile int32_t *w = locus_dsm_alloc_at(PAGES * PAGE, 0);
	int avr = !strcmp(locus_dsm_protocol(), "avr");
	uint64_t msgs, bytes;
	locus_dsm_stats s0, s1, s2;
	locus_dsm_stats_get(&s0);
	check_written(w, me != 0, 0, "a word of a page nobody wrote");
	locus_dsm_stats_get(&s1);
	if (me == nodes - 1)
		for (size_t i = 0; i < words; i += PAGE / 4)
			w[i] = value(0, i);
	locus_dsm_barrier();
	check_written(w, me == 0, 1, "a word after the last node's writes");
	locus_dsm_stats_get(&s2);
	/* On 3 nodes or more, the middle ones read again: their copies went at
	   the last node's writes, and node 0, which read since, must pass the
	   pages on with what was written (contents that arrived are written). */
	check_written(w, me > 0 && me < nodes - 1, 1, "a word read again after node 0 read it");
	if (nodes < 2)
		return;
	if (me != 0) {
		pages_between(&s0, &s1, &msgs, &bytes);
		printf("dsm_current: node %d received the fresh block's %llu pages in %llu "
		       "bytes\n",
		       me, (unsigned long long)msgs, (unsigned long long)bytes);
		check_contents("pages of the fresh block read (count, or average bytes)", msgs,
			       bytes, avr);
	} else {
		pages_between(&s1, &s2, &msgs, &bytes);
		printf("dsm_current: node 0 received the written block's %llu pages in %llu "
		       "bytes\n",
		       (unsigned long long)msgs, (unsigned long long)bytes);
		check_contents("pages node 0 read after the last node wrote them (count, or "
			       "average bytes)",
			       msgs, bytes, 1);
	}
}

static void rounds_of(long rounds)
{
	const size_t words = PAGES * PAGE / 4;
	volatile int32_t *w = locus_dsm_alloc_at(PAGES * PAGE, 0);
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	for (long r = 1; r <= rounds; r++) {
		if (me == 0)
			for (size_t i = 0; i < words; i += STEP)
				w[i] = value(r, i);
		locus_dsm_barrier();
		/* Under avr a read may run ahead on a stale copy and be rolled
		   back: the checks count only what stands (no-ops elsewhere). */
		locus_dsm_avr_pause();
		if (me != 0)
			for (size_t i = 0; i < words; i += STEP)
				if (w[i] != value(r, i))
					fail("a word node 0 wrote", r, w[i], value(r, i));
		locus_dsm_avr_resume();
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	if (me != 0 || nodes < 2)
		return;
	uint64_t msgs = s1.msgs_recv[LOCUS_DSM_MSG_PAGE] - s0.msgs_recv[LOCUS_DSM_MSG_PAGE];
	uint64_t bytes = s1.bytes_recv[LOCUS_DSM_MSG_PAGE] - s0.bytes_recv[LOCUS_DSM_MSG_PAGE];
	printf("dsm_current: node 0 received %llu pages in %llu bytes over %ld rounds\n",
	       (unsigned long long)msgs, (unsigned long long)bytes, rounds);
	if (msgs < (uint64_t)PAGES * (uint64_t)(rounds - 1))
		fail("pages node 0 asked back for (at least one a page a round after the first)",
		     rounds, (long)msgs, (long)PAGES * (rounds - 1));
	if (!strcmp(locus_dsm_protocol(), "sc") && msgs && bytes / msgs >= 256)
		fail("average bytes of a page message to node 0, whose copies were current", rounds,
		     (long)(bytes / msgs), 40);
	if (!strcmp(locus_dsm_protocol(), "avr") && msgs && bytes / msgs < PAGE)
		fail("average bytes of a page message to node 0 under avr (contents always)",
		     rounds, (long)(bytes / msgs), PAGE);
}

int main(int argc, char **argv)
{
	if (argc < 2 || atol(argv[1]) < 2) {
		fprintf(stderr, "usage: dsm_current ROUNDS (2 or more)\n");
		return 2;
	}
	long rounds = atol(argv[1]);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	fresh_block();
	rounds_of(rounds);
	char what[96];
	snprintf(what, sizeof(what), "dsm_current (%s, %d nodes, %ld rounds)", locus_dsm_protocol(),
		 nodes, rounds);
	return dsm_test_verdict(bad, what);
}
