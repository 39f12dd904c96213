/*
 * The executor interface itself (cs.h) and the direct APIs behind it:
 * the registry, spec parsing and its errors, post/drain on synchronous
 * executors, the waiting-policy options, the combining structures, and stm's
 * process-wide method and execution modes.
 *
 * Every test runs in its own process (Check's fork mode), which the stm tests
 * rely on: libitm's method can be chosen once per process.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "locus/combine.h"
#include "locus/cs.h"
#include "locus/stm.h"
#include "locus/wait.h"
#include "sections.h"
#include "sync/stm_impl.h"
#include "testutil.h"

#define HANG_S (30 * TEST_SLOWDOWN)

/* The mechanisms every build has (stm is added when LOCUS_HAVE_STM). */
static const char *const required[] = {"mutex", "tas",	 "ttas",  "ticket",  "mcs",
				       "clh",	"futex", "oyama", "ccsynch", NULL};

static int listed(const char *name)
{
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m && m[i]; i++)
		if (strcmp(m[i], name) == 0)
			return 1;
	return 0;
}

static int is_required(const char *name)
{
	for (int i = 0; required[i]; i++)
		if (strcmp(required[i], name) == 0)
			return 1;
	return strcmp(name, "stm") == 0;
}

/* Open a spec that must be rejected; return the error message. */
static const char *open_fails(const char *spec)
{
	uint64_t state = 0;
	locus_cs *cs = locus_cs_open(spec, &state);
	ck_assert_msg(cs == NULL, "locus_cs_open(\"%s\") succeeded, expected an error",
		      spec ? spec : "(null)");
	const char *err = locus_cs_error();
	ck_assert_msg(err != NULL && err[0] != '\0',
		      "locus_cs_open(\"%s\") failed without a message", spec ? spec : "(null)");
	return err;
}

/* --- registry ------------------------------------------------------------ */

START_TEST(mechanisms_listed)
{
	const char *const *m = locus_cs_mechanisms();
	ck_assert_ptr_nonnull(m);
	int n = 0;
	while (n < 1000 && m[n])
		n++;
	ck_assert_msg(n > 0, "locus_cs_mechanisms() is empty");
	ck_assert_msg(n < 1000, "locus_cs_mechanisms() is not NULL-terminated");
	for (int i = 0; i < n; i++) {
		ck_assert_msg(m[i][0] != '\0', "mechanism %d has an empty name", i);
		ck_assert_msg(strchr(m[i], ':') == NULL && strchr(m[i], ',') == NULL,
			      "mechanism name \"%s\" contains spec punctuation", m[i]);
		for (int j = 0; j < i; j++)
			ck_assert_msg(strcmp(m[i], m[j]) != 0, "mechanism \"%s\" listed twice",
				      m[i]);
	}
	for (int i = 0; required[i]; i++)
		ck_assert_msg(listed(required[i]), "mechanism \"%s\" is not listed", required[i]);
#ifdef LOCUS_HAVE_STM
	ck_assert_msg(listed("stm"), "LOCUS_HAVE_STM but \"stm\" is not listed");
#endif
}
END_TEST

static uint64_t cb_result;
static int cb_calls;

static void note_result(void *ctx, uint64_t result)
{
	ck_assert_ptr_eq(ctx, &cb_result);
	cb_result = result;
	cb_calls++;
}

