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

const char *dsm_proto_names(void)
{
	return "sc, lrc";
}
