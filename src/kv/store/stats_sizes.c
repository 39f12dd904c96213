/* locus-kv's item size histogram (stats_sizes.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "common/atomic.h"
#include "kv/protocol/proto.h"
#include "kv/store/stats_sizes.h"

int kv_sizes_enable(struct kv_sizes *s, size_t item_size_max, uint64_t cas_now)
{
	if (!s->count) {
		size_t n = item_size_max / 32 + 2;
		uint32_t *c = calloc(n, sizeof(*c));
		if (!c)
			return -1;
		s->count = c;
		s->buckets = n;
	} else if (!ld_seqcst(&s->on)) {
		for (size_t i = 0; i < s->buckets; i++)
			st_relaxed(&s->count[i], 0);
	}
	if (!ld_seqcst(&s->on)) {
		st_seqcst(&s->cas_min, cas_now);
		st_seqcst(&s->on, 1);
	}
	return 0;
}

void kv_sizes_disable(struct kv_sizes *s)
{
	st_seqcst(&s->on, 0);
}

void kv_sizes_free(struct kv_sizes *s)
{
	free(s->count);
	s->count = NULL;
}

void kv_sizes_note(struct kv_sizes *s, const struct kv_item *it, int sign)
{
	if (!ld_relaxed(&s->on) || it->cas < ld_relaxed(&s->cas_min))
		return;
	size_t b = (size_t)((kv_mc_item_size(it->nkey, it->flags, it->nbytes) + 31) / 32);
	if (b >= s->buckets)
		return;
	if (sign > 0) {
		faa_relaxed(&s->count[b], 1);
		return;
	}
	/* Never below 0: an item stored before enabling may have had its cas renewed since. */
	uint32_t n = ld_relaxed(&s->count[b]);
	while (n && !__atomic_compare_exchange_n(&s->count[b], &n, n - 1, 1, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
		;
}

int kv_sizes_dump(struct kv_sizes *s, struct kv_buf *out)
{
	int e = 0;
	if (!ld_seqcst(&s->on))
		return kv_buf_add(out, "STAT sizes_status disabled\r\nEND\r\n", 33);
	for (size_t i = 0; i < s->buckets; i++) {
		uint32_t n = ld_relaxed(&s->count[i]);
		if (n)
			e |= kv_buf_addf(out, "STAT %zu %" PRIu32 "\r\n", i * 32, n);
	}
	e |= kv_buf_add(out, "END\r\n", 5);
	return e ? -1 : 0;
}
