/* locus: the shape of a critical section, shared by every mechanism. */
#ifndef LOCUS_FN_H
#define LOCUS_FN_H

#include <stdint.h>
#include "locus/export.h"

LOCUS_BEGIN_DECLS

/*
 * A critical section: it runs with exclusive access to `state` and returns a
 * word. Every mechanism (lock, combining, delegation, STM) runs the same
 * function, so comparisons between mechanisms are about the mechanism only.
 */
typedef uint64_t (*locus_fn)(void *state, uint64_t a, uint64_t b, uint64_t c);

/* Completion of an asynchronous post: runs on the posting thread. */
typedef void (*locus_cb)(void *ctx, uint64_t result);

/*
 * Mark a critical section that may run inside a GCC transaction (stm:*).
 * Define LOCUS_TM and compile the file with -fgnu-tm to get a transactional
 * clone of the function; without it the macro is empty and the function runs
 * under stm only in serial-irrevocable mode (see stm.h).
 */
#if defined(LOCUS_TM) && defined(__GNUC__) && !defined(__clang__)
#define LOCUS_TM_CALLABLE __attribute__((transaction_callable))
#define LOCUS_TM_PURE	  __attribute__((transaction_pure))
#else
#define LOCUS_TM_CALLABLE
#define LOCUS_TM_PURE
#endif

LOCUS_END_DECLS

#endif
