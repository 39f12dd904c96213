/*
 * Doorbells (src/dsm/bell.c), for tests/dsm/bell.sh:
 *   dsm_bell run ITERS   pages and a lock move between every pair of nodes;
 *                        checks that this node's doorbell file is gone once
 *                        init has returned, that its doorbells reach exactly
 *                        the nodes with its LOCUS_DSM_HOST label (every node
 *                        runs on this machine), and every value read
 *   dsm_bell exit NODE   node NODE leaves without locus_dsm_finalize while the
 *                        others wait in a barrier (only failure detection ends them)
 * Each node prints "bell-pid PID" before init, so that the script can look
 * for files left behind by any of them.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm_args.h"
#include "locus/dsm.h"

#define LABEL 32

static int fail(int me, const char *what)
{
	fprintf(stderr, "dsm_bell: node %d: %s\n", me, what);
	return 1;
}

/* This process's doorbell file, if it is still there. */
static int own_file_left(void)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "locus-dsm.%d.", (int)getpid());
	DIR *d = opendir("/dev/shm");
	if (!d)
		return 0;
	int found = 0;
	for (struct dirent *e; (e = readdir(d));)
		found |= !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "run") && strcmp(argv[1], "exit"))) {
		fprintf(stderr, "usage: %s run ITERS | exit NODE\n", argv[0]);
		return 2;
	}
	long n = dsm_test_arg(argv[0], argv[2], 0, 1000000);
	printf("bell-pid %d\n", (int)getpid());
	fflush(stdout);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	int me = locus_dsm_node(), nodes = locus_dsm_nodes();
	char(*label)[LABEL] = locus_dsm_alloc((size_t)nodes * LABEL);
	volatile uint64_t *data = locus_dsm_alloc(64 * 4096);
	volatile uint64_t *counter = locus_dsm_alloc(4096);
	const char *mine = getenv("LOCUS_DSM_HOST");
	snprintf(label[me], LABEL, "%s", mine ? mine : "");
	locus_dsm_barrier();
	if (!strcmp(argv[1], "exit")) {
		if (me == n) {
			printf("victim node %d pid %d: exit\n", me, (int)getpid());
			fflush(stdout);
			return 0;
		}
		for (;;)
			locus_dsm_barrier();
	}
	int rc = 0;
	if (own_file_left())
		rc = fail(me, "its doorbell file is still in /dev/shm after init");
	uint64_t same = 0;
	for (int i = 0; i < nodes; i++)
		same += i != me && !strcmp(label[i], label[me]);
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	if (s.bell_peers != same) {
		fprintf(stderr, "dsm_bell: node %d: doorbells reach %llu nodes, expected %llu\n",
			me, (unsigned long long)s.bell_peers, (unsigned long long)same);
		rc = 1;
	}
	/* Each round one node writes a page the others then read; every node
	   adds to a counter under a lock. */
	for (long r = 0; r < n; r++) {
		size_t at = (size_t)(r % 64) * 512;
		if (me == r % nodes)
			data[at] = (uint64_t)r + 1;
		locus_dsm_lock(1);
		(*counter)++;
		locus_dsm_unlock(1);
		locus_dsm_barrier();
		if (data[at] != (uint64_t)r + 1 && !rc)
			rc = fail(me, "read a stale page");
		locus_dsm_barrier();
	}
	if (*counter != (uint64_t)n * (uint64_t)nodes && !rc)
		rc = fail(me, "the counter lost increments");
	locus_dsm_finalize();
	if (!rc)
		printf("dsm_bell: node %d ok: doorbells reach %llu nodes\n", me,
		       (unsigned long long)same);
	return rc;
}
