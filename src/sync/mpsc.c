/*
 * mpsc: a dedicated server thread fed by one multi-producer single-consumer
 * queue (seed 000 §2.4, §3.2-3.3; the §4.3 refinements and the growable
 * queue of its future work are options).
 *
 * Requests and results. A client describes each request in a record from
 * its own per-thread free list (no malloc per request once warm). The server
 * runs the request, writes the result into the record and releases the
 * record's hand-off flag (flag.h); the client waits on that flag (spin, then
 * park) in run and drain. A posting thread keeps its in-flight records in a
 * thread-local list in post order; post (cheaply: it only looks at the oldest
 * record), run and drain run the callbacks of completed records in post
 * order, on the posting thread, and recycle the records. The thread-exit
 * hook (thread_exit.h) drains a thread's posts when it exits, before its
 * records are freed.
 *
 * Four queues, chosen by lockfree x zerocopy. Zero-copy queues carry a
 * pointer to the client's record, whose fields the server reads in place;
 * single-copy queues carry a copy of the fields (fn, state, a, b, c and the
 * record to answer) in a slot of the queue's own memory.
 *
 *  - locked ring (lockfree=0): the seed's circular array behind a mutex,
 *    with elements of either kind. When full, the producer that finds it
 *    full doubles it under the lock. Not lock-free: a producer or the server
 *    preempted while holding the mutex stalls everyone (the seed's §4.3
 *    complaint).
 *
 *  - Vyukov intrusive list (lockfree=1, zerocopy=1): producers exchange the
 *    queue's tail with their record's link, then store the link into the
 *    previous tail's next; the consumer follows next pointers from a stub.
 *    Unbounded by construction, so it "grows" for free. Producers are
 *    wait-free (one exchange, one store). The consumer is not lock-free: a
 *    producer preempted between its exchange and its store hides its request
 *    and every later one until it runs again (the server parks meanwhile;
 *    the producer wakes it when it completes the link).
 *
 *  - list of ring segments (lockfree=1, zerocopy=0): producers claim a slot
 *    of the current segment with fetch-and-add, copy the request in and mark
 *    the slot ready. A producer that finds the segment full allocates the
 *    next one (`capacity` slots, like every segment), links it with a CAS
 *    (losers free theirs) and swings the tail. Slot claims are lock-free; allocation
 *    goes through malloc, which is not. As with the linked list, a producer
 *    preempted between claim and "ready" stalls the consumer at that slot.
 *    Freeing a used-up segment is the hard part, since a slow producer may
 *    still hold a pointer to it: producers announce themselves in one of two
 *    counters (the one the current phase selects, re-checked after the
 *    increment) while they touch segments; the server retires segments in
 *    batches, flips the phase, and frees a batch once the counter of the
 *    phase it was retired in reads zero. Flipping only after the previous
 *    batch was freed means a producer can never be counted under a phase
 *    older than the one being checked. It is a two-counter RCU; it costs
 *    producers two atomic adds on one shared line per post.
 *
 * Server waiting (the seed's blocking, §4.3's spinning): an idle server
 * spins up to its budget re-checking the queue, then parks on its `sleeping`
 * word, and a producer that published a request wakes it, by the protocol of
 * common/park.h. A busy server is never woken: no system call per request.
 *
 * Batch (§4.3 item 3): the server takes everything available (up to
 * MPSC_BATCH_MAX) in one dequeue, then runs it; otherwise one at a time.
 *
 * Order: each queue is FIFO, so one thread's requests to one mpsc run in
 * the order it made them, and its records complete in that order.
 *
 * Nesting: a section running on this mpsc's server that runs or posts to
 * the same mpsc would wait for itself; it runs in place instead. A post
 * made on any server thread completes before it returns (serving.h).
 *
 * fork(): the child has no server thread and possibly a half-linked queue
 * (a producer of the parent stopped mid-push). The first submit to an mpsc
 * in the child gives it a fresh, empty queue and a new server thread; what
 * other threads had queued is not run in the child. Closing an mpsc the
 * child never used only frees it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/cs.h"
#include "common/atomic.h"
#include "common/tls.h"
#include "sync/fatal.h"
#include "sync/flag.h"
#include "sync/fork.h"
#include "common/futex.h"
#include "common/park.h"
#include "sync/mpsc.h"
#include "sync/serving.h"
#include "sync/thread_exit.h"

/* Largest batch: bounds how long a stream of posts can hold back results. */
#define MPSC_BATCH_MAX 1024
/* Ring capacity bound: doubling past it would overflow the 32-bit indices. */
#define MPSC_RING_MAX (1u << 30)

