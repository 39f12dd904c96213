/*
 * locus-dsm: page-based distributed shared memory over MPI.
 *
 * Every node (MPI rank, started with `mpiexec -n N program`) sees one shared
 * region at the same virtual address. Pages move between nodes on demand when
 * the application touches them; the consistency protocol is chosen at run
 * time with LOCUS_DSM_PROTOCOL: "sc" (default; sequential consistency with a
 * single writer and write-invalidate), "lrc" (lazy release consistency with
 * multiple writers: programs that order their shared accesses with locus-dsm
 * locks and barriers see sequentially consistent results), or "avr" (sc that
 * keeps computing through a fault and rolls back if what it read was stale;
 * see docs/dsm.md for what a program must wrap).
 *
 * Threads: a node runs several application threads with locus_dsm_parallel
 * (a team: the caller and threads-1 new ones). A thread that faults, waits
 * for a lock or a barrier blocks alone while the node's other threads run;
 * faults on a page already requested, and lock requests behind a local
 * holder, are combined on the node (see docs/dsm.md, "Threads per node").
 * Other threads may also touch shared memory and take locks, but only team
 * threads are counted in the time breakdown. Only the runtime's communication
 * thread calls MPI. Collective calls (init, alloc, stats_reset, finalize) are
 * made by the thread that called init, outside any team, in the same order on
 * every node; barriers too, in the same number. Calls that break these rules,
 * calls before init or after finalize, finalize with a lock held, and a
 * deadlock between nodes end the run with a message naming the mistake
 * (docs/dsm.md, "What the runtime checks").
 *
 * SIGSEGV: the runtime takes its page faults as SIGSEGV. A program may still
 * install its own SIGSEGV handler, before init or after, with sigaction or
 * signal (this library defines both, and passes other signals on): faults
 * inside the shared region are the runtime's, every other SIGSEGV goes to the
 * program's handler with sigaction's semantics.
 *
 * fork: a child of fork() is not a node. The region is detached in the child;
 * it may exec or exit, and ends with LOCUS_DSM_EXIT_CHILD and a message if it
 * touches the region or calls locus-dsm.
 *
 * Environment (read by locus_dsm_init; see docs/dsm.md):
 *   LOCUS_DSM_PROTOCOL        protocol name: sc, lrc or avr (sc)
 *   LOCUS_DSM_SIZE            shared region size in bytes, suffix k/m/g (256g): whole
 *                             pages, up to 16384g; a node's memory grows with the
 *                             pages it touches, not with this size. The lower half
 *                             is for locus_dsm_alloc, the upper the shared heap
 *   LOCUS_DSM_STDIN           a fork-style run (locus_dsm_start): a file rank 0 reads
 *                             as its standard input (mpiexec forwards at most 64 KB)
 *   LOCUS_DSM_ONE_NODE        plain (default): a run of one node maps its region as
 *                             plain memory, whatever the protocol (nothing to keep
 *                             consistent: no faults, twins or diffs); protocol: the
 *                             protocol's machinery on one node too
 *   LOCUS_DSM_ASLR            keep: a fork-style run keeps address randomization (by
 *                             default it starts the program again without, so that
 *                             libraries lie at one address on every node)
 *   LOCUS_DSM_ADDR            where the region is mapped on every node (0x7e9000000000;
 *                             a region above 384g ends at 0x7ef000000000), at or above 4g
 *   LOCUS_DSM_DELAY_US        emulated transport delay per message, microseconds (0;
 *                             with a page's per-byte delay, under half the peer timeout)
 *   LOCUS_DSM_DELAY_NS_PER_BYTE  emulated transport delay per payload byte, ns (0)
 *   LOCUS_DSM_NETWORK         none, rdma, tcp or seed: the two delays above by name
 *                             (docs/dsm.md); either variable overrides its half
 *   LOCUS_DSM_DELTA_US        minimum residence of a page after a fault (50)
 *   LOCUS_DSM_STATS           statistics at finalize: 0 none, 1 table (default), json
 *   LOCUS_DSM_PEER_TIMEOUT_S  a silent peer is declared dead after this long (10)
 *   LOCUS_DSM_LOCK_HANDOFF    consecutive hand-offs of a lock between threads of a
 *                             node before it goes back to its manager (8; 0: never)
 *   LOCUS_DSM_LOCK_CACHE      1: a lock released with no local waiter stays on its
 *                             node until another node asks (default); 0: it goes back
 *   LOCUS_DSM_LOCK_KEEP       most locks a node keeps so; keeping one more gives the
 *                             longest kept back (1024; 1 to 1000000)
 *   LOCUS_DSM_TAKE_ANSWERS    1: a thread that sent its own request takes the answer
 *                             out of MPI itself (default); 0: the communication
 *                             thread takes every message and wakes it
 *   LOCUS_DSM_SWITCH          all: another thread of the node runs during any stall
 *                             (default); sync: a team runs one thread at a time, which
 *                             gives way only during lock, barrier and team waits
 *   LOCUS_DSM_RUN             pages fetched per miss of a node walking in order (32)
 *   LOCUS_DSM_SPIN_US         a thread that sent its own request (not a write miss)
 *                             looks for the answer this long, yielding the CPU
 *                             between looks, before it sleeps (30; 0: at once)
 *   LOCUS_DSM_IDLE_POLL       1: while a run of several nodes lasts, the machine's
 *                             idle CPUs are asked to poll instead of halting, so
 *                             that a woken thread runs at once (/dev/cpu_dma_latency,
 *                             where it may be opened: root; x86 cpuidle drivers
 *                             honour it); 0: the kernel chooses (1)
 *   LOCUS_DSM_POLL_US         the communication thread polls this long while a fault
 *                             waits for its answer (0: never, it sleeps and is rung)
 *   LOCUS_DSM_HOST            a label: nodes of one machine with different labels behave
 *                             as on different hosts (no doorbells, no pid watching)
 *   LOCUS_DSM_GC_BYTES        lrc: collect at a barrier once a node keeps more (32m)
 *   LOCUS_DSM_AVR_DEADLOCK    avr: faults on awaited pages, while a request for one
 *                             of the interval's pages waits, before giving way (30)
 *   LOCUS_DSM_AVR_PENDING     avr: pages one interval may await, 1 to 8 (1: a fault
 *                             on a second page ends the run, as in seed 004)
 *   LOCUS_DSM_AVR_ASK         avr: 1 asks for the page that ended a run at once,
 *                             before the wait (1); 0 after the interval, as the seed does
 */
