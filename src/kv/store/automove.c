/*
 * locus-kv's slab page mover and automover (store.h, kv_automove_tick).
 *
 * Moving a page. The slabs section takes the page out of use
 * (kv_slabs_move_start); what is left in it are items. The main thread,
 * KV_AUTOMOVE_HZ times a second, takes those of them that are on their LRU
 * list off it, in one alloc section (kv_lru_take_range), and for each one,
 * in its hash section, either copies it into a free chunk of its class
 * elsewhere and links the copy in its place (a rescue), or unlinks it (when
 * its class has no free chunk; or a reclaim, when it has expired). Dropping
 * the last reference to each frees its chunk into the page, and the last
 * chunk freed gives the page to its destination (slabs.c). Items that are
 * not on a list at that moment — being stored, or held by a thread between
 * two sections — are caught by a later pass. Chunked items (item.h) are listed
 * in the class of slab_chunk_max wherever their header and chunks are: those
 * with a part in the page are taken off that class's lists and their parts
 * copied (rescue_chunked).
 *
 * Choosing a move (mode 1), after memcached's slab_automove=1: at every
 * call, per class, the age of its least recently used item and whether it
 * evicted since the last call; over a window of the last `window` samples,
 * the source is the class with the oldest average age that has more than 2
 * pages, the destination the class with the youngest average age that
 * evicted in more than half the samples (of the window, or of the last
 * second) or took over a quarter of all evictions, and evicted since the
 * last call; a page moves when the
 * destination's age is below `ratio` times the source's. A class holding
 * more than 2.5 pages of free chunks and neither evicting nor growing over
 * the window gives a page to the pool. Mode 2 moves a page to any class
 * that evicted since the last call, from the class with the oldest items.
 *
 * Where this differs from memcached, and why: memcached decides once a
 * second, only once its 30-second window has filled, and counts a class as
 * evicting only after it has evicted for a quarter of the window, so a
 * size shift that is over within a few seconds moves no page at all
 * (measured with bench/kv-resources). Here the window (slab_automove_window
 * seconds, of server time) is sampled KV_AUTOMOVE_HZ times a second, the samples so far are
 * averaged, and evicting through the last second counts too, so pages
 * follow a shift within about a second of it.
 */
#include <stdlib.h>
#include <string.h>

#include "kv/store/store_impl.h"

#define MIN_PAGES_FOR_SOURCE 2
#define FREE_PAGES_RECLAIM   2.5
#define WINDOW_MAX	     (3600 * KV_AUTOMOVE_HZ)
#define RECLAIMS_PER_TICK    8 /* pages a class may give the pool in one call */

struct sample {
	uint32_t age;
	uint8_t evicted, dirty;
	float evicted_share;
};

struct kv_automove {
	int mode; /* atomic: the slabs automove command changes it */
	double ratio;
	unsigned window;
	/* The main thread's alone from here on. */
	struct sample *samples; /* [class][window] */
	uint32_t *at;		/* [window]: the server time each slot was sampled at */
	unsigned cur, filled;
	uint64_t evicted_before[KV_CLASSES_MAX + 1];
	uint64_t oom_before[KV_CLASSES_MAX + 1];
	uint64_t pages_before[KV_CLASSES_MAX + 1];
	int primed;
};

struct kv_automove *kv_automove_new(int mode, double ratio, unsigned window)
{
	if (window < 1)
		window = 1;
	if (window > WINDOW_MAX)
		window = WINDOW_MAX;
	struct kv_automove *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->samples = calloc((size_t)(KV_CLASSES_MAX + 1) * window, sizeof(*a->samples));
	a->at = calloc(window, sizeof(*a->at));
	if (!a->samples || !a->at) {
		free(a->samples);
		free(a->at);
		free(a);
		return NULL;
	}
	a->mode = mode;
	a->ratio = ratio > 0 ? ratio : 0.8;
	a->window = window;
	return a;
}

void kv_automove_delete(struct kv_automove *a)
{
	if (a) {
		free(a->samples);
		free(a->at);
		free(a);
	}
}

void kv_automove_set(kv_store *st, int mode)
{
	st_relaxed(&st->automove->mode, mode);
}

int kv_automove_get(const kv_store *st)
{
	return ld_relaxed(&st->automove->mode);
}

