/*
 * A program that uses pthread mutexes and condition variables the ways real
 * programs do, and checks every result. It knows nothing of locus: the
 * driver (preload_driver.py) runs it under LD_PRELOAD=liblocus-preload.so
 * with each lock, and reads its profile.
 *
 * Prints "ok NAME" per part and exits 0, or prints "FAIL NAME: why" and
 * exits 1. An alarm ends a hung run.
 *
 * The functions named prog_* are exported (linked with -rdynamic) and never
 * inlined, so that the profile can name where a mutex was first locked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "early.h"

#define EXPORT __attribute__((noinline, visibility("default")))

static const char *part = "start";
static int threads = 4;	  /* --threads: counter workers */
static int iters = 20000; /* --iters: increments per counter worker */
static int many = 32;	  /* --many: threads in the many-threads part */
static int items = 5000;  /* --items: per producer */

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		printf("FAIL %s: ", part);                                                         \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		fflush(stdout);                                                                    \
		exit(1);                                                                           \
	} while (0)
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			FAIL(__VA_ARGS__);                                                         \
	} while (0)
#define EQ(a, b)                                                                                   \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_)                                                                      \
			FAIL("%s = %lld, expected %lld (line %d)", #a, a_, b_, __LINE__);          \
	} while (0)

static void ok(void)
{
	printf("ok %s\n", part);
	fflush(stdout);
}

static void sleep_ms(long ms)
{
	struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

static void deadline(struct timespec *ts, clockid_t clk, long ms)
{
	clock_gettime(clk, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static long elapsed_ms(const struct timespec *since)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000 + (now.tv_nsec - since->tv_nsec) / 1000000;
}

static pthread_t start(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int rc = pthread_create(&t, NULL, fn, arg);
	CHECK(rc == 0, "pthread_create: %s", strerror(rc));
	return t;
}

static void join(pthread_t t)
{
	int rc = pthread_join(t, NULL);
	CHECK(rc == 0, "pthread_join: %s", strerror(rc));
}

/* Runs fn(arg) in another thread and returns its int result. */
struct call {
	int (*fn)(void *);
	void *arg;
	int result;
};

static void *call_main(void *p)
{
	struct call *c = p;
	c->result = c->fn(c->arg);
	return NULL;
}

static int in_thread(int (*fn)(void *), void *arg)
{
	struct call c = {fn, arg, -1};
	join(start(call_main, &c));
	return c.result;
}

static int try_lock(void *m)
{
	int rc = pthread_mutex_trylock(m);
	if (rc == 0)
		pthread_mutex_unlock(m);
	return rc;
}

static int unlock_other(void *m)
{
	return pthread_mutex_unlock(m);
}

/* ---- shared counter under a statically initialized mutex ---------------- */

pthread_mutex_t prog_counter_mutex = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static int ready;

static void *counter_worker(void *unused)
{
	(void)unused;
	__atomic_add_fetch(&ready, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < iters; i++) {
		pthread_mutex_lock(&prog_counter_mutex);
		counter++;
		pthread_mutex_unlock(&prog_counter_mutex);
	}
	return NULL;
}

/* Holds the mutex until every worker is about to lock it, so that the
   profile must show contention on it. */
EXPORT void prog_counter_run(void)
{
	pthread_t t[64];
	pthread_mutex_lock(&prog_counter_mutex);
	for (int i = 0; i < threads; i++)
		t[i] = start(counter_worker, NULL);
	while (__atomic_load_n(&ready, __ATOMIC_SEQ_CST) < threads)
		sleep_ms(1);
	sleep_ms(20);
	pthread_mutex_unlock(&prog_counter_mutex);
	for (int i = 0; i < threads; i++)
		join(t[i]);
	EQ(counter, (long)threads * iters);
}

/* ---- many threads, a mutex in zeroed heap memory, never initialized ------ */

struct box {
	char pad[24];
	pthread_mutex_t m;
	long n;
};

static void *many_worker(void *p)
{
	struct box *b = p;
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&b->m);
		b->n++;
		pthread_mutex_unlock(&b->m);
	}
	return NULL;
}

static void many_threads(void)
{
	struct box *b = calloc(1, sizeof(*b));
	pthread_t *t = calloc((size_t)many, sizeof(*t));
	CHECK(b && t, "calloc");
	for (int i = 0; i < many; i++)
		t[i] = start(many_worker, b);
	for (int i = 0; i < many; i++)
		join(t[i]);
	EQ(b->n, 200L * many);
	free(t);
	free(b);
}

/* ---- producer/consumer: two condvars, one static, one on CLOCK_MONOTONIC -- */

