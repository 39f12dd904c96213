/*
 * Delegation, client side: ffwd (synchronous) and async (dedicated servers).
 *
 * ffwd: one request line per client-server pair. The client writes the
 * request, bumps the line's sequence number and waits (spin, then park) for
 * the response slot to show the same number.
 *
 * async (seed 002 §2.1): post() puts the request in a per-server pending
 * queue in the client's own memory and returns. When that queue is full the
 * client reads how many of its requests the server has answered (one count
 * per channel, deleg.h), runs their callbacks and moves pending requests
 * into the lines they freed, all at once; `lines` requests can
 * be in flight per client-server pair. drain() does the same until nothing
 * is pending or in flight (the seed's Async_Barrier). With `direct` there is
 * no pending queue: post() writes straight into the next request line,
 * waiting for it to free up if needed (seed 002 Figure 3's comparison).
 * Flat (no server threads) with a queue: a client that has to make progress
 * and can take its slot serves the slot's lines and then runs its own queued
 * requests in the same turn, straight from the queue (own_turn).
 *
 * Order: a client writes its lines in turn and the server (or a flat slot's
 * server) runs them in that order, so a thread's requests to one server run
 * in the order they were posted, whatever the lines (seed 002 §2.3 allowed a
 * later one to run first; running them in turn is also what lets the server
 * read only the line it expects next). Callbacks always run on the posting
 * thread, inside post(), run() or drain(), and never while the client's own
 * state is being updated, so a callback may post again.
 *
 * Per-thread state lives in thread-local memory. A thread holds a pool (see
 * deleg_server.c) from its first post there until a drain finds nothing of
 * its own outstanding, so the pool outlives every post. A thread that exits
 * drains everything it posted, to any executor, including what its
 * callbacks post meanwhile (locus_cs_drain), then hands its channels back
 * for reuse under a short hold.
 *
 * A section that posts or runs a section of an executor served by the
 * thread that runs it (the same server, or a flat slot this thread is
 * serving) runs that section in place; a post made on a dedicated server's
 * thread completes before it returns (serving.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "locus/cs.h"
#include "common/atomic.h"
#include "common/tls.h"
#include "sync/deleg.h"
#include "sync/fatal.h"
#include "sync/serving.h"
#include "sync/thread_exit.h"

struct pending {
	locus_fn fn;
	void *state;
	uint64_t a, b, c;
	locus_cb cb;
	void *ctx;
};

/* A request line's client-side record: its callback while in flight, and
   the number last written to its seq (so the client never reads the line
   back: see write_line). */
struct inflight {
	locus_cb cb;
	void *ctx;
	uint64_t seq;
};

/* One client thread's async state for one (server, lines, queue) triple. */
struct dl_async {
	struct dl_chan *ch;
	struct dl_server *srv;
	uint32_t lines, queue;
	locus_wait wait;
	uint32_t next_line; /* where the next request goes: lines are written in turn */
	uint32_t busy;	    /* lines in flight: the `busy` lines before next_line */
	uint32_t with_cb;   /* of those, the ones with a callback */
	uint64_t collected; /* answers taken, counted as the channel's `answered` is:
			       answered - collected lines in flight are answered */
	struct inflight *fl;
	struct pending *q; /* ring of `queue` */
	uint32_t qhead, qlen;
	unsigned server;
	uint32_t policy, bound;
	struct dl_async *next;
};

/* Pauses a flat client waits after ringing a doorbell before serving the slot itself. */
#define DOORBELL_PATIENCE 128

struct completion {
	locus_cb cb;
	void *ctx;
	uint64_t ret;
};

/*
 * A thread's ffwd channel to one server, with what a call needs of it at
 * hand: an ffwd call waits for every step between one answer and the next
 * request (docs/results/delegation.md).
 */
struct ffwd_chan {
	struct dl_req *req; /* its one line: the request, and the answer in `own` */
	struct dl_server *srv;
	struct dl_chan *ch; /* NULL until the first call to this server */
};

