/* locus-kv's server clock and flush marks (clock.h). */
#include "kv/store/clock.h"

#define REALTIME_MAXDELTA (60 * 60 * 24 * 30) /* larger exptimes are Unix times */

static uint32_t mono_secs(const struct kv_clock *k)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint32_t)(t.tv_sec - k->mono0.tv_sec);
}

void kv_clock_init(struct kv_clock *k)
{
	clock_gettime(CLOCK_MONOTONIC, &k->mono0);
	/* As memcached: server time starts at 2, so that time 1 is always in the past. */
	k->started = (uint64_t)time(NULL) - 2;
	st_relaxed(&k->next_cas, 1);
	kv_clock_update(k);
}

void kv_clock_update(struct kv_clock *k)
{
	int64_t t = (int64_t)mono_secs(k) + 2 + ld_relaxed(&k->offset);
	st_relaxed(&k->now, (uint32_t)t);
}

uint32_t kv_clock_exptime(const struct kv_clock *k, int64_t exptime)
{
	if (exptime == 0)
		return 0;
	if (exptime < 0)
		return 1;
	uint32_t now = kv_clock_now(k);
	if (exptime > REALTIME_MAXDELTA) {
		if (exptime <= (int64_t)k->started)
			return 1;
		int64_t rel = exptime - (int64_t)k->started;
		return rel > UINT32_MAX ? UINT32_MAX : (uint32_t)rel;
	}
	uint64_t t = (uint64_t)now + (uint64_t)exptime;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/*
 * memcached's marks (proto_text.c): a flush "at" server second t makes dead
 * every item last accessed at or before t - 1 with cas values, at or before t
 * without (-C). With cas values memcached also cuts exactly at the cas counter
 * when the flush is immediate, so an item stored right after it, in the same
 * second, is kept; without them it cannot tell, and that item is flushed too
 * (its t/flush-all.t counts on it). locus-kv keeps its cas counter under -C,
 * and still cuts there as well, so that a later delayed flush, which moves
 * oldest_live on, does not bring back what an immediate one flushed.
 */
void kv_clock_flush(struct kv_clock *k, int64_t delay, int use_cas)
{
	uint32_t now = kv_clock_now(k);
	if (delay > 0) {
		uint32_t t = kv_clock_exptime(k, delay);
		st_relaxed(&k->oldest_live, use_cas ? (t > 1 ? t - 1 : 1) : t);
		return;
	}
	/* Everything stored so far has a smaller cas than the next one. */
	uint64_t c = ld_relaxed(&k->next_cas);
	uint64_t cur = ld_relaxed(&k->oldest_cas);
	while (cur < c && !cas_seqcst_weak(&k->oldest_cas, &cur, c))
		;
	st_relaxed(&k->oldest_live, use_cas ? 0 : now);
}

void kv_clock_restore(struct kv_clock *k, uint64_t started, uint32_t now, uint64_t next_cas,
		      uint64_t oldest_cas, uint32_t oldest_live)
{
	k->started = started;
	st_relaxed(&k->offset, (int64_t)now - ((int64_t)mono_secs(k) + 2));
	st_relaxed(&k->next_cas, next_cas);
	st_relaxed(&k->oldest_cas, oldest_cas);
	st_relaxed(&k->oldest_live, oldest_live);
	kv_clock_update(k);
}
