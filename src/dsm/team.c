/*
 * Threads per node (seed 001 §4): teams, and the accounting of their stalls.
 *
 * A team is the init thread plus threads-1 kernel threads created by
 * locus_dsm_parallel and joined before it returns. A thread that stalls
 * sleeps on its request's futex (comm.c: dsm_call), so the kernel runs
 * another runnable thread of the node: that is the switch, and it costs a
 * futex wait plus a wake-up (locus-dsm-switch measures it).
 *
 * Switch policy (LOCUS_DSM_SWITCH): with "all" (the default) nothing here
 * schedules, and any stall lets another thread run. With "sync" (seed 001
 * §5: threads for synchronization latency, prefetch for memory latency) a
 * team's threads run one at a time, holding the node's run token; a thread
 * gives it up only when it waits for a lock, a barrier or the end of the
 * team, and keeps it through a fault, so that no other thread runs while it
 * waits for memory.
 *
 * The counted threads share dsm.team_word: how many of them are running,
 * and when that number last fell to 0. A stall that brings it to 0 starts a
 * stall of the whole node; the stall whose end brings it back to 1 ends it
 * and charges its length to its own kind (fault, or sync). With one thread
 * that is exactly that thread's stall time. A team thread that returns stops
 * for good, so a node whose workers finished while thread 0 waits for the
 * slowest one is stalled in sync (load imbalance, like a barrier).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/futex.h"
#include "internal.h"

__thread struct dsm_thread dsm_self __attribute__((tls_model("initial-exec")));

/*
 * The run token of the "sync" switch policy: run_token 0 free, 1 held;
 * run_seq changes at every release (the futex word waiters sleep on). A
 * thread just granted a lock is urgent: it takes the token before the others,
 * and a holder that faults gives the token to it instead of keeping it, so
 * that a lock is never held idle behind another thread's memory stall while
 * other nodes wait for it.
 */
static uint32_t run_token, run_seq, run_waiting, run_urgent;

static int token_policy(void)
{
	return dsm.cfg.switch_sync && dsm_self.team > 1;
}

static void token_take(int urgent)
{
	faa_relaxed(&run_waiting, 1);
	if (urgent)
		faa_relaxed(&run_urgent, 1);
	for (;;) {
		uint32_t seq = ld_acquire(&run_seq), free_ = 0;
		if ((urgent || ld_relaxed(&run_urgent) == 0) && cas_acquire(&run_token, &free_, 1))
			break;
		futex_wait(&run_seq, seq);
	}
	if (urgent)
		faa_relaxed(&run_urgent, (uint32_t)-1);
	faa_relaxed(&run_waiting, (uint32_t)-1);
}

/* Returns 1 if another thread was waiting for it. */
static int token_give(void)
{
	int waiting = ld_relaxed(&run_waiting) != 0;
	st_release(&run_token, 0);
	faa_release(&run_seq, 1);
	futex_wake(&run_seq, FUTEX_WAKE_ALL);
	return waiting;
}

static inline uint64_t team_stamp(uint64_t now)
{
	return ((now - dsm.t0_ns) << TEAM_RUN_BITS);
}

uint32_t dsm_team_stop(uint64_t now)
{
	uint64_t w = ld_relaxed(&dsm.team_word), nw;
	do {
		uint64_t run = w & TEAM_RUN_MASK;
		if (run == 0)
			dsm_fatal("more application threads stopped than were running");
		nw = run == 1 ? team_stamp(now) : (w & ~TEAM_RUN_MASK) | (run - 1);
	} while (!cas_release_weak(&dsm.team_word, &w, nw));
	return (uint32_t)((w & TEAM_RUN_MASK) - 1);
}

uint64_t dsm_team_resume(uint64_t now)
{
	uint64_t w = faa_relaxed(&dsm.team_word, 1);
	if (w & TEAM_RUN_MASK)
		return 0;
	/* now was read before the add: the thread that stopped last may have
	   stamped a later time, and then the node was not stalled at all. */
	uint64_t since = w >> TEAM_RUN_BITS;
	uint64_t at = (now - dsm.t0_ns) & (UINT64_MAX >> TEAM_RUN_BITS);
	return at > since ? at - since : 0;
}

/* The CPU time taken for a stretch of a stall whose clock was not read:
   its wall time, up to UNREAD_CAP_NS. What a stall does without waiting (a
   lock taken in place, a request handed to MPI) takes a few microseconds;
   a stretch longer than the cap was mostly spent descheduled, with more
   threads than CPUs, and counting all of it would take it off busy (unless
   the clock, read, shows more: stall_on_cpu). */
