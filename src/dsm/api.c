/* The public entry points: each one is a request to the communication thread. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fnid.h"
#include "internal.h"

struct dsm_runtime dsm;
static int started;
int dsm_phase = DSM_BEFORE;
int dsm_forked;
static pid_t node_pid; /* the process that called init */

/* The start of the statistics interval (init or reset): a snapshot of the
   counters and clocks, subtracted from theirs at every read. */
static struct {
	struct dsm_counters cnt;
	uint64_t wall_ns, cpu_ns, comm_cpu_ns;
	clockid_t clock; /* the measured thread's CPU clock */
} base;
static int frozen;
static locus_dsm_stats frozen_stats;

/* The running protocol's rows into their fields of s (d: the counters
   since the reset; a gauge is read as it is now). */
static void proto_stats_get(locus_dsm_stats *s, const struct dsm_counters *d)
{
	for (size_t i = 0; dsm.proto && i < dsm.proto->nstats; i++) {
		const struct dsm_stat *row = &dsm.proto->stats[i];
		char *field = (char *)s + row->field;
		uint64_t v =
			row->kind == DSM_STAT_GAUGE ? ld_relaxed(&dsm.cnt.proto[i]) : d->proto[i];
		if (row->kind == DSM_STAT_SECONDS)
			*(double *)(void *)field = ns_to_s(v);
		else
			*(uint64_t *)(void *)field = v;
	}
}

static void call_timed(struct dsm_req *r, int kind)
{
	struct dsm_stall st;
	dsm_stall_begin_lazy(&st, kind); /* its waits are dsm_call's */
	dsm_call(r);
	dsm_stall_end(&st, mono_ns(), r->result);
}

static void stats_mark(void)
{
	if (pthread_getcpuclockid(pthread_self(), &base.clock) != 0)
		base.clock = CLOCK_THREAD_CPUTIME_ID;
	dsm_note_threads(1);
	uint64_t *b = (uint64_t *)&base.cnt;
	const uint64_t *c = (const uint64_t *)&dsm.cnt;
	for (size_t i = 0; i < sizeof(base.cnt) / sizeof(uint64_t); i++)
		b[i] = ld_relaxed(&c[i]);
	base.comm_cpu_ns = dsm_comm_cpu_ns();
	base.cpu_ns = dsm_clock_ns(base.clock);
	base.wall_ns = mono_ns();
	frozen = 0;
	/* This thread's run counts from here (the reset's barrier may not have
	   read its CPU clock: team.c, dsm_stall_begin_lazy). */
	if (dsm_self.counted)
		dsm_self_resumed(clock_ns(CLOCK_THREAD_CPUTIME_ID), mono_ns());
}

/*
 * Returning from main (or calling exit) without locus_dsm_finalize leaves the
 * other nodes waiting for this one: make it a failure they can name, not a
 * clean exit that MPI's own exit handlers would run into half-finished.
 */
static void exit_without_finalize(void)
{
	if (!started || dsm_forked)
		return;
	/* A program written for threads ends when main returns or calls exit:
	   its fork-style run finalizes then (its threads end, as the process's
	   would), with the exit status main gave. */
	if (dsm_fork_mode && dsm.node == 0 && dsm_fork_is_main() && dsm_self.locks == 0) {
		locus_dsm_finalize();
		return;
	}
	dprintf(2, "locus-dsm: node %d: exit without locus_dsm_finalize\n", dsm.node);
	_exit(LOCUS_DSM_EXIT_EARLY);
}

/* A collective call in a fork-style run, where only rank 0 runs the program. */
static void refuse_in_fork(const char *call, const char *instead)
{
	if (!dsm_fork_mode)
		return;
	fprintf(stderr,
		"locus-dsm: %s in a fork-style run (locus_dsm_start): only rank 0 runs the "
		"program, so no call is collective; %s\n",
		call, instead);
	exit(1);
}

void dsm_require_running(const char *call)
{
	if (dsm_forked) {
		char what[80];
		snprintf(what, sizeof(what), "called %s", call);
		dsm_fatal_child(what);
	}
	if (dsm_phase == DSM_RUNNING)
		return;
	fprintf(stderr,
		"locus-dsm: %s called %s: the runtime runs from locus_dsm_init to "
		"locus_dsm_finalize\n",
		call,
		dsm_phase == DSM_BEFORE ? "before locus_dsm_init" : "after locus_dsm_finalize");
	exit(1);
}

/* A child of fork() is not a node: its copy of the region would be the
   parent's memory (a shared mapping), and nobody answers its requests.
   Detach it: the application view becomes an inaccessible private mapping
   (a touch faults, and the fault handler says why), the alias goes. */
