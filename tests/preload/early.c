/*
 * Shared library linked into preload_prog. Libraries' constructors run
 * dependencies first, and a preloaded library comes after the program's own
 * libraries in that order, so this constructor runs before
 * liblocus-preload's: its mutex is used before the preload library's
 * constructor has run, and must behave the same afterwards (it is left
 * locked here and unlocked by main).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <time.h>

#include "early.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cm;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int result = -1;

int early_result(void)
{
	return result;
}

pthread_mutex_t *early_mutex(void)
{
	return &m;
}

__attribute__((constructor)) static void early_init(void)
{
	result = 1;
	if (pthread_mutex_init(&cm, NULL) != 0 || pthread_mutex_lock(&cm) != 0)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 1000000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	int rc;
	while ((rc = pthread_cond_timedwait(&c, &cm, &ts)) == 0)
		;
	result = 2;
	if (rc != ETIMEDOUT || pthread_mutex_unlock(&cm) != 0)
		return;
	result = 3;
	if (pthread_mutex_trylock(&m) != 0)
		return;
	result = 0;
}
