/*
 * The shared region: one memory object mapped twice. The application view sits
 * at the same address on every node and carries the protocol's protections;
 * the alias view is always read-write, so the runtime can install and copy
 * pages while the application cannot touch them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

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
	close(fd);
	if (alias == MAP_FAILED) {
		fprintf(stderr, "locus-dsm: node %d: alias mapping: %s\n", dsm.node,
			strerror(errno));
		munmap(app, dsm.size);
		return -1;
	}
	dsm.app = app;
	dsm.alias = alias;
	return 0;
}

void dsm_region_unmap(void)
{
	if (dsm.app)
		munmap(dsm.app, dsm.size);
	if (dsm.alias)
		munmap(dsm.alias, dsm.size);
	dsm.app = dsm.alias = NULL;
}

/* Every page with its own protection costs a kernel mapping; the default
   limit (vm.max_map_count) is 65530, which a scattered access pattern over a
   large region can reach. */
void dsm_region_protect(size_t page, size_t count, int prot)
{
	if (mprotect(dsm.app + page * dsm.page_size, count * dsm.page_size, prot) != 0)
		dsm_fatal("mprotect of page %zu: %s%s", page, strerror(errno),
			  errno == ENOMEM ? " (too many mappings: raise vm.max_map_count)" : "");
}
