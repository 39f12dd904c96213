/*
 * Delegation (ffwd, async): what the stress suite does not cover. Callbacks
 * run exactly once and on the posting thread; drain() returns only when all
 * of a thread's posts completed; a client's requests run in order; a thread
 * that exits with posts outstanding finishes them (its callbacks run before
 * it is gone); closing the last executor stops the servers without losing a
 * request already sent; the runtime restarts cleanly; bad specs fail.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "locus/cs.h"
#include "locus/delegate.h"
#include "testutil.h"

#define HANG_S (60 * TEST_SLOWDOWN)
#define OPS    (TEST_SANITIZED ? 2000u : 20000u)

struct counter {
	uint64_t value;
};

static uint64_t bump(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct counter *k = state;
	return k->value++;
}

struct record {
	pthread_t owner;
	uint64_t *results; /* by post index */
	uint32_t *calls;   /* callbacks per post index */
	uint32_t wrong_thread;
	uint32_t completed;
};

struct cb_arg {
	struct record *rec;
	uint32_t index;
};

static void on_done(void *ctx, uint64_t result)
{
	struct cb_arg *arg = ctx;
	struct record *rec = arg->rec;
	if (!pthread_equal(rec->owner, pthread_self()))
		rec->wrong_thread++;
	rec->results[arg->index] = result;
	rec->calls[arg->index]++;
	rec->completed++;
}

struct poster {
	locus_cs *cs;
	uint32_t n;
	int drain;
	struct record rec;
	struct cb_arg *args;
	uint32_t completed_before_drain;
};

static void poster_init(struct poster *p, locus_cs *cs, uint32_t n, int drain)
{
	memset(p, 0, sizeof(*p));
	p->cs = cs;
	p->n = n;
	p->drain = drain;
	p->rec.results = calloc(n, sizeof(uint64_t));
	p->rec.calls = calloc(n, sizeof(uint32_t));
	p->args = calloc(n, sizeof(*p->args));
	ck_assert(p->rec.results && p->rec.calls && p->args);
}

static void poster_free(struct poster *p)
{
	free(p->rec.results);
	free(p->rec.calls);
	free(p->args);
}

static void *post_all(void *arg)
{
	struct poster *p = arg;
	p->rec.owner = pthread_self();
	for (uint32_t i = 0; i < p->n; i++) {
		p->args[i] = (struct cb_arg){&p->rec, i};
		ck_assert_int_eq(locus_cs_post(p->cs, bump, 0, 0, 0, on_done, &p->args[i]), 0);
	}
	p->completed_before_drain = p->rec.completed;
	if (p->drain)
		locus_cs_drain();
	return NULL;
}

static void assert_each_once(struct poster *p, const char *spec)
{
	ck_assert_msg(p->rec.wrong_thread == 0, "%s: %u callbacks ran on another thread", spec,
		      p->rec.wrong_thread);
	for (uint32_t i = 0; i < p->n; i++)
		ck_assert_msg(p->rec.calls[i] == 1, "%s: post %u called back %u times", spec, i,
			      p->rec.calls[i]);
}

/* Start T posters of n posts each on cs and wait for them; spec names failures. */
static void run_posters(struct poster *p, int T, locus_cs *cs, uint32_t n, int drain,
			const char *spec)
{
	pthread_t th[T];
	for (int t = 0; t < T; t++) {
		poster_init(&p[t], cs, n, drain);
		test_start_thread(&th[t], post_all, &p[t]);
	}
	for (int t = 0; t < T; t++)
		ck_assert_msg(test_join_within(th[t], HANG_S) == 0, "%s: poster %d hung", spec, t);
}

static const char *const async_specs[] = {
	"async", "async:direct", "async:lines=1", "async:park",	  "async:spin",
	"flat",	 "flat:blocked", "flat:doorbell", "flat:bound=8", NULL};

START_TEST(callbacks_once_on_poster_and_drain_completes)
{
	const char *spec = async_specs[_i];
	struct counter k = {0};
	locus_cs *cs = locus_cs_open(spec, &k);
	ck_assert_msg(cs, "%s: %s", spec, locus_cs_error());
	ck_assert_int_eq(locus_cs_is_async(cs), 1);
	enum { T = 4 };
	struct poster p[T];
	run_posters(p, T, cs, OPS / T, 1, spec);
	for (int t = 0; t < T; t++) {
		assert_each_once(&p[t], spec);
		poster_free(&p[t]);
	}
	ck_assert_uint_eq(k.value, (OPS / T) * T);
	locus_cs_close(cs);
}
END_TEST

