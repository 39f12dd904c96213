/*
 * The MCS lock's paths when nobody waits, inline (lock_mcs.c has the rest and
 * the design): the executor's mcs row calls these directly, so an uncontended
 * section pays one exchange, one compare-and-swap and the loads beside them,
 * with no call in between. Admission and concurrency restriction cost a few
 * loads here, each on a line the holder has already.
 */
#ifndef LOCUS_SYNC_LOCK_MCS_H
#define LOCUS_SYNC_LOCK_MCS_H

#include "common/atomic.h"
#include "sync/lock_impl.h"
#include "sync/nodes.h"

/* lock_mcs.c: n is queued behind pred (not NULL); wait for the hand-off. */
void mcs_wait_behind(struct lock *l, struct locus_qnode *n, struct locus_qnode *pred);
/* lock_mcs.c: the lock was held when n's owner looked. */
void mcs_lock_held(struct lock *l, struct locus_qnode *n);
/* lock_mcs.c: a thread that saw the lock free lost the race to it: queued behind pred. */
void mcs_lock_raced(struct lock *l, struct locus_qnode *n, struct locus_qnode *pred);
/* lock_mcs.c: the unlock of holder when the fast path below cannot free it. */
void mcs_unlock_slow(struct lock *l, uintptr_t holder);

static inline void mcs_lock_inline(struct lock *l)
{
	struct locus_qnode *n = qnode_get();
	n->next = NULL;
	/* Free when we looked: swap ourselves in, uncounted if it still was
	   (an exchange, not a CAS: on the EPYC a CAS made an uncontended lock
	   and unlock 13% slower). The prefetch asks for the line in exclusive
	   state at once: a look alone would fetch it shared, and the exchange
	   fetch it again. A strict lock looks too: its uncontended lock and
	   unlock were 10% slower on the EPYC with a test of the flags here. */
	prefetch_write(&l->u.mcs.tail);
	if (ld_relaxed(&l->u.mcs.tail)) {
		mcs_lock_held(l, n);
		return;
	}
	lock_hook(l, LOCK_HOOK_FREE);
	struct locus_qnode *pred = xchg_acqrel(&l->u.mcs.tail, n);
	if (pred) {
		mcs_lock_raced(l, n, pred);
		return;
	}
	st_relaxed(&l->u.mcs.holder, (uintptr_t)n | LOCK_UNCOUNTED);
}

static inline void mcs_unlock_inline(struct lock *l)
{
	uintptr_t holder = ld_relaxed(&l->u.mcs.holder);
	struct locus_qnode *n = holder_node(holder);
	/* An uncounted holder (or a strict lock's) with nobody behind it,
	   nobody moved aside, and nothing for admission to do (admit_quiet,
	   with the flags' test left out: a strict lock's admission fields and
	   a lock's passive list under LOCK_NOCR stay empty): free the lock, if
	   nobody has swapped in since we looked. One branch on the fields
	   or'ed together: a test and branch for each made the uncontended
	   section 15% slower on the EPYC. */
	uintptr_t busy = (uintptr_t)ld_acquire(&n->next) | (uintptr_t)l->u.mcs.passive_head |
			 (uintptr_t)ld_relaxed(&l->adm.head) | (uintptr_t)l->adm.clock_ns;
	if ((holder & LOCK_UNCOUNTED) && !busy) {
		struct locus_qnode *expected = n;
		if (cas_release(&l->u.mcs.tail, &expected, NULL)) {
			qnode_put(n);
			return;
		}
	}
	mcs_unlock_slow(l, holder);
}

#endif
