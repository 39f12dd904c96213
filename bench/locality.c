/*
 * locus-bench locality: the command line, the sweep over (threads, n1, n2,
 * modify, msg, mechanism), and the report. Each measurement runs in a child
 * process (locality_run.c); this process never opens an executor itself.
 */
#include "locality.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "common.h"
#include "common/clock.h"
#include "locus/cs.h"
#include "mechlist.h"
#include "opts.h"
#include "repeat.h"

#define PROG		  "locus-bench locality"
#define MAX_THREADS	  1024
#define MAX_SERVERS	  64
#define SETUP_LINES_PER_S 1e6 /* array lines mapped and linked per second, at worst */

#define complain(...) bench_complain(PROG, __VA_ARGS__)

/* The swept parameters, in sweep order (outermost first); mechanisms are innermost. */
enum param { P_THREADS, P_N1, P_N2, P_MODIFY, P_MSG, NPARAMS };

static const char *const param_option[NPARAMS] = {"--threads", "--n1", "--n2", "--modify", "--msg"};
static const char *const param_label[NPARAMS] = {"T", "n1", "n2", "m", "s"};
static const uint64_t param_min[NPARAMS] = {1, 0, 1, 0, 0};
static const uint64_t param_max[NPARAMS] = {MAX_THREADS, WALK_MAX_LINES, WALK_MAX_LINES,
					    WALK_MAX_LINES, LOCALITY_MAX_MSG};

struct config {
	struct bench_args a; /* --mechanisms, --duration, --servers, --json */
	uint64_t *list[NPARAMS];
	size_t n[NPARAMS];
};

/*
 * One measurement: row = mechanism, column = one combination of the
 * parameters, and its run (--repeat); a table cell summarizes the runs.
 */
struct cell {
	enum bench_cell state;
	double ips;	    /* iterations per second */
	double cycles;	    /* per iteration; < 0 without a TSC */
	double cpu_ns;	    /* per iteration */
	double busy;	    /* server-busy fraction; < 0: none */
	unsigned servers;   /* threads that ran the section for the clients */
	int oversubscribed; /* clients + servers > CPUs */
	char spec[256];	    /* as measured */
};