/* Some posts are still outstanding when post() returns: asynchrony is real. */
START_TEST(post_returns_before_completion)
{
	struct counter k = {0};
	locus_cs *cs = locus_cs_open("async", &k);
	ck_assert(cs);
	struct poster p;
	poster_init(&p, cs, 1000, 1);
	post_all(&p);
	/* With a pending queue of 32, the last posts cannot have been sent yet. */
	ck_assert_uint_lt(p.completed_before_drain, p.n);
	ck_assert_uint_eq(p.rec.completed, p.n);
	assert_each_once(&p, "async");
	poster_free(&p);
	locus_cs_close(cs);
}
END_TEST

/* Each client's requests run in the order it posted them, with one line or
   many, queued or direct, dedicated or flat (a flat slot is shared, so its
   clients also serve each other's requests). */
static const char *const order_specs[] = {
	"async:lines=1",	 "async:lines=1,direct", "async:lines=16",
	"async:lines=16,direct", "async:lines=64",	 "async:lines=3,queue=5",
	"flat:lines=16,slots=1", "flat:blocked,slots=1", "flat:bound=4,slots=1",
	"flat:doorbell,slots=1",
};

START_TEST(keeps_client_order)
{
	const char *spec = order_specs[_i];
	struct counter k = {0};
	locus_cs *cs = locus_cs_open(spec, &k);
	ck_assert(cs);
	enum { T = 3 };
	struct poster p[T];
	run_posters(p, T, cs, OPS / T, 1, spec);
	for (int t = 0; t < T; t++) {
		for (uint32_t i = 1; i < p[t].n; i++)
			ck_assert_msg(p[t].rec.results[i] > p[t].rec.results[i - 1],
				      "%s: client %d post %u ran before post %u", spec, t, i,
				      i - 1);
		poster_free(&p[t]);
	}
	locus_cs_close(cs);
}
END_TEST

/* A thread that exits without draining: its posts still complete, with callbacks, on it. */
START_TEST(exiting_thread_finishes_its_posts)
{
	struct counter k = {0};
	locus_cs *cs = locus_cs_open("async", &k);
	ck_assert(cs);
	enum { WAVES = 5, T = 4 };
	uint64_t total = 0;
	for (int w = 0; w < WAVES; w++) {
		struct poster p[T];
		run_posters(p, T, cs, 1000 + (uint32_t)w, 0, "async (no drain)");
		for (int t = 0; t < T; t++) {
			assert_each_once(&p[t], "async (no drain, thread exit)");
			total += p[t].n;
			poster_free(&p[t]);
		}
		ck_assert_uint_eq(k.value, total);
	}
	locus_cs_close(cs);
}
END_TEST

/* Requests already written to request lines complete when the servers stop. */
START_TEST(stop_completes_requests_in_flight)
{
	struct counter k = {0};
	locus_cs *cs = locus_cs_open("async:direct,lines=16", &k);
	ck_assert(cs);
	/* direct: every post goes straight to a request line; no drain. */
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(locus_cs_post(cs, bump, 0, 0, 0, NULL, NULL), 0);
	locus_cs_close(cs); /* the last delegation executor: servers stop */
	ck_assert_uint_eq(locus_delegate_servers(), 0);
	ck_assert_uint_eq(k.value, 16);
}
END_TEST

/* The runtime stops with the last executor and starts again with the next. */
START_TEST(runtime_restarts)
{
	/* One counter per executor: each belongs to its own server. */
	struct counter ka = {0}, kb = {0};
	for (int round = 0; round < 3; round++) {
		locus_cs *a = locus_cs_open("ffwd:servers=2,server=0", &ka);
		ck_assert_msg(a, "%s", locus_cs_error());
		locus_cs *b = locus_cs_open("async:server=1", &kb);
		ck_assert_msg(b, "%s", locus_cs_error());
		ck_assert_uint_eq(locus_delegate_servers(), 2);
		for (int i = 0; i < 100; i++) {
			locus_cs_run(a, bump, 0, 0, 0);
			locus_cs_post(b, bump, 0, 0, 0, NULL, NULL);
		}
		locus_cs_drain();
		locus_cs_close(a);
		locus_cs_close(b);
		ck_assert_uint_eq(locus_delegate_servers(), 0);
	}
	ck_assert_uint_eq(ka.value, 300);
	ck_assert_uint_eq(kb.value, 300);
}
END_TEST