struct mpsc_rec;

/* What the server needs to run one request and answer it. */
struct mpsc_msg {
	locus_fn fn;
	void *state;
	uint64_t a, b, c;
	struct mpsc_rec *rec; /* where the result goes */
};

struct mpsc_link {
	struct mpsc_link *next;
};

/* A client's request record; owned by the thread that posted it. */
struct mpsc_rec {
	struct mpsc_msg msg;	/* zero-copy: the request the server reads in place */
	struct mpsc_link qlink; /* lock-free zero-copy: link in the server's queue */
	uint64_t ret;		/* written by the server before it releases `flag` */
	uint32_t flag;		/* flag.h: FLAG_WAIT until served */
	locus_wait wait;	/* how the owner waits for it (its mpsc's policy) */
	locus_cb cb;		/* post: completion, NULL for none */
	void *ctx;		/* post: cb's argument */
	struct mpsc_rec *next;	/* owner's in-flight list or free list */
} __attribute__((aligned(LOCUS_CACHELINE)));

/* ---- locked ring ----------------------------------------------------------- */

/* The seed's ring: elements of `esz` bytes (a record pointer or a message). */
struct ring {
	pthread_mutex_t lock;
	unsigned char *buf;
	uint32_t cap; /* a power of two */
	uint32_t head;
	uint32_t count; /* changed under the lock; the idle server reads it without */
	size_t esz;
};

/* The server's private array of dequeued elements. */
struct sbuf {
	unsigned char *p;
	size_t cap, esz;
};

/* post() cannot report failure mid-way; out of memory is fatal (fatal.h). */
static void *xmalloc(size_t n)
{
	return sync_malloc(n, "mpsc queue");
}

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t c = 1;
	while (c < n && c < MPSC_RING_MAX)
		c <<= 1;
	return c;
}

static void ring_init(struct ring *r, uint32_t cap, size_t esz)
{
	pthread_mutex_init(&r->lock, NULL);
	r->cap = pow2_at_least(cap);
	r->buf = xmalloc((size_t)r->cap * esz);
	r->head = 0;
	r->count = 0;
	r->esz = esz;
}

static unsigned char *ring_slot(struct ring *r, uint32_t i)
{
	return r->buf + (size_t)((r->head + i) & (r->cap - 1)) * r->esz;
}

/* Under the lock: double the ring, keeping its elements in order from index 0. */
static void ring_grow(struct ring *r)
{
	if (r->cap >= MPSC_RING_MAX)
		sync_die("mpsc: more than %u requests queued", MPSC_RING_MAX);
	uint32_t ncap = r->cap * 2;
	unsigned char *nb = xmalloc((size_t)ncap * r->esz);
	for (uint32_t i = 0; i < r->count; i++)
		memcpy(nb + (size_t)i * r->esz, ring_slot(r, i), r->esz);
	free(r->buf);
	r->buf = nb;
	r->cap = ncap;
	r->head = 0;
}

static void ring_put(struct ring *r, const void *e)
{
	pthread_mutex_lock(&r->lock);
	uint32_t n = ld_relaxed(&r->count);
	if (n == r->cap)
		ring_grow(r);
	memcpy(ring_slot(r, n), e, r->esz);
	st_release(&r->count, n + 1);
	pthread_mutex_unlock(&r->lock);
}

