/*
 * locus-kv's slab allocator (slabs.h). Every function named *_sec runs
 * inside the slabs section, on the struct kv_slabs given to its executor.
 */
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/store/slabs.h"

#define SMALL_PAGE  (64u << 10) /* a class's first page once the limit is reached */
#define CHUNK_ALIGN 8

struct page_list {
	char **p;
	size_t n, cap;
};

struct slab_class {
	uint32_t size;	      /* chunk size */
	uint32_t perpage;     /* chunks in a whole page */
	struct kv_item *free; /* free chunks, linked through hnext */
	uint64_t nfree;
	struct page_list pages; /* whole pages, oldest first (a move takes the first) */
	uint64_t small;		/* small pages past the limit */
	uint64_t chunks;	/* chunks its pages hold */
};

struct kv_slabs {
	struct slab_class cls[KV_CLASSES_MAX + 1];
	unsigned ncls; /* classes 1..ncls */
	int big;       /* class ncls holds items above slab_chunk_max, up to -I */
	size_t page_size;
	size_t limit;
	size_t malloced;
	struct page_list all;  /* every allocation, freed by kv_slabs_delete */
	struct page_list pool; /* whole pages no class holds */
	struct {
		int active;
		unsigned src, dst;
		char *page;
		uint32_t nchunks, freed;
	} mv;
	uint64_t moves;
	/* The move published for kv_slabs_moving_page: class (0: none) and page (atomics). */
	unsigned pub_cls;
	char *pub_page;
};

static int list_push(struct page_list *l, char *page)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **p = realloc(l->p, cap * sizeof(*p));
		if (!p)
			return -1;
		l->p = p;
		l->cap = cap;
	}
	l->p[l->n++] = page;
	return 0;
}

static void list_remove_at(struct page_list *l, size_t i)
{
	memmove(&l->p[i], &l->p[i + 1], (l->n - i - 1) * sizeof(l->p[0]));
	l->n--;
}

/*
 * memcached 1.6's class table: from its 48-byte item header plus -n, times
 * -f each class, rounded up to 8 bytes, while below slab_chunk_max / f; then
 * a class of slab_chunk_max. memcached stores larger items in chunks of
 * that class; here they take one chunk of a class of -I bytes (on pages of
 * their own when -I is above the page size). Items are placed by their size
 * as memcached counts it (kv_mc_item_size), which is never less than the
 * room they take here (item.h).
 */
static void build_classes(struct kv_slabs *s, size_t item_size_max, double factor,
			  unsigned chunk_min, size_t chunk_max)
{
	unsigned size = 48 + chunk_min;
	unsigned i = 0;
	while (++i < KV_CLASSES_MAX - 1) {
		if (size >= (double)chunk_max / factor)
			break;
		if (size % CHUNK_ALIGN)
			size += CHUNK_ALIGN - size % CHUNK_ALIGN;
		s->cls[i].size = size;
		s->cls[i].perpage = (uint32_t)(s->page_size / size);
		size = (unsigned)(size * factor);
	}
	s->cls[i].size = (uint32_t)chunk_max;
	s->cls[i].perpage = (uint32_t)(s->page_size / chunk_max);
	if (item_size_max > chunk_max) {
		s->big = 1;
		i++;
		s->cls[i].size = (uint32_t)item_size_max;
		s->cls[i].perpage =
			item_size_max < s->page_size ? (uint32_t)(s->page_size / item_size_max) : 1;
	}
	s->ncls = i;
}

/* A class whose chunks are larger than a page has pages of one chunk, which never move. */
static int movable(const struct kv_slabs *s, unsigned cls)
{
	return cls == 0 || s->cls[cls].size <= s->page_size;
}

struct kv_slabs *kv_slabs_new(size_t limit, size_t item_size_max, double factor, unsigned chunk_min,
			      size_t chunk_max)
{
	struct kv_slabs *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->limit = limit;
	s->page_size = KV_PAGE_SIZE;
	build_classes(s, item_size_max, factor, chunk_min, chunk_max);
	return s;
}

void kv_slabs_delete(struct kv_slabs *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->all.n; i++)
		free(s->all.p[i]);
	free(s->all.p);
	free(s->pool.p);
	for (unsigned i = 0; i <= KV_CLASSES_MAX; i++)
		free(s->cls[i].pages.p);
	free(s);
}

unsigned kv_slabs_class_for(const struct kv_slabs *s, size_t total)
{
	for (unsigned i = 1; i <= s->ncls; i++)
		if (s->cls[i].size >= total)
			return i;
	return 0;
}

unsigned kv_slabs_nclasses(const struct kv_slabs *s)
{
	return s->ncls;
}

uint32_t kv_slabs_chunk_size(const struct kv_slabs *s, unsigned cls)
{
	return s->cls[cls].size;
}

size_t kv_slabs_page_size(const struct kv_slabs *s)
{
	return s->page_size;
}

