/*
 * locus-bench fetchadd: threads increment randomly chosen shared counters,
 * each through one mechanism, and we count increments per second.
 *
 * Files: fetchadd.c (command line, sweep, report), fetchadd_run.c (one
 * measurement, in its child process), fetchadd_fn.c (the critical section,
 * built transaction-callable for stm).
 */
#ifndef LOCUS_BENCH_FETCHADD_H
#define LOCUS_BENCH_FETCHADD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One shared counter alone on its cache line, so that two counters never
 * share a line and contention is only the contention the workload asks for.
 */
struct fetchadd_slot {
	_Alignas(64) uint64_t v;
};

/* The critical section: slot->v += a, returning the new value. */
uint64_t fetchadd_inc(void *state, uint64_t a, uint64_t b, uint64_t c);

/* The mechanisms that are not locus executors, NULL-terminated. */
extern const char *const fetchadd_peers[];
/* One line describing peer i. */
extern const char *const fetchadd_peer_help[];
/* 1 if name is meant as a peer (starts with "peer:"), known or not. */
int fetchadd_is_peer(const char *name);
/* 1 if name is one of fetchadd_peers. */
int fetchadd_peer_known(const char *name);

struct fetchadd_params {
	const char *mechanism; /* executor spec or peer name */
	unsigned threads;
	size_t vars;
	double duration; /* seconds the threads run */
	uint64_t delay;	 /* pause iterations between operations */
};

/* What one measurement sends back from its child process. */
struct fetchadd_result {
	int ok;		/* 0: err says what went wrong */
	uint64_t ops;	/* increments the threads counted */
	uint64_t sum;	/* sum of the counters afterwards: equal to ops, or updates were lost */
	double seconds; /* from the start barrier until the last thread stopped */
	char spec[256]; /* locus_cs_spec() of the executor, or the peer name */
	char err[512];
};

/* Run one measurement in the calling process (meant to be a fresh child). */
void fetchadd_measure(const struct fetchadd_params *p, struct fetchadd_result *r);

/* Open spec once to check it; 0, or -1 with locus_cs_error()'s text in err. */
int fetchadd_check_spec(const char *spec, char *canonical, size_t cap, char *err, size_t errlen);

int fetchadd_main(int argc, char **argv);
void fetchadd_usage(FILE *out);

#endif
