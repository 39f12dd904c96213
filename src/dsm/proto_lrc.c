/*
 * lrc: lazy release consistency with multiple writers (seed 001 §2.1; seed
 * 004 §1.4.4, §1.5.4), after TreadMarks. This file: intervals, notices,
 * twins and diffs, faults, prefetch and the synchronization hooks; fetching
 * is lrc_fetch.c, collection lrc_gc.c, the shared state lrc.h.
 *
 * Intervals and vector time. Each node numbers its intervals 1, 2, ...; an
 * interval ends at a barrier, at a lock pass (below), at a grant that brings
 * records and at shipped calls (lrc_ship.c), if the node wrote anything in
 * it; not at a release (lrc_acquire says why). vt[n] is the number of
 * node n's intervals this node has seen; an interval's record keeps the
 * writer's vt when it ended and the pages written in it (its write notices).
 * A node learns n's intervals in order, so records are per-node arrays.
 *
 * Locks carry notices (sync.c routes them): the asker sends its vt, the last
 * holder answers with every record the asker has not seen. A barrier sends
 * each node's new records and vt to node 0, which sends every node what it
 * lacks. Notices are taken in only at those points, when this node's own
 * interval has just ended.
 *
 * Pages. A page only one node uses is private to it (lrc_class.c): no twin,
 * diff or notice, and writable across intervals; what follows is for the
 * shared ones. A notice invalidates the page (no access) and joins the page's
 * pending list. The first write to a valid page in an interval copies it to a
 * twin; the page is then writable until the interval ends, when it becomes
 * read-only again. The diff (diff.h) of the twin is made lazily: when a node
 * asks for it, when the page is written in a later interval, or when a notice
 * invalidates it. A page twinned in two nearby intervals is hot (HOT_GAP):
 * diffed at every interval end and kept writable with a fresh twin. A twin
 * left unchanged at its interval's end gives no notice. Several nodes may
 * write one page at once: nothing moves until somebody synchronizes. A fault
 * on an invalid page asks every writer named in the pending notices for its
 * diffs (one DIFF_REQ per writer, all at once, batched with the read-ahead)
 * and, for a page dropped at a collection, its manager (its home) for the
 * whole page; a page never held is the zero page plus its notices' diffs.
 * When every reply is in, the page, then the diffs in an order that extends
 * happens-before (sum of vt, then node) are written, and the page is
 * readable. Notices that came in meanwhile stay pending: they are never
 * ordered before the ones in flight (a node learns an interval together with
 * everything before it).
 *
 * Garbage collection. Records, diffs and twins are kept until every node has
 * seen them. When a node reports more than LOCUS_DSM_GC_BYTES of them at a barrier,
 * node 0 makes that barrier collect: every manager brings its pages up to
 * date (fetching their pending diffs), says so to node 0 (GC, b = 1), and
 * when all have, node 0 tells everyone (GC, b = 2) to drop every twin, every
 * record, diff and notice of the intervals its vector time in the barrier's
 * exit counts (lrc.gc_base: every node has them) and every copy of a page
 * that had such notices pending; the barrier then ends. A dropped copy is
 * fetched whole from its manager, which is always current for what was
 * collected. Later intervals stay (lrc_gc.c says why).
 *
 * Meaning: programs whose conflicting accesses are ordered by locus-dsm locks
 * and barriers see sequentially consistent results; racy reads may be stale.
 * Words are 4 bytes: two nodes may not write different bytes of one word
 * between synchronizations.
 *
 * Everything here runs on the communication thread (internal.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diff.h"
#include "lrc.h"

struct lrc_state lrc;

/*
 * lrc collects only at locus_dsm_barrier (lrc_gc.c): a program that
 * synchronizes otherwise (barrier objects, as a Splash program's BARRIER,
 * and locks; a fork-style run, where that barrier is refused) keeps every
 * record, diff and twin until it calls one. A node that keeps GC_WARN_TIMES
 * LOCUS_DSM_GC_BYTES with no such barrier since it passed the setting says
 * so on standard error, once: its memory grows with the run.
 */
#define GC_WARN_TIMES 4
static uint64_t over_at = UINT64_MAX; /* barriers counted when it passed gc_bytes */
static int gc_warned;

static void gc_warn(uint64_t m)
{
	uint64_t gc = lrc_set.gc_bytes, bars = ld_relaxed(&dsm.cnt.barriers);
	if (!gc || gc_warned)
		return;
	if (m <= gc) {
		over_at = UINT64_MAX;
		return;
	}
	if (over_at != bars) { /* passed it now, or a barrier since: count again */
		over_at = bars;
		return;
	}
	if (m / GC_WARN_TIMES < gc)
		return;
	gc_warned = 1;
	char msg[512];
	int n = snprintf(msg, sizeof(msg),
			 "locus-dsm: node %d: lrc keeps %llu KiB of records, diffs and twins, %d "
			 "times LOCUS_DSM_GC_BYTES (%llu KiB), with no locus_dsm_barrier since it "
			 "passed it: lrc collects only at that barrier (not at barrier objects, "
			 "such as a Splash program's BARRIER, nor at locks; never in a fork-style "
			 "run), so this node's memory grows until one\n",
			 dsm.node, (unsigned long long)(m >> 10), GC_WARN_TIMES,
			 (unsigned long long)(gc >> 10));
	if (n > 0 && write(2, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1) < 0)
		return;
}

