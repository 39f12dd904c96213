/*
 * Every executor, under contention: threads run critical sections that
 * update several words at once (a conserved sum, a linked list, a counter)
 * through locus_cs_run and locus_cs_post, and the result must be exactly
 * what a serial execution would give.
 *
 * The specs are built at run time from locus_cs_mechanisms(), so a new
 * mechanism is stress-tested as soon as it is registered. One Check test
 * per spec, each in its own process: libitm's method is process-wide, so
 * stm:ml_wt, stm:gl_wt and stm:serialirr can only be tested in separate
 * processes.
 *
 * LOCUS_TEST_SPECS="mcs:spin ttas" restricts the run to those specs
 * (separated by spaces or semicolons, since specs contain commas).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/cs.h"
#include "locus/stm.h"
#include "sections.h"
#include "testutil.h"

#define MAX_SPECS 256

static char *specs[MAX_SPECS];
static int nspecs;

static const int thread_counts[] = {1, 2, 4, 8, 16};
#define NTHREAD_COUNTS ((int)(sizeof thread_counts / sizeof thread_counts[0]))

/* Bound on one (spec, threads) run: past it the mechanism is deemed deadlocked. */
#define RUN_DEADLINE_S (60 * TEST_SLOWDOWN)

static void add_spec(const char *spec)
{
	for (int i = 0; i < nspecs; i++)
		if (strcmp(specs[i], spec) == 0)
			return;
	if (nspecs == MAX_SPECS) {
		fprintf(stderr, "test_cs_stress: more than %d specs\n", MAX_SPECS);
		exit(EXIT_FAILURE);
	}
	specs[nspecs] = strdup(spec);
	if (!specs[nspecs]) {
		perror("strdup");
		exit(EXIT_FAILURE);
	}
	nspecs++;
}

static int takes_wait_options(const char *mech)
{
	return strcmp(mech, "mutex") != 0 && strcmp(mech, "stm") != 0;
}

/*
 * Built in the parent before any test forks, without opening anything: an
 * stm open here would fix libitm's method for every child.
 */
static void build_specs(void)
{
	const char *only = getenv("LOCUS_TEST_SPECS");
	if (only && *only) {
		char *copy = strdup(only);
		for (char *save = NULL, *tok = strtok_r(copy, " ;", &save); tok;
		     tok = strtok_r(NULL, " ;", &save))
			add_spec(tok);
		free(copy);
		return;
	}

	const char *const *mechs = locus_cs_mechanisms();
	for (int i = 0; mechs && mechs[i]; i++) {
		const char *m = mechs[i];
		if (strcmp(m, "stm") == 0 && !locus_stm_available())
			continue;
		add_spec(m);
		if (takes_wait_options(m)) {
			char buf[128];
			snprintf(buf, sizeof buf, "%s:spin", m);
			add_spec(buf);
			snprintf(buf, sizeof buf, "%s:park", m);
			add_spec(buf);
		}
	}
	add_spec("ttas:nobackoff");
	add_spec("tas:barge");
	add_spec("ttas:barge,park");
	add_spec("futex:barge,spin");
	add_spec("async:direct");
	add_spec("async:lines=1");
	add_spec("async:lines=1,direct");
	add_spec("async:lines=3,queue=1");
	add_spec("async:servers=3");
	add_spec("flat:blocked");
	add_spec("flat:doorbell");
	add_spec("flat:bound=4");
	add_spec("flat:lines=1");
	add_spec("mcs:nocr");
	add_spec("mcs:strict");
	add_spec("mcs:nocr,strict");
	add_spec("ticket:strict");
	add_spec("clh:strict");
	add_spec("ticket:admit=3,park");
	add_spec("clh:admit=2,park");
	add_spec("oyama:pass=1");
	add_spec("ccsynch:pass=1");
#ifdef LOCUS_HAVE_STM
	add_spec("stm:ml_wt");
	add_spec("stm:ml_wt,strict");
	add_spec("stm:gl_wt");
	add_spec("stm:serialirr");
#endif
}

/* 1 if the comma-separated options of `spec` (after the colon) include `opt`. */
static int spec_has_option(const char *spec, const char *opt)
{
	const char *p = strchr(spec, ':');
	size_t len = strlen(opt);
	while (p) {
		p++;
		if (strncmp(p, opt, len) == 0 && (p[len] == ',' || p[len] == '\0'))
			return 1;
		p = strchr(p, ',');
	}
	return 0;
}

