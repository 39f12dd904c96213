/*
 * Shipping work to the data: a call runs fn(state, a, b, c) at a node — the
 * home of the data it works on — instead of moving the data's pages to the
 * caller (seed 002's delegation, across machines).
 *
 * Each node has one server thread ("locus-dsm-ship") that runs every call
 * made to that node, one at a time, in the order they came from each
 * caller: mutual exclusion among the calls to one home comes from there
 * being one server. It is an ordinary thread of the node for the protocol
 * (its accesses fault like any other thread's; under avr they resolve as
 * sc), so the data is local and current when the function touches it, and
 * stays local as long as only shipped calls touch it.
 *
 * The route of a call to another node:
 *   caller thread   posts a DSM_REQ_CALL (struct ship_call) to the
 *                   communication thread, and waits (call) or goes on
 *                   (post: the call sits in the thread's ring of RING
 *                   slots; its callback runs on that thread, in order, at a
 *                   later post or at drain); a call it waits for, with no
 *                   post of its to that node still on its way, it sends
 *                   itself in that thread's place when it can (comm.c,
 *                   dsm_call), and takes the answer itself;
 *   communication   gathers every call taken in one pass of its loop, per
 *   thread          home, into one SHIP message (seed 001 §4.1's request
 *                   combining; seed 002's request lines), with the
 *                   protocol's ship_out payload in front;
 *   home            ship_in, then the batch goes to the server's queue; the
 *                   server runs it and hands it back (DSM_REQ_SHIP_DONE);
 *                   the communication thread sends one SHIP_REPLY with
 *                   ship_back's payload and every result. A batch of the
 *                   runtime's word functions on words writable here, with
 *                   the server idle, the communication thread runs itself
 *                   and answers at once (run_here). A call that waits for a
 *                   word to move (a barrier's arrival, a condition's wait)
 *                   is parked: it leaves its batch, and its answer goes
 *                   when the word's mover unparks it (dsm_ship_park);
 *   caller's comm   ship_back_in, then each call completes (token: the
 *   thread          struct ship_call's address).
 * A call to this node goes to the server's queue at once, and completes
 * there. A call made by the server itself to this node runs inline (it
 * would otherwise wait for itself); while the server waits for a call to
 * another node, it serves its queue, so calls that ship calls (even back to
 * the caller's node) never wait for each other in a cycle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "common/futex.h"
#include "fnid.h"
#include "internal.h"

#define RING 64 /* posts one thread may have in flight */

struct ship_call {
	struct dsm_req req; /* DSM_REQ_CALL, a = home; done and result when it has run */
	struct dsm_fnid fn;
	uint64_t state, a, b, c;
	locus_cb cb;
	void *ctx;
	int by_server;		 /* made by this node's server: completion wakes it */
	int sync;		 /* a caller waits for it (lrc: its answer is an acquire) */
	uint32_t guard;		 /* 1 + the DSM lock its home runs it under, or 0 */
	uint32_t flags;		 /* CALL_READS_ONLY */
	struct ship_call *onext; /* the communication thread's list for one home */
};

/* A thread's posts in flight, oldest first. */
struct ring {
	struct ship_call slot[RING];
	uint32_t head, tail; /* head: the oldest not called back; tail: the next free */
	uint64_t posted;     /* bit n: posted to node n since a synchronous call there */
};

static __thread struct ring *ring;

struct wire_call {
	uint32_t obj, check;
	uint64_t off, state, a, b, c, token;
	uint32_t guard, flags;
};

/* A call that writes nothing (an atomic load): lrc ends no interval for it,
   at the caller or at the home (lrc_ship.c). */
#define CALL_READS_ONLY 1u
/* An arrival at a barrier object: the protocol's barrier (lrc's pushes). */
#define CALL_BARRIER 2u
/* At the home only: the call's answer waits (dsm_ship_park). */
#define CALL_PARKED (1u << 31)

/* A call that may write: any but an unguarded atomic load. */
static int call_may_write(uint32_t guard, uint32_t flags)
{
	return guard || !(flags & CALL_READS_ONLY);
}

struct wire_result {
	uint64_t token, result;
};

