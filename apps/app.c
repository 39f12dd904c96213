#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

struct app app = {.threads = 1};

void app_start(int *argc, char ***argv, const char *name)
{
	app.name = name;
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
				"locus-%s: cannot allocate %zu shared bytes: the shared region is "
				"too small for this size (raise LOCUS_DSM_SIZE on every node, or "
				"ask for "
				"a smaller problem)\n",
				app.name, bytes);
		locus_dsm_finalize();
		exit(2);
	}
	return p;
}

int app_finish(int ok, const char *params)
{
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
