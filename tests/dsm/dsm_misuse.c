/*
 * The edges of the DSM API, as a program being ported meets them
 * (tests/dsm/misuse.sh runs every mode and checks its outcome).
 *
 * Modes that must work (exit 0, "ok: ..." on node 0):
 *   alloc         sizes that wrap (SIZE_MAX, a negative int) are refused on
 *                 every node and leave the allocator where it was
 *   segv-before   the program's own SIGSEGV handler, installed before init,
 *                 recovers faults outside the region (siglongjmp) and never
 *                 sees a DSM fault; sharing goes on working
 *   segv-after    the same with the handler installed after init (sigaction),
 *   segv-signal   or with signal()
 *   fork          a child of fork() is not a node: its exit is clean, and its
 *                 accesses to the region and its DSM calls end it with a
 *                 message, never changing the parent's memory or hanging
 *   locks N       N distinct lock ids taken and released: no lock state is
 *                 kept once they are released (and, under lrc, a barrier
 *                 has passed)
 *   memory        prints its peak resident size and start-up time (misuse.sh
 *                 compares region sizes)
 *
 * Misuse that must end the run with a message naming it (misuse.sh checks
 * the message and that the run ends well within the peer timeout):
 *   team-return        a team thread returns while its sibling waits in a barrier
 *   team-return-tb     ... in the team barrier
 *   lock-finalize      node 0 calls finalize holding a lock node 1 waits for
 *   lock-barrier       node 0 enters a barrier holding a lock node 1 waits for
 *   barrier-before     locus_dsm_barrier before locus_dsm_init
 *   alloc-before       locus_dsm_alloc before locus_dsm_init
 *   barrier-after      locus_dsm_barrier after locus_dsm_finalize
 *   extra-barrier      the last node makes one more barrier than the others
 *   two-threads        the init thread and another pthread both in the barrier
 *                      outside a team
 *   barrier-apart      each node waits at a barrier object of its own (each
 *                      allocated one with locus_dsm_malloc), counting every
 *                      node: the deadlock watchdog names each node's object
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "locus/dsm.h"

#define PAGE 4096

static int me, nodes;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "dsm_misuse: node %d: FAIL: ", me);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void start(int *argc, char ***argv)
{
	if (locus_dsm_init(argc, argv) != 0)
		exit(1);
	me = locus_dsm_node();
	nodes = locus_dsm_nodes();
}

static void ok(const char *what)
{
	locus_dsm_finalize();
	if (me == 0)
		printf("ok: %s\n", what);
	exit(0);
}

/* ---- alloc ---- */

static void mode_alloc(void)
{
	char *first = locus_dsm_alloc(PAGE);
	if (!first)
		die("alloc(4096) failed");
	int minus_one = -1;
	size_t wraps[] = {SIZE_MAX, SIZE_MAX - (PAGE - 1), SIZE_MAX - PAGE, (size_t)minus_one,
			  SIZE_MAX / 2 + 1};
	for (size_t i = 0; i < sizeof(wraps) / sizeof(wraps[0]); i++)
		if (locus_dsm_alloc(wraps[i]) != NULL)
			die("alloc(%zu) returned a block", wraps[i]);
	char *a = locus_dsm_alloc(PAGE), *b = locus_dsm_alloc(PAGE);
	if (!a || !b)
		die("alloc(4096) after the refusals failed");
	if (a != first + PAGE || b != a + PAGE)
		die("blocks overlap or moved back: first %p, then %p and %p", (void *)first,
		    (void *)a, (void *)b);
	/* Each block is its own: write one node's id into each, read back. */
	if (me == 0) {
		memset(first, 1, PAGE);
		memset(a, 2, PAGE);
		memset(b, 3, PAGE);
	}
	locus_dsm_barrier();
	locus_dsm_avr_pause();
	if (first[PAGE - 1] != 1 || a[0] != 2 || a[PAGE - 1] != 2 || b[0] != 3)
		die("blocks share memory: %d %d %d %d", first[PAGE - 1], a[0], a[PAGE - 1], b[0]);
	locus_dsm_avr_resume();
	ok("wrapping sizes refused, allocator unchanged");
}

