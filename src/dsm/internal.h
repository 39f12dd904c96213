/*
 * locus-dsm internals: the runtime state every module shares, the requests
 * application threads hand to the communication thread, and the wire header.
 *
 * Threads and ownership (the one place this is written down):
 *   - application threads: touch shared memory, take the SIGSEGV, post a
 *     struct dsm_req to the communication thread and sleep on its `done` word.
 *     The thread that called init and the threads of its teams (team.c) are
 *     counted in the node's time breakdown; each knows itself through the
 *     thread-local dsm_self, and they share one atomic word (dsm.team_word)
 *     that says how many of them are running and since when none is.
 *   - the communication thread: the only caller of MPI, and the only thread
 *     that reads or writes protocol state (page tables, lock queues, barrier
 *     counts) and changes page protections. Protocol code therefore needs no
 *     locks; everything it shares with application threads is in this file
 *     and goes through atomics (the request stack, counters, resume times).
 */
#ifndef LOCUS_DSM_INTERNAL_H
#define LOCUS_DSM_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "common/sanitizer.h"
#include "locus/dsm.h"

#define DSM_MAX_NODES	    64	   /* copysets are 64-bit masks */
#define DSM_PROTO_STATS_MAX 32	   /* rows of one protocol's statistics */
#define DSM_TAG		    0x4c44 /* the one MPI tag: one tag keeps MPI's per-pair order */
#define DSM_POLL_US	    0	   /* LOCUS_DSM_POLL_US's default */

/* Application thread -> communication thread. */
enum dsm_req_kind {
	DSM_REQ_FAULT,	   /* a = page, b = 1 for write */
	DSM_REQ_LOCK,	   /* a = lock id, c = 1 from a counted thread, 2 from the server */
	DSM_REQ_UNLOCK,	   /* a = lock id */
	DSM_REQ_TRYLOCK,   /* as DSM_REQ_LOCK; result -2 when the lock is taken */
	DSM_REQ_BARRIER,   /* a = value every node must agree on, b = threads of this
			      node that enter (the node's team), c = DSM_BAR_* */
	DSM_REQ_STATS,	   /* a = struct locus_dsm_stats * to send to node 0 */
	DSM_REQ_LEAVE,	   /* the last barrier has passed: say goodbye, stop */
	DSM_REQ_PREFETCH,  /* a = first page, b = page count, result = 1 for write (in) */
	DSM_REQ_CALL,	   /* a shipped call leaving (ship.c: struct ship_call), a = its home */
	DSM_REQ_SHIP_DONE, /* the server ran a batch from another node (ship.c) */
};

/*
 * A request lives on the posting thread's stack (the fault handler cannot
 * allocate) until `done` becomes 1; the communication thread never touches it
 * after completing it.
 */
struct dsm_req {
	struct dsm_req *next;  /* posting stack, then the communication thread's FIFO */
	struct dsm_req *wnext; /* waiters on one page or lock */
	uint32_t kind;
	uint32_t done; /* futex word */
	uint32_t on_bell; /* its thread waits on the doorbell's answer word (comm.c, await_answer) */
	uint64_t a, b, c;
	int64_t result;
	/* Where a fault's time goes (stats: miss steps), monotonic ns: posted
	   (application), taken and sent (the communication thread took it and
	   handed its first message to MPI), recv (the message that completed it
	   was taken out of MPI) and done (completed, just before the wake). */
	uint64_t t_posted, t_taken, t_sent, t_recv, t_done;
};

/* The collective calls, which every node makes in the same order: a barrier
   names its call, and node 0 stops the run when they differ. */
enum dsm_bar_kind {
	DSM_BAR_BARRIER,
	DSM_BAR_ALLOC,
	DSM_BAR_RESET,
	DSM_BAR_FINALIZE,
	DSM_BAR_FINALIZE_STATS,
};

/* Wire header of every message; a page or statistics payload follows it. */
struct dsm_hdr {
	uint16_t kind; /* enum locus_dsm_msg_kind, or DSM_MSG_BYE */
	uint16_t src;
	uint32_t seq; /* per (sender, receiver) pair, gap-free from 1 */
	uint64_t a, b, c;
	uint64_t sent_ns; /* when the sender handed it to MPI (its monotonic clock) */
};

/* Runtime-internal message kinds beyond the public statistics kinds. */
#define DSM_MSG_BYE	    LOCUS_DSM_MSG_KINDS
#define DSM_MSG_ABORT	    (LOCUS_DSM_MSG_KINDS + 1) /* a fatal error: payload, its text */
#define DSM_MSG_PROBE	    (LOCUS_DSM_MSG_KINDS + 2) /* watchdog: node 0 asks a = round */
#define DSM_MSG_STATUS	    (LOCUS_DSM_MSG_KINDS + 3) /* watchdog: the answer (watch.c) */
#define DSM_MSG_LOCK_RECALL (LOCUS_DSM_MSG_KINDS + 4) /* lock manager -> a node keeping it */
#define DSM_MSG_BUNDLE	    (LOCUS_DSM_MSG_KINDS + 5) /* messages to one node, together (comm.c) */

