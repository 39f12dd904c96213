/*
 * sc: sequential consistency, multiple readers / single writer,
 * write-invalidate, with a fixed distributed manager (seed 004 §2.3.1).
 *
 * Per page and node: the access the application view allows (none, read,
 * read-write), whether this node is the owner (holds the latest contents
 * and, only here, the copyset), and whether a request of ours is in flight.
 * Page p is managed by its home (home.c: as its allocation dealt it), which
 * remembers its probable owner: the last node it sent a request towards.
 *
 * A fault sends PAGE_REQ to the manager, which forwards it (PAGE_FWD) to the
 * owner and records the requester as the new owner. The owner answers with
 * PAGE (contents + copyset) and stops being the owner; on a read it keeps a
 * read-only copy, on a write it drops its copy. The requester always becomes
 * the owner. A writer then sends INV to every other holder in the copyset and
 * waits for every INV_ACK before the application may write. A write fault on a
 * read-only copy this node owns needs only that invalidation round. A write
 * request from a node in the copyset gets ownership without the contents
 * (PAGE_CURRENT): its read-only copy is the page as it is. Only a writer
 * removes a node from the copyset, after its INV was acknowledged, and only
 * the owner can start one, so a node the owner lists holds a current copy
 * that no invalidation is on its way to (a page that went to the requester
 * read-only reaches the owner's copyset only with the read copy).
 * A page of the heap or of collective allocations that nobody has
 * written since the run began travels without its contents too
 * (PAGE_PRISTINE): every node's memory holds it as it began, zeros. Only a
 * node with write access changes a page, and that node is its owner; the
 * owner knows (`written`), and a page that leaves with its contents was
 * written. Not the pages of a fork-style run's shared globals: each node
 * copied its own at start (region.c), after whatever the program did
 * before locus_dsm_start, which need not have been the same everywhere.
 *
 * Races are resolved by deferral, never by retry:
 *   - a forward reaching a node whose own request is still in flight waits
 *     until that request completes (the manager forwarded to the next owner);
 *   - delta: a page stays for at least delta after the faulting thread
 *     resumed (seed 004 §2.3.6); forwards and invalidations arriving sooner
 *     wait. Counting from the resumption, not from the arrival, guarantees
 *     the faulting access runs even when the thread was slow to be scheduled.
 *   - invalidations never wait for a request in flight: the invalidating
 *     owner cannot pass the page on before it has every acknowledgement, so
 *     holding an INV behind our own request would deadlock.
 * Messages between two nodes arrive in order (one MPI tag, checked sequence
 * numbers), which the argument above relies on.
 *
 * Faults of several threads on one page while this node's request for it is
 * in flight wait for that request and send nothing (combining, seed 001
 * §4.1); a write fault behind a read request faults again once the read
 * copy is there, and upgrades.
 *
 * Initially the manager owns each page (zero-filled) without mapping it, so
 * that neighbouring pages do not start with different protections.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "sc.h"

/* How long a page waits for a faulting thread that has not run yet. */
#define RESUME_WAIT_CAP_NS 20000000ull
#define RESUME_POLL_NS	   20000ull

struct deferred {
	struct deferred *next;
	uint16_t kind; /* PAGE_FWD or INV */
	uint16_t from; /* requester (FWD) or invalidating owner (INV) */
	uint8_t write;
};

struct sc_page *sc_pages;
const struct sc_hooks *sc_hooks;
size_t *sc_list[3], sc_count[3];
#define pages sc_pages
/* By page, for pages managed here: 1 + the probable owner, 0 for this node
   (the initial owner), so that the table starts as zeros. */
static uint8_t *mgr_owner;
static size_t *deferred_list;
static size_t deferred_count;

#define BIT(n) (1ull << (n))

/* PAGE's b: the request was a write, and the page came without its contents
   because the requester's copy is current (see the top). */
