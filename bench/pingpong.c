/*
 * locus-bench pingpong: the command line and the report of the floor
 * measurements (pingpong.h; each runs in a child process, pingpong_run.c).
 */
#include "pingpong.h"

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "locus/delegate.h"
#include "locus/export.h"
#include "opts.h"

#define PROG	      "locus-bench pingpong"
#define MAX_CPU_INDEX 65535

#define complain(...) bench_complain(PROG, __VA_ARGS__)

struct config {
	int cpu[2];
	int cpus_given; /* --cpus */
	unsigned depth;
	double duration;
	unsigned repeat;
	int json;
	long online;
};

/* Every run of both tests: runs[test * repeat + run]. */
struct outcome {
	enum bench_cell state;
	double mops, ns; /* million round trips (messages) per second; ns each */
};

void pingpong_usage(FILE *out)
{
	fprintf(out,
		"usage: locus-bench pingpong [--cpus A,B] [--depth N] [--duration SECONDS]\n"
		"                            [--repeat N] [--json]\n"
		"\n"
		"The floor under delegation on this machine: what moving a cache line between\n"
		"two cores costs, with nothing else in the way. Two threads, pinned to CPUs A\n"
		"and B, run three tests, each in a child process of its own:\n"
		"  round trip  the threads take turns on one 64-byte-aligned word alone on its\n"
		"              line: each waits until it sees the other's value, then writes\n"
		"              its own. One round trip moves the line there and back, as a\n"
		"              synchronous delegated call (ffwd) must at least: its request\n"
		"              goes to the server and its answer comes back.\n"
		"  ring        A produces, B consumes, one-way messages through a ring of\n"
		"              N cache-line slots (default %d, the async executor's request\n"
		"              lines per client): the producer runs up to a ring ahead, so\n"
		"              this is the floor of a pipelined channel (async, flat), which\n"
		"              may pass the round trip's rate. The consumer checks every\n"
		"              message's number and payload.\n"
		"  answered ring  the same ring, but each message is a request of 48 B (as\n"
		"              large as an async request line's) and B writes its answer\n"
		"              back into the slot, where A reads and checks it before it\n"
		"              writes the slot again: the least a request that is answered\n"
		"              (async: the callback's result) must move. The plain ring's\n"
		"              slot goes back to A too (to show it empty), so answering\n"
		"              moves more bytes, not more lines.\n"
		"The threads spin on plain loads (no pause instruction) and nothing else runs\n"
		"in the process: on a machine busy with other work the figures include the\n"
		"time a thread waited for its CPU, and mean little.\n"
		"\n"
		"  --cpus A,B          the two CPUs (default: the first two this process may\n"
		"                      run on; two different ones)\n"
		"  --depth N           ring slots, 1 to %d (default %d)\n"
		"  --duration SECONDS  how long each test runs (default: 1)\n"
		"  --repeat N          run the tests N times, interleaved (round trip, ring,\n"
		"                      answered ring, round trip ...; default 1, at most %d);\n"
		"                      the table then shows the median and (min-max) of the\n"
		"                      runs\n"
		"  --json              one JSON object per measurement on stdout, the table on\n"
		"                      stderr. Fields: bench (pingpong), test (round_trip,\n"
		"                      ring or answered_ring), run (1 to N), cpu_a, cpu_b\n"
		"                      (rings: producer, consumer), depth and slot_bytes\n"
		"                      (rings), request_bytes (answered_ring), duration_s,\n"
		"                      requested_s, ops (round trips, or messages), mops\n"
		"                      (million ops per second), ns_per_op, cpus (online).\n"
		"  --help              this text\n"
		"\n"
		"Output: per test, nanoseconds per round trip (message) and millions of them\n"
		"per second. locus-bench fetchadd measures the same floor after its sweep and\n"
		"prints each 1-client delegation cell's ratio to it (see its --floor).\n"
		"Where this process may run on one CPU only there is no cross-core round trip\n"
		"to measure: it says so and exits with status 1.\n"
		"Exit status: 0 measured, 1 a measurement failed or one CPU only, 2 bad command\n"
		"line.\n",
		LOCUS_DELEGATE_LINES_DEFAULT, PINGPONG_MAX_DEPTH, LOCUS_DELEGATE_LINES_DEFAULT,
		BENCH_MAX_REPEAT);
}

static int allowed(const int *cpus, int n, int cpu)
{
	for (int i = 0; i < n; i++)
		if (cpus[i] == cpu)
			return 1;
	return 0;
}

