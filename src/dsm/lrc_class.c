/*
 * lrc: pages private to one node (proto_lrc.c says the protocol; lrc.h the
 * shared state). A page only one node ever uses needs none of lrc's work:
 * no twin at its first write in an interval, no diff, no write notice, and
 * it stays writable from interval to interval, as sc's owner's pages do.
 *
 * Who uses a page is known at its home, in a directory entry (lrc_page.dir):
 * nobody yet, the one node it is private to, or shared. A node's first
 * access to a page asks the home (the page's class, lrc_page.cls); a home
 * answers its own asks at once. The first node to ask gets the page as
 * private, with nothing to fetch: nobody else has used it, so it is the zero
 * page. When another node asks for a page private to a node, the home takes
 * it back (PAGE_FWD): that node write-protects it, marks it shared, and sends
 * its contents to the home, which keeps them as its copy; from then on its
 * writes are twinned and noticed as every shared page's. Every node that asks
 * for a shared page gets the home's copy with the answer, and then fetches
 * the diffs of its pending notices as for a page dropped at a collection
 * (proto_lrc.c): the home's copy holds every write of the private time and
 * the notices every write since. A page never goes back to private.
 *
 * Asks also go ahead of a walk, as fetches do (a node writing pages in order
 * asks for the next ones with the one it faulted on), and with a prefetch.
 * Such an ask never takes a page from another node (the answer is "not
 * now", and the fault asks again), but it may be given pages it then never
 * uses: one past the end of its part of an array is the next node's first.
 * Taken back before this node used it (no access, no fault waiting), such a
 * page is handed back unused, and the home gives it to the asker as private
 * instead of making it shared.
 *
 * Messages, batched per home between lrc_batch_begin and lrc_batch_send:
 *   PAGE_REQ b=1  asks of faults: a pages, their numbers (u32) in the payload
 *   PAGE_REQ b=2  asks ahead: the same
 *   PAGE b=1      private: a pages granted, their numbers in the payload
 *   PAGE b=2      shared: page a, the home's copy in the payload
 *   PAGE_FWD      home -> the node page a is private to: give it back
 *   PAGE b=3      that node -> the home: page a's contents
 *   PAGE b=4      that node -> the home: page a, never used here
 *   PAGE b=5      not now (to asks ahead): a pages, their numbers
 * (PAGE_REQ and PAGE with b=0 are the whole-page fetch of lrc_fetch.c.)
 *
 * LOCUS_DSM_LRC_PRIVATE=0 turns it off: every page is shared from the start.
 */
#include <string.h>

#include "lrc.h"

enum { GRANT_PRIVATE = 1, ANSWER_SHARED = 2, GIVEN_BACK = 3, UNUSED = 4, NOT_NOW = 5 };
#define DIR_SHARED 0xff

/* Asks being gathered, per kind (LRC_ASK_FAULT, LRC_ASK_AHEAD) and home. */
struct pagelist {
	uint32_t *w;
	size_t len, cap;
};
static struct pagelist *asks[3];

static void push(struct pagelist *l, uint32_t v)
{
	if (l->len == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->w = lrc_xrealloc(l->w, l->cap * sizeof(uint32_t));
	}
	l->w[l->len++] = v;
}

/* Every fault waiting on page p tries again (it now knows the class). */
static void wake(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	while (pg->waiters) {
		struct dsm_req *r = pg->waiters;
		pg->waiters = r->wnext;
		dsm_req_done(r, r->result);
	}
}

static void become(size_t p, uint8_t cls)
{
	struct lrc_page *pg = lrc_page(p);
	pg->cls = cls;
	pg->asking = 0;
	if (cls == CLS_PRIVATE)
		PROTO_STAT_ADD(LRC_ST_PRIVATE, 1);
}

static void answer_shared(size_t p, int to)
{
	lrc_send(to, LOCUS_DSM_MSG_PAGE, p, ANSWER_SHARED, lrc_served(p), dsm.page_size);
}

/* Page p, private here, becomes shared: its next write twins it. */
static void give_up(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->cls != CLS_PRIVATE)
		dsm_fatal("lrc: page %zu taken back from node %d, which does not hold it private",
			  p, dsm.node);
	if (pg->access == ACC_WRITE)
		lrc_set_access(p, ACC_READ);
	pg->cls = CLS_SHARED;
	PROTO_STAT_ADD(LRC_ST_MADE_SHARED, 1);
}

/* At the home: page p is shared now; answer every node that waited. */
static void shared_now(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	pg->dir = DIR_SHARED;
	pg->revoking = 0;
	uint64_t wait = pg->wait;
	pg->wait = 0;
	for (int n = 0; n < dsm.nodes; n++) {
		if (!(wait >> n & 1))
			continue;
		if (n == dsm.node) {
			become(p, CLS_SHARED);
			wake(p);
		} else {
			answer_shared(p, n);
		}
	}
}

static uint8_t decide(size_t p, int n, int ask);

/* At the home: the node page p was private to never used it. The nodes
   that wait ask again, in order: the first gets it. */