#ifndef LOCUS_DSM_H
#define LOCUS_DSM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "locus/export.h"
#include "locus/fn.h"

LOCUS_BEGIN_DECLS

/* Exit status of a node that leaves because another node failed. */
#define LOCUS_DSM_EXIT_PEER 3
/* Exit status of a node that exits without locus_dsm_finalize. */
#define LOCUS_DSM_EXIT_EARLY 4
/* Exit status of a child of fork() that touched the shared region or made a
   locus-dsm call (a child of fork() is not a node). */
#define LOCUS_DSM_EXIT_CHILD 5

/* Most application threads one node's team may have. */
#define LOCUS_DSM_MAX_THREADS 1024

/* Message kinds, for the statistics (indices into the per-kind arrays). */
enum locus_dsm_msg_kind {
	LOCUS_DSM_MSG_PAGE_REQ = 0, /* faulting node -> page manager */
	LOCUS_DSM_MSG_PAGE_FWD,	    /* manager -> current owner */
	LOCUS_DSM_MSG_PAGE,	    /* owner -> requester: contents and copyset */
	LOCUS_DSM_MSG_INV,	    /* new writer -> holder of a copy */
	LOCUS_DSM_MSG_INV_ACK,	    /* holder -> new writer */
	LOCUS_DSM_MSG_LOCK_ACQ,	    /* node -> lock manager */
	LOCUS_DSM_MSG_LOCK_GRANT,   /* lock manager -> node */
	LOCUS_DSM_MSG_LOCK_REL,	    /* node -> lock manager */
	LOCUS_DSM_MSG_BAR_ENTER,    /* node -> node 0 */
	LOCUS_DSM_MSG_BAR_LEAVE,    /* node 0 -> every node */
	LOCUS_DSM_MSG_HEARTBEAT,    /* liveness, when nothing else was sent */
	LOCUS_DSM_MSG_STATS,	    /* statistics to node 0 at finalize */
	LOCUS_DSM_MSG_LOCK_PASS,    /* lrc: lock manager -> last holder, who grants */
	LOCUS_DSM_MSG_DIFF_REQ,	    /* lrc: faulting node -> writer of a page */
	LOCUS_DSM_MSG_DIFF,	    /* lrc: writer -> faulting node: its diffs of the page */
	LOCUS_DSM_MSG_GC,	    /* lrc: garbage collection rounds at a barrier */
	LOCUS_DSM_MSG_SHIP,	    /* shipped calls -> their home */
	LOCUS_DSM_MSG_SHIP_REPLY,   /* home -> caller: the calls' results */
	LOCUS_DSM_MSG_KINDS
};

