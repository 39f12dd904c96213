/*
 * A program whose own functions have the names of locus internals. Linked
 * statically against the installed liblocus.a, it must link (no "multiple
 * definition") and each side must call its own: the archive exports only
 * locus_ symbols.
 */
#include <stdint.h>
#include <stdio.h>

#include <locus/cs.h>

int mcs_lock(void);
int dl_acquire(void);
int mpsc_open(void);
int sync_die(void);

int mcs_lock(void)
{
	return 1;
}
int dl_acquire(void)
{
	return 2;
}
int mpsc_open(void)
{
	return 3;
}
int sync_die(void)
{
	return 4;
}

static uint64_t add(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t *k = state;
	return *k += a;
}

int main(void)
{
	uint64_t k = 0;
	const char *specs[] = {"mcs", "ffwd", "mpsc", "flat"};
	for (int i = 0; i < 4; i++) {
		locus_cs *cs = locus_cs_open(specs[i], &k);
		if (!cs) {
			fprintf(stderr, "collide: %s\n", locus_cs_error());
			return 1;
		}
		locus_cs_run(cs, add, 1, 0, 0);
		locus_cs_close(cs);
	}
	int mine = mcs_lock() + dl_acquire() + mpsc_open() + sync_die();
	printf("collide: sections %llu, own functions %d\n", (unsigned long long)k, mine);
	return k == 4 && mine == 10 ? 0 : 1;
}
