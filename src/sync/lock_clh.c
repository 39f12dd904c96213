/*
 * CLH queue lock: the tail is the last node enqueued; each waiter waits on
 * its predecessor's node, and at unlock takes that node as its own spare
 * (nodes migrate between threads; nodes.h says who frees what).
 *
 * Trylock needs to know, in one word, that the lock is free. So when the
 * holder unlocks with nobody queued behind it, it marks the tail word with
 * CLH_FREE (a bit that a 64-byte-aligned pointer never has). The mark is set
 * by a CAS that expects the unmarked tail, before the holder's node is
 * released, so it cannot hit a recycled incarnation of the node: the node is
 * recycled only after a successor acquired through it, which needs either
 * this mark or the node's release. While the mark is set the lock is free:
 * any locker swaps it out and proceeds without waiting.
 */
#include <errno.h>
#include <stddef.h>

#include "common/atomic.h"
#include "sync/flag.h"
#include "sync/lock_clh.h"
#include "sync/lock_impl.h"
#include "sync/nodes.h"

/* Admission (lock_admit.c), as in mcs: `active` counts the threads admitted,
   but a holder that found the lock free (LOCK_UNCOUNTED; lock_impl.h). */
static int clh_enter(struct lock *l, int forced)
{
	return admit_count_enter(l, &l->u.clh.active, &l->u.clh.holder, forced);
}

int clh_init(struct lock *l)
{
	struct locus_qnode *dummy = qnode_get();
	dummy->flag = 0;
	l->u.clh.tail = (uintptr_t)dummy | CLH_FREE;
	l->u.clh.holder = 0;
	l->u.clh.pred = NULL;
	l->u.clh.active = 0;
	return 0;
}

void clh_lock_slow(struct lock *l, struct locus_qnode *n, uintptr_t w)
{
	int strict = l->flags & LOCK_STRICT;
	if (w) {
		/* Taken between our look and our exchange: we are queued, and
		   count ourselves in regardless of the room (as in mcs). */
		if (!strict)
			clh_enter(l, 1);
	} else {
		/* Held: count ourselves in, or wait outside until let in. */
		if (!strict && !clh_enter(l, 0))
			admit_wait(l, clh_enter);
		w = xchg_acqrel(&l->u.clh.tail, (uintptr_t)n);
	}
	struct locus_qnode *pred = clh_node(w);
	if (!(w & CLH_FREE)) {
		lock_hook(l, LOCK_HOOK_QUEUE);
		flag_wait(&pred->flag, &l->wait);
	}
	st_relaxed(&l->u.clh.holder, holder_after_wait(l, n));
	l->u.clh.pred = pred;
}

void clh_lock(struct lock *l)
{
	clh_lock_inline(l);
}

int clh_trylock(struct lock *l)
{
	uintptr_t w = ld_relaxed(&l->u.clh.tail);
	if (!(w & CLH_FREE))
		return EBUSY;
	struct locus_qnode *n = qnode_get();
	flag_arm(&n->flag);
	/* Release too: the CAS publishes our node to the next locker. */
	if (!cas_acqrel(&l->u.clh.tail, &w, (uintptr_t)n)) {
		qnode_put(n);
		return EBUSY;
	}
	st_relaxed(&l->u.clh.holder, (uintptr_t)n | LOCK_UNCOUNTED);
	l->u.clh.pred = clh_node(w);
	return 0;
}

void clh_unlock_slow(struct lock *l, uintptr_t holder)
{
	int quiet = admit_quiet(l, holder);
	int due = !quiet && admit_due(l);
	struct locus_qnode *n = holder_node(holder);
	struct locus_qnode *pred = l->u.clh.pred;
	uintptr_t expected = (uintptr_t)n;
	if (ld_relaxed(&l->u.clh.tail) != expected ||
	    !cas_release(&l->u.clh.tail, &expected, (uintptr_t)n | CLH_FREE)) {
		holder_hand_off(l, &l->u.clh.holder, holder);
		flag_release_to(&n->flag, 0, &l->wait);
	}
	qnode_put(pred);
	if (quiet)
		return;
	if (holder & LOCK_UNCOUNTED)
		admit_leave(l, due, 0);
	else
		admit_leave(l, due, faa_seqcst(&l->u.clh.active, (uint32_t)-1) == 1);
}

void clh_unlock(struct lock *l)
{
	clh_unlock_inline(l);
}

void clh_destroy(struct lock *l)
{
	qnode_free(clh_node(l->u.clh.tail));
}
