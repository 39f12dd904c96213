/*
 * MCS queue lock: each waiter spins (or sleeps) on the flag of its own node,
 * and unlock hands the lock to exactly one successor through that flag
 * (flag.h explains why the hand-off cannot lose a wake-up). The holder keeps
 * its node in the lock, so callers need not carry it from lock to unlock.
 *
 * Concurrency restriction (on unless LOCK_NOCR; after Dice's
 * Malthusian locks). Strict FIFO hand-off collapses when threads outnumber
 * cores: the next thread in line has usually been preempted or has gone to
 * sleep, so every acquisition waits for the scheduler. So unlock moves the
 * oldest waiter aside to a passive list whenever a younger one stands behind
 * it, and hands the lock to the younger, which arrived recently and is most
 * likely still running. The threads that keep circulating are few and awake;
 * the passive ones sleep (spin-then-park) instead of competing for cores.
 * The passive list is touched only by the holder, so the lock itself
 * protects it, and while it is non-empty the tail is never NULL, so trylock
 * cannot overtake a passive waiter.
 *
 * Readmission, and the bound it gives. The holder readmits the oldest
 * passive waiter (hands it the lock, ahead of the queue) at the first
 * hand-off at which CR_READMIT_NS of time or CR_BYPASS hand-offs have passed,
 * whichever comes first, since the previous readmission or since the list
 * became non-empty; and at once when nobody queues behind the holder within
 * a short grace period. Only readmission takes waiters off the list, oldest
 * first, so a waiter that is k-th in the passive list when it is moved there
 * (k < the number of threads) gets the lock by the k-th readmission after
 * that: within k x CR_BYPASS hand-offs, and within k x CR_READMIT_NS plus,
 * for each of those readmissions, the rest of the section that was running
 * when it fell due. With sections that last at least s, that is also within
 * k x ceil(CR_READMIT_NS / s) hand-offs (at 1 ms sections, 2k). While the
 * list is non-empty the holder reads the clock at every hand-off (tens of
 * nanoseconds); looking only every 256 hand-offs, as this lock once did,
 * stretched the 2 ms to 256 ms at 1 ms sections and starved waiters for
 * seconds.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <time.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "sync/flag.h"
#include "sync/lock_impl.h"
#include "sync/lock_mcs.h"
#include "sync/nodes.h"

/*
 * A readmission costs a wake-up: the passive waiter is usually asleep, and
 * the lock idles until it has a core again, about 300 us on this 2-core
 * machine when oversubscribed. Time is therefore the main bound: one wake-up
 * per 2 ms costs about a tenth of the throughput. The count is a bound in
 * hand-offs for when they are fast: 8192 short hand-offs take about 1.6 ms
 * here (0.2 us each), so it readmits at most a quarter more often than the
 * clock would. A count of 32 readmitted every few microseconds and cut the
 * oversubscribed throughput of a short section about 40-fold; 1024, by more
 * than half.
 */
#define CR_BYPASS     8192u
#define CR_READMIT_NS 2000000ull
#define CR_GRACE      512u

/*
 * At a hand-off while the passive list is non-empty: is its oldest waiter
 * due? If so, the count and the clock restart. Called by the holder only.
 */
static int cr_readmit_due(struct lock *l)
{
	uint64_t now = mono_ns();
	if (++l->u.mcs.handoffs < CR_BYPASS && now - l->u.mcs.readmitted_ns < CR_READMIT_NS)
		return 0;
	l->u.mcs.handoffs = 0;
	l->u.mcs.readmitted_ns = now;
	return 1;
}

/* Admission (lock_admit.c): `active` counts the threads admitted, holder and
   queue, but a holder that found the lock free (LOCK_UNCOUNTED; lock_impl.h). */
static int mcs_enter(struct lock *l, int forced)
{
	return admit_count_enter(l, &l->u.mcs.active, &l->u.mcs.holder, forced);
}

void mcs_init(struct lock *l)
{
	l->u.mcs.tail = NULL;
	l->u.mcs.holder = 0;
	l->u.mcs.passive_head = NULL;
	l->u.mcs.passive_tail = NULL;
	l->u.mcs.handoffs = 0;
	l->u.mcs.readmitted_ns = 0;
	l->u.mcs.active = 0;
}

void mcs_wait_behind(struct lock *l, struct locus_qnode *n, struct locus_qnode *pred)
{
	lock_hook(l, LOCK_HOOK_QUEUE);
	/* Armed before it is linked: pred's holder writes it once it sees n. */
	flag_arm(&n->flag);
	st_release(&pred->next, n);
	flag_wait(&n->flag, &l->wait);
}

void mcs_lock_raced(struct lock *l, struct locus_qnode *n, struct locus_qnode *pred)
{
	/* Another took it between our look and our exchange: we are queued
	   already, and count ourselves in regardless of the room (lock_impl.h:
	   over the limit until we leave, as a granted thread may be). */
	int strict = l->flags & LOCK_STRICT;
	if (!strict)
		mcs_enter(l, 1);
	mcs_wait_behind(l, n, pred);
	st_relaxed(&l->u.mcs.holder, holder_after_wait(l, n));
}