/* Each listed mechanism by its bare name: open, run, post, name, explicit spec, reopen. */
START_TEST(every_mechanism_runs)
{
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m[i]; i++) {
		if (strcmp(m[i], "stm") == 0 && !locus_stm_available())
			continue;
		uint64_t state = 0;
		locus_cs *cs = locus_cs_open(m[i], &state);
		ck_assert_msg(cs != NULL, "open \"%s\": %s", m[i], locus_cs_error());
		ck_assert_pstr_eq(locus_cs_name(cs), m[i]);
		if (is_required(m[i]))
			ck_assert_msg(locus_cs_is_async(cs) == 0, "%s: is_async = %d, expected 0",
				      m[i], locus_cs_is_async(cs));

		ck_assert_uint_eq(locus_cs_run(cs, counter_add, 5, 0, 0), 0);
		ck_assert_uint_eq(locus_cs_run(cs, counter_add, 1, 0, 0), 5);

		cb_calls = 0;
		ck_assert_int_eq(locus_cs_post(cs, counter_add, 10, 0, 0, note_result, &cb_result),
				 0);
		if (!locus_cs_is_async(cs))
			ck_assert_msg(cb_calls == 1,
				      "%s: post returned before its callback ran (%d calls)", m[i],
				      cb_calls);
		/* No callback: the section still runs. */
		ck_assert_int_eq(locus_cs_post(cs, counter_add, 100, 0, 0, NULL, NULL), 0);
		locus_cs_drain();
		ck_assert_int_eq(cb_calls, 1);
		/* Asynchronous mechanisms may run the two posts in either order. */
		if (locus_cs_is_async(cs))
			ck_assert_msg(cb_result == 6 || cb_result == 106, "%s: post saw %llu", m[i],
				      (unsigned long long)cb_result);
		else
			ck_assert_uint_eq(cb_result, 6);
		ck_assert_uint_eq(state, 116);

		/* The explicit spec names the mechanism and opens an identical executor. */
		const char *spec = locus_cs_spec(cs);
		ck_assert_ptr_nonnull(spec);
		size_t len = strlen(m[i]);
		ck_assert_msg(strncmp(spec, m[i], len) == 0 && (spec[len] == ':' || spec[len] == 0),
			      "spec \"%s\" does not start with \"%s\"", spec, m[i]);
		char *copy = strdup(spec);
		locus_cs *again = locus_cs_open(copy, &state);
		ck_assert_msg(again != NULL, "reopening \"%s\" failed: %s", copy, locus_cs_error());
		ck_assert_pstr_eq(locus_cs_spec(again), copy);
		ck_assert_uint_eq(locus_cs_run(again, counter_add, 1, 0, 0), 116);
		locus_cs_close(again);
		free(copy);
		locus_cs_close(cs);
	}
}
END_TEST

/* Server statistics: only where a server thread runs the sections, and they count them. */
START_TEST(server_stats)
{
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m[i]; i++) {
		if (strcmp(m[i], "stm") == 0 && !locus_stm_available())
			continue;
		uint64_t state = 0;
		struct locus_cs_server_stats s0, s1;
		locus_cs *cs = locus_cs_open(m[i], &state);
		ck_assert_msg(cs != NULL, "open \"%s\": %s", m[i], locus_cs_error());
		int server = strcmp(m[i], "ffwd") == 0 || strcmp(m[i], "async") == 0 ||
			     strcmp(m[i], "mpsc") == 0;
		int rc = locus_cs_server_stats(cs, &s0);
		ck_assert_msg(rc == (server ? 0 : -1), "%s: server_stats returned %d", m[i], rc);
		for (int k = 0; k < 50; k++)
			locus_cs_run(cs, counter_add, 1, 0, 0);
		if (server) {
			ck_assert_int_eq(locus_cs_server_stats(cs, &s1), 0);
			ck_assert_msg(s1.requests - s0.requests == 50, "%s: %llu requests counted",
				      m[i], (unsigned long long)(s1.requests - s0.requests));
			if (strcmp(m[i], "mpsc") == 0)
				ck_assert(s1.polls - s0.polls >= 50 && s1.empty_polls <= s1.polls);
			else
				ck_assert(s1.alive_ns > s0.alive_ns && s1.busy_ns <= s1.alive_ns);
		}
		locus_cs_close(cs);
	}
}
END_TEST

static void count_done(void *ctx, uint64_t result)
{
	(void)result;
	(*(int *)ctx)++;
}

/*
 * Client statistics: asynchronous delegation collects every answer in a
 * poll, once, so `ready` grows by the posts made; lines polled are at least
 * that. Mechanisms without response lines poll nothing.
 */
