/*
 * locus-kv's server: what its files share. The threads, what each owns and
 * the sections they run are written down in docs/kv.md ("Threads").
 *
 *   server.c         main(): options, sockets, workers, the once-a-second tick, stop
 *   listen.c         listening sockets (TCP, Unix, UDP) and accepting connections
 *   conn.c           a connection: reading, running its commands, writing, closing
 *   dgram.c          a worker's UDP reader: a datagram in, one message per reply out
 *   commands.c       the text protocol's commands (meta_exec.c: the meta ones)
 *   stats_command.c  the stats command
 *   admin.c          the administrative commands (watch.c: watch)
 *   options.c        the command line (options_extended.c: -o's names)
 *   process.c        process-wide setup: limits, user, daemon, pid file
 *   binary_exec.c    the binary protocol's commands (kv/protocol/binary.h: its framing)
 *   auth.c           -Y: the authentication file, unauthenticated connections
 *   sasl.c           -S: SASL authentication on the binary protocol
 *   tls.c            -Z: TLS sessions, refresh_certs
 *   pool.c           a worker's 16 KB units: read buffers, response records (read_buf_mem_limit)
 */
#ifndef LOCUS_KV_SERVER_H
#define LOCUS_KV_SERVER_H

#define LOCUS_KV_VERSION "0.1.0"
/*
 * What "version" answers: the memcached release whose text and meta protocol
 * locus-kv follows, then its own version. Clients (libmemcached's among them)
 * read the leading numbers to decide which protocol behaviour to expect.
 */
#define LOCUS_KV_PROTOCOL_VERSION "1.6.18"
#define LOCUS_KV_VERSION_REPLY	  LOCUS_KV_PROTOCOL_VERSION "-locus-kv-" LOCUS_KV_VERSION

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "kv/protocol/binary.h"
#include "kv/protocol/proto.h"
#include "kv/server/meta_exec.h"
#include "kv/server/options.h"
#include "kv/server/watch.h"
#include "kv/store/store.h"

struct event;
struct event_base;
struct ssl_st;

#define READ_CHUNK   16384
#define OUT_HIGH     (64u << 10) /* stop running commands while this much output waits */
#define GET_LINE_MAX (8u << 20)	 /* a multi-key get line longer than this closes the connection */

struct worker;
struct kv_bundle;

/* memcached's READ_BUFFER_SIZE: the unit of a worker's connection memory (pool.c). */
#define KV_UNIT 16384

/*
 * One reply a connection owes: its bytes in the output are [start, end), end
 * KV_RESP_OPEN while it is the last one (what is added goes to it). A get's
 * value is not copied into the output but held (`it`, a reference): its bytes
 * go out from the item, after the output's bytes up to `at`.
 */
#define KV_RESP_OPEN SIZE_MAX
struct kv_resp {
	struct kv_resp *next; /* the connection's next; on its bundle's free list, the next free */
	struct kv_bundle *bundle;
	size_t start, end;
	struct kv_item *it; /* held, its value not yet wholly sent; else NULL */
	size_t at;
};

/* Values this long and longer (with their "\r\n") are sent from the item, not copied. */
#define KV_HOLD_MIN 256

/*
 * A worker's units (pool.c). The figures "stats" reads from other workers are
 * stored atomically; only the worker changes them.
 */
struct kv_pool {
	void *free;		/* free units */
	unsigned limit;		/* units it may have, 0: no limit */
	unsigned total, nfree;	/* units it has; of them free */
	struct kv_bundle *open; /* bundles with a free record */
	uint64_t resp_count;	/* records in use */
	uint64_t resp_bytes;	/* bytes of bundles */
	uint64_t resp_oom;	/* a reply found no record */
	uint64_t rbuf_oom;	/* a read found no buffer */
};

struct kv_pool_figures {
	uint64_t resp_oom, resp_count, resp_bytes, rbuf_count, rbuf_free, rbuf_oom;
};

enum conn_state { CONN_LINE, CONN_DATA, CONN_SWALLOW };

/* UDP: where one response of a datagram ends in the output, and whether it was noreply. */
struct udp_resp {
	size_t end;
	int quiet;
};

