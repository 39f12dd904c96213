/*
 * lrc: lazy release consistency with multiple writers (seed 001 §2.1; seed
 * 004 §1.4.4, §1.5.4), after TreadMarks.
 *
 * Intervals and vector time. Each node numbers its intervals 1, 2, ...; an
 * interval ends at every node-level acquire, release and barrier, and at a
 * lock pass (below), if the node wrote anything in it. vt[n] is the number of
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
 * Pages. A notice invalidates the page (no access) and joins the page's
 * pending list. The first write to a valid page in an interval copies it to a
 * twin; the page is then writable until the interval ends, when it becomes
 * read-only again. The diff (diff.h) of the twin is made lazily: when a node
 * asks for it, when the page is written in a later interval, or when a notice
 * invalidates it. Several nodes may write one page at once: nothing moves
 * until somebody synchronizes. A fault on an invalid page asks every writer
 * named in the pending notices for its diffs (one DIFF_REQ per writer, all at
 * once) and, for a page never held, its manager (page % nodes) for the whole
 * page; when every reply is in, the page, then the diffs in an order that
 * extends happens-before (sum of vt, then node) are written, and the page is
 * readable. Notices that came in meanwhile stay pending: they are never
 * ordered before the ones in flight (a node learns an interval together with
 * everything before it).
 *
 * Garbage collection. Records, diffs and twins are kept until every node has
 * seen them. When a node reports more than cfg.gc_bytes of them at a barrier,
 * node 0 makes that barrier collect: every manager brings its pages up to
 * date (fetching their pending diffs), says so to node 0 (GC, b = 1), and
 * when all have, node 0 tells everyone (GC, b = 2) to drop every record, diff
 * and twin and every copy of a page that still has notices pending; the
 * barrier then ends. A dropped copy is fetched whole from its manager, which
 * is always current for what was collected.
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

#include "diff.h"
#include "internal.h"

enum { ACC_NONE = 0, ACC_READ = 1, ACC_WRITE = 2 };
#define WHOLE UINT32_MAX /* a reply carrying the whole page */

struct notice {
	uint32_t node, idx;
};

struct owndiff {
	uint32_t idx, len;
	unsigned char *data;
};

struct rx { /* a reply to the fetch in flight */
	struct rx *next;
	uint32_t node; /* writer, or WHOLE */
	size_t len;
	unsigned char data[];
};

struct lrc_page {
	struct dsm_req *waiters;
	char *twin;
	uint32_t twin_iv; /* the own interval the twin's writes belong to */
	struct notice *pend;
	uint32_t npend, cappend;
	uint32_t nflight;      /* the first nflight pending notices are being fetched */
	uint32_t replies_left; /* of the fetch in flight (0: none) */
	struct rx *rx;
	struct owndiff *diffs; /* this node's, by interval */
	uint32_t ndiffs, capdiffs;
	uint32_t wrote_iv;	       /* the last own interval that twinned it */
	uint8_t access, have, dirty; /* have: HAVE_*; dirty: in L.dirty */
	uint8_t hot, idle;	       /* diffed at every interval end; intervals unwritten */
	uint8_t prefetched;	       /* by locus_dsm_prefetch, no fault on it since */
	uint8_t want_write;	       /* a write prefetch: writable (hot) when it arrives */
};

/* A page written in two intervals at most this far apart is hot: at every
   interval end its diff is made and its twin renewed, and it stays writable,
   so a page a node keeps writing takes no fault per interval. After HOT_IDLE
   intervals without a change it goes back to faulting. (Writes that leave
   the values as they were look like no write: tracking an idle page costs
   two mprotect calls and a page comparison per interval, a fault here costs
   tens of microseconds, so idleness is given time.) */
#define HOT_GAP	 2
#define HOT_IDLE 16

/* What a node holds of a page besides its pending notices. */
enum {
	HAVE_ZERO = 0,	/* never held: the initial zero page (the alias is still zero
			   here), which the pending notices' diffs bring up to date */
	HAVE_COPY = 1,	/* a copy, current but for the pending notices */
	HAVE_NONE = 2,	/* dropped at a collection: the whole page comes from its
			   manager, which is current for what was collected */
};

struct interval {
	uint32_t npages;
	uint32_t *vt, *pages;
};

static struct {
	struct lrc_page *pg;
	uint32_t *vt;		 /* intervals seen, per node */
	uint32_t *base;		 /* per node: intervals up to base were collected */
	struct interval **iv;	 /* per node, iv[n][i] is interval base[n] + 1 + i */
	uint32_t *ivcap;
	size_t *dirty, ndirty;	 /* pages written in the open interval, and hot pages */
	size_t *inval, ninval;	 /* pages take_records invalidates, in one go */
	uint32_t bar_sent;	 /* own intervals up to here have reached node 0 */
	void **arrived;		 /* node 0: each node's barrier payload */
	size_t *arrived_len;
	int gc_now;		 /* this barrier collects */
	int gc_reported;	 /* this node said its pages are current */
	int gc_ready;		 /* node 0: nodes that said so */
	uint32_t fetches;	 /* fetches in flight */
	/* Diff requests being gathered, one message per writer (batch_begin,
	   batch_send): per node, the words of [page, k, k intervals]... */
	int batching;
	uint32_t **bq;
	size_t *bqlen, *bqcap, *bqpages;
} L;

static size_t nodes_;

