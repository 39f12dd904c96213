/* The lock functions on struct lock (lock_state.h): lock.c's dispatch and the
   per-algorithm functions behind it. */
#ifndef LOCUS_SYNC_LOCK_IMPL_H
#define LOCUS_SYNC_LOCK_IMPL_H

#include "common/atomic.h"
#include "locus/lock.h"
#include "sync/lock_state.h"

/*
 * locus_lock's functions on the struct lock itself, for the library's own
 * users that embed one (the executor, stm's gate, the preload library's
 * shadows): the same contracts as in locus/lock.h.
 */
int lock_init(struct lock *l, locus_lock_kind kind, const locus_wait *wait);
int lock_init_spec(struct lock *l, const char *spec);
void lock_lock(struct lock *l);
int lock_trylock(struct lock *l);
void lock_unlock(struct lock *l);
void lock_destroy(struct lock *l);

void word_init(struct lock *l);
void tas_lock(struct lock *l);
void ttas_lock(struct lock *l);
void futex_lock(struct lock *l);
int word_trylock(struct lock *l);
void word_unlock(struct lock *l);

void ticket_init(struct lock *l);
void ticket_lock(struct lock *l);
int ticket_trylock(struct lock *l);
void ticket_unlock(struct lock *l);

void mcs_init(struct lock *l);
void mcs_lock(struct lock *l);
int mcs_trylock(struct lock *l);
void mcs_unlock(struct lock *l);

int clh_init(struct lock *l);
void clh_lock(struct lock *l);
int clh_trylock(struct lock *l);
void clh_unlock(struct lock *l);
void clh_destroy(struct lock *l);

#define TTAS_BACKOFF_MAX_DEFAULT 1024

/*
 * Admission (lock_admit.c), for ticket, clh and mcs unless LOCK_STRICT.
 *
 * enter(l, 0): is there room in the queue? ticket: 1 if fewer than l->admit
 * tickets are out (the caller then takes one); clh, mcs: 1 if it reserved a
 * place in their `active` count. enter(l, 1): the caller was let in
 * regardless (clh, mcs: count it).
 */
typedef int (*admit_enter_fn)(struct lock *l, int forced);

/* The default l->admit: the CPUs this process may run on, at least 2. */
uint32_t admit_default(void);
/* Wait outside the queue until admitted; enter says how (above). */
void admit_wait(struct lock *l, admit_enter_fn enter);
/* Let the head outside in, if one is published. */
void admit_grant(struct lock *l);
/* Holder only: has LOCUS_LOCK_ADMIT_NS passed since the last grant (starting
   the clock if it was not running)? */
int admit_clock(struct lock *l);

/* Holder only, before releasing: is the oldest waiter outside due to be let in? */
static inline int admit_due(struct lock *l)
{
	if (ld_relaxed(&l->adm.head))
		return admit_clock(l);
	/* Written only when it changes: a store at every unlock would bounce the
	   line between the CPUs of the threads taking turns. */
	if (l->adm.clock_ns && !ld_relaxed(&l->adm.tail))
		l->adm.clock_ns = 0;
	return 0;
}

/* After releasing: let the head outside in if `due`, or if `idle` (nobody
   admitted is left; the count must have been lowered with a sequentially
   consistent operation, which orders it before the look at the head). */
static inline void admit_leave(struct lock *l, int due, int idle)
{
	if ((due || idle) && ld_seqcst(&l->adm.head))
		admit_grant(l);
}

/*
 * A gate: the admission queue alone, in front of code that is not a lock's
 * section (stm's transactions). Between admit_gate_enter and admit_gate_leave
 * there are at most g->admit threads; the rest wait outside, FIFO, parked
 * unless g->wait is spin. The oldest outside looks for room every
 * LOCUS_LOCK_ADMIT_NS and enters if it finds some; if not, the next leave
 * gives it its place. A leave that leaves the gate empty lets it in at once.
 * g is a struct lock used
 * for its admission fields and u.gate only; it is never locked.
 */
void admit_gate_init(struct lock *g, const locus_wait *w, uint32_t admit);
void admit_gate_enter(struct lock *g);
void admit_gate_leave(struct lock *g);

/*
 * enter for a lock that counts those admitted in *active (clh, mcs).
 *
 * A thread that finds the lock free takes it with one exchange and does not
 * count itself: it marks its node in the lock's holder word with
 * LOCK_UNCOUNTED (a node is line-aligned, so the low bit is free), so that
 * nobody waits, nothing here runs, and an uncontended lock and unlock cost
 * what they cost without admission. (If the lock was taken between its look
 * and its exchange, it is queued already and counts itself in regardless of
 * the room: enter(l, 1). Every thread that saw the lock free at once and lost
 * the race is so let in, over the limit until they leave.) The others count
 * themselves here, and the room they see is the limit less those counted and
 * the uncounted holder. Only counted threads lower the count, so the unlock
 * that leaves nobody counted is the one that looks for the head outside (a
 * waiter that finds no room has seen another counted, as the limit is at
 * least 2 and the mark counts at most 1, and that one's leave comes after);
 * an uncounted holder lets the head in only when a grant is due.
 *
 * The mark is cleared only when the holder hands the lock to a waiter (not
 * in a strict lock, below, whose every holder is marked): a
 * store just before the unlock's CAS that frees the lock cost about 5% of an
 * uncontended lock and unlock (the CAS waits for it). Left on a free lock, it
 * stays until the next holder writes the word, which a thread that takes the
 * lock free does at once, and a counted one as soon as it has it; a newcomer
 * that looks meanwhile sees one less place than there is and waits outside
 * until the next leave. With more threads than CPUs that sends more
 * newcomers outside (at 8 threads on 2 CPUs about 4 times as many as when
 * the mark was cleared at every unlock), fewer circulate, and the lock
 * doubles its throughput there; waits outside keep their bound
 * (LOCUS_LOCK_ADMIT_NS). A newcomer that looks between a holder's exchange
 * and its writing the word may also enter one over the limit, as a granted
 * thread does; the limit is restored as those inside leave.
 *
 * Room is taken with one atomic add, and given back if there was none: one
 * read-modify-write on the way in costs less than a look and a CAS, which
 * fetch the line twice. Giving it back may leave nobody counted (the others
 * left meanwhile), and then it does what leaving does.
 *
 * clh and mcs mark every holder of a strict lock, which counts nobody: their
 * unlock then tests the mark alone, whatever the flags (lock_clh.h,
 * lock_mcs.h).
 */
