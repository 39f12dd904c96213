/*
 * Hello from locus-dsm: every node writes its share of one shared array,
 * then each node sums the whole array — pages written by the others arrive
 * on demand — and checks the sum.
 *
 *   mpiexec -n 2 ./dsm_hello
 */
#include <stdint.h>
#include <stdio.h>

#include <locus/dsm.h>

#define N (1 << 16)

int main(int argc, char **argv)
{
	if (locus_dsm_init(&argc, &argv) != 0)
		return 2;
	int me = locus_dsm_node(), nodes = locus_dsm_nodes();
	uint64_t *a = locus_dsm_alloc(N * sizeof(uint64_t));
	if (!a) {
		fprintf(stderr, "dsm_hello: shared region too small\n");
		locus_dsm_finalize();
		return 2;
	}
	for (uint64_t i = (uint64_t)me; i < N; i += (uint64_t)nodes)
		a[i] = i + 1;
	locus_dsm_barrier();

	uint64_t sum = 0;
	for (uint64_t i = 0; i < N; i++)
		sum += a[i];
	uint64_t want = (uint64_t)N * (N + 1) / 2;
	printf("node %d of %d (%s): sum %llu, %s\n", me, nodes, locus_dsm_protocol(),
	       (unsigned long long)sum, sum == want ? "correct" : "WRONG");
	locus_dsm_barrier();
	locus_dsm_finalize();
	return sum == want ? 0 : 1;
}
