/*
 * The executor's lifecycle edges (cs.h, "Lifetime"): threads that exit while
 * the last executor closes, drain and thread exit with callbacks that post
 * again, and fork.
 *
 *  - churn: short-lived threads open, use and close executors while another
 *    thread opens and closes the same kind; every close may be the last, so
 *    the runtime stops and starts under the exiting threads. Sanitizer
 *    builds catch a thread that touches a runtime another thread freed.
 *  - chains: a callback posts to a second executor. One drain must complete
 *    the second post too; so must a thread's exit.
 *  - fork: the child of a process whose delegation servers run can use the
 *    executors it inherited and open new ones; the parent is unaffected.
 *    (Not under ThreadSanitizer, which cannot follow a threaded fork: main.)
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "locus/cs.h"
#include "locus/delegate.h"
#include "testutil.h"

#define HANG_S (60 * TEST_SLOWDOWN)

static uint64_t bump(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t *k = state;
	uint64_t old = *k;
	*k = old + (a ? a : 1);
	return old;
}

/* ---- churn: thread exit against the last close --------------------------- */

static const char *const churn_specs[] = {"async",	   "ffwd",	    "async:direct",
					  "flat",	   "flat:doorbell", "flat:bound=2",
					  "async:lines=1", "mpsc",	    NULL};

#define CHURN_WAVES (TEST_SANITIZED ? 30 : 150)
#define CHURN_T	    8
#define CHURN_OPS   20

struct churner {
	const char *spec;
	uint64_t counter;
	uint32_t calls;
	int ok;
};

static void count_call(void *ctx, uint64_t r)
{
	(void)r;
	((struct churner *)ctx)->calls++;
}

/* Open, use, close, exit: the exit hook then runs with no executor of ours open. */
static void *churn_worker(void *arg)
{
	struct churner *c = arg;
	locus_cs *cs = locus_cs_open(c->spec, &c->counter);
	if (!cs)
		return NULL;
	for (int i = 0; i < CHURN_OPS; i++) {
		locus_cs_run(cs, bump, 1, 0, 0);
		locus_cs_post(cs, bump, 1, 0, 0, count_call, c);
	}
	locus_cs_close(cs);
	c->ok = 1;
	return NULL;
}

struct opener {
	const char *spec;
	int stop;
	uint64_t rounds;
};

static void *churn_opener(void *arg)
{
	struct opener *o = arg;
	uint64_t k = 0;
	while (!__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) {
		locus_cs *cs = locus_cs_open(o->spec, &k);
		if (!cs)
			break;
		locus_cs_run(cs, bump, 1, 0, 0);
		locus_cs_close(cs);
		o->rounds++;
	}
	return NULL;
}

START_TEST(exit_races_last_close)
{
	const char *spec = churn_specs[_i];
	struct opener o = {.spec = spec};
	pthread_t ot;
	test_start_thread(&ot, churn_opener, &o);
	for (int w = 0; w < CHURN_WAVES; w++) {
		struct churner c[CHURN_T];
		pthread_t t[CHURN_T];
		for (int i = 0; i < CHURN_T; i++) {
			c[i] = (struct churner){.spec = spec};
			test_start_thread(&t[i], churn_worker, &c[i]);
		}
		for (int i = 0; i < CHURN_T; i++) {
			ck_assert_msg(test_join_within(t[i], HANG_S) == 0, "%s: worker hung", spec);
			ck_assert_msg(c[i].ok, "%s: worker could not open: %s", spec,
				      locus_cs_error());
			ck_assert_uint_eq(c[i].counter, 2 * CHURN_OPS);
			ck_assert_uint_eq(c[i].calls, CHURN_OPS);
		}
	}
	__atomic_store_n(&o.stop, 1, __ATOMIC_RELEASE);
	ck_assert_msg(test_join_within(ot, HANG_S) == 0, "%s: opener hung", spec);
	ck_assert_uint_eq(locus_delegate_servers(), 0);
}
END_TEST

/* ---- chains: callbacks that post ----------------------------------------- */

struct chain_case {
	const char *first, *second;
};

static const struct chain_case chains[] = {
	{"mpsc", "async"},	   {"mpsc", "flat"},	     {"flat", "async"},
	{"flat", "flat"},	   {"flat", "flat:lines=1"}, {"async", "async:lines=1"},
	{"async:lines=1", "mpsc"}, {"mpsc", "mpsc"},	     {"async", "flat:doorbell"},
	{"ffwd", "async:direct"},
};
#define NCHAINS (int)(sizeof(chains) / sizeof(chains[0]))

