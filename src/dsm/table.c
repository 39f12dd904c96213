/*
 * Per-page tables (a protocol's page records, resume times, page lists).
 *
 * A region may be far larger than what a program touches (LOCUS_DSM_SIZE up
 * to 16384g), so a table over its pages is reserved, not allocated: an
 * anonymous mapping with MAP_NORESERVE, which the kernel fills with zero
 * pages on first touch. A node then pays for the table pages that hold
 * records it wrote, and nothing for the rest, at start-up or after. Every
 * record's initial state is therefore all zeros, and nothing walks a table
 * end to end (a protocol keeps lists of the pages it has touched).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"

void *dsm_table_new(size_t count, size_t size)
{
	if (count && size > SIZE_MAX / count)
		return NULL;
	size_t bytes = count * size;
	if (bytes == 0)
		bytes = 1;
	void *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return t == MAP_FAILED ? NULL : t;
}

void dsm_table_free(void *t, size_t count, size_t size)
{
	size_t bytes = count * size;
	if (t)
		munmap(t, bytes ? bytes : 1);
}