#define LOCK_UNCOUNTED ((uintptr_t)1)

static inline struct locus_qnode *holder_node(uintptr_t holder)
{
	return (struct locus_qnode *)(holder & ~LOCK_UNCOUNTED);
}

/* The word of a holder that waited for the lock (clh, mcs): counted, so
   unmarked, but in a strict lock, which counts nobody. */
static inline uintptr_t holder_after_wait(const struct lock *l, const struct locus_qnode *n)
{
	return (uintptr_t)n | (l->flags & LOCK_STRICT ? LOCK_UNCOUNTED : 0);
}

/* At a hand-off to a waiter, by the holder whose word is holder: the next
   holder is counted, so the mark goes (the only place it is cleared; not in
   a strict lock, whose every holder is marked). */
static inline void holder_hand_off(const struct lock *l, uintptr_t *word, uintptr_t holder)
{
	if ((holder & LOCK_UNCOUNTED) && !(l->flags & LOCK_STRICT))
		st_relaxed(word, holder & ~LOCK_UNCOUNTED);
}

/* At an unlock by the holder whose word is holder: nothing for admission to
   do? Strict, or an uncounted holder with nobody outside and no clock
   running (admit_due's answer, 0, without its stores, and admit_leave's
   nothing). */
static inline int admit_quiet(const struct lock *l, uintptr_t holder)
{
	return (l->flags & LOCK_STRICT) ||
	       ((holder & LOCK_UNCOUNTED) && !ld_relaxed(&l->adm.head) && !l->adm.clock_ns);
}

static inline int admit_count_enter(struct lock *l, uint32_t *active, const uintptr_t *holder,
				    int forced)
{
	if (faa_seqcst(active, 1) + (uint32_t)(ld_relaxed(holder) & LOCK_UNCOUNTED) < l->admit ||
	    forced)
		return 1;
	admit_leave(l, 0, faa_seqcst(active, (uint32_t)-1) == 1);
	return 0;
}

/*
 * Where a waiter has just taken its place in a queue (a ticket, a queue
 * lock's tail, the admission queue), before anything else but a count it
 * owes (clh, mcs: a thread that saw the lock free and lost the race to it):
 * the moment at which being descheduled hurts most; and (LOCK_HOOK_FREE)
 * where a clh or mcs locker has seen the lock free and is about to swap
 * itself in. A test seam (lock_test.h): only the tests' build of the
 * library, compiled with LOCUS_LOCK_TEST_HOOK, calls anything there;
 * everywhere else it is nothing.
 */
enum { LOCK_HOOK_QUEUE = 0, LOCK_HOOK_ADMIT = 1, LOCK_HOOK_FREE = 2, LOCK_HOOK_N };
#ifdef LOCUS_LOCK_TEST_HOOK
void lock_hook(const struct lock *l, int where);
#else
static inline void lock_hook(const struct lock *l, int where)
{
	(void)l;
	(void)where;
}
#endif

/* A lock kind's own settings, as a spec gives them (admit 0: the default). */
struct lock_opts {
	uint32_t backoff_max;
	uint32_t flags;
	uint32_t admit;
};
#define LOCK_OPTS_DEFAULT ((struct lock_opts){.backoff_max = TTAS_BACKOFF_MAX_DEFAULT})

/*
 * One option of a lock kind itself, not a waiting option (ttas: backoff |
 * nobackoff | backoff_max=N; tas, ttas, futex: antistarve | barge; mcs: cr |
 * nocr; ticket, clh, mcs: admit | admit=N | strict), shared by the executor's
 * spec parser and locus_lock_init_spec: 1 taken, 0 unknown, -1 bad value.
 */
int lock_kind_option(locus_lock_kind kind, const char *opt, struct lock_opts *o);
/* Apply them to an initialized lock that is not yet in use. */
void lock_apply_opts(struct lock *l, const struct lock_opts *o);

/*
 * The inverse, for a spec with every default spelled out: the waiting policy
 * ("spinpark,spins=N", "spin" or "park"), and a kind's own options
 * (",antistarve,backoff_max=N" and so on; nothing for kinds without any).
 * snprintf's contract: the length it would have written.
 */
int lock_wait_format(const locus_wait *w, char *buf, size_t len);
int lock_kind_format(locus_lock_kind kind, const struct lock_opts *o, char *buf, size_t len);

#endif
