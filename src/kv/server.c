/*
 * locus-kv: a memcached-compatible server whose critical sections run through
 * locus executors chosen with --sync.
 *
 * Threads (as memcached): the main thread runs the listener, the once-a-second
 * clock and the expiry crawler, and the signal handling; -t worker threads
 * each run an event loop (libevent) over the connections handed to them.
 * A worker owns its connections outright; everything shared lives in the
 * store (store.h), behind the store's sections.
 *
 * A connection reads into its input buffer, runs every complete command in
 * it, appends the replies to its output buffer, and writes what the socket
 * takes; when the output backs up past OUT_HIGH it stops running commands
 * (and reading) until the client has read its replies, so a client that
 * never reads cannot make the server buffer without bound.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "kv/meta_exec.h"
#include "kv/options.h"
#include "kv/process.h"
#include "locus/cs.h"
#include "kv/proto.h"
#include "kv/server.h"
#include "kv/store.h"

#define READ_CHUNK    16384
#define OUT_HIGH      (64u << 10) /* stop running commands while this much output waits */
#define GET_LINE_MAX  (8u << 20) /* a multi-key get line longer than this closes the connection */
#define CRAWL_SWEEP_S 8		 /* seconds the expiry crawler takes over the whole hash table */


struct worker;

enum conn_state { CONN_LINE, CONN_DATA, CONN_SWALLOW };

struct conn {
	int fd;
	struct worker *w;
	struct event *ev;
	short events; /* what ev waits for now */
	struct kv_buf in;
	size_t in_pos; /* bytes of in already consumed */
	struct kv_buf out;
	size_t out_pos; /* bytes of out already written */
	enum conn_state state;
	/* CONN_DATA: the item being filled; CONN_SWALLOW: bytes to drop, then reply. */
	struct kv_item *item;
	uint64_t need, got;
	enum kv_store_mode mode;
	uint64_t cas;
	int noreply;
	const char *after_swallow; /* the reply once the data is dropped */
	int meta;		   /* data for ms: reply with the meta formatter */
	struct kv_meta_set ms;
	/* A multi-key get paused with its output at OUT_HIGH: its line is still in
	   `in` at get_off (not compacted away meanwhile), get.more its next key. */
	int get_paused;
	size_t get_off, get_len;
	struct kv_cmd get;
	int closing;	 /* close once the output is written */
	int peer_eof;	 /* the client closed its side: run what it sent, reply, close */
	int close_now;	 /* close without writing what is left */
	struct conn *next; /* the worker's list */
	struct conn *prev;
};

struct worker {
	pthread_t thread;
	struct event_base *base;
	int notify[2]; /* the listener writes accepted fds here */
	struct event *notify_ev;
	struct kv_counts cnt;
	struct conn *conns;
	struct kv_buf scratch;
};

struct server {
	struct kv_settings set;
	kv_store *st;
	struct event_base *base;
	int *lfds;
	struct event **lev;
	int nlisten;
	struct worker *workers;
	int next_worker;
	/* These seven: atomic (common/atomic.h). */
	int curr_conns;
	uint64_t total_conns, rejected_conns;
	uint64_t closed_conns;	      /* ever closed: accepting resumes when this moves */
	uint64_t listen_disabled_num; /* times accepting stopped for want of descriptors */
	uint64_t listen_disabled_us;  /* time spent so, up to the last resumption */
	int accepting;		      /* 0 while not accepting (written by main) */
	/* Main thread only: since when not accepting, closed_conns then, the timer. */
	uint64_t paused_at_ns, paused_closed;
	struct event *accept_retry;
	struct kv_counts main_cnt;
	time_t started;
	int stopping;
};

static struct server S;

static void logv(int level, const char *fmt, ...)
{
	if (ld_relaxed(&S.set.verbose) < level)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---------- output ---------- */

static void reply(struct conn *c, const char *s)
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

static void replyf(struct conn *c, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	reply(c, line);
}

static size_t out_pending(const struct conn *c)
{
	return c->out.len - c->out_pos;
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

static void conn_close(struct conn *c)
{
	struct worker *w = c->w;
	event_del(c->ev);
	event_free(c->ev);
	close(c->fd);
	if (c->item)
		kv_item_release(S.st, c->item);
	kv_meta_set_clear(&c->ms);
	kv_buf_free(&c->in);
	kv_buf_free(&c->out);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	logv(2, "<%d connection closed.", c->fd);
	free(c);
	w->cnt.curr_connections--;
	fas_seqcst(&S.curr_conns, 1);
	faa_seqcst(&S.closed_conns, 1);
}

static struct conn *conn_new(struct worker *w, int fd)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fd;
	c->w = w;
	c->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, conn_event, c);
	if (!c->ev) {
		free(c);
		return NULL;
	}
	c->events = EV_READ;
	event_add(c->ev, NULL);
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
	w->cnt.curr_connections++;
	w->cnt.total_connections++;
	return c;
}

