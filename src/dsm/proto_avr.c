/*
 * avr, the communication thread's half: sc (proto_sc.c) with one interval
 * of optimism at a time (seed 004 §2.3), awaiting up to
 * LOCUS_DSM_AVR_PENDING pages (seed §4.2's future work; 1 is the seed).
 * The application thread's half — checkpoint, access log, resolution,
 * rollback — is avr_ckpt.c; what the two share, and who writes what, is in
 * avr.h.
 *
 * Opening (a fault with AVR_OPEN that sc cannot resolve here, on a page this
 * node has had): the request goes out as sc sends it, with nobody waiting;
 * every other page readable here becomes inaccessible — tracked (AVR_RO,
 * AVR_PROT for the writable): the interval's first read of one marks it
 * AVR_SEEN, its first write twins it (avr_ckpt.c); the checkpoint page P is made
 * inaccessible, so that every access to it is logged — or, when this node
 * owns P (a write to its read-only copy, or a page whose contents came and
 * whose invalidations are still out), read-write at once: no other node can
 * change an owned page, so only the invalidations are awaited.
 *
 * Adding (a fault in the run with AVR_ADD, on a page sc cannot resolve here,
 * that this node has had, while fewer pages than LOCUS_DSM_AVR_PENDING are
 * awaited and nothing has conflicted yet): the page is asked for and
 * awaited like P — its own slot, logged or (owned) read-write — and the run
 * goes on instead of ending there.
 *
 * Asking (a fault in the run with AVR_LOCAL that neither sc resolves here
 * nor the interval can await, LOCUS_DSM_AVR_ASK=1): the run ends there, but
 * the page's request (and its read-ahead, as sc's fault sends it) goes out at
 * once with nobody waiting, instead of after the interval: its round trip
 * overlaps the wait for the awaited replies, and the fault made again after
 * the interval waits for what is already coming. It is a non-binding
 * prefetch (proto_sc.c): what comes is an ordinary copy, tracked like any
 * page that comes during the interval.
 *
 * While open:
 *   - an awaited page's contents, when they come, go to its avr.arrived
 *     slot, not to the page; avr.reply counts the awaited pages whose
 *     requests sc would have completed;
 *   - requests for awaited pages and for the pages twinned in the interval
 *     are held (seed §2.3.5's protocol queue): they would expose values that may yet
 *     be rolled back. sc_tick serves them after the interval. One held for
 *     an awaited page while another awaited page's reply is still out counts
 *     for the deadlock rules like one for a twinned page: two nodes can each
 *     hold an awaited page the other's interval waits for;
 *   - a page that becomes writable is tracked like the others;
 *   - a page other than P that the interval read (or could read untracked:
 *     it came during the interval) and that loses its access (invalidated,
 *     or taken by a writer) sets avr.conflict: what the interval read may be
 *     older than what P's reply reflects. The seed compares only P's log with P's reply; that
 *     alone lets store buffering's two reads both see the old values (each
 *     node's optimistic write is still unseen when the other reads), which
 *     sequential consistency forbids. Rolling back on such a loss closes it.
 *     So does an awaited page's loss before the last reply is in (its
 *     reply was current when it came, but the run stands as of the last
 *     one), or after the interval read it while it was only tracked.
 *
 * Nudging: once every reply is in and a request waits for the interval, the
 * speculating thread is sent AVR_NUDGE_SIGNAL (again every
 * AVR_NUDGE_EVERY_NS while it waits): a thread that spins on a page it may
 * write takes no fault that would end the interval.
 *
 * Closing (AVR_END): every page listed gets the view its access says, every
 * awaited page the access sc gave it (and, after a rollback, the contents
 * that came).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "avr.h"
#include "common/futex.h"
#include "internal.h"
#include "sc.h"

struct avr_shared avr;
static size_t *ckpt_pages, ckpt_count;

static int by_page(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return x < y ? -1 : x > y;
}

#define PROT_OWN (-1) /* protect_runs: each page as its access says */

/* One mprotect per run of consecutive pages given the same protection (a
   node's pages of an array are mostly consecutive: opening or closing an
   interval then costs a few calls, not one a page). Sorts pages. */
static void protect_runs(size_t *pages, size_t n, int prot)
{
	qsort(pages, n, sizeof(*pages), by_page);
	for (size_t i = 0; i < n;) {
		uint8_t acc = sc_pages[pages[i]].access;
		size_t j = i + 1;
		while (j < n && pages[j] == pages[j - 1] + 1 &&
		       (prot != PROT_OWN || sc_pages[pages[j]].access == acc))
			j++;
		dsm_region_protect(pages[i], j - i, prot == PROT_OWN ? sc_prot[acc] : prot);
		i = j;
	}
}