void mcs_lock_held(struct lock *l, struct locus_qnode *n)
{
	/* Held: count ourselves in, or wait outside until let in (a strict
	   lock queues at once, and marks its holder: lock_impl.h). */
	int strict = l->flags & LOCK_STRICT;
	if (!strict && !mcs_enter(l, 0))
		admit_wait(l, mcs_enter);
	struct locus_qnode *pred = xchg_acqrel(&l->u.mcs.tail, n);
	if (pred)
		mcs_wait_behind(l, n, pred);
	st_relaxed(&l->u.mcs.holder, holder_after_wait(l, n));
}

void mcs_lock(struct lock *l)
{
	mcs_lock_inline(l);
}

int mcs_trylock(struct lock *l)
{
	struct locus_qnode *n = qnode_get();
	n->next = NULL;
	struct locus_qnode *expected = NULL;
	/* Release too: the CAS publishes our node to the next locker. */
	if (!cas_acqrel(&l->u.mcs.tail, &expected, n)) {
		qnode_put(n);
		return EBUSY;
	}
	st_relaxed(&l->u.mcs.holder, (uintptr_t)n | LOCK_UNCOUNTED);
	return 0;
}

/*
 * Onto an empty list, the bound starts now: a stale readmission time would
 * readmit w at the next hand-off, undoing the move. (The count is already 0:
 * it grows only while the list is non-empty and restarts at every
 * readmission, the only way the list empties.)
 */
static void passive_push(struct lock *l, struct locus_qnode *w)
{
	w->next = NULL;
	if (l->u.mcs.passive_tail) {
		l->u.mcs.passive_tail->next = w;
	} else {
		l->u.mcs.passive_head = w;
		l->u.mcs.readmitted_ns = mono_ns();
	}
	l->u.mcs.passive_tail = w;
}

static struct locus_qnode *passive_pop(struct lock *l)
{
	struct locus_qnode *w = l->u.mcs.passive_head;
	if (w) {
		l->u.mcs.passive_head = w->next;
		if (!l->u.mcs.passive_head)
			l->u.mcs.passive_tail = NULL;
	}
	return w;
}

/*
 * Nobody queued behind the holder, but passive waiters exist. A circulating
 * thread is usually a few instructions away from queueing again, and a
 * passive one is usually asleep; so wait a moment for the former before
 * readmitting the latter, which would leave the lock idle while it wakes.
 */
static struct locus_qnode *cr_grace(struct locus_qnode *n)
{
	struct locus_qnode *next = NULL;
	for (unsigned i = 0; i < CR_GRACE && !(next = ld_acquire(&n->next)); i++)
		cpu_relax();
	return next;
}

/*
 * Hand the lock to `next` (the holder's successor in the queue, or NULL if
 * the holder is the tail), applying concurrency restriction. Returns the
 * node to release.
 */
static struct locus_qnode *cr_choose(struct lock *l, struct locus_qnode *n,
				     struct locus_qnode *next)
{
	if (!next)
		next = cr_grace(n);
	if (!next) {
		/* Queue empty behind us: readmit a passive waiter as the new tail. */
		struct locus_qnode *p = passive_pop(l);
		if (!p)
			return NULL;
		l->u.mcs.handoffs = 0;
		l->u.mcs.readmitted_ns = mono_ns();
		p->next = NULL;
		struct locus_qnode *expected = n;
		if (cas_release(&l->u.mcs.tail, &expected, p))
			return p;
		/* Someone enqueued meanwhile: readmit p ahead of them. */
		p->next = qnode_wait_next(n);
		return p;
	}
	if (l->u.mcs.passive_head && cr_readmit_due(l)) {
		struct locus_qnode *p = passive_pop(l);
		p->next = next;
		return p;
	}
	struct locus_qnode *after = ld_acquire(&next->next);
	if (after) {
		/* `next` has waited longest and probably sleeps; `after` is younger. */
		passive_push(l, next);
		return after;
	}
	return next;
}

/* Hand the lock on, or free it; holder is the lock's holder word. */
static void mcs_release(struct lock *l, uintptr_t holder)
{
	struct locus_qnode *n = holder_node(holder);
	struct locus_qnode *next = ld_acquire(&n->next);
	int cr = !(l->flags & LOCK_NOCR);
	if (!next && !(cr && l->u.mcs.passive_head)) {
		struct locus_qnode *expected = n;
		if (cas_release(&l->u.mcs.tail, &expected, NULL)) {
			qnode_put(n);
			return;
		}
		next = qnode_wait_next(n);
	}
	if (cr)
		next = cr_choose(l, n, next);
	holder_hand_off(l, &l->u.mcs.holder, holder);
	flag_release_to(&next->flag, 0, &l->wait);
	qnode_put(n);
}

void mcs_unlock_slow(struct lock *l, uintptr_t holder)
{
	if (admit_quiet(l, holder)) {
		mcs_release(l, holder);
		return;
	}
	int due = admit_due(l);
	mcs_release(l, holder);
	if (holder & LOCK_UNCOUNTED)
		admit_leave(l, due, 0);
	else
		admit_leave(l, due, faa_seqcst(&l->u.mcs.active, (uint32_t)-1) == 1);
}

void mcs_unlock(struct lock *l)
{
	mcs_unlock_inline(l);
}