/* Calls to run here, from one node (this one: from == dsm.node). */
struct batch {
	struct dsm_req req; /* DSM_REQ_SHIP_DONE */
	struct batch *next;
	int from;
	uint32_t n;
	int sync;   /* a call of it is synchronous: its answer carries the protocol's */
	int wrote;  /* a call of it may have written (not CALL_READS_ONLY) */
	void *keep; /* the protocol's ship_in keeps this for ship_back */
	size_t keep_len;
	const uint64_t *word; /* parked: the word whose move answers it */
	uint64_t *results;
	struct wire_call calls[];
};

static struct {
	pthread_t thread;
	int running;
	uint32_t stop;
	pthread_mutex_t mu;
	struct batch *head, *tail;
	uint32_t word;	 /* futex: every push, and every completion of the server's own calls */
	uint32_t busy;	 /* running a batch */
	uint32_t depth;	 /* batches popped and not finished, nested ones counted (run_here) */
	uint32_t hold;	 /* start no batch (dsm_ship_hold) */
	uint32_t queued; /* batches in the queue */
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

static __thread int on_server; /* this thread is the server */

/* The call the server is running (dsm_ship_park), or NULL. */
static __thread struct batch *running;
static __thread uint32_t running_at;
/* The communication thread (or a thread in its place) runs a batch itself
   (run_here): the answers of calls its calls unpark wait in comm_answers
   until the batch is done (an answer may end lrc's interval, which
   write-protects pages a later call of the batch writes), then go at once. */
static __thread int comm_runs;
static __thread struct batch *comm_answers;

/* Calls whose answer waits for a word to move: each a batch of one. */
static struct {
	pthread_mutex_t mu;
	struct batch *head;
} parked = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Communication thread: calls taken, per home, not yet sent. */
static struct ship_call *out_head[DSM_MAX_NODES], *out_tail[DSM_MAX_NODES];
static uint32_t out_n[DSM_MAX_NODES];

/* ---- the server ---- */

static void push(struct batch *b)
{
	b->next = NULL;
	pthread_mutex_lock(&srv.mu);
	if (srv.tail)
		srv.tail->next = b;
	else
		srv.head = b;
	srv.tail = b;
	faa_relaxed(&srv.queued, 1);
	pthread_mutex_unlock(&srv.mu);
	faa_release(&srv.word, 1);
	futex_wake(&srv.word, 1);
}

static struct batch *pop(void)
{
	pthread_mutex_lock(&srv.mu);
	struct batch *b = srv.head;
	if (b) {
		srv.head = b->next;
		if (!srv.head)
			srv.tail = NULL;
		faa_seqcst(&srv.queued, (uint32_t)-1);
	}
	pthread_mutex_unlock(&srv.mu);
	return b;
}

static struct batch *batch_new(uint32_t n)
{
	struct batch *b = calloc(1, sizeof(*b) + n * sizeof(struct wire_call));
	uint64_t *r = calloc(n ? n : 1, sizeof(uint64_t));
	if (!b || !r)
		dsm_fatal("out of memory for %u shipped calls", n);
	b->n = n;
	b->results = r;
	return b;
}

static void batch_free(struct batch *b)
{
	free(b->keep);
	free(b->results);
	free(b);
}

/* The server's DSM lock for guarded calls: taken once for a run of calls
   under the same lock, released at the end of the batch (or before another). */
static __thread uint32_t guard_held; /* 1 + the lock id, or 0 */

static void guard_take(uint32_t guard)
{
	if (guard == guard_held)
		return;
	if (guard_held)
		locus_dsm_unlock(guard_held - 1);
	guard_held = guard;
	if (guard)
		locus_dsm_lock(guard - 1);
}

/* The function a call names, on this node; NULL when it names none. */
static locus_fn wire_fn(const struct wire_call *w)
{
	struct dsm_fnid id = {.obj = w->obj, .check = w->check, .off = w->off};
	return (locus_fn)dsm_fnid_fn(&id);
}

static uint64_t run_one(const struct wire_call *w)
{
	locus_fn fn = wire_fn(w);
	if (!fn)
		dsm_fatal("a shipped call names no function of this program (object %u, offset "
			  "0x%llx): every node runs the same program",
			  w->obj, (unsigned long long)w->off);
	return fn((void *)(uintptr_t)w->state, w->a, w->b, w->c);
}

static void complete(struct ship_call *c, uint64_t result)
{
	int by_server = c->by_server;
	c->req.result = (int64_t)result;
	st_release(&c->req.done, 1);
	futex_wake(&c->req.done, 1);
	if (by_server) { /* c may be gone now: by_server was read first */
		faa_release(&srv.word, 1);
		futex_wake(&srv.word, 1);
	}
}

/* Run b's calls (on the server, or on the communication thread: run_here);
   the parked ones leave it, to be answered later (dsm_ship_park). */
static void run_batch(struct batch *b)
{
	struct batch *outer = running; /* a batch served while the server waits */
	uint32_t outer_at = running_at, kept = 0;
	for (uint32_t i = 0; i < b->n; i++) {
		guard_take(b->calls[i].guard);
		running = b;
		running_at = i;
		b->results[i] = run_one(&b->calls[i]);
		running = NULL;
		if (call_may_write(b->calls[i].guard, b->calls[i].flags))
			b->wrote = 1;
	}
	running = outer;
	running_at = outer_at;
	guard_take(0);
	for (uint32_t i = 0; i < b->n; i++)
		if (!(b->calls[i].flags & CALL_PARKED)) {
			b->calls[kept] = b->calls[i];
			b->results[kept++] = b->results[i];
		}
	b->n = kept;
}

/* Run one batch of the queue; 0 if it was empty. */
static int serve_one(void)
{
	/* busy, then hold, against the holder's hold, then busy: one of the two
	   sees the other (sequentially consistent). */
	st_seqcst(&srv.busy, 1);
	faa_seqcst(&srv.depth, 1); /* before the pop: run_here reads queued, then depth */
	struct batch *b = ld_seqcst(&srv.hold) ? NULL : pop();
	if (!b) {
		faa_seqcst(&srv.depth, (uint32_t)-1);
		st_release(&srv.busy, 0);
		return 0;
	}
	run_batch(b);
	faa_seqcst(&srv.depth, (uint32_t)-1);
	st_release(&srv.busy, 0);
	if (!b->n) {
		batch_free(b);
		return 1;
	}
	if (b->from != dsm.node) {
		b->req.kind = DSM_REQ_SHIP_DONE;
		dsm_post(&b->req); /* the communication thread answers and frees it */
		return 1;
	}
	for (uint32_t i = 0; i < b->n; i++)
		complete((struct ship_call *)(uintptr_t)b->calls[i].token, b->results[i]);
	batch_free(b);
	return 1;
}

static void reply(struct batch *b);

/* A batch of one the server answers later: to its node now. */
static void answer(struct batch *b)
{
	if (b->from != dsm.node && comm_runs) {
		b->next = comm_answers;
		comm_answers = b;
		return;
	}
	if (b->from != dsm.node) {
		b->req.kind = DSM_REQ_SHIP_DONE;
		/* answered and freed here, or by the communication thread */
		dsm_take_or_post(&b->req);
		return;
	}
	complete((struct ship_call *)(uintptr_t)b->calls[0].token, b->results[0]);
	batch_free(b);
}

int dsm_ship_park(const uint64_t *word, uint64_t seen, uint64_t result)
{
	struct batch *b = running;
	if (!b)
		return 0;
	struct wire_call *w = &b->calls[running_at];
	struct batch *p = batch_new(1);
	p->from = b->from;
	p->sync = b->sync;
	p->wrote = call_may_write(w->guard, w->flags);
	p->calls[0] = *w;
	p->results[0] = result;
	p->word = word;
	if (b->keep) {
		p->keep = malloc(b->keep_len);
		if (!p->keep)
			dsm_fatal("out of memory for a parked call");
		memcpy(p->keep, b->keep, b->keep_len);
		p->keep_len = b->keep_len;
	}
	/* In the list, then a look at the word; the mover moves the word, then
	   looks in the list (dsm_ship_unpark): one of the two sees the other.
	   The word is read outside the lock: a fault there (on the server)
	   must not hold up a mover. */
	pthread_mutex_lock(&parked.mu);
	p->next = parked.head;
	parked.head = p;
	pthread_mutex_unlock(&parked.mu);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(word, __ATOMIC_SEQ_CST) != seen) {
		int mine = 0; /* still in the list: no mover took it */
		pthread_mutex_lock(&parked.mu);
		for (struct batch **pp = &parked.head; *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				mine = 1;
				break;
			}
		pthread_mutex_unlock(&parked.mu);
		if (mine) {
			batch_free(p);
			return -1;
		}
	}
	w->flags |= CALL_PARKED;
	STAT_ADD(calls_parked, 1);
	return 1;
}

