/*
 * Admission: a FIFO lock that survives more threads than CPUs.
 *
 * The problem. A FIFO lock hands the lock to the thread whose turn it is. With
 * more waiting threads than CPUs, that thread has usually been preempted or
 * has gone to sleep (spin-then-park), so every hand-off waits for the
 * scheduler to run it: tens of microseconds to milliseconds instead of a
 * fraction of one, and ticket, clh and plain mcs lose 95-99 % of their
 * throughput at 8 threads on 2 CPUs.
 *
 * The remedy (concurrency restriction in front of the queue, after Dice and
 * Kogan's generic concurrency restriction). At most l->admit threads, the
 * holder included, are in the lock's own queue at once; the default is the
 * number of CPUs the process may run on. A thread that finds the queue full
 * waits outside, asleep, in a FIFO queue of its own (the admission queue, an
 * MCS queue of nodes on the waiters' stacks). So the waiters in the lock's queue are
 * threads that took their place while running, and no more of them than
 * there are CPUs: the thread whose turn comes is running or about to run, and
 * the order among them stays FIFO. Threads leaving the lock make room and
 * running threads take it: the lock circulates among as many threads as there
 * are CPUs, and those outside sleep instead of competing for the CPUs.
 *
 * Who is let in from outside, and when. Only the oldest waiter outside, the
 * head, can be let in, and only by a grant: the holder grants it at its unlock
 * when LOCUS_LOCK_ADMIT_NS have passed since the previous grant (or since
 * waiters appeared outside), and any unlock that leaves nobody admitted grants
 * it at once. A granted thread enters regardless of the limit; the queue then
 * holds one more than the limit until a thread that leaves finds it full on
 * its way back and waits outside in turn. So the oldest outside gets in
 * within LOCUS_LOCK_ADMIT_NS of the first unlock after it became the head,
 * plus its wake-up; the k-th outside within about k x LOCUS_LOCK_ADMIT_NS; and
 * inside, within (admit) sections. Newcomers that find room enter at once, even
 * while others wait outside: the bound above does not depend on them.
 *
 * The head's node is published in l->adm.head; a grant takes it from there
 * with an exchange and releases the node's flag (flag.h: no lost wake-up). A
 * waiter behind the head sleeps on its own flag. The grant publishes the
 * head's successor as the new head, without waking it, if it has linked
 * itself; otherwise the head does so once it runs. So a grant costs one
 * wake-up, and the next grant does not wait for that wake-up. No grant is
 * lost:
 *   - The first waiter outside (no predecessor) publishes itself, then looks
 *     again for room; an unlock that leaves nobody admitted lowers the count,
 *     then looks for a head. Both sides are sequentially consistent, so one
 *     sees the other: the waiter finds room, or the unlock finds the head.
 *     A waiter that found room takes its node back with an exchange; if a
 *     grant took it first, it waits for that grant's release.
 *   - A waiter let in publishes its successor while it is itself admitted, so
 *     its own unlock, or a later one, comes after the publication and finds it.
 *     A grant that publishes the successor does so before it releases the
 *     waiter it lets in, which then counts itself, so that waiter's unlock
 *     comes after the publication too.
 *   - The first waiter takes its node back with a CAS: an exchange could take
 *     the node of a successor that a grant has just published.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "sync/flag.h"
#include "sync/lock_impl.h"
#include "sync/nodes.h"

void (*lock_test_enqueued)(const locus_lock *l, int where);

uint32_t admit_default(void)
{
	static uint32_t cpus;
	uint32_t n = ld_relaxed(&cpus);
	if (n)
		return n;
	cpu_set_t set;
	/* A syscall, no allocation: locus_lock_init_spec may run before malloc works. */
	n = sched_getaffinity(0, sizeof(set), &set) == 0 ? (uint32_t)CPU_COUNT(&set) : 2;
	if (n < 2)
		n = 2;
	st_relaxed(&cpus, n);
	return n;
}

int admit_clock(locus_lock *l)
{
	uint64_t now = mono_ns();
	if (l->adm.clock_ns == 0) {
		l->adm.clock_ns = now;
		return 0;
	}
	if (now - l->adm.clock_ns < LOCUS_LOCK_ADMIT_NS)
		return 0;
	l->adm.clock_ns = now;
	return 1;
}

/* The release values of a waiter's flag: it is let in, and its successor is
   already the head (a grant saw it linked), or it must make it so itself. */
#define LET_IN_PASSED 1u
#define LET_IN	      0u

void admit_grant(locus_lock *l)
{
	struct locus_qnode *h = xchg_seqcst(&l->adm.head, (struct locus_qnode *)NULL);
	if (!h)
		return;
	/* Publish the successor now, not when h has woken up (that can take
	   milliseconds with busy CPUs): the next grant is then due on time. */
	struct locus_qnode *next = ld_acquire(&h->next);
	if (next) {
		st_seqcst(&l->adm.head, next);
		flag_release(&h->flag, LET_IN_PASSED);
	} else {
		flag_release(&h->flag, LET_IN);
	}
}

void admit_wait(locus_lock *l, admit_enter_fn enter)
{
	/* Outside, the wait is usually milliseconds: sleep at once, unless the
	   policy is to spin (then the caller has CPUs to spare). */
	locus_wait w = {.kind = l->wait.kind == LOCUS_WAIT_SPIN ? LOCUS_WAIT_SPIN : LOCUS_WAIT_PARK};
	/*
	 * The node lives on this stack: others use it only while we are here (a
	 * successor links itself to it, and we wait for that before leaving; a
	 * grant releases its flag, and we wait for that too; flag.h: the releaser
	 * touches nothing after). So waiting outside allocates nothing, and a
	 * ticket lock allocates nothing at all.
	 */
	struct locus_qnode node, *n = &node;
	n->next = NULL;
	flag_arm(&n->flag);
	struct locus_qnode *pred = xchg_acqrel(&l->adm.tail, n);
	uint32_t v = LET_IN;
	lock_hook(l, LOCK_HOOK_ADMIT);
	if (pred) {
		st_release(&pred->next, n);
		v = flag_wait(&n->flag, &w);
		enter(l, 1);
	} else {
		st_seqcst(&l->adm.head, n);
		if (enter(l, 0)) {
			/* Room: take our node back, unless a grant already has it (and
			   may have published our successor: a CAS, not an exchange). */
			struct locus_qnode *expected = n;
			if (!cas_seqcst(&l->adm.head, &expected, (struct locus_qnode *)NULL))
				v = flag_wait(&n->flag, &w);
		} else {
			v = flag_wait(&n->flag, &w);
			enter(l, 1);
		}
	}
	if (v == LET_IN_PASSED)
		return; /* our successor is the head already; nobody refers to n */
	/* Admitted: the next one outside becomes the head. */
	struct locus_qnode *next = ld_acquire(&n->next);
	if (!next) {
		struct locus_qnode *expected = n;
		if (cas_acqrel(&l->adm.tail, &expected, (struct locus_qnode *)NULL))
			return;
		next = qnode_wait_next(n);
	}
	st_seqcst(&l->adm.head, next);
}
