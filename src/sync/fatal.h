/*
 * The one way src/sync gives up. Some paths cannot report failure to their
 * caller (a lock(), a post() halfway through queueing, a thread-exit hook),
 * so running out of memory there ends the process with a message that says
 * where, instead of a bare abort() or a NULL dereference later.
 */
#ifndef LOCUS_SYNC_FATAL_H
#define LOCUS_SYNC_FATAL_H

#include <stddef.h>

/* Print "locus: <message>" on stderr and abort. */
void sync_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* malloc/calloc/aligned_alloc/realloc that die with "out of memory (what)" instead of failing. */
void *sync_malloc(size_t size, const char *what);
void *sync_calloc(size_t n, size_t size, const char *what);
/* Zeroed, size rounded up to a multiple of align. */
void *sync_aligned_zalloc(size_t align, size_t size, const char *what);
void *sync_realloc(void *p, size_t size, const char *what);

#endif