/* ---- SIGSEGV: the program's handler and the runtime's faults ---- */

static sigjmp_buf recover;
static volatile sig_atomic_t handled, expecting;
static void *volatile handled_addr;
static char *trap; /* pages of the program's own, PROT_NONE */

/* A fault the program did not cause (a DSM fault) reached its handler. */
static void not_mine(const char *what)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg),
			 "dsm_misuse: node %d: FAIL: the program's SIGSEGV handler got %s\n", me,
			 what);
	if (write(2, msg, (size_t)n) < 0)
		_exit(1);
	_exit(1);
}

static void on_segv_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *a = si->si_addr;
	if (sig != SIGSEGV || !expecting || a < trap || a >= trap + 4 * PAGE)
		not_mine("a fault outside its own pages (a DSM fault)");
	handled++;
	handled_addr = a;
	siglongjmp(recover, 1);
}

static void on_segv_plain(int sig)
{
	if (sig != SIGSEGV || !expecting)
		not_mine("a fault it did not cause (a DSM fault)");
	handled++;
	siglongjmp(recover, 1);
}

static void install(const char *how)
{
	if (!strcmp(how, "signal")) {
		if (signal(SIGSEGV, on_segv_plain) == SIG_ERR)
			die("signal(SIGSEGV): %s", strerror(errno));
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv_info;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0)
		die("sigaction(SIGSEGV): %s", strerror(errno));
	struct sigaction now;
	if (sigaction(SIGSEGV, NULL, &now) != 0 || now.sa_sigaction != on_segv_info)
		die("sigaction(SIGSEGV) does not report the program's own handler");
}

/* One fault outside the region, recovered by the program's handler. */
static void recover_one(int round)
{
	volatile int before = handled;
	if (sigsetjmp(recover, 1) == 0) {
		expecting = 1;
		volatile char c = trap[round];
		(void)c;
		die("reading a PROT_NONE page did not fault");
	}
	expecting = 0;
	if (handled != before + 1)
		die("the program's handler ran %d times for one fault", handled - before);
}

/* Pages written by every node in turn: each node's reads and writes fault. */
static void share(volatile uint64_t *words, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		for (int n = 0; n < nodes; n++) {
			if (n == me)
				for (int w = 0; w < 4; w++)
					words[w * (PAGE / 8)] += 1;
			locus_dsm_barrier();
		}
		locus_dsm_avr_pause(); /* avr: a check acts on what it read only once it stands */
		for (int w = 0; w < 4; w++)
			if (words[w * (PAGE / 8)] != (uint64_t)(r + 1) * (uint64_t)nodes)
				die("round %d: page %d holds %llu", r, w,
				    (unsigned long long)words[w * (PAGE / 8)]);
		locus_dsm_avr_resume();
		locus_dsm_barrier(); /* no node's next turn before every node has checked */
	}
}

static void mode_segv(const char *when, int *argc, char ***argv)
{
	trap = mmap(NULL, 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (trap == MAP_FAILED)
		die("mmap");
	if (!strcmp(when, "before"))
		install("sigaction");
	start(argc, argv);
	if (!strcmp(when, "after"))
		install("sigaction");
	else if (!strcmp(when, "signal"))
		install("signal");
	volatile uint64_t *words = locus_dsm_alloc(4 * PAGE);
	if (!words)
		die("alloc");
	recover_one(0);
	if (!strcmp(when, "after") && handled_addr != trap)
		die("the handler got address %p for a fault at %p", handled_addr, (void *)trap);
	share(words, 3);
	recover_one(PAGE);
	share(words + 1, 3);
	if (handled != 2)
		die("the program's handler ran %d times (2 faults outside the region)", handled);
	ok("the program's SIGSEGV handler got the faults outside the region and no other");
}

/* ---- fork ---- */

/* Run child() in a child of fork(); returns its wait status. */
static int in_child(void (*child)(volatile char *), volatile char *page)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		child(page);
		exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	return status;
}

static void child_exits(volatile char *page)
{
	(void)page;
	exit(0);
}