void lrc_mem_add(int64_t d)
{
	uint64_t m = PROTO_STAT_GET(LRC_ST_META_BYTES) + (uint64_t)d;
	PROTO_STAT_SET(LRC_ST_META_BYTES, m);
	if (m > PROTO_STAT_GET(LRC_ST_META_PEAK))
		PROTO_STAT_SET(LRC_ST_META_PEAK, m);
	gc_warn(m);
}

static int lrc_init(void)
{
	lrc.nodes = (size_t)dsm.nodes;
	lrc.pg = dsm_table_new(dsm.npages, sizeof(*lrc.pg));
	lrc.live = dsm_table_new(dsm.npages, sizeof(size_t));
	lrc.vt = calloc(lrc.nodes, sizeof(uint32_t));
	lrc.base = calloc(lrc.nodes, sizeof(uint32_t));
	lrc.iv = calloc(lrc.nodes, sizeof(*lrc.iv));
	lrc.ivcap = calloc(lrc.nodes, sizeof(uint32_t));
	lrc.dirty = dsm_table_new(dsm.npages, sizeof(size_t));
	lrc.inval = dsm_table_new(dsm.npages, sizeof(size_t));
	lrc.held = dsm_table_new(dsm.npages, sizeof(size_t));
	lrc.gc_base = calloc(lrc.nodes, sizeof(uint32_t));
	lrc.arrived = calloc(lrc.nodes, sizeof(void *));
	lrc.arrived_len = calloc(lrc.nodes, sizeof(size_t));
	lrc.bq = calloc(lrc.nodes, sizeof(uint32_t *));
	lrc.bqlen = calloc(lrc.nodes, sizeof(size_t));
	lrc.bqcap = calloc(lrc.nodes, sizeof(size_t));
	lrc.bqpages = calloc(lrc.nodes, sizeof(size_t));
	lrc.scratch = malloc(dsm_diff_max(dsm.page_size));
	lrc.pushq = dsm_table_new(dsm.npages, sizeof(size_t));
	lrc.probe = dsm_table_new(dsm.npages, sizeof(size_t));
	if (!lrc.pg || !lrc.live || !lrc.vt || !lrc.base || !lrc.iv || !lrc.ivcap || !lrc.dirty ||
	    !lrc.inval || !lrc.held || !lrc.gc_base || !lrc.arrived || !lrc.bq || !lrc.bqlen || !lrc.bqcap ||
	    !lrc.bqpages || !lrc.arrived_len || !lrc.scratch || !lrc.pushq || !lrc.probe)
		return -1;
	return lrc_class_init();
}

static const int prot_of[] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE};

/* A page's access, and its protection: taken away at once (a write the
   protocol has stopped looking for must fault), given at the end of the
   turn, with its neighbours' (region.c: a fetched run, a walk's pages; the
   thread that faulted runs on after it). */
void lrc_set_access(size_t p, uint8_t acc)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->access == acc)
		return;
	if (acc > pg->access)
		dsm_region_protect_later(p, prot_of[acc]);
	else
		dsm_region_protect(p, 1, prot_of[acc]);
	pg->access = acc;
}

/* Every page of the sorted list whose access is `from` gets `to`, with one
   mprotect per run of consecutive pages. */
static void protect_runs(const size_t *list, size_t n, uint8_t from, uint8_t to)
{
	size_t i = 0;
	while (i < n) {
		if (lrc.pg[list[i]].access != from) {
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < n && list[j] == list[j - 1] + 1 && lrc.pg[list[j]].access == from)
			j++;
		dsm_region_protect(list[i], j - i, prot_of[to]);
		for (size_t k = i; k < j; k++)
			lrc_page(list[k])->access = to;
		i = j;
	}
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

void lrc_invalidate(size_t *list, size_t n)
{
	qsort(list, n, sizeof(size_t), cmp_size);
	protect_runs(list, n, ACC_READ, ACC_NONE);
	protect_runs(list, n, ACC_WRITE, ACC_NONE);
}

struct interval *lrc_interval_get(uint32_t node, uint32_t idx)
{
	if (node >= lrc.nodes || idx <= lrc.base[node] || idx > lrc.vt[node])
		return NULL;
	return &lrc.iv[node][idx - lrc.base[node] - 1];
}

uint64_t lrc_vt_sum(const uint32_t *vt)
{
	uint64_t s = 0;
	for (size_t n = 0; n < lrc.nodes; n++)
		s += vt[n];
	return s;
}

/* ---- diffs ---- */

/* Keep the n bytes of lrc.scratch as page p's diff of interval idx. */
static void keep_scratch(size_t p, uint32_t idx, size_t n)
{
	struct lrc_page *pg = lrc_page(p);
	unsigned char *buf = dsm_slab_alloc(n);
	if (!buf)
		dsm_fatal("lrc: out of memory for a diff (%zu bytes)", n);
	memcpy(buf, lrc.scratch, n);
	if (pg->ndiffs == pg->capdiffs) {
		pg->capdiffs = pg->capdiffs ? pg->capdiffs * 2 : 4;
		pg->diffs = lrc_xrealloc(pg->diffs, pg->capdiffs * sizeof(*pg->diffs));
	}
	pg->diffs[pg->ndiffs++] = (struct owndiff){.idx = idx, .len = (uint32_t)n, .data = buf};
	PROTO_STAT_ADD(LRC_ST_DIFFS, 1);
	PROTO_STAT_ADD(LRC_ST_DIFF_BYTES, n);
	lrc_mem_add((int64_t)n + (int64_t)sizeof(struct owndiff));
}

/* Encode page p against its twin (into lrc.scratch) and keep the diff as
   interval idx's, an empty one too when keep_empty. Returns its length. */
static size_t keep_diff(size_t p, uint32_t idx, int keep_empty)
{
	struct lrc_page *pg = lrc_page(p);
	size_t n = dsm_diff_make(dsm_page_alias(p), pg->twin, dsm.page_size, lrc.scratch);
	if (!n && !keep_empty)
		return 0;
	keep_scratch(p, idx, n);
	return n;
}

/* The twin's interval is over: encode its diff, keep it, drop the twin. */
static void make_diff(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->access == ACC_WRITE)
		dsm_fatal("lrc: diff of page %zu while it is writable", p);
	keep_diff(p, pg->twin_iv, 1);
	dsm_keep_page_put(pg->twin);
	pg->twin = NULL;
	lrc_mem_add(-(int64_t)dsm.page_size);
}

