/*
 * Admission: a FIFO lock that survives more threads than CPUs.
 *
 * The problem. A FIFO lock hands the lock to the thread whose turn it is. With
 * more waiting threads than CPUs, that thread has usually been preempted or
 * has gone to sleep (spin-then-park), so every hand-off waits for the
 * scheduler to run it: tens of microseconds to milliseconds instead of a
 * fraction of one, and ticket, clh and plain mcs lose 95-99 % of their
 * throughput at 8 threads on 2 CPUs.
 *
 * The remedy (concurrency restriction in front of the queue, after Dice and
 * Kogan's generic concurrency restriction). At most l->admit threads, the
 * holder included, are in the lock's own queue at once; the default is the
 * number of CPUs the process may run on. A thread that finds the queue full
 * waits outside, asleep, in a FIFO queue of its own (the admission queue, an
 * MCS queue of nodes on the waiters' stacks). So the waiters in the lock's queue are
 * threads that took their place while running, and no more of them than
 * there are CPUs: the thread whose turn comes is running or about to run, and
 * the order among them stays FIFO. Threads leaving the lock make room and
 * running threads take it: the lock circulates among as many threads as there
 * are CPUs, and those outside sleep instead of competing for the CPUs.
 *
 * Who is let in from outside, and when. Only the oldest waiter outside, the
 * head, can be let in, and only by a grant: the holder grants it at its unlock
 * when LOCUS_LOCK_ADMIT_NS have passed since the previous grant (or since
 * waiters appeared outside), and any unlock that leaves nobody admitted grants
 * it at once. A granted thread enters regardless of the limit; the queue then
 * holds one more than the limit until a thread that leaves finds it full on
 * its way back and waits outside in turn. So the oldest outside gets in
 * within LOCUS_LOCK_ADMIT_NS of the first unlock after it became the head,
 * plus its wake-up; the k-th outside within about k x LOCUS_LOCK_ADMIT_NS; and
 * inside, within (admit) sections. Newcomers that find room enter at once, even
 * while others wait outside: the bound above does not depend on them.
 *
 * Nothing of this runs while nobody waits. A ticket lock's tickets out are
 * its count; clh and mcs count only the threads that found the lock taken: a
 * thread that finds it free takes it with one exchange and flags itself as
 * the uncounted holder instead (lock_impl.h, admit_count_enter), so an
 * uncontended lock and unlock cost what they cost with `strict`. "Nobody
 * admitted" below is then "nobody counted": a waiter outside has seen someone
 * counted, whose leave comes after it.
 *
 * The head's node is published in l->adm.head; a grant takes it from there
 * with an exchange and releases the node's flag (flag.h: no lost wake-up). A
 * waiter behind the head sleeps on its own flag. The grant publishes the
 * head's successor as the new head, without waking it, if it has linked
 * itself; otherwise the head does so once it runs. So a grant costs one
 * wake-up, and the next grant does not wait for that wake-up. No grant is
 * lost:
 *   - The first waiter outside (no predecessor) publishes itself, then looks
 *     again for room; an unlock that leaves nobody admitted lowers the count,
 *     then looks for a head. Both sides are sequentially consistent, so one
 *     sees the other: the waiter finds room, or the unlock finds the head.
 *     A waiter that found room takes its node back with an exchange; if a
 *     grant took it first, it waits for that grant's release.
 *   - A waiter let in publishes its successor while it is itself admitted, so
 *     its own unlock, or a later one, comes after the publication and finds it.
 *     A grant that publishes the successor does so before it releases the
 *     waiter it lets in, which then counts itself, so that waiter's unlock
 *     comes after the publication too.
 *   - The first waiter takes its node back with a CAS: an exchange could take
 *     the node of a successor that a grant has just published.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <time.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "common/futex.h"
#include "sync/flag.h"
#include "sync/lock_impl.h"
#include "sync/nodes.h"

uint32_t admit_default(void)
{
	static uint32_t cpus;
	uint32_t n = ld_relaxed(&cpus);
	if (n)
		return n;
	cpu_set_t set;
	/* A syscall, no allocation: locus_lock_init_spec may run before malloc works. */
	n = sched_getaffinity(0, sizeof(set), &set) == 0 ? (uint32_t)CPU_COUNT(&set) : 2;
	if (n < 2)
		n = 2;
	st_relaxed(&cpus, n);
	return n;
}

int admit_clock(struct lock *l)
{
	uint64_t now = mono_ns();
	if (l->adm.clock_ns == 0) {
		l->adm.clock_ns = now;
		return 0;
	}
	if (now - l->adm.clock_ns < LOCUS_LOCK_ADMIT_NS)
		return 0;
	l->adm.clock_ns = now;
	return 1;
}

/* The release values of a waiter's flag: it is let in, and its successor is
   already the head (a grant saw it linked), or it must make it so itself;
   with LET_IN_COUNTED, the granter has counted it in already (gates only). */
#define LET_IN_PASSED  1u
#define LET_IN	       0u
#define LET_IN_COUNTED 2u

