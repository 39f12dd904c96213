/*
 * Ticket lock: take a number, wait until it is served. FIFO.
 *
 * Sleepers announce themselves in `parked` before their last look at the
 * owner, and unlock publishes the new owner before it reads `parked`; both
 * sides use sequentially consistent operations, so either the sleeper sees
 * its turn or unlock sees the sleeper and wakes it. Only the thread whose
 * ticket is next can proceed, so unlock wakes every sleeper: with many
 * sleepers that is a thundering herd, which is the price of FIFO order under
 * parking (see mcs and clh for queue locks that wake exactly one thread).
 */
#include <errno.h>

#include "common/atomic.h"
#include "common/futex.h"
#include "sync/lock_impl.h"

#define NEXT_ONE (1ull << 32)

/* Tickets out: the holder and its waiters. */
static uint32_t ticket_out(uint64_t both)
{
	return (uint32_t)(both >> 32) - (uint32_t)both;
}

/* Admission (lock_admit.c): the tickets out are the count of those admitted,
   so a thread let in takes a ticket and that is all. */
static int ticket_enter(struct lock *l, int forced)
{
	return forced || ticket_out(ld_seqcst(&l->u.ticket.t.both)) < l->admit;
}

void ticket_init(struct lock *l)
{
	l->u.ticket.t.both = 0;
	l->u.ticket.parked = 0;
}

static void ticket_park(struct lock *l, uint32_t my)
{
	faa_seqcst(&l->u.ticket.parked, 1);
	for (;;) {
		uint32_t owner = ld_seqcst(&l->u.ticket.t.half.owner);
		if (owner == my)
			break;
		futex_wait(&l->u.ticket.t.half.owner, owner);
	}
	fas_seqcst(&l->u.ticket.parked, 1);
}

void ticket_lock(struct lock *l)
{
	if (!(l->flags & LOCK_STRICT)) {
		/* Ask for the line in exclusive state: a plain load would fetch it
		   shared and the add below fetch it again. */
		prefetch_write(&l->u.ticket.t.both);
		if (ticket_out(ld_relaxed(&l->u.ticket.t.both)) >= l->admit)
			admit_wait(l, ticket_enter);
	}
	uint64_t old = faa_acqrel(&l->u.ticket.t.both, NEXT_ONE);
	uint32_t my = (uint32_t)(old >> 32);
	if ((uint32_t)old == my)
		return;
	lock_hook(l, LOCK_HOOK_QUEUE);
	if (l->wait.kind == LOCUS_WAIT_SPIN) {
		while (ld_acquire(&l->u.ticket.t.half.owner) != my)
			cpu_relax();
		return;
	}
	if (l->wait.kind == LOCUS_WAIT_SPINPARK) {
		for (uint32_t i = 0; i < l->wait.spins; i++) {
			if (ld_acquire(&l->u.ticket.t.half.owner) == my)
				return;
			cpu_relax();
		}
	}
	ticket_park(l, my);
}

int ticket_trylock(struct lock *l)
{
	uint64_t w = ld_relaxed(&l->u.ticket.t.both);
	if ((uint32_t)w != (uint32_t)(w >> 32))
		return EBUSY;
	return cas_acquire(&l->u.ticket.t.both, &w, w + NEXT_ONE) ? 0 : EBUSY;
}

void ticket_unlock(struct lock *l)
{
	int admit = !(l->flags & LOCK_STRICT), due = admit && admit_due(l);
	uint32_t owner = ld_relaxed(&l->u.ticket.t.half.owner);
	st_seqcst(&l->u.ticket.t.half.owner, owner + 1);
	if (ld_seqcst(&l->u.ticket.parked) != 0)
		futex_wake(&l->u.ticket.t.half.owner, FUTEX_WAKE_ALL);
	/* The head first, the tickets only if one is published: loading the
	   word just after the exchange above stalls as long as the exchange
	   itself (a third of an uncontended lock and unlock, measured). Both
	   loads follow our store to the owner, so a waiter outside that found
	   no room is still seen by the unlock that leaves no ticket out. */
	if (admit && ld_seqcst(&l->adm.head) &&
	    (due || ticket_out(ld_seqcst(&l->u.ticket.t.both)) == 0))
		admit_grant(l);
}
