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
#define OWNER_FREE  0
#define OWNER_POOL  0xfe
#define OWNER_RUN   0xff

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
	struct page_list own;	/* small pages past the limit, and chunks larger than a page */
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
	/*
	 * -e: item memory is a mapped file (kv/store/memfile.h) of region_pages whole pages,
	 * all of them handed out from the pool, none from malloc and none freed; else NULL.
	 * owner: while a restart rebuilds the classes, each page's class (OWNER_FREE: the
	 * pool's; OWNER_RUN: a later page of a chunk larger than a page).
	 */
	char *region;
	size_t region_pages;
	uint8_t *owner;
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
			      size_t chunk_max, char *region, size_t region_len)
{
	struct kv_slabs *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->limit = limit;
	s->page_size = KV_PAGE_SIZE;
	build_classes(s, item_size_max, factor, chunk_min, chunk_max);
	if (region) {
		s->region = region;
		s->region_pages = region_len / s->page_size;
		s->malloced = s->region_pages * s->page_size;
	}
	return s;
}

void kv_slabs_count_taken(struct kv_slabs *s, size_t n)
{
	if (!s->region)
		s->malloced = n;
}

void kv_slabs_delete(struct kv_slabs *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->all.n; i++)
		free(s->all.p[i]);
	free(s->all.p);
	free(s->pool.p);
	for (unsigned i = 0; i <= KV_CLASSES_MAX; i++) {
		free(s->cls[i].pages.p);
		free(s->cls[i].own.p);
	}
	free(s->owner);
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

/* A page of the class's own (a small page, or a chunk larger than a page) joins it. */
static int give_own(struct slab_class *c, char *page, size_t len)
{
	if (list_push(&c->own, page) != 0)
		return -1;
	give_page(c, page, len);
	return 0;
}

static int page_order(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	return x < y ? -1 : x > y;
}

/*
 * -e: n pages in a row from the pool, for a chunk larger than a page (the file's pages
 * are handed out from the pool only). NULL if the pool has no such run.
 */
static char *pool_run(struct kv_slabs *s, size_t n)
{
	struct page_list *l = &s->pool;
	if (l->n < n)
		return NULL;
	qsort(l->p, l->n, sizeof(l->p[0]), page_order);
	for (size_t i = 0; i + n <= l->n; i++) {
		if (l->p[i + n - 1] != l->p[i] + (n - 1) * s->page_size)
			continue;
		char *run = l->p[i];
		memmove(&l->p[i], &l->p[i + n], (l->n - i - n) * sizeof(l->p[0]));
		l->n -= n;
		return run;
	}
	return NULL;
}