static LOCUS_TLS struct {
	uint64_t generation;
	unsigned nservers;
	struct ffwd_chan *sync; /* per server, the ffwd channel */
	struct dl_async *async;
	int held; /* this thread holds the server pool (posts outstanding) */
	/* flat delegation: its own slots and generation */
	uint64_t flat_generation;
	struct dl_async *flat;
	unsigned home; /* the slot this thread serves on its own (doorbell, bound) */
	int has_home;
	uint32_t posts; /* since this thread last served its home slot */
	int flat_held;	/* this thread holds the flat pool */
	/* locus_cs_client_stats: lines in flight looked at by collect(), and answered */
	uint64_t polled, ready;
	/* the state the last post used, by its executor's serial (0: none;
	   cleared whenever a list is freed) */
	uint64_t last_serial;
	struct dl_async *last_as;
} tls;

static void free_list(struct dl_async *as)
{
	while (as) {
		struct dl_async *next = as->next;
		free(as->fl);
		free(as->q);
		free(as);
		as = next;
	}
}

static void forget_flat(void)
{
	tls.last_serial = 0;
	free_list(tls.flat);
	tls.flat = NULL;
	tls.has_home = 0;
}

static void forget_all(void)
{
	tls.last_serial = 0;
	free_list(tls.async);
	tls.async = NULL;
	free(tls.sync);
	tls.sync = NULL;
	tls.nservers = 0;
}

/* Hand a drained channel back, telling its next owner where to write first. */
static void release_channel(struct dl_async *as)
{
	as->ch->next_write = as->next_line;
	dl_chan_unclaim(as->ch);
}

/*
 * At thread exit (thread_exit.h), after the drain has finished every post of
 * this thread and dropped its holds: hand its channels back, each pool under
 * a hold that fails if the pool is gone, and free the thread's state.
 */
static void client_forget(void)
{
	if (tls.flat && dl_pool_hold(DL_POOL_FLAT, tls.flat_generation)) {
		for (struct dl_async *as = tls.flat; as; as = as->next)
			release_channel(as);
		dl_pool_unhold(DL_POOL_FLAT);
	}
	forget_flat();
	tls.flat_generation = 0; /* a later post starts afresh, and arms the hook again */
	if (tls.nservers && dl_pool_hold(DL_POOL_SERVERS, tls.generation)) {
		for (struct dl_async *as = tls.async; as; as = as->next)
			release_channel(as);
		for (unsigned i = 0; i < tls.nservers; i++)
			if (tls.sync[i].ch)
				dl_chan_unclaim(tls.sync[i].ch);
		dl_pool_unhold(DL_POOL_SERVERS);
	}
	forget_all();
}

/* This thread has delegation state: drain and forget it at exit. */
static void register_exit(void)
{
	sync_exit_arm(EXIT_DRAIN, locus_cs_drain);
	sync_exit_arm(EXIT_DELEG, client_forget);
}

/*
 * Make the thread-local flat state match the running slots (they may have
 * restarted). A thread that holds the pool never sees it change.
 */
static void tls_sync_flat(void)
{
	uint64_t gen = dl_flat_generation();
	if (tls.flat_generation == gen)
		return;
	dl_pool_ready(DL_POOL_FLAT);
	gen = dl_flat_generation();
	forget_flat();
	tls.flat_generation = gen;
	register_exit();
}

/* Make the thread-local state match the running runtime (it may have restarted). */
static void tls_sync_runtime_slow(void)
{
	dl_pool_ready(DL_POOL_SERVERS);
	uint64_t gen = dl_generation();
	forget_all();
	tls.generation = gen;
	tls.nservers = dl_nservers();
	tls.sync = sync_calloc(tls.nservers, sizeof(*tls.sync), "delegation client");
	register_exit();
}

static inline void tls_sync_runtime(void)
{
	if (__builtin_expect(tls.generation != dl_generation() || !tls.nservers, 0))
		tls_sync_runtime_slow();
}

