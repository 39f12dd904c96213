/*
 * The CLH lock's paths when nobody waits, inline (lock_clh.c has the rest and
 * the design), as lock_mcs.h does for mcs: the executor's clh row calls
 * these directly, and admission costs a few loads here, tested in one branch.
 */
#ifndef LOCUS_SYNC_LOCK_CLH_H
#define LOCUS_SYNC_LOCK_CLH_H

#include "common/atomic.h"
#include "sync/flag.h"
#include "sync/lock_impl.h"
#include "sync/nodes.h"

/* A tail word with this bit is a free lock (lock_clh.c). */
#define CLH_FREE ((uintptr_t)1)

static inline struct locus_qnode *clh_node(uintptr_t w)
{
	return (struct locus_qnode *)(w & ~CLH_FREE);
}

/* lock_clh.c: the lock was held when n's owner looked, or taken between its
   look and its exchange (then w is what the exchange returned, else 0). */
void clh_lock_slow(struct lock *l, struct locus_qnode *n, uintptr_t w);
/* lock_clh.c: the unlock of holder when the fast path below cannot free it. */
void clh_unlock_slow(struct lock *l, uintptr_t holder);

static inline void clh_lock_inline(struct lock *l)
{
	struct locus_qnode *n = qnode_get();
	flag_arm(&n->flag);
	/* Free when we looked: swap ourselves in, uncounted if it still was
	   (as in mcs, whose lock says why an exchange and not a CAS; a strict
	   lock looks too, and marks every holder: lock_impl.h). */
	if (!(ld_relaxed(&l->u.clh.tail) & CLH_FREE)) {
		clh_lock_slow(l, n, 0);
		return;
	}
	lock_hook(l, LOCK_HOOK_FREE);
	uintptr_t w = xchg_acqrel(&l->u.clh.tail, (uintptr_t)n);
	if (!(w & CLH_FREE)) {
		clh_lock_slow(l, n, w);
		return;
	}
	st_relaxed(&l->u.clh.holder, (uintptr_t)n | LOCK_UNCOUNTED);
	l->u.clh.pred = clh_node(w);
}

static inline void clh_unlock_inline(struct lock *l)
{
	uintptr_t holder = ld_relaxed(&l->u.clh.holder);
	/* An uncounted holder (or a strict lock's) with nothing for admission
	   to do (admit_quiet without the flags' test: a strict lock's
	   admission fields stay empty), and nobody behind it: mark the tail
	   free, if nobody has swapped in since we looked. The mark is tested
	   first: with the admission fields loaded before it, the same
	   uncontended section ran at 93 instead of 133 Mops/s on the EPYC in
	   one sitting (and at 134 in an earlier one: docs/results/fetchadd.md). */
	if (holder & LOCK_UNCOUNTED) {
		uintptr_t busy = (uintptr_t)ld_relaxed(&l->adm.head) | (uintptr_t)l->adm.clock_ns;
		/* Read before the lock is free: the next holder writes it. */
		struct locus_qnode *pred = l->u.clh.pred;
		uintptr_t expected = holder & ~LOCK_UNCOUNTED;
		if (!busy && ld_relaxed(&l->u.clh.tail) == expected &&
		    cas_release(&l->u.clh.tail, &expected, expected | CLH_FREE)) {
			qnode_put(pred);
			return;
		}
	}
	clh_unlock_slow(l, holder);
}

#endif