/* Counters: written by one thread, read by any (relaxed atomics). All
   uint64_t: a snapshot is subtracted element by element (stats reset). */
struct dsm_counters {
	uint64_t fault_ns, sync_ns; /* node stalled (no application thread running) */
	uint64_t stall_cpu_ns;	    /* application threads' CPU time in stalls */
	uint64_t team_cpu_ns;	    /* CPU time of team threads that have returned */
	uint64_t work_ns;	    /* communication thread handling CPU, node not stalled */
	uint64_t work_stall_ns;	    /* the same while the node is stalled */
	uint64_t stalls, stall_ns, run_ns, switches;
	uint64_t remote_misses, remote_miss_ns, remote_locks, remote_lock_ns;
	uint64_t lock_handoffs, barrier_waits, barrier_wait_ns;
	uint64_t prefetches, prefetch_unneeded, run_ahead, prefetch_late, prefetch_lost;
	uint64_t run_ahead_lost; /* walks' pages taken for writing, gone again unchanged */
	uint64_t prefetch_ns; /* application threads' wall time issuing prefetches */
	uint64_t faults[LOCUS_DSM_FAULT_KINDS];
	uint64_t faults_in_place; /* resolved by the faulting thread (comm.c, stand_in) */
	uint64_t misses_in_place; /* their request sent by the faulting thread (ditto) */
	uint64_t answers_taken;	  /* answers their waiting thread took, woken by a ring */
	uint64_t answers_spun;	  /* answers their thread found looking, before it slept */
	uint64_t barriers_in_place; /* entered by the thread that made the node enter */
	uint64_t bundles, bundled; /* MPI messages that carried several, and those they carried */
	uint64_t calls_shipped;	  /* calls sent to other nodes (ship.c) */
	uint64_t calls_parked;	  /* calls whose answer waited here for a word (ship.c) */
	uint64_t calls_run_by_comm; /* calls the communication thread ran (ship.c) */
	uint64_t msgs_sent[LOCUS_DSM_MSG_KINDS], bytes_sent[LOCUS_DSM_MSG_KINDS];
	uint64_t msgs_recv[LOCUS_DSM_MSG_KINDS], bytes_recv[LOCUS_DSM_MSG_KINDS];
	uint64_t invalidations, pingpong_deferrals, lock_acquires, barriers;
	uint64_t comm_sleeps, comm_sleep_ns;
	/* A remote miss, step by step (fault.c; struct dsm_req's times). */
	uint64_t miss_steps, miss_post_ns, miss_take_ns, miss_send_ns, miss_reply_ns,
		miss_install_ns, miss_resume_ns;
	/* Page-protocol messages from nodes on this host: handed to MPI there ->
	   taken out here, and requests (page_req, page_fwd) served here:
	   taken out -> answered. */
	uint64_t delivered, deliver_ns, served, serve_ns;
	/* Doorbells (comm.c): rung at peers that slept, and this node's
	   communication thread woken by one (or by a local request). */
	uint64_t bells_rung, bell_wakes;
	/* Protection changes of the region (region.c): calls, and pages they changed. */
	uint64_t protects, protect_pages;
	/* The running protocol's own statistics, indexed by its rows (struct
	   dsm_stat; its PROTO_STAT_ADD sites name them). */
	uint64_t proto[DSM_PROTO_STATS_MAX];
};

#define STAT_ADD(field, v)     faa_relaxed(&dsm.cnt.field, (v))
#define STAT_GET(field)	       ld_relaxed(&dsm.cnt.field)
#define PROTO_STAT_ADD(row, v) faa_relaxed(&dsm.cnt.proto[row], (v))
#define PROTO_STAT_SET(row, v) st_relaxed(&dsm.cnt.proto[row], (v))
#define PROTO_STAT_GET(row)    ld_relaxed(&dsm.cnt.proto[row])

/*
 * One statistic of a protocol: a row of the list its file keeps, the one
 * place that names it. Its counter is dsm.cnt.proto[row]; the row says
 * which field of locus_dsm_stats shows it, its key in the JSON line and its
 * words in the table line (stats.c and api.c walk the list, nothing else
 * spells it).
 */
enum dsm_stat_kind {
	DSM_STAT_COUNT,	  /* counted since the statistics reset */
	DSM_STAT_SECONDS, /* nanoseconds since the reset, shown as seconds (a double) */
	DSM_STAT_GAUGE,	  /* a level (not reset), shown as it is */
};
struct dsm_stat {
	const char *json;  /* the key in locus_dsm_stats_json */
	const char *label; /* its words in the table line */
	size_t field;	   /* offsetof(locus_dsm_stats, ...) */
	enum dsm_stat_kind kind;
};

