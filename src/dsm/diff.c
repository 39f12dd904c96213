/* Diff encoding for lrc (diff.h says the format).
 *
 * A page that an interval overwrites (a transpose, a sweep) changes every
 * word, and its diff is made, taken and applied at every interval: the
 * work is done four words at a time with SSE2, which every x86-64 has. A
 * byte compare of 16 bytes and its movemask give the four words' masks as
 * the format packs them (two words a byte, the low nibble first). Applying
 * writes only the bytes a mask names: with AVX-512's byte-masked stores
 * where the processor has them (the masks are the stores' as they stand),
 * else four words at once where their masks name every byte. Elsewhere, or
 * built with LOCUS_DSM_DIFF_SCALAR (the test builds each path), a word at a
 * time, without a branch per byte in the making. All write the same bytes. */
#include <stdint.h>
#include <string.h>

#include "common/sanitizer.h"
#include "diff.h"

#if defined(__SSE2__) && !defined(LOCUS_DSM_DIFF_SCALAR)
#define DIFF_SSE2 1
#include <emmintrin.h>
#else
#define DIFF_SSE2 0
#endif
/* x86-64 with GCC or clang: AVX-512's masked stores for applying, where the
   processor has them (not with LOCUS_DSM_DIFF_NO_AVX512: the test builds
   the SSE2 path alone too). */
#if DIFF_SSE2 && defined(__x86_64__) && defined(__GNUC__) && !defined(LOCUS_DSM_DIFF_NO_AVX512)
#define DIFF_AVX512 1
#include <immintrin.h>
#else
#define DIFF_AVX512 0
#endif

/* Under ThreadSanitizer a take reads the page (which another thread may be
   writing) with atomic word loads only. The whole-page and vector compares
   below read each word once as well, but as plain loads: the sanitizer
   would report them as the race the take is made for. */
#define TAKE_WORDS_ONLY LOCUS_TSAN

/* Byte k of a value's representation is its low byte on a little-endian
   machine, its high one otherwise. */
#define ENDIAN_LITTLE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)

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

/* first_change with atomic word loads (TAKE_WORDS_ONLY). */
static size_t first_change_once(const uint32_t *p, const uint32_t *t, size_t w, size_t words)
{
	while (w < words && word_once(p + w) == t[w])
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
#if DIFF_SSE2 && !TAKE_WORDS_ONLY
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

/* Writes a word's bytes that mask m names (bit b: byte b). */
static void apply_word(unsigned char *d, const unsigned char *s, unsigned m)
{
	if (m == 0xf) {
		memcpy(d, s, DSM_DIFF_WORD);
		return;
	}
	for (unsigned b = 0; b < DSM_DIFF_WORD; b++)
		if (m >> b & 1)
			d[b] = s[b];
}

#if DIFF_AVX512
/* apply_run with AVX-512's byte-masked stores, where the processor has them
   (chosen at run time): a run's two mask bytes for four words are the
   store's mask as they stand, and a word whose bytes changed in part (the
   high word of a double, its exponent kept) costs no more than a whole
   one. */
__attribute__((target("avx512bw,avx512vl"))) static void
apply_run_avx512(unsigned char *dst, const unsigned char *src, const unsigned char *mask,
		 size_t count)
{
	size_t k = 0;
	for (; k + 4 <= count; k += 4) {
		__mmask16 m = (__mmask16)(mask[k / 2] | (unsigned)mask[k / 2 + 1] << 8);
		_mm_mask_storeu_epi8(dst + k * DSM_DIFF_WORD, m,
				     _mm_loadu_si128((const __m128i *)(src + k * DSM_DIFF_WORD)));
	}
	for (; k < count; k++)
		apply_word(dst + k * DSM_DIFF_WORD, src + k * DSM_DIFF_WORD,
			   (mask[k / 2] >> (k % 2 * 4)) & 0xf);
}

static int avx512(void)
{
	static int have = -1; /* -1: not looked yet */
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}
#endif

/* Writes a run's values over dst, only the bytes its masks name: another
   thread may write the word's other bytes meanwhile (a call shipped here
   while a barrier writes pushed diffs in place, lrc_push.c), and a
   read-modify-write of the word would lose them. Four words at once where
   the masks name all their bytes. */
static void apply_run(unsigned char *dst, const unsigned char *src, const unsigned char *mask,
		      size_t count)
{
	size_t k = 0;
#if DIFF_AVX512
	if (avx512()) {
		apply_run_avx512(dst, src, mask, count);
		return;
	}
#endif
#if DIFF_SSE2
	for (; k + 4 <= count; k += 4) {
		if (mask[k / 2] == 0xff && mask[k / 2 + 1] == 0xff) {
			_mm_storeu_si128((__m128i *)(dst + k * DSM_DIFF_WORD),
					 load4(src + k * DSM_DIFF_WORD));
			continue;
		}
		for (size_t j = k; j < k + 4; j++)
			apply_word(dst + j * DSM_DIFF_WORD, src + j * DSM_DIFF_WORD,
				   (mask[j / 2] >> (j % 2 * 4)) & 0xf);
	}
#endif
	for (; k < count; k++)
		apply_word(dst + k * DSM_DIFF_WORD, src + k * DSM_DIFF_WORD,
			   (mask[k / 2] >> (k % 2 * 4)) & 0xf);
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
	if (!TAKE_WORDS_ONLY && !memcmp(page, twin, size))
		return 0;
	while ((w = TAKE_WORDS_ONLY ? first_change_once(p, t, w, words)
				    : first_change(p, t, w, words)) < words) {
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
