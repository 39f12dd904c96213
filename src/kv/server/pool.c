/*
 * locus-kv: a worker's connection memory, in 16 KB units, as memcached counts
 * it. A unit is a connection's read buffer, or a bundle of response records.
 *
 * A response record stands for one reply a connection owes its client: one
 * per command, and one per key of a multi-key get. It holds the reply's place
 * in the connection's output and lives until those bytes are written. With
 * -o read_buf_mem_limit=MB a worker may hold MB / -t of units (at least one);
 * past that a command cannot start its reply (the connection closes, as in
 * memcached), a get stops with "SERVER_ERROR out of memory writing get
 * response", and a connection with input to read and no buffer closes
 * (response_obj_oom, read_buf_oom). So clients that pipeline commands and do
 * not read cannot make a worker hold more than its share.
 *
 * Everything here runs on the connection's worker; the figures "stats" adds
 * up across workers are stored atomically.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/atomic.h"
#include "kv/server/server.h"

/* A unit on the worker's free list. */
struct unit {
	struct unit *next;
};

/* Free units a worker keeps beyond what it uses when there is no limit. */
#define KEEP_FREE 64

struct kv_bundle {
	struct kv_bundle *next, *prev; /* the worker's bundles with a free record */
	struct kv_resp *free;	       /* its free records */
	unsigned used;
	int listed; /* on the worker's list */
	struct kv_resp r[];
};

#define RESP_PER_BUNDLE ((KV_UNIT - sizeof(struct kv_bundle)) / sizeof(struct kv_resp))
_Static_assert(RESP_PER_BUNDLE >= 13, "a bundle holds at least memcached's 13 responses");

void kv_pool_init(struct kv_pool *p, uint64_t limit_bytes, int threads)
{
	memset(p, 0, sizeof(*p));
	if (limit_bytes) {
		/* memcached: the limit split between the workers, at least one unit each */
		uint64_t share = limit_bytes / (uint64_t)threads;
		p->limit = share < KV_UNIT ? 1 : (unsigned)(share / KV_UNIT);
	}
}

void kv_pool_free(struct kv_pool *p)
{
	while (p->open) {
		struct kv_bundle *b = p->open;
		p->open = b->next;
		free(b);
	}
	while (p->free) {
		struct unit *u = p->free;
		p->free = u->next;
		free(u);
	}
}

static void *unit_get(struct kv_pool *p)
{
	if (p->free) {
		struct unit *u = p->free;
		p->free = u->next;
		st_relaxed(&p->nfree, p->nfree - 1);
		return u;
	}
	if (p->limit && p->total >= p->limit)
		return NULL;
	void *u = malloc(KV_UNIT);
	if (u)
		st_relaxed(&p->total, p->total + 1);
	return u;
}

/* With a limit the units stay for reuse (they are at most the limit), as memcached's. */
static void unit_put(struct kv_pool *p, void *m)
{
	if (!p->limit && p->nfree >= KEEP_FREE) {
		free(m);
		st_relaxed(&p->total, p->total - 1);
		return;
	}
	struct unit *u = m;
	u->next = p->free;
	p->free = u;
	st_relaxed(&p->nfree, p->nfree + 1);
}

/* ---------- read buffers ---------- */

int kv_rbuf_ready(struct conn *c)
{
	struct kv_pool *p = &c->w->pool;
	if (!c->in.p) {
		char *u = unit_get(p);
		if (!u) {
			faa_relaxed(&p->rbuf_oom, 1);
			return -1;
		}
		c->in = (struct kv_buf){.p = u, .len = 0, .cap = KV_UNIT};
		c->in_pos = 0;
		c->in_unit = 1;
		return 0;
	}
	/* Little room left behind what was consumed: move the rest to the front. */
	if (c->in.cap - c->in.len < KV_UNIT / 4 && c->in_pos && !c->get_paused) {
		memmove(c->in.p, c->in.p + c->in_pos, c->in.len - c->in_pos);
		c->in.len -= c->in_pos;
		c->in_pos = 0;
	}
	if (c->in.len < c->in.cap)
		return 0;
	if (!c->in_unit)
		return kv_buf_reserve(&c->in, c->in.cap);
	/* A line longer than a unit (a get of many keys): on to the heap, as memcached. */
	char *m = malloc(2 * (size_t)KV_UNIT);
	if (!m)
		return -1;
	memcpy(m, c->in.p, c->in.len);
	unit_put(p, c->in.p);
	c->in.p = m;
	c->in.cap = 2 * (size_t)KV_UNIT;
	c->in_unit = 0;
	return 0;
}

