/*
 * Locks, barriers and the goodbye at finalize, on the communication thread
 * (or, for a lock request, on the asking thread standing in for it while it
 * does not work: comm.c, stand_in; the state is the same thread's either way).
 *
 * Lock id is managed by node id % nodes, which keeps a FIFO of waiting nodes
 * (node, token); the token is the waiting request's address on its node,
 * echoed back in the grant. Managers see nodes, not threads: each node keeps
 * its own side of every lock it uses (the `local` fields), with these cases:
 *   - a thread asks and the node neither holds nor awaits the lock: the
 *     node asks the manager for it, on that thread's behalf;
 *   - a thread asks while the node holds or awaits it: the thread queues on
 *     the node and nothing is sent (combining, seed 001 §4.1);
 *   - a thread releases and another thread of the node waits: the lock
 *     passes to it without messages, at most cfg.lock_handoff times in a
 *     row; after that, or with no local waiter, it goes back to the manager,
 *     and if threads still wait the node asks again for the first of them,
 *     behind every node that asked meanwhile.
 * A grant is "remote" for the statistics when a message brought it.
 *
 * Keeping (LOCUS_DSM_LOCK_CACHE, on by default): a release with no local
 * waiter leaves the lock on its node (LOCAL_CACHED), where the manager still
 * counts it as held; the node's next acquire takes it back without a
 * message, as a grant from the manager to the last holder would be (no
 * payload). When another node asks, the manager sends the holder a recall
 * (and, once it has handed the lock on while others still wait, the new
 * holder too): a node keeping the lock gives it back at once; one holding or
 * awaiting it gives it back at its next release instead of keeping it. A
 * trylock that finds the lock held is refused as before and recalls it, so a
 * later try finds it free. Recalls travel on their own, so one may arrive
 * after the release it asked for: the node then merely gives the lock back
 * once more than it needed to. A node keeps at most cfg.lock_keep locks
 * (LOCUS_DSM_LOCK_KEEP, 1024; it was 64, and Splash-3's barnes, which
 * hashes its cells onto 2,048 locks, gave a third of its locks back before
 * it took them again; more than 1024 made its water-nsquared, whose nodes
 * take every molecule's lock in turn, slower: a lock kept at a node that is
 * not its manager costs the manager a recall when it asks, where one given
 * back would have been free there):
 * keeping one more gives the longest kept back, so a program that uses many
 * distinct locks once each holds no more records than that (and its managers
 * one per lock kept elsewhere).
 *
 * Barriers gather the node's threads first: the last of the b threads the
 * request names (its team) makes the node's one arrival. They count at node
 * 0 and carry a value that every node must agree on (alloc uses it to check
 * sizes). Barrier epochs alternate between two slots: no node can enter
 * epoch e+2 before every node has left e, so an early arrival for e+1 never
 * mixes with e.
 *
 * Consistency protocols see each node-level acquire and barrier through
 * their hooks before the operation completes locally (a release needs none:
 * lrc ends its interval when a lock leaves the node, in lock_pass; hand-offs
 * between threads of a node are not consistency points between nodes); sc
 * needs none. A protocol with a lock_pass hook (lrc) carries data with its
 * locks, from the node that last held a lock to the next: the request takes
 * the asker's payload (lock_ask) to the manager, and the manager, instead of
 * granting, sends LOCK_PASS with it to the last holder (once released), who
 * grants with the payload lock_pass makes. The manager remembers the last
 * holder; an asker that was itself the last holder, or the first ever, is
 * granted directly. A barrier carries each node's barrier_enter payload to
 * node 0 and barrier_leave_for(n)'s back to node n; the protocol may hold
 * the barrier's end (barrier_leave returns 0) until it calls
 * dsm_sync_barrier_done.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct waiter {
	struct waiter *next;
	uint64_t token;
	uint16_t node;
	size_t len; /* the asker's lock_ask payload, after the struct */
};

enum { LOCAL_FREE, LOCAL_ASKED, LOCAL_HELD, LOCAL_CACHED };

