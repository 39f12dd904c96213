/*
 * locus: what every public header shares. Which functions the libraries
 * export: everything in liblocus and liblocus-dsm is compiled with hidden
 * visibility; the public API is marked LOCUS_API, so a program that links the
 * shared libraries sees only locus_-prefixed symbols and none of the
 * internals can collide with its own. C linkage for C++ callers. And the
 * cache-line size that the types a program may embed (locus_lock,
 * locus_oyama, locus_ccsynch) are aligned to.
 */
#ifndef LOCUS_EXPORT_H
#define LOCUS_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define LOCUS_API __attribute__((visibility("default")))
#else
#define LOCUS_API
#endif

/* C++ callers see C linkage. */
#ifdef __cplusplus
#define LOCUS_BEGIN_DECLS extern "C" {
#define LOCUS_END_DECLS	  }
#else
#define LOCUS_BEGIN_DECLS
#define LOCUS_END_DECLS
#endif

/* Bytes in a cache line: the alignment of locus's embeddable types, and of
   anything inside locus that must not share a line with its neighbours. */
#define LOCUS_CACHELINE 64

/* Aligns a member to LOCUS_CACHELINE, in C11 and in C++11. */
#ifdef __cplusplus
#define LOCUS_CACHELINE_ALIGNED alignas(LOCUS_CACHELINE)
#else
#define LOCUS_CACHELINE_ALIGNED _Alignas(LOCUS_CACHELINE)
#endif

#endif
