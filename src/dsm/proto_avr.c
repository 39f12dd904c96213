/*
 * avr, the communication thread's half: sc (proto_sc.c) with one interval
 * of optimism at a time (seed 004 §2.3). The application thread's half —
 * checkpoint, access log, resolution, rollback — is avr_ckpt.c; what the two
 * share, and who writes what, is in avr.h.
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
 * While open:
 *   - P's contents, when they come, go to avr.arrived, not to the page;
 *     avr.reply is set when sc would have completed the fault;
 *   - requests for P and for the pages twinned in the interval are held
 *     (seed §2.3.5's protocol queue): they would expose values that may yet
 *     be rolled back. sc_tick serves them after the interval;
 *   - a page that becomes writable is tracked like the others;
 *   - a page other than P that the interval read (or could read untracked:
 *     it came during the interval) and that loses its access (invalidated,
 *     or taken by a writer) sets avr.conflict: what the interval read may be
 *     older than what P's reply reflects. The seed compares only P's log with P's reply; that
 *     alone lets store buffering's two reads both see the old values (each
 *     node's optimistic write is still unseen when the other reads), which
 *     sequential consistency forbids. Rolling back on such a loss closes it.
 *
 * Nudging: once P's reply is in and a request waits for the interval, the
 * speculating thread is sent AVR_NUDGE_SIGNAL (again every
 * AVR_NUDGE_EVERY_NS while it waits): a thread that spins on a page it may
 * write takes no fault that would end the interval.
 *
 * Closing (AVR_END): every page listed gets the view its access says, P gets
 * the access sc gave it (and, after a rollback, the contents that came).
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
 * state). P's view is the application thread's until the end. Otherwise:
 *   - lost (to none): a conflict if the interval may have read p — it read
 *     it, or p was readable untracked (it came during the interval);
 *   - writable now: tracked and inaccessible, like the pages writable when
 *     the interval opened (its first write twins it);
 *   - read-only now, not yet read: stays tracked.
 */