#define PAGE_WRITE   1u
#define PAGE_CURRENT 2u
/* PAGE's b: nobody has written the page since the run began (see the top). */
#define PAGE_PRISTINE 4u

/* Tables over the region's pages (dsm_table_new): nothing is set up for a
   page until it is first used (sc_page). */
int sc_init(void)
{
	pages = dsm_table_new(dsm.npages, sizeof(*pages));
	mgr_owner = dsm_table_new(dsm.npages, 1);
	deferred_list = dsm_table_new(dsm.npages, sizeof(*deferred_list));
	sc_list[ACC_READ] = dsm_table_new(dsm.npages, sizeof(size_t));
	sc_list[ACC_WRITE] = dsm_table_new(dsm.npages, sizeof(size_t));
	if (!pages || !mgr_owner || !deferred_list || !sc_list[ACC_READ] || !sc_list[ACC_WRITE])
		return -1;
	return 0;
}

void sc_page_born(size_t p)
{
	struct sc_page *pg = &sc_pages[p];
	pg->born = 1;
	if (dsm_home_of(p) == dsm.node) {
		pg->owner = 1;
		pg->copyset = BIT(dsm.node);
	}
}

const int sc_prot[3] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE};

/* The access the protocol grants p, in its state and (unless a hook keeps
   the view as it is) in the application's view; sc_list[] lists the pages
   of each access but none. */
static void set_access(size_t p, uint8_t acc)
{
	struct sc_page *pg = sc_page(p);
	uint8_t from = pg->access;
	if (from == acc)
		return;
	if (from != ACC_NONE) {
		size_t last = sc_list[from][--sc_count[from]];
		sc_list[from][pg->list_at] = last;
		pages[last].list_at = pg->list_at;
	}
	if (acc != ACC_NONE) {
		pg->list_at = sc_count[acc];
		sc_list[acc][sc_count[acc]++] = p;
	}
	pg->access = acc;
	if (acc == ACC_WRITE)
		pg->had = pg->written = 1;
	if (sc_hooks && !sc_hooks->access(p, from, acc))
		return;
	if (sc_hooks)
		dsm_region_protect(p, 1, sc_prot[acc]);
	else
		dsm_region_protect_later(p, sc_prot[acc]);
}

/* Is p inside its minimum residence time? *until: when to look again. */
static int in_delta(size_t p, uint64_t now, uint64_t *until)
{
	struct sc_page *pg = sc_page(p);
	if (!dsm.cfg.delta_ns || !pg->installed_ns)
		return 0;
	uint64_t resumed = ld_acquire(&dsm.resume_ns[p]);
	uint64_t u;
	if (resumed >= pg->installed_ns)
		u = resumed + dsm.cfg.delta_ns;
	else if (now < pg->installed_ns + RESUME_WAIT_CAP_NS)
		u = now + RESUME_POLL_NS;
	else
		u = 0;
	if (now >= u) {
		pg->installed_ns = 0; /* expired: no need to look again */
		return 0;
	}
	*until = u;
	return 1;
}

static void defer(size_t p, uint16_t kind, uint16_t from, uint8_t write)
{
	struct sc_page *pg = sc_page(p);
	struct deferred *d = malloc(sizeof(*d));
	if (!d)
		dsm_fatal("out of memory deferring a message");
	*d = (struct deferred){.kind = kind, .from = from, .write = write};
	struct deferred **head = kind == LOCUS_DSM_MSG_INV ? &pg->inv : &pg->fwd;
	struct deferred **tail = kind == LOCUS_DSM_MSG_INV ? &pg->inv_tail : &pg->fwd_tail;
	if (*tail)
		(*tail)->next = d;
	else
		*head = d;
	*tail = d;
	if (!pg->listed) {
		pg->listed = 1;
		deferred_list[deferred_count++] = p;
	}
}

/* Requests for a run of neighbours, one message to their manager (PAGE_REQ's
   c: how many pages from a); their manager takes them one by one, in order,
   as it would the messages one page each. Any other message goes after it. */
