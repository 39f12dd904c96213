/*
 * locus-kv's server clock, and what time has made dead: expiry and flush_all.
 *
 * Server time is whole seconds since the server started (memcached's
 * current_time), advanced once a second by the main thread and by tests
 * (debug_clock_advance). Everything here is lock-free: single words read
 * and written atomically (common/atomic.h), never inside a section's state.
 */
#ifndef LOCUS_KV_CLOCK_H
#define LOCUS_KV_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "common/atomic.h"
#include "kv/store/item.h"

struct kv_clock {
	uint32_t now;	       /* server time */
	int64_t offset;	       /* seconds added by kv_clock_advance */
	uint64_t started;      /* Unix time of server time 0 (read-only after init) */
	struct timespec mono0; /* the monotonic clock at server time 0 (read-only) */
	uint32_t oldest_live;  /* flush_all with delay: items accessed at or before are dead */
	uint64_t oldest_cas;   /* flush_all: items with a smaller cas are dead */
	/* The next cas to hand out: every store takes one, on a line of its own so that the
	   lookups reading `now` and the flush marks do not lose theirs each time. */
	_Alignas(LOCUS_CACHELINE) uint64_t next_cas;
	char pad_[LOCUS_CACHELINE - sizeof(uint64_t)];
};

void kv_clock_init(struct kv_clock *k);
/* Re-read the monotonic clock. */
void kv_clock_update(struct kv_clock *k);
/* memcached's exptime rules: 0 never; up to 30 days relative; larger absolute Unix time;
   negative in the past. The result is server time (1 = already over). */
uint32_t kv_clock_exptime(const struct kv_clock *k, int64_t exptime);
/* flush_all [delay]; use_cas 0 under -C, where the mark is by the second. */
void kv_clock_flush(struct kv_clock *k, int64_t delay, int use_cas);
/* A restart (restart.c): server time 0 was at Unix time started, it is now `now`, and the
   cas and flush marks are where the stopped server left them. */
void kv_clock_restore(struct kv_clock *k, uint64_t started, uint32_t now, uint64_t next_cas,
		      uint64_t oldest_cas, uint32_t oldest_live);

static inline uint32_t kv_clock_now(const struct kv_clock *k)
{
	return ld_relaxed(&k->now);
}

static inline uint64_t kv_clock_next_cas(struct kv_clock *k)
{
	return faa_relaxed(&k->next_cas, 1);
}

/*
 * Is an item dead at `now`: flushed (*flushed = 1) or expired? It reads
 * exptime, atime and cas, which the item's hash section writes atomically
 * (item.h): inside that section the answer holds; elsewhere (the alloc
 * section's look at the LRU tail) it is a hint for the hash section to
 * confirm.
 */
static inline int kv_clock_item_dead(const struct kv_clock *k, const struct kv_item *it,
				     uint32_t now, int *flushed)
{
	uint32_t ol = ld_relaxed(&k->oldest_live);
	if ((ol != 0 && ol <= now && ld_relaxed(&it->atime) <= ol) ||
	    ld_relaxed(&it->cas) < ld_relaxed(&k->oldest_cas)) {
		*flushed = 1;
		return 1;
	}
	*flushed = 0;
	uint32_t exp = ld_relaxed(&it->exptime);
	return exp != 0 && exp <= now;
}

#endif
