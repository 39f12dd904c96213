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
 *   clh     CLH queue lock (each waiter spins on its predecessor's node)
 *   futex   three-state futex mutex (free / held / held with sleepers)
 *
 * ticket, clh and mcs admit at most `admit` threads at once (default: the
 * CPUs this process may run on, at least 2) to their queue, where hand-offs
 * are FIFO; a thread that finds the queue full waits asleep in a second, FIFO
 * queue outside, and is admitted when the lock falls idle or, oldest first,
 * one every LOCUS_LOCK_ADMIT_NS while any wait there (spec option "strict":
 * every thread queues, strict FIFO). A FIFO hand-off to a thread that has no
 * CPU waits for the scheduler; with no more threads in the queue than CPUs,
 * the thread whose turn comes is one that took its place while running and
 * has a CPU to run on.
 *
 * tas, ttas and futex let any running thread take a free lock (barging), which
 * keeps them fast when threads outnumber cores but can starve a waiter that
 * sleeps. Unless the spec option "barge" is given, a waiter that has waited
 * LOCUS_LOCK_STARVE_NS takes a ticket among such waiters, and while any holds
 * one the lock is reserved: others do not take it until the waiter whose turn
 * it is has.
 *
 * Every lock but `mutex` waits by the policy given at init (wait.h); the
 * default is spin-then-park. Queue nodes come from a per-thread pool and are
 * remembered in the lock by its holder, so lock()/unlock() need no node
 * argument and there is no limit on the number of threads.
 *
 * A locus_lock is opaque storage that a program may embed in its own
 * structures or declare statically; it is used only through the functions
 * below, and is not copied or moved once initialized.
 */
#ifndef LOCUS_LOCK_H
#define LOCUS_LOCK_H

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

/* tas, ttas, futex: a waiter that has waited this long gets the lock reserved for it
   (10 ms: long enough that with many more threads than cores, where waits of a few ms are
   the scheduler's doing, reservations stay rare and barging keeps the lock busy) */
#define LOCUS_LOCK_STARVE_NS 10000000u
/* ticket, clh, mcs: while threads wait outside the queue, the oldest is let in
   at the first unlock after this long since the previous one was */
#define LOCUS_LOCK_ADMIT_NS 2000000u

/* Bytes of a locus_lock: two cache lines, whatever the algorithm. */
#define LOCUS_LOCK_SIZE (2 * LOCUS_CACHELINE)

typedef struct locus_lock {
	LOCUS_CACHELINE_ALIGNED unsigned char opaque[LOCUS_LOCK_SIZE];
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