void locality_usage(FILE *out)
{
	const char *const *names = locus_cs_mechanisms();
	long cpus = bench_cpus();

	fprintf(out,
		"usage: locus-bench locality [--mechanisms LIST] [--threads LIST] [--n1 LIST]\n"
		"                            [--n2 LIST] [--modify LIST] [--msg LIST]\n"
		"                            [--duration SECONDS] [--servers N] [--repeat N]\n"
		"                            [--json]\n"
		"\n"
		"Seed 000's microbenchmark. Each client thread loops: it walks its private\n"
		"array of n1 cache lines (the thread-local component), then runs the critical\n"
		"section through the mechanism and waits for its result. The section copies\n"
		"an s-byte message from the client into its own buffer, then walks a shared\n"
		"array of n2 lines, incrementing a counter on m of them (m distinct lines,\n"
		"spread along the walk). Each walk chases pointers around one random cycle\n"
		"through its array, so the prefetcher cannot hide a miss. Under a lock or a\n"
		"combiner the section runs on a client (the seed's synchronous mode); under\n"
		"delegation (ffwd, async, mpsc) on a server thread that keeps the shared array\n"
		"in its own cache (its asynchronous mode); flat runs it on whichever client\n"
		"serves the slot. Every measurement runs in a child process of its own.\n"
		"\n"
		"  --mechanisms LIST   executor specs, separated by commas, or \"all\" (the\n"
		"                      default: every executor at its default options). A\n"
		"                      spec's own options are separated by commas too, as in\n"
		"                      \"ttas:spin,backoff_max=64,mcs\" (two specs).\n"
		"  --threads LIST      client thread counts (default: 1, CPUs, 2 x CPUs; here\n"
		"                      %s%ld,%ld; at most %d). Servers are not counted: the\n"
		"                      seed's \"T threads\" in asynchronous mode is T-1 here.\n"
		"  --n1 LIST           lines in each client's private array (default 2048)\n"
		"  --n2 LIST           lines in the shared array (default 128; at least 1)\n"
		"  --modify LIST       lines the section modifies, m <= n2 (default 0)\n"
		"  --msg LIST          message bytes the section copies (default 0; at most %u)\n"
		"                      Arrays have at most %u lines (a line is %d bytes).\n"
		"  --duration SECONDS  how long each measurement runs (default: 1)\n"
		"  --servers N         server threads for delegation specs that do not say\n"
		"                      servers= (default 1; at most %d)\n"
		"  --repeat N          measure every cell N times (default 1; at most %d),\n"
		"                      interleaved as locus-bench fetchadd --help says; with\n"
		"                      N > 1 a cell shows the median and (min-max) of its runs\n"
		"                      and a ranking of each column by throughput follows the\n"
		"                      tables ('>' ranges apart, '~' ranges overlap: tied)\n"
		"  --json              one JSON object per measurement on stdout, the tables on\n"
		"                      stderr. Fields: mechanism (as written), spec (as\n"
		"                      measured), mode (async: the section ran on a server\n"
		"                      thread, else sync), threads (clients), servers, n1, n2,\n"
		"                      modify, msg, duration_s, requested_s, iterations,\n"
		"                      iters_per_s, cpu_s, cpu_ns_per_iter, cycles_per_iter\n"
		"                      (null without a TSC), tsc_ghz, server_busy_pct and\n"
		"                      server_busy_basis (time or dequeues; null without a\n"
		"                      server thread), hugepages (hugetlb, thp or\n"
		"                      none: what backs the arrays), oversubscribed (clients +\n"
		"                      servers > CPUs), cpus, run (1 to N: which of the\n"
		"                      --repeat runs). With --repeat N > 1, after each column\n"
		"                      one summary object per mechanism: summary (true),\n"
		"                      mechanism, spec, threads, n1, n2, modify, msg, metric\n"
		"                      (iters_per_s), runs, ok_runs, status, median, min, max,\n"
		"                      rank and ties, as fetchadd's.\n"
		"  --help              this text\n"
		"\n"
		"Metrics, as in seed 000 section 3.4.1:\n"
		"  throughput      core-loop iterations per second, all clients together\n"
		"  cycles/iter     the process's CPU time over the interval (every client and\n"
		"                  server thread; spinning counts, sleeping does not) per\n"
		"                  iteration, in TSC cycles at the TSC rate measured over the\n"
		"                  same interval\n"
		"  server busy     ffwd, async: the share of the server's time spent in passes\n"
		"                  that found requests; mpsc: the share of its dequeues that\n"
		"                  did not find the queue empty (the seed's definition)\n"
		"The arrays are one contiguous mapping, aligned to 2 MiB; explicit huge pages\n"
		"are tried first, then transparent huge pages (madvise), and the report says\n"
		"which backed them.\n"
		"\n"
		"Output: tables of throughput (thousand iterations per second) and cycles per\n"
		"iteration, one row per mechanism as measured, one column per combination of\n"
		"the parameters; '*' marks measurements with more threads (clients + servers)\n"
		"than the %ld online CPUs. Measurements run in the order threads, n1, n2,\n"
		"modify, msg, run, mechanism, so mechanisms compared in one column ran close\n"
		"together in time.\n"
		"A measurement that crashes, runs past 10 x duration + 10 s (plus 1 s per\n"
		"million array lines, for setting them up), or leaves a\n"
		"shared line with a count other than the iterations that ran (a lost update)\n"
		"is reported on stderr and as FAIL or LOST, gives no JSON line, and makes the\n"
		"exit status 1.\n"
		"Exit status: 0 all measured, 1 a measurement failed, 2 bad command line.\n"
		"\n"
		"Executor mechanisms:",
		cpus > 1 ? "1," : "", cpus, 2 * cpus, MAX_THREADS, LOCALITY_MAX_MSG, WALK_MAX_LINES,
		WALK_LINE, MAX_SERVERS, BENCH_MAX_REPEAT, cpus);
	for (size_t i = 0; names[i]; i++)
		fprintf(out, " %s", names[i]);
	fprintf(out, "\n(spec = NAME or NAME:OPTION,OPTION...; locus-bench fetchadd --help lists "
		     "their options)\n");
}