/* The CPU list for messages: "0-1" is not worth the code; "0,1,2". */
static void cpu_list(const int *cpus, int n, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? "," : "", cpus[i]);
}

static int parse_cpus(struct config *c, const char *v)
{
	uint64_t *list = NULL;
	size_t n = 0;
	char err[256];

	if (opts_uint_list(v, 0, MAX_CPU_INDEX, &list, &n, err, sizeof(err)))
		return complain("--cpus: %s", err);
	if (n != 2) {
		free(list);
		return complain("--cpus: two CPUs, A,B (got %zu)", n);
	}
	c->cpu[0] = (int)list[0];
	c->cpu[1] = (int)list[1];
	free(list);
	if (c->cpu[0] == c->cpu[1])
		return complain("--cpus: two different CPUs: threads that share one take turns "
				"on it, and that measures the scheduler, not a cache line");
	c->cpus_given = 1;
	return 0;
}

/* 0 to run, 1 if help was printed, 2 on a bad command line (reported). */
static int parse_args(int argc, char **argv, struct config *c)
{
	*c = (struct config){.depth = LOCUS_DELEGATE_LINES_DEFAULT,
			     .duration = 1,
			     .repeat = 1,
			     .online = bench_cpus()};
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			pingpong_usage(stdout);
			return 1;
		}
	for (int i = 1; i < argc; i++) {
		const char *v;
		char err[256];
		uint64_t n;
		int r;

		if (strcmp(argv[i], "--json") == 0) {
			c->json = 1;
			continue;
		}
		if ((r = bench_option(PROG, argc, argv, &i, "--cpus", &v)) != 0) {
			if (r < 0 || parse_cpus(c, v))
				return 2;
			continue;
		}
		if ((r = bench_option(PROG, argc, argv, &i, "--depth", &v)) != 0) {
			if (r > 0 && opts_uint(v, 1, PINGPONG_MAX_DEPTH, &n, err, sizeof(err)))
				return complain("--depth: %s", err);
			if (r < 0)
				return 2;
			c->depth = (unsigned)n;
			continue;
		}
		if ((r = bench_option(PROG, argc, argv, &i, "--duration", &v)) != 0) {
			if (r > 0 &&
			    opts_seconds(v, 0, BENCH_MAX_DURATION, &c->duration, err, sizeof(err)))
				return complain("--duration: %s", err);
			if (r < 0)
				return 2;
			continue;
		}
		if ((r = bench_repeat_option(PROG, argc, argv, &i, &c->repeat)) != 0) {
			if (r < 0)
				return 2;
			continue;
		}
		if (argv[i][0] == '-')
			return complain("unknown option '%s' (see --help)", argv[i]);
		return complain("unexpected argument '%s' (see --help)", argv[i]);
	}
	return 0;
}

/* The pair: --cpus, checked against the affinity mask, or its first two. 0, 1 or 2. */
static int choose_cpus(struct config *c)
{
	int cpus[256], n = pingpong_allowed_cpus(cpus, 256);
	char list[1024];

	cpu_list(cpus, n < 256 ? n : 256, list, sizeof(list));
	if (c->cpus_given) {
		for (int i = 0; i < 2; i++)
			if (n <= 256 && !allowed(cpus, n, c->cpu[i]))
				return complain("--cpus: this process may not run on CPU %d (it "
						"may on %s)",
						c->cpu[i], list);
		return 0;
	}
	if (n < 2) {
		bench_complain(PROG,
			       "this process may run on one CPU only (CPU %s): a cross-core round "
			       "trip needs two, so there is no floor to measure here; nothing "
			       "measured",
			       list);
		return 1;
	}
	c->cpu[0] = cpus[0];
	c->cpu[1] = cpus[1];
	return 0;
}

struct sweep_ctx {
	const struct config *c;
	struct outcome *runs;
	size_t done;
};

static int measure_one(void *ctx, size_t col, unsigned run, size_t test)
{
	struct sweep_ctx *x = ctx;
	const struct config *c = x->c;
	struct pingpong_params p = {.test = (enum pingpong_test)test,
				    .cpu = {c->cpu[0], c->cpu[1]},
				    .depth = c->depth,
				    .duration = c->duration};
	struct outcome *o = &x->runs[test * c->repeat + run];
	struct pingpong_result r;
	char why[640];

	(void)col;
	bench_progress("[%zu/%u] %s, run %u/%u ...", ++x->done, 2 * c->repeat,
		       pingpong_test_name(p.test), run + 1, c->repeat);
	o->state = pingpong_run(&p, &r, why, sizeof(why));
	if (o->state != BENCH_CELL_OK) {
		bench_progress_clear();
		fprintf(stderr, "%s: %s (CPUs %d,%d): %s\n", PROG, pingpong_test_name(p.test),
			c->cpu[0], c->cpu[1], why);
		return -1;
	}
	o->mops = r.seconds > 0 ? (double)r.ops / r.seconds / 1e6 : 0;
	o->ns = r.ops ? r.seconds * 1e9 / (double)r.ops : 0;
	if (c->json)
		pingpong_json(&p, &r, run + 1, c->online);
	return 0;
}

