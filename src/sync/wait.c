#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "locus/wait.h"

locus_wait locus_wait_default(void)
{
	locus_wait w = {.kind = LOCUS_WAIT_SPINPARK, .spins = LOCUS_WAIT_SPINS_DEFAULT};
	return w;
}

int locus_wait_option(locus_wait *w, const char *opt)
{
	if (strcmp(opt, "spin") == 0) {
		w->kind = LOCUS_WAIT_SPIN;
		return 1;
	}
	if (strcmp(opt, "park") == 0) {
		w->kind = LOCUS_WAIT_PARK;
		return 1;
	}
	if (strcmp(opt, "spinpark") == 0) {
		w->kind = LOCUS_WAIT_SPINPARK;
		return 1;
	}
	if (strncmp(opt, "spins=", 6) == 0)
		return parse_num_u32(opt + 6, 0, UINT32_MAX, &w->spins) == 0 ? 1 : -1;
	return 0;
}

const char *locus_wait_name(const locus_wait *w)
{
	switch (w->kind) {
	case LOCUS_WAIT_SPIN:
		return "spin";
	case LOCUS_WAIT_PARK:
		return "park";
	default:
		return "spinpark";
	}
}
