/*
 * What a locus_lock holds: the layout behind the public type's opaque bytes
 * (include/locus/lock.h), one part per algorithm. Only the lock code, the
 * executor and the preload library's configuration read it, through
 * lock_of().
 */
#ifndef LOCUS_SYNC_LOCK_STATE_H
#define LOCUS_SYNC_LOCK_STATE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "locus/lock.h"

struct locus_qnode;

/* struct lock.flags */
#define LOCK_NOCR 1u /* mcs: plain FIFO, no concurrency restriction */
/* tas, ttas, futex: plain barging, without the reservation for a waiter that has waited
   LOCUS_LOCK_STARVE_NS */
#define LOCK_BARGE 2u
/* ticket, clh, mcs: no admission limit; every waiter queues (strict FIFO) */
#define LOCK_STRICT 4u

struct lock {
	uint32_t kind;	      /* locus_lock_kind; LOCUS_LOCK_NKINDS for a gate */
	uint32_t backoff_max; /* ttas: ceiling of the exponential backoff, in pauses */
	locus_wait wait;
	uint32_t flags; /* LOCK_*; may be set between init and first use */
	/* ticket, clh, mcs: most threads in the queue (holder included) at once,
	   >= 2; set by init, may be changed between init and first use */
	uint32_t admit;
	union {
		struct {
			uint32_t state; /* 0 free, 1 held, 2 held and maybe sleepers */
			/* waiters that have waited too long take a ticket here; while
			   urgent_next != urgent_owner the lock is reserved for the one
			   whose ticket is urgent_owner (not with LOCK_BARGE) */
			uint32_t urgent_next, urgent_owner;
			uint32_t calm; /* bumped whenever the last reservation ends */
		} word;		       /* tas, ttas, futex (lock_word.c) */
		struct {
			/* low half: ticket being served; high half: next ticket */
			union {
				uint64_t both;
				struct {
					uint32_t owner;
					uint32_t next;
				} half;
			} t;
			uint32_t parked; /* waiters asleep (or about to be) on t.half.owner */
		} ticket;		 /* lock_ticket.c */
		struct {
			/* The lock's first line: tail to passive_tail (what every
			   lock and unlock touches; the rest, only with passive
			   waiters). */
			struct locus_qnode *tail;
			/* the holder's node, | LOCK_UNCOUNTED (lock_impl.h);
			   written by the holder, read by newcomers */
			uintptr_t holder;
			/* waiters moved aside (FIFO), touched only by the holder */
			struct locus_qnode *passive_head;
			/* threads admitted (queued or holding), but an
			   uncounted holder */
			uint32_t active;
			struct locus_qnode *passive_tail;
			/* hand-offs since the last readmission, while passive waiters exist */
			uint32_t handoffs;
			/* last readmission, or when the passive list last became non-empty */
			uint64_t readmitted_ns;
		} mcs; /* lock_mcs.c */
		struct {
			uintptr_t tail;		  /* node pointer | CLH_FREE bit */
			uint32_t active;	  /* as in mcs */
			uintptr_t holder;	  /* node the holder enqueued, as in mcs */
			struct locus_qnode *pred; /* node it waited on; recycled at unlock */
		} clh;				  /* lock_clh.c */
		pthread_mutex_t mutex;
		/* not a lock: the admission queue alone, as a counting gate in front
		   of other code (stm's transactions; lock_admit.c) */
		struct {
			uint32_t active; /* places taken (threads inside, at most admit) */
			/* 1: the head outside found no room when it looked; the
			   next leave gives it its place */
			uint32_t due;
		} gate;
	} u;
	/* ticket, clh, mcs: threads waiting to be admitted, a FIFO queue (lock_admit.c) */
	struct {
		struct locus_qnode *tail;
		struct locus_qnode *head; /* the next to admit, once it is published */
		uint64_t clock_ns;	  /* holder only: since when the oldest waited, or 0 */
	} adm;
};

_Static_assert(sizeof(struct lock) <= sizeof(locus_lock),
	       "struct lock outgrew LOCUS_LOCK_SIZE (include/locus/lock.h)");
_Static_assert(_Alignof(struct lock) <= _Alignof(locus_lock),
	       "struct lock needs more alignment than locus_lock has");
/* A newcomer's look for room reads the count and the flag beside the tail. */
_Static_assert(offsetof(struct lock, u.mcs.passive_tail) + sizeof(void *) <= LOCUS_CACHELINE &&
		       offsetof(struct lock, u.clh.pred) + sizeof(void *) <= LOCUS_CACHELINE,
	       "mcs's and clh's lock words outgrew the lock's first cache line");

/* The lock behind a public handle. */
static inline struct lock *lock_of(locus_lock *l)
{
	return (struct lock *)(void *)l;
}

static inline const struct lock *lock_of_const(const locus_lock *l)
{
	return (const struct lock *)(const void *)l;
}

#endif
