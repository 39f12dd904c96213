/*
 * locus: the critical-section executor — one interface to every mechanism.
 *
 *   locus_cs *cs = locus_cs_open("mcs", &state);
 *   uint64_t r   = locus_cs_run(cs, my_fn, a, b, c);
 *
 * A spec is a mechanism name, optionally followed by a colon and
 * comma-separated options: "ttas:backoff_max=512,spin", "ccsynch:pass=16",
 * "stm:gl_wt". locus_cs_mechanisms() lists the names; locus_cs_usage() the
 * options of each. Every numeric value is range checked (a bad one fails
 * the open, and locus_cs_error() gives the range), and locus_cs_spec() of
 * an open executor reopens to the same configuration.
 *
 * Options every mechanism except `mutex` and `stm` takes:
 *   spinpark (default) | spin | park   how waiters wait
 *   spins=N                            spin budget before parking
 *
 * run() executes fn under the mechanism and returns its result. post() does
 * the same asynchronously where the mechanism is asynchronous; on the
 * synchronous mechanisms it runs fn at once and calls cb before returning.
 * Callbacks always run on the posting thread. A NULL executor or fn aborts
 * the process at the call, with a message.
 *
 * The rules at the edges, in one place:
 *
 * Drain. locus_cs_drain() returns when every post the calling thread made,
 * to any executor, has completed and its callback has run — including posts
 * made by callbacks that ran during this drain. A callback may post and may
 * drain.
 *
 * Thread exit. A thread that exits with posts outstanding completes them,
 * and the posts its callbacks make meanwhile, running the callbacks on its
 * way out (as if it called locus_cs_drain() last).
 *
 * Lifetime. Delegation servers (ffwd, async) and flat slots belong to a
 * runtime that starts with the first executor of its kind opened and stops
 * when the last is closed and no thread has posts outstanding there: a
 * thread that posted keeps the runtime alive until it drains or exits, so
 * no post is ever lost and no thread touches a stopped runtime. close()
 * drains the closing thread first. An executor may be closed only when no
 * run or post on it is in progress or will follow; other threads' pending
 * posts keep the servers (not the closed executor) alive.
 *
 * Nesting. A section may run or post sections of other executors. If the
 * other executor is served by the thread running the current section — the
 * same delegation server, the same flat slot being served, the same mpsc —
 * the nested section runs in place at once (it would otherwise wait for
 * itself); on locks, nesting the same lock deadlocks, as it does for any
 * non-recursive lock. A post made on a dedicated server's thread completes,
 * and calls back, before it returns (a server never drains). Sections that
 * wait for each other in a cycle across different servers or slots
 * deadlock, as locks taken in a cycle do.
 *
 * fork(). fork() drains the forking thread first (its callbacks run, in
 * the parent, before fork returns), so parent and child agree on what ran.
 * In the child every executor inherited from the parent keeps working and
 * new ones open: delegation servers, flat slots and mpsc servers start anew
 * at their first use in the child. Requests that other threads of the
 * parent had sent but that were not yet served are not run in the child.
 * As with any lock, forking while another thread is inside a section leaves
 * the child's copy of that state as it was at that instant.
 */
#ifndef LOCUS_CS_H
#define LOCUS_CS_H

#include <stdint.h>
#include <stdio.h>

#include "locus/fn.h"
#include "locus/export.h"

LOCUS_BEGIN_DECLS

typedef struct locus_cs locus_cs;

/* NULL on a bad spec; locus_cs_error() then says why and what is known. */
LOCUS_API locus_cs *locus_cs_open(const char *spec, void *state);
LOCUS_API const char *locus_cs_error(void);

LOCUS_API uint64_t locus_cs_run(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);
/*
 * Returns 0: a post cannot fail. cb may be NULL. Running out of memory while
 * queueing the post aborts the process with a message (there is no state
 * to roll back to halfway through).
 */
LOCUS_API int locus_cs_post(locus_cs *cs, locus_fn fn, uint64_t a, uint64_t b, uint64_t c,
			    locus_cb cb, void *ctx);