/* Each link: the callback of a post to `first` posts to `second`, whose callback
   posts to `first` again, `hops` times in all. */
struct chain {
	locus_cs *cs[2];
	uint64_t counter[2];
	uint32_t hops;	   /* posts still to make */
	uint32_t answered; /* callbacks run */
	pthread_t owner;
	uint32_t wrong_thread;
};

static void chain_next(void *ctx, uint64_t r)
{
	(void)r;
	struct chain *ch = ctx;
	ch->answered++;
	if (!pthread_equal(ch->owner, pthread_self()))
		ch->wrong_thread++;
	if (ch->hops) {
		uint32_t which = ch->hops-- % 2;
		locus_cs_post(ch->cs[which], bump, 1, 0, 0, chain_next, ch);
	}
}

static void chain_open(struct chain *ch, const struct chain_case *cc, uint32_t hops)
{
	memset(ch, 0, sizeof(*ch));
	ch->cs[1] = locus_cs_open(cc->first, &ch->counter[1]);
	ck_assert_msg(ch->cs[1], "%s: %s", cc->first, locus_cs_error());
	ch->cs[0] = locus_cs_open(cc->second, &ch->counter[0]);
	ck_assert_msg(ch->cs[0], "%s: %s", cc->second, locus_cs_error());
	ch->hops = hops;
	ch->owner = pthread_self();
}

static void chain_check(struct chain *ch, const struct chain_case *cc, uint32_t hops,
			const char *when)
{
	ck_assert_msg(ch->answered == hops + 1 && ch->hops == 0,
		      "%s -> %s: %s: %u of %u callbacks ran (%u posts not made)", cc->first,
		      cc->second, when, ch->answered, hops + 1, ch->hops);
	ck_assert_uint_eq(ch->counter[0] + ch->counter[1], hops + 1);
	ck_assert_uint_eq(ch->wrong_thread, 0);
}

/* One drain completes every post, including those made by callbacks during it. */
START_TEST(drain_completes_posts_made_while_draining)
{
	const struct chain_case *cc = &chains[_i];
	for (uint32_t hops = 1; hops <= 9; hops += 4) {
		struct chain ch;
		chain_open(&ch, cc, hops);
		locus_cs_post(ch.cs[1], bump, 1, 0, 0, chain_next, &ch);
		locus_cs_drain();
		chain_check(&ch, cc, hops, "after one drain");
		locus_cs_close(ch.cs[0]);
		locus_cs_close(ch.cs[1]);
	}
	ck_assert_uint_eq(locus_delegate_servers(), 0);
}
END_TEST

struct exit_chain {
	struct chain *ch;
	int second_first;
};

static void *post_chain_and_exit(void *arg)
{
	struct exit_chain *e = arg;
	e->ch->owner = pthread_self();
	/* Using the second executor first arms its exit hook, which then runs
	   before the first's hook runs the callbacks that post to it. */
	if (e->second_first)
		locus_cs_run(e->ch->cs[0], bump, 1, 0, 0);
	/* Several chains at once, so some are still in flight at exit. */
	for (int i = 0; i < 4; i++)
		locus_cs_post(e->ch->cs[1], bump, 1, 0, 0, chain_next, e->ch);
	return NULL; /* no drain: the exit hook must finish everything */
}

/* A thread that exits without draining completes its posts and the posts of their callbacks. */
START_TEST(exit_completes_posts_made_by_callbacks)
{
	const struct chain_case *cc = &chains[_i];
	const uint32_t hops = 6;
	for (int order = 1; order >= 0; order--) {
		struct chain ch;
		chain_open(&ch, cc, hops);
		struct exit_chain e = {&ch, order};
		pthread_t t;
		test_start_thread(&t, post_chain_and_exit, &e);
		ck_assert_msg(test_join_within(t, HANG_S) == 0, "%s -> %s: exiting thread hung",
			      cc->first, cc->second);
		/* Four chains started, `hops` follow-up posts shared among them. */
		ck_assert_msg(ch.answered == hops + 4 && ch.hops == 0,
			      "%s -> %s%s: after thread exit %u of %u callbacks ran", cc->first,
			      cc->second, order ? " (second used first)" : "", ch.answered,
			      hops + 4);
		ck_assert_uint_eq(ch.counter[0] + ch.counter[1], hops + 4 + (uint32_t)order);
		ck_assert_uint_eq(ch.wrong_thread, 0);
		locus_cs_close(ch.cs[0]);
		locus_cs_close(ch.cs[1]);
		ck_assert_uint_eq(locus_delegate_servers(), 0);
	}
}
END_TEST

