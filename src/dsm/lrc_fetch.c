/* lrc: fetching the diffs a page lacks, in batches (proto_lrc.c says the
   protocol; lrc.h the shared state). */
#include <string.h>

#include "diff.h"
#include "lrc.h"

/*
 * Diff requests travel in batches: DIFF_REQ's payload is, for each page, the
 * words [page, k, k intervals], and a = the number of pages; DIFF answers with,
 * for each page, [page, bytes] and that many bytes of [interval, length, diff]
 * entries. A fault, a prefetch and the fetches ahead of a walk gather theirs
 * between lrc_batch_begin and lrc_batch_send, so that one message per
 * writer carries them all.
 */
void lrc_batch_begin(void)
{
	lrc.batching++;
}

void lrc_batch_send(void)
{
	if (--lrc.batching)
		return;
	lrc_class_send();
	for (size_t n = 0; n < lrc.nodes; n++) {
		if (!lrc.bqpages[n])
			continue;
		lrc_send((int)n, LOCUS_DSM_MSG_DIFF_REQ, lrc.bqpages[n], 0, lrc.bq[n],
			 lrc.bqlen[n] * sizeof(uint32_t));
		lrc.bqlen[n] = lrc.bqpages[n] = 0;
	}
}

static void fetch_done(size_t p);

/* Ask for what page p lacks: every pending notice's diff and, for a page
   dropped at a collection, the whole page; diffs pushed here (lrc_push.c)
   are not asked for. */
void lrc_start_fetch(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	pg->nflight = pg->npend;
	pg->replies_left = 0;
	uint8_t *covered = NULL;
	if (pg->pushed) {
		covered = lrc_xmalloc(pg->nflight);
		struct rx *x = lrc_push_claim(p, pg->nflight, covered);
		while (x) {
			struct rx *next = x->next;
			x->next = pg->rx;
			pg->rx = x;
			x = next;
		}
	}
#define ASKED(i) (pg->pend[i].node == n && !(covered && covered[i]))
	lrc_batch_begin();
	for (size_t n = 0; n < lrc.nodes; n++) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < pg->nflight; i++)
			k += ASKED(i);
		if (!k)
			continue;
		if (lrc.bqlen[n] + 2 + k > lrc.bqcap[n]) {
			lrc.bqcap[n] = (lrc.bqlen[n] + 2 + k) * 2;
			lrc.bq[n] = lrc_xrealloc(lrc.bq[n], lrc.bqcap[n] * sizeof(uint32_t));
		}
		uint32_t *w = lrc.bq[n] + lrc.bqlen[n];
		w[0] = (uint32_t)p;
		w[1] = k;
		k = 2;
		for (uint32_t i = 0; i < pg->nflight; i++)
			if (ASKED(i))
				w[k++] = pg->pend[i].idx;
		lrc.bqlen[n] += k;
		lrc.bqpages[n]++;
		pg->replies_left++;
	}
#undef ASKED
	lrc_batch_send();
	if (pg->have == HAVE_NONE) {
		lrc_send(dsm_home_of(p), LOCUS_DSM_MSG_PAGE_REQ, p, 0, NULL, 0);
		pg->replies_left++;
	}
	int local = covered && pg->rx;
	free(covered);
	if (!pg->replies_left && !local)
		dsm_fatal("lrc: fetch of page %zu with nothing to ask", p);
	lrc.fetches++;
	if (!pg->replies_left) /* everything was pushed here */
		fetch_done(p);
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

