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
 * its contents to the home, which keeps them as its copy, and to the nodes
 * that were waiting for it (the home answers those that ask later); from then
 * on its writes are twinned and noticed as every shared page's. A collection
 * waits for every page on its way back (lrc.taking): its home's copy must be
 * there before the diffs of its notices are applied to it. Every node that
 * asks for a shared page gets the home's copy with the answer, and then fetches
 * the diffs of its pending notices as for a page dropped at a collection
 * (proto_lrc.c): the home's copy holds every write of the private time and
 * the notices every write since. A page never goes back to private.
 *
 * Moves (LOCUS_DSM_LRC_MOVE). The first time a page is taken back with one
 * node waiting, it moves to that node instead, still private: the holder
 * unmaps it and sends it its contents (PAGE b=6), and tells the home (b=7),
 * which then takes it from there for the next node (shared, this time).
 * Node 0's initialization of another node's data is the case: after the
 * move the page is that node's own, as if it had written it first. The
 * home's take-back to the new holder may overtake the contents on their
 * way there: it is done when they come (take_early). A page moved to a
 * node for an ask ahead, never used there, moves on to the next single
 * asker, as a page never used is handed on.
 *
 * Asks also go ahead of a walk, as fetches do (a node walking pages in
 * order asks for the next ones with the one it faulted on), and they may
 * take pages as the fault's own ask does. The asks of a prefetch, and of a
 * write walking on over pages this node may already use, are softer: they
 * never take a page another node holds (LRC_ASK_AHEAD; the answer is "not
 * now", and a fault asks again). Either may be given pages this node then
 * never uses: one past the end of its part of an array is the next node's
 * first. Taken back before this node used it (no access, no fault waiting),
 * such a page is handed back unused, and the home gives it to the asker as
 * private instead of making it shared.
 *
 * Every message is a batch: a pages, their numbers (u32) first in the
 * payload, then their contents for b=2 and b=3. What a fault, a prefetch or
 * a message handled brings about is gathered per node and sent when it is
 * done (lrc_batch_begin .. lrc_batch_send), one message of each kind per node:
 *   PAGE_REQ b=1  asks of faults
 *   PAGE_REQ b=2  asks ahead
 *   PAGE b=1      private: the pages granted
 *   PAGE b=2      shared: the pages, with the home's copies
 *   PAGE_FWD      home -> the node the pages are private to: give them back
 *                 (each page with the nodes waiting for it when it was sent, a
 *                 u64: that node sends them the page itself, one hop sooner;
 *                 and 0, or 1 + the node it moves to)
 *   PAGE b=3      that node -> the home: the pages, with their contents
 *   PAGE b=4      that node -> the home: pages never used here
 *   PAGE b=5      not now (to asks ahead)
 *   PAGE b=6      moved: the holder -> the node it moves to, with contents
 *   PAGE b=7      moved: the holder -> the home (it went to the node told)
 * (PAGE_REQ and PAGE with b=0 are the whole-page fetch of lrc_fetch.c.) A
 * fault that waited for an answer goes on from there (lrc_fault_again): it
 * does not fault again.
 *
 * LOCUS_DSM_LRC_PRIVATE=0 turns it off: every page is shared from the start.
 */
#include <string.h>

#include "lrc.h"

/* Outgoing batches, by kind: the b of PAGE_REQ (asks) and of PAGE (the rest,
   PAGE_FWD as TAKE). */
enum {
	GRANT_PRIVATE = 1,
	ANSWER_SHARED = 2,
	GIVEN_BACK = 3,
	UNUSED = 4,
	NOT_NOW = 5,
	MOVED = 6,
	MOVE_DONE = 7
};
enum {
	OUT_ASK_FAULT,
	OUT_ASK_AHEAD,
	OUT_GRANT,
	OUT_SHARED,
	OUT_TAKE,
	OUT_BACK,
	OUT_UNUSED,
	OUT_NOT,
	OUT_MOVED,
	OUT_MOVE_DONE,
	NOUT
};
static const struct {
	uint16_t kind;
	uint8_t b, data; /* data: the pages' contents follow their numbers */
} outs[NOUT] = {
	[OUT_ASK_FAULT] = {LOCUS_DSM_MSG_PAGE_REQ, LRC_ASK_FAULT, 0},
	[OUT_ASK_AHEAD] = {LOCUS_DSM_MSG_PAGE_REQ, LRC_ASK_AHEAD, 0},
	[OUT_GRANT] = {LOCUS_DSM_MSG_PAGE, GRANT_PRIVATE, 0},
	[OUT_SHARED] = {LOCUS_DSM_MSG_PAGE, ANSWER_SHARED, 1},
	[OUT_TAKE] = {LOCUS_DSM_MSG_PAGE_FWD, 0, 0},
	[OUT_BACK] = {LOCUS_DSM_MSG_PAGE, GIVEN_BACK, 1},
	[OUT_UNUSED] = {LOCUS_DSM_MSG_PAGE, UNUSED, 0},
	[OUT_NOT] = {LOCUS_DSM_MSG_PAGE, NOT_NOW, 0},
	[OUT_MOVED] = {LOCUS_DSM_MSG_PAGE, MOVED, 1},
	[OUT_MOVE_DONE] = {LOCUS_DSM_MSG_PAGE, MOVE_DONE, 0},
};
#define DIR_SHARED 0xff

struct pagelist {
	uint32_t *w;
	size_t len, cap;
};
static struct pagelist *out[NOUT]; /* per kind, per node */
static int pending;		   /* something is in out[] */

static void put_word(int kind, int node, uint32_t v)
{
	struct pagelist *l = &out[kind][node];
	if (l->len == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->w = lrc_xrealloc(l->w, l->cap * sizeof(uint32_t));
	}
	l->w[l->len++] = v;
	pending = 1;
}

static void put(int kind, int node, size_t p)
{
	/* A copy of the page goes there: its next diffs from here go too, at
	   barriers (lrc_push.c), as if that node had fetched them once. */
	if (kind == OUT_SHARED || kind == OUT_BACK)
		lrc_push_subscribe(p, node);
	put_word(kind, node, (uint32_t)p);
}

/* A take-back: the page, the nodes its holder answers itself, and 0 (the
   page becomes shared) or 1 + the node it moves to as private. */
#define TAKE_WORDS 4
static void put_take(int node, size_t p, uint64_t told, uint32_t move_to)
{
	put_word(OUT_TAKE, node, (uint32_t)p);
	put_word(OUT_TAKE, node, (uint32_t)told);
	put_word(OUT_TAKE, node, (uint32_t)(told >> 32));
	put_word(OUT_TAKE, node, move_to);
}

void lrc_class_send(void)
{
	if (!pending)
		return;
	pending = 0;
	for (int k = 0; k < NOUT; k++)
		for (size_t n = 0; n < lrc.nodes; n++) {
			struct pagelist *l = &out[k][n];
			if (!l->len)
				continue;
			size_t head = l->len * sizeof(uint32_t);
			size_t count = k == OUT_TAKE ? l->len / TAKE_WORDS : l->len;
			size_t len = head + (outs[k].data ? l->len * dsm.page_size : 0);
			unsigned char *buf = (unsigned char *)l->w;
			size_t cap = 0;
			if (outs[k].data) { /* the contents now, as they are */
				if (!(buf = dsm_keep_get(len, &cap)))
					dsm_fatal("lrc: out of memory (%zu bytes)", len);
				memcpy(buf, l->w, head);
				for (size_t i = 0; i < l->len; i++)
					memcpy(buf + head + i * dsm.page_size,
					       k == OUT_SHARED ? lrc_served(l->w[i])
							       : dsm_page_alias(l->w[i]),
					       dsm.page_size);
			}
			lrc_send((int)n, outs[k].kind, count, outs[k].b, buf, len);
			if (buf != (unsigned char *)l->w)
				dsm_keep_put(buf, cap);
			l->len = 0;
		}
}

int lrc_class_init(void)
{
	lrc_config_resolve();
	for (int k = 0; k < NOUT; k++)
		if (!(out[k] = calloc(lrc.nodes, sizeof(struct pagelist))))
			return -1;
	return 0;
}

/* Every fault waiting on page p goes on, knowing the class now. */
static void wake(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	struct dsm_req *r = pg->waiters;
	pg->waiters = NULL;
	while (r) {
		struct dsm_req *next = r->wnext;
		lrc_fault_again(r);
		r = next;
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

/* Page p, private here, moves to another node as private: no access here
   any more (a later access asks its home again). */
static void give_away(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->cls != CLS_PRIVATE)
		dsm_fatal("lrc: page %zu moved away from node %d, which does not hold it private",
			  p, dsm.node);
	lrc_set_access(p, ACC_NONE);
	pg->cls = CLS_UNKNOWN;
	pg->ahead_in = 0;
	PROTO_STAT_ADD(LRC_ST_MOVED, 1);
}

/* Page p is shared, and this node knows it: the faults waiting go on; a
   page asked ahead becomes readable, as a page fetched ahead does (its
   notices' diffs fetched first). */
static void shared_here(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	if (pg->waiters)
		wake(p);
	else if (lrc_stale(p))
		lrc_start_fetch(p);
	else
		lrc_set_access(p, ACC_READ);
}

/* At the home: node n, which waited, learns page p's class. */
static void answer(size_t p, int n, uint8_t cls)
{
	if (n == dsm.node) {
		become(p, cls);
		if (cls == CLS_SHARED)
			shared_here(p);
		else
			wake(p);
	} else {
		put(cls == CLS_PRIVATE ? OUT_GRANT : OUT_SHARED, n, p);
	}
}

/* At the home: page p is shared now; answer every node that waited. */
static void shared_now(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	pg->dir = DIR_SHARED;
	pg->revoking = 0;
	uint64_t wait = pg->wait;
	pg->wait = 0;
	for (int n = 0; n < dsm.nodes; n++)
		if (wait >> n & 1)
			answer(p, n, CLS_SHARED);
}

static uint8_t decide(size_t p, int n, int ask);
static void take(size_t p);
static void moved_now(size_t p, int to);

/* At the home: the node page p was private to never used it. The nodes
   that wait ask again, in order: the first gets it. */
static void unused_now(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	uint64_t wait = pg->wait;
	pg->dir = 0;
	pg->revoking = 0;
	pg->wait = 0;
	for (int n = 0; n < dsm.nodes; n++)
		if ((wait >> n & 1) && decide(p, n, LRC_ASK_FAULT) == CLS_PRIVATE)
			answer(p, n, CLS_PRIVATE);
}

/* Page p is private here and was never used: no access, no fault waiting
   (a fault that asked makes it used when the answer comes). */
static int unused(size_t p)
{
	const struct lrc_page *pg = &lrc.pg[p];
	return pg->cls == CLS_PRIVATE && pg->access == ACC_NONE && pg->have == HAVE_ZERO &&
	       !pg->waiters;
}

/* Page p moved here for an ask ahead of a walk, and was never used: a
   take-back for one node moves it on, as a page never used is handed on. */
static int unused_moved_in(size_t p)
{
	const struct lrc_page *pg = &lrc.pg[p];
	return pg->cls == CLS_PRIVATE && pg->ahead_in && pg->access == ACC_NONE && !pg->waiters;
}

/* At the home: node n asks for page p (ask: LRC_ASK_*). Returns the class it
   has now, or CLS_UNKNOWN when it is private to another node: an ask of a
   fault then waits until that node gives it up, one ahead does not. */
static uint8_t decide(size_t p, int n, int ask)
{
	struct lrc_page *pg = lrc_page(p);
	/* (A node that asks while the home takes the page back from it asked
	   after giving it up, and its ask overtook its answer: it waits.) */
	if (pg->dir == 0 || (pg->dir == 1 + n && !pg->revoking)) {
		pg->dir = (uint8_t)(1 + n);
		return CLS_PRIVATE;
	}
	if (pg->dir == DIR_SHARED)
		return CLS_SHARED;
	if (ask == LRC_ASK_AHEAD)
		return CLS_UNKNOWN;
	pg->wait |= 1ull << n;
	if (!pg->revoking)
		take(p);
	return CLS_UNKNOWN;
}

/* At the home: nodes wait for page p, private to another node: take it
   back. The first time, with one node waiting, it moves to that node as
   private (a node's data initialized by another: its user is the first to
   ask for it); else it becomes shared. */
static void take(size_t p)
{
	struct lrc_page *pg = lrc_page(p);
	int owner = pg->dir - 1;
	int to = -1;
	if (lrc_set.move && !(pg->wait & (pg->wait - 1)) &&
	    (!pg->moved || (owner == dsm.node && unused_moved_in(p))))
		to = __builtin_ctzll(pg->wait);
	pg->revoking = 1;
	if (owner == dsm.node && unused(p)) {
		pg->cls = CLS_UNKNOWN;
		unused_now(p);
	} else if (owner == dsm.node && to >= 0) {
		give_away(p); /* the home's page goes with the answer */
		put(OUT_MOVED, to, p);
		moved_now(p, to);
	} else if (owner == dsm.node) {
		give_up(p); /* the home's copy is the page */
		shared_now(p);
	} else {
		/* The nodes waiting now get the page from that node; the home
		   answers those that ask later, once it has it back. */
		lrc.taking++;
		if (to >= 0) { /* told: the node it moves to (answered by that node) */
			pg->told = 1ull << to;
			put_take(owner, p, 0, (uint32_t)(to + 1));
		} else {
			pg->told = pg->wait & ~(1ull << dsm.node);
			put_take(owner, p, pg->told, 0);
		}
	}
}

/* At the home: page p moved to node `to` as private. Nodes that asked since
   take it back from there. */
static void moved_now(size_t p, int to)
{
	struct lrc_page *pg = lrc_page(p);
	pg->dir = (uint8_t)(1 + to);
	pg->moved = 1;
	pg->revoking = 0;
	pg->told = 0;
	pg->wait &= ~(1ull << to);
	if (pg->wait)
		take(p);
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
	put(ask == LRC_ASK_FAULT ? OUT_ASK_FAULT : OUT_ASK_AHEAD, home, p);
	return CLS_UNKNOWN;
}

/* The numbers of a batch's pages, checked; *data: their contents after them
   (when the kind carries them). */
static const uint32_t *batch(const struct dsm_hdr *h, const void *payload, size_t len, int data,
			     const unsigned char **contents)
{
	size_t count = h->a;
	size_t per = sizeof(uint32_t) + (data ? dsm.page_size : 0);
	if (count == 0 || count > dsm.npages || len != count * per)
		dsm_fatal("lrc: node %d sent a batch of %zu pages in %zu bytes", h->src, count,
			  len);
	const uint32_t *w = payload;
	for (size_t i = 0; i < count; i++)
		if (w[i] >= dsm.npages)
			dsm_fatal("lrc: node %d sent a message about page %u of %zu", h->src, w[i],
				  dsm.npages);
	if (contents)
		*contents = (const unsigned char *)payload + count * sizeof(uint32_t);
	return w;
}

/* The home's answer that page p is shared, with the home's copy. */
static void shared_arrived(size_t p, const unsigned char *data, int from)
{
	struct lrc_page *pg = lrc_page(p);
	if (!pg->asking || pg->access != ACC_NONE)
		dsm_fatal("lrc: unexpected answer about page %zu from node %d", p, from);
	/* A copy sent before a collection this node has been through since may
	   lack what the collection dropped from the notices: it then comes
	   whole at the next access, as any page dropped at a collection. */
	if (pg->have != HAVE_NONE || pg->ask_gc == lrc.gc_epoch) {
		memcpy(dsm_page_alias(p), data, dsm.page_size);
		pg->have = HAVE_COPY;
	}
	become(p, CLS_SHARED);
	lrc_push_subscribe(p, from); /* it holds a copy: this node's diffs go there */
	shared_here(p);
}

/* Page p, private here, is taken back by its home: it moves to node
   move_to - 1 as private, or becomes shared and goes to the home and to the
   nodes told. */
static void give_back(size_t p, int home, uint64_t told, uint32_t move_to)
{
	if (unused(p)) { /* the home answers them all */
		lrc_page(p)->cls = CLS_UNKNOWN;
		put(OUT_UNUSED, home, p);
		return;
	}
	if (!move_to && told && !(told & (told - 1)) && unused_moved_in(p))
		move_to = 1 + (uint32_t)__builtin_ctzll(told); /* on to the one node that asks */
	if (move_to) { /* to its next user, with its contents */
		give_away(p);
		put(OUT_MOVED, (int)move_to - 1, p);
		if ((int)move_to - 1 != home)
			put(OUT_MOVE_DONE, home, p);
		return;
	}
	give_up(p);
	put(OUT_BACK, home, p);
	for (int n = 0; n < dsm.nodes; n++)
		if (told >> n & 1)
			put(OUT_SHARED, n, p); /* this page as it is now */
}

static void handle(const struct dsm_hdr *h, const void *payload, size_t len)
{
	int from = h->src;
	const unsigned char *data = NULL;
	if (h->kind == LOCUS_DSM_MSG_PAGE_REQ) { /* asks */
		const uint32_t *w = batch(h, payload, len, 0, NULL);
		for (uint64_t i = 0; i < h->a; i++) {
			if (dsm_home_of(w[i]) != dsm.node)
				dsm_fatal("lrc: node %d asked node %d about page %u, homed at %d",
					  from, dsm.node, w[i], dsm_home_of(w[i]));
			uint8_t c = decide(w[i], from, (int)h->b);
			if (c == CLS_PRIVATE)
				put(OUT_GRANT, from, w[i]);
			else if (c == CLS_SHARED)
				put(OUT_SHARED, from, w[i]);
			else if (h->b == LRC_ASK_AHEAD)
				put(OUT_NOT, from, w[i]);
		}
		return;
	}
	if (h->kind == LOCUS_DSM_MSG_PAGE_FWD) { /* give them back */
		const uint32_t *w = payload;
		if (h->a == 0 || h->a > dsm.npages || len != h->a * TAKE_WORDS * sizeof(uint32_t))
			dsm_fatal("lrc: node %d sent a take-back of %llu pages in %zu bytes", from,
				  (unsigned long long)h->a, len);
		for (uint64_t i = 0; i < h->a; i++, w += TAKE_WORDS) {
			size_t p = w[0];
			uint64_t told = w[1] | (uint64_t)w[2] << 32;
			uint32_t move_to = w[3];
			if (p >= dsm.npages || dsm_home_of(p) != from ||
			    (dsm.nodes < 64 && told >> dsm.nodes) || (told >> from & 1) ||
			    move_to > (uint32_t)dsm.nodes || move_to == (uint32_t)dsm.node + 1 ||
			    (move_to && told))
				dsm_fatal("lrc: node %d took back page %zu (homed at %d) for nodes "
					  "%#llx (moving to %d)",
					  from, p, p < dsm.npages ? dsm_home_of(p) : -1,
					  (unsigned long long)told, (int)move_to - 1);
			struct lrc_page *pg = lrc_page(p);
			if (pg->cls != CLS_PRIVATE && pg->asking && !move_to && !pg->take_early) {
				pg->take_early = 1; /* moving here: done when it comes */
				pg->take_told = told;
				continue;
			}
			give_back(p, from, told, move_to);
		}
		return;
	}
	const uint32_t *w =
		batch(h, payload, len, h->b == ANSWER_SHARED || h->b == GIVEN_BACK || h->b == MOVED,
		      &data);
	for (uint64_t i = 0; i < h->a; i++) {
		size_t p = w[i];
		struct lrc_page *pg = lrc_page(p);
		switch (h->b) {
		case GRANT_PRIVATE:
			if (!pg->asking || pg->npend)
				dsm_fatal(
					"lrc: node %d granted page %zu as private, unexpected here",
					from, p);
			become(p, CLS_PRIVATE);
			if (pg->waiters)
				pg->have = HAVE_COPY; /* used: the zero page, current */
			wake(p);
			break;
		case ANSWER_SHARED:
			shared_arrived(p, data + i * dsm.page_size, from);
			break;
		case MOVED: /* private here now, with its contents */
			if (!pg->asking || pg->access != ACC_NONE || pg->npend)
				dsm_fatal("lrc: page %zu moved here from node %d, not asked", p,
					  from);
			memcpy(dsm_page_alias(p), data + i * dsm.page_size, dsm.page_size);
			pg->have = HAVE_COPY;
			pg->ahead_in = !pg->waiters;
			become(p, CLS_PRIVATE);
			if (lrc_manages(p)) { /* the home moved it to itself */
				if (!pg->revoking || pg->dir != 1 + from ||
				    pg->told != 1ull << dsm.node)
					dsm_fatal("lrc: unexpected page %zu moved by node %d", p,
						  from);
				lrc.taking--;
				moved_now(p, dsm.node); /* shared at once if others asked */
				lrc_gc_check();
			}
			if (pg->take_early) { /* its home took it back meanwhile */
				pg->take_early = 0;
				give_back(p, dsm_home_of(p), pg->take_told, 0);
			}
			/* the faults waiting go on: it is private here, it became
			   shared at once (others asked meanwhile), or (the home's,
			   never used) it moved on at once: they ask again */
			if (pg->cls == CLS_SHARED)
				shared_here(p);
			else
				wake(p);
			break;
		case MOVE_DONE: /* at the home: the page went to the node that asked */
			if (!pg->revoking || pg->dir != 1 + from || !pg->told ||
			    (pg->told & (pg->told - 1)))
				dsm_fatal("lrc: unexpected move of page %zu by node %d", p, from);
			lrc.taking--;
			moved_now(p, __builtin_ctzll(pg->told));
			lrc_gc_check();
			break;
		case NOT_NOW: /* a fault that came meanwhile asks again */
			if (!pg->asking || pg->cls)
				dsm_fatal("lrc: node %d said 'not now' of page %zu, not asked",
					  from, p);
			pg->asking = 0;
			if (pg->waiters)
				lrc_class_of(p, LRC_ASK_FAULT);
			break;
		case GIVEN_BACK:
		case UNUSED:
			if (!pg->revoking || pg->dir != 1 + from || pg->access != ACC_NONE)
				dsm_fatal(
					"lrc: unexpected page %zu given back by node %d (home: %s, "
					"directory %d, access %d)",
					p, from, pg->revoking ? "taking it back" : "not taking it",
					(int)pg->dir - 1, (int)pg->access);
			lrc.taking--;
			if (h->b == UNUSED) {
				pg->told = 0; /* nobody was answered */
				unused_now(p);
				lrc_gc_check();
				break;
			}
			memcpy(dsm_page_alias(p), data + i * dsm.page_size, dsm.page_size);
			pg->have = HAVE_COPY;
			lrc_push_subscribe(p, from); /* it keeps a copy */
			/* answered by the node that gave it back (never the home: a
			   move to the home that the holder turned down, told = the
			   home, sent it nothing but this) */
			pg->wait &= ~(pg->told & ~(1ull << dsm.node));
			pg->told = 0;
			shared_now(p);
			/* A collection began meanwhile: its notices' diffs now, on the
			   copy (lrc_gc_start left the page to this). */
			if (lrc.gc_now && pg->npend && !pg->replies_left)
				lrc_start_fetch(p);
			lrc_gc_check();
			break;
		default:
			dsm_fatal("lrc: page message of kind %llu from node %d",
				  (unsigned long long)h->b, from);
		}
	}
}

int lrc_class_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	if (!(h->kind == LOCUS_DSM_MSG_PAGE_REQ && h->b != 0) &&
	    !(h->kind == LOCUS_DSM_MSG_PAGE && h->b != 0) && h->kind != LOCUS_DSM_MSG_PAGE_FWD)
		return 0;
	if (h->kind == LOCUS_DSM_MSG_PAGE_REQ && h->b != LRC_ASK_FAULT && h->b != LRC_ASK_AHEAD)
		dsm_fatal("lrc: ask of kind %llu from node %d", (unsigned long long)h->b, h->src);
	lrc_batch_begin(); /* what it brings about goes out in batches */
	handle(h, payload, len);
	lrc_batch_send();
	return 1;
}