static void sbuf_reserve(struct sbuf *b, size_t n)
{
	if (n <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 16;
	while (cap < n)
		cap *= 2;
	b->p = sync_realloc(b->p, cap * b->esz, "mpsc server batch");
	b->cap = cap;
}

/* Move up to max elements into out, in one critical section (the seed's batch remove). */
static size_t ring_take(struct ring *r, struct sbuf *out, size_t max)
{
	pthread_mutex_lock(&r->lock);
	uint32_t count = ld_relaxed(&r->count);
	size_t n = count < max ? count : max;
	sbuf_reserve(out, n);
	for (size_t i = 0; i < n; i++)
		memcpy(out->p + i * r->esz, ring_slot(r, (uint32_t)i), r->esz);
	r->head = (r->head + (uint32_t)n) & (r->cap - 1);
	st_relaxed(&r->count, count - (uint32_t)n);
	pthread_mutex_unlock(&r->lock);
	return n;
}

static int ring_ready(struct ring *r)
{
	return ld_acquire(&r->count) != 0;
}

static void ring_destroy(struct ring *r)
{
	free(r->buf);
	pthread_mutex_destroy(&r->lock);
}

/* ---- Vyukov intrusive list (lock-free, zero-copy) ------------------------- */

struct vyq {
	struct mpsc_link *tail
		__attribute__((aligned(LOCUS_CACHELINE))); /* producers exchange it */
	struct mpsc_link *head __attribute__((aligned(LOCUS_CACHELINE))); /* consumer only */
	struct mpsc_link stub; /* keeps the list non-empty so producers never touch head */
};

static void vy_init(struct vyq *q)
{
	q->stub.next = NULL;
	q->head = &q->stub;
	q->tail = &q->stub;
}

static void vy_push(struct vyq *q, struct mpsc_link *l)
{
	st_relaxed(&l->next, NULL);
	struct mpsc_link *prev = xchg_acqrel(&q->tail, l);
	/* Preempted here, this producer hides l and all later links from the consumer. */
	st_release(&prev->next, l);
}

/* The oldest complete link, or NULL if empty or the oldest is still being linked. */
static struct mpsc_link *vy_pop(struct vyq *q)
{
	struct mpsc_link *h = q->head;
	struct mpsc_link *next = ld_acquire(&h->next);
	if (h == &q->stub) {
		if (!next)
			return NULL;
		q->head = h = next;
		next = ld_acquire(&h->next);
	}
	if (next) {
		q->head = next;
		return h;
	}
	/* h is the last link: it can go only once something follows it. */
	if (ld_acquire(&q->tail) != h)
		return NULL;
	vy_push(q, &q->stub);
	next = ld_acquire(&h->next);
	if (!next)
		return NULL;
	q->head = next;
	return h;
}

/* 1 if vy_pop would return a link (after at most skipping the stub). */
static int vy_ready(struct vyq *q)
{
	struct mpsc_link *h = q->head;
	if (ld_acquire(&h->next))
		return 1;
	return h != &q->stub && ld_acquire(&q->tail) == h;
}

/* ---- list of ring segments (lock-free, single-copy) ----------------------- */

struct seg_slot {
	struct mpsc_msg msg;
	uint32_t ready; /* set (release) once msg is written */
};

struct seg {
	uint32_t claim;		  /* slots handed out; runs past size when full */
	uint32_t size;		  /* immutable */
	struct seg *next;	  /* set once, by CAS */
	struct seg *retired_next; /* consumer: in the retired or limbo list */
	struct seg_slot slot[] __attribute__((aligned(LOCUS_CACHELINE)));
};

struct segq {
	struct seg *tail __attribute__((aligned(LOCUS_CACHELINE))); /* producers claim here */
	uint32_t phase __attribute__((aligned(LOCUS_CACHELINE)));   /* bumped by the consumer */
	uint32_t active[2]; /* producers inside, by phase parity */
	/* consumer only */
	struct seg *head __attribute__((aligned(LOCUS_CACHELINE)));
	uint32_t idx;	     /* next slot of head to read */
	struct seg *retired; /* used up, since the last phase flip */
	struct seg *limbo;   /* retired before the last flip: freed once its phase is idle */
	uint32_t limbo_phase;
};

static struct seg *seg_new(uint32_t size)
{
	struct seg *s = sync_aligned_zalloc(LOCUS_CACHELINE, sizeof(*s) + size * sizeof(s->slot[0]),
					    "mpsc queue segment");
	s->size = size; /* claim, links and every slot's `ready` start at zero */
	return s;
}

static void seg_init(struct segq *q, uint32_t cap)
{
	q->tail = q->head = seg_new(cap);
	q->phase = 0;
	q->active[0] = q->active[1] = 0;
	q->idx = 0;
	q->retired = q->limbo = NULL;
	q->limbo_phase = 0;
}

/* Announce a producer under the current phase; returns the counter to leave. */
static uint32_t seg_enter(struct segq *q)
{
	for (;;) {
		uint32_t p = ld_seqcst(&q->phase);
		faa_seqcst(&q->active[p & 1], 1);
		/* Counted under p only if no flip happened around the increment. */
		if (ld_seqcst(&q->phase) == p)
			return p & 1;
		fas_seqcst(&q->active[p & 1], 1);
	}
}

/* Segment s is full: make sure it has a successor and that the tail moves to it. */
static void seg_extend(struct segq *q, struct seg *s)
{
	struct seg *next = ld_acquire(&s->next);
	if (!next) {
		struct seg *n = seg_new(s->size);
		struct seg *expected = NULL;
		if (cas_acqrel(&s->next, &expected, n)) {
			next = n;
		} else {
			free(n);
			next = expected;
		}
	}
	cas_seqcst(&q->tail, &s, next);
}

static void seg_put(struct segq *q, const struct mpsc_msg *msg)
{
	uint32_t e = seg_enter(q);
	for (;;) {
		struct seg *s = ld_seqcst(&q->tail);
		uint32_t i = faa_acqrel(&s->claim, 1);
		if (i < s->size) {
			s->slot[i].msg = *msg;
			st_release(&s->slot[i].ready, 1);
			break;
		}
		seg_extend(q, s);
	}
	fas_seqcst(&q->active[e], 1);
}

static void seg_free_list(struct seg *s)
{
	while (s) {
		struct seg *next = s->retired_next;
		free(s);
		s = next;
	}
}

/* Free the limbo batch if no producer of its phase is left; start a new batch. */
static void seg_reclaim(struct segq *q)
{
	if (q->limbo && ld_seqcst(&q->active[q->limbo_phase & 1]) == 0) {
		seg_free_list(q->limbo);
		q->limbo = NULL;
	}
	if (!q->limbo && q->retired) {
		q->limbo = q->retired;
		q->retired = NULL;
		q->limbo_phase = ld_relaxed(&q->phase);
		st_seqcst(&q->phase, q->limbo_phase + 1);
	}
}

/* The consumer has read all of s: unlink it from the tail and retire it. */
static void seg_retire(struct segq *q, struct seg *s, struct seg *next)
{
	struct seg *expected = s;
	/* From here no producer can find s; only those that already hold it remain. */
	cas_seqcst(&q->tail, &expected, next);
	s->retired_next = q->retired;
	q->retired = s;
	q->head = next;
	q->idx = 0;
	seg_reclaim(q);
}

/* 1 if the next slot is written; moves past a used-up segment first. */
static int seg_ready(struct segq *q)
{
	struct seg *s = q->head;
	if (q->idx == s->size) {
		struct seg *next = ld_acquire(&s->next);
		if (!next)
			return 0;
		seg_retire(q, s, next);
		s = next;
	}
	return ld_acquire(&s->slot[q->idx].ready) != 0;
}

static int seg_pop(struct segq *q, struct mpsc_msg *out)
{
	if (!seg_ready(q))
		return 0;
	*out = q->head->slot[q->idx++].msg;
	return 1;
}

static void seg_destroy(struct segq *q)
{
	struct seg *s = q->head;
	while (s) {
		struct seg *next = s->next;
		free(s);
		s = next;
	}
	seg_free_list(q->retired);
	seg_free_list(q->limbo);
}

/* ---- the server ------------------------------------------------------------ */

/* Bumped in every fork child; an mpsc started under an older value has no thread. */
static uint32_t fork_gen;
/* Serializes respawns in a fork child; held across fork() so none is copied half-done. */
static pthread_mutex_t respawn_mu = PTHREAD_MUTEX_INITIALIZER;

struct mpsc {
	uint32_t fork_gen; /* fork children this server was started in (see fork_gen) */
	int lockfree, zerocopy, batch;
	uint32_t capacity;
	locus_wait wait;
	pthread_t thread;
	struct ring ring; /* !lockfree */
	struct vyq vy;	  /* lockfree && zerocopy */
	struct segq seg;  /* lockfree && !zerocopy */
	struct sbuf out;  /* server only: dequeued elements */
	uint32_t sleeping
		__attribute__((aligned(LOCUS_CACHELINE))); /* park.h word of the server thread */
	uint32_t stop;
	/* Written by the server only, read by anyone (mpsc_stats), on a line of their own. */
	uint64_t polls __attribute__((aligned(LOCUS_CACHELINE)));
	uint64_t empty_polls, requests;
};

static struct mpsc_rec *rec_of(struct mpsc_link *l)
{
	return (struct mpsc_rec *)((char *)l - offsetof(struct mpsc_rec, qlink));
}

/* Dequeue up to max elements into m->out; returns how many. */
static size_t take(struct mpsc *m, size_t max)
{
	if (!m->lockfree)
		return ring_take(&m->ring, &m->out, max);
	size_t n = 0;
	while (n < max) {
		sbuf_reserve(&m->out, n + 1);
		if (m->zerocopy) {
			struct mpsc_link *l = vy_pop(&m->vy);
			if (!l)
				break;
			((struct mpsc_rec **)m->out.p)[n] = rec_of(l);
		} else if (!seg_pop(&m->seg, (struct mpsc_msg *)m->out.p + n)) {
			break;
		}
		n++;
	}
	return n;
}

static int queue_ready(struct mpsc *m)
{
	if (!m->lockfree)
		return ring_ready(&m->ring);
	return m->zerocopy ? vy_ready(&m->vy) : seg_ready(&m->seg);
}

/*
 * Run one request and answer it. It is counted before the answer is
 * released, so a client that has its result also sees it counted.
 */
static void serve(struct mpsc *m, const struct mpsc_msg *msg)
{
	struct mpsc_rec *rec = msg->rec;
	rec->ret = msg->fn(msg->state, msg->a, msg->b, msg->c);
	st_relaxed(&m->requests, m->requests + 1);
	/* The record is the client's again from here: touch nothing after this. */
	flag_release(&rec->flag, 1);
}

static void serve_all(struct mpsc *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (m->zerocopy)
			serve(m, &((struct mpsc_rec **)m->out.p)[i]->msg);
		else
			serve(m, &((struct mpsc_msg *)m->out.p)[i]);
	}
}

