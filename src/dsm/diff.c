/* Diff encoding for lrc (diff.h says the format).
 *
 * A page that an interval overwrites (a transpose, a sweep) changes every
 * word, and its diff is made, taken and applied at every interval: the
 * work is done four words at a time with SSE2, which every x86-64 has. A
 * byte compare of 16 bytes and its movemask give the four words' masks as
 * the format packs them (two words a byte, the low nibble first), and a
 * mask expands back to a byte blend. Elsewhere, or built with
 * LOCUS_DSM_DIFF_SCALAR (the test builds both), a word at a time, without
 * a branch per byte. The two write the same bytes. */
#include <stdint.h>
#include <string.h>

#include "diff.h"

#if defined(__SSE2__) && !defined(LOCUS_DSM_DIFF_SCALAR)
#define DIFF_SSE2 1
#include <emmintrin.h>
#else
#define DIFF_SSE2 0
#endif

/* Byte k of a value's representation is its low byte on a little-endian
   machine, its high one otherwise. */
#define ENDIAN_LITTLE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

/* The bytes a mask nibble names, as a word to blend with: byte b of the
   word (in memory) all ones where bit b is set. */
#define BYTE_SHIFT(b) (ENDIAN_LITTLE ? 8 * (b) : 24 - 8 * (b))
#define BLEND(m)                                                                                   \
	((((m) & 1 ? 0xffu : 0) << BYTE_SHIFT(0)) | (((m) & 2 ? 0xffu : 0) << BYTE_SHIFT(1)) |     \
	 (((m) & 4 ? 0xffu : 0) << BYTE_SHIFT(2)) | (((m) & 8 ? 0xffu : 0) << BYTE_SHIFT(3)))
static const uint32_t blend[16] = {BLEND(0),  BLEND(1),	 BLEND(2),  BLEND(3), BLEND(4),  BLEND(5),
				   BLEND(6),  BLEND(7),	 BLEND(8),  BLEND(9), BLEND(10), BLEND(11),
				   BLEND(12), BLEND(13), BLEND(14), BLEND(15)};

/* Which bytes of a word differ: bit b for the word's byte b in memory.
   Without a branch per byte (the bytes of changed doubles differ or not
   at random): the high bit of each byte of y is set where the byte of
   a ^ b is not zero, and a multiply gathers the four bits. */
static unsigned changed_bytes(uint32_t a, uint32_t b)
{
	uint32_t x = a ^ b;
	uint32_t y = (((x & 0x7f7f7f7fu) + 0x7f7f7f7fu) | x) >> 7 & 0x01010101u;
	unsigned bits = (unsigned)((y * 0x00204081u) >> 21) & 0xf; /* bit k: value byte k */
	if (ENDIAN_LITTLE)
		return bits;
	return (bits >> 3 & 1) | (bits >> 1 & 2) | (bits << 1 & 4) | (bits << 3 & 8);
}

/* One word of a page another thread may be writing, read once. */
static uint32_t word_once(const uint32_t *w)
{
	return __atomic_load_n(w, __ATOMIC_RELAXED);
}

/* Where a run from word first must end: the page's end, or UINT16_MAX
   words on (the most a header counts; the next run starts there). */
static size_t run_limit(size_t first, size_t words)
{
	return words - first < UINT16_MAX ? words : first + UINT16_MAX;
}

#if DIFF_SSE2
static __m128i load4(const void *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* Bit k set where word k of a and b are equal. */
static unsigned same_words(__m128i a, __m128i b)
{
	return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(a, b)));
}
#endif

/* The first word from w on that differs from its twin (words if none).
   Equal stretches go 16 words at a time: most pages an interval touches
   change few words. */
