/*
 * MCS queue lock: each waiter spins (or sleeps) on the flag of its own node,
 * and unlock hands the lock to exactly one successor through that flag
 * (flag.h explains why the hand-off cannot lose a wake-up). The holder keeps
 * its node in the lock, so callers need not carry it from lock to unlock.
 *
 * Concurrency restriction (on unless LOCUS_LOCK_NOCR; after Dice's
 * Malthusian locks). Strict FIFO hand-off collapses when threads outnumber
 * cores: the next thread in line has usually been preempted or has gone to
 * sleep, so every acquisition waits for the scheduler. So unlock moves the
 * oldest waiter aside to a passive list whenever a younger one stands behind
 * it, and hands the lock to the younger, which arrived recently and is most
 * likely still running. The threads that keep circulating are few and awake;
 * the passive ones sleep (spin-then-park) instead of competing for cores.
 * For long-term fairness the holder readmits the oldest passive waiter once
 * per CR_READMIT_NS of time (checked every CR_CHECK hand-offs, so the clock
 * is rarely read), and whenever nobody else queues up within a short grace
 * period, so every waiter is eventually served. Readmitting by time, not by count, matters: a
 * passive waiter is usually asleep and takes tens of microseconds to wake,
 * during which the lock is idle. The passive list is touched only by the
 * holder, so the lock itself protects it.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <time.h>

#include "sync/atomic.h"
#include "sync/flag.h"
#include "sync/lock_impl.h"
#include "sync/nodes.h"

#define CR_CHECK      256u
#define CR_READMIT_NS 2000000ull
#define CR_GRACE      512u

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Time to readmit a passive waiter? Called by the holder only. */
static int cr_readmit_due(locus_lock *l)
{
	if (++l->u.mcs.handoffs < CR_CHECK)
		return 0;
	l->u.mcs.handoffs = 0;
	uint64_t now = now_ns();
	if (now - l->u.mcs.readmitted_ns < CR_READMIT_NS)
		return 0;
	l->u.mcs.readmitted_ns = now;
	return 1;
}

void mcs_init(locus_lock *l)
{
	l->u.mcs.tail = NULL;
	l->u.mcs.holder = NULL;
	l->u.mcs.passive_head = NULL;
	l->u.mcs.passive_tail = NULL;
	l->u.mcs.handoffs = 0;
	l->u.mcs.readmitted_ns = 0;
}

void mcs_lock(locus_lock *l)
{
	struct locus_qnode *n = qnode_get();
	n->next = NULL;
	flag_arm(&n->flag);
	struct locus_qnode *pred = xchg_acqrel(&l->u.mcs.tail, n);
	if (pred) {
		st_release(&pred->next, n);
		flag_wait(&n->flag, &l->wait);
	}
	l->u.mcs.holder = n;
}

int mcs_trylock(locus_lock *l)
{
	struct locus_qnode *n = qnode_get();
	n->next = NULL;
	struct locus_qnode *expected = NULL;
	/* Release too: the CAS publishes our node to the next locker. */
	if (!cas_acqrel(&l->u.mcs.tail, &expected, n)) {
		qnode_put(n);
		return EBUSY;
	}
	l->u.mcs.holder = n;
	return 0;
}

/*
 * A successor that has swapped itself into the tail but not yet linked
 * itself behind us is a few instructions away from doing so, unless it was
 * preempted: spin briefly, then yield the core so that it can run.
 */
static struct locus_qnode *mcs_wait_successor(struct locus_qnode *n)
{
	struct locus_qnode *next;
	for (unsigned i = 0; !(next = ld_acquire(&n->next)); i++) {
		if (i < 1024)
			cpu_relax();
		else
			sched_yield();
	}
	return next;
}

static void passive_push(locus_lock *l, struct locus_qnode *w)
{
	w->next = NULL;
	if (l->u.mcs.passive_tail)
		l->u.mcs.passive_tail->next = w;
	else
		l->u.mcs.passive_head = w;
	l->u.mcs.passive_tail = w;
}

static struct locus_qnode *passive_pop(locus_lock *l)
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
static struct locus_qnode *cr_choose(locus_lock *l, struct locus_qnode *n, struct locus_qnode *next)
{
	if (!next)
		next = cr_grace(n);
	if (!next) {
		/* Queue empty behind us: readmit a passive waiter as the new tail. */
		struct locus_qnode *p = passive_pop(l);
		if (!p)
			return NULL;
		p->next = NULL;
		struct locus_qnode *expected = n;
		if (cas_release(&l->u.mcs.tail, &expected, p))
			return p;
		/* Someone enqueued meanwhile: readmit p ahead of them. */
		p->next = mcs_wait_successor(n);
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

void mcs_unlock(locus_lock *l)
{
	struct locus_qnode *n = l->u.mcs.holder;
	struct locus_qnode *next = ld_acquire(&n->next);
	int cr = !(l->flags & LOCUS_LOCK_NOCR);
	if (!next && !(cr && l->u.mcs.passive_head)) {
		struct locus_qnode *expected = n;
		if (cas_release(&l->u.mcs.tail, &expected, NULL)) {
			qnode_put(n);
			return;
		}
		next = mcs_wait_successor(n);
	}
	if (cr)
		next = cr_choose(l, n, next);
	flag_release(&next->flag, 0);
	qnode_put(n);
}
