/*
 * The locality critical section, alone in its file because it is compiled
 * with -fgnu-tm -DLOCUS_TM when locus has stm (see fetchadd_fn.c): stm:*
 * then runs it as an instrumented transaction, and the message copy as a
 * transactional memcpy.
 */
#include <string.h>

#include "locality.h"

LOCUS_TM_CALLABLE uint64_t locality_cs(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct locality_cs_state *s = state;

	(void)c;
	if (b)
		memcpy(s->msgbuf, (const void *)(uintptr_t)a, (size_t)b);
	return walk_write(s->lines, s->n2);
}