void kv_automove_set_ratio(kv_store *st, double ratio)
{
	/* Read by the main thread's next decision; a double is stored whole on this ABI. */
	__atomic_store(&st->automove->ratio, &ratio, __ATOMIC_RELAXED);
}

double kv_automove_ratio(const kv_store *st)
{
	double r;
	__atomic_load(&st->automove->ratio, &r, __ATOMIC_RELAXED);
	return r;
}

static uint32_t move_step(kv_store *st, struct kv_counts *cnt);

/*
 * memcached's slabs_reassign: src -1 picks a class with at least two pages
 * (the next one after the last picked, so repeated calls spread the moves);
 * other negative ids, and ids above the last class, are BADCLASS. The page is
 * emptied at once where it can be (memcached's mover thread is woken and done
 * before the client's next command), so a second reassign finds no move under
 * way; items held by a thread meanwhile are left to the main thread's next tick.
 */
enum kv_move_result kv_slabs_reassign(kv_store *st, struct kv_counts *cnt, int src, int dst)
{
	if (src == dst)
		return KV_MOVE_SAME;
	unsigned ncls = kv_slabs_nclasses(st->slabs);
	if (src == -1 && dst >= 0) {
		struct kv_slabs_report *r = malloc(sizeof(*r));
		if (!r)
			return KV_MOVE_BUSY;
		kv_slabs_report(&st->slabs_sec, r);
		static unsigned last; /* atomic: workers may ask at once */
		unsigned from = ld_relaxed(&last);
		for (unsigned k = 1; k <= ncls; k++) {
			unsigned cls = (from + k - 1) % ncls + 1;
			if ((int)cls != dst && r->cls[cls].pages >= 2) {
				src = (int)cls;
				st_relaxed(&last, cls);
				break;
			}
		}
		free(r);
		/* None to spare: -1 stays, and is BADCLASS below, as memcached answers. */
	}
	if (src < 0 || dst < 0 || (unsigned)src > ncls || (unsigned)dst > ncls)
		return KV_MOVE_BADCLASS;
	enum kv_move_result r = kv_slabs_move_start(&st->slabs_sec, (unsigned)src, (unsigned)dst);
	if (r == KV_MOVE_OK)
		move_step(st, cnt);
	return r;
}

int kv_store_set_limit(kv_store *st, size_t bytes)
{
	if (kv_slabs_set_limit(&st->slabs_sec, bytes) != 0)
		return -1;
	st_relaxed(&st->cfg.mem_limit, bytes);
	return 0;
}

/* ---------- emptying the page being moved ---------- */

struct rescue_req {
	kv_store *st;
	struct kv_counts *cnt;
	struct kv_item *old; /* off its LRU list; its list reference is ours */
	uint64_t hv;	     /* its key's hash */
	struct kv_item *nw;  /* a free chunk of the same class, or NULL */
	struct kv_item *dropped;
	enum { GONE, RESCUED, EVICTED, RECLAIMED } outcome;
};

/* Copy an item into another chunk (set up by rescue): its fields and bytes, not its references
   or links. */
static void copy_item(struct kv_item *nw, const struct kv_item *old)
{
	nw->cas = old->cas;
	nw->exptime = old->exptime;
	nw->atime = ld_relaxed(&old->atime); /* the alloc section bumps it */
	nw->flags = old->flags;
	nw->nbytes = old->nbytes;
	nw->nkey = old->nkey;
	nw->cls = old->cls;
	nw->state = ld_relaxed(&old->state) & (KV_IT_FETCHED | KV_IT_ACTIVE);
	nw->lru = ld_relaxed(&old->lru); /* the copy goes back to the same LRU segment */
	nw->mark = old->mark;
	memcpy(nw->data, old->data, (size_t)old->nkey + old->nbytes + 2);
}