/* ---------- commands ---------- */

static const char *result_text(enum kv_result r)
{
	switch (r) {
	case KV_STORED:
		return "STORED";
	case KV_NOT_STORED:
		return "NOT_STORED";
	case KV_EXISTS:
		return "EXISTS";
	case KV_NOT_FOUND:
		return "NOT_FOUND";
	case KV_DELETED:
		return "DELETED";
	case KV_TOUCHED:
		return "TOUCHED";
	case KV_NON_NUMERIC:
		return "CLIENT_ERROR cannot increment or decrement non-numeric value";
	case KV_TOO_LARGE:
		return "SERVER_ERROR object too large for cache";
	case KV_NO_MEMORY:
		return "SERVER_ERROR out of memory storing object";
	case KV_OK:
		return "OK";
	}
	return "SERVER_ERROR internal";
}

static int get_batch(struct conn *c, const struct kv_cmd *cmd)
{
	int with_cas = cmd->cmd == KV_CMD_GETS || cmd->cmd == KV_CMD_GATS;
	int touch = cmd->cmd == KV_CMD_GAT || cmd->cmd == KV_CMD_GATS;
	uint32_t exptime = touch ? kv_exptime(S.st, cmd->exptime) : 0;
	for (unsigned i = 0; i < cmd->nkeys; i++) {
		if (kv_get(S.st, &c->w->cnt, cmd->keys[i].ptr, cmd->keys[i].len, with_cas, touch,
			   exptime, &c->out) < 0) {
			reply(c, "SERVER_ERROR out of memory writing get response");
			return -1;
		}
	}
	return 0;
}

/*
 * A get, gets, gat or gats line, a batch of keys at a time. When the output
 * reaches OUT_HIGH between batches the command pauses (the line stays in the
 * input buffer) and resumes once the client has read enough: so a get of many
 * large values holds at most OUT_HIGH plus one batch of replies, not all of
 * them, as memcached, which sends them from the items themselves.
 */
static void cmd_get(struct conn *c, const char *line, size_t len, struct kv_cmd *cmd)
{
	for (;;) {
		if (get_batch(c, cmd) != 0)
			return;
		if (!cmd->more)
			break;
		if (out_pending(c) >= OUT_HIGH) {
			c->get_paused = 1;
			c->get_off = (size_t)(line - c->in.p);
			c->get_len = len;
			c->get = *cmd;
			return;
		}
		if (kv_parse_more(line, len, cmd) != 0) {
			reply(c, cmd->error);
			return;
		}
	}
	reply(c, "END");
}

static void get_resume(struct conn *c)
{
	const char *line = c->in.p + c->get_off;
	c->get_paused = 0;
	if (kv_parse_more(line, c->get_len, &c->get) != 0) {
		reply(c, c->get.error);
		return;
	}
	cmd_get(c, line, c->get_len, &c->get);
}

static void start_swallow(struct conn *c, uint64_t bytes, const char *then)
{
	c->meta = 0;
	c->state = CONN_SWALLOW;
	c->need = bytes;
	c->got = 0;
	c->after_swallow = then;
}

static void cmd_store(struct conn *c, const struct kv_cmd *cmd)
{
	c->meta = 0;
	static const enum kv_store_mode modes[] = {
		[KV_CMD_SET] = KV_SET,		[KV_CMD_ADD] = KV_ADD,	   [KV_CMD_REPLACE] = KV_REPLACE,
		[KV_CMD_APPEND] = KV_APPEND, [KV_CMD_PREPEND] = KV_PREPEND, [KV_CMD_CAS] = KV_CAS,
	};
	enum kv_result why;
	uint32_t exptime = kv_exptime(S.st, cmd->exptime);
	struct kv_item *it = kv_item_new(S.st, &c->w->cnt, cmd->keys[0].ptr, cmd->keys[0].len,
					 cmd->flags, exptime, cmd->bytes, &why);
	if (!it) {
		/* memcached drops the data, and a failed set also removes the old value. */
		if (cmd->cmd == KV_CMD_SET)
			kv_delete(S.st, &c->w->cnt, cmd->keys[0].ptr, cmd->keys[0].len);
		start_swallow(c, (uint64_t)cmd->bytes + 2, result_text(why));
		c->noreply = cmd->noreply;
		return;
	}
	c->state = CONN_DATA;
	c->item = it;
	c->need = (uint64_t)cmd->bytes + 2;
	c->got = 0;
	c->mode = modes[cmd->cmd];
	c->cas = cmd->cas;
	c->noreply = cmd->noreply;
}

