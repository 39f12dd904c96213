/* locus-bench locality: array setup (see walk.h). */
#define _GNU_SOURCE
#include "walk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE (2u << 20)

/* splitmix64: a small, well-mixed generator; the shuffle needs nothing stronger. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void walk_link(struct walk_line *lines, size_t n, uint64_t seed)
{
	uint64_t s = seed;

	for (size_t k = 0; k < n; k++)
		lines[k] = (struct walk_line){.next = (uint32_t)k};
	/* Sattolo: swap with a strictly earlier position, which leaves one cycle. */
	for (size_t k = n; k > 1; k--) {
		size_t j = (size_t)(((unsigned __int128)next_random(&s) * (k - 1)) >> 64);
		uint32_t t = lines[k - 1].next;

		lines[k - 1].next = lines[j].next;
		lines[j].next = t;
	}
}

void walk_mark(struct walk_line *lines, size_t n, size_t m)
{
	uint32_t i = 0;

	for (size_t k = 0; k < n; k++) {
		i = lines[i].next;
		lines[i].modify = (k * m) / n != ((k + 1) * m) / n;
	}
}

/* What backs the mapping at base: AnonHugePages in its /proc/self/smaps entry. */
static int thp_backed(const void *base)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, kb;

		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = start <= (unsigned long)base && (unsigned long)base < end;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			found |= kb > 0;
	}
	fclose(f);
	return found;
}

int walk_region_map(struct walk_region *r, size_t bytes)
{
	size_t len = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
	void *p;

	if (len == 0)
		len = HUGE_PAGE;
	memset(r, 0, sizeof(*r));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1,
		 0);
	if (p != MAP_FAILED) {
		r->pages = WALK_PAGES_HUGETLB;
	} else {
		/* One huge page more, so that the start can be aligned to one. */
		size_t over = len + HUGE_PAGE;
		char *q = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);
		uintptr_t a;

		if (q == MAP_FAILED)
			return -1;
		a = ((uintptr_t)q + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
		if (a > (uintptr_t)q)
			munmap(q, a - (uintptr_t)q);
		if ((uintptr_t)q + over > a + len)
			munmap((void *)(a + len), (uintptr_t)q + over - (a + len));
		p = (void *)a;
		madvise(p, len, MADV_HUGEPAGE);
	}
	memset(p, 0, len);
	r->base = p;
	r->bytes = len;
	if (r->pages != WALK_PAGES_HUGETLB && thp_backed(p))
		r->pages = WALK_PAGES_THP;
	return 0;
}

void walk_region_unmap(struct walk_region *r)
{
	if (r->base)
		munmap(r->base, r->bytes);
	r->base = NULL;
}

const char *walk_pages_name(enum walk_pages p)
{
	switch (p) {
	case WALK_PAGES_HUGETLB:
		return "hugetlb";
	case WALK_PAGES_THP:
		return "thp";
	default:
		return "none";
	}
}