/* One test's runs summarized into its two cells; 0 if a run failed (the text says how). */
static int test_cells(const struct config *c, const struct outcome *runs, int test, char *ns,
		      char *mops, size_t n)
{
	double a[BENCH_MAX_REPEAT], b[BENCH_MAX_REPEAT];
	struct bench_summary s;

	for (unsigned r = 0; r < c->repeat; r++) {
		const struct outcome *o = &runs[test * c->repeat + r];

		if (o->state != BENCH_CELL_OK) {
			snprintf(ns, n, "%s", bench_cell_text(o->state));
			snprintf(mops, n, "%s", bench_cell_text(o->state));
			return 0;
		}
		a[r] = o->ns;
		b[r] = o->mops;
	}
	bench_summarize(a, c->repeat, &s);
	bench_summary_text(ns, n, &s, 1, 1, "");
	bench_summarize(b, c->repeat, &s);
	bench_summary_text(mops, n, &s, 1, 2, "");
	return 1;
}

static void print_report(FILE *out, const struct config *c, const struct outcome *runs)
{
	char name[PINGPONG_NTESTS][64], ns[PINGPONG_NTESTS][64], mops[PINGPONG_NTESTS][64];
	int w0 = (int)strlen("test"), w1 = (int)strlen("ns per op"), w2 = (int)strlen("M ops/s");

	fprintf(out, "pingpong: CPUs %d and %d, %g s each", c->cpu[0], c->cpu[1], c->duration);
	if (c->repeat > 1)
		fprintf(out, "; %u runs of each, interleaved: the median and (range)", c->repeat);
	fputc('\n', out);
	for (int t = 0; t < PINGPONG_NTESTS; t++) {
		if (t == PINGPONG_RING || t == PINGPONG_ANSWERED)
			snprintf(name[t], sizeof(name[t]), "%sring, %u slot%s of %d B",
				 t == PINGPONG_ANSWERED ? "answered " : "", c->depth,
				 c->depth == 1 ? "" : "s", LOCUS_CACHELINE);
		else
			snprintf(name[t], sizeof(name[t]), "round trip");
		test_cells(c, runs, t, ns[t], mops[t], sizeof(ns[t]));
		w0 = (int)strlen(name[t]) > w0 ? (int)strlen(name[t]) : w0;
		w1 = (int)strlen(ns[t]) > w1 ? (int)strlen(ns[t]) : w1;
		w2 = (int)strlen(mops[t]) > w2 ? (int)strlen(mops[t]) : w2;
	}
	fprintf(out, "%-*s  %*s  %*s\n", w0, "test", w1, "ns per op", w2, "M ops/s");
	for (int t = 0; t < PINGPONG_NTESTS; t++)
		fprintf(out, "%-*s  %*s  %*s\n", w0, name[t], w1, ns[t], w2, mops[t]);
	fprintf(out,
		"round trip: one cache line there and back, a synchronous delegated call's floor\n"
		"ring: one-way messages, up to %u in flight, a pipelined channel's floor\n"
		"answered ring: the same with requests of 48 B, each answered in its slot\n",
		c->depth);
	fflush(out);
}

int pingpong_main(int argc, char **argv)
{
	struct config c;
	struct outcome *runs;
	int rc = parse_args(argc, argv, &c);

	if (rc)
		return rc == 1 ? 0 : 2;
	if ((rc = choose_cpus(&c)) != 0)
		return rc;
	runs = calloc(PINGPONG_NTESTS * (size_t)c.repeat, sizeof(*runs));
	if (!runs)
		return complain("out of memory");
	struct sweep_ctx x = {.c = &c, .runs = runs};
	rc = bench_sweep_run(&(struct bench_sweep){.ncols = 1,
						   .nmech = PINGPONG_NTESTS,
						   .repeat = c.repeat,
						   .ctx = &x,
						   .measure = measure_one});
	bench_progress_clear();
	print_report(c.json ? stderr : stdout, &c, runs);
	free(runs);
	return rc;
}
