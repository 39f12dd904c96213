/*
 * The exported names: what LD_PRELOAD puts in front of glibc's. Each passes
 * its caller's return address along (the profile's "first locked at").
 *
 * They are unversioned, so they satisfy the program's versioned references
 * (pthread_mutex_lock@GLIBC_2.2.5, pthread_cond_wait@GLIBC_2.3.2, ...);
 * exports.map keeps everything else in this library local.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "preload.h"

#define CALLER __builtin_return_address(0)

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	return lp_mutex_init(m, attr);
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
	return lp_mutex_destroy(m);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	return lp_mutex_lock(m, CALLER);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return lp_mutex_trylock(m, CALLER);
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	return lp_mutex_timedlock(m, abstime, CALLER);
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clk, const struct timespec *abstime)
{
	return lp_mutex_clocklock(m, clk, abstime, CALLER);
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return lp_mutex_unlock(m);
}

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	return lp_cond_init(c, attr);
}

int pthread_cond_destroy(pthread_cond_t *c)
{
	return lp_cond_destroy(c);
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return lp_cond_wait(c, m, CALLER);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime)
{
	return lp_cond_timedwait(c, m, abstime, CALLER);
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
			   const struct timespec *abstime)
{
	return lp_cond_clockwait(c, m, clk, abstime, CALLER);
}

int pthread_cond_signal(pthread_cond_t *c)
{
	return lp_cond_signal(c);
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
	return lp_cond_broadcast(c);
}

/* Configure early if nobody locked anything yet, so that an unknown
   LOCUS_LOCK is reported and the profile signal is armed from the start. */
__attribute__((constructor)) static void lp_start(void)
{
	lp_ready();
}

__attribute__((destructor)) static void lp_finish(void)
{
	lp_profile_report();
}