static size_t first_change(const uint32_t *p, const uint32_t *t, size_t w, size_t words)
{
#if DIFF_SSE2
	for (; w + 16 <= words; w += 16) {
		__m128i e = _mm_and_si128(_mm_cmpeq_epi32(load4(p + w), load4(t + w)),
					  _mm_cmpeq_epi32(load4(p + w + 4), load4(t + w + 4)));
		e = _mm_and_si128(e, _mm_cmpeq_epi32(load4(p + w + 8), load4(t + w + 8)));
		e = _mm_and_si128(e, _mm_cmpeq_epi32(load4(p + w + 12), load4(t + w + 12)));
		if (_mm_movemask_epi8(e) != 0xffff)
			break;
	}
	for (; w + 4 <= words; w += 4) {
		unsigned same = same_words(load4(p + w), load4(t + w));
		if (same != 0xf)
			return w + (size_t)__builtin_ctz(~same);
	}
#else
	for (; w + 16 <= words && !memcmp(p + w, t + w, 16 * DSM_DIFF_WORD); w += 16)
		;
#endif
	while (w < words && p[w] == t[w])
		w++;
	return w;
}

/* The first word from w on, before limit, equal to its twin (limit if
   none). */
static size_t run_end(const uint32_t *p, const uint32_t *t, size_t w, size_t limit)
{
#if DIFF_SSE2
	for (; w + 4 <= limit; w += 4) {
		unsigned same = same_words(load4(p + w), load4(t + w));
		if (same)
			return w + (size_t)__builtin_ctz(same);
	}
#endif
	while (w < limit && p[w] != t[w])
		w++;
	return w;
}

/* dsm_diff_take's run_end: the words from w on, up to the first one equal
   to its twin or limit, each read once, go to out; returns where it ended.
   (Words of a group past that end were read but are not used: they are
   read again for the next run.) */
static size_t take_run(const uint32_t *p, const uint32_t *t, size_t w, size_t limit,
		       unsigned char *out)
{
#if DIFF_SSE2
	for (; w + 4 <= limit; w += 4, out += 4 * DSM_DIFF_WORD) {
		__m128i v = load4(p + w);
		unsigned same = same_words(v, load4(t + w));
		if (!same) {
			_mm_storeu_si128((__m128i *)out, v);
			continue;
		}
		unsigned k = (unsigned)__builtin_ctz(same);
		unsigned char vals[16];
		_mm_storeu_si128((__m128i *)vals, v);
		memcpy(out, vals, k * DSM_DIFF_WORD);
		return w + k;
	}
#endif
	for (; w < limit; w++, out += DSM_DIFF_WORD) {
		uint32_t v = word_once(p + w);
		if (v == t[w])
			return w;
		memcpy(out, &v, DSM_DIFF_WORD);
	}
	return w;
}

/* A run's masks after its values: vals are the run's values in the diff,
   t the twin at its first word. */
static size_t put_masks(unsigned char *o, const unsigned char *vals, const uint32_t *t,
			size_t count)
{
	size_t k = 0, n = 0;
#if DIFF_SSE2
	for (; k + 4 <= count; k += 4, n += 2) {
		unsigned m = ~(unsigned)_mm_movemask_epi8(
				     _mm_cmpeq_epi8(load4(vals + k * DSM_DIFF_WORD), load4(t + k))) &
			     0xffff;
		o[n] = (unsigned char)m;
		o[n + 1] = (unsigned char)(m >> 8);
	}
#endif
	for (; k + 1 < count; k += 2) {
		uint32_t a, b;
		memcpy(&a, vals + k * DSM_DIFF_WORD, DSM_DIFF_WORD);
		memcpy(&b, vals + (k + 1) * DSM_DIFF_WORD, DSM_DIFF_WORD);
		o[n++] = (unsigned char)(changed_bytes(a, t[k]) | changed_bytes(b, t[k + 1]) << 4);
	}
	if (k < count) {
		uint32_t a;
		memcpy(&a, vals + k * DSM_DIFF_WORD, DSM_DIFF_WORD);
		o[n++] = (unsigned char)changed_bytes(a, t[k]);
	}
	return n;
}