/* One argument at argv[*i]; 0 or 2 (reported). */
static int parse_arg(int argc, char **argv, int *i, struct config *c)
{
	const char *v;
	char err[256];
	int r;

	if ((r = bench_args_option(&c->a, argc, argv, i, MAX_SERVERS)) >= 0)
		return r;
	for (int k = 0; k < NPARAMS; k++) {
		if ((r = bench_option(PROG, argc, argv, i, param_option[k], &v)) == 0)
			continue;
		if (r < 0)
			return 2;
		free(c->list[k]);
		c->list[k] = NULL;
		if (opts_uint_list(v, param_min[k], param_max[k], &c->list[k], &c->n[k], err,
				   sizeof(err)))
			return complain("%s: %s", param_option[k], err);
		return 0;
	}
	return bench_args_unknown(&c->a, argv[*i]);
}

static int set_default(struct config *c, enum param k, const uint64_t *v, size_t n)
{
	return opts_default_list(&c->list[k], &c->n[k], v, n) ? complain("out of memory") : 0;
}

static uint64_t list_max(const struct config *c, enum param k)
{
	uint64_t m = 0;

	for (size_t i = 0; i < c->n[k]; i++)
		if (c->list[k][i] > m)
			m = c->list[k][i];
	return m;
}

static uint64_t list_min(const struct config *c, enum param k)
{
	uint64_t m = UINT64_MAX;

	for (size_t i = 0; i < c->n[k]; i++)
		if (c->list[k][i] < m)
			m = c->list[k][i];
	return m;
}

/* Combinations that cannot run are refused before the first measurement. */
static int check_combinations(const struct config *c)
{
	uint64_t pages = (uint64_t)sysconf(_SC_PHYS_PAGES), page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t need, have = pages * page / 2;

	if (list_max(c, P_MODIFY) > list_min(c, P_N2))
		return complain("--modify %llu is more than --n2 %llu: the section modifies at "
				"most the n2 lines it walks",
				(unsigned long long)list_max(c, P_MODIFY),
				(unsigned long long)list_min(c, P_N2));
	need = (list_max(c, P_N2) + list_max(c, P_THREADS) * list_max(c, P_N1)) * WALK_LINE;
	if (pages > 0 && page > 0 && need > have)
		return complain("the arrays would take %llu MiB (n2 + threads x n1 lines of %d "
				"bytes), more than half of this machine's memory (%llu MiB)",
				(unsigned long long)(need >> 20), WALK_LINE,
				(unsigned long long)(have >> 20));
	return 0;
}

/* 0 to run, 1 if help was printed, 2 on a bad command line (reported). */
static int parse_args(int argc, char **argv, struct config *c)
{
	uint64_t threads[3], n1 = 2048, n2 = 128, zero = 0;

	if (bench_args_start(&c->a, PROG, NULL, argc, argv, locality_usage))
		return 1;
	for (int i = 1; i < argc; i++)
		if (parse_arg(argc, argv, &i, c))
			return 2;
	bench_default_threads(&c->a, threads);
	if (bench_args_finish(&c->a))
		return 2;
	if (set_default(c, P_THREADS, threads, 3) || set_default(c, P_N1, &n1, 1) ||
	    set_default(c, P_N2, &n2, 1) || set_default(c, P_MODIFY, &zero, 1) ||
	    set_default(c, P_MSG, &zero, 1))
		return 2;
	return check_combinations(c);
}

static int measure_body(void *arg, int fd)
{
	struct locality_result r;

	locality_measure(arg, &r);
	return child_write_all(fd, &r, sizeof(r)) ? 3 : 0;
}

