/*
 * Locks on one 32-bit word: tas, ttas and futex.
 *
 * The state is 0 (free), 1 (held) or 2 (held, and some waiter may be asleep).
 * A thread that decides to sleep first sets the state to 2 with an exchange,
 * and sleeps only while it is still 2; unlock exchanges in 0 and wakes one
 * sleeper if it saw 2. A wake-up cannot be lost: a sleeper is either queued in
 * the kernel before unlock's exchange (and is woken), or its futex_wait finds
 * the state no longer 2 and returns. A woken thread takes the lock by
 * exchanging in 2 again (it cannot know whether others still sleep), which
 * costs at worst one unnecessary wake later.
 *
 * The three differ only in how they spin before sleeping: tas exchanges in a
 * loop, ttas reads until the state is free and backs off exponentially after
 * a failed exchange, futex spins reading like ttas but without backoff and
 * with a compare-and-swap, the usual futex mutex.
 *
 * Starvation. Any running thread may take a free lock (barging): that keeps
 * the lock busy when threads outnumber cores, but a waiter that went to sleep
 * can lose every race for seconds. So a waiter that has waited
 * LOCUS_LOCK_STARVE_NS takes a ticket (urgent_next); while tickets are out
 * (urgent_next != urgent_owner) the lock is *reserved*: nobody else takes it,
 * not even by trylock, and the waiter whose ticket is urgent_owner spins (it
 * yields its core now and then) until the lock is free, takes it, and passes
 * the reservation on by advancing urgent_owner. Waiters that find the lock
 * reserved sleep on urgent_owner (or spin, under the spin policy) until it
 * moves. A thread that checked before a reservation was made may still take
 * the lock once, so a waiter that has reserved gets the lock within one
 * section per thread, and one that has waited the threshold within that
 * plus one such round per reservation ahead of it. LOCK_BARGE turns
 * this off: nobody ever takes a ticket, and the check costs two loads.
 */
#include <errno.h>
#include <sched.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "common/futex.h"
#include "sync/lock_impl.h"

/* Spins between two looks at the clock; a reserving waiter's spins between yields. */
#define CLOCK_EVERY  256
#define URGENT_YIELD 64

void word_init(struct lock *l)
{
	l->u.word.state = 0;
	l->u.word.urgent_next = 0;
	l->u.word.urgent_owner = 0;
	l->u.word.calm = 0;
}

/* Someone holds a ticket: the lock is not for the taking. */
static inline int reserved(struct lock *l)
{
	return ld_relaxed(&l->u.word.urgent_next) != ld_relaxed(&l->u.word.urgent_owner);
}

/*
 * Has this waiter waited long enough to reserve the lock? Its clock starts at
 * the first look (*t0 == 0 until then), so a wait shorter than one look's
 * worth of spinning never reads the clock; that is microseconds against a
 * threshold of milliseconds.
 */
static int starving(const struct lock *l, uint64_t *t0)
{
	if (l->flags & LOCK_BARGE)
		return 0;
	uint64_t now = mono_ns();
	if (*t0 == 0) {
		*t0 = now;
		return 0;
	}
	return now - *t0 >= LOCUS_LOCK_STARVE_NS;
}

static int policy_spins_forever(const struct lock *l)
{
	return l->wait.kind == LOCUS_WAIT_SPIN;
}

static uint32_t policy_budget(const struct lock *l)
{
	return l->wait.kind == LOCUS_WAIT_PARK ? 0 : l->wait.spins;
}

/*
 * Take a ticket, wait for its turn, then for the lock; on return the caller
 * holds the lock and the next ticket (if any) has the reservation.
 */
static void word_reserve(struct lock *l)
{
	/* Sequentially consistent with the passing on below: a ticket taken after
	   the previous holder read urgent_next finds urgent_owner already at it. */
	uint32_t t = faa_seqcst(&l->u.word.urgent_next, 1);
	for (uint32_t i = 1;; i++) {
		uint32_t owner = ld_seqcst(&l->u.word.urgent_owner);
		if (owner == t)
			break;
		if (i % URGENT_YIELD == 0 && !policy_spins_forever(l)) {
			/* The previous one wakes all; the bound is only a safety net. */
			struct timespec ts = {.tv_sec = 0, .tv_nsec = LOCUS_LOCK_STARVE_NS};
			futex_wait_for(&l->u.word.urgent_owner, owner, &ts);
		} else {
			cpu_relax();
		}
	}
	for (uint32_t i = 1;; i++) {
		/* 2, not 1: sleepers may be queued, and the unlock must wake one. */
		if (ld_relaxed(&l->u.word.state) == 0 && xchg_acquire(&l->u.word.state, 2) == 0)
			break;
		if (i % URGENT_YIELD == 0)
			sched_yield(); /* the holder may be waiting for this core */
		else
			cpu_relax();
	}
	st_seqcst(&l->u.word.urgent_owner, t + 1);
	if (ld_seqcst(&l->u.word.urgent_next) == t + 1) {
		/* No ticket left: wake those that stood back. */
		faa_release(&l->u.word.calm, 1);
		futex_wake(&l->u.word.calm, FUTEX_WAKE_ALL);
	} else {
		futex_wake(&l->u.word.urgent_owner, FUTEX_WAKE_ALL);
	}
}

