/*
 * Doorbells: how nodes on one host wake each other's communication thread.
 *
 * Each node has one wake word (a sequence number) and a flag saying that its
 * communication thread sleeps on it, in a page of its own shared with the
 * other nodes of its host. A node that hands a message to MPI for a node of
 * its host bumps that node's word and, if the flag is up, does a shared
 * futex wake on it; the communication thread sleeps on its own word
 * (futex_wait on the shared mapping), so a message from this host wakes it
 * at once instead of at the end of its sleep. Application threads' requests
 * ring the same word. Nodes on other hosts cannot reach the word: their
 * messages are found when the sleep's timeout ends (comm.c's backoff).
 *
 * Lifecycle: the page is a file in /dev/shm, created by its node before
 * the nodes exchange their start-up information (its name goes with it,
 * with a random part so that no stale or foreign file is ever opened), opened
 * and mapped by every node of the host, and removed by its node as soon as
 * every node has passed start-up (each holds its own mapping: the file
 * is no longer needed). A node that fails during start-up removes it on
 * its way out (dsm_fatal, the start-up's failure path); only a node killed
 * in those milliseconds leaves one behind. Without /dev/shm the word is
 * process memory: application threads still ring it, peers fall back to
 * the backoff.
 *
 * Waking order: the ringer bumps the word, then reads the flag; the sleeper
 * raises the flag, then re-reads the word before futex_wait (which checks
 * it again in the kernel). Both are sequentially consistent, so either the
 * ringer sees the flag and wakes, or the sleeper sees the new value and
 * does not sleep.
 *
 * Answers: an application thread that sent its own request (comm.c,
 * standing in) may wait for the answer on a second word of the page,
 * counted in `waiters` meanwhile; a peer's ring then wakes one such thread
 * instead of the communication thread, and that thread takes the messages
 * out of MPI itself (comm.c, await_answer). The pair that matters is
 * (`sent`, `waiters`): the ringer bumps `sent`, then reads `waiters`; a
 * waiter that leaves lowers `waiters`, then reads `sent` (owed) and wakes
 * the communication thread for anything it did not take. So either the
 * ringer sees no waiter and wakes the communication thread, or the last
 * waiter to leave sees the message counted and wakes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/futex.h"
#include "internal.h"

struct bell {
	uint32_t seq;	   /* bumped by every ring; the futex word */
	uint32_t sleeping; /* 1 while the communication thread sleeps on seq */
	/* By sender: messages it has handed to MPI for this node. MPI may not
	   show a message at the first look after the ring (its progress
	   engine moves it in), so the node keeps looking until it has taken
	   out as many as it was told of. */
	uint64_t sent[DSM_MAX_NODES];
	uint32_t answer;  /* bumped by a ring while threads wait for answers; their futex word */
	uint32_t waiters; /* application threads waiting for answers on it */
};
_Static_assert(sizeof(struct bell) <= 4096, "a doorbell fits its page");

#define BELL_BYTES 4096 /* a page: the mapping's unit */

static struct bell private_bell; /* without a shared page */
static struct bell *own = &private_bell;
static struct bell *peer[DSM_MAX_NODES];
static int npeers;
static char path[DSM_BELL_NAME];
static volatile int linked; /* path exists and is this node's */

