/*
 * Gauss-Seidel for A x = b (seed 004 §3.2.11), A dense and diagonally
 * dominant. Each worker (node x thread) sweeps its block of x in place, reading the other
 * blocks' newest values straight from shared memory as they are written —
 * the races the seed's Gauss has, legal under sequential consistency — and
 * publishes every new value at once. The iteration converges whatever the
 * interleaving, so the check is the residual and the distance to a
 * sequential Gauss-Seidel solution, not bit equality. A barrier ends every
 * iteration, so no node runs ahead on values that are many sweeps old.
 *   locus-gauss [-n 512] [-i 40] [--threads 1] [--prefetch 0]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "app.h"

static void fill(double *a, double *b, long n)
{
	unsigned seed = 7;
	for (long i = 0; i < n; i++) {
		for (long j = 0; j < n; j++) {
			seed = seed * 1103515245u + 12345u;
			a[i * n + j] = (double)((seed >> 16) % 1000) / 1000.0;
		}
		a[i * n + i] = 2.0 * (double)n;
		b[i] = (double)(i % 17) - 8.0;
	}
}

static void sweep(const double *a, const double *b, volatile double *x, long n, long r0, long r1)
{
	for (long i = r0; i < r1; i++) {
		double s = b[i];
		for (long j = 0; j < n; j++)
			if (j != i)
				s -= a[i * n + j] * x[j];
		x[i] = s / a[i * n + i];
	}
}

static double residual(const double *a, const double *b, const volatile double *x, long n)
{
	double worst = 0;
	for (long i = 0; i < n; i++) {
		double s = -b[i];
		for (long j = 0; j < n; j++)
			s += a[i * n + j] * x[j];
		if (fabs(s) > worst)
			worst = fabs(s);
	}
	return worst;
}

static long n, iters;
static double *a, *b;
static volatile double *x;

static void work(int worker, void *unused)
{
	(void)unused;
	long lo, hi;
	app_block(n, worker, &lo, &hi);
	for (long it = 0; it < iters; it++) {
		app_prefetch(a + lo * n, (size_t)(hi - lo) * (size_t)n * sizeof(double));
		app_prefetch((const void *)x, (size_t)n * sizeof(double));
		sweep(a, b, x, n, lo, hi);
		locus_dsm_barrier();
	}
}

int main(int argc, char **argv)
{
	n = 512;
	iters = 40;
	const struct app_opt opts[] = {
		{"-n", "unknowns", &n, 1, 1000000}, {"-i", "sweeps", &iters, 1, 1000000}, {0}};
	app_dsm_options(
		argc, argv, "gauss",
		"Gauss-Seidel for A x = b, A dense and diagonally dominant. Each block reads\n"
		"the other blocks' newest x as they are written, without synchronization:\n"
		"a racy program. Under sc it sees every write at once; under lrc it sees\n"
		"the other blocks' x as of the last barrier (Jacobi-like sweeps between\n"
		"barriers), and it still converges and verifies by residual.",
		opts);
	app_start(&argc, &argv);
	a = app_alloc(app_bytes("the matrix", (size_t)n, (size_t)n, sizeof(double)));
	b = app_alloc((size_t)n * sizeof(double));
	x = app_alloc((size_t)n * sizeof(double));
	if (app.me == 0)
		fill(a, b, n);
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		double *sa = malloc((size_t)(n * n) * sizeof(double));
		double *sb = malloc((size_t)n * sizeof(double));
		double *sx = calloc((size_t)n, sizeof(double));
		fill(sa, sb, n);
		for (long it = 0; it < iters; it++)
			sweep(sa, sb, sx, n, 0, n);
		double r = residual(sa, sb, x, n), dist = 0;
		for (long i = 0; i < n; i++)
			if (fabs(x[i] - sx[i]) > dist)
				dist = fabs(x[i] - sx[i]);
		ok = r < 1e-6 && dist < 1e-8;
		if (!ok)
			printf("locus-gauss: residual %g, distance to sequential %g\n", r, dist);
		free(sa);
		free(sb);
		free(sx);
	}
	return app_finish(ok, "n=%ld iters=%ld", n, iters);
}
