/*
 * locus-bench fetchadd: one measurement. T threads start together, each
 * repeatedly picks one of V counters at random and increments it through the
 * mechanism, until the main thread raises the stop flag D seconds later.
 *
 * Locking is per counter (fine-grained): an executor is opened per counter,
 * and each lock-based peer has one lock per counter. With V = 1 every thread
 * fights for one line; with large V collisions are rare and what is left is
 * the cost of the mechanism itself.
 *
 * On an asynchronous executor (locus_cs_is_async) an operation is a post
 * without callback, and each thread drains its posts after it sees the stop
 * flag: the interval ends when the last thread has drained, so every
 * operation counted completed inside it. With --sync it is a run, which
 * posts and waits for the result.
 *
 * --latency: every latency_every-th operation (--latency-every) is timed with
 * CLOCK_MONOTONIC (vDSO, about 20 ns a read here): a synchronous call from
 * before to after it; a post from before it to its callback, which carries
 * the post time in its ctx. Samples go to a per-thread buffer, allocated and
 * touched before the start so no page fault lands in a sample; a thread
 * stops sampling when its buffer is full. Their mean and median are also
 * given in TSC cycles: times the TSC's ticks per ns over the run (rdtsc at
 * its start and end), which is what rdtsc around each sample would read,
 * without a second clock in the loop.
 *
 * Response readiness (seed 002 Figures 5, 12, 13): each thread's
 * locus_cs_client_stats before and after its loop, summed; the library counts
 * it per thread, so the loop pays nothing for it here.
 */
#include "fetchadd.h"

#include <ck_spinlock.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "common/atomic.h"
#include "common/clock.h"
#include "locus/cs.h"
#include "locus/delegate.h"
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

enum kind { KIND_CS, KIND_POST, KIND_ATOMIC, KIND_CK_TICKET, KIND_CK_MCS, KIND_PTHREAD_SPIN };

/* A peer's lock, on its own line like the counter it guards (as an executor's lock is). */
struct peer_lock {
	_Alignas(LOCUS_CACHELINE) union {
		ck_spinlock_ticket_t ticket;
		ck_spinlock_mcs_t mcs;
		pthread_spinlock_t spin;
	} u;
};

#define SAMPLES_MIN 4096u /* --latency: per thread, however many threads */

/* Everything the threads of one measurement share; read-only once they run, but stop. */
struct bench {
	enum kind kind;
	size_t vars;
	uint64_t delay;
	locus_fn fn;
	int sqrt_fn; /* fn is fetchadd_sqrt (peer:atomic does its share of the work) */
	int latency;
	size_t sample_cap; /* per thread */
	struct fetchadd_slot *slot;
	locus_cs **cs;		/* KIND_CS: one per counter */
	struct peer_lock *lock; /* lock-based peers: one per counter */
	int own_servers;	/* each executor has its own server thread (mpsc) */
	uint64_t section_ns;	/* the fn's second argument: fetchadd_slow's length */
	unsigned every;		/* --latency: one operation in this many is timed */
	pthread_barrier_t start;
	/* On its own line: every thread reads it every operation; only main writes it, once. */
	_Alignas(LOCUS_CACHELINE) int stop; /* relaxed atomic */
};

struct worker {
	_Alignas(LOCUS_CACHELINE) struct bench *b;
	unsigned index;
	uint64_t ops;
	uint64_t failures; /* posts that returned nonzero */
	double end;	   /* when this thread saw the stop flag (and had drained) */
	uint64_t *samples; /* --latency: ns each; a post's slot holds its post time until done */
	size_t nsamples;
	struct locus_cs_client_stats polls; /* what this thread's client polls found, this run */
	pthread_t tid;
};

static int peer_index(const char *name)
{
	int i;

	for (i = 0; fetchadd_peers[i]; i++)
		if (strcmp(name, fetchadd_peers[i]) == 0)
			return i;
	return -1;
}