static void *map_bell(int fd)
{
	void *p = mmap(NULL, BELL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

int dsm_bell_create(char name[DSM_BELL_NAME])
{
	name[0] = '\0';
	uint64_t nonce = 0;
	if (getrandom(&nonce, sizeof(nonce), GRND_NONBLOCK) != sizeof(nonce))
		nonce = mono_ns() ^ ((uint64_t)getpid() << 32);
	snprintf(path, sizeof(path), "/dev/shm/locus-dsm.%d.%016" PRIx64, (int)getpid(), nonce);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	linked = 1;
	struct bell *b = ftruncate(fd, BELL_BYTES) == 0 ? map_bell(fd) : NULL;
	close(fd);
	if (!b) {
		dsm_bell_unlink();
		return -1;
	}
	own = b;
	memcpy(name, path, sizeof(path));
	return 0;
}

void dsm_bell_unlink(void)
{
	/* async-signal-safe: called on the way out of a failing node */
	if (linked) {
		linked = 0;
		unlink(path);
	}
}

int dsm_bell_open(int node, const char *name)
{
	static const char prefix[] = "/dev/shm/locus-dsm.";
	if (node < 0 || node >= DSM_MAX_NODES || strncmp(name, prefix, sizeof(prefix) - 1) ||
	    strchr(name + sizeof(prefix) - 1, '/') || !memchr(name, '\0', DSM_BELL_NAME))
		return -1;
	int fd = open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	struct stat st;
	struct bell *b = fstat(fd, &st) == 0 && st.st_size >= BELL_BYTES ? map_bell(fd) : NULL;
	close(fd);
	if (!b)
		return -1;
	peer[node] = b;
	npeers++;
	return 0;
}

int dsm_bell_peers(void)
{
	return npeers;
}

static int ring(struct bell *b)
{
	faa_seqcst(&b->seq, 1);
	if (!ld_seqcst(&b->sleeping))
		return 0;
	futex_call(&b->seq, FUTEX_WAKE, 1, NULL, 0);
	return 1;
}

int dsm_bell_ring(int node, uint32_t msgs)
{
	struct bell *b = peer[node];
	if (!b)
		return 0;
	faa_seqcst(&b->sent[dsm.node], msgs);
	if (ld_seqcst(&b->waiters)) { /* a thread there waits for an answer: it takes it */
		faa_seqcst(&b->seq, 1);
		faa_seqcst(&b->answer, 1);
		futex_call(&b->answer, FUTEX_WAKE, 1, NULL, 0);
		STAT_ADD(bells_rung, 1);
		return 1;
	}
	if (!ring(b))
		return 0;
	STAT_ADD(bells_rung, 1);
	return 1;
}

void dsm_bell_answer_enter(void)
{
	faa_seqcst(&own->waiters, 1);
}

void dsm_bell_answer_leave(void)
{
	faa_seqcst(&own->waiters, (uint32_t)-1);
}

int dsm_bell_shared(void)
{
	return own != &private_bell;
}

uint32_t dsm_bell_answer_seen(void)
{
	return ld_seqcst(&own->answer);
}

int dsm_bell_answer_sleep(uint32_t seen, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S)};
	futex_call(&own->answer, FUTEX_WAIT, seen, &ts, 0);
	return ld_acquire(&own->answer) != seen;
}

void dsm_bell_answer_wake_waiting(void)
{
	if (ld_seqcst(&own->waiters))
		dsm_bell_answer_wake();
}

void dsm_bell_answer_wake(void)
{
	faa_seqcst(&own->answer, 1);
	futex_call(&own->answer, FUTEX_WAKE, INT32_MAX, NULL, 0);
}

void dsm_bell_ring_self(void)
{
	ring(own);
}

uint64_t dsm_bell_sent(int node)
{
	return ld_acquire(&own->sent[node]);
}

uint32_t dsm_bell_seen(void)
{
	return ld_acquire(&own->seq);
}

int dsm_bell_sleep(uint32_t seen, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / NS_PER_S), .tv_nsec = (long)(ns % NS_PER_S)};
	st_seqcst(&own->sleeping, 1);
	int rung = ld_seqcst(&own->seq) != seen;
	if (!rung) {
		futex_call(&own->seq, FUTEX_WAIT, seen, &ts, 0);
		rung = ld_acquire(&own->seq) != seen;
	}
	st_relaxed(&own->sleeping, 0);
	return rung;
}

void dsm_bell_close(void)
{
	dsm_bell_unlink();
	for (int i = 0; i < DSM_MAX_NODES; i++)
		if (peer[i]) {
			munmap(peer[i], BELL_BYTES);
			peer[i] = NULL;
		}
	npeers = 0;
	/* The own page stays mapped: an application thread may still ring it. */
}
