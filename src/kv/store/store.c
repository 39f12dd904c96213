/*
 * locus-kv's item store (store.h): its configuration, --sync, the server
 * clock, and opening and closing it. The store's parts are each in their
 * own file, one per concept, as memcached splits its storage:
 *
 *   slabs.c          the slabs section: pages, chunks, the -m limit, page moves
 *   lru.c            the alloc section: the per-class LRU lists, what to evict
 *   assoc.c          the hash sections' table: buckets, stripes, hashing
 *   items.c          the operations, each a sequence of sections
 *   crawler.c        the expiry crawler
 *   maintainer.c     the LRU maintainer: the segments kept in shape, expired items reclaimed
 *   automove.c       moving pages between classes, and when
 *   dump.c           stats cachedump and lru_crawler metadump
 *   clock.c          server time, exptime rules, flush_all marks
 *   stats_counts.c   the stats section: the global counters
 *   stats_report.c   what the store reports: stats, stats items, slabs and sync
 *   stats_prefix.c   stats detail: counts per key prefix
 *   stats_sizes.c    stats sizes: the item size histogram
 *   stats_sectime.c  --section-stats: each section's callers' time in it
 *   memfile.c        -e: the memory file, mapped
 *   restart.c        -e: what a graceful stop saves, and the cache rebuilt from it
 *
 * docs/kv.md ("Threads and sections") lists who runs which section.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/store_impl.h"

const char *const kv_section_names[KV_SECTIONS] = {"hash", "alloc", "slabs", "stats"};

static void msg(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

void kv_store_config_default(struct kv_store_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mem_limit = (size_t)64 << 20;
	c->item_size_max = (size_t)1 << 20;
	c->factor = 1.25;
	c->chunk_min = 48;
	c->delimiter = ':';
	c->crawler_sleep = 100; /* memcached's default */
	c->slab_chunk_max = KV_PAGE_SIZE / 2;
	c->stripes = 1024;
	c->hash_expand = 1;
	kv_lru_tune_default(&c->lru);
	c->lru_maintainer = 1;
	c->lru_crawler = 1;
	c->evict = 1;
	c->use_cas = 1;
	c->slab_automove = 1;
	c->automove_ratio = 0.8;
	c->automove_window = 30;
	for (int s = 0; s < KV_SECTIONS; s++)
		snprintf(c->sync[s], sizeof(c->sync[s]), "mutex");
}

/* Does p start "<section>=" or "all="? Returns the length of the name. */
static size_t section_at(const char *p)
{
	static const char *const names[] = {"hash", "alloc", "slabs", "stats", "all"};
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		size_t n = strlen(names[k]);
		if (strncmp(p, names[k], n) == 0 && p[n] == '=')
			return n;
	}
	return 0;
}