/* ---- ffwd ------------------------------------------------------------------ */

struct seq_wait {
	struct dl_resp *resp;
	uint64_t seq;
};

static int seq_ready(void *arg)
{
	struct seq_wait *w = arg;
	return ld_acquire(&w->resp->seq) == w->seq;
}

static struct ffwd_chan *ffwd_claim(unsigned server)
{
	struct ffwd_chan *f = &tls.sync[server];
	f->srv = dl_server_get(server);
	f->ch = dl_chan_claim(f->srv, DL_SYNC, 1);
	f->req = &f->ch->req[0];
	return f;
}

uint64_t dl_ffwd_run(unsigned server, const locus_wait *w, locus_fn fn, void *state, uint64_t a,
		     uint64_t b, uint64_t c)
{
	/* A section of this server's: the request would wait for itself. */
	if (sync_serving && serving_is(dl_server_get(server)))
		return fn(state, a, b, c);
	tls_sync_runtime();
	struct ffwd_chan *f = &tls.sync[server];
	if (__builtin_expect(!f->ch, 0))
		f = ffwd_claim(server);
	struct dl_req *r = f->req;
	r->fn = fn;
	r->state = state;
	r->a = a;
	r->b = b;
	r->c = c;
	struct seq_wait sw = {&r->own, r->seq + 1};
	st_release(&r->seq, sw.seq);
	dl_ring(f->srv);
	dl_client_wait(f->ch, seq_ready, &sw, w);
	return ld_relaxed(&r->own.ret);
}

/* ---- async ----------------------------------------------------------------- */

uint64_t dl_cfg_serial(void)
{
	static uint64_t next;
	return faa_relaxed(&next, 1) + 1;
}

/* The state of the executor whose post this is, as the thread last used it. */
static struct dl_async *remember(const struct dl_async_cfg *cfg, struct dl_async *as)
{
	tls.last_serial = cfg->serial;
	tls.last_as = as;
	return as;
}

/*
 * The thread's state for posts to `server` with cfg: the last one used, if
 * this post is the same executor's (a serial is never reused, an executor
 * posts to its one server only, and the cache is cleared when a list is
 * freed); else found by matching the settings (executors with the same ones
 * share it), or made.
 */
static struct dl_async *async_state_slow(unsigned server, const struct dl_async_cfg *cfg)
{
	int flat = cfg->policy != DL_DEDICATED;
	if (flat)
		tls_sync_flat();
	else
		tls_sync_runtime();
	if (cfg->serial && cfg->serial == tls.last_serial)
		return tls.last_as;
	struct dl_async **list = flat ? &tls.flat : &tls.async;
	for (struct dl_async *as = *list; as; as = as->next)
		if (as->server == server && as->lines == cfg->lines && as->queue == cfg->queue &&
		    as->wait.kind == cfg->wait.kind && as->wait.spins == cfg->wait.spins &&
		    as->policy == cfg->policy && as->bound == cfg->bound)
			return remember(cfg, as);
	struct dl_async *as = sync_calloc(1, sizeof(*as), "async client state");
	as->srv = flat ? dl_flat_slot(server) : dl_server_get(server);
	as->server = server;
	as->policy = cfg->policy;
	as->bound = cfg->bound;
	as->lines = cfg->lines;
	as->queue = cfg->queue;
	as->wait = cfg->wait;
	as->fl = sync_calloc(cfg->lines, sizeof(*as->fl), "async request lines");
	as->q = cfg->queue ? sync_calloc(cfg->queue, sizeof(*as->q), "async pending queue") : NULL;
	as->ch = dl_chan_claim(as->srv, DL_ASYNC, cfg->lines);
	as->next_line = as->ch->next_write; /* where its server expects the next request */
	/* A claimed channel is drained: each line's seq is its response's, and
	   every request written to it is answered. */
	for (uint32_t i = 0; i < cfg->lines; i++)
		as->fl[i].seq = ld_relaxed(&as->ch->req[i].seq);
	as->collected = ld_acquire(&as->ch->answered);
	as->next = *list;
	*list = as;
	return remember(cfg, as);
}

