/*
 * stm: critical sections as GCC transactions (libitm). See locus/stm.h for
 * what runs concurrently and what runs serially.
 *
 * libitm picks its method from ITM_DEFAULT_METHOD when the process's first
 * transaction starts, once. locus_stm_use() therefore sets that variable and
 * remembers the choice, and refuses a different one later in the process.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/stm.h"

static const char *const methods[] = {"ml_wt", "gl_wt", "serialirr", NULL};

static pthread_mutex_t choice_mutex = PTHREAD_MUTEX_INITIALIZER;
static const char *chosen;

static const char *method_known(const char *name)
{
	for (int i = 0; methods[i]; i++)
		if (name && strcmp(name, methods[i]) == 0)
			return methods[i];
	return NULL;
}

const char *locus_stm_method(void)
{
	pthread_mutex_lock(&choice_mutex);
	const char *m = chosen;
	pthread_mutex_unlock(&choice_mutex);
	return m;
}

#ifdef LOCUS_HAVE_STM

/* Part of the transactional memory ABI that libitm implements. */
extern int _ITM_inTransaction(void) __attribute__((transaction_pure));

int locus_stm_available(void)
{
	return 1;
}

int locus_stm_mode(void)
{
	return _ITM_inTransaction();
}

uint64_t locus_stm_run(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t r;
	/* Relaxed, not atomic: fn is only known at run time, and libitm
	   decides per call whether a transactional clone exists. */
	__transaction_relaxed
	{
		r = fn(state, a, b, c);
	}
	return r;
}

#else

int locus_stm_available(void)
{
	return 0;
}

int locus_stm_mode(void)
{
	return 0;
}

uint64_t locus_stm_run(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)fn;
	(void)state;
	(void)a;
	(void)b;
	(void)c;
	fprintf(stderr, "locus: stm is not in this build\n");
	abort();
}

#endif

int locus_stm_use(const char *method, char *err, size_t errlen)
{
	const char *m = method_known(method);
	if (!m) {
		snprintf(err, errlen, "unknown stm method '%s' (known: ml_wt, gl_wt, serialirr)",
			 method ? method : "(null)");
		return -1;
	}
	if (!locus_stm_available()) {
		snprintf(err, errlen,
			 "stm is not in this build (GCC cannot combine -fgnu-tm with sanitizers)");
		return -1;
	}
	int rc = 0;
	pthread_mutex_lock(&choice_mutex);
	const char *env = getenv("ITM_DEFAULT_METHOD");
	if (chosen && chosen != m) {
		snprintf(err, errlen,
			 "stm method is process-wide: %s is in use, cannot also use %s in this "
			 "process",
			 chosen, m);
		rc = -1;
	} else if (!chosen && env && strcmp(env, m) != 0) {
		snprintf(err, errlen, "ITM_DEFAULT_METHOD=%s in the environment conflicts with %s",
			 env, m);
		rc = -1;
	} else if (!chosen) {
		setenv("ITM_DEFAULT_METHOD", m, 1);
		chosen = m;
	}
	pthread_mutex_unlock(&choice_mutex);
	return rc;
}
