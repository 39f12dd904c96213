/*
 * lrc's state and the helpers its three files share: proto_lrc.c (intervals,
 * write notices, twins and diffs, faults, prefetch and the synchronization
 * hooks), lrc_fetch.c (fetching diffs, in batches) and lrc_gc.c (collection
 * at a barrier). proto_lrc.c says how the protocol works. Everything runs on
 * the communication thread, or on an application thread standing in for it
 * (comm.c: under its state's lock, while it does not work: a lock request, or
 * a fault).
 */
#ifndef LOCUS_DSM_LRC_H
#define LOCUS_DSM_LRC_H

#include <stdlib.h>

#include "internal.h"

enum { ACC_NONE = 0, ACC_READ = 1, ACC_WRITE = 2 };
#define WHOLE UINT32_MAX /* a reply carrying the whole page */

struct notice {
	uint32_t node, idx;
};

struct owndiff {
	uint32_t idx, len;
	unsigned char *data;
};

/* A diff another node pushed at a barrier (lrc_push.c), kept until a
   pending notice of the page names it. */
struct pushed {
	struct pushed *next;
	uint32_t node, idx, len;
	unsigned char data[];
};

struct rx { /* a reply to the fetch in flight */
	struct rx *next;
	uint32_t node; /* writer, or WHOLE */
	size_t len;
	unsigned char data[];
};

struct lrc_page {
	struct dsm_req *waiters;
	char *twin;
	uint32_t twin_iv; /* the own interval the twin's writes belong to */
	struct notice *pend;
	uint32_t npend, cappend;
	uint32_t nflight;      /* the first nflight pending notices are being fetched */
	uint32_t replies_left; /* of the fetch in flight (0: none) */
	struct rx *rx;
	struct owndiff *diffs; /* this node's, by interval */
	uint32_t ndiffs, capdiffs;
	uint32_t wrote_iv;	     /* the last own interval that twinned it */
	uint8_t access, have, dirty; /* have: HAVE_*; dirty: in lrc.dirty */
	uint8_t hot, idle;	     /* diffed at every interval end; intervals unwritten */
	uint8_t prefetched;	     /* by locus_dsm_prefetch, no fault on it since */
	uint8_t want_write;	     /* a write prefetch: writable (hot) when it arrives */
	uint8_t written;	     /* changed in the last interval it was writable here, or
					private and made writable (a write walk's block) */
	uint8_t live;		     /* in lrc.live (lrc_page) */
	uint8_t cls;		     /* CLS_*: private to this node or shared (lrc_class.c) */
	uint8_t asking;		     /* this node asked its home for the class */
	uint32_t ask_gc;	     /* lrc.gc_epoch when it asked */
	/* At the page's home, its directory entry (lrc_class.c): */
	uint8_t dir;	  /* 0 nobody yet, 1 + the node it is private to, or 0xff shared */
	uint8_t revoking; /* the home asked that node to give it back */
	uint8_t moved;	  /* it moved once to another node as private (no second time) */
	/* At a node it is moving to: a take-back that came before the page did
	   (the home's message overtook the old holder's), done when it comes. */
	uint8_t take_early;
	uint8_t ahead_in; /* it moved here for an ask ahead, with no fault waiting */
	uint64_t take_told;
	uint64_t wait; /* nodes whose ask waits for it */
	uint64_t told; /* of those, the ones the node giving it back answers itself */
	/* Pushed diffs (lrc_push.c). At a writer: the nodes its diffs of the
	   page go to at each barrier. At a reader: what came, how many pushes
	   were applied since it subscribed, and whether the last one was left
	   for a fault to show the page is still read. */
	uint64_t subs;
	struct pushed *pushed;
	uint16_t npush;
	uint8_t probing, pushq; /* pushq: in lrc.pushq */
};

/* What a node knows of a page's use (lrc_class.c). */
enum { CLS_UNKNOWN = 0, CLS_PRIVATE = 1, CLS_SHARED = 2 };