struct lockst {
	struct lockst *next;
	uint32_t id;
	/* Manager side (id % nodes == this node). */
	int held;
	int last;	  /* the node last granted the lock, -1 for none */
	int recalled;	  /* its holder was asked to give it back (keeping) */
	uint64_t rel_bar; /* barriers its last releaser had entered when it released */
	struct waiter *head, *tail;
	/* This node's side. */
	int local;     /* LOCAL_* */
	int uncounted; /* held by a thread outside the counted ones */
	int by_server; /* held or asked for by the server of shipped calls (finalize lets it be) */
	uint32_t handoffs;		   /* consecutive local hand-offs */
	int recall;			   /* give it back at the next release: asked for */
	uint64_t kept_bar;		   /* keeping: barriers entered at its last release */
	uint64_t keep_seq;		   /* keeping: its last keep's entry in the ring */
	struct dsm_req *lw_head, *lw_tail; /* threads waiting on this node (wnext) */
};

/*
 * The lock records: a chained hash table that grows and shrinks with the
 * number of records, so that a lookup stays short whatever ids a program
 * uses. A record exists while either side of its lock is in use, and under
 * a passing protocol (lrc) while the manager must remember the last holder;
 * lock_tidy frees it after that, so released, uncontended locks cost nothing.
 */
#define LOCK_BUCKETS_MIN 64
static struct lockst **locks;
static size_t lock_buckets, lock_count;

/* Keeping: the ids of the locks kept here, oldest first (a ring of
   cfg.lock_keep entries, made at the first keep; an entry whose lock is no
   longer kept is skipped when it comes up). */
struct kept {
	uint32_t id;
	uint64_t seq; /* the keep it notes: a later keep of the lock makes it stale */
};
static struct kept *kept_ring;
static unsigned kept_head, kept_len;
static uint64_t kept_seq;

static size_t lock_bucket(uint32_t id, size_t buckets)
{
	return (size_t)((id * 2654435761u) >> 7) & (buckets - 1);
}

static void lock_rehash(size_t buckets)
{
	struct lockst **nb = calloc(buckets, sizeof(*nb));
	if (!nb)
		dsm_fatal("out of memory for %zu lock buckets", buckets);
	for (size_t b = 0; b < lock_buckets; b++)
		for (struct lockst *l = locks[b], *n; l; l = n) {
			n = l->next;
			size_t k = lock_bucket(l->id, buckets);
			l->next = nb[k];
			nb[k] = l;
		}
	free(locks);
	locks = nb;
	lock_buckets = buckets;
}

/* Lock id's record, or NULL if it has none. */
static struct lockst *lock_lookup(uint32_t id)
{
	if (!locks)
		return NULL;
	for (struct lockst *l = locks[lock_bucket(id, lock_buckets)]; l; l = l->next)
		if (l->id == id)
			return l;
	return NULL;
}

/* Lock id's record, made if it has none. */
static struct lockst *lock_find(uint32_t id)
{
	struct lockst *found = lock_lookup(id);
	if (found)
		return found;
	if (!locks)
		lock_rehash(LOCK_BUCKETS_MIN);
	struct lockst **b = &locks[lock_bucket(id, lock_buckets)];
	struct lockst *l = calloc(1, sizeof(*l));
	if (!l)
		dsm_fatal("out of memory for lock %u", id);
	l->id = id;
	l->last = -1;
	l->next = *b;
	*b = l;
	st_relaxed(&dsm.lock_records, ++lock_count);
	if (lock_count > lock_buckets)
		lock_rehash(lock_buckets * 2);
	return l;
}

static int lock_idle(const struct lockst *l)
{
	return !l->held && !l->head && l->local == LOCAL_FREE && !l->lw_head;
}

/* Free l if nothing about it needs remembering (keep: its manager must name
   the last holder to the next asker, under a passing protocol). */
static void lock_tidy(struct lockst *l, int keep)
{
	if (!lock_idle(l) || keep)
		return;
	struct lockst **pp = &locks[lock_bucket(l->id, lock_buckets)];
	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
	free(l);
	st_relaxed(&dsm.lock_records, --lock_count);
}

/* After freeing records (never while walking the table). */
static void lock_shrink(void)
{
	if (lock_buckets > LOCK_BUCKETS_MIN && lock_count < lock_buckets / 8)
		lock_rehash(lock_buckets / 2);
}

