/* The DSM test programs' numeric arguments: a number from lo to hi, or a
   message naming the program and exit status 2. */
#ifndef LOCUS_TESTS_DSM_ARGS_H
#define LOCUS_TESTS_DSM_ARGS_H

#include <stdio.h>
#include <stdlib.h>

static inline long dsm_test_arg(const char *prog, const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: '%s' is not a number from %ld to %ld\n", prog, s, lo, hi);
		exit(2);
	}
	return v;
}

#endif