/* ---- fork ------------------------------------------------------------------ */

#ifndef LOCUS_TEST_TSAN /* not under ThreadSanitizer: see main */

static const char *const fork_specs[] = {"ffwd", "async",   "async:direct",
					 "flat", "mpsc",    "mpsc:locked,copy",
					 "mcs",	 "ccsynch", NULL};

static int child_fail(const char *spec, const char *what)
{
	fprintf(stderr, "fork child, %s: %s\n", spec, what);
	return 1;
}

/* In the child: the inherited executor and a new one both work, then close. */
static int child_checks(const char *spec, locus_cs *inherited, uint64_t *counter, uint64_t at_fork)
{
	if (*counter != at_fork)
		return child_fail(spec, "the child's state does not hold the posts made before");
	if (locus_cs_run(inherited, bump, 1, 0, 0) != at_fork)
		return child_fail(spec, "run on the inherited executor returned a wrong value");
	for (int i = 0; i < 100; i++)
		locus_cs_post(inherited, bump, 1, 0, 0, NULL, NULL);
	locus_cs_drain();
	if (*counter != at_fork + 101)
		return child_fail(spec, "posts on the inherited executor were lost");
	uint64_t fresh_state = 0;
	locus_cs *fresh = locus_cs_open(spec, &fresh_state);
	if (!fresh)
		return child_fail(spec, locus_cs_error());
	for (int i = 0; i < 50; i++)
		locus_cs_run(fresh, bump, 1, 0, 0);
	locus_cs_drain();
	if (fresh_state != 50)
		return child_fail(spec, "a new executor in the child lost sections");
	locus_cs_close(fresh);
	locus_cs_close(inherited);
	if (locus_delegate_servers() != 0)
		return child_fail(spec, "the child's servers did not stop with its last close");
	return 0;
}

START_TEST(fork_child_can_use_executors)
{
	const char *spec = fork_specs[_i];
	uint64_t counter = 0;
	locus_cs *cs = locus_cs_open(spec, &counter);
	ck_assert_msg(cs, "%s: %s", spec, locus_cs_error());
	for (int i = 0; i < 100; i++)
		locus_cs_run(cs, bump, 1, 0, 0);
	/* Posts still outstanding at the fork: fork completes them first. */
	for (int i = 0; i < 20; i++)
		locus_cs_post(cs, bump, 1, 0, 0, NULL, NULL);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_msg(pid >= 0, "fork failed");
	if (pid == 0) {
		alarm(HANG_S); /* a hung child dies of SIGALRM and the parent reports it */
		_exit(child_checks(spec, cs, &counter, 120));
	}
	/* The parent goes on as before. */
	for (int i = 0; i < 100; i++)
		locus_cs_run(cs, bump, 1, 0, 0);
	locus_cs_drain();
	ck_assert_uint_eq(counter, 220);
	int status = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(!WIFSIGNALED(status), "%s: fork child died of signal %d%s", spec,
		      WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: fork child failed (see its message above)", spec);
	locus_cs_close(cs);
}
END_TEST
#endif

int main(void)
{
	Suite *s = suite_create("cs_lifecycle");
	TCase *tc = tcase_create("churn");
	tcase_set_timeout(tc, 3 * HANG_S);
	int n = 0;
	while (churn_specs[n])
		n++;
	tcase_add_loop_test(tc, exit_races_last_close, 0, n);
	suite_add_tcase(s, tc);

	tc = tcase_create("chains");
	tcase_set_timeout(tc, 2 * HANG_S);
	tcase_add_loop_test(tc, drain_completes_posts_made_while_draining, 0, NCHAINS);
	tcase_add_loop_test(tc, exit_completes_posts_made_by_callbacks, 0, NCHAINS);
	suite_add_tcase(s, tc);

	/*
	 * ThreadSanitizer cannot follow threads started in the child of a
	 * threaded fork (it reports the child's first new thread as a duplicate
	 * of a parent thread that no longer exists), so the fork tests run in the
	 * release and ASan builds only.
	 */
#ifndef LOCUS_TEST_TSAN
	tc = tcase_create("fork");
	tcase_set_timeout(tc, 2 * HANG_S);
	n = 0;
	while (fork_specs[n])
		n++;
	tcase_add_loop_test(tc, fork_child_can_use_executors, 0, n);
	suite_add_tcase(s, tc);
#endif
	return test_run_suite(s);
}