/* The data block of a storage command has arrived in c->item. */
static void data_done(struct conn *c)
{
	struct kv_item *it = c->item;
	c->item = NULL;
	c->state = CONN_LINE;
	char *v = kv_item_value(it);
	if (v[it->nbytes] != '\r' || v[it->nbytes + 1] != '\n') {
		kv_item_release(S.st, it);
		if (c->meta) {
			kv_meta_set_clear(&c->ms);
			c->noreply = 0; /* meta errors are never quiet */
		}
		reply(c, KV_ERR_DATA_CHUNK);
		c->noreply = 0;
		return;
	}
	if (c->meta) {
		kv_meta_store(S.st, &c->w->cnt, &c->ms, it, &c->out);
		return;
	}
	uint64_t cas;
	enum kv_result r = kv_store_item(S.st, &c->w->cnt, it, c->mode, c->cas, &cas);
	reply(c, result_text(r));
	c->noreply = 0;
}

static void cmd_arith(struct conn *c, const struct kv_cmd *cmd)
{
	uint64_t v;
	enum kv_result r = kv_arith(S.st, &c->w->cnt, cmd->keys[0].ptr, cmd->keys[0].len,
				    cmd->cmd == KV_CMD_INCR, cmd->delta, &v, NULL);
	if (r == KV_OK)
		replyf(c, "%" PRIu64, v);
	else
		reply(c, result_text(r));
}

static void cmd_stats(struct conn *c, const struct kv_cmd *cmd)
{
	struct worker *w = c->w;
	kv_counts_flush(S.st, &w->cnt);
	struct kv_buf *b = &w->scratch;
	b->len = 0;
	const struct kv_store_config *cfg = kv_store_config(S.st);
	switch (cmd->stats) {
	case KV_STATS_NONE: {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		struct timeval now;
		gettimeofday(&now, NULL);
		kv_buf_addf(b, "STAT pid %ld\r\n", (long)getpid());
		kv_buf_addf(b, "STAT uptime %u\r\n", kv_now(S.st));
		kv_buf_addf(b, "STAT time %" PRIu64 "\r\n", kv_process_started(S.st) + kv_now(S.st));
		kv_buf_addf(b, "STAT version %s\r\n", LOCUS_KV_VERSION_REPLY);
		kv_buf_addf(b, "STAT libevent %s\r\n", event_get_version());
		kv_buf_addf(b, "STAT pointer_size %d\r\n", (int)(8 * sizeof(void *)));
		kv_buf_addf(b, "STAT rusage_user %ld.%06ld\r\n", (long)ru.ru_utime.tv_sec,
			  (long)ru.ru_utime.tv_usec);
		kv_buf_addf(b, "STAT rusage_system %ld.%06ld\r\n", (long)ru.ru_stime.tv_sec,
			  (long)ru.ru_stime.tv_usec);
		kv_buf_addf(b, "STAT max_connections %d\r\n", S.set.maxconns);
		kv_buf_addf(b, "STAT curr_connections %d\r\n", ld_seqcst(&S.curr_conns));
		kv_buf_addf(b, "STAT total_connections %" PRIu64 "\r\n", ld_seqcst(&S.total_conns));
		kv_buf_addf(b, "STAT rejected_connections %" PRIu64 "\r\n",
			    ld_seqcst(&S.rejected_conns));
		kv_buf_addf(b, "STAT listen_disabled_num %" PRIu64 "\r\n",
			    ld_seqcst(&S.listen_disabled_num));
		kv_buf_addf(b, "STAT time_in_listen_disabled_us %" PRIu64 "\r\n",
			    ld_seqcst(&S.listen_disabled_us));
		kv_buf_addf(b, "STAT accepting_conns %d\r\n", ld_seqcst(&S.accepting));
		kv_buf_addf(b, "STAT threads %d\r\n", S.set.threads);
		if (kv_stats_general(S.st, b, NULL) != 0)
			goto oom;
		break;
	}
	case KV_STATS_SETTINGS:
		kv_buf_addf(b, "STAT maxbytes %zu\r\n", cfg->mem_limit);
		kv_buf_addf(b, "STAT maxconns %d\r\n", S.set.maxconns);
		kv_buf_addf(b, "STAT tcpport %d\r\n", S.set.port);
		kv_buf_addf(b, "STAT udpport 0\r\n");
		kv_buf_addf(b, "STAT inter %s\r\n", S.set.listen ? S.set.listen : "NULL");
		kv_buf_addf(b, "STAT verbosity %d\r\n", ld_relaxed(&S.set.verbose));
		kv_buf_addf(b, "STAT growth_factor %.2f\r\n", cfg->factor);
		kv_buf_addf(b, "STAT chunk_size %u\r\n", cfg->chunk_min);
		kv_buf_addf(b, "STAT num_threads %d\r\n", S.set.threads);
		kv_buf_addf(b, "STAT cas_enabled yes\r\n");
		kv_buf_addf(b, "STAT item_size_max %zu\r\n", cfg->item_size_max);
		kv_buf_addf(b, "STAT evictions on\r\n");
		kv_buf_addf(b, "STAT lru_crawler %s\r\n", cfg->lru_crawler ? "yes" : "no");
		kv_buf_addf(b, "STAT hash_stripes %u\r\n", cfg->stripes);
		for (int s = 0; s < KV_SECTIONS; s++)
			kv_buf_addf(b, "STAT sync_%s %s\r\n", kv_section_names[s],
				  kv_store_sync_spec(S.st, (enum kv_section)s));
		kv_buf_addf(b, "END\r\n");
		break;
	case KV_STATS_ITEMS:
		if (kv_stats_items(S.st, b) != 0)
			goto oom;
		break;
	case KV_STATS_SLABS:
		if (kv_stats_slabs(S.st, b) != 0)
			goto oom;
		break;
	case KV_STATS_SYNC:
		if (kv_stats_sync(S.st, b) != 0)
			goto oom;
		break;
	case KV_STATS_RESET:
		kv_stats_reset(S.st);
		st_seqcst(&S.total_conns, 0);
		st_seqcst(&S.rejected_conns, 0);
		reply(c, "RESET");
		return;
	case KV_STATS_OTHER:
		/* "stats detail", "stats sizes", ...: not kept here. */
		reply(c, "ERROR");
		return;
	}
	if (kv_buf_add(&c->out, b->p, b->len) != 0)
		goto oom;
	return;
oom:
	reply(c, "SERVER_ERROR out of memory writing stats");
}