void dsm_ship_unpark(const uint64_t *word)
{
	struct batch *go = NULL;
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the word's move, before the look */
	pthread_mutex_lock(&parked.mu);
	for (struct batch **pp = &parked.head; *pp;) {
		struct batch *p = *pp;
		if (p->word == word) {
			*pp = p->next;
			p->next = go;
			go = p;
		} else {
			pp = &p->next;
		}
	}
	pthread_mutex_unlock(&parked.mu);
	while (go) {
		struct batch *p = go;
		go = p->next;
		answer(p);
	}
}

static void *server_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "locus-dsm-ship");
	on_server = 1;
	for (;;) {
		uint32_t seen = ld_acquire(&srv.word);
		if (serve_one())
			continue;
		if (ld_acquire(&srv.stop))
			return NULL;
		futex_wait(&srv.word, seen);
	}
}

int dsm_ship_start(void)
{
	srv.stop = 0;
	srv.head = srv.tail = NULL;
	if (pthread_create(&srv.thread, NULL, server_main, NULL) != 0)
		return -1;
	srv.running = 1;
	return 0;
}

void dsm_ship_stop(void)
{
	if (!srv.running)
		return;
	st_release(&srv.stop, 1);
	faa_release(&srv.word, 1);
	futex_wake(&srv.word, 1);
	pthread_join(srv.thread, NULL);
	srv.running = 0;
	/* Every participant of a barrier has passed it by now: none is left
	   but one a program abandoned. */
	while (parked.head) {
		struct batch *p = parked.head;
		parked.head = p->next;
		batch_free(p);
	}
}

