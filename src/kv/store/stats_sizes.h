/*
 * locus-kv's item size histogram ("stats sizes", memcached's
 * item_stats_sizes): how many linked items have each size, in 32-byte
 * buckets of their size as memcached counts it (kv_mc_item_size). Off by
 * default (-o track_sizes, "stats sizes_enable"); when on, the hash table
 * counts every item it links and unlinks that was stored since, which costs
 * an atomic add per link and unlink. The counters are atomics, read without
 * a section.
 */
#ifndef LOCUS_KV_STATS_SIZES_H
#define LOCUS_KV_STATS_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "kv/store/buf.h"
#include "kv/store/item.h"

struct kv_sizes {
	uint32_t *count; /* count[(size + 31) / 32], allocated when first enabled */
	size_t buckets;
	int on;		  /* atomic */
	uint64_t cas_min; /* atomic: items with a smaller cas were stored before it was enabled */
};

/* Room for items of up to item_size_max bytes; counts from now on. 0, or -1 out of memory. */
int kv_sizes_enable(struct kv_sizes *s, size_t item_size_max, uint64_t cas_now);
void kv_sizes_disable(struct kv_sizes *s);
void kv_sizes_free(struct kv_sizes *s);
/* An item linked (+1) or unlinked (-1). */
void kv_sizes_note(struct kv_sizes *s, const struct kv_item *it, int sign);
/* "STAT <bytes> <count>" for each bucket with items, then END; or sizes_status disabled. */
int kv_sizes_dump(struct kv_sizes *s, struct kv_buf *out);

#endif