#define UNREAD_CAP_NS 10000
static uint64_t on_cpu(uint64_t wall)
{
	return wall < UNREAD_CAP_NS ? wall : UNREAD_CAP_NS;
}

/* The thread's run since it last read its CPU clock, given the clock now:
   less the stalls meanwhile that counted their wall time as CPU time. */
static uint64_t run_since(uint64_t cpu)
{
	uint64_t d = cpu - dsm_self.resumed_cpu_ns, u = dsm_self.unread_ns;
	dsm_self.unread_ns = 0;
	return d > u ? d - u : 0;
}

/* How much of a stretch of a stall, `in` ns of wall time up to `now`, was on
   the CPU, given `d`, the thread's CPU time since its last read, of which
   `run` is its run: its wall time up to the cap (on_cpu), but never so
   little that the run would have had more CPU than wall time. A stall that
   handles long work in place (a fault's, under a sanitizer or with the CPU
   shared) has more than the cap, and counting it as run would count it
   twice, as busy and as a stall. The stalls meanwhile that were not read
   count their wall time as CPU on both sides, and cancel out. */
static uint64_t stall_on_cpu(uint64_t d, uint64_t run, uint64_t now, uint64_t in)
{
	uint64_t on = on_cpu(in);
	uint64_t since = now > dsm_self.resumed_ns ? now - dsm_self.resumed_ns : 0;
	uint64_t outside = since > in ? since - in : 0; /* runs and unread stalls */
	if (d > outside && d - outside > on)
		on = d - outside;
	return on < run ? on : run;
}

/* Reads s's CPU clock at wall time now; the stall so far (from s->wall_ns)
   is taken to have been on the CPU (as a stall that never waits is: see
   stall_on_cpu) and not counted as run. */
static void stall_read_cpu(struct dsm_stall *s, uint64_t now)
{
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t d = cpu - dsm_self.resumed_cpu_ns, run = run_since(cpu);
	uint64_t on = stall_on_cpu(d, run, now, now > s->wall_ns ? now - s->wall_ns : 0);
	s->cpu_ns = cpu - on;
	s->cpu_read = 1;
	STAT_ADD(run_ns, run - on);
}

static void stall_begin(struct dsm_stall *s, int kind, int lazy)
{
	s->kind = kind;
	s->counted = dsm_self.counted;
	if (!s->counted)
		return;
	/* A stall inside a lazy one (a signal handler's fault): the outer one's
	   clock is read first, so that each is measured on its own. */
	dsm_stall_waits();
	s->cpu_read = 0;
	s->outer = dsm_self.stall;
	s->wall_ns = mono_ns();
	if (lazy)
		dsm_self.stall = s;
	else
		stall_read_cpu(s, s->wall_ns);
	STAT_ADD(stalls, 1);
	uint32_t others = dsm_team_stop(s->wall_ns);
	s->gave = 0;
	if (token_policy()) {
		if (kind != STALL_FAULT || ld_relaxed(&run_urgent) != 0) {
			s->gave = 1;
			if (token_give())
				STAT_ADD(switches, 1);
		}
	} else if (others > 0) {
		STAT_ADD(switches, 1);
	}
}

void dsm_stall_begin(struct dsm_stall *s, int kind)
{
	stall_begin(s, kind, 0);
}

void dsm_stall_begin_lazy(struct dsm_stall *s, int kind)
{
	stall_begin(s, kind, 1);
}

/* The clock is read late: what the stall did before (its request's
   handling in place, a short spin) counts as on the CPU. */
void dsm_stall_waits(void)
{
	struct dsm_stall *s = dsm_self.stall;
	if (s && !s->cpu_read)
		stall_read_cpu(s, mono_ns());
}

