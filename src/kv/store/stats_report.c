/*
 * locus-kv's statistics: the stats section (whose functions are in
 * stats_counts.c, with transactional clones), and the text of "stats",
 * "stats items", "stats slabs" and "stats sync" from every section's
 * figures.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/stats_counts.h"
#include "kv/store/store_impl.h"

void kv_counts_flush(kv_store *st, struct kv_counts *cnt)
{
	/* The scalars, then only the class rows that were touched: a flush follows every read
	   event, and the rows are 6 KB. */
	static const struct kv_counts zero;
	size_t scalars = offsetof(struct kv_counts, cls_touched);
	if (cnt->cls_touched == 0 && memcmp(cnt, &zero, scalars) == 0)
		return;
	kv_sec_run(&st->stats_sec, kv_counts_add_fn, cnt);
	memset(cnt, 0, scalars);
	for (uint64_t m = cnt->cls_touched; m; m &= m - 1)
		memset(cnt->cls[__builtin_ctzll(m)], 0, sizeof(cnt->cls[0]));
	cnt->cls_touched = 0;
}

void kv_counts_read(kv_store *st, struct kv_counts *out)
{
	kv_sec_run(&st->stats_sec, kv_counts_read_fn, out);
}

void kv_stats_reset(kv_store *st)
{
	kv_sec_run(&st->stats_sec, kv_counts_reset_fn, NULL);
	kv_lru_stats_reset(&st->alloc_sec);
}

void kv_store_figures(kv_store *st, struct kv_store_figures *f)
{
	memset(f, 0, sizeof(*f));
	kv_counts_read(st, &f->c);
	struct kv_slabs_report *sr = malloc(sizeof(*sr));
	if (sr) {
		kv_slabs_report(&st->slabs_sec, sr);
		f->moving = sr->moving;
		f->moves = sr->moves;
		f->pool_pages = sr->pool_pages;
		free(sr);
	}
	struct kv_lru_report *lr = malloc(sizeof(*lr));
	if (lr) {
		kv_lru_report(&st->alloc_sec, lr, 1);
		for (unsigned i = 1; i < KV_CLASSES; i++) {
			const struct kv_lru_class_report *l = &lr->cls[i];
			f->lrutail_reflocked += l->lrutail_reflocked;
			f->evicted_active += l->evicted_active;
			f->moves_to_cold += l->moves_to_cold;
			f->moves_to_warm += l->moves_to_warm;
			f->moves_within_lru += l->moves_within_lru;
		}
		free(lr);
	}
	f->maintainer = kv_maintainer_running(st);
	f->juggles = kv_maintainer_juggles(st);
	f->limit = ld_relaxed(&st->cfg.mem_limit);
	f->hashpower = ld_relaxed(&st->assoc.hashpower);
	f->hash_bytes = (size_t)ld_relaxed(&st->assoc.nbuckets) * sizeof(struct kv_item *);
	f->hash_expanding = ld_relaxed(&st->assoc.expanding);
}

/*
 * Room for a report of size bytes and for the per-class counters, which the
 * per-class reports show beside it: the report, with *c, or NULL (nothing
 * kept) if either cannot be had. Both are large for a stack.
 */
static void *report_and_counts(size_t size, struct kv_counts **c)
{
	void *r = malloc(size);
	*c = malloc(sizeof(**c));
	if (r && *c)
		return r;
	free(r);
	free(*c);
	return NULL;
}

/* "stats slabs": each class that has pages, memcached's fields in its order. */
int kv_stats_slabs(kv_store *st, struct kv_buf *out)
{
	struct kv_counts *c;
	struct kv_slabs_report *r = report_and_counts(sizeof(*r), &c);
	if (!r)
		return -1;
	kv_slabs_report(&st->slabs_sec, r);
	kv_counts_read(st, c);
	static const struct {
		const char *name;
		enum kv_class_count k;
	} ops[] = {
		{"get_hits", KV_CC_GET_HITS},	    {"cmd_set", KV_CC_CMD_SET},
		{"delete_hits", KV_CC_DELETE_HITS}, {"incr_hits", KV_CC_INCR_HITS},
		{"decr_hits", KV_CC_DECR_HITS},	    {"cas_hits", KV_CC_CAS_HITS},
		{"cas_badval", KV_CC_CAS_BADVAL},   {"touch_hits", KV_CC_TOUCH_HITS},
	};
	int e = 0, active = 0;
	for (unsigned i = 1; i <= r->ncls; i++) {
		struct kv_slabs_class_report *k = &r->cls[i];
		if (k->pages + k->small == 0)
			continue;
		active++;
		e |= kv_buf_addf(out, "STAT %u:chunk_size %u\r\n", i, k->size);
		e |= kv_buf_addf(out, "STAT %u:chunks_per_page %u\r\n", i, k->perpage);
		e |= kv_buf_addf(out, "STAT %u:total_pages %" PRIu64 "\r\n", i,
				 k->pages + k->small);
		e |= kv_buf_addf(out, "STAT %u:total_chunks %" PRIu64 "\r\n", i, k->chunks);
		e |= kv_buf_addf(out, "STAT %u:used_chunks %" PRIu64 "\r\n", i,
				 k->chunks - k->free);
		e |= kv_buf_addf(out, "STAT %u:free_chunks %" PRIu64 "\r\n", i, k->free);
		e |= kv_buf_addf(out, "STAT %u:free_chunks_end 0\r\n", i);
		for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
			e |= kv_buf_addf(out, "STAT %u:%s %" PRIu64 "\r\n", i, ops[o].name,
					 c->cls[i][ops[o].k]);
	}
	e |= kv_buf_addf(out, "STAT active_slabs %d\r\n", active);
	e |= kv_buf_addf(out, "STAT total_malloced %zu\r\n", r->malloced);
	e |= kv_buf_add(out, "END\r\n", 5);
	free(r);
	free(c);
	return e ? -1 : 0;
}

