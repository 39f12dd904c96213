/*
 * Delegation runtime: server threads and the channels clients register.
 *
 * A server makes passes over its channels; in each it runs every request
 * line whose sequence number moved and writes the result and the number back
 * to the line's response slot. Only the client writes a request line and only
 * the server writes a response slot, so neither side needs an atomic
 * read-modify-write to exchange a request.
 *
 * Sleeping without losing a request: an idle server parks on its `sleeping`
 * word and a client that published a request wakes it, by the protocol of
 * common/park.h; clients that sleep waiting for responses park on their
 * channel's client_wait word, and the server wakes them after a pass.
 *
 * Lifetime. A pool (the servers, or the flat slots) and every channel in it
 * are owned by its references: one per open executor and one for
 * locus_delegate_start() (`refs`), and one per thread that holds it
 * (`holds`): a thread holds a pool from its first post there until a drain
 * or its exit finds nothing of its own outstanding, and briefly while its
 * exit hook hands its channels back. When both counts reach zero, the thread
 * that dropped the last one takes the set out of the pool under the pool's
 * mutex, then stops its threads and frees its memory after releasing it (a
 * server thread's exit hook may take the mutex). So no thread touches a channel of a freed
 * pool: a post or run has its executor open, a thread with posts in flight
 * holds the pool, and anything else first takes a hold, which fails if the
 * pool it knew has gone (its generation moved).
 *
 * fork(). The child has only the forking thread, which fork's prepare step
 * drained (fork.c). Its pools keep their size and references, but their
 * server threads are gone and their channels may be half-written by threads
 * that no longer exist; so the child marks them for respawn and the first
 * use in the child starts a fresh set (the old memory is kept, unreachable
 * by clients, because another thread may have been writing it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "sync/deleg.h"
#include "sync/fatal.h"
#include "sync/fork.h"
#include "common/futex.h"
#include "common/park.h"
#include "sync/serving.h"

/* A pool's set of servers left behind by fork() in the child: kept, never used. */
struct orphan {
	struct dl_server *servers;
	struct orphan *next;
};

/*
 * A set of servers (dedicated, with threads) or of flat slots (without):
 * started by the first reference, retired when references and holds are
 * gone (see the top of the file). `generation` changes at both, so clients
 * can tell that cached channels belong to an old set.
 */
struct pool {
	pthread_mutex_t mu;
	struct dl_server *servers;
	unsigned n;
	unsigned refs;	      /* open executors, and locus_delegate_start */
	unsigned holds;	      /* threads with posts outstanding, or handing channels back */
	uint64_t *generation; /* its word in dl_generations[] */
	unsigned rr;
	int respawn; /* fork child: start a fresh set before the next use */
	struct orphan *orphans;
	const char *what;				    /* "server" or "slot", for messages */
	int (*start)(unsigned n, char *err, size_t errlen); /* with mu held */
	/* A retired set: stop its threads and free it, WITHOUT mu held (see pool_retire_locked). */
	void (*finish)(struct dl_server *servers, unsigned n);
};

static int start_locked(unsigned n, char *err, size_t errlen);
static void servers_finish(struct dl_server *servers, unsigned n);
static int flat_start_locked(unsigned n, char *err, size_t errlen);
static void slots_finish(struct dl_server *servers, unsigned n);

/* A line of its own: read at every call, written only when a pool starts or stops. */
uint64_t dl_generations[LOCUS_CACHELINE / sizeof(uint64_t)]
	__attribute__((aligned(LOCUS_CACHELINE)));

static struct pool rt = {.mu = PTHREAD_MUTEX_INITIALIZER,
			 .generation = &dl_generations[DL_POOL_SERVERS],
			 .what = "server",
			 .start = start_locked,
			 .finish = servers_finish};
static struct pool flat = {.mu = PTHREAD_MUTEX_INITIALIZER,
			   .generation = &dl_generations[DL_POOL_FLAT],
			   .what = "slot",
			   .start = flat_start_locked,
			   .finish = slots_finish};
static int explicit_start; /* locus_delegate_start() holds a reference; under rt.mu */

static struct pool *pool_of(int which)
{
	return which == DL_POOL_FLAT ? &flat : &rt;
}

