/* locus-kv's "watch" (watch.h). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <event2/event.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server/server.h"
#include "kv/server/watch.h"

struct watcher {
	struct conn *c;
	unsigned kinds;
	struct kv_buf buf; /* lines not yet moved to c (under the registry's lock) */
	size_t cap;
	uint64_t skipped; /* lines lost since the last "skipped=" */
	int efd;	  /* wakes c's worker */
	struct event *ev;
};

static struct {
	pthread_mutex_t lock;
	struct watcher *w[KV_WATCHERS_MAX];
	int n;
	unsigned kinds;				  /* atomic: what some watcher wants */
	uint64_t gid;				  /* atomic: events logged */
	uint64_t written, dropped, skipped, sent; /* atomic: for stats */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

int kv_watch_wanted(unsigned kinds)
{
	return (ld_relaxed(&reg.kinds) & kinds) != 0;
}

static void recompute_kinds(void)
{
	unsigned k = 0;
	for (int i = 0; i < reg.n; i++)
		k |= reg.w[i]->kinds;
	st_relaxed(&reg.kinds, k);
}

/* The line to every watcher of this kind (under the lock), and their workers woken. */
static void publish(unsigned kind, const struct kv_buf *line)
{
	faa_relaxed(&reg.written, 1);
	pthread_mutex_lock(&reg.lock);
	for (int i = 0; i < reg.n; i++) {
		struct watcher *w = reg.w[i];
		if (!(w->kinds & kind))
			continue;
		if (w->buf.len + line->len > w->cap || kv_buf_add(&w->buf, line->p, line->len)) {
			w->skipped++;
			faa_relaxed(&reg.skipped, 1);
			continue;
		}
		uint64_t one = 1;
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* The counter is full: the worker has a wake-up pending anyway. */
		}
	}
	pthread_mutex_unlock(&reg.lock);
}

static __thread struct kv_buf line_buf;

void kv_watch_thread_exit(void)
{
	kv_buf_free(&line_buf);
}

static struct kv_buf *start_line(const char *type)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	line_buf.len = 0;
	uint64_t gid = faa_relaxed(&reg.gid, 1) + 1;
	kv_buf_addf(&line_buf, "ts=%ld.%ld gid=%" PRIu64 " type=%s key=", (long)tv.tv_sec,
		    (long)tv.tv_usec, gid, type);
	return &line_buf;
}

void kv_watch_get(const char *key, size_t nkey, const char *status, unsigned cls, int cfd,
		  uint32_t nbytes)
{
	if (!kv_watch_wanted(KV_WATCH_FETCHERS))
		return;
	struct kv_buf *b = start_line("item_get");
	kv_buf_add_uri(b, key, nkey);
	kv_buf_addf(b, " status=%s clsid=%u cfd=%d size=%" PRIu32 "\n", status, cls, cfd, nbytes);
	publish(KV_WATCH_FETCHERS, b);
}

static __thread int conn_fd = -1;

/* What watch mutations calls a store's outcome and command, as memcached's logger. */
static const char *store_status(enum kv_result r)
{
	switch (r) {
	case KV_STORED:
		return "stored";
	case KV_EXISTS:
		return "exists";
	case KV_NOT_FOUND:
		return "not_found";
	case KV_TOO_LARGE:
		return "too_large";
	case KV_NO_MEMORY:
		return "no_memory";
	default:
		return "not_stored";
	}
}

static const char *const store_cmd_names[] = {
	[KV_SET] = "set",	[KV_ADD] = "add",	  [KV_REPLACE] = "replace",
	[KV_APPEND] = "append", [KV_PREPEND] = "prepend", [KV_CAS] = "cas",
	[KV_CAS_STALE] = "cas",
};

void kv_watch_store_result(const char *key, size_t nkey, enum kv_result r, enum kv_store_mode mode,
			   uint32_t exptime, uint32_t now, unsigned cls, int cfd, uint32_t nbytes)
{
	if (!kv_watch_wanted(KV_WATCH_MUTATIONS))
		return;
	int64_t ttl = exptime == 0 ? 0 : (int64_t)exptime - (int64_t)now;
	kv_watch_store(key, nkey, store_status(r), store_cmd_names[mode], ttl, cls,
		       cfd < 0 ? conn_fd : cfd, nbytes);
}

void kv_watch_conn(int fd)
{
	conn_fd = fd;
}

