/*
 * Every node increments shared counters under DSM locks; the totals must be
 * exact. Counters sit both on a page of their own and packed together on one
 * page, so lock handoff and page migration interleave.
 *
 * Usage: dsm_lockstress [increments per node] [locks]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "locus/dsm.h"

int main(int argc, char **argv)
{
	long per_node = argc > 1 ? atol(argv[1]) : 400;
	int nlocks = argc > 2 ? atoi(argv[2]) : 4;
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	int me = locus_dsm_node(), nodes = locus_dsm_nodes();
	size_t page = 4096;
	volatile uint64_t *own = locus_dsm_alloc((size_t)nlocks * page); /* one page each */
	volatile uint64_t *packed = locus_dsm_alloc(page);		 /* all on one page */
	volatile uint64_t *verdict = locus_dsm_alloc(page);
	unsigned seed = 777u * (unsigned)(me + 1);
	for (long k = 0; k < per_node; k++) {
		int l = (int)(rand_r(&seed) % (unsigned)nlocks);
		locus_dsm_lock((uint32_t)l);
		uint64_t v = own[l * (page / 8)];
		packed[l] += 1;
		own[l * (page / 8)] = v + 1;
		locus_dsm_unlock((uint32_t)l);
	}
	/* A lock that every node takes in turn, with the counter next to the others. */
	for (long k = 0; k < per_node / 4; k++) {
		locus_dsm_lock(1000);
		packed[nlocks] += 1;
		locus_dsm_unlock(1000);
	}
	locus_dsm_barrier();
	int bad = 0;
	if (me == 0) {
		uint64_t total_own = 0, total_packed = 0;
		for (int l = 0; l < nlocks; l++) {
			total_own += own[l * (page / 8)];
			total_packed += packed[l];
			if (own[l * (page / 8)] != packed[l])
				bad = 1;
		}
		uint64_t want = (uint64_t)per_node * (uint64_t)nodes;
		uint64_t want_turns = (uint64_t)(per_node / 4) * (uint64_t)nodes;
		if (total_own != want || total_packed != want || packed[nlocks] != want_turns)
			bad = 1;
		printf("lockstress: %d nodes, %d locks: own-page total %llu, packed total %llu, "
		       "turns %llu; expected %llu and %llu: %s\n",
		       nodes, nlocks, (unsigned long long)total_own,
		       (unsigned long long)total_packed, (unsigned long long)packed[nlocks],
		       (unsigned long long)want, (unsigned long long)want_turns,
		       bad ? "WRONG" : "exact");
		*verdict = (uint64_t)bad;
	}
	locus_dsm_barrier();
	bad = (int)*verdict;
	locus_dsm_finalize();
	return bad;
}