/* A page written in two intervals at most this far apart is hot: at every
   interval end its diff is made and its twin renewed, and it stays writable,
   so a page a node keeps writing takes no fault per interval, and no
   mprotect call either: its diff is taken while it is writable
   (dsm_diff_take). After HOT_IDLE intervals without a change it goes back to
   faulting. (Writes that leave the values as they were look like no write:
   tracking an idle page costs a page comparison per interval, a fault here
   costs tens of microseconds, so idleness is given time.) */
#define HOT_GAP	 2
#define HOT_IDLE 16

/* What a node holds of a page besides its pending notices. */
enum {
	HAVE_ZERO = 0, /* never held: the initial zero page (the alias is still zero
			  here), which the pending notices' diffs bring up to date */
	HAVE_COPY = 1, /* a copy, current but for the pending notices */
	HAVE_NONE = 2, /* dropped at a collection: the whole page comes from its
			  manager, which is current for what was collected */
};

struct interval {
	uint32_t npages;
	uint32_t *vt, *pages;
};

/* lrc's settings (its config hook, lrc_gc.c). */
struct lrc_settings {
	uint64_t gc_bytes; /* LOCUS_DSM_GC_BYTES: collect at a barrier when a node keeps more */
	int private_pages; /* LOCUS_DSM_LRC_PRIVATE: pages one node uses go without twins
			      (-1 unset: lrc_config_resolve decides at init) */
	int push;	   /* LOCUS_DSM_LRC_PUSH: diffs go at a barrier to the nodes reading them */
	int move;	   /* LOCUS_DSM_LRC_MOVE: a private page taken back the first time moves */
	int write_blocks;  /* LOCUS_DSM_LRC_BLOCKS: a write column walk takes the rows between */
};
extern struct lrc_settings lrc_set;

/* lrc's statistics, the one list (struct dsm_stat): id, the field of
   locus_dsm_stats, the JSON key, the words of the table line, the kind. */
#define LRC_STATS(X)                                                                               \
	X(INTERVALS, intervals, "intervals", "intervals", COUNT)                                   \
	X(TWINS, twins, "twins", "twins", COUNT)                                                   \
	X(DIFFS, diffs, "diffs", "diffs", COUNT)                                                   \
	X(DIFF_BYTES, diff_bytes, "diff_bytes", "diff bytes", COUNT)                               \
	X(GCS, gcs, "gcs", "collections", COUNT)                                                   \
	X(META_BYTES, meta_bytes, "meta_bytes", "bytes kept", GAUGE)                               \
	X(META_PEAK, meta_peak_bytes, "meta_peak_bytes", "at most", GAUGE)                         \
	X(PRIVATE, private_pages, "private_pages", "pages private", COUNT)                         \
	X(MADE_SHARED, made_shared, "made_shared", "made shared", COUNT)                           \
	X(MOVED, private_moved, "private_moved", "moved away", COUNT)                              \
	X(PUSHED, pushed_diffs, "pushed_diffs", "diffs pushed", COUNT)                             \
	X(PUSH_USED, pushed_used, "pushed_used", "pushed diffs used", COUNT)                       \
	X(PUSH_STOPPED, push_stopped, "push_stopped", "pushes stopped", COUNT)
#define LRC_STAT_ID(id, field, json, label, kind) LRC_ST_##id,
enum { LRC_STATS(LRC_STAT_ID) LRC_NSTATS };

