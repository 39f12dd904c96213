/*
 * A hand-off flag: one thread waits on it, another releases it with a value.
 * MCS, CLH, Oyama and CC-Synch all reduce "wait for my turn" to this.
 *
 * States: FLAG_WAIT (waiter may spin), FLAG_PARKED (waiter is, or is about to
 * be, asleep in the kernel), anything else is a release value.
 *
 * Why a wake-up cannot be lost: the waiter moves WAIT -> PARKED with a CAS and
 * the releaser writes its value with an exchange, both on the same word, so
 * one of them is first. If the exchange is first, the CAS fails and the waiter
 * sees the value without sleeping. If the CAS is first, the exchange returns
 * PARKED and the releaser calls futex_wake; the waiter's futex_wait compares
 * the word with PARKED inside the kernel, so it either sees the new value and
 * returns, or is already queued and is woken. The releaser touches the flag
 * only through that exchange and the wake (by address), so the waiter may free
 * or reuse the flag as soon as it sees the value.
 */
#ifndef LOCUS_SYNC_FLAG_H
#define LOCUS_SYNC_FLAG_H

#include <stdint.h>

#include "locus/wait.h"
#include "common/atomic.h"
#include "common/futex.h"

#define FLAG_WAIT   0xfffffffeu
#define FLAG_PARKED 0xffffffffu

static inline void flag_arm(uint32_t *f)
{
	st_relaxed(f, FLAG_WAIT);
}

/*
 * Wait until the flag holds a release value, and return it (acquire). The
 * policy is read once, before the spin: *w usually sits in a lock's first
 * cache line, which the other threads write (a queue lock's tail), and the
 * acquire loads of the loop would make the compiler read it again at every
 * turn, taking the line away from them (at 2 threads on 2 CPUs, mcs made
 * 3.5 million hand-offs a second so, 4.8 without).
 */
static inline uint32_t flag_wait(uint32_t *f, const locus_wait *w)
{
	uint32_t v = ld_acquire(f);
	if (v < FLAG_WAIT)
		return v;
	const uint32_t kind = w->kind, spins = w->spins;
	if (kind == LOCUS_WAIT_SPIN) {
		while ((v = ld_acquire(f)) >= FLAG_WAIT)
			cpu_relax();
		return v;
	}
	for (uint32_t i = 0; i < spins && kind == LOCUS_WAIT_SPINPARK; i++) {
		cpu_relax();
		v = ld_acquire(f);
		if (v < FLAG_WAIT)
			return v;
	}
	for (;;) {
		uint32_t expected = FLAG_WAIT;
		/* Acquire on failure too: failing means the release value is in. */
		if (v == FLAG_WAIT && !cas_acquire_both(f, &expected, FLAG_PARKED)) {
			v = expected;
			if (v < FLAG_WAIT)
				return v;
		}
		futex_wait(f, FLAG_PARKED);
		v = ld_acquire(f);
		if (v < FLAG_WAIT)
			return v;
	}
}

/* Release the waiter with value v (< FLAG_WAIT); everything before is visible to it. */
static inline void flag_release(uint32_t *f, uint32_t v)
{
	if (xchg_release(f, v) == FLAG_PARKED)
		futex_wake(f, 1);
}

/*
 * The same for a waiter that waits with policy w. One that only spins never
 * parks, so a plain store releases it: the store retires at once, where the
 * exchange waits until it owns the waiter's line.
 */
static inline void flag_release_to(uint32_t *f, uint32_t v, const locus_wait *w)
{
	if (w->kind == LOCUS_WAIT_SPIN)
		st_release(f, v);
	else
		flag_release(f, v);
}

#endif
