/*
 * Atomics on shared words, each one shipped call to the word's home
 * (ship.c): the word's page stays there, and every node's operation on it
 * is one round trip. The functions run on the home's server, or on the
 * calling thread when it is at the home (dsm_call_atomic); the hardware
 * atomics make them atomic with each other and with plain accesses of the
 * home's other threads too (a locked instruction on a page this node may
 * not write faults before it does anything, and runs again once the page
 * is writable here).
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static uint64_t at_add(void *w, uint64_t v, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	return __atomic_fetch_add((uint64_t *)w, v, __ATOMIC_SEQ_CST);
}

/* Returns the word as it was: the caller compares it with what it expected. */
static uint64_t at_cas(void *w, uint64_t expected, uint64_t desired, uint64_t c)
{
	(void)c;
	__atomic_compare_exchange_n((uint64_t *)w, &expected, desired, 0, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	return expected;
}

static uint64_t at_xchg(void *w, uint64_t v, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	return __atomic_exchange_n((uint64_t *)w, v, __ATOMIC_SEQ_CST);
}

static uint64_t at_load(void *w, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a, (void)b, (void)c;
	return __atomic_load_n((uint64_t *)w, __ATOMIC_SEQ_CST);
}

static uint64_t at_store(void *w, uint64_t v, uint64_t b, uint64_t c)
{
	(void)b, (void)c;
	__atomic_store_n((uint64_t *)w, v, __ATOMIC_SEQ_CST);
	return 0;
}

size_t dsm_atomic_fn_len(locus_fn fn)
{
	return fn == at_add || fn == at_cas || fn == at_xchg || fn == at_load || fn == at_store
		       ? sizeof(uint64_t)
		       : 0;
}

/* The word's home; a word outside the region or misaligned ends the process. */
static void check(const char *call, const void *w)
{
	if (locus_dsm_home(w) < 0 || (uintptr_t)w % 8) {
		fprintf(stderr,
			"locus-dsm: %s: %p is not an aligned 64-bit word of the shared "
			"region\n",
			call, w);
		exit(1);
	}
}

uint64_t locus_dsm_fetch_add(uint64_t *word, uint64_t v)
{
	check("locus_dsm_fetch_add", word);
	return dsm_call_atomic(__func__, at_add, word, v, 0, 0);
}

int locus_dsm_compare_exchange(uint64_t *word, uint64_t *expected, uint64_t desired)
{
	check("locus_dsm_compare_exchange", word);
	uint64_t seen = dsm_call_atomic(__func__, at_cas, word, *expected, desired, 0);
	if (seen == *expected)
		return 1;
	*expected = seen;
	return 0;
}

uint64_t locus_dsm_exchange(uint64_t *word, uint64_t v)
{
	check("locus_dsm_exchange", word);
	return dsm_call_atomic(__func__, at_xchg, word, v, 0, 0);
}

uint64_t locus_dsm_load(const uint64_t *word)
{
	check("locus_dsm_load", word);
	return dsm_call_atomic_load(__func__, at_load, (void *)(uintptr_t)word);
}

void locus_dsm_store(uint64_t *word, uint64_t v)
{
	check("locus_dsm_store", word);
	dsm_call_atomic(__func__, at_store, word, v, 0, 0);
}
