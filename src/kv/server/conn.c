/*
 * locus-kv: one TCP or Unix-socket connection, owned by its worker thread.
 *
 * A connection reads into its input buffer, runs every complete command in
 * it, appends the replies to its output buffer, and writes what the socket
 * takes; when the output backs up past OUT_HIGH it stops running commands
 * (and reading) until the client has read its replies, so a client that
 * never reads cannot make the server buffer without bound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server/auth.h"
#include "kv/server/sasl.h"
#include "kv/server/server.h"
#include "kv/server/tls.h"

/* ---------- output ---------- */

void kv_reply(struct conn *c, const char *s)
{
	if (c->noreply)
		return;
	size_t n = strlen(s);
	if (kv_buf_reserve(&c->out, n + 2) != 0) {
		c->close_now = 1;
		return;
	}
	kv_buf_add(&c->out, s, n);
	kv_buf_add(&c->out, "\r\n", 2);
}

void kv_replyf(struct conn *c, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	kv_reply(c, line);
}

size_t kv_out_pending(const struct conn *c)
{
	return c->out.len - c->out_pos + c->out_held;
}

/* ---------- connections ---------- */

static void conn_event(evutil_socket_t fd, short what, void *arg);

static void conn_watch(struct conn *c, short events)
{
	if (c->events == events)
		return;
	event_del(c->ev);
	event_assign(c->ev, c->w->base, c->fd, events | EV_PERSIST, conn_event, c);
	if (events)
		event_add(c->ev, NULL);
	c->events = events;
}

void kv_conn_close(struct conn *c)
{
	struct worker *w = c->w;
	/* Off the list first: "stats conns" in another worker must not see a closed fd. */
	pthread_mutex_lock(&w->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&w->lock);
	kv_watch_forget(c);
	kv_watch_conn_close(c);
	event_del(c->ev);
	event_free(c->ev);
	if (c->ssl)
		kv_tls_close(c);
	if (c->sasl)
		kv_sasl_close(c);
	close(c->fd);
	if (c->item)
		kv_item_release(kv_srv.st, c->item);
	kv_meta_set_clear(&c->ms);
	kv_resp_clear(c);
	kv_rbuf_release(c, 1);
	kv_buf_free(&c->out);
	kv_logv(2, "<%d connection closed.", c->fd);
	free(c);
	w->cnt.curr_connections--;
	fas_seqcst(&kv_srv.curr_conns, 1);
	faa_seqcst(&kv_srv.closed_conns, 1);
}

struct conn *kv_conn_new(struct worker *w, int fd, int tls)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->w = w;
	c->needs_auth = kv_srv.set.auth_file != NULL;
	c->binary = kv_srv.set.protocol == KV_PROTO_BINARY;
	c->negotiating = kv_srv.set.protocol == KV_PROTO_AUTO;
	c->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, conn_event, c);
	if (!c->ev || (tls && kv_tls_open(c) != 0)) {
		if (c->ev)
			event_free(c->ev);
		free(c);
		return NULL;
	}
	c->events = EV_READ;
	event_add(c->ev, NULL);
	kv_conn_addresses(c);
	st_relaxed(&c->last_cmd, kv_now(kv_srv.st));
	pthread_mutex_lock(&w->lock);
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	pthread_mutex_unlock(&w->lock);
	w->cnt.curr_connections++;
	w->cnt.total_connections++;
	kv_watch_conn_new(c);
	return c;
}

/*
 * Run what the input holds. Returns when it needs more input, the output
 * has backed up, or the connection is to close.
 */