int dsm_ship_on_server(void)
{
	return on_server;
}

int dsm_ship_running(void)
{
	return ld_seqcst(&srv.busy) != 0;
}

void dsm_ship_hold(int on)
{
	st_seqcst(&srv.hold, (uint32_t)on);
	if (!on) {
		faa_release(&srv.word, 1);
		futex_wake(&srv.word, 1);
	}
}

int dsm_ship_busy(void)
{
	return ld_relaxed(&srv.busy) || ld_relaxed(&srv.queued);
}

/* ---- the communication thread ---- */

void dsm_ship_take(struct dsm_req *r)
{
	struct ship_call *c = (struct ship_call *)r;
	int home = (int)r->a;
	c->onext = NULL;
	if (out_tail[home])
		out_tail[home]->onext = c;
	else
		out_head[home] = c;
	out_tail[home] = c;
	out_n[home]++;
}

/* Where a message's items start: after the protocol's payload, aligned. */
static size_t items_at(size_t plen)
{
	return (plen + 7) & ~(size_t)7;
}

/* One message's payload: what the protocol adds, then n items of size each. */
static void *message(uint32_t n, size_t size, const void *proto, size_t plen, size_t *len)
{
	*len = items_at(plen) + n * size;
	char *buf = calloc(1, *len ? *len : 1);
	if (!buf)
		dsm_fatal("out of memory for a message of %u shipped calls", n);
	if (plen)
		memcpy(buf, proto, plen);
	return buf;
}

static struct wire_call to_wire(const struct ship_call *c)
{
	return (struct wire_call){.obj = c->fn.obj,
				  .check = c->fn.check,
				  .off = c->fn.off,
				  .state = c->state,
				  .a = c->a,
				  .b = c->b,
				  .c = c->c,
				  .token = (uint64_t)(uintptr_t)c,
				  .guard = c->guard,
				  .flags = c->flags};
}