/* The same, inline: a post to the executor the thread last posted to, with
   its runtime unchanged, finds its state at once. */
static inline struct dl_async *async_state(unsigned server, const struct dl_async_cfg *cfg)
{
	int same = cfg->policy == DL_DEDICATED ? tls.generation == dl_generation() && tls.nservers
					       : tls.flat_generation == dl_flat_generation();
	if (__builtin_expect(same && cfg->serial && cfg->serial == tls.last_serial, 1))
		return tls.last_as;
	return async_state_slow(server, cfg);
}

static uint32_t next_of(const struct dl_async *as, uint32_t i)
{
	return i + 1 == as->lines ? 0 : i + 1;
}

/*
 * Write a request into line i and publish it; `more` lines after it are
 * being written with it (deleg.h). The line is only written, never read: its
 * server read it last (the line is shared, or gone from this core), and its
 * number comes from fl[], so nothing here waits for the line but the
 * stores, which the caller's prefetch_write has usually made cheap already.
 */
static void write_line(struct dl_async *as, uint32_t i, const struct pending *p, uint32_t more)
{
	struct dl_req *r = &as->ch->req[i];
	uint64_t seq = as->fl[i].seq + 1;
	r->fn = p->fn;
	r->state = p->state;
	r->a = p->a;
	r->b = p->b;
	r->c = p->c;
	if (as->lines > 1) /* one line: that is its response slot */
		r->more = more;
	as->fl[i] = (struct inflight){p->cb, p->ctx, seq};
	as->with_cb += p->cb != NULL;
	st_release(&r->seq, seq);
}

/*
 * The oldest request in flight. Lines are written in turn and served in
 * order, so those in flight are the `busy` lines before next_line, and they
 * are answered oldest first.
 */
static uint32_t oldest_line(const struct dl_async *as)
{
	uint32_t i = as->next_line + as->lines - as->busy;
	return i >= as->lines ? i - as->lines : i;
}

/* How many of the lines in flight (at least one) are answered: the oldest that many. */
static uint32_t answered_lines(const struct dl_async *as)
{
	if (as->lines == 1) /* its answer comes back in the request line (deleg.h) */
		return ld_acquire(&as->ch->resp[0].seq) == as->fl[0].seq;
	return (uint32_t)(ld_acquire(&as->ch->answered) - as->collected);
}

/*
 * Count off the answered lines, oldest first, and put those with a callback
 * into done[] (*ncb of them); returns how many were answered. A
 * slot's result is read only for a callback (one without needs none, and
 * the slots' lines then stay with the server). The statistics count every
 * line in flight as looked at: two additions per pass, not per line.
 */
static uint32_t collect(struct dl_async *as, struct completion *done, uint32_t *ncb)
{
	uint32_t n = as->busy ? answered_lines(as) : 0, k = 0;
	tls.polled += as->busy;
	if (as->with_cb) /* else the lines are only counted off */
		for (uint32_t j = 0, i = oldest_line(as); j < n; j++, i = next_of(as, i)) {
			locus_cb cb = as->fl[i].cb;
			if (cb)
				done[k++] = (struct completion){cb, as->fl[i].ctx,
								ld_relaxed(&as->ch->resp[i].ret)};
		}
	as->with_cb -= k;
	as->busy -= n;
	as->collected += n;
	tls.ready += n;
	*ncb = k;
	return n;
}

/*
 * Move pending requests into free lines, in turn (serve_channel reads them
 * so); returns how many were written. The lines are asked for first, all
 * of them: their transfers from the server then overlap, where the stores
 * alone would wait for each line in turn (on the 2-vCPU Intel machine that
 * took async from 15 to 27 Mops/s; docs/results/delegation.md). The first
 * line says how many follow it, so that the server, which reads it first,
 * fetches the others together. (Publishing the first line last, so that the
 * others are surely there when the server fetches them, was slower: the
 * server then waits for the whole batch; by the time the first line reaches
 * it, the rest of a batch has been written anyway.)
 */
