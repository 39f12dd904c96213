/* What every DSM test program does with its checks: count and print a failed
   one (dsm_test_fail), and at the end gather every node's count
   (dsm_test_verdict). */
#ifndef LOCUS_TESTS_DSM_VERDICT_H
#define LOCUS_TESTS_DSM_VERDICT_H

#include <stdint.h>
#include <stdio.h>

#include "locus/dsm.h"

/* A failed check of program prog: counted in *bad; the first ten are
   printed, with the node. */
static inline void dsm_test_fail(const char *prog, long *bad, const char *what, long round,
				 long got, long want)
{
	if ((*bad)++ < 10)
		fprintf(stderr, "%s: node %d: %s, round %ld: read %ld, expected %ld\n", prog,
			locus_dsm_node(), what, round, got, want);
}

/* The end of a DSM test program: every node's count of failed checks reaches
   every node through a shared word of its own; node 0 prints "WHAT: ok" or
   "WHAT: WRONG". Finalizes the run; returns the exit status (0: every node's
   checks held). */
static inline int dsm_test_verdict(long bad, const char *what)
{
	int me = locus_dsm_node(), nodes = locus_dsm_nodes();
	volatile int64_t *verdict = locus_dsm_alloc((size_t)nodes * sizeof(int64_t));
	verdict[me] = bad;
	locus_dsm_barrier();
	long any = 0;
	for (int n = 0; n < nodes; n++)
		any += verdict[n] != 0;
	locus_dsm_finalize();
	if (me == 0)
		printf("%s: %s\n", what, any ? "WRONG" : "ok");
	return any ? 1 : 0;
}

#endif
