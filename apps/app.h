/*
 * What every DSM application shares: start-up, options, the block partition,
 * timing of the parallel phase, and the verdict. Each application checks its
 * own result against a sequential computation on the same input, on node 0,
 * and every node exits with that verdict (0 only when it passed).
 */
#ifndef LOCUS_APP_H
#define LOCUS_APP_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "locus/dsm.h"

struct app {
	const char *name;
	int me, nodes;
	long threads;  /* per node (--threads) */
	long prefetch; /* 1: the application prefetches what it will read (--prefetch) */
	int workers;   /* nodes * threads: the parts the work is divided into */
	double t0, secs;
	volatile int64_t *verdict; /* shared word */
	int avr_paused;		   /* after the timed phase (app_parallel) */
};

extern struct app app;

/* With --prefetch 1: locus_dsm_prefetch(p, len), or locus_dsm_prefetch_write
   for data about to be written; else nothing. */
static inline void app_prefetch(const void *p, size_t len)
{
	if (app.prefetch)
		locus_dsm_prefetch(p, len);
}

static inline void app_prefetch_write(void *p, size_t len)
{
	if (app.prefetch)
		locus_dsm_prefetch_write(p, len);
}

/*
 * A DSM application's command line, read as app_options does: its own
 * options (opts), then --threads and --prefetch, which every one has; --help
 * prints summary and then what the runtime reads and how the result is
 * verified. Call it first.
 */
void app_dsm_options(int argc, char **argv, const char *name, const char *summary,
		     const struct app_opt *opts);

/* locus_dsm_init plus the shared verdict word; exits on failure. */
void app_start(int *argc, char ***argv);

/* Worker w's share [lo, hi) of [0, total), in contiguous blocks (w in
   0 .. app.workers-1; consecutive workers are on the same node). */
void app_block(long total, int worker, long *lo, long *hi);

/*
 * The timed parallel phase: a barrier, the clock and the runtime's statistics
 * start, fn(worker, arg) runs on app.threads threads of this node (worker =
 * node * threads + thread; locus_dsm_barrier inside is over every worker),
 * and when every worker of every node has returned the clock and the
 * statistics stop. Starting the threads is part of the time.
 */
void app_parallel(void (*fn)(int worker, void *arg), void *arg);

/* Shared allocation that exits on failure. */
void *app_alloc(size_t bytes);

/*
 * Node 0 passes ok (1 = verified); every node gets it, node 0 prints the
 * result line (human, and JSON for tools/dsm-suite) with the parameters
 * (printf's fmt and what follows, e.g. "n=%ld"), the runtime prints its
 * statistics at finalize. Returns the process exit status.
 */
int app_finish(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