static struct {
	int mgr, write;
	size_t first, count;
} asking;

static void ask_send(void)
{
	if (!asking.count)
		return;
	struct dsm_hdr h = {.kind = LOCUS_DSM_MSG_PAGE_REQ,
			    .a = asking.first,
			    .b = (uint64_t)asking.write,
			    .c = asking.count};
	asking.count = 0;
	dsm_send(asking.mgr, &h, NULL, 0);
}

static void ask(int mgr, size_t p, int write)
{
	if (asking.count &&
	    (asking.mgr != mgr || asking.write != write || asking.first + asking.count != p))
		ask_send();
	if (!asking.count) {
		asking.mgr = mgr;
		asking.write = write;
		asking.first = p;
	}
	asking.count++;
}

static void send_to(int dst, uint16_t kind, uint64_t a, uint64_t b, uint64_t c, const void *payload,
		    size_t len)
{
	ask_send();
	struct dsm_hdr h = {.kind = kind, .a = a, .b = b, .c = c};
	dsm_send(dst, &h, payload, len);
}

/* Complete every fault waiting for p: the one that sent the request as
   remote, the ones combined with it as combined (set when they queued). A
   prefetched page nobody waited for gets no minimum residence: no thread is
   about to run the access that delta protects. */
static void resolved(size_t p)
{
	struct sc_page *pg = sc_page(p);
	pg->pending = 0;
	pg->installed_ns = pg->waiters ? mono_ns() : 0;
	while (pg->waiters) {
		struct dsm_req *r = pg->waiters;
		pg->waiters = r->wnext;
		dsm_req_done(r, r->result);
	}
	if (sc_hooks)
		sc_hooks->resolved(p);
}

/* A page's contents in one word: did anybody write it since? */
static uint64_t page_sum(size_t p)
{
	const uint64_t *w = (const uint64_t *)(const void *)dsm_page_alias(p);
	uint64_t s = 0, x = 0;
	for (size_t i = 0; i < dsm.page_size / sizeof(uint64_t); i++) {
		s += w[i];
		x ^= w[i];
	}
	return s ^ (x * 0x9e3779b97f4a7c15ull);
}

/* p leaves this node (taken for writing, or its copy invalidated). A page
   a walk took for writing whose contents did not change here: the walk ran
   into pages another node writes. (Heuristic only: a write that lands
   between the sum and the protection change the turn holds, or one that
   stores what was there, is taken for none.) */
static void lost(size_t p, struct sc_page *pg)
{
	if (pg->ahead == 2 && pg->ahead_sum == page_sum(p)) {
		pg->spoiled = 1;
		STAT_ADD(run_ahead_lost, 1);
	}
	pg->ahead = 0;
}

static void write_granted(size_t p)
{
	struct sc_page *pg = sc_page(p);
	pg->copyset = BIT(dsm.node);
	set_access(p, ACC_WRITE);
	resolved(p);
}

/* Invalidate every other holder of a copy; write_granted when all answered. */
static void invalidate_others(size_t p)
{
	struct sc_page *pg = sc_page(p);
	uint64_t others = pg->copyset & ~BIT(dsm.node);
	if (!others) {
		write_granted(p);
		return;
	}
	pg->acks_left = (uint16_t)__builtin_popcountll(others);
	for (int n = 0; n < dsm.nodes; n++)
		if (others & BIT(n))
			send_to(n, LOCUS_DSM_MSG_INV, p, 0, 0, NULL, 0);
}