/* Fault kinds, for the statistics. */
enum locus_dsm_fault_kind {
	LOCUS_DSM_FAULT_READ = 0, /* no copy: fetch a read-only copy */
	LOCUS_DSM_FAULT_WRITE,	  /* no copy: fetch the page and ownership to write */
	LOCUS_DSM_FAULT_UPGRADE,  /* read-only copy, write access: invalidate the others */
	LOCUS_DSM_FAULT_LOCAL,	  /* resolved without messages (owner's lazy mapping, or
				     another thread's fault had already resolved it) */
	LOCUS_DSM_FAULT_COMBINED, /* waited for a request another thread of this node
				     had already sent for the page: nothing sent */
	LOCUS_DSM_FAULT_KINDS
};

/* avr: how an interval opened, why one was rolled back, why a fault was
   resolved as sc does (indexes of the statistics' arrays). */
enum {
	LOCUS_DSM_AVR_CKPT_READ = 0, /* a read fault on a page without a copy */
	LOCUS_DSM_AVR_CKPT_WRITE,    /* a write fault: the page and ownership asked for */
	LOCUS_DSM_AVR_CKPT_UPGRADE,  /* a write to an owned read-only copy */
	LOCUS_DSM_AVR_CKPT_KINDS
};
enum {
	LOCUS_DSM_AVR_ROLL_READ = 0, /* a logged byte differs in the page that came */
	LOCUS_DSM_AVR_ROLL_TAKEN,    /* a page readable here was invalidated or taken */
	LOCUS_DSM_AVR_ROLL_DEADLOCK, /* the deadlock counter, before the reply came */
	LOCUS_DSM_AVR_ROLL_KINDS
};
enum {
	LOCUS_DSM_AVR_SC_LOCK = 0, /* inside a locus-dsm lock */
	LOCUS_DSM_AVR_SC_PAUSED,   /* between locus_dsm_avr_pause and _resume */
	LOCUS_DSM_AVR_SC_THREADS,  /* a team runs, or not the init thread */
	LOCUS_DSM_AVR_SC_OTHER,	   /* the stack cannot be saved (not the thread's own) */
	LOCUS_DSM_AVR_SC_NOCOPY,   /* no copy of the page was ever here: nothing to run on */
	LOCUS_DSM_AVR_SC_KINDS
};

/*
 * One node's statistics, since init or the last locus_dsm_stats_reset and up
 * to now or the last locus_dsm_stats_freeze. The time breakdown (seed 001
 * Figures 1 and 4) describes the node's application threads: the thread that
 * called init and the threads of its teams (locus_dsm_parallel). The node is
 * stalled while every one of them is blocked in the runtime. Every component
 * is measured on its own, none is a residual:
 *   total     wall time of the interval
 *   busy      the threads' CPU time outside fault handling and DSM calls
 *             (CLOCK_THREAD_CPUTIME_ID; a team's threads are added when they
 *             return, so read it after the team)
 *   fault     wall time the node was stalled and a page fault ended it
 *   sync      wall time the node was stalled and a lock, barrier, alloc or
 *             the end of a team ended it
 *   overhead  CPU time the communication thread spent handling requests,
 *             messages and timers while the node was not stalled (its polls
 *             that found nothing and its sleeps are excluded)
 * and other = total - busy - fault - sync - overhead is what none of them
 * covers: time a thread was runnable but not running (other processes, its
 * own communication thread polling, and with several threads the switches
 * between them). It can be slightly negative when the communication thread
 * works on another CPU while the application computes. With one thread these
 * are that thread's stalls, as in a program without teams.
 *
 * The per-stall figures (seed 001 Table 2) count every stall of every
 * application thread: stalls and stall_s, run_s (CPU time threads ran between
 * stalls; run_s / stalls is the average run length), switches (stalls during
 * which another thread of the node could run), and by cause: remote misses
 * (faults that sent a request), remote lock acquires (granted by a message),
 * barrier waits, each with its count and stall time.
 */
