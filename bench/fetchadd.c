/*
 * locus-bench fetchadd: the command line, the sweep over (threads, vars,
 * mechanism), and the report. Each measurement runs in a child process
 * (fetchadd_run.c); this process never opens an executor itself, so that it
 * holds no process-wide library state (stm method, delegation threads) that
 * a fork would copy half of.
 */
#include "fetchadd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "common.h"
#include "common/clock.h"
#include "locus/cs.h"
#include "locus/delegate.h"
#include "mechlist.h"
#include "opts.h"
#include "pingpong.h"
#include "repeat.h"

#define PROG		   "locus-bench fetchadd"
#define MAX_THREADS	   1024
#define MAX_SERVERS	   FETCHADD_MAX_SERVERS
#define MAX_VARS	   (1u << 20)
#define MAX_DELAY	   1000000000ull
#define MAX_SECTION_NS	   ((uint64_t)NS_PER_S) /* a second */
#define MAX_LATENCY_EVERY  1000000ull
#define SETUP_VARS_PER_S   50000.0 /* counters (and executors) set up per second, at worst */
#define FLOOR_MAX_DURATION 1.0	   /* seconds per floor test, at most */

struct config {
	struct bench_args a; /* --mechanisms, --duration, --servers, --json */
	uint64_t *threads;
	size_t nthreads;
	uint64_t *vars;
	size_t nvars;
	uint64_t delay;
	enum fetchadd_fn fn;
	uint64_t section_ns;
	int latency;
	int sync;
	uint64_t latency_every;
	int floor; /* --floor 1, --no-floor 0; -1: as the run goes (want_floor) */
};

/*
 * One measurement: row = mechanism, column = (threads, vars), and its run
 * (--repeat); a table cell summarizes the runs of one (row, column).
 */
struct cell {
	enum bench_cell state;
	double mops;
	double lat_median, lat_p99; /* ns, with --latency */
	unsigned servers;	    /* delegation server threads beside the clients */
	int oversubscribed;	    /* clients + servers > CPUs */
	int delegated;		    /* the sections ran away from the calling thread */
	char spec[256];		    /* as measured */
};

#define complain(...) bench_complain(PROG, __VA_ARGS__)

