/*
 * Diffs for lrc's multiple writers: the bytes of a page that differ from its
 * twin, in runs of the 4-byte words that hold them. A diff is a sequence of
 * runs, each
 *     uint16_t first word, uint16_t word count, count 4-byte words,
 *     then (count + 1) / 2 bytes of masks, a nibble per word (the low nibble
 *     first): bit b set where the word's byte b changed
 * in increasing word order, runs separated by at least one unchanged word,
 * with no alignment. Applying writes only the bytes a mask names, so two
 * nodes may write different bytes of one word in the same interval
 * (docs/dsm.md).
 */
#ifndef LOCUS_DSM_DIFF_H
#define LOCUS_DSM_DIFF_H

#include <stddef.h>

#define DSM_DIFF_WORD 4

/* The largest diff of a page of `size` bytes: at most 4.5 bytes a word and a
   run, runs and changed words together at most a word more than the page
   holds (one more where a run is cut at 65535 words). */
static inline size_t dsm_diff_max(size_t size)
{
	return size + size / 8 + 16;
}

/* Encode page - twin into out (dsm_diff_max(size) bytes); returns its length
   (0: the page equals its twin). size: a multiple of 4, at most 256 KiB. */
size_t dsm_diff_make(const void *page, const void *twin, size_t size, void *out);

/* The same diff of a page that other threads may be writing meanwhile, with
   the twin brought to the page as it was read: each word is read once, so a
   write the diff does not hold leaves the page different from the twin (the
   next take has it). Without a concurrent write the diff and the twin are
   dsm_diff_make's and the page's. */
size_t dsm_diff_take(const void *page, void *twin, size_t size, void *out);

/* Write the runs of diff over page. Returns 0, or -1 if the diff is malformed
   or reaches past size (the page is then partly written). */
int dsm_diff_apply(void *page, size_t size, const void *diff, size_t len);

#endif
