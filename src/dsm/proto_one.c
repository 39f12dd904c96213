/*
 * One node: whatever LOCUS_DSM_PROTOCOL says, a run of one node has nobody
 * to keep memory consistent with, so the region is plain shared memory of
 * the process: mapped readable and writable from the start, never faulting,
 * with no twins, diffs, intervals or page states (every protocol gives these
 * same results on one node, at a cost: a fault through the communication
 * thread at every page's first touch, and under lrc a twin and a diff per
 * page and interval). Locks, barriers, shipped calls and the objects work as
 * on any number of nodes, with nothing for a protocol to carry.
 * locus_dsm_protocol() still names the protocol asked for;
 * LOCUS_DSM_ONE_NODE=protocol keeps that protocol's machinery on one node
 * (to study the protocol itself).
 */
#include <sys/mman.h>

#include "internal.h"

static int one_init(void)
{
	dsm_region_protect(0, dsm.npages, PROT_READ | PROT_WRITE);
	return 0;
}

/* Nothing in the region faults: a fault here is the kernel's refusal of the
   mapping itself, which no retry would cure. */
static void one_fault(struct dsm_req *r)
{
	dsm_fatal("a fault on page %llu of a one-node region, which is mapped readable and "
		  "writable",
		  (unsigned long long)r->a);
}

static void one_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	(void)payload, (void)len;
	dsm_fatal("a protocol message (kind %u) on one node", (unsigned)h->kind);
}

static uint64_t one_tick(uint64_t now)
{
	(void)now;
	return UINT64_MAX;
}

const struct dsm_proto dsm_proto_one = {
	.name = "one",
	.init = one_init,
	.fault = one_fault,
	.message = one_message,
	.tick = one_tick,
};
