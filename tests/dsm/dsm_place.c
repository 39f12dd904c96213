/*
 * Blocks placed at a home (locus_dsm_alloc_at) just after a walk, under
 * whatever LOCUS_DSM_PROTOCOL says:
 *
 *   dsm_place R   R rounds: every node reads a block of 64 pages in order
 *                 (a walk: each miss fetches more pages ahead, up to the
 *                 block's end and not past it), then a block of 16 pages is
 *                 placed at node r % nodes; node (r + 1) % nodes writes it,
 *                 and after a barrier every node reads it and checks every
 *                 word it wrote. A walk that ran past the first block into
 *                 pages not yet allocated made their state with the home
 *                 they had before the placement: readers got zeros, or a
 *                 node asked its manager for a page it owned and the run
 *                 stopped.
 *
 * Before the rounds, how blocks are dealt: each block's every page's home
 * (locus_dsm_home) must be as its call asked, on every node alike:
 *   - LOCUS_DSM_HOME_BLOCKS: one run of pages per node, node 0's first, the
 *     k-th node's from page count * k / nodes; a block of fewer pages than
 *     nodes is dealt round robin;
 *   - LOCUS_DSM_HOME_SPREAD: round robin, each page's home the next node
 *     after the previous page's;
 *   - locus_dsm_alloc: as LOCUS_DSM_HOMES says (blocks when unset);
 *   - a home that is neither a node nor one of those: NULL on every node;
 * and every node writes a word of each of its own run's pages, read back by
 * every node after a barrier.
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
#define WALK  64 /* pages walked */
#define PLACE 16 /* pages placed */

static int me, nodes;
static long bad;

static void fail(const char *what, long round, long got, long want)
{
	dsm_test_fail("dsm_place", &bad, what, round, got, want);
}

static int home_of(volatile const char *b, size_t page)
{
	return locus_dsm_home((const void *)(b + page * PAGE));
}

/* The homes of a block of `pages` pages dealt as `how` (an allocation with
   the id `id`, for the messages); its pages written by their run's node. */
static void check_deal(int how, size_t pages, long id)
{
	volatile char *b = how == 1 ? locus_dsm_alloc(pages * PAGE)
				    : locus_dsm_alloc_at(pages * PAGE, how);
	if (!b) {
		fail("a dealt block allocated", id, 0, 1);
		return;
	}
	int blocks = how == LOCUS_DSM_HOME_BLOCKS;
	if (how == 1) {
		const char *env = getenv("LOCUS_DSM_HOMES");
		blocks = !env || !*env || strcmp(env, "spread") != 0;
	}
	size_t n = (size_t)nodes;
	for (size_t i = 0; i < pages; i++) {
		int got = home_of(b, i), want;
		if (blocks && pages >= n) /* node k's run starts at page pages * k / nodes */
			for (want = nodes - 1; want > 0 && i < pages * (size_t)want / n; want--)
				;
		else /* round robin: the first page's home is the region's affair */
			want = i ? (home_of(b, i - 1) + 1) % nodes : got;
		if (got != want || got < 0 || got >= nodes)
			fail("a dealt page's home", id * 1000 + (long)i, got, want);
	}
	for (size_t i = 0; i < pages; i++)
		if (home_of(b, i) == me)
			*(volatile int32_t *)(b + i * PAGE + 4 * (size_t)me) = (int32_t)(id * 1000 + (long)i);
	locus_dsm_barrier();
	for (size_t i = 0; i < pages; i++) {
		int h = home_of(b, i);
		int32_t got = *(volatile int32_t *)(b + i * PAGE + 4 * (size_t)h);
		if (got != (int32_t)(id * 1000 + (long)i))
			fail("a word its home's node wrote", id * 1000 + (long)i, got,
			     id * 1000 + (long)i);
	}
	locus_dsm_barrier();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: dsm_place ROUNDS\n");
		return 2;
	}
	long rounds = atol(argv[1]);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	/* 1 stands for locus_dsm_alloc; sizes with runs of unequal length, one
	   page per node, and fewer pages than nodes. */
	const struct {
		int how;
		size_t pages;
	} deals[] = {{1, 37},
		     {LOCUS_DSM_HOME_BLOCKS, 37},
		     {LOCUS_DSM_HOME_SPREAD, 37},
		     {LOCUS_DSM_HOME_BLOCKS, (size_t)nodes},
		     {LOCUS_DSM_HOME_BLOCKS, (size_t)nodes - 1},
		     {1, 3 * (size_t)nodes + 1}};
	for (size_t d = 0; d < sizeof(deals) / sizeof(deals[0]); d++)
		if (deals[d].pages)
			check_deal(deals[d].how, deals[d].pages, (long)d);
	if (locus_dsm_alloc_at(PAGE, LOCUS_DSM_HOME_BLOCKS - 1) != NULL)
		fail("a block at a home that is no node refused", 0, 1, 0);
	for (long r = 0; r < rounds && !bad; r++) {
		volatile int32_t *walked = locus_dsm_alloc(WALK * PAGE);
		long sum = 0;
		for (size_t i = 0; i < WALK * PAGE / 4; i += 256)
			sum += walked[i];
		if (sum)
			fail("a fresh block's words", r, sum, 0);
		int home = (int)(r % nodes), writer = (int)((r + 1) % nodes);
		volatile int32_t *placed = locus_dsm_alloc_at(PLACE * PAGE, home);
		if (!placed || locus_dsm_home((const void *)placed) != home) {
			fail("the placed block's home", r,
			     placed ? locus_dsm_home((const void *)placed) : -1, home);
			break;
		}
		if (me == writer)
			for (size_t i = 0; i < PLACE * PAGE / 4; i += 128)
				placed[i] = (int32_t)(r * 100000 + (long)i);
		locus_dsm_barrier();
		for (size_t i = 0; i < PLACE * PAGE / 4; i += 128)
			if (placed[i] != (int32_t)(r * 100000 + (long)i))
				fail("a word of the placed block", r, placed[i],
				     r * 100000 + (long)i);
		locus_dsm_barrier();
	}
	char what[96];
	snprintf(what, sizeof(what), "dsm_place (%s, %d nodes, %ld rounds)", locus_dsm_protocol(),
		 nodes, rounds);
	return dsm_test_verdict(bad, what);
}