struct conn {
	int fd;
	struct worker *w;
	struct event *ev;
	short events;	  /* what ev waits for now */
	struct kv_buf in; /* a unit of its worker's pool while in_unit, else on the heap */
	size_t in_pos;	  /* bytes of in already consumed */
	int in_unit;
	struct kv_buf out;
	size_t out_pos; /* bytes of out already written */
	/* The replies it owes, oldest first (pool.c); the first of the running get's. */
	struct kv_resp *rhead, *rtail, *get_first;
	/* The first of them holding a value to send, what of that value is sent, and the bytes
	   of the held values still to send. */
	struct kv_resp *rsend;
	size_t held_sent;
	size_t out_held;
	enum conn_state state;
	/* CONN_DATA: the item being filled; CONN_SWALLOW: bytes to drop, then reply. */
	struct kv_item *item;
	uint64_t need, got;
	enum kv_store_mode mode;
	uint64_t cas;
	int noreply;
	int quiet; /* the command being run said noreply (UDP: its response is not sent) */
	const char *after_swallow; /* the reply once the data is dropped */
	int meta;		   /* data for ms: reply with the meta formatter */
	struct kv_meta_set ms;
	/* A multi-key get paused with its output at OUT_HIGH: its line is still in
	   `in` at get_off (not compacted away meanwhile), get.more its next key. */
	int get_paused;
	size_t get_off, get_len;
	struct kv_cmd get;
	int closing;   /* close once the output is written */
	int peer_eof;  /* the client closed its side: run what it sent, reply, close */
	int close_now; /* close without writing what is left */
	int budget;    /* commands it may still run before letting others have a turn (-R) */
	int yielded;   /* it stopped for that with commands left to run */
	/* TLS (tls.c): the session, NULL on a plain connection; what its last read or write
	   waits for besides the usual (EV_WRITE: a read; EV_READ: a write); the length a
	   write must be retried with; its handshake is done; the session failed (close
	   without a close_notify). */
	struct ssl_st *ssl;
	short tls_want;
	size_t tls_wlen;
	int tls_ready, tls_failed;
	int tls_starved; /* the last read wanted the socket: what TLS holds is part of a record */
	/* -Y: it has not authenticated yet (auth.c); the data of its "set" still to come,
	   and where in `out` the reply that the next one replaces begins. */
	int needs_auth;
	uint64_t auth_need;
	size_t auth_reply;
	/* The binary protocol (binary_exec.c): the connection speaks it (else text); -B auto: its
	   first byte has yet to say which; the request being served, kept while its value is read
	   or dropped. */
	int binary, negotiating;
	struct kv_bin_header bin;
	/* -S (sasl.c): its SASL session (NULL until its first SASL command); it has authenticated;
	   an exchange has started (a step without one fails). */
	void *sasl;
	int sasl_ok, sasl_started;
	struct conn *next; /* the worker's list (under its lock) */
	struct conn *prev;
	/* For "stats conns" (read by other workers under this worker's lock). */
	char addr[128];	  /* the peer, as memcached prints it (set before it is listed) */
	char listen[128]; /* the socket it came in on (likewise) */
	struct sockaddr_storage peer; /* the peer's address (watch connevents) */
	int close_reason;	      /* enum kv_close_reason: why it closes (watch connevents) */
	uint32_t last_cmd;	 /* server time of its last command, or of its accept (atomic) */
	int ran_cmd;		 /* it has run a command */
	int activity;		 /* what it is doing, enum conn_activity (atomic) */
	struct watcher *watcher; /* "watch": it receives log lines, its input is ignored */
	/* UDP (dgram.c): a worker's reader of the UDP socket; not on the worker's list. */
	int udp;
	uint16_t udp_id;
	int udp_sent; /* this datagram's reply has begun (its first response is out) */
	struct sockaddr_storage from;
	socklen_t fromlen;
	struct udp_resp *resp;
	size_t nresp, resp_cap;
	size_t gets_keys; /* keys of the current get answered so far: each a response */
	/* lru_crawler metadump in progress: the next stripe, and the classes asked for */
	int dumping;
	unsigned dump_stripe;
	uint64_t dump_classes;
};

/* What "stats conns" says a connection is doing (memcached's conn_* states). */
enum conn_activity { ACT_NEW, ACT_READ, ACT_NREAD, ACT_SWALLOW, ACT_WRITE, ACT_WATCH };

/* What the listener hands a worker through its pipe: an accepted socket (-1: stop). */
struct kv_handoff {
	int fd;
	int tls;
};

struct worker {
	int id;
	pthread_t thread;
	struct event_base *base;
	int notify[2]; /* the listener writes accepted fds here */
	struct event *notify_ev;
	struct kv_counts cnt;
	pthread_mutex_t lock; /* the list of conns, for other threads' "stats conns" */
	struct conn *conns;
	struct kv_buf scratch;
	struct kv_buf tls_gather; /* a TLS write's pieces, copied together (tls.c) */
	struct conn **udp;	  /* its reader of each UDP socket (dgram.c) */
	int nudp;
	struct event *idle_ev; /* -o idle_timeout: once a second, close the idle connections */
	struct kv_pool pool;   /* its connections' read buffers and response records */
	struct kv_bumps bumps; /* its gets' LRU moves, batched (store.h) */
	struct event *bump_ev; /* drains them 5 ms after the first */
};

struct kv_server {
	struct kv_settings set;
	kv_store *st;
	struct event_base *base;
	int *lfds;
	unsigned char *ltls; /* lfds[i] speaks TLS */
	struct event **lev;
	int nlisten;
	int *ufds; /* UDP sockets: each worker reads every one (-U) */
	int nudp;
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
	int stopping;
	int graceful; /* SIGUSR1: a memory file's items are kept (main thread only) */
};

