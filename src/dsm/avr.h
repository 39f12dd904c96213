/*
 * avr: what the application thread's checkpoint (avr_ckpt.c) and the
 * communication thread's protocol (proto_avr.c) share while an interval is
 * open. Seed 004 ch. 2; docs/dsm.md "Protocol avr" says what it does.
 *
 * An interval awaits up to LOCUS_DSM_AVR_PENDING pages: the checkpoint
 * page (slot 0) and the pages whose faults the run went on through (slots
 * 1, 2, ... in the order they were added).
 *
 * Who writes what:
 *   - the communication thread opens and closes an interval (requests with
 *     AVR_OPEN and AVR_END) and adds awaited pages to it (AVR_ADD), keeps
 *     the page table, stores an awaited page's contents in its `arrived`
 *     slot when they come and then counts it in `reply`, and sets `conflict`
 *     when a page this node could read is taken or invalidated while the
 *     interval is open;
 *   - the application thread logs accesses to the checkpoint page, twins a
 *     page at its first write, and resolves (compares, merges or rolls back).
 *   - `state` (which pages are tracked, read, twinned) changes under `lock`
 *     on both sides: a page is twinned only while the protocol still lets
 *     this node write it, and marked read only while this node may read it.
 */
#ifndef LOCUS_DSM_AVR_H
#define LOCUS_DSM_AVR_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>

#include "common/atomic.h"
#include "internal.h"

/* Page states while an interval is open (avr.state). A page readable here
   when the interval opened is tracked: inaccessible until the interval's
   first access to it. */
enum {
	AVR_PROT = 1,	  /* tracked, writable here: a write twins it */
	AVR_TWIN = 2,	  /* twinned: written in the interval */
	AVR_LISTED = 4,	  /* in the interval's page list */
	AVR_HELD = 8,	  /* a request for it was held (counted once) */
	AVR_RO = 16,	  /* tracked, a read-only copy */
	AVR_SEEN = 32,	  /* read (or written) in the interval */
	AVR_TRACKED = 64, /* readable only through a fault that sets AVR_SEEN */
	AVR_AWAIT = 128,  /* awaited: its view is the application thread's */
};

#define AVR_MAX_PENDING 8 /* LOCUS_DSM_AVR_PENDING's largest value */

/* avr's settings (LOCUS_DSM_AVR_*, read by its config hook). */
struct avr_settings {
	uint32_t deadlock; /* faults on awaited pages before giving way */
	uint32_t pending;  /* pages one interval may await (1..AVR_MAX_PENDING) */
	uint32_t ask;	   /* ask for the page that ends a run before the wait */
};
extern struct avr_settings avr_set;

/*
 * avr's statistics, the one list (struct dsm_stat): id, the field of
 * locus_dsm_stats, the JSON key, the words of the table line, the kind.
 * Consecutive rows keep the order of the public kinds' enums, so that
 * AVR_ST_CKPT_READ + LOCUS_DSM_AVR_CKPT_* and the like name a row.
 */
#define AVR_STATS(X)                                                                               \
	X(CKPT_READ, avr_checkpoints[0], "avr_ckpt_read", "read intervals", COUNT)                 \
	X(CKPT_WRITE, avr_checkpoints[1], "avr_ckpt_write", "write intervals", COUNT)              \
	X(CKPT_UPGRADE, avr_checkpoints[2], "avr_ckpt_upgrade", "upgrade intervals", COUNT)        \
	X(COMMITS, avr_commits, "avr_commits", "stood", COUNT)                                     \
	X(ROLL_READ, avr_rollbacks[0], "avr_roll_read", "rolled back on a read", COUNT)            \
	X(ROLL_TAKEN, avr_rollbacks[1], "avr_roll_taken", "on a page taken", COUNT)                \
	X(ROLL_DEADLOCK, avr_rollbacks[2], "avr_roll_deadlock", "on the deadlock counter", COUNT)  \
	X(LOGGED, avr_logged, "avr_logged", "accesses logged", COUNT)                              \
	X(TWINS, avr_twins, "avr_twins", "twins", COUNT)                                           \
	X(PROTECTED, avr_protected, "avr_protected", "pages protected", COUNT)                     \
	X(DEFERRALS, avr_deferrals, "avr_deferrals", "held", COUNT)                                \
	X(ADDED, avr_added, "avr_added", "added", COUNT)                                           \
	X(ASKED, avr_asked, "avr_asked", "asked at a run's end", COUNT)                            \
	X(SC_LOCK, avr_sc[0], "avr_sc_lock", "as sc in a lock", COUNT)                             \
	X(SC_PAUSED, avr_sc[1], "avr_sc_paused", "paused", COUNT)                                  \
	X(SC_THREADS, avr_sc[2], "avr_sc_threads", "threads", COUNT)                               \
	X(SC_OTHER, avr_sc[3], "avr_sc_other", "other", COUNT)                                     \
	X(SC_NOCOPY, avr_sc[4], "avr_sc_nocopy", "no copy", COUNT)                                 \
	X(CP_NS, avr_cp_s, "avr_cp_s", "Cp", SECONDS)                                              \
	X(OP_NS, avr_op_s, "avr_op_s", "Op", SECONDS)                                              \
	X(RES_NS, avr_res_s, "avr_res_s", "Res", SECONDS)                                          \
	X(ROL_NS, avr_rol_s, "avr_rol_s", "Rol", SECONDS)                                          \
	X(WAIT_NS, avr_wait_s, "avr_wait_s", "wait", SECONDS)