struct dsm_proto;

struct dsm_config {
	char protocol[32];
	size_t size;
	uintptr_t addr;
	uint64_t delay_ns;	    /* per message */
	uint64_t delay_ns_per_byte; /* per payload byte */
	uint64_t delta_ns;
	int stats; /* 0 none, 1 table, 2 json */
	uint64_t peer_timeout_ns;
	uint32_t lock_handoff; /* consecutive local hand-offs of a lock */
	int lock_cache;	       /* LOCUS_DSM_LOCK_CACHE: a released lock stays until asked for */
	uint32_t lock_keep;    /* LOCUS_DSM_LOCK_KEEP: most locks a node keeps so */
	int take_answers;      /* LOCUS_DSM_TAKE_ANSWERS: the sender of a request takes its answer */
	uint32_t run;	       /* pages fetched per miss of a node walking in order */
	uint64_t poll_ns;      /* the communication thread polls this long after work */
	uint64_t spin_ns;      /* a thread waiting for its answer looks this long before it sleeps */
	int switch_sync;       /* LOCUS_DSM_SWITCH=sync: threads switch on synchronization only */
	int one_node_protocol; /* LOCUS_DSM_ONE_NODE=protocol: no plain region on one node */
	int idle_poll;	       /* LOCUS_DSM_IDLE_POLL: idle CPUs asked to poll during the run (idle.c) */
	int homes;	       /* LOCUS_DSM_HOMES: locus_dsm_alloc's LOCUS_DSM_HOME_BLOCKS or _SPREAD */
};

struct dsm_runtime {
	struct dsm_config cfg;
	int node, nodes;
	const struct dsm_proto *proto;

	/* The region: app is what the application sees (protected page by page),
	   alias is the same memory, always read-write, for the runtime only. */
	char *app;
	char *alias;
	size_t size, page_size, npages;
	size_t alloc_next; /* bump allocator (application thread that calls alloc) */
	/* A fork-style run's shared globals (globals.c): the program's own
	   globals, mapped over the region's first pages (its lower half, unused
	   in such a run): gview is where the program sees them, glen bytes. */
	char *gview;
	size_t glen;

	/* Monotonic ns at which the thread that faulted on a page resumed. */
	uint64_t *resume_ns;

	/* Application -> communication thread. */
	struct dsm_req *posted; /* Treiber stack (the node's doorbell says so: bell.c) */
	uint32_t ready;		/* futex word: 1 started, 2 failed to start */

	struct dsm_counters cnt;
	uint64_t lock_records; /* lock records kept (sync.c) */
	/* Application threads counted in the breakdown: running count in the low
	   TEAM_RUN_BITS, and in the bits above, when it last fell to 0 (ns since
	   t0, wrapping). One word, so that the thread ending a stall of the whole
	   node reads the time the stall started with the count. */
	uint64_t team_word;
	uint64_t t0_ns;
	uint32_t team_size;		   /* threads of the running team (1: none) */
	uint32_t team_max;		   /* largest team since the statistics reset */
	struct locus_dsm_stats *all_stats; /* node 0: every node's statistics at finalize */
};

extern struct dsm_runtime dsm;

/*
 * Protocol module: everything the runtime asks of a consistency protocol.
 * Adding a protocol is its own files and a row of proto.c's table. Hooks
 * may be NULL where a protocol has nothing to do.
 *
 * Before anything starts: config reads the protocol's own variables
 * (every protocol's runs, so that a misspelt or bad one is refused whatever
 * protocol is chosen). Its statistics are the rows of `stats`.
 *
 * On the application threads: thread_init and thread_fini on the thread
 * that calls locus_dsm_init and locus_dsm_finalize; thread_fault in the
 * SIGSEGV handler, before the fault is posted (1: it took the fault);
 * stray_fault in the same handler for a fault outside the region (1: it was
 * a speculative run's, undone: run the thread again);
 * sync_point at the start of every locus-dsm call; fault_mask adds the
 * signals the fault handler keeps blocked.
 *
 * Every other hook runs on the communication thread, or on an application
 * thread standing in for it (comm.c, stand_in: holding its state's lock while
 * it does not work). fault_in_place says, there, whether the faulting thread
 * may handle a fault on page itself: resolve it, or send its request (NULL:
 * every fault goes to the communication thread).
 */