/* --delay: work outside the critical section, so that threads do not only contend. */
static inline void think(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		cpu_relax();
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

/* Each op returns 0 when the increment was done (or, for a post, will be). */
static int op_cs(struct bench *b, size_t i)
{
	locus_cs_run(b->cs[i], b->fn, 1, b->section_ns, 0);
	return 0;
}

static int op_post(struct bench *b, size_t i)
{
	return locus_cs_post(b->cs[i], b->fn, 1, b->section_ns, 0, NULL, NULL);
}

static int op_atomic(struct bench *b, size_t i)
{
	/* Relaxed: only the final count matters, and joining the threads publishes it. */
	uint64_t v = aaf_relaxed(&b->slot[i].v, 1);

	if (b->sqrt_fn)
		fetchadd_sqrt_after(&b->slot[i], v);
	return 0;
}

/*
 * The lock-based peers call the critical section through the same pointer the
 * executors are given, so that both pay for the same out-of-line, indirect call.
 */
static int op_ck_ticket(struct bench *b, size_t i)
{
	ck_spinlock_ticket_lock(&b->lock[i].u.ticket);
	b->fn(&b->slot[i], 1, b->section_ns, 0);
	ck_spinlock_ticket_unlock(&b->lock[i].u.ticket);
	return 0;
}

static int op_ck_mcs(struct bench *b, size_t i)
{
	ck_spinlock_mcs_context_t node;

	ck_spinlock_mcs_lock(&b->lock[i].u.mcs, &node);
	b->fn(&b->slot[i], 1, b->section_ns, 0);
	ck_spinlock_mcs_unlock(&b->lock[i].u.mcs, &node);
	return 0;
}

static int op_pthread_spin(struct bench *b, size_t i)
{
	pthread_spin_lock(&b->lock[i].u.spin);
	b->fn(&b->slot[i], 1, b->section_ns, 0);
	pthread_spin_unlock(&b->lock[i].u.spin);
	return 0;
}

/* A sampled post's callback: its ctx is the sample slot, holding the post time. */
static void post_done(void *ctx, uint64_t result)
{
	uint64_t *slot = ctx;

	(void)result;
	*slot = mono_ns() - *slot;
}

/* One operation timed into the thread's next sample slot. */
static inline __attribute__((always_inline)) int
sampled(struct worker *w, int (*op)(struct bench *, size_t), int post, size_t i)
{
	uint64_t *slot = &w->samples[w->nsamples++];
	uint64_t t0;
	int r;

	if (post) {
		*slot = mono_ns();
		return locus_cs_post(w->b->cs[i], w->b->fn, 1, w->b->section_ns, 0, post_done,
				     slot);
	}
	t0 = mono_ns();
	r = op(w->b, i);
	*slot = mono_ns() - t0;
	return r;
}

/*
 * The measured loop. Inlined into one copy per mechanism and per latency
 * mode, with op, post and lat constants, so that no mechanism pays for an
 * indirect call or a test the others do not, and without --latency nothing
 * is paid for it.
 */
static inline __attribute__((always_inline)) void
loop(struct worker *w, int (*op)(struct bench *, size_t), int post, int lat)
{
	struct bench *b = w->b;
	uint64_t rng = seed_for(w->index), ops = 0, failures = 0;

	while (!ld_relaxed(&b->stop)) {
		size_t i = pick(&rng, b->vars);
		int r;

		if (lat && (ops + failures) % b->every == 0 && w->nsamples < b->sample_cap)
			r = sampled(w, op, post, i);
		else
			r = op(b, i);
		if (r)
			failures++;
		else
			ops++;
		think(b->delay);
	}
	if (post)
		locus_cs_drain();
	w->ops = ops;
	w->failures = failures;
}

#define LOOP(w, op, post) ((w)->b->latency ? loop(w, op, post, 1) : loop(w, op, post, 0))

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bench *b = w->b;
	struct locus_cs_client_stats before, after;

	/* Touch the sample buffer now: a page fault would otherwise land in a sample. */
	if (w->samples)
		memset(w->samples, 0, b->sample_cap * sizeof(*w->samples));
	locus_cs_client_stats(&before);
	pthread_barrier_wait(&b->start);
	switch (b->kind) {
	case KIND_CS:
		LOOP(w, op_cs, 0);
		break;
	case KIND_POST:
		LOOP(w, op_post, 1);
		break;
	case KIND_ATOMIC:
		LOOP(w, op_atomic, 0);
		break;
	case KIND_CK_TICKET:
		LOOP(w, op_ck_ticket, 0);
		break;
	case KIND_CK_MCS:
		LOOP(w, op_ck_mcs, 0);
		break;
	case KIND_PTHREAD_SPIN:
		LOOP(w, op_pthread_spin, 0);
		break;
	}
	w->end = bench_now();
	locus_cs_client_stats(&after);
	w->polls.polled = after.polled - before.polled;
	w->polls.ready = after.ready - before.ready;
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

static int open_executors(struct bench *b, const char *spec, int sync, struct fetchadd_result *r)
{
	b->cs = calloc(b->vars, sizeof(*b->cs));
	if (!b->cs) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory for %zu executors",
			 b->vars);
		return -1;
	}
	for (size_t i = 0; i < b->vars; i++) {
		b->cs[i] = locus_cs_open(spec, &b->slot[i]);
		if (!b->cs[i]) {
			snprintf(r->out.err, sizeof(r->out.err), "opening executor %zu of %zu: %s",
				 i + 1, b->vars, locus_cs_error());
			return -1;
		}
	}
	snprintf(r->spec, sizeof(r->spec), "%s", locus_cs_spec(b->cs[0]));
	if (locus_cs_is_async(b->cs[0]) && !sync)
		b->kind = KIND_POST;
	r->posted = b->kind == KIND_POST;
	/* The runtime starts with the first delegation executor; 0 if none was opened.
	   Without it, an executor that still has a server (mpsc) has one of its own. */
	struct locus_cs_server_stats st;
	r->servers = locus_delegate_servers();
	b->own_servers = r->servers == 0 && locus_cs_server_stats(b->cs[0], &st) == 0;
	if (b->own_servers)
		r->servers = b->vars > UINT32_MAX ? UINT32_MAX : (unsigned)b->vars;
	r->delegated = r->servers > 0 || locus_cs_is_async(b->cs[0]);
	return 0;
}