void fetchadd_usage(FILE *out)
{
	const char *const *names = locus_cs_mechanisms();
	long cpus = bench_cpus();
	size_t i;

	fprintf(out,
		"usage: locus-bench fetchadd [--mechanisms LIST] [--threads LIST] [--vars LIST]\n"
		"                            [--duration SECONDS] [--delay N] [--servers N]\n"
		"                            [--fn add|sqrt] [--section-ns N] [--latency]\n"
		"                            [--latency-every K] [--sync] [--repeat N]\n"
		"                            [--floor | --no-floor] [--json]\n"
		"\n"
		"Threads increment counters picked uniformly at random among V, each counter on\n"
		"its own cache line and guarded by its own instance of the mechanism (one\n"
		"executor or lock per counter), and we count increments per second. Every\n"
		"(mechanism, threads, vars) measurement runs in a child process of its own.\n"
		"On an asynchronous executor (async; any whose post returns before the\n"
		"function ran) an increment is a post without callback, and each thread drains\n"
		"its posts when told to stop: the time runs until the last thread has drained,\n"
		"so every increment counted was done within it.\n"
		"\n"
		"  --mechanisms LIST   executor specs and peer names, separated by commas, or\n"
		"                      \"all\" (the default: every executor below at its default\n"
		"                      options, then every peer). A spec's own options are\n"
		"                      separated by commas too: an item that is not a mechanism\n"
		"                      name continues the previous spec, as in\n"
		"                      \"ttas:spin,backoff_max=64,mcs\" (two specs). May be "
		"repeated.\n"
		"  --threads LIST      client thread counts, e.g. 1,2,8 (default: 1, CPUs,\n"
		"                      2 x CPUs; here %s%ld,%ld; at most %d). Delegation\n"
		"                      servers are not counted: they run beside these.\n"
		"  --vars LIST         counter counts, e.g. 1,1024 (default: 1; at most %u)\n"
		"  --duration SECONDS  how long each measurement runs (default: 1)\n"
		"  --delay N           pause instructions a thread executes after each increment,\n"
		"                      outside the critical section (default: 0)\n"
		"  --servers N         server threads of the delegation runtime (ffwd, async, "
		"...)\n"
		"                      for every delegation spec that does not say servers=\n"
		"                      itself: servers=N is added to its options (default: 1;\n"
		"                      at most %d). The V counters' executors are bound to the\n"
		"                      servers round robin unless the spec says server=K.\n"
		"  --fn add|sqrt       the critical section: add increments the counter (the\n"
		"                      default); sqrt also stores the square root of the new\n"
		"                      value beside it (a slower section, seed 002 Figure 9).\n"
		"                      peer:atomic does the square root after its atomic add.\n"
		"  --section-ns N      make every critical section last N ns (it increments,\n"
		"                      then is busy until N ns have passed; default 0: as\n"
		"                      --fn is; at most 1 s): long sections for fairness and\n"
		"                      the longest wait. Only with --fn add; not peer:atomic;\n"
		"                      stm runs such sections irrevocably.\n"
		"  --latency           also time one operation in K (default %d): for an\n"
		"                      asynchronous executor from before its post until its\n"
		"                      callback runs\n"
		"                      (callbacks run on the posting thread, inside its later\n"
		"                      posts or drain, so this includes the time until it\n"
		"                      looks), otherwise the call. CLOCK_MONOTONIC, in ns,\n"
		"                      including one clock read (about 20 ns here: the floor);\n"
		"                      at most %u samples per thread (fewer above %u\n"
		"                      threads), then no more are taken. The table shows\n"
		"                      median/p99 instead of Mops/s; --json adds\n"
		"                      latency_ns_median, latency_ns_p99, latency_ns_mean,\n"
		"                      latency_ns_max (of the sampled operations),\n"
		"                      latency_samples, latency_every, tsc_ghz (TSC ticks\n"
		"                      per ns over the run, by rdtsc; null without a TSC)\n"
		"                      and latency_cycles_mean, latency_cycles_median (the\n"
		"                      ns figures times tsc_ghz: TSC cycles, as rdtsc\n"
		"                      around each sample would read them; null without).\n"
		"  --latency-every K   --latency, timing one operation in K (1: every one, for\n"
		"                      the longest wait; at most 1000000)\n"
		"  --sync              on an asynchronous executor too, an increment is a run\n"
		"                      (a post, then a wait for its result), as a synchronous\n"
		"                      caller makes it: with --latency, the wait of one run\n"
		"  --repeat N          measure every cell N times (default 1; at most %d),\n"
		"                      interleaved: in each column run 1 of every mechanism,\n"
		"                      then run 2 of every one, and so on (A B C A B C, not\n"
		"                      A A A), so that a drift in the machine's speed touches\n"
		"                      them all alike. With N > 1 a cell shows the median\n"
		"                      and (min-max) of its runs, and a ranking of each column\n"
		"                      follows the table: best first by median, '>' between\n"
		"                      two neighbours whose ranges are apart, '~' between two\n"
		"                      whose ranges overlap (tied: these runs do not tell\n"
		"                      them apart). A cell with a failed run shows FAIL or\n"
		"                      LOST and is not ranked.\n"
		"  --floor, --no-floor after the table, measure the floor on this machine as\n"
		"                      locus-bench pingpong does (a cache-line round trip, a\n"
		"                      %d-slot ring and the same ring answering each request\n"
		"                      in its slot, between the first two CPUs this process\n"
		"                      may use, min(duration, %g s) each, --repeat times,\n"
		"                      interleaved) and set each 1-client delegation cell\n"
		"                      (ffwd, async, flat, mpsc at T=1) against it: its Mops/s\n"
		"                      over the floor's millions per second (with --latency,\n"
		"                      its median latency in round trips). By default the\n"
		"                      floor is measured when the table has such a cell and\n"
		"                      there is no --json; --floor measures it anyway (with\n"
		"                      --json its lines, bench \"pingpong\", join the\n"
		"                      measurements' on stdout), --no-floor never. With one\n"
		"                      CPU there is no round trip to measure: the report says so.\n"
		"  --json              one JSON object per measurement on stdout, the table on\n"
		"                      stderr. Fields: mechanism (as written), spec (as\n"
		"                      measured, every default explicit), fn, threads (clients),\n"
		"                      servers (the delegation runtime's, or one per executor\n"
		"                      for mpsc; 0 when sections run on the clients),\n"
		"                      server_requests and server_sleeps (per server, the\n"
		"                      first 64; for mpsc, sleeps counts its waits for work),\n"
		"                      vars, duration_s, requested_s, ops, mops,\n"
		"                      oversubscribed (threads + servers > CPUs), cpus, delay,\n"
		"                      section_ns, op (post: an increment was a post; run),\n"
		"                      jain (Jain's fairness index of the threads' increment\n"
		"                      counts: 1 all equal, 1/threads one thread did all),\n"
		"                      run (1 to N: which of the --repeat runs),\n"
		"                      responses_polled and responses_ready (asynchronous\n"
		"                      delegation, async and flat: response lines of requests\n"
		"                      in flight the clients looked at when they polled for\n"
		"                      answers, and of those the ones already answered;\n"
		"                      0 for the others) and ready_pct (100 x ready / polled,\n"
		"                      seed 002's responses ready when polled; null when\n"
		"                      nothing was polled).\n"
		"                      With --repeat N > 1, after each column one summary\n"
		"                      object per mechanism: summary (true), mechanism, spec,\n"
		"                      fn, threads, servers, vars, metric (mops, or\n"
		"                      latency_ns_median with --latency), runs, ok_runs,\n"
		"                      status (ok, FAIL or LOST), median, min, max, rank (1:\n"
		"                      the best; null when not ok) and ties (the mechanisms,\n"
		"                      as written, whose ranges overlap this one's).\n"
		"  --help              this text\n"
		"\n"
		"Output: a table of Mops/s (million increments per second; with --latency,\n"
		"median/p99 latency in ns), one row per mechanism as measured (delegation\n"
		"rows show the servers= they ran with), one column per (threads, vars).\n"
		"'*' after T marks columns with more client threads\n"
		"than online CPUs (%ld here); '*' after a figure marks a delegation measurement\n"
		"whose clients and servers together outnumber the CPUs. Measurements run in\n"
		"the order threads, vars, run, mechanism, so mechanisms compared in one column\n"
		"ran close together in time.\n"
		"A measurement that crashes, runs past 10 x duration + 10 s (plus 1 s per\n"
		"%.0f counters, for setting them up), loses an update (counters do not sum\n"
		"to the increments counted) or has a post fail is reported\n"
		"on stderr and as FAIL or LOST in the table, gives no JSON line, and makes the\n"
		"exit status 1.\n"
		"Exit status: 0 all measured, 1 a measurement (or the floor) failed, 2 bad\n"
		"command line.\n"
		"\n"
		"Executor mechanisms:",
		cpus > 1 ? "1," : "", cpus, 2 * cpus, MAX_THREADS, MAX_VARS, MAX_SERVERS,
		FETCHADD_SAMPLE_EVERY, FETCHADD_SAMPLES_PER_THREAD,
		FETCHADD_SAMPLES_TOTAL / FETCHADD_SAMPLES_PER_THREAD, BENCH_MAX_REPEAT,
		LOCUS_DELEGATE_LINES_DEFAULT, FLOOR_MAX_DURATION, cpus, SETUP_VARS_PER_S);
	for (i = 0; names[i]; i++)
		fprintf(out, " %s", names[i]);
	fprintf(out, "\n(spec = NAME or NAME:OPTION,OPTION...)\n\n");
	locus_cs_usage(out);
	fprintf(out, "\nPeers (not locus; same counters, same critical section function):\n");
	for (i = 0; fetchadd_peers[i]; i++)
		fprintf(out, "  %-18s  %s\n", fetchadd_peers[i], fetchadd_peer_help[i]);
}

