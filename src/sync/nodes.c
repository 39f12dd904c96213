#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "sync/fatal.h"
#include "sync/nodes.h"
#include "sync/thread_exit.h"

LOCUS_TLS struct locus_qnode *qnode_pool;

/* At thread exit (thread_exit.h): every node still in the pool is free and unreferenced. */
static void pool_release(void)
{
	struct locus_qnode *n = qnode_pool;
	qnode_pool = NULL;
	while (n) {
		struct locus_qnode *next = n->next;
		free(n);
		n = next;
	}
}

struct locus_qnode *qnode_alloc(void)
{
	sync_exit_arm(EXIT_QNODES, pool_release);
	/* A lock cannot report failure from lock(); out of memory is fatal. */
	return sync_aligned_zalloc(LOCUS_CACHELINE, sizeof(struct locus_qnode), "lock queue node");
}

void qnode_free(struct locus_qnode *n)
{
	free(n);
}

struct locus_qnode *qnode_wait_next(struct locus_qnode *n)
{
	struct locus_qnode *next;
	for (unsigned i = 0; !(next = ld_acquire(&n->next)); i++) {
		if (i < 1024)
			cpu_relax();
		else
			sched_yield();
	}
	return next;
}