static uint32_t fill(struct dl_async *as)
{
	uint32_t free_ = as->lines - as->busy;
	uint32_t n = as->qlen < free_ ? as->qlen : free_;
	if (!n)
		return 0;
	uint32_t end = as->next_line, i = as->next_line, h = as->qhead;
	for (uint32_t k = 0; k < n; k++, end = next_of(as, end))
		prefetch_write(&as->ch->req[end]);
	for (uint32_t k = 0; k < n; k++) {
		write_line(as, i, &as->q[h], k ? 0 : n - 1);
		i = next_of(as, i);
		h = h + 1 == as->queue ? 0 : h + 1;
	}
	as->next_line = end;
	h = as->qhead + n;
	as->qhead = h >= as->queue ? h - as->queue : h;
	as->qlen -= n;
	as->busy += n;
	return n;
}

static void run_callbacks(const struct completion *done, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (done[i].cb)
			done[i].cb(done[i].ctx, done[i].ret);
}

/* One round of polling and writing; callbacks last. Returns progress made. */
static uint32_t flush(struct dl_async *as)
{
	struct completion done[LOCUS_DELEGATE_LINES_MAX];
	uint32_t ncb, n = collect(as, done, &ncb);
	uint32_t wrote = as->queue ? fill(as) : 0;
	if (wrote && as->policy == DL_DEDICATED)
		dl_ring(as->srv);
	run_callbacks(done, ncb);
	return n + wrote;
}

static int any_answered(void *arg)
{
	struct dl_async *as = arg;
	return as->busy && answered_lines(as);
}

/*
 * Flat `queue`: the requests still queued here run in the turn in which this
 * client serves the slot, straight from the queue, after every line the slot
 * has (its own in flight among them, so its requests keep their order). A
 * request that went through a line was copied into it, read back by the
 * server and answered through the count; one client alone on its slot spent
 * most of its time so (22 ns a request on the 2-vCPU EPYC, where a ring
 * between two cores carries one in 10 ns; docs/results/delegation.md).
 * At most LOCUS_DELEGATE_LINES_MAX a turn, as many as one collect answers.
 */
struct own_turn {
	struct dl_async *as;
	struct completion done[LOCUS_DELEGATE_LINES_MAX];
	uint32_t ncb;
};

static void run_queued(void *arg)
{
	struct own_turn *t = arg;
	struct dl_async *as = t->as;
	uint32_t n = as->qlen < LOCUS_DELEGATE_LINES_MAX ? as->qlen : LOCUS_DELEGATE_LINES_MAX;
	uint32_t h = as->qhead;
	for (uint32_t k = 0; k < n; k++) {
		const struct pending *p = &as->q[h];
		uint64_t r = p->fn(p->state, p->a, p->b, p->c);
		if (p->cb)
			t->done[t->ncb++] = (struct completion){p->cb, p->ctx, r};
		h = h + 1 == as->queue ? 0 : h + 1;
	}
	as->qhead = h;
	as->qlen -= n;
	/* Answered when this client looked: it ran them. */
	tls.polled += n;
	tls.ready += n;
}

/* 1 if this client had its turn on the slot (progress made), 0 if another serves it. */
static int own_turn(struct dl_async *as)
{
	struct own_turn t; /* not zeroed: done[] is written before it is read */
	t.as = as;
	t.ncb = 0;
	if (dl_serve_then(as->srv, run_queued, &t) < 0)
		return 0;
	struct completion sent[LOCUS_DELEGATE_LINES_MAX];
	uint32_t ncb;
	collect(as, sent, &ncb); /* every line in flight was answered in the turn */
	run_callbacks(sent, ncb);
	run_callbacks(t.done, t.ncb);
	return 1;
}