void kv_watch_fetch(void *ctx, const char *key, size_t nkey, enum kv_get_status status,
		    unsigned cls, uint32_t nbytes)
{
	static const char *const names[] = {
		[KV_GET_FOUND] = "found",
		[KV_GET_NOT_FOUND] = "not_found",
		[KV_GET_EXPIRED] = "expired",
		[KV_GET_FLUSHED] = "flushed",
	};
	(void)ctx;
	kv_watch_get(key, nkey, names[status], cls, conn_fd, nbytes);
}

void kv_watch_store(const char *key, size_t nkey, const char *status, const char *cmd, int64_t ttl,
		    unsigned cls, int cfd, uint32_t nbytes)
{
	if (!kv_watch_wanted(KV_WATCH_MUTATIONS))
		return;
	struct kv_buf *b = start_line("item_store");
	kv_buf_add_uri(b, key, nkey);
	kv_buf_addf(b, " status=%s cmd=%s ttl=%" PRId64 " clsid=%u cfd=%d size=%" PRIu32 "\n",
		    status, cmd, ttl, cls, cfd, nbytes);
	publish(KV_WATCH_MUTATIONS, b);
}

void kv_watch_eviction(void *ctx, const struct kv_item *it, uint32_t now)
{
	(void)ctx;
	if (!kv_watch_wanted(KV_WATCH_EVICTIONS))
		return;
	uint32_t exp = ld_relaxed(&it->exptime), at = ld_relaxed(&it->atime);
	struct kv_buf *b = start_line("eviction");
	kv_buf_add_uri(b, it->data, it->nkey);
	kv_buf_addf(b, " fetch=%s ttl=%" PRId64 " la=%" PRId64 " clsid=%u size=%" PRIu32 "\n",
		    kv_item_has(it, KV_IT_FETCHED) ? "yes" : "no",
		    exp ? (int64_t)exp - (int64_t)now : -1, (int64_t)now - (int64_t)at, it->cls,
		    it->nbytes);
	publish(KV_WATCH_EVICTIONS, b);
}

/*
 * memcached's connection lines: rip and rport of the peer ("unix" and 0 on a Unix
 * socket), transport local or tcp, and for a close its reason.
 */
static void conn_line(const struct conn *c, const char *type, const char *reason)
{
	static const char *const reasons[] = {[KV_CLOSE_ERROR] = "error",
					      [KV_CLOSE_NORMAL] = "normal",
					      [KV_CLOSE_IDLE] = "idle_timeout",
					      [KV_CLOSE_SHUTDOWN] = "shutdown"};
	char rip[INET6_ADDRSTRLEN] = "unix";
	unsigned port = 0;
	const char *transport = "local";
	if (c->peer.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)&c->peer;
		inet_ntop(AF_INET, &a->sin_addr, rip, sizeof(rip));
		port = ntohs(a->sin_port);
		transport = "tcp";
	} else if (c->peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)&c->peer;
		inet_ntop(AF_INET6, &a->sin6_addr, rip, sizeof(rip));
		port = ntohs(a->sin6_port);
		transport = "tcp";
	}
	struct kv_buf *b = start_line(type);
	b->len -= strlen(" key="); /* start_line ends ready for a key; these lines have none */
	kv_buf_addf(b, " rip=%s rport=%u transport=%s", rip, port, transport);
	if (reason)
		kv_buf_addf(b, " reason=%s", reasons[c->close_reason]);
	kv_buf_addf(b, " cfd=%d\n", c->fd);
	publish(KV_WATCH_CONNEVENTS, b);
}

void kv_watch_conn_new(const struct conn *c)
{
	if (kv_watch_wanted(KV_WATCH_CONNEVENTS))
		conn_line(c, "conn_new", NULL);
}

void kv_watch_conn_close(const struct conn *c)
{
	if (kv_watch_wanted(KV_WATCH_CONNEVENTS))
		conn_line(c, "conn_close", "");
}

void kv_watch_pull(struct conn *c)
{
	struct watcher *w = c->watcher;
	if (!w)
		return;
	pthread_mutex_lock(&reg.lock);
	if (kv_out_pending(c) < OUT_HIGH && (w->buf.len || w->skipped)) {
		int e = 0;
		if (w->skipped) {
			e |= kv_buf_addf(&c->out, "skipped=%" PRIu64 "\n", w->skipped);
			w->skipped = 0;
		}
		e |= kv_buf_add(&c->out, w->buf.p, w->buf.len);
		if (!e)
			faa_relaxed(&reg.sent, w->buf.len ? 1 : 0);
		w->buf.len = 0;
		if (w->buf.cap > w->cap)
			kv_buf_free(&w->buf);
	}
	pthread_mutex_unlock(&reg.lock);
}

