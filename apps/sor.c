/*
 * Red-black successive over-relaxation (the TreadMarks SOR of seed 001): each
 * sweep updates the red points (i + j even) from their black neighbours, then
 * the black ones from the new red ones, in place, with a barrier between.
 *   locus-sor [-n 512] [-i 20] [--threads 1] [--prefetch 0]
 */
#include <stdio.h>
#include <stdlib.h>

#include "app.h"
#include "grid.h"

#define OMEGA 1.25

static void sor_rows(double *g, long n, long r0, long r1, int colour)
{
	long w = n + 2;
	for (long i = r0; i < r1; i++)
		for (long j = 1 + ((i + 1 + colour) & 1); j <= n; j += 2) {
			double avg = 0.25 * (g[(i - 1) * w + j] + g[(i + 1) * w + j] +
					     g[i * w + j - 1] + g[i * w + j + 1]);
			g[i * w + j] += OMEGA * (avg - g[i * w + j]);
		}
}

static long n, iters;
static double *g;

static void work(int worker, void *unused)
{
	(void)unused;
	long lo, hi;
	app_block(n, worker, &lo, &hi);
	for (long it = 0; it < iters; it++)
		for (int colour = 0; colour < 2; colour++) {
			app_prefetch_write(g + (lo + 1) * (n + 2),
					   (size_t)(hi - lo) * (size_t)(n + 2) * 8);
			app_prefetch(g + lo * (n + 2), (size_t)(hi - lo + 2) * (size_t)(n + 2) * 8);
			sor_rows(g, n, lo + 1, hi + 1, colour);
			locus_dsm_barrier();
		}
}

int main(int argc, char **argv)
{
	n = 512;
	iters = 20;
	const struct app_opt opts[] = {{"-n", "grid points per side", &n, 1, 1000000},
				       {"-i", "red-black sweeps", &iters, 1, 1000000},
				       {0}};
	app_dsm_options(argc, argv, "sor",
			"Red-black successive over-relaxation on an (n+2) x (n+2) grid.", opts);
	app_start(&argc, &argv);
	long w = n + 2;
	g = app_alloc(app_bytes("the grid", (size_t)w, (size_t)w, sizeof(double)));
	if (app.me == 0)
		grid_init(g, n);
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		double *s = malloc((size_t)(w * w) * sizeof(double));
		grid_init(s, n);
		for (long it = 0; it < iters; it++)
			for (int colour = 0; colour < 2; colour++)
				sor_rows(s, n, 1, n + 1, colour);
		ok = grid_equal(g, s, n);
		free(s);
	}
	return app_finish(ok, "n=%ld iters=%ld", n, iters);
}