unsigned kv_slabs_shown_class(const struct kv_slabs *s, unsigned cls)
{
	return s->big && cls == s->ncls ? cls - 1 : cls;
}

/* ---------- inside the section ---------- */

static void push_free(struct slab_class *c, struct kv_item *it)
{
	it->hnext = c->free;
	c->free = it;
	c->nfree++;
}

/* A whole page joins class c: all of it onto the free list. */
static void give_page(struct slab_class *c, char *page, size_t len)
{
	uint32_t n = (uint32_t)(len / c->size);
	for (uint32_t i = n; i-- > 0;)
		push_free(c, (struct kv_item *)(page + (size_t)i * c->size));
	c->chunks += n;
}

static char *take_memory(struct kv_slabs *s, size_t len)
{
	char *page = malloc(len);
	if (!page)
		return NULL;
	if (list_push(&s->all, page) != 0) {
		free(page);
		return NULL;
	}
	s->malloced += len;
	return page;
}

/* A new page for class c: the pool, new memory within the limit, or a small page. */
static int grow(struct kv_slabs *s, struct slab_class *c, int *full)
{
	char *page = NULL;
	size_t len = s->page_size;
	if (c->size > s->page_size) {
		/* A chunk larger than a page: a page of its own, within the limit, never moved. */
		len = c->size;
		if (s->malloced + len > s->limit && c->small + c->pages.n > 0) {
			*full = 1;
			return -1;
		}
		if (!(page = take_memory(s, len)))
			return -1;
		c->small++;
		give_page(c, page, len);
		return 0;
	}
	if (s->pool.n) {
		page = s->pool.p[--s->pool.n];
	} else if (s->malloced + len <= s->limit) {
		page = take_memory(s, len);
	} else if (c->pages.n + c->small == 0) {
		/*
		 * A class with no memory at all gets a small page past the limit
		 * (memcached grants a whole page), so every size stays storable:
		 * the overshoot is at most SMALL_PAGE (or one chunk) per class.
		 */
		len = c->size > SMALL_PAGE ? c->size : SMALL_PAGE / c->size * c->size;
		if (!(page = take_memory(s, len)))
			return -1;
		c->small++;
		give_page(c, page, len);
		return 0;
	} else {
		*full = 1;
		return -1;
	}
	if (!page)
		return -1;
	if (list_push(&c->pages, page) != 0) {
		/* Out of memory for the list: keep the page for later (it is in `all` anyway). */
		(void)list_push(&s->pool, page);
		return -1;
	}
	give_page(c, page, s->page_size);
	return 0;
}

struct alloc_req {
	unsigned cls;
	int grow, full;
	struct kv_item *it;
};

static uint64_t alloc_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct alloc_req *rq = KV_REQ(struct alloc_req, a);
	struct slab_class *sc = &s->cls[rq->cls];
	if (!sc->free && (!rq->grow || grow(s, sc, &rq->full) != 0))
		return 0;
	rq->it = sc->free;
	sc->free = rq->it->hnext;
	sc->nfree--;
	return 0;
}

struct kv_item *kv_slabs_alloc(struct kv_sec *sec, unsigned cls, int grow, int *full)
{
	struct alloc_req rq = {.cls = cls, .grow = grow};
	kv_sec_run(sec, alloc_sec, &rq);
	*full = rq.full;
	return rq.it;
}

/* The moved page is empty: it goes to its destination. */
static void move_finish(struct kv_slabs *s)
{
	if (s->mv.dst == 0) {
		if (list_push(&s->pool, s->mv.page) != 0)
			give_page(&s->cls[s->mv.src], s->mv.page, s->page_size); /* back, then */
	} else {
		struct slab_class *d = &s->cls[s->mv.dst];
		if (list_push(&d->pages, s->mv.page) == 0)
			give_page(d, s->mv.page, s->page_size);
		else
			give_page(&s->cls[s->mv.src], s->mv.page, s->page_size);
	}
	s->mv.active = 0;
	s->moves++;
	st_relaxed(&s->pub_cls, 0);
}

void kv_slabs_moving_page(const struct kv_slabs *s, unsigned cls, const char **lo, const char **hi)
{
	*lo = *hi = NULL;
	if (ld_relaxed(&s->pub_cls) != cls || cls == 0)
		return;
	const char *p = ld_relaxed(&s->pub_page);
	*lo = p;
	*hi = p + s->page_size;
}

static int in_moving_page(const struct kv_slabs *s, const void *p)
{
	const char *c = p;
	return s->mv.active && c >= s->mv.page && c < s->mv.page + s->page_size;
}

static uint64_t free_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct kv_item *it = KV_REQ(struct kv_item, a);
	if (in_moving_page(s, it)) {
		if (++s->mv.freed == s->mv.nchunks)
			move_finish(s);
		return 0;
	}
	push_free(&s->cls[it->cls], it);
	return 0;
}

void kv_slabs_free(struct kv_sec *sec, struct kv_item *it)
{
	kv_sec_run(sec, free_sec, it);
}