struct lrc_state {
	size_t nodes;	      /* dsm.nodes */
	struct lrc_page *pg;  /* a table (dsm_table_new): zero until a page is used */
	size_t *live, nlive;  /* the pages whose record was ever used (lrc_page) */
	uint32_t *vt;	      /* intervals seen, per node */
	uint32_t *base;	      /* per node: intervals up to base were collected */
	struct interval **iv; /* per node, iv[n][i] is interval base[n] + 1 + i */
	uint32_t *ivcap;
	size_t *dirty, ndirty; /* pages written in the open interval, and hot pages */
	size_t *inval, ninval; /* pages take_records invalidates, in one go */
	size_t *held, nheld;   /* ... and those it left for lrc_push_apply */
	void **arrived;	       /* node 0: each node's barrier payload */
	size_t *arrived_len;
	int gc_now;	   /* this barrier collects */
	uint32_t gc_epoch; /* collections this node has been through */
	uint32_t taking;   /* pages this home is taking back (lrc_class.c) */
	uint32_t *gc_base; /* what it collects: node 0's vt in the barrier's exit */
	int gc_reported;   /* this node said its pages are current */
	int gc_ready;	   /* node 0: nodes that said so */
	uint32_t fetches;  /* fetches in flight */
	/* Diff requests being gathered, one message per writer (lrc_batch_begin,
	   lrc_batch_send): per node, the words of [page, k, k intervals]... */
	int batching;
	uint32_t **bq;
	size_t *bqlen, *bqcap, *bqpages;
	unsigned char *scratch; /* dsm_diff_max(page) bytes: a diff being made */
	/* Pushed diffs (lrc_push.c): own intervals pushed so far; the pages
	   holding pushed diffs; the pages on probation. */
	uint32_t pushed_upto;
	size_t *pushq, npushq;
	size_t *probe, nprobe;
};

extern struct lrc_state lrc;

static inline void *lrc_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		dsm_fatal("lrc: out of memory (%zu bytes)", n);
	return p;
}

static inline void *lrc_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		dsm_fatal("lrc: out of memory (%zu bytes)", n);
	return p;
}

/* Page p's record, for a change: the page joins lrc.live, the list that
   collection walks instead of the whole table. (Reading a record needs no
   call: an unused one is zero, the state of a page nobody has touched.) */
static inline struct lrc_page *lrc_page(size_t p)
{
	struct lrc_page *pg = &lrc.pg[p];
	if (!pg->live) {
		pg->live = 1;
		lrc.live[lrc.nlive++] = p;
	}
	return pg;
}

/* Is page p managed here (its home)? Managers are never dropped. */
static inline int lrc_manages(size_t p)
{
	return dsm_home_of(p) == dsm.node;
}

/* What page p's home sends of it: the page as of this node's last closed
   interval. Writes of the open one are not in it: they reach the other node
   in their interval's diff, which holds only what changed from the twin, so
   a value written and then put back in the open interval would stay wrong
   there for good. */
static inline const void *lrc_served(size_t p)
{
	const struct lrc_page *pg = &lrc.pg[p];
	if (pg->twin && pg->twin_iv == lrc.vt[dsm.node] + 1)
		return pg->twin;
	return dsm_page_alias(p);
}

/* Must page p be fetched before it can be read? */
static inline int lrc_stale(size_t p)
{
	return lrc.pg[p].have == HAVE_NONE || lrc.pg[p].npend;
}

static inline void lrc_send(int dst, uint16_t kind, uint64_t a, uint64_t b, const void *payload,
			    size_t len)
{
	struct dsm_hdr h = {.kind = kind, .a = a, .b = b};
	/* The access given so far this turn (lrc_set_access holds it for the
	   turn's end) is applied first: a message held behind it would wait,
	   copied, and a page sent from the alias view would be read at the
	   turn's end, after later work of the turn may have written it. */
	dsm_region_apply();
	dsm_send(dst, &h, payload, len);
}

/* lrc_config.c: the settings (the protocol's config hook) and the rows */
int lrc_config(void);
void lrc_config_resolve(void); /* at init: private pages, when unset, by the network's speed */
extern const struct dsm_stat lrc_stats[LRC_NSTATS];

/* proto_lrc.c */
void lrc_close_interval(void); /* end the open interval (its record, if it wrote) */
/* Append to *buf (len bytes so far) every record with idx > seen[n], for
   every node; returns the new length. */
size_t lrc_encode_since(const uint32_t *seen, unsigned char **buf, size_t len);
/* Take in records (their wire form), with the interval closed; returns how
   many were new. at_barrier: a barrier's exit, whose lrc_push_apply comes
   next: a page it will bring up to date from pushed diffs is left as it is
   (lrc.held) instead of invalidated. */
