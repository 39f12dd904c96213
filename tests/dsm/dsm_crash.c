/*
 * A program that fails on purpose, for tests/dsm/failure.sh:
 *   dsm_crash kill N     node N kills itself (SIGKILL) while the others wait in a barrier
 *   dsm_crash exit N     node N returns from main without locus_dsm_finalize
 *   dsm_crash outside N  node N dereferences an address outside the shared region
 * The survivors never finish on their own: only failure detection ends them.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "locus/dsm.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s kill|exit|outside NODE\n", argv[0]);
		return 2;
	}
	const char *how = argv[1];
	int victim = atoi(argv[2]);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	int me = locus_dsm_node();
	volatile uint64_t *shared = locus_dsm_alloc(4096);
	shared[me] = 1;
	locus_dsm_barrier();
	if (me == victim) {
		printf("victim node %d pid %d: %s\n", me, (int)getpid(), how);
		fflush(stdout);
		if (!strcmp(how, "kill"))
			raise(SIGKILL);
		if (!strcmp(how, "exit"))
			return 0;
		if (!strcmp(how, "outside")) {
			volatile uintptr_t where = 0x10;
			return *(volatile int *)where;
		}
	}
	for (;;) /* the victim never arrives */
		locus_dsm_barrier();
}