START_TEST(client_stats)
{
	static const struct {
		const char *spec;
		int polls;
	} cases[] = {{"mutex", 0},	   {"ffwd", 0},	       {"async", 1},
		     {"async:direct", 1},  {"flat:queue", 1},  {"flat:blocked", 1},
		     {"flat:doorbell", 1}, {"flat:bound=4", 1}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t state = 0;
		int done = 0;
		struct locus_cs_client_stats s0, s1;
		locus_cs *cs = locus_cs_open(cases[i].spec, &state);
		ck_assert_msg(cs != NULL, "open \"%s\": %s", cases[i].spec, locus_cs_error());
		locus_cs_client_stats(&s0);
		for (int k = 0; k < 100; k++)
			ck_assert_int_eq(locus_cs_post(cs, counter_add, 1, 0, 0, count_done, &done),
					 0);
		locus_cs_drain();
		locus_cs_client_stats(&s1);
		ck_assert_int_eq(done, 100);
		uint64_t polled = s1.polled - s0.polled, ready = s1.ready - s0.ready;
		if (cases[i].polls) {
			ck_assert_msg(ready == 100, "%s: %llu answers collected, 100 posted",
				      cases[i].spec, (unsigned long long)ready);
			ck_assert_msg(polled >= ready, "%s: %llu polled < %llu ready",
				      cases[i].spec, (unsigned long long)polled,
				      (unsigned long long)ready);
		} else {
			ck_assert_msg(polled == 0 && ready == 0, "%s: polled %llu, ready %llu",
				      cases[i].spec, (unsigned long long)polled,
				      (unsigned long long)ready);
		}
		locus_cs_close(cs);
	}
}
END_TEST

START_TEST(waiting_variants_open)
{
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m[i]; i++) {
		if (strcmp(m[i], "mutex") == 0 || strcmp(m[i], "stm") == 0)
			continue;
		static const char *const opts[] = {"spin", "park", "spinpark", "spins=7"};
		for (int j = 0; j < 4; j++) {
			char spec[128];
			snprintf(spec, sizeof spec, "%s:%s", m[i], opts[j]);
			uint64_t state = 0;
			locus_cs *cs = locus_cs_open(spec, &state);
			ck_assert_msg(cs != NULL, "open \"%s\": %s", spec, locus_cs_error());
			ck_assert_pstr_eq(locus_cs_name(cs), m[i]);
			ck_assert_msg(strstr(locus_cs_spec(cs), opts[j]) != NULL,
				      "spec of \"%s\" is \"%s\"", spec, locus_cs_spec(cs));
			ck_assert_uint_eq(locus_cs_run(cs, counter_add, 3, 0, 0), 0);
			ck_assert_uint_eq(state, 3);
			locus_cs_close(cs);
		}
	}
}
END_TEST

START_TEST(unknown_mechanism)
{
	const char *err = open_fails("nosuch");
	ck_assert_msg(strstr(err, "nosuch") != NULL, "error does not name the spec: %s", err);
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m[i]; i++)
		ck_assert_msg(strstr(err, m[i]) != NULL, "error does not list \"%s\": %s", m[i],
			      err);
	open_fails("nosuch:spin");
	open_fails("mcsx");
}
END_TEST

START_TEST(unknown_option)
{
	const char *err = open_fails("mcs:bogus");
	ck_assert_msg(strstr(err, "bogus") != NULL, "error does not name the option: %s", err);
	err = open_fails("mcs:spin,bogus");
	ck_assert_msg(strstr(err, "bogus") != NULL, "error does not name the option: %s", err);
}
END_TEST

START_TEST(bad_values)
{
	static const char *const bad[] = {
		"mcs:spins=abc", "ccsynch:pass=0", "mcs:spins=", "mcs:spins=-1",
		"oyama:pass=x",	 "ccsynch:pass=",  NULL};
	for (int i = 0; bad[i]; i++)
		open_fails(bad[i]);
}
END_TEST

START_TEST(empty_and_null_spec)
{
	open_fails("");
	open_fails(NULL);
	open_fails(":");
	open_fails(":spin");
}
END_TEST

