#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

struct app app = {.threads = 1};

/* What every DSM application's --help says after its own summary. */
static const char dsm_help[] =
	"It runs on every node of an mpiexec run. The shared memory runtime reads\n"
	"LOCUS_DSM_PROTOCOL (sc), LOCUS_DSM_SIZE (the shared region, 256g), LOCUS_DSM_DELAY_US\n"
	"and the others listed in locus_dsm(3); every node must be given the same values.\n"
	"Protocols: sc (sequential consistency), lrc (lazy release consistency) and avr\n"
	"(sc that computes on through a fault and rolls back if what it read was stale).\n"
	"Under lrc a program whose shared accesses are ordered by locus-dsm locks and\n"
	"barriers sees sequentially consistent results; a racy read may see a stale value.\n"
	"sc and avr are sequentially consistent for every program.\n"
	"The result is verified on node 0 (against a sequential run, or exact counts); the exit\n"
	"status is 0 only when it passed (1: it failed; 2: a bad command line or a size that\n"
	"does not fit).";

/* The options every DSM application has, after its own. */
static const struct app_opt dsm_opts[] = {
	{"--threads", "application threads per node (the work is divided over nodes x threads)",
	 &app.threads, 1, 64},
	{"--prefetch", "1: prefetch (non-binding) the shared data about to be read", &app.prefetch,
	 0, 1},
};
#define NDSM_OPTS (sizeof(dsm_opts) / sizeof(dsm_opts[0]))

void app_dsm_options(int argc, char **argv, const char *name, const char *summary,
		     const struct app_opt *opts)
{
	size_t n = 0;
	while (opts[n].flag)
		n++;
	struct app_opt *all = calloc(n + NDSM_OPTS + 1, sizeof(*all));
	size_t len = strlen(summary) + 2 + sizeof(dsm_help);
	char *help = malloc(len);
	if (!all || !help) {
		fprintf(stderr, "locus-%s: out of memory\n", name);
		exit(2);
	}
	memcpy(all, opts, n * sizeof(*all));
	memcpy(all + n, dsm_opts, sizeof(dsm_opts));
	snprintf(help, len, "%s\n\n%s", summary, dsm_help);
	app.name = name;
	app_options(argc, argv, name, help, all);
	free(all);
	free(help);
}

void app_start(int *argc, char ***argv)
{
	if (locus_dsm_init(argc, argv) != 0)
		exit(1);
	app.me = locus_dsm_node();
	app.nodes = locus_dsm_nodes();
	app.workers = app.nodes * (int)app.threads;
	app.verdict = app_alloc(sizeof(int64_t));
}

void app_block(long total, int worker, long *lo, long *hi)
{
	long base = total / app.workers, extra = total % app.workers;
	*lo = worker * base + (worker < extra ? worker : extra);
	*hi = *lo + base + (worker < extra ? 1 : 0);
}

struct phase {
	void (*fn)(int worker, void *arg);
	void *arg;
};

static void run_worker(int thread, void *p)
{
	struct phase *ph = p;
	ph->fn(app.me * (int)app.threads + thread, ph->arg);
}

void app_parallel(void (*fn)(int worker, void *arg), void *arg)
{
	struct phase ph = {fn, arg};
	if (app.avr_paused) {
		locus_dsm_avr_resume();
		app.avr_paused = 0;
	}
	locus_dsm_stats_reset(); /* a barrier: the statistics cover the timed phase */
	app.t0 = locus_dsm_now();
	if (locus_dsm_parallel((int)app.threads, run_worker, &ph) != 0) {
		fprintf(stderr, "locus-%s: node %d cannot start %ld threads\n", app.name, app.me,
			app.threads);
		exit(1);
	}
	locus_dsm_barrier();
	app.secs = locus_dsm_now() - app.t0;
	locus_dsm_stats_freeze();
	/* Verification allocates, frees and prints: under avr, nothing of it
	   may run twice. */
	locus_dsm_avr_pause();
	app.avr_paused = 1;
}

void *app_alloc(size_t bytes)
{
	void *p = locus_dsm_alloc(bytes);
	if (!p) {
		if (app.me == 0)
			fprintf(stderr,
				"locus-%s: cannot allocate %zu shared bytes (locus-dsm says why "
				"above: a region too small for this size wants LOCUS_DSM_SIZE "
				"raised on every node, or a smaller problem)\n",
				app.name, bytes);
		locus_dsm_finalize();
		exit(2);
	}
	return p;
}

int app_finish(int ok, const char *fmt, ...)
{
	char params[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(params, sizeof(params), fmt, ap);
	va_end(ap);
	if (app.me == 0)
		*app.verdict = ok;
	locus_dsm_barrier();
	ok = (int)*app.verdict;
	if (app.me == 0) {
		printf("locus-%s: %s, %d nodes x %ld threads, protocol %s: %.3f s, verification "
		       "%s\n",
		       app.name, params, app.nodes, app.threads, locus_dsm_protocol(), app.secs,
		       ok ? "passed" : "FAILED");
		printf("{\"app\": \"%s\", \"params\": \"%s\", \"nodes\": %d, \"threads\": %ld, "
		       "\"time_s\": %.6f, \"ok\": %s}\n",
		       app.name, params, app.nodes, app.threads, app.secs, ok ? "true" : "false");
		fflush(stdout);
	}
	locus_dsm_finalize();
	return ok ? 0 : 1;
}