static void unused_now(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	uint64_t wait = pg->wait;
	pg->dir = 0;
	pg->revoking = 0;
	pg->wait = 0;
	for (int n = 0; n < dsm.nodes; n++) {
		if (!(wait >> n & 1) || decide(p, n, LRC_ASK_FAULT) != CLS_PRIVATE)
			continue;
		if (n == dsm.node) {
			become(p, CLS_PRIVATE);
			wake(p);
		} else {
			uint32_t w = (uint32_t)p;
			lrc_send(n, LOCUS_DSM_MSG_PAGE, 1, GRANT_PRIVATE, &w, sizeof(w));
		}
	}
}

/* Page p is private here and was never used: no access, no fault waiting
   (a fault that asked makes it used when the answer comes). */
static int unused(size_t p)
{
	const struct lrc_page *pg = &lrc.pg[p];
	return pg->cls == CLS_PRIVATE && pg->access == ACC_NONE && pg->have == HAVE_ZERO &&
	       !pg->waiters;
}

/* At the home: node n asks for page p (ask: LRC_ASK_*). Returns the class it
   has now, or CLS_UNKNOWN when it is private to another node: an ask of a
   fault then waits until that node gives it up, one ahead does not. */
static uint8_t decide(size_t p, int n, int ask)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->dir == 0 || pg->dir == 1 + n) {
		pg->dir = (uint8_t)(1 + n);
		return CLS_PRIVATE;
	}
	if (pg->dir == DIR_SHARED)
		return CLS_SHARED;
	if (ask == LRC_ASK_AHEAD)
		return CLS_UNKNOWN;
	pg->wait |= 1ull << n;
	if (!pg->revoking) {
		int owner = pg->dir - 1;
		pg->revoking = 1;
		if (owner == dsm.node && unused(p)) {
			pg->cls = CLS_UNKNOWN;
			unused_now(p);
		} else if (owner == dsm.node) {
			give_up(p); /* the home's copy is the page */
			shared_now(p);
		} else {
			lrc_send(owner, LOCUS_DSM_MSG_PAGE_FWD, p, 0, NULL, 0);
		}
	}
	return CLS_UNKNOWN;
}

uint8_t lrc_class_of(size_t p, int ask)
{
	struct lrc_page *pg = &lrc.pg[p];
	if (pg->cls != CLS_UNKNOWN)
		return pg->cls;
	pg = lrc_page(p);
	if (!lrc_set.private_pages) {
		pg->cls = CLS_SHARED;
		return CLS_SHARED;
	}
	if (pg->asking || !ask)
		return CLS_UNKNOWN;
	int home = dsm_home_of(p);
	if (home == dsm.node) {
		uint8_t c = decide(p, dsm.node, ask);
		if (c != CLS_UNKNOWN)
			become(p, c);
		else if (pg->cls == CLS_UNKNOWN && ask == LRC_ASK_FAULT)
			pg->asking = 1;
		return pg->cls;
	}
	pg->asking = 1;
	pg->ask_gc = lrc.gc_epoch;
	push(&asks[ask][home], (uint32_t)p);
	return CLS_UNKNOWN;
}

void lrc_class_send(void)
{
	for (int k = LRC_ASK_FAULT; k <= LRC_ASK_AHEAD && asks[k]; k++)
		for (size_t n = 0; n < lrc.nodes; n++) {
			struct pagelist *l = &asks[k][n];
			if (!l->len)
				continue;
			lrc_send((int)n, LOCUS_DSM_MSG_PAGE_REQ, l->len, (uint64_t)k, l->w,
				 l->len * sizeof(uint32_t));
			l->len = 0;
		}
}

int lrc_class_init(void)
{
	asks[LRC_ASK_FAULT] = calloc(lrc.nodes, sizeof(struct pagelist));
	asks[LRC_ASK_AHEAD] = calloc(lrc.nodes, sizeof(struct pagelist));
	return asks[LRC_ASK_FAULT] && asks[LRC_ASK_AHEAD] ? 0 : -1;
}

static void check_page(uint64_t p, int from)
{
	if (p >= dsm.npages)
		dsm_fatal("lrc: node %d sent a message about page %llu of %zu", from,
			  (unsigned long long)p, dsm.npages);
}

static const uint32_t *page_list(uint64_t count, const void *payload, size_t len, int from)
{
	if (len != count * sizeof(uint32_t))
		dsm_fatal("lrc: node %d sent a list of %llu pages in %zu bytes", from,
			  (unsigned long long)count, len);
	const uint32_t *w = payload;
	for (uint64_t i = 0; i < count; i++)
		check_page(w[i], from);
	return w;
}

/* The home's answer that page p is shared, with the home's copy. */
static void shared_arrived(size_t p, const void *data, size_t len, int from)
{
	struct lrc_page *pg = lrc_page(p);
	if (!pg->asking || len != dsm.page_size || pg->access != ACC_NONE)
		dsm_fatal("lrc: unexpected answer about page %zu from node %d", p, from);
	/* A copy sent before a collection this node has been through since may
	   lack what the collection dropped from the notices: it then comes
	   whole at the next access, as any page dropped at a collection. */
	if (pg->have != HAVE_NONE || pg->ask_gc == lrc.gc_epoch) {
		memcpy(dsm_page_alias(p), data, len);
		pg->have = HAVE_COPY;
	}
	become(p, CLS_SHARED);
	wake(p);
}

