/*
 * The reference a DSM is measured against: the same Jacobi as locus-jacobi
 * (same grid, same sweep, same partition), written with explicit message
 * passing — each rank keeps its rows plus two halo rows and exchanges the
 * halos with its neighbours every sweep. Verified like locus-jacobi.
 *   mpiexec -n N locus-mpi-jacobi [-n 512] [-i 20]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "grid.h"

int main(int argc, char **argv)
{
	long n = 512, iters = 20;
	const struct app_opt opts[] = {{"-n", "grid points per side", &n, 1, 1000000},
				       {"-i", "sweeps", &iters, 1, 1000000},
				       {0}};
	app_options(argc, argv, "mpi-jacobi",
		    "locus-jacobi written with explicit message passing (the DSM's reference).",
		    opts);
	MPI_Init(&argc, &argv);
	int me, nodes;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &nodes);
	long w = n + 2;
	long base = n / nodes, extra = n % nodes;
	long lo = me * base + (me < extra ? me : extra), rows = base + (me < extra);
	/* Local rows lo+1 .. lo+rows of the global grid, with halo rows around. */
	double *full = malloc((size_t)(w * w) * sizeof(double));
	grid_init(full, n);
	double *g[2];
	for (int k = 0; k < 2; k++) {
		g[k] = malloc((size_t)((rows + 2) * w) * sizeof(double));
		memcpy(g[k], full + lo * w, (size_t)((rows + 2) * w) * sizeof(double));
	}
	int up = me > 0 ? me - 1 : MPI_PROC_NULL, down = me < nodes - 1 ? me + 1 : MPI_PROC_NULL;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long it = 0; it < iters; it++) {
		double *src = g[it & 1], *dst = g[(it + 1) & 1];
		MPI_Sendrecv(src + w, (int)w, MPI_DOUBLE, up, 0, src + (rows + 1) * w, (int)w,
			     MPI_DOUBLE, down, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Sendrecv(src + rows * w, (int)w, MPI_DOUBLE, down, 1, src, (int)w, MPI_DOUBLE,
			     up, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		jacobi_rows(src, dst, n, 1, rows + 1);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	double secs = MPI_Wtime() - t0;
	/* Gather the interior rows at rank 0 and compare with a sequential run. */
	double *res = g[iters & 1];
	int ok = 1;
	if (me == 0) {
		double *dist = malloc((size_t)(w * w) * sizeof(double));
		grid_init(dist, n);
		memcpy(dist + w, res + w, (size_t)(rows * w) * sizeof(double));
		for (int q = 1; q < nodes; q++) {
			long qlo = q * base + (q < extra ? q : extra), qrows = base + (q < extra);
			MPI_Recv(dist + (qlo + 1) * w, (int)(qrows * w), MPI_DOUBLE, q, 2,
				 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		double *s[2] = {malloc((size_t)(w * w) * sizeof(double)),
				malloc((size_t)(w * w) * sizeof(double))};
		grid_init(s[0], n);
		grid_init(s[1], n);
		for (long it = 0; it < iters; it++)
			jacobi_rows(s[it & 1], s[(it + 1) & 1], n, 1, n + 1);
		ok = grid_equal(dist, s[iters & 1], n);
		free(dist);
		free(s[0]);
		free(s[1]);
		printf("locus-mpi-jacobi: n=%ld iters=%ld, %d ranks: %.3f s, verification %s\n", n,
		       iters, nodes, secs, ok ? "passed" : "FAILED");
		printf("{\"app\": \"mpi-jacobi\", \"params\": \"n=%ld iters=%ld\", \"nodes\": %d, "
		       "\"time_s\": %.6f, \"ok\": %s}\n",
		       n, iters, nodes, secs, ok ? "true" : "false");
		fflush(stdout);
	} else {
		MPI_Send(res + w, (int)(rows * w), MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	free(full);
	free(g[0]);
	free(g[1]);
	MPI_Finalize();
	return ok ? 0 : 1;
}