static void mem_add(int64_t d)
{
	uint64_t m = ld_relaxed(&dsm.meta_bytes) + (uint64_t)d;
	st_relaxed(&dsm.meta_bytes, m);
	if (m > ld_relaxed(&dsm.meta_peak))
		st_relaxed(&dsm.meta_peak, m);
}

static int manages(size_t p)
{
	return p % nodes_ == (size_t)dsm.node;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		dsm_fatal("lrc: out of memory (%zu bytes)", n);
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		dsm_fatal("lrc: out of memory (%zu bytes)", n);
	return p;
}

static int lrc_init(void)
{
	nodes_ = (size_t)dsm.nodes;
	L.pg = calloc(dsm.npages, sizeof(*L.pg));
	L.vt = calloc(nodes_, sizeof(uint32_t));
	L.base = calloc(nodes_, sizeof(uint32_t));
	L.iv = calloc(nodes_, sizeof(*L.iv));
	L.ivcap = calloc(nodes_, sizeof(uint32_t));
	L.dirty = calloc(dsm.npages, sizeof(size_t));
	L.inval = calloc(dsm.npages, sizeof(size_t));
	L.arrived = calloc(nodes_, sizeof(void *));
	L.arrived_len = calloc(nodes_, sizeof(size_t));
	L.bq = calloc(nodes_, sizeof(uint32_t *));
	L.bqlen = calloc(nodes_, sizeof(size_t));
	L.bqcap = calloc(nodes_, sizeof(size_t));
	L.bqpages = calloc(nodes_, sizeof(size_t));
	if (!L.pg || !L.vt || !L.base || !L.iv || !L.ivcap || !L.dirty || !L.inval || !L.arrived ||
	    !L.bq || !L.bqlen || !L.bqcap || !L.bqpages ||
	    !L.arrived_len)
		return -1;
	for (size_t p = (size_t)dsm.node; p < dsm.npages; p += nodes_)
		L.pg[p].have = HAVE_COPY; /* managers are never dropped */
	return 0;
}

static const int prot_of[] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE};

static void set_access(size_t p, uint8_t acc)
{
	struct lrc_page *pg = &L.pg[p];
	if (pg->access == acc)
		return;
	dsm_region_protect(p, 1, prot_of[acc]);
	pg->access = acc;
}

/* Every page of the sorted list whose access is `from` gets `to`, with one
   mprotect per run of consecutive pages. */
