/*
 * lrc's diff encoding (src/dsm/diff.c), a property test: for random twins and
 * random changes — none, one word, scattered words, long runs, every word,
 * runs at both ends of the page, a page written back to its twin's values,
 * single bytes — applying diff(page, twin) to a copy of the twin gives the
 * page back, the diff is never longer than dsm_diff_max, and a page equal to
 * its twin has an empty diff; every diff is the format byte for byte (the
 * test writes it out plainly), and one page's is known. Two writers of different bytes of the same
 * words (as two nodes in one interval): both diffs applied, in either order,
 * give every byte either wrote. Malformed diffs (cut short, a run past the page's end, a run of
 * zero words) are refused. dsm_diff_take gives dsm_diff_make's bytes and
 * leaves the twin equal to the page; and with another thread writing the page
 * all along (a hot page at a release while other threads run), the diffs it
 * takes, applied in order to a copy of the first twin, end equal to the page
 * once the writer stops and one more is taken: no write is lost. No MPI.
 *
 * Usage: dsm_diff [iterations] [seed]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"

static uint64_t rng;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static int failures;

static void check(int ok, const char *what, long it)
{
	if (!ok && failures++ < 10)
		fprintf(stderr, "dsm_diff: iteration %ld: %s\n", it, what);
}

/* A writer of random words and bytes of one page, until told to stop. */
struct writer {
	unsigned char *page;
	size_t size;
	uint64_t seed;
	int stop;
	long writes;
};

static void *write_page(void *arg)
{
	struct writer *wr = arg;
	uint64_t x = wr->seed;
	while (!__atomic_load_n(&wr->stop, __ATOMIC_ACQUIRE)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t at = (size_t)(x >> 20) % wr->size;
		if (x & 1) /* a whole word */
			__atomic_store_n((uint32_t *)(wr->page + (at & ~(size_t)3)), (uint32_t)x,
					 __ATOMIC_RELAXED);
		else /* one byte */
			__atomic_store_n(wr->page + at, (unsigned char)(x >> 8), __ATOMIC_RELAXED);
		wr->writes++;
	}
	return NULL;
}

