/* Which sanitizer this file is built under, for code that must behave
   differently there: LOCUS_ASAN and LOCUS_TSAN, 1 or 0 (GCC says it with
   __SANITIZE_*__, Clang with __has_feature). */
#ifndef LOCUS_COMMON_SANITIZER_H
#define LOCUS_COMMON_SANITIZER_H

#if defined(__SANITIZE_ADDRESS__)
#define LOCUS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCUS_ASAN 1
#endif
#endif
#ifndef LOCUS_ASAN
#define LOCUS_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define LOCUS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOCUS_TSAN 1
#endif
#endif
#ifndef LOCUS_TSAN
#define LOCUS_TSAN 0
#endif

#endif
