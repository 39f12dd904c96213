/*
 * Radix-2 complex FFT of n = 2^m points (seed 004 §3.2.6): a bit-reversal
 * permutation into a second array, then log2(n) butterfly stages, each
 * stage's butterflies block-partitioned over the workers (nodes x threads)
 * with a barrier after it. The first stages stay inside a worker's block; the
 * last log2(workers) stages pair points owned by different workers
 * (all-to-all communication, between nodes for the last log2(nodes)).
 * The sequential run performs the same operations, so results are identical.
 *   locus-fft [-m 16] [--threads 1] [--prefetch 0]
 */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static long n;
static int m;

static void fill(double complex *x)
{
	for (long i = 0; i < n; i++)
		x[i] = sin(0.001 * (double)i) + I * cos(0.003 * (double)(i % 1000));
}

static long reverse(long i)
{
	long r = 0;
	for (int b = 0; b < m; b++)
		r |= ((i >> b) & 1) << (m - 1 - b);
	return r;
}

static void permute(const double complex *in, double complex *out, long lo, long hi)
{
	for (long i = lo; i < hi; i++)
		out[i] = in[reverse(i)];
}

/* Butterflies [lo, hi) of the stage with half-size h. */
static void stage(double complex *x, long h, long lo, long hi)
{
	for (long b = lo; b < hi; b++) {
		long grp = b / h, k = b % h;
		long i = grp * 2 * h + k, j = i + h;
		double complex w = cexp(-I * M_PI * (double)k / (double)h);
		double complex t = w * x[j];
		x[j] = x[i] - t;
		x[i] = x[i] + t;
	}
}

static double complex *in, *x;

static void work(int worker, void *unused)
{
	(void)unused;
	long lo, hi, blo, bhi;
	app_block(n, worker, &lo, &hi);
	app_block(n / 2, worker, &blo, &bhi);
	app_prefetch_write(x + lo, (size_t)(hi - lo) * sizeof(*x));
	app_prefetch(in, (size_t)n * sizeof(*in)); /* read in bit-reversed order */
	permute(in, x, lo, hi);
	locus_dsm_barrier();
	for (long h = 1; h < n; h *= 2) {
		/* Butterfly b of a stage touches points near 2b: partitioning the
		   butterflies in blocks keeps early stages inside a worker's points. */
		if (bhi > blo) { /* points i = 2h(b/h) + b%h and i + h of butterflies b */
			long first = blo / h * 2 * h + blo % h;
			long last = (bhi - 1) / h * 2 * h + (bhi - 1) % h + h;
			app_prefetch_write(x + first, (size_t)(last - first + 1) * sizeof(*x));
		}
		stage(x, h, blo, bhi);
		locus_dsm_barrier();
	}
}

int main(int argc, char **argv)
{
	long lm = 16;
	const struct app_opt opts[] = {{"-m", "log2 of the points", &lm, 1, 40}, {0}};
	app_dsm_options(argc, argv, "fft", "Radix-2 complex FFT of 2^m points.", opts);
	app_start(&argc, &argv);
	m = (int)lm;
	n = 1L << m;
	size_t bytes = app_bytes("the points", (size_t)n, sizeof(double complex), 1);
	in = app_alloc(bytes);
	x = app_alloc(bytes);
	if (app.me == 0)
		fill(in);
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		double complex *sin_ = malloc(bytes), *sx = malloc(bytes);
		fill(sin_);
		permute(sin_, sx, 0, n);
		for (long h = 1; h < n; h *= 2)
			stage(sx, h, 0, n / 2);
		ok = memcmp(sx, x, bytes) == 0;
		free(sin_);
		free(sx);
	}
	return app_finish(ok, "points=2^%d", m);
}