struct dl_server *dl_server_get(unsigned i)
{
	return &rt.servers[i];
}

unsigned dl_nservers(void)
{
	return ld_acquire(&rt.n);
}

static unsigned pool_next(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	unsigned s = p->n ? p->rr++ % p->n : 0;
	pthread_mutex_unlock(&p->mu);
	return s;
}

unsigned dl_next_server(void)
{
	return pool_next(&rt);
}

/* Make `servers` the pool's current set (NULL and 0: none). */
static void pool_publish(struct pool *p, struct dl_server *servers, unsigned n)
{
	p->servers = servers;
	faa_acqrel(p->generation, 1);
	st_release(&p->n, n);
}

/* Put the current set aside (fork child: its threads are gone, its memory stays). */
static void pool_orphan_locked(struct pool *p)
{
	struct orphan *o = sync_malloc(sizeof(*o), "fork child: old delegation servers");
	o->servers = p->servers;
	o->next = p->orphans;
	p->orphans = o;
	pool_publish(p, NULL, 0);
}

/* Fork child: start a fresh set of the same size before the pool is used. */
static void pool_respawn_locked(struct pool *p)
{
	if (!p->respawn)
		return;
	unsigned n = p->n;
	char err[256];
	p->respawn = 0;
	pool_orphan_locked(p);
	if (p->start(n, err, sizeof(err)) != 0)
		sync_die("after fork: %s", err);
}

/* A set taken out of its pool, to be stopped and freed after the pool's mutex is released. */
struct retired {
	struct pool *p;
	struct dl_server *servers;
	unsigned n;
};

/*
 * No references and no holds left: take the set out of the pool (clients
 * see n = 0 and a new generation at once). Stopping it happens after the
 * mutex is released, in pool_finish, because a server thread's own exit
 * hook may need the pool mutexes (it may have been a client of some pool).
 */
static struct retired pool_retire_locked(struct pool *p)
{
	struct retired r = {p, NULL, 0};
	if (p->refs || p->holds || !p->n)
		return r;
	if (p->respawn) {
		/* A fork child that never used the pool: nothing runs to stop. */
		p->respawn = 0;
		pool_orphan_locked(p);
		return r;
	}
	r.servers = p->servers;
	r.n = p->n;
	pool_publish(p, NULL, 0);
	return r;
}

static void pool_finish(struct retired r)
{
	if (r.servers)
		r.p->finish(r.servers, r.n);
}

/* Take a reference; the first starts the pool with n, or `dflt` if n is 0. */
static int pool_acquire(struct pool *p, unsigned n, unsigned dflt, char *err, size_t errlen)
{
	int rc = 0;
	/* Not under p->mu: a fork in progress holds glibc's handler lock, then wants p->mu. */
	sync_fork_register();
	pthread_mutex_lock(&p->mu);
	pool_respawn_locked(p);
	if (p->n == 0)
		rc = p->start(n ? n : dflt, err, errlen);
	else if (n && n != p->n) {
		snprintf(err, errlen, "delegation already has %u %s%s; %ss=%u conflicts", p->n,
			 p->what, p->n == 1 ? "" : "s", p->what, n);
		rc = -1;
	}
	if (rc == 0)
		p->refs++;
	pthread_mutex_unlock(&p->mu);
	return rc;
}

static void pool_release(struct pool *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->refs)
		p->refs--;
	struct retired r = pool_retire_locked(p);
	pthread_mutex_unlock(&p->mu);
	pool_finish(r);
}

int dl_pool_hold(int which, uint64_t generation)
{
	struct pool *p = pool_of(which);
	pthread_mutex_lock(&p->mu);
	int ok = p->n && !p->respawn && ld_relaxed(p->generation) == generation;
	if (ok)
		p->holds++;
	pthread_mutex_unlock(&p->mu);
	return ok;
}

void dl_pool_unhold(int which)
{
	struct pool *p = pool_of(which);
	pthread_mutex_lock(&p->mu);
	if (p->holds)
		p->holds--;
	struct retired r = pool_retire_locked(p);
	pthread_mutex_unlock(&p->mu);
	pool_finish(r);
}