void dsm_ship_flush(void)
{
	for (int home = 0; home < dsm.nodes; home++) {
		if (!out_n[home])
			continue;
		uint64_t sync = 0;
		int reads_only = 1, barrier = 0;
		for (struct ship_call *c = out_head[home]; c; c = c->onext) {
			sync |= (uint64_t)c->sync;
			if (call_may_write(c->guard, c->flags))
				reads_only = 0;
			if (c->flags & CALL_BARRIER)
				barrier = 1;
		}
		/* Only a batch someone waits for carries consistency (lrc): a
		   stream of posts leaves both nodes' intervals open. */
		void *proto = NULL;
		size_t plen = sync && dsm.proto->ship_out
				      ? dsm.proto->ship_out(home, reads_only, barrier, &proto)
				      : 0,
		       len;
		char *buf = message(out_n[home], sizeof(struct wire_call), proto, plen, &len);
		struct wire_call *w = (struct wire_call *)(void *)(buf + items_at(plen));
		uint32_t i = 0;
		for (struct ship_call *c = out_head[home]; c; c = c->onext)
			w[i++] = to_wire(c);
		STAT_ADD(calls_shipped, out_n[home]);
		struct dsm_hdr h = {
			.kind = LOCUS_DSM_MSG_SHIP, .a = out_n[home], .b = plen, .c = sync};
		dsm_send(home, &h, buf, len);
		free(buf);
		free(proto);
		out_head[home] = out_tail[home] = NULL;
		out_n[home] = 0;
	}
}

/* Is a call of b an arrival at a barrier object (CALL_BARRIER)? */
static int has_barrier(const struct batch *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		if (b->calls[i].flags & CALL_BARRIER)
			return 1;
	return 0;
}

/* Send b's answers to its node, and free it (communication thread). */
static void reply(struct batch *b)
{
	int barrier = has_barrier(b);
	void *proto = NULL;
	size_t plen = dsm.proto->ship_back && b->keep
			      ? dsm.proto->ship_back(b->from, b->keep, b->keep_len, b->wrote,
						     barrier, &proto)
			      : 0,
	       len;
	char *buf = message(b->n, sizeof(struct wire_result), proto, plen, &len);
	struct wire_result *w = (struct wire_result *)(void *)(buf + items_at(plen));
	for (uint32_t i = 0; i < b->n; i++)
		w[i] = (struct wire_result){.token = b->calls[i].token, .result = b->results[i]};
	struct dsm_hdr h = {
		.kind = LOCUS_DSM_MSG_SHIP_REPLY, .a = b->n, .b = plen, .c = (uint64_t)barrier};
	dsm_send(b->from, &h, buf, len);
	free(buf);
	free(proto);
	batch_free(b);
}

void dsm_ship_done(struct dsm_req *r)
{
	reply((struct batch *)r);
	dsm_req_forget();
}

/* Can the communication thread run b itself, a thread hop (two wake-ups)
   sooner than the server? When every call is one of the runtime's word
   functions (an atomic, a barrier's arrival, a wait) on words this node
   may write now, without a fault, and the server has nothing of an earlier
   batch left to run (the calls of one caller run in order). */
static int run_here(const struct batch *b)
{
	/* Not on the server itself (standing in from a function it runs), and
	   not while it runs one at any depth (a function waiting for another
	   node leaves busy clear): queued first, then depth (serve_one). */
	if (!dsm.proto->writable || dsm.proto->thread_fault || on_server || running ||
	    ld_seqcst(&srv.queued) || ld_seqcst(&srv.depth) || ld_seqcst(&srv.hold) ||
	    dsm_region_held())
		return 0;
	for (uint32_t i = 0; i < b->n; i++) {
		const struct wire_call *w = &b->calls[i];
		locus_fn fn = wire_fn(w);
		size_t len = fn ? dsm_atomic_fn_len(fn) + dsm_object_fn_len(fn) : 0;
		const char *at = (const char *)(uintptr_t)w->state;
		if (!len || w->guard || at < dsm.app || (uintptr_t)at % 8 ||
		    at + len > dsm.app + dsm.size)
			return 0;
		size_t first = (size_t)(at - dsm.app) / dsm.page_size;
		size_t last = (size_t)(at + len - 1 - dsm.app) / dsm.page_size;
		for (size_t p = first; p <= last; p++)
			if (!dsm.proto->writable(p))
				return 0;
	}
	return 1;
}