int lrc_class_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	int from = h->src;
	if (h->kind == LOCUS_DSM_MSG_PAGE_REQ &&
	    (h->b == LRC_ASK_FAULT || h->b == LRC_ASK_AHEAD)) {
		const uint32_t *w = page_list(h->a, payload, len, from);
		size_t ngrant = 0, nnot = 0;
		uint32_t *grant = lrc_xmalloc(len), *not = lrc_xmalloc(len);
		for (uint64_t i = 0; i < h->a; i++) {
			if (dsm_home_of(w[i]) != dsm.node)
				dsm_fatal("lrc: node %d asked node %d about page %u, homed at %d",
					  from, dsm.node, w[i], dsm_home_of(w[i]));
			uint8_t c = decide(w[i], from, (int)h->b);
			if (c == CLS_PRIVATE)
				grant[ngrant++] = w[i];
			else if (c == CLS_SHARED)
				answer_shared(w[i], from);
			else if (h->b == LRC_ASK_AHEAD)
				not[nnot++] = w[i];
		}
		if (ngrant)
			lrc_send(from, LOCUS_DSM_MSG_PAGE, ngrant, GRANT_PRIVATE, grant,
				 ngrant * sizeof(uint32_t));
		if (nnot)
			lrc_send(from, LOCUS_DSM_MSG_PAGE, nnot, NOT_NOW, not, nnot * sizeof(uint32_t));
		free(grant);
		free(not);
		return 1;
	}
	if (h->kind == LOCUS_DSM_MSG_PAGE_FWD) {
		check_page(h->a, from);
		if (dsm_home_of(h->a) != from)
			dsm_fatal("lrc: node %d took back page %llu, homed at %d", from,
				  (unsigned long long)h->a, dsm_home_of(h->a));
		if (unused(h->a)) {
			lrc_page(h->a)->cls = CLS_UNKNOWN;
			lrc_send(from, LOCUS_DSM_MSG_PAGE, h->a, UNUSED, NULL, 0);
			return 1;
		}
		give_up(h->a);
		lrc_send(from, LOCUS_DSM_MSG_PAGE, h->a, GIVEN_BACK, dsm_page_alias(h->a),
			 dsm.page_size);
		return 1;
	}
	if (h->kind != LOCUS_DSM_MSG_PAGE || h->b == 0)
		return 0;
	switch (h->b) {
	case GRANT_PRIVATE: {
		const uint32_t *w = page_list(h->a, payload, len, from);
		for (uint64_t i = 0; i < h->a; i++) {
			struct lrc_page *pg = lrc_page(w[i]);
			if (!pg->asking || pg->npend)
				dsm_fatal("lrc: node %d granted page %u as private, unexpected "
					  "here",
					  from, w[i]);
			become(w[i], CLS_PRIVATE);
			if (pg->waiters)
				pg->have = HAVE_COPY; /* used: the zero page, current */
			wake(w[i]);
		}
		return 1;
	}
	case NOT_NOW: { /* a fault that came meanwhile asks again */
		const uint32_t *w = page_list(h->a, payload, len, from);
		lrc_batch_begin();
		for (uint64_t i = 0; i < h->a; i++) {
			struct lrc_page *pg = lrc_page(w[i]);
			if (!pg->asking || pg->cls)
				dsm_fatal("lrc: node %d said 'not now' of page %u, not asked", from,
					  w[i]);
			pg->asking = 0;
			if (pg->waiters)
				lrc_class_of(w[i], LRC_ASK_FAULT);
		}
		lrc_batch_send();
		return 1;
	}
	case ANSWER_SHARED:
		check_page(h->a, from);
		shared_arrived(h->a, payload, len, from);
		return 1;
	case GIVEN_BACK: {
		check_page(h->a, from);
		struct lrc_page *pg = lrc_page(h->a);
		if (!pg->revoking || pg->dir != 1 + from || len != dsm.page_size ||
		    pg->access != ACC_NONE)
			dsm_fatal("lrc: unexpected page %llu given back by node %d",
				  (unsigned long long)h->a, from);
		memcpy(dsm_page_alias(h->a), payload, len);
		pg->have = HAVE_COPY;
		shared_now(h->a);
		return 1;
	}
	case UNUSED: {
		check_page(h->a, from);
		struct lrc_page *pg = lrc_page(h->a);
		if (!pg->revoking || pg->dir != 1 + from || len)
			dsm_fatal("lrc: unexpected page %llu handed back by node %d",
				  (unsigned long long)h->a, from);
		unused_now(h->a);
		return 1;
	}
	}
	dsm_fatal("lrc: page message of kind %llu from node %d", (unsigned long long)h->b, from);
	return 1;
}
