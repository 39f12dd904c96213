/*
 * locus-kv: running the meta commands (mg ms md ma mn me) against the store
 * and writing their replies.
 */
#ifndef LOCUS_KV_META_EXEC_H
#define LOCUS_KV_META_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "kv/store.h"

/* What an ms command keeps while its data block arrives. */
struct kv_meta_set {
	int quiet;
	int base64;
	enum kv_store_mode mode;
	uint64_t cas;	    /* C: compare */
	int invalidate;	    /* I */
	char ret[64];	    /* the return flags to echo, already formatted (" k... O... c...") */
	size_t nret;
	int want_cas;	    /* c: the new cas is among the return flags */
	size_t cas_at;	    /* where in ret the cas goes */
	char key[KV_KEY_MAX + 1];
	size_t nkey;
	int ok;		    /* the command line was good (else swallow, reply error) */
	const char *error;
};

struct kv_meta_outcome {
	int close;		     /* close the connection */
	uint64_t data_bytes_to_read; /* ms: read this many bytes (data + "\r\n") */
	struct kv_item *item;	     /* ms: into this item (NULL: swallow them) */
};

/* Is this line a meta command ("mg ...", "mn", ...)? */
int kv_is_meta_line(const char *line, size_t len);
/* Run one meta command line; replies go to out. */
void kv_meta_execute(kv_store *st, struct kv_counts *cnt, const char *line, size_t len,
		     struct kv_buf *out, struct kv_meta_set *ms, struct kv_meta_outcome *o);
/* ms: the data block arrived in it (ends in "\r\n"): store it and reply. */
void kv_meta_store(kv_store *st, struct kv_counts *cnt, struct kv_meta_set *ms, struct kv_item *it,
		   struct kv_buf *out);
/* ms: its data was dropped (too large, no memory, bad line): reply. */
void kv_meta_swallowed(struct kv_buf *out, struct kv_meta_set *ms);
void kv_meta_reply_error(struct kv_buf *out, struct kv_meta_set *ms, const char *error);

#endif