static int apply_defaults(struct config *c)
{
	uint64_t threads[3], one = 1;

	if (bench_args_finish(&c->a))
		return 2;
	bench_default_threads(&c->a, threads);
	if (opts_default_list(&c->threads, &c->nthreads, threads, 3) ||
	    opts_default_list(&c->vars, &c->nvars, &one, 1))
		return complain("out of memory");
	return 0;
}

static int parse_list(const char *name, const char *v, uint64_t max, uint64_t **list, size_t *n)
{
	char err[256];

	free(*list);
	*list = NULL;
	if (opts_uint_list(v, 1, max, list, n, err, sizeof(err)))
		return complain("%s: %s", name, err);
	return 0;
}

/* One argument at argv[*i]; 0 or 2 (reported). */
static int parse_arg(int argc, char **argv, int *i, struct config *c)
{
	const char *v;
	char err[256];
	int r;

	if ((r = bench_args_option(&c->a, argc, argv, i, MAX_SERVERS)) >= 0)
		return r;
	if ((r = bench_option(PROG, argc, argv, i, "--threads", &v)) != 0)
		return r < 0 ? 2
			     : parse_list("--threads", v, MAX_THREADS, &c->threads, &c->nthreads);
	if ((r = bench_option(PROG, argc, argv, i, "--vars", &v)) != 0)
		return r < 0 ? 2 : parse_list("--vars", v, MAX_VARS, &c->vars, &c->nvars);
	if ((r = bench_option(PROG, argc, argv, i, "--delay", &v)) != 0) {
		if (r > 0 && opts_uint(v, 0, MAX_DELAY, &c->delay, err, sizeof(err)))
			return complain("--delay: %s", err);
		return r < 0 ? 2 : 0;
	}
	if ((r = bench_option(PROG, argc, argv, i, "--fn", &v)) != 0) {
		if (r < 0)
			return 2;
		if (strcmp(v, "add") == 0)
			c->fn = FETCHADD_ADD;
		else if (strcmp(v, "sqrt") == 0)
			c->fn = FETCHADD_SQRT;
		else
			return complain("--fn: unknown function '%s' (add or sqrt)", v);
		return 0;
	}
	if (strcmp(argv[*i], "--latency") == 0) {
		c->latency = 1;
		return 0;
	}
	if (strcmp(argv[*i], "--sync") == 0) {
		c->sync = 1;
		return 0;
	}
	if (strcmp(argv[*i], "--floor") == 0 || strcmp(argv[*i], "--no-floor") == 0) {
		c->floor = argv[*i][2] == 'f';
		return 0;
	}
	if ((r = bench_option(PROG, argc, argv, i, "--latency-every", &v)) != 0) {
		if (r > 0 &&
		    opts_uint(v, 1, MAX_LATENCY_EVERY, &c->latency_every, err, sizeof(err)))
			return complain("--latency-every: %s", err);
		c->latency = 1;
		return r < 0 ? 2 : 0;
	}
	if ((r = bench_option(PROG, argc, argv, i, "--section-ns", &v)) != 0) {
		if (r > 0 && opts_uint(v, 0, MAX_SECTION_NS, &c->section_ns, err, sizeof(err)))
			return complain("--section-ns: %s", err);
		return r < 0 ? 2 : 0;
	}
	return bench_args_unknown(&c->a, argv[*i]);
}

