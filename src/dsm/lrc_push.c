/*
 * lrc: diffs pushed at a barrier (proto_lrc.c says the protocol; lrc.h the
 * shared state).
 *
 * A node that keeps reading a page another node writes faults on it after
 * every barrier and asks the writer for its diff: a round trip per page and
 * phase (the rows at the edge of each node's part in Jacobi or SOR). So a
 * writer remembers which nodes asked it for its diffs of a page, and which
 * hold a copy it exchanged with them as the page became shared
 * (lrc_class.c: the copy sent to a node that asked, or given back to the
 * home, and the copy received; otherwise their first phases would each
 * fetch before the pushes began) (subs); at
 * each barrier entry, its interval just ended, it sends each of them the
 * page's diffs of its intervals since its last entry, in one message per
 * node (DIFF with b = 1; the payload is DIFF's, one section per page and
 * interval). Not those of intervals whose records the node has already
 * (lrc_known_of: a shipped call's answer carried them, as a program that
 * synchronizes through objects in shared memory gets them): it has fetched
 * those diffs it needed, and the next barrier may be a long way off (the
 * one at the end of the program, with every diff of the run behind it).
 * A reader keeps them (pg->pushed) until a notice names them. At
 * the barrier's exit, a page whose every pending notice has its diff here
 * is brought up to date at once and stays readable: no fault, no message.
 * A fault on a page claims the diffs it finds here and asks only for the
 * rest (lrc_start_fetch).
 *
 * Stopping. A reader cannot see reads of a valid page, so at the 4th, 16th,
 * 64th, ... push of a page since it subscribed it leaves the diffs waiting
 * and the page invalid (probation): a fault on it before this node's next
 * barrier entry shows the page is still read, and the pushes go on; without
 * one, that entry tells the page's writers to stop (DIFF_REQ with b = 1, a
 * list of pages), and the diffs wait for a fault. A later fetch subscribes
 * again.
 *
 * A pushed diff is the writer's diff of that interval, the one a fetch
 * would bring, applied in the same order (fetch_done), so a program reads
 * what it would read without pushes. One for a notice this node has
 * fetched, is fetching, or dropped at a collection is thrown away.
 *
 * Everything here runs on the communication thread.
 */
#include <string.h>

#include "lrc.h"

void lrc_push_subscribe(size_t p, int node)
{
	if (lrc_set.push)
		lrc_page(p)->subs |= 1ull << node;
}

/* A growing message per node. */
struct out {
	unsigned char *d;
	size_t len, cap;
	uint64_t count;
};

static void out_put(struct out *o, const void *src, size_t n)
{
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2;
		o->d = lrc_xrealloc(o->d, o->cap);
	}
	memcpy(o->d + o->len, src, n);
	o->len += n;
}

static void out_send(struct out *o, uint16_t kind)
{
	for (size_t n = 0; n < lrc.nodes; n++) {
		if (o[n].count)
			lrc_send((int)n, kind, o[n].count, 1, o[n].d, o[n].len);
		free(o[n].d);
	}
}

/* Pages on probation since the last exit that nobody here faulted on: tell
   their writers to stop. */
static void probe_check(void)
{
	struct out stop[DSM_MAX_NODES];
	memset(stop, 0, lrc.nodes * sizeof(*stop));
	for (size_t k = 0; k < lrc.nprobe; k++) {
		size_t p = lrc.probe[k];
		struct lrc_page *pg = &lrc.pg[p];
		if (!pg->probing)
			continue; /* a fault used it */
		pg->probing = 0;
		pg->npush = 0;
		uint64_t told = 0;
		for (struct pushed *e = pg->pushed; e; e = e->next) {
			if (told >> e->node & 1)
				continue;
			told |= 1ull << e->node;
			uint32_t w = (uint32_t)p;
			out_put(&stop[e->node], &w, sizeof(w));
			stop[e->node].count++;
			PROTO_STAT_ADD(LRC_ST_PUSH_STOPPED, 1);
		}
	}
	lrc.nprobe = 0;
	out_send(stop, LOCUS_DSM_MSG_DIFF_REQ);
}

