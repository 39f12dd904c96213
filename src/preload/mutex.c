/*
 * The mutex functions: a locus lock for a mutex labelled LP_LOCUS, glibc's
 * own function for the others, and the profile around either.
 *
 * Profiling costs, per acquisition: one trylock first (a failed one is what
 * "contended" means, and only then is the wait timed), one tick read at
 * acquisition and one at release (hold time), and a few stores to the
 * shadow, which the holder owns. No global lock, no shared counter: the
 * counters of a mutex are written only by the thread that holds it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <time.h>

#include "preload.h"

static int replacing(void)
{
	return lp_cfg.mode == LP_REPLACE;
}

/* ---- locus locks ------------------------------------------------------- */

static void locus_acquired(struct lp_shadow *sh, pthread_t me, int contended, uint64_t t0)
{
	if (lp_cfg.profiling) {
		uint64_t now = ticks();
		lp_prof_acquired(sh, me, now, contended, contended ? now - t0 : 0);
	}
	st_relaxed(&sh->owner, me);
}

static void locus_acquire(struct lp_shadow *sh)
{
	pthread_t me = pthread_self();
	if (!lp_cfg.profiling) {
		lock_lock(&sh->lock);
		st_relaxed(&sh->owner, me);
		return;
	}
	if (lock_trylock(&sh->lock) == 0) {
		locus_acquired(sh, me, 0, 0);
		return;
	}
	uint64_t t0 = ticks();
	lock_lock(&sh->lock);
	locus_acquired(sh, me, 1, t0);
}

static int locus_try(struct lp_shadow *sh)
{
	if (lock_trylock(&sh->lock) != 0) {
		if (lp_cfg.profiling)
			faa_relaxed(&sh->st.try_busy, 1);
		return EBUSY;
	}
	locus_acquired(sh, pthread_self(), 0, 0);
	return 0;
}

/*
 * Unlocking a locus lock that nobody holds would corrupt it (a ticket lock
 * would serve a ticket nobody drew), so that is refused; unlocking one held
 * by another thread is allowed, as glibc allows it for a normal mutex.
 */
static int locus_release(struct lp_shadow *sh)
{
	if (lp_unlikely(ld_relaxed(&sh->owner) == 0))
		return EPERM;
	if (lp_cfg.profiling)
		lp_prof_released(sh, ticks());
	st_relaxed(&sh->owner, 0);
	lock_unlock(&sh->lock);
	return 0;
}

static int valid_clock(clockid_t clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_MONOTONIC;
}

static int ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/*
 * A locus lock has no timed wait, so: spin on trylock for a while, then
 * sleep and retry with a growing nap (up to 1 ms), until the deadline. A
 * timed locker can lose every race to queued lockers of a queue lock and time
 * out under steady contention; docs/preload.md says so.
 */
static int locus_timed(struct lp_shadow *sh, clockid_t clk, const struct timespec *abstime)
{
	pthread_t me = pthread_self();
	if (lock_trylock(&sh->lock) == 0) {
		locus_acquired(sh, me, 0, 0);
		return 0;
	}
	if (abstime->tv_nsec < 0 || abstime->tv_nsec >= NS_PER_S)
		return EINVAL;
	uint64_t t0 = ticks();
	long nap = 1000;
	for (unsigned i = 0;; i++) {
		if (lock_trylock(&sh->lock) == 0)
			break;
		if (i < 1024) {
			cpu_relax();
			continue;
		}
		struct timespec now;
		clock_gettime(clk, &now);
		if (!ts_before(&now, abstime)) {
			if (lp_cfg.profiling)
				faa_relaxed(&sh->st.try_busy, 1);
			return ETIMEDOUT;
		}
		long left = (long)(abstime->tv_sec - now.tv_sec) * NS_PER_S +
			    (abstime->tv_nsec - now.tv_nsec);
		struct timespec d = {0, left < nap ? left : nap};
		nanosleep(&d, NULL);
		if (nap < 1000000)
			nap *= 2;
	}
	locus_acquired(sh, me, 1, t0);
	return 0;
}

/* ---- glibc's mutexes, profiled ------------------------------------------ */

/* Only a recursive mutex can be locked again by its owner. */
static int relock(const struct lp_shadow *sh, pthread_t me)
{
	return sh->label == LP_RECURSIVE && ld_relaxed(&sh->st.depth) > 0 &&
	       pthread_equal(ld_relaxed(&sh->owner), me);
}