uint64_t dsm_stall_end(struct dsm_stall *s, uint64_t now, int64_t how)
{
	if (!s->counted)
		return now;
	if (s->gave) {
		/* waiting for the token is part of the stall */
		dsm_stall_waits();
		token_take(s->kind == STALL_LOCK);
		now = mono_ns();
	}
	if (dsm_self.stall == s)
		dsm_self.stall = s->outer;
	uint64_t idle = dsm_team_resume(now);
	uint64_t wall = now - s->wall_ns;
	if (s->cpu_read) {
		uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		dsm_self_resumed(cpu, now); /* any stall since the read was inside this one */
		STAT_ADD(stall_cpu_ns, cpu - s->cpu_ns);
	} else if (wall < UNREAD_CAP_NS || s->outer) { /* never waited: on the CPU throughout */
		/* (inside a lazy stall, whose clock was read as this one began,
		   the outer one's end counts the time: up to the cap here) */
		uint64_t on = on_cpu(wall);
		dsm_self.unread_ns += on;
		STAT_ADD(stall_cpu_ns, on);
	} else { /* never waited, but long: how much was on the CPU is read */
		uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t d = cpu - dsm_self.resumed_cpu_ns, run = run_since(cpu);
		uint64_t on = stall_on_cpu(d, run, now, wall);
		STAT_ADD(run_ns, run - on);
		STAT_ADD(stall_cpu_ns, on);
		dsm_self_resumed(cpu, now);
	}
	STAT_ADD(stall_ns, wall);
	if (s->kind == STALL_FAULT)
		STAT_ADD(fault_ns, idle);
	else
		STAT_ADD(sync_ns, idle);
	if (s->kind == STALL_FAULT && how == DSM_REMOTE) {
		STAT_ADD(remote_misses, 1);
		STAT_ADD(remote_miss_ns, wall);
	} else if (s->kind == STALL_LOCK && how == DSM_REMOTE) {
		STAT_ADD(remote_locks, 1);
		STAT_ADD(remote_lock_ns, wall);
	} else if (s->kind == STALL_BARRIER) {
		STAT_ADD(barrier_waits, 1);
		STAT_ADD(barrier_wait_ns, wall);
	}
	return now;
}

/*
 * Threads of a fork-style run (spawn.c) are the node's application threads
 * too: a spawned thread counts as running from its creation (on the node's
 * call server) to its return, as a team's thread does from its parent's
 * add, so the breakdown, the misses and the thread count of a node whose
 * work arrived by locus_dsm_spawn are its threads'. The init thread of a
 * rank above 0 only waits for the end and is not counted meanwhile; the
 * time a node has no thread running is charged to sync (waiting for work,
 * like a team's load imbalance).
 */
static uint32_t spawned_live;

/* The running count has TEAM_RUN_BITS: spawned threads past this many, with
   room left for a team and the init thread, run uncounted. */
#define SPAWNED_COUNTED_MAX (TEAM_RUN_MASK - LOCUS_DSM_MAX_THREADS - 1)

/* The largest number of counted threads at once (the statistics' threads);
   reset: start again from those counted now (at a statistics reset). The
   init thread of a rank above 0 of a fork-style run never counts here: a
   spawn may come while it is still on its way to its wait. */
void dsm_note_threads(int reset)
{
	if (reset)
		st_relaxed(&dsm.team_max, 1);
	int init_waits =
		(ld_acquire(&dsm_fork_mode) || ld_acquire(&dsm_fork_request)) && dsm.node != 0;
	uint32_t n = (init_waits ? 0 : ld_relaxed(&dsm.team_size)) + ld_relaxed(&spawned_live);
	uint32_t m = ld_relaxed(&dsm.team_max);
	while (n > m && !__atomic_compare_exchange_n(&dsm.team_max, &m, n, 1, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED))
		;
}

int dsm_spawned_created(void)
{
	if (faa_relaxed(&spawned_live, 1) >= SPAWNED_COUNTED_MAX) {
		faa_relaxed(&spawned_live, (uint32_t)-1);
		return 0;
	}
	STAT_ADD(sync_ns, dsm_team_resume(mono_ns()));
	dsm_note_threads(0);
	return 1;
}

uint64_t dsm_spawned_enter(int counted)
{
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	dsm_self = (struct dsm_thread){.counted = counted, .spawned = 1, .team = 1};
	dsm_self_resumed(cpu, mono_ns());
	return cpu;
}

void dsm_spawned_leave(uint64_t cpu0)
{
	if (!dsm_self.counted)
		return;
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	STAT_ADD(run_ns, run_since(cpu));
	STAT_ADD(team_cpu_ns, cpu - cpu0);
	dsm_self.counted = 0;
	faa_relaxed(&spawned_live, (uint32_t)-1);
	dsm_team_stop(mono_ns());
}