void kv_conn_process(struct conn *c)
{
	kv_watch_conn(c->fd); /* the fd of watch fetchers' lines (kv_watch_fetch) */
	/* UDP replies go out as datagrams after the whole request: nothing backs up. */
	while (!c->closing && !c->close_now && !c->dumping && !c->watcher &&
	       (c->udp || kv_out_pending(c) < OUT_HIGH)) {
		if (c->get_paused) {
			kv_get_resume(c);
			continue;
		}
		size_t avail = c->in.len - c->in_pos;
		if (c->state == CONN_DATA || c->state == CONN_SWALLOW) {
			uint64_t take = c->need - c->got;
			if (take > avail)
				take = avail;
			if (c->state == CONN_DATA && take)
				kv_item_write(c->item, c->got, c->in.p + c->in_pos, take);
			c->got += take;
			c->in_pos += take;
			c->w->cnt.bytes_read += take;
			if (c->got < c->need)
				break;
			if (c->state == CONN_DATA) {
				kv_data_done(c);
			} else {
				c->state = CONN_LINE;
				if (c->after_swallow)
					kv_reply(c, c->after_swallow);
				c->noreply = 0;
			}
			if (c->udp)
				kv_dgram_mark(c, c->quiet);
			continue;
		}
		if (!avail)
			break; /* (and the read buffer may be back in the pool) */
		if (!c->udp && c->budget-- <= 0) {
			c->yielded = 1; /* -R: the others' turn; conn_service comes back */
			break;
		}
		if (c->needs_auth) {
			if (!kv_auth_step(c))
				break;
			continue;
		}
		if (c->binary) {
			if (!kv_bin_step(c))
				break;
			if (c->udp && c->state == CONN_LINE)
				kv_dgram_mark(c, 0); /* each request's response its own message */
			continue;
		}
		char *start = c->in.p + c->in_pos;
		char *nl = avail ? memchr(start, '\n', avail) : NULL;
		if (!nl) {
			int is_get = kv_line_is_get_prefix(start, avail);
			if (kv_line_too_long(avail, is_get) || avail > GET_LINE_MAX) {
				kv_logv(1, "<%d line too long, closing", c->fd);
				c->close_now = 1;
			}
			break;
		}
		size_t len = (size_t)(nl - start);
		c->in_pos += len + 1;
		c->w->cnt.bytes_read += len + 1;
		if (len && start[len - 1] == '\r')
			len--;
		kv_logv(2, "<%d %.*s", c->fd, (int)(len > 200 ? 200 : len), start);
		if (kv_resp_start(c) != 0) {
			/* As memcached: no room for a reply, the connection closes. */
			kv_logv(1, "<%d out of memory for a response, closing", c->fd);
			c->close_now = 1;
			break;
		}
		kv_execute(c, start, len);
		if (c->udp && c->state == CONN_LINE)
			kv_dgram_mark(c, c->quiet);
	}
	/* Keep the unread tail at the front of the buffer (not under a paused get's line). */
	if (c->get_paused) {
		return;
	} else if (c->in_pos == c->in.len) {
		c->in.len = c->in_pos = 0;
	} else if (c->in_pos > c->in.cap / 2) {
		memmove(c->in.p, c->in.p + c->in_pos, c->in.len - c->in_pos);
		c->in.len -= c->in_pos;
		c->in_pos = 0;
	}
}

/* The socket's bytes, or TLS's plaintext: > 0 bytes, 0 none yet, -1 closed or failed. */
static ssize_t conn_recv(struct conn *c, char *buf, size_t n)
{
	if (c->ssl)
		return kv_tls_read(c, buf, n);
	ssize_t got = recv(c->fd, buf, n, 0);
	if (got > 0)
		return got;
	return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
}

static ssize_t conn_send(struct conn *c, const char *buf, size_t n)
{
	if (c->ssl)
		return kv_tls_write(c, buf, n);
	for (;;) {
		ssize_t sent = send(c->fd, buf, n, MSG_NOSIGNAL);
		if (sent > 0)
			return sent;
		if (sent < 0 && errno == EINTR)
			continue;
		return sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
	}
}

/* The output and the held values as far as the socket takes them: > 0 bytes, 0 none, -1 dead. */
static ssize_t conn_sendv(struct conn *c)
{
	struct iovec iov[16];
	int n = kv_out_iov(c, iov, 16);
	if (c->ssl)
		return kv_tls_writev(c, iov, n, &c->w->tls_gather);
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
	for (;;) {
		ssize_t sent = sendmsg(c->fd, &m, MSG_NOSIGNAL);
		if (sent > 0)
			return sent;
		if (sent < 0 && errno == EINTR)
			continue;
		return sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
	}
}

/* Write what the socket takes. -1 on a dead connection. */
static int conn_write(struct conn *c)
{
	while (kv_out_pending(c)) {
		ssize_t n = c->out_held ? conn_sendv(c)
					: conn_send(c, c->out.p + c->out_pos, kv_out_pending(c));
		if (n == 0)
			return 0;
		if (n < 0)
			return -1;
		c->w->cnt.bytes_written += (uint64_t)n;
		kv_out_consumed(c, (size_t)n);
	}
	kv_resp_sent(c);
	c->out.len = c->out_pos = 0;
	if (c->out.cap > 2 * OUT_HIGH) {
		/* Do not keep a large reply's buffer for the rest of the connection. */
		kv_buf_free(&c->out);
	}
	return 0;
}

/* Read, run, write; then choose what to wait for. */
/* Does the input hold something kv_conn_process() could run now? */
static int input_runnable(const struct conn *c)
{
	if (c->get_paused)
		return 1;
	size_t avail = c->in.len - c->in_pos;
	if (avail == 0)
		return 0;
	if (c->state != CONN_LINE)
		return 1;
	if (c->binary)
		return kv_bin_runnable(c);
	if (c->auth_need)
		return kv_auth_data_ready(c);
	return memchr(c->in.p + c->in_pos, '\n', avail) != NULL;
}

/*
 * Read (once), run, write; repeat while commands that waited for the output
 * to drain can run; then choose what to wait for. A peer that closed its
 * side still gets the replies to everything it sent.
 */