static struct dsm_req *bar_reqs; /* this node's threads in the barrier (wnext) */
static uint64_t bar_local;	 /* how many */
static uint64_t bar_epoch;	 /* barriers this node has entered */
static int arrivals[2];
static uint64_t bar_value[2];
static int bar_mismatch[2];
static uint8_t bar_kind[2][DSM_MAX_NODES]; /* node 0: the call each node entered */

static int bar_ok; /* the barrier being left: every node agreed */

static int bye_said, byes_heard;
static int in_message; /* a message is being handled: what it completes is remote */

static void send_to(int dst, uint16_t kind, uint64_t a, uint64_t b, const void *payload, size_t len)
{
	struct dsm_hdr h = {.kind = kind, .a = a, .b = b};
	dsm_send(dst, &h, payload, len);
}

static int passing(void)
{
	return dsm.proto->lock_pass != NULL;
}

/* Whether the manager must still remember l's last holder: under a passing
   protocol, until every node is known to have its notices. */
static int lock_keep(const struct lockst *l)
{
	return passing() && l->last >= 0;
}

/*
 * Under lrc a barrier carries every interval its nodes ended before they
 * entered it. When this node leaves barrier e, a free lock whose last
 * release came before its releaser entered barrier e-1 has nothing to pass
 * that an asker lacks: every node has left e-1 (all have entered e), so any
 * later request was sent after its node took in e-1's notices. Forget it.
 */
static void lock_forget_released(uint64_t epoch)
{
	for (size_t b = 0; b < lock_buckets; b++)
		for (struct lockst *l = locks[b], *n; l; l = n) {
			n = l->next;
			if (lock_idle(l) && epoch >= 2 && l->rel_bar < epoch - 1)
				lock_tidy(l, 0);
		}
	lock_shrink();
}

static void lock_granted(uint32_t id, uint64_t token, const void *payload, size_t len)
{
	struct lockst *l = lock_find(id);
	if (l->local != LOCAL_ASKED)
		dsm_fatal("lock %u granted to node %d, which did not ask for it", id, dsm.node);
	struct dsm_req *r = (struct dsm_req *)(uintptr_t)token;
	l->local = LOCAL_HELD;
	l->uncounted = r->c != 1;
	l->by_server = r->c == 2;
	l->handoffs = 0;
	if (dsm.proto->acquire)
		dsm.proto->acquire(id, payload, len);
	dsm_req_done(r, in_message ? DSM_REMOTE : DSM_LOCAL);
}

static void lock_local(struct lockst *l, struct dsm_req *r);

/* A trylock that found the lock taken: this node does not hold it after all;
   a thread that queued behind the try asks again for itself. */
static void lock_refused(uint32_t id, uint64_t token)
{
	struct lockst *l = lock_find(id);
	if (l->local != LOCAL_ASKED)
		dsm_fatal("lock %u refused to node %d, which did not ask for it", id, dsm.node);
	l->local = LOCAL_FREE;
	dsm_req_done((struct dsm_req *)(uintptr_t)token, DSM_BUSY);
	struct dsm_req *next = l->lw_head;
	if (next) {
		l->lw_head = next->wnext;
		if (!l->lw_head)
			l->lw_tail = NULL;
		lock_local(l, next);
	} else {
		lock_tidy(l, lock_keep(l));
		lock_shrink();
	}
}

static void grant(uint32_t id, int node, uint64_t token, const void *payload, size_t len)
{
	if (node == dsm.node)
		lock_granted(id, token, payload, len);
	else
		send_to(node, LOCUS_DSM_MSG_LOCK_GRANT, id, token, payload, len);
}

/* The last holder of lock id grants it to node (passing protocols). */
static void pass_here(uint32_t id, int node, uint64_t token, const void *ask, size_t len)
{
	void *out = NULL;
	size_t n = dsm.proto->lock_pass(id, ask, len, &out);
	grant(id, node, token, out, n);
	free(out);
}

/* Manager: the lock goes to node; from the last holder when there is one. */
static void hand_over(struct lockst *l, int node, uint64_t token, const void *ask, size_t len)
{
	int from = l->last;
	l->last = node;
	if (!passing() || from < 0 || from == node)
		grant(l->id, node, token, NULL, 0);
	else if (from == dsm.node)
		pass_here(l->id, node, token, ask, len);
	else {
		struct dsm_hdr h = {.kind = LOCUS_DSM_MSG_LOCK_PASS,
				    .a = l->id,
				    .b = token,
				    .c = (uint64_t)node};
		dsm_send(from, &h, ask, len);
	}
}

