/*
 * Jacobi relaxation of the Laplace equation on an (n+2) x (n+2) grid with
 * fixed boundaries: every sweep computes a new grid from the old one, then the
 * two swap. Rows are block-partitioned over nodes x threads; rows are not page-aligned, so the
 * pages at partition boundaries are falsely shared (seed 004 §3.2.10).
 * Node 0 initializes the grids and every node fetches its rows in the first
 * sweep, as the seed's program does; with --first-touch 1 each worker
 * initializes its own rows before the timed phase instead, so each node starts
 * with its rows at home, as the explicit-MPI version's ranks do.
 *   locus-jacobi [-n 512] [-i 20] [--first-touch 0] [--threads 1] [--prefetch 0]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "grid.h"

static long n, iters, first_touch;
static double *g[2];

/* --first-touch: this worker's rows of both grids, and the boundary rows for the
   first and the last worker. */
static void init_rows(int worker, void *unused)
{
	(void)unused;
	long lo, hi;
	app_block(n, worker, &lo, &hi);
	long r0 = lo == 0 ? 0 : lo + 1, r1 = hi == n ? n + 2 : hi + 1;
	grid_init_rows(g[0], n, r0, r1);
	grid_init_rows(g[1], n, r0, r1);
}

static void work(int worker, void *unused)
{
	(void)unused;
	long lo, hi;
	app_block(n, worker, &lo, &hi);
	for (long it = 0; it < iters; it++) {
		/* this worker's rows of the new grid; rows lo .. hi+1 of the old one, the
		   halo rows included */
		app_prefetch_write(g[(it + 1) & 1] + (lo + 1) * (n + 2),
				   (size_t)(hi - lo) * (size_t)(n + 2) * 8);
		app_prefetch(g[it & 1] + lo * (n + 2), (size_t)(hi - lo + 2) * (size_t)(n + 2) * 8);
		jacobi_rows(g[it & 1], g[(it + 1) & 1], n, lo + 1, hi + 1);
		locus_dsm_barrier();
	}
}

int main(int argc, char **argv)
{
	n = 512;
	iters = 20;
	const struct app_opt opts[] = {
		{"-n", "grid points per side", &n, 1, 1000000},
		{"-i", "sweeps", &iters, 1, 1000000},
		{"--first-touch",
		 "1: each worker initializes its own rows (untimed) instead of node 0",
		 &first_touch, 0, 1},
		{0}};
	app_dsm_options(argc, argv, "jacobi",
			"Jacobi relaxation of the Laplace equation on an (n+2) x (n+2) grid.",
			opts);
	app_start(&argc, &argv);
	long w = n + 2;
	size_t bytes = app_bytes("the grid", (size_t)w, (size_t)w, sizeof(double));
	g[0] = app_alloc(bytes);
	g[1] = app_alloc(bytes);
	if (first_touch)
		app_parallel(init_rows, NULL); /* timed and counted anew by the next phase */
	else if (app.me == 0) {
		grid_init(g[0], n);
		grid_init(g[1], n);
	}
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		double *s[2] = {malloc((size_t)(w * w) * sizeof(double)),
				malloc((size_t)(w * w) * sizeof(double))};
		grid_init(s[0], n);
		grid_init(s[1], n);
		for (long it = 0; it < iters; it++)
			jacobi_rows(s[it & 1], s[(it + 1) & 1], n, 1, n + 1);
		ok = grid_equal(g[iters & 1], s[iters & 1], n);
		free(s[0]);
		free(s[1]);
	}
	return app_finish(ok, "n=%ld iters=%ld", n, iters);
}