void dl_pool_ready(int which)
{
	struct pool *p = pool_of(which);
	pthread_mutex_lock(&p->mu);
	pool_respawn_locked(p);
	pthread_mutex_unlock(&p->mu);
}

void dl_fork_prepare(void)
{
	pthread_mutex_lock(&rt.mu);
	pthread_mutex_lock(&flat.mu);
}

void dl_fork_parent(void)
{
	pthread_mutex_unlock(&flat.mu);
	pthread_mutex_unlock(&rt.mu);
}

/* Only the forking thread lives on, and it holds nothing (fork.c drained it). */
static void pool_fork_child(struct pool *p)
{
	pthread_mutex_init(&p->mu, NULL);
	p->holds = 0;
	if (p->n) {
		p->respawn = 1;
		faa_acqrel(p->generation, 1);
	}
}

void dl_fork_child(void)
{
	pool_fork_child(&rt);
	pool_fork_child(&flat);
}

/* n zeroed servers with their registration locks; flat ones have no thread. */
static struct dl_server *servers_new(unsigned n, int is_flat, char *err, size_t errlen)
{
	struct dl_server *servers = aligned_alloc(LOCUS_CACHELINE, n * sizeof(*servers));
	if (!servers) {
		snprintf(err, errlen, "delegation: out of memory for %u %s", n,
			 is_flat ? "slots" : "servers");
		return NULL;
	}
	memset(servers, 0, n * sizeof(*servers));
	for (unsigned i = 0; i < n; i++) {
		servers[i].index = i;
		servers[i].flat = is_flat;
		servers[i].spins = LOCUS_WAIT_SPINS_DEFAULT;
		pthread_mutex_init(&servers[i].reg, NULL);
		servers[i].started_ns = mono_ns();
		servers[i].started_ticks = ticks();
	}
	return servers;
}

/* Free everything a server allocated for its channels. */
static void server_free_memory(struct dl_server *s)
{
	for (size_t k = 0; k < s->nallocs; k++)
		free(s->allocs[k]);
	free(s->allocs);
	pthread_mutex_destroy(&s->reg);
}

/* Ask a server thread to finish what it was sent and exit. */
static void server_signal_stop(struct dl_server *s)
{
	st_release(&s->stop, 1);
	park_wake(&s->sleeping);
}

/* ---- server side ----------------------------------------------------------- */

/*
 * Busy time (stats.busy_ns: time in passes that found requests) is read
 * from the clock at the pass's first request and after the pass. For a
 * pass that serves only one-line (ffwd) channels that first read sits
 * between finding the request and running it, on the path its client
 * waits for, once per request: such a pass is timed one time in
 * DL_TIME_EVERY, drawn at random before the pass (so its length has no say
 * in the draw), and counts DL_TIME_EVERY times (ffwd with one client 6.5 ->
 * 7.1 Mops/s on the 2-vCPU Intel machine; docs/results/delegation.md). The
 * sum has the expectation of the timed total; over the millions of passes
 * of a benchmark its error is well under a percent. A pass that serves a
 * channel of several lines (async) is always timed, from that channel's
 * first request if the pass was not drawn, and counts once: untimed, its
 * server fetched the lines of a batch while its client was still writing
 * them, and async with one client fell from 34-36 to 28-31 Mops/s (the
 * clock read gives the client those nanoseconds).
 */
#define DL_TIME_EVERY 32

struct pass_time {
	int drawn;   /* time this pass even if it serves one-line channels only */
	int several; /* it served a channel of several lines: counts once */
	uint64_t t0; /* ticks() at the first request timed; 0: not timed */
};

/* The pass found the first request of channel ch. */
static inline void pass_found(struct pass_time *pt, const struct dl_chan *ch)
{
	if (ch->lines > 1)
		pt->several = 1;
	if (!pt->t0 && (pt->drawn || ch->lines > 1))
		pt->t0 = ticks();
}

/* The draw for the next pass: 1 (timed) one time in DL_TIME_EVERY. */
static int time_next_pass(uint64_t *rng)
{
	uint64_t x = *rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*rng = x;
	return (x >> 32) % DL_TIME_EVERY == 0;
}