/* Takes while a writer runs; returns 0 if the copy ends equal to the page. */
static int take_while_written(size_t size, uint64_t seed, long takes)
{
	unsigned char *page = aligned_alloc(64, size), *twin = malloc(size), *copy = malloc(size);
	unsigned char *d = malloc(dsm_diff_max(size));
	for (size_t k = 0; k < size; k++)
		page[k] = (unsigned char)(k * 7 + seed);
	memcpy(twin, page, size);
	memcpy(copy, page, size);
	struct writer wr = {.page = page, .size = size, .seed = seed | 1};
	pthread_t th;
	if (pthread_create(&th, NULL, write_page, &wr)) {
		perror("pthread_create");
		exit(2);
	}
	int bad = 0;
	for (long i = 0; i < takes; i++) {
		size_t n = dsm_diff_take(page, twin, size, d);
		bad |= n > dsm_diff_max(size) || dsm_diff_apply(copy, size, d, n) != 0;
		bad |= memcmp(copy, twin, size) != 0; /* the twin is what the diffs say */
	}
	__atomic_store_n(&wr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	size_t n = dsm_diff_take(page, twin, size, d);
	bad |= dsm_diff_apply(copy, size, d, n) != 0;
	bad |= memcmp(copy, page, size) != 0 || memcmp(twin, page, size) != 0;
	bad |= dsm_diff_take(page, twin, size, d) != 0;
	free(page);
	free(twin);
	free(copy);
	free(d);
	return bad;
}

#define MAX_SIZE 262144

/* The format (diff.h) written out plainly, a word and a byte at a time, to
   hold every build's diffs to: runs of changed words, a run cut at 65535
   words (the next starts at once), the word that ends a run passed over. */
static size_t plain_diff(const unsigned char *page, const unsigned char *twin, size_t size,
			 unsigned char *out)
{
	size_t words = size / 4, n = 0, w = 0;
	while (w < words) {
		if (!memcmp(page + 4 * w, twin + 4 * w, 4)) {
			w++;
			continue;
		}
		size_t first = w;
		while (w < words && w - first < 65535 && memcmp(page + 4 * w, twin + 4 * w, 4))
			w++;
		size_t count = w - first;
		uint16_t hdr[2] = {(uint16_t)first, (uint16_t)count};
		memcpy(out + n, hdr, 4);
		n += 4;
		memcpy(out + n, page + 4 * first, 4 * count);
		n += 4 * count;
		for (size_t k = 0; k < count; k++) {
			unsigned m = 0;
			for (unsigned b = 0; b < 4; b++)
				m |= (unsigned)(page[4 * (first + k) + b] != twin[4 * (first + k) + b]) << b;
			if (k % 2 == 0)
				out[n] = (unsigned char)m;
			else
				out[n++] |= (unsigned char)(m << 4);
		}
		if (count % 2)
			n++;
	}
	return n;
}

/* One page whose diff is known byte for byte: the masks of a run of seven
   words (four at a time and three after) and a run of one, from make and
   from take; then applied to its twin. */
static void known_answer(void)
{
	unsigned char twin[48], page[48], d[64], d2[64], want[64], copy[48];
	memset(twin, 0x5a, sizeof(twin));
	memcpy(page, twin, sizeof(page));
	page[4] = 0xaa;		      /* word 1, byte 0 */
	memset(page + 8, 0x11, 24);   /* words 2 to 7 */
	memcpy(page + 16, twin + 16, 4); /* word 4 ... */
	page[18] = 0x22;	      /* ... byte 2 only */
	page[39] = 0x33;	      /* word 9, byte 3 */
	static const unsigned char masks1[4] = {0xf1, 0x4f, 0xff, 0x0f}, mask2 = 0x08;
	size_t n = 0;
	uint16_t h1[2] = {1, 7}, h2[2] = {9, 1};
	memcpy(want + n, h1, 4);
	memcpy(want + n + 4, page + 4, 28);
	memcpy(want + n + 32, masks1, 4);
	n += 36;
	memcpy(want + n, h2, 4);
	memcpy(want + n + 4, page + 36, 4);
	want[n + 8] = mask2;
	n += 9;
	size_t nm = dsm_diff_make(page, twin, sizeof(page), d);
	check(nm == n && !memcmp(d, want, n), "make: not the known diff", -1);
	memcpy(copy, twin, sizeof(copy));
	size_t nt = dsm_diff_take(page, copy, sizeof(page), d2);
	check(nt == n && !memcmp(d2, want, n), "take: not the known diff", -1);
	memcpy(copy, twin, sizeof(copy));
	check(dsm_diff_apply(copy, sizeof(copy), want, n) == 0 && !memcmp(copy, page, sizeof(page)),
	      "the known diff applied: not the page", -1);
}

int main(int argc, char **argv)
{
	known_answer();
	long iters = argc > 1 ? atol(argv[1]) : 20000;
	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9e3779b97f4a7c15ull;
	if (!rng)
		rng = 1;
	/* The largest size is the most a header counts (65536 words): a run
	   of every word is cut at 65535. */
	static const size_t sizes[] = {4,    64,   4096, 16384, 65536, 4096, 4096, 4096,
				       4096, 4096, 4096, 4096,  4096,  4096, 4096, MAX_SIZE};
	unsigned char *twin = malloc(MAX_SIZE), *page = malloc(MAX_SIZE), *copy = malloc(MAX_SIZE);
	unsigned char *d = malloc(dsm_diff_max(MAX_SIZE)), *d2 = malloc(dsm_diff_max(MAX_SIZE));
	size_t words_changed = 0, bytes_total = 0;
	for (long it = 0; it < iters; it++) {
		size_t size = sizes[next() % 16];
		size_t words = size / 4;
		uint32_t *t = (uint32_t *)twin, *p = (uint32_t *)page;
		for (size_t w = 0; w < words; w++)
			t[w] = next() % 4 ? next() : 0;
		memcpy(page, twin, size);
		int shape = (int)(next() % 8);
		switch (shape) {
		case 0: /* unchanged */
			break;
		case 1: /* one word */
			p[next() % words] ^= 1u + next() % 0xffffffu;
			break;
		case 2: /* scattered */
			for (size_t k = next() % (words + 1); k; k--)
				p[next() % words] = next();
			break;
		case 3: { /* runs */
			for (int r = (int)(next() % 6); r; r--) {
				size_t a = next() % words, len = 1 + next() % words;
				for (size_t w = a; w < words && w < a + len; w++)
					p[w] = ~t[w];
			}
			break;
		}
		case 4: /* every word */
			for (size_t w = 0; w < words; w++)
				p[w] = t[w] + 1;
			break;
		case 5: /* both ends */
			p[0] = ~t[0];
			p[words - 1] = ~t[words - 1];
			break;
		case 6: /* written, then written back: no difference */
			for (size_t w = 0; w < words; w += 3)
				p[w] = next();
			memcpy(page, twin, size);
			break;
		case 7: /* single bytes */
			for (size_t k = 1 + next() % (size / 2 + 1); k; k--)
				page[next() % size] ^= (unsigned char)(1 + next() % 255);
			break;
		}
		size_t n = dsm_diff_make(page, twin, size, d);
		check(n <= dsm_diff_max(size), "diff longer than its bound", it);
		{ /* byte for byte the format as diff.h says it */
			size_t nr = plain_diff(page, twin, size, d2);
			check(nr == n && !memcmp(d, d2, n), "make differs from the format written out",
			      it);
		}
		{ /* the take: the same bytes, and the twin becomes the page */
			memcpy(copy, twin, size);
			size_t nt = dsm_diff_take(page, copy, size, d2);
			check(nt == n && !memcmp(d, d2, n), "take differs from make", it);
			check(!memcmp(copy, page, size), "take left the twin behind the page", it);
		}
		if (!memcmp(page, twin, size))
			check(n == 0, "equal page with a nonempty diff", it);
		else
			check(n > 0, "changed page with an empty diff", it);
		memcpy(copy, twin, size);
		check(dsm_diff_apply(copy, size, d, n) == 0, "a diff refused", it);
		check(!memcmp(copy, page, size), "twin + diff differs from the page", it);
		for (size_t w = 0; w < words; w++)
			words_changed += p[w] != t[w];
		bytes_total += n;
		/* Malformed: cut inside a run, a run past the end, a zero-word run. */
		if (n >= 8) {
			check(dsm_diff_apply(copy, size, d, n - 2) == -1, "a cut diff accepted",
			      it);
			check(dsm_diff_apply(copy, size, d, 2) == -1, "half a header accepted", it);
		}
		uint16_t past[2] = {(uint16_t)(words - 1), 2};
		unsigned char bad[12];
		memcpy(bad, past, 4);
		memset(bad + 4, 0, 8);
		check(dsm_diff_apply(copy, size, bad, sizeof(bad)) == -1,
		      "a run past the end accepted", it);
		uint16_t zero[2] = {0, 0};
		check(dsm_diff_apply(copy, size, zero, 4) == -1, "a zero-word run accepted", it);
		/* Two writers, each its own bytes of the same words (even and odd
		   bytes here, or a random split): twin + both diffs has both. */
		{
			unsigned char *a = copy, *b = page, *want = d2;
			unsigned split = next() % 2;
			memcpy(a, twin, size);
			memcpy(b, twin, size);
			memcpy(want, twin, size);
			for (size_t k = 0; k < size; k++) {
				if (next() % 3)
					continue;
				unsigned char v = (unsigned char)(twin[k] ^ (1 + next() % 255));
				int to_a = split ? (k % 2 == 0) : (int)(next() % 2);
				(to_a ? a : b)[k] = v;
				want[k] = v;
			}
			size_t na = dsm_diff_make(a, twin, size, d);
			unsigned char *da = malloc(na ? na : 1);
			memcpy(da, d, na);
			size_t nb = dsm_diff_make(b, twin, size, d);
			int first_a = (int)(next() % 2);
			memcpy(a, twin, size);
			check(dsm_diff_apply(a, size, first_a ? da : d, first_a ? na : nb) == 0 &&
				      dsm_diff_apply(a, size, first_a ? d : da, first_a ? nb : na) == 0,
			      "a writer's diff refused", it);
			check(!memcmp(a, want, size), "two writers' bytes of one word: one lost", it);
			free(da);
		}
	}
	for (int k = 0; k < 3; k++)
		check(take_while_written(k == 2 ? 65536 : 4096, rng + (uint64_t)k, iters / 20 + 1) == 0,
		      "a write lost by takes while the page was written", k);
	printf("dsm_diff: %ld pages, %zu words changed, %zu diff bytes: %s\n", iters, words_changed,
	       bytes_total, failures ? "WRONG" : "ok");
	free(twin);
	free(page);
	free(copy);
	free(d);
	free(d2);
	return failures ? 1 : 0;
}
