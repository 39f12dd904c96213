/* Diff encoding for lrc (diff.h says the format). */
#include <stdint.h>
#include <string.h>

#include "diff.h"

/* Equal stretches are skipped a block at a time with memcmp (vectorised in
   the C library): most pages an interval touches change few words, and a
   page written back to its old values changes none. */
#define BLOCK_WORDS 16

/* Which bytes of a word differ: bit b for the word's byte b in memory. */
static unsigned changed_bytes(uint32_t a, uint32_t b)
{
	uint32_t x = a ^ b;
	unsigned char xb[DSM_DIFF_WORD];
	memcpy(xb, &x, sizeof(xb));
	return (xb[0] != 0) | (xb[1] != 0) << 1 | (xb[2] != 0) << 2 | (xb[3] != 0) << 3;
}

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
		size_t count = w - first;
		uint16_t hdr[2] = {(uint16_t)first, (uint16_t)count};
		memcpy(o + n, hdr, sizeof(hdr));
		n += sizeof(hdr);
		memcpy(o + n, p + first, count * DSM_DIFF_WORD);
		n += count * DSM_DIFF_WORD;
		for (size_t k = 0; k < count; k += 2)
			o[n++] = (unsigned char)(changed_bytes(p[first + k], t[first + k]) |
						 (k + 1 < count ? changed_bytes(p[first + k + 1],
										t[first + k + 1])
								: 0)
							 << 4);
	}
	return n;
}

/* One word of a page another thread may be writing, read once. */
static uint32_t word_once(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

size_t dsm_diff_take(const void *page, void *twin, size_t size, void *out)
{
	const uint32_t *p = page;
	uint32_t *t = twin;
	size_t words = size / DSM_DIFF_WORD, n = 0, w = 0;
	unsigned char *o = out;
	while (w < words) {
		/* A block found equal is skipped; a write to it after the look
		   differs from the twin at the next take. */
		if (w % BLOCK_WORDS == 0 && w + BLOCK_WORDS <= words &&
		    !memcmp(p + w, t + w, BLOCK_WORDS * DSM_DIFF_WORD)) {
			w += BLOCK_WORDS;
			continue;
		}
		uint32_t v = word_once(p + w);
		if (v == t[w]) {
			w++;
			continue;
		}
		/* A run: each word read once, into the diff; the word that ends
		   it was seen equal and is passed over, so runs stay apart. */
		size_t first = w, count = 0;
		unsigned char *vals = o + n + 2 * sizeof(uint16_t);
		for (;;) {
			memcpy(vals + count * DSM_DIFF_WORD, &v, DSM_DIFF_WORD);
			count++;
			if (++w == words || count == UINT16_MAX)
				break;
			v = word_once(p + w);
			if (v == t[w]) {
				w++;
				break;
			}
		}
		uint16_t hdr[2] = {(uint16_t)first, (uint16_t)count};
		memcpy(o + n, hdr, sizeof(hdr));
		n += sizeof(hdr) + count * DSM_DIFF_WORD;
		for (size_t k = 0; k < count; k += 2) {
			uint32_t a, b = 0;
			memcpy(&a, vals + k * DSM_DIFF_WORD, DSM_DIFF_WORD);
			unsigned m = changed_bytes(a, t[first + k]);
			if (k + 1 < count) {
				memcpy(&b, vals + (k + 1) * DSM_DIFF_WORD, DSM_DIFF_WORD);
				m |= changed_bytes(b, t[first + k + 1]) << 4;
			}
			o[n++] = (unsigned char)m;
		}
		memcpy(t + first, vals, count * DSM_DIFF_WORD);
	}
	return n;
}

int dsm_diff_apply(void *page, size_t size, const void *diff, size_t len)
{
	const unsigned char *d = diff;
	size_t words = size / DSM_DIFF_WORD, off = 0;
	unsigned char *p = page;
	while (off < len) {
		uint16_t hdr[2];
		if (len - off < sizeof(hdr))
			return -1;
		memcpy(hdr, d + off, sizeof(hdr));
		off += sizeof(hdr);
		size_t count = hdr[1], bytes = count * DSM_DIFF_WORD + (count + 1) / 2;
		if (!count || (size_t)hdr[0] + count > words || len - off < bytes)
			return -1;
		const unsigned char *src = d + off, *mask = src + count * DSM_DIFF_WORD;
		unsigned char *dst = p + (size_t)hdr[0] * DSM_DIFF_WORD;
		for (size_t k = 0; k < count; k++) {
			unsigned m = (mask[k / 2] >> (k % 2 * 4)) & 0xf;
			if (m == 0xf) {
				memcpy(dst + k * DSM_DIFF_WORD, src + k * DSM_DIFF_WORD, DSM_DIFF_WORD);
				continue;
			}
			for (unsigned b = 0; b < DSM_DIFF_WORD; b++)
				if (m >> b & 1)
					dst[k * DSM_DIFF_WORD + b] = src[k * DSM_DIFF_WORD + b];
		}
		off += bytes;
	}
	return 0;
}