#define SLOTS 4
static pthread_mutex_t pc_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pc_not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pc_not_full; /* pthread_cond_init with a monotonic clock */
static long pc_buf[SLOTS];
static int pc_head, pc_count, pc_done;
static long pc_consumed, pc_sum;

static void *producer(void *p)
{
	long base = (long)(intptr_t)p;
	for (long i = 1; i <= items; i++) {
		pthread_mutex_lock(&pc_mutex);
		while (pc_count == SLOTS) {
			struct timespec ts;
			deadline(&ts, CLOCK_MONOTONIC, 10000);
			int rc = pthread_cond_timedwait(&pc_not_full, &pc_mutex, &ts);
			CHECK(rc == 0, "producer timedwait: %s", strerror(rc));
		}
		pc_buf[(pc_head + pc_count) % SLOTS] = base + i;
		pc_count++;
		pthread_cond_signal(&pc_not_empty);
		pthread_mutex_unlock(&pc_mutex);
	}
	return NULL;
}

static void *consumer(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&pc_mutex);
	for (;;) {
		while (pc_count == 0 && !pc_done)
			pthread_cond_wait(&pc_not_empty, &pc_mutex);
		if (pc_count == 0)
			break;
		pc_sum += pc_buf[pc_head];
		pc_head = (pc_head + 1) % SLOTS;
		pc_count--;
		pc_consumed++;
		pthread_cond_signal(&pc_not_full);
	}
	pthread_mutex_unlock(&pc_mutex);
	return NULL;
}

static void producer_consumer(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	EQ(pthread_condattr_setclock(&a, CLOCK_MONOTONIC), 0);
	EQ(pthread_cond_init(&pc_not_full, &a), 0);
	pthread_condattr_destroy(&a);
	pthread_t c[2], p[2];
	for (int i = 0; i < 2; i++)
		c[i] = start(consumer, NULL);
	for (int i = 0; i < 2; i++)
		p[i] = start(producer, (void *)(intptr_t)(i * 1000000L));
	for (int i = 0; i < 2; i++)
		join(p[i]);
	pthread_mutex_lock(&pc_mutex);
	pc_done = 1;
	pthread_cond_broadcast(&pc_not_empty);
	pthread_mutex_unlock(&pc_mutex);
	for (int i = 0; i < 2; i++)
		join(c[i]);
	long n = items;
	EQ(pc_consumed, 2 * n);
	EQ(pc_sum, n * (n + 1) + 1000000L * n); /* 1..n twice, the second +1000000 each */
	EQ(pthread_cond_destroy(&pc_not_full), 0);
}

/* ---- timed waits ----------------------------------------------------------- */

static void timed_waits(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts, t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_mutex_lock(&m);
	deadline(&ts, CLOCK_REALTIME, 30);
	int rc;
	while ((rc = pthread_cond_timedwait(&c, &m, &ts)) == 0)
		; /* spurious wake-ups are allowed */
	EQ(rc, ETIMEDOUT);
	CHECK(elapsed_ms(&t0) >= 25, "timedwait returned after %ld ms of 30", elapsed_ms(&t0));
	EQ(in_thread(try_lock, &m), EBUSY); /* the mutex is held again */
	deadline(&ts, CLOCK_MONOTONIC, 20);
	while ((rc = pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &ts)) == 0)
		;
	EQ(rc, ETIMEDOUT);
	ts.tv_nsec = 1000000000L;
	EQ(pthread_cond_timedwait(&c, &m, &ts), EINVAL);
	EQ(pthread_mutex_unlock(&m), 0);
	EQ(pthread_cond_destroy(&c), 0);
	EQ(pthread_mutex_destroy(&m), 0);
}

/* ---- trylock and timedlock ---------------------------------------------- */

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static int timedlock_30ms(void *m)
{
	struct timespec ts;
	deadline(&ts, CLOCK_REALTIME, 30);
	int rc = pthread_mutex_timedlock(m, &ts);
	if (rc == 0)
		pthread_mutex_unlock(m);
	return rc;
}

static int clocklock_20ms(void *m)
{
	struct timespec ts;
	deadline(&ts, CLOCK_MONOTONIC, 20);
	int rc = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts);
	if (rc == 0)
		pthread_mutex_unlock(m);
	return rc;
}

static int timedlock_bad(void *m)
{
	struct timespec ts = {time(NULL) + 10, 1000000000L};
	return pthread_mutex_timedlock(m, &ts);
}

