/*
 * Shared memory from any thread, on any node, at any time: malloc and free
 * without a collective call. The top of the region (home.c: from
 * heap_first) is cut into one partition per node; a node allocates only in
 * its own, so no allocation talks to another node, and the partition's
 * pages are homed at that node, which touches them first. A free from
 * another node is shipped to the block's owner, known from its address.
 *
 * In a partition: blocks of 16-byte-aligned sizes in power-of-two classes
 * (16 B to 64 KiB), kept on per-class free lists; larger ones are whole
 * pages, first fit. Each block has a 16-byte header (its size) in shared
 * memory just before it; the lists are the owner's private memory.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HEAD	  16
#define MIN_SHIFT 4
#define MAX_SHIFT 16 /* classes 16 B .. 64 KiB */
#define NCLASSES  (MAX_SHIFT - MIN_SHIFT + 1)
#define SLAB	  (256u << 10) /* small blocks are cut from slabs this big */

struct list {
	uintptr_t *v;
	size_t n, cap;
};

static struct {
	pthread_mutex_t mu;
	uintptr_t next, end; /* this node's partition: bump pointer and end */
	size_t size;
	struct list free[NCLASSES];
	struct list big; /* free runs of pages, as (address, bytes) pairs */
	uintptr_t slab, slab_end;
} heap = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int push(struct list *l, uintptr_t x)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		uintptr_t *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = x;
	return 0;
}

void dsm_malloc_init(void)
{
	uintptr_t lo, hi;
	dsm_heap_partition(dsm.node, &lo, &hi);
	heap.next = lo;
	heap.end = hi;
	heap.size = hi - lo;
	heap.slab = heap.slab_end = 0;
}

void dsm_malloc_fini(void)
{
	for (int c = 0; c < NCLASSES; c++) {
		free(heap.free[c].v);
		heap.free[c] = (struct list){0};
	}
	free(heap.big.v);
	heap.big = (struct list){0};
}

static int class_of(size_t bytes)
{
	int c = 0;
	while (((size_t)1 << (c + MIN_SHIFT)) < bytes)
		c++;
	return c;
}

/* Bytes from the bump pointer, or 0 when the partition is full. */
static uintptr_t bump(size_t bytes)
{
	if (bytes > heap.end - heap.next)
		return 0;
	uintptr_t at = heap.next;
	heap.next += bytes;
	return at;
}

static uintptr_t small_block(int c)
{
	struct list *l = &heap.free[c];
	if (l->n)
		return l->v[--l->n];
	size_t bytes = (size_t)1 << (c + MIN_SHIFT);
	if (heap.slab_end - heap.slab < bytes) {
		heap.slab = bump(SLAB);
		heap.slab_end = heap.slab ? heap.slab + SLAB : 0;
		if (!heap.slab)
			return 0;
	}
	uintptr_t at = heap.slab;
	heap.slab += bytes;
	return at;
}

static uintptr_t big_block(size_t bytes)
{
	struct list *l = &heap.big;
	for (size_t i = 0; i + 1 < l->n; i += 2) {
		if (l->v[i + 1] < bytes)
			continue;
		uintptr_t at = l->v[i];
		l->v[i] += bytes;
		l->v[i + 1] -= bytes;
		if (!l->v[i + 1]) { /* used up: the last pair takes its place */
			l->v[i] = l->v[l->n - 2];
			l->v[i + 1] = l->v[l->n - 1];
			l->n -= 2;
		}
		return at;
	}
	return bump(bytes);
}

void *locus_dsm_malloc(size_t size)
{
	dsm_require_running("locus_dsm_malloc");
	if (size > (size_t)1 << 46) {
		errno = ENOMEM;
		return NULL;
	}
	size_t need = (size + HEAD + 15) & ~(size_t)15;
	int c = class_of(need);
	pthread_mutex_lock(&heap.mu);
	uintptr_t at = 0;
	size_t bytes;
	if (c < NCLASSES) {
		bytes = (size_t)1 << (c + MIN_SHIFT);
		at = small_block(c);
	} else {
		bytes = (need + dsm.page_size - 1) / dsm.page_size * dsm.page_size;
		at = big_block(bytes);
	}
	pthread_mutex_unlock(&heap.mu);
	if (!at) {
		fprintf(stderr,
			"locus-dsm: node %d: locus_dsm_malloc(%zu): this node's part of the shared "
			"heap is full (%zu bytes, %zu of them never used; LOCUS_DSM_SIZE sets the "
			"region's size, half of it the heap, shared equally by the nodes)\n",
			dsm.node, size, heap.size, (size_t)(heap.end - heap.next));
		errno = ENOMEM;
		return NULL;
	}
	uint64_t *head = (uint64_t *)at;
	head[0] = bytes;
	head[1] = 0x6c6f637573ull; /* "locus": a block of this heap */
	return (void *)(at + HEAD);
}

/* At the block's owner (local or shipped): back on its list. */
static uint64_t give_back(void *p, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a, (void)b, (void)c;
	uint64_t *head = (uint64_t *)((uintptr_t)p - HEAD);
	if (head[1] != 0x6c6f637573ull)
		dsm_fatal("locus_dsm_free(%p): not a block of locus_dsm_malloc (or freed twice)",
			  p);
	uint64_t bytes = head[0];
	head[1] = 0;
	pthread_mutex_lock(&heap.mu);
	int rc = bytes <= ((size_t)1 << MAX_SHIFT)
			 ? push(&heap.free[class_of(bytes)], (uintptr_t)head)
			 : push(&heap.big, (uintptr_t)head) || push(&heap.big, bytes);
	pthread_mutex_unlock(&heap.mu);
	if (rc)
		dsm_fatal("out of memory for the shared heap's free lists");
	return 0;
}

void locus_dsm_free(void *p)
{
	if (!p)
		return;
	dsm_require_running("locus_dsm_free");
	int owner = dsm_heap_owner(p);
	if (owner < 0) {
		fprintf(stderr, "locus-dsm: locus_dsm_free(%p): not in the shared heap\n", p);
		exit(1);
	}
	if (owner == dsm.node)
		give_back(p, 0, 0, 0);
	else
		locus_dsm_post(owner, give_back, p, 0, 0, 0, NULL, NULL);
}
