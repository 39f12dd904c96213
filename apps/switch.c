/*
 * What a switch between two application threads of a DSM node costs here.
 *
 * In locus-dsm a thread that waits (fault, lock, barrier) sleeps on a futex
 * and the kernel runs another thread of the node; the waiting thread comes
 * back when the communication thread sets its word and wakes it. This program
 * times exactly that hand-over: two threads pinned to one CPU pass a turn
 * back and forth through futex words, so every pass is one futex wake, one
 * futex wait and one switch. It prints nanoseconds per switch (the median of
 * several runs) and one JSON line.
 *   locus-dsm-switch [-n 200000] [-r 5]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

static uint32_t turn; /* whose turn: 0 or 1 */
static long passes;

static void futex(uint32_t *w, int op, uint32_t v)
{
	syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Wait for my turn, then give it to the other thread. */
static void play(uint32_t me)
{
	for (long i = 0; i < passes; i++) {
		uint32_t t;
		while ((t = __atomic_load_n(&turn, __ATOMIC_ACQUIRE)) != me)
			futex(&turn, FUTEX_WAIT_PRIVATE, t);
		__atomic_store_n(&turn, 1 - me, __ATOMIC_RELEASE);
		futex(&turn, FUTEX_WAKE_PRIVATE, 1);
	}
}

static void *other(void *cpu)
{
	pin((int)(intptr_t)cpu);
	play(1);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long rounds = 5;
	passes = 200000;
	const struct app_opt opts[] = {{"-n", "passes per run", &passes, 1, 100000000},
				       {"-r", "runs (the median is printed)", &rounds, 1, 100},
				       {0}};
	app_launcher = "";
	app_options(argc, argv, "dsm-switch",
		    "Times a switch between two threads on one CPU that hand over through a\n"
		    "futex, as locus-dsm's application threads do when one waits and another\n"
		    "runs. Needs no MPI.",
		    opts);
	int cpu = sched_getcpu();
	if (cpu < 0)
		cpu = 0;
	pin(cpu);
	double per[100];
	for (long r = 0; r < rounds; r++) {
		turn = 0;
		pthread_t t;
		if (pthread_create(&t, NULL, other, (void *)(intptr_t)cpu) != 0) {
			fprintf(stderr, "locus-dsm-switch: cannot create a thread\n");
			return 1;
		}
		double t0 = now();
		play(0);
		pthread_join(t, NULL);
		per[r] = (now() - t0) / (double)(2 * passes) * 1e9;
	}
	qsort(per, (size_t)rounds, sizeof(double), cmp);
	double med = per[rounds / 2];
	printf("locus-dsm-switch: %.0f ns per switch between two threads on CPU %d (median of "
	       "%ld runs of %ld switches; min %.0f, max %.0f)\n",
	       med, cpu, rounds, 2 * passes, per[0], per[rounds - 1]);
	printf("{\"switch_ns\": %.1f, \"min_ns\": %.1f, \"max_ns\": %.1f}\n", med, per[0],
	       per[rounds - 1]);
	return 0;
}