static void print_json(const struct config *c, const char *written, const struct locality_params *p,
		       const struct locality_result *r, const struct cell *cell, unsigned run)
{
	bench_json_head("locality", written, r->spec);
	printf(",\"run\":%u,\"mode\":\"%s\",\"threads\":%u,\"servers\":%u,\"n1\":%zu,\"n2\":%zu,"
	       "\"modify\":%zu,\"msg\":%zu,\"duration_s\":%.6f,\"requested_s\":%.6f,"
	       "\"iterations\":%llu,\"iters_per_s\":%.1f,\"cpu_s\":%.6f,\"cpu_ns_per_iter\":%.1f,",
	       run + 1, r->servers ? "async" : "sync", p->threads, r->servers, p->n1, p->n2,
	       p->modify, p->msg, r->seconds, p->duration, (unsigned long long)r->iterations,
	       cell->ips, r->cpu_s, cell->cpu_ns);
	if (cell->cycles >= 0)
		printf("\"cycles_per_iter\":%.1f,\"tsc_ghz\":%.4f,", cell->cycles, r->tsc_ghz);
	else
		printf("\"cycles_per_iter\":null,\"tsc_ghz\":null,");
	if (cell->busy >= 0)
		printf("\"server_busy_pct\":%.2f,\"server_busy_basis\":\"%s\",", 100 * cell->busy,
		       r->busy_basis == LOCALITY_BUSY_TIME ? "time" : "dequeues");
	else
		printf("\"server_busy_pct\":null,\"server_busy_basis\":null,");
	printf("\"hugepages\":\"%s\",\"oversubscribed\":%s,\"cpus\":%ld}\n",
	       walk_pages_name(r->pages), cell->oversubscribed ? "true" : "false", c->a.cpus);
	fflush(stdout);
}

/* Report a measurement that failed; returns -1. */
static int measure_failed(const struct locality_params *p, const char *why)
{
	bench_progress_clear();
	fprintf(stderr, "%s: %s (T=%u n1=%zu n2=%zu m=%zu s=%zu): %s\n", PROG, p->mechanism,
		p->threads, p->n1, p->n2, p->modify, p->msg, why);
	return -1;
}

/* Mapping and linking the arrays takes time too: allow for it beyond the run. */
static double measure_timeout(const struct locality_params *p)
{
	double lines = (double)p->n2 + (double)p->threads * (double)p->n1;

	return 10 * p->duration + 10 + lines / SETUP_LINES_PER_S;
}

/* What a result the child sent makes of its cell; why, if that is not OK. */
static enum bench_cell verdict(const void *result, char *why, size_t n)
{
	const struct locality_result *r = result;

	if (r->bad_lines) {
		snprintf(why, n,
			 "lost updates: %llu shared lines do not hold the %llu increments (or "
			 "none) that the iterations imply",
			 (unsigned long long)r->bad_lines, (unsigned long long)r->iterations);
		return BENCH_CELL_LOST;
	}
	return BENCH_CELL_OK;
}

/* Measure one cell in a child; 0, or -1 if it failed (reported). */
static int measure(const struct config *c, const struct mech *m, const struct locality_params *p,
		   struct cell *cell, unsigned run, const char **pages)
{
	struct locality_result r;
	char why[640];

	cell->state = bench_measure(measure_body, (void *)p, measure_timeout(p), &r, sizeof(r),
				    &r.out, verdict, why, sizeof(why));
	if (cell->state != BENCH_CELL_OK)
		return measure_failed(p, why);
	cell->ips = r.seconds > 0 ? (double)r.iterations / r.seconds : 0;
	cell->cpu_ns = r.iterations ? r.cpu_s * NS_PER_S / (double)r.iterations : 0;
	cell->cycles = r.tsc_ghz > 0 ? cell->cpu_ns * r.tsc_ghz : -1;
	cell->busy = r.server_busy;
	cell->servers = r.servers;
	cell->oversubscribed = (long)p->threads + (long)r.servers > c->a.cpus;
	snprintf(cell->spec, sizeof(cell->spec), "%s", r.spec);
	*pages = walk_pages_name(r.pages);
	if (c->a.json)
		print_json(c, m->spec, p, &r, cell, run);
	return 0;
}