/* Owner: hand the page and ownership to the requester. */
static void give(size_t p, int write, int requester)
{
	struct sc_page *pg = sc_page(p);
	uint64_t cs;
	if (write) {
		set_access(p, ACC_NONE);
		cs = pg->copyset & ~BIT(dsm.node);
	} else {
		if (pg->access == ACC_WRITE)
			set_access(p, ACC_READ);
		cs = pg->copyset | BIT(requester);
		if (pg->access == ACC_READ)
			cs |= BIT(dsm.node);
		else
			cs &= ~BIT(dsm.node);
	}
	pg->owner = 0;
	pg->copyset = 0;
	if (pg->prefetched && write) { /* taken away before a fault on it */
		pg->prefetched = 0;
		STAT_ADD(prefetch_lost, 1);
	}
	if (write)
		lost(p, pg);
	/* A page as it began, or a writer listed in the copy set: the requester
	   holds the page as it is (plain sc: a protocol built on it keeps its
	   own copies). */
	unsigned how = write ? PAGE_WRITE : 0;
	if (!sc_hooks && !pg->written && p * dsm.page_size >= dsm.glen) {
		send_to(requester, LOCUS_DSM_MSG_PAGE, p, how | PAGE_PRISTINE, cs, NULL, 0);
		return;
	}
	if (write && !sc_hooks && (cs & BIT(requester))) {
		send_to(requester, LOCUS_DSM_MSG_PAGE, p, how | PAGE_CURRENT, cs, NULL, 0);
		return;
	}
	/* Protection first, then the copy: no write can land after the snapshot. */
	send_to(requester, LOCUS_DSM_MSG_PAGE, p, how, cs, dsm_page_alias(p), dsm.page_size);
}

static void serve(size_t p, int write, int requester)
{
	struct sc_page *pg = sc_page(p);
	uint64_t until;
	if (!pg->owner && !pg->pending)
		dsm_fatal("page %zu forwarded from node %d to a node that neither owns "
			  "nor requested it",
			  p, requester);
	if (pg->fwd || pg->pending || !pg->owner) {
		defer(p, LOCUS_DSM_MSG_PAGE_FWD, (uint16_t)requester, (uint8_t)write);
		return;
	}
	if (in_delta(p, mono_ns(), &until)) {
		STAT_ADD(pingpong_deferrals, 1);
		defer(p, LOCUS_DSM_MSG_PAGE_FWD, (uint16_t)requester, (uint8_t)write);
		return;
	}
	if (sc_hooks && sc_hooks->hold(p)) {
		defer(p, LOCUS_DSM_MSG_PAGE_FWD, (uint16_t)requester, (uint8_t)write);
		return;
	}
	give(p, write, requester);
}

/* Manager: route a request to the probable owner and record the new one. */
static void manage(size_t p, int write, int requester)
{
	size_t i = p;
	int cur = mgr_owner[i] ? mgr_owner[i] - 1 : dsm.node;
	mgr_owner[i] = (uint8_t)(requester + 1);
	if (cur == requester)
		dsm_fatal("node %d requested page %zu, which it owns", requester, p);
	if (cur == dsm.node)
		serve(p, write, requester);
	else
		send_to(cur, LOCUS_DSM_MSG_PAGE_FWD, p, (uint64_t)write, (uint64_t)requester, NULL,
			0);
}

static void invalidated(size_t p, int from)
{
	struct sc_page *pg = sc_page(p);
	if (pg->owner)
		dsm_fatal("node %d invalidated page %zu, owned here", from, p);
	if (pg->access != ACC_NONE) {
		set_access(p, ACC_NONE);
		STAT_ADD(invalidations, 1);
	}
	if (pg->prefetched) {
		pg->prefetched = 0;
		STAT_ADD(prefetch_lost, 1);
	}
	if (!pg->pending) /* (else the copy went, not what the walk asked for) */
		lost(p, pg);
	send_to(from, LOCUS_DSM_MSG_INV_ACK, p, 0, 0, NULL, 0);
}

static int prefetch_one(size_t p, int write);

int sc_local(size_t p, int write)
{
	struct sc_page *pg = sc_page(p);
	if (pg->access >= (write ? ACC_WRITE : ACC_READ))
		return 1;
	if (pg->pending || !pg->owner)
		return 0;
	return !write || !(pg->copyset & ~BIT(dsm.node));
}

