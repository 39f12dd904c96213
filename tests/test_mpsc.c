/*
 * mpsc: the server thread fed by one queue (src/sync/mpsc.c), tested below
 * the executor so that every queue (locked ring / lock-free; zero- / single-
 * copy), every waiting policy and batch mode is covered, with an initial
 * capacity of 2 so that every queue has to grow.
 *
 * Stress: threads alternate run and post on a section that moves a unit
 * between two counters and returns the old count; the result must be that
 * of a serial execution, every count returned once, each thread's results in
 * its own order (the queue is FIFO), every callback run once on its thread.
 * Lifetime: a thread that exits with posts in flight runs their callbacks at
 * exit; close completes every request posted before it, even those whose
 * posting threads have not drained yet.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/mpsc.h"
#include "testutil.h"

#define NCONFIGS 24
#define HANG_S	 (60 * TEST_SLOWDOWN)

static const int thread_counts[] = {1, 2, 4, 8, 16};
#define NTHREAD_COUNTS ((int)(sizeof thread_counts / sizeof thread_counts[0]))

/* The seed's spin-then-block, blocking and spinning. */
static const uint32_t wait_kinds[] = {LOCUS_WAIT_SPINPARK, LOCUS_WAIT_PARK, LOCUS_WAIT_SPIN};

/* Config i: every combination of lockfree, zerocopy, batch and wait. */
static struct mpsc_opts config(int i)
{
	struct mpsc_opts o;
	mpsc_opts_default(&o);
	o.lockfree = i & 1;
	o.zerocopy = (i >> 1) & 1;
	o.batch = (i >> 2) & 1;
	o.wait.kind = wait_kinds[i >> 3];
	o.capacity = 2;
	return o;
}

static const char *config_name(int i)
{
	static char buf[96];
	struct mpsc_opts o = config(i);
	snprintf(buf, sizeof buf, "%s,%s,%s,%s", o.lockfree ? "lockfree" : "locked",
		 o.zerocopy ? "zerocopy" : "singlecopy", o.batch ? "batch" : "single",
		 locus_wait_name(&o.wait));
	return buf;
}

static struct mpsc *open_config(int i)
{
	char err[256] = "";
	struct mpsc_opts o = config(i);
	struct mpsc *m = mpsc_open(&o, err, sizeof err);
	ck_assert_msg(m != NULL, "%s: mpsc_open failed: %s", config_name(i), err);
	return m;
}

/* ---- the critical section ------------------------------------------------- */

struct cs_state {
	uint64_t from, to, total;
	uint64_t count;
	uint64_t torn; /* sections that found from + to != total on entry */
};

/* b: nonzero moves a unit back from `to` to `from`. Returns the count before. */
static uint64_t move_unit(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct cs_state *s = state;
	if (s->from + s->to != s->total)
		s->torn++;
	if (b) {
		s->to--;
		s->from++;
	} else {
		s->from--;
		s->to++;
	}
	return s->count++;
}

static void cs_init(struct cs_state *s)
{
	memset(s, 0, sizeof *s);
	s->from = s->to = 1u << 20;
	s->total = 2u << 20;
}

static void check_state(const struct cs_state *s, uint64_t expected, const char *what)
{
	ck_assert_msg(s->torn == 0, "%s: %llu sections saw from+to != total", what,
		      (unsigned long long)s->torn);
	ck_assert_msg(s->from + s->to == s->total, "%s: from+to = %llu, expected %llu", what,
		      (unsigned long long)(s->from + s->to), (unsigned long long)s->total);
	ck_assert_msg(s->count == expected, "%s: count = %llu, expected %llu", what,
		      (unsigned long long)s->count, (unsigned long long)expected);
}

/* ---- per-thread bookkeeping ------------------------------------------------ */

struct worker;

struct cb_arg {
	struct worker *w;
	uint32_t index;
};

struct worker {
	pthread_t th;
	pthread_t self; /* set by the thread itself */
	struct mpsc *m;
	struct cs_state *st;
	pthread_barrier_t *start;
	uint32_t tid, n;
	uint64_t *results;
	uint32_t *calls; /* results that arrived, per op: must end at exactly 1 */
	uint32_t wrong_thread;
	struct cb_arg *args;
	/* lifetime tests */
	pthread_barrier_t *posted; /* all posts made (not drained) */
	pthread_barrier_t *closed; /* the mpsc is closed */
	uint32_t calls_at_close;   /* callbacks run before the close was known */
};

