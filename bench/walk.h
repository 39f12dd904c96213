/*
 * locus-bench locality: the arrays seed 000's microbenchmark walks (its
 * Figure 3.1). Each element is one cache line; `next` links every line of an
 * array into one random cycle, so a walk is a chain of dependent loads that
 * the hardware prefetcher cannot run ahead of, and visits each line exactly
 * once per pass. The critical-section walk increments `count` on the lines
 * marked `modify` — exactly m distinct lines — which is how the seed's data
 * invalidation experiment makes m lines dirty per critical section.
 *
 * The walks are static inline so that the critical section (locality_fn.c,
 * built transaction-callable for stm) and the tests get the same code.
 */
#ifndef LOCUS_BENCH_WALK_H
#define LOCUS_BENCH_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "locus/fn.h"

#define WALK_LINE LOCUS_CACHELINE

struct walk_line {
	_Alignas(WALK_LINE) uint32_t next; /* index of the next line of the cycle */
	uint32_t modify;		   /* 1: the critical-section walk increments count */
	uint64_t count;
	uint64_t pad[6];
};

_Static_assert(sizeof(struct walk_line) == WALK_LINE, "one element per cache line");

enum walk_pages { WALK_PAGES_NONE, WALK_PAGES_THP, WALK_PAGES_HUGETLB };

/* One contiguous, cache-line aligned mapping holding every array of a run. */
struct walk_region {
	void *base;
	size_t bytes;
	enum walk_pages pages; /* what backs it, as far as the kernel says */
};

#define WALK_MAX_LINES (1u << 22) /* per array: 256 MiB */

/*
 * Map `bytes` (rounded up to whole 2 MiB pages), trying explicit huge pages
 * first, then transparent huge pages (madvise), then plain pages; touch it
 * all, and record what backs it. 0, or -1 with errno set.
 */
int walk_region_map(struct walk_region *r, size_t bytes);
void walk_region_unmap(struct walk_region *r);
/* "hugetlb", "thp" or "none". */
const char *walk_pages_name(enum walk_pages p);

/*
 * Link lines[0..n) into one cycle through all n lines, in a random order
 * drawn from `seed` (Sattolo's variant of the Fisher-Yates shuffle, whose
 * permutations are exactly the single n-cycles), and clear every mark.
 */
void walk_link(struct walk_line *lines, size_t n, uint64_t seed);

/*
 * Mark exactly m of the n lines (m <= n) for modification, spread evenly
 * along the cycle: the walk modifies its k-th line when floor(k*m/n) steps.
 */
void walk_mark(struct walk_line *lines, size_t n, size_t m);

/* The thread-local walk: one pass, reading each line; the result depends on all of them. */
static inline uint64_t walk_read(const struct walk_line *lines, size_t n)
{
	uint32_t i = 0;
	uint64_t sum = 0;

	for (size_t k = 0; k < n; k++) {
		i = lines[i].next;
		sum += lines[i].count;
	}
	return sum + i;
}

/* The critical-section walk: one pass, incrementing count on the marked lines. */
static inline LOCUS_TM_CALLABLE uint64_t walk_write(struct walk_line *lines, size_t n)
{
	uint32_t i = 0;
	uint64_t sum = 0;

	for (size_t k = 0; k < n; k++) {
		i = lines[i].next;
		if (lines[i].modify)
			lines[i].count++;
		sum += lines[i].count;
	}
	return sum + i;
}

#endif
