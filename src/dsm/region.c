/*
 * The shared region: one memory object mapped twice. The application view sits
 * at the same address on every node and carries the protocol's protections;
 * the alias view is always read-write, so the runtime can install and copy
 * pages while the application cannot touch them.
 *
 * In a fork-style run of a program linked with globals.ld, a third view:
 * the program's own globals, mapped over the region's first pages (the
 * lower half, for collective allocations, unused in such a run), with the
 * same protections as those pages, so that a global is shared memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* Copies that neither sanitizer checks (the globals hold their red zones). */
__attribute__((no_sanitize("address", "thread"), noinline)) static void
raw_copy(char *to, const char *from, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		to[i] = from[i];
		__asm__ volatile("" ::: "memory"); /* no memcpy made of the loop */
	}
}

/* The shared globals onto the region's first pages: their contents (the
   same on every node: the program has not run yet) into the memory object,
   then the object mapped where they are, inaccessible until the protocol
   gives the pages. Nothing touches them in between: this runs before
   locus_dsm_start returns, and only the program's own code uses them. */
static int map_globals(int fd)
{
	char *lo, *hi;
	if (!dsm_globals_shared(&lo, &hi))
		return 0;
	size_t len = (size_t)(hi - lo);
	if ((uintptr_t)lo % dsm.page_size || len % dsm.page_size || len > dsm.size / 2) {
		fprintf(stderr,
			"locus-dsm: node %d: the program's globals (%zu bytes at %p) are not whole "
			"pages or do not fit the lower half of the region (LOCUS_DSM_SIZE)\n",
			dsm.node, len, (void *)lo);
		return -1;
	}
	raw_copy(dsm.alias, lo, len);
	if (mmap(lo, len, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0) != lo) {
		fprintf(stderr, "locus-dsm: node %d: cannot map the program's globals: %s\n",
			dsm.node, strerror(errno));
		return -1;
	}
	dsm.gview = lo;
	dsm.glen = len;
	return 0;
}

/* The globals back to private memory with what this node holds of them
   (after the run: the program may still read them, at exit), or, in a
   child of fork(), the same as the child's own copy. */
void dsm_region_keep_globals(void)
{
	if (!dsm.gview)
		return;
	char *copy = malloc(dsm.glen);
	if (copy)
		raw_copy(copy, dsm.alias, dsm.glen);
	mmap(dsm.gview, dsm.glen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
	     -1, 0);
	if (copy)
		raw_copy(dsm.gview, copy, dsm.glen);
	free(copy);
	dsm.gview = NULL;
	dsm.glen = 0;
}

int dsm_region_map(void)
{
	dsm.page_size = (size_t)sysconf(_SC_PAGESIZE);
	dsm.size = (dsm.cfg.size + dsm.page_size - 1) / dsm.page_size * dsm.page_size;
	dsm.npages = dsm.size / dsm.page_size;
	int fd = memfd_create("locus-dsm", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)dsm.size) != 0) {
		fprintf(stderr, "locus-dsm: node %d: shared memory object: %s\n", dsm.node,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	void *want = (void *)dsm.cfg.addr;
	void *app = mmap(want, dsm.size, PROT_NONE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	if (app == MAP_FAILED || app != want) {
		fprintf(stderr,
			"locus-dsm: node %d: cannot map %zu bytes at %p (%s); "
			"choose another LOCUS_DSM_ADDR or a smaller LOCUS_DSM_SIZE\n",
			dsm.node, dsm.size, want,
			app == MAP_FAILED ? strerror(errno) : "address taken");
		if (app != MAP_FAILED)
			munmap(app, dsm.size);
		close(fd);
		return -1;
	}
	void *alias = mmap(NULL, dsm.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (alias == MAP_FAILED) {
		fprintf(stderr, "locus-dsm: node %d: alias mapping: %s\n", dsm.node,
			strerror(errno));
		munmap(app, dsm.size);
		close(fd);
		return -1;
	}
	dsm.app = app;
	dsm.alias = alias;
	int r = dsm_fork_request ? map_globals(fd) : 0;
	close(fd);
	return r;
}

void dsm_region_unmap(void)
{
	dsm_region_keep_globals();
	if (dsm.app)
		munmap(dsm.app, dsm.size);
	if (dsm.alias)
		munmap(dsm.alias, dsm.size);
	dsm.app = dsm.alias = NULL;
}

/* What to do about a failed mprotect: ENOMEM is the mappings' limit. */
static const char *map_hint(int err)
{
	return err == ENOMEM ? " (too many mappings: raise vm.max_map_count, "
			       "e.g. as root: sysctl -w vm.max_map_count=1048576)"
			     : "";
}

/* Every page with its own protection costs a kernel mapping; the default
   limit (vm.max_map_count) is 65530, which a scattered access pattern over a
   large region can reach. */
static void protect_now(size_t page, size_t count, int prot)
{
	STAT_ADD(protects, 1);
	STAT_ADD(protect_pages, count);
	if (mprotect(dsm.app + page * dsm.page_size, count * dsm.page_size, prot) != 0)
		dsm_fatal("mprotect of page %zu: %s%s", page, strerror(errno), map_hint(errno));
	size_t gpages = dsm.glen / dsm.page_size;
	if (dsm.gview && page < gpages) {
		size_t n = page + count > gpages ? gpages - page : count;
		if (mprotect(dsm.gview + page * dsm.page_size, n * dsm.page_size, prot) != 0)
			dsm_fatal("mprotect of the globals' page %zu: %s%s", page, strerror(errno),
				  map_hint(errno));
	}
}

/*
 * Protection changes held for the end of a turn (dsm_region_protect_later):
 * every change of a page's protection is a kernel mapping split and merged,
 * with a TLB shoot-down for a downgrade, a few microseconds each here, and a
 * turn of the communication thread often changes a run of neighbours (the
 * read-ahead's pages arriving, or served, together). A change that extends
 * the last held run joins it; each run is applied in the order it was held,
 * so a page changed twice ends as it was last set. Applying early is always
 * safe (the state already says so); what must wait for the application is a
 * message, which comm.c holds while a change is held (dsm_send).
 */
#define HELD_RUNS 64

static struct {
	size_t first, count;
	int prot;
} held[HELD_RUNS];
static int nheld; /* under the communication thread's lock, as the protocol's state */

void dsm_region_protect_later(size_t page, int prot)
{
	if (nheld && held[nheld - 1].prot == prot) {
		if (held[nheld - 1].first + held[nheld - 1].count == page) {
			held[nheld - 1].count++;
			return;
		}
		if (held[nheld - 1].first == page + 1) {
			held[nheld - 1].first = page;
			held[nheld - 1].count++;
			return;
		}
	}
	if (nheld == HELD_RUNS)
		dsm_region_apply();
	held[nheld].first = page;
	held[nheld].count = 1;
	held[nheld].prot = prot;
	nheld++;
}

int dsm_region_held(void)
{
	return nheld != 0;
}

void dsm_region_apply(void)
{
	if (!nheld) /* other protocols' threads call this too (avr's, under its own lock) */
		return;
	for (int i = 0; i < nheld; i++)
		protect_now(held[i].first, held[i].count, held[i].prot);
	nheld = 0;
}

/* At once, after what was held (their order is the pages' order of change). */
void dsm_region_protect(size_t page, size_t count, int prot)
{
	dsm_region_apply();
	protect_now(page, count, prot);
}