typedef struct locus_dsm_stats {
	double total_s;
	double busy_s;
	double fault_s;		    /* stalled in page faults */
	double sync_s;		    /* stalled in locks and barriers */
	double overhead_s;	    /* communication thread handling work outside the stalls */
	double other_s;		    /* total - the four above */
	double overhead_in_stall_s; /* its handling work during the stalls (part of fault/sync) */
	double comm_cpu_s;	    /* all its CPU time, polling included */
	uint64_t faults[LOCUS_DSM_FAULT_KINDS];
	uint64_t msgs_sent[LOCUS_DSM_MSG_KINDS];
	uint64_t bytes_sent[LOCUS_DSM_MSG_KINDS];
	uint64_t msgs_recv[LOCUS_DSM_MSG_KINDS];
	uint64_t bytes_recv[LOCUS_DSM_MSG_KINDS];
	uint64_t invalidations;	     /* copies this node invalidated on request */
	uint64_t pingpong_deferrals; /* requests held back by the minimum residence time */
	uint64_t lock_acquires;
	uint64_t barriers;
	uint64_t lock_records; /* locks this node keeps state for now: 0 once every lock is
				  released (under lrc, and two barriers have passed) */
	uint64_t comm_sleeps;  /* times the communication thread slept */
	double comm_sleep_s;   /* and for how long */
	/* Where a remote miss's time goes, summed over the misses measured
	   (miss_steps: remote misses whose every step was timed); each step
	   ends where the next begins. */
	uint64_t miss_steps;
	double miss_post_s;    /* fault taken -> request posted (the handler) */
	double miss_take_s;    /* posted -> the communication thread took it (its wake-up) */
	double miss_send_s;    /* taken -> the request handed to MPI (protocol) */
	double miss_reply_s;   /* handed to MPI -> the last answer taken out of MPI
				  (delivery, the other nodes' wake-ups and service) */
	double miss_install_s; /* answer taken out -> page installed, thread woken */
	double miss_resume_s;  /* woken -> the thread runs again */
	uint64_t delivered;    /* page-protocol messages from nodes on this host */
	double deliver_s;      /* their time from the sender's hand-off to MPI to here */
	uint64_t served;       /* page requests and forwards this node answered */
	double serve_s;	       /* their time from taken out of MPI to answered */
	uint64_t bells_rung;   /* doorbells rung at peers whose communication thread slept */
	uint64_t bell_wakes;   /* sleeps of this node's communication thread a doorbell ended */
	uint64_t bell_peers;   /* nodes this node's doorbells reach (on its host; a level) */
	uint64_t protects;     /* protection changes of the shared region (mprotect calls) */
	uint64_t protect_pages; /* the pages they changed */
	/* Threads per node (seed 001 §4 and Table 2). */
	uint64_t threads;	    /* most counted threads at once (a team, or spawned ones) */
	uint64_t stalls;	    /* application-thread stalls of any kind */
	double stall_s;		    /* their wall time, summed over threads */
	double run_s;		    /* CPU time threads ran between stalls, summed */
	uint64_t switches;	    /* stalls while another thread of the node could run */
	uint64_t remote_misses;	    /* faults that sent a request */
	double remote_miss_s;	    /* their stall time */
	uint64_t remote_locks;	    /* acquires granted by a message from another node */
	double remote_lock_s;	    /* their stall time */
	uint64_t lock_handoffs;	    /* locks passed between threads of this node */
	uint64_t barrier_waits;	    /* threads' barrier calls */
	double barrier_wait_s;	    /* their stall time */
	uint64_t prefetches;	    /* pages locus_dsm_prefetch asked for */
	uint64_t prefetch_unneeded; /* pages prefetch found valid or already coming */
	uint64_t run_ahead;	    /* pages fetched with a miss of a walk (LOCUS_DSM_RUN) */
	uint64_t run_ahead_lost;    /* of those, asked for writing from another node and gone
				       again with their contents unchanged here (sc: write
				       walks stop before such a page until this node's own
				       write fault on it) */
	double prefetch_s;	    /* threads' wall time in prefetch calls (part of other) */
	uint64_t prefetch_late;	    /* prefetched pages a fault waited for (still in flight) */
	uint64_t prefetch_lost;	    /* prefetched pages invalidated or taken before a fault
				       (an access to a valid page takes none, so used or
				       not, the runtime cannot tell; the rest arrived in
				       time) */
	/* lrc (zero under sc). */
	uint64_t intervals;	  /* intervals this node ended with writes in them */
	uint64_t twins;		  /* pages copied at their first write in an interval */
	uint64_t diffs;		  /* diffs made */
	uint64_t diff_bytes;	  /* their encoded size */
	uint64_t gcs;		  /* barriers that collected */
	uint64_t meta_bytes;	  /* records, notices, diffs and twins kept now */
	uint64_t meta_peak_bytes; /* the most kept at once since init */
	uint64_t private_pages;	  /* pages its home gave this node as private (used by
				     no other node: no twins, diffs or notices) */
	uint64_t made_shared;	  /* of those, the ones another node then asked for */
	uint64_t private_moved;	  /* of those, the ones that moved to that node as private */
	uint64_t pushed_diffs;	  /* diffs sent at a barrier to nodes that read the page */
	uint64_t pushed_used;	  /* diffs pushed here that a page then took, with no fetch */
	uint64_t push_stopped;	  /* pages whose pushes this node stopped (not read any more) */
	/* avr (zero otherwise). An interval is seed 004 Figures 3.12-3.14: Cp
	   (checkpoint and request), Op (the application runs on), then Res
	   (compare and merge) or Rol (roll back); wait is the part of the
	   resolution spent waiting for the reply (not in Res or Rol). */
	uint64_t avr_checkpoints[LOCUS_DSM_AVR_CKPT_KINDS];
	uint64_t avr_commits; /* intervals that stood */
	uint64_t avr_rollbacks[LOCUS_DSM_AVR_ROLL_KINDS];
	uint64_t avr_sc[LOCUS_DSM_AVR_SC_KINDS]; /* faults resolved as sc, by why */
	uint64_t avr_logged;			 /* accesses to awaited pages logged */
	uint64_t avr_twins;	/* pages twinned at their first write in an interval */
	uint64_t avr_protected; /* writable pages write-protected for an interval */
	uint64_t avr_deferrals; /* pages whose requests waited for an interval's end */
	uint64_t avr_added;	/* pages awaited by an interval besides its first
				   (faults the run went on through, LOCUS_DSM_AVR_PENDING > 1) */
	uint64_t avr_asked;	/* pages asked for as the fault that ended a run was
				   taken (LOCUS_DSM_AVR_ASK=1), before the wait */
	double avr_cp_s, avr_op_s, avr_res_s, avr_rol_s, avr_wait_s;
	/* faults the faulting thread resolved itself, while the communication
	   thread was not working, instead of waking it (faults that need no
	   message, under lrc: a page to read, or to twin and write) */
	uint64_t faults_in_place;
	/* remote misses whose request the faulting thread handed to MPI itself,
	   in the same way (under sc and lrc; counted threads, as remote_misses) */
	uint64_t misses_in_place;
	/* requests (remote misses, locks) of counted threads whose answer the
	   thread that sent them took out of MPI itself, woken by the ring of the
	   node that sent it, instead of being woken by the communication thread
	   (LOCUS_DSM_TAKE_ANSWERS) */
	uint64_t answers_taken;
	/* requests whose answer their waiting thread found while it looked for
	   it, yielding the CPU between looks, before it slept on its doorbell
	   (LOCUS_DSM_SPIN_US: how long it looks) */
	uint64_t answers_spun;
	/* shipped calls (locus_dsm_call and post, atomics, the objects' waits)
	   this node sent to other nodes, and calls from other nodes whose answer
	   it held back, as their home, until a word moved (a barrier's
	   generation, a condition's sequence, a semaphore's count) instead of
	   answering at once and being polled */
	uint64_t calls_shipped;
	uint64_t calls_parked;
	/* calls from other nodes this node's communication thread ran itself,
	   not its server: the runtime's atomics and waits on words writable
	   here */
	uint64_t calls_run_by_comm;
	/* 1 when this node held the kernel's request that the machine's idle
	   CPUs poll instead of halting (LOCUS_DSM_IDLE_POLL, through
	   /dev/cpu_dma_latency); idle_poll_error is the errno of a request that
	   could not be made (EACCES: the device is root's), 0 otherwise */
	uint64_t idle_poll;
	uint64_t idle_poll_error;
	/* barriers this node entered on the thread whose arrival completed it
	   (the last of its team), which sent the entry to MPI itself and waited
	   for the barrier's end on its doorbell, taking the messages out of MPI
	   itself, instead of handing it to the communication thread (of
	   barriers, above) */
	uint64_t barriers_in_place;
	/* messages (of msgs_sent) that left together with others for the same
	   node, and the MPI messages that carried them: the answers to one
	   message's requests, a fault's requests with its walk's */
	uint64_t bundled;
	uint64_t bundles;
} locus_dsm_stats;