/*
 * "stats items": each class holding items, memcached's fields in its order; as memcached,
 * the segments' own lines only while the LRU maintainer runs (number_temp only with the
 * temporary LRU on).
 */
int kv_stats_items(kv_store *st, struct kv_buf *out)
{
	struct kv_counts *c;
	struct kv_lru_report *r = report_and_counts(sizeof(*r), &c);
	if (!r)
		return -1;
	kv_lru_report(&st->alloc_sec, r, 1);
	kv_counts_read(st, c);
	int maint = kv_maintainer_running(st);
	struct kv_lru_tune t;
	kv_lru_tune_get(st->lru, &t);
	int e = 0;
	for (unsigned i = 1; i <= kv_slabs_nclasses(st->slabs); i++) {
		struct kv_lru_class_report *l = &r->cls[i];
		const uint64_t *k = c->cls[i];
		if (l->items == 0)
			continue;
#define ITEM(name, fmt, v) e |= kv_buf_addf(out, "STAT items:%u:" name " %" fmt "\r\n", i, v)
		ITEM("number", PRIu64, l->items);
		if (maint) {
			ITEM("number_hot", PRIu64, l->seg[KV_LRU_HOT]);
			ITEM("number_warm", PRIu64, l->seg[KV_LRU_WARM]);
			ITEM("number_cold", PRIu64, l->seg[KV_LRU_COLD]);
			if (t.temp_lru)
				ITEM("number_temp", PRIu64, l->seg[KV_LRU_TEMP]);
			ITEM("age_hot", PRIu32, l->age_hot);
			ITEM("age_warm", PRIu32, l->age_warm);
		}
		ITEM("age", PRIu32, l->age);
		ITEM("mem_requested", PRIu64, l->mem_requested);
		ITEM("evicted", PRIu64, l->evicted);
		ITEM("evicted_nonzero", PRIu64, l->evicted_nonzero);
		ITEM("evicted_time", PRIu32, l->evicted_time);
		ITEM("outofmemory", PRIu64, l->outofmemory);
		ITEM("tailrepairs", "d", 0);
		ITEM("reclaimed", PRIu64, k[KV_CC_RECLAIMED]);
		ITEM("expired_unfetched", PRIu64, k[KV_CC_EXPIRED_UNFETCHED]);
		ITEM("evicted_unfetched", PRIu64, l->evicted_unfetched);
		if (maint)
			ITEM("evicted_active", PRIu64, l->evicted_active);
		ITEM("crawler_reclaimed", PRIu64, k[KV_CC_CRAWLER_RECLAIMED]);
		ITEM("crawler_items_checked", PRIu64, k[KV_CC_CRAWLER_CHECKED]);
		ITEM("lrutail_reflocked", PRIu64, l->lrutail_reflocked);
		if (maint) {
			ITEM("moves_to_cold", PRIu64, l->moves_to_cold);
			ITEM("moves_to_warm", PRIu64, l->moves_to_warm);
			ITEM("moves_within_lru", PRIu64, l->moves_within_lru);
			ITEM("direct_reclaims", PRIu64, k[KV_CC_DIRECT_RECLAIMS]);
			ITEM("hits_to_hot", PRIu64, k[KV_CC_HITS_HOT]);
			ITEM("hits_to_warm", PRIu64, k[KV_CC_HITS_WARM]);
			ITEM("hits_to_cold", PRIu64, k[KV_CC_HITS_COLD]);
			ITEM("hits_to_temp", PRIu64, k[KV_CC_HITS_TEMP]);
		}
#undef ITEM
	}
	e |= kv_buf_add(out, "END\r\n", 5);
	free(r);
	free(c);
	return e ? -1 : 0;
}

int kv_stats_sync(kv_store *st, struct kv_buf *out)
{
	struct kv_sectime_total t[KV_SECTIONS];
	if (st->times)
		kv_sectime_read(st->times, t);
	int r = kv_buf_addf(out, "STAT section_stats %s\r\n", st->times ? "on" : "off");
	for (int s = 0; s < KV_SECTIONS; s++) {
		const char *n = kv_section_names[s];
		r |= kv_buf_addf(out, "STAT %s:sync %s\r\n", n, st->spec[s]);
		if (!st->times)
			continue;
		r |= kv_buf_addf(out, "STAT %s:runs %" PRIu64 "\r\n", n, t[s].runs);
		r |= kv_buf_addf(out, "STAT %s:time_ns %" PRIu64 "\r\n", n, t[s].ns);
		r |= kv_buf_addf(out, "STAT %s:avg_ns %" PRIu64 "\r\n", n,
				 t[s].runs ? t[s].ns / t[s].runs : 0);
		r |= kv_buf_addf(out, "STAT %s:max_ns %" PRIu64 "\r\n", n, t[s].max_ns);
	}
	r |= kv_buf_addf(out, "END\r\n");
	return r ? -1 : 0;
}
