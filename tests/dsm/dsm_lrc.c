/*
 * Lazy release consistency (LOCUS_DSM_PROTOCOL=lrc): what a data-race-free
 * program must always see, and what the protocol promises about pages.
 *
 *   mw R        multiple writers: every node writes its own words of one
 *               page between two barriers, R rounds; afterwards every word
 *               is right on every node, and while the nodes wrote, no page
 *               or diff moved (the message counters did not change)
 *   mp_lock R   message passing under a lock: a writer fills data on three
 *               pages (one shared with the flag), then sets the flag under
 *               lock 7; readers that see the flag under the lock must see
 *               the data; they acknowledge under the lock before the next
 *               round is written
 *   mp_bar R    message passing across a barrier, the writer rotating
 *   prefetch R  a reader prefetches a page, the writer writes it under a
 *               lock meanwhile; the reader, once its lock acquire has seen
 *               the write's flag, must read the new value (a prefetch never
 *               changes what a program reads)
 *   gc R        R barrier phases, each node writing 8 pages of its own and
 *               a word of one shared page, checked every phase: kept
 *               metadata never exceeds LOCUS_DSM_GC_BYTES plus one phase's
 *               worth, and collections happened
 *   private R   pages one node uses (lrc_class.c): 2 per node, the first
 *               `nodes` used by their home, the others by the node after
 *               their home (the block is dealt round robin,
 *               LOCUS_DSM_HOME_SPREAD); each
 *               user writes its pages R rounds with barriers between, and
 *               no twin is made and no page moves meanwhile. Then every node
 *               reads every page (each becomes shared: its user gives it
 *               back), and every value must be the last round's; then every
 *               node writes its own words of every page R rounds (several
 *               writers) and all are checked. Last, with 3 or more nodes
 *               (and pages private by default):
 *               node 0 writes a word of a page it homes and shares, and puts
 *               it back, under a lock, while a node that never used the page
 *               asks for it; that node, taking the lock next, must read the
 *               value put back (the home answers with the page as of its last
 *               interval, not one in the middle of the critical section)
 *   move R      pages that move (LOCUS_DSM_LRC_MOVE): node 0 fills 4 pages
 *               of every node, then each node reads and writes its own R
 *               rounds: every value is checked, and (private pages on, 2
 *               nodes) its pages moved to it: no twin and no page message
 *               from the second round, node 0 moved 4 pages away. Then
 *               node 0 reads them all back (they become shared) and checks
 *               them. With LOCUS_DSM_LRC_MOVE=0 nothing moves.
 *   objects_gc R  R phases under barrier objects only (a Splash program's
 *               BARRIER), each node writing 8 pages of its own, checked by
 *               the next node; with LOCUS_DSM_GC_BYTES set, nothing is
 *               collected (lrc collects at locus_dsm_barrier only) and the
 *               node keeps more than 4 times the setting: the runtime then
 *               says so on standard error, once (the test reads what the
 *               phases wrote there, in a file, and prints it after).
 *   push R      diffs pushed at a barrier (lrc_push.c), at least 8 phases:
 *               node n writes its page E[n] every phase and node n + 1 reads
 *               it; it writes O[n] every phase and node n + 1 reads it in
 *               the first two only; every node writes its own words of page
 *               M and reads all of them. Every value read is checked. On 2
 *               nodes (where a push always comes before the barrier's exit:
 *               both travel on one pair of nodes), also: from the 4th phase
 *               on no read of E or M sends a message (their diffs were
 *               pushed), and from the 2nd none of E (the reader got its copy
 *               as the page became shared, in the 1st, and its writer pushes
 *               to a node it gave a copy), pushed diffs were used, and each node stopped the
 *               pushes of the O page it no longer reads. With
 *               LOCUS_DSM_LRC_PUSH=0, nothing is pushed; with
 *               LOCUS_DSM_GC_BYTES set, the values only, and collections
 *               happened.
 *   push_home R a page homed at node 0 (which never touches it), written by
 *               node 1 and read by node 2 every phase (3 nodes or more):
 *               every value is checked, and node 1 pushes at most R + 2
 *               diffs (to node 2, and no more than two to the home before
 *               it stops them: pushes to a node that does not use the page
 *               are stopped when they come).
 *   block R     three row-major matrices written a column at a time, rows
 *               of 3 pages and a word (rows share pages, and the nodes'
 *               blocks of rows meet on one): round k writes matrix k mod 3,
 *               each node every word of its rows, column by column (in
 *               every other pass over a matrix only the first two pages'
 *               worth of columns: the rest keeps its last value, its pages
 *               made writable by a walk and left as they were); after a
 *               barrier every node reads every row of it and checks each
 *               word. A matrix is written three intervals apart, so its
 *               pages never turn hot (written at every interval end, no
 *               fault). Once every matrix was written twice, a write walk
 *               down a column makes the rows between its pages writable
 *               too, a run of neighbours with one protection change
 *               (proto_lrc.c, write_walk): a round's writes change
 *               protections fewer than half as many times as pages they
 *               write (a page at a time: about one and a half times).
 *               With LOCUS_DSM_LRC_BLOCKS=0, the values only.
 *
 * Exits 0 when every check held; prints what was wrong otherwise.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsm_verdict.h"
#include "locus/dsm.h"

#define PAGE 4096

static int me, nodes;
static long bad;

static void fail(const char *what, long round, long got, long want)
{
	dsm_test_fail("dsm_lrc", &bad, what, round, got, want);
}

static uint64_t page_msgs(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.msgs_sent[LOCUS_DSM_MSG_PAGE_REQ] + s.msgs_sent[LOCUS_DSM_MSG_PAGE] +
	       s.msgs_sent[LOCUS_DSM_MSG_DIFF_REQ] + s.msgs_sent[LOCUS_DSM_MSG_DIFF];
}

static void mw(long rounds)
{
	volatile uint32_t *w = locus_dsm_alloc(PAGE);
	size_t per = PAGE / 4 / (size_t)nodes; /* words per node */
	long moved = 0;
	(void)w[0];	     /* a copy of the page on every node (a private page taken */
	locus_dsm_barrier(); /* back the first time moves: read it twice) */
	(void)w[0];
	locus_dsm_barrier();
	for (long r = 1; r <= rounds; r++) {
		uint64_t before = page_msgs();
		for (size_t i = 0; i < per; i++)
			w[(size_t)me * per + i] = (uint32_t)(r * 1000 + me * 7 + (long)i);
		uint64_t after = page_msgs();
		moved += (long)(after - before);
		locus_dsm_barrier();
		for (int n = 0; n < nodes; n++)
			for (size_t i = 0; i < per; i++) {
				long want = r * 1000 + n * 7 + (long)i;
				if (w[(size_t)n * per + i] != (uint32_t)want)
					fail("multiple writers: a word", r,
					     (long)w[(size_t)n * per + i], want);
			}
		locus_dsm_barrier();
	}
	if (moved)
		fail("multiple writers: page messages while writing", rounds, moved, 0);
	printf("mw: node %d: %ld rounds, %ld page messages during the writes\n", me, rounds, moved);
}

