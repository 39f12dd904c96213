/*
 * A fork-style run (locus_dsm_start), written as a program for threads is:
 * main sets globals and shared structures up, spawns workers over every node
 * and joins them; the workers see what main wrote to the globals, allocate
 * and free shared memory, take mutexes and pass counted barriers; main reads
 * its standard input (only rank 0's is the program's) and checks everything.
 * A pointer into the C library that main keeps in a global (stdout) is good
 * on every node. Every thread has the program's name (/proc comm: what ps,
 * top and pkill see), on every node: not "exe", nor a runtime thread's.
 *
 *   dsm_fork THREADS ROUNDS < "a number"     (linked with liblocus-dsm.so)
 *   dsm_fork barrier                          (a collective call: refused)
 *   dsm_fork return STATUS                    (main returns without finalize: the
 *                                              run ends with STATUS on every rank 0)
 *
 * Rank 0 prints "ok: ..." and exits 0 when every check passed; other ranks
 * exit 0 after rank 0 finalizes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "locus/dsm.h"

struct work {
	locus_dsm_mutex m;
	locus_dsm_barrier_obj bar;
	uint64_t total, joined;
	uint64_t seen_factor[256];
	uint8_t same_stdout[256];
	uint8_t named[256]; /* the thread's name is the program's */
	uint64_t *cells[256];
};

/* Globals main writes before the spawn: each worker must see them. */
static struct work *work;
static long factor, rounds, threads;
static const char *label = "unset";
static uint64_t table[1024]; /* a large one, in .bss */
static FILE *out;	     /* a pointer into the C library: the same on every node */

static void worker(void *arg)
{
	long id = (long)(intptr_t)arg;
	work->seen_factor[id] =
		(uint64_t)factor * (strcmp(label, "set by main") == 0) + table[1023] * 1000000;
	work->same_stdout[id] = out == stdout && fileno(out) == 1;
	char name[16] = "";
	prctl(PR_GET_NAME, name);
	work->named[id] = strcmp(name, "dsm_fork") == 0;
	for (long r = 0; r < rounds; r++) {
		uint64_t *cell = locus_dsm_malloc(64 * sizeof(uint64_t));
		cell[0] = (uint64_t)id;
		locus_dsm_mutex_lock(&work->m);
		work->total += (uint64_t)factor;
		locus_dsm_free(work->cells[id]); /* last round's, maybe NULL */
		work->cells[id] = cell;
		locus_dsm_mutex_unlock(&work->m);
		locus_dsm_barrier_wait(&work->bar, (unsigned)threads);
	}
	locus_dsm_mutex_lock(&work->m);
	work->joined++;
	locus_dsm_mutex_unlock(&work->m);
}

int main(int argc, char **argv)
{
	if (locus_dsm_start(&argc, &argv) != 0)
		return 1;
	/* Only rank 0 gets here. */
	if (argc > 2 && strcmp(argv[1], "return") == 0) {
		threads = 4, rounds = 2;
		work = locus_dsm_malloc(sizeof(*work));
		memset(work, 0, sizeof(*work));
		for (int t = 1; t < 4; t++)
			locus_dsm_spawn(t % locus_dsm_nodes(), worker, (void *)(intptr_t)t);
		worker((void *)(intptr_t)0);
		locus_dsm_join(3);
		printf("returning %s\n", argv[2]);
		return atoi(argv[2]); /* no finalize: as a program for threads ends */
	}
	if (argc > 1 && strcmp(argv[1], "barrier") == 0) {
		locus_dsm_barrier(); /* names the mistake and exits 1 */
		return 0;
	}
	threads = argc > 1 ? atol(argv[1]) : 4;
	rounds = argc > 2 ? atol(argv[2]) : 10;
	if (threads < 1 || threads > 256 || rounds < 1) {
		fprintf(stderr, "usage: dsm_fork THREADS(1-256) ROUNDS < number\n");
		return 2;
	}
	if (scanf("%ld", &factor) != 1) {
		fprintf(stderr, "dsm_fork: no number on standard input\n");
		return 2;
	}
	label = "set by main";
	table[1023] = 7;
	out = stdout;
	work = locus_dsm_malloc(sizeof(*work));
	memset(work, 0, sizeof(*work));
	int nodes = locus_dsm_nodes();
	for (long t = 1; t < threads; t++)
		if (locus_dsm_spawn((int)(t % nodes), worker, (void *)(intptr_t)t) != 0)
			return 1;
	worker((void *)(intptr_t)0);
	locus_dsm_join((unsigned)(threads - 1));
	int ok = 1;
	locus_dsm_mutex_lock(&work->m);
	if (work->total != (uint64_t)(factor * rounds * threads) ||
	    work->joined != (uint64_t)threads) {
		fprintf(stderr, "dsm_fork: FAIL: total %llu (want %ld), %llu joined\n",
			(unsigned long long)work->total, factor * rounds * threads,
			(unsigned long long)work->joined);
		ok = 0;
	}
	for (long t = 0; t < threads; t++) {
		if (work->seen_factor[t] != (uint64_t)factor + 7000000) {
			fprintf(stderr, "dsm_fork: FAIL: thread %ld saw the globals as %llu\n", t,
				(unsigned long long)work->seen_factor[t]);
			ok = 0;
		}
		if (!work->named[t]) {
			fprintf(stderr, "dsm_fork: FAIL: thread %ld is not named dsm_fork\n", t);
			ok = 0;
		}
		if (!work->same_stdout[t]) {
			fprintf(stderr, "dsm_fork: FAIL: thread %ld's stdout is not main's\n", t);
			ok = 0;
		}
		if (!work->cells[t] || work->cells[t][0] != (uint64_t)t) {
			fprintf(stderr, "dsm_fork: FAIL: thread %ld's last block is wrong\n", t);
			ok = 0;
		}
		locus_dsm_free(work->cells[t]);
	}
	locus_dsm_mutex_unlock(&work->m);
	locus_dsm_free(work);
	if (ok)
		printf("ok: %ld threads over %d nodes, %ld rounds, factor %ld from standard "
		       "input\n",
		       threads, nodes, rounds, factor);
	locus_dsm_finalize();
	return ok ? 0 : 1;
}
