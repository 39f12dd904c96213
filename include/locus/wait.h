/* locus: how a thread waits — a policy chosen separately from the algorithm. */
#ifndef LOCUS_WAIT_H
#define LOCUS_WAIT_H

#include <stdint.h>
#include "locus/export.h"

LOCUS_BEGIN_DECLS

typedef enum {
	LOCUS_WAIT_SPINPARK = 0, /* spin up to `spins` times, then sleep on a futex (default) */
	LOCUS_WAIT_SPIN = 1,	 /* spin forever: fastest with a core per thread, collapses
				    when threads outnumber cores */
	LOCUS_WAIT_PARK = 2,	 /* sleep on a futex at once */
} locus_wait_kind;

typedef struct locus_wait {
	uint32_t kind;	/* locus_wait_kind */
	uint32_t spins; /* spin budget before parking (LOCUS_WAIT_SPINPARK) */
} locus_wait;

/*
 * Default spin budget, in pause iterations (tens of nanoseconds each): long
 * enough to cover a short critical section held by a running thread, short
 * enough that a waiter behind a preempted holder gives its core back quickly.
 */
#define LOCUS_WAIT_SPINS_DEFAULT 2048

/* The default policy: spin-then-park with LOCUS_WAIT_SPINS_DEFAULT. */
LOCUS_API locus_wait locus_wait_default(void);

/*
 * Apply one spec option to a policy: "spin", "park", "spinpark" or
 * "spins=N". Returns 1 if the option was a waiting option (and valid),
 * 0 if it is not a waiting option, -1 if it is one but its value is bad.
 */
LOCUS_API int locus_wait_option(locus_wait *w, const char *opt);

/* One step of a busy-wait: tells the core we are spinning (saves power, yields
   to a hyperthread). */
static inline void locus_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* "spin", "park" or "spinpark". */
LOCUS_API const char *locus_wait_name(const locus_wait *w);

LOCUS_END_DECLS

#endif
