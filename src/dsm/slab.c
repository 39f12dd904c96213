/*
 * Slabs for lrc's diffs.
 *
 * A node keeps every diff it makes until a collection frees them together:
 * hundreds of megabytes between collections in a program that rewrites its
 * arrays (Splash-3's fft), in pieces of a few kilobytes. From malloc, in the
 * per-thread arenas that the communication thread and the threads handling
 * their faults use, each growth of an arena past its high-water mark is an
 * mprotect of a page or two: 56,000 of fft's 200,000 protection changes on 2
 * nodes were those, not the protocol's. Here a diff is cut from a slab of
 * SLAB_BYTES mapped at once, and a slab goes back (to a few kept empty, else
 * unmapped) when its last diff is freed.
 *
 * Each diff is preceded by its slab's address (NULL for one too large for a
 * slab, which comes from malloc, as every diff does under a sanitizer), so
 * that freeing needs no lookup. Empty slabs kept stay to the process's end.
 * One lock:
 * diffs are made and freed by whichever thread holds the node's state.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "internal.h"

#define SLAB_BYTES ((size_t)1 << 20)
#define SLAB_KEEP  32 /* empty slabs kept for the next ones */
#define HEAD	   16 /* before each piece: its slab (16 bytes, to keep pieces aligned) */

struct slab {
	size_t live; /* pieces not yet freed */
	size_t used; /* bytes cut so far, from data */
	_Alignas(16) unsigned char data[];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct slab *cur; /* pieces are cut from it */
static struct slab *empty[SLAB_KEEP];
static size_t nempty;

static size_t room(void)
{
	return SLAB_BYTES - sizeof(struct slab);
}

static void slab_gone(struct slab *s)
{
	if (nempty < SLAB_KEEP)
		empty[nempty++] = s;
	else
		munmap(s, SLAB_BYTES);
}

static struct slab *slab_new(void)
{
	struct slab *s;
	if (nempty) {
		s = empty[--nempty];
	} else {
		s = mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
		if (s == MAP_FAILED)
			return NULL;
	}
	s->live = s->used = 0;
	return s;
}

void *dsm_slab_alloc(size_t n)
{
	size_t need = HEAD + ((n + 15) & ~(size_t)15);
	if (DSM_KEEP_NOTHING || need > room() / 4) {
		struct slab **h = malloc(need);
		if (!h)
			return NULL;
		*h = NULL;
		return (unsigned char *)h + HEAD;
	}
	pthread_mutex_lock(&mu);
	if (!cur || cur->used + need > room()) {
		/* cur is full, so some of its pieces live (an empty one starts
		   again from 0): the last of them to be freed gives it back. */
		struct slab *s = slab_new();
		if (!s) {
			pthread_mutex_unlock(&mu);
			return NULL;
		}
		cur = s;
	}
	unsigned char *at = cur->data + cur->used;
	cur->used += need;
	cur->live++;
	*(struct slab **)(void *)at = cur;
	pthread_mutex_unlock(&mu);
	return at + HEAD;
}

void dsm_slab_free(void *p)
{
	if (!p)
		return;
	unsigned char *at = (unsigned char *)p - HEAD;
	struct slab *s = *(struct slab **)(void *)at;
	if (!s) {
		free(at);
		return;
	}
	pthread_mutex_lock(&mu);
	if (!s->live)
		dsm_fatal("a diff freed twice");
	if (--s->live == 0) {
		if (s == cur)
			s->used = 0; /* cut again from the start */
		else
			slab_gone(s);
	}
	pthread_mutex_unlock(&mu);
}
