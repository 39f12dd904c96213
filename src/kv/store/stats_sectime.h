/*
 * locus-kv: how long each kind of critical section takes its callers
 * (--section-stats, read with "stats sync").
 *
 * A run is timed from the moment a thread asks for a section to the moment
 * the section's result is back: waiting for the lock, the combiner or the
 * delegation server, plus the section itself. That is the cost a section
 * puts on the request that needs it, and it is defined the same way for
 * every mechanism (a lock's hold time has no meaning under delegation, whose
 * server runs sections back to back). mutrace, which seed 003 used on
 * memcached, reports lock hold times and contended acquisitions instead;
 * docs/kv.md says how the two compare.
 *
 * Counters are kept in 64 cache-line shards picked by a per-thread index, so
 * timing does not add a shared counter to every section; a read sums the
 * shards and may miss runs that finish while it reads.
 */
#ifndef LOCUS_KV_STATS_SECTIME_H
#define LOCUS_KV_STATS_SECTIME_H

#include <stdint.h>

#include "kv/store/store.h"

struct kv_sectime_total {
	uint64_t runs;	 /* sections run */
	uint64_t ns;	 /* their callers' time in them, waiting included */
	uint64_t max_ns; /* the longest single run */
};

typedef struct kv_sectime kv_sectime;

/* NULL if out of memory. */
kv_sectime *kv_sectime_new(void);
void kv_sectime_free(kv_sectime *t);
/* One run of section s that took ns nanoseconds. Any thread. */
void kv_sectime_add(kv_sectime *t, enum kv_section s, uint64_t ns);
/* The totals so far, one per section. */
void kv_sectime_read(const kv_sectime *t, struct kv_sectime_total out[KV_SECTIONS]);

#endif