/* Run b here (run_here said it may) and answer what is not parked. */
static void run_in_comm(struct batch *b)
{
	STAT_ADD(calls_run_by_comm, b->n);
	comm_runs = 1;
	run_batch(b);
	comm_runs = 0;
	if (b->n)
		reply(b);
	else
		batch_free(b);
	while (comm_answers) { /* what its calls unparked */
		struct batch *p = comm_answers;
		comm_answers = p->next;
		reply(p);
	}
}

/* A message's items after the protocol's payload; NULL when malformed. */
static const void *items(const struct dsm_hdr *h, const void *payload, size_t len, size_t size)
{
	if (h->b > len || items_at(h->b) > len || (len - items_at(h->b)) != h->a * size)
		return NULL;
	return (const char *)payload + items_at(h->b);
}

void dsm_ship_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	if (h->kind == LOCUS_DSM_MSG_SHIP) {
		const struct wire_call *w = items(h, payload, len, sizeof(*w));
		if (!w)
			dsm_fatal("malformed shipped calls from node %d", h->src);
		struct batch *b = batch_new((uint32_t)h->a);
		b->from = h->src;
		b->sync = h->c != 0;
		memcpy(b->calls, w, h->a * sizeof(*w));
		if (dsm.proto->ship_in && h->b)
			b->keep_len =
				dsm.proto->ship_in(h->src, payload, h->b, has_barrier(b), &b->keep);
		if (run_here(b))
			run_in_comm(b);
		else
			push(b);
		return;
	}
	const struct wire_result *w = items(h, payload, len, sizeof(*w));
	if (!w)
		dsm_fatal("malformed answers to shipped calls from node %d", h->src);
	if (dsm.proto->ship_back_in && h->b)
		dsm.proto->ship_back_in(h->src, payload, h->b, h->c != 0);
	for (uint64_t i = 0; i < h->a; i++) {
		struct ship_call *c = (struct ship_call *)(uintptr_t)w[i].token;
		int by_server = c->by_server;
		dsm_req_done(&c->req, (int64_t)w[i].result);
		if (by_server) {
			faa_release(&srv.word, 1);
			futex_wake(&srv.word, 1);
		}
	}
}

/* ---- the caller ---- */

/* Check and fill c for a call to node (run under DSM lock guard - 1 when
   guard is not 0); -1 with a message. */
static int prepare(struct ship_call *c, const char *what, int node, locus_fn fn, void *state,
		   uint64_t a, uint64_t b, uint64_t cc, uint32_t guard)
{
	dsm_require_running(what);
	if (node < 0 || node >= dsm.nodes) {
		fprintf(stderr, "locus-dsm: %s to node %d: nodes are 0 to %d\n", what, node,
			dsm.nodes - 1);
		return -1;
	}
	memset(c, 0, sizeof(*c));
	if (!fn || dsm_fnid_of((const void *)fn, &c->fn) != 0) {
		fprintf(stderr,
			"locus-dsm: %s: function %p is not in the program's image (the program "
			"or a library loaded at start): it cannot be shipped\n",
			what, (void *)fn);
		return -1;
	}
	c->req.kind = DSM_REQ_CALL;
	c->req.a = (uint64_t)node;
	c->state = (uint64_t)(uintptr_t)state;
	c->a = a;
	c->b = b;
	c->c = cc;
	c->by_server = on_server;
	c->guard = guard;
	return 0;
}

/* Start c on its way (it completes through c->req.done). */
static void launch(struct ship_call *c)
{
	if ((int)c->req.a != dsm.node) {
		dsm_post(&c->req);
		return;
	}
	struct batch *b = batch_new(1);
	b->from = dsm.node;
	b->calls[0] = to_wire(c);
	push(b);
}

/* Until c has completed; the server serves its queue meanwhile. */
static void wait_for(struct ship_call *c)
{
	if (on_server) {
		for (;;) {
			uint32_t seen = ld_acquire(&srv.word);
			if (ld_acquire(&c->req.done))
				return;
			if (!serve_one())
				futex_wait(&srv.word, seen);
		}
	}
	for (int i = 0; i < 100 && !ld_acquire(&c->req.done); i++)
		cpu_relax();
	while (!ld_acquire(&c->req.done))
		futex_wait(&c->req.done, 0);
}

