/*
 * A lock kept at its last holder (LOCUS_DSM_LOCK_CACHE, the default) while
 * other nodes ask for it.
 *
 *   order: node 0 takes lock 7 N times in a row, writing k under it each
 *          time (so it keeps the lock between its takes); every other node
 *          takes lock 7 over and over and reads the value: what it reads
 *          never goes down, and it ends by reading N (under lrc, the value
 *          comes with the lock's notices, not with a barrier).
 *   try:   node 0 takes and releases lock 8 once, so it keeps it; every
 *          other node then tries lock 8 until a try succeeds (the refused
 *          try recalls it from node 0) and writes its node number into its
 *          slot under it; after a barrier every slot holds its node.
 *   again: every node takes lock 9 N times, adding 1 under it each time;
 *          the total is exact, and with the lock kept between a node's
 *          takes, fewer lock messages go out than two per take.
 *   reuse: node 0 alone takes two locks that another node manages, in the
 *          order A A B, N times: both stay kept at node 0 from their first
 *          take, so exactly 2 of its takes are remote (a take of A again
 *          must not push B out of the node's kept locks).
 *
 * Usage: dsm_lockkeep order|try|again|reuse [N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/dsm.h"

int main(int argc, char **argv)
{
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	const char *mode = argc > 1 ? argv[1] : "order";
	long n = argc > 2 ? atol(argv[2]) : 200;
	int me = locus_dsm_node(), nodes = locus_dsm_nodes();
	volatile uint64_t *shared = locus_dsm_alloc(4096);
	int bad = 0;
	if (!strcmp(mode, "order")) {
		if (me == 0) {
			for (long k = 1; k <= n; k++) {
				locus_dsm_lock(7);
				shared[0] = (uint64_t)k;
				locus_dsm_unlock(7);
			}
		} else {
			uint64_t seen = 0;
			while (seen < (uint64_t)n) {
				locus_dsm_lock(7);
				uint64_t v = shared[0];
				locus_dsm_unlock(7);
				if (v < seen) {
					printf("lockkeep order: node %d read %llu after %llu\n", me,
					       (unsigned long long)v, (unsigned long long)seen);
					bad = 1;
					break;
				}
				seen = v;
			}
		}
	} else if (!strcmp(mode, "try")) {
		if (me == 0) {
			locus_dsm_lock(8);
			locus_dsm_unlock(8);
		}
		locus_dsm_barrier(); /* node 0 keeps lock 8 now */
		if (me != 0) {
			long tries = 0;
			while (!locus_dsm_trylock(8))
				tries++;
			shared[me] = (uint64_t)me;
			locus_dsm_unlock(8);
			printf("lockkeep try: node %d took lock 8 after %ld refused tries\n", me,
			       tries);
		}
		locus_dsm_barrier();
		if (me == 0)
			for (int i = 1; i < nodes; i++)
				if (shared[i] != (uint64_t)i) {
					printf("lockkeep try: slot %d holds %llu\n", i,
					       (unsigned long long)shared[i]);
					bad = 1;
				}
	} else if (!strcmp(mode, "again")) {
		for (long k = 0; k < n; k++) {
			locus_dsm_lock(9);
			shared[0] += 1;
			locus_dsm_unlock(9);
		}
		locus_dsm_barrier();
		if (me == 0 && shared[0] != (uint64_t)(n * nodes)) {
			printf("lockkeep again: total %llu, expected %ld\n",
			       (unsigned long long)shared[0], n * nodes);
			bad = 1;
		}
	} else if (!strcmp(mode, "reuse")) {
		if (me == 0 && nodes > 1) {
			const uint32_t a = 1001 * (uint32_t)nodes + 1, b = a + (uint32_t)nodes;
			locus_dsm_stats s0, s1;
			locus_dsm_stats_get(&s0);
			for (long k = 0; k < n; k++) {
				uint32_t id = k % 3 == 2 ? b : a;
				locus_dsm_lock(id);
				shared[1] += 1;
				locus_dsm_unlock(id);
			}
			locus_dsm_stats_get(&s1);
			uint64_t remote = s1.remote_locks - s0.remote_locks;
			printf("lockkeep reuse: %ld takes of two locks managed by node 1, %llu remote\n",
			       n, (unsigned long long)remote);
			if (n >= 3 && remote != 2) {
				printf("lockkeep reuse: %llu remote takes, expected 2\n",
				       (unsigned long long)remote);
				bad = 1;
			}
		}
	} else {
		fprintf(stderr, "usage: dsm_lockkeep order|try|again|reuse [N]\n");
		bad = 1;
	}
	/* Every node's verdict reaches node 0 through the shared page. */
	volatile uint64_t *verdict = shared + 64;
	locus_dsm_barrier();
	if (bad)
		verdict[me] = 1;
	locus_dsm_barrier();
	int any = 0;
	for (int i = 0; i < nodes; i++)
		any |= verdict[i] != 0;
	if (me == 0)
		printf("lockkeep %s: %d nodes: %s\n", mode, nodes, any ? "WRONG" : "ok");
	locus_dsm_finalize();
	return any;
}