START_TEST(explicit_start_and_stats)
{
	char err[256];
	ck_assert_int_eq(locus_delegate_start(2, err, sizeof(err)), 0);
	ck_assert_uint_eq(locus_delegate_servers(), 2);
	ck_assert_int_eq(locus_delegate_start(2, err, sizeof(err)), -1);
	struct counter k = {0};
	locus_cs *cs = locus_cs_open("ffwd:server=1", &k);
	ck_assert(cs);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(locus_cs_run(cs, bump, 0, 0, 0), (uint64_t)i);
	struct locus_delegate_stats st;
	ck_assert_int_eq(locus_delegate_stats(1, &st), 0);
	ck_assert_uint_eq(st.requests, 1000);
	ck_assert_int_eq(locus_delegate_stats(2, &st), -1);
	locus_cs_close(cs);
	ck_assert_uint_eq(locus_delegate_servers(), 2); /* still held by the explicit start */
	locus_delegate_stop();
	ck_assert_uint_eq(locus_delegate_servers(), 0);
}
END_TEST

START_TEST(bad_specs)
{
	struct counter k = {0};
	const char *bad[] = {"async:lines=0", "async:lines=65", "async:queue=0", "ffwd:servers=0",
			     "ffwd:lines=4",  "async:bogus",	"ffwd:server=x", NULL};
	for (int i = 0; bad[i]; i++) {
		ck_assert_msg(locus_cs_open(bad[i], &k) == NULL, "%s opened", bad[i]);
		ck_assert(strlen(locus_cs_error()) > 0);
	}
	locus_cs *a = locus_cs_open("ffwd:servers=2", &k);
	ck_assert(a);
	ck_assert_msg(locus_cs_open("async:servers=3", &k) == NULL, "servers conflict accepted");
	ck_assert_ptr_nonnull(strstr(locus_cs_error(), "2 servers"));
	ck_assert_msg(locus_cs_open("async:server=2", &k) == NULL, "server out of range");
	locus_cs_close(a);
}
END_TEST

/*
 * Seed 002 §2.2.1.3's greedy client: one thread keeps posting to its own
 * slot while others post to the same slot. Under every flat policy the
 * others must finish (a livelock would hit the bounded join).
 */
static const char *const flat_specs[] = {"flat:queue,slot=0",	 "flat:blocked,slot=0",
					 "flat:doorbell,slot=0", "flat:bound=1,slot=0",
					 "flat:bound=64,slot=0", NULL};

struct greedy {
	locus_cs *cs;
	int stop;
	uint64_t posted;
};

static void *greedy_main(void *arg)
{
	struct greedy *g = arg;
	while (!__atomic_load_n(&g->stop, __ATOMIC_RELAXED)) {
		locus_cs_post(g->cs, bump, 0, 0, 0, NULL, NULL);
		g->posted++;
	}
	locus_cs_drain();
	return NULL;
}

START_TEST(flat_no_greedy_livelock)
{
	const char *spec = flat_specs[_i];
	struct counter k = {0};
	locus_cs *cs = locus_cs_open(spec, &k);
	ck_assert_msg(cs, "%s: %s", spec, locus_cs_error());
	struct greedy g = {.cs = cs};
	pthread_t gt;
	test_start_thread(&gt, greedy_main, &g);
	enum { T = 3 };
	struct poster p[T];
	run_posters(p, T, cs, OPS / T, 1, spec);
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELAXED);
	ck_assert_msg(test_join_within(gt, HANG_S) == 0, "%s: greedy client hung", spec);
	for (int t = 0; t < T; t++) {
		assert_each_once(&p[t], spec);
		poster_free(&p[t]);
	}
	ck_assert_uint_eq(k.value, (OPS / T) * T + g.posted);
	locus_cs_close(cs);
}
END_TEST