/* Non-protocol commands for tests, with --debug-commands. 1 if line was one. */
static int debug_command(struct conn *c, const char *line, size_t len)
{
	static const char name[] = "debug_clock_advance ";
	if (len < sizeof(name) - 1 || memcmp(line, name, sizeof(name) - 1) != 0)
		return 0;
	if (!S.set.debug_commands)
		return 0;
	char num[32];
	size_t n = len - (sizeof(name) - 1);
	if (n == 0 || n >= sizeof(num)) {
		reply(c, KV_ERR_FORMAT);
		return 1;
	}
	memcpy(num, line + sizeof(name) - 1, n);
	num[n] = 0;
	char *end;
	errno = 0;
	long long secs = strtoll(num, &end, 10);
	if (errno || *end || secs < 0 || secs > (1ll << 30)) {
		reply(c, KV_ERR_FORMAT);
		return 1;
	}
	kv_clock_advance(S.st, secs);
	reply(c, "OK");
	return 1;
}

static void execute(struct conn *c, const char *line, size_t len)
{
	struct worker *w = c->w;
	c->noreply = 0;
	if (kv_is_meta_line(line, len)) {
		w->cnt.cmd_meta++;
		struct kv_meta_outcome o;
		kv_meta_execute(S.st, &w->cnt, line, len, &c->out, &c->ms, &o);
		if (o.item) {
			c->state = CONN_DATA;
			c->item = o.item;
			c->need = o.data_bytes_to_read;
			c->got = 0;
			c->meta = 1;
		} else if (o.data_bytes_to_read) {
			start_swallow(c, o.data_bytes_to_read, NULL); /* the reply is out already */
		}
		return;
	}
	if (debug_command(c, line, len))
		return;
	struct kv_cmd cmd;
	if (kv_parse(line, len, &cmd) != 0) {
		if (cmd.close) {
			c->close_now = 1;
			return;
		}
		c->noreply = cmd.noreply;
		reply(c, cmd.error);
		c->noreply = 0;
		return;
	}
	c->noreply = cmd.noreply;
	switch (cmd.cmd) {
	case KV_CMD_GET:
	case KV_CMD_GETS:
	case KV_CMD_GAT:
	case KV_CMD_GATS:
		cmd_get(c, line, len, &cmd);
		break;
	case KV_CMD_SET:
	case KV_CMD_ADD:
	case KV_CMD_REPLACE:
	case KV_CMD_APPEND:
	case KV_CMD_PREPEND:
	case KV_CMD_CAS:
		cmd_store(c, &cmd);
		return; /* noreply stays with the data */
	case KV_CMD_DELETE:
		reply(c, result_text(kv_delete(S.st, &w->cnt, cmd.keys[0].ptr, cmd.keys[0].len)));
		break;
	case KV_CMD_INCR:
	case KV_CMD_DECR:
		cmd_arith(c, &cmd);
		break;
	case KV_CMD_TOUCH:
		reply(c, result_text(kv_touch(S.st, &w->cnt, cmd.keys[0].ptr, cmd.keys[0].len,
					      kv_exptime(S.st, cmd.exptime))));
		break;
	case KV_CMD_FLUSH_ALL:
		if (S.set.flush_disabled) {
			reply(c, "CLIENT_ERROR flush_all not allowed");
			break;
		}
		kv_flush(S.st, &w->cnt, cmd.delay);
		reply(c, "OK");
		break;
	case KV_CMD_SHUTDOWN:
		if (!S.set.shutdown_enabled) {
			reply(c, "ERROR: shutdown not enabled");
		} else if (cmd.shutdown < 0) {
			reply(c, "CLIENT_ERROR invalid shutdown mode");
		} else {
			/* As memcached: close this connection and stop as on SIGINT. */
			logv(1, "locus-kv: shutdown command from connection %d", c->fd);
			c->close_now = 1;
			kill(getpid(), SIGINT);
		}
		break;
	case KV_CMD_VERSION:
		reply(c, "VERSION " LOCUS_KV_VERSION_REPLY);
		break;
	case KV_CMD_VERBOSITY:
		st_relaxed(&S.set.verbose, cmd.level > 2 ? 2 : (int)cmd.level);
		reply(c, "OK");
		break;
	case KV_CMD_QUIT:
		c->closing = 1;
		break;
	case KV_CMD_STATS:
		cmd_stats(c, &cmd);
		break;
	case KV_CMD_UNKNOWN:
		reply(c, "ERROR");
		break;
	}
	c->noreply = 0;
}