/*
 * Start the runtime on this node: MPI, the shared region, the fault handler and
 * the communication thread. Returns 0, or -1 with a message on stderr. Call
 * once, before any other locus_dsm function; argc/argv may be NULL.
 */
LOCUS_API int locus_dsm_init(int *argc, char ***argv);

/*
 * Leave: a barrier, statistics to node 0 (printed there as LOCUS_DSM_STATS
 * says), then MPI is shut down. Shared memory is unmapped.
 */
LOCUS_API void locus_dsm_finalize(void);

LOCUS_API int locus_dsm_node(void);  /* this node's id, 0 .. nodes-1 */
LOCUS_API int locus_dsm_nodes(void); /* number of nodes */
LOCUS_API const char *locus_dsm_protocol(void);

/*
 * Collective: every node calls it with the same size, in the same order, and
 * gets the same pointer. Blocks are page-aligned and zero-filled. Returns NULL
 * (on every node, node 0 saying why) if the region has not that much left
 * (a size near SIZE_MAX, such as a negative int, never fits) or the sizes
 * differ between nodes. Its pages' homes (locus_dsm_home) are as
 * LOCUS_DSM_HOMES says: `blocks` (the default) cuts the block into as many
 * equal runs of pages as there are nodes, node 0's first, the part a loop
 * split in blocks gives each node (a block of fewer pages than nodes is
 * dealt round robin); `spread` deals its pages round robin, page by page.
 */