static void child_writes(volatile char *page)
{
	page[0] = 'C';
}

static void child_reads(volatile char *page)
{
	volatile char c = page[0];
	(void)c;
}

static void child_barrier(volatile char *page)
{
	(void)page;
	locus_dsm_barrier();
}

static void mode_fork(void)
{
	volatile char *pages = locus_dsm_alloc(2 * PAGE);
	if (!pages)
		die("alloc");
	int last = nodes - 1;
	/* pages[0]: written here, so held writable; pages + PAGE: written by the
	   last node only, so not resident here (unless this is the last node). */
	pages[0] = 'P';
	locus_dsm_barrier();
	if (me == last)
		pages[PAGE] = 'L';
	locus_dsm_barrier();
	if (me == 0) {
		pages[0] = 'P';
		int st = in_child(child_exits, pages);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("a child that calls exit(0) ended with status %#x", st);
		st = in_child(child_writes, pages);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			die("a child's write to the region succeeded");
		if (pages[0] != 'P')
			die("a child's write landed in the parent's memory ('%c')", pages[0]);
		st = in_child(child_reads, pages + PAGE);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			die("a child's read of a page not here succeeded");
		st = in_child(child_barrier, pages);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			die("a child's locus_dsm_barrier returned");
	}
	locus_dsm_barrier();
	if (pages[PAGE] != 'L')
		die("the last node's write is lost ('%c')", pages[PAGE]);
	ok("children of fork() are not nodes: clean exit, region access refused");
}

/* ---- locks ---- */

static void mode_locks(long n)
{
	volatile uint64_t *count = locus_dsm_alloc(PAGE);
	if (!count)
		die("alloc");
	double t0 = locus_dsm_now();
	for (long i = 0; i < n; i++) {
		uint32_t id = (uint32_t)(i * nodes + me) * 2654435761u;
		locus_dsm_lock(id);
		locus_dsm_unlock(id);
	}
	locus_dsm_lock(1);
	(*count)++;
	locus_dsm_unlock(1);
	locus_dsm_barrier();
	double t = locus_dsm_now() - t0;
	locus_dsm_barrier(); /* lrc: its managers forget released locks a barrier later */
	locus_dsm_avr_pause();
	if (*count != (uint64_t)nodes)
		die("count %llu, want %d", (unsigned long long)*count, nodes);
	locus_dsm_stats s;
	locus_dsm_stats_get(&s);
	/* A node keeps at most LOCUS_DSM_LOCK_KEEP released locks (1024), and a
	   manager remembers each lock kept elsewhere: the records are bounded by
	   that, whatever n (0 with LOCUS_DSM_LOCK_CACHE=0). */
	const char *cache = getenv("LOCUS_DSM_LOCK_CACHE"), *keep = getenv("LOCUS_DSM_LOCK_KEEP");
	uint64_t per_node = keep && *keep ? strtoull(keep, NULL, 10) : 1024;
	uint64_t most = cache && !strcmp(cache, "0") ? 0 : per_node * (uint64_t)nodes;
	if (s.lock_records > most)
		die("%llu lock records kept after %ld distinct locks were released (at most %llu)",
		    (unsigned long long)s.lock_records, n, (unsigned long long)most);
	printf("node %d: %ld distinct locks in %.2f s, %llu records kept after\n", me, n, t,
	       (unsigned long long)s.lock_records);
	locus_dsm_avr_resume();
	ok("lock state bounded once released");
}

/* ---- memory ---- */

static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kb = atol(line + n + 1);
	if (f)
		fclose(f);
	return kb;
}

static void mode_memory(int *argc, char ***argv)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	start(argc, argv);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double init_s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
	/* A small program: a 64x64 grid of doubles, shared by every node. */
	double *grid = locus_dsm_alloc(64 * 64 * sizeof(double));
	if (!grid)
		die("alloc");
	for (int it = 0; it < 5; it++) {
		for (int i = me; i < 64; i += nodes)
			for (int j = 0; j < 64; j++)
				grid[i * 64 + j] += 1.0;
		locus_dsm_barrier();
	}
	locus_dsm_avr_pause(); /* avr: a rollback must not repeat what die() prints */
	for (int i = 0; i < 64 * 64; i++)
		if (grid[i] != 5.0)
			die("grid[%d] = %g", i, grid[i]);
	locus_dsm_avr_resume();
	locus_dsm_barrier();
	printf("node %d: peak_rss_kb %ld init_s %.3f\n", me, status_kb("VmHWM"), init_s);
	ok("memory");
}