/*
 * Run what the input holds. Returns when it needs more input, the output
 * has backed up, or the connection is to close.
 */
static void process(struct conn *c)
{
	while (!c->closing && !c->close_now && out_pending(c) < OUT_HIGH) {
		if (c->get_paused) {
			get_resume(c);
			continue;
		}
		size_t avail = c->in.len - c->in_pos;
		if (c->state == CONN_DATA || c->state == CONN_SWALLOW) {
			uint64_t take = c->need - c->got;
			if (take > avail)
				take = avail;
			if (c->state == CONN_DATA)
				memcpy(kv_item_value(c->item) + c->got, c->in.p + c->in_pos, take);
			c->got += take;
			c->in_pos += take;
			c->w->cnt.bytes_read += take;
			if (c->got < c->need)
				break;
			if (c->state == CONN_DATA) {
				data_done(c);
			} else {
				c->state = CONN_LINE;
				if (c->after_swallow)
					reply(c, c->after_swallow);
				c->noreply = 0;
			}
			continue;
		}
		char *start = c->in.p + c->in_pos;
		char *nl = avail ? memchr(start, '\n', avail) : NULL;
		if (!nl) {
			int is_get = kv_line_is_get_prefix(start, avail);
			if (kv_line_too_long(avail, is_get) || avail > GET_LINE_MAX) {
				logv(1, "<%d line too long, closing", c->fd);
				c->close_now = 1;
			}
			break;
		}
		size_t len = (size_t)(nl - start);
		c->in_pos += len + 1;
		c->w->cnt.bytes_read += len + 1;
		if (len && start[len - 1] == '\r')
			len--;
		logv(2, "<%d %.*s", c->fd, (int)(len > 200 ? 200 : len), start);
		execute(c, start, len);
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

/* Write what the socket takes. -1 on a dead connection. */
static int conn_write(struct conn *c)
{
	while (out_pending(c)) {
		ssize_t n = send(c->fd, c->out.p + c->out_pos, out_pending(c), MSG_NOSIGNAL);
		if (n > 0) {
			c->out_pos += (size_t)n;
			c->w->cnt.bytes_written += (uint64_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -1;
	}
	c->out.len = c->out_pos = 0;
	if (c->out.cap > 2 * OUT_HIGH) {
		/* Do not keep a large reply's buffer for the rest of the connection. */
		kv_buf_free(&c->out);
	}
	return 0;
}

/* Read, run, write; then choose what to wait for. */
/* Does the input hold something process() could run now? */
static int input_runnable(const struct conn *c)
{
	if (c->get_paused)
		return 1;
	size_t avail = c->in.len - c->in_pos;
	if (avail == 0)
		return 0;
	if (c->state != CONN_LINE)
		return 1;
	return memchr(c->in.p + c->in_pos, '\n', avail) != NULL;
}

/*
 * Read (once), run, write; repeat while commands that waited for the output
 * to drain can run; then choose what to wait for. A peer that closed its
 * side still gets the replies to everything it sent.
 */
static void conn_service(struct conn *c, int readable)
{
	for (;;) {
		if (readable && !c->peer_eof && !c->get_paused && out_pending(c) < OUT_HIGH) {
			if (kv_buf_reserve(&c->in, READ_CHUNK) != 0) {
				c->close_now = 1;
			} else {
				ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
				if (n > 0)
					c->in.len += (size_t)n;
				else if (n == 0 ||
					 (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
					c->peer_eof = 1;
			}
		}
		readable = 0;
		process(c);
		kv_counts_flush(S.st, &c->w->cnt);
		if (c->close_now || conn_write(c) != 0) {
			conn_close(c);
			return;
		}
		if (!c->closing && out_pending(c) < OUT_HIGH && input_runnable(c))
			continue;
		if ((c->peer_eof || c->closing) && !out_pending(c)) {
			conn_close(c);
			return;
		}
		short want = 0;
		if (out_pending(c))
			want |= EV_WRITE;
		if (!c->closing && !c->peer_eof && !c->get_paused && out_pending(c) < OUT_HIGH)
			want |= EV_READ;
		conn_watch(c, want);
		return;
	}
}

static void conn_event(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	conn_service(c, (what & EV_READ) != 0);
}

/* ---------- workers ---------- */

static void worker_notify(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	int fds[64];
	ssize_t n = read(fd, fds, sizeof(fds));
	if (n <= 0)
		return;
	for (ssize_t i = 0; i < n / (ssize_t)sizeof(int); i++) {
		if (fds[i] < 0) { /* stop */
			event_base_loopbreak(w->base);
			continue;
		}
		if (!conn_new(w, fds[i])) {
			close(fds[i]);
			fas_seqcst(&S.curr_conns, 1);
		}
	}
	kv_counts_flush(S.st, &w->cnt);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	event_base_dispatch(w->base);
	while (w->conns)
		conn_close(w->conns);
	kv_counts_flush(S.st, &w->cnt);
	kv_buf_free(&w->scratch);
	kv_meta_thread_exit();
	return NULL;
}

/* ---------- listener ---------- */

/*
 * Out of descriptors (EMFILE, ENFILE): the pending connection stays in the
 * listen queue, so the listener would wake again at once and spin. Instead
 * stop watching the listening sockets, say so once, count it
 * (listen_disabled_num), and look again every ACCEPT_RETRY_MS: accepting
 * resumes once a connection has closed, or after ACCEPT_RETRY_MAX_MS in any
 * case (the descriptors may have been held by something else). memcached does
 * the same (accept_new_conns).
 */
#define ACCEPT_RETRY_MS	    10
#define ACCEPT_RETRY_MAX_MS 1000

static void accept_retry_later(void)
{
	struct timeval t = {0, ACCEPT_RETRY_MS * 1000};
	evtimer_add(S.accept_retry, &t);
}

static void accept_pause(int err)
{
	if (!ld_relaxed(&S.accepting))
		return;
	for (int i = 0; i < S.nlisten; i++)
		event_del(S.lev[i]);
	st_seqcst(&S.accepting, 0);
	S.paused_at_ns = clock_ns(CLOCK_MONOTONIC);
	S.paused_closed = ld_seqcst(&S.closed_conns);
	faa_seqcst(&S.listen_disabled_num, 1);
	logv(0, "locus-kv: accept: %s; not accepting new connections until one closes",
	     strerror(err));
	accept_retry_later();
}

static void on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), waited = now - S.paused_at_ns;
	if (ld_seqcst(&S.closed_conns) == S.paused_closed &&
	    waited < ACCEPT_RETRY_MAX_MS * 1000000ull) {
		accept_retry_later();
		return;
	}
	faa_seqcst(&S.listen_disabled_us, waited / 1000);
	for (int i = 0; i < S.nlisten; i++)
		event_add(S.lev[i], NULL);
	st_seqcst(&S.accepting, 1);
	logv(1, "locus-kv: accepting new connections again");
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	for (int k = 0; k < 64; k++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				accept_pause(errno);
			return;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (ld_seqcst(&S.curr_conns) >= S.set.maxconns) {
			static const char msg[] = "ERROR Too many open connections\r\n";
			ssize_t r = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL);
			(void)r;
			close(fd);
			faa_seqcst(&S.rejected_conns, 1);
			continue;
		}
		faa_seqcst(&S.curr_conns, 1);
		faa_seqcst(&S.total_conns, 1);
		struct worker *w = &S.workers[S.next_worker];
		S.next_worker = (S.next_worker + 1) % S.set.threads;
		if (write(w->notify[1], &fd, sizeof(fd)) != sizeof(fd)) {
			close(fd);
			fas_seqcst(&S.curr_conns, 1);
		}
	}
}

static void add_listener(int fd)
{
	int *p = realloc(S.lfds, sizeof(int) * (size_t)(S.nlisten + 1));
	if (!p)
		kv_die("out of memory");
	S.lfds = p;
	S.lfds[S.nlisten++] = fd;
}

static int listen_on(const char *host, int port, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_ADDRCONFIG};
	struct addrinfo *res;
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	int e = getaddrinfo(host, portstr, &hints, &res);
	if (e) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host ? host : "*", gai_strerror(e));
		return -1;
	}
	int made = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, S.set.backlog) != 0) {
			snprintf(err, errlen, "cannot listen on %s port %d: %s", host ? host : "*", port,
				 strerror(errno));
			close(fd);
			continue;
		}
		add_listener(fd);
		made++;
	}
	freeaddrinfo(res);
	return made ? 0 : -1;
}