static void on_done(void *ctx, uint64_t result)
{
	struct cb_arg *arg = ctx;
	struct worker *w = arg->w;
	if (!pthread_equal(w->self, pthread_self()))
		w->wrong_thread++;
	w->results[arg->index] = result;
	w->calls[arg->index]++;
}

/* Deterministic per (thread, op): roughly one op in five moves a unit back. */
static uint64_t goes_back(uint32_t tid, uint32_t seq)
{
	uint32_t h = (tid + 1) * 2654435761u ^ (seq + 1) * 40503u;
	h ^= h >> 13;
	return (h % 5) == 0;
}

static void workers_alloc(struct worker *ws, int threads, uint32_t n, struct mpsc *m,
			  struct cs_state *st)
{
	for (int t = 0; t < threads; t++) {
		struct worker *w = &ws[t];
		memset(w, 0, sizeof *w);
		w->m = m;
		w->st = st;
		w->tid = (uint32_t)t;
		w->n = n;
		w->results = calloc(n, sizeof *w->results);
		w->calls = calloc(n, sizeof *w->calls);
		w->args = calloc(n, sizeof *w->args);
		ck_assert(w->results && w->calls && w->args);
	}
}

static void workers_free(struct worker *ws, int threads)
{
	for (int t = 0; t < threads; t++) {
		free(ws[t].results);
		free(ws[t].calls);
		free(ws[t].args);
	}
}

static void post_one(struct worker *w, uint32_t i)
{
	w->args[i] = (struct cb_arg){w, i};
	int rc =
		mpsc_post(w->m, move_unit, w->st, i, goes_back(w->tid, i), 0, on_done, &w->args[i]);
	ck_assert_int_eq(rc, 0);
}

/*
 * Every op answered once, on its thread, each of 0..expected-1 returned once,
 * and a thread's results increasing (its requests ran in its order).
 */
static void check_results(struct worker *ws, int threads, uint64_t expected, const char *what)
{
	uint8_t *seen = calloc(expected ? expected : 1, 1);
	ck_assert_ptr_nonnull(seen);
	for (int t = 0; t < threads; t++) {
		struct worker *w = &ws[t];
		ck_assert_msg(w->wrong_thread == 0, "%s: thread %d: %u callbacks on another thread",
			      what, t, w->wrong_thread);
		for (uint32_t i = 0; i < w->n; i++) {
			ck_assert_msg(w->calls[i] == 1, "%s: thread %d op %u answered %u times",
				      what, t, i, w->calls[i]);
			uint64_t r = w->results[i];
			ck_assert_msg(r < expected, "%s: thread %d op %u returned %llu >= %llu",
				      what, t, i, (unsigned long long)r,
				      (unsigned long long)expected);
			ck_assert_msg(!seen[r], "%s: value %llu returned twice", what,
				      (unsigned long long)r);
			seen[r] = 1;
			if (i > 0)
				ck_assert_msg(r > w->results[i - 1],
					      "%s: thread %d op %u returned %llu after %llu", what,
					      t, i, (unsigned long long)r,
					      (unsigned long long)w->results[i - 1]);
		}
	}
	free(seen);
}

static void join_all(struct worker *ws, int threads, const char *what)
{
	for (int t = 0; t < threads; t++) {
		int rc = test_join_within(ws[t].th, HANG_S);
		ck_assert_msg(rc == 0, "%s: thread %d did not finish within %d s", what, t, HANG_S);
	}
}

/* ---- stress: run and post alternating, then drain ------------------------- */

static void *stress_main(void *arg)
{
	struct worker *w = arg;
	w->self = pthread_self();
	pthread_barrier_wait(w->start);
	for (uint32_t i = 0; i < w->n; i++) {
		if (i % 2 == 0) {
			w->results[i] =
				mpsc_run(w->m, move_unit, w->st, i, goes_back(w->tid, i), 0);
			w->calls[i]++;
		} else {
			post_one(w, i);
		}
	}
	mpsc_drain_thread();
	return NULL;
}