START_TEST(explicit_spec)
{
	uint64_t state = 0;
	char want[64];
	locus_cs *cs = locus_cs_open("mcs", &state);
	ck_assert_ptr_nonnull(cs);
	const char *spec = locus_cs_spec(cs);
	ck_assert_msg(strstr(spec, "mcs") != NULL, "spec: %s", spec);
	ck_assert_msg(strstr(spec, "spinpark") != NULL, "default policy not explicit: %s", spec);
	snprintf(want, sizeof want, "spins=%u", LOCUS_WAIT_SPINS_DEFAULT);
	ck_assert_msg(strstr(spec, want) != NULL, "default spin budget not explicit: %s", spec);
	locus_cs_close(cs);

	cs = locus_cs_open("mcs:spins=100", &state);
	ck_assert_ptr_nonnull(cs);
	ck_assert_msg(strstr(locus_cs_spec(cs), "spins=100") != NULL, "spec: %s",
		      locus_cs_spec(cs));
	locus_cs_close(cs);

	cs = locus_cs_open("mcs:park", &state);
	ck_assert_ptr_nonnull(cs);
	ck_assert_msg(strstr(locus_cs_spec(cs), "park") != NULL &&
			      strstr(locus_cs_spec(cs), "spinpark") == NULL,
		      "spec: %s", locus_cs_spec(cs));
	locus_cs_close(cs);

	cs = locus_cs_open("ccsynch", &state);
	ck_assert_ptr_nonnull(cs);
	snprintf(want, sizeof want, "pass=%u", LOCUS_COMBINE_PASS_DEFAULT);
	ck_assert_msg(strstr(locus_cs_spec(cs), want) != NULL, "default pass not explicit: %s",
		      locus_cs_spec(cs));
	locus_cs_close(cs);

	cs = locus_cs_open("oyama:pass=16", &state);
	ck_assert_ptr_nonnull(cs);
	ck_assert_msg(strstr(locus_cs_spec(cs), "pass=16") != NULL, "spec: %s", locus_cs_spec(cs));
	locus_cs_close(cs);
}
END_TEST

START_TEST(usage_lists_mechanisms)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	locus_cs_usage(f);
	fclose(f);
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m[i]; i++)
		ck_assert_msg(strstr(text, m[i]) != NULL, "usage does not mention \"%s\"", m[i]);
	free(text);
}
END_TEST

/* Each thread's post on a synchronous executor completes inside post. */
struct post_arg {
	locus_cs *cs;
	int late;
};

static void count_cb(void *ctx, uint64_t result)
{
	(*(int *)ctx)++;
}

static void *post_thread(void *arg)
{
	struct post_arg *a = arg;
	for (int i = 0; i < 500; i++) {
		int calls = 0;
		locus_cs_post(a->cs, counter_add, 1, 0, 0, count_cb, &calls);
		if (calls != 1)
			a->late++;
	}
	locus_cs_drain();
	return NULL;
}

START_TEST(post_is_synchronous_under_contention)
{
	for (int i = 0; required[i]; i++) {
		uint64_t state = 0;
		locus_cs *cs = locus_cs_open(required[i], &state);
		ck_assert_ptr_nonnull(cs);
		struct post_arg args[4];
		pthread_t th[4];
		for (int t = 0; t < 4; t++) {
			args[t] = (struct post_arg){cs, 0};
			test_start_thread(&th[t], post_thread, &args[t]);
		}
		for (int t = 0; t < 4; t++)
			ck_assert_msg(test_join_within(th[t], HANG_S) == 0, "%s: thread %d hung",
				      required[i], t);
		for (int t = 0; t < 4; t++)
			ck_assert_msg(args[t].late == 0,
				      "%s: %d posts returned before their callback ran",
				      required[i], args[t].late);
		ck_assert_uint_eq(state, 4 * 500);
		locus_cs_close(cs);
	}
}
END_TEST

/* --- waiting policy -------------------------------------------------------- */