/*
 * One -l entry: "host", "host:port", "[v6addr]" or "[v6addr]:port" (a bare
 * IPv6 address has several colons and no port), as memcached reads it.
 */
static int listen_entry(char *entry, char *err, size_t errlen)
{
	int port = S.set.port;
	char *host = entry, *colon = NULL;
	if (entry[0] == '[') {
		char *close = strchr(entry, ']');
		if (!close) {
			snprintf(err, errlen, "-l %s: no ']' after an IPv6 address", entry);
			return -1;
		}
		*close = '\0';
		host = entry + 1;
		if (close[1] == ':')
			colon = close + 1;
		else if (close[1]) {
			snprintf(err, errlen, "-l %s]%s: expected ':port' after ']'", entry, close + 1);
			return -1;
		}
	} else if ((colon = strchr(entry, ':')) && strchr(colon + 1, ':')) {
		colon = NULL; /* a bare IPv6 address */
	}
	if (colon) {
		*colon = '\0';
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || *end || p < 0 || p > 65535) {
			snprintf(err, errlen, "-l %s:%s: a port is a number from 0 to 65535", host,
				 colon + 1);
			return -1;
		}
		port = (int)p;
	}
	return listen_on(host, port, err, errlen);
}

/* -s: a Unix socket at path with mode `mask`, instead of TCP (as memcached). */
static int listen_unix(const char *path, unsigned mask, char *err, size_t errlen)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "-s %s: a Unix socket path has at most %zu bytes", path,
			 sizeof(sun.sun_path) - 1);
		return -1;
	}
	strcpy(sun.sun_path, path);
	/* memcached removes a socket left by an earlier run; only a socket. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen, "-s %s: exists and is not a socket", path);
			return -1;
		}
		unlink(path);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "-s %s: socket: %s", path, strerror(errno));
		return -1;
	}
	mode_t old = umask((mode_t)(~mask & 0777));
	int rc = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc != 0 || listen(fd, S.set.backlog) != 0) {
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	add_listener(fd);
	return 0;
}

/* ---------- maintenance ---------- */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	kv_clock_tick(S.st);
	/* The crawler sweeps the table every CRAWL_SWEEP_S seconds, a slice per tick. */
	static unsigned next_stripe;
	if (kv_store_config(S.st)->lru_crawler) {
		unsigned n = kv_store_stripes(S.st);
		unsigned slice = (n + CRAWL_SWEEP_S - 1) / CRAWL_SWEEP_S;
		kv_crawl_part(S.st, &S.main_cnt, next_stripe, slice);
		next_stripe = (next_stripe + slice) % n;
	}
	kv_automove_tick(S.st, &S.main_cnt);
	kv_counts_flush(S.st, &S.main_cnt);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	logv(1, "locus-kv: signal %d, stopping", (int)sig);
	S.stopping = 1;
	event_base_loopbreak(S.base);
}