static uint64_t rescue_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct rescue_req *rq = KV_REQ(struct rescue_req, a);
	kv_store *st = rq->st;
	struct kv_item *old = rq->old;
	struct kv_item **pp = kv_assoc_find_item(as, old, rq->hv);
	if (!pp) {
		rq->outcome = GONE;
		return 0;
	}
	int flushed;
	int64_t size = (int64_t)kv_slabs_chunk_size(st->slabs, old->cls);
	if (kv_clock_item_dead(&st->clock, old, kv_clock_now(&st->clock), &flushed)) {
		rq->cnt->reclaimed++;
		rq->cnt->curr_items--;
		rq->cnt->bytes -= size;
		kv_assoc_unlink_at(as, pp, &rq->dropped);
		rq->outcome = RECLAIMED;
		return 0;
	}
	if (!rq->nw) {
		rq->cnt->curr_items--;
		rq->cnt->bytes -= size;
		kv_assoc_unlink_at(as, pp, &rq->dropped);
		rq->outcome = EVICTED;
		return 0;
	}
	/* The copy takes the old one's place in the chain. */
	copy_item(rq->nw, old);
	kv_assoc_unlink_at(as, pp, &rq->dropped);
	kv_assoc_link(as, rq->nw, rq->hv);
	rq->outcome = RESCUED;
	return 0;
}

static void rescue(kv_store *st, struct kv_counts *cnt, struct kv_item *old)
{
	int full;
	struct rescue_req rq = {.st = st, .cnt = cnt, .old = old};
	/* A free chunk of the class, never new memory: the class is giving a page away. */
	rq.nw = kv_slabs_alloc(&st->slabs_sec, old->cls, 0, &full);
	if (rq.nw) {
		/* An item of its class with our reference from now on, whatever becomes of it. */
		memset(rq.nw, 0, sizeof(*rq.nw));
		rq.nw->cls = old->cls;
		st_relaxed(&rq.nw->refs, 1);
	}
	rq.hv = kv_item_hash(old);
	kv_sec_run(kv_assoc_stripe(&st->assoc, rq.hv), rescue_sec, &rq);
	switch (rq.outcome) {
	case RESCUED:
		kv_lru_link_kept(&st->alloc_sec, rq.nw);
		cnt->slab_reassign_rescues++;
		break;
	case EVICTED: /* as memcached: not counted in evictions */
		cnt->slab_reassign_evictions_nomem++;
		break;
	case RECLAIMED:
		cnt->slab_reassign_inline_reclaim++;
		break;
	case GONE:
		break;
	}
	if (rq.nw)
		kv_item_release(st, rq.nw); /* ours: the copy's holders are the table and the LRU */
	kv_items_drop_unlinked(st, rq.dropped);
	kv_item_release(st, old); /* the LRU's reference */
}

/*
 * A chunked item with its header or chunks in the page being moved (item.h): each such
 * chunk is copied into a free chunk of its class elsewhere and the item's table points at
 * the copy (memcached's slab_reassign_chunk_rescues); a header in the page is copied and the
 * copy linked in its place, with the table (a rescue). Either only while nobody else holds
 * the item (a connection sending its value reads the chunks); else it is left for a later
 * pass. Without free chunks enough, the item goes (slab_reassign_evictions_nomem).
 */
struct chunked_req {
	kv_store *st;
	struct kv_counts *cnt;
	struct kv_item *old; /* off its LRU list; its list reference is ours */
	uint64_t hv;
	const char *lo, *hi;
	struct kv_item **fresh; /* free chunks of the moved class, one per chunk in the page */
	unsigned nfresh, used;
	struct kv_item *nh;    /* the header's copy, when it is in the page */
	struct kv_item *freed; /* the chunks left behind, linked through hnext */
	struct kv_item *dropped;
	unsigned moved; /* chunks copied */
	enum { C_GONE, C_RESCUED, C_EVICTED, C_RECLAIMED, C_BUSY } outcome;
};

static int in_page(const struct chunked_req *rq, const void *p)
{
	const char *c = p;
	return c >= rq->lo && c < rq->hi;
}

