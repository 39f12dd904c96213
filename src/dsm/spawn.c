/*
 * Programs as they are written for threads: a fork-style run. Rank 0 runs
 * main; every other rank stays inside locus_dsm_start, serving (shipped
 * calls and spawned threads run on its server and new threads) until rank
 * 0 finalizes; then it finalizes too and exits with status 0.
 *
 * A spawn starts fn(arg) on a new thread of a node: a shipped call to the
 * node (ship.c) that copies main's globals there first when they changed
 * (globals.c), starts the thread and returns; the function crosses as its
 * place in the image (fnid.c). When fn returns, the thread ships one "done"
 * back to the node that spawned it, whose locus_dsm_join counts them.
 * Collective calls have no place in such a run (only rank 0 runs the
 * program): the shared heap (locus_dsm_malloc) and the objects named by
 * address (objects.c) take their place.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/futex.h"
#include "fnid.h"
#include "internal.h"

int dsm_fork_mode;

static pthread_t main_thread; /* rank 0: the thread that called locus_dsm_start */
/* The program's name (its main thread's), which its spawned threads take:
   they are created by the call server, whose name they would inherit. */
static char program_name[16];
static uint32_t done_count; /* threads this node spawned that have returned */
/* 1 once this node's locus_dsm_init has returned: a spawn from a node that
   left init's last barrier sooner waits for it, so that this node's
   statistics (reset at the end of init) count the thread from its start. */
static uint32_t spawns_open;
static uint32_t quit; /* ranks > 0: rank 0 has begun to finalize */

/* Main's globals as last published (rank 0), and the version each node has. */
static struct {
	char *buf; /* in the shared heap, rank 0's partition */
	char *prev;
	size_t size;
	uint64_t version;
} pub;
static uint64_t applied; /* version of the globals this node holds */
static pthread_mutex_t apply_mu = PTHREAD_MUTEX_INITIALIZER;

struct start {
	void (*fn)(void *);
	void *arg;
	int spawner;
	int counted; /* one of the node's counted threads (team.c) */
};

/* What a spawn tells the node that runs it: in the shared heap (the spawner's
   part), written before the call, read there, freed after. */
struct spawn_desc {
	uint64_t fn_word, fn_off; /* the function's identity (fnid.h) */
	void *arg;
	char *globals; /* main's globals as published, and their version */
	uint64_t version;
	int64_t spawner;
};

static uint64_t count_done(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)a, (void)b, (void)c;
	faa_release(&done_count, 1);
	futex_wake(&done_count, FUTEX_WAKE_ALL);
	return 0;
}

static void *thread_main(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	if (program_name[0])
		prctl(PR_SET_NAME, program_name);
	uint64_t cpu0 = dsm_spawned_enter(s.counted);
	s.fn(s.arg);
	dsm_spawned_leave(cpu0);
	locus_dsm_call(s.spawner, count_done, NULL, 0, 0, 0);
	locus_dsm_drain();
	return NULL;
}

/* On the node that runs it (its server): the globals, then the thread. */
static uint64_t start_here(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a, (void)b, (void)c;
	struct spawn_desc d = *(struct spawn_desc *)state;
	locus_dsm_free(state);
	struct dsm_fnid id = {
		.obj = (uint32_t)d.fn_word, .check = (uint32_t)(d.fn_word >> 32), .off = d.fn_off};
	void *fn = dsm_fnid_fn(&id);
	if (!fn)
		dsm_fatal("a spawned function names no function of this program");
	int spawner = (int)d.spawner;
	void *arg = d.arg;
	pthread_mutex_lock(&apply_mu);
	if (d.globals && spawner != dsm.node && d.version > applied) {
		dsm_globals_load(d.globals);
		applied = d.version;
	}
	pthread_mutex_unlock(&apply_mu);
	struct start *s = malloc(sizeof(*s));
	pthread_t t;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 8u << 20);
	if (!s)
		dsm_fatal("out of memory for a spawned thread");
	*s = (struct start){.fn = (void (*)(void *))fn, .arg = arg, .spawner = spawner};
	while (!ld_acquire(&spawns_open))
		futex_wait(&spawns_open, 0);
	s->counted = dsm_spawned_created(); /* running from now on: the node is not idle */
	int err = pthread_create(&t, &attr, thread_main, s);
	pthread_attr_destroy(&attr);
	if (err)
		dsm_fatal("cannot start a spawned thread: %s", strerror(err));
	return 0;
}