const struct owndiff *lrc_find_diff(size_t p, uint32_t idx)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->twin && pg->twin_iv == idx)
		make_diff(p);
	uint32_t lo = 0, hi = pg->ndiffs; /* diffs are made in interval order */
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (pg->diffs[mid].idx < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < pg->ndiffs && pg->diffs[lo].idx == idx)
		return &pg->diffs[lo];
	return NULL;
}

/* ---- intervals ---- */

/* A hot page at the end of interval idx: keep its diff if it changed, and
   renew the twin. Returns whether it changed. The page may still be
   writable, and written by this node's other threads meanwhile: the take
   reads each word once, and a write it misses is in the next interval's. */
static int diff_now(size_t p, uint32_t idx)
{
	struct lrc_page *pg = lrc_page(p);
	size_t n = dsm_diff_take(dsm_page_alias(p), pg->twin, dsm.page_size, lrc.scratch);
	if (!n)
		return 0;
	keep_scratch(p, idx, n);
	return 1;
}

static void drop_twin(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	dsm_keep_page_put(pg->twin);
	pg->twin = NULL;
	pg->hot = 0;
	lrc_mem_add(-(int64_t)dsm.page_size);
}

/*
 * End the open interval. A page twinned in it for the first time becomes
 * read-only and keeps its twin (its diff is made lazily); a hot page is
 * diffed now and stays writable with a fresh twin, unless it is invalid or
 * has been idle (only then is it made read-only). One record lists the pages
 * that changed.
 */
void lrc_close_interval(void)
{
	if (!lrc.ndirty)
		return;
	uint32_t me = (uint32_t)dsm.node;
	uint32_t idx = lrc.vt[me] + 1;
	uint32_t *written = lrc_xmalloc(lrc.ndirty * sizeof(uint32_t));
	size_t nw = 0, keep = 0;
	qsort(lrc.dirty, lrc.ndirty, sizeof(size_t), cmp_size);
	/* Read-only first: a page twinned in this interval (its next write must
	   fault) and a hot page that may stop being hot now (a write after its
	   last diff would be lost). The other hot pages stay writable: their
	   diffs are taken word by word (diff_now). */
	size_t *ro = lrc_xmalloc(lrc.ndirty * sizeof(size_t)), nro = 0;
	for (size_t i = 0; i < lrc.ndirty; i++) {
		const struct lrc_page *pg = &lrc.pg[lrc.dirty[i]];
		if (!pg->hot || pg->idle + 1 >= HOT_IDLE)
			ro[nro++] = lrc.dirty[i];
	}
	protect_runs(ro, nro, ACC_WRITE, ACC_READ);
	free(ro);
	for (size_t i = 0; i < lrc.ndirty; i++) {
		size_t p = lrc.dirty[i];
		struct lrc_page *pg = lrc_page(p);
		int valid = pg->access != ACC_NONE;
		if (!pg->hot) {
			pg->dirty = 0;
			if (valid && !memcmp(pg->twin, dsm_page_alias(p), dsm.page_size)) {
				drop_twin(p); /* twinned, not changed: nothing to tell */
				pg->written = 0;
				continue;
			}
			written[nw++] = (uint32_t)p;
			pg->written = 1;
			continue;
		}
		if (diff_now(p, idx)) {
			written[nw++] = (uint32_t)p;
			pg->idle = 0;
			pg->written = 1;
		} else {
			pg->idle++;
		}
		if (!valid || pg->idle >= HOT_IDLE) {
			if (pg->idle >= HOT_IDLE)
				pg->written = 0; /* unchanged for as many intervals */
			drop_twin(p);
			pg->dirty = 0;
			continue;
		}
		lrc.dirty[keep++] = p;
	}
	lrc.ndirty = keep;
	protect_runs(lrc.dirty, lrc.ndirty, ACC_READ, ACC_WRITE); /* hot pages stay writable */
	if (nw) {
		size_t have = lrc.vt[me] - lrc.base[me];
		if (have == lrc.ivcap[me]) {
			lrc.ivcap[me] = lrc.ivcap[me] ? lrc.ivcap[me] * 2 : 16;
			lrc.iv[me] =
				lrc_xrealloc(lrc.iv[me], lrc.ivcap[me] * sizeof(struct interval));
		}
		struct interval *iv = &lrc.iv[me][have];
		iv->npages = (uint32_t)nw;
		iv->vt = lrc_xmalloc(lrc.nodes * sizeof(uint32_t));
		iv->pages = written;
		written = NULL;
		lrc.vt[me] = idx;
		memcpy(iv->vt, lrc.vt, lrc.nodes * sizeof(uint32_t));
		PROTO_STAT_ADD(LRC_ST_INTERVALS, 1);
		lrc_mem_add((int64_t)(sizeof(*iv) + (lrc.nodes + iv->npages) * sizeof(uint32_t)));
	}
	free(written);
	for (size_t i = 0; i < lrc.ndirty; i++)
		lrc.pg[lrc.dirty[i]].twin_iv = lrc.vt[me] + 1; /* their twins start the next one */
}