static uint64_t rescue_chunked_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_assoc *as = state;
	struct chunked_req *rq = KV_REQ(struct chunked_req, a);
	kv_store *st = rq->st;
	struct kv_item *old = rq->old;
	struct kv_item **pp = kv_assoc_find_item(as, old, rq->hv);
	if (!pp) {
		rq->outcome = C_GONE;
		return 0;
	}
	int flushed;
	int64_t size = (int64_t)kv_item_bytes(st, old);
	int dead = kv_clock_item_dead(&st->clock, old, kv_clock_now(&st->clock), &flushed);
	int header_in = in_page(rq, old);
	if (!dead && (rq->nfresh < rq->used || (header_in && !rq->nh))) {
		/* Not enough free chunks: it goes. */
		rq->cnt->curr_items--;
		rq->cnt->bytes -= size;
		kv_assoc_unlink_at(as, pp, &rq->dropped);
		rq->outcome = C_EVICTED;
		return 0;
	}
	if (dead) {
		rq->cnt->reclaimed++;
		rq->cnt->curr_items--;
		rq->cnt->bytes -= size;
		kv_assoc_unlink_at(as, pp, &rq->dropped);
		rq->outcome = C_RECLAIMED;
		return 0;
	}
	/* Holders: the hash table and us (the LRU's reference). Acquire: a sender's release
	   comes after its last read of the chunks. */
	if (ld_acquire(&old->refs) > 2) {
		rq->outcome = C_BUSY;
		return 0;
	}
	struct kv_chunks *ch = kv_item_chunks(old);
	size_t total = (size_t)old->nbytes + 2;
	unsigned k = 0;
	for (unsigned i = 0; i < ch->n; i++) {
		struct kv_item *from = ch->p[i];
		if (!in_page(rq, from))
			continue;
		struct kv_item *to = rq->fresh[k++];
		size_t at = (size_t)i * ch->size,
		       len = total - at < ch->size ? total - at : ch->size;
		memcpy(to->data, from->data, len);
		st_relaxed(&ch->p[i], to);
		from->hnext = rq->freed;
		rq->freed = from;
	}
	rq->moved = k;
	if (header_in) {
		/* The header's copy takes its place, with the table; the old header goes alone. */
		struct kv_item *nh = rq->nh;
		size_t hb = kv_chunked_header(old->nkey, ch->n);
		memcpy(nh->data, old->data, hb - sizeof(struct kv_item));
		nh->cas = old->cas;
		nh->exptime = old->exptime;
		nh->atime = ld_relaxed(&old->atime);
		nh->flags = old->flags;
		nh->nbytes = old->nbytes;
		nh->nkey = old->nkey;
		nh->cls = old->cls;
		nh->state =
			ld_relaxed(&old->state) & (KV_IT_FETCHED | KV_IT_ACTIVE | KV_IT_CHUNKED);
		nh->lru = ld_relaxed(&old->lru);
		nh->mark = old->mark;
		kv_item_clear(old, KV_IT_CHUNKED);
		old->cls = ch->hcls;
		kv_assoc_unlink_at(as, pp, &rq->dropped);
		kv_assoc_link(as, nh, rq->hv);
	}
	rq->outcome = C_RESCUED;
	return 0;
}

static void rescue_chunked(kv_store *st, struct kv_counts *cnt, struct kv_item *old,
			   const struct kv_slabs_move *mv)
{
	struct chunked_req rq = {.st = st, .cnt = cnt, .old = old, .lo = mv->lo, .hi = mv->hi};
	struct kv_chunks *ch = kv_item_chunks(old);
	for (unsigned i = 0; i < ch->n; i++)
		rq.used += in_page(&rq, ld_relaxed(&ch->p[i]));
	struct kv_item *fresh[64];
	rq.fresh = rq.used <= 64 ? fresh : malloc(rq.used * sizeof(*rq.fresh));
	int full;
	/* Free chunks of the class, never new memory: the class is giving a page away. */
	while (rq.fresh && rq.nfresh < rq.used) {
		struct kv_item *c = kv_slabs_alloc(&st->slabs_sec, mv->src, 0, &full);
		if (!c)
			break;
		memset(c, 0, sizeof(*c));
		c->cls = (uint8_t)mv->src;
		c->state = KV_IT_CHUNK;
		rq.fresh[rq.nfresh++] = c;
	}
	if (in_page(&rq, old) && (rq.nh = kv_slabs_alloc(&st->slabs_sec, mv->src, 0, &full))) {
		memset(rq.nh, 0, sizeof(*rq.nh));
		rq.nh->cls = (uint8_t)mv->src;
		st_relaxed(&rq.nh->refs, 1);
	}
	rq.hv = kv_item_hash(old);
	if (rq.fresh)
		kv_sec_run(kv_assoc_stripe(&st->assoc, rq.hv), rescue_chunked_sec, &rq);
	else
		rq.outcome = C_BUSY; /* no memory for the list: a later pass */
	switch (rq.outcome) {
	case C_RESCUED:
		kv_lru_link_kept(&st->alloc_sec, rq.nh && rq.dropped ? rq.nh : old);
		cnt->slab_reassign_chunk_rescues += rq.moved;
		if (rq.nh && rq.dropped)
			cnt->slab_reassign_rescues++;
		break;
	case C_BUSY:
		kv_lru_link_kept(&st->alloc_sec, old); /* back; a later pass tries again */
		break;
	case C_EVICTED:
		cnt->slab_reassign_evictions_nomem++;
		break;
	case C_RECLAIMED:
		cnt->slab_reassign_inline_reclaim++;
		break;
	case C_GONE:
		break;
	}
	/* The free chunks not used, and the chunks left behind, back (into the page). */
	struct kv_item *back = rq.freed;
	for (unsigned i = rq.moved; i < rq.nfresh; i++) {
		rq.fresh[i]->hnext = back;
		back = rq.fresh[i];
	}
	if (back)
		kv_slabs_free_chain(&st->slabs_sec, back);
	if (rq.nh) {
		if (rq.outcome == C_RESCUED && rq.dropped)
			kv_item_release(st,
					rq.nh); /* ours: the copy's holders are the table and LRU */
		else
			kv_slabs_free(&st->slabs_sec, rq.nh);
	}
	if (rq.fresh != fresh)
		free(rq.fresh);
	kv_items_drop_unlinked(st, rq.dropped);
	kv_item_release(st, old); /* the LRU's reference */
}

