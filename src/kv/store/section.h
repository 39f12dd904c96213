/*
 * How locus-kv runs a critical section: every section is a function of its
 * section's state (what was given to locus_cs_open) and one typed request,
 * run on that section's executor with locus_cs_run, and timed per kind of
 * section when --section-stats asked for it (two clock reads; nothing
 * otherwise).
 *
 * A request travels as the executor's first argument. KV_REQ is the one
 * place where that uint64_t becomes a pointer again: each module declares a
 * struct per operation and its section function starts with
 *     struct slabs_alloc_req *rq = KV_REQ(struct slabs_alloc_req, a);
 */
#ifndef LOCUS_KV_SECTION_H
#define LOCUS_KV_SECTION_H

#include <stdint.h>

#include "common/clock.h"
#include "kv/store/stats_sectime.h"
#include "locus/cs.h"

struct kv_sec {
	locus_cs *cs;
	enum kv_section kind;
	kv_sectime *times; /* --section-stats, else NULL */
};

#define KV_REQ(type, a) ((type *)(uintptr_t)(a))

static inline uint64_t kv_sec_run(struct kv_sec *s, locus_fn fn, void *req)
{
	if (!s->times)
		return locus_cs_run(s->cs, fn, (uint64_t)(uintptr_t)req, 0, 0);
	uint64_t t0 = mono_ns();
	uint64_t r = locus_cs_run(s->cs, fn, (uint64_t)(uintptr_t)req, 0, 0);
	kv_sectime_add(s->times, s->kind, mono_ns() - t0);
	return r;
}

#endif