/*
 * An atomic that writes at its home, run there by the calling thread, is a
 * release no message carries: the next answer to shipped calls ends this
 * node's interval, so that a node that sees the atomic's effect through a
 * call (a barrier's generation, polled; a wait parked here and answered by
 * the atomic) gets the writes before it (lrc). So is a writing call the
 * server runs inline.
 */
static uint32_t release_pending;

int dsm_ship_release_take(void)
{
	return xchg_seqcst(&release_pending, 0u) != 0;
}

/* A call the server makes to its own node runs inline: the server would
   otherwise wait for itself (under its guard, unless the server holds it). */
static uint64_t inline_call(const struct ship_call *c, locus_fn fn)
{
	if (call_may_write(c->guard, c->flags))
		st_seqcst(&release_pending, 1u);
	int take = c->guard && c->guard != guard_held;
	if (take)
		locus_dsm_lock(c->guard - 1);
	struct batch *outer = running; /* this call is not the batch's: it cannot park */
	running = NULL;
	uint64_t r = fn((void *)(uintptr_t)c->state, c->a, c->b, c->c);
	running = outer;
	if (take)
		locus_dsm_unlock(c->guard - 1);
	return r;
}

static uint64_t call_at(const char *what, int node, locus_fn fn, void *state, uint64_t a,
			uint64_t b, uint64_t c, uint32_t guard, uint32_t flags)
{
	struct ship_call call;
	if (prepare(&call, what, node, fn, state, a, b, c, guard) != 0)
		exit(1);
	call.flags = flags;
	dsm_sync_point();
	if (on_server && node == dsm.node)
		return inline_call(&call, fn);
	call.sync = 1;
	/* This thread may send its call itself (dsm_call) unless a post of its
	   to that node may not have left yet: calls leave in order. */
	int direct = node != dsm.node && !on_server && !(ring && ring->posted >> node & 1);
	if (ring)
		ring->posted &= ~(1ull << node); /* this answer covers the posts before */
	struct dsm_stall st;
	dsm_stall_begin(&st, STALL_OTHER);
	if (direct) {
		dsm_call(&call.req);
	} else {
		launch(&call);
		wait_for(&call);
	}
	dsm_stall_end(&st, mono_ns(), DSM_LOCAL);
	return (uint64_t)call.req.result;
}