static int setup(struct bench *b, const struct fetchadd_params *p, struct fetchadd_result *r)
{
	static const enum kind peer_kinds[] = {KIND_ATOMIC, KIND_CK_TICKET, KIND_CK_MCS,
					       KIND_PTHREAD_SPIN};
	int peer = peer_index(p->mechanism);

	b->vars = p->vars;
	b->delay = p->delay;
	b->fn = p->fn == FETCHADD_SQRT ? fetchadd_sqrt : fetchadd_inc;
	b->sqrt_fn = p->fn == FETCHADD_SQRT;
	b->section_ns = p->section_ns;
	if (b->section_ns)
		b->fn = fetchadd_slow;
	b->latency = p->latency;
	b->every = p->latency_every ? p->latency_every : FETCHADD_SAMPLE_EVERY;
	b->slot = aligned_alloc(LOCUS_CACHELINE, b->vars * sizeof(*b->slot));
	if (!b->slot) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory for %zu counters", b->vars);
		return -1;
	}
	memset(b->slot, 0, b->vars * sizeof(*b->slot));
	if (peer < 0) {
		b->kind = KIND_CS;
		return open_executors(b, p->mechanism, p->sync, r);
	}
	b->kind = peer_kinds[peer];
	snprintf(r->spec, sizeof(r->spec), "%s", p->mechanism);
	if (b->kind == KIND_ATOMIC)
		return 0;
	b->lock = aligned_alloc(LOCUS_CACHELINE, b->vars * sizeof(*b->lock));
	if (!b->lock) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory for %zu locks", b->vars);
		return -1;
	}
	init_peer_locks(b);
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* Jain's index of the threads' operation counts (1: all equal; 1/n: one thread did all). */
static double jain_index(const struct worker *w, unsigned threads)
{
	double sum = 0, squares = 0;

	for (unsigned i = 0; i < threads; i++) {
		sum += (double)w[i].ops;
		squares += (double)w[i].ops * (double)w[i].ops;
	}
	return squares > 0 ? sum * sum / ((double)threads * squares) : 0;
}

/* Merge every thread's samples and summarize them into r (nearest-rank percentiles). */
static int summarize_latency(const struct worker *w, unsigned threads, struct fetchadd_result *r)
{
	size_t n = 0, k = 0;
	uint64_t *all;
	double sum = 0;

	for (unsigned i = 0; i < threads; i++)
		n += w[i].nsamples;
	r->lat_samples = n;
	if (n == 0)
		return 0;
	all = malloc(n * sizeof(*all));
	if (!all) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory for %zu latency samples",
			 n);
		return -1;
	}
	for (unsigned i = 0; i < threads; i++) {
		memcpy(all + k, w[i].samples, w[i].nsamples * sizeof(*all));
		k += w[i].nsamples;
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)all[i];
	r->lat_mean = sum / (double)n;
	r->lat_median = (double)all[(n - 1) / 2];
	r->lat_p99 = (double)all[(size_t)ceil(0.99 * (double)n) - 1];
	r->lat_max = (double)all[n - 1];
	if (r->tsc_ghz > 0) {
		r->lat_mean_cycles = r->lat_mean * r->tsc_ghz;
		r->lat_median_cycles = r->lat_median * r->tsc_ghz;
	}
	free(all);
	return 0;
}

