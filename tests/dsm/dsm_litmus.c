/*
 * Litmus tests under the DSM: run one shape many times and count outcomes;
 * any outcome sequential consistency forbids fails the test.
 *
 *   sb    store buffering   n0: x=1; r0=y      n1: y=1; r1=x      forbidden r0=r1=0
 *   mp    message passing   n0: d=1; f=1       n1: r0=f; r1=d     forbidden r0=1, r1=0
 *   iriw  independent reads of independent writes (4 nodes)
 *         n0: x=1  n1: y=1  n2: r0=x; r1=y  n3: r2=y; r3=x       forbidden 1,0,1,0
 *   false every node increments its own word of one page, spinning between the
 *         read and the write (so the page moves between them); all counts exact
 *
 * Usage: dsm_litmus sb|mp|iriw|false [iterations]
 * Variables of one iteration sit on different pages; consecutive iterations
 * reuse the pages at other offsets, so pages carry history between rounds. A
 * short random pause before each shape varies who gets there first.
 *
 * Under avr, node 0 reads the results with avr paused: a rolled-back read
 * must not have printed anything.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/dsm.h"

#define SLOTS 512 /* 8-byte slots per page */

static volatile uint64_t *var[4]; /* one page each ... x4 pages per variable */
static volatile uint64_t *res;	  /* [iteration][node][4] */
static int me, nodes;
static volatile uint64_t sink;

static void jitter(unsigned *seed)
{
	unsigned n = rand_r(seed) % 4000;
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static volatile uint64_t *slot(int v, long it)
{
	return &var[v][it % (4 * SLOTS)];
}

static volatile uint64_t *out(long it, int node)
{
	return &res[(it * 4 + node) * 4];
}

static int check(const char *name, long iters)
{
	locus_dsm_avr_pause();
	if (me != 0)
		return 0;
	long seen[16] = {0}, bad = 0;
	for (long it = 0; it < iters; it++) {
		unsigned code = 0;
		if (!strcmp(name, "sb")) {
			code = (unsigned)(out(it, 0)[0] << 1 | out(it, 1)[0]);
			bad += code == 0;
		} else if (!strcmp(name, "mp")) {
			code = (unsigned)(out(it, 1)[0] << 1 | out(it, 1)[1]);
			bad += code == 2;
		} else {
			code = (unsigned)(out(it, 2)[0] << 3 | out(it, 2)[1] << 2 |
					  out(it, 3)[0] << 1 | out(it, 3)[1]);
			bad += code == 10; /* 1,0,1,0 */
		}
		seen[code & 15]++;
	}
	printf("litmus %s: %ld iterations on %d nodes; outcomes:", name, iters, nodes);
	for (int c = 0; c < 16; c++)
		if (seen[c])
			printf(" %x=%ld", c, seen[c]);
	printf("; forbidden: %ld\n", bad);
	return bad ? 1 : 0;
}

static int run_shape(const char *name, long iters)
{
	unsigned seed = 12345u + (unsigned)me * 7919u;
	for (long it = 0; it < iters; it++) {
		jitter(&seed);
		volatile uint64_t *o = out(it, me);
		if (!strcmp(name, "sb")) {
			if (me == 0) {
				*slot(0, it) = 1;
				o[0] = *slot(1, it);
			} else if (me == 1) {
				*slot(1, it) = 1;
				o[0] = *slot(0, it);
			}
		} else if (!strcmp(name, "mp")) {
			if (me == 0) {
				*slot(0, it) = 1; /* data */
				*slot(1, it) = 1; /* flag */
			} else if (me == 1) {
				o[0] = *slot(1, it);
				o[1] = *slot(0, it);
			}
		} else { /* iriw */
			if (me == 0) {
				*slot(0, it) = 1;
			} else if (me == 1) {
				*slot(1, it) = 1;
			} else if (me == 2) {
				o[0] = *slot(0, it);
				o[1] = *slot(1, it);
			} else if (me == 3) {
				o[0] = *slot(1, it);
				o[1] = *slot(0, it);
			}
		}
		locus_dsm_barrier();
		/* Reset the next iteration's slots (different offsets, same pages).
		   For sb, node v resets variable v and both nodes then read both:
		   each writes a page it owns while the other holds a copy, and
		   holds a copy of the page the other writes — the case in which
		   two optimistic writers could each read the other's old value. */
		int sb = !strcmp(name, "sb");
		for (int v = 0; v < 2 && it + 1 < iters; v++)
			if (me == (sb ? v : 0))
				*slot(v, it + 1) = 0;
		locus_dsm_barrier();
		if (sb && me < 2 && it + 1 < iters) {
			sink += *slot(0, it + 1) + *slot(1, it + 1);
			locus_dsm_barrier();
		} else if (sb && it + 1 < iters) {
			locus_dsm_barrier();
		}
	}
	return check(name, iters);
}

static int run_false(long iters)
{
	volatile uint64_t *words = var[0];
	unsigned seed = 777u + (unsigned)me;
	for (long k = 0; k < iters; k++) {
		uint64_t v = words[me * 8];
		jitter(&seed);
		words[me * 8] = v + 1;
	}
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	int bad = 0;
	if (me == 0) {
		for (int n = 0; n < nodes; n++)
			if (words[n * 8] != (uint64_t)iters) {
				printf("false sharing: node %d's word is %llu, expected %ld\n", n,
				       (unsigned long long)words[n * 8], iters);
				bad = 1;
			}
		printf("litmus false: %d nodes x %ld increments of words on one page: %s\n", nodes,
		       iters, bad ? "LOST WRITES" : "all kept");
	}
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s sb|mp|iriw|false [iterations]\n", argv[0]);
		return 2;
	}
	const char *name = argv[1];
	long iters = argc > 2 ? atol(argv[2]) : 500;
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	int need = !strcmp(name, "iriw") ? 4 : 2;
	if (nodes < need) {
		if (me == 0)
			fprintf(stderr, "%s needs %d nodes\n", name, need);
		locus_dsm_finalize();
		return 2;
	}
	for (int v = 0; v < 4; v++)
		var[v] = locus_dsm_alloc(4 * SLOTS * sizeof(uint64_t));
	res = locus_dsm_alloc((size_t)iters * 16 * sizeof(uint64_t));
	int bad;
	if (!strcmp(name, "false"))
		bad = run_false(iters);
	else if (!strcmp(name, "sb") || !strcmp(name, "mp") || !strcmp(name, "iriw"))
		bad = run_shape(name, iters);
	else {
		if (me == 0)
			fprintf(stderr, "unknown litmus test %s\n", name);
		bad = 2;
	}
	/* Every node leaves with node 0's verdict. */
	volatile uint64_t *verdict = var[3];
	if (me == 0)
		*verdict = (uint64_t)bad;
	locus_dsm_barrier();
	bad = (int)*verdict;
	locus_dsm_finalize();
	return bad;
}