/*
 * Flat: nobody serves a slot unless a client does. So a blocked client serves
 * the slot it is blocked on (doorbell: after first asking the slot's home
 * thread to, for a while). This is what keeps a greedy client from starving
 * its victims (seed 002 §2.2.1.3): whoever waits on a slot can always empty
 * it itself.
 */
static void flat_progress(struct dl_async *as)
{
	if (as->policy == DL_FLAT_QUEUE && as->qlen && own_turn(as))
		return;
	if (flush(as))
		return;
	if (as->policy == DL_FLAT_DOORBELL) {
		st_relaxed(&as->srv->bell, 1);
		/* Give the slot's home thread a moment, then serve it ourselves. */
		for (uint32_t i = 0; i < DOORBELL_PATIENCE && !any_answered(as); i++)
			cpu_relax();
	}
	if (!any_answered(as) && dl_serve_try(as->srv) < 0)
		sched_yield(); /* another thread is serving it: let it run */
	flush(as);
}

/* Serve this thread's home slot when its policy (doorbell, bound) says so. */
static void flat_home_duty(const struct dl_async *as)
{
	if (!tls.has_home) {
		tls.home = dl_flat_next_slot();
		tls.has_home = 1;
	}
	struct dl_server *home = dl_flat_slot(tls.home);
	if (as->policy == DL_FLAT_DOORBELL) {
		if (ld_relaxed(&home->bell) && xchg_acqrel(&home->bell, 0))
			dl_serve_try(home);
	} else if (++tls.posts >= as->bound) {
		tls.posts = 0;
		dl_serve_try(home);
	}
}

/* Pauses between two looks at the answered count while waiting for it. */
#define POLL_EVERY 8

/*
 * Until some request in flight is answered (busy), under the executor's wait
 * policy: spinning (`spin`, or `spinpark`'s spins, giving the core away
 * every DL_YIELD_EVERY pauses as dl_client_wait does), it looks at the
 * answered count every POLL_EVERY pauses, not at every one: the server
 * writes the count every half channel, and a client that reads it at every
 * pause takes its line from the server in between, which the server's next
 * write waits to get back (on the 2-vCPU EPYC, in its spells of 500 ns line
 * transfers, async went from 22.4 to 19.5 Mops/s when collecting cost less;
 * docs/results/delegation.md). Then it parks as dl_client_wait does.
 */
static void wait_answers(struct dl_async *as)
{
	locus_wait w = as->wait;
	if (w.kind == LOCUS_WAIT_SPIN)
		for (;;) {
			if (answered_lines(as))
				return;
			for (int j = 0; j < POLL_EVERY; j++)
				cpu_relax();
		}
	if (w.kind == LOCUS_WAIT_SPINPARK) {
		for (uint64_t i = POLL_EVERY; i <= w.spins; i += POLL_EVERY) {
			if (answered_lines(as))
				return;
			for (int j = 0; j < POLL_EVERY; j++)
				cpu_relax();
			if (i % DL_YIELD_EVERY == 0)
				sched_yield();
		}
		w.spins = 0; /* spun: park now */
	}
	dl_client_wait(as->ch, any_answered, as, &w);
}

/* Wait until some request in flight is answered, then flush. */
static void make_progress(struct dl_async *as)
{
	if (as->policy != DL_DEDICATED) {
		flat_progress(as);
		return;
	}
	if (flush(as))
		return;
	if (as->busy)
		wait_answers(as);
	flush(as);
}

/* Direct: into the next line, once it is free; the line after it is asked
   for at once, so that it is this core's by the next post. Even if it is
   still in flight: its server has usually read it by then (leaving such a
   line alone took async:direct from 26 to 22.5 Mops/s). */
static inline void send_direct(struct dl_async *as, const struct pending *p)
{
	write_line(as, as->next_line, p, 0);
	as->busy++;
	as->next_line = next_of(as, as->next_line);
	prefetch_write(&as->ch->req[as->next_line]);
	if (as->policy == DL_DEDICATED)
		dl_ring(as->srv);
}