/* Wire form of a record: node, idx, npages, vt[nodes], pages[npages] (u32). */
static size_t rec_bytes(const struct interval *iv)
{
	return (3 + lrc.nodes + iv->npages) * sizeof(uint32_t);
}

/* Append to *buf every record with idx > seen[n], for every node. */
size_t lrc_encode_since(const uint32_t *seen, unsigned char **buf, size_t len)
{
	size_t need = len;
	for (size_t n = 0; n < lrc.nodes; n++)
		for (uint32_t i = seen[n] + 1; i <= lrc.vt[n]; i++) {
			struct interval *iv = lrc_interval_get((uint32_t)n, i);
			if (!iv)
				dsm_fatal("lrc: interval %u of node %zu was collected", i, n);
			need += rec_bytes(iv);
		}
	*buf = lrc_xrealloc(*buf, need);
	size_t off = len;
	for (size_t n = 0; n < lrc.nodes; n++)
		for (uint32_t i = seen[n] + 1; i <= lrc.vt[n]; i++) {
			struct interval *iv = lrc_interval_get((uint32_t)n, i);
			uint32_t head[3] = {(uint32_t)n, i, iv->npages};
			memcpy(*buf + off, head, sizeof(head));
			off += sizeof(head);
			memcpy(*buf + off, iv->vt, lrc.nodes * sizeof(uint32_t));
			off += lrc.nodes * sizeof(uint32_t);
			memcpy(*buf + off, iv->pages, iv->npages * sizeof(uint32_t));
			off += iv->npages * sizeof(uint32_t);
		}
	return off;
}

/* A notice for page p: make our own diff first (its interval is over), then
   invalidate the copy (listed in lrc.inval; take_records protects them all). */
static void add_notice(size_t p, uint32_t node, uint32_t idx)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->cls == CLS_PRIVATE)
		dsm_fatal("lrc: node %u wrote page %zu, private to node %d", node, p, dsm.node);
	if (pg->twin && pg->twin_iv != lrc.vt[dsm.node] + 1)
		make_diff(p); /* a closed interval's twin */
	/* A hot page's twin belongs to the open interval: it stays, and what is
	   fetched is written to it too (fetch_done), so that its diff is still
	   this node's writes only. */
	if (pg->access != ACC_NONE && !pg->npend)
		lrc.inval[lrc.ninval++] = p; /* listed once: its first pending notice */
	if (pg->prefetched && !pg->replies_left) {
		pg->prefetched = 0;
		STAT_ADD(prefetch_lost, 1);
	}
	if (pg->npend == pg->cappend) {
		pg->cappend = pg->cappend ? pg->cappend * 2 : 4;
		pg->pend = lrc_xrealloc(pg->pend, pg->cappend * sizeof(*pg->pend));
	}
	pg->pend[pg->npend++] = (struct notice){node, idx};
	lrc_mem_add(sizeof(struct notice));
}

struct recref {
	const uint32_t *w; /* node, idx, npages, vt..., pages... */
};