void lrc_push_send(size_t budget)
{
	probe_check();
	uint32_t me = (uint32_t)dsm.node;
	uint32_t from = lrc.pushed_upto > lrc.base[me] ? lrc.pushed_upto : lrc.base[me];
	lrc.pushed_upto = lrc.vt[me];
	if (!lrc_set.push)
		return;
	struct out o[DSM_MAX_NODES];
	memset(o, 0, lrc.nodes * sizeof(*o));
	/* A node that has this node's record of an interval already (a shipped
	   call's answer carried it) has fetched what it needed of it. */
	uint32_t told[DSM_MAX_NODES];
	for (size_t n = 0; n < lrc.nodes; n++)
		told[n] = n == me ? UINT32_MAX : lrc_known_of((int)n)[me];
	for (uint32_t i = from + 1; i <= lrc.vt[me]; i++) {
		const struct interval *iv = lrc_interval_get(me, i);
		for (uint32_t k = 0; k < iv->npages; k++) {
			size_t p = iv->pages[k];
			uint64_t subs = lrc.pg[p].subs & ~(1ull << me);
			if (!subs)
				continue;
			const struct owndiff *d = lrc_find_diff(p, i);
			if (!d)
				continue;
			uint32_t sec[4] = {(uint32_t)p, (uint32_t)(2 * sizeof(uint32_t)) + d->len,
					   i, d->len};
			for (size_t n = 0; n < lrc.nodes; n++) {
				if (!(subs >> n & 1) || i <= told[n] ||
				    o[n].len + sizeof(sec) + d->len > budget)
					continue;
				out_put(&o[n], sec, sizeof(sec));
				out_put(&o[n], d->data, d->len);
				o[n].count++;
				PROTO_STAT_ADD(LRC_ST_PUSHED, 1);
			}
		}
	}
	out_send(o, LOCUS_DSM_MSG_DIFF);
}

static struct pushed *find(const struct lrc_page *pg, uint32_t node, uint32_t idx)
{
	for (struct pushed *e = pg->pushed; e; e = e->next)
		if (e->node == node && e->idx == idx)
			return e;
	return NULL;
}

/* Is notice (node, idx) pending on page p and not being fetched? */
static int awaited(const struct lrc_page *pg, uint32_t node, uint32_t idx)
{
	for (uint32_t i = pg->nflight; i < pg->npend; i++)
		if (pg->pend[i].node == node && pg->pend[i].idx == idx)
			return 1;
	return 0;
}

/* Keep node's diff of page p in interval idx, unless it is of no use. */
static void keep(size_t p, uint32_t node, uint32_t idx, const unsigned char *data, uint32_t len)
{
	struct lrc_page *pg = lrc_page(p);
	if (idx <= lrc.base[node] || find(pg, node, idx))
		return;
	if (idx <= lrc.vt[node] && !awaited(pg, node, idx))
		return; /* fetched, in flight, or collected */
	struct pushed *e = lrc_xmalloc(sizeof(*e) + len);
	e->node = node;
	e->idx = idx;
	e->len = len;
	memcpy(e->data, data, len);
	e->next = pg->pushed;
	pg->pushed = e;
	lrc_mem_add((int64_t)(sizeof(*e) + len));
	if (!pg->pushq) {
		pg->pushq = 1;
		lrc.pushq[lrc.npushq++] = p;
	}
}

