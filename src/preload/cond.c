/*
 * Condition variables.
 *
 * glibc's pthread_cond_wait releases and reacquires the mutex with its own
 * internal functions, not through pthread_mutex_unlock/lock, so it cannot
 * wait on a mutex that is really a locus lock. When locks are replaced, every
 * condition variable is therefore ours, and it releases and reacquires its
 * mutex through lp_mutex_unlock/lp_mutex_lock: that works for every mutex,
 * whether it is a locus lock or stayed on glibc's functions (recursive,
 * error-checking, ...), so a condvar may meet both kinds over its life.
 * Without replacement (pass-through, profile only) every condvar is glibc's.
 * The choice is made once per process, so a condvar never meets both
 * implementations.
 *
 * Ours lives in the pthread_cond_t's 48 bytes, and all-zero bytes
 * (PTHREAD_COND_INITIALIZER) are a valid idle condvar:
 *
 *   seq      bumped by every signal and broadcast; waiters sleep on it (futex)
 *   waiters  threads between "about to wait" and "woke up"
 *   flags    the clock for timedwait (pthread_condattr_setclock), pshared
 *
 * Why no wake-up is lost. A waiter increments waiters and reads seq (s)
 * while it still holds the mutex, then releases the mutex and sleeps only
 * while seq == s (the kernel compares and queues atomically). A signaller
 * that changed the predicate did so under the mutex, hence after the
 * waiter released it, so its increment of seq follows the waiter's read of
 * s, and its read of waiters (after the increment) sees the waiter. So
 * either the waiter is already queued in the kernel and is woken, or its
 * futex_wait finds seq != s and returns at once. (Increment-then-read on
 * both sides is sequentially consistent, which covers signallers that do
 * not take the mutex as well.) A signal may wake a waiter that arrived
 * after it, since any sleeper on seq may take the wake; waiters re-check
 * their predicate anyway (spurious wake-ups are allowed), and one that
 * finds it false waits again. seq wraps after 2^32 signals: a waiter that
 * slept through exactly that many would miss one wake-up.
 *
 * Cancellation: the futex sleep is not a cancellation point; a pending
 * cancel acts when the wait returns, with the mutex held, as POSIX requires.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "common/futex.h"
#include "preload.h"

struct lp_cond {
	uint32_t seq;
	uint32_t waiters;
	uint32_t flags;
};

#define COND_MONOTONIC 1u
#define COND_PSHARED   2u

_Static_assert(sizeof(struct lp_cond) <= sizeof(pthread_cond_t), "fits in a pthread_cond_t");

static struct lp_cond *cv(pthread_cond_t *c)
{
	return (struct lp_cond *)(void *)c;
}

static int futex_op(const struct lp_cond *c, int op)
{
	return op | (c->flags & COND_PSHARED ? 0 : FUTEX_PRIVATE_FLAG);
}

/*
 * Sleep while c->seq == seq, until woken or the absolute deadline on clk
 * (NULL: none). Returns ETIMEDOUT or 0 (woken, value changed, interrupted).
 */