struct dsm_proto {
	const char *name;
	int (*config)(void);
	const struct dsm_stat *stats;
	size_t nstats;
	int (*thread_init)(void);
	void (*thread_fini)(void);
	int (*thread_fault)(size_t page, char *addr, int write, void *uctx);
	int (*stray_fault)(void *uctx);
	void (*sync_point)(void);
	void (*fault_mask)(sigset_t *mask);
	int (*init)(void);
	void (*fault)(struct dsm_req *r); /* complete r (dsm_req_done) when resolved */
	int (*fault_in_place)(size_t page, int write);
	void (*message)(const struct dsm_hdr *h, const void *payload, size_t len);
	/* Run due timers; return the next deadline (monotonic ns), or UINT64_MAX. */
	uint64_t (*tick)(uint64_t now);
	void (*prefetch)(size_t first, size_t count, int write); /* may be NULL */
	/* A lock granted to this node (NULL: nothing to do), with the payload
	   lock_pass made at the last holder (NULL, 0 when the manager granted
	   directly). A release needs no hook: lock_pass is where a lock leaves. */
	void (*acquire)(uint32_t lock, const void *grant, size_t len);
	/* Locks that carry data (sync.c says the route); *out is malloc'd or
	   NULL, the return value its length. */
	size_t (*lock_ask)(void **out);
	size_t (*lock_pass)(uint32_t lock, const void *ask, size_t len, void **out);
	/* Barriers that carry data: enter (every node, its team gathered), arrive
	   (node 0, each node's enter payload), leave_for (node 0 once all have
	   arrived, for node 0 first, then 1..nodes-1), leave (every node, with
	   its leave_for payload; 0: the protocol calls dsm_sync_barrier_done). */
	size_t (*barrier_enter)(void **out);
	void (*barrier_arrive)(int node, const void *p, size_t len);
	size_t (*barrier_leave_for)(int node, void **out);
	int (*barrier_leave)(const void *p, size_t len);
	/* Is page p mapped writable at this node now (communication thread)?
	   The communication thread runs the runtime's word functions itself on
	   such pages (ship.c). May be NULL: never. */
	int (*writable)(size_t p);
	/* Shipped calls that carry data (lrc; ship.c says the route): ship_out
	   (a batch of calls leaving for home), ship_in (a batch arriving from
	   node `from`, before it runs; what it keeps for ship_back in *keep,
	   malloc'd, its length returned), ship_back (the batch has run: the
	   answer's payload), ship_back_in (the answers arriving, before any
	   call completes). reads_only: every call of the batch only reads (an
	   atomic load); wrote: a call of the batch may have written; barrier:
	   a call of the batch is an arrival at a barrier object (a barrier's
	   entry and exit for the protocol, as locus_dsm_barrier's are). */
	size_t (*ship_out)(int home, int reads_only, int barrier, void **out);
	size_t (*ship_in)(int from, const void *p, size_t len, int barrier, void **keep);
	size_t (*ship_back)(int to, const void *keep, size_t len, int wrote, int barrier,
			    void **out);
	void (*ship_back_in)(int home, const void *p, size_t len, int barrier);
};

const struct dsm_proto *dsm_proto_find(const char *name);
/* Every protocol's config hook (config.c, at init). */
int dsm_proto_config_all(void);
/* Every protocol, in table order (stats.c prints each one's rows). */
const struct dsm_proto *dsm_proto_at(size_t i);

/* The start of every locus-dsm call (the running protocol's sync_point). */
static inline void dsm_sync_point(void)
{
	if (dsm.proto && dsm.proto->sync_point)
		dsm.proto->sync_point();
}
/* A fault on page p (communication thread, or a thread in its place): how
   many pages after p to take with it, without waiting: more as the node
   walks pages in order, or a column (*step pages at a time, up or down: p +
   step, p + 2 step, ...), up to cfg.run - 1; none for a fault elsewhere.
   write picks one of two sets of walks (sc: reads and writes walk apart;
   lrc: its fetches walk in one, its writes to valid pages in the other).
   Every page it names is in the region: dsm_walk_page(p, *step, i), i from
   1 to the count. */
size_t dsm_run_ahead(size_t p, int write, ptrdiff_t *step);
static inline size_t dsm_walk_page(size_t p, ptrdiff_t step, size_t i)
{
	return p + (size_t)step * i; /* (a negative step wraps, as intended) */
}
const char *dsm_proto_names(void);
extern const struct dsm_proto dsm_proto_sc;
extern const struct dsm_proto dsm_proto_lrc;
extern const struct dsm_proto dsm_proto_avr;
/* A run of one node (proto_one.c): the region plain memory, whatever the
   protocol, unless LOCUS_DSM_ONE_NODE=protocol (cfg.one_node_protocol). */
extern const struct dsm_proto dsm_proto_one;

/*
 * Another thread's CPU clock (pthread_getcpuclockid): it stops existing when
 * that thread exits, and then reads as 0, never as garbage. Clocks that
 * cannot fail (monotonic, the calling thread's) use clock_ns.
 */
static inline uint64_t dsm_clock_ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts) != 0)
		return 0;
	return timespec_ns(&ts);
}

/* What an application thread is to the runtime (thread-local; initial-exec
   because the fault handler reads it). */