static void conn_service(struct conn *c, int readable)
{
	c->budget = kv_srv.set.reqs_per_event;
	c->yielded = 0;
	for (;;) {
		if (readable && !c->peer_eof && !c->get_paused && !c->dumping &&
		    kv_out_pending(c) < OUT_HIGH) {
			if (kv_rbuf_ready(c) != 0) {
				kv_logv(1, "<%d no read buffer, closing", c->fd);
				c->close_now = 1;
			} else {
				ssize_t n =
					conn_recv(c, c->in.p + c->in.len, c->in.cap - c->in.len);
				if (n > 0) {
					c->in.len += (size_t)n;
					if (c->negotiating)
						kv_bin_negotiate(c);
				} else if (n < 0) {
					c->peer_eof = 1;
					c->close_reason = KV_CLOSE_NORMAL;
				}
			}
		}
		readable = 0;
		if (c->watcher) {
			c->in.len = c->in_pos =
				0; /* a watcher's commands get no reply, as memcached's */
			kv_watch_pull(c);
		} else if (c->dumping) {
			if (kv_out_pending(c) < OUT_HIGH)
				c->dumping = kv_metadump_continue(c);
		} else {
			kv_conn_process(c);
		}
		kv_counts_flush(kv_srv.st, &c->w->cnt);
		if (c->close_now || conn_write(c) != 0) {
			kv_conn_close(c);
			return;
		}
		if (!c->closing && !c->yielded && !c->watcher && kv_out_pending(c) < OUT_HIGH &&
		    (c->dumping || input_runnable(c)))
			continue;
		/*
		 * A watcher whose lines waited for its output to drain: the write just
		 * made room, so move them now. No later wake-up is due for them (one
		 * comes only with a new line), and the "skipped=" count waits with them.
		 */
		if (c->watcher && !c->closing && kv_out_pending(c) < OUT_HIGH &&
		    kv_watch_waiting(c))
			continue;
		int more = c->yielded && !c->closing && input_runnable(c);
		kv_rbuf_release(c, 0); /* nothing left in it: back to the pool meanwhile */
		if ((c->peer_eof || c->closing) && !kv_out_pending(c) && !more && !c->dumping) {
			kv_conn_close(c);
			return;
		}
		/*
		 * -R's turn given up with commands left: as memcached, wait for the socket to
		 * be writable, which it is at once, so that the worker polls first and its
		 * other connections, new ones too, go before the rest (an event made active
		 * here would run again before the worker polls, and a surge of pipelining
		 * clients would keep a new one waiting for seconds).
		 */
		int yield = more && kv_out_pending(c) < OUT_HIGH;
		short want = 0;
		if (kv_out_pending(c) || yield)
			want |= EV_WRITE;
		if (!c->closing && !c->peer_eof && !c->get_paused && !c->dumping &&
		    kv_out_pending(c) < OUT_HIGH)
			want |= EV_READ;
		want |= c->tls_want;
		conn_watch(c, want);
		st_relaxed(&c->activity, c->watcher		    ? ACT_WATCH
					 : kv_out_pending(c)	    ? ACT_WRITE
					 : c->state == CONN_DATA    ? ACT_NREAD
					 : c->state == CONN_SWALLOW ? ACT_SWALLOW
					 : c->ran_cmd		    ? ACT_READ
								    : ACT_NEW);
		if (yield) {
			c->w->cnt.conn_yields++;
		} else if (c->ssl && (want & EV_READ) && kv_tls_pending(c)) {
			/* TLS has read more than it handed out: the socket will not say so. */
			event_active(c->ev, EV_READ, 0);
		}
		return;
	}
}

void kv_conn_kick(struct conn *c)
{
	conn_service(c, 0);
}

/* A TLS session may need to read whatever the socket became ready for (tls.h). */
static void conn_event(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	conn_service(c, (what & EV_READ) != 0 || c->ssl);
}

/*
 * As memcached's idle timeout: a connection waiting for its next command
 * (nothing half read, nothing unwritten) longer than idle_timeout seconds
 * since its last command, or its accept, is closed and counted.
 */
void kv_conn_close_idle(struct worker *w)
{
	uint32_t now = kv_now(kv_srv.st);
	int limit = kv_srv.set.idle_timeout;
	struct conn *c = w->conns, *next;
	for (; c; c = next) {
		next = c->next;
		if (c->state != CONN_LINE || c->get_paused || c->dumping || c->watcher ||
		    kv_out_pending(c) || c->in.len > c->in_pos)
			continue;
		if ((int64_t)now - (int64_t)ld_relaxed(&c->last_cmd) > limit) {
			kv_logv(2, "Closing idle fd %d", c->fd);
			w->cnt.idle_kicks++;
			/* Counted where stats reads it before the client can see the close. */
			kv_counts_flush(kv_srv.st, &w->cnt);
			c->close_reason = KV_CLOSE_IDLE;
			kv_conn_close(c);
		}
	}
	kv_counts_flush(kv_srv.st, &w->cnt);
}