static int rec_cmp(const void *a, const void *b)
{
	const uint32_t *x = ((const struct recref *)a)->w, *y = ((const struct recref *)b)->w;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Take in records (the wire form); returns how many were new. */
size_t lrc_take_records(const void *payload, size_t len, int at_barrier)
{
	if (len % sizeof(uint32_t))
		dsm_fatal("lrc: malformed write notices (%zu bytes)", len);
	const uint32_t *w = payload;
	size_t words = len / sizeof(uint32_t), off = 0, count = 0;
	while (off < words) { /* validate and count */
		if (words - off < 3 + lrc.nodes || w[off] >= lrc.nodes ||
		    w[off + 2] > words - off - 3 - lrc.nodes)
			dsm_fatal("lrc: malformed write notices");
		off += 3 + lrc.nodes + w[off + 2];
		count++;
	}
	struct recref *r = lrc_xmalloc(count * sizeof(*r));
	off = 0;
	for (size_t i = 0; i < count; i++) {
		r[i].w = w + off;
		off += 3 + lrc.nodes + w[off + 2];
	}
	qsort(r, count, sizeof(*r), rec_cmp);
	size_t fresh = 0;
	for (size_t i = 0; i < count; i++) {
		uint32_t node = r[i].w[0], idx = r[i].w[1], np = r[i].w[2];
		if (idx <= lrc.vt[node])
			continue;
		if (idx != lrc.vt[node] + 1)
			dsm_fatal("lrc: interval %u of node %u arrived before %u", idx, node,
				  lrc.vt[node] + 1);
		if (node == (uint32_t)dsm.node)
			dsm_fatal("lrc: told of this node's own interval %u", idx);
		size_t have = lrc.vt[node] - lrc.base[node];
		if (have == lrc.ivcap[node]) {
			lrc.ivcap[node] = lrc.ivcap[node] ? lrc.ivcap[node] * 2 : 16;
			lrc.iv[node] = lrc_xrealloc(lrc.iv[node],
						    lrc.ivcap[node] * sizeof(struct interval));
		}
		struct interval *iv = &lrc.iv[node][have];
		iv->npages = np;
		iv->vt = lrc_xmalloc(lrc.nodes * sizeof(uint32_t));
		memcpy(iv->vt, r[i].w + 3, lrc.nodes * sizeof(uint32_t));
		iv->pages = lrc_xmalloc(np * sizeof(uint32_t));
		memcpy(iv->pages, r[i].w + 3 + lrc.nodes, np * sizeof(uint32_t));
		lrc.vt[node] = idx;
		lrc_mem_add((int64_t)(sizeof(*iv) + (lrc.nodes + np) * sizeof(uint32_t)));
		for (uint32_t k = 0; k < np; k++) {
			if (iv->pages[k] >= dsm.npages)
				dsm_fatal("lrc: notice for page %u of %zu", iv->pages[k],
					  dsm.npages);
			add_notice(iv->pages[k], node, idx);
		}
		fresh++;
	}
	free(r);
	if (at_barrier) {
		/* The node's threads wait in the barrier (a shipped call running
		   meanwhile is not ordered with these intervals): a page whose
		   diffs are all here is written in place, and keeps its access. */
		size_t kept = 0;
		for (size_t i = 0; i < lrc.ninval; i++) {
			size_t p = lrc.inval[i];
			if (lrc_push_ready(p))
				lrc.held[lrc.nheld++] = p;
			else
				lrc.inval[kept++] = p;
		}
		lrc.ninval = kept;
	}
	lrc_invalidate(lrc.inval, lrc.ninval);
	lrc.ninval = 0;
	return fresh;
}

/* ---- faults and prefetch ---- */

/* A valid page becomes writable in the open interval: twin it (a closed
   interval's twin gets its diff first) and put it in the write set. hot: the
   program says it writes the page every interval (a write prefetch). A
   private page is only made writable: nobody needs to know. */
void lrc_make_writable(size_t p, int hot)
{
	struct lrc_page *pg = lrc_page(p);
	uint32_t cur = lrc.vt[dsm.node] + 1;
	pg->have = HAVE_COPY; /* the zero page, or a current copy */
	if (pg->cls == CLS_PRIVATE) {
		pg->written = 1;
		lrc_set_access(p, ACC_WRITE);
		return;
	}
	if (pg->twin && pg->twin_iv != cur)
		make_diff(p);
	if (!pg->twin) {
		if (!(pg->twin = dsm_keep_page()))
			dsm_fatal("lrc: out of memory for a twin");
		memcpy(pg->twin, dsm_page_alias(p), dsm.page_size);
		pg->twin_iv = cur;
		pg->hot = hot || (pg->wrote_iv && cur - pg->wrote_iv <= HOT_GAP);
		pg->idle = 0;
		pg->wrote_iv = cur;
		PROTO_STAT_ADD(LRC_ST_TWINS, 1);
		lrc_mem_add((int64_t)dsm.page_size);
	}
	if (!pg->dirty) {
		pg->dirty = 1;
		lrc.dirty[lrc.ndirty++] = p;
	}
	lrc_set_access(p, ACC_WRITE);
}

/* A write fault on page p, which this node may write, and its walk: p and
 * the pages the walk names (run of them, step pages apart) that this node
 * may write without a fetch become writable (their protection changes at
 * the end of the turn, a run of neighbours at once); a page whose class is
 * unknown is asked for (lrc_class.c; taken back unused, if so). Down a
 * column (|step| > 1), the pages between its steps too, those this node
 * changed the last time it had them writable (or keeps private): a
 * row-major array written a column at a time (Splash-3's fft transposes,
 * rows of 8 pages) then takes one fault and a protection change for a
 * block of rows, instead of one of each per page. A page made writable and
 * left as it was is dropped at the interval's end (lrc_close_interval: no
 * notice), and left out of the next blocks.
 */
static void write_walk(size_t p, ptrdiff_t step, size_t run)
{
	size_t span = (size_t)(step > 0 ? step : -step) * run;
	size_t lo = step > 0 ? p : p - span, hi = step > 0 ? p + span : p; /* inclusive */
	int block = step != 1 && step != -1 && lrc_set.write_blocks;
	for (size_t q = lo; q <= hi; q++) {
		int on_walk = ((ptrdiff_t)(q - p) % step) == 0;
		struct lrc_page *pg = &lrc.pg[q];
		if (q == p) {
			lrc_make_writable(p, 0);
			continue;
		}
		if (on_walk && !pg->cls) { /* asked, not used: lrc_class.c, taken back unused */
			if (!pg->asking && lrc_class_of(q, LRC_ASK_AHEAD) == CLS_UNKNOWN)
				STAT_ADD(run_ahead, 1);
			continue;
		}
		if ((on_walk || block) && pg->cls && !lrc_stale(q) && !pg->replies_left &&
		    pg->access != ACC_WRITE && (on_walk || pg->written)) {
			STAT_ADD(run_ahead, 1);
			lrc_make_writable(q, 0);
		}
	}
}

/* A fault; again: one that waited for its page's class goes on (it was
   counted, and its result is set: remote or combined). */
static void fault(struct dsm_req *r, int again)
{
	size_t p = r->a;
	int write = (int)r->b;
	if (p >= dsm.npages)
		dsm_fatal("fault on page %zu of %zu", p, dsm.npages);
	struct lrc_page *pg = lrc_page(p);
	uint8_t need = write ? ACC_WRITE : ACC_READ;
#define COUNT(kind, res)                                                                           \
	do {                                                                                       \
		if (!again) {                                                                      \
			STAT_ADD(faults[kind], 1);                                                 \
			r->result = (res);                                                         \
		}                                                                                  \
	} while (0)
	if (pg->access >= need) {
		COUNT(LOCUS_DSM_FAULT_LOCAL, DSM_LOCAL);
		dsm_req_done(r, r->result);
		return;
	}
	if (pg->prefetched) {
		pg->prefetched = 0;
		if (pg->replies_left)
			STAT_ADD(prefetch_late, 1);
	}
	if (pg->replies_left || pg->asking) { /* this node's fetch or ask is in flight */
		COUNT(LOCUS_DSM_FAULT_COMBINED, DSM_COMBINED);
		r->wnext = pg->waiters;
		pg->waiters = r;
		return;
	}
	if (!pg->cls) {
		lrc_batch_begin();
		if (lrc_class_of(p, LRC_ASK_FAULT) == CLS_UNKNOWN) { /* asked: goes on with the answer */
			COUNT(write ? LOCUS_DSM_FAULT_WRITE : LOCUS_DSM_FAULT_READ, DSM_REMOTE);
			r->wnext = pg->waiters;
			pg->waiters = r;
			ptrdiff_t st;
			size_t run = dsm_run_ahead(p, 0, &st); /* reads and writes: one walk */
			for (size_t i = 1; i <= run; i++) {
				size_t q = dsm_walk_page(p, st, i);
				if (!lrc.pg[q].cls && !lrc.pg[q].asking &&
				    lrc_class_of(q, LRC_ASK_FAULT) == CLS_UNKNOWN)
					STAT_ADD(run_ahead, 1);
			}
			lrc_batch_send();
			return;
		}
		lrc_batch_send();
	}
	if (lrc_stale(p)) {
		if (lrc_push_covers(p)) /* everything it lacks was pushed here: no message */
			COUNT(LOCUS_DSM_FAULT_LOCAL, DSM_LOCAL);
		else
			COUNT(write ? LOCUS_DSM_FAULT_WRITE : LOCUS_DSM_FAULT_READ, DSM_REMOTE);
		r->wnext = NULL;
		pg->waiters = r;
		lrc_batch_begin();
		lrc_start_fetch(p); /* a write faults again on the fresh copy and twins it */
		/* A node walking pages in order, or a column: fetch the next ones
		   with this one (not again: its ask looked ahead). The walk takes
		   no page from another node: it reads a page it shares, and the
		   pages past it may be another node's own (the next node's rows,
		   past the halo), which that node goes on writing. */
		ptrdiff_t st = 1;
		size_t run = again ? 0 : dsm_run_ahead(p, 0, &st);
		for (size_t i = 1; i <= run; i++) {
			size_t q = dsm_walk_page(p, st, i);
			if (lrc_class_of(q, LRC_ASK_AHEAD) == CLS_UNKNOWN) {
				STAT_ADD(run_ahead, 1); /* asked */
			} else if (lrc_stale(q) && !lrc.pg[q].replies_left) {
				STAT_ADD(run_ahead, 1);
				lrc_start_fetch(q);
			}
		}
		lrc_batch_send();
		return;
	}
	COUNT(LOCUS_DSM_FAULT_LOCAL, DSM_LOCAL);
#undef COUNT
	if (!write) {
		pg->have = HAVE_COPY; /* the zero page, or a current copy */
		lrc_set_access(p, ACC_READ);
		dsm_req_done(r, r->result);
		return;
	}
	/* A node writing pages in order, or a column: make the next valid ones
	   writable too. */
	ptrdiff_t st;
	size_t run = dsm_run_ahead(p, 1, &st);
	lrc_batch_begin();
	write_walk(p, st, run);
	lrc_batch_send();
	dsm_req_done(r, r->result);
}

static void lrc_fault(struct dsm_req *r)
{
	fault(r, 0);
}

/* The faulting thread may handle any fault itself: one that fetches
   nothing (the page is this node's to read, or to twin and write), and one
   that asks homes for the page or its diffs, whose messages it hands to MPI
   (the answers come to the communication thread, or to this thread as it
   waits: comm.c, await_answer). */
static int lrc_fault_in_place(size_t p, int write)
{
	(void)write;
	return p < dsm.npages;
}

void lrc_fault_again(struct dsm_req *r)
{
	fault(r, 1);
}

/*
 * Non-binding prefetch (seed 001 §3.1): a page with notices pending, or
 * dropped at a collection, is fetched as a fault would, with nobody waiting; what arrives is
 * written at once, and the page becomes readable if no notice came in
 * meanwhile (a later notice stays pending and is fetched at the next access,
 * after the prefetched diffs: a prefetch never changes what a program reads).
 * A page that is valid or already being fetched is dropped at once.
 */
static void lrc_prefetch(size_t first, size_t count, int write)
{
	lrc_batch_begin();
	for (size_t p = first; p < first + count && p < dsm.npages; p++) {
		struct lrc_page *pg = lrc_page(p);
		if (!pg->cls && (pg->asking || lrc_class_of(p, LRC_ASK_AHEAD) == CLS_UNKNOWN)) {
			STAT_ADD(prefetches, 1); /* its home is asked; the page comes at the fault */
			continue;
		}
		if (write && !lrc_stale(p) && !pg->replies_left && pg->access != ACC_WRITE) {
			/* Every node may write a valid page: make it writable now, and
			   keep it so from interval to interval (hot). */
			STAT_ADD(prefetches, 1);
			lrc_make_writable(p, 1);
			continue;
		}
		if (pg->replies_left || !lrc_stale(p)) {
			STAT_ADD(prefetch_unneeded, 1);
			if (!pg->replies_left && pg->access == ACC_NONE) {
				pg->have = HAVE_COPY; /* valid, not mapped yet: map it now */
				lrc_set_access(p, ACC_READ);
			}
			continue;
		}
		STAT_ADD(prefetches, 1);
		pg->prefetched = 1;
		pg->want_write = (uint8_t)write;
		lrc_start_fetch(p);
	}
	lrc_batch_send();
}

/* ---- messages ---- */

static void lrc_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	size_t p = h->a;
	if (lrc_class_message(h, payload, len))
		return;
	if ((h->kind == LOCUS_DSM_MSG_PAGE_REQ || h->kind == LOCUS_DSM_MSG_PAGE) && p >= dsm.npages)
		dsm_fatal("message about page %zu of %zu", p, dsm.npages);
	switch (h->kind) {
	case LOCUS_DSM_MSG_PAGE_REQ:
		if (!lrc_manages(p) || lrc.pg[p].have == HAVE_NONE) /* managers are never dropped */
			dsm_fatal(
				"lrc: node %d asked node %d for page %zu, which it does not manage",
				h->src, dsm.node, p);
		lrc_send(h->src, LOCUS_DSM_MSG_PAGE, p, 0, lrc_served(p), dsm.page_size);
		break;
	case LOCUS_DSM_MSG_PAGE:
		lrc_reply_arrived(p, WHOLE, payload, len);
		break;
	case LOCUS_DSM_MSG_DIFF_REQ:
		if (h->b)
			lrc_push_message(h, payload, len); /* stop pushing */
		else
			lrc_serve_diffs(h->a, h->src, payload, len);
		break;
	case LOCUS_DSM_MSG_DIFF:
		if (h->b)
			lrc_push_message(h, payload, len); /* pushed at a barrier */
		else
			lrc_diffs_arrived(h->a, h->src, payload, len);
		break;
	case LOCUS_DSM_MSG_GC:
		if (h->b == 1 && dsm.node == 0) {
			if (++lrc.gc_ready == dsm.nodes)
				lrc_gc_free();
		} else if (h->b == 2 && dsm.node != 0) {
			lrc_gc_free();
		} else {
			dsm_fatal("lrc: stray collection message from node %d", h->src);
		}
		break;
	default:
		dsm_fatal("lrc: message kind %u from node %d", h->kind, h->src);
	}
}