struct rx *lrc_push_claim(size_t p, uint32_t nflight, uint8_t *covered)
{
	struct lrc_page *pg = lrc_page(p);
	size_t bytes[DSM_MAX_NODES] = {0};
	uint32_t claimed = 0;
	for (uint32_t i = 0; i < nflight; i++) {
		const struct pushed *e = find(pg, pg->pend[i].node, pg->pend[i].idx);
		covered[i] = e != NULL;
		if (e) {
			bytes[e->node] += 2 * sizeof(uint32_t) + e->len;
			claimed++;
		}
	}
	if (!claimed)
		return NULL;
	struct rx *by[DSM_MAX_NODES] = {0}, *list = NULL;
	for (size_t n = 0; n < lrc.nodes; n++) {
		if (!bytes[n])
			continue;
		by[n] = lrc_xmalloc(sizeof(struct rx) + bytes[n]);
		by[n]->node = (uint32_t)n;
		by[n]->len = 0;
		by[n]->next = list;
		list = by[n];
	}
	for (uint32_t i = 0; i < nflight; i++) {
		if (!covered[i])
			continue;
		struct pushed **at = &pg->pushed;
		while ((*at)->node != pg->pend[i].node || (*at)->idx != pg->pend[i].idx)
			at = &(*at)->next;
		struct pushed *e = *at;
		*at = e->next;
		struct rx *x = by[e->node];
		uint32_t hd[2] = {e->idx, e->len};
		memcpy(x->data + x->len, hd, sizeof(hd));
		memcpy(x->data + x->len + sizeof(hd), e->data, e->len);
		x->len += sizeof(hd) + e->len;
		lrc_mem_add(-(int64_t)(sizeof(*e) + e->len));
		free(e);
	}
	pg->probing = 0; /* on probation: this fault shows it is read */
	PROTO_STAT_ADD(LRC_ST_PUSH_USED, claimed);
	return list;
}

int lrc_push_covers(size_t p)
{
	const struct lrc_page *pg = &lrc.pg[p];
	if (!pg->npend || !pg->pushed || pg->have == HAVE_NONE)
		return 0;
	for (uint32_t i = 0; i < pg->npend; i++)
		if (!find(pg, pg->pend[i].node, pg->pend[i].idx))
			return 0;
	return 1;
}

/* Can page p be brought up to date from what was pushed: is that everything
   it lacks? Not during a collection (its fetches take what is here). */
static int can_apply(const struct lrc_page *pg, size_t p)
{
	return !lrc.gc_now && !pg->probing && !pg->replies_left && !pg->nflight && !pg->asking &&
	       !pg->revoking && pg->cls == CLS_SHARED && lrc_push_covers(p);
}

/* The pushes of a page applied since it subscribed, n counting this one:
   does this one put it on probation? The 4th, 16th, 64th, ...: a probe of
   a page still read costs the reader a fault, a push nobody reads costs the
   writer a diff in a message it sends anyway. */
static int probes(uint16_t n)
{
	return n >= 4 && !(n & (n - 1)) && (n & 0x5555);
}

int lrc_push_ready(size_t p)
{
	const struct lrc_page *pg = &lrc.pg[p];
	return can_apply(pg, p) && !probes((uint16_t)(pg->npush + 1));
}

/* Bring page p up to date from what was pushed, if that is everything it
   lacks; a page on probation waits for a fault instead. */
static void try_apply(size_t p)
{
	struct lrc_page *pg = &lrc.pg[p];
	if (!can_apply(pg, p))
		return;
	uint16_t n = ++pg->npush;
	/* (a page may be listed twice in one phase: a fault took its diffs and
	   late ones came; the list holds at most a page's worth of entries) */
	if (probes(n) && lrc.nprobe < dsm.npages) {
		pg->probing = 1;
		lrc.probe[lrc.nprobe++] = p;
		return;
	}
	lrc_start_fetch(p); /* every diff is here: done at once, with no message */
}

/* Forget pages that hold no pushed diff any more. */
static void pushq_trim(void)
{
	size_t kept = 0;
	for (size_t k = 0; k < lrc.npushq; k++) {
		size_t p = lrc.pushq[k];
		if (lrc.pg[p].pushed)
			lrc.pushq[kept++] = p;
		else
			lrc.pg[p].pushq = 0;
	}
	lrc.npushq = kept;
}