static void list_page(size_t q)
{
	if (!(avr.state[q] & AVR_LISTED)) {
		avr.state[q] |= AVR_LISTED;
		ckpt_pages[ckpt_count++] = q;
	}
}

/*
 * p's access changes from -> to while an interval is open (sc has set its
 * state). An awaited page's view is the application thread's until the end;
 * its loss is a conflict when the run read it while it was tracked, or when
 * its reply is in and another's is not. Otherwise:
 *   - lost (to none): a conflict if the interval may have read p — it read
 *     it, or p was readable untracked;
 *   - writable now: tracked and inaccessible, like the pages writable when
 *     the interval opened (its first write twins it);
 *   - readable now, from no access (a copy come — a read-ahead, or asked
 *     for at the run's end — or one granted here by a fault in the run):
 *     tracked, like the pages readable when the interval opened, so that
 *     losing it again unread rolls nothing back (a granted one takes one
 *     more fault, which marks it read);
 *   - read-only now, not yet read: stays tracked.
 */
static int avr_access(size_t p, uint8_t from, uint8_t to)
{
	if (!avr.open)
		return 1;
	int keep_view = 0;
	avr_lock();
	uint8_t s = avr.state[p];
	int unseen = (s & AVR_TRACKED) && !(s & (AVR_SEEN | AVR_TWIN));
	if (s & AVR_AWAIT) {
		int i = avr_slot_of(p);
		int came = (ld_relaxed(&avr.done) >> i) & 1;
		if (to == ACC_NONE && from != ACC_NONE &&
		    ((s & AVR_SEEN) || (came && !avr_all_in())))
			st_release(&avr.conflict, 1);
		keep_view = 1;
	} else if (to == ACC_NONE) {
		if (from != ACC_NONE && !unseen)
			st_release(&avr.conflict, 1);
		avr.state[p] = (uint8_t)(s & ~(AVR_PROT | AVR_RO));
	} else if (to == ACC_WRITE) {
		avr.state[p] = (uint8_t)((s & ~AVR_RO) | AVR_PROT | AVR_TRACKED);
		list_page(p);
		dsm_region_protect(p, 1, (s & AVR_SEEN) ? PROT_READ : PROT_NONE);
		keep_view = 1;
	} else if (from == ACC_NONE && !(s & AVR_SEEN)) { /* a copy come: track it */
		avr.state[p] = (uint8_t)((s & ~AVR_PROT) | AVR_RO | AVR_TRACKED);
		list_page(p);
		dsm_region_protect(p, 1, PROT_NONE);
		keep_view = 1;
	} else if (unseen) { /* read-only, not read yet: keep tracking it */
		avr.state[p] = (uint8_t)((s & ~AVR_PROT) | AVR_RO);
		keep_view = 1;
	} else {
		avr.state[p] = (uint8_t)(s & ~(AVR_PROT | AVR_TRACKED));
	}
	avr_unlock();
	return !keep_view;
}

static void nudge(uint64_t now)
{
	if (!avr.open || !ld_relaxed(&avr.waiting) || !avr_all_in() ||
	    now - avr.nudged_ns < AVR_NUDGE_EVERY_NS)
		return;
	avr.nudged_ns = now;
	pthread_kill(avr.thread, AVR_NUDGE_SIGNAL);
}

/*
 * Hold a request for p? sc asks right before it would give p away (and
 * again at every tick while the request waits). A page neither twinned nor
 * awaited is claimed (no longer AVR_PROT), so that it cannot be twinned
 * between this answer and the give. What the deadlock rules watch (avr.held)
 * is a request held that another node's interval may be waiting for while
 * this node's waits for a reply: one behind a twinned page, or behind an
 * awaited page while another awaited page's reply is out. One for the only
 * awaited page, or once every reply is in, cannot be part of such a cycle:
 * no reply this node waits for depends on it.
 */