static void protect_runs(const size_t *list, size_t n, uint8_t from, uint8_t to)
{
	size_t i = 0;
	while (i < n) {
		if (L.pg[list[i]].access != from) {
			i++;
			continue;
		}
		size_t j = i + 1;
		while (j < n && list[j] == list[j - 1] + 1 && L.pg[list[j]].access == from)
			j++;
		dsm_region_protect(list[i], j - i, prot_of[to]);
		for (size_t k = i; k < j; k++)
			L.pg[list[k]].access = to;
		i = j;
	}
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

static struct interval *interval_get(uint32_t node, uint32_t idx)
{
	if (node >= nodes_ || idx <= L.base[node] || idx > L.vt[node])
		return NULL;
	return &L.iv[node][idx - L.base[node] - 1];
}

static uint64_t vt_sum(const uint32_t *vt)
{
	uint64_t s = 0;
	for (size_t n = 0; n < nodes_; n++)
		s += vt[n];
	return s;
}

/* ---- diffs ---- */

/* The twin's interval is over: encode its diff, keep it, drop the twin. */
/* Encode page p against its twin and keep the diff as interval idx's (an
   empty one too when keep_empty). Returns its length. */
static size_t keep_diff(size_t p, uint32_t idx, int keep_empty)
{
	struct lrc_page *pg = &L.pg[p];
	unsigned char *buf = xmalloc(dsm_diff_max(dsm.page_size));
	size_t n = dsm_diff_make(dsm_page_alias(p), pg->twin, dsm.page_size, buf);
	if (!n && !keep_empty) {
		free(buf);
		return 0;
	}
	buf = xrealloc(buf, n);
	if (pg->ndiffs == pg->capdiffs) {
		pg->capdiffs = pg->capdiffs ? pg->capdiffs * 2 : 4;
		pg->diffs = xrealloc(pg->diffs, pg->capdiffs * sizeof(*pg->diffs));
	}
	pg->diffs[pg->ndiffs++] = (struct owndiff){.idx = idx, .len = (uint32_t)n, .data = buf};
	STAT_ADD(lrc_diffs, 1);
	STAT_ADD(lrc_diff_bytes, n);
	mem_add((int64_t)n + (int64_t)sizeof(struct owndiff));
	return n;
}

static void make_diff(size_t p)
{
	struct lrc_page *pg = &L.pg[p];
	if (pg->access == ACC_WRITE)
		dsm_fatal("lrc: diff of page %zu while it is writable", p);
	keep_diff(p, pg->twin_iv, 1);
	free(pg->twin);
	pg->twin = NULL;
	mem_add(-(int64_t)dsm.page_size);
}

static const struct owndiff *find_diff(size_t p, uint32_t idx)
{
	struct lrc_page *pg = &L.pg[p];
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
   renew the twin. Returns whether it changed. The page is not writable. */
static int diff_now(size_t p, uint32_t idx)
{
	struct lrc_page *pg = &L.pg[p];
	if (!keep_diff(p, idx, 0))
		return 0;
	memcpy(pg->twin, dsm_page_alias(p), dsm.page_size);
	return 1;
}

static void drop_twin(size_t p)
{
	struct lrc_page *pg = &L.pg[p];
	free(pg->twin);
	pg->twin = NULL;
	pg->hot = 0;
	mem_add(-(int64_t)dsm.page_size);
}

/*
 * End the open interval. A page twinned in it for the first time becomes
 * read-only and keeps its twin (its diff is made lazily); a hot page is
 * diffed now and stays writable with a fresh twin, unless it is invalid or
 * has been idle. One record lists the pages that changed.
 */
static void close_interval(void)
{
	if (!L.ndirty)
		return;
	uint32_t me = (uint32_t)dsm.node;
	uint32_t idx = L.vt[me] + 1;
	uint32_t *written = xmalloc(L.ndirty * sizeof(uint32_t));
	size_t nw = 0, keep = 0;
	qsort(L.dirty, L.ndirty, sizeof(size_t), cmp_size);
	protect_runs(L.dirty, L.ndirty, ACC_WRITE, ACC_READ); /* no write lands in a diff */
	for (size_t i = 0; i < L.ndirty; i++) {
		size_t p = L.dirty[i];
		struct lrc_page *pg = &L.pg[p];
		int valid = pg->access != ACC_NONE;
		if (!pg->hot) {
			pg->dirty = 0;
			if (valid && !memcmp(pg->twin, dsm_page_alias(p), dsm.page_size)) {
				drop_twin(p); /* twinned, not changed: nothing to tell */
				continue;
			}
			written[nw++] = (uint32_t)p;
			continue;
		}
		if (diff_now(p, idx)) {
			written[nw++] = (uint32_t)p;
			pg->idle = 0;
		} else {
			pg->idle++;
		}
		if (!valid || pg->idle >= HOT_IDLE) {
			drop_twin(p);
			pg->dirty = 0;
			continue;
		}
		L.dirty[keep++] = p;
	}
	L.ndirty = keep;
	protect_runs(L.dirty, L.ndirty, ACC_READ, ACC_WRITE); /* hot pages stay writable */
	if (nw) {
		size_t have = L.vt[me] - L.base[me];
		if (have == L.ivcap[me]) {
			L.ivcap[me] = L.ivcap[me] ? L.ivcap[me] * 2 : 16;
			L.iv[me] = xrealloc(L.iv[me], L.ivcap[me] * sizeof(struct interval));
		}
		struct interval *iv = &L.iv[me][have];
		iv->npages = (uint32_t)nw;
		iv->vt = xmalloc(nodes_ * sizeof(uint32_t));
		iv->pages = written;
		written = NULL;
		L.vt[me] = idx;
		memcpy(iv->vt, L.vt, nodes_ * sizeof(uint32_t));
		STAT_ADD(lrc_intervals, 1);
		mem_add((int64_t)(sizeof(*iv) + (nodes_ + iv->npages) * sizeof(uint32_t)));
	}
	free(written);
	for (size_t i = 0; i < L.ndirty; i++)
		L.pg[L.dirty[i]].twin_iv = L.vt[me] + 1; /* their twins start the next one */
}

/* Wire form of a record: node, idx, npages, vt[nodes], pages[npages] (u32). */
static size_t rec_bytes(const struct interval *iv)
{
	return (3 + nodes_ + iv->npages) * sizeof(uint32_t);
}

/* Append to *buf every record with idx > seen[n], for every node. */
static size_t encode_since(const uint32_t *seen, unsigned char **buf, size_t len)
{
	size_t need = len;
	for (size_t n = 0; n < nodes_; n++)
		for (uint32_t i = seen[n] + 1; i <= L.vt[n]; i++) {
			struct interval *iv = interval_get((uint32_t)n, i);
			if (!iv)
				dsm_fatal("lrc: interval %u of node %zu was collected", i, n);
			need += rec_bytes(iv);
		}
	*buf = xrealloc(*buf, need);
	size_t off = len;
	for (size_t n = 0; n < nodes_; n++)
		for (uint32_t i = seen[n] + 1; i <= L.vt[n]; i++) {
			struct interval *iv = interval_get((uint32_t)n, i);
			uint32_t head[3] = {(uint32_t)n, i, iv->npages};
			memcpy(*buf + off, head, sizeof(head));
			off += sizeof(head);
			memcpy(*buf + off, iv->vt, nodes_ * sizeof(uint32_t));
			off += nodes_ * sizeof(uint32_t);
			memcpy(*buf + off, iv->pages, iv->npages * sizeof(uint32_t));
			off += iv->npages * sizeof(uint32_t);
		}
	return off;
}

/* A notice for page p: make our own diff first (its interval is over), then
   invalidate the copy (listed in L.inval; take_records protects them all). */
static void add_notice(size_t p, uint32_t node, uint32_t idx)
{
	struct lrc_page *pg = &L.pg[p];
	if (pg->twin && pg->twin_iv != L.vt[dsm.node] + 1)
		make_diff(p); /* a closed interval's twin */
	/* A hot page's twin belongs to the open interval: it stays, and what is
	   fetched is written to it too (fetch_done), so that its diff is still
	   this node's writes only. */
	if (pg->access != ACC_NONE && !pg->npend)
		L.inval[L.ninval++] = p; /* listed once: its first pending notice */
	if (pg->prefetched && !pg->replies_left) {
		pg->prefetched = 0;
		STAT_ADD(prefetch_lost, 1);
	}
	if (pg->npend == pg->cappend) {
		pg->cappend = pg->cappend ? pg->cappend * 2 : 4;
		pg->pend = xrealloc(pg->pend, pg->cappend * sizeof(*pg->pend));
	}
	pg->pend[pg->npend++] = (struct notice){node, idx};
	mem_add(sizeof(struct notice));
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
static size_t take_records(const void *payload, size_t len)
{
	if (len % sizeof(uint32_t))
		dsm_fatal("lrc: malformed write notices (%zu bytes)", len);
	const uint32_t *w = payload;
	size_t words = len / sizeof(uint32_t), off = 0, count = 0;
	while (off < words) { /* validate and count */
		if (words - off < 3 + nodes_ || w[off] >= nodes_ ||
		    w[off + 2] > words - off - 3 - nodes_)
			dsm_fatal("lrc: malformed write notices");
		off += 3 + nodes_ + w[off + 2];
		count++;
	}
	struct recref *r = xmalloc(count * sizeof(*r));
	off = 0;
	for (size_t i = 0; i < count; i++) {
		r[i].w = w + off;
		off += 3 + nodes_ + w[off + 2];
	}
	qsort(r, count, sizeof(*r), rec_cmp);
	size_t fresh = 0;
	for (size_t i = 0; i < count; i++) {
		uint32_t node = r[i].w[0], idx = r[i].w[1], np = r[i].w[2];
		if (idx <= L.vt[node])
			continue;
		if (idx != L.vt[node] + 1)
			dsm_fatal("lrc: interval %u of node %u arrived before %u", idx, node,
				  L.vt[node] + 1);
		if (node == (uint32_t)dsm.node)
			dsm_fatal("lrc: told of this node's own interval %u", idx);
		size_t have = L.vt[node] - L.base[node];
		if (have == L.ivcap[node]) {
			L.ivcap[node] = L.ivcap[node] ? L.ivcap[node] * 2 : 16;
			L.iv[node] = xrealloc(L.iv[node], L.ivcap[node] * sizeof(struct interval));
		}
		struct interval *iv = &L.iv[node][have];
		iv->npages = np;
		iv->vt = xmalloc(nodes_ * sizeof(uint32_t));
		memcpy(iv->vt, r[i].w + 3, nodes_ * sizeof(uint32_t));
		iv->pages = xmalloc(np * sizeof(uint32_t) + 1);
		memcpy(iv->pages, r[i].w + 3 + nodes_, np * sizeof(uint32_t));
		L.vt[node] = idx;
		mem_add((int64_t)(sizeof(*iv) + (nodes_ + np) * sizeof(uint32_t)));
		for (uint32_t k = 0; k < np; k++) {
			if (iv->pages[k] >= dsm.npages)
				dsm_fatal("lrc: notice for page %u of %zu", iv->pages[k], dsm.npages);
			add_notice(iv->pages[k], node, idx);
		}
		fresh++;
	}
	free(r);
	qsort(L.inval, L.ninval, sizeof(size_t), cmp_size);
	protect_runs(L.inval, L.ninval, ACC_READ, ACC_NONE);
	protect_runs(L.inval, L.ninval, ACC_WRITE, ACC_NONE);
	L.ninval = 0;
	return fresh;
}

/* ---- fetching ---- */

/* Must page p be fetched before it can be read? */
static int stale(size_t p)
{
	return L.pg[p].have == HAVE_NONE || L.pg[p].npend;
}

static void send_to(int dst, uint16_t kind, uint64_t a, uint64_t b, const void *payload, size_t len)
{
	struct dsm_hdr h = {.kind = kind, .a = a, .b = b};
	dsm_send(dst, &h, payload, len);
}

/*
 * Diff requests travel in batches: DIFF_REQ's payload is, for each page, the
 * words [page, k, k intervals], and a = the number of pages; DIFF answers with,
 * for each page, [page, bytes] and that many bytes of [interval, length, diff]
 * entries. A fault, a prefetch and the fetches ahead of a walk gather theirs
 * between batch_begin and batch_send, so that one message per writer carries
 * them all.
 */
static void batch_begin(void)
{
	L.batching++;
}

static void batch_send(void)
{
	if (--L.batching)
		return;
	for (size_t n = 0; n < nodes_; n++) {
		if (!L.bqpages[n])
			continue;
		send_to((int)n, LOCUS_DSM_MSG_DIFF_REQ, L.bqpages[n], 0, L.bq[n],
			L.bqlen[n] * sizeof(uint32_t));
		L.bqlen[n] = L.bqpages[n] = 0;
	}
}

/* Ask for what page p lacks: every pending notice's diff and, for a page
   dropped at a collection, the whole page. */
static void start_fetch(size_t p)
{
	struct lrc_page *pg = &L.pg[p];
	pg->nflight = pg->npend;
	pg->replies_left = 0;
	batch_begin();
	for (size_t n = 0; n < nodes_; n++) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < pg->nflight; i++)
			k += pg->pend[i].node == n;
		if (!k)
			continue;
		if (L.bqlen[n] + 2 + k > L.bqcap[n]) {
			L.bqcap[n] = (L.bqlen[n] + 2 + k) * 2;
			L.bq[n] = xrealloc(L.bq[n], L.bqcap[n] * sizeof(uint32_t));
		}
		uint32_t *w = L.bq[n] + L.bqlen[n];
		w[0] = (uint32_t)p;
		w[1] = k;
		k = 2;
		for (uint32_t i = 0; i < pg->nflight; i++)
			if (pg->pend[i].node == n)
				w[k++] = pg->pend[i].idx;
		L.bqlen[n] += k;
		L.bqpages[n]++;
		pg->replies_left++;
	}
	batch_send();
	if (pg->have == HAVE_NONE) {
		send_to((int)(p % nodes_), LOCUS_DSM_MSG_PAGE_REQ, p, 0, NULL, 0);
		pg->replies_left++;
	}
	if (!pg->replies_left)
		dsm_fatal("lrc: fetch of page %zu with nothing to ask", p);
	L.fetches++;
}

struct applied {
	uint64_t order;
	uint32_t node;
	const unsigned char *data;
	uint32_t len;
};

static int applied_cmp(const void *a, const void *b)
{
	const struct applied *x = a, *y = b;
	if (x->order != y->order)
		return x->order < y->order ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static void gc_check(void);
static void make_writable(size_t p, int hot);

/* Every reply is in: write the page, then the diffs in happens-before order. */
static void fetch_done(size_t p)
{
	struct lrc_page *pg = &L.pg[p];
	size_t nd = 0;
	for (struct rx *x = pg->rx; x; x = x->next) {
		if (x->node == WHOLE) {
			if (x->len != dsm.page_size)
				dsm_fatal("lrc: page %zu arrived with %zu bytes", p, x->len);
			memcpy(dsm_page_alias(p), x->data, x->len);
			pg->have = HAVE_COPY;
			continue;
		}
		nd += pg->nflight; /* an upper bound on its entries */
	}
	struct applied *ap = xmalloc((nd + 1) * sizeof(*ap));
	size_t na = 0;
	for (struct rx *x = pg->rx; x; x = x->next) {
		if (x->node == WHOLE)
			continue;
		size_t off = 0;
		while (off < x->len) {
			uint32_t hd[2];
			if (x->len - off < sizeof(hd))
				dsm_fatal("lrc: malformed diff reply for page %zu", p);
			memcpy(hd, x->data + off, sizeof(hd));
			off += sizeof(hd);
			if (x->len - off < hd[1] || na >= nd)
				dsm_fatal("lrc: malformed diff reply for page %zu", p);
			struct interval *iv = interval_get(x->node, hd[0]);
			if (!iv)
				dsm_fatal("lrc: diff of unknown interval %u of node %u", hd[0], x->node);
			ap[na++] = (struct applied){.order = vt_sum(iv->vt),
						    .node = x->node,
						    .data = x->data + off,
						    .len = hd[1]};
			off += hd[1];
		}
	}
	qsort(ap, na, sizeof(*ap), applied_cmp);
	int to_twin = pg->twin && pg->twin_iv == L.vt[dsm.node] + 1;
	for (size_t i = 0; i < na; i++) {
		if (dsm_diff_apply(dsm_page_alias(p), dsm.page_size, ap[i].data, ap[i].len) != 0)
			dsm_fatal("lrc: malformed diff of page %zu from node %u", p, ap[i].node);
		if (to_twin)
			dsm_diff_apply(pg->twin, dsm.page_size, ap[i].data, ap[i].len);
	}
	free(ap);
	while (pg->rx) {
		struct rx *x = pg->rx;
		pg->rx = x->next;
		free(x);
	}
	if (pg->have == HAVE_NONE)
		dsm_fatal("lrc: page %zu fetched without its contents", p);
	pg->have = HAVE_COPY;
	if (pg->npend > pg->nflight)
		memmove(pg->pend, pg->pend + pg->nflight,
			(pg->npend - pg->nflight) * sizeof(*pg->pend));
	pg->npend -= pg->nflight;
	mem_add(-(int64_t)(pg->nflight * sizeof(struct notice)));
	pg->nflight = 0;
	L.fetches--;
	if (pg->npend) { /* notices that came meanwhile */
		if (pg->waiters || (L.gc_now && manages(p)))
			start_fetch(p);
		gc_check();
		return;
	}
	if (pg->want_write) {
		pg->want_write = 0;
		make_writable(p, 1);
	} else {
		set_access(p, ACC_READ);
	}
	while (pg->waiters) {
		struct dsm_req *r = pg->waiters;
		pg->waiters = r->wnext;
		dsm_req_done(r, r->result);
	}
	gc_check();
}

static void reply_arrived(size_t p, uint32_t node, const void *data, size_t len)
{
	struct lrc_page *pg = &L.pg[p];
	if (!pg->replies_left)
		dsm_fatal("lrc: unexpected reply for page %zu from node %u", p, node);
	struct rx *x = xmalloc(sizeof(*x) + len);
	x->node = node;
	x->len = len;
	memcpy(x->data, data, len);
	x->next = pg->rx;
	pg->rx = x;
	if (--pg->replies_left == 0)
		fetch_done(p);
}

/* A writer answers a batch: the diffs of each page for the intervals asked. */
static void serve_diffs(uint64_t pages, int to, const void *payload, size_t len)
{
	if (len % sizeof(uint32_t))
		dsm_fatal("lrc: malformed diff request from node %d", to);
	const uint32_t *w = payload;
	size_t words = len / sizeof(uint32_t), total = 0, off = 0;
	for (uint64_t q = 0; q < pages; q++) { /* check, make the diffs, size the reply */
		if (words - off < 2 || w[off] >= dsm.npages || w[off + 1] > words - off - 2)
			dsm_fatal("lrc: malformed diff request from node %d", to);
		size_t p = w[off];
		total += 2 * sizeof(uint32_t);
		for (uint32_t i = 0; i < w[off + 1]; i++) {
			const struct owndiff *d = find_diff(p, w[off + 2 + i]);
			if (!d)
				dsm_fatal("lrc: node %d asked for the diff of page %zu in interval "
					  "%u, which this node does not have",
					  to, p, w[off + 2 + i]);
			total += 2 * sizeof(uint32_t) + d->len;
		}
		off += 2 + w[off + 1];
	}
	if (off != words)
		dsm_fatal("lrc: malformed diff request from node %d", to);
	unsigned char *out = xmalloc(total);
	size_t o = 0;
	off = 0;
	for (uint64_t q = 0; q < pages; q++) {
		size_t p = w[off], start = o;
		o += 2 * sizeof(uint32_t);
		for (uint32_t i = 0; i < w[off + 1]; i++) {
			const struct owndiff *d = find_diff(p, w[off + 2 + i]);
			uint32_t hd[2] = {w[off + 2 + i], d->len};
			memcpy(out + o, hd, sizeof(hd));
			o += sizeof(hd);
			memcpy(out + o, d->data, d->len);
			o += d->len;
		}
		uint32_t sec[2] = {(uint32_t)p, (uint32_t)(o - start - 2 * sizeof(uint32_t))};
		memcpy(out + start, sec, sizeof(sec));
		off += 2 + w[off + 1];
	}
	send_to(to, LOCUS_DSM_MSG_DIFF, pages, 0, out, total);
	free(out);
}

/* A batch of replies: each page's section goes to its fetch. */
static void diffs_arrived(uint64_t pages, uint32_t from, const unsigned char *data, size_t len)
{
	size_t off = 0;
	for (uint64_t q = 0; q < pages; q++) {
		uint32_t sec[2];
		if (len - off < sizeof(sec))
			dsm_fatal("lrc: malformed diff reply from node %u", from);
		memcpy(sec, data + off, sizeof(sec));
		off += sizeof(sec);
		if (sec[0] >= dsm.npages || len - off < sec[1])
			dsm_fatal("lrc: malformed diff reply from node %u", from);
		reply_arrived(sec[0], from, data + off, sec[1]);
		off += sec[1];
	}
	if (off != len)
		dsm_fatal("lrc: malformed diff reply from node %u", from);
}

/* ---- faults and prefetch ---- */

/* A valid page becomes writable in the open interval: twin it (a closed
   interval's twin gets its diff first) and put it in the write set. hot: the
   program says it writes the page every interval (a write prefetch). */
static void make_writable(size_t p, int hot)
{
	struct lrc_page *pg = &L.pg[p];
	uint32_t cur = L.vt[dsm.node] + 1;
	pg->have = HAVE_COPY; /* the zero page, or a current copy */
	if (pg->twin && pg->twin_iv != cur)
		make_diff(p);
	if (!pg->twin) {
		pg->twin = xmalloc(dsm.page_size);
		memcpy(pg->twin, dsm_page_alias(p), dsm.page_size);
		pg->twin_iv = cur;
		pg->hot = hot || (pg->wrote_iv && cur - pg->wrote_iv <= HOT_GAP);
		pg->idle = 0;
		pg->wrote_iv = cur;
		STAT_ADD(lrc_twins, 1);
		mem_add((int64_t)dsm.page_size);
	}
	if (!pg->dirty) {
		pg->dirty = 1;
		L.dirty[L.ndirty++] = p;
	}
	set_access(p, ACC_WRITE);
}

static void lrc_fault(struct dsm_req *r)
{
	size_t p = r->a;
	int write = (int)r->b;
	if (p >= dsm.npages)
		dsm_fatal("fault on page %zu of %zu", p, dsm.npages);
	struct lrc_page *pg = &L.pg[p];
	uint8_t need = write ? ACC_WRITE : ACC_READ;
	if (pg->access >= need) {
		STAT_ADD(faults[LOCUS_DSM_FAULT_LOCAL], 1);
		dsm_req_done(r, DSM_LOCAL);
		return;
	}
	if (pg->prefetched) {
		pg->prefetched = 0;
		if (pg->replies_left)
			STAT_ADD(prefetch_late, 1);
	}
	if (pg->replies_left) { /* this node's fetch is in flight: wait for it */
		STAT_ADD(faults[LOCUS_DSM_FAULT_COMBINED], 1);
		r->result = DSM_COMBINED;
		r->wnext = pg->waiters;
		pg->waiters = r;
		return;
	}
	if (stale(p)) {
		STAT_ADD(faults[write ? LOCUS_DSM_FAULT_WRITE : LOCUS_DSM_FAULT_READ], 1);
		r->result = DSM_REMOTE;
		r->wnext = NULL;
		pg->waiters = r;
		batch_begin();
		start_fetch(p); /* a write faults again on the fresh copy and twins it */
		/* A node walking pages in order: fetch the next ones with this one. */
		size_t run = dsm_run_ahead(p);
		for (size_t q = p + 1; q <= p + run && q < dsm.npages; q++)
			if (stale(q) && !L.pg[q].replies_left) {
				STAT_ADD(run_ahead, 1);
				start_fetch(q);
			}
		batch_send();
		return;
	}
	STAT_ADD(faults[LOCUS_DSM_FAULT_LOCAL], 1);
	if (!write) {
		pg->have = HAVE_COPY; /* the zero page, or a current copy */
		set_access(p, ACC_READ);
		dsm_req_done(r, DSM_LOCAL);
		return;
	}
	make_writable(p, 0);
	/* A node writing pages in order: make the next valid ones writable too
	   (a page twinned but left as it was gets no notice: close_interval). */
	static struct dsm_walks writes;
	size_t run = dsm_walk(&writes, p);
	for (size_t q = p + 1; q <= p + run && q < dsm.npages; q++)
		if (!stale(q) && !L.pg[q].replies_left && L.pg[q].access != ACC_WRITE) {
			STAT_ADD(run_ahead, 1);
			make_writable(q, 0);
		}
	dsm_req_done(r, DSM_LOCAL);
}

/*
 * Non-binding prefetch (seed 001 §3.1): a page with notices pending, or never
 * held, is fetched as a fault would, with nobody waiting; what arrives is
 * written at once, and the page becomes readable if no notice came in
 * meanwhile (a later notice stays pending and is fetched at the next access,
 * after the prefetched diffs: a prefetch never changes what a program reads).
 * A page that is valid or already being fetched is dropped at once.
 */
static void lrc_prefetch(size_t first, size_t count, int write)
{
	batch_begin();
	for (size_t p = first; p < first + count && p < dsm.npages; p++) {
		struct lrc_page *pg = &L.pg[p];
		if (write && !stale(p) && !pg->replies_left && pg->access != ACC_WRITE) {
			/* Every node may write a valid page: make it writable now, and
			   keep it so from interval to interval (hot). */
			STAT_ADD(prefetches, 1);
			make_writable(p, 1);
			continue;
		}
		if (pg->replies_left || !stale(p)) {
			STAT_ADD(prefetch_unneeded, 1);
			if (!pg->replies_left && pg->access == ACC_NONE) {
				pg->have = HAVE_COPY; /* valid, not mapped yet: map it now */
				set_access(p, ACC_READ);
			}
			continue;
		}
		STAT_ADD(prefetches, 1);
		pg->prefetched = 1;
		pg->want_write = (uint8_t)write;
		start_fetch(p);
	}
	batch_send();
}

/* ---- messages ---- */

static void gc_free(void);

static void lrc_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	size_t p = h->a;
	if ((h->kind == LOCUS_DSM_MSG_PAGE_REQ || h->kind == LOCUS_DSM_MSG_PAGE) &&
	    p >= dsm.npages)
		dsm_fatal("message about page %zu of %zu", p, dsm.npages);
	switch (h->kind) {
	case LOCUS_DSM_MSG_PAGE_REQ:
		if (!manages(p) || L.pg[p].have != HAVE_COPY)
			dsm_fatal("lrc: node %d asked node %d for page %zu, which it does not manage",
				  h->src, dsm.node, p);
		send_to(h->src, LOCUS_DSM_MSG_PAGE, p, 0, dsm_page_alias(p), dsm.page_size);
		break;
	case LOCUS_DSM_MSG_PAGE:
		reply_arrived(p, WHOLE, payload, len);
		break;
	case LOCUS_DSM_MSG_DIFF_REQ:
		serve_diffs(h->a, h->src, payload, len);
		break;
	case LOCUS_DSM_MSG_DIFF:
		diffs_arrived(h->a, h->src, payload, len);
		break;
	case LOCUS_DSM_MSG_GC:
		if (h->b == 1 && dsm.node == 0) {
			if (++L.gc_ready == dsm.nodes)
				gc_free();
		} else if (h->b == 2 && dsm.node != 0) {
			gc_free();
		} else {
			dsm_fatal("lrc: stray collection message from node %d", h->src);
		}
		break;
	default:
		dsm_fatal("lrc: message kind %u from node %d", h->kind, h->src);
	}
}

static uint64_t lrc_tick(uint64_t now)
{
	(void)now;
	return UINT64_MAX;
}

/* ---- synchronization ---- */

static size_t lrc_lock_ask(void **out)
{
	*out = xmalloc(nodes_ * sizeof(uint32_t));
	memcpy(*out, L.vt, nodes_ * sizeof(uint32_t));
	return nodes_ * sizeof(uint32_t);
}

static size_t lrc_lock_pass(uint32_t lock, const void *ask, size_t len, void **out)
{
	(void)lock;
	if (len != nodes_ * sizeof(uint32_t))
		dsm_fatal("lrc: lock request without a vector time");
	close_interval(); /* what was written here since the release goes along */
	unsigned char *buf = NULL;
	size_t n = encode_since(ask, &buf, 0);
	*out = buf;
	return n;
}

static void lrc_acquire(uint32_t lock, const void *grant, size_t len)
{
	(void)lock;
	close_interval();
	if (len)
		take_records(grant, len);
}

static void lrc_release(uint32_t lock)
{
	(void)lock;
	close_interval();
}

/* Enter: metadata bytes (u64), vt, then the own records node 0 lacks. */
static size_t lrc_barrier_enter(void **out)
{
	close_interval();
	size_t head = sizeof(uint64_t) + nodes_ * sizeof(uint32_t);
	unsigned char *buf = xmalloc(head);
	uint64_t mem = ld_relaxed(&dsm.meta_bytes);
	memcpy(buf, &mem, sizeof(mem));
	memcpy(buf + sizeof(mem), L.vt, nodes_ * sizeof(uint32_t));
	uint32_t *seen = xmalloc(nodes_ * sizeof(uint32_t));
	memcpy(seen, L.vt, nodes_ * sizeof(uint32_t)); /* nothing of the others */
	seen[dsm.node] = L.bar_sent;
	size_t n = encode_since(seen, &buf, head);
	free(seen);
	*out = buf;
	return n;
}

static void lrc_barrier_arrive(int node, const void *p, size_t len)
{
	if (len < sizeof(uint64_t) + nodes_ * sizeof(uint32_t))
		dsm_fatal("lrc: barrier entry from node %d without a vector time", node);
	free(L.arrived[node]);
	L.arrived[node] = xmalloc(len);
	memcpy(L.arrived[node], p, len);
	L.arrived_len[node] = len;
}

/* Leave: gc flag (u32), then the records node n lacks. Node 0 takes in
   everything first. */
static size_t lrc_barrier_leave_for(int node, void **out)
{
	size_t head = sizeof(uint64_t) + nodes_ * sizeof(uint32_t);
	if (node == 0) {
		uint64_t most = 0;
		for (size_t n = 0; n < nodes_; n++) {
			if (!L.arrived[n])
				dsm_fatal("lrc: barrier left before node %zu arrived", n);
			uint64_t mem;
			memcpy(&mem, L.arrived[n], sizeof(mem));
			if (mem > most)
				most = mem;
			if (n != 0)
				take_records((unsigned char *)L.arrived[n] + head,
					     L.arrived_len[n] - head);
		}
		L.gc_now = dsm.cfg.gc_bytes && most > dsm.cfg.gc_bytes;
		*out = NULL;
		return 0;
	}
	const uint32_t *seen = (const uint32_t *)((unsigned char *)L.arrived[node] + sizeof(uint64_t));
	unsigned char *buf = xmalloc(sizeof(uint32_t));
	uint32_t gc = (uint32_t)L.gc_now;
	memcpy(buf, &gc, sizeof(gc));
	size_t n = encode_since(seen, &buf, sizeof(uint32_t));
	*out = buf;
	return n;
}

static void gc_start(void);

static int lrc_barrier_leave(const void *p, size_t len)
{
	if (dsm.node == 0) {
		for (size_t n = 0; n < nodes_; n++) {
			free(L.arrived[n]);
			L.arrived[n] = NULL;
		}
	} else {
		uint32_t gc;
		if (len < sizeof(gc))
			dsm_fatal("lrc: barrier exit without its notices");
		memcpy(&gc, p, sizeof(gc));
		L.gc_now = (int)gc;
		take_records((const unsigned char *)p + sizeof(gc), len - sizeof(gc));
	}
	L.bar_sent = L.vt[dsm.node];
	if (!L.gc_now)
		return 1;
	gc_start();
	return 0;
}

/* ---- garbage collection at a barrier ---- */

static void gc_start(void)
{
	STAT_ADD(lrc_gcs, 1);
	L.gc_reported = 0;
	batch_begin();
	for (size_t p = (size_t)dsm.node; p < dsm.npages; p += nodes_) {
		struct lrc_page *pg = &L.pg[p];
		if (pg->npend && !pg->replies_left)
			start_fetch(p);
	}
	batch_send();
	gc_check();
}

/* This node's managed pages are current and nothing is in flight: say so. */
static void gc_check(void)
{
	if (!L.gc_now || L.gc_reported || L.fetches)
		return;
	L.gc_reported = 1;
	if (dsm.node == 0) {
		if (++L.gc_ready == dsm.nodes)
			gc_free();
	} else {
		send_to(0, LOCUS_DSM_MSG_GC, 0, 1, NULL, 0);
	}
}

static void gc_free(void)
{
	if (dsm.node == 0) {
		L.gc_ready = 0;
		for (int n = 1; n < dsm.nodes; n++)
			send_to(n, LOCUS_DSM_MSG_GC, 0, 2, NULL, 0);
	}
	for (size_t p = 0; p < dsm.npages; p++) {
		struct lrc_page *pg = &L.pg[p];
		if (pg->replies_left || (pg->dirty && !pg->hot))
			dsm_fatal("lrc: collecting page %zu while it is in use", p);
		if (pg->dirty && pg->access == ACC_WRITE)
			set_access(p, ACC_READ); /* hot: its next write twins it again */
		pg->dirty = pg->hot = pg->want_write = 0;
		pg->wrote_iv = 0;
		free(pg->twin);
		pg->twin = NULL;
		for (uint32_t i = 0; i < pg->ndiffs; i++)
			free(pg->diffs[i].data);
		free(pg->diffs);
		pg->diffs = NULL;
		pg->ndiffs = pg->capdiffs = 0;
		if (pg->npend) {
			if (manages(p))
				dsm_fatal("lrc: managed page %zu not current at collection", p);
			pg->have = HAVE_NONE; /* fetched whole from its manager next time */
		}
		free(pg->pend);
		pg->pend = NULL;
		pg->npend = pg->cappend = 0;
	}
	for (size_t n = 0; n < nodes_; n++) {
		for (uint32_t i = 0; i < L.vt[n] - L.base[n]; i++) {
			free(L.iv[n][i].vt);
			free(L.iv[n][i].pages);
		}
		free(L.iv[n]);
		L.iv[n] = NULL;
		L.ivcap[n] = 0;
		L.base[n] = L.vt[n];
	}
	st_relaxed(&dsm.meta_bytes, 0);
	L.ndirty = 0;
	L.gc_now = 0;
	dsm_sync_barrier_done();
}

const struct dsm_proto dsm_proto_lrc = {
	.name = "lrc",
	.init = lrc_init,
	.fault = lrc_fault,
	.message = lrc_message,
	.tick = lrc_tick,
	.prefetch = lrc_prefetch,
	.acquire = lrc_acquire,
	.release = lrc_release,
	.lock_ask = lrc_lock_ask,
	.lock_pass = lrc_lock_pass,
	.barrier_enter = lrc_barrier_enter,
	.barrier_arrive = lrc_barrier_arrive,
	.barrier_leave_for = lrc_barrier_leave_for,
	.barrier_leave = lrc_barrier_leave,
};
