/*
 * locus-kv: running the meta commands (mg ms md ma mn me) against the store
 * and writing their replies, as memcached 1.6.18 words them (kv/protocol/meta.h has
 * the protocol).
 */
#ifndef LOCUS_KV_META_EXEC_H
#define LOCUS_KV_META_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "kv/store/store.h"

/* An ms command waiting for its data block: a copy of its line. */
struct kv_meta_set {
	char *line;
	size_t len;
};
void kv_meta_set_clear(struct kv_meta_set *ms);

struct kv_meta_outcome {
	uint64_t data_bytes_to_read; /* ms: read this many bytes (data + "\r\n") */
	struct kv_item *item;	     /* ms: into this item; NULL: drop them (reply already sent) */
};

/* Free what the calling thread kept for meta replies (at a worker's exit). */
void kv_meta_thread_exit(void);

/* Is this line a meta command ("mg ...", "mn", ...)? */
int kv_is_meta_line(const char *line, size_t len);
/* Run one meta command line; replies are appended to out. */
void kv_meta_execute(kv_store *st, struct kv_counts *cnt, const char *line, size_t len,
		     struct kv_buf *out, struct kv_meta_set *ms, struct kv_meta_outcome *o);
/* ms: its data block arrived in it, ending in "\r\n": store it, reply, clear ms. */
void kv_meta_store(kv_store *st, struct kv_counts *cnt, struct kv_meta_set *ms, struct kv_item *it,
		   struct kv_buf *out);

#endif
