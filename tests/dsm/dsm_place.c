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