struct dsm_thread {
	int counted;		 /* the init thread, a team thread or a spawned one */
	int spawned;		 /* started by locus_dsm_spawn */
	int id, team;		 /* index in its team, and the team's size (0, 1 outside) */
	uint64_t resumed_cpu_ns; /* its CPU clock when it last read it leaving a stall */
	uint64_t resumed_ns;	 /* the wall clock (monotonic) then */
	uint64_t unread_ns;	 /* since then: stalls taken to be all on the CPU (team.c) */
	struct dsm_stall *stall; /* the stall it is in whose CPU clock is not read yet */
	int locks;		 /* locus-dsm locks it holds (avr resolves as sc inside) */
	int avr_paused;		 /* locus_dsm_avr_pause depth */
	uint64_t bars[2];	 /* in a team: its barrier and team-barrier calls */
};
extern __thread struct dsm_thread dsm_self __attribute__((tls_model("initial-exec")));

/* The calling thread's run counts from here: its CPU clock read now (cpu)
   and the wall clock (team.c). */
static inline void dsm_self_resumed(uint64_t cpu, uint64_t wall)
{
	dsm_self.resumed_cpu_ns = cpu;
	dsm_self.resumed_ns = wall;
	dsm_self.unread_ns = 0;
}

/* Why an application thread stalls. */
enum dsm_stall_kind { STALL_FAULT, STALL_LOCK, STALL_BARRIER, STALL_OTHER };

/* How a request ended, as its result: what the statistics tell apart. */
enum { DSM_LOCAL = 0, DSM_REMOTE = 1, DSM_COMBINED = 2, DSM_BUSY = -2 };

/*
 * A stall of an application thread (fault handler, DSM call), counted when
 * the thread is a counted one. Async-signal-safe: atomics and clock_gettime.
 */
struct dsm_stall {
	uint64_t wall_ns, cpu_ns;
	int cpu_read; /* cpu_ns is read (not yet, in a lazy stall that has not waited) */
	int counted, kind;
	int gave; /* gave up the run token (switch policy sync) */
	struct dsm_stall *outer; /* the thread's lazy stall before this one */
};

#define TEAM_RUN_BITS 12
#define TEAM_RUN_MASK ((1ull << TEAM_RUN_BITS) - 1)

/* team.c: the running count. stop: one fewer runs (returns how many still
   do); resume: one more, returns how long the node was stalled if none was
   running, else 0. now is monotonic ns. */
uint32_t dsm_team_stop(uint64_t now);
uint64_t dsm_team_resume(uint64_t now);
static inline int dsm_node_stalled(void)
{
	return (ld_relaxed(&dsm.team_word) & TEAM_RUN_MASK) == 0;
}

void dsm_stall_begin(struct dsm_stall *s, int kind);
/* The same for a stall whose only waits are in dsm_call: its CPU clock is
   read only when it waits (dsm_stall_waits), as a read costs about as much
   as a lock taken in place (a system call: 170 ns here); a stall that never
   waited counts its wall time as CPU time. */
void dsm_stall_begin_lazy(struct dsm_stall *s, int kind);
/* The thread is about to wait in its lazy stall, if it is in one. */
void dsm_stall_waits(void);
/* Ends the stall at wall time now (monotonic ns); how = the request's result.
   Returns when the thread runs again: now, or later if it waited for the run
   token (switch policy sync). */
uint64_t dsm_stall_end(struct dsm_stall *s, uint64_t now, int64_t how);

/* Refuse a call that must not come from inside a team. */
void dsm_outside_team(const char *call);
/* Spawned threads (spawn.c) as counted application threads (team.c):
   created (on the call server, before the thread exists), enter (the new
   thread, first; returns its CPU clock), leave (the same thread, last). The
   init thread of a rank above 0 of a fork-style run waits (1) until the run
   ends (0), uncounted meanwhile. */
int dsm_spawned_created(void); /* 0: too many, the thread runs uncounted */
uint64_t dsm_spawned_enter(int counted);
void dsm_spawned_leave(uint64_t cpu0);
void dsm_init_waits(int waits);
/* The statistics' thread count: the most counted threads at once; reset:
   from those counted now. */
void dsm_note_threads(int reset);
/* The name spawned threads take (spawn.c): the init thread's, noted at init. */
void dsm_spawn_note_name(void);
/* The end of locus_dsm_init: spawns may start threads here from now on. */
void dsm_spawn_open(void);
/* idle.c: the machine's idle CPUs asked to poll while the run lasts (LOCUS_DSM_IDLE_POLL). */
void dsm_idle_hold(void);
int dsm_idle_held(void);
int dsm_idle_error(void); /* why the request could not be made: an errno, or 0 */
void dsm_idle_release(void);
/* keep.c: buffers kept for reuse. A buffer of at least n bytes (*cap: its
   size, for dsm_keep_put), NULL without memory; given back with its cap.
   Under a sanitizer (DSM_KEEP_NOTHING) every buffer goes to malloc and back to
   free, and every diff too, so that a use after free or an overrun is seen. */