int kv_watch_waiting(struct conn *c)
{
	struct watcher *w = c->watcher;
	if (!w)
		return 0;
	pthread_mutex_lock(&reg.lock);
	int waiting = w->buf.len || w->skipped;
	pthread_mutex_unlock(&reg.lock);
	return waiting;
}

static void on_wake(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0) {
		/* Nothing to read: a wake-up already handled. */
	}
	kv_conn_kick(c);
}

static const struct {
	const char *name;
	unsigned kind;
} kind_names[] = {
	{"fetchers", KV_WATCH_FETCHERS},   {"mutations", KV_WATCH_MUTATIONS},
	{"evictions", KV_WATCH_EVICTIONS}, {"rawcmds", KV_WATCH_OTHER},
	{"sysevents", KV_WATCH_OTHER},	   {"connevents", KV_WATCH_CONNEVENTS},
	{"proxyreqs", KV_WATCH_OTHER},	   {"proxyevents", KV_WATCH_OTHER},
	{"proxyuser", KV_WATCH_OTHER},
};

void kv_watch_command(struct conn *c, const struct kv_span *t, int n)
{
	if (kv_srv.set.watch_disabled) {
		kv_reply(c, "CLIENT_ERROR watch commands not allowed");
		return;
	}
	if (kv_out_pending(c) > 0) {
		/* As memcached: replies of earlier commands still wait to go out. */
		kv_reply(c, "ERROR cannot pipeline other commands before watch");
		return;
	}
	unsigned kinds = 0;
	for (int i = 1; i < n; i++) {
		unsigned k = 0;
		for (size_t j = 0; j < sizeof(kind_names) / sizeof(kind_names[0]); j++)
			if (t[i].len == strlen(kind_names[j].name) &&
			    memcmp(t[i].ptr, kind_names[j].name, t[i].len) == 0)
				k = kind_names[j].kind;
		if (!k) {
			kv_reply(c, "ERROR");
			return;
		}
		kinds |= k;
	}
	if (n == 1)
		kinds = KV_WATCH_FETCHERS;
	struct watcher *w = calloc(1, sizeof(*w));
	if (!w) {
		kv_reply(c, "SERVER_ERROR out of memory");
		return;
	}
	w->c = c;
	w->kinds = kinds;
	w->cap = (size_t)kv_srv.set.watcher_buf_kb * 1024;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	w->ev = w->efd >= 0 ? event_new(c->w->base, w->efd, EV_READ | EV_PERSIST, on_wake, c)
			    : NULL;
	if (!w->ev || event_add(w->ev, NULL) != 0) {
		if (w->ev)
			event_free(w->ev);
		if (w->efd >= 0)
			close(w->efd);
		free(w);
		kv_reply(c, "SERVER_ERROR out of memory");
		return;
	}
	pthread_mutex_lock(&reg.lock);
	if (reg.n == KV_WATCHERS_MAX) {
		pthread_mutex_unlock(&reg.lock);
		event_free(w->ev);
		close(w->efd);
		free(w);
		kv_reply(c, "WATCHER_TOO_MANY log watcher limit reached");
		return;
	}
	reg.w[reg.n++] = w;
	recompute_kinds();
	pthread_mutex_unlock(&reg.lock);
	c->watcher = w;
	st_relaxed(&c->activity, ACT_WATCH);
	kv_reply(c, "OK");
}

void kv_watch_forget(struct conn *c)
{
	struct watcher *w = c->watcher;
	if (!w)
		return;
	pthread_mutex_lock(&reg.lock);
	for (int i = 0; i < reg.n; i++)
		if (reg.w[i] == w) {
			reg.w[i] = reg.w[--reg.n];
			break;
		}
	recompute_kinds();
	pthread_mutex_unlock(&reg.lock);
	event_free(w->ev);
	close(w->efd);
	kv_buf_free(&w->buf);
	free(w);
	c->watcher = NULL;
}

void kv_watch_stats(struct kv_buf *b)
{
	pthread_mutex_lock(&reg.lock);
	int n = reg.n;
	pthread_mutex_unlock(&reg.lock);
	kv_buf_addf(b, "STAT log_worker_dropped %" PRIu64 "\r\n", ld_relaxed(&reg.dropped));
	kv_buf_addf(b, "STAT log_worker_written %" PRIu64 "\r\n", ld_relaxed(&reg.written));
	kv_buf_addf(b, "STAT log_watcher_skipped %" PRIu64 "\r\n", ld_relaxed(&reg.skipped));
	kv_buf_addf(b, "STAT log_watcher_sent %" PRIu64 "\r\n", ld_relaxed(&reg.sent));
	kv_buf_addf(b, "STAT log_watchers %d\r\n", n);
}
