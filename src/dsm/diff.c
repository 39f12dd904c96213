/* Diff encoding for lrc (diff.h says the format). */
#include <stdint.h>
#include <string.h>

#include "diff.h"

/* Equal stretches are skipped a block at a time with memcmp (vectorised in
   the C library): most pages an interval touches change few words, and a
   page written back to its old values changes none. */
#define BLOCK_WORDS 16

size_t dsm_diff_make(const void *page, const void *twin, size_t size, void *out)
{
	const uint32_t *p = page, *t = twin;
	size_t words = size / DSM_DIFF_WORD, n = 0;
	unsigned char *o = out;
	size_t w = 0;
	if (!memcmp(page, twin, size))
		return 0;
	while (w < words) {
		if (w % BLOCK_WORDS == 0 && w + BLOCK_WORDS <= words &&
		    !memcmp(p + w, t + w, BLOCK_WORDS * DSM_DIFF_WORD)) {
			w += BLOCK_WORDS;
			continue;
		}
		if (p[w] == t[w]) {
			w++;
			continue;
		}
		size_t first = w;
		while (w < words && p[w] != t[w] && w - first < UINT16_MAX)
			w++;
		uint16_t hdr[2] = {(uint16_t)first, (uint16_t)(w - first)};
		memcpy(o + n, hdr, sizeof(hdr));
		n += sizeof(hdr);
		memcpy(o + n, p + first, (w - first) * DSM_DIFF_WORD);
		n += (w - first) * DSM_DIFF_WORD;
	}
	return n;
}

int dsm_diff_apply(void *page, size_t size, const void *diff, size_t len)
{
	const unsigned char *d = diff;
	size_t words = size / DSM_DIFF_WORD, off = 0;
	uint32_t *p = page;
	while (off < len) {
		uint16_t hdr[2];
		if (len - off < sizeof(hdr))
			return -1;
		memcpy(hdr, d + off, sizeof(hdr));
		off += sizeof(hdr);
		size_t bytes = (size_t)hdr[1] * DSM_DIFF_WORD;
		if (!hdr[1] || (size_t)hdr[0] + hdr[1] > words || len - off < bytes)
			return -1;
		memcpy(p + hdr[0], d + off, bytes);
		off += bytes;
	}
	return 0;
}