int main(int argc, char **argv)
{
	kv_options_parse(argc, argv, &S.set);
	signal(SIGPIPE, SIG_IGN);
	kv_raise_nofile(S.set.maxconns);
	if (S.set.coredumps)
		kv_enable_coredumps();
	/* As memcached: the user first (so a port below 1024 needs -u root), then the sockets. */
	if (S.set.user)
		kv_become_user(S.set.user);
	char err[512];
	if (S.set.unix_path) {
		if (listen_unix(S.set.unix_path, S.set.unix_mask, err, sizeof(err)) != 0)
			kv_die("%s", err);
	} else if (S.set.listen) {
		char *list = strdup(S.set.listen), *save = NULL;
		if (!list)
			kv_die("out of memory");
		for (char *h = strtok_r(list, ",", &save); h; h = strtok_r(NULL, ",", &save))
			if (listen_entry(h, err, sizeof(err)) != 0)
				kv_die("%s", err);
		free(list);
	} else if (S.set.port == 0) {
		kv_die("-p 0 and no -s: nothing to listen on");
	} else if (listen_on(NULL, S.set.port, err, sizeof(err)) != 0) {
		kv_die("%s", err);
	}
	/* Bound: only now the daemon, so that a socket that cannot be had is said on the
	   terminal and in the exit status (memcached forks first; docs/kv.md). */
	if (S.set.daemonize)
		kv_daemonize(S.set.coredumps, ld_relaxed(&S.set.verbose) > 0);
	if (S.set.pidfile)
		kv_pidfile_write(S.set.pidfile);
	if (S.set.lock_memory)
		kv_lock_memory();
	for (int i = 0; i < S.set.nnotes; i++)
		logv(1, "locus-kv: note: %s", S.set.notes[i]);
	S.st = kv_store_open(&S.set.store, err, sizeof(err));
	if (!S.st)
		kv_die("%s", err);
	S.base = event_base_new();
	if (!S.base)
		kv_die("cannot create an event loop");
	S.lev = calloc((size_t)S.nlisten, sizeof(*S.lev));
	for (int i = 0; i < S.nlisten; i++) {
		S.lev[i] = event_new(S.base, S.lfds[i], EV_READ | EV_PERSIST, on_accept, NULL);
		event_add(S.lev[i], NULL);
	}
	st_seqcst(&S.accepting, 1);
	S.accept_retry = evtimer_new(S.base, on_accept_retry, NULL);
	S.workers = calloc((size_t)S.set.threads, sizeof(*S.workers));
	for (int i = 0; i < S.set.threads; i++) {
		struct worker *w = &S.workers[i];
		w->base = event_base_new();
		if (!w->base || pipe2(w->notify, O_CLOEXEC) != 0)
			kv_die("cannot create worker %d: %s", i, strerror(errno));
		w->notify_ev = event_new(w->base, w->notify[0], EV_READ | EV_PERSIST, worker_notify, w);
		event_add(w->notify_ev, NULL);
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
			kv_die("cannot start worker %d", i);
	}
	struct timeval sec = {1, 0};
	struct event *tick = event_new(S.base, -1, EV_PERSIST, on_tick, NULL);
	event_add(tick, &sec);
	struct event *sigint = evsignal_new(S.base, SIGINT, on_signal, NULL);
	struct event *sigterm = evsignal_new(S.base, SIGTERM, on_signal, NULL);
	event_add(sigint, NULL);
	event_add(sigterm, NULL);
	logv(1, "locus-kv %s: port %d, %d threads, %zu MB, sync hash=%s alloc=%s slabs=%s stats=%s",
	     LOCUS_KV_VERSION, S.set.port, S.set.threads, S.set.store.mem_limit >> 20,
	     kv_store_sync_spec(S.st, KV_SEC_HASH), kv_store_sync_spec(S.st, KV_SEC_ALLOC),
	     kv_store_sync_spec(S.st, KV_SEC_SLABS), kv_store_sync_spec(S.st, KV_SEC_STATS));

	event_base_dispatch(S.base);

	/* Stop: no new connections; workers close theirs and exit. */
	for (int i = 0; i < S.nlisten; i++) {
		event_free(S.lev[i]);
		close(S.lfds[i]);
	}
	for (int i = 0; i < S.set.threads; i++) {
		int stop = -1;
		if (write(S.workers[i].notify[1], &stop, sizeof(stop)) != sizeof(stop))
			event_base_loopbreak(S.workers[i].base);
	}
	for (int i = 0; i < S.set.threads; i++) {
		struct worker *w = &S.workers[i];
		pthread_join(w->thread, NULL);
		event_free(w->notify_ev);
		event_base_free(w->base);
		close(w->notify[0]);
		close(w->notify[1]);
	}
	kv_counts_flush(S.st, &S.main_cnt);
	event_free(S.accept_retry);
	event_free(tick);
	event_free(sigint);
	event_free(sigterm);
	event_base_free(S.base);
	kv_store_close(S.st);
	free(S.workers);
	free(S.lev);
	free(S.lfds);
	kv_pidfile_remove(S.set.pidfile);
	if (S.set.unix_path)
		unlink(S.set.unix_path);
	kv_options_free(&S.set);
	return 0;
}