/* A new page for class c: the pool, new memory within the limit, or (small) a small page. */
static int grow(struct kv_slabs *s, struct slab_class *c, int small, int *full)
{
	char *page = NULL;
	size_t len = s->page_size;
	if (c->size > s->page_size) {
		/* A chunk larger than a page: pages of its own, within the limit, never moved. */
		len = c->size;
		if (s->region) {
			page = pool_run(s, (len + s->page_size - 1) / s->page_size);
			if (!page) {
				*full = 1;
				return -1;
			}
			return give_own(c, page, len) == 0 ? 0 : -1;
		}
		if (s->malloced + len > s->limit && c->own.n + c->pages.n > 0) {
			*full = 1;
			return -1;
		}
		if (!(page = take_memory(s, len)))
			return -1;
		return give_own(c, page, len);
	}
	if (s->pool.n) {
		page = s->pool.p[--s->pool.n];
	} else if (!s->region && s->malloced + len <= s->limit) {
		page = take_memory(s, len);
	} else if (!s->region && small && c->pages.n + c->own.n == 0) {
		/*
		 * A class with no memory at all gets a small page past the limit
		 * (memcached grants a whole page), so every size stays storable:
		 * the overshoot is at most SMALL_PAGE (or one chunk) per class.
		 * Not from a memory file (-e), whose size is the limit, as memcached's.
		 */
		len = c->size > SMALL_PAGE ? c->size : SMALL_PAGE / c->size * c->size;
		if (!(page = take_memory(s, len)))
			return -1;
		return give_own(c, page, len);
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
	if (!sc->free && (!rq->grow || grow(s, sc, rq->grow != KV_GROW_LIMIT, &rq->full) != 0))
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

/* A whole page back to the system: one in `all` (not a memory file's). */
static void release_page(struct kv_slabs *s, char *page)
{
	for (size_t i = 0; i < s->all.n; i++)
		if (s->all.p[i] == page) {
			list_remove_at(&s->all, i);
			break;
		}
	free(page);
	s->malloced -= s->page_size;
}

/*
 * The moved page is empty: it goes to its destination. A page for the pool while
 * more memory is taken than the limit allows (cache_memlimit lowered it) is freed
 * instead, as memcached's memory_release does.
 */
static void move_finish(struct kv_slabs *s)
{
	if (s->mv.dst == 0) {
		if (!s->region && s->malloced > s->limit)
			release_page(s, s->mv.page);
		else if (list_push(&s->pool, s->mv.page) != 0)
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
	for (struct kv_item *it = KV_REQ(struct kv_item, a), *next; it; it = next) {
		next = it->hnext;
		if (in_moving_page(s, it)) {
			if (++s->mv.freed == s->mv.nchunks)
				move_finish(s);
			continue;
		}
		push_free(&s->cls[it->cls], it);
	}
	return 0;
}

void kv_slabs_free(struct kv_sec *sec, struct kv_item *it)
{
	it->hnext = NULL;
	kv_sec_run(sec, free_sec, it);
}

void kv_slabs_free_chain(struct kv_sec *sec, struct kv_item *first)
{
	kv_sec_run(sec, free_sec, first);
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
	int refused;
};

static uint64_t set_limit_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct limit_req *rq = KV_REQ(struct limit_req, a);
	if (s->region) {
		rq->refused = 1; /* a memory file's size is fixed, as memcached's */
		return 0;
	}
	s->limit = rq->limit;
	while (s->malloced > s->limit && s->pool.n)
		release_page(s, s->pool.p[--s->pool.n]);
	return 0;
}

int kv_slabs_set_limit(struct kv_sec *sec, size_t limit)
{
	struct limit_req rq = {.limit = limit};
	kv_sec_run(sec, set_limit_sec, &rq);
	return rq.refused ? -1 : 0;
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
			.small = sc->own.n,
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

/* ---------- a memory file (-e): the pages at the start, and across a restart ---------- */

int kv_slabs_prefill(struct kv_slabs *s, unsigned *needed)
{
	/* As memcached's restartable mode: a page for each of memcached's classes, then the
	   rest to the pool. The class of -I (items above slab_chunk_max, which memcached
	   stores in chunks of its largest class) takes its pages from the pool when used. */
	unsigned classes = s->big ? s->ncls - 1 : s->ncls;
	*needed = classes;
	if (s->region_pages < classes)
		return -1;
	size_t next = 0;
	for (unsigned c = 1; c <= classes; c++) {
		char *page = s->region + next++ * s->page_size;
		if (list_push(&s->cls[c].pages, page) != 0)
			return -1;
		give_page(&s->cls[c], page, s->page_size);
	}
	for (size_t i = s->region_pages; i-- > next;) /* the lowest pages are taken first */
		if (list_push(&s->pool, s->region + i * s->page_size) != 0)
			return -1;
	return 0;
}

static uint32_t page_index(const struct kv_slabs *s, const char *page)
{
	return (uint32_t)((size_t)(page - s->region) / s->page_size);
}

/* The indexes of a list's pages, appended to out (grown as needed). */
static int add_indexes(const struct kv_slabs *s, const struct page_list *l, uint32_t **out,
		       size_t *n)
{
	if (!l->n)
		return 0;
	uint32_t *p = realloc(*out, (*n + l->n) * sizeof(*p));
	if (!p)
		return -1;
	*out = p;
	for (size_t i = 0; i < l->n; i++)
		p[(*n)++] = page_index(s, l->p[i]);
	return 0;
}

static uint64_t layout_get_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct kv_slabs *s = state;
	struct kv_slabs_layout *l = KV_REQ(struct kv_slabs_layout, a);
	int e = 0;
	for (unsigned k = 1; k <= s->ncls; k++) {
		struct slab_class *sc = &s->cls[k];
		if (s->mv.active && s->mv.src == k) {
			/* The page being moved is still its source's: its live items are saved. */
			struct page_list one = {.p = &s->mv.page, .n = 1};
			e |= add_indexes(s, &one, &l->pages[k], &l->npages[k]);
		}
		e |= add_indexes(s, &sc->pages, &l->pages[k], &l->npages[k]);
		e |= add_indexes(s, &sc->own, &l->runs[k], &l->nruns[k]);
	}
	e |= add_indexes(s, &s->pool, &l->pool, &l->npool);
	l->err = e;
	return 0;
}

int kv_slabs_layout_get(struct kv_sec *sec, struct kv_slabs_layout *out)
{
	memset(out, 0, sizeof(*out));
	kv_sec_run(sec, layout_get_sec, out);
	return out->err ? -1 : 0;
}

void kv_slabs_layout_free(struct kv_slabs_layout *l)
{
	for (unsigned k = 0; k <= KV_CLASSES_MAX; k++) {
		free(l->pages[k]);
		free(l->runs[k]);
	}
	free(l->pool);
	memset(l, 0, sizeof(*l));
}

/* Claim n pages from index i for class cls (OWNER_RUN after the first); 0, or -1 if any is
   outside the file or already claimed. */
static int claim(struct kv_slabs *s, uint32_t i, size_t n, uint8_t cls)
{
	if (i >= s->region_pages || n > s->region_pages - i)
		return -1;
	for (size_t k = 0; k < n; k++)
		if (s->owner[i + k] != OWNER_FREE)
			return -1;
	for (size_t k = 0; k < n; k++)
		s->owner[i + k] = k ? OWNER_RUN : cls;
	return 0;
}

int kv_slabs_layout_set(struct kv_slabs *s, const struct kv_slabs_layout *l)
{
	if (!s->region || !(s->owner = calloc(s->region_pages ? s->region_pages : 1, 1)))
		return -1;
	for (unsigned k = 1; k <= KV_CLASSES_MAX; k++) {
		if ((l->npages[k] || l->nruns[k]) && k > s->ncls)
			return -1;
		struct slab_class *sc = &s->cls[k];
		size_t run = (sc->size + s->page_size - 1) / s->page_size;
		for (size_t i = 0; i < l->npages[k]; i++) {
			if (sc->size > s->page_size || claim(s, l->pages[k][i], 1, (uint8_t)k) ||
			    list_push(&sc->pages,
				      s->region + (size_t)l->pages[k][i] * s->page_size))
				return -1;
			sc->chunks += sc->perpage;
		}
		for (size_t i = 0; i < l->nruns[k]; i++) {
			if (sc->size <= s->page_size || claim(s, l->runs[k][i], run, (uint8_t)k) ||
			    list_push(&sc->own, s->region + (size_t)l->runs[k][i] * s->page_size))
				return -1;
			sc->chunks += 1;
		}
	}
	for (size_t i = 0; i < l->npool; i++)
		if (claim(s, l->pool[i], 1, OWNER_POOL) ||
		    list_push(&s->pool, s->region + (size_t)l->pool[i] * s->page_size))
			return -1;
	/* Pages the metadata did not name (none, from a file it describes) join the pool. */
	for (size_t i = 0; i < s->region_pages; i++)
		if (s->owner[i] == OWNER_FREE && list_push(&s->pool, s->region + i * s->page_size))
			return -1;
	return 0;
}

/* fn on every chunk of every class's pages (the page being moved too, unless keep_free);
   with keep_free, a chunk fn says 0 to goes onto its class's free list. */
static void each_chunk(struct kv_slabs *s, int (*fn)(void *, struct kv_item *, unsigned), void *ctx,
		       int keep_free)
{
	for (unsigned k = 1; k <= s->ncls; k++) {
		struct slab_class *sc = &s->cls[k];
		for (int list = 0; list < 2; list++) {
			const struct page_list *l = list ? &sc->own : &sc->pages;
			uint32_t per = list ? 1 : sc->perpage;
			for (size_t i = 0; i < l->n; i++)
				for (uint32_t j = 0; j < per; j++) {
					struct kv_item *it =
						(struct kv_item *)(l->p[i] + (size_t)j * sc->size);
					if (!fn(ctx, it, k) && keep_free)
						push_free(sc, it);
				}
		}
		if (!keep_free && s->mv.active && s->mv.src == k)
			for (uint32_t j = 0; j < s->mv.nchunks; j++)
				fn(ctx, (struct kv_item *)(s->mv.page + (size_t)j * sc->size), k);
	}
}

void kv_slabs_scan(struct kv_slabs *s, int (*live)(void *ctx, struct kv_item *it, unsigned cls),
		   void *ctx)
{
	each_chunk(s, live, ctx, 1);
}

struct each_req {
	int (*fn)(void *, struct kv_item *, unsigned);
	void *ctx;
};

static uint64_t each_sec(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	struct each_req *rq = KV_REQ(struct each_req, a);
	each_chunk(state, rq->fn, rq->ctx, 0);
	return 0;
}

void kv_slabs_each_chunk(struct kv_sec *sec, int (*fn)(void *ctx, struct kv_item *it, unsigned cls),
			 void *ctx)
{
	struct each_req rq = {.fn = fn, .ctx = ctx};
	kv_sec_run(sec, each_sec, &rq);
}

unsigned kv_slabs_chunk_class(const struct kv_slabs *s, const void *p)
{
	const char *c = p;
	if (!s->owner || c < s->region || c >= s->region + s->region_pages * s->page_size)
		return 0;
	size_t off = (size_t)(c - s->region);
	uint8_t k = s->owner[off / s->page_size];
	if (k == OWNER_FREE || k == OWNER_POOL || k == OWNER_RUN)
		return 0;
	const struct slab_class *sc = &s->cls[k];
	size_t in = off % s->page_size;
	if (sc->size > s->page_size)
		return in == 0 ? k : 0;
	return in % sc->size == 0 && in / sc->size < sc->perpage ? k : 0;
}

void kv_slabs_restore_done(struct kv_slabs *s)
{
	free(s->owner);
	s->owner = NULL;
}