static void mp_lock(long rounds)
{
	volatile int64_t *flag = locus_dsm_alloc(PAGE); /* flag, ack, data[0] on one page */
	volatile int64_t *data = locus_dsm_alloc(3 * PAGE);
	locus_dsm_barrier();
	int readers = nodes - 1;
	if (!readers) {
		printf("mp_lock: one node, nothing to pass\n");
		return;
	}
	for (long r = 1; r <= rounds; r++) {
		if (me == 0) {
			flag[2] = r;
			for (int k = 0; k < 3; k++)
				data[k * (PAGE / 8) + 5] = r * 10 + k;
			locus_dsm_lock(7);
			flag[0] = r;
			locus_dsm_unlock(7);
			for (;;) { /* wait for every reader's acknowledgement */
				locus_dsm_lock(7);
				int64_t acks = flag[1];
				locus_dsm_unlock(7);
				if (acks == r * readers)
					break;
			}
		} else {
			for (;;) {
				locus_dsm_lock(7);
				int64_t f = flag[0];
				locus_dsm_unlock(7);
				if (f == r)
					break;
				if (f != r - 1)
					fail("mp_lock: flag", r, (long)f, r);
			}
			if (flag[2] != r)
				fail("mp_lock: data beside the flag", r, (long)flag[2], r);
			for (int k = 0; k < 3; k++)
				if (data[k * (PAGE / 8) + 5] != r * 10 + k)
					fail("mp_lock: data", r, (long)data[k * (PAGE / 8) + 5],
					     r * 10 + k);
			locus_dsm_lock(7);
			flag[1] += 1;
			locus_dsm_unlock(7);
		}
	}
	printf("mp_lock: node %d: %ld rounds\n", me, rounds);
}

static void mp_bar(long rounds)
{
	volatile int64_t *data = locus_dsm_alloc(2 * PAGE);
	for (long r = 1; r <= rounds; r++) {
		int writer = (int)(r % nodes);
		if (me == writer) {
			data[3] = r;
			data[PAGE / 8 + 9] = -r;
		}
		locus_dsm_barrier();
		if (data[3] != r)
			fail("mp_bar: data", r, (long)data[3], r);
		if (data[PAGE / 8 + 9] != -r)
			fail("mp_bar: data on the second page", r, (long)data[PAGE / 8 + 9], -r);
		locus_dsm_barrier();
	}
	printf("mp_bar: node %d: %ld rounds\n", me, rounds);
}