/* Every post of this thread, and every post its callbacks make meanwhile, has completed. */
LOCUS_API void locus_cs_drain(void);
/* Drains the calling thread; no run or post on cs may be in progress or follow. */
LOCUS_API void locus_cs_close(locus_cs *cs);

/* NULL-terminated list of the mechanism names a spec may start with. */
LOCUS_API const char *const *locus_cs_mechanisms(void);
/* The spec with every default made explicit, e.g. "mcs:spinpark,spins=2048". */
LOCUS_API const char *locus_cs_spec(const locus_cs *cs);
/* The mechanism name of an open executor. */
LOCUS_API const char *locus_cs_name(const locus_cs *cs);
/* 1 if post() returns before fn has run. */
LOCUS_API int locus_cs_is_async(const locus_cs *cs);
/*
 * What the server thread that runs an executor's sections has done, for
 * executors whose sections run on one (ffwd, async: the delegation server
 * the executor is bound to, shared with the executors bound to it; mpsc: its
 * own). The counters run from the server's start; take differences.
 */
struct locus_cs_server_stats {
	uint64_t requests;    /* sections run */
	uint64_t busy_ns;     /* delegation: time in passes that found requests (estimated
				 from one in 32 of those with ffwd requests only); mpsc: 0 */
	uint64_t alive_ns;    /* delegation: time since the server started; mpsc: 0 */
	uint64_t polls;	      /* mpsc: dequeues; delegation: 0 */
	uint64_t empty_polls; /* mpsc: dequeues that found the queue empty (then it waited) */
};
/* 0, or -1 if the sections run on the calling threads (no server). */
LOCUS_API int locus_cs_server_stats(const locus_cs *cs, struct locus_cs_server_stats *out);
/*
 * What the calling thread's asynchronous delegation client (async, flat) has
 * seen since the thread began: each time it looked over its request lines in
 * flight for answers (a post that found its queue or next line full, a run,
 * a drain), how many it looked at and how many had their response ready:
 * seed 002's response readiness, ready / polled. Its own waits for an answer
 * are not counted. A flat `queue` client that runs its queued requests in its
 * own turn on the slot counts each as looked at and ready (so `ready` still
 * grows by the posts answered). Per thread, so nothing shared is written;
 * take differences.
 */
struct locus_cs_client_stats {
	uint64_t polled; /* response lines of requests in flight looked at, and
			    requests run in a flat client's own turn */
	uint64_t ready;	 /* of those, answered */
};
LOCUS_API void locus_cs_client_stats(struct locus_cs_client_stats *out);
/* Print each mechanism with a line of description and its options. */
LOCUS_API void locus_cs_usage(FILE *out);

/*
 * A mechanism another library provides, and its say over state in its
 * keeping. locus-dsm registers one at locus_dsm_init (and removes it at
 * finalize): "home" ships every section on a state to the state's home
 * node, and the in-place mechanisms (the locks, combining, stm) opened on
 * state in its shared region run each section between enter and leave (the
 * state's DSM lock), so that they exclude every node's sections, not only
 * this node's; a mechanism that runs sections on this node's server threads
 * (ffwd, async, flat, mpsc) is refused on such state. Programs do not call
 * this themselves.
 */
struct locus_cs_provider {
	const char *name;    /* the mechanism it adds */
	const char *summary; /* for locus_cs_usage */
	const char *options; /* for locus_cs_usage; NULL: none */
	/* A handle for sections on state (options: what follows the colon, or
	   NULL); NULL with a message in err when it cannot. */
	void *(*open)(void *state, const char *options, char *err, size_t errlen);
	uint64_t (*run)(void *h, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);
	int (*post)(void *h, locus_fn fn, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
		    void *ctx);
	void (*drain)(void); /* the calling thread's posts */
	void (*close)(void *h);
	int (*owns)(const void *state);
	void (*enter)(void *state);
	void (*leave)(void *state);
};
/* Register p (NULL: remove it); returns 0, or -1 when another one is there. */
LOCUS_API int locus_cs_provide(const struct locus_cs_provider *p);

LOCUS_END_DECLS

#endif
