/*
 * The runtime's kept buffers (src/dsm/keep.c) and lrc's diff slabs
 * (src/dsm/slab.c), on their own, no MPI:
 *   - a kept buffer holds at least what was asked (less than twice), a small
 *     one exactly that; a large one given back is taken again by the next
 *     request of its power of two; page buffers come back for reuse (not
 *     under a sanitizer, where everything is malloc's: DSM_KEEP_NOTHING);
 *   - slab pieces never overlap, are 16-byte aligned, keep their bytes while
 *     others are cut and freed around them (in any order), pieces too large
 *     for a slab come from malloc, a slab emptied is cut again;
 *   - both under threads that take and give back at once (more threads than
 *     the machine's CPUs), each piece checked for its owner's bytes, which
 *     catches a piece handed to two threads (and ThreadSanitizer's build a race);
 *   - a slab freed more often than cut (a piece freed twice, its slab's
 *     only one) stops the node.
 * Usage: dsm_keep [rounds]
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

struct dsm_runtime dsm;

void dsm_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("locus-dsm: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static int failures;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "dsm_keep: " __VA_ARGS__);                                 \
			fputc('\n', stderr);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void keep_sizes(void)
{
	size_t cap;
	void *small = dsm_keep_get(1000, &cap);
	CHECK(small && cap == 1000, "a small buffer: cap %zu for 1000 bytes", cap);
	memset(small, 1, 1000);
	dsm_keep_put(small, cap);

	size_t sizes[] = {64 << 10, (64 << 10) + 1, 100000, 1 << 20, (3 << 20) + 12345, 100 << 20};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *p = dsm_keep_get(sizes[i], &cap);
		CHECK(p && cap >= sizes[i] && cap < 2 * sizes[i] + 1, "%zu bytes asked: cap %zu",
		      sizes[i], cap);
		memset(p, 2, cap);
		dsm_keep_put(p, cap);
	}

	/* A buffer given back is taken by the next request of its power of two,
	   not by a larger one (none kept before). */
	dsm_keep_release();
	size_t c1, c4;
	void *one = dsm_keep_get(1 << 20, &c1), *four = dsm_keep_get(4 << 20, &c4);
	CHECK(c1 == 1 << 20 && c4 == 4 << 20, "caps %zu and %zu for 1 MiB and 4 MiB", c1, c4);
	memset(one, 3, c1);
	memset(four, 4, c4);
	dsm_keep_put(four, c4);
	dsm_keep_put(one, c1);
	void *again = dsm_keep_get(900000, &cap);
	size_t ca = cap;
	CHECK(DSM_KEEP_NOTHING ? cap == 900000 : again == one && cap == c1,
	      "900,000 bytes after 1 MiB and 4 MiB were given back: not the 1 MiB buffer (cap %zu)",
	      cap);
	size_t c3;
	void *three = dsm_keep_get(3 << 20, &c3);
	CHECK(DSM_KEEP_NOTHING ? c3 == 3 << 20 : three == four && c3 == c4, "3 MiB next: not the 4 MiB buffer (cap %zu)", c3);
	size_t c2;
	void *two = dsm_keep_get(2 << 20, &c2);
	CHECK(two && (DSM_KEEP_NOTHING || (two != one && two != four)) && c2 == 2 << 20,
	      "2 MiB with 1 MiB and 4 MiB taken: cap %zu", c2);
	memset(again, 5, ca);
	memset(three, 6, c3);
	memset(two, 7, c2);
	dsm_keep_put(again, ca);
	dsm_keep_put(three, c3);
	dsm_keep_put(two, c2);
	dsm_keep_put(NULL, 1 << 20);

	/* Pages. */
	void *pg[64];
	for (int i = 0; i < 64; i++) {
		pg[i] = dsm_keep_page();
		CHECK(pg[i] != NULL, "no page");
		memset(pg[i], i, dsm.page_size);
	}
	for (int i = 0; i < 64; i++)
		dsm_keep_page_put(pg[i]);
	void *q = dsm_keep_page();
	int found = 0;
	for (int i = 0; i < 64; i++)
		found |= q == pg[i];
	CHECK(DSM_KEEP_NOTHING || found, "a page given back was not taken again");
	dsm_keep_page_put(q);
	dsm_keep_page_put(NULL);
	dsm_keep_release();
}

struct piece {
	unsigned char *p;
	size_t n;
	unsigned char tag;
};

static int intact(const struct piece *x)
{
	for (size_t i = 0; i < x->n; i++)
		if (x->p[i] != (unsigned char)(x->tag + i))
			return 0;
	return 1;
}

