/*
 * An O(n^2) molecular-dynamics kernel in the manner of SPLASH-2 Water-Nsquared
 * (seed 004 §3.2.1): molecules block-partitioned over the workers (nodes x
 * threads); each step every worker computes the pair forces of its molecules
 * with all later ones (Newton's third law: each pair once) into a private
 * array, then every node adds its threads' contributions to every node's
 * molecules under that node's lock (the migratory, lock-protected updates of
 * the original), and every worker moves its own molecules.
 *
 * With several threads per node (seed 001 §4.2), the contributions stay in
 * the node until the threads have all computed theirs and one lock per
 * owning node is taken per node and step, as with one thread; the node's
 * threads share those lock rounds out, so their waits overlap. Each thread
 * also starts its inner loop at a different distance, so that threads of one
 * node fault on different pages at a time instead of queueing for the same
 * one. Force sums arrive in a timing-dependent order, so the check allows
 * rounding differences.
 *   locus-water [-n 512] [-s 3] [--threads 1] [--prefetch 0]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define DT 0.0005

struct mol {
	double pos[3], vel[3], force[3];
};

static void fill(struct mol *m, long n)
{
	long side = (long)ceil(cbrt((double)n));
	for (long i = 0; i < n; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].pos[0] = (double)(i % side) * 1.1;
		m[i].pos[1] = (double)((i / side) % side) * 1.1;
		m[i].pos[2] = (double)(i / (side * side)) * 1.1;
		m[i].vel[0] = 0.01 * sin((double)i);
		m[i].vel[1] = 0.01 * cos((double)i);
	}
}

/* Pair forces of molecules [lo, hi) with every later one, into f[n][3]; the
   later ones are visited from a point `rot` (0..1) of the way along, wrapping. */
static void forces(const struct mol *m, long n, long lo, long hi, double rot, double (*f)[3])
{
	for (long i = lo; i < hi; i++) {
		long later = n - i - 1, start = (long)(rot * (double)later);
		for (long c = 0; c < later; c++) {
			long j = i + 1 + (start + c) % later;
			double d[3], r2 = 0;
			for (int k = 0; k < 3; k++) {
				d[k] = m[i].pos[k] - m[j].pos[k];
				r2 += d[k] * d[k];
			}
			double inv2 = 1.0 / r2, inv6 = inv2 * inv2 * inv2;
			double s = 24.0 * inv2 * inv6 * (2.0 * inv6 - 1.0); /* Lennard-Jones */
			for (int k = 0; k < 3; k++) {
				f[i][k] += s * d[k];
				f[j][k] -= s * d[k];
			}
		}
	}
}

static void move(struct mol *m, long lo, long hi)
{
	for (long i = lo; i < hi; i++)
		for (int k = 0; k < 3; k++) {
			m[i].vel[k] += DT * m[i].force[k];
			m[i].pos[k] += DT * m[i].vel[k];
		}
}

static long n, steps;
static struct mol *m;
static double (**fpriv)[3]; /* this node's threads' private forces */

static void work(int me, void *unused)
{
	(void)unused;
	int t = me % (int)app.threads, T = (int)app.threads;
	double(*f)[3] = fpriv[t];
	long lo, hi;
	app_block(n, me, &lo, &hi);
	for (long s = 0; s < steps; s++) {
		app_prefetch_write(m + lo, (size_t)(hi - lo) * sizeof(*m));
		for (long i = lo; i < hi; i++)
			memset(m[i].force, 0, sizeof(m[i].force));
		memset(f, 0, (size_t)n * sizeof(*f));
		locus_dsm_barrier();
		app_prefetch(m + lo, (size_t)(n - lo) * sizeof(*m)); /* all later molecules */
		forces(m, n, lo, hi, (double)t / T, f);
		locus_dsm_team_barrier(); /* every thread of the node has its f */
		/* Lock rounds: owner node (me + k) % nodes for k = t, t + T, ... */
		for (int k = t; k < app.nodes; k += T) {
			int owner = (app.me + k) % app.nodes; /* start at different locks */
			long qlo, qhi, unused_hi;
			app_block(n, owner * T, &qlo, &unused_hi);
			app_block(n, owner * T + T - 1, &unused_hi, &qhi);
			locus_dsm_lock((uint32_t)owner);
			app_prefetch_write(m + qlo, (size_t)(qhi - qlo) * sizeof(*m));
			for (long i = qlo; i < qhi; i++)
				for (int k3 = 0; k3 < 3; k3++) {
					double sum = 0;
					for (int u = 0; u < T; u++)
						sum += fpriv[u][i][k3];
					m[i].force[k3] += sum;
				}
			locus_dsm_unlock((uint32_t)owner);
		}
		locus_dsm_barrier();
		app_prefetch_write(m + lo, (size_t)(hi - lo) * sizeof(*m));
		move(m, lo, hi);
		locus_dsm_barrier();
	}
}

int main(int argc, char **argv)
{
	n = 512;
	steps = 3;
	const struct app_opt opts[] = {{"-n", "molecules", &n, 1, 10000000},
				       {"-s", "time steps", &steps, 1, 1000000},
				       {0}};
	app_dsm_options(argc, argv, "water",
			"An O(n^2) molecular-dynamics kernel (Water-Nsquared).", opts);
	app_start(&argc, &argv);
	m = app_alloc(app_bytes("the molecules", (size_t)n, sizeof(struct mol), 1));
	if (app.me == 0)
		fill(m, n);
	/* Under avr a rollback undoes shared memory and the stack, not the heap:
	   the forces a node adds up go in a slice of the shared region of its
	   own (written by no other node, so it never moves). */
	int in_region = !strcmp(locus_dsm_protocol(), "avr");
	double(*fshared)[3] = NULL;
	if (in_region)
		fshared = app_alloc(app_bytes("the private forces", (size_t)app.workers, (size_t)n,
					      sizeof(*fshared)));
	fpriv = calloc((size_t)app.threads, sizeof(*fpriv));
	for (long t = 0; fpriv && t < app.threads; t++)
		if (!(fpriv[t] = in_region ? fshared + (app.me * app.threads + t) * n
					   : malloc((size_t)n * sizeof(**fpriv))))
			fpriv = NULL;
	if (!fpriv) {
		fprintf(stderr, "locus-water: no memory for %ld x %ld forces\n", app.threads, n);
		exit(1);
	}
	app_parallel(work, NULL);
	for (long t = 0; t < app.threads && !in_region; t++)
		free(fpriv[t]);
	free(fpriv);
	int ok = 1;
	if (app.me == 0) {
		struct mol *sm = malloc((size_t)n * sizeof(struct mol));
		double(*f)[3] = malloc((size_t)n * sizeof(*f));
		fill(sm, n);
		for (long s = 0; s < steps; s++) {
			memset(f, 0, (size_t)n * sizeof(*f));
			forces(sm, n, 0, n, 0, f);
			for (long i = 0; i < n; i++)
				memcpy(sm[i].force, f[i], sizeof(f[i]));
			move(sm, 0, n);
		}
		double worst = 0;
		for (long i = 0; i < n; i++)
			for (int k = 0; k < 3; k++) {
				double e = fabs(sm[i].pos[k] - m[i].pos[k]) /
					   (fabs(sm[i].pos[k]) + 1.0);
				if (e > worst)
					worst = e;
			}
		ok = worst < 1e-9;
		if (!ok)
			printf("locus-water: worst relative position error %g\n", worst);
		free(sm);
		free(f);
	}
	return app_finish(ok, "molecules=%ld steps=%ld", n, steps);
}