static void trylock_timedlock(void)
{
	EQ(pthread_mutex_lock(&held), 0);
	EQ(pthread_mutex_trylock(&held), EBUSY); /* held, even by us */
	EQ(in_thread(try_lock, &held), EBUSY);
	EQ(in_thread(timedlock_30ms, &held), ETIMEDOUT);
	EQ(in_thread(clocklock_20ms, &held), ETIMEDOUT);
	EQ(in_thread(timedlock_bad, &held), EINVAL);
	EQ(pthread_mutex_unlock(&held), 0);
	EQ(in_thread(try_lock, &held), 0);
	EQ(in_thread(timedlock_30ms, &held), 0);
	EQ(in_thread(clocklock_20ms, &held), 0);
	EQ(pthread_mutex_trylock(&held), 0);
	EQ(pthread_mutex_unlock(&held), 0);
}

/* ---- recursive and error-checking mutexes --------------------------------- */

pthread_mutex_t prog_recursive_mutex; /* pthread_mutexattr_settype(RECURSIVE) */
static pthread_mutex_t static_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t static_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t static_adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static pthread_cond_t rec_cond = PTHREAD_COND_INITIALIZER;
static int rec_flag;

static void *rec_signaller(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&prog_recursive_mutex);
	rec_flag = 1;
	pthread_cond_signal(&rec_cond);
	pthread_mutex_unlock(&prog_recursive_mutex);
	return NULL;
}

/* The driver checks this mutex's profile: 3 + 1 + 1 (cond) + 1 (signaller) +
   1 (the other thread's trylock) = 7 acquisitions. */
EXPORT void prog_recursive_run(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	EQ(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE), 0);
	EQ(pthread_mutex_init(&prog_recursive_mutex, &a), 0);
	pthread_mutexattr_destroy(&a);
	pthread_mutex_t *m = &prog_recursive_mutex;
	EQ(pthread_mutex_lock(m), 0);
	EQ(pthread_mutex_lock(m), 0);
	EQ(pthread_mutex_lock(m), 0);
	EQ(pthread_mutex_trylock(m), 0);
	EQ(in_thread(try_lock, m), EBUSY);
	for (int i = 0; i < 3; i++)
		EQ(pthread_mutex_unlock(m), 0);
	/* held once: a condvar wait releases it completely */
	pthread_t t = start(rec_signaller, NULL);
	while (!rec_flag)
		EQ(pthread_cond_wait(&rec_cond, m), 0);
	EQ(pthread_mutex_unlock(m), 0);
	join(t);
	EQ(pthread_mutex_unlock(m), EPERM); /* not held */
	EQ(in_thread(try_lock, m), 0);
}

static void recursive_errorcheck(void)
{
	prog_recursive_run();
	pthread_mutex_t *r = &static_recursive;
	EQ(pthread_mutex_lock(r), 0);
	EQ(pthread_mutex_lock(r), 0);
	EQ(in_thread(try_lock, r), EBUSY);
	EQ(pthread_mutex_unlock(r), 0);
	EQ(in_thread(try_lock, r), EBUSY);
	EQ(pthread_mutex_unlock(r), 0);
	EQ(in_thread(try_lock, r), 0);

	pthread_mutex_t *e = &static_errorcheck;
	EQ(pthread_mutex_lock(e), 0);
	EQ(pthread_mutex_lock(e), EDEADLK);
	EQ(in_thread(unlock_other, e), EPERM);
	EQ(pthread_mutex_unlock(e), 0);
	EQ(pthread_mutex_unlock(e), EPERM);

	pthread_mutex_t *ad = &static_adaptive;
	EQ(pthread_mutex_lock(ad), 0);
	EQ(in_thread(try_lock, ad), EBUSY);
	EQ(pthread_mutex_unlock(ad), 0);
	EQ(in_thread(try_lock, ad), 0);
}

/* ---- init, destroy, reuse, copy --------------------------------------------- */

static void lifecycle(void)
{
	pthread_mutex_t *m = malloc(2 * sizeof(*m));
	CHECK(m, "malloc");
	EQ(pthread_mutex_init(&m[0], NULL), 0);
	EQ(pthread_mutex_lock(&m[0]), 0);
	EQ(pthread_mutex_destroy(&m[0]), EBUSY);
	EQ(pthread_mutex_unlock(&m[0]), 0);
	/* a copy of an unlocked, used mutex is a mutex of its own */
	memcpy(&m[1], &m[0], sizeof(*m));
	EQ(pthread_mutex_lock(&m[0]), 0);
	EQ(in_thread(try_lock, &m[1]), 0);
	EQ(pthread_mutex_lock(&m[1]), 0);
	EQ(in_thread(try_lock, &m[0]), EBUSY);
	EQ(pthread_mutex_unlock(&m[1]), 0);
	EQ(pthread_mutex_unlock(&m[0]), 0);
	EQ(pthread_mutex_destroy(&m[0]), 0);
	/* initialized again without destroy, as reused memory is */
	for (int round = 0; round < 3; round++) {
		EQ(pthread_mutex_init(&m[1], NULL), 0);
		EQ(pthread_mutex_lock(&m[1]), 0);
		EQ(in_thread(try_lock, &m[1]), EBUSY);
		EQ(pthread_mutex_unlock(&m[1]), 0);
	}
	EQ(pthread_mutex_destroy(&m[1]), 0);
	free(m);
}