static size_t ncols(const struct config *c)
{
	size_t n = 1;

	for (int k = 0; k < NPARAMS; k++)
		n *= c->n[k];
	return n;
}

/* The parameter values of column col (threads-major, msg fastest). */
static void column_values(const struct config *c, size_t col, uint64_t v[NPARAMS])
{
	for (int k = NPARAMS - 1; k >= 0; k--) {
		v[k] = c->list[k][col % c->n[k]];
		col /= c->n[k];
	}
}

/* Where run `run` of (mechanism m, column col) is. */
static size_t cell_index(const struct config *c, size_t m, size_t col, unsigned run)
{
	return (m * ncols(c) + col) * c->a.repeat + run;
}

enum metric { M_THROUGHPUT, M_CYCLES, M_BUSY };

/* What a table cell (one mechanism, one column) shows: its runs summarized. */
struct view {
	enum bench_cell state; /* OK only if every run was */
	struct bench_summary ips, cycles, cpu_ns, busy;
	int oversubscribed, no_tsc;
	const char *spec;
};

static void view_of(const struct config *c, const struct cell *cells, size_t m, size_t col,
		    struct view *out)
{
	double ips[BENCH_MAX_REPEAT], cycles[BENCH_MAX_REPEAT], cpu_ns[BENCH_MAX_REPEAT],
		busy[BENCH_MAX_REPEAT];
	size_t k = 0, kc = 0, kb = 0;

	*out = (struct view){.state = BENCH_CELL_OK, .spec = c->a.mechs.m[m].run};
	for (unsigned r = 0; r < c->a.repeat; r++) {
		const struct cell *x = &cells[cell_index(c, m, col, r)];

		if (x->state != BENCH_CELL_OK) {
			if (out->state == BENCH_CELL_OK)
				out->state = x->state;
			continue;
		}
		out->oversubscribed |= x->oversubscribed;
		out->spec = x->spec;
		ips[k] = x->ips;
		cpu_ns[k++] = x->cpu_ns;
		if (x->cycles >= 0)
			cycles[kc++] = x->cycles;
		if (x->busy >= 0)
			busy[kb++] = x->busy;
	}
	if (out->state != BENCH_CELL_OK)
		k = kc = kb = 0;
	out->no_tsc = k > 0 && kc < k;
	bench_summarize(ips, k, &out->ips);
	bench_summarize(cpu_ns, k, &out->cpu_ns);
	bench_summarize(cycles, out->no_tsc ? 0 : kc, &out->cycles);
	bench_summarize(busy, kb, &out->busy);
}

/* What the sweep's callbacks see. */
struct sweep_ctx {
	const struct config *c;
	struct cell *cells;
	const char **pages;
	size_t done, total;
};

static int measure_one(void *ctx, size_t col, unsigned run, size_t m)
{
	struct sweep_ctx *x = ctx;
	const struct config *c = x->c;
	uint64_t v[NPARAMS];
	char of[32] = "";

	column_values(c, col, v);
	struct locality_params p = {
		.mechanism = c->a.mechs.m[m].run,
		.threads = (unsigned)v[P_THREADS],
		.n1 = (size_t)v[P_N1],
		.n2 = (size_t)v[P_N2],
		.modify = (size_t)v[P_MODIFY],
		.msg = (size_t)v[P_MSG],
		.duration = c->a.duration,
	};
	if (c->a.repeat > 1)
		snprintf(of, sizeof(of), " run %u/%u", run + 1, c->a.repeat);
	bench_progress("[%zu/%zu] %s T=%u n1=%zu n2=%zu m=%zu s=%zu%s ...", ++x->done, x->total,
		       p.mechanism, p.threads, p.n1, p.n2, p.modify, p.msg, of);
	return measure(c, &c->a.mechs.m[m], &p, &x->cells[cell_index(c, m, col, run)], run,
		       x->pages);
}

/*
 * --json --repeat N (N > 1): after a column, one summary line per mechanism:
 * its runs' median throughput and range and its place in the column's ranking.
 */
