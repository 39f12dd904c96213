/*
 * locus-kv's statistics: the stats section (whose functions are in
 * counts.c, with transactional clones), and the text of "stats",
 * "stats items", "stats slabs" and "stats sync" from every section's
 * figures.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kv/counts.h"
#include "kv/store_impl.h"

void kv_counts_flush(kv_store *st, struct kv_counts *cnt)
{
	static const struct kv_counts zero;
	if (memcmp(cnt, &zero, sizeof(zero)) == 0)
		return;
	kv_sec_run(&st->stats_sec, kv_counts_add_fn, cnt);
	memset(cnt, 0, sizeof(*cnt));
}

void kv_counts_read(kv_store *st, struct kv_counts *out)
{
	kv_sec_run(&st->stats_sec, kv_counts_read_fn, out);
}

void kv_stats_reset(kv_store *st)
{
	kv_sec_run(&st->stats_sec, kv_counts_reset_fn, NULL);
}

int kv_stats_general(kv_store *st, struct kv_buf *out, const char *extra_lines)
{
	struct kv_counts c;
	kv_counts_read(st, &c);
	int r = 0;
	if (extra_lines)
		r |= kv_buf_add(out, extra_lines, strlen(extra_lines));
#define LINE(f) r |= kv_buf_addf(out, "STAT " #f " %" PRIu64 "\r\n", (uint64_t)c.f);
	LINE(cmd_get)
	LINE(cmd_set)
	LINE(cmd_flush)
	LINE(cmd_touch)
	LINE(cmd_meta)
	LINE(get_hits)
	LINE(get_misses)
	LINE(get_expired)
	LINE(get_flushed)
	LINE(delete_misses)
	LINE(delete_hits)
	LINE(incr_misses)
	LINE(incr_hits)
	LINE(decr_misses)
	LINE(decr_hits)
	LINE(cas_misses)
	LINE(cas_hits)
	LINE(cas_badval)
	LINE(touch_hits)
	LINE(touch_misses)
	LINE(bytes_read)
	LINE(bytes_written)
	LINE(conn_yields)
#undef LINE
	r |= kv_buf_addf(out, "STAT limit_maxbytes %zu\r\n", st->cfg.mem_limit);
	r |= kv_buf_addf(out, "STAT hash_power_level %u\r\n", st->assoc.hashpower);
	r |= kv_buf_addf(out, "STAT hash_bytes %zu\r\n",
			 (size_t)st->assoc.nbuckets * sizeof(struct kv_item *));
	r |= kv_buf_addf(out, "STAT curr_items %" PRId64 "\r\n", c.curr_items);
	r |= kv_buf_addf(out, "STAT total_items %" PRIu64 "\r\n", c.total_items);
	r |= kv_buf_addf(out, "STAT expired_unfetched %" PRIu64 "\r\n", c.expired_unfetched);
	r |= kv_buf_addf(out, "STAT evicted_unfetched %" PRIu64 "\r\n", c.evicted_unfetched);
	r |= kv_buf_addf(out, "STAT evictions %" PRIu64 "\r\n", c.evictions);
	r |= kv_buf_addf(out, "STAT reclaimed %" PRIu64 "\r\n", c.reclaimed);
	r |= kv_buf_addf(out, "STAT bytes %" PRId64 "\r\n", c.bytes);
	r |= kv_buf_addf(out, "STAT outofmemory %" PRIu64 "\r\n", c.oom);
	struct kv_slabs_report *sr = malloc(sizeof(*sr));
	if (!sr)
		return -1;
	kv_slabs_report(&st->slabs_sec, sr);
	r |= kv_buf_addf(out, "STAT slab_reassign_rescues %" PRIu64 "\r\n", c.slab_reassign_rescues);
	r |= kv_buf_addf(out, "STAT slab_reassign_evictions_nomem %" PRIu64 "\r\n",
			 c.slab_reassign_evictions_nomem);
	r |= kv_buf_addf(out, "STAT slab_reassign_inline_reclaim %" PRIu64 "\r\n",
			 c.slab_reassign_inline_reclaim);
	r |= kv_buf_addf(out, "STAT slab_reassign_busy_items %" PRIu64 "\r\n",
			 c.slab_reassign_busy_items);
	r |= kv_buf_addf(out, "STAT slab_reassign_running %d\r\n", sr->moving);
	r |= kv_buf_addf(out, "STAT slabs_moved %" PRIu64 "\r\n", sr->moves);
	r |= kv_buf_addf(out, "STAT slab_global_page_pool %" PRIu64 "\r\n", sr->pool_pages);
	free(sr);
	for (int s = 0; s < KV_SECTIONS; s++)
		r |= kv_buf_addf(out, "STAT sync_%s %s\r\n", kv_section_names[s], st->spec[s]);
	r |= kv_buf_add(out, "END\r\n", 5);
	return r ? -1 : 0;
}

int kv_stats_slabs(kv_store *st, struct kv_buf *out)
{
	struct kv_slabs_report *r = malloc(sizeof(*r));
	if (!r)
		return -1;
	kv_slabs_report(&st->slabs_sec, r);
	int e = 0, active = 0;
	for (unsigned i = 1; i <= r->ncls; i++) {
		struct kv_slabs_class_report *c = &r->cls[i];
		if (c->chunks == 0)
			continue;
		active++;
		uint64_t free = c->free + c->free_end;
		e |= kv_buf_addf(out, "STAT %u:chunk_size %u\r\n", i, c->size);
		e |= kv_buf_addf(out, "STAT %u:chunks_per_page %u\r\n", i, c->perpage);
		e |= kv_buf_addf(out, "STAT %u:total_pages %" PRIu64 "\r\n", i, c->pages + c->small);
		e |= kv_buf_addf(out, "STAT %u:total_chunks %" PRIu64 "\r\n", i, c->chunks);
		e |= kv_buf_addf(out, "STAT %u:used_chunks %" PRIu64 "\r\n", i, c->chunks - free);
		e |= kv_buf_addf(out, "STAT %u:free_chunks %" PRIu64 "\r\n", i, free);
		e |= kv_buf_addf(out, "STAT %u:free_chunks_end %u\r\n", i, c->free_end);
	}
	e |= kv_buf_addf(out, "STAT active_slabs %d\r\n", active);
	e |= kv_buf_addf(out, "STAT total_malloced %zu\r\n", r->malloced);
	e |= kv_buf_add(out, "END\r\n", 5);
	free(r);
	return e ? -1 : 0;
}

int kv_stats_items(kv_store *st, struct kv_buf *out)
{
	struct kv_lru_report *r = malloc(sizeof(*r));
	if (!r)
		return -1;
	kv_lru_report(&st->alloc_sec, r);
	int e = 0;
	for (unsigned i = 1; i <= kv_slabs_nclasses(st->slabs); i++) {
		struct kv_lru_class_report *l = &r->cls[i];
		if (l->items == 0 && l->evicted == 0 && l->outofmemory == 0)
			continue;
		e |= kv_buf_addf(out, "STAT items:%u:number %" PRIu64 "\r\n", i, l->items);
		e |= kv_buf_addf(out, "STAT items:%u:evicted %" PRIu64 "\r\n", i, l->evicted);
		e |= kv_buf_addf(out, "STAT items:%u:evicted_unfetched %" PRIu64 "\r\n", i,
				 l->evicted_unfetched);
		e |= kv_buf_addf(out, "STAT items:%u:outofmemory %" PRIu64 "\r\n", i,
				 l->outofmemory);
		e |= kv_buf_addf(out, "STAT items:%u:reclaimed %" PRIu64 "\r\n", i, l->reclaimed);
	}
	e |= kv_buf_add(out, "END\r\n", 5);
	free(r);
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
