/*
 * The communication thread: the thread of a node that takes messages out of
 * MPI, and sends them, unless an application thread stands in for it.
 *
 * Thread level: MPI_THREAD_SERIALIZED. MPI is called only under comm_mu
 * (below): by this thread, which initializes MPI, and by an application
 * thread standing in for it, which hands the messages of its own request to
 * MPI. MPICH takes its locks only at MPI_THREAD_MULTIPLE.
 *
 * Waiting: Debian's MPICH busy-waits inside blocking calls, and tests run more
 * nodes than cores, so this thread never blocks in MPI. It sleeps on its
 * node's doorbell (bell.c): application threads ring it for their requests,
 * and nodes on this host ring it after handing it a message, so either wakes
 * it at once. Messages from nodes on other hosts are found when the sleep's
 * timeout ends (backing off from 10 us to 1 ms, after a few polls). Only if
 * asked (LOCUS_DSM_POLL_US) does it poll, yielding the CPU between polls,
 * while a fault of its node waits for its answer.
 *
 * Transport delay: each message is held in a per-destination queue and
 * handed to MPI only when it would have arrived over the emulated network of
 * link.h (one outgoing link per node, its bytes at the per-byte delay, then
 * the per-message delay); each pair's order is kept.
 *
 * Failure: peers on this host are watched through pidfds (an exit is seen
 * at once), peers anywhere through heartbeats (silent for
 * LOCUS_DSM_PEER_TIMEOUT_S, not counting the time this thread itself was
 * kept from running: see deaf_for). Either way this node prints which node
 * failed and exits with LOCUS_DSM_EXIT_PEER.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/futex.h"
#include "internal.h"
#include "link.h"

#define SPIN_POLLS	   64 /* polls before a sleep when the poll window is 0 */
#define SLEEP_MIN_NS	   10000ull
#define SLEEP_MAX_NS	   1000000ull
#define SLEEP_MAX_BUSY_NS  50000ull   /* while an application thread waits on us */
#define DELAY_YIELD_NS	   50000ull   /* a held message due sooner: yield, do not sleep */
#define ACTIVE_NS	   2000000ull /* ... and this long after the last work */
#define LIVENESS_EVERY_NS  50000000ull
#define HEARTBEAT_EVERY_NS 500000000ull
#define STALL_NS	   10000000ull /* off the CPU this much longer than asked: deaf */

struct outmsg {
	struct outmsg *next;
	uint64_t release_ns;
	int dst;
	int len;
	size_t cap; /* of the whole, for dsm_keep_put */
	MPI_Request req;
	_Alignas(16) char buf[]; /* a struct dsm_hdr first */
};

struct peer {
	struct outmsg *qhead, *qtail; /* delayed, not yet given to MPI */
	uint32_t send_seq, recv_seq;
	uint64_t reaches_ns;	/* when the last message to it goes to MPI (later: held) */
	uint64_t last_heard_ns; /* moved on by the time this thread was deaf since */
	int pid;
	int pidfd;
	int local; /* on this host: one monotonic clock */
	char host[64];
};

static MPI_Comm comm;
static pthread_t comm_thread;
static int comm_up; /* MPI is set up: messages can be sent */
static struct peer peers[DSM_MAX_NODES];
static struct outmsg *inflight;
static int leaving;
static uint64_t outstanding;	/* application requests taken but not completed */
static uint64_t faults_waiting; /* of which faults: a thread waits for an answer */
static char *rxbuf;
static int rxcap;
static volatile sig_atomic_t launcher_said_failure;
static int watch_stop = -1; /* eventfd that ends the peer watcher */
static pthread_t watcher;

uint64_t dsm_progress;
/* The fault being taken (its first message stamps its t_sent), and when the
   message being dispatched was taken out of MPI (0 outside a dispatch). */
static struct dsm_req *taking;
static uint64_t rx_ns;
/* While set, every message is held to the end of the work (dsm_send): a
   fault's requests with its walk's, the answers to a bundle's or a run's
   requests, leave together (send_held). */
static int corked;
static int stopping; /* dsm_fatal has started on this thread */

/*
 * The communication thread's state is its own while it works: it holds
 * comm_mu for each turn of its loop, and lets it go only to sleep or yield.
 * Meanwhile an application thread may take it and handle its own lock
 * request in the thread's place (dsm_call, standing in): a lock this node
 * keeps or manages, free, is then taken and given back without waking the
 * communication thread and being woken by it (two wake-ups, most of a local
 * lock's cost: Splash-3's barnes takes a lock for every cell it touches). So
 * may a fault the protocol lets it handle (fault_in_place: under lrc, a page
 * to twin and write, of which Splash-3's FFT takes 50,000 a node, or one to
 * fetch; under sc, a fault that sends a request, or a page's first touch
 * on the node it was born at), or a barrier (the arrival that makes its node
 * enter sends the entry, or on node 0 the leave). A stand-in hands the
 * messages it sends to MPI itself, and rings their peers, so a remote miss,
 * lock or barrier costs no wake-up of this thread on the way out; the
 * answers come to this thread, or to the stand-in waiting for them on its
 * doorbell (await_taking), as do the calls that move an object's word for a
 * thread waiting at its home (dsm_await_word). Under an emulated delay the
 * messages a stand-in sends wait in the peer's queue for this thread, which
 * the stand-in wakes.
 */
static pthread_mutex_t comm_mu = PTHREAD_MUTEX_INITIALIZER;
static int comm_looping; /* the loop runs: stand-ins are welcome (under comm_mu) */
/* this thread works in the communication thread's place, for this request of its own */
static __thread struct dsm_req *standing_for;
static __thread int standing_in; /* this application thread holds comm_mu */

/* comm_mu, taken by an application thread in the communication thread's
   place (a fatal error there tells the other nodes, as that thread's would). */
static int stand_in_lock(void)
{
	if (pthread_mutex_trylock(&comm_mu) != 0)
		return 0;
	standing_in = 1;
	return 1;
}

static void stand_in_unlock(void)
{
	standing_in = 0;
	pthread_mutex_unlock(&comm_mu);
}
static int stand_in_msgs; /* messages a stand-in sent for its own request (under comm_mu) */
static int abort_peers(const char *msg);
static void turn_end(void);
static void exit_after_grace(void) __attribute__((noreturn));

/*
 * A fatal error: say it, and when the communication thread finds it, tell
 * every other node why the run stops (ABORT), so that each names the cause
 * instead of only "node N exited". Application threads exit at once; the
 * others learn of it from the exit.
 */
void dsm_fatal(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dprintf(2, "locus-dsm: node %d: fatal: %s\n", dsm.node, msg);
	dsm_bell_unlink();
	/* The communication thread, or a thread in its place (holding comm_mu,
	   so it may call MPI): a message it took may be what was wrong. */
	if ((pthread_equal(pthread_self(), comm_thread) || standing_for || standing_in) &&
	    !stopping) {
		stopping = 1;
		if (abort_peers(msg))
			exit_after_grace();
	}
	_exit(1);
}

/* ---- application side ---- */

/* A request on its way: not done, its steps not timed yet. */
static void req_start(struct dsm_req *r)
{
	r->done = 0;
	r->on_bell = 0;
	r->t_taken = r->t_sent = r->t_recv = r->t_done = 0;
	r->t_posted = mono_ns();
}

void dsm_post(struct dsm_req *r)
{
	if (dsm_forked)
		dsm_fatal_child("made a locus-dsm call");
	req_start(r);
	struct dsm_req *top = ld_relaxed(&dsm.posted);
	do
		r->next = top;
	while (!cas_release_weak(&dsm.posted, &top, r));
	dsm_bell_ring_self();
}