/* Wait while the lock is reserved, for at most the threshold (the waiter may starve too). */
static void wait_reserved(struct lock *l)
{
	uint32_t calm = ld_acquire(&l->u.word.calm);
	if (!reserved(l))
		return;
	if (policy_spins_forever(l)) {
		cpu_relax();
		return;
	}
	struct timespec ts = {.tv_sec = 0, .tv_nsec = LOCUS_LOCK_STARVE_NS};
	futex_wait_for(&l->u.word.calm, calm, &ts);
}

/*
 * After the spin phase: sleep until we own the state, reserving the lock once
 * we have waited the threshold since t0. Sleeps are bounded by the threshold,
 * so a waiter that nobody wakes still gets to reserve.
 */
static void word_park(struct lock *l, uint64_t *t0)
{
	for (;;) {
		if (starving(l, t0)) {
			word_reserve(l);
			return;
		}
		if (reserved(l)) {
			wait_reserved(l);
			continue;
		}
		if (xchg_acquire(&l->u.word.state, 2) == 0)
			return;
		if (l->flags & LOCK_BARGE) {
			futex_wait(&l->u.word.state, 2);
		} else if (policy_spins_forever(l)) {
			cpu_relax();
		} else {
			struct timespec ts = {.tv_sec = 0, .tv_nsec = LOCUS_LOCK_STARVE_NS};
			futex_wait_for(&l->u.word.state, 2, &ts);
		}
	}
}

/*
 * One test-and-set attempt. Exchanging in 1 can overwrite a 2 and so hide the
 * sleepers from unlock; when that happens the 2 is put back at once, and if
 * the lock was freed in between, this thread now holds it with the state at
 * 2, so its own unlock does the wake.
 */
static int word_grab(struct lock *l)
{
	uint32_t old = xchg_acquire(&l->u.word.state, 1);
	if (old == 2)
		old = xchg_acquire(&l->u.word.state, 2);
	return old == 0;
}

/*
 * The spin phases: 1 when the lock was taken, 0 when the budget ran out or
 * the waiter has waited the threshold (word_park then reserves). A reserved
 * lock is not taken; the spinning goes on.
 */
static int tas_spin(struct lock *l, uint64_t *t0)
{
	uint32_t budget = policy_budget(l);
	for (uint32_t i = 1; policy_spins_forever(l) || i <= budget; i++) {
		cpu_relax();
		if (!reserved(l) && word_grab(l))
			return 1;
		if (i % CLOCK_EVERY == 0 && starving(l, t0))
			return 0;
	}
	return 0;
}

static int ttas_spin(struct lock *l, uint64_t *t0)
{
	uint32_t budget = policy_budget(l);
	uint32_t backoff = 1, spent = 0, looks = 0;
	while (policy_spins_forever(l) || spent < budget) {
		if (++looks % CLOCK_EVERY == 0 && starving(l, t0))
			return 0;
		if (ld_relaxed(&l->u.word.state) == 0 && !reserved(l)) {
			if (word_grab(l))
				return 1;
			/* Lost the race: let the winner's line settle before retrying. */
			for (uint32_t i = 0; i < backoff; i++)
				cpu_relax();
			spent += backoff;
			if (backoff < l->backoff_max)
				backoff <<= 1;
		} else {
			cpu_relax();
			spent++;
		}
	}
	return 0;
}

static int futex_spin(struct lock *l, uint64_t *t0)
{
	uint32_t budget = policy_budget(l);
	for (uint32_t i = 1; policy_spins_forever(l) || i <= budget; i++) {
		cpu_relax();
		uint32_t expected = 0;
		if (ld_relaxed(&l->u.word.state) == 0 && !reserved(l) &&
		    cas_acquire(&l->u.word.state, &expected, 1))
			return 1;
		if (i % CLOCK_EVERY == 0 && starving(l, t0))
			return 0;
	}
	return 0;
}

void tas_lock(struct lock *l)
{
	if (!reserved(l) && word_grab(l))
		return;
	uint64_t t0 = 0;
	if (!tas_spin(l, &t0))
		word_park(l, &t0);
}

void ttas_lock(struct lock *l)
{
	if (!reserved(l) && word_grab(l))
		return;
	uint64_t t0 = 0;
	if (!ttas_spin(l, &t0))
		word_park(l, &t0);
}

void futex_lock(struct lock *l)
{
	uint32_t expected = 0;
	if (!reserved(l) && cas_acquire(&l->u.word.state, &expected, 1))
		return;
	uint64_t t0 = 0;
	if (!futex_spin(l, &t0))
		word_park(l, &t0);
}

int word_trylock(struct lock *l)
{
	uint32_t expected = 0;
	if (reserved(l))
		return EBUSY;
	return cas_acquire(&l->u.word.state, &expected, 1) ? 0 : EBUSY;
}

void word_unlock(struct lock *l)
{
	if (xchg_release(&l->u.word.state, 0) == 2)
		futex_wake(&l->u.word.state, 1);
}
