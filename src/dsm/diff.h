/*
 * Diffs for lrc's multiple writers: the words of a page that differ from its
 * twin, run-length encoded. A diff is a sequence of runs, each
 *     uint16_t first word, uint16_t word count, then count 4-byte words
 * in increasing word order, runs separated by at least one unchanged word.
 * Words are 4 bytes: two nodes may write different words of one page in the
 * same interval, not different bytes of one word (docs/dsm.md).
 */
#ifndef LOCUS_DSM_DIFF_H
#define LOCUS_DSM_DIFF_H

#include <stddef.h>

#define DSM_DIFF_WORD 4

/* The largest diff of a page of `size` bytes: size + one run header. */
static inline size_t dsm_diff_max(size_t size)
{
	return size + 4;
}

/* Encode page - twin into out (dsm_diff_max(size) bytes); returns its length
   (0: the page equals its twin). size: a multiple of 4, at most 256 KiB. */
size_t dsm_diff_make(const void *page, const void *twin, size_t size, void *out);

/* Write the runs of diff over page. Returns 0, or -1 if the diff is malformed
   or reaches past size (the page is then partly written). */
int dsm_diff_apply(void *page, size_t size, const void *diff, size_t len);

#endif
