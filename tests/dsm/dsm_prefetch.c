/*
 * locus_dsm_prefetch is non-binding and useful, on 2 or more nodes:
 *   dsm_prefetch [ROUNDS]
 * - useful: the last node prefetches K pages held by node 0, waits until
 *   their copies have arrived (it watches its own statistics: a condition,
 *   not a sleep), then reads them: no remote miss, K prefetches counted;
 * - non-binding: each round the last node prefetches a page, node 0 then
 *   writes a new value into it, and after a barrier the last node must read
 *   the new value — a prefetched copy is invalidated like any other copy,
 *   whether it arrived before the write or after;
 * - prefetching a page this node already has, or is already fetching, sends
 *   nothing;
 * - the same for locus_dsm_prefetch_write: K pages of node 0 prefetched for
 *   writing are written without a remote miss, node 0 then reads the new
 *   values; and each round the last node prefetches a page for writing,
 *   node 0 writes it, then the last node adds to it and node 0 reads the sum:
 *   no write is lost, wherever the page was when it was written.
 * Prints what it checked; exits nonzero on a violation.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "locus/dsm.h"

#define PAGE 4096
#define K    8

/* Waits (a condition, not a sleep) until this node has received n more pages
   than s0 counted. */
static void await_pages(const locus_dsm_stats *s0, uint64_t n)
{
	locus_dsm_stats s;
	do {
		sched_yield();
		locus_dsm_stats_get(&s);
	} while (s.msgs_recv[LOCUS_DSM_MSG_PAGE] - s0->msgs_recv[LOCUS_DSM_MSG_PAGE] < n);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;
	if (rounds < 1) {
		fprintf(stderr, "usage: dsm_prefetch [ROUNDS >= 1]\n");
		return 2;
	}
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	int me = locus_dsm_node(), nodes = locus_dsm_nodes(), last = nodes - 1, bad = 0;
	/* Dealt round robin: pages with index % nodes == 0 start at node 0
	   (manager and owner). */
	volatile char *region = locus_dsm_alloc_at((size_t)(2 * K + 2) * (size_t)nodes * PAGE,
						   LOCUS_DSM_HOME_SPREAD);
	volatile uint64_t *verdict = locus_dsm_alloc(PAGE);
	if (!region || !verdict || nodes < 2) {
		if (me == 0)
			fprintf(stderr, "dsm_prefetch: needs 2 or more nodes\n");
		locus_dsm_finalize();
		return 2;
	}
#define PG(k) ((volatile uint64_t *)(region + (size_t)(k) * (size_t)nodes * PAGE))
	if (me == 0)
		for (int k = 0; k < 2 * K + 2; k++)
			*PG(k) = 100 + (uint64_t)k;
	locus_dsm_barrier();

	/* Useful: K pages prefetched, then read without a remote miss. */
	if (me == last) {
		locus_dsm_stats s0, s;
		locus_dsm_stats_get(&s0);
		for (int k = 0; k < K; k++)
			locus_dsm_prefetch((const void *)PG(k), 8);
		locus_dsm_prefetch((const void *)PG(0), 8); /* again: already coming */
		await_pages(&s0, K);
		uint64_t sum = 0;
		for (int k = 0; k < K; k++)
			sum += *PG(k);
		locus_dsm_prefetch((const void *)PG(0), 8); /* again: here already */
		locus_dsm_stats_get(&s);
		uint64_t misses = s.remote_misses - s0.remote_misses;
		uint64_t pf = s.prefetches - s0.prefetches;
		uint64_t req =
			s.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ] - s0.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ];
		uint64_t want = 0;
		for (int k = 0; k < K; k++)
			want += 100 + (uint64_t)k;
		int ok = misses == 0 && pf == K && req == K && sum == want;
		printf("prefetch: node %d prefetched %d pages of node 0: %llu prefetches, %llu "
		       "requests, %llu remote misses on reading them, sum %llu (want %llu): %s\n",
		       me, K, (unsigned long long)pf, (unsigned long long)req,
		       (unsigned long long)misses, (unsigned long long)sum,
		       (unsigned long long)want, ok ? "useful" : "WRONG");
		bad |= !ok;
	}
	locus_dsm_barrier();

	/* Non-binding: a write after the prefetch is always seen. */
	volatile uint64_t *p = PG(K);
	long stale = 0;
	for (long r = 1; r <= rounds; r++) {
		if (me == last)
			locus_dsm_prefetch((const void *)p, 8);
		locus_dsm_barrier();
		if (me == 0)
			*p = 1000 + (uint64_t)r;
		locus_dsm_barrier();
		if (me == last && *p != 1000 + (uint64_t)r)
			stale++;
		locus_dsm_barrier();
	}
	if (me == last) {
		printf("prefetch: %ld rounds of prefetch, remote write, read: %ld stale reads: "
		       "%s\n",
		       rounds, stale, stale ? "WRONG" : "non-binding");
		bad |= stale != 0;
	}
	/* Useful for writing: K pages prefetched for writing, written without a miss. */
	if (me == last) {
		locus_dsm_stats s0, s;
		locus_dsm_stats_get(&s0);
		for (int k = K + 1; k < 2 * K + 1; k++)
			locus_dsm_prefetch_write((void *)PG(k), 8);
		await_pages(&s0, K);
		for (int k = K + 1; k < 2 * K + 1; k++)
			*PG(k) += 1000;
		locus_dsm_stats_get(&s);
		uint64_t misses = s.remote_misses - s0.remote_misses;
		uint64_t pf = s.prefetches - s0.prefetches;
		int ok = misses == 0 && pf == K;
		printf("prefetch: node %d prefetched %d pages of node 0 for writing: %llu "
		       "prefetches, "
		       "%llu remote misses on writing them: %s\n",
		       me, K, (unsigned long long)pf, (unsigned long long)misses,
		       ok ? "useful" : "WRONG");
		bad |= !ok;
	}
	locus_dsm_barrier();
	if (me == 0) {
		long wrong = 0;
		for (int k = K + 1; k < 2 * K + 1; k++)
			wrong += *PG(k) != 1100 + (uint64_t)k;
		if (wrong) {
			printf("prefetch: node 0 read %ld of %d pages written after a write "
			       "prefetch "
			       "without the write: WRONG\n",
			       wrong, K);
			bad = 1;
		}
	}
	/* Non-binding for writing: no write is lost. */
	volatile uint64_t *w = PG(2 * K + 1);
	long lost = 0;
	for (long r = 1; r <= rounds; r++) {
		if (me == last)
			locus_dsm_prefetch_write((void *)w, 8);
		locus_dsm_barrier();
		if (me == 0)
			*w = 10 * (uint64_t)r;
		locus_dsm_barrier();
		if (me == last)
			*w += 3;
		locus_dsm_barrier();
		if (me == 0 && *w != 10 * (uint64_t)r + 3)
			lost++;
		locus_dsm_barrier();
	}
	if (me == 0) {
		printf("prefetch: %ld rounds of write prefetch, remote write, local add: %ld lost "
		       "writes: %s\n",
		       rounds, lost, lost ? "WRONG" : "non-binding");
		bad |= lost != 0;
	}
	locus_dsm_lock(0);
	*verdict += (uint64_t)bad;
	locus_dsm_unlock(0);
	locus_dsm_barrier();
	int any = *verdict != 0;
	locus_dsm_finalize();
	return any;
}
