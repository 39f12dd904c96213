#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sync/fatal.h"
#include "sync/nodes.h"

/* Free nodes of this thread, linked through ->next. */
static __thread struct locus_qnode *pool;
static __thread int pool_registered;
static pthread_key_t pool_key;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

/* Runs at thread exit: every node still in the pool is free and unreferenced. */
static void pool_release(void *unused)
{
	(void)unused;
	struct locus_qnode *n = pool;
	pool = NULL;
	while (n) {
		struct locus_qnode *next = n->next;
		free(n);
		n = next;
	}
}

static void pool_key_create(void)
{
	pthread_key_create(&pool_key, pool_release);
}

static void pool_register(void)
{
	pthread_once(&pool_once, pool_key_create);
	/* Any non-NULL value makes the destructor run at thread exit. */
	pthread_setspecific(pool_key, (void *)1);
	pool_registered = 1;
}

struct locus_qnode *qnode_get(void)
{
	struct locus_qnode *n = pool;
	if (n) {
		pool = n->next;
		return n;
	}
	if (!pool_registered)
		pool_register();
	/* A lock cannot report failure from lock(); out of memory is fatal. */
	return sync_aligned_zalloc(64, sizeof(*n), "lock queue node");
}

void qnode_put(struct locus_qnode *n)
{
	n->next = pool;
	pool = n;
}

void qnode_free(struct locus_qnode *n)
{
	free(n);
}