/* One pass over the page being moved. Returns the chunks still in use after it. */
static uint32_t move_step(kv_store *st, struct kv_counts *cnt)
{
	struct kv_slabs_move mv;
	kv_slabs_moving(&st->slabs_sec, &mv);
	if (!mv.active)
		return 0;
	unsigned max = mv.left;
	struct kv_item **items = max ? malloc(max * sizeof(*items)) : NULL;
	if (!items)
		return mv.left;
	unsigned n = kv_lru_take_range(&st->alloc_sec, mv.src, mv.lo, mv.hi, items, max, 0);
	for (unsigned i = 0; i < n; i++)
		rescue(st, cnt, items[i]);
	/* Chunked items are listed in the class of slab_chunk_max, wherever their parts are. */
	n = kv_lru_take_range(&st->alloc_sec, kv_slabs_class_for(st->slabs, st->chunk_max), mv.lo,
			      mv.hi, items, max, 1);
	for (unsigned i = 0; i < n; i++)
		rescue_chunked(st, cnt, items[i], &mv);
	free(items);
	kv_slabs_moving(&st->slabs_sec, &mv);
	if (mv.active && mv.left)
		cnt->slab_reassign_busy_items += mv.left;
	return mv.active ? mv.left : 0;
}

/* ---------- choosing a move ---------- */

/* A class holding more than 2.5 pages' worth of free chunks, and a page to spare. */
static int reclaimable(const struct kv_slabs_class_report *c)
{
	return c->pages >= MIN_PAGES_FOR_SOURCE &&
	       (double)c->free > c->perpage * FREE_PAGES_RECLAIM;
}

struct window_sum {
	uint64_t age;
	unsigned evicted, dirty;
	double evicted_share;
};

