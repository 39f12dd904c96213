/*
 * CC-Synch (Fatourou, Kallimanis, PPoPP 2012): combining over a queue.
 *
 * The queue always ends in a node without a request. A thread swaps a fresh
 * node in as the new tail, writes its request into the node it got back (the
 * old tail), links it to the fresh node, and waits on the old tail's flag.
 * The flag says DONE (a combiner ran the request; the result is in the node)
 * or COMBINE (this thread is now the combiner). A combiner walks the queue
 * from its own node, running each request whose successor link is set (so the
 * request is complete), up to `pass` of them; then it gives the combiner role
 * to the node where it stopped. If that node has no request yet, its owner is
 * a thread that has not arrived: it finds COMBINE at once.
 *
 * A combiner reads a node's link before releasing the node, and never touches
 * it afterwards, so a released thread may recycle its node immediately; the
 * thread keeps the old tail as its spare (nodes.h).
 *
 * Why a sleeping waiter cannot miss its wake-up (flag.h has it in full): the
 * waiter announces that it will sleep by a CAS from WAIT to PARKED on its
 * flag, and the releaser writes its value with an exchange on the same word.
 * Whichever comes second sees the other: a failed CAS means the value is
 * already there, so the waiter does not sleep; an exchange that returns
 * PARKED makes the releaser call futex_wake, and the kernel's futex_wait
 * sleeps only while the word still reads PARKED. After the exchange the
 * releaser touches the flag only by address, so the waiter may reuse it.
 */
#include <errno.h>

#include "common/atomic.h"
#include "sync/combine_impl.h"
#include "sync/flag.h"
#include "sync/nodes.h"

enum { CC_DONE = 0, CC_COMBINE = 1 };

static struct ccsynch *ccsynch_of(locus_ccsynch *s)
{
	return (struct ccsynch *)(void *)s;
}

int ccsynch_init(struct ccsynch *s, const locus_wait *wait, uint32_t pass)
{
	struct locus_qnode *dummy = qnode_get();
	dummy->next = NULL;
	dummy->flag = CC_COMBINE;
	s->tail = dummy;
	s->pass = pass ? pass : LOCUS_COMBINE_PASS_DEFAULT;
	s->wait = wait ? *wait : locus_wait_default();
	return 0;
}

void ccsynch_destroy(struct ccsynch *s)
{
	qnode_free(s->tail);
	s->tail = NULL;
}

/* Run requests from `mine` on; return after handing the combiner role on. */
static void combine(struct ccsynch *s, struct locus_qnode *mine)
{
	struct locus_qnode *n = mine;
	for (uint32_t done = 0; done < s->pass; done++) {
		struct locus_qnode *next = ld_acquire(&n->next);
		if (!next)
			break;
		n->ret = n->fn(n->state, n->a, n->b, n->c);
		if (n != mine)
			flag_release(&n->flag, CC_DONE);
		n = next;
	}
	flag_release(&n->flag, CC_COMBINE);
}

uint64_t ccsynch_combine(struct ccsynch *s, locus_fn fn, void *state, uint64_t a, uint64_t b,
			 uint64_t c)
{
	struct locus_qnode *fresh = qnode_get();
	fresh->next = NULL;
	flag_arm(&fresh->flag);
	struct locus_qnode *mine = xchg_acqrel(&s->tail, fresh);
	mine->fn = fn;
	mine->state = state;
	mine->a = a;
	mine->b = b;
	mine->c = c;
	st_release(&mine->next, fresh);
	if (flag_wait(&mine->flag, &s->wait) == CC_COMBINE)
		combine(s, mine);
	uint64_t r = mine->ret;
	qnode_put(mine);
	return r;
}

/* The public API: the same on the struct ccsynch in a locus_ccsynch's bytes. */

int locus_ccsynch_init(locus_ccsynch *s, const locus_wait *wait, uint32_t pass)
{
	return ccsynch_init(ccsynch_of(s), wait, pass);
}

uint64_t locus_ccsynch_run(locus_ccsynch *s, locus_fn fn, void *state, uint64_t a, uint64_t b,
			   uint64_t c)
{
	return ccsynch_combine(ccsynch_of(s), fn, state, a, b, c);
}

void locus_ccsynch_destroy(locus_ccsynch *s)
{
	ccsynch_destroy(ccsynch_of(s));
}