/* The faulting thread sends a fault's request itself (the answer comes to
   the communication thread, or to this thread as it waits: comm.c,
   await_answer); a fault that needs no message stays with the
   communication thread. Resolved in place, a write to a page this node owns
   alone is mapped writable before the communication thread's turn has
   answered another node's request for it, which set radix's pages
   ping-ponging (docs/results/dsm-speed.md, "Faults handled where they
   happen"). But a page's first touch here, on a page born here that has
   stayed here untouched, is handled in place too: a program initializing
   the data it allocated takes one such fault a page, and at most one a
   page can come before a request another node sent meanwhile. */
static int untouched(const struct sc_page *pg)
{
	return pg->owner && !pg->had && !pg->pending && !pg->fwd && pg->access == ACC_NONE &&
	       !(pg->copyset & ~BIT(dsm.node));
}

static int sc_fault_in_place(size_t p, int write)
{
	return p < dsm.npages && (!sc_local(p, write) || untouched(sc_page(p)));
}

/* A node walking pages in order, or a column: ask for the next ones with
   this one (an upgrade's walk: invalidate the next ones' other copies).
   Under plain sc a write walk stops before a page a walk here took for
   writing from another node that took it back unwritten (spoiled: lost):
   such a walk runs into pages another node is writing (a 2-D scatter of
   blocks), and taking them only sets them ping-ponging. (A read copy lost
   says nothing: reading a valid copy leaves no trace.) */
static void run_ahead(size_t p, int write)
{
	ptrdiff_t step;
	size_t run = dsm_run_ahead(p, write, &step);
	for (size_t i = 1; i <= run; i++) {
		size_t q = dsm_walk_page(p, step, i);
		struct sc_page *pg = sc_page(q);
		if (write && pg->spoiled && pg->access < ACC_WRITE)
			break;
		/* Watched: asked for writing from another node, under plain sc
		   (avr resolves most faults without sc_fault, and keeps arriving
		   contents aside while an interval is open). */
		int watch = write && !pg->owner && !sc_hooks;
		if (prefetch_one(q, write)) {
			STAT_ADD(run_ahead, 1);
			pg->ahead = (uint8_t)(1 + watch);
		}
	}
	ask_send();
}

void sc_fault(struct dsm_req *r)
{
	size_t p = r->a;
	int write = (int)r->b;
	if (p >= dsm.npages)
		dsm_fatal("fault on page %zu of %zu", p, dsm.npages);
	struct sc_page *pg = sc_page(p);
	uint8_t need = write ? ACC_WRITE : ACC_READ;
	pg->ahead = 0; /* touched */
	if (write)
		pg->spoiled = 0; /* this node writes it: walks may take it again */
	if (pg->access >= need) {
		STAT_ADD(faults[LOCUS_DSM_FAULT_LOCAL], 1);
		dsm_req_done(r, 0);
		return;
	}
	if (pg->prefetched) {
		pg->prefetched = 0;
		if (pg->pending)
			STAT_ADD(prefetch_late, 1);
	}
	if (pg->pending) { /* combined: this node's request is in flight */
		STAT_ADD(faults[LOCUS_DSM_FAULT_COMBINED], 1);
		r->result = DSM_COMBINED;
		r->wnext = pg->waiters;
		pg->waiters = r;
		return;
	}
	if (pg->owner) {
		uint64_t others = pg->copyset & ~BIT(dsm.node);
		if (!others) { /* the only copy: map it as it is */
			set_access(p, ACC_WRITE);
			STAT_ADD(faults[LOCUS_DSM_FAULT_LOCAL], 1);
			dsm_req_done(r, 0);
			return;
		}
		if (!write) {
			pg->copyset |= BIT(dsm.node);
			set_access(p, ACC_READ);
			STAT_ADD(faults[LOCUS_DSM_FAULT_LOCAL], 1);
			dsm_req_done(r, 0);
			return;
		}
		STAT_ADD(faults[LOCUS_DSM_FAULT_UPGRADE], 1);
		pg->pending = 2;
		r->result = DSM_REMOTE;
		r->wnext = NULL;
		pg->waiters = r;
		invalidate_others(p);
		run_ahead(p, 1);
		return;
	}
	STAT_ADD(faults[write ? LOCUS_DSM_FAULT_WRITE : LOCUS_DSM_FAULT_READ], 1);
	pg->pending = (uint8_t)(1 + write);
	r->result = DSM_REMOTE;
	r->wnext = NULL;
	pg->waiters = r;
	int mgr = dsm_home_of(p);
	if (mgr == dsm.node)
		manage(p, write, dsm.node);
	else
		ask(mgr, p, write);
	run_ahead(p, write);
}

