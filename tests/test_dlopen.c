/*
 * liblocus.so loaded with dlopen after the program has started and made a
 * thread, as a plugin or a scripting language's foreign-function module
 * would load it.
 *
 * The library's thread-local variables on the locks' and executors' fast
 * paths use the initial-exec model (src/common/tls.h), so all its
 * thread-local data must fit in the C library's small reserve for modules
 * loaded late: if it grew too large, dlopen would fail here with "cannot
 * allocate memory in static TLS block". Then a thread that existed before
 * the load and the main thread use the per-thread state of every kind: the
 * queue locks' node pools (mcs, clh), an executor's error message, a
 * delegation client's channels (ffwd) and posts (async).
 *
 * Usage: test_dlopen PATH-OF-LIBLOCUS.SO. Not linked with locus itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locus/cs.h"
#include "locus/lock.h"

#define ROUNDS 20000

static struct {
	int (*lock_init_spec)(locus_lock *, const char *);
	void (*lock_lock)(locus_lock *);
	void (*lock_unlock)(locus_lock *);
	void (*lock_destroy)(locus_lock *);
	locus_cs *(*cs_open)(const char *, void *);
	const char *(*cs_error)(void);
	uint64_t (*cs_run)(locus_cs *, locus_fn, uint64_t, uint64_t, uint64_t);
	int (*cs_post)(locus_cs *, locus_fn, uint64_t, uint64_t, uint64_t, locus_cb, void *);
	void (*cs_drain)(void);
	void (*cs_close)(locus_cs *);
} L;

static void fail(const char *what)
{
	fprintf(stderr, "test_dlopen: %s\n", what);
	exit(1);
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);
	if (!p) {
		fprintf(stderr, "test_dlopen: %s: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

static locus_lock locks[2];
static uint64_t counts[2]; /* under locks[i] */
static uint64_t total;	   /* through the executors */

static uint64_t add(void *state, uint64_t a, uint64_t b, uint64_t c)
{
	(void)b;
	(void)c;
	uint64_t *n = state;
	*n += a;
	return *n;
}

/* Both threads: the locks, a bad spec's message, an ffwd call and async posts. */
static void work(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < 2; k++) {
			L.lock_lock(&locks[k]);
			counts[k]++;
			L.lock_unlock(&locks[k]);
		}
	}
	if (L.cs_open("no-such-mechanism", NULL) || !strstr(L.cs_error(), "no-such-mechanism"))
		fail("a bad spec did not leave its message in this thread");
	locus_cs *f = L.cs_open("ffwd", &total), *a = L.cs_open("async", &total);
	if (!f || !a)
		fail(L.cs_error());
	for (int i = 0; i < ROUNDS / 10; i++) {
		L.cs_run(f, add, 1, 0, 0);
		L.cs_post(a, add, 1, 0, 0, NULL, NULL);
	}
	L.cs_drain();
	L.cs_close(a);
	L.cs_close(f);
}

static pthread_barrier_t loaded;

static void *early_thread(void *unused)
{
	(void)unused;
	pthread_barrier_wait(&loaded); /* made before the load, used after it */
	work();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		fail("usage: test_dlopen PATH-OF-LIBLOCUS.SO");
	pthread_t t;
	if (pthread_barrier_init(&loaded, NULL, 2) || pthread_create(&t, NULL, early_thread, NULL))
		fail("cannot start the early thread");
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "test_dlopen: dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	L.lock_init_spec = sym(h, "locus_lock_init_spec");
	L.lock_lock = sym(h, "locus_lock_lock");
	L.lock_unlock = sym(h, "locus_lock_unlock");
	L.lock_destroy = sym(h, "locus_lock_destroy");
	L.cs_open = sym(h, "locus_cs_open");
	L.cs_error = sym(h, "locus_cs_error");
	L.cs_run = sym(h, "locus_cs_run");
	L.cs_post = sym(h, "locus_cs_post");
	L.cs_drain = sym(h, "locus_cs_drain");
	L.cs_close = sym(h, "locus_cs_close");
	if (L.lock_init_spec(&locks[0], "mcs") || L.lock_init_spec(&locks[1], "clh"))
		fail("cannot make the locks");
	pthread_barrier_wait(&loaded);
	work();
	if (pthread_join(t, NULL))
		fail("cannot join the early thread");
	for (int k = 0; k < 2; k++) {
		if (counts[k] != 2 * ROUNDS) {
			fprintf(stderr, "test_dlopen: lock %d: %llu increments, not %d\n", k,
				(unsigned long long)counts[k], 2 * ROUNDS);
			return 1;
		}
		L.lock_destroy(&locks[k]);
	}
	if (total != 2 * 2 * (ROUNDS / 10)) {
		fprintf(stderr, "test_dlopen: executors: %llu sections, not %d\n",
			(unsigned long long)total, 2 * 2 * (ROUNDS / 10));
		return 1;
	}
	printf("test_dlopen: liblocus.so loaded late; locks and executors used from two threads\n");
	return 0;
}