/* The communication thread's work for one request (or a stand-in's). */
static void take(struct dsm_req *r)
{
	outstanding++;
	dsm_progress++;
	switch (r->kind) {
	case DSM_REQ_FAULT:
		r->t_taken = mono_ns();
		faults_waiting++;
		taking = r;
		dsm_send_hold(); /* its requests and its walk's leave together */
		dsm.proto->fault(r);
		dsm_send_release();
		taking = NULL;
		break;
	case DSM_REQ_PREFETCH:
		dsm_send_hold();
		if (dsm.proto->prefetch)
			dsm.proto->prefetch(r->a, r->b, r->result == 1);
		dsm_send_release();
		dsm_req_done(r, 0);
		break;
	case DSM_REQ_CALL:
		dsm_ship_take(r);
		break;
	case DSM_REQ_SHIP_DONE:
		dsm_ship_done(r);
		break;
	default:
		dsm_sync_request(r);
		break;
	}
}

/* The fault handler runs on the thread's alternate signal stack if it has
   one (SA_ONSTACK: avr's needs it; UCX sets one up of about 180 KiB). The
   protocol's fault handling is done there only with STAND_IN_STACK of it
   left; on a smaller one it stays with the communication thread. */
#define STAND_IN_STACK (64u << 10)

static int stack_too_small(void)
{
	stack_t ss;
	char here;
	if (sigaltstack(NULL, &ss) != 0 || !(ss.ss_flags & SS_ONSTACK))
		return 0;
	return (size_t)(&here - (char *)ss.ss_sp) < STAND_IN_STACK;
}

/* May an application thread handle r itself (under comm_mu)? A lock request
   (dsm_sync_can_stand_in), or a fault the protocol lets it handle
   (fault_in_place, which stand_in has checked it has), with stack enough:
   the wake-ups were most of the cost of either. */
static int may_stand_in(const struct dsm_req *r)
{
	if (r->kind == DSM_REQ_CALL) /* a shipped call its thread waits for */
		return !dsm.proto->thread_fault;
	if (r->kind != DSM_REQ_FAULT)
		return dsm_sync_can_stand_in(r);
	return dsm.proto->fault_in_place((size_t)r->a, (int)r->b) && !stack_too_small();
}

/* Handle r on this thread, in the communication thread's place, if that
   thread is not working and r is a request it may (may_stand_in): 0 to post
   it; 1 if it was handled (it may still wait for an answer); 2 if it waits
   for an answer that this thread may take out of MPI itself
   (await_answer). A fault's
   stand-in runs in the SIGSEGV handler: the access that faulted is the
   application's, on the region, so the thread was not inside this runtime,
   whose code under comm_mu never touches the region (so it does not hold
   comm_mu either), nor inside malloc, which the fault's handling calls (for
   a twin, a message), as no allocator of the C library touches the region,
   nor inside MPI, which only a holder of comm_mu calls. A fatal error there
   ends the node with its reason on standard error, as any on an application
   thread does (dsm_fatal). */
static int stand_in(struct dsm_req *r)
{
	if (dsm_forked || (r->kind == DSM_REQ_FAULT && !dsm.proto->fault_in_place) ||
	    !stand_in_lock())
		return 0;
	if (!comm_looping || !may_stand_in(r)) {
		stand_in_unlock();
		return 0;
	}
	req_start(r);
	r->next = NULL;
	standing_for = r;
	stand_in_msgs = 0;
	take(r);
	dsm_ship_flush(); /* a call taken: its message */
	turn_end();
	standing_for = NULL;
	/* Only the communication thread completes r later, under comm_mu. */
	int waits = !r->done;
	if (r->kind == DSM_REQ_BARRIER && (!waits || dsm_sync_barrier_entered(r)))
		STAT_ADD(barriers_in_place, 1); /* this thread's arrival made the node enter */
	if (r->kind == DSM_REQ_FAULT) {
		if (!waits)
			STAT_ADD(faults_in_place, 1);
		else if (r->result == DSM_REMOTE && dsm_self.counted)
			STAT_ADD(misses_in_place, 1); /* as remote_misses counts them */
	}
	/* Under an emulated delay every message sent is held for the thread to
	   release (dsm_send); and an answer from a peer that does not ring
	   comes only when the thread looks, which it does sooner when it knows
	   someone waits. */
	int held = stand_in_msgs && (dsm.cfg.delay_ns || dsm.cfg.delay_ns_per_byte);
	int wake = held || (waits && dsm_bell_peers() != dsm.nodes - 1);
	/* Else every answer rings this node's own doorbell: the thread can wait
	   on it for the answer to what it sent (a fault combined with another's
	   request, or a lock queued behind a holder here, waits as before). */
	int sent = (stand_in_msgs && (r->kind != DSM_REQ_FAULT || r->result == DSM_REMOTE)) ||
		   (waits && dsm_sync_barrier_entered(r));
	/* Not under an emulated delay: what the waiter sends while it takes
	   messages (a barrier's leave, an answer) waits in the peers' queues for
	   the communication thread, which nothing would wake. */
	r->on_bell = waits && sent && !wake && dsm_bell_shared() && dsm.cfg.take_answers &&
		     !dsm.cfg.delay_ns && !dsm.cfg.delay_ns_per_byte;
	stand_in_unlock();
	if (wake)
		dsm_bell_ring_self();
	return r->on_bell ? 2 : 1;
}

static void await_answer(struct dsm_req *r);

void dsm_take_or_post(struct dsm_req *r)
{
	if (!dsm_forked && stand_in_lock()) {
		/* Behind what was posted before it (a batch's answer the
		   server posted: under lrc it ends the interval this one's
		   answer must carry): posted too, while any waits. */
		if (comm_looping && !ld_acquire(&dsm.posted)) {
			req_start(r);
			r->next = NULL;
			take(r); /* r may be gone now */
			turn_end();
			stand_in_unlock();
			if (dsm.cfg.delay_ns || dsm.cfg.delay_ns_per_byte)
				dsm_bell_ring_self(); /* held in the peer's queue for the thread */
			return;
		}
		stand_in_unlock();
	}
	dsm_post(r);
}

void dsm_call(struct dsm_req *r)
{
	int how = stand_in(r);
	if (how == 2) {
		dsm_stall_waits();
		await_answer(r);
		return;
	}
	if (!how)
		dsm_post(r);
	for (int i = 0; i < 100; i++) {
		if (ld_acquire(&r->done))
			return;
		cpu_relax();
	}
	dsm_stall_waits();
	while (!ld_acquire(&r->done))
		futex_wait(&r->done, 0);
}

void dsm_miss_steps(const struct dsm_req *r, uint64_t t_fault, uint64_t resumed)
{
	/* Every step timed, and in order (a step not taken, e.g. a completion
	   without a message, leaves a zero). */
	if (!(t_fault <= r->t_posted && r->t_posted <= r->t_taken && r->t_taken <= r->t_sent &&
	      r->t_sent <= r->t_recv && r->t_recv <= r->t_done && r->t_done <= resumed &&
	      r->t_sent))
		return;
	STAT_ADD(miss_steps, 1);
	STAT_ADD(miss_post_ns, r->t_posted - t_fault);
	STAT_ADD(miss_take_ns, r->t_taken - r->t_posted);
	STAT_ADD(miss_send_ns, r->t_sent - r->t_taken);
	STAT_ADD(miss_reply_ns, r->t_recv - r->t_sent);
	STAT_ADD(miss_install_ns, r->t_done - r->t_recv);
	STAT_ADD(miss_resume_ns, resumed - r->t_done);
}

/* ---- communication thread side ---- */

void dsm_req_forget(void)
{
	outstanding--;
}

void dsm_req_done(struct dsm_req *r, int64_t result)
{
	turn_end(); /* what r waited for is mapped before it runs on */
	r->result = result;
	outstanding--;
	if (r->kind == DSM_REQ_FAULT)
		faults_waiting--;
	if (taking == r)
		taking = NULL; /* completed at once: nothing of it is sent */
	r->t_recv = rx_ns;
	r->t_done = mono_ns();
	int on_bell = r->on_bell; /* r may be gone once done is set */
	st_release(&r->done, 1);
	if (r == standing_for) /* nobody sleeps on a stand-in's own request */
		return;
	if (on_bell)
		dsm_bell_answer_wake();
	else
		futex_wake(&r->done, 1);
}