static int avr_hold(size_t p)
{
	if (!avr.open)
		return 0;
	avr_lock();
	uint8_t s = avr.state[p];
	int keep = (s & (AVR_TWIN | AVR_AWAIT)) != 0;
	if (!keep)
		avr.state[p] = (uint8_t)(s & ~AVR_PROT);
	else
		avr.state[p] = (uint8_t)(s | AVR_HELD);
	avr_unlock();
	if (!keep)
		return 0;
	if (((s & AVR_TWIN) || !avr_all_in()) && !ld_relaxed(&avr.held)) {
		st_release(&avr.held, 1);
		futex_wake(&avr.reply, 1); /* a resolution waiting gives way */
	}
	if (!(s & AVR_HELD)) {
		if (!(s & AVR_AWAIT))
			list_page(p);
		PROTO_STAT_ADD(AVR_ST_DEFERRALS, 1);
	}
	st_relaxed(&avr.waiting, 1);
	nudge(mono_ns());
	return 1;
}

static int avr_arrived(size_t p, const void *data, size_t len)
{
	if (!avr.open)
		return 0;
	int i = avr_slot_of(p);
	if (i < 0)
		return 0;
	memcpy(avr.arrived + (size_t)i * dsm.page_size, data, len);
	avr.arrived_in |= 1u << i;
	return 1;
}

static void avr_resolved(size_t p)
{
	if (!avr.open)
		return;
	int i = avr_slot_of(p);
	if (i < 0 || (ld_relaxed(&avr.done) >> i) & 1)
		return;
	st_release(&avr.done, ld_relaxed(&avr.done) | 1u << i);
	st_release(&avr.reply, ld_relaxed(&avr.reply) + 1);
	if (avr_all_in()) {
		futex_wake(&avr.reply, 1);
		nudge(mono_ns());
	}
}

static const struct sc_hooks hooks = {
	.access = avr_access,
	.hold = avr_hold,
	.arrived = avr_arrived,
	.resolved = avr_resolved,
};

static int avr_init(void)
{
	if (sc_init() != 0)
		return -1;
	avr.state = dsm_table_new(dsm.npages, 1);
	avr.arrived = malloc((size_t)avr_set.pending * dsm.page_size);
	ckpt_pages = dsm_table_new(dsm.npages, sizeof(*ckpt_pages));
	if (!avr.state || !avr.arrived || !ckpt_pages)
		return -1;
	sc_hooks = &hooks;
	return 0;
}

/*
 * Await p in the open interval (its first page or another): ask for it as
 * sc would, with nobody waiting, and give the application thread its view —
 * inaccessible, so that every access is logged, or read-write at once when
 * this node owns p (a write to its read-only copy, or a page whose contents
 * came and whose invalidations are still out): the contents are current and
 * no other node can change them, so the run needs no log of it. Returns the
 * fault's result.
 */
static int await_page(size_t p, int write)
{
	struct sc_page *pg = sc_page(p);
	int upgrade = pg->owner;
	int asks_write = write || pg->pending == 2;
	uint32_t i = avr.npages;
	avr.page[i] = p;
	avr_lock();
	avr.state[p] = (uint8_t)((avr.state[p] & (AVR_LISTED | AVR_SEEN | AVR_HELD)) | AVR_AWAIT);
	avr_unlock();
	st_release(&avr.npages, i + 1);
	dsm_region_protect(p, 1, upgrade ? PROT_READ | PROT_WRITE : PROT_NONE);
	if (pg->pending) {
		STAT_ADD(faults[LOCUS_DSM_FAULT_COMBINED], 1);
	} else {
		STAT_ADD(faults[upgrade ? LOCUS_DSM_FAULT_UPGRADE
				: write ? LOCUS_DSM_FAULT_WRITE
					: LOCUS_DSM_FAULT_READ],
			 1);
		sc_request(p, write);
	}
	return upgrade ? AVR_OPENED_UPGRADE : asks_write ? AVR_OPENED_WRITE : AVR_OPENED;
}

static void open_interval(size_t p)
{
	avr.open = 1;
	avr.arrived_in = 0;
	st_release(&avr.npages, 0);
	st_release(&avr.done, 0);
	st_release(&avr.reply, 0);
	st_release(&avr.conflict, 0);
	st_release(&avr.held, 0);
	st_relaxed(&avr.waiting, 0);
	avr.nudged_ns = 0;
	for (int acc = ACC_READ; acc <= ACC_WRITE; acc++)
		for (size_t i = 0; i < sc_count[acc]; i++) {
			size_t q = sc_list[acc][i];
			if (q == p)
				continue;
			ckpt_pages[ckpt_count++] = q;
			avr.state[q] = (uint8_t)((acc == ACC_WRITE ? AVR_PROT : AVR_RO) |
						 AVR_TRACKED | AVR_LISTED);
		}
	protect_runs(ckpt_pages, ckpt_count, PROT_NONE);
	PROTO_STAT_ADD(AVR_ST_PROTECTED, ckpt_count);
}

