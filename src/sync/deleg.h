/* Delegation internals shared by the runtime (deleg_server.c) and clients (deleg_client.c). */
#ifndef LOCUS_SYNC_DELEG_H
#define LOCUS_SYNC_DELEG_H

#include <pthread.h>
#include <stdint.h>

#include "locus/delegate.h"
#include "locus/fn.h"
#include "locus/wait.h"
#include "common/park.h"

/* Spinning waiters yield the core once per this many spins. */
#define DL_YIELD_EVERY 64

/* A response slot: written by the server, read by one client. */
struct dl_resp {
	uint64_t ret;
	uint64_t seq; /* equals the request's seq once served */
};

/*
 * A request line: written by one client, read by one server. A one-line
 * channel (ffwd) has its response slot in the line too (`own`): the request
 * goes to the server and its answer comes back in the same line, one cache
 * line there and back, where a separate response line would move two (on
 * the machines measured, 2-3 times as long as a one-line round trip). A
 * channel of several lines (async) keeps its slots packed apart, four to a
 * line, and its client does not poll them: it reads the channel's `answered`
 * count, which the server publishes every half channel, and a slot's `ret`
 * only for a request that has a callback. So 16 requests answered send one
 * line back twice, not four lines.
 */
struct dl_req {
	locus_fn fn;
	void *state;
	uint64_t a, b, c;
	uint64_t seq; /* the client bumps it (release) to publish a request */
	union {
		struct dl_resp own; /* a one-line channel's response slot */
		/* A channel of several lines: how many lines after this one its
		   client writes with it, so that its server fetches them all at once
		   instead of each in turn (a hint: each is still read by its seq). */
		uint64_t more;
	};
} __attribute__((aligned(LOCUS_CACHELINE)));

_Static_assert(sizeof(struct dl_req) == LOCUS_CACHELINE, "a request line is one cache line");

enum { DL_SYNC = 0, DL_ASYNC = 1 };

struct dl_chan {
	/* read by the server */
	struct dl_req *req;
	struct dl_resp *resp;
	uint32_t lines;
	uint32_t kind;
	struct dl_chan *next; /* in the server's list; set before publication */
	/* park.h word: the client parks on it waiting for responses */
	uint32_t client_wait __attribute__((aligned(LOCUS_CACHELINE)));
	uint32_t owned;	     /* 1 while a thread owns the channel; 0: free for reuse */
	uint32_t next_write; /* the line a new owner writes first (its last owner's next) */
	/* Whoever serves the channel (the server, or a flat slot's serving client). */
	uint32_t next_serve __attribute__((aligned(LOCUS_CACHELINE)));
	/* Requests answered on this channel since it was made, published (release)
	   every half channel and at the end of a pass (serve_channel): every
	   request up to it has its slot's ret written. An async client polls
	   this, not the slots. A one-line channel has none: its client polls the
	   slot in its request line, which comes back with the answer anyway. */
	uint64_t answered;
};

struct dl_server {
	pthread_t thread;
	unsigned index;
	struct dl_chan *chans; /* list head, pushed with CAS */
	pthread_mutex_t reg;   /* serializes registration and slot allocation */
	void **allocs;	       /* everything allocated for this server, freed at stop */
	size_t nallocs, capallocs;
	uint32_t flat; /* a flat slot: no thread; clients serve it themselves */
	uint32_t serving
		__attribute__((aligned(LOCUS_CACHELINE))); /* flat: 1 while a thread serves */
	uint32_t bell;					   /* flat doorbell: serve me */
	/* Read by every client at every request (dl_ring): written only when the
	   server parks or stops, so the line stays shared while requests flow. */
	uint32_t sleeping
		__attribute__((aligned(LOCUS_CACHELINE))); /* park.h word of the server thread */
	uint32_t stop;
	uint32_t spins;
	/* Written by the server at every request: a line of its own, or each
	   request would pull the line above away from its clients and back. */
	struct locus_delegate_stats stats __attribute__((aligned(LOCUS_CACHELINE)));
	uint64_t busy_ticks; /* stats.busy_ns in ticks() (clock.h), converted when read */
	uint64_t started_ns, started_ticks;
} __attribute__((aligned(LOCUS_CACHELINE)));

/*
 * The two pools: dedicated servers and flat slots. Who owns them and when
 * they are freed is at the top of deleg_server.c.
 */
