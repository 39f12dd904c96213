/* The protocol table: LOCUS_DSM_PROTOCOL names one of these at run time. */
#include <string.h>

#include "internal.h"

static const struct dsm_proto *const protocols[] = {
	&dsm_proto_sc,
	&dsm_proto_lrc,
};

const struct dsm_proto *dsm_proto_find(const char *name)
{
	for (size_t i = 0; i < sizeof(protocols) / sizeof(protocols[0]); i++)
		if (!strcmp(protocols[i]->name, name))
			return protocols[i];
	return NULL;
}

size_t dsm_run_ahead(size_t p)
{
	static size_t last = SIZE_MAX - 1; /* communication thread only */
	size_t prev = last;
	last = p;
	if (dsm.cfg.run <= 1 || p <= prev || p - prev > dsm.cfg.run)
		return 0;
	return dsm.cfg.run - 1;
}

const char *dsm_proto_names(void)
{
	return "sc, lrc";
}
