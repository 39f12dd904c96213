/*
 * Buffers kept for reuse: the runtime's large messages and batches, and
 * lrc's twins.
 *
 * A node builds and sends megabytes a second in buffers that live for one
 * message (a batch of pages or diffs, its copy handed to MPI), and lrc takes
 * a page-sized twin at each first write of a shared page in an interval and
 * frees it at the interval's end. Given back to malloc, a large buffer is
 * unmapped (glibc maps blocks above its threshold) or trimmed off the heap's
 * top, and the next one is new memory: a page fault and a zeroed page for
 * each of its pages, and an munmap's TLB shootdown when it goes. Splash-3's
 * fft under lrc on 2 nodes spent about 7% of its CPU time there
 * (docs/results/dsm-speed.md). Kept here, a buffer's pages stay mapped for
 * the next one.
 *
 * Two pools, each under its own lock (the communication thread and threads
 * handling their own faults use them):
 *   - large buffers (KEEP_MIN bytes and more): up to KEEP_BUFS of them,
 *     KEEP_BYTES in all; a request takes the smallest that fits, and a new
 *     one is rounded up to an eighth of its power of two, so that sizes that
 *     vary a little reuse each other's;
 *   - pages (the region's page size): up to KEEP_PAGE_BYTES of them.
 * Smaller buffers, and what the pools have no room for, go to malloc and
 * free as before. Everything kept is freed at finalize.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

#define KEEP_MIN	((size_t)64 << 10)
#define KEEP_BUFS	16
#define KEEP_BYTES	((size_t)256 << 20)
#define KEEP_PAGE_BYTES ((size_t)64 << 20)

static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t cap;
} big[KEEP_BUFS];
static size_t nbig, big_bytes;

static pthread_mutex_t page_mu = PTHREAD_MUTEX_INITIALIZER;
static void **pages; /* a stack of free pages */
static size_t npages, pages_cap;

/* n rounded up to an eighth of its power of two. */
static size_t round_up(size_t n)
{
	size_t step = (size_t)1 << (63 - __builtin_clzll((unsigned long long)n));
	step = step >= 8 ? step / 8 : 1;
	return (n + step - 1) / step * step;
}

void *dsm_keep_get(size_t n, size_t *cap)
{
	if (n < KEEP_MIN) {
		*cap = n;
		return malloc(n ? n : 1);
	}
	pthread_mutex_lock(&big_mu);
	size_t best = nbig;
	for (size_t i = 0; i < nbig; i++)
		if (big[i].cap >= n && (best == nbig || big[i].cap < big[best].cap))
			best = i;
	if (best < nbig) {
		void *p = big[best].p;
		*cap = big[best].cap;
		big_bytes -= big[best].cap;
		big[best] = big[--nbig];
		pthread_mutex_unlock(&big_mu);
		return p;
	}
	pthread_mutex_unlock(&big_mu);
	*cap = round_up(n);
	return malloc(*cap);
}

void dsm_keep_put(void *p, size_t cap)
{
	if (!p)
		return;
	if (cap < KEEP_MIN) {
		free(p);
		return;
	}
	pthread_mutex_lock(&big_mu);
	/* Full: the smallest kept goes, if this one is larger. */
	if (nbig == KEEP_BUFS) {
		size_t small = 0;
		for (size_t i = 1; i < nbig; i++)
			if (big[i].cap < big[small].cap)
				small = i;
		if (big[small].cap < cap) {
			void *out = big[small].p;
			big_bytes -= big[small].cap;
			big[small] = big[--nbig];
			pthread_mutex_unlock(&big_mu);
			free(out);
			pthread_mutex_lock(&big_mu);
		}
	}
	if (nbig < KEEP_BUFS && big_bytes + cap <= KEEP_BYTES) {
		big[nbig].p = p;
		big[nbig].cap = cap;
		nbig++;
		big_bytes += cap;
		p = NULL;
	}
	pthread_mutex_unlock(&big_mu);
	free(p);
}

void *dsm_keep_page(void)
{
	pthread_mutex_lock(&page_mu);
	void *p = npages ? pages[--npages] : NULL;
	pthread_mutex_unlock(&page_mu);
	return p ? p : malloc(dsm.page_size);
}

void dsm_keep_page_put(void *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&page_mu);
	size_t most = KEEP_PAGE_BYTES / dsm.page_size;
	if (npages < most) {
		if (npages == pages_cap) {
			size_t cap = pages_cap ? 2 * pages_cap : 1024;
			void **n = realloc(pages, (cap < most ? cap : most) * sizeof(*n));
			if (n) {
				pages = n;
				pages_cap = cap < most ? cap : most;
			}
		}
		if (npages < pages_cap) {
			pages[npages++] = p;
			p = NULL;
		}
	}
	pthread_mutex_unlock(&page_mu);
	free(p);
}

void dsm_keep_release(void)
{
	pthread_mutex_lock(&big_mu);
	for (size_t i = 0; i < nbig; i++)
		free(big[i].p);
	nbig = big_bytes = 0;
	pthread_mutex_unlock(&big_mu);
	pthread_mutex_lock(&page_mu);
	for (size_t i = 0; i < npages; i++)
		free(pages[i]);
	free(pages);
	pages = NULL;
	npages = pages_cap = 0;
	pthread_mutex_unlock(&page_mu);
}