int kv_sync_parse(struct kv_store_config *c, const char *arg, char *err, size_t errlen)
{
	const char *p = arg;
	if (!*p) {
		msg(err, errlen,
		    "--sync: empty; expected section=mechanism, sections: hash, alloc, "
		    "slabs, stats, all");
		return -1;
	}
	while (*p) {
		size_t n = section_at(p);
		if (!n) {
			size_t len = strcspn(p, "=,");
			msg(err, errlen,
			    "--sync: unknown section '%.*s' in '%s'; known sections: hash, alloc, "
			    "slabs, stats, all (e.g. --sync hash=mcs,alloc=async)",
			    (int)len, p, arg);
			return -1;
		}
		const char *spec = p + n + 1;
		const char *end = spec;
		while (*end) {
			if (*end == ',' && section_at(end + 1))
				break;
			end++;
		}
		size_t slen = (size_t)(end - spec);
		if (slen == 0 || slen >= sizeof(c->sync[0])) {
			msg(err, errlen, "--sync: %s '%.*s' in '%s'",
			    slen ? "spec too long" : "no mechanism for", (int)(slen ? slen : n),
			    slen ? spec : p, arg);
			return -1;
		}
		/* Check the spec by opening (and closing) an executor. */
		char tmp[160];
		memcpy(tmp, spec, slen);
		tmp[slen] = 0;
		int dummy = 0;
		locus_cs *cs = locus_cs_open(tmp, &dummy);
		if (!cs) {
			msg(err, errlen, "--sync %.*s=%s: %s", (int)n, p, tmp, locus_cs_error());
			return -1;
		}
		locus_cs_close(cs);
		for (int s = 0; s < KV_SECTIONS; s++)
			if (strncmp(p, "all", n) == 0 || strncmp(p, kv_section_names[s], n) == 0)
				memcpy(c->sync[s], tmp, slen + 1);
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* ---------- clock ---------- */

void kv_clock_tick(kv_store *st)
{
	kv_clock_update(&st->clock);
}

void kv_clock_advance(kv_store *st, int64_t secs)
{
	faa_seqcst(&st->clock.offset, secs);
	kv_clock_update(&st->clock);
}

uint32_t kv_now(const kv_store *st)
{
	return kv_clock_now(&st->clock);
}

uint64_t kv_process_started(const kv_store *st)
{
	return st->clock.started;
}

uint32_t kv_exptime(const kv_store *st, int64_t exptime)
{
	return kv_clock_exptime(&st->clock, exptime);
}

/* ---------- open / close ---------- */

const struct kv_store_config *kv_store_config(const kv_store *st)
{
	return &st->cfg;
}

size_t kv_store_chunk_max(const kv_store *st)
{
	return st->chunk_max;
}

const char *kv_store_sync_spec(const kv_store *st, enum kv_section s)
{
	return st->spec[s];
}

static int open_section(kv_store *st, struct kv_sec *sec, enum kv_section s, void *state, char *err,
			size_t errlen)
{
	sec->kind = s;
	sec->times = st->times;
	sec->cs = locus_cs_open(st->cfg.sync[s], state);
	if (!sec->cs) {
		msg(err, errlen, "--sync %s=%s: %s", kv_section_names[s], st->cfg.sync[s],
		    locus_cs_error());
		return -1;
	}
	snprintf(st->spec[s], sizeof(st->spec[s]), "%s", locus_cs_spec(sec->cs));
	return 0;
}

/*
 * The slab allocator (on the memory file's pages with -e), the LRU lists and the hash table
 * (as large as the restarted cache's was). 0, or -1 out of memory.
 */
static int make_memory(kv_store *st)
{
	size_t region_len = 0;
	char *region = st->restart ? kv_restart_region(st, &region_len) : NULL;
	unsigned hashpower = st->cfg.hashpower;
	if (st->restart && kv_restart_hashpower(st) > hashpower)
		hashpower = kv_restart_hashpower(st);
	st->slabs = kv_slabs_new(st->cfg.mem_limit, st->cfg.item_size_max, st->cfg.factor,
				 st->cfg.chunk_min, st->chunk_max, region, region_len);
	st->lru = kv_lru_new(&st->clock, &st->cfg.lru);
	if (!st->slabs || !st->lru)
		return -1;
	if (st->cfg.initial_malloced)
		kv_slabs_count_taken(st->slabs, st->cfg.initial_malloced);
	return kv_assoc_init(&st->assoc, hashpower, st->cfg.stripes, st->cfg.hash_expand);
}

/* A restart that failed half way: everything it rebuilt thrown away, made anew, empty. */
static int remake_memory(kv_store *st)
{
	kv_assoc_destroy(&st->assoc);
	kv_lru_delete(st->lru);
	kv_slabs_delete(st->slabs);
	st->lru = NULL;
	st->slabs = NULL;
	memset(&st->counts, 0, sizeof(st->counts));
	kv_clock_init(&st->clock);
	return make_memory(st);
}

kv_store *kv_store_open(const struct kv_store_config *c, char *err, size_t errlen)
{
	/* Aligned as its members ask (the totals and the cas counter on lines of their own). */
	size_t size = (sizeof(kv_store) + LOCUS_CACHELINE - 1) / LOCUS_CACHELINE * LOCUS_CACHELINE;
	kv_store *st = aligned_alloc(LOCUS_CACHELINE, size);
	if (!st) {
		msg(err, errlen, "out of memory");
		return NULL;
	}
	memset(st, 0, size);
	st->cfg = *c;
	if (st->cfg.stripes == 0 || (st->cfg.stripes & (st->cfg.stripes - 1)))
		st->cfg.stripes = 1024;
	kv_clock_init(&st->clock);
	if (st->cfg.section_stats && !(st->times = kv_sectime_new())) {
		msg(err, errlen, "out of memory for section timing");
		goto fail;
	}
	size_t chunk_max = st->cfg.slab_chunk_max;
	if (chunk_max == 0 || chunk_max > st->cfg.item_size_max)
		chunk_max = st->cfg.item_size_max < KV_PAGE_SIZE / 2 ? st->cfg.item_size_max
								     : KV_PAGE_SIZE / 2;
	st->chunk_max = chunk_max;
	if (st->cfg.memory_file && kv_restart_begin(st, err, errlen) != 0)
		goto fail;
	st->automove = kv_automove_new(st->cfg.slab_automove, st->cfg.automove_ratio,
				       st->cfg.automove_window * KV_AUTOMOVE_HZ);
	if (!st->automove || make_memory(st) != 0) {
		msg(err, errlen, "out of memory");
		goto fail;
	}
	if (st->restart && kv_restart_finish(st, remake_memory, err, errlen) != 0)
		goto fail;
	st->prefixes = kv_prefixes_new();
	st->crawler = kv_crawler_new(st->cfg.crawler_sleep, st->cfg.crawler_tocrawl);
	st->maintainer = kv_maintainer_new();
	if (!st->prefixes || !st->crawler || !st->maintainer) {
		msg(err, errlen, "out of memory");
		goto fail;
	}
	st->delimiter = st->cfg.delimiter ? st->cfg.delimiter : ':';
	st->detail_on = st->cfg.detail;
	if (open_section(st, &st->slabs_sec, KV_SEC_SLABS, st->slabs, err, errlen) ||
	    open_section(st, &st->alloc_sec, KV_SEC_ALLOC, st->lru, err, errlen) ||
	    open_section(st, &st->stats_sec, KV_SEC_STATS, &st->counts, err, errlen) ||
	    open_section(st, &st->prefix_sec, KV_SEC_STATS, st->prefixes, err, errlen))
		goto fail;
	for (unsigned s = 0; s < st->assoc.nstripes; s++)
		if (open_section(st, &st->assoc.stripes[s], KV_SEC_HASH, &st->assoc, err, errlen))
			goto fail;
	if (st->cfg.track_sizes && kv_sizes_set(st, 1) != 0) {
		msg(err, errlen, "-o track_sizes: out of memory, or cas is off (-C)");
		goto fail;
	}
	return st;
fail:
	kv_store_close(st);
	return NULL;
}

void kv_store_close(kv_store *st)
{
	if (!st)
		return;
	kv_crawler_delete(st); /* its thread runs sections: stopped before they close */
	kv_maintainer_delete(st);
	if (st->assoc.stripes)
		for (unsigned s = 0; s < st->assoc.nstripes; s++)
			if (st->assoc.stripes[s].cs)
				locus_cs_close(st->assoc.stripes[s].cs);
	if (st->stats_sec.cs)
		locus_cs_close(st->stats_sec.cs);
	if (st->prefix_sec.cs)
		locus_cs_close(st->prefix_sec.cs);
	kv_prefixes_delete(st->prefixes);
	if (st->alloc_sec.cs)
		locus_cs_close(st->alloc_sec.cs);
	if (st->slabs_sec.cs)
		locus_cs_close(st->slabs_sec.cs);
	kv_assoc_destroy(&st->assoc);
	kv_automove_delete(st->automove);
	kv_lru_delete(st->lru);
	kv_slabs_delete(st->slabs);
	kv_restart_close(st); /* the file's mapping, once nothing points into it */
	kv_sectime_free(st->times);
	free(st);
}

/* Items rehashed per call while the table doubles: about a millisecond's work. */
#define GROW_BUDGET 100000

void kv_hash_tick(kv_store *st)
{
	struct kv_counts *c = malloc(sizeof(*c));
	if (!c)
		return;
	kv_counts_read(st, c);
	kv_assoc_grow_step(&st->assoc, c->curr_items > 0 ? (uint64_t)c->curr_items : 0,
			   GROW_BUDGET);
	free(c);
}

void kv_store_lru_get(const kv_store *st, struct kv_lru_tune *out)
{
	kv_lru_tune_get(st->lru, out);
}

void kv_store_lru_set(kv_store *st, const struct kv_lru_tune *t)
{
	kv_lru_tune_set(st->lru, t);
}