void kv_rbuf_release(struct conn *c, int always)
{
	if (!c->in.p || (!always && (c->in.len > c->in_pos || c->get_paused)))
		return;
	if (c->in_unit)
		unit_put(&c->w->pool, c->in.p);
	else
		free(c->in.p);
	c->in = (struct kv_buf){0};
	c->in_pos = 0;
	c->in_unit = 0;
}

/* ---------- response records ---------- */

static struct kv_resp *resp_alloc(struct kv_pool *p)
{
	struct kv_bundle *b = p->open;
	if (!b) {
		b = unit_get(p);
		if (!b)
			return NULL;
		b->free = NULL;
		for (size_t i = RESP_PER_BUNDLE; i-- > 0;) {
			b->r[i].bundle = b;
			b->r[i].next = b->free;
			b->free = &b->r[i];
		}
		b->used = 0;
		b->prev = NULL;
		b->next = NULL;
		b->listed = 1;
		p->open = b;
		st_relaxed(&p->resp_bytes, p->resp_bytes + KV_UNIT);
	}
	struct kv_resp *r = b->free;
	b->free = r->next;
	b->used++;
	if (!b->free) { /* full: off the list */
		p->open = b->next;
		if (b->next)
			b->next->prev = NULL;
		b->next = b->prev = NULL;
		b->listed = 0;
	}
	st_relaxed(&p->resp_count, p->resp_count + 1);
	return r;
}

static void resp_free(struct kv_pool *p, struct kv_resp *r)
{
	struct kv_bundle *b = r->bundle;
	r->next = b->free;
	b->free = r;
	b->used--;
	st_relaxed(&p->resp_count, p->resp_count - 1);
	if (!b->listed) {
		b->next = p->open;
		b->prev = NULL;
		if (p->open)
			p->open->prev = b;
		p->open = b;
		b->listed = 1;
	}
	/* An empty bundle goes back, unless it is the worker's only one (memcached keeps it). */
	if (b->used == 0 && (b->prev || b->next)) {
		if (b->prev)
			b->prev->next = b->next;
		else
			p->open = b->next;
		if (b->next)
			b->next->prev = b->prev;
		unit_put(p, b);
		st_relaxed(&p->resp_bytes, p->resp_bytes - KV_UNIT);
	}
}

int kv_resp_start(struct conn *c)
{
	if (c->udp)
		return 0; /* a datagram's replies are framed by dgram.c */
	struct kv_pool *p = &c->w->pool;
	struct kv_resp *r = resp_alloc(p);
	if (!r) {
		faa_relaxed(&p->resp_oom, 1);
		return -1;
	}
	if (c->rtail)
		c->rtail->end = c->out.len;
	r->next = NULL;
	r->it = NULL;
	r->start = c->out.len;
	r->end = KV_RESP_OPEN;
	if (c->rtail)
		c->rtail->next = r;
	else
		c->rhead = r;
	c->rtail = r;
	return 0;
}

/* Release the value r holds, unsent. */
static void resp_unhold(struct conn *c, struct kv_resp *r)
{
	if (!r->it)
		return;
	size_t left = r->it->nbytes + 2 - (r == c->rsend ? c->held_sent : 0);
	c->out_held -= left;
	if (r == c->rsend) {
		c->held_sent = 0;
		c->rsend = NULL;
		for (struct kv_resp *n = r->next; n && !c->rsend; n = n->next)
			if (n->it)
				c->rsend = n;
	}
	kv_item_release(kv_srv.st, r->it);
	r->it = NULL;
}

void kv_resp_hold(struct conn *c, struct kv_item *it)
{
	struct kv_resp *r = c->rtail;
	r->it = it;
	r->at = c->out.len;
	c->out_held += it->nbytes + 2;
	if (!c->rsend) {
		c->rsend = r;
		c->held_sent = 0;
	}
}

static struct kv_resp *next_holding(struct kv_resp *r)
{
	while (r && !r->it)
		r = r->next;
	return r;
}

int kv_out_iov(const struct conn *c, struct iovec *iov, int max)
{
	size_t pos = c->out_pos, done = c->held_sent;
	struct kv_resp *r = c->rsend;
	int n = 0;
	while (n < max) {
		if (r && pos >= r->at) {
			/* The value from where it was left, a piece (a chunk) an iovec. */
			size_t total = (size_t)r->it->nbytes + 2;
			while (done < total && n < max) {
				size_t len;
				iov[n].iov_base = kv_item_span(r->it, done, &len);
				iov[n++].iov_len = len;
				done += len;
			}
			if (done < total)
				break;
			done = 0;
			r = next_holding(r->next);
		} else {
			size_t to = r ? r->at : c->out.len;
			if (to > pos) {
				iov[n].iov_base = c->out.p + pos;
				iov[n++].iov_len = to - pos;
			}
			pos = to;
			if (!r)
				break;
		}
	}
	return n;
}