extern struct kv_server kv_srv;

/* Print a line on stderr if -v is at least level. */
void kv_logv(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* conn.c */
void kv_reply(struct conn *c, const char *s);
void kv_replyf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t kv_out_pending(const struct conn *c);
struct conn *kv_conn_new(struct worker *w, int fd, int tls);
void kv_conn_close(struct conn *c);
/* Run every complete command the input holds (stops early on output backing up). */
void kv_conn_process(struct conn *c);
/* Write what c has to write, and run what it can run: for events from elsewhere (watch). */
void kv_conn_kick(struct conn *c);
/* -o idle_timeout: close w's connections idle (waiting for a command) that long. */
void kv_conn_close_idle(struct worker *w);

/* commands.c */
void kv_execute(struct conn *c, const char *line, size_t len);
void kv_get_resume(struct conn *c);
void kv_data_done(struct conn *c);
const char *kv_result_text(enum kv_result r);
/* watch mutations' item_store line of a store on c (kv_watch_store_result). A lookup's
   item_get line comes from the store's fetch hook (kv_watch_fetch). */
void kv_watch_stored(struct conn *c, const char *key, size_t nkey, enum kv_result r,
		     enum kv_store_mode mode, unsigned cls, uint32_t exptime, uint32_t nbytes);

/* binary_exec.c: the binary protocol on a connection whose input is binary. */
/* Serve the next request in the input: 1 if it consumed one, 0 if it needs more input (or the
   connection closes). */
int kv_bin_step(struct conn *c);
/* Could kv_bin_step take a step with the input as it is? */
int kv_bin_runnable(const struct conn *c);
/* The value of a set, add, replace, append or prepend has arrived in c->item. */
void kv_bin_data_done(struct conn *c);
/* -B auto: the connection's first byte (there is one) says which protocol it speaks. */
void kv_bin_negotiate(struct conn *c);

/* stats_command.c: the stats command; the texts it is made of, for the binary protocol too. */
void kv_cmd_stats(struct conn *c, const struct kv_cmd *cmd);
void kv_stats_general(struct kv_buf *b);
void kv_stats_settings(struct kv_buf *b);
void kv_stats_sizes_switch(int on, struct kv_buf *b);
void kv_stats_reset_all(void);
/* The peer's and the socket's addresses into c->addr and c->listen. */
void kv_conn_addresses(struct conn *c);

/* admin.c: cache_memlimit, slabs, lru_crawler, watch (1 if line was one of them). */
int kv_admin_command(struct conn *c, const char *line, size_t len);
/* lru_crawler metadump: the dump in progress on c, a piece at a time (1 while more is left). */
int kv_metadump_continue(struct conn *c);

/* listen.c: bind every socket the options ask for (exits with a message if one cannot be
   had), then, once the store is open, listen, write the port file and watch them on the
   main loop; stop closes them (workers may still look at the
   list: "stats conns"), free forgets them once the workers are gone. */
void kv_listen_open(void);
void kv_listen_start(void);
void kv_listen_stop(void);
void kv_listen_free(void);

/* pool.c: a worker's units. limit_bytes: -o read_buf_mem_limit, split between threads. */
void kv_pool_init(struct kv_pool *p, uint64_t limit_bytes, int threads);
void kv_pool_free(struct kv_pool *p);
/* c has a read buffer with room: 0, or -1 (none to be had: read_buf_oom counted). */
int kv_rbuf_ready(struct conn *c);
/* Give c's read buffer back when all it holds is consumed (always: whatever it holds). */
void kv_rbuf_release(struct conn *c, int always);
/* A new reply begins (a command, a get's next key): 0, or -1 (response_obj_oom counted). */
int kv_resp_start(struct conn *c);
/* A get's value held instead of copied: it goes out after the output so far. */
void kv_resp_hold(struct conn *c, struct kv_item *it);
/* The output and held values, as far as `max` pieces, in the order they go out. */
struct iovec;
int kv_out_iov(const struct conn *c, struct iovec *iov, int max);
/* n bytes of those went out: release what was sent, free the records done. */
void kv_out_consumed(struct conn *c, size_t n);
/* The output is written up to out_pos: free the records of what went out. */
void kv_resp_sent(struct conn *c);
void kv_resp_clear(struct conn *c);
/* A get's next key found no record: drop the get's unsent replies, say so. */
void kv_resp_get_oom(struct conn *c);
void kv_pool_figures(struct kv_pool_figures *f);
void kv_pool_reset(void); /* stats reset: the oom counts */

/* dgram.c: the worker's reader of each UDP socket. */
int kv_dgram_start(struct worker *w);
void kv_dgram_stop(struct worker *w);
/* The UDP reply so far ends a response here (a command's, or a get's key's). */
void kv_dgram_mark(struct conn *c, int quiet);

#endif
