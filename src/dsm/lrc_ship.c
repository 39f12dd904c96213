/*
 * lrc: what shipped calls carry (ship.c routes them). A synchronous call is
 * a release and an acquire for its caller, as a lock handed to the home and
 * back would be:
 *   leaving    the caller's node ends its interval and sends its vector
 *              time with every record the home may lack;
 *   arriving   the home ends its interval and takes the records in, before
 *              the calls run (their functions then see the caller's writes);
 *   answering  the home ends its interval (the calls' writes) and sends its
 *              vector time with every record the caller lacks;
 *   answered   the caller's node takes them in before any call completes.
 * A batch of atomic loads only (a barrier's generation or a semaphore's
 * count, polled) is an acquire only: neither node ends its interval for it,
 * unless one of the home's own threads did an atomic that wrote there since
 * the last answer (ship.c, dsm_ship_release_take), whose release it is.
 * Only a batch with a synchronous call in it carries this: a stream of posts
 * carries nothing and leaves both nodes' intervals open (a post is ordered
 * after the caller's writes, and its function's writes reach the caller,
 * through a synchronous call to that home, a drain, a lock or a barrier).
 * What a node may lack is bounded below by `known`: per other node, the vector
 * time it is known to have (what was sent to it in shipped calls and answers,
 * which it takes in as they arrive, in order, and what it said it had),
 * raised to what a collection left (every node has every collected record).
 * A barrier entry does not count until the barrier's exit: node 0 takes the
 * entries in only when the last node has entered (proto_lrc.c).
 *
 * An arrival at a barrier object (a program's BARRIER) is a barrier for the
 * pushed diffs (lrc_push.c), as locus_dsm_barrier is: the arriving node, its
 * interval closed, pushes its diffs to the nodes that read those pages before
 * its records leave, and so does the home when it answers an arrival (its own
 * threads' arrivals ran there, as atomics); a node that takes in the records
 * of an arrival, or of its answer, brings up to date at once the pages whose
 * every missing diff was pushed to it. Unlike locus_dsm_barrier's, which every
 * thread waits in, such a push is bounded (OBJECT_PUSH_BYTES a node).
 */
#include <string.h>

#include "lrc.h"

/* What an arrival at a barrier object pushes to each node at most: the edge
   rows of a grid go, a transpose's whole matrix does not (Splash-3's FFT
   pushed 270 MB at one arrival, which the barrier then waited for). */
#define OBJECT_PUSH_BYTES ((size_t)256 << 10)

static uint32_t *known[DSM_MAX_NODES];
static uint32_t *known_of(int node);
static void raise_to(int node, const uint32_t *vt);

const uint32_t *lrc_known_of(int node)
{
	return known_of(node);
}

static uint32_t *known_of(int node)
{
	if (!known[node]) {
		known[node] = lrc_xmalloc(lrc.nodes * sizeof(uint32_t));
		memset(known[node], 0, lrc.nodes * sizeof(uint32_t));
	}
	uint32_t *k = known[node];
	for (size_t n = 0; n < lrc.nodes; n++)
		if (k[n] < lrc.base[n])
			k[n] = lrc.base[n];
	return k;
}

void lrc_known_raise(int node, const uint32_t *vt)
{
	raise_to(node, vt);
}

static void raise_to(int node, const uint32_t *vt)
{
	uint32_t *k = known_of(node);
	for (size_t n = 0; n < lrc.nodes; n++)
		if (vt[n] > k[n])
			k[n] = vt[n];
}

/* This node's vector time, then every record the other node may lack. */
static size_t vt_and_records(int to, const uint32_t *seen, void **out)
{
	size_t head = lrc.nodes * sizeof(uint32_t);
	unsigned char *buf = lrc_xmalloc(head);
	memcpy(buf, lrc.vt, head);
	size_t n = lrc_encode_since(seen, &buf, head);
	raise_to(to, lrc.vt); /* it will have all of it */
	*out = buf;
	return n;
}

/* The other node's vector time, then records: take them in (ending this
   node's interval first, as taking notices needs, only when there are any:
   a stream of calls that bring nothing new leaves the interval open, so the
   pages their functions write stay writable). */
static const uint32_t *take_vt_and_records(int from, const void *p, size_t len)
{
	size_t head = lrc.nodes * sizeof(uint32_t);
	if (len < head)
		dsm_fatal("lrc: shipped calls from node %d without a vector time", from);
	if (len > head) {
		lrc_close_interval();
		lrc_take_records((const unsigned char *)p + head, len - head, 0);
	}
	raise_to(from, p);
	return p;
}

size_t lrc_ship_out(int home, int reads_only, int barrier, void **out)
{
	if (!reads_only) /* a load is an acquire only: this node's writes stay in its interval */
		lrc_close_interval();
	if (barrier) /* before the records go: a node that has them has fetched */
		lrc_push_send(OBJECT_PUSH_BYTES);
	uint32_t seen[DSM_MAX_NODES];
	memcpy(seen, known_of(home), lrc.nodes * sizeof(uint32_t));
	return vt_and_records(home, seen, out);
}

size_t lrc_ship_in(int from, const void *p, size_t len, int barrier, void **keep)
{
	const uint32_t *vt = take_vt_and_records(from, p, len);
	if (barrier)
		lrc_push_apply();
	/* The access it gave, now: the calls may run on the communication
	   thread only with nothing held (ship.c, run_here). */
	dsm_region_apply();
	size_t head = lrc.nodes * sizeof(uint32_t);
	*keep = lrc_xmalloc(head);
	memcpy(*keep, vt, head);
	return head;
}

size_t lrc_ship_back(int to, const void *keep, size_t len, int wrote, int barrier, void **out)
{
	if (len != lrc.nodes * sizeof(uint32_t))
		dsm_fatal("lrc: shipped calls answered without the caller's vector time");
	/* The calls' writes, and those before an atomic this node's threads did
	   here (ship.c, release_pending), end the interval. Calls that only
	   read leave it open: a node polling a word here (a barrier's
	   generation) would otherwise end this node's interval at every poll,
	   and with it twin, diff and push every page its threads are writing. */
	if (dsm_ship_release_take() || wrote)
		lrc_close_interval();
	if (barrier)
		lrc_push_send(OBJECT_PUSH_BYTES);
	uint32_t seen[DSM_MAX_NODES];
	memcpy(seen, keep, len);
	for (size_t n = 0; n < lrc.nodes; n++) /* what a collection left, every node has */
		if (seen[n] < lrc.base[n])
			seen[n] = lrc.base[n];
	return vt_and_records(to, seen, out);
}

void lrc_ship_back_in(int home, const void *p, size_t len, int barrier)
{
	take_vt_and_records(home, p, len);
	if (barrier)
		lrc_push_apply();
}