static void prefetch(long rounds)
{
	volatile int64_t *flag = locus_dsm_alloc(PAGE);
	volatile int64_t *p = locus_dsm_alloc(PAGE);
	locus_dsm_barrier();
	for (long r = 1; r <= rounds; r++) {
		if (me == 0) {
			locus_dsm_lock(3);
			p[11] = 2 * r; /* everybody learns of this at the barrier */
			locus_dsm_unlock(3);
		}
		locus_dsm_barrier();
		if (me == 0) {
			locus_dsm_lock(3);
			p[11] = 2 * r + 1;
			flag[0] = r;
			locus_dsm_unlock(3);
		} else {
			locus_dsm_prefetch((const void *)p, PAGE); /* asks for 2r's diff */
			for (;;) {
				locus_dsm_lock(3);
				int64_t f = flag[0];
				int64_t v = p[11];
				locus_dsm_unlock(3);
				if (f == r) {
					if (v != 2 * r + 1)
						fail("prefetch: value after the flag", r, (long)v,
						     2 * r + 1);
					break;
				}
				if (v != 2 * r)
					fail("prefetch: value before the flag", r, (long)v, 2 * r);
			}
		}
		locus_dsm_barrier();
	}
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	if (me != 0 && s.prefetches == 0)
		fail("prefetch: pages prefetched", rounds, 0, rounds);
	printf("prefetch: node %d: %ld rounds, %llu pages prefetched\n", me, rounds,
	       (unsigned long long)s.prefetches);
}

static void objects_gc(long rounds)
{
	const char *lim = getenv("LOCUS_DSM_GC_BYTES");
	uint64_t limit = lim ? strtoull(lim, NULL, 10) : 0;
	if (limit != 65536) {
		fprintf(stderr, "dsm_lrc objects_gc: set LOCUS_DSM_GC_BYTES=65536\n");
		bad++;
		return;
	}
	enum { OWN = 8 };
	volatile int64_t *own = locus_dsm_alloc((size_t)nodes * OWN * PAGE);
	locus_dsm_barrier_obj *b = locus_dsm_alloc(sizeof(*b));
	if (me == 0)
		locus_dsm_barrier_init(b);
	locus_dsm_barrier();
	locus_dsm_stats s0, s;
	locus_dsm_stats_get(&s0);
	/* Standard error into a file while the phases run. */
	char path[] = "/tmp/dsm_lrc_objects_gc_XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	if (fd < 0 || saved < 0 || dup2(fd, 2) < 0) {
		perror("dsm_lrc objects_gc: standard error into a file");
		bad++;
		return;
	}
	int next = (me + 1) % nodes;
	for (long r = 1; r <= rounds; r++) {
		for (int k = 0; k < OWN; k++)
			for (int i = 0; i < PAGE / 8; i += 2) /* half the page: a diff of 2 KiB */
				own[((size_t)me * OWN + (size_t)k) * (PAGE / 8) + (size_t)i] = r * 10 + k;
		locus_dsm_barrier_wait(b, (unsigned)nodes);
		for (int k = 0; k < OWN; k++) {
			size_t at = ((size_t)next * OWN + (size_t)k) * (PAGE / 8) + 32;
			if (own[at] != r * 10 + k)
				fail("objects_gc: the next node's page", r, (long)own[at], r * 10 + k);
		}
		locus_dsm_barrier_wait(b, (unsigned)nodes);
	}
	dup2(saved, 2);
	close(saved);
	char said[4096] = "";
	ssize_t got = pread(fd, said, sizeof(said) - 1, 0);
	said[got > 0 ? got : 0] = 0;
	close(fd);
	unlink(path);
	fputs(said, stderr);
	const char *warning = strstr(said, "lrc keeps");
	if (!warning || !strstr(said, "4 times LOCUS_DSM_GC_BYTES (64 KiB)") ||
	    strstr(warning + 1, "lrc keeps"))
		fail("objects_gc: the node said once that it keeps 4 times LOCUS_DSM_GC_BYTES", rounds,
		     warning != NULL, 1);
	locus_dsm_stats_get(&s);
	printf("objects_gc: node %d: %ld phases, %llu collections, kept at most %llu bytes "
	       "(limit %llu)\n",
	       me, rounds, (unsigned long long)(s.gcs - s0.gcs),
	       (unsigned long long)s.meta_peak_bytes, (unsigned long long)limit);
	if (s.gcs != s0.gcs)
		fail("objects_gc: collections at barrier objects", rounds, (long)(s.gcs - s0.gcs), 0);
	if (s.meta_peak_bytes <= 4 * limit)
		fail("objects_gc: kept more than 4 times the limit (the run is too short)", rounds,
		     (long)s.meta_peak_bytes, (long)(4 * limit));
}