/* Total operations for one run, split among the threads. */
static unsigned ops_total(int spins_forever, int threads)
{
	unsigned total = 20000;
	/* Waiters that never park, behind a preempted holder, burn whole time
	   slices; so do they when they and a delegation server that spins take
	   every core, and any other work on the machine takes one from them. */
	if (spins_forever && threads + 1 >= test_ncpus())
		total = 2000;
	if (TEST_SANITIZED)
		total /= 10;
	return total;
}

/* Deterministic per (thread, op): roughly one op in five moves a unit back. */
static uint64_t goes_back(uint32_t tid, uint32_t seq)
{
	uint32_t h = (tid + 1) * 2654435761u ^ (seq + 1) * 40503u;
	h ^= h >> 13;
	return (h % 5) == 0;
}

/* Result slot of one operation; filled by run's return or by the post callback. */
struct slot {
	uint64_t result;
	uint32_t done; /* times a result arrived: must end at exactly 1 */
};

struct run;

struct worker {
	pthread_t th;
	struct run *run;
	uint32_t tid;
	uint32_t n;
	struct stress_node *nodes;
	struct slot *slots;
	uint32_t post_errors;	  /* post() returned nonzero */
	uint32_t post_not_done;	  /* synchronous post returned before its callback ran */
	uint32_t cb_wrong_thread; /* callback ran on another thread */
};

struct run {
	locus_cs *cs;
	int async;
	pthread_barrier_t start;
	struct worker *workers;
};

struct cb_ctx {
	struct slot *slot;
	pthread_t owner;
	struct worker *w;
};

static void record_result(void *ctx, uint64_t result)
{
	struct cb_ctx *c = ctx;
	if (!pthread_equal(c->owner, pthread_self()))
		c->w->cb_wrong_thread++;
	c->slot->result = result;
	c->slot->done++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->run;

	/* The thread's own nodes, made before the sections start. */
	for (uint32_t i = 0; i < w->n; i++) {
		w->nodes[i].next = NULL;
		w->nodes[i].tid = w->tid;
		w->nodes[i].seq = i;
	}
	struct cb_ctx *ctxs = calloc(w->n, sizeof *ctxs);
	ck_assert_ptr_nonnull(ctxs);

	pthread_barrier_wait(&r->start);
	for (uint32_t i = 0; i < w->n; i++) {
		uint64_t node = (uint64_t)(uintptr_t)&w->nodes[i];
		uint64_t back = goes_back(w->tid, i);
		if (i % 2 == 0) {
			w->slots[i].result = locus_cs_run(r->cs, stress_section, node, back, 0);
			w->slots[i].done++;
		} else {
			ctxs[i] = (struct cb_ctx){&w->slots[i], pthread_self(), w};
			if (locus_cs_post(r->cs, stress_section, node, back, 0, record_result,
					  &ctxs[i]) != 0)
				w->post_errors++;
			else if (!r->async && w->slots[i].done != 1)
				w->post_not_done++;
		}
	}
	locus_cs_drain();
	free(ctxs);
	return NULL;
}