/* 0 to run, 1 if help was printed, 2 on a bad command line (reported). */
static int parse_args(int argc, char **argv, struct config *c)
{
	if (bench_args_start(&c->a, PROG, fetchadd_peers, argc, argv, fetchadd_usage))
		return 1;
	c->fn = FETCHADD_ADD;
	c->latency_every = FETCHADD_SAMPLE_EVERY;
	c->floor = -1;
	for (int i = 1; i < argc; i++)
		if (parse_arg(argc, argv, &i, c))
			return 2;
	if (c->section_ns && c->fn == FETCHADD_SQRT)
		return complain("--section-ns sets the section itself: use it with --fn add");
	if (apply_defaults(c))
		return 2;
	/* peer:atomic has no section to lengthen: refused if asked for, left out of "all". */
	for (size_t m = 0; c->section_ns && m < c->a.mechs.n; m++) {
		if (strcmp(c->a.mechs.m[m].spec, "peer:atomic") != 0)
			continue;
		if (!c->a.mechs.m[m].from_all)
			return complain("--section-ns: peer:atomic has no critical section to "
					"lengthen (leave it out of --mechanisms)");
		free(c->a.mechs.m[m].spec);
		memmove(&c->a.mechs.m[m], &c->a.mechs.m[m + 1],
			(c->a.mechs.n - m - 1) * sizeof(c->a.mechs.m[0]));
		c->a.mechs.n--;
		m--;
	}
	return 0;
}

static const char *fn_name(enum fetchadd_fn fn)
{
	return fn == FETCHADD_SQRT ? "sqrt" : "add";
}

/*
 * "mechanism" is the row as written (so rows group across runs with another
 * --servers), "spec" what was measured with every default explicit, and
 * "threads" the client threads: the process ran threads + servers.
 */
static void print_json(const struct config *c, const char *written, const struct fetchadd_params *p,
		       const struct fetchadd_result *r, const struct cell *cell, unsigned run)
{
	bench_json_head("fetchadd", written, r->spec);
	printf(",\"run\":%u,\"fn\":\"%s\",\"threads\":%u,\"servers\":%u,\"vars\":%zu,\"duration_"
	       "s\":%.6f,"
	       "\"requested_s\":%.6f,\"ops\":%llu,\"mops\":%.4f,\"oversubscribed\":%s,"
	       "\"cpus\":%ld,\"delay\":%llu,\"section_ns\":%llu,\"jain\":%.4f,\"op\":\"%s\"",
	       run + 1, fn_name(p->fn), p->threads, r->servers, p->vars, r->seconds, p->duration,
	       (unsigned long long)r->ops, cell->mops, cell->oversubscribed ? "true" : "false",
	       c->a.cpus, (unsigned long long)p->delay, (unsigned long long)c->section_ns, r->jain,
	       r->posted ? "post" : "run");
	if (r->servers) {
		printf(",\"server_requests\":[");
		for (unsigned i = 0; i < r->servers && i < FETCHADD_MAX_SERVERS; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)r->server_requests[i]);
		printf("],\"server_sleeps\":[");
		for (unsigned i = 0; i < r->servers && i < FETCHADD_MAX_SERVERS; i++)
			printf("%s%llu", i ? "," : "", (unsigned long long)r->server_sleeps[i]);
		printf("]");
	}
	printf(",\"responses_polled\":%llu,\"responses_ready\":%llu,\"ready_pct\":",
	       (unsigned long long)r->polled, (unsigned long long)r->ready);
	if (r->polled)
		printf("%.2f", 100.0 * (double)r->ready / (double)r->polled);
	else
		printf("null");
	if (p->latency) {
		if (r->lat_samples)
			printf(",\"latency_ns_median\":%.0f,\"latency_ns_p99\":%.0f,"
			       "\"latency_ns_mean\":%.1f,\"latency_ns_max\":%.0f",
			       r->lat_median, r->lat_p99, r->lat_mean, r->lat_max);
		else
			printf(",\"latency_ns_median\":null,\"latency_ns_p99\":null,"
			       "\"latency_ns_mean\":null,\"latency_ns_max\":null");
		printf(",\"latency_samples\":%llu,\"latency_every\":%llu",
		       (unsigned long long)r->lat_samples, (unsigned long long)c->latency_every);
		if (r->lat_samples && r->tsc_ghz > 0)
			printf(",\"latency_cycles_mean\":%.1f,\"latency_cycles_median\":%.0f",
			       r->lat_mean_cycles, r->lat_median_cycles);
		else
			printf(",\"latency_cycles_mean\":null,\"latency_cycles_median\":null");
		if (r->tsc_ghz > 0)
			printf(",\"tsc_ghz\":%.4f", r->tsc_ghz);
		else
			printf(",\"tsc_ghz\":null");
	}
	printf("}\n");
	fflush(stdout);
}