void dsm_init_waits(int waits)
{
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (waits) {
		STAT_ADD(run_ns, run_since(cpu));
		dsm_self.counted = 0;
		dsm_team_stop(mono_ns());
	} else {
		STAT_ADD(sync_ns, dsm_team_resume(mono_ns()));
		dsm_self.counted = 1;
		dsm_self_resumed(cpu, mono_ns());
	}
}

void dsm_outside_team(const char *call)
{
	if (dsm_self.team > 1)
		dsm_fatal("%s called inside locus_dsm_parallel (thread %d of %d): call it "
			  "before or after the team",
			  call, dsm_self.id, dsm_self.team);
}

/*
 * Every thread of a team makes the same number of locus_dsm_barrier calls,
 * and of locus_dsm_team_barrier calls: a thread that returns from the
 * team's function with fewer than another has entered leaves that one
 * waiting forever. Each thread counts its calls (dsm_self.bars); whichever
 * of the two events comes second, the call or the return, sees the first
 * under the lock and stops the node with a message.
 */
static const char *const bar_call[2] = {"locus_dsm_barrier", "locus_dsm_team_barrier"};
static struct {
	pthread_mutex_t mu;
	uint64_t entered_max[2]; /* the most calls any thread has entered */
	int entered_by[2];
	uint64_t returned_min[2]; /* the fewest calls of a thread that returned */
	int returned_by[2], returned;
} tc = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void team_check_reset(void)
{
	pthread_mutex_lock(&tc.mu);
	for (int k = 0; k < 2; k++)
		tc.entered_max[k] = tc.returned_min[k] = 0;
	tc.returned = 0;
	pthread_mutex_unlock(&tc.mu);
}

static void never_reached(int k, int returned, uint64_t calls, int waiter, uint64_t call)
{
	dsm_fatal("thread %d of the team returned from its function after %llu %s calls while "
		  "thread %d waits in its call %llu: every thread of a team makes the same "
		  "number of %s calls (the others would wait forever)",
		  returned, (unsigned long long)calls, bar_call[k], waiter,
		  (unsigned long long)call, bar_call[k]);
}

void dsm_team_count_barrier(int k)
{
	if (dsm_self.team <= 1)
		return;
	pthread_mutex_lock(&tc.mu);
	uint64_t n = ++dsm_self.bars[k];
	if (tc.returned && tc.returned_min[k] < n)
		never_reached(k, tc.returned_by[k], tc.returned_min[k], dsm_self.id, n);
	if (n > tc.entered_max[k]) {
		tc.entered_max[k] = n;
		tc.entered_by[k] = dsm_self.id;
	}
	pthread_mutex_unlock(&tc.mu);
}

/* The calling team thread has returned from the team's function. */
static void team_returned(void)
{
	pthread_mutex_lock(&tc.mu);
	for (int k = 0; k < 2; k++) {
		uint64_t n = dsm_self.bars[k];
		if (tc.entered_max[k] > n)
			never_reached(k, dsm_self.id, n, tc.entered_by[k], tc.entered_max[k]);
		if (!tc.returned || n < tc.returned_min[k]) {
			tc.returned_min[k] = n;
			tc.returned_by[k] = dsm_self.id;
		}
	}
	tc.returned = 1;
	pthread_mutex_unlock(&tc.mu);
}

enum { GATE_WAIT, GATE_RUN, GATE_ABORT };

struct member {
	pthread_t tid;
	int id, team;
	void (*fn)(int, void *);
	void *arg;
	uint32_t *gate; /* the team starts only once every thread exists */
};

static void *member_main(void *p)
{
	struct member *m = p;
	uint32_t g;
	while ((g = ld_acquire(m->gate)) == GATE_WAIT)
		futex_wait(m->gate, GATE_WAIT);
	if (g == GATE_ABORT) {
		dsm_team_stop(mono_ns());
		return NULL;
	}
	dsm_self = (struct dsm_thread){.counted = 1, .id = m->id, .team = m->team};
	if (token_policy()) { /* not running until it holds the token */
		dsm_team_stop(mono_ns());
		token_take(0);
		STAT_ADD(sync_ns, dsm_team_resume(mono_ns()));
	}
	uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	dsm_self_resumed(cpu0, mono_ns());
	m->fn(m->id, m->arg);
	team_returned();
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	STAT_ADD(run_ns, run_since(cpu));
	STAT_ADD(team_cpu_ns, cpu - cpu0);
	dsm_team_stop(mono_ns()); /* counted as running since the parent added it */
	if (token_policy())
		token_give();
	return NULL;
}