/* Rank 0: main's globals into the shared block, if they changed. */
static int publish(void)
{
	if (!pub.buf) {
		pub.size = dsm_globals_size();
		pub.buf = locus_dsm_malloc(pub.size ? pub.size : 1);
		pub.prev = malloc(pub.size ? pub.size : 1);
		if (!pub.buf || !pub.prev)
			return -1;
	} else if (!dsm_globals_differ(pub.prev)) {
		return 0;
	}
	dsm_globals_save(pub.prev);
	memcpy(pub.buf, pub.prev, pub.size);
	pub.version++;
	applied = pub.version; /* this node has them */
	return 0;
}

int locus_dsm_spawn(int node, void (*fn)(void *arg), void *arg)
{
	dsm_require_running("locus_dsm_spawn");
	struct dsm_fnid id;
	if (node < 0 || node >= dsm.nodes || !fn || dsm_fnid_of((const void *)fn, &id) != 0) {
		fprintf(stderr,
			"locus-dsm: locus_dsm_spawn: node %d (nodes are 0 to %d), function %p "
			"(it must lie in the program's image)\n",
			node, dsm.nodes - 1, (void *)fn);
		return -1;
	}
	if (dsm_fork_mode && dsm.node == 0 && publish() != 0) {
		fprintf(stderr, "locus-dsm: locus_dsm_spawn: no room for the globals' copy\n");
		return -1;
	}
	struct spawn_desc *d = locus_dsm_malloc(sizeof(*d));
	if (!d)
		return -1;
	*d = (struct spawn_desc){.fn_word = (uint64_t)id.check << 32 | id.obj,
				 .fn_off = id.off,
				 .arg = arg,
				 .globals = dsm_fork_mode ? pub.buf : NULL,
				 .version = pub.version,
				 .spawner = dsm.node};
	locus_dsm_call(node, start_here, d, 0, 0, 0);
	return 0;
}

void locus_dsm_join(unsigned count)
{
	dsm_require_running("locus_dsm_join");
	uint32_t seen;
	struct dsm_stall st; /* waiting for threads, as a team's join does */
	dsm_stall_begin(&st, STALL_OTHER);
	while ((seen = ld_acquire(&done_count)) < count)
		futex_wait(&done_count, seen);
	dsm_stall_end(&st, mono_ns(), DSM_LOCAL);
	faa_release(&done_count, (uint32_t)-count); /* the next join counts afresh */
}

static uint64_t tell_quit(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)a, (void)b, (void)c;
	st_release(&quit, 1);
	futex_wake(&quit, FUTEX_WAKE_ALL);
	return 0;
}

/* Rank 0's finalize of a fork-style run: every other rank leaves its wait
   and makes the collective finalize with it. */
void dsm_fork_finish(void)
{
	for (int n = 1; n < dsm.nodes; n++)
		locus_dsm_call(n, tell_quit, NULL, 0, 0, 0);
}

/* Rank 0's standard input from LOCUS_DSM_STDIN: mpiexec (MPICH's hydra)
   forwards no more than a pipe holds, 64 KB, and fails on more. */
static int stdin_from_file(void)
{
	const char *path = getenv("LOCUS_DSM_STDIN");
	if (!path || !*path)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 0) < 0) {
		fprintf(stderr, "locus-dsm: LOCUS_DSM_STDIN=%s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int dsm_fork_is_main(void)
{
	return pthread_equal(main_thread, pthread_self());
}

/* The command line as the program was started (its arguments separated
   by NULs), NUL-terminated in buf: its length, or -1 when it cannot be read
   whole. */
static ssize_t read_cmdline(char *buf, size_t size)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, size - 1);
	if (fd >= 0)
		close(fd);
	if (len <= 0 || (size_t)len >= size - 1)
		return -1;
	buf[len] = 0;
	return len;
}