static int cond_sleep(struct lp_cond *c, uint32_t seq, clockid_t clk,
		      const struct timespec *abstime)
{
	int op =
		futex_op(c, FUTEX_WAIT_BITSET) | (clk == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
	if (futex_call(&c->seq, op, seq, abstime, FUTEX_BITSET_MATCH_ANY) == 0)
		return 0;
	return errno == ETIMEDOUT ? ETIMEDOUT : 0;
}

static void cond_wake(struct lp_cond *c, int n)
{
	faa_seqcst(&c->seq, 1);
	if (ld_seqcst(&c->waiters))
		futex_call(&c->seq, futex_op(c, FUTEX_WAKE), (uint32_t)n, NULL, 0);
}

static int own_wait(pthread_cond_t *cond, pthread_mutex_t *m, clockid_t clk,
		    const struct timespec *abstime, void *caller)
{
	struct lp_cond *c = cv(cond);
	if (abstime && (abstime->tv_nsec < 0 || abstime->tv_nsec >= NS_PER_S))
		return EINVAL;
	int saved = errno;
	faa_seqcst(&c->waiters, 1);
	uint32_t seq = ld_seqcst(&c->seq);
	int rc = lp_mutex_unlock(m);
	if (rc) {
		fas_seqcst(&c->waiters, 1);
		return rc;
	}
	rc = cond_sleep(c, seq, clk, abstime);
	/* Leave the condvar before taking the mutex: destroy waits for this, and
	   the destroyer may hold the mutex. */
	fas_seqcst(&c->waiters, 1);
	lp_mutex_lock(m, caller);
	errno = saved;
	pthread_testcancel();
	return rc;
}

static clockid_t own_clock(pthread_cond_t *c)
{
	return ld_relaxed(&cv(c)->flags) & COND_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

int lp_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	if (lp_unlikely(!lp_ready())) {
		memset(c, 0, sizeof(*c));
		return 0;
	}
	if (lp_cfg.mode != LP_REPLACE)
		return lp_real.cond_init(c, attr);
	memset(c, 0, sizeof(*c));
	if (attr) {
		clockid_t clk = CLOCK_REALTIME;
		int pshared = PTHREAD_PROCESS_PRIVATE;
		pthread_condattr_getclock(attr, &clk);
		pthread_condattr_getpshared(attr, &pshared);
		cv(c)->flags = (clk == CLOCK_MONOTONIC ? COND_MONOTONIC : 0) |
			       (pshared == PTHREAD_PROCESS_SHARED ? COND_PSHARED : 0);
	}
	return 0;
}

/*
 * Woken waiters may still be on their way out (a destroy right after a
 * broadcast is legal, and the memory may be freed next): wake everyone and
 * wait until they have left. A waiter that never leaves (destroying a
 * condvar that is still waited on) makes destroy give up with EBUSY.
 */
int lp_cond_destroy(pthread_cond_t *c)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode != LP_REPLACE)
		return lp_real.cond_destroy(c);
	struct lp_cond *v = cv(c);
	for (unsigned i = 0; ld_seqcst(&v->waiters); i++) {
		if (i == 100000)
			return EBUSY;
		cond_wake(v, FUTEX_WAKE_ALL);
		sched_yield();
	}
	return 0;
}

int lp_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, void *caller)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode == LP_REPLACE)
		return own_wait(c, m, CLOCK_REALTIME, NULL, caller);
	if (lp_cfg.mode == LP_PASS)
		return lp_real.cond_wait(c, m);
	struct lp_shadow *sh = lp_mutex_wait_begin(m);
	int rc = lp_real.cond_wait(c, m);
	lp_mutex_wait_end(sh);
	return rc;
}

int lp_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime,
		      void *caller)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode == LP_REPLACE)
		return own_wait(c, m, own_clock(c), abstime, caller);
	if (lp_cfg.mode == LP_PASS)
		return lp_real.cond_timedwait(c, m, abstime);
	struct lp_shadow *sh = lp_mutex_wait_begin(m);
	int rc = lp_real.cond_timedwait(c, m, abstime);
	lp_mutex_wait_end(sh);
	return rc;
}

int lp_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
		      const struct timespec *abstime, void *caller)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (clk != CLOCK_REALTIME && clk != CLOCK_MONOTONIC)
		return EINVAL;
	if (lp_cfg.mode == LP_REPLACE)
		return own_wait(c, m, clk, abstime, caller);
	if (!lp_real.cond_clockwait)
		return EINVAL;
	if (lp_cfg.mode == LP_PASS)
		return lp_real.cond_clockwait(c, m, clk, abstime);
	struct lp_shadow *sh = lp_mutex_wait_begin(m);
	int rc = lp_real.cond_clockwait(c, m, clk, abstime);
	lp_mutex_wait_end(sh);
	return rc;
}

int lp_cond_signal(pthread_cond_t *c)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode != LP_REPLACE)
		return lp_real.cond_signal(c);
	cond_wake(cv(c), 1);
	return 0;
}

int lp_cond_broadcast(pthread_cond_t *c)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode != LP_REPLACE)
		return lp_real.cond_broadcast(c);
	cond_wake(cv(c), FUTEX_WAKE_ALL);
	return 0;
}
