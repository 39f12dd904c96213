/* locus-kv's growable byte buffer (buf.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/store/buf.h"

int kv_buf_reserve(struct kv_buf *b, size_t more)
{
	if (b->cap - b->len >= more)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < more) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	char *p = realloc(b->p, cap);
	if (!p)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int kv_buf_add(struct kv_buf *b, const void *data, size_t n)
{
	if (kv_buf_reserve(b, n) != 0)
		return -1;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

int kv_buf_addf(struct kv_buf *b, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	return kv_buf_add(b, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

void kv_buf_free(struct kv_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int kv_buf_add_uri(struct kv_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	if (kv_buf_reserve(b, 3 * n) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			b->p[b->len++] = (char)ch;
		} else {
			b->p[b->len++] = '%';
			b->p[b->len++] = hex[ch >> 4];
			b->p[b->len++] = hex[ch & 15];
		}
	}
	return 0;
}
