/*
 * locus-kv over UDP (-U), as memcached 1.6 speaks it (kv/protocol/udp.h: the framing).
 *
 * Every worker reads every UDP socket (through its own duplicate of it), as
 * memcached's workers do, so datagrams are served in parallel and in no
 * fixed order. A worker's reader is a struct conn that never closes: each
 * datagram's payload becomes its input, the commands in it run as over TCP,
 * and the replies go back to the sender, one message per response — each
 * command's reply, and each key's value of a multi-key get, the last one
 * carrying END. A command left incomplete at the end of the datagram (a line
 * without its newline, a data block cut short) is dropped without a reply:
 * a request is one datagram.
 *
 * Which empty responses are sent follows memcached: a noreply response never
 * is; the first response of a reply, if empty (the leading misses of a
 * multi-key get, "quit"), goes out as a header alone with total 0; any
 * other empty response is dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/protocol/udp.h"
#include "kv/server/server.h"

#define DATAGRAMS_PER_WAKE 16  /* then let the worker's connections have a turn */
#define SEND_WAIT_MS	   100 /* how long a full send buffer may hold up a reply */

static void transmit(struct conn *c);

void kv_dgram_mark(struct conn *c, int quiet)
{
	if (c->nresp == c->resp_cap) {
		size_t cap = c->resp_cap ? 2 * c->resp_cap : 16;
		struct udp_resp *r = realloc(c->resp, cap * sizeof(*r));
		if (!r) {
			c->close_now = 1; /* stop this datagram's commands; its replies are lost */
			return;
		}
		c->resp = r;
		c->resp_cap = cap;
	}
	c->resp[c->nresp++] = (struct udp_resp){.end = c->out.len, .quiet = quiet};
	/* A long reply (a multi-key get of large values) goes out as it is made, not held. */
	if (c->out.len >= OUT_HIGH) {
		kv_counts_flush(kv_srv.st, &c->w->cnt);
		transmit(c);
	}
}

/* One datagram to the sender; waits a little for room, else it is lost (UDP may lose it). */
static void send_datagram(struct conn *c, const uint8_t *d, size_t n)
{
	for (;;) {
		ssize_t r = sendto(c->fd, d, n, MSG_DONTWAIT | MSG_NOSIGNAL,
				   (const struct sockaddr *)&c->from, c->fromlen);
		if (r >= 0) {
			c->w->cnt.bytes_written += (uint64_t)r;
			return;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return;
		struct pollfd p = {.fd = c->fd, .events = POLLOUT};
		if (poll(&p, 1, SEND_WAIT_MS) <= 0)
			return;
	}
}

/* Send every marked response of the output, as memcached does; then forget them. */
static void transmit(struct conn *c)
{
	uint8_t d[KV_UDP_DATAGRAM_MAX];
	size_t start = 0;
	int first = !c->udp_sent;
	for (size_t i = 0; i < c->nresp; i++) {
		size_t end = c->resp[i].end, len = end - start;
		const char *r = c->out.p + start;
		start = end;
		if (c->resp[i].quiet)
			continue;
		if (len == 0) {
			if (first)
				send_datagram(c, d, kv_udp_frame(c->udp_id, NULL, 0, 0, d));
			first = 0;
			continue;
		}
		first = 0;
		size_t n = kv_udp_datagrams(len);
		for (size_t k = 0; k < n; k++)
			send_datagram(c, d, kv_udp_frame(c->udp_id, r, len, k, d));
	}
	c->udp_sent |= !first;
	c->nresp = 0;
	c->out.len = c->out_pos = 0;
	if (c->out.cap > 2 * OUT_HIGH)
		kv_buf_free(&c->out);
}

/* What the datagram's commands left half done is dropped. */
static void drop_incomplete(struct conn *c)
{
	if (c->item) {
		kv_item_release(kv_srv.st, c->item);
		c->item = NULL;
	}
	kv_meta_set_clear(&c->ms);
	c->state = CONN_LINE;
	c->get_paused = 0;
	c->closing = c->close_now = 0;
	c->noreply = c->quiet = 0;
}

static void serve(struct conn *c, size_t n)
{
	struct kv_udp_header h;
	const char *payload;
	size_t len;
	if (kv_udp_parse(c->in.p, n, &h, &payload, &len) != 0) {
		c->w->cnt.bytes_read += n;
		return;
	}
	c->udp_id = h.id;
	c->udp_sent = 0;
	/* As memcached, whatever -B says: a datagram is binary if its payload starts so. */
	c->binary = (uint8_t)payload[0] == KV_BIN_REQ;
	memmove(c->in.p, payload, len);
	c->in.len = len;
	c->in_pos = 0;
	kv_conn_process(c);
	/* process() counted what it consumed; memcached counts the whole datagram. */
	c->w->cnt.bytes_read += KV_UDP_HEADER + (c->in.len - c->in_pos);
	if (c->out.len > (c->nresp ? c->resp[c->nresp - 1].end : 0))
		kv_dgram_mark(c, c->quiet); /* a reply cut off by an error: sent as it is */
	/* Counted before the reply leaves, as over TCP: a client that has its reply sees it in
	   stats, whichever worker answers the next request. */
	kv_counts_flush(kv_srv.st, &c->w->cnt);
	transmit(c);
	drop_incomplete(c);
	c->in.len = c->in_pos = 0;
}

static void on_datagram(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	for (int k = 0; k < DATAGRAMS_PER_WAKE; k++) {
		c->fromlen = sizeof(c->from);
		ssize_t n = recvfrom(c->fd, c->in.p, c->in.cap, 0, (struct sockaddr *)&c->from,
				     &c->fromlen);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break; /* EAGAIN: nothing more for now */
		}
		serve(c, (size_t)n);
	}
	kv_counts_flush(kv_srv.st, &c->w->cnt);
}

static void reader_free(struct conn *c)
{
	if (c->ev) {
		event_del(c->ev);
		event_free(c->ev);
	}
	if (c->fd >= 0)
		close(c->fd);
	drop_incomplete(c);
	kv_buf_free(&c->in);
	kv_buf_free(&c->out);
	free(c->resp);
	free(c);
}

int kv_dgram_start(struct worker *w)
{
	if (kv_srv.nudp == 0)
		return 0;
	w->udp = calloc((size_t)kv_srv.nudp, sizeof(*w->udp));
	if (!w->udp)
		return -1;
	for (int i = 0; i < kv_srv.nudp; i++) {
		struct conn *c = calloc(1, sizeof(*c));
		if (!c)
			return -1;
		w->udp[w->nudp++] = c;
		c->w = w;
		c->udp = 1;
		c->fd = fcntl(kv_srv.ufds[i], F_DUPFD_CLOEXEC, 0);
		if (c->fd < 0 || kv_buf_reserve(&c->in, KV_UDP_REQUEST_MAX) != 0)
			return -1;
		c->ev = event_new(w->base, c->fd, EV_READ | EV_PERSIST, on_datagram, c);
		if (!c->ev || event_add(c->ev, NULL) != 0)
			return -1;
		/* memcached counts each worker's UDP reader as a connection. */
		faa_seqcst(&kv_srv.curr_conns, 1);
		faa_seqcst(&kv_srv.total_conns, 1);
	}
	return 0;
}

void kv_dgram_stop(struct worker *w)
{
	for (int i = 0; i < w->nudp; i++) {
		reader_free(w->udp[i]);
		fas_seqcst(&kv_srv.curr_conns, 1);
	}
	free(w->udp);
	w->udp = NULL;
	w->nudp = 0;
}
