/*
 * The locks' test seam: a function called by a waiter just after it has
 * taken its place in a queue, and by a clh or mcs locker that has seen the
 * lock free (lock_impl.h's lock_hook). It exists only in
 * locus_testhook, the library the tests that need it link (src/CMakeLists.txt),
 * so the libraries and programs that are installed do not carry it.
 */
#ifndef LOCUS_SYNC_LOCK_TEST_H
#define LOCUS_SYNC_LOCK_TEST_H

#include "sync/lock_impl.h"

/* where: LOCK_HOOK_QUEUE, LOCK_HOOK_ADMIT or LOCK_HOOK_FREE */
typedef void (*lock_test_hook_fn)(const struct lock *l, int where);

/* Install fn (NULL: none) for every lock of the process. */
void lock_test_set_enqueued(lock_test_hook_fn fn);

#endif