void lrc_push_apply(void)
{
	for (size_t k = 0; k < lrc.npushq; k++)
		try_apply(lrc.pushq[k]);
	pushq_trim();
	/* A page take_records left valid that is not current after all is
	   invalidated now, as it would have been there. */
	size_t n = 0;
	for (size_t k = 0; k < lrc.nheld; k++) {
		size_t p = lrc.held[k];
		if (lrc.pg[p].npend && lrc.pg[p].access != ACC_NONE)
			lrc.inval[n++] = p;
	}
	lrc.nheld = 0;
	lrc_invalidate(lrc.inval, n);
}

/* DIFF with b = 1 (pushed diffs) or DIFF_REQ with b = 1 (stop pushing). */
void lrc_push_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	const unsigned char *data = payload;
	if (h->kind == LOCUS_DSM_MSG_DIFF_REQ) {
		if (len != h->a * sizeof(uint32_t))
			dsm_fatal("lrc: malformed stop of pushes from node %d", h->src);
		for (uint64_t q = 0; q < h->a; q++) {
			uint32_t p;
			memcpy(&p, data + q * sizeof(p), sizeof(p));
			if (p >= dsm.npages)
				dsm_fatal("lrc: node %d stopped pushes of page %u of %zu", h->src,
					  p, dsm.npages);
			lrc.pg[p].subs &= ~(1ull << h->src);
		}
		return;
	}
	uint32_t from = h->src;
	size_t off = 0;
	struct out stop[DSM_MAX_NODES];
	memset(stop, 0, sizeof(stop));
	for (uint64_t q = 0; q < h->a; q++) {
		uint32_t sec[4];
		if (len - off < sizeof(sec))
			dsm_fatal("lrc: malformed pushed diffs from node %u", from);
		memcpy(sec, data + off, sizeof(sec));
		off += sizeof(sec);
		if (sec[0] >= dsm.npages || sec[1] != 2 * sizeof(uint32_t) + sec[3] ||
		    len - off < sec[3] || from >= lrc.nodes || from == (uint32_t)dsm.node)
			dsm_fatal("lrc: malformed pushed diffs from node %u", from);
		const struct lrc_page *pg = &lrc.pg[sec[0]];
		if (pg->cls == CLS_SHARED && pg->have != HAVE_NONE) {
			keep(sec[0], from, sec[2], data + off, sec[3]);
		} else {
			/* A page this node does not use (a home that keeps a copy to
			   serve it, a copy dropped at a collection): stop them. */
			out_put(&stop[from], &sec[0], sizeof(sec[0]));
			stop[from].count++;
			PROTO_STAT_ADD(LRC_ST_PUSH_STOPPED, 1);
		}
		off += sec[3];
	}
	if (off != len)
		dsm_fatal("lrc: malformed pushed diffs from node %u", from);
	out_send(stop, LOCUS_DSM_MSG_DIFF_REQ);
	/* Notices already here (a push that came after the barrier's exit). */
	for (size_t k = 0; k < lrc.npushq; k++)
		try_apply(lrc.pushq[k]);
	pushq_trim();
}

void lrc_push_gc(const uint32_t *upto, uint64_t *mem)
{
	for (size_t k = 0; k < lrc.npushq; k++) {
		struct lrc_page *pg = &lrc.pg[lrc.pushq[k]];
		struct pushed **at = &pg->pushed;
		while (*at) {
			struct pushed *e = *at;
			if (e->idx <= upto[e->node]) {
				*at = e->next;
				free(e);
				continue;
			}
			*mem += sizeof(*e) + e->len;
			at = &e->next;
		}
		if (pg->probing && !pg->pushed)
			pg->probing = 0;
	}
	pushq_trim();
}
