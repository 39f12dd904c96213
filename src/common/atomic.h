/*
 * The one atomic layer, each access with its memory order spelled out at the
 * call site. Every module (sync, dsm, preload, kv) and bench makes every atomic
 * access through these, and nothing is _Atomic: the types are plain, so an
 * access that does not go through here is not atomic.
 *
 * Names are op_order: ld, st, xchg, faa (fetch-and-add: the old value), aaf
 * (add-and-fetch: the new value), fas (fetch-and-subtract), cas; a trailing
 * word qualifies (a cas's failure order, a weak cas).
 */
#ifndef LOCUS_COMMON_ATOMIC_H
#define LOCUS_COMMON_ATOMIC_H

#include "locus/wait.h"

#define ld_relaxed(p)	   __atomic_load_n((p), __ATOMIC_RELAXED)
#define ld_acquire(p)	   __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define ld_seqcst(p)	   __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define st_relaxed(p, v)   __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define st_release(p, v)   __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define st_seqcst(p, v)	   __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define xchg_acquire(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQUIRE)
#define xchg_release(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELEASE)
#define xchg_acqrel(p, v)  __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define xchg_seqcst(p, v)  __atomic_exchange_n((p), (v), __ATOMIC_SEQ_CST)
#define faa_relaxed(p, v)  __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define faa_release(p, v)  __atomic_fetch_add((p), (v), __ATOMIC_RELEASE)
#define faa_acqrel(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_ACQ_REL)
#define faa_seqcst(p, v)   __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define aaf_relaxed(p, v)  __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define fas_acqrel(p, v)   __atomic_fetch_sub((p), (v), __ATOMIC_ACQ_REL)
#define for_relaxed(p, v)  __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define fand_relaxed(p, v) __atomic_fetch_and((p), (v), __ATOMIC_RELAXED)
#define fas_seqcst(p, v)   __atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)
#define fence_seqcst()	   __atomic_thread_fence(__ATOMIC_SEQ_CST)
/* Orders this thread's accesses for a signal handler that interrupts it (no CPU fence). */
#define fence_signal() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* A store of a type the _n forms refuse (a double): the value is read from *src. */
#define st_relaxed_from(p, src) __atomic_store((p), (src), __ATOMIC_RELAXED)

/* Strong compare-and-swap; *expected is updated on failure. */
#define cas_acquire(p, expected, desired)                                                          \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQUIRE,               \
				    __ATOMIC_RELAXED)
#define cas_acquire_both(p, expected, desired)                                                     \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQUIRE,               \
				    __ATOMIC_ACQUIRE)
#define cas_release(p, expected, desired)                                                          \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_RELEASE,               \
				    __ATOMIC_RELAXED)
#define cas_acqrel(p, expected, desired)                                                           \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL,               \
				    __ATOMIC_ACQUIRE)
/* acq_rel on success, relaxed on failure: the caller does not read through what a failure saw. */
#define cas_acqrel_relaxed(p, expected, desired)                                                   \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL,               \
				    __ATOMIC_RELAXED)
#define cas_seqcst(p, expected, desired)                                                           \
	__atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_SEQ_CST,               \
				    __ATOMIC_SEQ_CST)

/* Weak: may fail spuriously, so only inside a retry loop (cheaper where LL/SC is the primitive). */
#define cas_release_weak(p, expected, desired)                                                     \
	__atomic_compare_exchange_n((p), (expected), (desired), 1, __ATOMIC_RELEASE,               \
				    __ATOMIC_RELAXED)
#define cas_seqcst_weak(p, expected, desired)                                                      \
	__atomic_compare_exchange_n((p), (expected), (desired), 1, __ATOMIC_SEQ_CST,               \
				    __ATOMIC_SEQ_CST)

#define cpu_relax() locus_cpu_relax()

/*
 * Ask for the cache line at p in exclusive state ahead of writing it, so that
 * the stores that follow find it owned. A producer that writes several lines
 * another core has read (delegation's request lines) issues one for each
 * first: their ownership requests then overlap, where each line's stores
 * would otherwise wait for it in turn. x86-64 has PREFETCHW (executed as a
 * no-op by the x86-64 CPUs without it); GCC emits it for __builtin_prefetch
 * only when told the CPU has it, and a read prefetch otherwise, so it is
 * written out here.
 */
static inline void prefetch_write(const void *p)
{
#if defined(__x86_64__)
	__asm__ __volatile__("prefetchw %0" ::"m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1);
#endif
}

/* LOCUS_CACHELINE comes with locus/export.h (through locus/wait.h). */

#endif
