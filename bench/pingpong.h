/*
 * locus-bench pingpong: the floor under every delegation figure, measured on
 * this machine.
 *
 * Round trip: two threads pinned to two CPUs take turns on one word alone on
 * its cache line; each waits until it sees the other's value, then writes
 * its own. One round trip moves the line there and back: a synchronous
 * delegated call (ffwd) cannot take less, for its request and its answer
 * each have to cross. Ring: one producer and one consumer on the same two
 * CPUs pass messages through a ring of cache-line slots as deep as the async
 * executor's request lines (LOCUS_DELEGATE_LINES_DEFAULT); the producer runs
 * up to a ring ahead, so this is the floor of a pipelined channel (async,
 * flat), not of a single call. Answered ring: the same ring, but each
 * message is a request as large as an async request line's and the consumer
 * writes its answer back into the slot, where the producer reads it before
 * it reuses the slot: the least a pipelined request that is answered must
 * move (the plain ring's slot goes back to the producer too, to show it
 * empty, so answering adds bytes, not lines).
 *
 * Files: pingpong_run.c (one measurement, in its child process, and the
 * floor that fetchadd prints), pingpong.c (the command).
 */
#ifndef LOCUS_BENCH_PINGPONG_H
#define LOCUS_BENCH_PINGPONG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "child.h"
#include "common.h"
#include "repeat.h"

enum pingpong_test { PINGPONG_ROUND_TRIP, PINGPONG_RING, PINGPONG_ANSWERED, PINGPONG_NTESTS };

#define PINGPONG_MAX_DEPTH 64 /* ring slots, at most (LOCUS_DELEGATE_LINES_MAX) */

struct pingpong_params {
	enum pingpong_test test;
	int cpu[2];	 /* round trip: the two threads; rings: producer, consumer */
	unsigned depth;	 /* ring slots (both rings) */
	double duration; /* seconds */
};

struct pingpong_result {
	struct child_outcome out; /* ok, or why not */
	uint64_t ops;		  /* round trips, or messages the consumer took */
	uint64_t sent;		  /* rings: messages the producer wrote (= ops, or one was lost) */
	uint64_t misordered;	  /* rings: out of order or altered, or answered wrongly */
	double seconds;		  /* from the start until the last thread stopped */
};

/* Run one measurement in the calling process (meant to be a fresh child). */
void pingpong_measure(const struct pingpong_params *p, struct pingpong_result *r);

/* "round trip", "ring" or "answered ring"; the JSON "test" values are "round_trip",
   "ring" and "answered_ring". */
const char *pingpong_test_name(enum pingpong_test t);
const char *pingpong_test_key(enum pingpong_test t);

/* Measure in a child process: the cell's state, and why when it is not OK. */
enum bench_cell pingpong_run(const struct pingpong_params *p, struct pingpong_result *r, char *why,
			     size_t n);

/*
 * The CPUs this process may run on, in increasing order: up to cap of them
 * in cpus; returns how many there are (all of them, even past cap).
 */
int pingpong_allowed_cpus(int *cpus, int cap);

/*
 * The floor as another command reports it under its table (fetchadd): each
 * test measured `repeat` times, interleaved, on the first two allowed CPUs.
 */
struct pingpong_floor {
	int measured; /* 0: not measured, `why` says why (one CPU) */
	enum bench_cell state;
	int cpu[2];
	unsigned depth, repeat;
	double duration;
	struct bench_summary mops[PINGPONG_NTESTS]; /* million round trips or messages /s */
	char why[640];
};

/*
 * Measure the floor; its progress on the terminal and, with json, one JSON
 * line per measurement on stdout. 0, or -1 if a measurement failed (why says
 * so); not measured where there is a single CPU (0; why says so).
 */
int pingpong_floor(struct pingpong_floor *f, double duration, unsigned repeat, int json);

/* One measurement's JSON line (run counts from 1). */
void pingpong_json(const struct pingpong_params *p, const struct pingpong_result *r, unsigned run,
		   long cpus);

int pingpong_main(int argc, char **argv);
void pingpong_usage(FILE *out);

#endif