/* The server's reason to wake: a request, or the order to stop. */
static int should_wake(void *arg)
{
	struct mpsc *m = arg;
	return queue_ready(m) || ld_acquire(&m->stop);
}

/* Nothing to do: spin within the budget, then park (see the top of the file). */
static void server_idle(struct mpsc *m)
{
	park_wait(&m->sleeping, should_wake, m, &m->wait, 0);
}

static void *server_main(void *arg)
{
	struct mpsc *m = arg;
	size_t max = m->batch ? MPSC_BATCH_MAX : 1;
	struct serving_frame frame;
	serving_enter(&frame, m, 1);
	for (;;) {
		size_t n = take(m, max);
		st_relaxed(&m->polls, m->polls + 1);
		if (n) {
			serve_all(m, n);
			continue;
		}
		st_relaxed(&m->empty_polls, m->empty_polls + 1);
		/* Requests posted before close are in the queue by the time stop is seen. */
		if (ld_acquire(&m->stop)) {
			if (!queue_ready(m))
				break;
			continue;
		}
		server_idle(m);
	}
	serving_leave(&frame);
	return NULL;
}

void mpsc_stats(struct mpsc *m, struct mpsc_stats *out)
{
	out->polls = ld_relaxed(&m->polls);
	out->empty_polls = ld_relaxed(&m->empty_polls);
	out->requests = ld_relaxed(&m->requests);
}

