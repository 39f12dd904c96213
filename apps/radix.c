/*
 * Radix sort of n integer keys, 8 bits per pass (seed 004 §3.2.8): each
 * worker (node x thread) histograms its block of keys into a shared histogram
 * row, a barrier, then each worker computes where its keys of every digit go
 * and writes them into
 * the destination array. Keys are first grouped by digit in private memory
 * and written as one run per digit: key-by-key scattering makes every page
 * of the destination ping-pong between all nodes for every key (minutes
 * instead of seconds here); the runs still share pages at their ends, the
 * false sharing radix is known for. The check: sorted, and the same
 * multiset as a sequential sort of the same keys.
 *   locus-radix [-n 262144] [-bits 24] [--threads 1] [--prefetch 0]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define RADIX 256

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static void fill(uint32_t *k, long n, int bits)
{
	uint32_t seed = 11;
	for (long i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		k[i] = (seed >> 4) & ((1u << bits) - 1);
	}
}

static long n;
static int passes;
static uint32_t *keys[2];
static uint64_t *hist; /* [worker][RADIX] */

static void work(int me, void *unused)
{
	(void)unused;
	long lo, hi;
	app_block(n, me, &lo, &hi);
	uint32_t *grouped = malloc((size_t)(hi - lo + 1) * 4);
	if (!grouped) {
		fprintf(stderr, "locus-radix: no memory for %ld keys\n", hi - lo);
		exit(1);
	}
	for (int p = 0; p < passes; p++) {
		uint32_t *src = keys[p & 1], *dst = keys[(p + 1) & 1];
		int shift = 8 * p;
		uint64_t local[RADIX] = {0};
		for (long i = lo; i < hi; i++)
			local[(src[i] >> shift) & (RADIX - 1)]++;
		memcpy(&hist[me * RADIX], local, sizeof(local));
		locus_dsm_barrier();
		app_prefetch(hist, (size_t)app.workers * RADIX * sizeof(uint64_t));
		uint64_t pos[RADIX], at = 0;
		for (int d = 0; d < RADIX; d++) {
			for (int q = 0; q < app.workers; q++) {
				if (q == me)
					pos[d] = at;
				at += hist[q * RADIX + d];
			}
		}
		uint64_t start[RADIX], at_local = 0;
		for (int d = 0; d < RADIX; d++) {
			start[d] = at_local;
			at_local += local[d];
		}
		for (long i = lo; i < hi; i++)
			grouped[start[(src[i] >> shift) & (RADIX - 1)]++] = src[i];
		for (int d = 0; d < RADIX; d++)
			if (local[d])
				app_prefetch_write(&dst[pos[d]], local[d] * 4);
		for (int d = 0; d < RADIX; d++) {
			uint64_t len = local[d];
			memcpy(&dst[pos[d]], &grouped[start[d] - len], len * 4);
		}
		locus_dsm_barrier();
	}
	free(grouped);
}

int main(int argc, char **argv)
{
	n = 262144;
	long lbits = 24;
	const struct app_opt opts[] = {
		{"-n", "keys", &n, 1, 1L << 40}, {"-bits", "bits of a key", &lbits, 1, 32}, {0}};
	app_dsm_options(argc, argv, "radix", "Radix sort of n integer keys, 8 bits per pass.",
			opts);
	app_start(&argc, &argv);
	int bits = (int)lbits;
	passes = (bits + 7) / 8;
	size_t kbytes = app_bytes("the keys", (size_t)n, 4, 1);
	keys[0] = app_alloc(kbytes);
	keys[1] = app_alloc(kbytes);
	hist = app_alloc((size_t)app.workers * RADIX * sizeof(uint64_t));
	if (app.me == 0)
		fill(keys[0], n, bits);
	app_parallel(work, NULL);
	int ok = 1;
	if (app.me == 0) {
		uint32_t *s = malloc((size_t)n * 4);
		fill(s, n, bits);
		qsort(s, (size_t)n, 4, cmp_u32);
		ok = memcmp(s, keys[passes & 1], (size_t)n * 4) == 0;
		free(s);
	}
	return app_finish(ok, "keys=%ld bits=%d", n, bits);
}
