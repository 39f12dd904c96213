/*
 * locus-kv's "watch" (memcached's logger): connections that have asked to
 * watch receive a line for every event of the kinds they chose, from every
 * worker, as it happens.
 *
 * Threads. Any worker (and the store, for evictions) logs an event: if a
 * watcher wants that kind (one atomic load when nobody watches), the line
 * is formatted once and appended, under the registry's lock, to the buffer
 * of each watcher that wants it, and the watcher's worker is woken through
 * an eventfd; that worker moves the lines into the connection's output. A
 * watcher whose buffer (watcher_logbuf_size) is full loses lines, counted
 * and reported to it as "skipped=<n>", as memcached does.
 */
#ifndef LOCUS_KV_WATCH_H
#define LOCUS_KV_WATCH_H

#include <stdint.h>

#include "kv/protocol/proto.h"
#include "kv/store/buf.h"
#include "kv/store/item.h"
#include "kv/store/store.h"

#define KV_WATCHERS_MAX 20 /* memcached's limit */

enum kv_watch_kind {
	KV_WATCH_FETCHERS = 1,
	KV_WATCH_MUTATIONS = 2,
	KV_WATCH_EVICTIONS = 4,
	KV_WATCH_OTHER = 8, /* rawcmds, sysevents, proxy*: accepted, never sent here */
	KV_WATCH_CONNEVENTS = 16,
};

/* Why a connection closed, as memcached's conn_close lines name it (its order). */
enum kv_close_reason {
	KV_CLOSE_ERROR,	   /* anything but the three below */
	KV_CLOSE_NORMAL,   /* the client closed its side, or quit */
	KV_CLOSE_IDLE,	   /* idle_timeout */
	KV_CLOSE_SHUTDOWN, /* its shutdown command */
};

struct conn;

/* Is anyone watching these kinds? (One atomic load.) */
int kv_watch_wanted(unsigned kinds);

/*
 * "watch [kinds...]" on c: "OK" and c becomes a watcher; or an error reply
 * (memcached's words) and c stays as it was.
 */
void kv_watch_command(struct conn *c, const struct kv_span *t, int n);

/* Events. status: found, not_found, flushed, expired (get); stored, ... (store). */
void kv_watch_get(const char *key, size_t nkey, const char *status, unsigned cls, int cfd,
		  uint32_t nbytes);
void kv_watch_store(const char *key, size_t nkey, const char *status, const char *cmd, int64_t ttl,
		    unsigned cls, int cfd, uint32_t nbytes);
/* The item_store line of a store's outcome r (memcached's words for r and mode); cfd -1: the
   fd kv_watch_conn named on this thread. */
void kv_watch_store_result(const char *key, size_t nkey, enum kv_result r, enum kv_store_mode mode,
			   uint32_t exptime, uint32_t now, unsigned cls, int cfd, uint32_t nbytes);
/* The store's eviction hook (kv_store_set_evict_hook). */
void kv_watch_eviction(void *ctx, const struct kv_item *it, uint32_t now);
/* The store's fetch hook (kv_store_set_fetch_hook): an item_get line, as memcached logs one
   for every lookup, with the fd kv_watch_conn named on this thread. */
void kv_watch_fetch(void *ctx, const char *key, size_t nkey, enum kv_get_status status,
		    unsigned cls, uint32_t nbytes);
/* The connection whose commands this thread runs now (its fd, for item_get lines). */
void kv_watch_conn(int fd);

/* watch connevents: a conn_new line for c, or a conn_close line with c->close_reason. */
void kv_watch_conn_new(const struct conn *c);
void kv_watch_conn_close(const struct conn *c);
/* The watcher's worker: move its waiting lines into c's output (while it has room). */
void kv_watch_pull(struct conn *c);
/* Does c's watcher have lines (or a "skipped=" count) not yet moved into its output? */
int kv_watch_waiting(struct conn *c);
/* A watcher's connection closes. */
void kv_watch_forget(struct conn *c);
/* A thread that logged events ends: its line buffer goes. */
void kv_watch_thread_exit(void);
/* "stats": log_worker_dropped ... log_watchers. */
void kv_watch_stats(struct kv_buf *b);

#endif
