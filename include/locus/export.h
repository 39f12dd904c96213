/*
 * locus: which functions the libraries export. Everything in liblocus and
 * liblocus-dsm is compiled with hidden visibility; the public API is marked
 * LOCUS_API, so a program that links the shared libraries sees only
 * locus_-prefixed symbols and none of the internals can collide with its own.
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

#endif