#define DSM_KEEP_NOTHING (LOCUS_ASAN || LOCUS_TSAN)
void *dsm_keep_get(size_t n, size_t *cap);
void dsm_keep_put(void *p, size_t cap);
void *dsm_keep_page(void); /* a buffer of dsm.page_size bytes, NULL without memory */
void dsm_keep_page_put(void *p);
void dsm_keep_release(void); /* at finalize: everything kept is freed */
/* slab.c: lrc's diffs, cut from slabs (NULL without memory). */
void *dsm_slab_alloc(size_t n);
void dsm_slab_free(void *p);
/* A team thread enters a barrier (k = 0) or team barrier (k = 1): stop the
   node if a thread of its team has returned without entering as many. */
void dsm_team_count_barrier(int k);

/* Where the runtime is in its life (api.c): calls are refused, with a
   message naming the call, before init, after finalize and in a child of
   fork(), which is not a node. */
enum { DSM_BEFORE, DSM_RUNNING, DSM_AFTER };
extern int dsm_phase;
extern int dsm_forked; /* this process is a child of fork() of a node */
void dsm_require_running(const char *call);
/* A child of fork() made a DSM call or touched the region (what): say so, exit. */
void dsm_fatal_child(const char *what) __attribute__((noreturn));

/* config.c */
int dsm_config_read(struct dsm_config *c);
/* Variable name as a number (0 and *out untouched when unset; suffixes: k, m
   or g allowed); -1 with a message naming it when it is not one. */
int dsm_env_u64(const char *name, uint64_t *out, int suffixes);
/* Refuse, with a message, a PREFIX... variable not in known (NULL-terminated). */
int dsm_env_known(const char *prefix, const char *const *known);

/* table.c: per-page tables, zero until written and paid for by the pages
   written, not by the region's size. */
void *dsm_table_new(size_t count, size_t size);
void dsm_table_free(void *t, size_t count, size_t size);

/* home.c: a page's home, its manager under every protocol and where its
   shipped calls run (as its allocation dealt it; p % nodes by default). */
int dsm_home_init(void);
void dsm_home_fini(void);
int dsm_home_of(size_t p);
/* A collective allocation's pages: at node home, or dealt as
   LOCUS_DSM_HOME_SPREAD or LOCUS_DSM_HOME_BLOCKS say (home.c). */
void dsm_home_deal(size_t first, size_t count, int home);
/* Where a walk from page p stops (dsm_run_ahead): below the heap, the first page
   not yet allocated (the allocation that takes it may still deal it to another home,
   and a page's protocol state, made at its first use, keeps the home it had
   then); in the heap, whose homes never change, the region's end. */
size_t dsm_walk_end(size_t p);
/* Where a walk down from page p stops: the heap's first page, or the
   region's (below it, every page of the collective allocations below p is
   allocated). */
size_t dsm_walk_start(size_t p);
/* The DSM lock of a shared address: its place in the region in 8-byte
   words, with the top bit set (programs' own lock ids are mostly small). */
uint32_t dsm_addr_lock(const void *addr);
/* The shared heap: its first page, node's partition, an address's owner. */
size_t dsm_heap_first(void);
void dsm_heap_partition(int node, uintptr_t *lo, uintptr_t *hi);
int dsm_heap_owner(const void *addr); /* -1 outside the heap */

/* globals.c: the program's globals, copied to where a spawned thread runs */
int dsm_globals_init(void);
size_t dsm_globals_size(void);
long dsm_globals_offset(const void *addr);
/* The program's globals that a fork-style run shares (linked with
   globals.ld): [*lo, *hi), page-aligned; 0 when it has none. */
int dsm_globals_shared(char **lo, char **hi);
extern int dsm_fork_request; /* locus_dsm_start: map the shared globals */
void dsm_globals_save(void *buf);
int dsm_globals_differ(const void *buf);
void dsm_globals_load(const void *buf);

/* spawn.c: a fork-style run (locus_dsm_start) */
extern int dsm_fork_mode;
void dsm_fork_finish(void); /* rank 0, at finalize */
int dsm_fork_is_main(void); /* the thread that called locus_dsm_start */

/* malloc.c */
void dsm_malloc_init(void);
void dsm_malloc_fini(void);

/* region.c */
int dsm_region_map(void);
void dsm_region_unmap(void);
void dsm_region_keep_globals(void);
void dsm_region_protect(size_t page, size_t count, int prot);
/* Held to the end of the turn (comm.c applies it, and sends what followed
   it, before the communication thread's lock is let go or a request
   completes); applied at once by the call above. */
