/*
 * locus-bench fetchadd: one measurement. T threads start together, each
 * repeatedly picks one of V counters at random and increments it through the
 * mechanism, until the main thread raises the stop flag D seconds later.
 *
 * Locking is per counter (fine-grained): an executor is opened per counter,
 * and each lock-based peer has one lock per counter. With V = 1 every thread
 * fights for one line; with large V collisions are rare and what is left is
 * the cost of the mechanism itself.
 */
#include "fetchadd.h"

#include <ck_spinlock.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "locus/cs.h"
#include "locus/wait.h"

const char *const fetchadd_peers[] = {
	"peer:atomic", "peer:ck_ticket", "peer:ck_mcs", "peer:pthread_spin", NULL,
};

const char *const fetchadd_peer_help[] = {
	"__atomic_fetch_add on the counter, no lock: the ceiling for every mechanism",
	"Concurrency Kit ticket spinlock (ck_spinlock_ticket_t), one per counter; spins only",
	"Concurrency Kit MCS lock (ck_spinlock_mcs_t), queue node on the stack; spins only",
	"glibc pthread_spinlock_t, one per counter; spins only",
};

enum kind { KIND_CS, KIND_ATOMIC, KIND_CK_TICKET, KIND_CK_MCS, KIND_PTHREAD_SPIN };

/* A peer's lock, on its own line like the counter it guards (as an executor's lock is). */
struct peer_lock {
	_Alignas(64) union {
		ck_spinlock_ticket_t ticket;
		ck_spinlock_mcs_t mcs;
		pthread_spinlock_t spin;
	} u;
};

/* Everything the threads of one measurement share; read-only once they run, but stop. */
struct bench {
	enum kind kind;
	size_t vars;
	uint64_t delay;
	struct fetchadd_slot *slot;
	locus_cs **cs;		/* KIND_CS: one per counter */
	struct peer_lock *lock; /* lock-based peers: one per counter */
	pthread_barrier_t start;
	/* On its own line: every thread reads it every operation; only main writes it, once. */
	_Alignas(64) atomic_int stop;
};

struct worker {
	_Alignas(64) struct bench *b;
	unsigned index;
	uint64_t ops;
	double end; /* when this thread saw the stop flag */
	pthread_t tid;
};

int fetchadd_is_peer(const char *name)
{
	return strncmp(name, "peer:", 5) == 0;
}

static int peer_index(const char *name)
{
	int i;

	for (i = 0; fetchadd_peers[i]; i++)
		if (strcmp(name, fetchadd_peers[i]) == 0)
			return i;
	return -1;
}

int fetchadd_peer_known(const char *name)
{
	return peer_index(name) >= 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
	struct timespec ts = {.tv_sec = (time_t)t};

	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec > 999999999)
		ts.tv_nsec = 999999999;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

/* --delay: work outside the critical section, so that threads do not only contend. */
static inline void think(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		locus_cpu_relax();
}

