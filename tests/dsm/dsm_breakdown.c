/*
 * The time breakdown's invariants, on any number of nodes:
 *   dsm_breakdown [ROUNDS [THREADS [WORK]]]
 * Each round computes on private data (CPU only; WORK terms of a sum, 8
 * million by default: a small WORK makes the faults most of the time), takes and gives back a
 * lock of this node's own LOCKS times (stalls that never wait, whose CPU
 * clock is not read), writes this node's word of
 * a shared page and of each of PAGES others (faults, most of them remote
 * misses on several nodes) and meets the others in a barrier; with THREADS,
 * a team of that many threads per node does the rounds, each thread a share
 * of the computation and a word of its own. The statistics
 * are reset before the rounds and frozen after them; every node then checks
 * its own breakdown:
 *   - every component >= 0, and busy > 0 (the compute loop ran);
 *   - busy + fault + sync + overhead <= total + tolerance, i.e. other >= -tolerance;
 *     with threads, busy (summed over threads) <= total x the CPUs they can
 *     use, and fault + sync + overhead <= total;
 *   - total is the interval between reset and freeze (same as the phase's
 *     own clock, within the tolerance), and frozen values no longer move;
 *   - the counters start at the reset: barriers == ROUNDS, and every lock and
 *     unlock is a stall;
 *   - with threads: the node's stalls (fault + sync) fit inside the threads'
 *     stalls (each stall of the node ends with one thread's), and every
 *     thread's barrier call is counted.
 * No bound on speed: the tolerance only absorbs clock-read skew and
 * communication work overlapping computation on another CPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "locus/dsm.h"

static int failures;

static void check(int node, int ok, const char *what, double a, double b)
{
	if (ok)
		return;
	fprintf(stderr, "dsm_breakdown: node %d: FAIL %s (%.6f vs %.6f)\n", node, what, a, b);
	failures++;
}

static double compute(long n)
{
	double x = 0;
	for (long i = 1; i <= n; i++)
		x += 1.0 / ((double)i * (double)i);
	return x;
}

#define PAGES   16
#define LOCKS   2000
#define LOCK_ID 7000 /* + the node: a lock only its node takes */

static long rounds, work = 8000000;
static int me, team;
static volatile uint64_t *shared, *block;
static volatile double sink;