/*
 * The program's globals are one memory on every node, so a pointer main
 * stores there must mean the same on every node. The program's own code and
 * data are at fixed addresses (it is linked -no-pie), but the C library and
 * every other shared library are placed at random per process: a FILE *
 * such as stdout kept in a global (Splash-3's water does) would point into
 * nothing on another node. So the program starts again, once, with address
 * randomization off for itself (personality ADDR_NO_RANDOMIZE, as
 * `setarch -R` does); the same binaries on the same kind of machine then map
 * alike. LOCUS_DSM_ASLR=keep keeps randomization (and skips this restart).
 * Before anything else runs: argv comes from /proc/self/cmdline, as the
 * program was started.
 */
static void restart_without_aslr(void)
{
	const char *keep = getenv("LOCUS_DSM_ASLR");
	int now = personality(0xffffffff);
	if ((keep && strcmp(keep, "keep") == 0) || now == -1 || (now & ADDR_NO_RANDOMIZE))
		return;
	if (personality((unsigned long)now | ADDR_NO_RANDOMIZE) == -1 ||
	    !(personality(0xffffffff) & ADDR_NO_RANDOMIZE))
		return; /* not allowed here (a container's filter): checked after init */
	char *args[4096 + 1], buf[1 << 16];
	ssize_t len = read_cmdline(buf, sizeof(buf));
	int n = 0;
	if (len > 0) {
		for (char *p = buf; p < buf + len && n < 4096; p += strlen(p) + 1)
			args[n++] = p;
		args[n] = NULL;
		fflush(NULL);
		execv("/proc/self/exe", args);
	}
	personality((unsigned long)now); /* left as it was: checked after init */
}

static uint64_t where_stdout(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)state, (void)a, (void)b, (void)c;
	return (uint64_t)(uintptr_t)stdout;
}

/* Rank 0: say once if the C library lies elsewhere on some node. */
static void check_libraries(void)
{
	for (int n = 1; n < dsm.nodes; n++)
		if (locus_dsm_call(n, where_stdout, NULL, 0, 0, 0) != (uint64_t)(uintptr_t)stdout) {
			fprintf(stderr,
				"locus-dsm: warning: the C library lies at another address on "
				"node %d (address randomization is on there, or other "
				"libraries): a pointer into a library (stdout, a FILE *) "
				"stored in shared memory means nothing on another node\n",
				n);
			return;
		}
}

/*
 * The program's own name for the process (what ps -o comm, top and pkill
 * show): started again through /proc/self/exe, it would be "exe". The
 * kernel's rule: the last part of the path it was started with (argv[0]),
 * at most 15 bytes.
 */
static void name_program(void)
{
	char buf[1 << 16];
	if (read_cmdline(buf, sizeof(buf)) > 0) {
		const char *base = strrchr(buf, '/');
		base = base ? base + 1 : buf;
		if (*base)
			prctl(PR_SET_NAME, base);
	}
	prctl(PR_GET_NAME, program_name);
}

void dsm_spawn_open(void)
{
	st_release(&spawns_open, 1);
	futex_wake(&spawns_open, FUTEX_WAKE_ALL);
}

void dsm_spawn_note_name(void)
{
	if (!program_name[0]) /* a fork-style run named the program already */
		prctl(PR_GET_NAME, program_name);
}

int locus_dsm_start(int *argc, char ***argv)
{
	restart_without_aslr();
	name_program();
	if (dsm_globals_init() != 0)
		return -1;
	dsm_fork_request = 1; /* the region maps the shared globals (region.c) */
	int r = locus_dsm_init(argc, argv);
	/* The mode before the request goes: a spawn served meanwhile sees one
	   of them (team.c, dsm_note_threads). */
	if (r == 0)
		st_release(&dsm_fork_mode, 1);
	st_release(&dsm_fork_request, 0);
	if (r != 0)
		return -1;
	if (dsm.node == 0) {
		main_thread = pthread_self();
		check_libraries();
		return stdin_from_file();
	}
	setvbuf(stdout, NULL, _IOLBF, 0); /* workers' lines reach the terminal as they come */
	dsm_init_waits(1);
	while (!ld_acquire(&quit))
		futex_wait(&quit, 0);
	dsm_init_waits(0);
	locus_dsm_finalize();
	exit(0);
}