/*
 * Where the next request goes: a slot at the queue's tail (room made first),
 * which the caller fills in place, or (direct) the caller's own `local`.
 * Filled in place, not built on the stack and copied: the copy read the
 * request back with 16-byte loads over its 8-byte stores, which the core
 * cannot forward, and on the 2-vCPU EPYC that stall was half of a flat
 * client's post. post_end sends it.
 */
static struct pending *post_begin(struct dl_async *as, struct pending *local)
{
	if (as->policy == DL_FLAT_DOORBELL || as->policy == DL_FLAT_BOUND)
		flat_home_duty(as);
	if (!as->queue)
		return local;
	while (as->qlen == as->queue)
		make_progress(as);
	uint32_t tail = as->qhead + as->qlen;
	return &as->q[tail >= as->queue ? tail - as->queue : tail];
}

static void hold_for_post(const struct dl_async_cfg *cfg);

/*
 * The pool is held (hold_for_post) only once the request is about to be
 * published, after every wait for room: a callback run during a wait may
 * drain, which lets the pool go, and a request published after that would
 * have no hold (the next drain would not wait for it, and the thread's exit
 * would drop it). hold_cfg NULL: no hold (a run, which completes before it
 * returns).
 */
static void post_end(struct dl_async *as, const struct dl_async_cfg *hold_cfg,
		     const struct pending *p)
{
	if (!as->queue)
		while (as->busy == as->lines)
			make_progress(as);
	if (hold_cfg)
		hold_for_post(hold_cfg);
	if (as->queue)
		as->qlen++;
	else
		send_direct(as, p);
}

static void post_fill(struct pending *p, locus_fn fn, void *state, uint64_t a, uint64_t b,
		      uint64_t c, locus_cb cb, void *ctx)
{
	p->fn = fn;
	p->state = state;
	p->a = a;
	p->b = b;
	p->c = c;
	p->cb = cb;
	p->ctx = ctx;
}

static struct dl_server *server_of(unsigned server, const struct dl_async_cfg *cfg)
{
	return cfg->policy == DL_DEDICATED ? dl_server_get(server) : dl_flat_slot(server);
}

/* The first post of this thread since it last drained holds the pool (see the top). */
static void hold_for_post(const struct dl_async_cfg *cfg)
{
	int flat = cfg->policy != DL_DEDICATED;
	int *held = flat ? &tls.flat_held : &tls.held;
	if (*held)
		return;
	uint64_t gen = flat ? tls.flat_generation : tls.generation;
	if (!dl_pool_hold(flat ? DL_POOL_FLAT : DL_POOL_SERVERS, gen))
		sync_die("locus_cs_post on a %s executor that is closed",
			 flat ? "flat" : "delegation");
	*held = 1;
}

/* A post made inside a section: 1 if it was completed here (see post_general). */
static int post_in_section(unsigned server, const struct dl_async_cfg *cfg, locus_fn fn,
			   void *state, uint64_t a, uint64_t b, uint64_t c, locus_cb cb, void *ctx)
{
	/* Our own server's section: run it in place. A server's thread never
	   drains: complete the post now. */
	int own = serving_is(server_of(server, cfg));
	if (!own && !serving_on_server())
		return 0;
	uint64_t r = own ? fn(state, a, b, c) : dl_async_run(server, cfg, fn, state, a, b, c);
	if (cb)
		cb(ctx, r);
	return 1;
}

/* Any post: inside a section, to a state not cached or a pool not held, one
   that has to wait for room in its queue or for a line (direct), or one that
   looks after a home slot. */
static __attribute__((noinline)) int post_general(unsigned server, const struct dl_async_cfg *cfg,
						  locus_fn fn, void *state, uint64_t a, uint64_t b,
						  uint64_t c, locus_cb cb, void *ctx)
{
	if (sync_serving && post_in_section(server, cfg, fn, state, a, b, c, cb, ctx))
		return 0;
	struct dl_async *as = async_state(server, cfg);
	struct pending local, *p = post_begin(as, &local);
	post_fill(p, fn, state, a, b, c, cb, ctx);
	post_end(as, cfg, p);
	return 0;
}