static void forked_child(void)
{
	if (dsm_phase != DSM_RUNNING || getpid() == node_pid)
		return;
	dsm_forked = 1;
	dsm_region_keep_globals(); /* the child's own copy of the shared globals */
	if (dsm.app)
		mmap(dsm.app, dsm.size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	if (dsm.alias)
		munmap(dsm.alias, dsm.size);
	dsm.alias = NULL;
	dsm_idle_release(); /* the node's descriptor keeps the request */
}

void dsm_fatal_child(const char *what)
{
	char msg[256];
	int n = snprintf(msg, sizeof(msg),
			 "locus-dsm: pid %d, a child of node %d (pid %d) made by fork(), %s: a "
			 "child of fork() is not a node (it may exec, or exit); exiting\n",
			 (int)getpid(), dsm.node, (int)node_pid, what);
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		_exit(LOCUS_DSM_EXIT_CHILD);
	_exit(LOCUS_DSM_EXIT_CHILD);
}

int locus_dsm_init(int *argc, char ***argv)
{
	if (dsm_forked)
		dsm_fatal_child("called locus_dsm_init");
	dsm_spawn_note_name();
	if (started) {
		fprintf(stderr, "locus-dsm: locus_dsm_init called twice\n");
		return -1;
	}
	if (dsm_phase == DSM_AFTER) {
		fprintf(stderr, "locus-dsm: locus_dsm_init after locus_dsm_finalize: MPI, which "
				"the runtime runs on, starts once per process\n");
		return -1;
	}
	memset(&dsm, 0, sizeof(dsm));
	if (dsm_config_read(&dsm.cfg) != 0)
		return -1;
	dsm.proto = dsm_proto_find(dsm.cfg.protocol);
	if (!dsm.proto) {
		fprintf(stderr,
			"locus-dsm: unknown protocol '%s' (LOCUS_DSM_PROTOCOL); known: %s\n",
			dsm.cfg.protocol, dsm_proto_names());
		return -1;
	}
	dsm_fnid_init();
	if (dsm_comm_start() != 0)
		return -1;
	dsm_idle_hold();
	if (dsm_ship_start() != 0)
		dsm_fatal("cannot start the server of shipped calls");
	dsm_cs_provide(1);
	dsm_malloc_init();
	dsm.all_stats = calloc((size_t)dsm.nodes, sizeof(locus_dsm_stats));
	if (!dsm.all_stats || dsm_fault_install() != 0)
		dsm_fatal("cannot start");
	if (dsm.proto->thread_init && dsm.proto->thread_init() != 0)
		dsm_fatal("%s: cannot set up the application thread's side", dsm.proto->name);
	started = 1;
	dsm_phase = DSM_RUNNING;
	node_pid = getpid();
	static int hooks;
	if (!hooks++) {
		atexit(exit_without_finalize);
		pthread_atfork(NULL, NULL, forked_child);
	}
	/* This thread is the node's first counted application thread. */
	dsm.t0_ns = mono_ns();
	dsm.team_size = 1;
	st_relaxed(&dsm.team_word, 1);
	dsm_self = (struct dsm_thread){.counted = 1, .id = 0, .team = 1};
	dsm_self_resumed(clock_ns(CLOCK_THREAD_CPUTIME_ID), mono_ns());
	locus_dsm_stats_reset(); /* count the application, not start-up */
	dsm_spawn_open();
	return 0;
}

static void print_all(void)
{
	for (int n = 0; n < dsm.nodes; n++) {
		const locus_dsm_stats *s = &dsm.all_stats[n];
		if (dsm.cfg.stats == 2)
			locus_dsm_stats_json(stdout, n, s);
		else
			locus_dsm_stats_print(stdout, n, s);
	}
	fflush(stdout);
}

/* A barrier that names its collective call (sync.c checks that every node
   entered the same one). */
static int64_t collective(uint64_t kind, uint64_t value, uint64_t threads, int stall)
{
	struct dsm_req r = {.kind = DSM_REQ_BARRIER, .a = value, .b = threads, .c = kind};
	call_timed(&r, stall);
	return r.result;
}

void locus_dsm_finalize(void)
{
	if (dsm_forked)
		dsm_fatal_child("called locus_dsm_finalize");
	if (!started)
		return;
	dsm_sync_point();
	dsm_outside_team("locus_dsm_finalize");
	locus_dsm_drain(); /* this thread's posts: answered before the last barrier */
	if (dsm_fork_mode && dsm.node == 0) {
		/* The shared globals stay the program's after the run (region.c):
		   every page of them read here first, so that this node holds
		   them as they are. */
		for (size_t off = 0; off < dsm.glen; off += dsm.page_size)
			(void)*(volatile const char *)(dsm.gview + off);
		dsm_fork_finish();
	}
	collective(DSM_BAR_FINALIZE, 0, 1, STALL_BARRIER);
	locus_dsm_stats mine;
	locus_dsm_stats_get(&mine);
	struct dsm_req r = {.kind = DSM_REQ_STATS, .a = (uint64_t)(uintptr_t)&mine};
	dsm_call(&r);
	/* every node's statistics are at node 0 after this */
	collective(DSM_BAR_FINALIZE_STATS, 0, 1, STALL_BARRIER);
	dsm_ship_stop(); /* every node's calls were answered before its last barrier */
	dsm_cs_provide(0);
	dsm_malloc_fini();
	if (dsm.node == 0 && dsm.cfg.stats)
		print_all();
	struct dsm_req leave = {.kind = DSM_REQ_LEAVE};
	dsm_call(&leave);
	dsm_comm_join();
	dsm_idle_release();
	if (dsm.proto->thread_fini)
		dsm.proto->thread_fini();
	dsm_fault_uninstall();
	dsm_region_unmap();
	dsm_home_fini();
	dsm_table_free(dsm.resume_ns, dsm.npages, sizeof(uint64_t));
	dsm_keep_release();
	free(dsm.all_stats);
	dsm.resume_ns = NULL;
	dsm.all_stats = NULL;
	dsm_self.counted = 0;
	started = 0;
	dsm_phase = DSM_AFTER;
	dsm_fork_mode = 0;
}

int locus_dsm_node(void)
{
	return dsm.node;
}

int locus_dsm_nodes(void)
{
	return dsm.nodes;
}

const char *locus_dsm_protocol(void)
{
	return dsm.proto ? dsm.cfg.protocol : "none"; /* the one asked for (proto_one.c) */
}

/* home: a node, LOCUS_DSM_HOME_SPREAD or LOCUS_DSM_HOME_BLOCKS. */
static void *alloc_at(const char *call, size_t size, int home)
{
	dsm_require_running(call);
	refuse_in_fork(call, "use locus_dsm_malloc");
	dsm_sync_point();
	dsm_outside_team(call);
	int bad = home < LOCUS_DSM_HOME_BLOCKS || home >= dsm.nodes;
	if (bad) /* every node still makes the call; this one disagrees */
		fprintf(stderr,
			"locus-dsm: %s: home %d: a node (0 to %d), LOCUS_DSM_HOME_SPREAD or "
			"LOCUS_DSM_HOME_BLOCKS\n",
			call, home, dsm.nodes - 1);
	/* Compared before rounding: a size near SIZE_MAX (a negative int passed
	   as size_t) must not wrap to a small block. */
	size_t left = dsm_heap_first() * dsm.page_size - dsm.alloc_next; /* the lower half */
	int fits = size <= left;
	size_t bytes = 0;
	if (fits) {
		bytes = size ? (size - 1) / dsm.page_size * dsm.page_size + dsm.page_size
			     : dsm.page_size;
		fits = bytes <= left;
	}
	/* The block's homes are set before the barrier: a request for one of its
	   pages that a node sends once the barrier is over finds them set here.
	   (A refused block's pages are set again by the next allocation.) */
	if (fits && !bad)
		dsm_home_deal(dsm.alloc_next / dsm.page_size, bytes / dsm.page_size, home);
	/* Every node must ask for the same size and home, in the same order
	   (a region is at most 2^44 bytes: the home fits above the size). */
	uint64_t value = fits && !bad ? (uint64_t)(home + 3) << 48 | (uint64_t)size
				      : UINT64_MAX - (uint64_t)bad;
	int64_t differ = collective(DSM_BAR_ALLOC, value, 1, STALL_OTHER);
	if (differ || !fits || bad) {
		if (dsm.node == 0 && differ)
			fprintf(stderr,
				"locus-dsm: alloc of %zu bytes: nodes asked for different "
				"sizes or homes (every node calls locus_dsm_alloc with the same "
				"size, in the same order, and the same LOCUS_DSM_HOMES)\n",
				size);
		else if (dsm.node == 0 && !fits)
			fprintf(stderr,
				"locus-dsm: alloc of %zu bytes: region full (%zu of %zu bytes "
				"left%s; collective allocations have the lower half of "
				"LOCUS_DSM_SIZE)\n",
				size, left, dsm_heap_first() * dsm.page_size,
				size > SIZE_MAX / 2 ? "; a negative size passed as size_t?" : "");
		return NULL;
	}
	void *p = dsm.app + dsm.alloc_next;
	/* Published after the homes (dsm_walk_end): a walk may go into the block now. */
	__atomic_store_n(&dsm.alloc_next, dsm.alloc_next + bytes, __ATOMIC_RELEASE);
	return p;
}

void *locus_dsm_alloc(size_t size)
{
	return alloc_at("locus_dsm_alloc", size, dsm.cfg.homes);
}

void *locus_dsm_alloc_at(size_t size, int home)
{
	return alloc_at("locus_dsm_alloc_at", size, home);
}

void locus_dsm_barrier(void)
{
	dsm_require_running("locus_dsm_barrier");
	refuse_in_fork("locus_dsm_barrier", "use a counted barrier (locus_dsm_barrier_wait)");
	dsm_sync_point();
	locus_dsm_drain(); /* this thread's posts are part of what comes before */
	dsm_team_count_barrier(0);
	collective(DSM_BAR_BARRIER, 0, (uint64_t)locus_dsm_threads(), STALL_BARRIER);
}

void locus_dsm_lock(uint32_t id)
{
	dsm_require_running("locus_dsm_lock");
	dsm_sync_point();
	struct dsm_req r = {.kind = DSM_REQ_LOCK,
			    .a = id,
			    .c = dsm_ship_on_server() ? 2 : (uint64_t)dsm_self.counted};
	call_timed(&r, STALL_LOCK);
	dsm_self.locks++;
}

int locus_dsm_trylock(uint32_t id)
{
	dsm_require_running("locus_dsm_trylock");
	dsm_sync_point();
	struct dsm_req r = {.kind = DSM_REQ_TRYLOCK,
			    .a = id,
			    .c = dsm_ship_on_server() ? 2 : (uint64_t)dsm_self.counted};
	call_timed(&r, STALL_LOCK);
	if (r.result == DSM_BUSY)
		return 0;
	dsm_self.locks++;
	return 1;
}

void locus_dsm_unlock(uint32_t id)
{
	dsm_require_running("locus_dsm_unlock");
	dsm_sync_point();
	struct dsm_req r = {.kind = DSM_REQ_UNLOCK, .a = id};
	call_timed(&r, STALL_OTHER);
	if (dsm_self.locks > 0)
		dsm_self.locks--;
}

static void prefetch(const void *addr, size_t len, int write)
{
	const char *a = dsm_canon(addr);
	if (dsm_phase != DSM_RUNNING || dsm_forked)
		return; /* a hint: nothing to do */
	dsm_sync_point();
	if (!dsm.proto || !dsm.proto->prefetch || !len || a < dsm.app || a >= dsm.app + dsm.size)
		return;
	size_t first = (size_t)(a - dsm.app) / dsm.page_size;
	size_t last = ((size_t)(a - dsm.app) + len - 1) / dsm.page_size;
	if (last >= dsm.npages)
		last = dsm.npages - 1;
	struct dsm_req r = {
		.kind = DSM_REQ_PREFETCH, .a = first, .b = last - first + 1, .result = write};
	uint64_t t0 = mono_ns();
	dsm_call(&r);
	if (dsm_self.counted)
		STAT_ADD(prefetch_ns, mono_ns() - t0);
}

void locus_dsm_prefetch(const void *addr, size_t len)
{
	prefetch(addr, len, 0);
}

void locus_dsm_prefetch_write(void *addr, size_t len)
{
	prefetch(addr, len, 1);
}

double locus_dsm_now(void)
{
	return ns_to_s(mono_ns());
}

void locus_dsm_stats_reset(void)
{
	dsm_require_running("locus_dsm_stats_reset");
	refuse_in_fork("locus_dsm_stats_reset", "statistics count from the start");
	dsm_sync_point();
	dsm_outside_team("locus_dsm_stats_reset");
	collective(DSM_BAR_RESET, 0, 1, STALL_BARRIER);
	stats_mark();
}

void locus_dsm_stats_freeze(void)
{
	frozen = 0;
	locus_dsm_stats_get(&frozen_stats);
	frozen = 1;
}

void locus_dsm_stats_get(locus_dsm_stats *s)
{
	if (frozen) {
		*s = frozen_stats;
		return;
	}
	/* Read the clocks first and the counters after: a counter can only have
	   grown by then, so a stall never looks longer than the interval. */
	uint64_t wall = mono_ns() - base.wall_ns;
	uint64_t cpu = dsm_clock_ns(base.clock) - base.cpu_ns;
	uint64_t comm_cpu = dsm_comm_cpu_ns() - base.comm_cpu_ns;
	struct dsm_counters d;
	uint64_t *dv = (uint64_t *)&d;
	const uint64_t *b = (const uint64_t *)&base.cnt, *c = (const uint64_t *)&dsm.cnt;
	for (size_t i = 0; i < sizeof(d) / sizeof(uint64_t); i++)
		dv[i] = ld_relaxed(&c[i]) - b[i];
	memset(s, 0, sizeof(*s));
	s->total_s = ns_to_s(wall);
	s->fault_s = ns_to_s(d.fault_ns);
	s->sync_s = ns_to_s(d.sync_ns);
	/* The stall CPU is part of the threads' CPU: busy >= 0 unless the call
	   comes while a team runs (its threads' CPU is added when they return). */
	cpu += d.team_cpu_ns;
	s->busy_s = cpu > d.stall_cpu_ns ? ns_to_s(cpu - d.stall_cpu_ns) : 0;
	s->overhead_s = ns_to_s(d.work_ns);
	s->other_s = s->total_s - s->busy_s - s->fault_s - s->sync_s - s->overhead_s;
	s->overhead_in_stall_s = ns_to_s(d.work_stall_ns);
	s->comm_cpu_s = ns_to_s(comm_cpu);
	for (int k = 0; k < LOCUS_DSM_FAULT_KINDS; k++)
		s->faults[k] = d.faults[k];
	for (int k = 0; k < LOCUS_DSM_MSG_KINDS; k++) {
		s->msgs_sent[k] = d.msgs_sent[k];
		s->bytes_sent[k] = d.bytes_sent[k];
		s->msgs_recv[k] = d.msgs_recv[k];
		s->bytes_recv[k] = d.bytes_recv[k];
	}
	s->invalidations = d.invalidations;
	s->pingpong_deferrals = d.pingpong_deferrals;
	s->lock_acquires = d.lock_acquires;
	s->barriers = d.barriers;
	s->comm_sleeps = d.comm_sleeps;
	s->comm_sleep_s = ns_to_s(d.comm_sleep_ns);
	s->miss_steps = d.miss_steps;
	s->miss_post_s = ns_to_s(d.miss_post_ns);
	s->miss_take_s = ns_to_s(d.miss_take_ns);
	s->miss_send_s = ns_to_s(d.miss_send_ns);
	s->miss_reply_s = ns_to_s(d.miss_reply_ns);
	s->miss_install_s = ns_to_s(d.miss_install_ns);
	s->miss_resume_s = ns_to_s(d.miss_resume_ns);
	s->delivered = d.delivered;
	s->deliver_s = ns_to_s(d.deliver_ns);
	s->served = d.served;
	s->serve_s = ns_to_s(d.serve_ns);
	s->bells_rung = d.bells_rung;
	s->bell_wakes = d.bell_wakes;
	s->protects = d.protects;
	s->protect_pages = d.protect_pages;
	s->bell_peers = (uint64_t)dsm_bell_peers();
	s->threads = ld_relaxed(&dsm.team_max);
	s->stalls = d.stalls;
	s->stall_s = ns_to_s(d.stall_ns);
	s->run_s = ns_to_s(d.run_ns);
	s->switches = d.switches;
	s->remote_misses = d.remote_misses;
	s->remote_miss_s = ns_to_s(d.remote_miss_ns);
	s->remote_locks = d.remote_locks;
	s->remote_lock_s = ns_to_s(d.remote_lock_ns);
	s->lock_handoffs = d.lock_handoffs;
	s->faults_in_place = d.faults_in_place;
	s->misses_in_place = d.misses_in_place;
	s->answers_taken = d.answers_taken;
	s->answers_spun = d.answers_spun;
	s->barriers_in_place = d.barriers_in_place;
	s->bundled = d.bundled;
	s->bundles = d.bundles;
	s->idle_poll = (uint64_t)dsm_idle_held();
	s->idle_poll_error = (uint64_t)dsm_idle_error();
	s->calls_shipped = d.calls_shipped;
	s->calls_parked = d.calls_parked;
	s->calls_run_by_comm = d.calls_run_by_comm;
	s->barrier_waits = d.barrier_waits;
	s->barrier_wait_s = ns_to_s(d.barrier_wait_ns);
	s->prefetches = d.prefetches;
	s->prefetch_unneeded = d.prefetch_unneeded;
	s->run_ahead = d.run_ahead;
	s->run_ahead_lost = d.run_ahead_lost;
	s->prefetch_late = d.prefetch_late;
	s->prefetch_s = ns_to_s(d.prefetch_ns);
	s->prefetch_lost = d.prefetch_lost;
	s->lock_records = ld_relaxed(&dsm.lock_records);
	proto_stats_get(s, &d);
}