/* A collection waits for the server of shipped calls to finish the batch it
   runs (it is held from the collection's start): look again soon. */
static uint64_t lrc_tick(uint64_t now)
{
	if (!lrc.gc_now || lrc.gc_reported)
		return UINT64_MAX;
	lrc_gc_check();
	return now + 100000;
}

/* ---- synchronization ---- */

static size_t lrc_lock_ask(void **out)
{
	*out = lrc_xmalloc(lrc.nodes * sizeof(uint32_t));
	memcpy(*out, lrc.vt, lrc.nodes * sizeof(uint32_t));
	return lrc.nodes * sizeof(uint32_t);
}

static size_t lrc_lock_pass(uint32_t lock, const void *ask, size_t len, void **out)
{
	(void)lock;
	if (len != lrc.nodes * sizeof(uint32_t))
		dsm_fatal("lrc: lock request without a vector time");
	lrc_close_interval(); /* what was written here since the release goes along */
	unsigned char *buf = NULL;
	size_t n = lrc_encode_since(ask, &buf, 0);
	*out = buf;
	return n;
}

/*
 * A lock's grant ends this node's interval only when it brings records (to
 * take notices in, the interval must be over), and a release never does: a
 * lock reaches another node only through lock_pass at its last holder, or
 * a grant to an asker that was itself the last holder, and lock_pass ends
 * the interval then, with everything written here before the release in it
 * (and what came after: more than the asker needs, never less). So a lock
 * taken and given on its node, again and again (barnes: one per cell, a
 * million a node), no longer ends an interval each time, with its twins,
 * diffs and protections.
 */