static int measure_body(void *arg, int fd)
{
	struct fetchadd_result r;

	fetchadd_measure(arg, &r);
	return child_write_all(fd, &r, sizeof(r)) ? 3 : 0;
}

/* Report a measurement that failed; returns -1. */
static int measure_failed(const struct fetchadd_params *p, const char *why)
{
	bench_progress_clear();
	fprintf(stderr, "%s: %s (T=%u V=%zu): %s\n", PROG, p->mechanism, p->threads, p->vars, why);
	return -1;
}

/* Opening and closing a million executors takes seconds: allow for it beyond the run. */
static double measure_timeout(const struct fetchadd_params *p)
{
	return 10 * p->duration + 10 + (double)p->vars / SETUP_VARS_PER_S;
}

/* What a result the child sent makes of its cell; why, if that is not OK. */
static enum bench_cell verdict(const void *result, char *why, size_t n)
{
	const struct fetchadd_result *r = result;

	if (r->post_failures) {
		snprintf(why, n, "locus_cs_post failed %llu times",
			 (unsigned long long)r->post_failures);
		return BENCH_CELL_FAILED;
	}
	if (r->sum != r->ops) {
		snprintf(why, n,
			 "lost updates: the counters sum to %llu, the threads counted %llu "
			 "increments",
			 (unsigned long long)r->sum, (unsigned long long)r->ops);
		return BENCH_CELL_LOST;
	}
	return BENCH_CELL_OK;
}

/* Measure one run of a cell in a child; 0, or -1 if it failed (reported). */
static int measure(const struct config *c, const struct mech *m, const struct fetchadd_params *p,
		   struct cell *cell, unsigned run)
{
	struct fetchadd_result r;
	char why[640];

	cell->state = bench_measure(measure_body, (void *)p, measure_timeout(p), &r, sizeof(r),
				    &r.out, verdict, why, sizeof(why));
	if (cell->state != BENCH_CELL_OK)
		return measure_failed(p, why);
	cell->mops = r.seconds > 0 ? (double)r.ops / r.seconds / 1e6 : 0;
	cell->lat_median = r.lat_samples ? r.lat_median : -1;
	cell->lat_p99 = r.lat_samples ? r.lat_p99 : -1;
	cell->servers = r.servers;
	cell->oversubscribed = (long)p->threads + (long)r.servers > c->a.cpus;
	cell->delegated = r.delegated;
	snprintf(cell->spec, sizeof(cell->spec), "%s", r.spec);
	if (c->a.json)
		print_json(c, m->spec, p, &r, cell, run);
	return 0;
}

static size_t ncols(const struct config *c)
{
	return c->nthreads * c->nvars;
}

/* Where run `run` of (mechanism m, column col) is: columns are (threads, vars), threads-major. */
static size_t cell_index(const struct config *c, size_t m, size_t col, unsigned run)
{
	return (m * ncols(c) + col) * c->a.repeat + run;
}

/* What a table cell (one mechanism, one column) shows: its runs summarized. */
struct view {
	enum bench_cell state;	  /* OK only if every run was */
	struct bench_summary v;	  /* Mops/s, or with --latency the median latency, ns */
	struct bench_summary p99; /* --latency */
	unsigned servers;
	int oversubscribed, delegated;
	const char *spec;
};

static void view_of(const struct config *c, const struct cell *cells, size_t m, size_t col,
		    struct view *out)
{
	unsigned n = c->a.repeat, k = 0;
	double v[BENCH_MAX_REPEAT], p99[BENCH_MAX_REPEAT];

	*out = (struct view){.state = BENCH_CELL_OK, .spec = c->a.mechs.m[m].run};
	for (unsigned r = 0; r < n; r++) {
		const struct cell *x = &cells[cell_index(c, m, col, r)];

		if (x->state != BENCH_CELL_OK) {
			if (out->state == BENCH_CELL_OK)
				out->state = x->state;
			continue;
		}
		out->servers = x->servers;
		out->oversubscribed |= x->oversubscribed;
		out->delegated |= x->delegated;
		out->spec = x->spec;
		if (c->latency && x->lat_median < 0)
			continue; /* no sample taken: nothing to summarize */
		v[k] = c->latency ? x->lat_median : x->mops;
		p99[k++] = x->lat_p99;
	}
	if (out->state != BENCH_CELL_OK)
		k = 0;
	bench_summarize(v, k, &out->v);
	bench_summarize(p99, k, &out->p99);
}

/* What the sweep's callbacks see. */
struct sweep_ctx {
	const struct config *c;
	struct cell *cells;
	size_t done, total;
};