/* splitmix64: turns the thread index into a well-mixed, nonzero xorshift seed. */
static uint64_t seed_for(unsigned index)
{
	uint64_t z = (uint64_t)index * 0x9e3779b97f4a7c15ull + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

/* xorshift64*: a few cycles per number, so the PRNG does not dilute the figures. */
static inline uint64_t next_random(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n) by multiply-and-shift: no division in the loop. */
static inline size_t pick(uint64_t *s, size_t n)
{
	return (size_t)(((unsigned __int128)next_random(s) * n) >> 64);
}

static void op_cs(struct bench *b, size_t i)
{
	locus_cs_run(b->cs[i], fetchadd_inc, 1, 0, 0);
}

/* The lock-based peers call the same out-of-line fetchadd_inc as the executors. */
static void op_atomic(struct bench *b, size_t i)
{
	/* Relaxed: only the final count matters, and joining the threads publishes it. */
	__atomic_fetch_add(&b->slot[i].v, 1, __ATOMIC_RELAXED);
}

static void op_ck_ticket(struct bench *b, size_t i)
{
	ck_spinlock_ticket_lock(&b->lock[i].u.ticket);
	fetchadd_inc(&b->slot[i], 1, 0, 0);
	ck_spinlock_ticket_unlock(&b->lock[i].u.ticket);
}

static void op_ck_mcs(struct bench *b, size_t i)
{
	ck_spinlock_mcs_context_t node;

	ck_spinlock_mcs_lock(&b->lock[i].u.mcs, &node);
	fetchadd_inc(&b->slot[i], 1, 0, 0);
	ck_spinlock_mcs_unlock(&b->lock[i].u.mcs, &node);
}

static void op_pthread_spin(struct bench *b, size_t i)
{
	pthread_spin_lock(&b->lock[i].u.spin);
	fetchadd_inc(&b->slot[i], 1, 0, 0);
	pthread_spin_unlock(&b->lock[i].u.spin);
}

/*
 * The measured loop. Inlined into one copy per mechanism, with op a constant,
 * so that no mechanism pays for an indirect call the others do not.
 */
static inline __attribute__((always_inline)) uint64_t loop(struct bench *b, unsigned index,
							   void (*op)(struct bench *, size_t))
{
	uint64_t rng = seed_for(index), ops = 0;

	while (!atomic_load_explicit(&b->stop, memory_order_relaxed)) {
		op(b, pick(&rng, b->vars));
		ops++;
		think(b->delay);
	}
	return ops;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bench *b = w->b;

	pthread_barrier_wait(&b->start);
	switch (b->kind) {
	case KIND_CS:
		w->ops = loop(b, w->index, op_cs);
		break;
	case KIND_ATOMIC:
		w->ops = loop(b, w->index, op_atomic);
		break;
	case KIND_CK_TICKET:
		w->ops = loop(b, w->index, op_ck_ticket);
		break;
	case KIND_CK_MCS:
		w->ops = loop(b, w->index, op_ck_mcs);
		break;
	case KIND_PTHREAD_SPIN:
		w->ops = loop(b, w->index, op_pthread_spin);
		break;
	}
	w->end = now();
	return NULL;
}

static void init_peer_locks(struct bench *b)
{
	for (size_t i = 0; i < b->vars; i++) {
		switch (b->kind) {
		case KIND_CK_TICKET:
			ck_spinlock_ticket_init(&b->lock[i].u.ticket);
			break;
		case KIND_CK_MCS:
			ck_spinlock_mcs_init(&b->lock[i].u.mcs);
			break;
		case KIND_PTHREAD_SPIN:
			pthread_spin_init(&b->lock[i].u.spin, PTHREAD_PROCESS_PRIVATE);
			break;
		default:
			break;
		}
	}
}

static int open_executors(struct bench *b, const char *spec, struct fetchadd_result *r)
{
	b->cs = calloc(b->vars, sizeof(*b->cs));
	if (!b->cs) {
		snprintf(r->err, sizeof(r->err), "out of memory for %zu executors", b->vars);
		return -1;
	}
	for (size_t i = 0; i < b->vars; i++) {
		b->cs[i] = locus_cs_open(spec, &b->slot[i]);
		if (!b->cs[i]) {
			snprintf(r->err, sizeof(r->err), "opening executor %zu of %zu: %s", i + 1,
				 b->vars, locus_cs_error());
			return -1;
		}
	}
	snprintf(r->spec, sizeof(r->spec), "%s", locus_cs_spec(b->cs[0]));
	return 0;
}

static int setup(struct bench *b, const struct fetchadd_params *p, struct fetchadd_result *r)
{
	static const enum kind peer_kinds[] = {KIND_ATOMIC, KIND_CK_TICKET, KIND_CK_MCS,
					       KIND_PTHREAD_SPIN};
	int peer = peer_index(p->mechanism);

	b->vars = p->vars;
	b->delay = p->delay;
	b->slot = aligned_alloc(64, b->vars * sizeof(*b->slot));
	if (!b->slot) {
		snprintf(r->err, sizeof(r->err), "out of memory for %zu counters", b->vars);
		return -1;
	}
	memset(b->slot, 0, b->vars * sizeof(*b->slot));
	if (peer < 0) {
		b->kind = KIND_CS;
		return open_executors(b, p->mechanism, r);
	}
	b->kind = peer_kinds[peer];
	snprintf(r->spec, sizeof(r->spec), "%s", p->mechanism);
	if (b->kind == KIND_ATOMIC)
		return 0;
	b->lock = aligned_alloc(64, b->vars * sizeof(*b->lock));
	if (!b->lock) {
		snprintf(r->err, sizeof(r->err), "out of memory for %zu locks", b->vars);
		return -1;
	}
	init_peer_locks(b);
	return 0;
}

/*
 * Start the threads, let them run for the duration, stop and join them.
 * On a failed pthread_create the started threads stay blocked at the barrier:
 * this runs in a child process that exits right after, which ends them.
 */
static int run_threads(struct bench *b, unsigned threads, double duration,
		       struct fetchadd_result *r)
{
	struct worker *w = aligned_alloc(64, threads * sizeof(*w));
	double start, end = 0;
	unsigned i;
	int err;

	if (!w) {
		snprintf(r->err, sizeof(r->err), "out of memory for %u threads", threads);
		return -1;
	}
	pthread_barrier_init(&b->start, NULL, threads + 1);
	for (i = 0; i < threads; i++) {
		w[i] = (struct worker){.b = b, .index = i};
		err = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
		if (err) {
			snprintf(r->err, sizeof(r->err), "starting thread %u of %u: %s", i + 1,
				 threads, strerror(err));
			return -1;
		}
	}
	pthread_barrier_wait(&b->start);
	start = now();
	sleep_until(start + duration);
	atomic_store_explicit(&b->stop, 1, memory_order_relaxed);
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		r->ops += w[i].ops;
		if (w[i].end > end)
			end = w[i].end;
	}
	r->seconds = end - start;
	pthread_barrier_destroy(&b->start);
	free(w);
	return 0;
}

static void teardown(struct bench *b)
{
	if (b->cs)
		for (size_t i = 0; i < b->vars && b->cs[i]; i++)
			locus_cs_close(b->cs[i]);
	if (b->kind == KIND_PTHREAD_SPIN && b->lock)
		for (size_t i = 0; i < b->vars; i++)
			pthread_spin_destroy(&b->lock[i].u.spin);
	free(b->cs);
	free(b->lock);
	free(b->slot);
}

void fetchadd_measure(const struct fetchadd_params *p, struct fetchadd_result *r)
{
	struct bench b = {0};

	memset(r, 0, sizeof(*r));
	if (setup(&b, p, r) == 0 && run_threads(&b, p->threads, p->duration, r) == 0) {
		for (size_t i = 0; i < b.vars; i++)
			r->sum += b.slot[i].v;
		r->ok = 1;
	}
	teardown(&b);
}

int fetchadd_check_spec(const char *spec, char *canonical, size_t cap, char *err, size_t errlen)
{
	struct fetchadd_slot slot = {0};
	locus_cs *cs = locus_cs_open(spec, &slot);

	if (!cs) {
		snprintf(err, errlen, "%s", locus_cs_error());
		return -1;
	}
	snprintf(canonical, cap, "%s", locus_cs_spec(cs));
	locus_cs_close(cs);
	return 0;
}