static void gc(long rounds)
{
	const char *lim = getenv("LOCUS_DSM_GC_BYTES");
	uint64_t limit = lim ? strtoull(lim, NULL, 10) : 0;
	if (!limit || limit > (64u << 20)) {
		fprintf(stderr,
			"dsm_lrc gc: set LOCUS_DSM_GC_BYTES to a byte count (e.g. 65536)\n");
		bad++;
		return;
	}
	enum { OWN = 8 };
	/* Round robin: a node's own pages are managed by every node in turn, so
	   a collection has managers fetch other writers' diffs. */
	volatile int64_t *own =
		locus_dsm_alloc_at((size_t)nodes * OWN * PAGE, LOCUS_DSM_HOME_SPREAD);
	volatile int64_t *shared = locus_dsm_alloc(PAGE);
	/* What one phase can add on a node (docs/dsm.md): for every page written
	   in it (its own 8, the others' 8 each, the shared one), a twin and a
	   diff (a page that stays hot keeps both) and a notice; the records. */
	uint64_t pages = (uint64_t)nodes * OWN + 1;
	uint64_t phase = pages * (2 * (PAGE + 4) + 64) + (uint64_t)nodes * (64 + 4 * nodes);
	for (long r = 1; r <= rounds; r++) {
		for (int k = 0; k < OWN; k++)
			for (int i = 0; i < PAGE / 8; i += 64)
				own[((size_t)me * OWN + (size_t)k) * (PAGE / 8) + (size_t)i] =
					r + k + i;
		shared[me] = r * 100 + me;
		locus_dsm_barrier();
		int n = (me + (int)r) % nodes; /* read another node's pages */
		for (int k = 0; k < OWN; k++) {
			size_t at = ((size_t)n * OWN + (size_t)k) * (PAGE / 8) + 64;
			if (own[at] != r + k + 64)
				fail("gc: another node's page", r, (long)own[at], r + k + 64);
		}
		for (int m = 0; m < nodes; m++)
			if (shared[m] != r * 100 + m)
				fail("gc: the shared page", r, (long)shared[m], r * 100 + m);
		locus_dsm_barrier();
	}
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	printf("gc: node %d: %ld phases, %llu collections, %llu diff bytes made, kept at most "
	       "%llu bytes (limit %llu + one phase %llu)\n",
	       me, rounds, (unsigned long long)s.gcs, (unsigned long long)s.diff_bytes,
	       (unsigned long long)s.meta_peak_bytes, (unsigned long long)limit,
	       (unsigned long long)phase);
	if (s.meta_peak_bytes > limit + phase)
		fail("gc: most metadata kept", rounds, (long)s.meta_peak_bytes,
		     (long)(limit + phase));
	if (nodes > 1 && s.gcs == 0)
		fail("gc: collections", rounds, 0, 1);
}

static int private_expected(void)
{
	const char *v = getenv("LOCUS_DSM_LRC_PRIVATE");
	return nodes > 1 && !(v && !strcmp(v, "0"));
}

static uint64_t sent_pages(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.msgs_sent[LOCUS_DSM_MSG_PAGE];
}

/* Faults that waited for a message: this node's own requests and those it
   joined. */
static uint64_t waited_faults(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.faults[LOCUS_DSM_FAULT_READ] + s.faults[LOCUS_DSM_FAULT_WRITE] +
	       s.faults[LOCUS_DSM_FAULT_COMBINED];
}