LOCUS_API void *locus_dsm_alloc(size_t size);

/*
 * Returns when every node has entered; inside a team, when every thread of
 * every node's team has entered (each node gathers its own threads and the
 * last to arrive sends the node's one message). Every node makes the same
 * number of barrier calls per thread.
 */
LOCUS_API void locus_dsm_barrier(void);

/*
 * Run fn(thread, arg) on `threads` application threads of this node, the
 * caller as thread 0 and threads-1 new ones, and return when every one has
 * returned. Inside, faults, locks and barriers block only the calling thread
 * and locus_dsm_barrier is over every thread of every node. Called by the
 * thread that called init, not from inside a team; alloc, stats_reset and
 * finalize are not allowed inside (the runtime stops the node with a
 * message). Each node may pick its own count. Returns 0, or -1 with a message
 * on stderr, having run nothing, when threads is not in 1..LOCUS_DSM_MAX_THREADS
 * or a thread cannot be created.
 */
LOCUS_API int locus_dsm_parallel(int threads, void (*fn)(int thread, void *arg), void *arg);

/*
 * Inside a team: returns when every thread of this node's team has entered
 * (no messages; other nodes are not involved). Memory written before it by a
 * thread of the node is seen after it by the node's other threads. Outside a
 * team it returns at once.
 */
LOCUS_API void locus_dsm_team_barrier(void);

/* Inside a team: this thread's index (0 .. threads-1) and the team's size;
   outside: 0 and 1. */
LOCUS_API int locus_dsm_thread(void);
LOCUS_API int locus_dsm_threads(void);

/*
 * Distributed locks, any 32-bit id; at most one holder system-wide. A lock
 * released while another thread of the same node waits for it passes to that
 * thread without messages, at most LOCUS_DSM_LOCK_HANDOFF times in a row;
 * then it goes back to its manager, behind any other node's request. A lock
 * released with nobody waiting stays on its node (LOCUS_DSM_LOCK_CACHE; at most
 * LOCUS_DSM_LOCK_KEEP locks a node, the longest kept given back first) until another node asks,
 * so taking it again costs no message. Release every lock
 * before locus_dsm_finalize.
 */
LOCUS_API void locus_dsm_lock(uint32_t id);
/* 1 with the lock held, or 0 at once when another thread (here or on any
   node) holds it or has asked for it first, or another node keeps it (that
   try recalls it: a later one finds it free). */
LOCUS_API int locus_dsm_trylock(uint32_t id);
LOCUS_API void locus_dsm_unlock(uint32_t id);

/*
 * Hint that [addr, addr+len) will be read soon: the runtime asks for read
 * copies of the pages this node lacks and returns at once. Non-binding: never
 * changes results (a prefetched copy is invalidated like any other).
 */
LOCUS_API void locus_dsm_prefetch(const void *addr, size_t len);

/*
 * Hint that [addr, addr+len) will be written soon: the runtime asks for the
 * pages this node cannot write yet, with ownership, and returns at once.
 * Non-binding like locus_dsm_prefetch: another node may take a page back
 * before the write, which then faults as it would have.
 */
LOCUS_API void locus_dsm_prefetch_write(void *addr, size_t len);

/*
 * avr: between pause and resume, this thread's faults are resolved as sc
 * does (no interval opens), so nothing it does there is ever run twice.
 * Wrap what a rollback must not repeat: writes to files, sockets or pipes,
 * and updates of memory outside the shared region and the stack. Pause
 * resolves an open interval first. Calls nest; both are no-ops under other
 * protocols.
 */
LOCUS_API void locus_dsm_avr_pause(void);
LOCUS_API void locus_dsm_avr_resume(void);

/* This node's statistics so far (or as frozen by locus_dsm_stats_freeze). */
LOCUS_API void locus_dsm_stats_get(locus_dsm_stats *out);

/*
 * Collective: a barrier, then every node's statistics start again from zero,
 * and the calling thread becomes the measured thread. Call it where the timed
 * phase starts so that the breakdown covers the same interval as the time the
 * application prints.
 */
LOCUS_API void locus_dsm_stats_reset(void);

/*
 * Local: the statistics stop here; locus_dsm_stats_get and the report at
 * finalize give these values until the next reset. Call it where the timed
 * phase ends.
 */
LOCUS_API void locus_dsm_stats_freeze(void);

