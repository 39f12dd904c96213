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

#include "child.h"
#include "locus/export.h" /* LOCUS_CACHELINE */

/*
 * One shared counter alone on its cache line, so that two counters never
 * share a line and contention is only the contention the workload asks for.
 * aux is written by the sqrt critical section only, on the same line.
 */
struct fetchadd_slot {
	_Alignas(LOCUS_CACHELINE) uint64_t v;
	double aux;
};

/* --fn: which critical section the threads run. */
enum fetchadd_fn { FETCHADD_ADD, FETCHADD_SQRT };

/* The critical section (--fn add): slot->v += a, returning the new value. */
uint64_t fetchadd_inc(void *state, uint64_t a, uint64_t b, uint64_t c);
/*
 * --fn sqrt, seed 002 Figure 9's slower delegated function: slot->v += a and
 * slot->aux = sqrt(slot->v), returning the new value.
 */
uint64_t fetchadd_sqrt(void *state, uint64_t a, uint64_t b, uint64_t c);
/*
 * --section-ns: slot->v += a, then busy until b ns have passed since the
 * section began (CLOCK_MONOTONIC): a section of a set length. Under stm it
 * runs irrevocably (reading the clock is not transaction-safe).
 */
uint64_t fetchadd_slow(void *state, uint64_t a, uint64_t b, uint64_t c);
/* peer:atomic's share of the sqrt work, done after its lock-free increment returned v. */
void fetchadd_sqrt_after(struct fetchadd_slot *slot, uint64_t v);

/* The mechanisms that are not locus executors, NULL-terminated. */
extern const char *const fetchadd_peers[];
/* One line describing peer i. */
extern const char *const fetchadd_peer_help[];

struct fetchadd_params {
	const char *mechanism; /* executor spec (with servers= added) or peer name */
	unsigned threads;      /* client threads; delegation servers are extra */
	size_t vars;
	double duration; /* seconds the threads run */
	uint64_t delay;	 /* pause iterations between operations */
	enum fetchadd_fn fn;
	uint64_t section_ns;	/* --section-ns: each section lasts this long (0: as fn is) */
	int latency;		/* sample the latency of every latency_every-th operation */
	unsigned latency_every; /* --latency-every (default FETCHADD_SAMPLE_EVERY) */
	int sync;		/* --sync: run, not post, on asynchronous executors too */
};

#define FETCHADD_SAMPLE_EVERY 64 /* --latency: one operation in this many is timed, by default */
/* --latency: samples kept per thread: at most this many, and at most TOTAL / threads */
#define FETCHADD_SAMPLES_PER_THREAD (1u << 20)
#define FETCHADD_SAMPLES_TOTAL	    (1u << 22)
#define FETCHADD_MAX_SERVERS	    64 /* servers whose request counts a result carries */

/* What one measurement sends back from its child process. */
struct fetchadd_result {
	struct child_outcome out; /* ok, or why not */
	uint64_t ops;		  /* increments the threads counted */
	uint64_t sum;	/* sum of the counters afterwards: equal to ops, or updates were lost */
	double seconds; /* from the start barrier until the last thread stopped (and drained) */
	int posted;	/* an operation was a post (an asynchronous executor without --sync) */
	int delegated;	/* the sections ran away from the caller: servers, or an asynchronous
			   executor (flat) */
	uint64_t post_failures; /* locus_cs_post calls that returned nonzero (not counted in ops) */
	unsigned servers;	/* delegation server threads during the run (0: none) */
	uint64_t server_requests[FETCHADD_MAX_SERVERS]; /* requests each server served */
	uint64_t server_sleeps[FETCHADD_MAX_SERVERS];	/* times each server parked */
	/* Jain's fairness index of the threads' operation counts: (sum x)^2 / (n sum x^2), from
	   1/n (one thread did everything) to 1 (all did the same); 0 when nothing ran */
	double jain;
	/* --latency, in ns, over every sampled operation of every thread */
	uint64_t lat_samples;
	double lat_median, lat_p99, lat_mean, lat_max;
	/* the same mean and median in TSC cycles (lat x tsc_ghz); 0 without a TSC */
	double lat_mean_cycles, lat_median_cycles;
	double tsc_ghz; /* TSC ticks per ns over the run; 0: no TSC */
	/* asynchronous delegation clients (locus_cs_client_stats), all threads: response
	   lines in flight that they looked at, and of those the ones found answered */
	uint64_t polled, ready;
	char spec[256]; /* locus_cs_spec() of the executor, or the peer name */
};

/* Run one measurement in the calling process (meant to be a fresh child). */
void fetchadd_measure(const struct fetchadd_params *p, struct fetchadd_result *r);

int fetchadd_main(int argc, char **argv);
void fetchadd_usage(FILE *out);

#endif