/* A gate is a struct lock that is never locked (admit_gate_init). */
static int is_gate(const struct lock *l)
{
	return l->kind == LOCUS_LOCK_NKINDS;
}

/* Make n the head. A gate notes when: its head asks for a place once it has
   been the head for LOCUS_LOCK_ADMIT_NS (wait_outside). */
static void publish_head(struct lock *l, struct locus_qnode *n)
{
	if (is_gate(l))
		st_relaxed(&l->adm.clock_ns, mono_ns());
	st_seqcst(&l->adm.head, n);
}

/* Let the head in with `counted` in its release value: 0 if none is published. */
static int grant(struct lock *l, uint32_t counted)
{
	struct locus_qnode *h = xchg_seqcst(&l->adm.head, (struct locus_qnode *)NULL);
	if (!h)
		return 0;
	/* Publish the successor now, not when h has woken up (that can take
	   milliseconds with busy CPUs): the next grant is then due on time. */
	if (counted)
		st_relaxed(&l->u.gate.due, 0u); /* the request was h's */
	struct locus_qnode *next = ld_acquire(&h->next);
	if (next) {
		publish_head(l, next);
		flag_release(&h->flag, LET_IN_PASSED | counted);
	} else {
		flag_release(&h->flag, LET_IN | counted);
	}
	return 1;
}

void admit_grant(struct lock *l)
{
	grant(l, 0);
}

/*
 * flag_wait for at most ns (< 1 s): the release value, or FLAG_PARKED if none
 * came (the flag then stays parked, which flag_wait accepts).
 */
static uint32_t flag_wait_a_while(uint32_t *f, const locus_wait *w, uint64_t ns)
{
	uint32_t v = ld_acquire(f);
	if (v < FLAG_WAIT)
		return v;
	if (w->kind == LOCUS_WAIT_SPIN) {
		uint64_t t0 = mono_ns();
		for (uint32_t i = 1; (v = ld_acquire(f)) >= FLAG_WAIT; i++) {
			cpu_relax();
			if (i % 1024 == 0 && mono_ns() - t0 >= ns)
				return FLAG_PARKED;
		}
		return v;
	}
	uint32_t expected = FLAG_WAIT;
	if (v == FLAG_WAIT && !cas_acquire_both(f, &expected, FLAG_PARKED))
		return expected; /* the release value came in */
	struct timespec rel = {0, (long)ns};
	futex_wait_for(f, FLAG_PARKED, &rel);
	v = ld_acquire(f);
	return v < FLAG_WAIT ? v : FLAG_PARKED;
}

/*
 * Wait outside until let in: the flag's release value. A lock's waiter just
 * waits, as its lock's next unlock always comes and lets the head in (idle, or
 * due after a long section). A gate's head cannot count on that: threads may
 * stay inside indefinitely (a transaction waiting for another's commit) with
 * room beside them, and no leave to grant it. So while it is the head it
 * looks for room every LOCUS_LOCK_ADMIT_NS, and if it finds it enters by
 * itself, taking its node back as the first waiter does; *counted then says
 * it is counted already. If it finds none it asks the next leave for its
 * place (u.gate.due).
 */
static uint32_t wait_outside(struct lock *l, struct locus_qnode *n, const locus_wait *w,
			     admit_enter_fn enter, int *counted)
{
	if (!is_gate(l))
		return flag_wait(&n->flag, w);
	uint64_t ns = LOCUS_LOCK_ADMIT_NS;
	for (;;) {
		uint32_t v = flag_wait_a_while(&n->flag, w, ns);
		if (v != FLAG_PARKED)
			return v;
		ns = LOCUS_LOCK_ADMIT_NS;
		if (ld_seqcst(&l->adm.head) != n)
			continue;
		if (!enter(l, 0)) {
			/* Full. Once we have been the head for LOCUS_LOCK_ADMIT_NS, the
			   next leave is to give us its place; until then, sleep. */
			uint64_t head_ns = mono_ns() - ld_relaxed(&l->adm.clock_ns);
			if (head_ns >= LOCUS_LOCK_ADMIT_NS)
				st_relaxed(&l->u.gate.due, 1u);
			else
				ns = LOCUS_LOCK_ADMIT_NS - head_ns;
			continue;
		}
		st_relaxed(&l->u.gate.due, 0u);
		*counted = 1;
		struct locus_qnode *expected = n;
		if (cas_seqcst(&l->adm.head, &expected, (struct locus_qnode *)NULL))
			return LET_IN;
		return flag_wait(&n->flag, w); /* a grant took it first */
	}
}