static int measure_one(void *ctx, size_t col, unsigned run, size_t m)
{
	struct sweep_ctx *x = ctx;
	const struct config *c = x->c;
	struct fetchadd_params p = {
		.mechanism = c->a.mechs.m[m].run,
		.threads = (unsigned)c->threads[col / c->nvars],
		.vars = (size_t)c->vars[col % c->nvars],
		.duration = c->a.duration,
		.delay = c->delay,
		.fn = c->fn,
		.section_ns = c->section_ns,
		.latency = c->latency,
		.latency_every = (unsigned)c->latency_every,
		.sync = c->sync,
	};

	if (c->a.repeat > 1)
		bench_progress("[%zu/%zu] %s T=%u V=%zu run %u/%u ...", ++x->done, x->total,
			       p.mechanism, p.threads, p.vars, run + 1, c->a.repeat);
	else
		bench_progress("[%zu/%zu] %s T=%u V=%zu ...", ++x->done, x->total, p.mechanism,
			       p.threads, p.vars);
	return measure(c, &c->a.mechs.m[m], &p, &x->cells[cell_index(c, m, col, run)], run);
}

/*
 * --json --repeat N (N > 1): after a column, one summary line per mechanism:
 * its runs' median and range and its place in the column's ranking.
 */
static void column_summaries(void *ctx, size_t col)
{
	struct sweep_ctx *x = ctx;
	const struct config *c = x->c;
	size_t n = c->a.mechs.n, *order = calloc(n, sizeof(*order));
	struct bench_summary *s = calloc(n, sizeof(*s));
	struct view *views = calloc(n, sizeof(*views));
	char *rel = calloc(n, 1);
	size_t k;

	if (!c->a.json || c->a.repeat < 2 || !order || !s || !views || !rel)
		goto out;
	for (size_t m = 0; m < n; m++) {
		view_of(c, x->cells, m, col, &views[m]);
		s[m] = views[m].v;
	}
	k = bench_rank(s, n, !c->latency, order, rel);
	for (size_t m = 0; m < n; m++) {
		const struct view *w = &views[m];
		bench_json_head("fetchadd", c->a.mechs.m[m].spec, w->spec);
		printf(",\"summary\":true,\"fn\":\"%s\",\"threads\":%llu,\"servers\":%u,"
		       "\"vars\":%llu,\"metric\":\"%s\",\"runs\":%u,\"ok_runs\":%zu,"
		       "\"status\":\"%s\"",
		       fn_name(c->fn), (unsigned long long)c->threads[col / c->nvars], w->servers,
		       (unsigned long long)c->vars[col % c->nvars],
		       c->latency ? "latency_ns_median" : "mops", c->a.repeat, w->v.n,
		       w->state == BENCH_CELL_OK ? "ok" : bench_cell_text(w->state));
		bench_json_summary_tail(stdout, s, n, m, order, k, &c->a.mechs, 4);
	}
	fflush(stdout);
out:
	free(order);
	free(s);
	free(views);
	free(rel);
}

/* Every (column, run, mechanism), each column's runs interleaved (repeat.h). */
static int sweep(const struct config *c, struct cell *cells)
{
	struct sweep_ctx x = {
		.c = c, .cells = cells, .total = ncols(c) * c->a.repeat * c->a.mechs.n};
	int rc = bench_sweep_run(&(struct bench_sweep){.ncols = ncols(c),
						       .nmech = c->a.mechs.n,
						       .repeat = c->a.repeat,
						       .ctx = &x,
						       .measure = measure_one,
						       .column_done = column_summaries});

	bench_progress_clear();
	return rc;
}

/* What the table callbacks see. */
struct table_ctx {
	const struct config *c;
	const struct cell *cells;
};

static void column_label(const struct config *c, size_t col, char *buf, size_t n)
{
	uint64_t t = c->threads[col / c->nvars], v = c->vars[col % c->nvars];

	snprintf(buf, n, "T=%llu%s V=%llu", (unsigned long long)t, (long)t > c->a.cpus ? "*" : "",
		 (unsigned long long)v);
}

/*
 * A cell's text. A delegation row's cell whose clients and servers together
 * outnumber the CPUs gets a '*' of its own: its column's header counts
 * clients only. Several runs: the median and the range (min-max).
 */
static void format_cell(const struct config *c, const struct view *w, char *buf, size_t n)
{
	const char *mark = w->servers && w->oversubscribed ? "*" : "";

	if (w->state != BENCH_CELL_OK)
		snprintf(buf, n, "%s", bench_cell_text(w->state));
	else if (!c->latency)
		bench_summary_text(buf, n, &w->v, 1, 2, mark);
	else if (w->v.n == 0)
		snprintf(buf, n, "-%s", mark);
	else if (w->v.n == 1)
		snprintf(buf, n, "%.0f/%.0f%s", w->v.median, w->p99.median, mark);
	else
		snprintf(buf, n, "%.0f/%.0f (%.0f-%.0f)%s", w->v.median, w->p99.median, w->v.min,
			 w->v.max, mark);
}

