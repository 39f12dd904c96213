/*
 * locus-bench locality: seed 000's microbenchmark. Each client thread loops
 * over two components: a thread-local walk of its private array of n1 lines,
 * then a critical section that walks a shared array of n2 lines and modifies
 * m of them, after copying an s-byte message into the section's buffer. The
 * section runs through a locus executor: under a lock or combiner it runs on
 * the client (the seed's synchronous mode); under delegation it runs on a
 * server thread and the client waits for the answer (its asynchronous mode).
 *
 * Files: locality.c (command line, sweep, report), locality_run.c (one
 * measurement, in its child process), locality_fn.c (the critical section,
 * built transaction-callable for stm), walk.c (the arrays).
 */
#ifndef LOCUS_BENCH_LOCALITY_H
#define LOCUS_BENCH_LOCALITY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "child.h"
#include "walk.h"

#define LOCALITY_MAX_MSG (1u << 16)

/* What the critical section works on: the executor's state. */
struct locality_cs_state {
	struct walk_line *lines; /* the shared array */
	size_t n2;
	char *msgbuf; /* the section's copy of the message (LOCALITY_MAX_MSG bytes) */
};

/* The critical section: copy b bytes from the message at a, then walk the shared array. */
uint64_t locality_cs(void *state, uint64_t a, uint64_t b, uint64_t c);

struct locality_params {
	const char *mechanism; /* executor spec, servers= added for delegation */
	unsigned threads;      /* client threads; delegation servers are extra */
	size_t n1, n2, modify, msg;
	double duration;
};

enum locality_busy_basis {
	LOCALITY_BUSY_NONE,
	LOCALITY_BUSY_TIME,	/* delegation servers: time in passes that found requests */
	LOCALITY_BUSY_DEQUEUES, /* mpsc: dequeues that did not find the queue empty */
};

struct locality_result {
	struct child_outcome out; /* ok, or why not */
	uint64_t iterations;	  /* core-loop iterations, all clients */
	double seconds;		  /* from the start until the last client stopped */
	double cpu_s;		  /* process CPU time in that interval, every thread */
	double tsc_ghz;		  /* TSC ticks per ns over the interval; 0: no TSC */
	unsigned servers;	  /* threads that ran the critical section for the clients */
	double server_busy; /* share of the server's time (or dequeues) with work; < 0: none */
	enum locality_busy_basis busy_basis;
	enum walk_pages pages;
	uint64_t bad_lines; /* shared lines whose count is not what the runs imply */
	uint64_t sink;	    /* every walk's result, so no walk can be optimized away */
	char spec[256];
};

/* Run one measurement in the calling process (meant to be a fresh child). */
void locality_measure(const struct locality_params *p, struct locality_result *r);

int locality_main(int argc, char **argv);
void locality_usage(FILE *out);

#endif
