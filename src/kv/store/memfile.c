/* locus-kv's memory file (memfile.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kv/store/memfile.h"

static int fail(struct kv_memfile *m, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s %s: %s", what, m->path, strerror(errno));
	kv_memfile_close(m);
	return -1;
}

int kv_memfile_open(struct kv_memfile *m, const char *path, size_t len, void *hint, char *err,
		    size_t errlen)
{
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (!(m->path = strdup(path))) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, S_IRWXU);
	if (m->fd < 0)
		return fail(m, err, errlen, "failed to open the memory file");
	if (flock(m->fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			errno = EBUSY; /* another server has it */
		return fail(m, err, errlen, "cannot lock the memory file");
	}
	if (ftruncate(m->fd, (off_t)len) != 0)
		return fail(m, err, errlen, "cannot size the memory file");
	int e = posix_fallocate(m->fd, 0, (off_t)len);
	if (e != 0 && e != EOPNOTSUPP && e != EINVAL) {
		errno = e;
		return fail(m, err, errlen, "cannot reserve room for the memory file");
	}
	void *p = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (p == MAP_FAILED)
		return fail(m, err, errlen, "failed to map the memory file");
	m->base = p;
	m->len = len;
	return 0;
}

int kv_memfile_sync(struct kv_memfile *m)
{
	return m->base ? msync(m->base, m->len, MS_SYNC) : 0;
}

void kv_memfile_close(struct kv_memfile *m)
{
	if (!m->path)
		return; /* never opened (a zeroed struct's fd 0 is not its own) */
	if (m->base)
		munmap(m->base, m->len);
	if (m->fd >= 0)
		close(m->fd); /* and the lock goes with it */
	free(m->path);
	memset(m, 0, sizeof(*m));
	m->fd = -1;
}
