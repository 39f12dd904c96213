/*
 * Queue nodes for MCS, CLH and CC-Synch, from a per-thread pool.
 *
 * Nodes migrate: a CLH or CC-Synch thread gives its node to the queue and
 * takes back another thread's. Each thread keeps the free nodes it holds in a
 * private list and frees them when it exits; a node in a queue belongs to the
 * queue (the lock frees its last node at destroy). So there is no per-lock
 * array of nodes and no limit on the number of threads.
 */
#ifndef LOCUS_SYNC_NODES_H
#define LOCUS_SYNC_NODES_H

#include <stdint.h>

#include "common/tls.h"
#include "locus/fn.h"

/* One cache line per node, so a waiter spinning on its node shares it with no one. */
struct locus_qnode {
	uint32_t flag; /* flag.h states, or a release value */
	uint32_t pad0;
	struct locus_qnode *next; /* mcs, ccsynch: successor in the queue */
	/* ccsynch: the request carried by this node */
	locus_fn fn;
	void *state;
	uint64_t a, b, c;
	uint64_t ret;
} __attribute__((aligned(LOCUS_CACHELINE)));

/* Free nodes of this thread, linked through ->next (nodes.c). */
extern LOCUS_TLS struct locus_qnode *qnode_pool;

/* The pool is empty: a new node (out of memory is fatal). */
struct locus_qnode *qnode_alloc(void);

/* Inline: a queue lock takes a node at every lock and gives it back at every unlock. */
static inline struct locus_qnode *qnode_get(void)
{
	struct locus_qnode *n = qnode_pool;
	if (__builtin_expect(n != NULL, 1)) {
		qnode_pool = n->next;
		return n;
	}
	return qnode_alloc();
}

static inline void qnode_put(struct locus_qnode *n)
{
	n->next = qnode_pool;
	qnode_pool = n;
}
/* Free a node that no thread's pool holds (e.g. a lock's last node). */
void qnode_free(struct locus_qnode *n);

/*
 * In an MCS-style queue, the successor of n once it has linked itself: one
 * that has swapped itself into the tail is a few instructions away from doing
 * so, unless it was preempted, so this spins briefly, then yields the CPU.
 */
struct locus_qnode *qnode_wait_next(struct locus_qnode *n);

#endif
