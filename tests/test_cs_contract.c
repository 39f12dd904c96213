/*
 * What cs.h promises at its edges:
 *
 *  - nesting: a section that runs or posts a section of an executor served by
 *    the same server or flat slot (which would wait for itself) runs it in
 *    place; a post made on a dedicated server's thread has completed, and
 *    called back, when post returns.
 *  - a NULL executor or section function stops the process at the call with
 *    a message naming the call, not later on a server thread.
 *  - post returns 0; the only other outcome is an abort with a message, e.g.
 *    when memory runs out.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "locus/cs.h"
#include "locus/delegate.h"
#include "testutil.h"

#define HANG_S (30 * TEST_SLOWDOWN)

/* ---- nesting ----------------------------------------------------------------- */

/* Outer and inner executor specs; each pair is served by one server or slot. */
struct pair {
	const char *outer, *inner;
};

static const struct pair pairs[] = {
	{"ffwd", "ffwd"},
	{"ffwd", "async"},
	{"async", "ffwd"},
	{"async", "async:lines=1"},
	{"async:direct", "async:direct"},
	{"flat:slot=0,slots=1", "flat:slot=0,slots=1"},
	{"flat:blocked,slot=0,slots=1", "flat:doorbell,slot=0,slots=1"},
	{"mpsc", "mpsc"}, /* the same executor: its own section runs its own section */
	{"ffwd", "flat:slots=1"},
	{"mpsc", "async"},
	{"ffwd:servers=2,server=0", "async:servers=2,server=1"}, /* a server posts to another */
};
#define NPAIRS (int)(sizeof(pairs) / sizeof(pairs[0]))

/* The outer executor's state; `counter` first, so that add() works on it too. */
struct nest {
	uint64_t counter;
	locus_cs *outer, *inner;
	uint64_t outer_runs, inner_state;
	uint32_t callbacks;
	uint64_t cb_value;
	int done;
};

static uint64_t add(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t *k = state;
	uint64_t old = *k;
	*k = old + a;
	return old;
}

static void note(void *ctx, uint64_t r)
{
	struct nest *n = ctx;
	n->callbacks++;
	n->cb_value = r;
}

/* The outer section: a run and a post on the inner executor. */
static uint64_t outer_section(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct nest *n = state;
	n->outer_runs++;
	uint64_t before = locus_cs_run(n->inner, add, 1, 0, 0);
	locus_cs_post(n->inner, add, 10, 0, 0, note, n);
	return before;
}