static void print_title(FILE *out, const struct config *c)
{
	if (c->latency)
		fprintf(out,
			"fetchadd: latency in ns, median/p99, of one operation in %llu (post to "
			"callback for asynchronous executors, the call otherwise), fn %s, %g s "
			"each, delay %llu, section %llu ns\n",
			(unsigned long long)c->latency_every, fn_name(c->fn), c->a.duration,
			(unsigned long long)c->delay, (unsigned long long)c->section_ns);
	else
		fprintf(out,
			"fetchadd: Mops/s (million increments per second), fn %s, %g s each, "
			"delay %llu, section %llu ns\n",
			fn_name(c->fn), c->a.duration, (unsigned long long)c->delay,
			(unsigned long long)c->section_ns);
	if (c->a.repeat > 1)
		fprintf(out,
			"%u runs of every cell, interleaved; a cell is their median and "
			"(range)%s\n",
			c->a.repeat,
			c->latency ? ": the medians of the runs' median and p99 latencies, and the "
				     "range of the runs' medians"
				   : "");
}

static void print_footnotes(FILE *out, const struct config *c, const struct cell *cells)
{
	size_t ncells = c->a.mechs.n * ncols(c) * c->a.repeat;
	int over = 0, cell_over = 0, deleg = 0;

	for (size_t t = 0; t < c->nthreads; t++)
		over |= (long)c->threads[t] > c->a.cpus;
	for (size_t i = 0; i < ncells; i++) {
		deleg |= cells[i].servers > 0;
		cell_over |= cells[i].servers > 0 && cells[i].oversubscribed;
	}
	if (deleg)
		fprintf(out,
			"T counts client threads; delegation rows ran their servers= server "
			"threads beside them (--servers %llu unless the spec says)\n",
			(unsigned long long)c->a.servers);
	if (over)
		fprintf(out,
			"* after T: oversubscribed, more client threads than the %ld online CPUs\n",
			c->a.cpus);
	if (cell_over)
		fprintf(out,
			"* after a figure: oversubscribed, clients + servers more than the %ld "
			"online CPUs\n",
			c->a.cpus);
}

static void table_label(const void *ctx, size_t col, char *buf, size_t n)
{
	column_label(((const struct table_ctx *)ctx)->c, col, buf, n);
}

static void table_cell(const void *ctx, size_t row, size_t col, char *buf, size_t n)
{
	const struct table_ctx *t = ctx;
	struct view w;

	view_of(t->c, t->cells, row, col, &w);
	format_cell(t->c, &w, buf, n);
}

static void table_summary(const void *ctx, size_t row, size_t col, struct bench_summary *s)
{
	const struct table_ctx *t = ctx;
	struct view w;

	view_of(t->c, t->cells, row, col, &w);
	*s = w.v;
}

static void print_table(FILE *out, const struct config *c, const struct cell *cells)
{
	struct table_ctx t = {.c = c, .cells = cells};

	print_title(out, c);
	bench_print_table(out, &(struct bench_table){.rows = &c->a.mechs,
						     .ncols = ncols(c),
						     .ctx = &t,
						     .label = table_label,
						     .cell = table_cell});
	print_footnotes(out, c, cells);
	if (c->a.repeat > 1)
		bench_print_rankings(
			out, &(struct bench_rankings){.what = c->latency ? "latency (lower first)"
									 : "Mops/s",
						      .higher_better = !c->latency,
						      .repeat = c->a.repeat,
						      .rows = &c->a.mechs,
						      .ncols = ncols(c),
						      .ctx = &t,
						      .label = table_label,
						      .summary = table_summary});
	fflush(out);
}

/* The 1-client columns' delegation cells that were measured: what the floor is for. */
static int one_client_delegation(const struct config *c, const struct cell *cells, size_t m,
				 size_t col, struct view *w)
{
	if (c->threads[col / c->nvars] != 1)
		return 0;
	view_of(c, cells, m, col, w);
	return w->state == BENCH_CELL_OK && w->delegated && w->v.n > 0;
}

/*
 * The floor is measured with --floor; by default when the table is for
 * reading (no --json: a tool that runs one point at a time would pay for it
 * at every point) and it has a 1-client delegation cell to set against it.
 */
static int want_floor(const struct config *c, const struct cell *cells)
{
	struct view w;

	if (c->floor >= 0)
		return c->floor;
	if (c->a.json)
		return 0;
	for (size_t m = 0; m < c->a.mechs.n; m++)
		for (size_t col = 0; col < ncols(c); col++)
			if (one_client_delegation(c, cells, m, col, &w))
				return 1;
	return 0;
}