/* One node's statistics as a short human table. */
LOCUS_API void locus_dsm_stats_print(FILE *f, int node, const locus_dsm_stats *s);

/* One node's statistics as one JSON object on one line. */
LOCUS_API void locus_dsm_stats_json(FILE *f, int node, const locus_dsm_stats *s);

LOCUS_API const char *locus_dsm_msg_kind_name(int kind);
LOCUS_API const char *locus_dsm_fault_kind_name(int kind);

/* Wall-clock seconds (monotonic), for applications that time phases. */
LOCUS_API double locus_dsm_now(void);

/*
 * Shipping work to the data (docs/dsm.md, "Shipping"). Every page has a
 * home: its manager under every protocol, dealt as LOCUS_DSM_HOMES says
 * (locus_dsm_alloc) unless placed by locus_dsm_alloc_at. A call runs fn(state, a, b, c) on the
 * server thread of a node, one call at a time per node, in the order each
 * caller made them; `state` is passed as it is (a shared address is the
 * same on every node). Instead of moving the data's pages to the caller,
 * the work moves to where they are, and they stay there as long as only
 * shipped calls touch them.
 *
 * What a shipped function may touch: shared memory (it is an ordinary
 * thread of its node: a page elsewhere is fetched as for any access), its
 * arguments, and the home node's own memory (not the caller's: a pointer
 * into the caller's heap or stack means nothing there). It may make
 * locus-dsm calls, lock and ship calls itself: a call it ships to its own
 * node runs at once, inline; while it waits for a call to another node its
 * node serves other calls, so what it read before may have changed. It
 * must not call locus_dsm_barrier or the collective calls.
 *
 * Consistency: under sc and avr a call is a sequentially consistent
 * section of its home. Under lrc a synchronous call is a release and an
 * acquire for the caller: what the caller wrote before it (and what it had
 * seen of others) is seen by the function, and what the function and its
 * home had seen is seen by the caller when the call returns. A post is
 * neither (a stream of posts carries nothing but the calls): its function
 * is ordered after the caller's writes by a synchronous call to that home,
 * a lock or a barrier between them, and its writes reach the caller at
 * locus_dsm_drain, which is an acquire for every home posted to. A
 * barrier drains the calling thread's posts first.
 *
 * fn must lie in the program's image (the program or a library loaded at
 * start, the same on every node): functions cross nodes by their place
 * there, whatever each process's load address. Anything else is refused
 * with a message.
 */
#define LOCUS_DSM_HOME_SPREAD (-1) /* pages dealt round robin, page by page */
#define LOCUS_DSM_HOME_BLOCKS (-2) /* one run of pages per node, node 0's first */

/* The home node of a shared address; -1 outside the region. In a
   fork-style run (locus_dsm_start) the program's globals are node 0's:
   an object or a word among them is homed there. */
LOCUS_API int locus_dsm_home(const void *addr);

/* Collective, as locus_dsm_alloc, with every page of the block at node
   `home` (or as LOCUS_DSM_HOME_SPREAD or LOCUS_DSM_HOME_BLOCKS say, whatever
   LOCUS_DSM_HOMES says); NULL on every node when nodes disagree. */
LOCUS_API void *locus_dsm_alloc_at(size_t size, int home);

/* Run fn at node and return its result (the calling thread waits). A bad
   node or an unshippable fn ends the process with a message. */
LOCUS_API uint64_t locus_dsm_call(int node, locus_fn fn, void *state, uint64_t a, uint64_t b,
				  uint64_t c);
/* The same at state's home. */
LOCUS_API uint64_t locus_dsm_call_home(locus_fn fn, void *state, uint64_t a, uint64_t b,
				       uint64_t c);

/*
 * Start fn at node and return at once; cb(ctx, result) runs later on this
 * thread, once, in the order of its posts: at a later post or at
 * locus_dsm_drain at the latest. At most 64 posts of a thread are in
 * flight; a post beyond waits for the oldest. Returns 0, or -1 with a
 * message (bad node, unshippable fn). A call to this node from its own
 * server runs at once.
 */
LOCUS_API int locus_dsm_post(int node, locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c,
			     locus_cb cb, void *ctx);
LOCUS_API int locus_dsm_post_home(locus_fn fn, void *state, uint64_t a, uint64_t b, uint64_t c,
				  locus_cb cb, void *ctx);
/* Every post of this thread has completed and called back (and, under lrc,
   what their functions wrote is seen here). */
LOCUS_API void locus_dsm_drain(void);

/*
 * Atomics on a shared 64-bit word (8-byte aligned), each one shipped call
 * to the word's home: sequentially consistent under sc and avr, an acquire
 * and a release under lrc. Plain accesses to the same word elsewhere are
 * the program's to order.
 */
