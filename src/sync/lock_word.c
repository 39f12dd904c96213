/*
 * Locks on one 32-bit word: tas, ttas and futex.
 *
 * The word is 0 (free), 1 (held) or 2 (held, and some waiter may be asleep).
 * A thread that decides to sleep first sets the word to 2 with an exchange,
 * and sleeps only while it is still 2; unlock exchanges in 0 and wakes one
 * sleeper if it saw 2. A wake-up cannot be lost: a sleeper is either queued in
 * the kernel before unlock's exchange (and is woken), or its futex_wait finds
 * the word no longer 2 and returns. A woken thread takes the lock by
 * exchanging in 2 again (it cannot know whether others still sleep), which
 * costs at worst one unnecessary wake later.
 *
 * The three differ only in how they spin before sleeping: tas exchanges in a
 * loop, ttas reads until the word is free and backs off exponentially after a
 * failed exchange, futex spins reading like ttas but without backoff and with
 * a compare-and-swap, the usual futex mutex.
 */
#include <errno.h>

#include "common/atomic.h"
#include "common/futex.h"
#include "sync/lock_impl.h"

void word_init(locus_lock *l)
{
	l->u.word = 0;
}

/* Sleep until we own the word; called after the spin phase gave up. */
static void word_park(locus_lock *l)
{
	while (xchg_acquire(&l->u.word, 2) != 0)
		futex_wait(&l->u.word, 2);
}

/*
 * One test-and-set attempt. Exchanging in 1 can overwrite a 2 and so hide the
 * sleepers from unlock; when that happens the 2 is put back at once, and if
 * the lock was freed in between, this thread now holds it with the word at 2,
 * so its own unlock does the wake.
 */
static int word_grab(locus_lock *l)
{
	uint32_t old = xchg_acquire(&l->u.word, 1);
	if (old == 2)
		old = xchg_acquire(&l->u.word, 2);
	return old == 0;
}

static int policy_spins_forever(const locus_lock *l)
{
	return l->wait.kind == LOCUS_WAIT_SPIN;
}

static uint32_t policy_budget(const locus_lock *l)
{
	return l->wait.kind == LOCUS_WAIT_PARK ? 0 : l->wait.spins;
}

void tas_lock(locus_lock *l)
{
	if (word_grab(l))
		return;
	uint32_t budget = policy_budget(l);
	for (uint32_t i = 0; policy_spins_forever(l) || i < budget; i++) {
		cpu_relax();
		if (word_grab(l))
			return;
	}
	word_park(l);
}

void ttas_lock(locus_lock *l)
{
	if (word_grab(l))
		return;
	uint32_t budget = policy_budget(l);
	uint32_t backoff = 1, spent = 0;
	while (policy_spins_forever(l) || spent < budget) {
		if (ld_relaxed(&l->u.word) == 0) {
			if (word_grab(l))
				return;
			/* Lost the race: let the winner's line settle before retrying. */
			for (uint32_t i = 0; i < backoff; i++)
				cpu_relax();
			spent += backoff;
			if (backoff < l->backoff_max)
				backoff <<= 1;
		} else {
			cpu_relax();
			spent++;
		}
	}
	word_park(l);
}

void futex_lock(locus_lock *l)
{
	uint32_t expected = 0;
	if (cas_acquire(&l->u.word, &expected, 1))
		return;
	uint32_t budget = policy_budget(l);
	for (uint32_t i = 0; policy_spins_forever(l) || i < budget; i++) {
		cpu_relax();
		expected = 0;
		if (ld_relaxed(&l->u.word) == 0 && cas_acquire(&l->u.word, &expected, 1))
			return;
	}
	word_park(l);
}

int word_trylock(locus_lock *l)
{
	uint32_t expected = 0;
	return cas_acquire(&l->u.word, &expected, 1) ? 0 : EBUSY;
}

void word_unlock(locus_lock *l)
{
	if (xchg_release(&l->u.word, 0) == 2)
		futex_wake(&l->u.word, 1);
}
