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

void ticket_init(locus_lock *l)
{
	l->u.ticket.t.both = 0;
	l->u.ticket.parked = 0;
}

static void ticket_park(locus_lock *l, uint32_t my)
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

void ticket_lock(locus_lock *l)
{
	uint64_t old = faa_acqrel(&l->u.ticket.t.both, NEXT_ONE);
	uint32_t my = (uint32_t)(old >> 32);
	if ((uint32_t)old == my)
		return;
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

int ticket_trylock(locus_lock *l)
{
	uint64_t w = ld_relaxed(&l->u.ticket.t.both);
	if ((uint32_t)w != (uint32_t)(w >> 32))
		return EBUSY;
	return cas_acquire(&l->u.ticket.t.both, &w, w + NEXT_ONE) ? 0 : EBUSY;
}

void ticket_unlock(locus_lock *l)
{
	uint32_t owner = ld_relaxed(&l->u.ticket.t.half.owner);
	st_seqcst(&l->u.ticket.t.half.owner, owner + 1);
	if (ld_seqcst(&l->u.ticket.parked) != 0)
		futex_wake(&l->u.ticket.t.half.owner, FUTEX_WAKE_ALL);
}
