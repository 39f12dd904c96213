// Every public header from C++: the declarations have C linkage, so this links
// against the C library.
#include <cstdint>
#include <cstdio>

#include <locus/combine.h>
#include <locus/cs.h>
#include <locus/delegate.h>
#include <locus/dsm.h>
#include <locus/fn.h>
#include <locus/lock.h>
#include <locus/stm.h>
#include <locus/version.h>
#include <locus/wait.h>

static uint64_t add(void *state, uint64_t a, uint64_t, uint64_t)
{
	auto *k = static_cast<uint64_t *>(state);
	return *k += a;
}

int main()
{
	uint64_t k = 0;
	locus_cs *cs = locus_cs_open("ccsynch", &k);
	if (!cs)
		return 1;
	locus_cs_run(cs, add, 2, 0, 0);
	locus_cs_close(cs);
	locus_lock l;
	if (locus_lock_init(&l, LOCUS_LOCK_TICKET, nullptr) != 0)
		return 1;
	locus_lock_lock(&l);
	locus_lock_unlock(&l);
	locus_lock_destroy(&l);
	std::printf("c++: locus %s, %llu\n", locus_version(), static_cast<unsigned long long>(k));
	return k == 2 ? 0 : 1;
}