/*
 * The common post, without a call: not inside a section, to the state the
 * thread last posted to (its runtime unchanged and its pool held), with room
 * in its queue (or, direct, a line free) and no home slot to look after.
 * Everything else goes to post_general, whose calls would otherwise make this
 * path save and restore registers (80 instructions a post with it all
 * inline, on the 2-vCPU EPYC; docs/results/delegation.md).
 */
int dl_async_post(unsigned server, const struct dl_async_cfg *cfg, locus_fn fn, void *state,
		  uint64_t a, uint64_t b, uint64_t c, locus_cb cb, void *ctx)
{
	int flat = cfg->policy != DL_DEDICATED;
	int same = flat ? tls.flat_generation == dl_flat_generation() && tls.flat_held
			: tls.generation == dl_generation() && tls.nservers && tls.held;
	if (__builtin_expect(!sync_serving && same && cfg->serial && cfg->serial == tls.last_serial,
			     1)) {
		struct dl_async *as = tls.last_as;
		if (__builtin_expect(as->policy != DL_FLAT_DOORBELL && as->policy != DL_FLAT_BOUND,
				     1)) {
			if (as->qlen < as->queue) {
				uint32_t tail = as->qhead + as->qlen;
				post_fill(&as->q[tail >= as->queue ? tail - as->queue : tail], fn,
					  state, a, b, c, cb, ctx);
				as->qlen++;
				return 0;
			}
			if (!as->queue && as->busy < as->lines) { /* direct, a line free */
				struct pending p;
				post_fill(&p, fn, state, a, b, c, cb, ctx);
				send_direct(as, &p);
				return 0;
			}
		}
	}
	return post_general(server, cfg, fn, state, a, b, c, cb, ctx);
}

struct run_result {
	uint64_t ret;
	int done;
};

static void store_result(void *ctx, uint64_t ret)
{
	struct run_result *r = ctx;
	r->ret = ret;
	r->done = 1;
}

uint64_t dl_async_run(unsigned server, const struct dl_async_cfg *cfg, locus_fn fn, void *state,
		      uint64_t a, uint64_t b, uint64_t c)
{
	if (sync_serving && serving_is(server_of(server, cfg)))
		return fn(state, a, b, c);
	struct run_result res = {0, 0};
	struct dl_async *as = async_state(server, cfg);
	struct pending local, *p = post_begin(as, &local);
	post_fill(p, fn, state, a, b, c, store_result, &res);
	post_end(as, NULL, p);
	while (!res.done)
		make_progress(as);
	return res.ret;
}

static struct dl_async *first_outstanding(struct dl_async *list)
{
	for (struct dl_async *as = list; as; as = as->next)
		if (as->qlen || as->busy)
			return as;
	return NULL;
}

/*
 * Until nothing of this thread's is pending or in flight in *list. Callbacks
 * run meanwhile may post to a state already passed, or add a new one at the
 * head, so look again from the head until a whole pass finds nothing.
 */
static void drain_list(struct dl_async **list)
{
	struct dl_async *as;
	while ((as = first_outstanding(*list)))
		while (as->qlen || as->busy)
			make_progress(as);
}

/* Drain one family and drop this thread's hold on its pool; 1 if it held it. */
static int drain_and_unhold(struct dl_async **list, int *held, int which)
{
	if (!*held)
		return 0;
	drain_list(list);
	*held = 0;
	dl_pool_unhold(which);
	return 1;
}

int dl_flat_drain(void)
{
	return drain_and_unhold(&tls.flat, &tls.flat_held, DL_POOL_FLAT);
}

int dl_async_drain(void)
{
	return drain_and_unhold(&tls.async, &tls.held, DL_POOL_SERVERS);
}

void dl_client_stats(uint64_t *polled, uint64_t *ready)
{
	*polled = tls.polled;
	*ready = tls.ready;
}
