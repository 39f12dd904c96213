/*
 * locus: delegation. Shared state is owned by a server thread; other threads
 * send it the critical section as a message and either wait for the answer
 * (ffwd: synchronous) or continue and get a callback later (async).
 *
 * Servers belong to a runtime that starts lazily, at the first delegation
 * executor opened (locus_cs_open("ffwd"), "async", ...), with the number of
 * servers given by that spec's servers=N (default 1), or explicitly with
 * locus_delegate_start(). It stops when the last delegation executor is
 * closed (and, after locus_delegate_start(), locus_delegate_stop() was
 * called) and no thread has posts outstanding there: a thread that posted
 * holds the runtime until it drains or exits. Stopping completes every
 * request a server has been sent. Closing an executor drains the closing
 * thread first. Servers with nothing to do spin briefly, yield, and then
 * sleep on a futex; a request wakes them. cs.h states the rules for drain,
 * thread exit, nesting and fork().
 *
 * Flat delegation ("flat") has no server threads: requests go to slots, and
 * a client that is blocked on a slot serves it (runs every request in it)
 * under the slot's try-lock, so a greedy client cannot starve the others.
 * With a pending queue (the `queue` policy) it then runs its own queued
 * requests in the same turn, straight from the queue, after the lines.
 *
 * Each client thread gets, per server, a channel of request lines (64 bytes)
 * and response slots (16 bytes): the client writes only requests, the server
 * only responses, so the fast path has no atomic read-modify-write. A
 * one-line channel (ffwd) keeps its response slot in the request line, so a
 * call moves one cache line there and back; a channel of several lines
 * (async) packs its slots four to a line apart from the requests. Channels
 * are made on a thread's first request and are reused by later threads after
 * their owner exits; there is no thread limit.
 */
#ifndef LOCUS_DELEGATE_H
#define LOCUS_DELEGATE_H

#include <stddef.h>
#include <stdint.h>
#include "locus/export.h"

LOCUS_BEGIN_DECLS

#define LOCUS_DELEGATE_LINES_DEFAULT 16 /* request lines per client-server pair (async) */
#define LOCUS_DELEGATE_LINES_MAX     64
#define LOCUS_DELEGATE_QUEUE_MAX     65536 /* pending requests per client-server pair */
#define LOCUS_DELEGATE_SERVERS_MAX   1024  /* servers, and flat slots */

/* Start `servers` servers (1..LOCUS_DELEGATE_SERVERS_MAX). 0, or -1 with a message (already
   running with another count). */
LOCUS_API int locus_delegate_start(unsigned servers, char *err, size_t errlen);
/* Complete every request sent to a server, then stop and join the servers. */
LOCUS_API void locus_delegate_stop(void);
/* Servers running now (0 if stopped). */
LOCUS_API unsigned locus_delegate_servers(void);

struct locus_delegate_stats {
	uint64_t requests; /* requests served */
	uint64_t busy_ns;  /* time spent in passes that found work (passes with ffwd requests
			      only: one in 32 timed at random, counted 32 times) */
	uint64_t alive_ns; /* time since the server started */
	uint64_t sleeps;   /* times the server parked */
};
/* Statistics of server `i` (< locus_delegate_servers()); 0, or -1 if no such server. */
LOCUS_API int locus_delegate_stats(unsigned i, struct locus_delegate_stats *out);

LOCUS_END_DECLS

#endif
