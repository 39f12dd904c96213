/*
 * locus: combining. A thread that finds the critical section busy does not
 * wait for the lock: it publishes its request, and whichever thread holds the
 * section runs it on its behalf, so the shared data stays in one cache.
 *
 *   oyama    requests pushed on a lock-free stack held in the lock word
 *            (Oyama, Taura, Yonezawa); the holder runs its own request and
 *            then every pending one. Requests live on the requester's stack:
 *            no allocation per request.
 *   ccsynch  CC-Synch (Fatourou, Kallimanis): requests form a queue; the
 *            thread at its head combines up to `pass` requests, then hands the
 *            combiner role to the next waiter.
 *
 * Both bound a combiner's pass (`pass` requests) and then hand the role on,
 * so a combiner is not kept busy by other threads forever.
 */
#ifndef LOCUS_COMBINE_H
#define LOCUS_COMBINE_H

#include <stdint.h>

#include "locus/fn.h"
#include "locus/wait.h"
#include "locus/export.h"

LOCUS_BEGIN_DECLS

#define LOCUS_COMBINE_PASS_DEFAULT 64

/* Bytes of a locus_oyama and of a locus_ccsynch: a cache line. Opaque
   storage that a program may embed or declare statically, used only through
   the functions below and not copied once initialized. */
#define LOCUS_COMBINE_SIZE LOCUS_CACHELINE

typedef struct locus_oyama {
	LOCUS_CACHELINE_ALIGNED unsigned char opaque[LOCUS_COMBINE_SIZE];
} locus_oyama;

typedef struct locus_ccsynch {
	LOCUS_CACHELINE_ALIGNED unsigned char opaque[LOCUS_COMBINE_SIZE];
} locus_ccsynch;

/* wait = NULL: default policy; pass = 0: LOCUS_COMBINE_PASS_DEFAULT. */
LOCUS_API int locus_oyama_init(locus_oyama *o, const locus_wait *wait, uint32_t pass);
LOCUS_API uint64_t locus_oyama_run(locus_oyama *o, locus_fn fn, void *state, uint64_t a, uint64_t b,
				   uint64_t c);
LOCUS_API void locus_oyama_destroy(locus_oyama *o);

LOCUS_API int locus_ccsynch_init(locus_ccsynch *s, const locus_wait *wait, uint32_t pass);
LOCUS_API uint64_t locus_ccsynch_run(locus_ccsynch *s, locus_fn fn, void *state, uint64_t a,
				     uint64_t b, uint64_t c);
LOCUS_API void locus_ccsynch_destroy(locus_ccsynch *s);

LOCUS_END_DECLS

#endif