static void close_interval(int rolled_back)
{
	/* Every listed page gets the view its access says. */
	for (size_t i = 0; i < ckpt_count; i++)
		avr.state[ckpt_pages[i]] = 0;
	protect_runs(ckpt_pages, ckpt_count, PROT_OWN);
	ckpt_count = 0;
	uint64_t now = mono_ns();
	for (uint32_t i = 0; i < avr.npages; i++) {
		size_t p = avr.page[i];
		struct sc_page *pg = sc_page(p);
		if (rolled_back && ((avr.arrived_in >> i) & 1))
			memcpy(dsm_page_alias(p), avr.arrived + (size_t)i * dsm.page_size,
			       dsm.page_size);
		avr.state[p] = 0;
		dsm_region_protect(p, 1, sc_prot[pg->access]);
		if (!pg->pending) { /* delta counts from the interval's end */
			pg->installed_ns = now;
			st_release(&dsm.resume_ns[p], now);
		}
	}
	avr.open = 0;
}

/* Can the open interval await p too, rather than end at this fault? */
static int can_add(size_t p, int write)
{
	struct sc_page *pg = sc_page(p);
	return avr.npages < avr_set.pending && !(avr.state[p] & AVR_AWAIT) &&
	       !ld_acquire(&avr.conflict) && pg->had && !(write && pg->pending == 1);
}

static void avr_fault(struct dsm_req *r)
{
	uint32_t f = (uint32_t)r->b;
	size_t p = r->a;
	int write = (f & AVR_WRITE) != 0;
	if (p >= dsm.npages)
		dsm_fatal("fault on page %zu of %zu", p, dsm.npages);
	if (f & AVR_END) {
		if (!avr.open)
			dsm_fatal("avr: closing an interval that is not open");
		close_interval((f & AVR_ROLLBACK) != 0);
		dsm_req_done(r, DSM_LOCAL);
		return;
	}
	r->b = (uint64_t)write;
	if (f & AVR_LOCAL) {
		if (sc_local(p, write)) {
			sc_fault(r);
		} else if ((f & AVR_ADD) && avr.open && can_add(p, write)) {
			PROTO_STAT_ADD(AVR_ST_ADDED, 1);
			dsm_req_done(r, await_page(p, write));
		} else {
			/* The run ends here: ask now, so that this page's
			   round trip overlaps the wait for the awaited ones. */
			if (avr_set.ask && sc_request(p, write))
				PROTO_STAT_ADD(AVR_ST_ASKED, 1);
			dsm_req_done(r, AVR_REMOTE);
		}
		return;
	}
	struct sc_page *pg = sc_page(p);
	/* As sc: not asked for optimism, resolvable here, or a write behind
	   this node's read request (the copy that comes will be read-only). */
	if (!(f & AVR_OPEN) || avr.open || sc_local(p, write) || (write && pg->pending == 1)) {
		sc_fault(r);
		return;
	}
	/* Never held here: the page is zeros, not a stale copy — a run on it
	   would be rolled back whenever the page is not all zeros. */
	if (!pg->had) {
		PROTO_STAT_ADD(AVR_ST_SC_NOCOPY, 1);
		sc_fault(r);
		return;
	}
	open_interval(p);
	dsm_req_done(r, await_page(p, write));
}

static uint64_t avr_tick(uint64_t now)
{
	uint64_t next = sc_tick(now);
	if (avr.open && ld_relaxed(&avr.waiting) && avr_all_in()) {
		nudge(now);
		uint64_t again = avr.nudged_ns + AVR_NUDGE_EVERY_NS;
		if (again < next)
			next = again;
	}
	return next;
}

/* The fault handler runs with the nudge blocked: a nudge that came in the
   middle of a fault would resolve the interval under it. */
static void avr_fault_mask(sigset_t *mask)
{
	sigaddset(mask, AVR_NUDGE_SIGNAL);
}

const struct dsm_proto dsm_proto_avr = {
	.name = "avr",
	.config = avr_config,
	.stats = avr_stats,
	.nstats = AVR_NSTATS,
	.thread_init = dsm_avr_init,
	.thread_fini = dsm_avr_fini,
	.thread_fault = dsm_avr_fault,
	.stray_fault = dsm_avr_stray,
	.sync_point = dsm_avr_sync,
	.fault_mask = avr_fault_mask,
	.init = avr_init,
	.fault = avr_fault,
	.message = sc_message,
	.tick = avr_tick,
	.prefetch = sc_prefetch,
};