static void stress_one(const char *spec, int threads)
{
	struct stress_state st = {.from = 1u << 20, .to = 0, .total = 1u << 20};
	struct run r = {0};

	r.cs = locus_cs_open(spec, &st);
	ck_assert_msg(r.cs != NULL, "%s: locus_cs_open failed: %s", spec, locus_cs_error());
	r.async = locus_cs_is_async(r.cs);
	const char *full = locus_cs_spec(r.cs);
	ck_assert_msg(full != NULL, "%s: locus_cs_spec returned NULL", spec);

	int spins_forever = spec_has_option(full, "spin") || spec_has_option(spec, "spin");
	unsigned total = ops_total(spins_forever, threads);
	uint32_t n = total / (unsigned)threads;
	if (n == 0)
		n = 1;
	uint64_t expected = (uint64_t)n * (uint64_t)threads;

	r.workers = calloc((size_t)threads, sizeof *r.workers);
	ck_assert_ptr_nonnull(r.workers);
	ck_assert_int_eq(pthread_barrier_init(&r.start, NULL, (unsigned)threads), 0);
	for (int t = 0; t < threads; t++) {
		struct worker *w = &r.workers[t];
		w->run = &r;
		w->tid = (uint32_t)t;
		w->n = n;
		w->nodes = calloc(n, sizeof *w->nodes);
		w->slots = calloc(n, sizeof *w->slots);
		ck_assert(w->nodes && w->slots);
	}
	for (int t = 0; t < threads; t++)
		test_start_thread(&r.workers[t].th, worker_main, &r.workers[t]);
	for (int t = 0; t < threads; t++) {
		int rc = test_join_within(r.workers[t].th, RUN_DEADLINE_S);
		ck_assert_msg(rc == 0,
			      "%s threads=%d: worker %d did not finish within %d s (deadlock or "
			      "livelock; %u ops per thread)",
			      full, threads, t, RUN_DEADLINE_S, n);
	}
	pthread_barrier_destroy(&r.start);

	/* The sections' effects: exactly those of a serial execution of all of them. */
	ck_assert_msg(st.torn == 0, "%s threads=%d: %llu sections saw from+to != total on entry",
		      full, threads, (unsigned long long)st.torn);
	ck_assert_msg(st.from + st.to == st.total,
		      "%s threads=%d: from+to = %llu, expected %llu (a torn update)", full, threads,
		      (unsigned long long)(st.from + st.to), (unsigned long long)st.total);
	ck_assert_msg(st.count == expected,
		      "%s threads=%d: count = %llu, expected %llu (lost or doubled updates)", full,
		      threads, (unsigned long long)st.count, (unsigned long long)expected);

	/*
	 * How the sections ran: stm with a retryable method runs the instrumented
	 * clone (at least some sections in retryable transactions), serialirr and
	 * every other mechanism never do; only stm runs sections in transactions.
	 */
	uint64_t ran = st.by_mode[0] + st.by_mode[1] + st.by_mode[2];
	ck_assert_msg(ran == st.count, "%s threads=%d: by_mode sums to %llu, count %llu", full,
		      threads, (unsigned long long)ran, (unsigned long long)st.count);
	if (strcmp(locus_cs_name(r.cs), "stm") != 0) {
		ck_assert_msg(st.by_mode[0] == expected,
			      "%s threads=%d: %llu sections ran inside a transaction", full,
			      threads, (unsigned long long)(expected - st.by_mode[0]));
	} else {
		ck_assert_msg(st.by_mode[0] == 0,
			      "%s threads=%d: %llu stm sections ran outside a transaction", full,
			      threads, (unsigned long long)st.by_mode[0]);
		if (strstr(full, "serialirr"))
			ck_assert_msg(st.by_mode[1] == 0,
				      "%s threads=%d: %llu sections ran retryable under serialirr",
				      full, threads, (unsigned long long)st.by_mode[1]);
		else
			ck_assert_msg(
				st.by_mode[1] > 0,
				"%s threads=%d: no section ran in a retryable transaction (the "
				"transactional clone was not used)",
				full, threads);
	}

	/* Every node in the list exactly once, nothing else, and tail is its end. */
	uint8_t *in_list = calloc(expected, 1);
	ck_assert_ptr_nonnull(in_list);
	uint64_t len = 0;
	struct stress_node *last = NULL;
	for (struct stress_node *p = st.head; p && len <= expected; p = p->next) {
		ck_assert_msg(p->tid < (uint32_t)threads && p->seq < n,
			      "%s threads=%d: list node %llu has bad tid %u / seq %u", full,
			      threads, (unsigned long long)len, p->tid, p->seq);
		uint64_t idx = (uint64_t)p->tid * n + p->seq;
		ck_assert_msg(!in_list[idx],
			      "%s threads=%d: node (thread %u, op %u) is in the list twice", full,
			      threads, p->tid, p->seq);
		in_list[idx] = 1;
		last = p;
		len++;
	}
	ck_assert_msg(len == st.count, "%s threads=%d: list length %llu != count %llu", full,
		      threads, (unsigned long long)len, (unsigned long long)st.count);
	ck_assert_msg(last == st.tail, "%s threads=%d: tail is not the last node of the list", full,
		      threads);
	for (uint64_t i = 0; i < expected; i++)
		ck_assert_msg(in_list[i],
			      "%s threads=%d: node (thread %llu, op %llu) missing from list", full,
			      threads, (unsigned long long)(i / n), (unsigned long long)(i % n));

	/* Returned old counts: each of 0..count-1 once, increasing within each thread. */
	uint8_t *seen = calloc(expected, 1);
	ck_assert_ptr_nonnull(seen);
	for (int t = 0; t < threads; t++) {
		struct worker *w = &r.workers[t];
		ck_assert_msg(w->post_errors == 0, "%s threads=%d: thread %d: %u posts failed",
			      full, threads, t, w->post_errors);
		ck_assert_msg(
			w->post_not_done == 0,
			"%s threads=%d: thread %d: %u posts on a synchronous executor returned "
			"before their callback ran",
			full, threads, t, w->post_not_done);
		ck_assert_msg(w->cb_wrong_thread == 0,
			      "%s threads=%d: thread %d: %u callbacks ran on another thread", full,
			      threads, t, w->cb_wrong_thread);
		int ordered = !r.async || spec_has_option(full, "lines=1");
		for (uint32_t i = 0; i < n; i++) {
			struct slot *s = &w->slots[i];
			ck_assert_msg(
				s->done == 1,
				"%s threads=%d: thread %d op %u completed %u times after drain",
				full, threads, t, i, s->done);
			ck_assert_msg(
				s->result < expected,
				"%s threads=%d: thread %d op %u returned %llu, beyond count %llu",
				full, threads, t, i, (unsigned long long)s->result,
				(unsigned long long)expected);
			ck_assert_msg(!seen[s->result],
				      "%s threads=%d: value %llu returned twice (thread %d op %u)",
				      full, threads, (unsigned long long)s->result, t, i);
			seen[s->result] = 1;
			/* Asynchronous delegation keeps a thread's order only with one
			   request line per client-server pair (seed 002 §2.3). */
			if (i > 0 && ordered)
				ck_assert_msg(
					s->result > w->slots[i - 1].result,
					"%s threads=%d: thread %d op %u returned %llu after %llu "
					"(a thread's sections out of order)",
					full, threads, t, i, (unsigned long long)s->result,
					(unsigned long long)w->slots[i - 1].result);
		}
	}
	for (uint64_t v = 0; v < expected; v++)
		ck_assert_msg(seen[v], "%s threads=%d: value %llu never returned", full, threads,
			      (unsigned long long)v);

	printf("cs_stress: %-40s threads=%2d ops=%-6llu ok", full, threads,
	       (unsigned long long)expected);
	if (st.by_mode[1] || st.by_mode[2])
		printf(" (in transactions: %llu retryable, %llu irrevocable)",
		       (unsigned long long)st.by_mode[1], (unsigned long long)st.by_mode[2]);
	printf("\n");
	fflush(stdout);

	locus_cs_close(r.cs);
	free(seen);
	free(in_list);
	for (int t = 0; t < threads; t++) {
		free(r.workers[t].nodes);
		free(r.workers[t].slots);
	}
	free(r.workers);
}

START_TEST(stress_spec)
{
	for (int k = 0; k < NTHREAD_COUNTS; k++)
		stress_one(specs[_i], thread_counts[k]);
}
END_TEST

int main(void)
{
	build_specs();
	if (nspecs == 0) {
		fprintf(stderr, "test_cs_stress: no specs (locus_cs_mechanisms() is empty)\n");
		return EXIT_FAILURE;
	}
	printf("cs_stress: %d specs:", nspecs);
	for (int i = 0; i < nspecs; i++)
		printf(" %s", specs[i]);
	printf("\n");
	fflush(stdout);

	Suite *s = suite_create("cs_stress");
	TCase *tc = tcase_create("spec");
	/* A run past its deadline fails with a message; this is the backstop behind it. */
	tcase_set_timeout(tc, NTHREAD_COUNTS * RUN_DEADLINE_S + 30);
	tcase_add_loop_test(tc, stress_spec, 0, nspecs);
	suite_add_tcase(s, tc);
	int rc = test_run_suite(s);
	for (int i = 0; i < nspecs; i++)
		free(specs[i]);
	return rc;
}