/* CPUs this process may run on (taskset narrows them; test_ncpus() counts all online). */
static int usable_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return test_ncpus();
	int n = CPU_COUNT(&set);
	return n > 0 ? n : 1;
}

/* Total ops of one run, split among the threads. */
static unsigned ops_total(const struct mpsc_opts *o, int threads)
{
	unsigned total = 20000;
	/* Spinners that never park, with as many threads (clients and the server)
	   as cores or more, burn whole time slices: with every core spinning, any
	   other work on the machine (another test, a build) takes one from them,
	   and each hand-off then waits for a scheduler tick. */
	if (o->wait.kind == LOCUS_WAIT_SPIN && threads + 1 >= usable_cpus())
		total = 2000;
	if (TEST_SANITIZED)
		total /= 10;
	return total;
}

static void stress_one(int cfg, int threads)
{
	char what[160];
	struct mpsc_opts o = config(cfg);
	snprintf(what, sizeof what, "%s threads=%d", config_name(cfg), threads);
	uint32_t n = ops_total(&o, threads) / (unsigned)threads;
	uint64_t expected = (uint64_t)n * (uint64_t)threads;

	struct cs_state st;
	cs_init(&st);
	struct mpsc *m = open_config(cfg);
	pthread_barrier_t start;
	ck_assert_int_eq(pthread_barrier_init(&start, NULL, (unsigned)threads), 0);
	struct worker *ws = calloc((size_t)threads, sizeof *ws);
	ck_assert_ptr_nonnull(ws);
	workers_alloc(ws, threads, n, m, &st);
	for (int t = 0; t < threads; t++) {
		ws[t].start = &start;
		test_start_thread(&ws[t].th, stress_main, &ws[t]);
	}
	join_all(ws, threads, what);
	pthread_barrier_destroy(&start);

	check_state(&st, expected, what);
	check_results(ws, threads, expected, what);
	mpsc_close(m);
	printf("mpsc: %-45s ops=%-6llu ok\n", what, (unsigned long long)expected);
	fflush(stdout);
	workers_free(ws, threads);
	free(ws);
}

START_TEST(stress_config)
{
	for (int k = 0; k < NTHREAD_COUNTS; k++)
		stress_one(_i, thread_counts[k]);
}
END_TEST

/* ---- lifetime: exit without draining, close with posts in flight --------- */

#define LIFE_THREADS 4
#define LIFE_POSTS   (TEST_SANITIZED ? 300u : 2000u)

/* Posts everything and exits without draining: the thread-exit destructor must. */
static void *post_and_exit(void *arg)
{
	struct worker *w = arg;
	w->self = pthread_self();
	for (uint32_t i = 0; i < w->n; i++)
		post_one(w, i);
	return NULL;
}

START_TEST(exit_without_drain)
{
	char what[160];
	snprintf(what, sizeof what, "%s exit without drain", config_name(_i));
	struct cs_state st;
	cs_init(&st);
	struct mpsc *m = open_config(_i);
	struct worker ws[LIFE_THREADS];
	workers_alloc(ws, LIFE_THREADS, LIFE_POSTS, m, &st);
	for (int t = 0; t < LIFE_THREADS; t++)
		test_start_thread(&ws[t].th, post_and_exit, &ws[t]);
	join_all(ws, LIFE_THREADS, what);
	/* Joined: each thread's callbacks ran before it was gone. */
	check_results(ws, LIFE_THREADS, (uint64_t)LIFE_THREADS * LIFE_POSTS, what);
	mpsc_close(m);
	check_state(&st, (uint64_t)LIFE_THREADS * LIFE_POSTS, what);
	workers_free(ws, LIFE_THREADS);
}
END_TEST

/* Posts everything, lets the main thread close the mpsc, then drains and exits. */
static void *post_wait_close(void *arg)
{
	struct worker *w = arg;
	w->self = pthread_self();
	for (uint32_t i = 0; i < w->n; i++)
		post_one(w, i);
	pthread_barrier_wait(w->posted);
	pthread_barrier_wait(w->closed);
	/* The server is gone; its answers are in our records, and the callbacks are ours. */
	for (uint32_t i = 0; i < w->n; i++)
		w->calls_at_close += w->calls[i];
	mpsc_drain_thread();
	return NULL;
}

