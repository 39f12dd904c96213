/*
 * A bank on locus_cs: threads move money between accounts, and the
 * mechanism that makes each transfer atomic is named on the command line.
 *
 *   bank [MECHANISM [THREADS [TRANSFERS]]]      e.g.  bank mcs 4 100000
 *   bank list                                    the mechanisms this library has
 *
 * Every transfer is one critical section; with an asynchronous mechanism
 * (async, flat, mpsc) the threads post transfers and drain at the end. The
 * program checks that no money was created or lost and exits 0 if so.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <locus/cs.h>
#include <locus/version.h>

#define ACCOUNTS 64
#define START	 1000

struct bank {
	int64_t balance[ACCOUNTS];
};

/* The critical section: move `amount` from account a to account b if a can pay. */
static uint64_t transfer(void *state, uint64_t from, uint64_t to, uint64_t amount)
{
	struct bank *bk = state;
	if (bk->balance[from] < (int64_t)amount)
		return 0;
	bk->balance[from] -= (int64_t)amount;
	bk->balance[to] += (int64_t)amount;
	return 1;
}

struct teller {
	locus_cs *cs;
	unsigned seed;
	long transfers;
};

static void *teller_main(void *arg)
{
	struct teller *t = arg;
	for (long i = 0; i < t->transfers; i++) {
		uint64_t from = (uint64_t)rand_r(&t->seed) % ACCOUNTS;
		uint64_t to = (uint64_t)rand_r(&t->seed) % ACCOUNTS;
		uint64_t amount = 1 + (uint64_t)rand_r(&t->seed) % 50;
		if (locus_cs_is_async(t->cs))
			locus_cs_post(t->cs, transfer, from, to, amount, NULL, NULL);
		else
			locus_cs_run(t->cs, transfer, from, to, amount);
	}
	locus_cs_drain();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *spec = argc > 1 ? argv[1] : "mutex";
	if (strcmp(spec, "list") == 0) {
		locus_cs_usage(stdout);
		return 0;
	}
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	long transfers = argc > 3 ? atol(argv[3]) : 100000;
	if (threads < 1 || threads > 1024 || transfers < 0) {
		fprintf(stderr, "usage: bank [MECHANISM|list [THREADS (1..1024) [TRANSFERS]]]\n");
		return 2;
	}

	struct bank bk;
	for (int i = 0; i < ACCOUNTS; i++)
		bk.balance[i] = START;
	locus_cs *cs = locus_cs_open(spec, &bk);
	if (!cs) {
		fprintf(stderr, "bank: %s\n", locus_cs_error());
		return 2;
	}

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t tid[threads];
	struct teller tl[threads];
	for (int i = 0; i < threads; i++) {
		tl[i] = (struct teller){cs, (unsigned)i + 1, transfers};
		pthread_create(&tid[i], NULL, teller_main, &tl[i]);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	int64_t total = 0;
	for (int i = 0; i < ACCOUNTS; i++)
		total += bk.balance[i];
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("locus %s, %s: %d threads, %ld transfers each, %.2f M transfers/s, total %lld\n",
	       locus_version(), locus_cs_spec(cs), threads, transfers,
	       (double)threads * (double)transfers / s / 1e6, (long long)total);
	locus_cs_close(cs);
	if (total != (int64_t)ACCOUNTS * START) {
		fprintf(stderr, "bank: money was %s\n",
			total > (int64_t)ACCOUNTS * START ? "created" : "lost");
		return 1;
	}
	return 0;
}