/* Every reply is in: write the page, then the diffs in happens-before order. */
static void fetch_done(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
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
	struct applied *ap = lrc_xmalloc((nd + 1) * sizeof(*ap));
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
			struct interval *iv = lrc_interval_get(x->node, hd[0]);
			if (!iv)
				dsm_fatal("lrc: diff of unknown interval %u of node %u", hd[0],
					  x->node);
			ap[na++] = (struct applied){.order = lrc_vt_sum(iv->vt),
						    .node = x->node,
						    .data = x->data + off,
						    .len = hd[1]};
			off += hd[1];
		}
	}
	qsort(ap, na, sizeof(*ap), applied_cmp);
	int to_twin = pg->twin && pg->twin_iv == lrc.vt[dsm.node] + 1;
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
	if (pg->cls == CLS_UNKNOWN) /* a manager's, at a collection: it had notices */
		pg->cls = CLS_SHARED;
	if (pg->npend > pg->nflight)
		memmove(pg->pend, pg->pend + pg->nflight,
			(pg->npend - pg->nflight) * sizeof(*pg->pend));
	pg->npend -= pg->nflight;
	lrc_mem_add(-(int64_t)(pg->nflight * sizeof(struct notice)));
	pg->nflight = 0;
	lrc.fetches--;
	if (pg->npend) { /* notices that came meanwhile */
		if (pg->waiters || (lrc.gc_now && lrc_manages(p)))
			lrc_start_fetch(p);
		lrc_gc_check();
		return;
	}
	if (pg->want_write) {
		pg->want_write = 0;
		lrc_make_writable(p, 1);
	} else if (to_twin && pg->hot && pg->dirty) {
		/* A page this node writes at every interval, brought up to date
		   (its twin too): writable again at once, as it was before the
		   notices came, instead of one more fault for its next write. */
		lrc_make_writable(p, 1);
	} else {
		lrc_set_access(p, ACC_READ);
	}
	while (pg->waiters) {
		struct dsm_req *r = pg->waiters;
		pg->waiters = r->wnext;
		dsm_req_done(r, r->result);
	}
	lrc_gc_check();
}

void lrc_reply_arrived(size_t p, uint32_t node, const void *data, size_t len)
{
	struct lrc_page *pg = lrc_page(p);
	if (!pg->replies_left)
		dsm_fatal("lrc: unexpected reply for page %zu from node %u", p, node);
	struct rx *x = lrc_xmalloc(sizeof(*x) + len);
	x->node = node;
	x->len = len;
	memcpy(x->data, data, len);
	x->next = pg->rx;
	pg->rx = x;
	if (--pg->replies_left == 0)
		fetch_done(p);
}

/* A writer answers a batch: the diffs of each page for the intervals asked. */
void lrc_serve_diffs(uint64_t pages, int to, const void *payload, size_t len)
{
	if (len % sizeof(uint32_t))
		dsm_fatal("lrc: malformed diff request from node %d", to);
	const uint32_t *w = payload;
	size_t words = len / sizeof(uint32_t), total = 0, off = 0, nd = 0;
	/* Each diff is looked up once; kept as its index in the page's list, which
	   a later lookup may grow (a lazy diff made), never reorder. */
	uint32_t *found = lrc_xmalloc(words * sizeof(*found));
	for (uint64_t q = 0; q < pages; q++) { /* check, make the diffs, size the reply */
		if (words - off < 2 || w[off] >= dsm.npages || w[off + 1] > words - off - 2)
			dsm_fatal("lrc: malformed diff request from node %d", to);
		size_t p = w[off];
		lrc_push_subscribe(p, to); /* its next diffs go there at a barrier */
		total += 2 * sizeof(uint32_t);
		for (uint32_t i = 0; i < w[off + 1]; i++) {
			const struct owndiff *d = lrc_find_diff(p, w[off + 2 + i]);
			if (!d)
				dsm_fatal("lrc: node %d asked for the diff of page %zu in interval "
					  "%u, which this node does not have",
					  to, p, w[off + 2 + i]);
			found[nd++] = (uint32_t)(d - lrc.pg[p].diffs);
			total += 2 * sizeof(uint32_t) + d->len;
		}
		off += 2 + w[off + 1];
	}
	if (off != words)
		dsm_fatal("lrc: malformed diff request from node %d", to);
	size_t cap;
	unsigned char *out = dsm_keep_get(total, &cap);
	if (!out)
		dsm_fatal("lrc: out of memory (%zu bytes)", total);
	size_t o = 0;
	off = 0;
	nd = 0;
	for (uint64_t q = 0; q < pages; q++) {
		size_t p = w[off], start = o;
		o += 2 * sizeof(uint32_t);
		for (uint32_t i = 0; i < w[off + 1]; i++) {
			const struct owndiff *d = &lrc.pg[p].diffs[found[nd++]];
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
	lrc_send(to, LOCUS_DSM_MSG_DIFF, pages, 0, out, total);
	dsm_keep_put(out, cap);
	free(found);
}

/* A batch of replies: each page's section goes to its fetch. */
void lrc_diffs_arrived(uint64_t pages, uint32_t from, const unsigned char *data, size_t len)
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
		lrc_reply_arrived(sec[0], from, data + off, sec[1]);
		off += sec[1];
	}
	if (off != len)
		dsm_fatal("lrc: malformed diff reply from node %u", from);
}
