/*
 * The emulated network's outgoing link (transport delay, comm.c): a node's
 * messages leave over one link, each message's bytes after those of every
 * message sent before it, at ns_per_byte a byte (the link's rate); a message
 * arrives delay_ns after its last byte left. So a page costs a page's bytes
 * of link time however it is cut into messages, and a burst queues on the
 * link as on a real one. With no per-byte cost it is a pure delay: every
 * message arrives delay_ns after it was sent.
 */
#ifndef LOCUS_DSM_LINK_H
#define LOCUS_DSM_LINK_H

#include <stddef.h>
#include <stdint.h>

struct dsm_link {
	uint64_t free_ns; /* the link has sent every byte given to it by then */
};

/* A message of `bytes` given to the link at `now`: when it arrives. */
static inline uint64_t dsm_link_send(struct dsm_link *l, uint64_t now, size_t bytes,
				     uint64_t delay_ns, uint64_t ns_per_byte)
{
	if (l->free_ns < now)
		l->free_ns = now;
	l->free_ns += ns_per_byte * bytes;
	return l->free_ns + delay_ns;
}

#endif