static void lock_recalled(uint32_t id);

/* Manager: ask lock id's holder to give it back (keeping), once per holding. */
static void recall_holder(uint32_t id)
{
	struct lockst *l = lock_find(id);
	if (!dsm.cfg.lock_cache || !l->held || l->recalled || l->last < 0) {
		lock_tidy(l, lock_keep(l));
		return;
	}
	l->recalled = 1;
	if (l->last == dsm.node)
		lock_recalled(id); /* may free l */
	else
		send_to(l->last, DSM_MSG_LOCK_RECALL, id, 0, NULL, 0);
}

/* try: a trylock, refused when the lock is held rather than queued. */
static void mgr_acquire(uint32_t id, int node, uint64_t token, const void *ask, size_t len, int try)
{
	struct lockst *l = lock_find(id);
	if (!l->held) {
		l->held = 1;
		hand_over(l, node, token, ask, len);
		return;
	}
	if (try) {
		if (node == dsm.node) {
			lock_refused(id, token);
		} else {
			struct dsm_hdr h = {
				.kind = LOCUS_DSM_MSG_LOCK_GRANT, .a = id, .b = token, .c = 1};
			dsm_send(node, &h, NULL, 0);
		}
		recall_holder(id); /* it may only be kept: a later try finds it free */
		return;
	}
	struct waiter *w = malloc(sizeof(*w) + len);
	if (!w)
		dsm_fatal("out of memory for a lock waiter");
	*w = (struct waiter){.token = token, .node = (uint16_t)node, .len = len};
	if (len)
		memcpy(w + 1, ask, len);
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
	recall_holder(id);
}

/* rel_bar: the barriers the releasing node had entered when it released. */
static void mgr_release(uint32_t id, int node, uint64_t rel_bar)
{
	struct lockst *l = lock_find(id);
	if (!l->held)
		dsm_fatal("node %d released lock %u, which is free", node, id);
	l->rel_bar = rel_bar;
	l->recalled = 0;
	struct waiter *w = l->head;
	if (!w) {
		l->held = 0;
		lock_tidy(l, lock_keep(l));
		lock_shrink();
		return;
	}
	l->head = w->next;
	if (!l->head)
		l->tail = NULL;
	hand_over(l, w->node, w->token, w + 1, w->len);
	free(w);
	if (l->head) /* others still wait: the new holder gives it back at its release */
		recall_holder(id);
}

void dsm_sync_barrier_done(void)
{
	struct dsm_req *r = bar_reqs;
	if (!r)
		dsm_fatal("barrier ended twice");
	bar_reqs = NULL;
	bar_local = 0;
	while (r) {
		struct dsm_req *n = r->wnext;
		dsm_req_done(r, bar_ok ? 0 : -1);
		r = n;
	}
}

static void bar_leave(uint64_t epoch, int ok, const void *payload, size_t len)
{
	if (!bar_reqs || epoch != bar_epoch)
		dsm_fatal("barrier %llu left while in %llu", (unsigned long long)epoch,
			  (unsigned long long)bar_epoch);
	bar_ok = ok;
	if (passing())
		lock_forget_released(epoch);
	if (!dsm.proto->barrier_leave || dsm.proto->barrier_leave(payload, len))
		dsm_sync_barrier_done();
}