static void column_summaries(void *ctx, size_t col)
{
	struct sweep_ctx *x = ctx;
	const struct config *c = x->c;
	size_t n = c->a.mechs.n, *order = calloc(n, sizeof(*order)), k;
	struct bench_summary *s = calloc(n, sizeof(*s));
	struct view *views = calloc(n, sizeof(*views));
	char *rel = calloc(n, 1);
	uint64_t v[NPARAMS];

	if (!c->a.json || c->a.repeat < 2 || !order || !s || !views || !rel)
		goto out;
	column_values(c, col, v);
	for (size_t m = 0; m < n; m++) {
		view_of(c, x->cells, m, col, &views[m]);
		s[m] = views[m].ips;
	}
	k = bench_rank(s, n, 1, order, rel);
	for (size_t m = 0; m < n; m++) {
		const struct view *w = &views[m];
		bench_json_head("locality", c->a.mechs.m[m].spec, w->spec);
		printf(",\"summary\":true,\"threads\":%llu,\"n1\":%llu,\"n2\":%llu,"
		       "\"modify\":%llu,\"msg\":%llu,\"metric\":\"iters_per_s\",\"runs\":%u,"
		       "\"ok_runs\":%zu,\"status\":\"%s\"",
		       (unsigned long long)v[P_THREADS], (unsigned long long)v[P_N1],
		       (unsigned long long)v[P_N2], (unsigned long long)v[P_MODIFY],
		       (unsigned long long)v[P_MSG], c->a.repeat, w->ips.n,
		       w->state == BENCH_CELL_OK ? "ok" : bench_cell_text(w->state));
		bench_json_summary_tail(stdout, s, n, m, order, k, &c->a.mechs, 1);
	}
	fflush(stdout);
out:
	free(order);
	free(s);
	free(views);
	free(rel);
}

/* Every (column, run, mechanism), each column's runs interleaved (repeat.h). */
static int sweep(const struct config *c, struct cell *cells, const char **pages)
{
	struct sweep_ctx x = {.c = c,
			      .cells = cells,
			      .pages = pages,
			      .total = ncols(c) * c->a.repeat * c->a.mechs.n};
	int rc = bench_sweep_run(&(struct bench_sweep){.ncols = ncols(c),
						       .nmech = c->a.mechs.n,
						       .repeat = c->a.repeat,
						       .ctx = &x,
						       .measure = measure_one,
						       .column_done = column_summaries});

	bench_progress_clear();
	return rc;
}

/* A column is labelled with T and every parameter that takes more than one value. */
static void column_label(const struct config *c, size_t col, char *buf, size_t n)
{
	uint64_t v[NPARAMS];
	size_t len = 0;

	column_values(c, col, v);
	for (int k = 0; k < NPARAMS && len < n; k++)
		if (k == P_THREADS || c->n[k] > 1)
			len += snprintf(buf + len, n - len, "%s%s=%llu", len ? " " : "",
					param_label[k], (unsigned long long)v[k]);
}

static void format_cell(const struct config *c, const struct view *w, enum metric what, char *buf,
			size_t n)
{
	const char *mark = w->oversubscribed ? "*" : "";
	char ns[64];

	(void)c;
	if (w->state != BENCH_CELL_OK)
		snprintf(buf, n, "%s", bench_cell_text(w->state));
	else if (what == M_THROUGHPUT)
		bench_summary_text(buf, n, &w->ips, 1e3, 1, mark);
	else if (what == M_CYCLES && !w->no_tsc)
		bench_summary_text(buf, n, &w->cycles, 1, 0, mark);
	else if (what == M_CYCLES) {
		bench_summary_text(ns, sizeof(ns), &w->cpu_ns, 1, 0, "");
		snprintf(buf, n, "%sns%s", ns, mark);
	} else if (w->busy.n)
		bench_summary_text(buf, n, &w->busy, 0.01, 1, mark);
	else
		snprintf(buf, n, "-");
}

/* What the table callbacks see. */
struct table_ctx {
	const struct config *c;
	const struct cell *cells;
	enum metric what;
};

static void table_label(const void *ctx, size_t col, char *buf, size_t n)
{
	column_label(((const struct table_ctx *)ctx)->c, col, buf, n);
}

