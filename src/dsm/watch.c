/*
 * The deadlock watchdog: a run where every node waits for something no node
 * will ever do (a lock held into a barrier or into finalize, a barrier one
 * thread never reaches, a lock taken twice by one thread) ends with a
 * message that says what each node waits for and holds, instead of hanging.
 *
 * Node 0 looks once its own application threads have all waited for
 * WATCH_AFTER_NS: it sends PROBE to every node, and each answers STATUS with
 * whether all of its counted application threads are blocked in the runtime
 * (dsm_node_stalled), whether it has messages not yet delivered, how many
 * requests and messages it has handled so far (dsm_progress), and what it
 * waits for (dsm_sync_describe). Rounds repeat every WATCH_EVERY_NS while
 * node 0 waits. When every node is stalled with nothing undelivered in
 * QUIET_ROUNDS + 1 answers in a row and no node's progress has moved between
 * them, nothing can move any more: a message in flight at one answer has
 * arrived by the next (a round trip lies between them), so it would have
 * moved a count. Node 0 then stops the run (dsm_fatal tells every node).
 *
 * What the runtime cannot see keeps it quiet: a node with a thread that is
 * not blocked in the runtime is not stalled, and a lock held by a thread
 * outside the counted ones (dsm_sync_describe) may be about to be released.
 * A fork-style run (spawn.c) is not watched: its program may run threads of
 * its own that the runtime does not count, and a node whose spawned threads
 * all returned waits with none running.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define WATCH_AFTER_NS ((uint64_t)NS_PER_S)
#define WATCH_EVERY_NS ((uint64_t)NS_PER_S)
#define QUIET_ROUNDS   2
#define TEXT_MAX       240

struct status {
	uint64_t round, progress;
	uint32_t stalled, sure, pending, pad;
	char text[TEXT_MAX];
};

static struct {
	uint64_t stalled_since, round, next_round;
	int replies, quiet, have_prev;
	uint64_t prev[DSM_MAX_NODES];
	struct status cur[DSM_MAX_NODES];
} w;

static void own_status(struct status *s, uint64_t round)
{
	memset(s, 0, sizeof(*s));
	s->round = round;
	s->progress = dsm_progress;
	s->stalled = (uint32_t)(dsm_node_stalled() && !dsm_ship_busy());
	s->pending = (uint32_t)dsm_comm_pending();
	s->sure = (uint32_t)dsm_sync_describe(s->text, sizeof(s->text));
}

static void report(uint64_t now)
{
	char msg[1024];
	size_t at = (size_t)snprintf(msg, sizeof(msg),
				     "deadlock: every node waits and nothing has moved for %.1f s:",
				     ns_to_s(now - w.stalled_since));
	for (int n = 0; n < dsm.nodes && at < sizeof(msg); n++)
		at += (size_t)snprintf(msg + at, sizeof(msg) - at, "\n  node %d: %s", n,
				       w.cur[n].text);
	if (at < sizeof(msg))
		snprintf(msg + at, sizeof(msg) - at,
			 "\n  (a lock held into a barrier or finalize, a barrier one thread never "
			 "reaches, a lock one thread takes twice, or nodes waiting at objects of "
			 "their own, such as a barrier object each allocated with "
			 "locus_dsm_malloc, ends this way)");
	dsm_fatal("%s", msg);
}

/* Node 0: every answer of this round is in. */
static void round_done(uint64_t now)
{
	int all = 1, same = w.have_prev;
	for (int n = 0; n < dsm.nodes; n++) {
		const struct status *s = &w.cur[n];
		all &= s->stalled && s->sure && !s->pending;
		same &= s->progress == w.prev[n];
		w.prev[n] = s->progress;
	}
	if (all && same) {
		w.quiet++;
	} else {
		w.quiet = 0;
	}
	w.have_prev = all;
	w.replies = 0;
	w.next_round = now + WATCH_EVERY_NS;
	if (w.quiet >= QUIET_ROUNDS)
		report(now);
}

void dsm_watch_tick(uint64_t now)
{
	if (dsm.node != 0 || dsm_fork_mode)
		return;
	if (!dsm_node_stalled()) {
		w.stalled_since = 0;
		w.quiet = w.have_prev = 0;
		return;
	}
	if (!w.stalled_since)
		w.stalled_since = now;
	if (w.replies || now - w.stalled_since < WATCH_AFTER_NS || now < w.next_round)
		return; /* a round is out, or it is too early */
	w.round++;
	own_status(&w.cur[0], w.round);
	w.replies = 1;
	for (int n = 1; n < dsm.nodes; n++) {
		struct dsm_hdr h = {.kind = DSM_MSG_PROBE, .a = w.round};
		dsm_send(n, &h, NULL, 0);
	}
	if (w.replies == dsm.nodes)
		round_done(now);
}

void dsm_watch_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	if (h->kind == DSM_MSG_PROBE) {
		struct status s;
		own_status(&s, h->a);
		struct dsm_hdr r = {.kind = DSM_MSG_STATUS, .a = h->a};
		dsm_send(h->src, &r, &s, sizeof(s));
		return;
	}
	if (dsm.node != 0 || len != sizeof(struct status) || h->src >= dsm.nodes)
		dsm_fatal("stray watchdog status from node %d", h->src);
	if (h->a != w.round || !w.replies)
		return; /* an answer to a round given up */
	memcpy(&w.cur[h->src], payload, sizeof(struct status));
	w.cur[h->src].text[TEXT_MAX - 1] = '\0';
	if (++w.replies == dsm.nodes)
		round_done(mono_ns());
}
