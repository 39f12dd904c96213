/*
 * locus: the critical-section executor — one interface to every mechanism.
 *
 *   locus_cs *cs = locus_cs_open("mcs", &state);
 *   uint64_t r   = locus_cs_run(cs, my_fn, a, b, c);
 *
 * A spec is a mechanism name, optionally followed by a colon and
 * comma-separated options: "ttas:backoff_max=512,spin", "ccsynch:pass=16",
 * "stm:gl_wt". locus_cs_mechanisms() lists the names; locus_cs_usage() the
 * options of each.
 *
 * Options every mechanism except `mutex` and `stm` takes:
 *   spinpark (default) | spin | park   how waiters wait
 *   spins=N                            spin budget before parking
 *
 * run() executes fn under the mechanism and returns its result. post() does
 * the same asynchronously where the mechanism is asynchronous; on the
 * synchronous mechanisms it runs fn at once and calls cb before returning.
 * Callbacks always run on the posting thread. drain() returns when every post
 * made by the calling thread has completed and its callback has run.
 */
#ifndef LOCUS_CS_H
#define LOCUS_CS_H

#include <stdint.h>
#include <stdio.h>

#include "locus/fn.h"

typedef struct locus_cs locus_cs;

/* NULL on a bad spec; locus_cs_error() then says why and what is known. */
locus_cs *locus_cs_open(const char *spec, void *state);
const char *locus_cs_error(void);

uint64_t locus_cs_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);
/* 0 on success; cb may be NULL. */
int locus_cs_post(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		  void *ctx);
void locus_cs_drain(void);
/* No run or post may be in progress or follow. */
void locus_cs_close(locus_cs *cs);

/* NULL-terminated list of the mechanism names a spec may start with. */
const char *const *locus_cs_mechanisms(void);
/* The spec with every default made explicit, e.g. "mcs:spinpark,spins=2048". */
const char *locus_cs_spec(const locus_cs *cs);
/* The mechanism name of an open executor. */
const char *locus_cs_name(const locus_cs *cs);
/* 1 if post() returns before fn has run. */
int locus_cs_is_async(const locus_cs *cs);
/*
 * What the server thread that runs an executor's sections has done, for
 * executors whose sections run on one (ffwd, async: the delegation server
 * the executor is bound to, shared with the executors bound to it; mpsc: its
 * own). The counters run from the server's start; take differences.
 */
struct locus_cs_server_stats {
	uint64_t requests;    /* sections run */
	uint64_t busy_ns;     /* delegation: time in passes that found requests; mpsc: 0 */
	uint64_t alive_ns;    /* delegation: time since the server started; mpsc: 0 */
	uint64_t polls;	      /* mpsc: dequeues; delegation: 0 */
	uint64_t empty_polls; /* mpsc: dequeues that found the queue empty (then it waited) */
};
/* 0, or -1 if the sections run on the calling threads (no server). */
int locus_cs_server_stats(const locus_cs *cs, struct locus_cs_server_stats *out);
/* Print each mechanism with a line of description and its options. */
void locus_cs_usage(FILE *out);

#endif