static void mpi_check(int rc, const char *what)
{
	if (rc != MPI_SUCCESS) {
		char s[MPI_MAX_ERROR_STRING];
		int n = 0;
		MPI_Error_string(rc, s, &n);
		dsm_fatal("%s: %s", what, s);
	}
}

static void hand_to_mpi(struct outmsg *m, uint64_t now)
{
	((struct dsm_hdr *)m->buf)->sent_ns = now;
	mpi_check(MPI_Isend(m->buf, m->len, MPI_BYTE, m->dst, DSM_TAG, comm, &m->req), "MPI_Isend");
	m->next = inflight;
	inflight = m;
	if (now > peers[m->dst].reaches_ns)
		peers[m->dst].reaches_ns = now;
	const struct dsm_hdr *h = (const struct dsm_hdr *)(const void *)m->buf;
	dsm_bell_ring(m->dst, h->kind == DSM_MSG_BUNDLE ? (uint32_t)h->a : 1u);
}

/* Transport delay: this node's emulated outgoing link (communication
   thread only, as dsm_send). */
static struct dsm_link out_link;

/*
 * Messages held behind protection changes (region.c, dsm_region_protect_later):
 * while a change is held, every message waits with it, in order, and goes
 * out once the changes are applied (turn_end). A page's contents (a payload
 * in the alias view) are read then, so its copy is taken after its
 * protection came down; any other payload is copied when held, as the
 * sender's buffer may be gone by then, and so is a page's held only for a
 * piece of work that leaves together (dsm_send_hold). An acknowledgement of an
 * invalidation leaves after the page is unmapped. A turn that serves a run
 * of pages so pays one protection change for them.
 */
struct held_msg {
	int dst;
	struct dsm_hdr h;
	const void *payload;
	size_t len;
	void *copy; /* the payload, copied: given back once sent */
	size_t copy_cap;
	struct dsm_req *taking;
};
static struct held_msg *held_msgs;
static size_t nheld_msgs, held_msgs_cap;
/* Requests taken out of MPI this turn, and the sum of when (served). */
static uint64_t serving, serving_at;

static void send_now(int dst, const struct dsm_hdr *h, const void *payload, size_t len,
		     struct dsm_req *tk);
static void send_held(void);

void dsm_send(int dst, const struct dsm_hdr *h, const void *payload, size_t len)
{
	if (dst == dsm.node || dst < 0 || dst >= dsm.nodes)
		dsm_fatal("message of kind %d to node %d", h->kind, dst);
	if (!corked && !nheld_msgs && !dsm_region_held()) {
		send_now(dst, h, payload, len, taking);
		return;
	}
	if (nheld_msgs == held_msgs_cap) {
		size_t cap = held_msgs_cap ? 2 * held_msgs_cap : 64;
		struct held_msg *n = realloc(held_msgs, cap * sizeof(*n));
		if (!n)
			dsm_fatal("out of memory for a message");
		held_msgs = n;
		held_msgs_cap = cap;
	}
	struct held_msg *m = &held_msgs[nheld_msgs++];
	*m = (struct held_msg){
		.dst = dst, .h = *h, .payload = payload, .len = len, .taking = taking};
	/* A page's contents are read when it leaves only behind protection
	   changes (above); held for the cork alone, it is copied now, as a
	   message sent at once would be: what runs before the release may
	   write the page through the alias view (a diff applied). */
	const char *at = payload;
	if (len && (!dsm_region_held() || !(at >= dsm.alias && at + len <= dsm.alias + dsm.size))) {
		if (!(m->copy = dsm_keep_get(len, &m->copy_cap)))
			dsm_fatal("out of memory for a message");
		memcpy(m->copy, payload, len);
		m->payload = m->copy;
	}
}

/* The end of a turn, or a request about to complete: the held protection
   changes, then the messages that waited for them. */
static void turn_end(void)
{
	dsm_region_apply();
	send_held();
	if (serving) {
		STAT_ADD(served, serving);
		STAT_ADD(serve_ns, serving * mono_ns() - serving_at);
		serving = serving_at = 0;
	}
}

void dsm_send_hold(void)
{
	corked++;
}

void dsm_send_release(void)
{
	if (!--corked)
		turn_end();
}

/* One message into buf: its header (numbered in dst's sequence), then its
   payload; its size. */
static size_t put_msg(char *buf, int dst, const struct dsm_hdr *h, const void *payload,
		      size_t len)
{
	struct dsm_hdr *wh = (struct dsm_hdr *)(void *)buf;
	*wh = *h;
	wh->src = (uint16_t)dsm.node;
	wh->seq = ++peers[dst].send_seq;
	if (len)
		memcpy(buf + sizeof(*h), payload, len);
	size_t total = sizeof(*h) + len;
	if (h->kind < LOCUS_DSM_MSG_KINDS) {
		STAT_ADD(msgs_sent[h->kind], 1);
		STAT_ADD(bytes_sent[h->kind], total);
	}
	return total;
}

static struct outmsg *outmsg_new(size_t total)
{
	if (total > INT_MAX)
		dsm_fatal("a message of %zu bytes", total);
	size_t cap;
	struct outmsg *m = dsm_keep_get(sizeof(*m) + total, &cap);
	if (!m)
		dsm_fatal("out of memory for a message");
	m->cap = cap;
	m->len = (int)total;
	m->next = NULL;
	return m;
}

/* m, filled, to MPI now, or to the link's queue under an emulated delay. */
static void post_out(int dst, struct outmsg *m)
{
	struct peer *p = &peers[dst];
	m->dst = dst;
	uint64_t now = mono_ns();
	if (standing_for)
		stand_in_msgs++;
	if (dsm.cfg.delay_ns == 0 && dsm.cfg.delay_ns_per_byte == 0 && !p->qhead) {
		hand_to_mpi(m, now);
		return;
	}
	uint64_t rel = dsm_link_send(&out_link, now, (size_t)m->len, dsm.cfg.delay_ns,
				     dsm.cfg.delay_ns_per_byte);
	/* Never before its predecessor: the link's arrivals only grow. */
	p->reaches_ns = rel;
	m->release_ns = rel;
	if (p->qtail)
		p->qtail->next = m;
	else
		p->qhead = m;
	p->qtail = m;
}

static void send_now(int dst, const struct dsm_hdr *h, const void *payload, size_t len,
		     struct dsm_req *tk)
{
	struct outmsg *m = outmsg_new(sizeof(*h) + len);
	put_msg(m->buf, dst, h, payload, len);
	post_out(dst, m);
	if (tk && !tk->t_sent)
		tk->t_sent = mono_ns();
}

/*
 * Held messages leave grouped by destination: two or more for one node go
 * as one MPI message, a bundle, in the order they were sent (their order
 * between two nodes is all that is kept; messages to different nodes were
 * never ordered). A bundle is a header (DSM_MSG_BUNDLE, a = how many)
 * and, for each message, its size as a uint64_t, then the message as it
 * would go alone, padded to 8 bytes. A turn that serves a run of pages (a
 * bundle of forwards from their manager, a walk's requests) so answers it
 * with one MPI message, one doorbell and one receive at the other end,
 * instead of one per page.
 */
#define BUNDLE_ALIGN 8u

static size_t bundled_size(size_t len)
{
	return sizeof(uint64_t) +
	       ((sizeof(struct dsm_hdr) + len + BUNDLE_ALIGN - 1) & ~(size_t)(BUNDLE_ALIGN - 1));
}

