/*
 * locus-kv's slab allocator: the slabs section (memcached's slabs.c).
 *
 * Memory comes in 1 MB pages, each cut into the chunks of one class; the
 * classes are memcached's (build_classes in slabs.c: from the item header
 * plus -n, growing by -f, up to slab_chunk_max), and one of -I for larger
 * items. Pages are taken within the -m limit; a class that has no memory
 * at all when the limit is reached gets one small page past it (64 KB, or
 * one chunk), so every item size stays storable however the pages were
 * shared out.
 *
 * Pages move between classes (memcached's slab_reassign): a move takes one
 * page of the source class out of use — its free chunks off the free list —
 * and waits for the items still in it to be
 * freed (items.c rescues or evicts them, kv_items_move_step); the last chunk
 * freed hands the page to the destination class, or to the global pool of
 * whole pages that any class takes before new memory (destination 0).
 *
 * The class table (sizes) is fixed when the allocator is made and read
 * without a section; everything else is the slabs section's state.
 */
#ifndef LOCUS_KV_SLABS_H
#define LOCUS_KV_SLABS_H

#include <stddef.h>
#include <stdint.h>

#include "kv/store/item.h"
#include "kv/store/section.h"

#define KV_CLASSES_MAX 63
#define KV_PAGE_SIZE   (1u << 20) /* memcached's slab page */

struct kv_slabs;

/*
 * NULL if out of memory. chunk_max: memcached's slab_chunk_max (build_classes in slabs.c).
 * region (-e, NULL otherwise): item memory is region_len bytes of a mapped file, cut into
 * whole pages (kv_slabs_prefill or kv_slabs_layout_set hands them out), and nothing past
 * them: no small pages past the limit, no cache_memlimit, as memcached's memory file.
 */
struct kv_slabs *kv_slabs_new(size_t limit, size_t item_size_max, double factor, unsigned chunk_min,
			      size_t chunk_max, char *region, size_t region_len);
/* Count n bytes as taken already (no -e): memcached's T_MEMD_INITIAL_MALLOC test hook. */
void kv_slabs_count_taken(struct kv_slabs *s, size_t n);
/* Free every page: only once nothing uses the allocator any more. */
void kv_slabs_delete(struct kv_slabs *s);

/* The class table: fixed, read without a section. 0 if no class holds `total` bytes. */
unsigned kv_slabs_class_for(const struct kv_slabs *s, size_t total);
unsigned kv_slabs_nclasses(const struct kv_slabs *s);
uint32_t kv_slabs_chunk_size(const struct kv_slabs *s, unsigned cls);
size_t kv_slabs_page_size(const struct kv_slabs *s);
/* The class as memcached would number it: the -I class (beyond slab_chunk_max) is memcached's
   largest, whose chunks it stores such items in. */
unsigned kv_slabs_shown_class(const struct kv_slabs *s, unsigned cls);

/*
 * A chunk of class cls, from its free list, or (grow) a new page: from the global pool, else new
 * memory within the limit, else (unless grow is KV_GROW_LIMIT) a small page for a class with no
 * memory. NULL when none; then *full says whether that is because memory is at its limit (a new
 * page could not be had; only an eviction can help) rather than because grow was 0.
 */
#define KV_GROW_LIMIT 2
struct kv_item *kv_slabs_alloc(struct kv_sec *sec, unsigned cls, int grow, int *full);
/* A chunk back to its class (or to the page being moved, when it is in it). */
void kv_slabs_free(struct kv_sec *sec, struct kv_item *it);
/* Chunks linked through hnext back to their classes (each chunk's cls), in one section. */
void kv_slabs_free_chain(struct kv_sec *sec, struct kv_item *first);

/* Start moving a page of class src to class dst (0: the global pool). */
enum kv_move_result kv_slabs_move_start(struct kv_sec *sec, unsigned src, unsigned dst);

/* The move under way: the page's bytes and its source class, for items.c to empty it. */
struct kv_slabs_move {
	int active;
	unsigned src, dst;
	const char *lo, *hi; /* the page: items with lo <= address < hi are in it */
	uint32_t left;	     /* chunks of it still in use */
};
void kv_slabs_moving(struct kv_sec *sec, struct kv_slabs_move *out);
/* The same, without the section (atomics the section publishes): the moving page of class cls,
   or lo = hi = NULL. A hint: the move may end at any time. */
void kv_slabs_moving_page(const struct kv_slabs *s, unsigned cls, const char **lo, const char **hi);

/* cache_memlimit: a new limit; whole pages in the global pool above it are freed, and so is
   each page moved to the pool while more is taken than the limit. -1 with a memory file. */
int kv_slabs_set_limit(struct kv_sec *sec, size_t limit);

/* A copy of the allocator's figures, for stats and the automover. */
struct kv_slabs_class_report {
	uint32_t size, perpage;
	uint64_t pages; /* whole pages */
	uint64_t small; /* pages of its own: small ones past the limit, chunks larger than a page */
	uint64_t chunks; /* chunks in the class's pages */
	uint64_t free;	 /* on the free list (a page goes there whole, as memcached's) */
};
struct kv_slabs_report {
	unsigned ncls;
	struct kv_slabs_class_report cls[KV_CLASSES_MAX + 1];
	size_t malloced, limit;
	uint64_t pool_pages; /* whole pages no class holds */
	uint64_t moves;	     /* pages moved so far */
	int moving;	     /* a move is under way */
};
void kv_slabs_report(struct kv_sec *sec, struct kv_slabs_report *out);

/*
 * A memory file across a restart (restart.c). A fresh file: kv_slabs_prefill gives each
 * class a page and the rest to the pool, as memcached's restartable mode (-1 and *needed,
 * the pages that takes, if the file is smaller). Saving: kv_slabs_layout_get says which
 * pages each class holds, oldest first (a page being moved counts as its source's), which
 * runs of pages hold its chunks larger than a page, and which are the pool's, as indexes
 * of pages in the file; kv_slabs_each_chunk calls fn on every chunk of every class's pages.
 * Restarting, before the store's sections run: kv_slabs_layout_set hands the pages out
 * again (-1 if the layout does not fit the file), kv_slabs_scan asks of every chunk whether
 * it holds a live item (live's 0: it is free), kv_slabs_chunk_class says which class's
 * chunk starts at p (0: none), and kv_slabs_restore_done ends the restart.
 */
struct kv_slabs_layout {
	uint32_t *pages[KV_CLASSES_MAX + 1], *runs[KV_CLASSES_MAX + 1], *pool;
	size_t npages[KV_CLASSES_MAX + 1], nruns[KV_CLASSES_MAX + 1], npool;
	int err;
};
int kv_slabs_prefill(struct kv_slabs *s, unsigned *needed);
int kv_slabs_layout_get(struct kv_sec *sec, struct kv_slabs_layout *out);
void kv_slabs_layout_free(struct kv_slabs_layout *l);
void kv_slabs_each_chunk(struct kv_sec *sec, int (*fn)(void *ctx, struct kv_item *it, unsigned cls),
			 void *ctx);
int kv_slabs_layout_set(struct kv_slabs *s, const struct kv_slabs_layout *l);
void kv_slabs_scan(struct kv_slabs *s, int (*live)(void *ctx, struct kv_item *it, unsigned cls),
		   void *ctx);
unsigned kv_slabs_chunk_class(const struct kv_slabs *s, const void *p);
void kv_slabs_restore_done(struct kv_slabs *s);

#endif
