/*
 * Blocked LU factorization without pivoting of a diagonally dominant n x n
 * matrix (seed 004 §3.2.3): the matrix is an nb x nb array of B x B blocks,
 * each contiguous and page-aligned, owned by workers (nodes x threads) in a
 * 2-D scatter. Step k:
 * factor the diagonal block; solve the row and column panels; update the
 * trailing blocks; a barrier after each phase.
 *   locus-lu [-n 256] [-b 32] [--threads 1] [--prefetch 0]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static long n, bs, nb;

static double *blk(double *m, long bi, long bj)
{
	return m + (bi * nb + bj) * bs * bs;
}

static int owner(long bi, long bj)
{
	int pr = 1;
	while ((pr * 2) * (pr * 2) <= app.workers)
		pr *= 2;
	int pc = app.workers / pr;
	return (int)((bi % pr) * pc + (bj % pc));
}

static void fill(double *m)
{
	unsigned seed = 3;
	for (long i = 0; i < n; i++)
		for (long j = 0; j < n; j++) {
			seed = seed * 1103515245u + 12345u;
			double v = (double)((seed >> 16) % 1000) / 1000.0;
			if (i == j)
				v += (double)n;
			blk(m, i / bs, j / bs)[(i % bs) * bs + j % bs] = v;
		}
}

static void factor_diag(double *d)
{
	for (long k = 0; k < bs; k++)
		for (long i = k + 1; i < bs; i++) {
			d[i * bs + k] /= d[k * bs + k];
			for (long j = k + 1; j < bs; j++)
				d[i * bs + j] -= d[i * bs + k] * d[k * bs + j];
		}
}

static void solve_row(const double *d, double *a) /* a = L^-1 a */
{
	for (long k = 0; k < bs; k++)
		for (long i = k + 1; i < bs; i++)
			for (long j = 0; j < bs; j++)
				a[i * bs + j] -= d[i * bs + k] * a[k * bs + j];
}

static void solve_col(const double *d, double *a) /* a = a U^-1 */
{
	for (long k = 0; k < bs; k++)
		for (long i = 0; i < bs; i++) {
			a[i * bs + k] /= d[k * bs + k];
			for (long j = k + 1; j < bs; j++)
				a[i * bs + j] -= a[i * bs + k] * d[k * bs + j];
		}
}

static void update(const double *l, const double *u, double *a)
{
	for (long i = 0; i < bs; i++)
		for (long k = 0; k < bs; k++) {
			double lik = l[i * bs + k];
			for (long j = 0; j < bs; j++)
				a[i * bs + j] -= lik * u[k * bs + j];
		}
}

/* One worker's share of LU; all = 1 does every block (the sequential run). */
static void lu(double *m, int all, int me)
{
	for (long k = 0; k < nb; k++) {
		if (all || owner(k, k) == me)
			factor_diag(blk(m, k, k));
		if (!all)
			locus_dsm_barrier();
		for (long j = k + 1; !all && j < nb; j++)
			if (owner(k, j) == me || owner(j, k) == me) {
				app_prefetch(blk(m, k, k), (size_t)(bs * bs) * sizeof(double));
				break;
			}
		for (long j = k + 1; j < nb; j++) {
			if (all || owner(k, j) == me)
				solve_row(blk(m, k, k), blk(m, k, j));
			if (all || owner(j, k) == me)
				solve_col(blk(m, k, k), blk(m, j, k));
		}
		if (!all)
			locus_dsm_barrier();
		for (long i = k + 1; !all && i < nb; i++)
			for (long j = k + 1; j < nb; j++)
				if (owner(i, j) == me) {
					app_prefetch_write(blk(m, i, j),
							   (size_t)(bs * bs) * sizeof(double));
					app_prefetch(blk(m, i, k),
						     (size_t)(bs * bs) * sizeof(double));
					app_prefetch(blk(m, k, j),
						     (size_t)(bs * bs) * sizeof(double));
				}
		for (long i = k + 1; i < nb; i++)
			for (long j = k + 1; j < nb; j++)
				if (all || owner(i, j) == me)
					update(blk(m, i, k), blk(m, k, j), blk(m, i, j));
		if (!all)
			locus_dsm_barrier();
	}
}

static double *shared_m;

static void work(int worker, void *unused)
{
	(void)unused;
	lu(shared_m, 0, worker);
}

int main(int argc, char **argv)
{
	n = 256;
	bs = 32;
	const struct app_opt opts[] = {
		{"-n", "rows and columns of the matrix", &n, 1, 1000000},
		{"-b", "rows and columns of a block (divides -n)", &bs, 1, 1000000},
		{0}};
	app_dsm_options(argc, argv, "lu", "Blocked LU factorization of an n x n matrix.", opts);
	if (n % bs) {
		if (app_first_node())
			fprintf(stderr,
				"locus-lu: -n %ld is not a multiple of -b %ld (see --help)\n", n,
				bs);
		return 2;
	}
	app_start(&argc, &argv);
	nb = n / bs;
	size_t bytes = app_bytes("the matrix", (size_t)n, (size_t)n, sizeof(double));
	double *m = shared_m = app_alloc(bytes);
	if (app.me == 0)
		fill(m);
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		double *s = malloc(bytes);
		fill(s);
		lu(s, 1, 0);
		ok = memcmp(s, m, bytes) == 0;
		free(s);
	}
	return app_finish(ok, "n=%ld block=%ld", n, bs);
}