static void run(int t, void *unused)
{
	(void)unused;
	double x = 0;
	for (long r = 0; r < rounds; r++) {
		x += compute(work / team);
		for (int k = 0; k < LOCKS; k++) {
			locus_dsm_lock(LOCK_ID + (uint32_t)me);
			locus_dsm_unlock(LOCK_ID + (uint32_t)me);
		}
		shared[me * team + t] += 1;
		for (int p = 0; p < PAGES; p++)
			block[p * 512 + me * team + t] += 1;
		locus_dsm_barrier();
	}
	if (t == 0)
		sink = x;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atol(argv[1]) : 5;
	team = argc > 2 ? atoi(argv[2]) : 1;
	if (argc > 3)
		work = atol(argv[3]);
	if (rounds < 1 || team < 1 || team > 64 || work < 1) {
		fprintf(stderr, "usage: dsm_breakdown [ROUNDS >= 1 [THREADS 1..64 [WORK >= 1]]]\n");
		return 2;
	}
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	int nodes = locus_dsm_nodes();
	shared = locus_dsm_alloc(4096);
	block = locus_dsm_alloc(PAGES * 4096);
	if (nodes * team > 512) {
		fprintf(stderr, "dsm_breakdown: at most 512 threads in all\n");
		return 2;
	}

	locus_dsm_stats_reset();
	double t0 = locus_dsm_now();
	if (team == 1)
		run(0, NULL);
	else if (locus_dsm_parallel(team, run, NULL) != 0)
		return 1;
	double phase = locus_dsm_now() - t0;
	locus_dsm_stats_freeze();

	locus_dsm_stats s, again;
	locus_dsm_stats_get(&s);
	locus_dsm_barrier(); /* after the freeze: must not show */
	locus_dsm_stats_get(&again);

	double tol = 0.002 + 0.02 * s.total_s;
	double sum = s.busy_s + s.fault_s + s.sync_s + s.overhead_s;
	printf("dsm_breakdown: node %d of %d: total %.4f = busy %.4f + fault %.4f + sync %.4f + "
	       "overhead %.4f + other %.4f (phase %.4f, tolerance %.4f)\n",
	       me, nodes, s.total_s, s.busy_s, s.fault_s, s.sync_s, s.overhead_s, s.other_s, phase,
	       tol);
	check(me, s.total_s > 0, "total > 0", s.total_s, 0);
	check(me, s.busy_s > 0, "busy > 0", s.busy_s, 0);
	check(me, s.fault_s >= 0, "fault >= 0", s.fault_s, 0);
	check(me, s.sync_s >= 0, "sync >= 0", s.sync_s, 0);
	check(me, s.overhead_s >= 0, "overhead >= 0", s.overhead_s, 0);
	check(me, s.overhead_in_stall_s >= 0, "overhead in stalls >= 0", s.overhead_in_stall_s, 0);
	check(me, s.comm_cpu_s >= s.overhead_s + s.overhead_in_stall_s - tol,
	      "communication thread CPU >= its handling work", s.comm_cpu_s,
	      s.overhead_s + s.overhead_in_stall_s);
	if (team == 1) {
		check(me, sum <= s.total_s + tol, "components sum <= total", sum, s.total_s);
		check(me, s.other_s >= -tol, "other >= -tolerance", s.other_s, -tol);
	} else {
		/* busy is CPU time summed over threads: on several CPUs at once it
		   may pass the wall time, never the CPUs' capacity. */
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		double width = (double)(cpus < team ? cpus : team);
		check(me, s.busy_s <= s.total_s * width + tol, "busy <= total x CPUs usable",
		      s.busy_s, s.total_s * width);
		check(me, s.fault_s + s.sync_s + s.overhead_s <= s.total_s + tol,
		      "stalls and overhead <= total", s.fault_s + s.sync_s + s.overhead_s,
		      s.total_s);
	}
	check(me, s.other_s - (s.total_s - sum) < 1e-9 && s.total_s - sum - s.other_s < 1e-9,
	      "other == total - components", s.other_s, s.total_s - sum);
	check(me, s.total_s <= phase + tol && phase <= s.total_s + tol,
	      "total covers the timed phase", s.total_s, phase);
	check(me, memcmp(&s, &again, sizeof(s)) == 0, "frozen statistics stay put", again.total_s,
	      s.total_s);
	for (int t = 0; t < team; t++)
		for (int p = 0; p < PAGES; p++)
			check(me, block[p * 512 + me * team + t] == (uint64_t)rounds,
			      "a word of the block counts every round",
			      (double)block[p * 512 + me * team + t], (double)rounds);
	check(me, s.barriers == (uint64_t)rounds, "barriers counted from the reset",
	      (double)s.barriers, (double)rounds);
	check(me, s.threads == (uint64_t)team, "threads", (double)s.threads, team);
	check(me, s.barrier_waits == (uint64_t)(rounds * team), "every thread's barrier counted",
	      (double)s.barrier_waits, (double)(rounds * team));
	check(me, s.fault_s + s.sync_s <= s.stall_s + tol, "node stalls inside thread stalls",
	      s.fault_s + s.sync_s, s.stall_s);
	check(me, s.stalls >= s.barrier_waits && s.run_s >= 0 && s.stall_s >= 0,
	      "stall and run counts", (double)s.stalls, (double)s.barrier_waits);
	check(me, s.stalls >= s.barrier_waits + 2 * (uint64_t)(LOCKS * rounds * team),
	      "every lock and unlock a stall", (double)s.stalls,
	      (double)(s.barrier_waits + 2 * (uint64_t)(LOCKS * rounds * team)));
	if (nodes > 1)
		check(me,
		      s.faults[LOCUS_DSM_FAULT_READ] + s.faults[LOCUS_DSM_FAULT_WRITE] +
				      s.faults[LOCUS_DSM_FAULT_UPGRADE] >
			      0,
		      "the shared page faulted", 0, 0);
	if (sink < 0)
		printf("impossible\n");
	locus_dsm_finalize();
	return failures ? 1 : 0;
}
