/*
 * C = A x B for n x n doubles, rows of C block-partitioned (seed 004 §3.2.9):
 * every node reads all of B (read replication) and its rows of A, and writes
 * its rows of C, whose edges share pages with the neighbours' rows.
 *   locus-matmul [-n 256] [--threads 1] [--prefetch 0]
 */
#include <stdio.h>
#include <stdlib.h>

#include "app.h"

static void fill(double *m, long n, unsigned seed)
{
	for (long i = 0; i < n * n; i++) {
		seed = seed * 1103515245u + 12345u;
		m[i] = (double)((seed >> 16) % 1000) / 100.0 - 5.0;
	}
}

static void multiply(const double *a, const double *b, double *c, long n, long r0, long r1)
{
	for (long i = r0; i < r1; i++) {
		for (long j = 0; j < n; j++)
			c[i * n + j] = 0;
		for (long k = 0; k < n; k++) {
			double aik = a[i * n + k];
			for (long j = 0; j < n; j++)
				c[i * n + j] += aik * b[k * n + j];
		}
	}
}

static long n;
static double *a, *b, *c;

static void work(int worker, void *unused)
{
	(void)unused;
	long lo, hi;
	app_block(n, worker, &lo, &hi);
	app_prefetch(a + lo * n, (size_t)(hi - lo) * (size_t)n * sizeof(double));
	app_prefetch(b, (size_t)n * (size_t)n * sizeof(double));
	app_prefetch_write(c + lo * n, (size_t)(hi - lo) * (size_t)n * sizeof(double));
	multiply(a, b, c, n, lo, hi);
}

int main(int argc, char **argv)
{
	n = 256;
	const struct app_opt opts[] = {{"-n", "rows and columns of the matrices", &n, 1, 1000000},
				       {0}};
	app_dsm_options(argc, argv, "matmul", "C = A x B for n x n matrices of doubles.", opts);
	app_start(&argc, &argv);
	size_t bytes = app_bytes("a matrix", (size_t)n, (size_t)n, sizeof(double));
	a = app_alloc(bytes);
	b = app_alloc(bytes);
	c = app_alloc(bytes);
	if (app.me == 0) {
		fill(a, n, 1);
		fill(b, n, 2);
	}
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		double *sa = calloc(1, bytes), *sb = calloc(1, bytes), *sc = calloc(1, bytes);
		if (!sa || !sb || !sc) {
			fprintf(stderr, "locus-matmul: no memory for the sequential check\n");
			ok = 0;
		} else {
			fill(sa, n, 1);
			fill(sb, n, 2);
			multiply(sa, sb, sc, n, 0, n);
			for (long i = 0; i < n * n && ok; i++)
				ok = c[i] == sc[i];
		}
		free(sa);
		free(sb);
		free(sc);
	}
	return app_finish(ok, "n=%ld", n);
}