static const char *bar_kind_name(uint64_t kind)
{
	static const char *const names[] = {
		[DSM_BAR_BARRIER] = "locus_dsm_barrier",
		[DSM_BAR_ALLOC] = "locus_dsm_alloc",
		[DSM_BAR_RESET] = "locus_dsm_stats_reset",
		[DSM_BAR_FINALIZE] = "locus_dsm_finalize",
		[DSM_BAR_FINALIZE_STATS] = "locus_dsm_finalize",
	};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/* Node 0: every node must have entered the same call; say which did not. */
static void bar_check_kinds(uint64_t epoch, const uint8_t *kind)
{
	int odd = -1;
	for (int n = 1; n < dsm.nodes && odd < 0; n++)
		if (kind[n] != kind[0])
			odd = n;
	if (odd < 0)
		return;
	char list[400];
	size_t at = 0;
	for (int n = 0; n < dsm.nodes && at < sizeof(list); n++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%snode %d in %s",
				       n ? ", " : "", n, bar_kind_name(kind[n]));
	dsm_fatal("collective call %llu does not match across nodes: %s. Every node makes "
		  "the same collective calls (locus_dsm_barrier, locus_dsm_alloc, "
		  "locus_dsm_stats_reset, locus_dsm_finalize) in the same order",
		  (unsigned long long)epoch, list);
}

static void bar_arrive(uint64_t epoch, uint64_t value, uint64_t kind, int node, const void *payload,
		       size_t len)
{
	if (dsm.proto->barrier_arrive)
		dsm.proto->barrier_arrive(node, payload, len);
	int s = (int)(epoch & 1);
	if (arrivals[s] == 0) {
		bar_value[s] = value;
		bar_mismatch[s] = 0;
	} else if (bar_value[s] != value) {
		bar_mismatch[s] = 1;
	}
	bar_kind[s][node] = (uint8_t)kind;
	if (++arrivals[s] < dsm.nodes)
		return;
	arrivals[s] = 0;
	bar_check_kinds(epoch, bar_kind[s]);
	int ok = !bar_mismatch[s];
	void *mine = NULL;
	size_t mine_len = 0;
	if (dsm.proto->barrier_leave_for)
		mine_len = dsm.proto->barrier_leave_for(0, &mine);
	for (int n = 1; n < dsm.nodes; n++) {
		void *out = NULL;
		size_t olen = 0;
		if (dsm.proto->barrier_leave_for)
			olen = dsm.proto->barrier_leave_for(n, &out);
		send_to(n, LOCUS_DSM_MSG_BAR_LEAVE, epoch, (uint64_t)ok, out, olen);
		free(out);
	}
	bar_leave(epoch, ok, mine, mine_len);
	free(mine);
}

/* Up to max ids of the locks this node holds (held) or waits for, as text. */
static size_t lock_list(char *buf, size_t cap, int held, int max, int skip_server)
{
	size_t at = 0;
	int n = 0;
	buf[0] = '\0';
	for (size_t b = 0; b < lock_buckets; b++)
		for (struct lockst *l = locks[b]; l; l = l->next) {
			int match = held ? l->local == LOCAL_HELD
					 : l->local == LOCAL_ASKED ||
						    (l->local == LOCAL_HELD && l->lw_head);
			if (skip_server && l->by_server && !l->lw_head)
				match = 0; /* the server serves other nodes' calls meanwhile */
			if (!match)
				continue;
			if (n < max && at < cap)
				at += (size_t)snprintf(buf + at, cap - at, "%s%u", n ? ", " : "",
						       l->id);
			n++;
		}
	if (n > max && at < cap)
		at += (size_t)snprintf(buf + at, cap - at, " and %d more", n - max);
	return (size_t)n;
}

/* Finalize with a lock held: whoever waits for it would wait forever. */
static void finalize_check_locks(void)
{
	char ids[160];
	if (lock_list(ids, sizeof(ids), 1, 8, 1))
		dsm_fatal("locus_dsm_finalize while this node holds lock %s: release every lock "
			  "before locus_dsm_finalize (a node waiting for it would wait forever)",
			  ids);
	if (lock_list(ids, sizeof(ids), 0, 8, 1))
		dsm_fatal("locus_dsm_finalize while threads of this node wait for lock %s: "
			  "every thread is done with the runtime before locus_dsm_finalize",
			  ids);
}

int dsm_sync_describe(char *buf, size_t cap)
{
	size_t at = 0;
	int sure = 1;
	if (bar_reqs)
		at += (size_t)snprintf(
			buf + at, cap - at, "in %s (collective call %llu), %llu of %llu threads in",
			bar_kind_name(bar_reqs->c),
			(unsigned long long)(bar_epoch + (bar_local >= bar_reqs->b ? 0 : 1)),
			(unsigned long long)bar_local, (unsigned long long)bar_reqs->b);
	char ids[160];
	if (lock_list(ids, sizeof(ids), 1, 6, 0) && at < cap)
		at += (size_t)snprintf(buf + at, cap - at, "%sholds lock %s", at ? "; " : "", ids);
	if (lock_list(ids, sizeof(ids), 0, 6, 0) && at < cap)
		at += (size_t)snprintf(buf + at, cap - at, "%swaits for lock %s", at ? "; " : "",
				       ids);
	at = dsm_objects_describe(buf, cap, at);
	for (size_t b = 0; b < lock_buckets; b++)
		for (struct lockst *l = locks[b]; l; l = l->next)
			if (l->local == LOCAL_HELD && l->uncounted)
				sure = 0; /* a thread the runtime cannot see may be running */
	if (!at)
		snprintf(buf, cap, "no barrier, lock or object");
	return sure;
}

/* A thread of this node enters the barrier; the last of its team sends. */
static void bar_enter_local(struct dsm_req *r)
{
	if (bar_reqs && bar_local >= bar_reqs->b)
		dsm_fatal("two threads of this node are in %s at once outside a team: outside "
			  "locus_dsm_parallel, one thread at a time makes the node's barrier "
			  "calls (the collective calls: the thread that called locus_dsm_init)",
			  bar_kind_name(r->c));
	if (bar_reqs && bar_reqs->b != r->b)
		dsm_fatal("barrier entered by a team of %llu threads and one of %llu at once",
			  (unsigned long long)bar_reqs->b, (unsigned long long)r->b);
	if (bar_reqs && bar_reqs->a != r->a)
		r->a = UINT64_MAX; /* threads of the node disagree: nodes will too */
	if (r->c == DSM_BAR_FINALIZE)
		finalize_check_locks();
	r->wnext = bar_reqs;
	bar_reqs = r;
	if (++bar_local < r->b)
		return;
	STAT_ADD(barriers, 1);
	void *out = NULL;
	size_t len = 0;
	if (dsm.proto->barrier_enter)
		len = dsm.proto->barrier_enter(&out);
	bar_epoch++;
	if (dsm.node == 0) {
		bar_arrive(bar_epoch, r->a, r->c, 0, out, len);
	} else {
		struct dsm_hdr h = {
			.kind = LOCUS_DSM_MSG_BAR_ENTER, .a = bar_epoch, .b = r->a, .c = r->c};
		dsm_send(0, &h, out, len);
	}
	free(out);
}

/* A thread of this node asks for lock l. */
static void lock_local(struct lockst *l, struct dsm_req *r)
{
	int try = r->kind == DSM_REQ_TRYLOCK;
	if (l->local == LOCAL_CACHED) { /* kept here since its release: no message */
		l->local = LOCAL_HELD;
		l->uncounted = r->c != 1;
		l->by_server = r->c == 2;
		l->handoffs = 0;
		/* as the manager's grant to its last holder: nothing to pass */
		if (dsm.proto->acquire)
			dsm.proto->acquire(l->id, NULL, 0);
		dsm_req_done(r, DSM_LOCAL);
		return;
	}
	if (l->local != LOCAL_FREE && try) { /* held or asked for here: taken */
		dsm_req_done(r, DSM_BUSY);
		return;
	}
	if (l->local != LOCAL_FREE) { /* held or asked for by this node: wait here */
		r->wnext = NULL;
		if (l->lw_tail)
			l->lw_tail->wnext = r;
		else
			l->lw_head = r;
		l->lw_tail = r;
		return;
	}
	l->local = LOCAL_ASKED;
	l->by_server = r->c == 2;
	void *ask = NULL;
	size_t len = 0;
	if (passing() && dsm.proto->lock_ask)
		len = dsm.proto->lock_ask(&ask);
	int mgr = (int)(l->id % (uint32_t)dsm.nodes);
	if (mgr == dsm.node) {
		mgr_acquire(l->id, dsm.node, (uint64_t)(uintptr_t)r, ask, len, try);
	} else {
		struct dsm_hdr h = {.kind = LOCUS_DSM_MSG_LOCK_ACQ,
				    .a = l->id,
				    .b = (uint64_t)(uintptr_t)r,
				    .c = (uint64_t)try};
		dsm_send(mgr, &h, ask, len);
	}
	free(ask);
}

static void give_back(struct lockst *l);

/* Lock l is kept here now: note it, giving the longest kept back if there
   are cfg.lock_keep already (entries of locks no longer kept are dropped).
   l itself is never freed meanwhile: it is kept, so not idle. */
static void keep_note(struct lockst *l)
{
	const unsigned most = dsm.cfg.lock_keep;
	if (!kept_ring && !(kept_ring = malloc(most * sizeof(*kept_ring))))
		dsm_fatal("out of memory for the ring of %u kept locks (LOCUS_DSM_LOCK_KEEP)",
			  most);
	while (kept_len == most) {
		struct kept old = kept_ring[kept_head];
		kept_head = (kept_head + 1) % most;
		kept_len--;
		struct lockst *o = lock_find(old.id);
		/* An entry of an earlier keep of a lock kept again since is
		   stale: the lock's own entry is later in the ring. */
		if (o->local == LOCAL_CACHED && o != l && o->keep_seq == old.seq)
			give_back(o);
		else
			lock_tidy(o, lock_keep(o));
	}
	l->keep_seq = ++kept_seq;
	kept_ring[(kept_head + kept_len) % most] = (struct kept){.id = l->id, .seq = l->keep_seq};
	kept_len++;
}

/* A thread of this node releases lock l: hand it on here, or give it back. */
static void unlock_local(struct lockst *l)
{
	if (l->local != LOCAL_HELD)
		dsm_fatal("lock %u released on node %d, which does not hold it", l->id, dsm.node);
	struct dsm_req *next = l->lw_head;
	if (next && l->handoffs < dsm.cfg.lock_handoff && !l->recall) {
		l->lw_head = next->wnext;
		if (!l->lw_head)
			l->lw_tail = NULL;
		l->handoffs++;
		l->uncounted = next->c != 1;
		l->by_server = next->c == 2;
		STAT_ADD(lock_handoffs, 1);
		dsm_req_done(next, DSM_LOCAL);
		return;
	}
	l->uncounted = 0;
	if (!next && dsm.cfg.lock_cache && !l->recall) { /* keep it until asked for */
		l->local = LOCAL_CACHED;
		l->kept_bar = bar_epoch;
		keep_note(l); /* may give another kept lock back */
		return;
	}
	l->local = LOCAL_FREE;
	l->recall = 0;
	if (next) { /* ask again below, for the first local waiter */
		l->lw_head = next->wnext;
		if (!l->lw_head)
			l->lw_tail = NULL;
	}
	uint32_t id = l->id;
	int mgr = (int)(id % (uint32_t)dsm.nodes);
	if (mgr == dsm.node)
		mgr_release(id, dsm.node, bar_epoch); /* may free l */
	else
		send_to(mgr, LOCUS_DSM_MSG_LOCK_REL, id, bar_epoch, NULL, 0);
	if (next)
		lock_local(lock_find(id), next);
	else if (mgr != dsm.node)
		lock_tidy(l, 0), lock_shrink();
}

/* A lock kept here goes back to its manager (a recall came). */
static void give_back(struct lockst *l)
{
	uint32_t id = l->id;
	l->local = LOCAL_FREE;
	l->recall = 0;
	int mgr = (int)(id % (uint32_t)dsm.nodes);
	if (mgr == dsm.node) {
		mgr_release(id, dsm.node, l->kept_bar); /* may free l */
	} else {
		send_to(mgr, LOCUS_DSM_MSG_LOCK_REL, id, l->kept_bar, NULL, 0);
		lock_tidy(l, 0);
		lock_shrink();
	}
}

/* The manager wants lock id back: now if kept here, else at its next release. */
static void lock_recalled(uint32_t id)
{
	struct lockst *l = lock_find(id);
	if (l->local == LOCAL_CACHED)
		give_back(l);
	else if (l->local != LOCAL_FREE)
		l->recall = 1; /* held, or asked for: a grant may be on its way */
	else
		lock_tidy(l, lock_keep(l)); /* given back already */
}

int dsm_sync_can_stand_in(const struct dsm_req *r)
{
	if (dsm.proto->thread_fault)
		return 0;
	if (r->kind == DSM_REQ_LOCK || r->kind == DSM_REQ_TRYLOCK || r->kind == DSM_REQ_BARRIER)
		return 1;
	if (r->kind != DSM_REQ_UNLOCK)
		return 0;
	/* A release of a lock not held here is a mistake the communication
	   thread reports (to every node, as only it can). */
	const struct lockst *l = lock_lookup((uint32_t)r->a);
	return l && l->local == LOCAL_HELD;
}

/* r's arrival made this node enter its barrier (r was the last of its team),
   and the barrier goes on: what ends it comes in messages from the other
   nodes (each node's entry to node 0, node 0's leave to the others). */
int dsm_sync_barrier_entered(const struct dsm_req *r)
{
	return r->kind == DSM_REQ_BARRIER && bar_reqs == r && bar_local >= r->b;
}

void dsm_sync_request(struct dsm_req *r)
{
	uint32_t id = (uint32_t)r->a;
	switch (r->kind) {
	case DSM_REQ_LOCK:
	case DSM_REQ_TRYLOCK:
		STAT_ADD(lock_acquires, 1);
		lock_local(lock_find(id), r);
		break;
	case DSM_REQ_UNLOCK:
		unlock_local(lock_find(id));
		dsm_req_done(r, DSM_LOCAL);
		break;
	case DSM_REQ_BARRIER:
		bar_enter_local(r);
		break;
	case DSM_REQ_STATS:
		if (dsm.node == 0)
			memcpy(&dsm.all_stats[0], (void *)(uintptr_t)r->a, sizeof(locus_dsm_stats));
		else
			send_to(0, LOCUS_DSM_MSG_STATS, 0, 0, (void *)(uintptr_t)r->a,
				sizeof(locus_dsm_stats));
		dsm_req_done(r, 0);
		break;
	case DSM_REQ_LEAVE:
		dsm_comm_leaving();
		for (int n = 0; n < dsm.nodes; n++)
			if (n != dsm.node)
				send_to(n, DSM_MSG_BYE, 0, 0, NULL, 0);
		bye_said = 1;
		dsm_req_done(r, 0);
		break;
	default:
		dsm_fatal("unknown request %u", r->kind);
	}
}

void dsm_sync_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	in_message = 1;
	switch (h->kind) {
	case LOCUS_DSM_MSG_LOCK_ACQ:
		mgr_acquire((uint32_t)h->a, h->src, h->b, payload, len, h->c != 0);
		break;
	case LOCUS_DSM_MSG_LOCK_GRANT:
		if (h->c) /* a trylock's answer: taken */
			lock_refused((uint32_t)h->a, h->b);
		else
			lock_granted((uint32_t)h->a, h->b, payload, len);
		break;
	case LOCUS_DSM_MSG_LOCK_PASS:
		/* (an asker that last held the lock is granted by the manager) */
		if (!passing() || h->c >= (uint64_t)dsm.nodes || h->c == (uint64_t)dsm.node)
			dsm_fatal("stray lock pass from node %d", h->src);
		pass_here((uint32_t)h->a, (int)h->c, h->b, payload, len);
		break;
	case LOCUS_DSM_MSG_LOCK_REL:
		mgr_release((uint32_t)h->a, h->src, h->b);
		break;
	case DSM_MSG_LOCK_RECALL:
		lock_recalled((uint32_t)h->a);
		break;
	case LOCUS_DSM_MSG_BAR_ENTER:
		bar_arrive(h->a, h->b, h->c, h->src, payload, len);
		break;
	case LOCUS_DSM_MSG_BAR_LEAVE:
		bar_leave(h->a, (int)h->b, payload, len);
		break;
	case LOCUS_DSM_MSG_STATS:
		if (dsm.node != 0 || len != sizeof(locus_dsm_stats))
			dsm_fatal("stray statistics from node %d", h->src);
		memcpy(&dsm.all_stats[h->src], payload, len);
		break;
	case DSM_MSG_BYE:
		byes_heard++;
		break;
	default:
		dsm_fatal("unknown message kind %u from node %d", h->kind, h->src);
	}
	in_message = 0;
}

int dsm_sync_done(void)
{
	return bye_said && byes_heard == dsm.nodes - 1;
}