enum { DL_POOL_SERVERS = 0, DL_POOL_FLAT = 1 };
/* Hold the pool if it is still the one of `generation` (1), else 0: it has gone. */
int dl_pool_hold(int which, uint64_t generation);
/* Drop a hold; the last reference or hold stops the pool. */
void dl_pool_unhold(int which);
/* Before a thread caches a pool's servers: in a fork child, start its fresh set. */
void dl_pool_ready(int which);
/* fork(): lock both pools; unlock in the parent; reset for respawn in the child. */
void dl_fork_prepare(void);
void dl_fork_parent(void);
void dl_fork_child(void);

/* Runtime: servers and their count; generation changes at every start. */
struct dl_server *dl_server_get(unsigned i);
unsigned dl_nservers(void);
/* Each pool's generation (DL_POOL_*), read by clients at every call: inline. */
extern uint64_t dl_generations[];
static inline uint64_t dl_generation(void)
{
	return ld_acquire(&dl_generations[DL_POOL_SERVERS]);
}
/* Reference the runtime for an executor: starts it (with `servers`, 0: 1) if stopped;
   0 adopts a running runtime's size. */
int dl_acquire(unsigned servers, char *err, size_t errlen);
void dl_release(void);
/* Round-robin choice of server for a new executor. */
unsigned dl_next_server(void);

/* Flat delegation: slots that no thread owns; every client serves them. */
/* The same for flat slots: `slots`, or `dflt` slots if 0 and none run. */
int dl_flat_acquire(unsigned slots, unsigned dflt, char *err, size_t errlen);
void dl_flat_release(void);
struct dl_server *dl_flat_slot(unsigned i);
unsigned dl_flat_nslots(void);
static inline uint64_t dl_flat_generation(void)
{
	return ld_acquire(&dl_generations[DL_POOL_FLAT]);
}
unsigned dl_flat_next_slot(void);
/* Serve slot s once if nobody else is: requests run, or -1 if another thread serves it. */
int dl_serve_try(struct dl_server *s);
/* The same, then own(arg) in the same turn, as one of the slot's sections:
   a flat client's requests that it runs itself, behind those it had sent. */
int dl_serve_then(struct dl_server *s, void (*own)(void *arg), void *arg);

/* A channel owned by the calling thread on server s (registered on first use). */
struct dl_chan *dl_chan_claim(struct dl_server *s, uint32_t kind, uint32_t lines);
/* Give a drained channel back for reuse. */
void dl_chan_unclaim(struct dl_chan *ch);

/* Tell server s a request was published; wakes it if asleep (a full fence first). */
static inline void dl_ring(struct dl_server *s)
{
	park_wake(&s->sleeping);
}

/*
 * Client waits until ready(arg) or parks on ch->client_wait. Inline, so that
 * the poll is the caller's own ready() and not a call through a pointer: the
 * steps between an answer arriving and the client's next request are on the
 * path every synchronous call waits for.
 */
static inline void dl_client_wait(struct dl_chan *ch, int (*ready)(void *), void *arg,
				  const locus_wait *w)
{
	/* The server may share this core: while spinning, let it run now and then. */
	park_wait(&ch->client_wait, ready, arg, w, DL_YIELD_EVERY);
}

/* Client side, for the executor (deleg_client.c). */
uint64_t dl_ffwd_run(unsigned server, const locus_wait *w, locus_fn fn, void *state, uint64_t a,
		     uint64_t b, uint64_t c);
enum { DL_DEDICATED = 0, DL_FLAT_QUEUE, DL_FLAT_BLOCKED, DL_FLAT_DOORBELL, DL_FLAT_BOUND };

struct dl_async_cfg {
	/* the executor's own number, never reused (0: none): what a thread's
	   post looks for first (deleg_client.c, async_state) */
	uint64_t serial;
	uint32_t lines;
	uint32_t queue; /* pending queue length; 0 = direct writes */
	locus_wait wait;
	uint32_t policy; /* DL_DEDICATED or a flat policy */
	uint32_t bound;	 /* DL_FLAT_BOUND: serve the home slot after this many posts */
};
/* A new dl_async_cfg.serial. */
uint64_t dl_cfg_serial(void);
int dl_async_post(unsigned server, const struct dl_async_cfg *cfg, locus_fn fn, void *state,
		  uint64_t a, uint64_t b, uint64_t c, locus_cb cb, void *ctx);
uint64_t dl_async_run(unsigned server, const struct dl_async_cfg *cfg, locus_fn fn, void *state,
		      uint64_t a, uint64_t b, uint64_t c);
/* Drain this thread's async (flat) posts, and drop its hold on the pool; 1 if
   anything was outstanding, so callbacks may have posted elsewhere. */
int dl_async_drain(void);
int dl_flat_drain(void);
/* The calling thread's response lines looked at while in flight, and found answered. */
void dl_client_stats(uint64_t *polled, uint64_t *ready);

#endif