static int alloc_samples(struct bench *b, struct worker *w, unsigned threads,
			 struct fetchadd_result *r)
{
	size_t cap = FETCHADD_SAMPLES_TOTAL / threads;

	if (cap > FETCHADD_SAMPLES_PER_THREAD)
		cap = FETCHADD_SAMPLES_PER_THREAD;
	if (cap < SAMPLES_MIN)
		cap = SAMPLES_MIN;
	b->sample_cap = cap;
	for (unsigned i = 0; i < threads; i++) {
		w[i].samples = malloc(cap * sizeof(*w[i].samples));
		if (!w[i].samples) {
			snprintf(r->out.err, sizeof(r->out.err),
				 "out of memory for %zu latency samples per thread", cap);
			return -1;
		}
	}
	return 0;
}

/* Per server: the delegation runtime's, or each executor's own (mpsc: its waits). */
static void server_stats(const struct bench *b, struct fetchadd_result *r)
{
	for (unsigned i = 0; i < r->servers && i < FETCHADD_MAX_SERVERS; i++) {
		struct locus_delegate_stats st;
		struct locus_cs_server_stats own;

		if (b->own_servers && locus_cs_server_stats(b->cs[i], &own) == 0) {
			r->server_requests[i] = own.requests;
			r->server_sleeps[i] = own.empty_polls;
		} else if (!b->own_servers && locus_delegate_stats(i, &st) == 0) {
			r->server_requests[i] = st.requests;
			r->server_sleeps[i] = st.sleeps;
		}
	}
}

/*
 * Start the threads, let them run for the duration, stop and join them.
 * On a failed pthread_create the started threads stay blocked at the barrier:
 * this runs in a child process that exits right after, which ends them.
 */
static int run_threads(struct bench *b, unsigned threads, double duration,
		       struct fetchadd_result *r)
{
	struct worker *w = aligned_alloc(LOCUS_CACHELINE, threads * sizeof(*w));
	double start, end = 0, tsc_t1;
	uint64_t tsc0, tsc1;
	unsigned i;
	int err;

	if (!w) {
		snprintf(r->out.err, sizeof(r->out.err), "out of memory for %u threads", threads);
		return -1;
	}
	for (i = 0; i < threads; i++)
		w[i] = (struct worker){.b = b, .index = i};
	if (b->latency && alloc_samples(b, w, threads, r))
		return -1;
	pthread_barrier_init(&b->start, NULL, threads + 1);
	for (i = 0; i < threads; i++) {
		err = pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
		if (err) {
			snprintf(r->out.err, sizeof(r->out.err), "starting thread %u of %u: %s",
				 i + 1, threads, strerror(err));
			return -1;
		}
	}
	pthread_barrier_wait(&b->start);
	tsc0 = bench_tsc();
	start = bench_now();
	bench_sleep_until(start + duration);
	st_relaxed(&b->stop, 1);
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].tid, NULL);
		r->ops += w[i].ops;
		r->post_failures += w[i].failures;
		r->polled += w[i].polls.polled;
		r->ready += w[i].polls.ready;
		if (w[i].end > end)
			end = w[i].end;
	}
	tsc1 = bench_tsc();
	tsc_t1 = bench_now();
	r->seconds = end - start;
	r->tsc_ghz = tsc1 > tsc0 && tsc_t1 > start
			     ? (double)(tsc1 - tsc0) / ((tsc_t1 - start) * NS_PER_S)
			     : 0;
	pthread_barrier_destroy(&b->start);
	server_stats(b, r);
	r->jain = jain_index(w, threads);
	err = b->latency ? summarize_latency(w, threads, r) : 0;
	for (i = 0; i < threads; i++)
		free(w[i].samples);
	free(w);
	return err;
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
		r->out.ok = 1;
	}
	teardown(&b);
}
