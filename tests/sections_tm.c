/* Compiled with -fgnu-tm -DLOCUS_TM in builds with stm (see tests/CMakeLists.txt). */
#include "sections.h"

#include "locus/fn.h"
#include "locus/stm.h"

LOCUS_TM_CALLABLE uint64_t stress_section(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct stress_state *s = state;
	struct stress_node *n = (struct stress_node *)(uintptr_t)a;

	if (s->from + s->to != s->total)
		s->torn++;
	int mode = locus_stm_mode();
	s->by_mode[mode >= 0 && mode <= 2 ? mode : 0]++;
	/* Move one unit; go back when asked and possible, or when `from` is empty. */
	if ((b && s->to > 0) || s->from == 0) {
		s->to--;
		s->from++;
	} else {
		s->from--;
		s->to++;
	}

	n->next = NULL;
	if (s->tail)
		s->tail->next = n;
	else
		s->head = n;
	s->tail = n;

	uint64_t old = s->count;
	s->count = old + 1;
	return old;
}

LOCUS_TM_CALLABLE uint64_t counter_add(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t *p = state;
	uint64_t old = *p;
	*p = old + a;
	return old;
}

LOCUS_TM_CALLABLE uint64_t mode_probe_tm(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	return (uint64_t)locus_stm_mode();
}