static void lrc_acquire(uint32_t lock, const void *grant, size_t len)
{
	(void)lock;
	if (len) {
		lrc_close_interval();
		lrc_take_records(grant, len, 0);
	}
}

/*
 * Enter: metadata bytes (u64), vt, then every record node 0 may lack: this
 * node's own since what node 0 is known to have, and others' this node
 * learned outside a barrier (a lock pass brings only what its holder saw
 * before the barrier, but a shipped call's answer may bring an interval its
 * home ended after entering this barrier: its server runs calls meanwhile).
 *
 * What node 0 is known to have is not raised here: node 0 keeps the entry
 * and takes its records in only when the last node has entered. Until then
 * this node's server may still ship a call to node 0, and that call must
 * carry every record the entry carries too (node 0 learns a node's intervals
 * in order; the entry's copies are old news when they are taken in). The
 * barrier's exit raises it to node 0's vector time, which has all of them.
 */
static size_t lrc_barrier_enter(void **out)
{
	lrc_close_interval();
	lrc_push_send(SIZE_MAX); /* to the nodes reading what it wrote, before node 0 hears */
	size_t head = sizeof(uint64_t) + lrc.nodes * sizeof(uint32_t);
	unsigned char *buf = lrc_xmalloc(head);
	uint64_t mem = PROTO_STAT_GET(LRC_ST_META_BYTES);
	memcpy(buf, &mem, sizeof(mem));
	memcpy(buf + sizeof(mem), lrc.vt, lrc.nodes * sizeof(uint32_t));
	uint32_t seen[DSM_MAX_NODES];
	memcpy(seen, dsm.node == 0 ? lrc.vt : lrc_known_of(0), lrc.nodes * sizeof(uint32_t));
	size_t n = lrc_encode_since(seen, &buf, head);
	*out = buf;
	return n;
}