void kv_out_consumed(struct conn *c, size_t n)
{
	while (n) {
		struct kv_resp *r = c->rsend;
		if (r && c->out_pos >= r->at) {
			size_t left = r->it->nbytes + 2 - c->held_sent;
			size_t k = n < left ? n : left;
			c->held_sent += k;
			c->out_held -= k;
			n -= k;
			if (k == left) {
				kv_item_release(kv_srv.st, r->it);
				r->it = NULL;
				c->held_sent = 0;
				c->rsend = next_holding(r->next);
			}
		} else {
			size_t to = r ? r->at : c->out.len;
			size_t k = n < to - c->out_pos ? n : to - c->out_pos;
			c->out_pos += k;
			n -= k;
		}
	}
	kv_resp_sent(c);
}

static void resp_finish_head(struct conn *c)
{
	struct kv_resp *r = c->rhead;
	c->rhead = r->next;
	if (!c->rhead)
		c->rtail = NULL;
	if (c->get_first == r)
		c->get_first = NULL;
	resp_free(&c->w->pool, r);
}

/*
 * The output has been written up to out_pos: the replies wholly sent are
 * done. With everything sent, so is the last one, unless its command is
 * still under way (its data still to come, a get paused, a dump running).
 */
void kv_resp_sent(struct conn *c)
{
	int all = c->out_pos >= c->out.len && !c->out_held;
	while (c->rhead && c->rhead->end != KV_RESP_OPEN && !c->rhead->it &&
	       (all || c->rhead->end <= c->out_pos))
		resp_finish_head(c);
	if (all && c->rhead && c->state == CONN_LINE && !c->get_paused && !c->dumping)
		resp_finish_head(c);
	if (all && c->rhead)
		c->rhead->start = 0; /* the output starts over */
}

void kv_resp_clear(struct conn *c)
{
	while (c->rhead) {
		resp_unhold(c, c->rhead);
		resp_finish_head(c);
	}
}

/*
 * A get's next key found no record: as memcached, the get's replies that
 * have not begun to go out are dropped and the get ends with
 * "SERVER_ERROR out of memory writing get response". Replies to earlier
 * commands stay (memcached drops those waiting as well). The earliest dropped
 * reply's record carries the error; with none, the get's last one, partly
 * sent, does.
 */
void kv_resp_get_oom(struct conn *c)
{
	/* What has begun to go out: a TLS write waiting to be retried has taken its bytes. */
	size_t begun = c->out_pos + (c->ssl ? c->tls_wlen : 0);
	struct kv_resp *u = c->get_first ? c->get_first : c->rhead;
	while (u && (u->start < begun || (u == c->rsend && c->held_sent)))
		u = u->next;
	if (u) {
		while (u->next) {
			struct kv_resp *r = u->next;
			resp_unhold(c, r);
			u->next = r->next;
			resp_free(&c->w->pool, r);
		}
		resp_unhold(c, u);
		c->rtail = u;
		u->end = KV_RESP_OPEN;
		c->out.len = u->start;
	}
	kv_reply(c, "SERVER_ERROR out of memory writing get response");
}

void kv_pool_figures(struct kv_pool_figures *f)
{
	memset(f, 0, sizeof(*f));
	for (int i = 0; i < kv_srv.set.threads && kv_srv.workers; i++) {
		struct kv_pool *p = &kv_srv.workers[i].pool;
		f->resp_oom += ld_relaxed(&p->resp_oom);
		f->resp_count += ld_relaxed(&p->resp_count);
		f->resp_bytes += ld_relaxed(&p->resp_bytes);
		f->rbuf_count += ld_relaxed(&p->total);
		f->rbuf_free += ld_relaxed(&p->nfree);
		f->rbuf_oom += ld_relaxed(&p->rbuf_oom);
	}
}

void kv_pool_reset(void)
{
	for (int i = 0; i < kv_srv.set.threads && kv_srv.workers; i++) {
		struct kv_pool *p = &kv_srv.workers[i].pool;
		st_relaxed(&p->resp_oom, 0);
		st_relaxed(&p->rbuf_oom, 0);
	}
}