/* After publishing: wake the server if, and only if, it is parked or about to be. */
static void wake_server(struct mpsc *m)
{
	park_wake(&m->sleeping);
}

void mpsc_opts_default(struct mpsc_opts *o)
{
	o->lockfree = 1;
	o->zerocopy = 1;
	o->wait = locus_wait_default();
	o->batch = 0;
	o->capacity = 64;
}

static int check_opts(const struct mpsc_opts *o, char *err, size_t errlen)
{
	if (o->wait.kind > LOCUS_WAIT_PARK) {
		snprintf(err, errlen, "mpsc: unknown wait policy %u", o->wait.kind);
		return -1;
	}
	if (o->capacity == 0 || o->capacity > MPSC_CAPACITY_MAX) {
		snprintf(err, errlen, "mpsc: capacity must be 1..%u, not %u", MPSC_CAPACITY_MAX,
			 o->capacity);
		return -1;
	}
	return 0;
}

static void queue_init(struct mpsc *m)
{
	if (!m->lockfree)
		ring_init(&m->ring, m->capacity, m->out.esz);
	else if (m->zerocopy)
		vy_init(&m->vy);
	else
		seg_init(&m->seg, m->capacity);
}

static void queue_destroy(struct mpsc *m)
{
	if (!m->lockfree)
		ring_destroy(&m->ring);
	else if (!m->zerocopy)
		seg_destroy(&m->seg);
}

