/*
 * locus-kv: a memcached-compatible server whose critical sections run through
 * locus executors chosen with --sync.
 *
 * Threads (as memcached): the main thread runs the listener, the once-a-second
 * clock, the expiry crawler and the slab mover, and the signal handling; -t
 * worker threads each run an event loop (libevent) over the connections
 * handed to them and a reader of each UDP socket. A worker owns its
 * connections outright; everything shared lives in the store (kv/store/store.h),
 * behind the store's sections. server.h lists the server's files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server/auth.h"
#include "kv/server/meta_exec.h"
#include "kv/server/process.h"
#include "kv/server/sasl.h"
#include "kv/server/server.h"
#include "kv/server/tls.h"

struct kv_server kv_srv;

void kv_logv(int level, const char *fmt, ...)
{
	if (ld_relaxed(&kv_srv.set.verbose) < level)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---------- workers ---------- */

/*
 * T_MEMD_INITIAL_MALLOC: memcached's hook for its test suite, the bytes its
 * slab allocator counts as taken at the start (t/64bit.t fakes 4 GB with it).
 * A value that is not a whole non-negative number is ignored (memcached also
 * ignores one it cannot read, and would wrap a negative one).
 */
static size_t initial_malloced(void)
{
	const char *v = getenv("T_MEMD_INITIAL_MALLOC");
	if (!v || *v < '0' || *v > '9')
		return 0;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	return errno || *end || n > SIZE_MAX ? 0 : (size_t)n;
}

static void worker_notify(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct kv_handoff h[64];
	ssize_t n = read(fd, h, sizeof(h));
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n / (ssize_t)sizeof(h[0]); i++) {
		if (h[i].fd < 0) { /* stop */
			event_base_loopbreak(w->base);
			continue;
		}
		if (!kv_conn_new(w, h[i].fd, h[i].tls)) {
			close(h[i].fd);
			fas_seqcst(&kv_srv.curr_conns, 1);
		}
	}
	kv_counts_flush(kv_srv.st, &w->cnt);
}

static void on_idle_check(evutil_socket_t fd, short what, void *arg)
{
	kv_conn_close_idle(arg);
}

/* The worker's batch of LRU bumps: the first one waiting starts the timer that drains it. */
static void on_bumps(evutil_socket_t fd, short what, void *arg)
{
	kv_bumps_drain(kv_srv.st);
}

static void bumps_waiting(void *arg)
{
	struct worker *w = arg;
	static const struct timeval soon = {0, 5000};
	event_add(w->bump_ev, &soon);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	kv_bumps_attach(&w->bumps);
	event_base_dispatch(w->base);
	while (w->conns)
		kv_conn_close(w->conns);
	kv_bumps_drain(kv_srv.st);
	kv_bumps_attach(NULL);
	kv_dgram_stop(w);
	kv_counts_flush(kv_srv.st, &w->cnt);
	kv_pool_free(&w->pool);
	kv_buf_free(&w->scratch);
	kv_buf_free(&w->tls_gather);
	kv_meta_thread_exit();
	kv_watch_thread_exit();
	return NULL;
}

/* ---------- maintenance ---------- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	kv_clock_tick(kv_srv.st);
	kv_counts_flush(kv_srv.st, &kv_srv.main_cnt);
}

static void on_automove(evutil_socket_t fd, short what, void *arg)
{
	kv_hash_tick(kv_srv.st);
	kv_automove_tick(kv_srv.st, &kv_srv.main_cnt);
	kv_counts_flush(kv_srv.st, &kv_srv.main_cnt);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	kv_logv(1, "locus-kv: signal %d, stopping", (int)sig);
	kv_srv.stopping = 1;
	/* SIGUSR1 (and "shutdown graceful"): memcached's graceful stop, which keeps a memory
	   file's items for the next start. */
	if (sig == SIGUSR1)
		kv_srv.graceful = 1;
	event_base_loopbreak(kv_srv.base);
}