/* close() drains the closing thread: its queued posts complete and call back. */
START_TEST(close_drains_the_closing_thread)
{
	const char *spec = _i ? "flat" : "async";
	struct counter k = {0};
	locus_cs *cs = locus_cs_open(spec, &k);
	ck_assert(cs);
	struct poster p;
	poster_init(&p, cs, 1000, 0);
	post_all(&p); /* no drain: up to 32 posts still queued */
	locus_cs_close(cs);
	ck_assert_uint_eq(k.value, 1000);
	ck_assert_uint_eq(p.rec.completed, 1000);
	assert_each_once(&p, spec);
	poster_free(&p);
}
END_TEST

/*
 * A callback that drains while a post waits for room (a full queue, or every
 * line in flight): the post still completes at the thread's next drain. The
 * drain lets the thread's hold on the runtime go; a post that then went out
 * without taking it again was not waited for by the next drain (it was never
 * answered there) and would have been dropped at the thread's exit.
 * `before` posts fill the queue or the lines; on a dedicated server the test
 * waits until those in lines are answered, so that the next post's wait for
 * room runs their callbacks.
 */
static const struct {
	const char *spec;
	uint32_t before;   /* posts that leave the next one waiting for room */
	uint32_t in_lines; /* of those, answered by a server before it (0: flat) */
} drain_specs[] = {
	{"flat:lines=16,slots=1", 32, 0},
	{"flat:blocked,lines=16,slots=1", 16, 0},
	{"async:lines=16", 48, 16},
	{"async:lines=16,direct", 16, 16},
};

static int drain_in_next_callback;
static uint32_t drain_test_calls;

static uint64_t bump_atomic(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct counter *k = state;
	return __atomic_fetch_add(&k->value, 1, __ATOMIC_RELEASE);
}

static void count_and_maybe_drain(void *ctx, uint64_t result)
{
	(void)ctx;
	(void)result;
	drain_test_calls++;
	if (drain_in_next_callback) {
		drain_in_next_callback = 0;
		locus_cs_drain();
	}
}

START_TEST(drain_in_a_callback_keeps_the_waiting_post)
{
	const char *spec = drain_specs[_i].spec;
	uint32_t before = drain_specs[_i].before;
	struct counter k = {0};
	locus_cs *cs = locus_cs_open(spec, &k);
	ck_assert_msg(cs, "%s: %s", spec, locus_cs_error());
	drain_test_calls = 0;
	drain_in_next_callback = 0;
	for (uint32_t i = 0; i < before; i++)
		ck_assert_int_eq(
			locus_cs_post(cs, bump_atomic, 0, 0, 0, count_and_maybe_drain, NULL), 0);
	while (__atomic_load_n(&k.value, __ATOMIC_ACQUIRE) < drain_specs[_i].in_lines)
		sched_yield();
	ck_assert_uint_eq(drain_test_calls, 0); /* nothing collected yet */
	drain_in_next_callback = 1;
	ck_assert_int_eq(locus_cs_post(cs, bump_atomic, 0, 0, 0, count_and_maybe_drain, NULL), 0);
	ck_assert_msg(!drain_in_next_callback, "%s: the last post ran no callback", spec);
	locus_cs_drain();
	ck_assert_msg(drain_test_calls == before + 1, "%s: %u callbacks after the drain, %u posts",
		      spec, drain_test_calls, before + 1);
	ck_assert_uint_eq(__atomic_load_n(&k.value, __ATOMIC_ACQUIRE), before + 1);
	locus_cs_close(cs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("delegate");
	TCase *tc = tcase_create("delegate");
	tcase_set_timeout(tc, 3 * HANG_S);
	tcase_add_loop_test(tc, callbacks_once_on_poster_and_drain_completes, 0, 9);
	tcase_add_test(tc, post_returns_before_completion);
	tcase_add_loop_test(tc, keeps_client_order, 0,
			    (int)(sizeof(order_specs) / sizeof(order_specs[0])));
	tcase_add_test(tc, exiting_thread_finishes_its_posts);
	tcase_add_test(tc, stop_completes_requests_in_flight);
	tcase_add_test(tc, runtime_restarts);
	tcase_add_test(tc, explicit_start_and_stats);
	tcase_add_test(tc, bad_specs);
	tcase_add_loop_test(tc, close_drains_the_closing_thread, 0, 2);
	tcase_add_loop_test(tc, flat_no_greedy_livelock, 0, 5);
	tcase_add_loop_test(tc, drain_in_a_callback_keeps_the_waiting_post, 0,
			    (int)(sizeof(drain_specs) / sizeof(drain_specs[0])));
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