static void print_floor_cells(FILE *out, const struct config *c, const struct cell *cells,
			      const struct pingpong_floor *f)
{
	double rt = f->mops[PINGPONG_ROUND_TRIP].median, ring = f->mops[PINGPONG_RING].median,
	       answered = f->mops[PINGPONG_ANSWERED].median;
	int namew = (int)strlen("mechanism"), colw = (int)strlen("column"), any = 0;
	char label[160];
	struct view w;

	for (size_t m = 0; m < c->a.mechs.n; m++) {
		for (size_t col = 0; col < ncols(c); col++) {
			if (!one_client_delegation(c, cells, m, col, &w))
				continue;
			column_label(c, col, label, sizeof(label));
			namew = (int)strlen(c->a.mechs.m[m].run) > namew
					? (int)strlen(c->a.mechs.m[m].run)
					: namew;
			colw = (int)strlen(label) > colw ? (int)strlen(label) : colw;
			any = 1;
		}
	}
	if (!any) {
		fprintf(out, "(no 1-client delegation cell to set against it)\n");
		return;
	}
	if (c->latency)
		fprintf(out,
			"1-client delegation cells against it: median latency in round trips\n"
			"%-*s  %-*s  %10s  %11s\n",
			namew, "mechanism", colw, "column", "latency ns", "round trips");
	else
		fprintf(out,
			"1-client delegation cells against it: Mops/s over the floor's M/s\n"
			"%-*s  %-*s  %8s  %12s  %6s  %10s\n",
			namew, "mechanism", colw, "column", "Mops/s", "x round trip", "x ring",
			"x answered");
	for (size_t m = 0; m < c->a.mechs.n; m++) {
		for (size_t col = 0; col < ncols(c); col++) {
			if (!one_client_delegation(c, cells, m, col, &w))
				continue;
			column_label(c, col, label, sizeof(label));
			if (c->latency)
				fprintf(out, "%-*s  %-*s  %10.0f  %11.2f\n", namew,
					c->a.mechs.m[m].run, colw, label, w.v.median,
					w.v.median * rt / 1e3);
			else
				fprintf(out, "%-*s  %-*s  %8.2f  %12.2f  %6.2f  %10.2f\n", namew,
					c->a.mechs.m[m].run, colw, label, w.v.median,
					rt > 0 ? w.v.median / rt : 0,
					ring > 0 ? w.v.median / ring : 0,
					answered > 0 ? w.v.median / answered : 0);
		}
	}
}

/* Measure the floor and print it under the table; 0, or 1 if it failed (reported). */
static int report_floor(FILE *out, const struct config *c, const struct cell *cells)
{
	struct pingpong_floor f;
	double d = c->a.duration < FLOOR_MAX_DURATION ? c->a.duration : FLOOR_MAX_DURATION;
	int failed = pingpong_floor(&f, d, c->a.repeat, c->a.json);
	const struct bench_summary *rt = &f.mops[PINGPONG_ROUND_TRIP];
	char rtext[64], gtext[64], atext[64];

	if (!f.measured) {
		fprintf(out, "floor: not measured: %s\n", f.why);
		return 0;
	}
	if (failed) {
		fprintf(out, "floor (CPUs %d and %d): %s\n", f.cpu[0], f.cpu[1],
			bench_cell_text(f.state));
		fprintf(stderr, "%s: floor (CPUs %d,%d): %s\n", PROG, f.cpu[0], f.cpu[1], f.why);
		return 1;
	}
	bench_summary_text(rtext, sizeof(rtext), rt, 1, 2, "");
	bench_summary_text(gtext, sizeof(gtext), &f.mops[PINGPONG_RING], 1, 2, "");
	bench_summary_text(atext, sizeof(atext), &f.mops[PINGPONG_ANSWERED], 1, 2, "");
	fprintf(out,
		"floor, measured after the table (locus-bench pingpong: CPUs %d and %d, %g s "
		"each%s):\n"
		"  a cache-line round trip %.1f ns, %s M/s; a ring of %u slots %s M messages/s\n"
		"  the ring answering each 48 B request in its slot (answered) %s M/s\n",
		f.cpu[0], f.cpu[1], d, c->a.repeat > 1 ? ", medians and (ranges)" : "",
		rt->median > 0 ? 1e3 / rt->median : 0, rtext, f.depth, gtext, atext);
	print_floor_cells(out, c, cells, &f);
	fflush(out);
	return 0;
}

static void free_config(struct config *c)
{
	mechlist_free(&c->a.mechs);
	free(c->threads);
	free(c->vars);
}

int fetchadd_main(int argc, char **argv)
{
	struct config c = {0};
	struct cell *cells;
	int rc = parse_args(argc, argv, &c);

	if (rc == 0)
		rc = mechlist_check(&c.a.mechs, (unsigned)c.a.servers);
	if (rc) {
		free_config(&c);
		return rc == 1 ? 0 : 2;
	}
	cells = calloc(c.a.mechs.n * ncols(&c) * c.a.repeat, sizeof(*cells));
	if (!cells) {
		free_config(&c);
		return complain("out of memory");
	}
	rc = sweep(&c, cells);
	print_table(c.a.json ? stderr : stdout, &c, cells);
	if (want_floor(&c, cells) && report_floor(c.a.json ? stderr : stdout, &c, cells))
		rc = 1;
	free(cells);
	free_config(&c);
	return rc;
}