/* Writes a run's values over dst where its masks say. */
static void apply_run(unsigned char *dst, const unsigned char *src, const unsigned char *mask,
		      size_t count)
{
	size_t k = 0;
#if DIFF_SSE2
	const __m128i bits = _mm_set_epi8((char)0x80, 0x40, 0x20, 0x10, 8, 4, 2, 1, (char)0x80,
					  0x40, 0x20, 0x10, 8, 4, 2, 1);
	for (; k + 4 <= count; k += 4) {
		unsigned m = mask[k / 2] | (unsigned)mask[k / 2 + 1] << 8;
		__m128i v = load4(src + k * DSM_DIFF_WORD);
		__m128i *d = (__m128i *)(dst + k * DSM_DIFF_WORD);
		if (m != 0xffff) { /* byte i of the blend: bit i of m */
			__m128i x = _mm_cvtsi32_si128((int)m);
			x = _mm_unpacklo_epi8(x, x);
			x = _mm_unpacklo_epi16(x, x);
			x = _mm_unpacklo_epi32(x, x);
			__m128i sel = _mm_cmpeq_epi8(_mm_and_si128(x, bits), bits);
			v = _mm_or_si128(_mm_and_si128(sel, v), _mm_andnot_si128(sel, load4(d)));
		}
		_mm_storeu_si128(d, v);
	}
#endif
	for (; k < count; k++) {
		uint32_t m = blend[(mask[k / 2] >> (k % 2 * 4)) & 0xf], v, old;
		memcpy(&v, src + k * DSM_DIFF_WORD, DSM_DIFF_WORD);
		memcpy(&old, dst + k * DSM_DIFF_WORD, DSM_DIFF_WORD);
		old = (old & ~m) | (v & m);
		memcpy(dst + k * DSM_DIFF_WORD, &old, DSM_DIFF_WORD);
	}
}

static size_t put_header(unsigned char *o, size_t first, size_t count)
{
	uint16_t hdr[2] = {(uint16_t)first, (uint16_t)count};
	memcpy(o, hdr, sizeof(hdr));
	return sizeof(hdr);
}

size_t dsm_diff_make(const void *page, const void *twin, size_t size, void *out)
{
	const uint32_t *p = page, *t = twin;
	size_t words = size / DSM_DIFF_WORD, n = 0;
	unsigned char *o = out;
	if (!memcmp(page, twin, size))
		return 0;
	for (size_t w = first_change(p, t, 0, words); w < words;
	     w = first_change(p, t, w, words)) {
		size_t first = w;
		w = run_end(p, t, first, run_limit(first, words));
		size_t count = w - first;
		n += put_header(o + n, first, count);
		memcpy(o + n, p + first, count * DSM_DIFF_WORD);
		n += count * DSM_DIFF_WORD;
		n += put_masks(o + n, o + n - count * DSM_DIFF_WORD, t + first, count);
	}
	return n;
}

size_t dsm_diff_take(const void *page, void *twin, size_t size, void *out)
{
	const uint32_t *p = page;
	uint32_t *t = twin;
	size_t words = size / DSM_DIFF_WORD, n = 0, w = 0;
	unsigned char *o = out;
	/* A stretch found equal is skipped; a write to it after the look
	   differs from the twin at the next take. */
	if (!memcmp(page, twin, size))
		return 0;
	while ((w = first_change(p, t, w, words)) < words) {
		/* A run: each word read once, into the diff; the word that ends
		   it was seen equal and is passed over, so runs stay apart. (The
		   first may have been written back since first_change looked: the
		   run is then empty.) */
		size_t first = w, limit = run_limit(first, words);
		unsigned char *vals = o + n + 2 * sizeof(uint16_t);
		w = take_run(p, t, first, limit, vals);
		size_t count = w - first;
		if (w < limit)
			w++;
		if (!count)
			continue;
		n += put_header(o + n, first, count);
		n += count * DSM_DIFF_WORD;
		n += put_masks(o + n, vals, t + first, count);
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
		apply_run(p + (size_t)hdr[0] * DSM_DIFF_WORD, d + off, d + off + count * DSM_DIFF_WORD,
			  count);
		off += bytes;
	}
	return 0;
}