struct mpsc *mpsc_open(const struct mpsc_opts *o, char *err, size_t errlen)
{
	struct mpsc_opts def;
	if (!o) {
		mpsc_opts_default(&def);
		o = &def;
	}
	if (check_opts(o, err, errlen))
		return NULL;
	struct mpsc *m = aligned_alloc(LOCUS_CACHELINE, (sizeof(*m) + LOCUS_CACHELINE - 1) &
								~(size_t)(LOCUS_CACHELINE - 1));
	if (!m) {
		snprintf(err, errlen, "mpsc: out of memory");
		return NULL;
	}
	memset(m, 0, sizeof(*m));
	sync_fork_register();
	m->fork_gen = ld_relaxed(&fork_gen);
	m->lockfree = !!o->lockfree;
	m->zerocopy = !!o->zerocopy;
	m->batch = !!o->batch;
	m->capacity = o->capacity;
	m->wait = o->wait;
	m->out.esz = m->zerocopy ? sizeof(struct mpsc_rec *) : sizeof(struct mpsc_msg);
	queue_init(m);
	int rc = pthread_create(&m->thread, NULL, server_main, m);
	if (rc != 0) {
		snprintf(err, errlen, "mpsc: cannot start the server thread: %s", strerror(rc));
		queue_destroy(m);
		free(m);
		return NULL;
	}
	return m;
}

void mpsc_close(struct mpsc *m)
{
	if (!m)
		return;
	if (m->fork_gen != ld_relaxed(&fork_gen)) {
		/* Inherited by a fork child and never used there: no thread to stop, and
		   the queue may be half-linked. */
		free(m);
		return;
	}
	st_release(&m->stop, 1);
	wake_server(m);
	pthread_join(m->thread, NULL);
	queue_destroy(m);
	free(m->out.p);
	free(m);
}

/* In a fork child, the first use of an inherited mpsc: a fresh queue and server. */
static void respawn(struct mpsc *m)
{
	pthread_mutex_lock(&respawn_mu);
	if (m->fork_gen != ld_relaxed(&fork_gen)) {
		/* The old queue may hold other threads' requests, half-linked: drop it. */
		queue_init(m);
		m->stop = 0;
		m->sleeping = 0;
		int rc = pthread_create(&m->thread, NULL, server_main, m);
		if (rc != 0)
			sync_die("mpsc: cannot restart the server thread after fork: %s",
				 strerror(rc));
		st_release(&m->fork_gen, ld_relaxed(&fork_gen));
	}
	pthread_mutex_unlock(&respawn_mu);
}

void mpsc_fork_prepare(void)
{
	pthread_mutex_lock(&respawn_mu);
}

void mpsc_fork_parent(void)
{
	pthread_mutex_unlock(&respawn_mu);
}

void mpsc_fork_child(void)
{
	pthread_mutex_init(&respawn_mu, NULL);
	st_relaxed(&fork_gen, fork_gen + 1);
}

/* ---- the client ------------------------------------------------------------ */