void dsm_region_protect_later(size_t page, int prot);
int dsm_region_held(void);
void dsm_region_apply(void);
static inline char *dsm_page_alias(size_t page)
{
	return dsm.alias + page * dsm.page_size;
}
/* An address as the region knows it: one among the shared globals becomes
   the region address of the same memory; any other stays as it is. */
static inline const char *dsm_canon(const void *addr)
{
	const char *a = addr;
	if (dsm.gview && a >= dsm.gview && a < dsm.gview + dsm.glen)
		return dsm.app + (a - dsm.gview);
	return a;
}

/* fault.c */
int dsm_fault_install(void);
void dsm_fault_uninstall(void);

/* comm.c: application side */
int dsm_comm_start(void);
void dsm_comm_join(void);
void dsm_call(struct dsm_req *r); /* post and sleep until done */
void dsm_post(struct dsm_req *r); /* post and return (done says when) */
/* A remote miss's steps into the statistics: r completed, the fault taken at
   t_fault, the thread running again at resumed. */
void dsm_miss_steps(const struct dsm_req *r, uint64_t t_fault, uint64_t resumed);
/* Doorbells (bell.c): a node's wake word, shared with the nodes of its host. */
#define DSM_BELL_NAME 64
int dsm_bell_create(char name[DSM_BELL_NAME]); /* 0, or -1: no shared page (name "") */
int dsm_bell_open(int node, const char *name); /* map a peer's; 0 or -1 */
void dsm_bell_unlink(void);		       /* remove this node's file (signal-safe) */
void dsm_bell_close(void);		       /* unmap the peers' */
/* after msgs messages to node (one MPI message: a bundle carries several,
   each numbered in the pair's sequence): 1 if it woke it */
int dsm_bell_ring(int node, uint32_t msgs);
void dsm_bell_ring_self(void);		       /* a local request */
uint32_t dsm_bell_seen(void);		       /* the own word, before looking for work */
uint64_t dsm_bell_sent(int node); /* messages node said it handed to MPI for this one */
int dsm_bell_sleep(uint32_t seen, uint64_t ns); /* 1 if rung since seen */
int dsm_bell_peers(void);			/* peers whose doorbell this node reaches */
/* Threads waiting for the answer to a request they sent (comm.c, await_answer). */
void dsm_bell_answer_enter(void);		      /* rings wake one of them from now */
void dsm_bell_answer_leave(void);		      /* ... no more from this thread */
uint32_t dsm_bell_answer_seen(void);		      /* the answer word, before a look */
int dsm_bell_shared(void); /* the own doorbell is on a shared page: peers can ring it */
int dsm_bell_answer_sleep(uint32_t seen, uint64_t ns); /* until rung or woken (1), or ns */
void dsm_bell_answer_wake(void);		      /* an answer came: wake them all */
void dsm_bell_answer_wake_waiting(void); /* the same, if any waits (a word moved) */
void dsm_req_forget(void);			/* a request taken that completes no one */
/* comm.c: communication thread side */
void dsm_req_done(struct dsm_req *r, int64_t result);
void dsm_send(int dst, const struct dsm_hdr *h, const void *payload, size_t len);
/* Between these, messages dsm_send is given are held, to leave together at
   the release (one MPI message for each node: comm.c, send_held); they
   nest. Communication thread (or its stand-in) only, as dsm_send. */
void dsm_send_hold(void);
void dsm_send_release(void);
void dsm_comm_leaving(void);	/* past the last barrier: peers may exit now */
uint64_t dsm_comm_cpu_ns(void); /* CPU time of the communication thread */
int dsm_comm_pending(void);	/* messages not yet delivered (delayed or in MPI) */
void dsm_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* sync.c: locks, barriers, finalize handshake (communication thread) */
void dsm_sync_request(struct dsm_req *r);
/* Whether an application thread may handle r in the communication thread's
   place (comm.c, stand_in; under its lock): a lock request, the release of
   a lock this node holds, or a barrier, under a protocol that runs no part
   of a fault on the faulting thread. */
int dsm_sync_can_stand_in(const struct dsm_req *r);
/* comm.c: at a word's home, until *word no longer holds seen, taking the
   messages out of MPI meanwhile; 0 if this thread may not (sleep on the word). */
int dsm_await_word(const uint64_t *word, uint64_t seen);
/* comm.c: work of the communication thread's that nobody waits for (a
   parked call's answer): done on this thread when that thread's state is
   free (as a stand-in), else posted to it. r may be gone on return. */
void dsm_take_or_post(struct dsm_req *r);
/* r, a barrier handled in place, made its node enter the barrier, which
   goes on: its end comes in messages from other nodes (under comm_mu). */
int dsm_sync_barrier_entered(const struct dsm_req *r);
void dsm_sync_message(const struct dsm_hdr *h, const void *payload, size_t len);
int dsm_sync_done(void); /* goodbye said and heard from every node */
/* What this node waits for and holds, as text for the watchdog; returns 0
   when a thread the runtime does not count holds a lock (it may be running). */
