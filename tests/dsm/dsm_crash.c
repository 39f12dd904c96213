/*
 * A program that fails on purpose, for tests/dsm/failure.sh:
 *   dsm_crash kill N     node N kills itself (SIGKILL) while the others wait in a barrier
 *   dsm_crash exit N     node N returns from main without locus_dsm_finalize
 *   dsm_crash outside N  node N dereferences an address outside the shared region
 *   dsm_crash ship N     node N exits at once (_exit) while every other node
 *                        waits for a shipped call to it (an exit, not a kill:
 *                        the launcher then lets every survivor speak)
 *   dsm_crash stop N     node N stops itself (SIGSTOP): it neither exits nor
 *                        says anything, so only its silence can tell
 * The survivors never finish on their own: only failure detection ends them.
 *   dsm_crash pause 0    no failure: every node prints its pid ("paused node
 *                        N pid P") and node 0 waits for a line on its
 *                        standard input (the test stops every node and
 *                        resumes them meanwhile); then all finalize
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "locus/dsm.h"

static uint64_t slow(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)a, (void)b, (void)c;
	struct timespec t = {0, 1000000};
	nanosleep(&t, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s kill|exit|outside|ship|stop|pause NODE\n", argv[0]);
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
	if (!strcmp(how, "pause")) {
		printf("paused node %d pid %d\n", me, (int)getpid());
		fflush(stdout);
		char line[16];
		if (me == victim && !fgets(line, sizeof(line), stdin))
			fprintf(stderr, "node %d: no line on standard input\n", me);
		locus_dsm_barrier();
		locus_dsm_finalize();
		return 0;
	}
	if (!strcmp(how, "ship") && me != victim)
		for (;;) /* the victim dies while a call to it waits */
			locus_dsm_call(victim, slow, (void *)shared, 0, 0, 0);
	if (me == victim) {
		printf("victim node %d pid %d: %s\n", me, (int)getpid(), how);
		fflush(stdout);
		if (!strcmp(how, "kill"))
			raise(SIGKILL);
		if (!strcmp(how, "stop"))
			raise(SIGSTOP);
		if (!strcmp(how, "ship")) {
			struct timespec t = {0, 200000000}; /* calls to it are in flight */
			nanosleep(&t, NULL);
			_exit(1);
		}
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