/*
 * Non-binding prefetch (seed 001 §3.1): for every page of the range this node
 * cannot yet access as asked and has no request in flight for, do what a
 * fault would do — ask for a read copy, or for the page and ownership
 * (write), or, for a read-only page it owns, invalidate the other copies —
 * but with nobody waiting. A fault on the page meanwhile waits for it like
 * any combined fault. What arrives is an ordinary copy or ownership — in the
 * copyset, invalidated or taken away by the next request — so a prefetch
 * never changes what a program reads: at worst the page is gone again before
 * use and the access faults as it would have. Pages this node owns with no
 * other copy are skipped: the first touch maps them without messages.
 */
int sc_request(size_t p, int write)
{
	int sent = prefetch_one(p, write);
	run_ahead(p, write);
	return sent;
}

static int prefetch_one(size_t p, int write)
{
	struct sc_page *pg = sc_page(p);
	uint8_t need = write ? ACC_WRITE : ACC_READ;
	if (pg->access >= need || pg->pending)
		return 0; /* here already, or coming */
	if (pg->owner) {
		if (!write || !(pg->copyset & ~BIT(dsm.node)))
			return 0; /* ours to map at the first touch */
		pg->pending = 2;
		pg->waiters = NULL;
		invalidate_others(p);
		return 1;
	}
	pg->pending = (uint8_t)(1 + write);
	pg->waiters = NULL;
	int mgr = dsm_home_of(p);
	if (mgr == dsm.node)
		manage(p, write, dsm.node);
	else
		ask(mgr, p, write);
	return 1;
}

void sc_prefetch(size_t first, size_t count, int write)
{
	for (size_t p = first; p < first + count && p < dsm.npages; p++)
		if (prefetch_one(p, write)) {
			STAT_ADD(prefetches, 1);
			sc_page(p)->prefetched = 1;
		} else {
			STAT_ADD(prefetch_unneeded, 1);
		}
	ask_send();
}

static void page_arrived(size_t p, unsigned how, uint64_t cs, const void *data, size_t len)
{
	struct sc_page *pg = sc_page(p);
	int write = (how & PAGE_WRITE) != 0;
	unsigned bare = how & (PAGE_CURRENT | PAGE_PRISTINE);
	if (!pg->pending || pg->owner || len != (bare ? 0 : dsm.page_size) || (bare && sc_hooks))
		dsm_fatal("unexpected contents of page %zu", p);
	pg->written = !(how & PAGE_PRISTINE);
	if (how & PAGE_PRISTINE) {
		/* This node's memory holds the page as it began. */
	} else if (how & PAGE_CURRENT) {
		/* The copy here is the page: it was listed in the copy set. */
		if (pg->access != ACC_READ || !(cs & BIT(dsm.node)) || !write)
			dsm_fatal("page %zu came without its contents, but this node's copy "
				  "is gone",
				  p);
	} else if (!sc_hooks || !sc_hooks->arrived(p, data, len)) {
		memcpy(dsm_page_alias(p), data, len);
	}
	pg->owner = 1;
	pg->had = 1;
	pg->copyset = cs | BIT(dsm.node);
	/* A page a walk asked for writing (never one owned here: run_ahead)
	   always comes so, its contents final: not writable before the grant. */
	if (write && pg->ahead == 2)
		pg->ahead_sum = how & PAGE_PRISTINE ? 0 : page_sum(p); /* zeros: 0 */
	if (write) {
		invalidate_others(p);
	} else {
		if (pg->access == ACC_NONE)
			set_access(p, ACC_READ);
		resolved(p);
	}
}