START_TEST(close_with_posts_in_flight)
{
	char what[160];
	snprintf(what, sizeof what, "%s close with posts in flight", config_name(_i));
	struct cs_state st;
	cs_init(&st);
	struct mpsc *m = open_config(_i);
	pthread_barrier_t posted, closed;
	ck_assert_int_eq(pthread_barrier_init(&posted, NULL, LIFE_THREADS + 1), 0);
	ck_assert_int_eq(pthread_barrier_init(&closed, NULL, LIFE_THREADS + 1), 0);
	struct worker ws[LIFE_THREADS];
	workers_alloc(ws, LIFE_THREADS, LIFE_POSTS, m, &st);
	for (int t = 0; t < LIFE_THREADS; t++) {
		ws[t].posted = &posted;
		ws[t].closed = &closed;
		test_start_thread(&ws[t].th, post_wait_close, &ws[t]);
	}
	pthread_barrier_wait(&posted);
	mpsc_close(m);
	/* Every request posted before close has run. */
	check_state(&st, (uint64_t)LIFE_THREADS * LIFE_POSTS, what);
	pthread_barrier_wait(&closed);
	join_all(ws, LIFE_THREADS, what);
	check_results(ws, LIFE_THREADS, (uint64_t)LIFE_THREADS * LIFE_POSTS, what);
	pthread_barrier_destroy(&posted);
	pthread_barrier_destroy(&closed);
	workers_free(ws, LIFE_THREADS);
}
END_TEST

/* ---- callbacks that post, and bad options ---------------------------------- */

struct chain {
	struct mpsc *m;
	uint64_t counter;
	uint32_t left;	   /* follow-up posts still to make */
	uint32_t answered; /* callbacks run */
};

static uint64_t bump(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t *k = state;
	return (*k)++;
}

/* Each callback posts the next request: post and drain must allow it. */
static void chain_next(void *ctx, uint64_t result)
{
	struct chain *ch = ctx;
	ch->answered++;
	if (ch->left) {
		ch->left--;
		ck_assert_int_eq(mpsc_post(ch->m, bump, &ch->counter, 0, 0, 0, chain_next, ch), 0);
	}
}

START_TEST(callback_posts)
{
	struct chain ch = {.m = open_config(_i), .left = 100};
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(mpsc_post(ch.m, bump, &ch.counter, 0, 0, 0, chain_next, &ch), 0);
	mpsc_drain_thread();
	ck_assert_uint_eq(ch.answered, 110);
	ck_assert_uint_eq(ch.left, 0);
	ck_assert_uint_eq(mpsc_run(ch.m, bump, &ch.counter, 0, 0, 0), 110);
	mpsc_close(ch.m);
}
END_TEST

START_TEST(bad_options)
{
	char err[256] = "";
	struct mpsc_opts o;
	mpsc_opts_default(&o);
	o.wait.kind = 7;
	ck_assert_ptr_null(mpsc_open(&o, err, sizeof err));
	ck_assert_msg(strstr(err, "wait") != NULL, "message: %s", err);
	mpsc_opts_default(&o);
	o.capacity = 0;
	err[0] = '\0';
	ck_assert_ptr_null(mpsc_open(&o, err, sizeof err));
	ck_assert_msg(strstr(err, "capacity") != NULL, "message: %s", err);
	/* The defaults open, and a NULL opts means the defaults. */
	struct mpsc *m = mpsc_open(NULL, err, sizeof err);
	ck_assert_ptr_nonnull(m);
	uint64_t k = 0;
	ck_assert_uint_eq(mpsc_run(m, bump, &k, 0, 0, 0), 0);
	mpsc_close(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mpsc");
	TCase *tc = tcase_create("stress");
	tcase_set_timeout(tc, NTHREAD_COUNTS * HANG_S + 30);
	tcase_add_loop_test(tc, stress_config, 0, NCONFIGS);
	suite_add_tcase(s, tc);

	TCase *life = tcase_create("lifetime");
	tcase_set_timeout(life, 3 * HANG_S);
	tcase_add_loop_test(life, exit_without_drain, 0, NCONFIGS);
	tcase_add_loop_test(life, close_with_posts_in_flight, 0, NCONFIGS);
	tcase_add_loop_test(life, callback_posts, 0, NCONFIGS);
	tcase_add_test(life, bad_options);
	suite_add_tcase(s, life);
	return test_run_suite(s);
}
