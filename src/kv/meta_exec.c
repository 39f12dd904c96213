/* locus-kv: the meta commands. */
#include <string.h>

#include "kv/meta_exec.h"

int kv_is_meta_line(const char *line, size_t len)
{
	(void)line;
	(void)len;
	return 0;
}

void kv_meta_execute(kv_store *st, struct kv_counts *cnt, const char *line, size_t len,
		     struct kv_buf *out, struct kv_meta_set *ms, struct kv_meta_outcome *o)
{
	memset(o, 0, sizeof(*o));
}

void kv_meta_store(kv_store *st, struct kv_counts *cnt, struct kv_meta_set *ms, struct kv_item *it,
		   struct kv_buf *out)
{
	kv_item_release(st, it);
}

void kv_meta_swallowed(struct kv_buf *out, struct kv_meta_set *ms)
{
}

void kv_meta_reply_error(struct kv_buf *out, struct kv_meta_set *ms, const char *error)
{
	kv_buf_add(out, error, strlen(error));
	kv_buf_add(out, "\r\n", 2);
}