int locus_dsm_parallel(int threads, void (*fn)(int thread, void *arg), void *arg)
{
	if (!fn || threads < 1 || threads > LOCUS_DSM_MAX_THREADS) {
		fprintf(stderr,
			"locus-dsm: locus_dsm_parallel: %d threads: a team has 1 to %d "
			"threads%s\n",
			threads, LOCUS_DSM_MAX_THREADS, fn ? "" : " and a function");
		return -1;
	}
	dsm_require_running("locus_dsm_parallel");
	dsm_sync_point();
	if (dsm_self.team > 1 || !dsm_self.counted || dsm_self.spawned) {
		fprintf(stderr, "locus-dsm: locus_dsm_parallel is called by the thread that "
				"called locus_dsm_init, outside any team\n");
		return -1;
	}
	struct member *m = calloc((size_t)threads, sizeof(*m));
	if (!m) {
		fprintf(stderr, "locus-dsm: locus_dsm_parallel: out of memory\n");
		return -1;
	}
	uint32_t gate = GATE_WAIT;
	team_check_reset();
	dsm_self.bars[0] = dsm_self.bars[1] = 0;
	for (int i = 0; i < threads; i++)
		m[i] = (struct member){
			.id = i, .team = threads, .fn = fn, .arg = arg, .gate = &gate};
	/* The new threads count as running from now: a stall of thread 0 before
	   they are scheduled is not a stall of the node. */
	faa_relaxed(&dsm.team_word, (uint64_t)(threads - 1));
	int created = 1, err = 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 8u << 20);
	for (; created < threads; created++) {
		err = pthread_create(&m[created].tid, &attr, member_main, &m[created]);
		if (err)
			break;
	}
	pthread_attr_destroy(&attr);
	if (err) {
		/* Nothing has run: the threads that exist leave at the gate. */
		for (int i = created; i < threads; i++)
			dsm_team_stop(mono_ns());
		st_release(&gate, GATE_ABORT);
		futex_wake(&gate, FUTEX_WAKE_ALL);
		for (int i = 1; i < created; i++)
			pthread_join(m[i].tid, NULL);
		free(m);
		fprintf(stderr,
			"locus-dsm: locus_dsm_parallel: cannot create thread %d of %d: %s\n",
			created, threads, strerror(err));
		return -1;
	}
	st_relaxed(&dsm.team_size, (uint32_t)threads);
	dsm_note_threads(0);
	dsm_self.team = threads;
	if (token_policy())
		token_take(0);
	st_release(&gate, GATE_RUN);
	futex_wake(&gate, FUTEX_WAKE_ALL);
	fn(0, arg);
	dsm_sync_point(); /* what follows frees: it must not run twice */
	team_returned();
	struct dsm_stall st;
	dsm_stall_begin(&st, STALL_OTHER);
	for (int i = 1; i < threads; i++)
		pthread_join(m[i].tid, NULL);
	dsm_stall_end(&st, mono_ns(), DSM_LOCAL);
	if (token_policy())
		token_give();
	dsm_self.team = 1;
	st_relaxed(&dsm.team_size, 1);
	free(m);
	return 0;
}

/* The node-local barrier of a team: generation and arrivals in one word
   would need 64-bit futexes; two words, the generation read first. */
static uint32_t tb_arrived, tb_generation;

void locus_dsm_team_barrier(void)
{
	int team = dsm_self.team > 1 ? dsm_self.team : 1;
	if (team == 1)
		return;
	dsm_team_count_barrier(1);
	struct dsm_stall st;
	dsm_stall_begin(&st, STALL_OTHER);
	uint32_t gen = ld_acquire(&tb_generation);
	if (faa_acqrel(&tb_arrived, 1) + 1 == (uint32_t)team) {
		st_relaxed(&tb_arrived, 0);
		st_release(&tb_generation, gen + 1);
		futex_wake(&tb_generation, FUTEX_WAKE_ALL);
	} else {
		while (ld_acquire(&tb_generation) == gen)
			futex_wait(&tb_generation, gen);
	}
	dsm_stall_end(&st, mono_ns(), DSM_LOCAL);
}

int locus_dsm_thread(void)
{
	return dsm_self.team > 1 ? dsm_self.id : 0;
}

int locus_dsm_threads(void)
{
	return dsm_self.team > 1 ? dsm_self.team : 1;
}