void admit_wait(struct lock *l, admit_enter_fn enter)
{
	/* Outside, the wait is usually milliseconds: sleep at once, unless the
	   policy is to spin (then the caller has CPUs to spare). */
	locus_wait w = {.kind = l->wait.kind == LOCUS_WAIT_SPIN ? LOCUS_WAIT_SPIN
								: LOCUS_WAIT_PARK};
	/*
	 * The node lives on this stack: others use it only while we are here (a
	 * successor links itself to it, and we wait for that before leaving; a
	 * grant releases its flag, and we wait for that too; flag.h: the releaser
	 * touches nothing after). So waiting outside allocates nothing, and a
	 * ticket lock allocates nothing at all.
	 */
	struct locus_qnode node, *n = &node;
	n->next = NULL;
	flag_arm(&n->flag);
	struct locus_qnode *pred = xchg_acqrel(&l->adm.tail, n);
	uint32_t v = LET_IN;
	int counted = 0; /* enter(l, 0) found room and counted us */
	lock_hook(l, LOCK_HOOK_ADMIT);
	if (pred) {
		st_release(&pred->next, n);
		v = wait_outside(l, n, &w, enter, &counted);
	} else {
		publish_head(l, n);
		if (enter(l, 0)) {
			/* Room: take our node back, unless a grant already has it (and
			   may have published our successor: a CAS, not an exchange). */
			counted = 1;
			struct locus_qnode *expected = n;
			if (!cas_seqcst(&l->adm.head, &expected, (struct locus_qnode *)NULL))
				v = flag_wait(&n->flag, &w);
		} else {
			v = wait_outside(l, n, &w, enter, &counted);
		}
	}
	if (v & LET_IN_COUNTED) {
		v &= ~LET_IN_COUNTED;
		/* A gate's head that found room as it was let in holds two places. */
		if (counted)
			faa_seqcst(&l->u.gate.active, (uint32_t)-1);
	} else if (!counted) {
		enter(l, 1);
	}
	if (v == LET_IN_PASSED)
		return; /* our successor is the head already; nobody refers to n */
	/* Admitted: the next one outside becomes the head. */
	struct locus_qnode *next = ld_acquire(&n->next);
	if (!next) {
		struct locus_qnode *expected = n;
		if (cas_acqrel(&l->adm.tail, &expected, (struct locus_qnode *)NULL))
			return;
		next = qnode_wait_next(n);
	}
	publish_head(l, next);
}

/*
 * The gate. Nothing holds it, so nothing has a lock's natural moment to let
 * the head in; the head asks instead. Like every waiter outside it wakes every
 * LOCUS_LOCK_ADMIT_NS; if it is the head then and finds no room, it sets
 * u.gate.due, and the next leave gives it its place. A leave that leaves the
 * gate empty lets it in at once (below). Not at every leave that makes room:
 * the head is asleep, and a wake-up per pass through the gate would cost more
 * than the transactions it guards, while running newcomers take the room at
 * once. So a leave reads one flag and no clock. A grant gives the head a place
 * that is counted already (LET_IN_COUNTED): the leaving thread's own, handed
 * over, or one taken for it below the limit. So the gate never holds more than
 * its limit, also while the thread let in is waking up: until then the place
 * is its, and neither a newcomer nor the next head can take it. And a head
 * that finds room when it looks enters by itself, so room left by a leave
 * that had nothing to give is not lost while nobody else leaves.
 */
void admit_gate_init(struct lock *g, const locus_wait *w, uint32_t admit)
{
	*g = (struct lock){.kind = LOCUS_LOCK_NKINDS,
			   .wait = w ? *w : locus_wait_default(),
			   .admit = admit ? admit : admit_default()};
}

/*
 * Give up a place in the gate: a leave's, or the one a newcomer took where
 * there was no room. With hand_over the place goes to the head, if one is
 * still published, and the count does not change. Otherwise the count is
 * lowered, sequentially consistent, then the head looked at: if that left the
 * gate empty while a head waits (it may have looked for room before the
 * others left, and their leaves were not due to grant), a place is taken for
 * it while there is one below the limit, and handed over as above.
 */
static void gate_give_back(struct lock *g, int hand_over)
{
	for (;;) {
		if (hand_over && grant(g, LET_IN_COUNTED))
			return;
		if (faa_seqcst(&g->u.gate.active, (uint32_t)-1) != 1 || !ld_seqcst(&g->adm.head))
			return;
		uint32_t a = ld_seqcst(&g->u.gate.active);
		do {
			if (a >= g->admit)
				return; /* newcomers took the room: their leaves see the head */
		} while (!cas_seqcst(&g->u.gate.active, &a, a + 1));
		hand_over = 1;
	}
}

void admit_gate_leave(struct lock *g)
{
	/* One leave takes the head's request (a look first: the line is read-mostly). */
	gate_give_back(g, ld_relaxed(&g->u.gate.due) && xchg_acquire(&g->u.gate.due, 0u));
}

static int gate_enter(struct lock *g, int forced)
{
	if (faa_seqcst(&g->u.gate.active, 1) < g->admit || forced)
		return 1;
	/* No room: give back the place we took. That is not a leave (the
	   head, perhaps ourselves, is not due a grant from it). */
	gate_give_back(g, 0);
	return 0;
}

void admit_gate_enter(struct lock *g)
{
	if (!gate_enter(g, 0))
		admit_wait(g, gate_enter);
}
