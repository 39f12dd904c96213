/* The protocol table: LOCUS_DSM_PROTOCOL names one of these at run time. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const struct dsm_proto *const protocols[] = {
	&dsm_proto_sc,
	&dsm_proto_lrc,
	&dsm_proto_avr,
};

#define NPROTOCOLS (sizeof(protocols) / sizeof(protocols[0]))

const struct dsm_proto *dsm_proto_at(size_t i)
{
	return i < NPROTOCOLS ? protocols[i] : NULL;
}

int dsm_proto_config_all(void)
{
	for (size_t i = 0; i < NPROTOCOLS; i++)
		if (protocols[i]->config && protocols[i]->config() != 0)
			return -1;
	return 0;
}

const struct dsm_proto *dsm_proto_find(const char *name)
{
	for (size_t i = 0; i < NPROTOCOLS; i++)
		if (!strcmp(protocols[i]->name, name))
			return protocols[i];
	return NULL;
}

/* Like a file system's read-ahead, over a few walks at once (a sweep reads
   one array and writes another): a miss that continues a walk (it falls
   within what that walk's previous miss fetched, or just after: the page in
   between may have needed no fetch) doubles its window, up to cfg.run pages;
   any other miss starts a walk of its own, one page, in the place of the walk
   missed longest ago. A halo row of three pages costs two misses and
   fetches nothing it does not read; a long walk soon fetches cfg.run pages
   per miss. It never goes past the pages allocated so far (dsm_walk_end). */
size_t dsm_walk(struct dsm_walks *ws, size_t p)
{
	struct dsm_walk *w = ws->w;
	int k, oldest = 0;
	for (k = 0; k < DSM_WALKS; k++) {
		if (w[k].win && p > w[k].last && p - w[k].last <= w[k].win + 1)
			break;
		if (w[k].used < w[oldest].used)
			oldest = k;
	}
	if (k < DSM_WALKS) {
		w[k].win = w[k].win * 2 < dsm.cfg.run ? w[k].win * 2 : dsm.cfg.run;
	} else {
		k = oldest;
		w[k].win = 1;
	}
	w[k].last = p;
	w[k].used = ++ws->clock;
	size_t end = dsm_walk_end(p);
	if (p >= end)
		return 0;
	return w[k].win - 1 < end - p - 1 ? w[k].win - 1 : end - p - 1;
}

size_t dsm_run_ahead(size_t p)
{
	static struct dsm_walks misses; /* communication thread only */
	return dsm_walk(&misses, p);
}

const char *dsm_proto_names(void)
{
	static char names[64];
	if (!names[0])
		for (size_t i = 0, at = 0; i < NPROTOCOLS && at < sizeof(names); i++)
			at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s",
					       i ? ", " : "", protocols[i]->name);
	return names;
}