static void lrc_barrier_arrive(int node, const void *p, size_t len)
{
	if (len < sizeof(uint64_t) + lrc.nodes * sizeof(uint32_t))
		dsm_fatal("lrc: barrier entry from node %d without a vector time", node);
	free(lrc.arrived[node]);
	lrc.arrived[node] = lrc_xmalloc(len);
	memcpy(lrc.arrived[node], p, len);
	lrc.arrived_len[node] = len;
}

/* Leave: gc flag (u32), then the records node n lacks. Node 0 takes in
   everything first. */
static size_t lrc_barrier_leave_for(int node, void **out)
{
	size_t head = sizeof(uint64_t) + lrc.nodes * sizeof(uint32_t);
	if (node == 0) {
		uint64_t most = 0;
		for (size_t n = 0; n < lrc.nodes; n++) {
			if (!lrc.arrived[n])
				dsm_fatal("lrc: barrier left before node %zu arrived", n);
			uint64_t mem;
			memcpy(&mem, lrc.arrived[n], sizeof(mem));
			if (mem > most)
				most = mem;
		}
		/* Decided first: a collection takes pushed diffs itself. */
		lrc.gc_now = lrc_set.gc_bytes && most > lrc_set.gc_bytes;
		for (size_t n = 1; n < lrc.nodes; n++) {
			lrc_close_interval(); /* the server may have written meanwhile */
			lrc_take_records((unsigned char *)lrc.arrived[n] + head,
					 lrc.arrived_len[n] - head, 1);
		}
		if (lrc.gc_now) /* what every node has once it takes its exit in */
			memcpy(lrc.gc_base, lrc.vt, lrc.nodes * sizeof(uint32_t));
		*out = NULL;
		return 0;
	}
	const uint32_t *seen =
		(const uint32_t *)((unsigned char *)lrc.arrived[node] + sizeof(uint64_t));
	size_t lead = sizeof(uint32_t) * (1 + lrc.nodes);
	unsigned char *buf = lrc_xmalloc(lead);
	uint32_t gc = (uint32_t)lrc.gc_now;
	memcpy(buf, &gc, sizeof(gc));
	memcpy(buf + sizeof(gc), lrc.vt, lrc.nodes * sizeof(uint32_t)); /* node 0's */
	size_t n = lrc_encode_since(seen, &buf, lead);
	*out = buf;
	return n;
}

static int lrc_barrier_leave(const void *p, size_t len)
{
	if (dsm.node == 0) {
		for (size_t n = 0; n < lrc.nodes; n++) {
			free(lrc.arrived[n]);
			lrc.arrived[n] = NULL;
		}
	} else {
		uint32_t gc;
		size_t lead = sizeof(gc) * (1 + lrc.nodes);
		if (len < lead)
			dsm_fatal("lrc: barrier exit without its notices");
		memcpy(&gc, p, sizeof(gc));
		lrc.gc_now = (int)gc;
		lrc_close_interval(); /* the server may have written meanwhile */
		lrc_take_records((const unsigned char *)p + lead, len - lead, 1);
		lrc_known_raise(0, (const uint32_t *)((const unsigned char *)p + sizeof(gc)));
		if (lrc.gc_now)
			memcpy(lrc.gc_base, (const unsigned char *)p + sizeof(gc),
			       lrc.nodes * sizeof(uint32_t));
	}
	lrc_push_apply(); /* pages whose notices' diffs were pushed here */
	if (!lrc.gc_now)
		return 1;
	lrc_gc_start();
	return 0;
}

static int lrc_writable(size_t p)
{
	return p < dsm.npages && lrc.pg[p].access == ACC_WRITE;
}

const struct dsm_proto dsm_proto_lrc = {
	.name = "lrc",
	.config = lrc_config,
	.stats = lrc_stats,
	.nstats = LRC_NSTATS,
	.init = lrc_init,
	.fault = lrc_fault,
	.fault_in_place = lrc_fault_in_place,
	.message = lrc_message,
	.tick = lrc_tick,
	.prefetch = lrc_prefetch,
	.acquire = lrc_acquire,
	.lock_ask = lrc_lock_ask,
	.lock_pass = lrc_lock_pass,
	.barrier_enter = lrc_barrier_enter,
	.barrier_arrive = lrc_barrier_arrive,
	.barrier_leave_for = lrc_barrier_leave_for,
	.barrier_leave = lrc_barrier_leave,
	.writable = lrc_writable,
	.ship_out = lrc_ship_out,
	.ship_in = lrc_ship_in,
	.ship_back = lrc_ship_back,
	.ship_back_in = lrc_ship_back_in,
};
