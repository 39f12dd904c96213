/*
 * locus: locks. One type, seven algorithms, chosen at init:
 *
 *   mutex   pthread mutex (baseline; glibc waits its own way, the policy is ignored)
 *   tas     test-and-set (xchg) spin
 *   ttas    test-and-test-and-set with bounded exponential backoff
 *   ticket  FIFO ticket lock
 *   mcs     MCS queue lock (each waiter spins on its own node), with
 *           concurrency restriction: surplus waiters are moved aside so that
 *           hand-offs go to threads that are running, and readmitted oldest
 *           first, at the first hand-off after 2 ms or after 8192 hand-offs
 *           since the previous readmission, whichever comes first. A waiter
 *           k-th among those moved aside (k < the number of threads) gets
 *           the lock within k x 8192 hand-offs and within k x 2 ms plus,
 *           per readmission, the rest of the section then running; with
 *           sections of at least s, within k x ceil(2 ms / s) hand-offs
 *           (see lock_mcs.c)
 *   clh     CLH queue lock (each waiter spins on its predecessor's node)
 *   futex   three-state futex mutex (free / held / held with sleepers)
 *
 * ticket, clh and mcs admit at most `admit` threads at once (default: the
 * CPUs this process may run on, at least 2) to their queue, where hand-offs
 * are FIFO; a thread that finds the queue full waits asleep in a second, FIFO
 * queue outside, and is admitted when the lock falls idle or, oldest first,
 * one every LOCUS_LOCK_ADMIT_NS while any wait there (LOCUS_LOCK_STRICT, spec
 * option "strict": every thread queues, strict FIFO). A FIFO hand-off to a
 * thread that has no CPU waits for the scheduler; with no more threads in the
 * queue than CPUs, the thread whose turn comes is one that took its place
 * while running and has a CPU to run on (see lock_admit.c).
 *
 * tas, ttas and futex let any running thread take a free lock (barging), which
 * keeps them fast when threads outnumber cores but can starve a waiter that
 * sleeps. Unless LOCUS_LOCK_BARGE is set (spec option "barge"), a waiter that
 * has waited LOCUS_LOCK_STARVE_NS takes a ticket among such waiters, and while
 * any holds one the lock is reserved: others do not take it until the waiter
 * whose turn it is has (see lock_word.c).
 *
 * Every lock but `mutex` waits by the policy given at init (wait.h); the
 * default is spin-then-park. Queue nodes come from a per-thread pool and are
 * remembered in the lock by its holder, so lock()/unlock() need no node
 * argument and there is no limit on the number of threads.
 */
#ifndef LOCUS_LOCK_H
#define LOCUS_LOCK_H

#include <pthread.h>
#include <stdint.h>

#include "locus/wait.h"
#include "locus/export.h"

LOCUS_BEGIN_DECLS

typedef enum {
	LOCUS_LOCK_MUTEX = 0,
	LOCUS_LOCK_TAS,
	LOCUS_LOCK_TTAS,
	LOCUS_LOCK_TICKET,
	LOCUS_LOCK_MCS,
	LOCUS_LOCK_CLH,
	LOCUS_LOCK_FUTEX,
	LOCUS_LOCK_NKINDS
} locus_lock_kind;

struct locus_qnode;

/* locus_lock.flags */
#define LOCUS_LOCK_NOCR 1u /* mcs: plain FIFO, no concurrency restriction */
/* tas, ttas, futex: plain barging, without the reservation for a waiter that has waited
   LOCUS_LOCK_STARVE_NS */
#define LOCUS_LOCK_BARGE 2u
/* tas, ttas, futex: a waiter that has waited this long gets the lock reserved for it
   (10 ms: long enough that with many more threads than cores, where waits of a few ms are
   the scheduler's doing, reservations stay rare and barging keeps the lock busy) */