static void table_cell(const void *ctx, size_t row, size_t col, char *buf, size_t n)
{
	const struct table_ctx *t = ctx;
	struct view w;

	view_of(t->c, t->cells, row, col, &w);
	format_cell(t->c, &w, t->what, buf, n);
}

static void table_summary(const void *ctx, size_t row, size_t col, struct bench_summary *s)
{
	const struct table_ctx *t = ctx;
	struct view w;

	view_of(t->c, t->cells, row, col, &w);
	*s = w.ips;
}

static void print_table(FILE *out, const struct config *c, const struct cell *cells,
			enum metric what, const char *title)
{
	struct table_ctx t = {.c = c, .cells = cells, .what = what};

	fprintf(out, "%s\n", title);
	bench_print_table(out, &(struct bench_table){.rows = &c->a.mechs,
						     .ncols = ncols(c),
						     .ctx = &t,
						     .label = table_label,
						     .cell = table_cell});
}

static void print_rankings(FILE *out, const struct config *c, const struct cell *cells)
{
	struct table_ctx t = {.c = c, .cells = cells, .what = M_THROUGHPUT};

	bench_print_rankings(out, &(struct bench_rankings){.what = "throughput",
							   .higher_better = 1,
							   .repeat = c->a.repeat,
							   .rows = &c->a.mechs,
							   .ncols = ncols(c),
							   .ctx = &t,
							   .label = table_label,
							   .summary = table_summary});
}

static void print_report(FILE *out, const struct config *c, const struct cell *cells,
			 const char *pages)
{
	size_t n = ncols(c) * c->a.mechs.n * c->a.repeat;
	char fixed[160] = "";
	size_t len = 0;
	int busy = 0, over = 0, servers = 0, no_tsc = 0;

	for (int k = 1; k < NPARAMS; k++)
		if (c->n[k] == 1)
			len += snprintf(fixed + len, sizeof(fixed) - len, " %s=%llu",
					param_label[k], (unsigned long long)c->list[k][0]);
	for (size_t i = 0; i < n; i++) {
		busy |= cells[i].state == BENCH_CELL_OK && cells[i].busy >= 0;
		over |= cells[i].oversubscribed;
		servers |= cells[i].servers > 0;
		no_tsc |= cells[i].state == BENCH_CELL_OK && cells[i].cycles < 0;
	}
	fprintf(out, "locality:%s, %g s each, arrays on %s pages\n", fixed, c->a.duration,
		strcmp(pages, "none") == 0 ? "ordinary" : pages);
	if (c->a.repeat > 1)
		fprintf(out,
			"%u runs of every cell, interleaved; a cell is their median and (range)\n",
			c->a.repeat);
	print_table(out, c, cells, M_THROUGHPUT, "throughput, thousand iterations/s");
	print_table(out, c, cells, M_CYCLES,
		    no_tsc ? "CPU per iteration (ns: no TSC here)"
			   : "cycles per iteration (process CPU time x TSC rate)");
	if (busy)
		print_table(out, c, cells, M_BUSY,
			    "server busy, % (ffwd, async: of server time; mpsc: of dequeues)");
	if (servers)
		fprintf(out,
			"T counts client threads; delegation rows ran their server threads "
			"beside them (--servers %llu unless the spec says; mpsc: one)\n",
			(unsigned long long)c->a.servers);
	if (over)
		fprintf(out, "* oversubscribed: clients + servers more than the %ld online CPUs\n",
			c->a.cpus);
	if (c->a.repeat > 1)
		print_rankings(out, c, cells);
	fflush(out);
}

static void free_config(struct config *c)
{
	mechlist_free(&c->a.mechs);
	for (int k = 0; k < NPARAMS; k++)
		free(c->list[k]);
}

int locality_main(int argc, char **argv)
{
	struct config c = {0};
	struct cell *cells;
	const char *pages = "none";
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
	rc = sweep(&c, cells, &pages);
	print_report(c.a.json ? stderr : stdout, &c, cells, pages);
	free(cells);
	free_config(&c);
	return rc;
}