static void private_pages(long rounds)
{
	size_t np = 2 * (size_t)nodes, words = PAGE / 8;
	volatile int64_t *pg = locus_dsm_alloc_at(np * PAGE, LOCUS_DSM_HOME_SPREAD);
	int user[2 * 64];
	for (size_t i = 0; i < np; i++) {
		int home = locus_dsm_home((const void *)(pg + i * words));
		user[i] = i < (size_t)nodes ? home : (home + 1) % nodes;
	}
	locus_dsm_barrier();
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	uint64_t moved = 0;
	for (long r = 1; r <= rounds; r++) {
		uint64_t before = page_msgs();
		for (size_t i = 0; i < np; i++)
			if (user[i] == me)
				for (size_t w = 0; w < words; w++)
					pg[i * words + w] = r * 100000 + (long)(i * words + w);
		if (r > 1) /* the first round asks the homes */
			moved += page_msgs() - before;
		locus_dsm_barrier();
		for (size_t i = 0; i < np; i++)
			if (user[i] == me &&
			    pg[i * words + 7] != r * 100000 + (long)(i * words + 7))
				fail("private: own page", r, (long)pg[i * words + 7],
				     r * 100000 + (long)(i * words + 7));
	}
	locus_dsm_stats_get(&s1);
	if (private_expected()) {
		if (s1.twins != s0.twins)
			fail("private: twins of private pages", rounds, (long)(s1.twins - s0.twins),
			     0);
		if (moved)
			fail("private: page messages while writing", rounds, (long)moved, 0);
		if (s1.private_pages < 2)
			fail("private: pages this node holds private", rounds,
			     (long)s1.private_pages, 2);
	}
	/* Everybody reads everything: the pages become shared. */
	for (size_t i = 0; i < np; i++)
		for (size_t w = 0; w < words; w += 61) {
			long want = rounds * 100000 + (long)(i * words + w);
			if (pg[i * words + w] != want)
				fail("private: a page once private, read elsewhere", rounds,
				     (long)pg[i * words + w], want);
		}
	locus_dsm_barrier();
	locus_dsm_stats_get(&s1);
	/* (a page read by one other node moves there, LOCUS_DSM_LRC_MOVE) */
	if (private_expected() && s1.made_shared + s1.private_moved < 2)
		fail("private: pages given back", rounds, (long)(s1.made_shared + s1.private_moved),
		     2);
	/* Several writers on the pages now shared. */
	size_t per = words / (size_t)nodes;
	for (long r = 1; r <= rounds; r++) {
		for (size_t i = 0; i < np; i++)
			for (size_t w = 0; w < per; w++)
				pg[i * words + (size_t)me * per + w] = -r * 1000 - (long)(i + w);
		locus_dsm_barrier();
		for (size_t i = 0; i < np; i++)
			for (int n = 0; n < nodes; n++) {
				size_t w = (size_t)r % per;
				long want = -r * 1000 - (long)(i + w);
				if (pg[i * words + (size_t)n * per + w] != want)
					fail("private: several writers, once private", r,
					     (long)pg[i * words + (size_t)n * per + w], want);
			}
		locus_dsm_barrier();
	}
	if (nodes >= 3 && private_expected()) {
		/* A page in the middle of its home's critical section. The pages
		   are far apart: the asker's faults do not make a walk (which would
		   ask for the next pages too), not even a column (a stride of up
		   to 64 pages: proto.c), so it asks for each in the loop. */
		enum { K = 8, APART = 128 };
		/* Nor did the walks above ask ahead for them (up to 32 pages past
		   the last page they faulted on): a gap first. */
		(void)locus_dsm_alloc(APART * PAGE);
		volatile int64_t *q = locus_dsm_alloc_at(K * APART * PAGE, 0);
		words *= APART; /* from one page used to the next */
		if (me == 0)
			for (size_t k = 0; k < K; k++)
				q[k * words + 1] = (int64_t)k;
		locus_dsm_barrier();
		if (me == 1)
			for (size_t k = 0; k < K; k++)
				(void)q[k * words + 1]; /* moves to node 1, or shared */
		locus_dsm_barrier();
		if (me == 0)
			for (size_t k = 0; k < K; k++)
				(void)q[k * words + 1]; /* shared now: node 0 twins it */
		locus_dsm_barrier();
		/* Node 0 holds the lock across the barrier after which the asker asks:
		   the answer goes out while node 0 is in the critical section, or
		   before it writes (no program can tell which: the test passes both
		   ways, and catches the first when it goes wrong). */
		for (size_t k = 0; k < K; k++) {
			uint32_t lock = 100 + (uint32_t)k;
			uint64_t sent = sent_pages();
			if (me == 0)
				locus_dsm_lock(lock);
			locus_dsm_barrier();
			if (me == 0) {
				q[k * words] = 1;
				while (sent_pages() == sent) /* until the asker has its copy */
					;
				q[k * words] = 0;
				locus_dsm_unlock(lock);
			} else if (me == nodes - 1) {
				uint64_t waited = waited_faults();
				(void)q[k * words + 2]; /* never written: not a race */
				if (waited_faults() == waited) {
					/* It had the page: node 0 would wait for ever. */
					fprintf(stderr,
						"private: node %d had page %zu of node 0 before "
						"it asked (a walk fetched it): the test cannot "
						"go on\n",
						me, k);
					exit(1);
				}
				locus_dsm_lock(lock);
				if (q[k * words] != 0)
					fail("private: a word put back in the home's critical "
					     "section",
					     (long)k, (long)q[k * words], 0);
				locus_dsm_unlock(lock);
			}
			locus_dsm_barrier();
		}
	}
	printf("private: node %d: %ld rounds, %llu pages private, %llu made shared\n", me, rounds,
	       (unsigned long long)s1.private_pages, (unsigned long long)s1.made_shared);
}

static int move_expected(void)
{
	const char *v = getenv("LOCUS_DSM_LRC_MOVE");
	return private_expected() && !(v && !strcmp(v, "0"));
}