static int avr_access(size_t p, uint8_t from, uint8_t to)
{
	if (!avr.open)
		return 1;
	if (p == avr.page)
		return 0;
	int keep_view = 0;
	avr_lock();
	uint8_t s = avr.state[p];
	int unseen = (s & AVR_TRACKED) && !(s & (AVR_SEEN | AVR_TWIN));
	if (to == ACC_NONE) {
		if (from != ACC_NONE && !unseen)
			st_release(&avr.conflict, 1);
		avr.state[p] = (uint8_t)(s & ~(AVR_PROT | AVR_RO));
	} else if (to == ACC_WRITE) {
		avr.state[p] = (uint8_t)((s & ~AVR_RO) | AVR_PROT | AVR_TRACKED);
		list_page(p);
		dsm_region_protect(p, 1, (s & AVR_SEEN) ? PROT_READ : PROT_NONE);
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
	if (!avr.open || !ld_relaxed(&avr.waiting) || !ld_acquire(&avr.reply) ||
	    now - avr.nudged_ns < AVR_NUDGE_EVERY_NS)
		return;
	avr.nudged_ns = now;
	pthread_kill(avr.thread, AVR_NUDGE_SIGNAL);
}

/*
 * Hold a request for p? sc asks right before it would give p away (and
 * again at every tick while the request waits). A page not twinned is
 * claimed (no longer AVR_PROT), so that it cannot be twinned between this
 * answer and the give. A request held behind a twinned page is what the
 * deadlock counter watches: two nodes can each hold what the other's
 * interval waits for. One for P itself cannot: P's reply does not depend on
 * anything this node holds.
 */
static int avr_hold(size_t p)
{
	if (!avr.open)
		return 0;
	if (p != avr.page) {
		avr_lock();
		uint8_t s = avr.state[p];
		if (!(s & AVR_TWIN))
			avr.state[p] = (uint8_t)(s & ~AVR_PROT);
		avr_unlock();
		if (!(s & AVR_TWIN))
			return 0;
		if (!ld_relaxed(&avr.held)) {
			st_release(&avr.held, 1);
			futex_wake(&avr.reply, 1); /* a resolution waiting gives way */
		}
	}
	if (!(avr.state[p] & AVR_HELD)) {
		avr.state[p] |= AVR_HELD;
		if (p != avr.page)
			list_page(p);
		STAT_ADD(avr_deferrals, 1);
	}
	st_relaxed(&avr.waiting, 1);
	nudge(mono_ns());
	return 1;
}

static int avr_arrived(size_t p, const void *data, size_t len)
{
	if (!avr.open || p != avr.page)
		return 0;
	memcpy(avr.arrived, data, len);
	avr.arrived_in = 1;
	return 1;
}

static void avr_resolved(size_t p)
{
	if (!avr.open || p != avr.page)
		return;
	st_release(&avr.reply, 1);
	futex_wake(&avr.reply, 1);
	nudge(mono_ns());
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
	avr.state = calloc(dsm.npages, 1);
	avr.arrived = malloc(dsm.page_size);
	ckpt_pages = calloc(dsm.npages, sizeof(*ckpt_pages));
	if (!avr.state || !avr.arrived || !ckpt_pages)
		return -1;
	sc_hooks = &hooks;
	return 0;
}

static void open_interval(size_t p, int upgrade)
{
	avr.open = 1;
	avr.page = p;
	avr.arrived_in = 0;
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
	STAT_ADD(avr_protected, ckpt_count);
	dsm_region_protect(p, 1, upgrade ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static void close_interval(int rolled_back)
{
	/* Every listed page gets the view its access says. */
	for (size_t i = 0; i < ckpt_count; i++)
		avr.state[ckpt_pages[i]] = 0;
	protect_runs(ckpt_pages, ckpt_count, PROT_OWN);
	ckpt_count = 0;
	size_t p = avr.page;
	struct sc_page *pg = &sc_pages[p];
	if (rolled_back && avr.arrived_in)
		memcpy(dsm_page_alias(p), avr.arrived, dsm.page_size);
	avr.open = 0;
	avr.state[p] = 0;
	dsm_region_protect(p, 1, sc_prot[pg->access]);
	if (!pg->pending) { /* delta counts from the interval's end */
		uint64_t now = mono_ns();
		pg->installed_ns = now;
		st_release(&dsm.resume_ns[p], now);
	}
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
		if (sc_local(p, write))
			sc_fault(r);
		else
			dsm_req_done(r, AVR_REMOTE);
		return;
	}
	struct sc_page *pg = &sc_pages[p];
	/* As sc: not asked for optimism, resolvable here, or a write behind
	   this node's read request (the copy that comes will be read-only). */
	if (!(f & AVR_OPEN) || avr.open || sc_local(p, write) || (write && pg->pending == 1)) {
		sc_fault(r);
		return;
	}
	/* Never held here: the page is zeros, not a stale copy — a run on it
	   would be rolled back whenever the page is not all zeros. */
	if (!pg->had) {
		STAT_ADD(avr_sc[LOCUS_DSM_AVR_SC_NOCOPY], 1);
		sc_fault(r);
		return;
	}
	/* Owned here (a read-only copy to upgrade, or a page whose contents came
	   and whose invalidations are still out): the contents are current and
	   no other node can change them, so the interval needs no log. */
	int upgrade = pg->owner;
	int asks_write = write || pg->pending == 2;
	open_interval(p, upgrade);
	if (pg->pending) {
		STAT_ADD(faults[LOCUS_DSM_FAULT_COMBINED], 1);
	} else {
		STAT_ADD(faults[upgrade ? LOCUS_DSM_FAULT_UPGRADE
				: write ? LOCUS_DSM_FAULT_WRITE
					: LOCUS_DSM_FAULT_READ],
			 1);
		sc_request(p, write);
	}
	dsm_req_done(r, upgrade ? AVR_OPENED_UPGRADE : asks_write ? AVR_OPENED_WRITE : AVR_OPENED);
}

static uint64_t avr_tick(uint64_t now)
{
	uint64_t next = sc_tick(now);
	if (avr.open && ld_relaxed(&avr.waiting) && ld_acquire(&avr.reply)) {
		nudge(now);
		uint64_t again = avr.nudged_ns + AVR_NUDGE_EVERY_NS;
		if (again < next)
			next = again;
	}
	return next;
}

const struct dsm_proto dsm_proto_avr = {
	.name = "avr",
	.init = avr_init,
	.fault = avr_fault,
	.message = sc_message,
	.tick = avr_tick,
	.prefetch = sc_prefetch,
};