static void choose(struct kv_automove *a, const struct kv_slabs_report *sr,
		   const struct kv_lru_report *lr, int mode, uint32_t now, unsigned *src,
		   unsigned *dst)
{
	*src = *dst = 0;
	uint64_t evicted_total = 0;
	for (unsigned n = 1; n <= sr->ncls; n++)
		evicted_total += lr->cls[n].evicted - a->evicted_before[n];
	a->cur = (a->cur + 1) % a->window;
	a->at[a->cur] = now;
	if (a->filled < a->window)
		a->filled++;
	/*
	 * The samples of the last slab_automove_window seconds of server time: as many as
	 * there are slots only when every tick came on time. A main thread that gets the CPU
	 * late (a loaded machine) samples less often, and a window counted in samples would
	 * then stretch, keeping an eviction of long ago dirty for many more seconds.
	 */
	uint32_t window_s = a->window / KV_AUTOMOVE_HZ;
	unsigned span = 0;
	while (span < a->filled) {
		uint32_t t = a->at[(a->cur + a->window - span) % a->window];
		if (span > 0 && now - t >= window_s)
			break;
		span++;
	}
	unsigned oldest = 0, youngest = 0, reclaim = 0;
	double oldest_age = 0, youngest_age = 1e300;
	int youngest_evicting = 0;
	for (unsigned n = 1; n <= sr->ncls; n++) {
		struct sample *w = &a->samples[(size_t)n * a->window];
		struct sample *s = &w[a->cur];
		uint64_t evicted = lr->cls[n].evicted - a->evicted_before[n];
		*s = (struct sample){.age = lr->cls[n].age};
		if (evicted) {
			s->evicted = 1;
			s->dirty = 1;
			s->evicted_share = (float)evicted / (float)evicted_total;
		}
		/* A class that grew is busy; one that gave a page away is not (the mover's own
		   doing, which would otherwise hold the next reclaim for a whole window). */
		if (lr->cls[n].outofmemory != a->oom_before[n] ||
		    sr->cls[n].pages > a->pages_before[n])
			s->dirty = 1;
		struct window_sum sum = {0};
		unsigned recent = 0, last_second = span < KV_AUTOMOVE_HZ ? span : KV_AUTOMOVE_HZ;
		for (unsigned k = 0; k < span; k++) {
			unsigned i = (a->cur + a->window - k) % a->window;
			sum.age += w[i].age;
			sum.evicted += w[i].evicted;
			sum.dirty += w[i].dirty;
			sum.evicted_share += w[i].evicted_share;
			if (k < last_second)
				recent += w[i].evicted;
		}
		double age = (double)sum.age / span;
		const struct kv_slabs_class_report *c = &sr->cls[n];
		if (mode == 1 && !reclaim && sum.dirty == 0 && reclaimable(c))
			reclaim = n;
		if (c->pages > MIN_PAGES_FOR_SOURCE && age > oldest_age) {
			oldest = n;
			oldest_age = age;
		}
		int evicting = mode == 2 ? s->evicted
					 : sum.evicted * 2 > span ||
						   sum.evicted_share / span > 0.25 ||
						   recent * 2 > last_second;
		if (evicting && age < youngest_age) {
			youngest = n;
			youngest_age = age;
			youngest_evicting = s->evicted;
		}
	}
	if (reclaim) {
		*src = reclaim; /* to the pool: any class may take it */
		return;
	}
	if (!oldest || !youngest || oldest == youngest || !youngest_evicting)
		return;
	double ratio;
	__atomic_load(&a->ratio, &ratio, __ATOMIC_RELAXED);
	if (mode == 2 || youngest_age < oldest_age * ratio) {
		*src = oldest;
		*dst = youngest;
	}
}

void kv_automove_tick(kv_store *st, struct kv_counts *cnt)
{
	struct kv_automove *a = st->automove;
	if (move_step(st, cnt) > 0)
		return;
	int mode = ld_relaxed(&a->mode);
	struct kv_slabs_report *sr = malloc(sizeof(*sr));
	struct kv_lru_report *lr = malloc(sizeof(*lr));
	if (sr && lr) {
		kv_slabs_report(&st->slabs_sec, sr);
		kv_lru_report(&st->alloc_sec, lr, 0);
		if (a->primed && mode != 0) {
			unsigned src, dst;
			choose(a, sr, lr, mode, kv_clock_now(&st->clock), &src, &dst);
			/*
			 * A page for the pool that empties at once (its items rescued into the
			 * class's free chunks) lets the class give the next one in the same
			 * call, as memcached's maintainer comes straight back after a move to
			 * the pool: deletes give their memory back within seconds.
			 */
			for (int k = 0; src && k < RECLAIMS_PER_TICK; k++) {
				if (kv_slabs_move_start(&st->slabs_sec, src, dst) != KV_MOVE_OK ||
				    move_step(st, cnt) > 0 || dst != 0)
					break;
				kv_slabs_report(&st->slabs_sec, sr);
				if (!reclaimable(&sr->cls[src]))
					break;
			}
		}
		for (unsigned n = 1; n <= sr->ncls; n++) {
			a->evicted_before[n] = lr->cls[n].evicted;
			a->oom_before[n] = lr->cls[n].outofmemory;
			a->pages_before[n] = sr->cls[n].pages;
		}
		a->primed = 1;
	}
	free(sr);
	free(lr);
}
