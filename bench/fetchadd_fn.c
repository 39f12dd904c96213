/*
 * The fetchadd critical section, alone in its file because it is compiled
 * with -fgnu-tm -DLOCUS_TM when locus has stm: LOCUS_TM_CALLABLE then gives it
 * a transactional clone, so stm:* runs it as a real, instrumented transaction
 * instead of serially. The other bench files need no -fgnu-tm.
 */
#include "fetchadd.h"

#include "locus/fn.h"

LOCUS_TM_CALLABLE uint64_t fetchadd_inc(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct fetchadd_slot *s = state;

	(void)b;
	(void)c;
	s->v += a;
	return s->v;
}