#define LOCUS_LOCK_STARVE_NS 10000000u
/* ticket, clh, mcs: no admission limit; every waiter queues (strict FIFO) */
#define LOCUS_LOCK_STRICT 4u
/* ticket, clh, mcs: while threads wait outside the queue, the oldest is let in
   at the first unlock after this long since the previous one was */
#define LOCUS_LOCK_ADMIT_NS 2000000u

typedef struct locus_lock {
	uint32_t kind;	      /* locus_lock_kind */
	uint32_t backoff_max; /* ttas: ceiling of the exponential backoff, in pauses */
	locus_wait wait;
	uint32_t flags; /* LOCUS_LOCK_*; may be set between init and first use */
	/* ticket, clh, mcs: most threads in the queue (holder included) at once,
	   >= 2; set by init, may be changed between init and first use */
	uint32_t admit;
	union {
		struct {
			uint32_t state; /* 0 free, 1 held, 2 held and maybe sleepers */
			/* waiters that have waited too long take a ticket here; while
			   urgent_next != urgent_owner the lock is reserved for the one
			   whose ticket is urgent_owner (not with LOCUS_LOCK_BARGE) */
			uint32_t urgent_next, urgent_owner;
			uint32_t calm; /* bumped whenever the last reservation ends */
		} word; /* tas, ttas, futex */
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
		} ticket;
		struct {
			struct locus_qnode *tail;
			struct locus_qnode *holder; /* the holder's node, written by the holder */
			/* waiters moved aside (FIFO), touched only by the holder */
			struct locus_qnode *passive_head, *passive_tail;
			/* hand-offs since the last readmission, while passive waiters exist */
			uint32_t handoffs;
			uint32_t active; /* threads admitted (queued or holding) */
			/* last readmission, or when the passive list last became non-empty */
			uint64_t readmitted_ns;
		} mcs;
		struct {
			uintptr_t tail;		    /* node pointer | CLH_FREE bit */
			uint32_t active;	    /* threads admitted (queued or holding) */
			struct locus_qnode *holder; /* node the holder enqueued */
			struct locus_qnode *pred;   /* node it waited on; recycled at unlock */
		} clh;
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
	/* ticket, clh, mcs: threads waiting to be admitted, a FIFO queue */
	struct {
		struct locus_qnode *tail;
		struct locus_qnode *head; /* the next to admit, once it is published */
		uint64_t clock_ns; /* holder only: since when the oldest waited, or 0 */
	} adm;
} locus_lock;

/* Initialize; wait = NULL means locus_wait_default(). Returns 0 or an errno. */
LOCUS_API int locus_lock_init(locus_lock *l, locus_lock_kind kind, const locus_wait *wait);
LOCUS_API void locus_lock_lock(locus_lock *l);
/* 0 if acquired, EBUSY if held by anyone (never waits). */
LOCUS_API int locus_lock_trylock(locus_lock *l);
LOCUS_API void locus_lock_unlock(locus_lock *l);
/* The lock must be free. */
LOCUS_API void locus_lock_destroy(locus_lock *l);

/* "mcs" etc.; NULL for an unknown kind. */
LOCUS_API const char *locus_lock_kind_name(locus_lock_kind kind);
/* Returns 0 and sets *kind, or -1 for an unknown name. */
LOCUS_API int locus_lock_kind_parse(const char *name, locus_lock_kind *kind);

/*
 * Initialize from a spec "NAME[:OPTION,...]", the lock part of an executor
 * spec: NAME is a kind above; the options are the waiting options of wait.h
 * (not for mutex), and backoff | nobackoff | backoff_max=N for ttas, cr | nocr
 * for mcs, admit | admit=N | strict for ticket, clh and mcs, antistarve |
 * barge for tas, ttas and futex. Returns 0, ENOENT for an unknown name or EINVAL for a bad option
 * (l untouched in both cases), or locus_lock_init's errno.
 */
LOCUS_API int locus_lock_init_spec(locus_lock *l, const char *spec);

LOCUS_END_DECLS

#endif