static void send_held(void)
{
	if (!nheld_msgs)
		return;
	uint32_t total[DSM_MAX_NODES] = {0}, done[DSM_MAX_NODES] = {0};
	size_t bytes[DSM_MAX_NODES] = {0}, at[DSM_MAX_NODES];
	struct outmsg *bundle[DSM_MAX_NODES] = {0};
	for (size_t i = 0; i < nheld_msgs; i++) {
		total[held_msgs[i].dst]++;
		bytes[held_msgs[i].dst] += bundled_size(held_msgs[i].len);
	}
	for (size_t i = 0; i < nheld_msgs; i++) {
		struct held_msg *m = &held_msgs[i];
		int d = m->dst;
		/* The first for a node goes alone, ahead of the others: most
		   often the answer or the request a thread waits for (the
		   faulted page, then its walk's), which a bundle would have
		   held until the whole walk had been received. A second alone
		   too: a bundle of one saves nothing. */
		if (done[d]++ == 0 || total[d] == 2) {
			if (done[d] == 1)
				bytes[d] -= bundled_size(m->len);
			send_now(d, &m->h, m->payload, m->len, m->taking);
			dsm_keep_put(m->copy, m->copy_cap);
			continue;
		}
		if (!bundle[d]) {
			bundle[d] = outmsg_new(sizeof(struct dsm_hdr) + bytes[d]);
			struct dsm_hdr *bh = (struct dsm_hdr *)(void *)bundle[d]->buf;
			*bh = (struct dsm_hdr){.kind = DSM_MSG_BUNDLE,
					       .src = (uint16_t)dsm.node,
					       .a = total[d] - 1};
			at[d] = sizeof(*bh);
			STAT_ADD(bundles, 1);
		}
		char *b = bundle[d]->buf;
		size_t n = put_msg(b + at[d] + sizeof(uint64_t), d, &m->h, m->payload, m->len);
		uint64_t n64 = n;
		memcpy(b + at[d], &n64, sizeof(n64));
		memset(b + at[d] + sizeof(uint64_t) + n, 0, bundled_size(m->len) - sizeof(uint64_t) - n);
		at[d] += bundled_size(m->len);
		STAT_ADD(bundled, 1);
		dsm_keep_put(m->copy, m->copy_cap);
		if (done[d] == total[d]) /* its last: the bundle is whole */
			post_out(d, bundle[d]);
	}
	uint64_t sent = mono_ns();
	for (size_t i = 0; i < nheld_msgs; i++)
		if (held_msgs[i].taking && !held_msgs[i].taking->t_sent)
			held_msgs[i].taking->t_sent = sent;
	nheld_msgs = 0;
}

/* Hand due delayed messages to MPI; returns the next release time. */
static uint64_t release_delayed(uint64_t now, int *progress)
{
	uint64_t next = UINT64_MAX;
	for (int i = 0; i < dsm.nodes; i++) {
		struct peer *p = &peers[i];
		while (p->qhead && p->qhead->release_ns <= now) {
			struct outmsg *m = p->qhead;
			p->qhead = m->next;
			if (!p->qhead)
				p->qtail = NULL;
			hand_to_mpi(m, now);
			*progress = 1;
		}
		if (p->qhead && p->qhead->release_ns < next)
			next = p->qhead->release_ns;
	}
	return next;
}

static void reap_sends(void)
{
	struct outmsg **pp = &inflight;
	while (*pp) {
		struct outmsg *m = *pp;
		int flag = 0;
		mpi_check(MPI_Test(&m->req, &flag, MPI_STATUS_IGNORE), "MPI_Test");
		if (flag) {
			*pp = m->next;
			dsm_keep_put(m, m->cap);
		} else {
			pp = &m->next;
		}
	}
}

static int pending_sends(void)
{
	if (inflight)
		return 1;
	for (int i = 0; i < dsm.nodes; i++)
		if (peers[i].qhead)
			return 1;
	return 0;
}

/* The launcher's default clean-up kills every node once one exits: a node
   that stops the run, or hears that it stops, waits this long before it
   exits, so that every node has said why first. */
static void exit_after_grace(void)
{
	dsm_bell_unlink();
	struct timespec grace = {.tv_sec = 1, .tv_nsec = 0};
	nanosleep(&grace, NULL);
	_exit(1);
}

static void on_abort(int src, const char *text, size_t len)
{
	st_release(&leaving, 1); /* the exits that follow are not failures to report */
	dprintf(2, "locus-dsm: node %d: stopping: node %d stopped the run: %.*s\n", dsm.node, src,
		(int)len, text);
	exit_after_grace();
}

/* Messages that move the run (not heartbeats or the watchdog's own) not yet
   delivered. */
static int moving(const struct outmsg *m)
{
	uint16_t kind = ((const struct dsm_hdr *)m->buf)->kind;
	return kind != LOCUS_DSM_MSG_HEARTBEAT && kind != DSM_MSG_PROBE && kind != DSM_MSG_STATUS;
}

int dsm_comm_pending(void)
{
	for (const struct outmsg *m = inflight; m; m = m->next)
		if (moving(m))
			return 1;
	for (int i = 0; i < dsm.nodes; i++)
		for (const struct outmsg *m = peers[i].qhead; m; m = m->next)
			if (moving(m))
				return 1;
	return 0;
}

/* The page protocols' messages (delivery and service statistics). */
static int page_kind(uint16_t kind)
{
	switch (kind) {
	case LOCUS_DSM_MSG_PAGE_REQ:
	case LOCUS_DSM_MSG_PAGE_FWD:
	case LOCUS_DSM_MSG_PAGE:
	case LOCUS_DSM_MSG_INV:
	case LOCUS_DSM_MSG_INV_ACK:
	case LOCUS_DSM_MSG_DIFF_REQ:
	case LOCUS_DSM_MSG_DIFF:
		return 1;
	}
	return 0;
}

static void dispatch(const struct dsm_hdr *h, const void *payload, size_t len)
{
	if (h->kind != LOCUS_DSM_MSG_HEARTBEAT && h->kind != DSM_MSG_PROBE &&
	    h->kind != DSM_MSG_STATUS)
		dsm_progress++;
	if (page_kind(h->kind) || h->kind == LOCUS_DSM_MSG_GC) {
		dsm.proto->message(h, payload, len);
		return;
	}
	switch (h->kind) {
	case LOCUS_DSM_MSG_HEARTBEAT:
		break;
	case LOCUS_DSM_MSG_SHIP:
	case LOCUS_DSM_MSG_SHIP_REPLY:
		dsm_ship_message(h, payload, len);
		break;
	case DSM_MSG_PROBE:
	case DSM_MSG_STATUS:
		dsm_watch_message(h, payload, len);
		break;
	default:
		dsm_sync_message(h, payload, len);
		break;
	}
}

/* One message from src, in its order: checked, counted and handled.
   sent_ns: when the MPI message that carried it was handed to MPI. */
static void deliver(int src, const char *buf, size_t count, uint64_t sent_ns)
{
	const struct dsm_hdr *h = (const struct dsm_hdr *)(const void *)buf;
	if (count < sizeof(*h) || h->src != src || h->kind == DSM_MSG_BUNDLE)
		dsm_fatal("malformed message from node %d", src);
	struct peer *p = &peers[src];
	if (h->kind == DSM_MSG_ABORT) /* may overtake messages still delayed */
		on_abort(src, buf + sizeof(*h), count - sizeof(*h));
	if (h->seq != p->recv_seq + 1)
		dsm_fatal("message %u from node %d out of sequence (expected %u)", h->seq, src,
			  p->recv_seq + 1);
	p->recv_seq = h->seq;
	if (h->kind < LOCUS_DSM_MSG_KINDS) {
		STAT_ADD(msgs_recv[h->kind], 1);
		STAT_ADD(bytes_recv[h->kind], (uint64_t)count);
	}
	uint64_t at = mono_ns();
	if (p->local && page_kind(h->kind) && at > sent_ns) {
		STAT_ADD(delivered, 1);
		STAT_ADD(deliver_ns, at - sent_ns);
	}
	uint16_t kind = h->kind;
	rx_ns = at;
	dispatch(h, buf + sizeof(*h), count - sizeof(*h));
	rx_ns = 0;
	if (kind == LOCUS_DSM_MSG_PAGE_REQ || kind == LOCUS_DSM_MSG_PAGE_FWD) {
		if (nheld_msgs || dsm_region_held() || corked) {
			serving++; /* answered when what it sent leaves (turn_end) */
			serving_at += at;
		} else {
			STAT_ADD(served, 1);
			STAT_ADD(serve_ns, mono_ns() - at);
		}
	}
}