/* ---- misuse that must be named ---- */

static void wait_in_barrier(int t, void *arg)
{
	(void)arg;
	if (t == 0)
		locus_dsm_barrier(); /* thread 1 has returned: never complete */
}

static void wait_in_team_barrier(int t, void *arg)
{
	(void)arg;
	if (t == 0)
		locus_dsm_team_barrier();
}

static void *other_barrier(void *arg)
{
	(void)arg;
	locus_dsm_barrier();
	return NULL;
}

static void mode_misuse(const char *how, int *argc, char ***argv)
{
	if (!strcmp(how, "barrier-before")) {
		locus_dsm_barrier();
		die("locus_dsm_barrier returned before init");
	}
	if (!strcmp(how, "alloc-before")) {
		locus_dsm_alloc(PAGE);
		die("locus_dsm_alloc returned before init");
	}
	start(argc, argv);
	volatile uint64_t *words = locus_dsm_alloc(PAGE);
	if (!words)
		die("alloc");
	locus_dsm_barrier();
	if (!strcmp(how, "team-return")) {
		locus_dsm_parallel(2, wait_in_barrier, NULL);
	} else if (!strcmp(how, "team-return-tb")) {
		locus_dsm_parallel(2, wait_in_team_barrier, NULL);
	} else if (!strcmp(how, "lock-finalize")) {
		if (me == 0)
			locus_dsm_lock(7);
		locus_dsm_barrier();
		if (me == 1)
			locus_dsm_lock(7);
	} else if (!strcmp(how, "lock-barrier")) {
		if (me == 0)
			locus_dsm_lock(7);
		locus_dsm_barrier();
		if (me == 1)
			locus_dsm_lock(7);
		locus_dsm_barrier();
	} else if (!strcmp(how, "barrier-apart")) {
		locus_dsm_barrier_obj *b = locus_dsm_malloc(sizeof(*b)); /* not shared: a mistake */
		locus_dsm_barrier_init(b);
		locus_dsm_barrier_wait(b, (unsigned)nodes);
		die("a barrier object of its own opened for %d nodes", nodes);
	} else if (!strcmp(how, "barrier-after")) {
		locus_dsm_finalize();
		locus_dsm_barrier();
		die("locus_dsm_barrier returned after finalize");
	} else if (!strcmp(how, "extra-barrier")) {
		if (me == nodes - 1)
			locus_dsm_barrier();
	} else if (!strcmp(how, "two-threads")) {
		pthread_t t;
		if (pthread_create(&t, NULL, other_barrier, NULL) != 0)
			die("pthread_create");
		for (int i = 0; i < 1000; i++)
			locus_dsm_barrier();
		pthread_join(t, NULL);
	} else {
		fprintf(stderr, "dsm_misuse: unknown mode '%s'\n", how);
		exit(2);
	}
	words[me] = 1;
	locus_dsm_finalize();
	printf("node %d: %s: finished without a word\n", me, how);
	exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s MODE [ARG] (see the source's header)\n", argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	if (!strncmp(mode, "segv-", 5)) {
		mode_segv(mode + 5, &argc, &argv);
	} else if (!strcmp(mode, "memory")) {
		mode_memory(&argc, &argv);
	} else if (!strcmp(mode, "alloc") || !strcmp(mode, "fork") || !strcmp(mode, "locks")) {
		start(&argc, &argv);
		if (!strcmp(mode, "alloc"))
			mode_alloc();
		else if (!strcmp(mode, "fork"))
			mode_fork();
		else
			mode_locks(argc > 2 ? atol(argv[2]) : 200000);
	}
	mode_misuse(mode, &argc, &argv);
	return 0;
}