START_TEST(wait_options)
{
	locus_wait w = locus_wait_default();
	ck_assert_int_eq(w.kind, LOCUS_WAIT_SPINPARK);
	ck_assert_uint_eq(w.spins, LOCUS_WAIT_SPINS_DEFAULT);
	ck_assert_str_eq(locus_wait_name(&w), "spinpark");

	ck_assert_int_eq(locus_wait_option(&w, "spin"), 1);
	ck_assert_int_eq(w.kind, LOCUS_WAIT_SPIN);
	ck_assert_str_eq(locus_wait_name(&w), "spin");
	ck_assert_int_eq(locus_wait_option(&w, "park"), 1);
	ck_assert_int_eq(w.kind, LOCUS_WAIT_PARK);
	ck_assert_str_eq(locus_wait_name(&w), "park");
	ck_assert_int_eq(locus_wait_option(&w, "spinpark"), 1);
	ck_assert_int_eq(w.kind, LOCUS_WAIT_SPINPARK);
	ck_assert_int_eq(locus_wait_option(&w, "spins=10"), 1);
	ck_assert_uint_eq(w.spins, 10);

	ck_assert_int_eq(locus_wait_option(&w, "pass=1"), 0);
	ck_assert_int_eq(locus_wait_option(&w, "bogus"), 0);
	ck_assert_int_eq(locus_wait_option(&w, "spins=abc"), -1);
	ck_assert_int_eq(locus_wait_option(&w, "spins="), -1);
	ck_assert_uint_eq(w.spins, 10);
}
END_TEST

/* --- combining, directly ------------------------------------------------- */

enum { COMBINE_THREADS = 4, COMBINE_OPS = 3000 };

struct combine_arg {
	locus_oyama *o;
	locus_ccsynch *c;
	uint64_t *state;
	int out_of_order;
};

static void *combine_thread(void *arg)
{
	struct combine_arg *a = arg;
	uint64_t prev = 0;
	for (int i = 0; i < COMBINE_OPS; i++) {
		uint64_t old = a->o ? locus_oyama_run(a->o, counter_add, a->state, 1, 0, 0)
				    : locus_ccsynch_run(a->c, counter_add, a->state, 1, 0, 0);
		if (i > 0 && old <= prev)
			a->out_of_order++;
		prev = old;
	}
	return NULL;
}

static void combine_contended(locus_oyama *o, locus_ccsynch *c, const char *what)
{
	uint64_t state = 0;
	struct combine_arg args[COMBINE_THREADS];
	pthread_t th[COMBINE_THREADS];
	for (int t = 0; t < COMBINE_THREADS; t++) {
		args[t] = (struct combine_arg){o, c, &state, 0};
		test_start_thread(&th[t], combine_thread, &args[t]);
	}
	for (int t = 0; t < COMBINE_THREADS; t++)
		ck_assert_msg(test_join_within(th[t], HANG_S) == 0, "%s: thread %d hung", what, t);
	for (int t = 0; t < COMBINE_THREADS; t++)
		ck_assert_msg(args[t].out_of_order == 0, "%s: thread %d saw results out of order",
			      what, t);
	ck_assert_msg(state == COMBINE_THREADS * COMBINE_OPS, "%s: count %llu, expected %d", what,
		      (unsigned long long)state, COMBINE_THREADS * COMBINE_OPS);
}

START_TEST(oyama_direct)
{
	locus_oyama o;
	uint64_t state = 0;
	ck_assert_int_eq(locus_oyama_init(&o, NULL, 0), 0);
	ck_assert_uint_eq(locus_oyama_run(&o, counter_add, &state, 7, 0, 0), 0);
	ck_assert_uint_eq(locus_oyama_run(&o, counter_add, &state, 1, 0, 0), 7);
	ck_assert_uint_eq(state, 8);
	combine_contended(&o, NULL, "oyama (defaults)");
	locus_oyama_destroy(&o);

	locus_wait park = {LOCUS_WAIT_PARK, 0};
	ck_assert_int_eq(locus_oyama_init(&o, &park, 1), 0);
	combine_contended(&o, NULL, "oyama (park, pass=1)");
	locus_oyama_destroy(&o);

	locus_wait spin = {LOCUS_WAIT_SPIN, 0};
	ck_assert_int_eq(locus_oyama_init(&o, &spin, 2), 0);
	combine_contended(&o, NULL, "oyama (spin, pass=2)");
	locus_oyama_destroy(&o);
}
END_TEST