int main(int argc, char **argv)
{
	kv_options_parse(argc, argv, &kv_srv.set);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * SIGINT and SIGTERM wait until the loop can handle them: a client may
	 * connect (the kernel queues it once the socket listens) and ask the
	 * server to stop before the loop runs. The workers inherit the mask.
	 */
	sigset_t stop_signals;
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
	kv_raise_nofile(kv_srv.set.maxconns);
	if (kv_srv.set.coredumps)
		kv_enable_coredumps();
	/* As memcached: the certificates are read before the user changes; then the user (so a
	   port below 1024 needs -u root), SASL and the -Y file as that user, and the sockets. */
	char err[512];
	if (kv_srv.set.tls.enabled && kv_tls_init(&kv_srv.set.tls, err, sizeof(err)) != 0)
		kv_die("%s", err);
	if (kv_srv.set.user)
		kv_become_user(kv_srv.set.user);
	if (kv_srv.set.sasl && kv_sasl_init(err, sizeof(err)) != 0)
		kv_die("%s", err);
	if (kv_srv.set.auth_file && kv_auth_load(kv_srv.set.auth_file, err, sizeof(err)) != 0)
		kv_die("%s", err);
	kv_listen_open();
	/* Bound: only now the daemon, so that a socket that cannot be had is said on the
	   terminal and in the exit status (memcached forks first; docs/kv.md). */
	if (kv_srv.set.daemonize)
		kv_daemonize(kv_srv.set.coredumps, ld_relaxed(&kv_srv.set.verbose) > 0);
	if (kv_srv.set.pidfile)
		kv_pidfile_write(kv_srv.set.pidfile);
	for (int i = 0; i < kv_srv.set.nnotes; i++)
		kv_logv(1, "locus-kv: note: %s", kv_srv.set.notes[i]);
	kv_srv.set.store.memory_file = kv_srv.set.memory_file;
	kv_srv.set.store.slab_reassign = kv_srv.set.slab_reassign;
	kv_srv.set.store.initial_malloced = initial_malloced();
	kv_srv.st = kv_store_open(&kv_srv.set.store, err, sizeof(err));
	if (!kv_srv.st)
		kv_die("%s", err);
	kv_srv.base = event_base_new();
	if (!kv_srv.base)
		kv_die("cannot create an event loop");
	kv_store_set_evict_hook(kv_srv.st, kv_watch_eviction, NULL);
	kv_store_set_fetch_hook(kv_srv.st, kv_watch_fetch, NULL);
	if (kv_srv.set.store.lru_crawler && kv_crawler_enable(kv_srv.st) != 0)
		kv_die("cannot start the LRU crawler thread");
	if (kv_srv.set.store.lru_maintainer && kv_maintainer_start(kv_srv.st) != 0)
		kv_die("cannot start the LRU maintainer thread");
	kv_listen_start();
	kv_srv.workers = calloc((size_t)kv_srv.set.threads, sizeof(*kv_srv.workers));
	for (int i = 0; i < kv_srv.set.threads; i++) {
		struct worker *w = &kv_srv.workers[i];
		w->base = event_base_new();
		if (!w->base || pipe2(w->notify, O_CLOEXEC) != 0)
			kv_die("cannot create worker %d: %s", i, strerror(errno));
		w->id = i;
		pthread_mutex_init(&w->lock, NULL);
		kv_pool_init(&w->pool, (uint64_t)kv_srv.set.read_buf_mem_mb << 20,
			     kv_srv.set.threads);
		w->notify_ev =
			event_new(w->base, w->notify[0], EV_READ | EV_PERSIST, worker_notify, w);
		event_add(w->notify_ev, NULL);
		w->bump_ev = event_new(w->base, -1, 0, on_bumps, w);
		if (!w->bump_ev)
			kv_die("cannot create worker %d's timer", i);
		w->bumps.first = bumps_waiting;
		w->bumps.ctx = w;
		if (kv_dgram_start(w) != 0)
			kv_die("cannot start worker %d's UDP reader: %s", i, strerror(errno));
		if (kv_srv.set.idle_timeout > 0) {
			struct timeval sec1 = {1, 0};
			w->idle_ev = event_new(w->base, -1, EV_PERSIST, on_idle_check, w);
			if (!w->idle_ev || event_add(w->idle_ev, &sec1) != 0)
				kv_die("cannot start worker %d's idle timer", i);
		}
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
			kv_die("cannot start worker %d", i);
	}
	if (kv_srv.set.lock_memory)
		kv_lock_memory();
	struct timeval sec = {1, 0};
	struct event *tick = event_new(kv_srv.base, -1, EV_PERSIST, on_tick, NULL);
	event_add(tick, &sec);
	struct timeval mv = {0, 1000000 / KV_AUTOMOVE_HZ};
	struct event *automove = event_new(kv_srv.base, -1, EV_PERSIST, on_automove, NULL);
	event_add(automove, &mv);
	struct event *sigint = evsignal_new(kv_srv.base, SIGINT, on_signal, NULL);
	struct event *sigterm = evsignal_new(kv_srv.base, SIGTERM, on_signal, NULL);
	struct event *sigusr1 = evsignal_new(kv_srv.base, SIGUSR1, on_signal, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	event_add(sigusr1, NULL);
	pthread_sigmask(SIG_UNBLOCK, &stop_signals, NULL);
	kv_logv(1,
		"locus-kv %s: port %d, %d threads, %zu MB, sync hash=%s alloc=%s slabs=%s stats=%s",
		LOCUS_KV_VERSION, kv_srv.set.port, kv_srv.set.threads,
		kv_srv.set.store.mem_limit >> 20, kv_store_sync_spec(kv_srv.st, KV_SEC_HASH),
		kv_store_sync_spec(kv_srv.st, KV_SEC_ALLOC),
		kv_store_sync_spec(kv_srv.st, KV_SEC_SLABS),
		kv_store_sync_spec(kv_srv.st, KV_SEC_STATS));

	event_base_dispatch(kv_srv.base);

	if (kv_srv.graceful)
		fprintf(stderr, "Gracefully stopping\n");
	/* Stop: no new connections; workers close theirs and exit. */
	kv_listen_stop();
	for (int i = 0; i < kv_srv.set.threads; i++) {
		struct kv_handoff stop = {.fd = -1};
		if (write(kv_srv.workers[i].notify[1], &stop, sizeof(stop)) != sizeof(stop))
			event_base_loopbreak(kv_srv.workers[i].base);
	}
	for (int i = 0; i < kv_srv.set.threads; i++) {
		struct worker *w = &kv_srv.workers[i];
		pthread_join(w->thread, NULL);
		event_free(w->notify_ev);
		if (w->idle_ev)
			event_free(w->idle_ev);
		event_free(w->bump_ev);
		event_base_free(w->base);
		pthread_mutex_destroy(&w->lock);
		close(w->notify[0]);
		close(w->notify[1]);
	}
	kv_listen_free();
	kv_counts_flush(kv_srv.st, &kv_srv.main_cnt);
	kv_crawler_disable(kv_srv.st);
	kv_maintainer_stop(kv_srv.st);
	if (kv_srv.graceful)
		kv_store_save(kv_srv.st); /* -e: FILE.meta, for the next start to find the items */
	event_free(tick);
	event_free(automove);
	event_free(sigint);
	event_free(sigterm);
	event_free(sigusr1);
	event_base_free(kv_srv.base);
	kv_store_close(kv_srv.st);
	free(kv_srv.workers);
	kv_pidfile_remove(kv_srv.set.pidfile);
	kv_auth_free();
	if (kv_srv.set.sasl)
		kv_sasl_done();
	kv_tls_free();
	kv_options_free(&kv_srv.set);
	return 0;
}