/* Node 0 fills every node's pages; each node then works on its own. */
static void move_pages(long rounds)
{
	enum { PER = 4, WORDS = PAGE / 8 };
	/* Round robin: a page moves to its home or away from it. */
	volatile int64_t *pg = locus_dsm_alloc_at((size_t)nodes * PER * PAGE, LOCUS_DSM_HOME_SPREAD);
	if (me == 0)
		for (size_t i = 0; i < (size_t)nodes * PER * WORDS; i += 8)
			pg[i] = (int64_t)i;
	locus_dsm_barrier();
	volatile int64_t *mine = pg + (size_t)me * PER * WORDS;
	locus_dsm_stats s0, s1;
	uint64_t moved_msgs = 0;
	for (long r = 1; r <= rounds; r++) {
		if (r == 2)
			locus_dsm_stats_get(&s0);
		uint64_t before = page_msgs();
		for (size_t i = 0; i < PER * WORDS; i += 8) {
			int64_t want = r == 1 ? (int64_t)((size_t)me * PER * WORDS + i)
					      : -(r - 1) * 1000 - (int64_t)i;
			if (mine[i] != want)
				fail("move: a word of this node's pages", r, (long)mine[i],
				     (long)want);
			mine[i] = -r * 1000 - (int64_t)i;
		}
		if (r > 1)
			moved_msgs += page_msgs() - before;
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	/* Node 0 reads everything: what moved comes back, shared. */
	for (int n = 0; n < nodes; n++)
		for (size_t i = 0; i < PER * WORDS; i += 8) {
			int64_t want = -rounds * 1000 - (int64_t)i;
			if (me == 0 && pg[(size_t)n * PER * WORDS + i] != want)
				fail("move: node 0 reading every node's pages", rounds,
				     (long)pg[(size_t)n * PER * WORDS + i], (long)want);
		}
	locus_dsm_barrier();
	locus_dsm_stats s2;
	locus_dsm_stats_get(&s2);
	printf("move: node %d: %ld rounds, %llu pages moved away, %llu made shared, %llu twins "
	       "from round 2, %llu page messages while writing\n",
	       me, rounds, (unsigned long long)s2.private_moved, (unsigned long long)s2.made_shared,
	       (unsigned long long)(s1.twins - s0.twins), (unsigned long long)moved_msgs);
	if (!move_expected()) {
		if (s2.private_moved)
			fail("move: pages moved with LOCUS_DSM_LRC_MOVE=0", rounds,
			     (long)s2.private_moved, 0);
		return;
	}
	/* Each node's pages moved to it (from node 0, or stayed at node 0's
	   own): private there, written with no twin and no message. Only on 2
	   nodes is that sure: with more, two nodes may ask for a page at once
	   (one's walk runs into the next node's pages), and it becomes shared. */
	if (nodes != 2)
		return;
	if (s1.twins != s0.twins)
		fail("move: twins of pages moved here", rounds, (long)(s1.twins - s0.twins), 0);
	if (moved_msgs)
		fail("move: page messages while writing moved pages", rounds, (long)moved_msgs, 0);
	if (me == 0 && s2.private_moved < (uint64_t)(nodes - 1) * PER)
		fail("move: pages node 0 moved away", rounds, (long)s2.private_moved,
		     (nodes - 1) * PER);
}

/*
 * Faults the faulting thread resolves itself: every node reads some shared
 * pages, then in each round writes its own words of a third of them (a twin:
 * a fault that needs no message) and checks every node's after a barrier. A
 * page is written every third round, three intervals apart (a round's check
 * writes nothing: it ends no interval), so it never turns hot (written at
 * every interval end, no fault), and the third is written from its last page
 * down, so that no write walk makes the next ones writable ahead: each write
 * is a fault. Most of a round's faults find the communication thread asleep
 * and are handled in place; a fault handled in place is always one that
 * needed no message (counted local), and the values are the same either way.
 * With `alt`, the thread first sets up a small alternate signal stack, which
 * the fault handler then runs on: no fault is handled in place on it.
 */
static void inplace(long rounds, int alt)
{
	static char altstack[16 << 10];
	if (alt) {
		stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
		if (sigaltstack(&ss, NULL) != 0)
			fail("in place: sigaltstack", 0, -1, 0);
	}
	enum { PAGES = 24, GROUP = PAGES / 3 };
	volatile uint32_t *w = locus_dsm_alloc(PAGES * PAGE);
	size_t words = PAGE / 4, per = words / (size_t)nodes;
	for (int k = 0; k < 2; k++) { /* read twice: shared, not moved (see mw) */
		for (size_t p = 0; p < PAGES; p++)
			(void)w[p * words];
		locus_dsm_barrier();
	}
	locus_dsm_stats s0, s1;
	locus_dsm_stats_get(&s0);
	for (long r = 1; r <= rounds; r++) {
		size_t first = (size_t)(r % 3) * GROUP;
		for (size_t p = first + GROUP; p-- > first;)
			for (size_t i = 0; i < per; i += 64)
				w[p * words + (size_t)me * per + i] =
					(uint32_t)(r * 100000 + (long)p * 1000 + me * 10 + (long)i);
		locus_dsm_barrier();
		for (int n = 0; n < nodes; n++)
			for (size_t p = first; p < first + GROUP; p++)
				for (size_t i = 0; i < per; i += 64) {
					long want = r * 100000 + (long)p * 1000 + n * 10 + (long)i;
					uint32_t got = w[p * words + (size_t)n * per + i];
					if (got != (uint32_t)want)
						fail("in place: a word", r, (long)got, want);
				}
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	uint64_t in_place = s1.faults_in_place - s0.faults_in_place;
	uint64_t local = s1.faults[LOCUS_DSM_FAULT_LOCAL] - s0.faults[LOCUS_DSM_FAULT_LOCAL];
	printf("inplace: node %d: %ld rounds, %llu local faults, %llu of them in place\n", me,
	       rounds, (unsigned long long)local, (unsigned long long)in_place);
	if (in_place > local)
		fail("in place: faults handled in place that were not local", rounds,
		     (long)in_place, (long)local);
	if (alt && in_place)
		fail("in place: faults handled in place on a small alternate signal stack", rounds,
		     (long)in_place, 0);
	if (!alt && nodes > 1 && !in_place)
		fail("in place: no fault handled in place", rounds, 0, 1);
}

static int push_expected(void)
{
	const char *v = getenv("LOCUS_DSM_LRC_PUSH");
	return nodes > 1 && !(v && !strcmp(v, "0"));
}

static void push(long rounds)
{
	enum { WORDS = PAGE / 8 };
	if (rounds < 8)
		rounds = 8;
	volatile int64_t *e = locus_dsm_alloc((size_t)nodes * PAGE);
	volatile int64_t *o = locus_dsm_alloc((size_t)nodes * PAGE);
	volatile int64_t *m = locus_dsm_alloc(PAGE);
	size_t per = WORDS / (size_t)nodes;  /* words of M per node */
	int from = (me + nodes - 1) % nodes; /* whose E and O this node reads */
	locus_dsm_stats s0, s1, se, se1;
	long e_misses = 0; /* reads of E that sent a message, from the 2nd phase */
	locus_dsm_barrier();
	for (long r = 1; r <= rounds; r++) {
		if (r == 4)
			locus_dsm_stats_get(&s0);
		for (size_t i = 0; i < WORDS; i += 16) {
			e[(size_t)me * WORDS + i] = r * 1000 + me * 10 + (long)i;
			o[(size_t)me * WORDS + i] = -(r * 1000 + me * 10 + (long)i);
		}
		for (size_t i = 0; i < per; i++)
			m[(size_t)me * per + i] = r * 100000 + me * 1000 + (long)i;
		locus_dsm_barrier();
		locus_dsm_stats_get(&se);
		for (size_t i = 0; i < WORDS; i += 16) {
			long want = r * 1000 + from * 10 + (long)i;
			if (e[(size_t)from * WORDS + i] != want)
				fail("push: the page a neighbour writes", r,
				     (long)e[(size_t)from * WORDS + i], want);
		}
		locus_dsm_stats_get(&se1);
		if (r >= 2)
			e_misses += (long)(se1.remote_misses - se.remote_misses);
		for (size_t i = 0; i < WORDS; i += 16) {
			long want = r * 1000 + from * 10 + (long)i;
			if (r <= 2 && o[(size_t)from * WORDS + i] != -want)
				fail("push: the page read twice", r,
				     (long)o[(size_t)from * WORDS + i], -want);
		}
		for (int n = 0; n < nodes; n++)
			for (size_t i = 0; i < per; i++) {
				long want = r * 100000 + n * 1000 + (long)i;
				if (m[(size_t)n * per + i] != want)
					fail("push: a word of the page every node writes", r,
					     (long)m[(size_t)n * per + i], want);
			}
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	long misses = (long)(s1.remote_misses - s0.remote_misses);
	printf("push: node %d: %ld phases, %llu diffs pushed, %llu pushed diffs used, %llu "
	       "pushes stopped, %ld remote misses from phase 4\n",
	       me, rounds, (unsigned long long)s1.pushed_diffs, (unsigned long long)s1.pushed_used,
	       (unsigned long long)s1.push_stopped, misses);
	if (!push_expected()) {
		if (s1.pushed_diffs || s1.pushed_used)
			fail("push: diffs pushed with LOCUS_DSM_LRC_PUSH=0", rounds,
			     (long)s1.pushed_diffs, 0);
		return;
	}
	if (getenv("LOCUS_DSM_GC_BYTES")) { /* collections drop copies: values only */
		if (!s1.gcs)
			fail("push: collections", rounds, 0, 1);
		return;
	}
	if (nodes != 2)
		return;
	if (misses)
		fail("push: remote misses from phase 4", rounds, misses, 0);
	if (e_misses)
		fail("push: reads of E that sent a message from phase 2 (its copy came with "
		     "the page's class: pushed from then on)",
		     rounds, e_misses, 0);
	if (!s1.pushed_used)
		fail("push: pushed diffs used", rounds, 0, rounds);
	if (!s1.push_stopped)
		fail("push: pushes stopped (the page read twice)", rounds, 0, 1);
}

/* A page homed at node 0, which never touches it, written by node 1 and read
   by node 2 every phase: node 1 pushes its diffs to node 2, and any push to
   node 0 (which keeps a copy to serve the page, and was given it back) is
   stopped at once. Every value read is checked. */
static void push_home(long rounds)
{
	if (rounds < 8)
		rounds = 8;
	volatile int64_t *pg = locus_dsm_alloc_at(PAGE, 0);
	locus_dsm_stats s0, s1;
	locus_dsm_barrier();
	locus_dsm_stats_get(&s0);
	for (long r = 1; r <= rounds; r++) {
		if (me == 1)
			for (size_t i = 0; i < PAGE / 8; i += 16)
				pg[i] = r * 100000 + (long)i;
		locus_dsm_barrier();
		if (me == 2)
			for (size_t i = 0; i < PAGE / 8; i += 16)
				if (pg[i] != r * 100000 + (long)i)
					fail("push_home: the page node 1 writes", r, (long)pg[i],
					     r * 100000 + (long)i);
		locus_dsm_barrier();
	}
	locus_dsm_stats_get(&s1);
	long pushed = (long)(s1.pushed_diffs - s0.pushed_diffs);
	printf("push_home: node %d: %ld phases, %ld diffs pushed, %llu pushes stopped\n", me, rounds,
	       pushed, (unsigned long long)(s1.push_stopped - s0.push_stopped));
	if (me == 1 && push_expected() && pushed > rounds + 2)
		fail("push_home: diffs node 1 pushed (one a phase to node 2, and at most two to "
		     "node 0 before it stops them)",
		     rounds, pushed, rounds + 2);
}

static uint64_t protects_now(void)
{
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	return s.protects;
}

static void block(long rounds)
{
	enum { ROWS = 48, WORDS = PAGE / 8, LEN = 3 * WORDS + 1, MATS = 3 };
	size_t rows = (size_t)nodes * ROWS, bytes = rows * LEN * 8;
	volatile int64_t *m[MATS];
	for (int k = 0; k < MATS; k++)
		m[k] = locus_dsm_alloc(bytes);
	long last[MATS][2] = {{0}}; /* the round that last wrote each part of a matrix */
	const char *v = getenv("LOCUS_DSM_LRC_BLOCKS");
	int blocks = !(v && !strcmp(v, "0"));
	/* The most protection changes a round's writes made, and the pages one
	   node's rows span. */
	uint64_t worst = 0, written = (ROWS * LEN * 8 + PAGE - 1) / PAGE;
	for (long r = 1; r <= rounds * MATS; r++) {
		int k = (int)(r % MATS);
		size_t cols = (r / MATS) % 2 ? 2 * WORDS : LEN;
		volatile int64_t *a = m[k];
		uint64_t p0 = protects_now();
		for (size_t c = 0; c < cols; c++)
			for (size_t i = (size_t)me * ROWS; i < (size_t)(me + 1) * ROWS; i++)
				a[i * LEN + c] = r * 1000000 + (long)(i * 2000 + c);
		uint64_t f = protects_now() - p0;
		last[k][0] = r;
		if (cols == LEN)
			last[k][1] = r;
		if (r > 2 * MATS && f > worst) /* every matrix written twice before */
			worst = f;
		locus_dsm_barrier();
		for (size_t i = 0; i < rows; i++)
			for (size_t c = 0; c < LEN; c++) {
				long want = last[k][c >= 2 * WORDS] * 1000000 + (long)(i * 2000 + c);
				if (!last[k][c >= 2 * WORDS])
					want = 0;
				if (a[i * LEN + c] != want)
					fail("block: a word of a matrix written by columns", r,
					     (long)a[i * LEN + c], want);
			}
		locus_dsm_barrier();
	}
	printf("block: node %d: %ld rounds, at most %llu protection changes for about %llu pages "
	       "written in a round\n",
	       me, rounds * MATS, (unsigned long long)worst, (unsigned long long)written);
	if (blocks && rounds > 2 && worst * 2 >= written)
		fail("block: protection changes in a round's writes, against pages written / 2",
		     rounds, (long)worst, (long)written / 2);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
			"usage: dsm_lrc mw|mp_lock|mp_bar|prefetch|gc|objects_gc|private|push|move|inplace|"
			"inplace_alt|block|push_home ROUNDS (push_home: 3 nodes or more)\n");
		return 2;
	}
	const char *mode = argv[1];
	long rounds = atol(argv[2]);
	if (locus_dsm_init(&argc, &argv) != 0)
		return 1;
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
	if (strcmp(locus_dsm_protocol(), "lrc") != 0) {
		fprintf(stderr, "dsm_lrc: run with LOCUS_DSM_PROTOCOL=lrc\n");
		locus_dsm_finalize();
		return 2;
	}
	locus_dsm_stats_reset();
	if (!strcmp(mode, "mw"))
		mw(rounds);
	else if (!strcmp(mode, "mp_lock"))
		mp_lock(rounds);
	else if (!strcmp(mode, "mp_bar"))
		mp_bar(rounds);
	else if (!strcmp(mode, "prefetch"))
		prefetch(rounds);
	else if (!strcmp(mode, "objects_gc"))
		objects_gc(rounds);
	else if (!strcmp(mode, "gc"))
		gc(rounds);
	else if (!strcmp(mode, "private"))
		private_pages(rounds);
	else if (!strcmp(mode, "push"))
		push(rounds);
	else if (!strcmp(mode, "push_home") && nodes >= 3)
		push_home(rounds);
	else if (!strcmp(mode, "push_home")) {
		fprintf(stderr, "dsm_lrc: push_home needs 3 nodes or more\n");
		bad++;
	}
	else if (!strcmp(mode, "move"))
		move_pages(rounds);
	else if (!strcmp(mode, "inplace"))
		inplace(rounds, 0);
	else if (!strcmp(mode, "inplace_alt"))
		inplace(rounds, 1);
	else if (!strcmp(mode, "block"))
		block(rounds);
	else {
		fprintf(stderr, "dsm_lrc: unknown mode %s\n", mode);
		bad++;
	}
	char what[64];
	snprintf(what, sizeof(what), "dsm_lrc %s", mode);
	return dsm_test_verdict(bad, what);
}