/* ---- fork ---------------------------------------------------------------- */

static pthread_mutex_t fork_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t atfork_m = PTHREAD_MUTEX_INITIALIZER;
static int fork_waiter_ready;

static void prepare(void)
{
	pthread_mutex_lock(&atfork_m);
}

static void release_atfork(void)
{
	pthread_mutex_unlock(&atfork_m);
}

static void *fork_waiter(void *unused)
{
	(void)unused;
	__atomic_store_n(&fork_waiter_ready, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&fork_m); /* blocks: the main thread holds it across fork */
	pthread_mutex_unlock(&fork_m);
	return NULL;
}

static pthread_mutex_t child_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t child_c = PTHREAD_COND_INITIALIZER;
static int child_turn;

static void *child_pong(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&child_m);
	for (int i = 0; i < 100; i++) {
		while (child_turn != 1)
			pthread_cond_wait(&child_c, &child_m);
		child_turn = 0;
		pthread_cond_signal(&child_c);
	}
	pthread_mutex_unlock(&child_m);
	return NULL;
}

static int child_main(void)
{
	alarm(20);
	/* held by this thread at fork, with a waiter that the child does not have */
	if (pthread_mutex_unlock(&fork_m) != 0 || pthread_mutex_lock(&fork_m) != 0 ||
	    pthread_mutex_unlock(&fork_m) != 0)
		return 10;
	pthread_mutex_lock(&prog_counter_mutex);
	counter++;
	pthread_mutex_unlock(&prog_counter_mutex);
	if (pthread_mutex_trylock(&atfork_m) != 0) /* released by the child handler */
		return 11;
	pthread_mutex_unlock(&atfork_m);
	pthread_t t;
	if (pthread_create(&t, NULL, child_pong, NULL) != 0)
		return 12;
	pthread_mutex_lock(&child_m);
	for (int i = 0; i < 100; i++) {
		child_turn = 1;
		pthread_cond_signal(&child_c);
		while (child_turn != 0)
			pthread_cond_wait(&child_c, &child_m);
	}
	pthread_mutex_unlock(&child_m);
	pthread_join(t, NULL);
	return 0;
}

static void forking(void)
{
	EQ(pthread_atfork(prepare, release_atfork, release_atfork), 0);
	EQ(pthread_mutex_lock(&fork_m), 0);
	pthread_t w = start(fork_waiter, NULL);
	while (!__atomic_load_n(&fork_waiter_ready, __ATOMIC_SEQ_CST))
		sleep_ms(1);
	sleep_ms(20); /* let it queue up on fork_m */
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(child_main());
	EQ(pthread_mutex_unlock(&fork_m), 0);
	join(w);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
	EQ(in_thread(try_lock, &atfork_m), 0);
}

/* ---- a library whose constructor used mutexes before ours could ---------- */

static void early(void)
{
	CHECK(early_result() == 0, "early library's constructor failed: %d", early_result());
	pthread_mutex_t *m = early_mutex(); /* locked by the constructor, still held */
	EQ(in_thread(try_lock, m), EBUSY);
	EQ(pthread_mutex_unlock(m), 0);
	EQ(in_thread(try_lock, m), 0);
	EQ(pthread_mutex_lock(m), 0);
	EQ(pthread_mutex_unlock(m), 0);
}

int main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		int v = atoi(argv[i + 1]);
		if (strcmp(argv[i], "--threads") == 0 && v > 0 && v <= 64)
			threads = v;
		else if (strcmp(argv[i], "--iters") == 0 && v > 0)
			iters = v;
		else if (strcmp(argv[i], "--many") == 0 && v > 0)
			many = v;
		else if (strcmp(argv[i], "--items") == 0 && v > 0)
			items = v;
		else {
			fprintf(stderr,
				"usage: %s [--threads N] [--iters N] [--many N] [--items N]\n",
				argv[0]);
			return 2;
		}
	}
	alarm(120);
	part = "early";
	early();
	ok();
	part = "counter";
	prog_counter_run();
	ok();
	part = "many_threads";
	many_threads();
	ok();
	part = "producer_consumer";
	producer_consumer();
	ok();
	part = "timed_waits";
	timed_waits();
	ok();
	part = "trylock_timedlock";
	trylock_timedlock();
	ok();
	part = "recursive_errorcheck";
	recursive_errorcheck();
	ok();
	part = "lifecycle";
	lifecycle();
	ok();
	part = "fork";
	forking();
	ok();
	printf("all ok\n");
	return 0;
}