static void real_acquired(struct lp_shadow *sh, pthread_t me, int contended, uint64_t t0)
{
	if (relock(sh, me)) {
		st_relaxed(&sh->st.depth, sh->st.depth + 1);
		st_relaxed(&sh->st.acquisitions, sh->st.acquisitions + 1);
		return;
	}
	uint64_t now = ticks();
	lp_prof_acquired(sh, me, now, contended, contended ? now - t0 : 0);
	st_relaxed(&sh->owner, me);
}

/*
 * Before glibc releases the mutex. Types that check the owner
 * (recursive, error-checking, PI) are left to glibc to refuse a non-owner;
 * a normal mutex may be unlocked by any thread, as with glibc.
 * Returns 1 if the release was recorded.
 */
static int real_releasing(struct lp_shadow *sh, pthread_t me)
{
	pthread_t owner = ld_relaxed(&sh->owner);
	if (!owner)
		return 0;
	if (sh->label != LP_PTHREAD && sh->label != LP_PP && !pthread_equal(owner, me))
		return 0;
	if (sh->st.depth > 1) {
		st_relaxed(&sh->st.depth, sh->st.depth - 1);
		return 1;
	}
	lp_prof_released(sh, ticks());
	st_relaxed(&sh->owner, 0);
	return 1;
}

static int real_lock(struct lp_shadow *sh, pthread_mutex_t *m)
{
	pthread_t me = pthread_self();
	if (lp_real.mutex_trylock(m) == 0) {
		real_acquired(sh, me, 0, 0);
		return 0;
	}
	uint64_t t0 = ticks();
	int rc = lp_real.mutex_lock(m);
	if (rc == 0)
		real_acquired(sh, me, 1, t0);
	return rc;
}

static int real_timed(struct lp_shadow *sh, pthread_mutex_t *m, int clocked, clockid_t clk,
		      const struct timespec *abstime)
{
	pthread_t me = pthread_self();
	if (lp_real.mutex_trylock(m) == 0) {
		real_acquired(sh, me, 0, 0);
		return 0;
	}
	uint64_t t0 = ticks();
	int rc = clocked ? lp_real.mutex_clocklock(m, clk, abstime)
			 : lp_real.mutex_timedlock(m, abstime);
	if (rc == 0)
		real_acquired(sh, me, 1, t0);
	else if (rc == ETIMEDOUT)
		faa_relaxed(&sh->st.try_busy, 1);
	return rc;
}

/* ---- dispatch ----------------------------------------------------------- */

/*
 * The shadow to use for m, or NULL for "glibc's function, unprofiled"
 * (pass-through, untracked types, types glibc keeps when not profiling, or
 * the arena exhausted). *label says which kind of shadow it is.
 */
static struct lp_shadow *shadow_for(pthread_mutex_t *m, void *caller, uint32_t *label)
{
	if (lp_cfg.mode == LP_PASS)
		return NULL;
	*label = lp_label_of(m, replacing());
	if (*label == LP_UNTRACKED || (*label != LP_LOCUS && !lp_cfg.profiling))
		return NULL;
	struct lp_shadow *sh = lp_shadow_get(m, *label, caller);
	return sh == &lp_shadow_real ? NULL : sh;
}

/* As shadow_for, without making one: for unlock, whose mutex must have one already. */
static struct lp_shadow *shadow_known(pthread_mutex_t *m, uint32_t *label)
{
	if (lp_cfg.mode == LP_PASS)
		return NULL;
	*label = lp_label_of(m, replacing());
	if (*label == LP_UNTRACKED || (*label != LP_LOCUS && !lp_cfg.profiling))
		return NULL;
	struct lp_shadow *sh = lp_shadow_peek(m, *label);
	return sh == &lp_shadow_real ? NULL : sh;
}

int lp_mutex_lock(pthread_mutex_t *m, void *caller)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	uint32_t label;
	struct lp_shadow *sh = shadow_for(m, caller, &label);
	if (!sh)
		return lp_real.mutex_lock(m);
	if (label == LP_LOCUS) {
		locus_acquire(sh);
		return 0;
	}
	return real_lock(sh, m);
}

