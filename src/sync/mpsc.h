/*
 * A dedicated server thread fed by one multi-producer single-consumer queue
 * (seed 000's asynchronous server, with its §4.3 refinements as options).
 *
 * Clients post requests; the server runs them one after another, so the
 * critical sections never run concurrently. A thread's requests to one mpsc
 * run in the order it posted them. Callbacks run on the posting thread,
 * never on the server.
 */
#ifndef LOCUS_SYNC_MPSC_H
#define LOCUS_SYNC_MPSC_H

#include <stddef.h>
#include <stdint.h>

#include "locus/fn.h"
#include "locus/wait.h"

/* Largest initial capacity, the capacity= option (the queue grows past it). */
#define MPSC_CAPACITY_MAX (1u << 20)

struct mpsc_opts {
	int lockfree;	   /* 1: lock-free queue (default); 0: the seed's lock-protected ring */
	int zerocopy;	   /* 1: the queue carries a pointer to the client's request (default);
			      0: single-copy: the request's fields are copied into the queue slot */
	locus_wait wait;   /* how the server waits for work AND how a client waits for a result
			      (default: locus_wait_default(), spin-then-park; the seed's
			      spinning, blocking and spin-then-block are spin, park and spinpark) */
	int batch;	   /* 1: the server dequeues everything available at once and then runs
			      it (default 0: one at a time) */
	uint32_t capacity; /* initial ring capacity (default 64); the queue GROWS when full
			      instead of failing or blocking */
};

void mpsc_opts_default(struct mpsc_opts *o);

/* One server thread and its queue. */
struct mpsc;

/* Starts the server thread; NULL and a message in err on failure. */
struct mpsc *mpsc_open(const struct mpsc_opts *o, char *err, size_t errlen);

/* Synchronous: post and wait for the result. */
uint64_t mpsc_run(struct mpsc *m, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c);

/*
 * Asynchronous: returns 0 at once; cb(ctx, result) runs later on the posting
 * thread, at the latest in mpsc_drain_thread(). cb may be NULL.
 */
int mpsc_post(struct mpsc *m, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c,
	      locus_cb cb, void *ctx);

/*
 * Every mpsc_post of the calling thread (to any mpsc) has completed and its
 * callback has run. 1 if anything was outstanding (callbacks may have posted
 * elsewhere), else 0.
 */
int mpsc_drain_thread(void);

/* Server counters since open: dequeues, those that found nothing, and requests run. */
struct mpsc_stats {
	uint64_t polls, empty_polls, requests;
};
void mpsc_stats(struct mpsc *m, struct mpsc_stats *out);

/*
 * Every request posted before close completes (none is lost), then the
 * server thread stops and is joined. Callbacks of posts still pending belong
 * to their posting threads and run in their next post, run or drain.
 */
void mpsc_close(struct mpsc *m);

/* fork(): hold respawns across the fork; in the child, mark every mpsc for respawn. */
void mpsc_fork_prepare(void);
void mpsc_fork_parent(void);
void mpsc_fork_child(void);

#endif