/*
 * Run the requests of one channel, in the order they were written. A client
 * writes its lines in turn (0, 1, ... lines-1, 0, ...; deleg_client.c), so
 * the server looks at the line it expects next and stops at the first
 * without a request: like a ring's consumer, it leaves alone the lines the
 * client is about to write, where reading them all at every pass would pull
 * each away from the client as it writes. The request is counted before its
 * response is published, so a client that has its result also sees it
 * counted (its acquire of the response orders the count before). The
 * channel's `answered` count goes out every half channel and after the pass
 * (deleg.h): often enough that the client refills the lines answered while
 * the server runs the rest, seldom enough that the client's polls do not
 * take the count's line away at every request (each quarter channel and
 * every request were slower). A client that writes several lines at once
 * says so in the first (`more`): those after it are fetched together, where
 * reading each in turn would wait for each line's transfer alone. With pt
 * (a server thread's pass; flat slots keep no statistics) the pass's clock
 * starts at the channel's first request if the pass is to be timed
 * (struct pass_time).
 */
static uint64_t serve_channel(struct dl_server *s, struct dl_chan *ch, struct pass_time *pt)
{
	uint64_t served = 0;
	uint32_t i = ch->next_serve, known = 0; /* lines after i fetched already (`more`) */
	uint32_t half = ch->lines > 1 ? ch->lines / 2 : 1, unpublished = 0;
	for (uint32_t n = 0; n < ch->lines; n++) {
		struct dl_req *r = &ch->req[i];
		uint64_t seq = ld_acquire(&r->seq);
		if (seq == ld_relaxed(&ch->resp[i].seq))
			break;
		if (pt && !served)
			pass_found(pt, ch);
		if (known)
			known--;
		else if (ch->lines > 1 && (known = (uint32_t)r->more) != 0)
			for (uint32_t k = 1, j = i; k <= known; k++) {
				j = j + 1 == ch->lines ? 0 : j + 1;
				__builtin_prefetch(&ch->req[j], 0);
			}
		st_relaxed(&ch->resp[i].ret, r->fn(r->state, r->a, r->b, r->c));
		/* Only the server thread writes the count; readers load it atomically.
		   Flat slots keep no statistics. */
		if (!s->flat)
			st_relaxed(&s->stats.requests, s->stats.requests + 1);
		st_release(&ch->resp[i].seq, seq);
		served++;
		i = i + 1 == ch->lines ? 0 : i + 1;
		if (++unpublished == half && ch->lines > 1) {
			st_release(&ch->answered, ch->answered + unpublished);
			unpublished = 0;
		}
	}
	if (unpublished && ch->lines > 1)
		st_release(&ch->answered, ch->answered + unpublished);
	if (served) /* an empty pass writes nothing */
		ch->next_serve = i;
	return served;
}

/* Wake every client that sleeps waiting for a response we may have written. */
static void wake_clients(struct dl_server *s)
{
	fence_seqcst();
	for (struct dl_chan *ch = ld_acquire(&s->chans); ch; ch = ch->next)
		park_wake_fenced(&ch->client_wait);
}

/* One pass over the channels; pt as in serve_channel. */
static uint64_t serve_pass(struct dl_server *s, struct pass_time *pt)
{
	uint64_t served = 0;
	for (struct dl_chan *ch = ld_acquire(&s->chans); ch; ch = ch->next)
		served += serve_channel(s, ch, pt);
	if (served)
		wake_clients(s);
	return served;
}

static int anything_pending(struct dl_server *s)
{
	for (struct dl_chan *ch = ld_acquire(&s->chans); ch; ch = ch->next)
		for (uint32_t i = 0; i < ch->lines; i++)
			if (ld_seqcst(&ch->req[i].seq) != ld_relaxed(&ch->resp[i].seq))
				return 1;
	return 0;
}

/* A server's reason to wake: a request, or the order to stop. */
static int server_has_work(void *arg)
{
	struct dl_server *s = arg;
	return anything_pending(s) || ld_acquire(&s->stop);
}

static void server_sleep(struct dl_server *s)
{
	if (park_sleep(&s->sleeping, server_has_work, s))
		st_relaxed(&s->stats.sleeps, s->stats.sleeps + 1);
}