/* A bundle's messages (send_held), each delivered in turn. (receive is
   never re-entered: its caller holds comm_mu, which a stand-in only
   tries.) */
static void deliver_bundle(int src, int count)
{
	const char *buf = rxbuf;
	const struct dsm_hdr *bh = (const struct dsm_hdr *)(const void *)buf;
	size_t off = sizeof(*bh), len = (size_t)count;
	uint64_t n = bh->a, sent_ns = bh->sent_ns;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t one;
		if (len - off < sizeof(one))
			dsm_fatal("malformed bundle from node %d", src);
		memcpy(&one, buf + off, sizeof(one));
		if (one < sizeof(struct dsm_hdr) || one > len - off - sizeof(one))
			dsm_fatal("malformed bundle from node %d", src);
		deliver(src, buf + off + sizeof(one), (size_t)one, sent_ns);
		off += bundled_size((size_t)one - sizeof(struct dsm_hdr));
		if (off > len)
			dsm_fatal("malformed bundle from node %d", src);
	}
	if (off != len || !n)
		dsm_fatal("malformed bundle from node %d", src);
}

static int receive(uint64_t now)
{
	int got = 0;
	for (int i = 0; i < 64; i++) {
		int flag = 0;
		MPI_Status st;
		mpi_check(MPI_Iprobe(MPI_ANY_SOURCE, DSM_TAG, comm, &flag, &st), "MPI_Iprobe");
		if (!flag)
			break;
		int count = 0;
		MPI_Get_count(&st, MPI_BYTE, &count);
		if (count > rxcap) {
			free(rxbuf);
			rxcap = count;
			rxbuf = malloc((size_t)rxcap);
			if (!rxbuf)
				dsm_fatal("out of memory for a message");
		}
		mpi_check(MPI_Recv(rxbuf, count, MPI_BYTE, st.MPI_SOURCE, DSM_TAG, comm,
				   MPI_STATUS_IGNORE),
			  "MPI_Recv");
		const struct dsm_hdr *h = (const struct dsm_hdr *)(void *)rxbuf;
		int src = st.MPI_SOURCE;
		if ((size_t)count < sizeof(*h) || h->src != src)
			dsm_fatal("malformed message from node %d", src);
		peers[src].last_heard_ns = now;
		if (h->kind == DSM_MSG_BUNDLE) {
			/* What its requests' answers send leaves together. (Not
			   so for every message: lrc's took 10-20% longer on
			   fft, its answers held behind the work that followed
			   them in the same message.) */
			dsm_send_hold();
			deliver_bundle(src, count);
			dsm_send_release();
		} else {
			deliver(src, rxbuf, (size_t)count, h->sent_ns);
		}
		got = 1;
	}
	return got;
}

static int take_requests(void)
{
	struct dsm_req *list = xchg_acquire(&dsm.posted, NULL);
	if (!list)
		return 0;
	struct dsm_req *fifo = NULL;
	while (list) { /* the stack is newest first */
		struct dsm_req *n = list->next;
		list->next = fifo;
		fifo = list;
		list = n;
	}
	while (fifo) {
		struct dsm_req *r = fifo;
		fifo = r->next;
		r->next = NULL;
		take(r);
	}
	dsm_ship_flush(); /* the calls taken: one message per home */
	return 1;
}

void dsm_comm_leaving(void)
{
	st_release(&leaving, 1);
	uint64_t one = 1;
	if (watch_stop >= 0 && write(watch_stop, &one, sizeof(one)) < 0)
		dsm_fatal("stopping the peer watcher: %s", strerror(errno));
}

/* Async-signal-safe formatting for the failure message (the launcher's
   SIGUSR1 handler prints it too). */
static size_t put_str(char *buf, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		buf[at++] = *s++;
	return at;
}

static size_t put_int(char *buf, size_t at, size_t cap, long v)
{
	char tmp[24];
	int n = 0;
	unsigned long u = v < 0 ? (unsigned long)-v : (unsigned long)v;
	do
		tmp[n++] = (char)('0' + u % 10);
	while ((u /= 10) && n < (int)sizeof(tmp));
	if (v < 0 && at + 1 < cap)
		buf[at++] = '-';
	while (n > 0 && at + 1 < cap)
		buf[at++] = tmp[--n];
	return at;
}

/*
 * Tell every other node that this one stops, and why: straight to MPI (no
 * emulated delay), then wait a moment for the sends to leave; a node that
 * gets it prints the reason and exits.
 */
