/* The grid shared by jacobi, sor and the explicit-MPI jacobi: (n+2)^2 doubles,
   row-major, boundary rows and columns fixed. */
#ifndef LOCUS_APP_GRID_H
#define LOCUS_APP_GRID_H

#include <math.h>

/* Rows [r0, r1) of the initial grid: interior 0, boundary a smooth function, so
   sweeps have something to move. */
static inline void grid_init_rows(double *g, long n, long r0, long r1)
{
	long w = n + 2;
	for (long i = r0; i < r1; i++)
		for (long j = 0; j < w; j++) {
			int edge = i == 0 || j == 0 || i == w - 1 || j == w - 1;
			g[i * w + j] = edge ? sin(0.01 * (double)(i + 2 * j)) + 1.0 : 0.0;
		}
}

/* The whole initial grid. */
static inline void grid_init(double *g, long n)
{
	grid_init_rows(g, n, 0, n + 2);
}

/* One Jacobi sweep of rows [r0, r1) from src into dst. */
static inline void jacobi_rows(const double *src, double *dst, long n, long r0, long r1)
{
	long w = n + 2;
	for (long i = r0; i < r1; i++)
		for (long j = 1; j <= n; j++)
			dst[i * w + j] = 0.25 * (src[(i - 1) * w + j] + src[(i + 1) * w + j] +
						 src[i * w + j - 1] + src[i * w + j + 1]);
}

/* Bit-for-bit equal interiors (the same operations in the same order). */
static inline int grid_equal(const double *a, const double *b, long n)
{
	long w = n + 2;
	for (long i = 0; i < w * w; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

#endif
