/*
 * Oyama lock (Oyama, Taura, Yonezawa 1999): combining on one word.
 *
 * The word is FREE, LOCKED, or a pointer to a stack of pending requests
 * (which also means locked). A thread that finds the lock taken pushes a
 * request — kept on its own stack, so there is no allocation per request —
 * and waits on the request's flag. The holder, before it lets go, takes the
 * whole stack with one exchange and runs every request in it, oldest first;
 * it lets go only when a CAS from LOCKED to FREE succeeds, i.e. when no
 * request is pending.
 *
 * A holder that has run `pass` requests stops combining: it takes the next
 * batch, makes its oldest request's thread the new holder (flag value OWNER,
 * with the rest of the batch attached) and returns. The lock never becomes
 * free during the hand-off, so no request is lost, and no thread combines
 * for others without bound — the starvation the seed documents.
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

#define OY_FREE	  ((uintptr_t)0)
#define OY_LOCKED ((uintptr_t)1)

enum { OY_DONE = 0, OY_OWNER = 1 };

static struct oyama *oyama_of(locus_oyama *o)
{
	return (struct oyama *)(void *)o;
}

struct oy_req {
	uint32_t flag;
	locus_fn fn;
	void *state;
	uint64_t a, b, c;
	uint64_t ret;
	struct oy_req *next; /* older request below this one on the stack */
	struct oy_req *rest; /* with OY_OWNER: requests the new holder must run */
} __attribute__((aligned(LOCUS_CACHELINE)));

int oyama_init(struct oyama *o, const locus_wait *wait, uint32_t pass)
{
	o->word = OY_FREE;
	o->pass = pass ? pass : LOCUS_COMBINE_PASS_DEFAULT;
	o->wait = wait ? *wait : locus_wait_default();
	return 0;
}

void oyama_destroy(struct oyama *o)
{
	(void)o;
}

/* The stack is newest first; run in arrival order. */
static struct oy_req *reverse(struct oy_req *r)
{
	struct oy_req *out = NULL;
	while (r) {
		struct oy_req *next = r->next;
		r->next = out;
		out = r;
		r = next;
	}
	return out;
}

/* Run a batch and release each requester; the batch is gone afterwards. */
static uint32_t run_batch(struct oy_req *r)
{
	uint32_t n = 0;
	while (r) {
		struct oy_req *next = r->next; /* r belongs to its thread once released */
		r->ret = r->fn(r->state, r->a, r->b, r->c);
		flag_release(&r->flag, OY_DONE);
		r = next;
		n++;
	}
	return n;
}

/* Called by the holder after its own section: serve, then free or hand off. */
static void serve_and_leave(struct oyama *o, uint32_t done)
{
	for (;;) {
		uintptr_t expected = OY_LOCKED;
		if (cas_release(&o->word, &expected, OY_FREE))
			return;
		struct oy_req *batch = reverse((struct oy_req *)xchg_acqrel(&o->word, OY_LOCKED));
		if (done >= o->pass) {
			batch->rest = batch->next;
			flag_release(&batch->flag, OY_OWNER);
			return;
		}
		done += run_batch(batch);
	}
}

uint64_t oyama_combine(struct oyama *o, locus_fn fn, void *state, uint64_t a, uint64_t b,
		       uint64_t c)
{
	uintptr_t cur = OY_FREE;
	if (cas_acquire(&o->word, &cur, OY_LOCKED)) {
		uint64_t r = fn(state, a, b, c);
		serve_and_leave(o, 0);
		return r;
	}
	struct oy_req req = {.fn = fn, .state = state, .a = a, .b = b, .c = c};
	flag_arm(&req.flag);
	for (;;) {
		if (cur == OY_FREE) {
			if (cas_acquire(&o->word, &cur, OY_LOCKED)) {
				uint64_t r = fn(state, a, b, c);
				serve_and_leave(o, 0);
				return r;
			}
			continue;
		}
		req.next = cur == OY_LOCKED ? NULL : (struct oy_req *)cur;
		if (cas_release(&o->word, &cur, (uintptr_t)&req))
			break;
	}
	if (flag_wait(&req.flag, &o->wait) == OY_DONE)
		return req.ret;
	/* Handed the lock: run our own section, then the rest of the batch. */
	uint64_t r = fn(state, a, b, c);
	serve_and_leave(o, 1 + run_batch(req.rest));
	return r;
}

/* The public API: the same on the struct oyama in a locus_oyama's bytes. */

int locus_oyama_init(locus_oyama *o, const locus_wait *wait, uint32_t pass)
{
	return oyama_init(oyama_of(o), wait, pass);
}

uint64_t locus_oyama_run(locus_oyama *o, locus_fn fn, void *state, uint64_t a, uint64_t b,
			 uint64_t c)
{
	return oyama_combine(oyama_of(o), fn, state, a, b, c);
}

void locus_oyama_destroy(locus_oyama *o)
{
	oyama_destroy(oyama_of(o));
}