START_TEST(ccsynch_direct)
{
	locus_ccsynch c;
	uint64_t state = 0;
	ck_assert_int_eq(locus_ccsynch_init(&c, NULL, 0), 0);
	ck_assert_uint_eq(locus_ccsynch_run(&c, counter_add, &state, 7, 0, 0), 0);
	ck_assert_uint_eq(locus_ccsynch_run(&c, counter_add, &state, 1, 0, 0), 7);
	ck_assert_uint_eq(state, 8);
	combine_contended(NULL, &c, "ccsynch (defaults)");
	locus_ccsynch_destroy(&c);

	locus_wait park = {LOCUS_WAIT_PARK, 0};
	ck_assert_int_eq(locus_ccsynch_init(&c, &park, 1), 0);
	combine_contended(NULL, &c, "ccsynch (park, pass=1)");
	locus_ccsynch_destroy(&c);

	locus_wait spin = {LOCUS_WAIT_SPIN, 0};
	ck_assert_int_eq(locus_ccsynch_init(&c, &spin, 2), 0);
	combine_contended(NULL, &c, "ccsynch (spin, pass=2)");
	locus_ccsynch_destroy(&c);
}
END_TEST

/* --- stm -------------------------------------------------------------------- */

START_TEST(stm_use_unknown_method)
{
	char err[256] = "";
	ck_assert_int_eq(locus_stm_use("nosuch", err, sizeof err), -1);
	ck_assert_msg(err[0] != '\0', "no message for an unknown method");
	ck_assert_ptr_null(locus_stm_method());

	/* The message respects errlen. */
	char small[16];
	memset(small, 'X', sizeof small);
	ck_assert_int_eq(locus_stm_use("nosuch", small, 8), -1);
	ck_assert_msg(memchr(small, '\0', 8) != NULL, "message not terminated within errlen");
	for (int i = 8; i < 16; i++)
		ck_assert_msg(small[i] == 'X', "message written past errlen");
}
END_TEST

#ifdef LOCUS_HAVE_STM

START_TEST(stm_one_method_per_process)
{
	char err[256] = "";
	ck_assert_int_eq(locus_stm_available(), 1);
	ck_assert_ptr_null(locus_stm_method());
	ck_assert_msg(locus_stm_use("ml_wt", err, sizeof err) == 0, "ml_wt: %s", err);
	ck_assert_pstr_eq(locus_stm_method(), "ml_wt");

	err[0] = '\0';
	ck_assert_int_eq(locus_stm_use("gl_wt", err, sizeof err), -1);
	ck_assert_msg(err[0] != '\0', "no message when a second method is refused");
	ck_assert_pstr_eq(locus_stm_method(), "ml_wt");

	ck_assert_msg(locus_stm_use("ml_wt", err, sizeof err) == 0, "ml_wt again: %s", err);

	/* Through the executor too: same method opens, a different one does not. */
	uint64_t state = 0;
	locus_cs *cs = locus_cs_open("stm:ml_wt", &state);
	ck_assert_msg(cs != NULL, "stm:ml_wt: %s", locus_cs_error());
	ck_assert_pstr_eq(locus_cs_name(cs), "stm");
	locus_cs_close(cs);
	open_fails("stm:gl_wt");
	open_fails("stm:nosuch");
}
END_TEST