static void *server_main(void *arg)
{
	struct dl_server *s = arg;
	uint32_t idle = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uintptr_t)s;
	int drawn = time_next_pass(&rng);
	struct serving_frame frame;
	serving_enter(&frame, s, 1);
	for (;;) {
		/* No clock read while polling: a request waits for the poll that
		   finds it, so a timed pass starts there (serve_channel). */
		struct pass_time pt = {.drawn = drawn};
		uint64_t served = serve_pass(s, &pt);
		if (served) {
			if (pt.t0)
				st_relaxed(&s->busy_ticks,
					   s->busy_ticks + (pt.several ? 1 : DL_TIME_EVERY) *
								   (ticks() - pt.t0));
			drawn = time_next_pass(&rng);
			idle = 0;
			continue;
		}
		if (ld_acquire(&s->stop)) {
			/* Everything sent before stop was seen: one empty pass after it. */
			if (!anything_pending(s))
				break;
			continue;
		}
		if (++idle < s->spins) {
			/* Now and then give the core away: a client may be waiting for it. */
			if (idle % DL_YIELD_EVERY == 0)
				sched_yield();
			else
				cpu_relax();
			continue;
		}
		server_sleep(s);
		idle = 0;
	}
	serving_leave(&frame);
	return NULL;
}

int dl_serve_then(struct dl_server *s, void (*own)(void *arg), void *arg)
{
	uint32_t idle = 0;
	if (ld_relaxed(&s->serving) || !cas_acquire(&s->serving, &idle, 1))
		return -1;
	struct serving_frame frame;
	serving_enter(&frame, s, 0);
	uint64_t served = 0;
	for (struct dl_chan *ch = ld_acquire(&s->chans); ch; ch = ch->next)
		served += serve_channel(s, ch, NULL); /* flat slots keep no statistics */
	if (own)
		own(arg);
	serving_leave(&frame);
	st_release(&s->serving, 0);
	return (int)served;
}

int dl_serve_try(struct dl_server *s)
{
	return dl_serve_then(s, NULL, NULL);
}

/* ---- channels ------------------------------------------------------------ */

/* Zeroed memory for a channel, freed with the server (a post cannot fail halfway). */
static void *server_alloc(struct dl_server *s, size_t size)
{
	void *p = sync_aligned_zalloc(LOCUS_CACHELINE, size, "delegation channel");
	if (s->nallocs == s->capallocs) {
		s->capallocs = s->capallocs ? 2 * s->capallocs : 16;
		s->allocs = sync_realloc(s->allocs, s->capallocs * sizeof(*s->allocs),
					 "delegation channel list");
	}
	s->allocs[s->nallocs++] = p;
	return p;
}

/* Response slots: a one-line channel's is in its request line (deleg.h). */
static struct dl_resp *alloc_slots(struct dl_server *s, struct dl_req *req, uint32_t lines)
{
	if (lines == 1)
		return &req->own;
	return server_alloc(s, lines * sizeof(struct dl_resp));
}

struct dl_chan *dl_chan_claim(struct dl_server *s, uint32_t kind, uint32_t lines)
{
	pthread_mutex_lock(&s->reg);
	struct dl_chan *ch;
	for (ch = s->chans; ch; ch = ch->next) {
		uint32_t free_ = 0;
		if (ch->kind == kind && ch->lines == lines && cas_acqrel(&ch->owned, &free_, 1))
			break;
	}
	if (!ch) {
		ch = server_alloc(s, sizeof(*ch));
		ch->req = server_alloc(s, lines * sizeof(struct dl_req));
		ch->resp = alloc_slots(s, ch->req, lines);
		ch->lines = lines;
		ch->kind = kind;
		ch->owned = 1;
		ch->next = s->chans;
		st_release(&s->chans, ch);
	}
	pthread_mutex_unlock(&s->reg);
	return ch;
}

void dl_chan_unclaim(struct dl_chan *ch)
{
	st_release(&ch->owned, 0);
}

/* ---- start and stop ------------------------------------------------------ */

