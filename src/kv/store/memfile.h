/*
 * locus-kv's memory file (-e, memcached's restartable cache): item memory is a
 * file mapped shared, so what the slabs hold is still in the file after the
 * process has gone. restart.c decides whether what is there is used again;
 * this file only opens, sizes, maps, flushes and closes it.
 *
 * The file is locked (flock) while a server maps it: a second server given the
 * same file is refused rather than left to write over the first one's items.
 * Its size is the memory limit; its blocks are reserved when it is sized
 * (posix_fallocate where the file system has it), so that a full disk is said at
 * start instead of by a SIGBUS when a page is first written.
 */
#ifndef LOCUS_KV_MEMFILE_H
#define LOCUS_KV_MEMFILE_H

#include <stddef.h>

struct kv_memfile {
	char *path;
	int fd;
	char *base; /* the mapping, len bytes */
	size_t len;
};

/* Open (or create, mode 0700 as memcached's) path, lock it, size it to len and map it, at
   hint if that address is free (NULL: anywhere). 0, or -1 with a message. */
int kv_memfile_open(struct kv_memfile *m, const char *path, size_t len, void *hint, char *err,
		    size_t errlen);
/* Write what the mapping holds to the file. 0, or -1 (errno). */
int kv_memfile_sync(struct kv_memfile *m);
/* Unmap, unlock and close (a closed or never opened one: nothing). */
void kv_memfile_close(struct kv_memfile *m);

#endif