/* locus_stm_mode() from a transactional clone (1) and from a function without one (2). */
static void check_modes(const char *method, uint64_t want_tm, uint64_t want_plain)
{
	char err[256] = "";
	ck_assert_msg(locus_stm_use(method, err, sizeof err) == 0, "%s: %s", method, err);
	ck_assert_int_eq(locus_stm_mode(), 0);
	uint64_t state = 0;
	uint64_t tm = locus_stm_run(mode_probe_tm, &state, 0, 0, 0);
	uint64_t plain = locus_stm_run(mode_probe_plain, &state, 0, 0, 0);
	ck_assert_msg(tm == want_tm,
		      "%s: LOCUS_TM_CALLABLE section saw locus_stm_mode() = %llu, expected %llu",
		      method, (unsigned long long)tm, (unsigned long long)want_tm);
	ck_assert_msg(plain == want_plain,
		      "%s: uninstrumented section saw locus_stm_mode() = %llu, expected %llu",
		      method, (unsigned long long)plain, (unsigned long long)want_plain);
	ck_assert_int_eq(locus_stm_mode(), 0);

	/* The same through the executor. */
	char spec[64];
	snprintf(spec, sizeof spec, "stm:%s", method);
	locus_cs *cs = locus_cs_open(spec, &state);
	ck_assert_msg(cs != NULL, "%s: %s", spec, locus_cs_error());
	ck_assert_uint_eq(locus_cs_run(cs, mode_probe_tm, 0, 0, 0), want_tm);
	ck_assert_uint_eq(locus_cs_run(cs, mode_probe_plain, 0, 0, 0), want_plain);
	locus_cs_close(cs);
}

START_TEST(stm_modes_ml_wt)
{
	check_modes("ml_wt", 1, 2);
}
END_TEST

START_TEST(stm_modes_gl_wt)
{
	check_modes("gl_wt", 1, 2);
}
END_TEST

START_TEST(stm_modes_serialirr)
{
	check_modes("serialirr", 2, 2);
}
END_TEST

/*
 * A section that runs another section of the same stm executor. The inner
 * run is part of the outer transaction and must not pass the admission gate
 * again: with the gate full of outer sections, one waiting for a place
 * inside would wait for itself. (The outer sections have no transactional
 * clone, so they run irrevocably, one at a time, and the others wait inside
 * the gate for libitm's serial lock.)
 */
#define NESTED_THREADS 6
#define NESTED_ITERS   200

struct nested {
	locus_cs *cs;
	uint64_t count; /* under the executor */
};

static uint64_t nested_inner(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	struct nested *n = state;
	n->count += a;
	return 0;
}

static uint64_t nested_outer(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	struct nested *n = state;
	return locus_cs_run(n->cs, nested_inner, a, 0, 0);
}

static void *nested_thread(void *arg)
{
	struct nested *n = arg;
	for (int i = 0; i < NESTED_ITERS; i++)
		locus_cs_run(n->cs, nested_outer, 1, 0, 0);
	return NULL;
}

START_TEST(stm_nested_runs_skip_the_gate)
{
	struct nested n = {0};
	pthread_t th[NESTED_THREADS];
	n.cs = locus_cs_open("stm:ml_wt", &n);
	ck_assert_msg(n.cs != NULL, "stm:ml_wt: %s", locus_cs_error());
	ck_assert_pstr_eq(locus_cs_spec(n.cs), "stm:ml_wt,admit");
	for (int t = 0; t < NESTED_THREADS; t++)
		test_start_thread(&th[t], nested_thread, &n);
	for (int t = 0; t < NESTED_THREADS; t++)
		ck_assert_msg(test_join_within(th[t], HANG_S) == 0,
			      "thread %d hung: a nested run waited at the gate?", t);
	ck_assert_uint_eq(n.count, (uint64_t)NESTED_THREADS * NESTED_ITERS);
	locus_cs_close(n.cs);
}
END_TEST

/*
 * locus_stm_run skips its gate while no more threads use stm than the gate
 * lets in (stm.c). The count must follow the threads: in when a thread first
 * runs, out when it exits (or the gate would be used for ever after a burst of
 * threads), and in a fork child only the thread that forked.
 */
#define USER_THREADS 8

struct users {
	locus_cs *cs;
	uint64_t count;
	pthread_barrier_t ran, go;
};

static void *user_thread(void *arg)
{
	struct users *u = arg;
	locus_cs_run(u->cs, counter_add, 1, 0, 0);
	pthread_barrier_wait(&u->ran);
	pthread_barrier_wait(&u->go);
	for (int i = 0; i < 100; i++)
		locus_cs_run(u->cs, counter_add, 1, 0, 0);
	return NULL;
}

