/*
 * What a locus_oyama and a locus_ccsynch hold: the layouts behind the public
 * types' opaque bytes (include/locus/combine.h), and the combiners' functions
 * on them, for the executor (cs.c), which embeds these structs themselves.
 * The contracts are combine.h's.
 */
#ifndef LOCUS_SYNC_COMBINE_IMPL_H
#define LOCUS_SYNC_COMBINE_IMPL_H

#include <stdint.h>

#include "locus/combine.h"

struct locus_qnode;

struct oyama {
	uintptr_t word; /* free, held with no requests, else held + stack of requests */
	uint32_t pass;
	locus_wait wait;
};

struct ccsynch {
	struct locus_qnode *tail; /* last node of the request queue (always a node) */
	uint32_t pass;
	locus_wait wait;
};

_Static_assert(sizeof(struct oyama) <= sizeof(locus_oyama) &&
		       _Alignof(struct oyama) <= _Alignof(locus_oyama),
	       "struct oyama does not fit a locus_oyama (include/locus/combine.h)");
_Static_assert(sizeof(struct ccsynch) <= sizeof(locus_ccsynch) &&
		       _Alignof(struct ccsynch) <= _Alignof(locus_ccsynch),
	       "struct ccsynch does not fit a locus_ccsynch (include/locus/combine.h)");

int oyama_init(struct oyama *o, const locus_wait *wait, uint32_t pass);
uint64_t oyama_combine(struct oyama *o, locus_fn fn, void *state, uint64_t a, uint64_t b,
		       uint64_t c);
void oyama_destroy(struct oyama *o);

int ccsynch_init(struct ccsynch *s, const locus_wait *wait, uint32_t pass);
uint64_t ccsynch_combine(struct ccsynch *s, locus_fn fn, void *state, uint64_t a, uint64_t b,
			 uint64_t c);
void ccsynch_destroy(struct ccsynch *s);

#endif
