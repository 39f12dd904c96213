/*
 * The sc protocol's page table and entry points, for the protocols built on
 * it (avr). Communication thread only, like every protocol's state.
 */
#ifndef LOCUS_DSM_SC_H
#define LOCUS_DSM_SC_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

enum { ACC_NONE = 0, ACC_READ = 1, ACC_WRITE = 2 };

struct deferred;

struct sc_page {
	uint64_t copyset; /* owner only */
	uint64_t installed_ns;
	uint64_t ahead_sum; /* ahead == 2: the contents' sum when they came */
	struct dsm_req *waiters;
	struct deferred *fwd, *fwd_tail; /* wait for ownership and delta */
	struct deferred *inv, *inv_tail; /* wait for delta only */
	size_t list_at;			 /* index in sc_list[access] */
	uint16_t acks_left;
	uint8_t access;
	uint8_t owner;
	uint8_t pending;    /* 0, or 1 + write */
	uint8_t listed;	    /* in the deferred list */
	uint8_t prefetched; /* by locus_dsm_prefetch, no fault on it since */
	uint8_t ahead;	    /* fetched by a walk (run_ahead), no fault on it since: 2 asked
			       for writing from another node (plain sc), 1 otherwise */
	uint8_t spoiled;    /* ahead 2, and it left with its contents unchanged here:
			       write walks stop before it until this node's own write
			       fault on it */
	uint8_t had;	    /* contents came here, or were written here (they may be stale
			       since; a manager's first zero page does not count) */
	uint8_t born;	    /* set up (sc_page): the table starts as zeros */
	uint8_t written;    /* owner: the contents changed since the run began (until
			       then every node's memory holds them as they began, zeros,
			       but for a fork-style run's shared globals) */
};

/*
 * What a protocol built on sc changes in it. access: p's access changes
 * from -> to (the state is already set); return 0 when the hook has set the
 * application's view itself. hold: keep a request for p, owned here, until
 * later (sc_tick asks again). arrived: p's contents came; return 1 when the
 * hook took them (sc then leaves the page's memory alone). resolved: p's
 * request has completed.
 */
struct sc_hooks {
	int (*access)(size_t p, uint8_t from, uint8_t to);
	int (*hold)(size_t p);
	int (*arrived)(size_t p, const void *data, size_t len);
	void (*resolved)(size_t p);
};

extern struct sc_page *sc_pages;
extern const struct sc_hooks *sc_hooks;
extern size_t *sc_list[3], sc_count[3]; /* by ACC_READ, ACC_WRITE: the pages, in no order */
extern const int sc_prot[3];		/* ACC_* -> PROT_* */

int sc_init(void);
void sc_page_born(size_t p);

/* Page p's record, set up at its first use: a page managed here starts
   owned here (the zero page, not mapped), with this node its copy set. */
static inline struct sc_page *sc_page(size_t p)
{
	struct sc_page *pg = &sc_pages[p];
	if (!pg->born)
		sc_page_born(p);
	return pg;
}
void sc_fault(struct dsm_req *r);
void sc_message(const struct dsm_hdr *h, const void *payload, size_t len);
uint64_t sc_tick(uint64_t now);
void sc_prefetch(size_t first, size_t count, int write);
/* Could a fault on p be resolved here, without messages? */
int sc_local(size_t p, int write);
/* Ask for p (and a walk's next pages) as a fault would, with nobody waiting:
   sc_hooks->resolved says when it is done. Returns 0 if already asked. */
int sc_request(size_t p, int write);

#endif