size_t lrc_take_records(const void *payload, size_t len, int at_barrier);
void lrc_mem_add(int64_t d); /* metadata kept (dsm.meta_bytes, meta_peak) */
void lrc_set_access(size_t p, uint8_t acc);
void lrc_invalidate(size_t *list, size_t n); /* no access to these pages (sorts them) */
struct interval *lrc_interval_get(uint32_t node, uint32_t idx);
uint64_t lrc_vt_sum(const uint32_t *vt);
void lrc_make_writable(size_t p, int hot);
/* A fault that waited for its page's class goes on (lrc_class.c). */
void lrc_fault_again(struct dsm_req *r);
const struct owndiff *lrc_find_diff(size_t p, uint32_t idx);

/* lrc_fetch.c */
void lrc_batch_begin(void);
void lrc_batch_send(void);
void lrc_start_fetch(size_t p);
void lrc_reply_arrived(size_t p, uint32_t node, const void *data, size_t len);
void lrc_serve_diffs(uint64_t pages, int to, const void *payload, size_t len);
void lrc_diffs_arrived(uint64_t pages, uint32_t from, const unsigned char *data, size_t len);

/* lrc_ship.c: the protocol's shipped-call hooks, and what other nodes are
   known to have (a lower bound of their vector time; the barrier uses
   node 0's) */
const uint32_t *lrc_known_of(int node);
void lrc_known_raise(int node, const uint32_t *vt);
size_t lrc_ship_out(int home, int reads_only, int barrier, void **out);
size_t lrc_ship_in(int from, const void *p, size_t len, int barrier, void **keep);
size_t lrc_ship_back(int to, const void *keep, size_t len, int wrote, int barrier, void **out);
void lrc_ship_back_in(int home, const void *p, size_t len, int barrier);

/* lrc_class.c: which pages are private to one node. The class of page p, or
   CLS_UNKNOWN while its home has not said; ask (LRC_ASK_*): then ask it
   (batched like diff requests, lrc_batch_send). A home decides its own asks
   at once. LRC_ASK_FAULT may take the page from the node it is private to;
   LRC_ASK_AHEAD (a prefetch's, a write walk's, the walk of a
   fault that fetches a shared page) never does. */
enum { LRC_ASK_NOT = 0, LRC_ASK_FAULT = 1, LRC_ASK_AHEAD = 2 };
uint8_t lrc_class_of(size_t p, int ask);
int lrc_class_init(void);
void lrc_class_send(void); /* the asks gathered (lrc_batch_send calls it) */
/* A classification message (PAGE_REQ or PAGE with b != 0, PAGE_FWD): handled? */
int lrc_class_message(const struct dsm_hdr *h, const void *payload, size_t len);

/* lrc_push.c: diffs pushed at a barrier to the nodes that read them */
void lrc_push_subscribe(size_t p, int node); /* node asked for p's diffs */
/* Barrier entry, the interval closed: at most budget bytes of diffs to each
   node (what does not fit is fetched at a fault, as without pushes). */
void lrc_push_send(size_t budget);
void lrc_push_apply(void);		     /* barrier exit, the notices taken in */
void lrc_push_message(const struct dsm_hdr *h, const void *payload, size_t len);
/* Move the pushed diffs that the first nflight pending notices of page p
   name into replies (returned); covered[i] says which notices they are. */
struct rx *lrc_push_claim(size_t p, uint32_t nflight, uint8_t *covered);
void lrc_push_gc(const uint32_t *upto, uint64_t *mem); /* at a collection */
int lrc_push_covers(size_t p); /* is every pending notice's diff of p here? */
int lrc_push_ready(size_t p);  /* would a barrier's exit bring p up to date? */

/* lrc_gc.c */
void lrc_gc_start(void);
void lrc_gc_check(void);
void lrc_gc_free(void);

#endif