static int abort_peers(const char *msg)
{
	if (!comm_up || ld_acquire(&leaving))
		return 0;
	st_release(&leaving, 1);
	size_t len = strnlen(msg, 1024);
	MPI_Request req[DSM_MAX_NODES];
	char *buf[DSM_MAX_NODES];
	int n = 0;
	for (int i = 0; i < dsm.nodes; i++) {
		if (i == dsm.node || !(buf[n] = malloc(sizeof(struct dsm_hdr) + len)))
			continue;
		struct dsm_hdr h = {.kind = DSM_MSG_ABORT,
				    .src = (uint16_t)dsm.node,
				    .seq = ++peers[i].send_seq};
		memcpy(buf[n], &h, sizeof(h));
		memcpy(buf[n] + sizeof(h), msg, len);
		if (MPI_Isend(buf[n], (int)(sizeof(h) + len), MPI_BYTE, i, DSM_TAG, comm,
			      &req[n]) == MPI_SUCCESS) {
			n++;
			dsm_bell_ring(i, 1);
		} else
			free(buf[n]);
	}
	/* The buffers stay: the process exits next. */
	uint64_t until = mono_ns() + NS_PER_S;
	MPI_Status st[DSM_MAX_NODES];
	for (int done = n == 0; !done && mono_ns() < until;) {
		if (MPI_Testall(n, req, &done, st) != MPI_SUCCESS)
			break;
		if (!done) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return n > 0;
}

static int announced; /* the failure message has been printed */

/*
 * Print, once per process, which node failed. Async-signal-safe: write(2)
 * only. Returns 0 when there is nothing to say (already said, or this node is
 * past its last barrier, when peers may exit).
 */
static int announce(int q, const char *why)
{
	if (ld_acquire(&leaving) || xchg_acqrel(&announced, 1))
		return 0;
	char msg[256];
	size_t n = 0, cap = sizeof(msg);
	n = put_str(msg, n, cap, "locus-dsm: node ");
	n = put_int(msg, n, cap, dsm.node);
	n = put_str(msg, n, cap, ": node ");
	n = put_int(msg, n, cap, q);
	n = put_str(msg, n, cap, " (pid ");
	n = put_int(msg, n, cap, peers[q].pid);
	n = put_str(msg, n, cap, " on ");
	n = put_str(msg, n, cap, peers[q].host);
	n = put_str(msg, n, cap, ") ");
	n = put_str(msg, n, cap, why);
	n = put_str(msg, n, cap, " before locus_dsm_finalize; exiting\n");
	return write(2, msg, n) == (ssize_t)n;
}

/*
 * Leave because node q failed. The exit waits a grace period first: every
 * other survivor learns of q's exit within milliseconds (pidfd, or hydra's
 * SIGUSR1 under -disable-auto-cleanup), and hydra SIGKILLs every survivor as
 * soon as one of them exits, so leaving at once would cut their messages off.
 */
static void peer_failed(int q, const char *why)
{
	if (ld_acquire(&leaving))
		return;
	announce(q, why);
	struct timespec grace = {.tv_sec = 1, .tv_nsec = 0};
	nanosleep(&grace, NULL);
	_exit(LOCUS_DSM_EXIT_PEER);
}

/*
 * Peers on this host: a thread that sleeps in poll() on their pidfds sees an
 * exit at once, before the launcher's clean-up gets to kill this node, and
 * costs nothing meanwhile. It never calls MPI.
 */
static void *watch_peers(void *arg)
{
	prctl(PR_SET_NAME, "locus-dsm-watch"); /* not the comm thread's name it inherits */
	struct pollfd fds[DSM_MAX_NODES + 1];
	int who[DSM_MAX_NODES + 1], n = 0;
	for (int i = 0; i < dsm.nodes; i++)
		if (peers[i].pidfd >= 0) {
			fds[n] = (struct pollfd){.fd = peers[i].pidfd, .events = POLLIN};
			who[n++] = i;
		}
	fds[n] = (struct pollfd){.fd = watch_stop, .events = POLLIN};
	who[n] = -1;
	for (;;) {
		if (poll(fds, (nfds_t)n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (fds[n].revents)
			return NULL;
		for (int k = 0; k < n; k++)
			if (fds[k].revents)
				peer_failed(who[k], "exited");
	}
}

/*
 * This thread was kept from running for ns longer than it asked to sleep
 * (or worked that long in one go): it heard nothing meanwhile. Messages
 * that peers sent in that time wait in MPI and are taken before the next
 * liveness check, so the stretch only hides peers that could not send
 * either, and on a machine that starves this thread (processes at real-time
 * priority on every CPU, a paused virtual machine) its peers on the same
 * machine are starved with it: measured here, both nodes of a run resumed
 * in the same millisecond after 0.4-0.7 s off the CPU, and each then found
 * the other silent. So a peer's silence is measured without the stretches
 * this thread was deaf; a peer that really died is found that much later.
 * A peer heard meanwhile (by a thread taking its answer in this one's
 * place, await_answer) was silent only since then: never later than now.
 */
static void deaf_for(uint64_t ns, uint64_t now)
{
	for (int i = 0; i < dsm.nodes; i++) {
		uint64_t heard = peers[i].last_heard_ns + ns;
		peers[i].last_heard_ns = heard < now ? heard : now;
	}
}

/* When the loop last read the clock, and how long it asked to sleep since. */
static uint64_t mark_ns, asked_ns;

/* The loop reads the clock: was it deaf since it last did? Called before
   take_requests and before the liveness check, so that a stall anywhere in
   an iteration is counted before the check that follows it. */
static void note_stall(uint64_t now)
{
	uint64_t gap = now - mark_ns;
	if (gap > asked_ns + STALL_NS)
		deaf_for(gap - asked_ns, now);
	mark_ns = now;
	asked_ns = 0;
}

static void check_liveness(uint64_t now)
{
	for (int i = 0; i < dsm.nodes; i++) {
		if (i == dsm.node)
			continue;
		if (!leaving && now > peers[i].last_heard_ns &&
		    now - peers[i].last_heard_ns > dsm.cfg.peer_timeout_ns)
			peer_failed(i, "was silent too long");
		/* Sent early by the delay it will be held, so that the peer
		   hears something every HEARTBEAT_EVERY_NS whatever the delay
		   (held and then sent after that, a heartbeat reached the peer
		   0.5 s + the delay after the last message: past a 1 s timeout
		   with a 0.49 s delay, which the configuration allows). */
		if (!leaving && now + dsm.cfg.delay_ns > peers[i].reaches_ns + HEARTBEAT_EVERY_NS) {
			struct dsm_hdr h = {.kind = LOCUS_DSM_MSG_HEARTBEAT};
			dsm_send(i, &h, NULL, 0); /* moves reaches_ns on */
		}
	}
}

/*
 * Hydra's mpiexec -disable-auto-cleanup reports a failed process by sending
 * SIGUSR1 to every remaining one (the default action would kill this node
 * without a word), and SIGKILLs them all once any of them exits. Name the
 * dead peer here, synchronously, from its pidfd; the watcher thread (or the
 * heartbeats, for peers on other hosts) then does the exit.
 */
static void on_launcher_signal(int sig)
{
	int saved_errno = errno;
	launcher_said_failure = 1;
	for (int i = 0; i < dsm.nodes; i++) {
		if (peers[i].pidfd < 0)
			continue;
		struct pollfd p = {.fd = peers[i].pidfd, .events = POLLIN};
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
			announce(i, "exited");
			break;
		}
	}
	errno = saved_errno;
}

/* A peer on this host said it sent a message not yet taken out of MPI. */
static int owed(void)
{
	for (int i = 0; i < dsm.nodes; i++)
		if ((int32_t)((uint32_t)dsm_bell_sent(i) - peers[i].recv_seq) > 0)
			return 1;
	return 0;
}

/*
 * A thread that sent its request itself (stand_in returned 2) waits for the
 * answer on its doorbell's answer word: a peer that sends this node a
 * message while such a thread waits wakes it instead of the communication
 * thread (bell.c), and it takes the messages out of MPI in that thread's
 * place, its answer among them, so that the answer costs one wake-up, not
 * two (the communication thread's, then its own). What it takes that is not
 * its answer it handles as the communication thread would; if that left a
 * timer to run, or it could not look (the state was busy), it wakes the
 * communication thread. A completion by anyone else wakes it (dsm_req_done).
 */
#define ANSWER_WAIT_NS 1000000ull /* a look at least this often, whatever rings */

/* What a waiting thread waits for: its request r done, or else (r NULL)
   *word no longer holding seen (word: the alias view's, never away). */
struct awaited {
	struct dsm_req *r;
	const uint64_t *word;
	uint64_t seen;
};

static int awaited_done(const struct awaited *a)
{
	if (a->r)
		return ld_acquire(&a->r->done) != 0;
	return __atomic_load_n(a->word, __ATOMIC_SEQ_CST) != a->seen;
}

/*
 * Before it sleeps, the waiting thread looks for its answer for a while
 * (cfg.spin_ns, LOCUS_DSM_SPIN_US), giving the CPU to any other runnable
 * thread between looks: 1 if the answer word moved or r was completed
 * meanwhile. A thread that sleeps leaves its CPU idle, and a CPU that idles
 * can take tens of microseconds to wake (a virtual CPU that halts goes back
 * to its host: 10-30 us here, against 1 us for a thread woken on a CPU
 * that is running), which was most of a remote lock's round trip. Looking
 * with sched_yield keeps the CPU from idling and still lets every other
 * runnable thread of the machine have it, the peer that will answer among
 * them when nodes share CPUs. Not for a write miss: a write is what
 * bounces a page between nodes that write it at once, and an answer found
 * sooner only made it bounce more (Splash-3's radix, whose nodes write the
 * same pages all through its permutation: in half the runs 4 times the
 * misses and twice the time).
 */
static int spin_for_answer(const struct awaited *a, uint32_t seen, uint64_t *until)
{
	if (!dsm.cfg.spin_ns || (a->r && a->r->kind == DSM_REQ_FAULT && a->r->b))
		return 0;
	if (!*until) /* one budget for the whole wait, whatever rings meanwhile */
		*until = mono_ns() + dsm.cfg.spin_ns;
	for (;;) {
		if (dsm_bell_answer_seen() != seen || awaited_done(a))
			return 1;
		if (mono_ns() >= *until)
			return 0;
		sched_yield();
	}
}

/* Misses and locks are counted as answers taken or found; barriers and
   words are not. */
static int counts_answer(const struct awaited *a)
{
	return a->r && a->r->kind != DSM_REQ_BARRIER && dsm_self.counted;
}

static void await_taking(const struct awaited *a)
{
	struct dsm_req *r = a->r;
	dsm_bell_answer_enter();
	int rung = 0; /* this look follows a ring (not the first look, not a timeout) */
	int slept = 0, spun = 0;
	uint64_t spin_until = 0;
	while (!awaited_done(a)) {
		uint32_t seen = dsm_bell_answer_seen();
		int looked = 0, busy = 0, owes = 0;
		if (stand_in_lock()) {
			looked = comm_looping;
			if (looked && !(r && ld_relaxed(&r->done))) {
				uint64_t now = mono_ns();
				standing_for = r;
				receive(now);
				if (rung && counts_answer(a) && r->done)
					STAT_ADD(answers_taken, 1);
				/* A timer to run, or a send MPI has not finished:
				   the communication thread's to watch. */
				busy = dsm.proto->tick(now) != UINT64_MAX;
				turn_end();
				reap_sends();
				busy = busy || inflight;
				standing_for = NULL;
				owes = owed();
			}
			stand_in_unlock();
		}
		if (!looked || busy)
			dsm_bell_ring_self();
		if (awaited_done(a))
			break;
		if (owes) { /* said sent, not yet out of MPI: look again soon */
			sched_yield();
			continue;
		}
		if (!slept && spin_for_answer(a, seen, &spin_until)) {
			rung = spun = 1;
			continue;
		}
		slept = 1;
		rung = dsm_bell_answer_sleep(seen, ANSWER_WAIT_NS);
	}
	if (spun && !slept && counts_answer(a))
		STAT_ADD(answers_spun, 1);
	dsm_bell_answer_leave();
	/* A peer that rang after the last look chose this thread: the
	   communication thread takes that message. */
	int owes = 1;
	if (stand_in_lock()) {
		owes = owed();
		stand_in_unlock();
	}
	if (owes)
		dsm_bell_ring_self();
}

static void await_answer(struct dsm_req *r)
{
	struct awaited a = {.r = r};
	await_taking(&a);
}

/*
 * At a word's home, a thread that waits for it to move (an object's wait:
 * a barrier's generation, a semaphore's count, a condition's sequence)
 * waits as a thread that sent a request does: the call that moves it comes
 * from another node, and a peer's ring wakes this thread, which takes the
 * call out of MPI and runs it itself (the communication thread's run_here),
 * where that thread would have woken first, then woken it. A mover elsewhere
 * (the communication thread, the server, another thread here) wakes it
 * through the objects' wake (dsm_bell_answer_wake). 0 when it may not wait
 * so (as for await_answer: every peer rings, answers are taken, no delay is
 * emulated, a protocol whose faults run on this thread's side not in use):
 * the caller sleeps on the word.
 */
int dsm_await_word(const uint64_t *word, uint64_t seen)
{
	if (dsm_forked || dsm.proto->thread_fault || !dsm.cfg.take_answers ||
	    !dsm_bell_shared() || dsm_bell_peers() != dsm.nodes - 1 || dsm.nodes == 1 ||
	    dsm.cfg.delay_ns || dsm.cfg.delay_ns_per_byte)
		return 0;
	/* Read through the alias view, which never faults: the thread is
	   counted among the doorbell's waiters, which a fault's wait would
	   leave unwoken. An object's word changes only at its home, by its
	   calls, on the home's own copy of the page (a copy taken away holds
	   it as it was). */
	const char *at = dsm_canon(word);
	if (at < dsm.app || at + sizeof(*word) > dsm.app + dsm.size)
		return 0;
	struct awaited a = {.word = (const uint64_t *)(dsm.alias + (at - dsm.app)), .seen = seen};
	dsm_stall_waits();
	await_taking(&a);
	return 1;
}

/* Sleep on the doorbell for at most ns; 1 if it was rung. */
static int sleep_on_bell(uint32_t seen, uint64_t ns)
{
	uint64_t t0 = mono_ns();
	int rung = dsm_bell_sleep(seen, ns);
	STAT_ADD(comm_sleeps, 1);
	STAT_ADD(comm_sleep_ns, mono_ns() - t0);
	if (rung)
		STAT_ADD(bell_wakes, 1);
	return rung;
}

static void comm_loop(void)
{
	uint64_t backoff = SLEEP_MIN_NS, next_liveness = 0, active_until = 0, poll_until = 0;
	int idle = 0;
	/* Runtime overhead: this thread's CPU time is read once per iteration and
	   the difference charged to the previous iteration if it did something
	   (took a request, received or released a message); polls that found
	   nothing and sleeps are not overhead. */
	uint64_t cpu_prev = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int worked = 0, was_stalled = 0;
	mark_ns = mono_ns();
	asked_ns = 0;
	for (;;) {
		uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		if (worked) {
			if (was_stalled)
				STAT_ADD(work_stall_ns, cpu - cpu_prev);
			else
				STAT_ADD(work_ns, cpu - cpu_prev);
		}
		cpu_prev = cpu;
		pthread_mutex_lock(&comm_mu);
		comm_looping = 1;
		was_stalled = dsm_node_stalled();
		uint32_t seen = dsm_bell_seen();
		uint64_t now = mono_ns();
		note_stall(now);
		int progress = take_requests();
		progress |= receive(now);
		now = mono_ns();
		note_stall(now);
		uint64_t t = dsm.proto->tick(now);
		turn_end();
		uint64_t release = release_delayed(now, &progress), next = release;
		reap_sends();
		if (t < next)
			next = t;
		if (now >= next_liveness || launcher_said_failure) {
			check_liveness(now);
			dsm_watch_tick(now);
			next_liveness = now + LIVENESS_EVERY_NS;
		}
		worked = progress;
		if (dsm_sync_done() && !pending_sends()) {
			comm_looping = 0;
			pthread_mutex_unlock(&comm_mu);
			return;
		}
		/* What the waits below need of the state, read while it is ours. */
		int fault_waits = faults_waiting != 0, answers_due = outstanding != 0;
		int owes = owed();
		pthread_mutex_unlock(&comm_mu);
		if (progress) {
			idle = 0;
			backoff = SLEEP_MIN_NS;
			active_until = now + ACTIVE_NS;
			poll_until = now + dsm.cfg.poll_ns;
			continue;
		}
		/* The poll window (LOCUS_DSM_POLL_US, off by default): while a
		   fault waits, its answer may come sooner than a sleeping thread is
		   woken, and the faulting thread has left its CPU. Each poll gives
		   the CPU away to any thread that can run. With more runnable
		   threads than CPUs it loses: a thread that yields stays runnable,
		   so no doorbell can wake it, and the scheduler runs a woken
		   sleeper first. Without a fault waiting, the application runs:
		   polling would take its CPU, so the thread sleeps. */
		if (fault_waits && now < poll_until) {
			sched_yield();
			continue;
		}
		/* A held message (transport delay) due within DELAY_YIELD_NS: a
		   timed sleep that short overshoots by tens of microseconds (timer
		   wake-ups in a virtual machine), which would add that much to
		   every emulated message; give the CPU away until it is due. */
		if (release != UINT64_MAX && release <= now + DELAY_YIELD_NS) {
			sched_yield();
			continue;
		}
		/* A few polls catch what peers on other hosts send right after
		   work; peers that ring need none, and a thread just woken here may
		   be waiting for this CPU. */
		int all_ring = dsm_bell_peers() == dsm.nodes - 1;
		if (!all_ring && ++idle < SPIN_POLLS)
			continue;
		if (owes) {
			sched_yield();
			continue;
		}
		/* Short sleeps while this node waits for answers, or has just
		   worked: more messages are likely on their way (shipped calls to
		   serve here, for one), and a message waits for the sleep's end. */
		uint64_t cap = answers_due || now < active_until ? SLEEP_MAX_BUSY_NS : SLEEP_MAX_NS;
		if (all_ring)
			cap = backoff = SLEEP_MAX_NS; /* no need to look: a message rings */
		uint64_t ns = backoff < cap ? backoff : cap;
		if (next != UINT64_MAX) {
			uint64_t until = next > now ? next - now : 0;
			if (until < ns)
				ns = until;
		}
		/* Rung: a message or request is there, or about to be (poll again). */
		asked_ns = ns;
		if (ns > 0 && sleep_on_bell(seen, ns)) {
			idle = 0;
			poll_until = mono_ns() + dsm.cfg.poll_ns;
		}
		if (backoff < SLEEP_MAX_NS)
			backoff *= 2;
	}
}

struct peer_info {
	int pid;
	char host[64];
	char bell[DSM_BELL_NAME]; /* its doorbell's file, "" if none */
	/* The settings every node must share: compared with node 0's at start. */
	uint64_t size, addr;
	char protocol[sizeof(dsm.cfg.protocol)];
};

/* 1 if every node read the same region size, address and protocol; node 0 says which differ. */
static int same_settings(const struct peer_info *all)
{
	int same = 1;
	for (int i = 1; i < dsm.nodes; i++) {
		const char *var = all[i].size != all[0].size		     ? "LOCUS_DSM_SIZE"
				  : all[i].addr != all[0].addr		     ? "LOCUS_DSM_ADDR"
				  : strcmp(all[i].protocol, all[0].protocol) ? "LOCUS_DSM_PROTOCOL"
									     : NULL;
		if (!var)
			continue;
		same = 0;
		if (dsm.node == 0)
			fprintf(stderr,
				"locus-dsm: %s differs between nodes (node 0: size %" PRIu64
				" addr 0x%" PRIx64 " protocol %s; node %d: size %" PRIu64
				" addr 0x%" PRIx64
				" protocol %s): set it once for every node, e.g. "
				"mpiexec -genv %s <value> ...\n",
				var, all[0].size, all[0].addr, all[0].protocol, i, all[i].size,
				all[i].addr, all[i].protocol, var);
		break;
	}
	return same;
}

static int comm_setup(void)
{
	int provided = 0;
	if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
		fprintf(stderr, "locus-dsm: MPI_Init_thread failed\n");
		return -1;
	}
	if (provided < MPI_THREAD_SERIALIZED) {
		fprintf(stderr,
			"locus-dsm: MPI gives thread level %d, need MPI_THREAD_SERIALIZED\n",
			provided);
		return -1;
	}
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(comm, &dsm.node);
	MPI_Comm_size(comm, &dsm.nodes);
	int ok = 1;
	if (dsm.nodes > DSM_MAX_NODES) {
		if (dsm.node == 0)
			fprintf(stderr, "locus-dsm: %d nodes; at most %d\n", dsm.nodes,
				DSM_MAX_NODES);
		ok = 0;
	}
	struct peer_info me = {.pid = getpid(), .size = dsm.cfg.size, .addr = dsm.cfg.addr},
			 all[DSM_MAX_NODES];
	gethostname(me.host, sizeof(me.host) - 1);
	/* LOCUS_DSM_HOST: a label that makes nodes of one machine behave as on
	   different hosts (no doorbells, no pidfds between them), to exercise
	   that path here; appended, so nodes really apart never look together. */
	const char *label = getenv("LOCUS_DSM_HOST");
	if (label && *label) {
		size_t at = strlen(me.host);
		snprintf(me.host + at, sizeof(me.host) - at, "/%s", label);
	}
	dsm_bell_create(me.bell);
	snprintf(me.protocol, sizeof(me.protocol), "%s", dsm.cfg.protocol);
	if (ok)
		MPI_Allgather(&me, sizeof(me), MPI_BYTE, all, sizeof(me), MPI_BYTE, comm);
	if (ok && !same_settings(all))
		ok = 0;
	uint64_t now = mono_ns();
	for (int i = 0; ok && i < dsm.nodes; i++) {
		peers[i].pid = all[i].pid;
		memcpy(peers[i].host, all[i].host, sizeof(peers[i].host));
		peers[i].pidfd = -1;
		peers[i].local = !strcmp(all[i].host, me.host);
		peers[i].last_heard_ns = peers[i].reaches_ns = now;
		if (i != dsm.node && peers[i].local && all[i].bell[0])
			dsm_bell_open(i, all[i].bell);
		if (i != dsm.node && !strcmp(all[i].host, me.host)) {
			long fd = syscall(SYS_pidfd_open, all[i].pid, 0);
			peers[i].pidfd = fd >= 0 ? (int)fd : -1;
		}
	}
	if (ok && dsm.nodes == 1 && !dsm.cfg.one_node_protocol)
		dsm.proto = &dsm_proto_one; /* before anything asks it (api.c waits for ready) */
	if (ok && dsm_region_map() != 0)
		ok = 0;
	if (ok) {
		dsm.resume_ns = dsm_table_new(dsm.npages, sizeof(uint64_t));
		if (!dsm.resume_ns || dsm_home_init() != 0 || dsm.proto->init() != 0)
			ok = 0;
	}
	int all_ok = 0;
	MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
	dsm_bell_unlink(); /* every node of the host has mapped it, or never will */
	return all_ok ? 0 : -1;
}

static void *comm_main(void *arg)
{
	prctl(PR_SET_TIMERSLACK, 1000UL);
	prctl(PR_SET_NAME, "locus-dsm-comm");
	if (comm_setup() != 0) {
		dsm_bell_close();
		dsm_region_unmap();
		MPI_Finalize();
		st_release(&dsm.ready, 2);
		futex_wake(&dsm.ready, FUTEX_WAKE_ALL);
		return NULL;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_launcher_signal;
	sigaction(SIGUSR1, &sa, NULL);
	uint64_t now = mono_ns();
	for (int i = 0; i < dsm.nodes; i++)
		peers[i].last_heard_ns = peers[i].reaches_ns = now;
	watch_stop = eventfd(0, EFD_CLOEXEC);
	if (watch_stop < 0 || pthread_create(&watcher, NULL, watch_peers, NULL) != 0)
		dsm_fatal("cannot start the peer watcher");
	comm_up = 1;
	st_release(&dsm.ready, 1);
	futex_wake(&dsm.ready, FUTEX_WAKE_ALL);

	comm_loop();
	comm_up = 0;
	pthread_join(watcher, NULL);
	close(watch_stop);
	watch_stop = -1;

	while (inflight)
		reap_sends();
	for (int i = 0; i < dsm.nodes; i++)
		if (peers[i].pidfd >= 0) {
			int fd = peers[i].pidfd;
			peers[i].pidfd = -1; /* before the close: the SIGUSR1 handler reads it */
			close(fd);
		}
	MPI_Comm_free(&comm);
	MPI_Finalize();
	dsm_bell_close();
	free(rxbuf);
	rxbuf = NULL;
	rxcap = 0;
	return NULL;
}

int dsm_comm_start(void)
{
	dsm.ready = 0;
	if (pthread_create(&comm_thread, NULL, comm_main, NULL) != 0) {
		perror("locus-dsm: communication thread");
		return -1;
	}
	uint32_t r;
	while ((r = ld_acquire(&dsm.ready)) == 0)
		futex_wait(&dsm.ready, 0);
	if (r != 1) {
		pthread_join(comm_thread, NULL);
		return -1;
	}
	return 0;
}

void dsm_comm_join(void)
{
	pthread_join(comm_thread, NULL);
}

uint64_t dsm_comm_cpu_ns(void)
{
	clockid_t cid;
	if (pthread_getcpuclockid(comm_thread, &cid) != 0)
		return 0;
	return dsm_clock_ns(cid);
}
