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
 * each of its pages, and an munmap's TLB shootdown when it goes: about 7% of
 * the CPU samples of Splash-3's fft under lrc on 2 nodes (its time did not
 * move measurably without them: docs/results/dsm-speed.md). Kept here, a
 * buffer's pages stay mapped for the next one.
 *
 * Two pools, each under its own lock (the communication thread and threads
 * handling their own faults use them):
 *   - large buffers, by powers of two from KEEP_MIN to 2^KEEP_MAX_LOG
 *     bytes: a request takes a buffer of the least power of two that holds
 *     it (one kept, else a new one), so that messages of sizes that vary
 *     reuse each other's buffers; up to KEEP_PER_CLASS kept of each size,
 *     KEEP_BYTES in all. (A pool that fitted sizes exactly missed often
 *     under sc's bundles, whose sizes vary: each miss a new mapping.)
 *   - pages (the region's page size): up to KEEP_PAGE_BYTES of them.
 * Smaller buffers, and what the pools have no room for, go to malloc and
 * free as before, and so does everything under a sanitizer
 * (DSM_KEEP_NOTHING, internal.h). What the pools hold is freed at finalize.
 */
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

#define KEEP_MIN	  ((size_t)64 << 10) /* the smallest kept: 2^16 */
#define KEEP_MIN_LOG	  16
#define KEEP_MAX_LOG	  26 /* the largest: 64 MiB; beyond, malloc's */
#define KEEP_PER_CLASS	  8
#define KEEP_BYTES	  ((size_t)256 << 20)
#define KEEP_PAGE_BYTES	  ((size_t)64 << 20)

static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;
static void *big[KEEP_MAX_LOG + 1][KEEP_PER_CLASS]; /* by class: 2^c bytes */
static size_t nbig[KEEP_MAX_LOG + 1], big_bytes;

static pthread_mutex_t page_mu = PTHREAD_MUTEX_INITIALIZER;
static void **pages; /* a stack of free pages */
static size_t npages, pages_cap;

/* The class of a buffer of at least n bytes (KEEP_MIN <= n): the least c with
   2^c >= n. */
static int class_of(size_t n)
{
	return 64 - __builtin_clzll((unsigned long long)(n - 1));
}

void *dsm_keep_get(size_t n, size_t *cap)
{
	if (DSM_KEEP_NOTHING || n < KEEP_MIN || n > (size_t)1 << KEEP_MAX_LOG) {
		*cap = n;
		return malloc(n ? n : 1);
	}
	int c = class_of(n);
	*cap = (size_t)1 << c;
	pthread_mutex_lock(&big_mu);
	void *p = NULL;
	if (nbig[c]) {
		p = big[c][--nbig[c]];
		big_bytes -= *cap;
	}
	pthread_mutex_unlock(&big_mu);
	return p ? p : malloc(*cap);
}

void dsm_keep_put(void *p, size_t cap)
{
	if (!p)
		return;
	if (DSM_KEEP_NOTHING || cap < KEEP_MIN || cap > (size_t)1 << KEEP_MAX_LOG ||
	    (cap & (cap - 1))) {
		free(p);
		return;
	}
	int c = class_of(cap);
	pthread_mutex_lock(&big_mu);
	if (nbig[c] < KEEP_PER_CLASS && big_bytes + cap <= KEEP_BYTES) {
		big[c][nbig[c]++] = p;
		big_bytes += cap;
		p = NULL;
	}
	pthread_mutex_unlock(&big_mu);
	free(p);
}

void *dsm_keep_page(void)
{
	if (DSM_KEEP_NOTHING)
		return malloc(dsm.page_size);
	pthread_mutex_lock(&page_mu);
	void *p = npages ? pages[--npages] : NULL;
	pthread_mutex_unlock(&page_mu);
	return p ? p : malloc(dsm.page_size);
}

void dsm_keep_page_put(void *p)
{
	if (!p)
		return;
	if (DSM_KEEP_NOTHING) {
		free(p);
		return;
	}
	size_t most = KEEP_PAGE_BYTES / dsm.page_size; /* the stack, made whole at once */
	pthread_mutex_lock(&page_mu);
	if (!pages && most && (pages = malloc(most * sizeof(*pages))))
		pages_cap = most;
	if (npages < pages_cap) {
		pages[npages++] = p;
		p = NULL;
	}
	pthread_mutex_unlock(&page_mu);
	free(p);
}

void dsm_keep_release(void)
{
	pthread_mutex_lock(&big_mu);
	for (int c = KEEP_MIN_LOG; c <= KEEP_MAX_LOG; c++) {
		for (size_t i = 0; i < nbig[c]; i++)
			free(big[c][i]);
		nbig[c] = 0;
	}
	big_bytes = 0;
	pthread_mutex_unlock(&big_mu);
	pthread_mutex_lock(&page_mu);
	for (size_t i = 0; i < npages; i++)
		free(pages[i]);
	free(pages);
	pages = NULL;
	npages = pages_cap = 0;
	pthread_mutex_unlock(&page_mu);
}