static void fill(struct piece *x, unsigned char tag)
{
	x->tag = tag;
	for (size_t i = 0; i < x->n; i++)
		x->p[i] = (unsigned char)(tag + i);
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Cut n pieces of sizes up to most, check, free half in a shuffled order,
   cut again, check, free the rest. */
static void slab_round(uint64_t *seed, size_t n, size_t most, const char *who)
{
	struct piece *x = calloc(n, sizeof(*x));
	for (size_t i = 0; i < n; i++) {
		x[i].n = rng(seed) % (most + 1);
		x[i].p = dsm_slab_alloc(x[i].n);
		CHECK(x[i].p != NULL, "%s: no piece of %zu bytes", who, x[i].n);
		CHECK(((uintptr_t)x[i].p & 15) == 0, "%s: a piece at %p", who, (void *)x[i].p);
		fill(&x[i], (unsigned char)rng(seed));
	}
	for (size_t i = 0; i < n; i++)
		CHECK(intact(&x[i]), "%s: piece %zu of %zu bytes overwritten", who, i, x[i].n);
	for (size_t i = n; i > 1; i--) {
		size_t j = rng(seed) % i;
		struct piece t = x[i - 1];
		x[i - 1] = x[j];
		x[j] = t;
	}
	for (size_t i = 0; i < n / 2; i++) {
		dsm_slab_free(x[i].p);
		x[i].n = rng(seed) % (most + 1);
		x[i].p = dsm_slab_alloc(x[i].n);
		fill(&x[i], (unsigned char)rng(seed));
	}
	for (size_t i = 0; i < n; i++) {
		CHECK(intact(&x[i]), "%s: piece %zu of %zu bytes overwritten", who, i, x[i].n);
		dsm_slab_free(x[i].p);
	}
	free(x);
}

struct worker {
	int id, rounds;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
	char who[32];
	snprintf(who, sizeof(who), "thread %d", w->id);
	for (int r = 0; r < w->rounds; r++)
		slab_round(&seed, 500, 5000, who);
	return NULL;
}

static void keep_threads(int rounds)
{
	/* Slab pieces cut and freed by threads at once. */
	enum { T = 8 };
	pthread_t t[T];
	struct worker w[T];
	for (int i = 0; i < T; i++) {
		w[i] = (struct worker){.id = i, .rounds = rounds};
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
}

static void *pages_work(void *arg)
{
	int id = *(int *)arg;
	for (int r = 0; r < 2000; r++) {
		size_t cap;
		unsigned char *pg = dsm_keep_page();
		unsigned char *b = dsm_keep_get((64 << 10) + (size_t)(r % 7) * 10000, &cap);
		memset(pg, id, dsm.page_size);
		memset(b, id, cap);
		for (size_t i = 0; i < dsm.page_size; i++)
			if (pg[i] != (unsigned char)id) {
				CHECK(0, "thread %d: its page changed under it", id);
				break;
			}
		for (size_t i = 0; i < cap; i += 4096)
			if (b[i] != (unsigned char)id) {
				CHECK(0, "thread %d: its buffer changed under it", id);
				break;
			}
		dsm_keep_page_put(pg);
		dsm_keep_put(b, cap);
	}
	return NULL;
}

static void keep_pool_threads(void)
{
	enum { T = 8 };
	pthread_t t[T];
	int ids[T];
	for (int i = 0; i < T; i++) {
		ids[i] = i + 1;
		pthread_create(&t[i], NULL, pages_work, &ids[i]);
	}
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
	dsm_keep_release();
}

static void freed_twice(void)
{
	fflush(NULL);
	pid_t c = fork();
	if (c == 0) {
		freopen("/dev/null", "w", stderr);
		void *p = dsm_slab_alloc(100);
		dsm_slab_free(p);
		dsm_slab_free(p);
		_exit(0);
	}
	int st = 0;
	waitpid(c, &st, 0);
	/* (under a sanitizer, malloc's: the sanitizer stops it) */
	CHECK(!WIFEXITED(st) || WEXITSTATUS(st) != 0, "a piece freed twice: the node went on");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	dsm.page_size = 4096;
	keep_sizes();
	uint64_t seed = 12345;
	slab_round(&seed, 20000, 5000, "one thread");	   /* many slabs */
	slab_round(&seed, 200, 400000, "large pieces");	   /* some from malloc */
	slab_round(&seed, 3000, 0, "empty pieces");	   /* n = 0 */
	keep_threads(rounds);
	keep_pool_threads();
	freed_twice();
	if (failures) {
		fprintf(stderr, "dsm_keep: %d failures\n", failures);
		return 1;
	}
	printf("dsm_keep: ok\n");
	return 0;
}