int lp_mutex_trylock(pthread_mutex_t *m, void *caller)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	uint32_t label;
	struct lp_shadow *sh = shadow_for(m, caller, &label);
	if (!sh)
		return lp_real.mutex_trylock(m);
	if (label == LP_LOCUS)
		return locus_try(sh);
	int rc = lp_real.mutex_trylock(m);
	if (rc == 0)
		real_acquired(sh, pthread_self(), 0, 0);
	else if (rc == EBUSY)
		faa_relaxed(&sh->st.try_busy, 1);
	return rc;
}

static int timed(pthread_mutex_t *m, int clocked, clockid_t clk, const struct timespec *abstime,
		 void *caller)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	uint32_t label;
	struct lp_shadow *sh = shadow_for(m, caller, &label);
	if (!sh) {
		if (!clocked)
			return lp_real.mutex_timedlock(m, abstime);
		return lp_real.mutex_clocklock ? lp_real.mutex_clocklock(m, clk, abstime) : EINVAL;
	}
	if (label == LP_LOCUS)
		return locus_timed(sh, clk, abstime);
	if (clocked && !lp_real.mutex_clocklock)
		return EINVAL;
	return real_timed(sh, m, clocked, clk, abstime);
}

int lp_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime, void *caller)
{
	return timed(m, 0, CLOCK_REALTIME, abstime, caller);
}

int lp_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime,
		       void *caller)
{
	if (!valid_clock(clk))
		return EINVAL;
	return timed(m, 1, clk, abstime, caller);
}

int lp_mutex_unlock(pthread_mutex_t *m)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode == LP_PASS)
		return lp_real.mutex_unlock(m);
	uint32_t label = lp_label_of(m, replacing());
	if (label == LP_LOCUS) {
		struct lp_shadow *sh = lp_shadow_peek(m, LP_LOCUS);
		if (!sh)
			return EPERM; /* never locked */
		if (sh == &lp_shadow_real)
			return lp_real.mutex_unlock(m);
		return locus_release(sh);
	}
	if (label != LP_UNTRACKED && lp_cfg.profiling) {
		struct lp_shadow *sh = lp_shadow_peek(m, label);
		if (sh && sh != &lp_shadow_real)
			real_releasing(sh, pthread_self());
	}
	return lp_real.mutex_unlock(m);
}

/*
 * A mutex used as a locus lock never had glibc's fields touched, so glibc's
 * destroy accepts it (and marks __kind invalid, as for any mutex). Destroying
 * a held one is refused with EBUSY, as glibc does.
 */
int lp_mutex_destroy(pthread_mutex_t *m)
{
	if (lp_unlikely(!lp_ready()))
		return 0;
	if (lp_cfg.mode == LP_PASS)
		return lp_real.mutex_destroy(m);
	uint32_t label = lp_label_of(m, replacing());
	if (label == LP_UNTRACKED)
		return lp_real.mutex_destroy(m);
	if (label == LP_LOCUS) {
		struct lp_shadow *sh = lp_shadow_peek(m, LP_LOCUS);
		if (sh && sh != &lp_shadow_real && ld_relaxed(&sh->owner))
			return EBUSY;
		lp_shadow_detach(m);
		return lp_real.mutex_destroy(m);
	}
	int rc = lp_real.mutex_destroy(m);
	if (rc == 0)
		lp_shadow_detach(m);
	return rc;
}

/*
 * Initializing a mutex whose bytes still hold a valid shadow (memory reused
 * without destroy) recycles that shadow; glibc's init then clears the bytes.
 * From inside our own configuration (see config.c) glibc's function is not
 * known yet: set the bytes as glibc would for the attribute's type.
 */
int lp_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	if (lp_unlikely(!lp_ready())) {
		int type = PTHREAD_MUTEX_NORMAL;
		if (attr)
			pthread_mutexattr_gettype(attr, &type);
		memset(m, 0, sizeof(*m));
		m->__data.__kind = type;
		return 0;
	}
	if (lp_cfg.mode != LP_PASS)
		lp_shadow_detach(m);
	return lp_real.mutex_init(m, attr);
}

/* ---- around glibc's condition variables (profile-only mode) ------------- */

struct lp_shadow *lp_mutex_wait_begin(pthread_mutex_t *m)
{
	uint32_t label;
	struct lp_shadow *sh = shadow_known(m, &label);
	if (!sh || label == LP_LOCUS)
		return NULL;
	return real_releasing(sh, pthread_self()) ? sh : NULL;
}

void lp_mutex_wait_end(struct lp_shadow *sh)
{
	if (sh)
		real_acquired(sh, pthread_self(), 0, 0);
}