uint64_t locus_dsm_call(int node, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
{
	return call_at("locus_dsm_call", node, fn, state, a, b, c, 0, 0);
}

/* state's home; -1 with a message when it is not in the region. */
static int home_of(const char *what, const void *state)
{
	int home = locus_dsm_home(state);
	if (home < 0)
		fprintf(stderr, "locus-dsm: %s: %p is not in the shared region\n", what, state);
	return home;
}

uint64_t locus_dsm_call_home(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
{
	int home = home_of("locus_dsm_call_home", state);
	if (home < 0)
		exit(1);
	return locus_dsm_call(home, fn, state, a, b, c);
}

/* A home's atomics run on the calling thread there (internal.h says when). */
static int atomic_runs_here(int home)
{
	return home == dsm.node && !on_server && dsm.proto &&
	       (dsm.nodes == 1 || !dsm.proto->thread_fault);
}

int dsm_atomic_here(const void *state)
{
	return atomic_runs_here(locus_dsm_home(state));
}

static uint64_t call_atomic(const char *what, locus_fn fn, void *state, uint64_t a, uint64_t b,
			    uint64_t c, uint32_t flags)
{
	dsm_require_running(what);
	int home = locus_dsm_home(state);
	if (atomic_runs_here(home)) {
		dsm_sync_point();
		if (!(flags & CALL_READS_ONLY))
			st_seqcst(&release_pending, 1u);
		return fn(state, a, b, c);
	}
	return call_at(what, home, fn, state, a, b, c, 0, flags);
}

/* state is in the region: the callers (atomic.c, objects.c) checked it. */
uint64_t dsm_call_atomic(const char *what, locus_fn fn, void *state, uint64_t a, uint64_t b,
			 uint64_t c)
{
	return call_atomic(what, fn, state, a, b, c, 0);
}

uint64_t dsm_call_atomic_load(const char *what, locus_fn fn, void *state)
{
	return call_atomic(what, fn, state, 0, 0, 0, CALL_READS_ONLY);
}

uint64_t dsm_call_atomic_wait(const char *what, locus_fn fn, void *state, uint64_t seen)
{
	return call_atomic(what, fn, state, seen, 0, 0, CALL_READS_ONLY);
}

uint64_t dsm_call_atomic_barrier(const char *what, locus_fn fn, void *state, uint64_t a)
{
	return call_atomic(what, fn, state, a, 0, 0, CALL_BARRIER);
}

uint64_t dsm_ship_run(void *state, uint32_t lock, locus_fn fn, uint64_t a, uint64_t b, uint64_t c)
{
	int home = home_of("home", state);
	if (home < 0)
		exit(1);
	return call_at("home", home, fn, state, a, b, c, lock + 1, 0);
}

/* ---- posts: the thread's ring ---- */

static pthread_key_t ring_key;
static pthread_once_t ring_once = PTHREAD_ONCE_INIT;

static void finish_oldest(struct ring *r)
{
	struct ship_call *c = &r->slot[r->head % RING];
	wait_for(c);
	r->head++;
	if (c->cb)
		c->cb(c->ctx, (uint64_t)c->req.result);
}

static void reap(struct ring *r)
{
	while (r->head != r->tail && ld_acquire(&r->slot[r->head % RING].req.done))
		finish_oldest(r);
}

/* A thread that exits with posts in flight: their slots must outlive them. */
static void ring_exit(void *p)
{
	struct ring *r = p;
	while (r->head != r->tail)
		finish_oldest(r);
	free(r);
}

static void ring_key_make(void)
{
	pthread_key_create(&ring_key, ring_exit);
}

static struct ring *my_ring(void)
{
	if (!ring) {
		pthread_once(&ring_once, ring_key_make);
		ring = calloc(1, sizeof(*ring));
		if (!ring)
			dsm_fatal("out of memory for a thread's posts");
		pthread_setspecific(ring_key, ring);
	}
	return ring;
}

static int post_at(const char *what, int node, locus_fn fn, void *state, uint64_t a, uint64_t b,
		   uint64_t c, locus_cb cb, void *ctx, uint32_t guard)
{
	struct ship_call call;
	if (prepare(&call, what, node, fn, state, a, b, c, guard) != 0)
		return -1;
	dsm_sync_point();
	if (on_server && node == dsm.node) {
		uint64_t result = inline_call(&call, fn);
		if (cb)
			cb(ctx, result);
		return 0;
	}
	struct ring *r = my_ring();
	if (r->tail - r->head == RING)
		finish_oldest(r);
	struct ship_call *slot = &r->slot[r->tail++ % RING];
	if (node != dsm.node)
		r->posted |= 1ull << node;
	*slot = call;
	slot->cb = cb;
	slot->ctx = ctx;
	launch(slot);
	reap(r);
	return 0;
}

int locus_dsm_post(int node, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c,
		   locus_cb cb, void *ctx)
{
	return post_at("locus_dsm_post", node, fn, state, a, b, c, cb, ctx, 0);
}

int locus_dsm_post_home(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c, locus_cb cb,
			void *ctx)
{
	int home = home_of("locus_dsm_post_home", state);
	return home < 0 ? -1 : locus_dsm_post(home, fn, state, a, b, c, cb, ctx);
}

int dsm_ship_post(void *state, uint32_t lock, locus_fn fn, uint64_t a, uint64_t b, uint64_t c,
		  locus_cb cb, void *ctx)
{
	int home = home_of("home", state);
	return home < 0 ? -1 : post_at("home", home, fn, state, a, b, c, cb, ctx, lock + 1);
}

static uint64_t fence(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)a, (void)b, (void)c;
	return 0;
}

/*
 * Every post has called back; where a synchronous call's answer carries
 * consistency (lrc), one empty call to each node posted to since makes the
 * drain an acquire too: what the posts' functions wrote is seen here, and
 * at this node's next barrier by every node.
 */
void locus_dsm_drain(void)
{
	if (!ring)
		return;
	while (ring->head != ring->tail)
		finish_oldest(ring);
	if (!dsm.proto || !dsm.proto->ship_back)
		ring->posted = 0;
	for (int n = 0; ring->posted; n++)
		if (ring->posted >> n & 1)
			locus_dsm_call(n, fence, NULL, 0, 0, 0); /* clears the bit */
}
