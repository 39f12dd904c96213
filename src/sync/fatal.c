#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sync/fatal.h"

void sync_die(const char *fmt, ...)
{
	va_list ap;
	char msg[512];
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "locus: %s\n", msg);
	abort();
}

void *sync_malloc(size_t size, const char *what)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		sync_die("out of memory (%s, %zu bytes)", what, size);
	return p;
}

void *sync_calloc(size_t n, size_t size, const char *what)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		sync_die("out of memory (%s, %zu x %zu bytes)", what, n, size);
	return p;
}

void *sync_aligned_zalloc(size_t align, size_t size, const char *what)
{
	size_t rounded = (size + align - 1) & ~(align - 1);
	void *p = aligned_alloc(align, rounded ? rounded : align);
	if (!p)
		sync_die("out of memory (%s, %zu bytes)", what, size);
	memset(p, 0, rounded);
	return p;
}

void *sync_realloc(void *p, size_t size, const char *what)
{
	void *q = realloc(p, size ? size : 1);
	if (!q)
		sync_die("out of memory (%s, %zu bytes)", what, size);
	return q;
}
