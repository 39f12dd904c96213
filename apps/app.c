#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

struct app app;

void app_start(int *argc, char ***argv, const char *name)
{
	app.name = name;
	if (locus_dsm_init(argc, argv) != 0)
		exit(1);
	app.me = locus_dsm_node();
	app.nodes = locus_dsm_nodes();
	app.verdict = app_alloc(sizeof(int64_t));
}

void app_block(long total, int node, long *lo, long *hi)
{
	long base = total / app.nodes, extra = total % app.nodes;
	*lo = node * base + (node < extra ? node : extra);
	*hi = *lo + base + (node < extra ? 1 : 0);
}

void app_clock_start(void)
{
	locus_dsm_stats_reset(); /* a barrier: the statistics cover the timed phase */
	app.t0 = locus_dsm_now();
}

void app_clock_stop(void)
{
	locus_dsm_barrier();
	app.secs = locus_dsm_now() - app.t0;
	locus_dsm_stats_freeze();
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
		printf("locus-%s: %s, %d nodes, protocol %s: %.3f s, verification %s\n", app.name,
		       params, app.nodes, locus_dsm_protocol(), app.secs, ok ? "passed" : "FAILED");
		printf("{\"app\": \"%s\", \"params\": \"%s\", \"nodes\": %d, \"time_s\": %.6f, "
		       "\"ok\": %s}\n",
		       app.name, params, app.nodes, app.secs, ok ? "true" : "false");
		fflush(stdout);
	}
	locus_dsm_finalize();
	return ok ? 0 : 1;
}
