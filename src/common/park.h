/*
 * The one park/wake protocol: a thread that has nothing to do sleeps on a
 * word, and whoever gives it something to do wakes it, without losing a
 * wake-up and without a system call while the sleeper is busy.
 *
 * Sleeper: sets the word to 1, issues a full fence, checks its condition once
 * more, and only then waits on the futex while the word is 1. Waker: after
 * publishing the work, issues a full fence and reads the word; only if it is
 * 1 does it exchange it to 0 and wake. By the two fences, either the
 * sleeper's last check sees the work or the waker sees the 1; and the futex
 * compares the word, so an exchange that lands before the sleeper sleeps
 * makes its wait return at once. One word has one sleeper at a time (a
 * server, or the client that owns a channel); any number of wakers.
 *
 * The delegation servers and their clients, and the mpsc servers, all wait
 * this way. (flag.h is a different thing: a hand-off that carries a value to
 * one waiter.)
 */
#ifndef LOCUS_COMMON_PARK_H
#define LOCUS_COMMON_PARK_H

#include <sched.h>
#include <stdint.h>

#include "common/atomic.h"
#include "common/futex.h"
#include "locus/wait.h"

/* Announce, re-check, sleep. Returns 1 if it slept (the condition was still false). */
static inline int park_sleep(uint32_t *word, int (*ready)(void *), void *arg)
{
	int slept = 0;
	st_seqcst(word, 1);
	fence_seqcst();
	if (!ready(arg)) {
		futex_wait(word, 1);
		slept = 1;
	}
	st_relaxed(word, 0);
	return slept;
}

/* Waker, with the fence after publication already issued (one fence for many words). */
static inline void park_wake_fenced(uint32_t *word)
{
	if (ld_relaxed(word) && xchg_acqrel(word, 0) == 1)
		futex_wake(word, 1);
}

/* Waker: call after publishing the work. */
static inline void park_wake(uint32_t *word)
{
	fence_seqcst();
	park_wake_fenced(word);
}

/*
 * Wait until ready(arg) under policy w: spin (yielding the core every
 * `yield_every` spins if nonzero, for when the thread that will make us ready
 * may share our core), then park on word until ready.
 */
static inline void park_wait(uint32_t *word, int (*ready)(void *), void *arg, const locus_wait *w,
			     uint32_t yield_every)
{
	/* The policy once, into registers: ready()'s acquire loads would make
	   the compiler read *w again at every spin. */
	const locus_wait pol = *w;
	if (pol.kind == LOCUS_WAIT_SPIN) {
		while (!ready(arg))
			cpu_relax();
		return;
	}
	for (uint32_t i = 1; pol.kind == LOCUS_WAIT_SPINPARK && i <= pol.spins; i++) {
		if (ready(arg))
			return;
		if (yield_every && i % yield_every == 0)
			sched_yield();
		else
			cpu_relax();
	}
	while (!ready(arg))
		park_sleep(word, ready, arg);
}

#endif