/* A thread's records: free ones, and posted ones in post order. */
static LOCUS_TLS struct {
	struct mpsc_rec *free;
	struct mpsc_rec *first, *last; /* in flight */
} me;

/* At thread exit (thread_exit.h), after the drain has completed its posts: free its records. */
static void client_forget(void)
{
	struct mpsc_rec *r = me.free;
	me.free = NULL;
	while (r) {
		struct mpsc_rec *next = r->next;
		free(r);
		r = next;
	}
}

static struct mpsc_rec *rec_get(void)
{
	struct mpsc_rec *r = me.free;
	if (r) {
		me.free = r->next;
		return r;
	}
	/* A thread with records: drain and free them at its exit. */
	sync_exit_arm(EXIT_DRAIN, locus_cs_drain);
	sync_exit_arm(EXIT_MPSC, client_forget);
	return sync_aligned_zalloc(LOCUS_CACHELINE, sizeof(*r), "mpsc request record");
}

static void rec_put(struct mpsc_rec *r)
{
	r->next = me.free;
	me.free = r;
}

/* Hand the request to m's server; the result will arrive in r. */
static void submit(struct mpsc *m, struct mpsc_rec *r, locus_fn fn, void *state, uint64_t a,
		   uint64_t b, uint64_t c)
{
	struct mpsc_msg msg = {fn, state, a, b, c, r};
	if (__builtin_expect(ld_relaxed(&m->fork_gen) != ld_relaxed(&fork_gen), 0))
		respawn(m);
	flag_arm(&r->flag);
	r->wait = m->wait;
	if (m->zerocopy) {
		r->msg = msg;
		if (m->lockfree)
			vy_push(&m->vy, &r->qlink);
		else
			ring_put(&m->ring, &r);
	} else if (m->lockfree) {
		seg_put(&m->seg, &msg);
	} else {
		ring_put(&m->ring, &msg);
	}
	/* A spinning server never parks, so there is nobody to wake. */
	if (m->wait.kind != LOCUS_WAIT_SPIN)
		wake_server(m);
}

/*
 * The oldest in-flight record is complete: unlink and recycle it, then run
 * its callback. Unlinking first lets the callback post or drain.
 */
static void finish_first(void)
{
	struct mpsc_rec *r = me.first;
	me.first = r->next;
	if (!me.first)
		me.last = NULL;
	locus_cb cb = r->cb;
	void *ctx = r->ctx;
	uint64_t ret = r->ret;
	rec_put(r);
	if (cb)
		cb(ctx, ret);
}

/* Run the callbacks of the oldest posts that have completed, without waiting. */
static void reap(void)
{
	while (me.first && ld_acquire(&me.first->flag) < FLAG_WAIT)
		finish_first();
}

uint64_t mpsc_run(struct mpsc *m, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
{
	/* A section of this server's own: the request would wait for itself. */
	if (sync_serving && serving_is(m))
		return fn(state, a, b, c);
	struct mpsc_rec *r = rec_get();
	submit(m, r, fn, state, a, b, c);
	flag_wait(&r->flag, &m->wait);
	uint64_t ret = r->ret;
	rec_put(r);
	/* FIFO: this thread's earlier posts to m are done too; answer them now. */
	reap();
	return ret;
}

int mpsc_post(struct mpsc *m, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c,
	      locus_cb cb, void *ctx)
{
	if (sync_serving) {
		/* In place on our own server; completed now on any server's thread,
		   which never drains. */
		int own = serving_is(m);
		if (own || serving_on_server()) {
			uint64_t ret = own ? fn(state, a, b, c) : mpsc_run(m, fn, state, a, b, c);
			if (cb)
				cb(ctx, ret);
			return 0;
		}
	}
	reap();
	struct mpsc_rec *r = rec_get();
	r->cb = cb;
	r->ctx = ctx;
	r->next = NULL;
	if (me.last)
		me.last->next = r;
	else
		me.first = r;
	me.last = r;
	submit(m, r, fn, state, a, b, c);
	return 0;
}

int mpsc_drain_thread(void)
{
	int had = me.first != NULL;
	while (me.first) {
		flag_wait(&me.first->flag, &me.first->wait);
		finish_first();
	}
	return had;
}