void sc_message(const struct dsm_hdr *h, const void *payload, size_t len)
{
	size_t p = h->a;
	if (p >= dsm.npages)
		dsm_fatal("message about page %zu of %zu", p, dsm.npages);
	struct sc_page *pg = sc_page(p);
	uint64_t until;
	switch (h->kind) {
	case LOCUS_DSM_MSG_PAGE_REQ:
		if (h->c < 1 || h->c > dsm.npages - p)
			dsm_fatal("node %d asked for %llu pages from page %zu of %zu", h->src,
				  (unsigned long long)h->c, p, dsm.npages);
		dsm_send_hold(); /* the run's forwards or pages: together */
		for (size_t q = p; q < p + h->c; q++)
			manage(q, (int)h->b, h->src);
		dsm_send_release();
		break;
	case LOCUS_DSM_MSG_PAGE_FWD:
		serve(p, (int)h->b, (int)h->c);
		break;
	case LOCUS_DSM_MSG_PAGE:
		page_arrived(p, (unsigned)h->b, h->c, payload, len);
		break;
	case LOCUS_DSM_MSG_INV:
		if (pg->inv || in_delta(p, mono_ns(), &until)) {
			if (!pg->inv)
				STAT_ADD(pingpong_deferrals, 1);
			defer(p, LOCUS_DSM_MSG_INV, h->src, 0);
		} else {
			invalidated(p, h->src);
		}
		break;
	case LOCUS_DSM_MSG_INV_ACK:
		if (pg->pending != 2 || !pg->acks_left)
			dsm_fatal("unexpected invalidation acknowledgement for page %zu", p);
		if (--pg->acks_left == 0)
			write_granted(p);
		break;
	}
}

/* Run what delta held back; returns when to look again. */
uint64_t sc_tick(uint64_t now)
{
	uint64_t next = UINT64_MAX;
	size_t keep = 0;
	for (size_t i = 0; i < deferred_count; i++) {
		size_t p = deferred_list[i];
		struct sc_page *pg = sc_page(p);
		uint64_t until = UINT64_MAX;
		if (!in_delta(p, now, &until)) {
			while (pg->inv) {
				struct deferred *d = pg->inv;
				pg->inv = d->next;
				invalidated(p, d->from);
				free(d);
			}
			pg->inv_tail = NULL;
			while (pg->fwd && pg->owner && !pg->pending &&
			       !(sc_hooks && sc_hooks->hold(p))) {
				struct deferred *d = pg->fwd;
				pg->fwd = d->next;
				if (!pg->fwd)
					pg->fwd_tail = NULL;
				give(p, d->write, d->from);
				free(d);
			}
			if (pg->fwd && !pg->owner && !pg->pending)
				dsm_fatal("page %zu: a forward is left without ownership", p);
		}
		if (pg->inv || pg->fwd) {
			deferred_list[keep++] = p;
			if (until < next)
				next = until;
		} else {
			pg->listed = 0;
		}
	}
	deferred_count = keep;
	return next;
}

static int sc_writable(size_t p)
{
	return p < dsm.npages && sc_pages[p].born && sc_pages[p].access == ACC_WRITE;
}

const struct dsm_proto dsm_proto_sc = {
	.name = "sc",
	.init = sc_init,
	.fault = sc_fault,
	.fault_in_place = sc_fault_in_place,
	.writable = sc_writable,
	.message = sc_message,
	.tick = sc_tick,
	.prefetch = sc_prefetch,
};