struct move_req {
	unsigned src, dst;
	enum kv_move_result result;
};

/*
 * Take the source's oldest page out of use: its free chunks leave the free
 * list, so no new item lands in it; the items
 * still in it are items.c's to rescue or evict, and the last one freed
 * finishes the move (free_sec).
 */
static uint64_t move_start_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct move_req *rq = KV_REQ(struct move_req, a);
	if (s->mv.active) {
		rq->result = KV_MOVE_BUSY;
		return 0;
	}
	if (rq->src == rq->dst) {
		rq->result = KV_MOVE_SAME;
		return 0;
	}
	if (rq->src > s->ncls || rq->dst > s->ncls || !movable(s, rq->src) ||
	    !movable(s, rq->dst)) {
		rq->result = KV_MOVE_BADCLASS;
		return 0;
	}
	if (rq->src == 0) {
		/* From the pool: memcached asks for two pages there too. */
		if (s->pool.n < 2) {
			rq->result = KV_MOVE_NOSPARE;
			return 0;
		}
		struct slab_class *d = &s->cls[rq->dst];
		char *page = s->pool.p[--s->pool.n];
		if (list_push(&d->pages, page) == 0)
			give_page(d, page, s->page_size);
		else
			s->pool.n++;
		s->moves++;
		rq->result = KV_MOVE_OK;
		return 0;
	}
	struct slab_class *sc = &s->cls[rq->src];
	if (sc->pages.n < 2) {
		rq->result = KV_MOVE_NOSPARE;
		return 0;
	}
	char *page = sc->pages.p[0];
	list_remove_at(&sc->pages, 0);
	s->mv.active = 1;
	s->mv.src = rq->src;
	s->mv.dst = rq->dst;
	s->mv.page = page;
	s->mv.nchunks = sc->perpage;
	s->mv.freed = 0;
	st_relaxed(&s->pub_page, page);
	st_relaxed(&s->pub_cls, rq->src);
	for (struct kv_item **pp = &sc->free; *pp;) {
		if (in_moving_page(s, *pp)) {
			*pp = (*pp)->hnext;
			sc->nfree--;
			s->mv.freed++;
		} else {
			pp = &(*pp)->hnext;
		}
	}
	sc->chunks -= sc->perpage;
	rq->result = KV_MOVE_OK;
	if (s->mv.freed == s->mv.nchunks)
		move_finish(s);
	return 0;
}

enum kv_move_result kv_slabs_move_start(struct kv_sec *sec, unsigned src, unsigned dst)
{
	struct move_req rq = {.src = src, .dst = dst};
	kv_sec_run(sec, move_start_sec, &rq);
	return rq.result;
}

static uint64_t moving_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct kv_slabs_move *out = KV_REQ(struct kv_slabs_move, a);
	out->active = s->mv.active;
	if (!s->mv.active)
		return 0;
	out->src = s->mv.src;
	out->dst = s->mv.dst;
	out->lo = s->mv.page;
	out->hi = s->mv.page + s->page_size;
	out->left = s->mv.nchunks - s->mv.freed;
	return 0;
}

void kv_slabs_moving(struct kv_sec *sec, struct kv_slabs_move *out)
{
	memset(out, 0, sizeof(*out));
	kv_sec_run(sec, moving_sec, out);
}

struct limit_req {
	size_t limit;
};

static uint64_t set_limit_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	s->limit = KV_REQ(struct limit_req, a)->limit;
	while (s->malloced > s->limit && s->pool.n) {
		char *page = s->pool.p[--s->pool.n];
		for (size_t i = 0; i < s->all.n; i++)
			if (s->all.p[i] == page) {
				list_remove_at(&s->all, i);
				break;
			}
		free(page);
		s->malloced -= s->page_size;
	}
	return 0;
}

void kv_slabs_set_limit(struct kv_sec *sec, size_t limit)
{
	struct limit_req rq = {.limit = limit};
	kv_sec_run(sec, set_limit_sec, &rq);
}

static uint64_t report_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct kv_slabs_report *r = KV_REQ(struct kv_slabs_report, a);
	r->ncls = s->ncls;
	for (unsigned i = 1; i <= s->ncls; i++) {
		const struct slab_class *sc = &s->cls[i];
		r->cls[i] = (struct kv_slabs_class_report){
			.size = sc->size,
			.perpage = sc->perpage,
			.pages = sc->pages.n,
			.small = sc->small,
			.chunks = sc->chunks,
			.free = sc->nfree,
		};
	}
	r->malloced = s->malloced;
	r->limit = s->limit;
	r->pool_pages = s->pool.n;
	r->moves = s->moves;
	r->moving = s->mv.active;
	return 0;
}

void kv_slabs_report(struct kv_sec *sec, struct kv_slabs_report *out)
{
	memset(out, 0, sizeof(*out));
	kv_sec_run(sec, report_sec, out);
}
