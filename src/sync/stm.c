/*
 * stm: critical sections as GCC transactions (libitm). See locus/stm.h for
 * what runs concurrently and what runs serially.
 *
 * libitm picks its method from ITM_DEFAULT_METHOD when the process's first
 * transaction starts, once. locus_stm_use() therefore sets that variable and
 * remembers the choice, and refuses a different one later in the process.
 *
 * Admission. locus_stm_run lets at most as many threads into transactions at
 * once as the process has CPUs (admit_default()); the others wait asleep, in
 * FIFO order, outside (the admission gate of lock_admit.c). Without it,
 * libitm's serial lock, which every irrevocable transaction takes, lets a
 * waiter lose to newcomers again and again (16 threads running 1 ms sections
 * on 2 CPUs: single transactions waited up to 1.3 s; with the gate, about
 * 50 ms), and a transaction preempted while it holds libitm's locks, or
 * before its commit, stalls the others (a commit waits for every transaction
 * older than itself to end: libitm's privatization safety). The gate is
 * process-wide because libitm is: its global clock and serial lock are shared
 * by every transaction, whichever executor runs it. A nested run (already in
 * a transaction) is part of its parent and does not pass the gate again.
 * stm_run_strict (the executor's "strict") skips the gate.
 *
 * What the gate cannot mend: that commit also reads the state of every
 * thread that has run a transaction and not exited, running or not. Measured
 * on 2 CPUs, one thread's commits ran at 48.7 million a second alone, 20.4
 * beside 6 idle threads that had each run one transaction, and 5.6 beside
 * 30. So stm slows with the number of threads that use it, whatever the gate
 * lets in.
 *
 * After fork() the child keeps the gate's count: threads that were inside in
 * the parent still count, as a lock held by another thread stays held.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "common/tls.h"
#include "locus/stm.h"
#include "sync/lock_impl.h"
#include "sync/stm_impl.h"

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

uint64_t stm_run_strict(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
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

static struct lock gate;
static pthread_once_t gate_once = PTHREAD_ONCE_INIT;

/*
 * The threads that use the gate: those that have run here and not exited
 * (a pthread key's destructor counts them out). While they are no more than
 * the gate's limit and nobody waits outside, the gate cannot keep anyone out,
 * and a run skips it: two loads instead of two atomic read-modify-writes on a
 * line every thread writes. The limit holds once a run finds more users than
 * that; runs that started before, without the gate, are not counted, so while
 * they finish there may be up to twice the limit in transactions.
 */
static uint32_t users;
static LOCUS_TLS int is_user;
static pthread_key_t user_key;

static void user_gone(void *unused)
{
	(void)unused;
	faa_seqcst(&users, (uint32_t)-1);
}

/* The child of a fork has one thread: the one that forked. */
static void users_after_fork(void)
{
	st_relaxed(&users, is_user ? 1u : 0u);
}

static void gate_init(void)
{
	admit_gate_init(&gate, NULL, 0);
	if (pthread_key_create(&user_key, user_gone) != 0 ||
	    pthread_atfork(NULL, NULL, users_after_fork) != 0) {
		/* Without them users only grows: the gate is then never skipped. */
		st_relaxed(&users, UINT32_MAX / 2);
	}
}

static void user_begin(void)
{
	pthread_once(&gate_once, gate_init);
	is_user = 1;
	faa_seqcst(&users, 1);
	/* The main thread's value is never destroyed: it counts until exit. */
	pthread_setspecific(user_key, &is_user);
}

uint32_t stm_gate_users(void)
{
	return ld_seqcst(&users);
}

uint64_t locus_stm_run(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
{
	if (_ITM_inTransaction())
		return stm_run_strict(fn, state, a, b, c);
	if (__builtin_expect(!is_user, 0))
		user_begin();
	if (ld_relaxed(&users) <= gate.admit && !ld_relaxed(&gate.adm.tail))
		return stm_run_strict(fn, state, a, b, c);
	admit_gate_enter(&gate);
	uint64_t r = stm_run_strict(fn, state, a, b, c);
	admit_gate_leave(&gate);
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
	return stm_run_strict(fn, state, a, b, c);
}

uint32_t stm_gate_users(void)
{
	return 0;
}

uint64_t stm_run_strict(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c)
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
