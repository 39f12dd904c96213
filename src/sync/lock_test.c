/* The locks' test seam (lock_test.h); compiled into locus_testhook only. */
#include "sync/lock_test.h"

#ifndef LOCUS_LOCK_TEST_HOOK
#error "lock_test.c belongs in a build with LOCUS_LOCK_TEST_HOOK (src/CMakeLists.txt)"
#endif

static lock_test_hook_fn enqueued;

void lock_test_set_enqueued(lock_test_hook_fn fn)
{
	st_seqcst(&enqueued, fn);
}

void lock_hook(const struct lock *l, int where)
{
	lock_test_hook_fn h = ld_relaxed(&enqueued);
	if (h)
		h(l, where);
}
