/*
 * locus-kv's growable byte buffer: connections' input and output, and the
 * replies sections append into their caller's buffer.
 */
#ifndef LOCUS_KV_BUF_H
#define LOCUS_KV_BUF_H

#include <stddef.h>

struct kv_buf {
	char *p;
	size_t len, cap;
};

/* Room for `more` bytes after len: 0, or -1 if out of memory (the buffer is unchanged). */
int kv_buf_reserve(struct kv_buf *b, size_t more);
/* 0, or -1 if out of memory (nothing added). */
int kv_buf_add(struct kv_buf *b, const void *data, size_t n);
/* printf into the buffer; a line longer than 511 bytes is cut. 0, or -1 out of memory. */
int kv_buf_addf(struct kv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kv_buf_free(struct kv_buf *b);
/* Append bytes URI-encoded as memcached's logs and dumps write keys: A-Z a-z 0-9 - . _ ~ kept,
   every other byte as %XX. 0, or -1 out of memory. */
int kv_buf_add_uri(struct kv_buf *b, const char *s, size_t n);

#endif
