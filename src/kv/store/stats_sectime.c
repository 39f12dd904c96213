/* Per-section timing for locus-kv; see stats_sectime.h. */
#include "kv/store/stats_sectime.h"

#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"

#define SHARDS 64

struct shard {
	struct {
		uint64_t runs, ns, max_ns;
	} s[KV_SECTIONS];
} __attribute__((aligned(LOCUS_CACHELINE)));

struct kv_sectime {
	struct shard shard[SHARDS];
};

/* This thread's shard: threads are numbered in the order they first time a run. */
static unsigned my_shard(void)
{
	static unsigned next;
	static _Thread_local unsigned mine; /* index + 1; 0 = not yet numbered */
	if (!mine)
		mine = faa_relaxed(&next, 1) % SHARDS + 1;
	return mine - 1;
}

kv_sectime *kv_sectime_new(void)
{
	kv_sectime *t;
	if (posix_memalign((void **)&t, LOCUS_CACHELINE, sizeof(*t)) != 0)
		return NULL;
	memset(t, 0, sizeof(*t));
	return t;
}

void kv_sectime_free(kv_sectime *t)
{
	free(t);
}

void kv_sectime_add(kv_sectime *t, enum kv_section s, uint64_t ns)
{
	/* Shards are shared only when more than SHARDS threads time runs: atomics keep them exact.
	 */
	struct shard *sh = &t->shard[my_shard()];
	faa_relaxed(&sh->s[s].runs, 1);
	faa_relaxed(&sh->s[s].ns, ns);
	uint64_t max = ld_relaxed(&sh->s[s].max_ns);
	while (ns > max && !__atomic_compare_exchange_n(&sh->s[s].max_ns, &max, ns, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

void kv_sectime_read(const kv_sectime *t, struct kv_sectime_total out[KV_SECTIONS])
{
	memset(out, 0, sizeof(struct kv_sectime_total) * KV_SECTIONS);
	for (int i = 0; i < SHARDS; i++)
		for (int s = 0; s < KV_SECTIONS; s++) {
			out[s].runs += ld_relaxed(&t->shard[i].s[s].runs);
			out[s].ns += ld_relaxed(&t->shard[i].s[s].ns);
			uint64_t m = ld_relaxed(&t->shard[i].s[s].max_ns);
			if (m > out[s].max_ns)
				out[s].max_ns = m;
		}
}