LOCUS_API uint64_t locus_dsm_fetch_add(uint64_t *word, uint64_t v);
/* If *word == *expected, store desired and return 1; else *expected = *word, 0. */
LOCUS_API int locus_dsm_compare_exchange(uint64_t *word, uint64_t *expected, uint64_t desired);
LOCUS_API uint64_t locus_dsm_exchange(uint64_t *word, uint64_t v);
LOCUS_API uint64_t locus_dsm_load(const uint64_t *word);
LOCUS_API void locus_dsm_store(uint64_t *word, uint64_t v);

/*
 * A fork-style run, for programs written for threads: call it where a
 * program written for threads starts (instead of locus_dsm_init). Rank 0
 * returns 0 and runs the program; every other rank stays inside, serving,
 * until rank 0 calls locus_dsm_finalize, and then exits with status 0.
 * The program's globals are copied from rank 0 to where a spawned thread
 * runs (what main wrote before the spawn is what the thread sees; a write
 * to a global elsewhere stays where it was made); shared data belongs in
 * the shared heap (locus_dsm_malloc). Collective calls (alloc, barrier,
 * stats_reset) have no place in such a run. liblocus-dsm must be a shared
 * library (a static copy would lie among the globals copied). Returns -1
 * with a message on failure.
 */
LOCUS_API int locus_dsm_start(int *argc, char ***argv);
/* Start fn(arg) on a new thread of node; 0, or -1 with a message. */
LOCUS_API int locus_dsm_spawn(int node, void (*fn)(void *arg), void *arg);
/* Wait until `count` more threads this node spawned have returned. */
LOCUS_API void locus_dsm_join(unsigned count);

/*
 * Shared memory from any thread of any node, at any time (no collective
 * call): NULL with a message (errno ENOMEM) when this node's part of the
 * shared heap is full. The heap is the upper half of the region, one part
 * per node, whose pages are homed there. locus_dsm_free takes a block from
 * any node (a free on another node is shipped to the block's owner).
 */
LOCUS_API void *locus_dsm_malloc(size_t size);
LOCUS_API void locus_dsm_free(void *p);

/*
 * Synchronization objects in shared memory, named by their address: as
 * many as a program has, zero-filled memory a fresh one (a semaphore starts
 * at 0; locus_dsm_sem_init sets it). Each must lie in the shared region
 * (or, in a fork-style run, among the program's globals), 8-byte aligned. Under lrc, taking a
 * mutex, returning from a condition wait, taking a semaphore and passing a barrier are acquires;
 * their counterparts releases. A condition wait may wake without a signal, as pthread_cond_wait
 * may; signal wakes every waiter.
 */
typedef struct locus_dsm_mutex {
	uint64_t word;
} locus_dsm_mutex;
typedef struct locus_dsm_cond {
	uint64_t seq;
} locus_dsm_cond;
typedef struct locus_dsm_sem {
	uint64_t count;
} locus_dsm_sem;
typedef struct locus_dsm_barrier_obj {
	uint64_t count, generation;
} locus_dsm_barrier_obj;

/* Make an object fresh (a reused block may hold an old one's words): a
   barrier with nobody arrived, a semaphore at value. A mutex or condition
   needs nothing; their init only checks the address. */
LOCUS_API void locus_dsm_mutex_init(locus_dsm_mutex *m);
LOCUS_API void locus_dsm_cond_init(locus_dsm_cond *c);
LOCUS_API void locus_dsm_barrier_init(locus_dsm_barrier_obj *b);
LOCUS_API void locus_dsm_mutex_lock(locus_dsm_mutex *m);
LOCUS_API int locus_dsm_mutex_trylock(locus_dsm_mutex *m); /* 1: taken */
LOCUS_API void locus_dsm_mutex_unlock(locus_dsm_mutex *m);
LOCUS_API void locus_dsm_cond_wait(locus_dsm_cond *c, locus_dsm_mutex *m);
LOCUS_API void locus_dsm_cond_signal(locus_dsm_cond *c);
LOCUS_API void locus_dsm_cond_broadcast(locus_dsm_cond *c);
LOCUS_API void locus_dsm_sem_init(locus_dsm_sem *s, uint64_t value);
LOCUS_API void locus_dsm_sem_wait(locus_dsm_sem *s);
LOCUS_API void locus_dsm_sem_post(locus_dsm_sem *s);
/* Returns when `participants` threads (of any nodes) have arrived at b;
   every arrival of one generation names the same count. */
LOCUS_API void locus_dsm_barrier_wait(locus_dsm_barrier_obj *b, unsigned participants);

LOCUS_END_DECLS

#endif