START_TEST(stm_gate_counts_its_users)
{
	struct users u = {0};
	pthread_t th[USER_THREADS];
	u.cs = locus_cs_open("stm:ml_wt", &u.count);
	ck_assert_msg(u.cs != NULL, "stm:ml_wt: %s", locus_cs_error());
	locus_cs_run(u.cs, counter_add, 1, 0, 0);
	ck_assert_uint_eq(stm_gate_users(), 1);
	ck_assert_int_eq(pthread_barrier_init(&u.ran, NULL, USER_THREADS + 1), 0);
	ck_assert_int_eq(pthread_barrier_init(&u.go, NULL, USER_THREADS + 1), 0);
	for (int t = 0; t < USER_THREADS; t++)
		test_start_thread(&th[t], user_thread, &u);
	pthread_barrier_wait(&u.ran);
	ck_assert_uint_eq(stm_gate_users(), USER_THREADS + 1);

	/* A child of a process with USER_THREADS idle users has one thread. */
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork failed");
	if (pid == 0) {
		int ok = stm_gate_users() == 1;
		locus_cs_run(u.cs, counter_add, 1, 0, 0);
		_exit(ok && u.count == USER_THREADS + 2 ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "fork child: wrong count of stm users, or its run failed");

	pthread_barrier_wait(&u.go);
	for (int t = 0; t < USER_THREADS; t++)
		ck_assert_msg(test_join_within(th[t], HANG_S) == 0, "thread %d hung", t);
	ck_assert_uint_eq(u.count, 1 + USER_THREADS * 101);
	ck_assert_uint_eq(stm_gate_users(), 1);
	pthread_barrier_destroy(&u.ran);
	pthread_barrier_destroy(&u.go);
	locus_cs_close(u.cs);
}
END_TEST

#else

START_TEST(stm_not_built)
{
	char err[256] = "";
	ck_assert_int_eq(locus_stm_available(), 0);
	ck_assert_int_eq(locus_stm_use("ml_wt", err, sizeof err), -1);
	ck_assert_msg(err[0] != '\0', "no message when stm is not built");
	ck_assert_ptr_null(locus_stm_method());
	ck_assert_int_eq(locus_stm_mode(), 0);
}
END_TEST

#endif

int main(void)
{
	Suite *s = suite_create("cs_api");

	TCase *tc = tcase_create("registry");
	tcase_set_timeout(tc, 4 * HANG_S);
	tcase_add_test(tc, mechanisms_listed);
	tcase_add_test(tc, every_mechanism_runs);
	tcase_add_test(tc, server_stats);
	tcase_add_test(tc, client_stats);
	tcase_add_test(tc, waiting_variants_open);
	tcase_add_test(tc, unknown_mechanism);
	tcase_add_test(tc, unknown_option);
	tcase_add_test(tc, bad_values);
	tcase_add_test(tc, empty_and_null_spec);
	tcase_add_test(tc, explicit_spec);
	tcase_add_test(tc, usage_lists_mechanisms);
	tcase_add_test(tc, post_is_synchronous_under_contention);
	suite_add_tcase(s, tc);

	tc = tcase_create("wait");
	tcase_add_test(tc, wait_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("combine");
	tcase_set_timeout(tc, 4 * HANG_S);
	tcase_add_test(tc, oyama_direct);
	tcase_add_test(tc, ccsynch_direct);
	suite_add_tcase(s, tc);

	tc = tcase_create("stm");
	tcase_set_timeout(tc, 4 * HANG_S);
	tcase_add_test(tc, stm_use_unknown_method);
#ifdef LOCUS_HAVE_STM
	tcase_add_test(tc, stm_one_method_per_process);
	tcase_add_test(tc, stm_modes_ml_wt);
	tcase_add_test(tc, stm_modes_gl_wt);
	tcase_add_test(tc, stm_modes_serialirr);
	tcase_add_test(tc, stm_nested_runs_skip_the_gate);
	tcase_add_test(tc, stm_gate_counts_its_users);
#else
	tcase_add_test(tc, stm_not_built);
#endif
	suite_add_tcase(s, tc);

	return test_run_suite(s);
}
