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
/* Walks also go by columns: a program reading or writing a column
   of a row-major array (Splash-3's fft transposes, its rows 8 pages and a
   word long) misses a page a row, a stride apart, down or up, often several
   columns at once. A miss that starts a walk within STRIDE_MAX pages of a
   one-page walk notes its distance to it (seen); the same distance again
   from that walk, give or take a page (rows are seldom a whole number of
   pages), makes the walk a column of the smaller of the two, which then
   grows as any walk does: a miss continues it a whole number of steps on
   (or a page more), within its window. The walk a miss continues nearest
   takes it (a column reaches far); a miss between a column's steps ends the
   column; a miss on a walk's last page changes nothing. */
#define STRIDE_MAX 64

#define DSM_WALKS 8
struct dsm_walks {
	struct dsm_walk {
		size_t last, win;
		ptrdiff_t step, seen; /* seen: the last distance to a miss near a one-page walk */
		uint64_t used;
	} w[DSM_WALKS];
	uint64_t clock;
};

static size_t walk(struct dsm_walks *ws, size_t p, ptrdiff_t *step)
{
	struct dsm_walk *w = ws->w;
	int k, near = -1, oldest = 0, best = -1;
	ptrdiff_t best_d = 0;
	*step = 1;
	for (k = 0; k < DSM_WALKS; k++)
		if (w[k].win && w[k].last == p)
			return 0; /* again (a read miss, then the write): nothing new */
	for (k = 0; k < DSM_WALKS; k++) {
		ptrdiff_t s = w[k].step, d = (ptrdiff_t)p - (ptrdiff_t)w[k].last;
		ptrdiff_t as = s > 0 ? s : -s, ad = d > 0 ? d : -d, off = ad % (as ? as : 1);
		int along = w[k].win && (d > 0) == (s > 0);
		if (along && ad <= (ptrdiff_t)w[k].win * as + 1 &&
		    (as == 1 || (ad >= as && off <= 1)) && (best < 0 || ad < best_d)) {
			best = k;
			best_d = ad;
		}
		if (along && as > 1 && ad < as)
			w[k].win = 0; /* between a column's steps */
		if (w[k].win == 1 && d >= -STRIDE_MAX && d <= STRIDE_MAX &&
		    (near < 0 || w[k].used > w[near].used))
			near = k;
		if (w[k].used < w[oldest].used)
			oldest = k;
	}
	ptrdiff_t d = near >= 0 ? (ptrdiff_t)p - (ptrdiff_t)w[near].last : 0;
	ptrdiff_t e = near >= 0 ? d - w[near].seen : 0;
	if (best >= 0) {
		k = best;
		w[k].win = w[k].win * 2 < dsm.cfg.run ? w[k].win * 2 : dsm.cfg.run;
	} else if (near >= 0 && w[near].seen && (d > 0) == (w[near].seen > 0) && e >= -1 &&
		   e <= 1 && (d > 1 || d < -1)) {
		k = near; /* the same distance twice: a column */
		w[k].step = e > 0 ? w[k].seen : d;
		w[k].win = 2 < dsm.cfg.run ? 2 : dsm.cfg.run;
	} else {
		k = oldest; /* a walk of its own; near's stays for its stream */
		w[k].win = 1;
		w[k].step = 1;
		w[k].seen = d;
	}
	w[k].last = p;
	w[k].used = ++ws->clock;
	ptrdiff_t s = w[k].step;
	*step = s;
	size_t room;
	if (s > 0) {
		size_t end = dsm_walk_end(p);
		room = p < end ? (end - p - 1) / (size_t)s : 0;
	} else {
		room = (p - dsm_walk_start(p)) / (size_t)-s;
	}
	return w[k].win - 1 < room ? w[k].win - 1 : room;
}

size_t dsm_run_ahead(size_t p, int write, ptrdiff_t *step)
{
	/* Apart: a write's walk does not take the window of the walk that read
	   the same pages (Splash-3's LU reads a block, then writes it). */
	static struct dsm_walks misses[2]; /* communication thread only */
	return walk(&misses[write != 0], p, step);
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