static void *nest_main(void *arg)
{
	struct nest *n = arg;
	for (int i = 0; i < 20; i++)
		locus_cs_run(n->outer, outer_section, 0, 0, 0);
	locus_cs_drain();
	__atomic_store_n(&n->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(nested_section_on_the_same_server_runs)
{
	const struct pair *p = &pairs[_i];
	struct nest n = {0};
	/* The outer executor's state is the nest itself; the inner's a counter of its own. */
	n.outer = locus_cs_open(p->outer, &n);
	ck_assert_msg(n.outer, "%s: %s", p->outer, locus_cs_error());
	if (strcmp(p->outer, p->inner) == 0 && strncmp(p->outer, "mpsc", 4) == 0)
		n.inner = n.outer; /* mpsc: nest in the very same executor */
	else
		n.inner = locus_cs_open(p->inner, &n.inner_state);
	ck_assert_msg(n.inner, "%s: %s", p->inner, locus_cs_error());
	uint64_t *inner_state = n.inner == n.outer ? &n.counter : &n.inner_state;
	pthread_t t;
	test_start_thread(&t, nest_main, &n);
	ck_assert_msg(test_join_within(t, HANG_S) == 0, "%s inside %s: the nested section hung",
		      p->inner, p->outer);
	ck_assert_int_eq(n.done, 1);
	ck_assert_uint_eq(n.outer_runs, 20);
	ck_assert_uint_eq(n.callbacks, 20);
	ck_assert_uint_eq(*inner_state, 20 * 11);
	if (n.inner != n.outer)
		locus_cs_close(n.inner);
	locus_cs_close(n.outer);
}
END_TEST

/* A dedicated server's thread never drains: a post it makes completes before post returns. */
struct on_server {
	locus_cs *other;
	uint64_t other_state;
	uint32_t calls;
	uint32_t calls_seen_at_return;
};

static void count(void *ctx, uint64_t r)
{
	(void)r;
	((struct on_server *)ctx)->calls++;
}

static uint64_t post_from_server(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct on_server *o = state;
	uint32_t before = o->calls;
	locus_cs_post(o->other, add, 1, 0, 0, count, o);
	o->calls_seen_at_return += o->calls - before;
	return 0;
}

START_TEST(post_on_a_server_thread_completes_at_once)
{
	static const char *const servers[] = {"ffwd:servers=2,server=0", "mpsc"};
	static const char *const others[] = {"async:servers=2,server=1", "flat", "mpsc"};
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++) {
			struct on_server o = {0};
			locus_cs *srv = locus_cs_open(servers[i], &o);
			ck_assert_msg(srv, "%s", locus_cs_error());
			o.other = locus_cs_open(others[j], &o.other_state);
			ck_assert_msg(o.other, "%s", locus_cs_error());
			for (int k = 0; k < 50; k++)
				locus_cs_run(srv, post_from_server, 0, 0, 0);
			ck_assert_msg(o.calls_seen_at_return == 50,
				      "%s posting to %s: %u of 50 callbacks had run when post "
				      "returned",
				      servers[i], others[j], o.calls_seen_at_return);
			ck_assert_uint_eq(o.other_state, 50);
			locus_cs_close(o.other);
			locus_cs_close(srv);
			ck_assert_uint_eq(locus_delegate_servers(), 0);
		}
}
END_TEST

/* ---- calls that must stop the process with a message ----------------------- */

/*
 * Run body(spec) in a child with stderr on a pipe; require that it dies of
 * SIGABRT and that what it printed contains `needle`.
 */
static void expect_abort(void (*body)(const char *), const char *spec, const char *needle)
{
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		alarm(HANG_S);
		dup2(fd[1], 2);
		close(fd[0]);
		body(spec);
		_exit(0); /* it returned: the parent reports that */
	}
	close(fd[1]);
	char out[4096];
	size_t len = 0;
	ssize_t r;
	while (len < sizeof(out) - 1 && (r = read(fd[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(fd[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "%s: expected an abort, the child %s %d; it printed: %s", spec,
		      WIFSIGNALED(status) ? "died of signal" : "exited with",
		      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), out);
	ck_assert_msg(strstr(out, needle) != NULL, "%s: message \"%s\" does not say \"%s\"", spec,
		      out, needle);
}

static void run_null(const char *spec)
{
	uint64_t k = 0;
	locus_cs *cs = locus_cs_open(spec, &k);
	if (!cs)
		_exit(2);
	locus_cs_run(cs, NULL, 0, 0, 0);
}

static void post_null(const char *spec)
{
	uint64_t k = 0;
	locus_cs *cs = locus_cs_open(spec, &k);
	if (!cs)
		_exit(2);
	locus_cs_post(cs, NULL, 0, 0, 0, NULL, NULL);
	locus_cs_drain();
}

static void run_null_cs(const char *spec)
{
	(void)spec;
	locus_cs_run(NULL, add, 0, 0, 0);
}

START_TEST(null_function_aborts_at_the_call)
{
	const char *const *m = locus_cs_mechanisms();
	for (int i = 0; m[i]; i++) {
		expect_abort(run_null, m[i], "locus_cs_run: the section function is NULL");
		expect_abort(post_null, m[i], "locus_cs_post: the section function is NULL");
	}
	expect_abort(run_null_cs, "(none)", "locus_cs_run: the executor is NULL");
}
END_TEST

/*
 * Out of memory while posting: the process stops with a message (post has no
 * failure return). The address-space limit leaves the queue no room.
 */
static void post_out_of_memory(const char *spec)
{
	uint64_t k = 0;
	locus_cs *small = locus_cs_open("async", &k);
	if (!small)
		_exit(2);
	locus_cs_run(small, add, 1, 0, 0); /* the servers and this thread's channel exist */
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long pages = 0;
	if (!f || fscanf(f, "%lu", &pages) != 1)
		_exit(3);
	fclose(f);
	/* Current mappings plus 1 MiB: far less than the 3.5 MiB pending queue. */
	struct rlimit lim = {.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (1ul << 20),
			     .rlim_max = RLIM_INFINITY};
	if (setrlimit(RLIMIT_AS, &lim) != 0)
		_exit(4);
	/* Opening is small; the first post makes this thread's 65536-entry pending queue. */
	locus_cs *big = locus_cs_open(spec, &k);
	if (!big)
		_exit(5);
	locus_cs_post(big, add, 1, 0, 0, NULL, NULL);
	locus_cs_drain();
}

START_TEST(post_out_of_memory_aborts_with_a_message)
{
	expect_abort(post_out_of_memory, "async:queue=65536", "out of memory");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cs_contract");
	TCase *tc = tcase_create("nesting");
	tcase_set_timeout(tc, 3 * HANG_S);
	tcase_add_loop_test(tc, nested_section_on_the_same_server_runs, 0, NPAIRS);
	tcase_add_test(tc, post_on_a_server_thread_completes_at_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("aborts");
	tcase_set_timeout(tc, 3 * HANG_S);
	tcase_add_test(tc, null_function_aborts_at_the_call);
	/* Sanitizers reserve terabytes of address space: an RLIMIT_AS test cannot run there. */
	if (!TEST_SANITIZED)
		tcase_add_test(tc, post_out_of_memory_aborts_with_a_message);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