int dsm_sync_describe(char *buf, size_t cap);

/* ship.c: shipped calls (docs/dsm.md, "Shipping") */
int dsm_ship_start(void);	       /* the server thread, at init */
void dsm_ship_stop(void);	       /* at finalize, after the last barrier */
void dsm_ship_take(struct dsm_req *r); /* communication thread: DSM_REQ_CALL */
void dsm_ship_done(struct dsm_req *r); /* communication thread: DSM_REQ_SHIP_DONE */
void dsm_ship_flush(void);	       /* communication thread: send what was taken */
void dsm_ship_message(const struct dsm_hdr *h, const void *payload, size_t len);
int dsm_ship_busy(void); /* the server runs or has calls to run (the watchdog) */
/* A call (post) at state's home, run there under DSM lock `lock` (cs_home.c). */
uint64_t dsm_ship_run(void *state, uint32_t lock, locus_fn fn, uint64_t a, uint64_t b, uint64_t c);
int dsm_ship_post(void *state, uint32_t lock, locus_fn fn, uint64_t a, uint64_t b, uint64_t c,
		  locus_cb cb, void *ctx);
int dsm_ship_running(void);   /* the server is in the middle of a batch */
int dsm_ship_on_server(void); /* the calling thread is this node's server */
/*
 * A function of hardware atomics on state's words (atomic.c, objects.c), at
 * state's home: where that is this node, the calling thread runs it at once
 * (the server would run the same instructions on the same memory, a thread
 * hop later); elsewhere it is shipped. Not where the protocol may run the
 * caller speculatively (avr's thread_fault, with other nodes): a rolled-back
 * run must not have done an atomic. dsm_atomic_here: that case.
 */
int dsm_atomic_here(const void *state);
uint64_t dsm_call_atomic(const char *what, locus_fn fn, void *state, uint64_t a, uint64_t b,
			 uint64_t c);
/* The same for a function that only reads state's words (an atomic load):
   under lrc no interval ends for it at either node. */
uint64_t dsm_call_atomic_load(const char *what, locus_fn fn, void *state);
/* The same for one that only reads, with an argument (a word's value seen):
   a wait whose answer the home may park (dsm_ship_park). */
uint64_t dsm_call_atomic_wait(const char *what, locus_fn fn, void *state, uint64_t seen);
/* The same for a barrier object's arrival (the protocol's ship hooks see it). */
uint64_t dsm_call_atomic_barrier(const char *what, locus_fn fn, void *state, uint64_t a);
/* The bytes from state that fn, one of the runtime's word functions
   (atomic.c, objects.c), reads and writes; 0 for any other function. Such a
   function touches nothing else, never waits, and may run on the
   communication thread where its words are writable (ship.c). */
size_t dsm_atomic_fn_len(locus_fn fn);
size_t dsm_object_fn_len(locus_fn fn);
/* What this node's threads wait at in objects.c (a barrier object, a
   condition, a semaphore), for the deadlock watchdog: "waits at barrier
   object 0x... (home node 1, 2 participants): 1 thread" and so on, written
   into buf from `at` on (after a "; " when at > 0, as dsm_sync_describe's
   parts are); where its text ends, past cap when it did not fit. */
size_t dsm_objects_describe(char *buf, size_t cap, size_t at);
/* Whether an atomic of this node's threads wrote at this node since the last
   call (and no longer): the next answer to shipped calls must end the
   interval (lrc_ship.c). */
int dsm_ship_release_take(void);
void dsm_ship_hold(int on); /* the server starts no batch while held (lrc's collection) */
/*
 * A shipped call's function, run at its home for a caller that waits (by the
 * server, or by the communication thread: ship.c, run_here): its answer
 * (result) goes only once *word no longer holds seen and someone has called
 * dsm_ship_unpark(word) — a barrier's generation, which the last arrival
 * moves. 1 if parked; 0 if it cannot wait so (not a call of a batch being
 * run: a home thread's own atomic, or a call the server makes to itself);
 * -1 if the word has moved already.
 */
int dsm_ship_park(const uint64_t *word, uint64_t seen, uint64_t result);
void dsm_ship_unpark(const uint64_t *word); /* after moving *word: answer its parked calls */

/* cs_home.c: give locus_cs "home" and the guard of shared state (1), or take
   them back (0) */
void dsm_cs_provide(int on);

/* watch.c: the deadlock watchdog (communication thread) */
void dsm_watch_tick(uint64_t now);
void dsm_watch_message(const struct dsm_hdr *h, const void *payload, size_t len);
extern uint64_t dsm_progress;	  /* requests taken and messages handled, all kinds but
				     the watchdog's own and heartbeats */
void dsm_sync_barrier_done(void); /* a barrier_leave that returned 0 has finished */

#endif
