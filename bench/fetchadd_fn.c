/*
 * The fetchadd critical sections, alone in their file because it is compiled
 * with -fgnu-tm -DLOCUS_TM when locus has stm: LOCUS_TM_CALLABLE then gives
 * them transactional clones, so stm:* runs them as real, instrumented
 * transactions instead of serially. The other bench files need no -fgnu-tm.
 *
 * The file is also compiled with -fno-math-errno. With errno semantics GCC
 * turns sqrt() into the sqrtsd instruction plus a call to libm's sqrt for
 * negative inputs (to set errno), and that call, not transaction-safe, makes
 * the transactional clone switch to serial-irrevocable mode at its entry
 * (_ITM_changeTransactionMode), on every call. Without errno sqrt is the bare
 * instruction and the clone stays an ordinary instrumented transaction. The
 * value is never negative, so errno would never have been set anyway.
 */
#include "fetchadd.h"

#include <math.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "locus/fn.h"

LOCUS_TM_CALLABLE uint64_t fetchadd_inc(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct fetchadd_slot *s = state;

	(void)b;
	(void)c;
	s->v += a;
	return s->v;
}

LOCUS_TM_CALLABLE uint64_t fetchadd_slow(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct fetchadd_slot *s = state;
	uint64_t t0 = mono_ns();

	(void)c;
	s->v += a;
	while (mono_ns() - t0 < b)
		cpu_relax();
	return s->v;
}

/* Stored in the slot, so the compiler cannot drop the square root. */
LOCUS_TM_CALLABLE uint64_t fetchadd_sqrt(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct fetchadd_slot *s = state;

	(void)b;
	(void)c;
	s->v += a;
	s->aux = sqrt((double)s->v);
	return s->v;
}

void fetchadd_sqrt_after(struct fetchadd_slot *slot, uint64_t v)
{
	double root = sqrt((double)v);

	/* Other threads store it too: relaxed atomic, so the store is not a data race. */
	st_relaxed_from(&slot->aux, &root);
}