static int start_locked(unsigned n, char *err, size_t errlen)
{
	struct dl_server *servers = servers_new(n, 0, err, errlen);
	if (!servers)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int rc = pthread_create(&servers[i].thread, NULL, server_main, &servers[i]);
		if (rc) {
			snprintf(err, errlen, "delegation: cannot start server %u: %s", i,
				 strerror(rc));
			for (unsigned j = 0; j < i; j++) {
				server_signal_stop(&servers[j]);
				pthread_join(servers[j].thread, NULL);
			}
			free(servers);
			return -1;
		}
	}
	pool_publish(&rt, servers, n);
	return 0;
}

/* Each server completes what it was sent, then exits; join them and free their channels. */
static void servers_finish(struct dl_server *servers, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		server_signal_stop(&servers[i]);
	for (unsigned i = 0; i < n; i++) {
		pthread_join(servers[i].thread, NULL);
		server_free_memory(&servers[i]);
	}
	free(servers);
}

int dl_acquire(unsigned servers, char *err, size_t errlen)
{
	return pool_acquire(&rt, servers, 1, err, errlen);
}

void dl_release(void)
{
	pool_release(&rt);
}

int locus_delegate_start(unsigned servers, char *err, size_t errlen)
{
	if (servers == 0 || servers > LOCUS_DELEGATE_SERVERS_MAX) {
		snprintf(err, errlen, "delegation: servers must be 1..%u, not %u",
			 LOCUS_DELEGATE_SERVERS_MAX, servers);
		return -1;
	}
	pthread_mutex_lock(&rt.mu);
	int already = explicit_start;
	pthread_mutex_unlock(&rt.mu);
	if (already) {
		snprintf(err, errlen, "delegation: locus_delegate_start called twice");
		return -1;
	}
	if (dl_acquire(servers, err, errlen) != 0)
		return -1;
	pthread_mutex_lock(&rt.mu);
	explicit_start = 1;
	pthread_mutex_unlock(&rt.mu);
	return 0;
}

void locus_delegate_stop(void)
{
	pthread_mutex_lock(&rt.mu);
	int had = explicit_start;
	explicit_start = 0;
	pthread_mutex_unlock(&rt.mu);
	if (had)
		dl_release();
}

unsigned locus_delegate_servers(void)
{
	return dl_nservers();
}

int locus_delegate_stats(unsigned i, struct locus_delegate_stats *out)
{
	pthread_mutex_lock(&rt.mu);
	int rc = -1;
	if (i < rt.n) {
		struct dl_server *s = &rt.servers[i];
		out->requests = ld_relaxed(&s->stats.requests);
		out->sleeps = ld_relaxed(&s->stats.sleeps);
		uint64_t now = mono_ns(), now_ticks = ticks();
		out->alive_ns = now - s->started_ns;
		out->busy_ns = ticks_to_ns(ld_relaxed(&s->busy_ticks), s->started_ticks,
					   s->started_ns, now_ticks, now);
		if (out->busy_ns > out->alive_ns)
			out->busy_ns = out->alive_ns;
		rc = 0;
	}
	pthread_mutex_unlock(&rt.mu);
	return rc;
}

/* ---- flat slots ------------------------------------------------------------ */

static int flat_start_locked(unsigned n, char *err, size_t errlen)
{
	struct dl_server *slots = servers_new(n, 1, err, errlen);
	if (!slots)
		return -1;
	pool_publish(&flat, slots, n);
	return 0;
}

/*
 * Flat slots retire with nothing in their lines: every request in a line
 * belongs to a run in progress (its executor is open) or to a thread that
 * holds the pool, so none is left once references and holds are gone.
 */
static void slots_finish(struct dl_server *slots, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		server_free_memory(&slots[i]);
	free(slots);
}

int dl_flat_acquire(unsigned slots, unsigned dflt, char *err, size_t errlen)
{
	return pool_acquire(&flat, slots, dflt, err, errlen);
}

void dl_flat_release(void)
{
	pool_release(&flat);
}

struct dl_server *dl_flat_slot(unsigned i)
{
	return &flat.servers[i];
}

unsigned dl_flat_nslots(void)
{
	return ld_acquire(&flat.n);
}

unsigned dl_flat_next_slot(void)
{
	return pool_next(&flat);
}
