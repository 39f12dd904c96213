/*
 * locus-kv's per-prefix statistics ("stats detail", memcached's
 * stats_prefix.c): for every key prefix (the key up to the first
 * delimiter, -D, ':' by default), how many gets, hits, sets and deletes.
 * Counted only while "stats detail on" (or -D) and only for keys that hold
 * the delimiter. The table is a critical section of the stats kind: it runs
 * on its own executor with the stats section's mechanism (--sync stats=).
 */
#ifndef LOCUS_KV_STATS_PREFIX_H
#define LOCUS_KV_STATS_PREFIX_H

#include <stddef.h>
#include <stdint.h>

#include "kv/store/store.h"

struct kv_prefixes;

/* NULL if out of memory. */
struct kv_prefixes *kv_prefixes_new(void);
void kv_prefixes_delete(struct kv_prefixes *p);

#endif