#define AVR_STAT_ID(id, field, json, label, kind) AVR_ST_##id,
enum { AVR_STATS(AVR_STAT_ID) AVR_NSTATS };

/* Flags of a DSM_REQ_FAULT's b under avr (bit 0 is the access kind). */
#define AVR_WRITE    1u
#define AVR_OPEN     2u	 /* open an interval on page a, unless sc resolves it here */
#define AVR_LOCAL    4u	 /* resolve here, or answer AVR_REMOTE without sending */
#define AVR_END	     8u	 /* close the interval */
#define AVR_ROLLBACK 16u /* ... and it was rolled back */
#define AVR_ADD	     32u /* with AVR_LOCAL: or await page a too, if it can be */

/* Results beyond DSM_LOCAL, DSM_REMOTE and DSM_COMBINED. */
enum { AVR_OPENED = 16, AVR_OPENED_WRITE = 17, AVR_OPENED_UPGRADE = 18, AVR_REMOTE = 19 };

struct avr_shared {
	uint32_t lock;		      /* guards state[] between the two threads */
	uint32_t reply;		      /* futex word: how many awaited pages' requests completed */
	uint32_t done;		      /* bit i: slot i's request completed */
	uint32_t npages;	      /* awaited pages (slots in use) */
	uint32_t conflict;	      /* a readable page lost its access in the interval */
	uint32_t held;		      /* a request held here may close a cycle (avr_hold) */
	uint32_t waiting;	      /* requests held for any of the interval's pages */
	uint32_t open;		      /* communication thread's view: an interval is open */
	size_t page[AVR_MAX_PENDING]; /* by slot: the awaited pages */
	uint8_t *state;		      /* per page: AVR_* flags, 0 outside an interval */
	char *arrived;		      /* slot i's page as it came, at i * page size */
	uint32_t arrived_in;	      /* communication thread: bit i, slot i's came */
	pthread_t thread;	      /* the thread that may speculate */
	uint64_t nudged_ns;	      /* communication thread: when it last nudged */
};

/* The signal with which the communication thread asks the speculating
   thread to resolve: a request waits for the interval and every reply is in
   (a thread spinning on a page it may write takes no fault that would end
   the interval). */
#define AVR_NUDGE_SIGNAL   (SIGRTMAX - 2)
#define AVR_NUDGE_EVERY_NS 500000ull

extern struct avr_shared avr;

/* p's slot among the open interval's awaited pages, or -1. Either thread:
   the application thread's requests are what add slots. */
static inline int avr_slot_of(size_t p)
{
	if (!(ld_relaxed(&avr.state[p]) & AVR_AWAIT))
		return -1;
	for (uint32_t i = 0, n = ld_acquire(&avr.npages); i < n; i++)
		if (avr.page[i] == p)
			return (int)i;
	return -1;
}

/* Every awaited page's request has completed. */
static inline int avr_all_in(void)
{
	return ld_acquire(&avr.reply) >= ld_acquire(&avr.npages);
}

static inline void avr_lock(void)
{
	uint32_t zero = 0;
	for (int spins = 0; !cas_acquire(&avr.lock, &zero, 1); zero = 0)
		if (++spins > 100)
			sched_yield();
		else
			cpu_relax();
}

static inline void avr_unlock(void)
{
	st_release(&avr.lock, 0);
}

/* avr_config.c: the settings (the protocol's config hook) and the rows */
int avr_config(void);
extern const struct dsm_stat avr_stats[AVR_NSTATS];

/* avr_ckpt.c (application side: the protocol's thread hooks) */
int dsm_avr_init(void); /* the init thread, when the protocol is avr */
int dsm_avr_fault(size_t page, char *addr, int write, void *uctx); /* 1: handled */
int dsm_avr_stray(void *uctx); /* 1: the fault was an interval's, rolled back */
void dsm_avr_sync(void);       /* a locus-dsm call: resolve an open interval first */
void dsm_avr_fini(void);

#endif
