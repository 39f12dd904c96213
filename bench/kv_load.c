/*
 * locus-kv-load: a load generator for memcached's text protocol, over TCP or
 * TLS, for comparing servers with TLS on (memcaslap, the usual one, has no
 * TLS). Connections are spread over threads; each thread serves its own with
 * epoll, one request in flight per connection (as memcaslap's default), each
 * request a get or a set of a key drawn uniformly from --keys. Before the
 * timed run every key is stored once, so gets hit. One JSON line on stdout
 * reports the run; a one-line summary goes to stderr.
 *
 * Exit status: 0 a clean run; 1 the run saw errors (an unexpected reply, a
 * connection closed or silent); 2 no connection or no TLS session could be
 * set up; 64 a refused command line.
 */
#define _GNU_SOURCE
#include <errno.h>
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
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "common/parse.h"

#define EXIT_ERRORS  1
#define EXIT_SETUP   2
#define EXIT_USAGE   64
#define IO_TIMEOUT_S 5 /* connect, handshake, and a reply after the end of the run */
#define MAX_VALUE    (1u << 20)

struct opts {
	char host[256];
	char port[16];
	uint32_t conns, threads, sets_pct, key_size, value_size, duration;
	uint64_t keys;
	int tls, prefill, prefill_only;
	const char *ca;
};

enum phase { PREFILL, TIMED };
enum op { OP_GET, OP_SET };
enum state { SENDING, READING, IDLE };

struct conn {
	int fd;
	SSL *ssl;
	enum state state;
	enum op op;
	uint32_t events; /* what epoll waits for on fd */
	char *out;
	size_t out_len, out_off;
	char *in;
	size_t in_len, in_cap;
};

struct counts {
	uint64_t gets, sets, hits, misses, errors;
};

struct worker {
	pthread_t tid;
	struct conn *conns;
	uint32_t nconns;
	int ep;
	uint64_t rng;
	struct counts n;
	uint64_t prefilled; /* keys stored before the run */
	char error[160];    /* the first error this thread saw */
};

static struct opts o;
static const char *value;     /* value_size bytes */
static uint64_t prefill_next; /* the next key to store before the run */
static int stopping;	      /* the timed run is over: finish, start nothing */
static pthread_barrier_t phase_barrier;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: locus-kv-load [OPTIONS]\n"
		"\n"
		"Runs a get/set mix of memcached's text protocol against a server and reports\n"
		"operations per second: one JSON line on stdout, a summary on stderr.\n"
		"\n"
		"  -s, --server HOST:PORT  the server ([v6]:PORT for IPv6; default "
		"127.0.0.1:11211)\n"
		"  -c, --connections N     connections, spread over the threads (default 64)\n"
		"  -T, --threads N         client threads, each serving its connections\n"
		"                          (default 2; at most one per connection)\n"
		"  -r, --sets PCT          percent of requests that are sets, the rest gets "
		"(default 10)\n"
		"  -k, --keys N            how many distinct keys, drawn uniformly (default "
		"10000)\n"
		"      --key-size N        key length in bytes (default 64)\n"
		"      --value-size N      value length in bytes, up to 1048576 (default 1024)\n"
		"  -t, --duration S        seconds of the timed run (default 10)\n"
		"      --tls               talk TLS; the server's certificate is not verified\n"
		"      --ca FILE           with --tls: verify the server's certificate chain "
		"against\n"
		"                          the CA certificates (PEM) in FILE (the name is not "
		"checked)\n"
		"      --no-prefill        skip storing every key once before the timed run\n"
		"      --prefill-only      store every key once and stop (no timed run)\n"
		"  -h, --help              this text\n"
		"\n"
		"One request is in flight per connection. ops counts the replies received during\n"
		"the timed run; ops_per_s is ops over its duration. Exit status: 0 a clean run,\n"
		"1 errors during the run (unexpected replies, connections closed or silent for\n"
		"%d s), 2 no connection or TLS session could be set up, 64 a refused command "
		"line.\n",
		IO_TIMEOUT_S);
}

static void refuse(const char *fmt, ...)
{
	va_list ap;
	fputs("locus-kv-load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (locus-kv-load --help)\n", stderr);
	exit(EXIT_USAGE);
}

static uint32_t num32(const char *name, const char *s, uint32_t min, uint32_t max)
{
	uint32_t v;
	if (parse_num_u32(s, min, max, &v) != 0)
		refuse("%s wants a whole number from %" PRIu32 " to %" PRIu32 ", not '%s'", name,
		       min, max, s);
	return v;
}

static void parse_server(const char *s)
{
	const char *colon;
	size_t hlen;
	if (s[0] == '[') {
		const char *end = strchr(s, ']');
		if (!end || end[1] != ':')
			refuse("--server wants [V6ADDR]:PORT, not '%s'", s);
		colon = end + 1;
		s++;
		hlen = (size_t)(end - s);
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			refuse("--server wants HOST:PORT, not '%s'", s);
		hlen = (size_t)(colon - s);
	}
	if (hlen == 0 || hlen >= sizeof(o.host))
		refuse("--server: no host or a host too long in '%s'", s);
	memcpy(o.host, s, hlen);
	o.host[hlen] = 0;
	uint32_t port = num32("--server's port", colon + 1, 1, 65535);
	snprintf(o.port, sizeof(o.port), "%" PRIu32, port);
}

static void parse_opts(int argc, char **argv)
{
	enum { KEY_SIZE = 256, VALUE_SIZE, TLS, CA, NO_PREFILL, PREFILL_ONLY };
	static const struct option longs[] = {
		{"server", required_argument, 0, 's'},
		{"connections", required_argument, 0, 'c'},
		{"threads", required_argument, 0, 'T'},
		{"sets", required_argument, 0, 'r'},
		{"keys", required_argument, 0, 'k'},
		{"key-size", required_argument, 0, KEY_SIZE},
		{"value-size", required_argument, 0, VALUE_SIZE},
		{"duration", required_argument, 0, 't'},
		{"tls", no_argument, 0, TLS},
		{"ca", required_argument, 0, CA},
		{"no-prefill", no_argument, 0, NO_PREFILL},
		{"prefill-only", no_argument, 0, PREFILL_ONLY},
		{"help", no_argument, 0, 'h'},
		{0, 0, 0, 0},
	};
	o = (struct opts){.conns = 64,
			  .threads = 2,
			  .sets_pct = 10,
			  .key_size = 64,
			  .value_size = 1024,
			  .duration = 10,
			  .keys = 10000,
			  .prefill = 1};
	parse_server("127.0.0.1:11211");
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:c:T:r:k:t:h", longs, NULL)) != -1) {
		switch (c) {
		case 's':
			parse_server(optarg);
			break;
		case 'c':
			o.conns = num32("--connections", optarg, 1, 65536);
			break;
		case 'T':
			o.threads = num32("--threads", optarg, 1, 1024);
			break;
		case 'r':
			o.sets_pct = num32("--sets", optarg, 0, 100);
			break;
		case 'k':
			if (parse_num_u64(optarg, 1, UINT64_C(1) << 40, &o.keys) != 0)
				refuse("--keys wants a whole number from 1 to 2^40, not '%s'",
				       optarg);
			break;
		case KEY_SIZE:
			o.key_size = num32("--key-size", optarg, 4, 250);
			break;
		case VALUE_SIZE:
			o.value_size = num32("--value-size", optarg, 1, MAX_VALUE);
			break;
		case 't':
			o.duration = num32("--duration", optarg, 1, 86400);
			break;
		case TLS:
			o.tls = 1;
			break;
		case CA:
			o.ca = optarg;
			break;
		case NO_PREFILL:
			o.prefill = 0;
			break;
		case PREFILL_ONLY:
			o.prefill_only = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			refuse("%s needs a value", argv[optind - 1]);
			break;
		default:
			refuse("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		refuse("unexpected argument '%s'", argv[optind]);
	if (o.ca && !o.tls)
		refuse("--ca needs --tls");
	if (o.prefill_only && !o.prefill)
		refuse("--prefill-only and --no-prefill contradict each other");
	char digits[24];
	int nd = snprintf(digits, sizeof(digits), "%" PRIu64, o.keys - 1);
	if ((uint32_t)nd + 2 > o.key_size)
		refuse("--key-size %" PRIu32 " is too short for %" PRIu64 " keys (needs %d)",
		       o.key_size, o.keys, nd + 2);
	if (o.threads > o.conns)
		o.threads = o.conns;
}

/* ---------- connections ---------- */

static void ssl_reason(char *buf, size_t n)
{
	unsigned long e = ERR_get_error();
	if (e)
		ERR_error_string_n(e, buf, n);
	else
		snprintf(buf, n, "%s", errno ? strerror(errno) : "the connection closed");
	ERR_clear_error();
}

/* A connected socket, or -1 with the reason printed. Blocking, with timeouts,
   until the run starts. */
static int dial(const struct addrinfo *ai)
{
	char why[256] = "no address";
	for (; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			snprintf(why, sizeof(why), "%s", strerror(errno));
			continue;
		}
		struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			return fd;
		snprintf(why, sizeof(why), "%s", strerror(errno));
		close(fd);
	}
	fprintf(stderr, "locus-kv-load: cannot connect to %s:%s: %s\n", o.host, o.port, why);
	return -1;
}

static int conn_open(struct conn *c, const struct addrinfo *ai, SSL_CTX *ctx)
{
	c->fd = dial(ai);
	if (c->fd < 0)
		return -1;
	if (ctx) {
		c->ssl = SSL_new(ctx);
		if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) {
			fprintf(stderr, "locus-kv-load: cannot make a TLS session\n");
			return -1;
		}
		errno = 0;
		if (SSL_connect(c->ssl) != 1) {
			char why[256];
			long v = SSL_get_verify_result(c->ssl);
			if (v != X509_V_OK)
				snprintf(why, sizeof(why), "%s", X509_verify_cert_error_string(v));
			else
				ssl_reason(why, sizeof(why));
			fprintf(stderr, "locus-kv-load: TLS handshake with %s:%s failed: %s\n",
				o.host, o.port, why);
			return -1;
		}
	}
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	c->out = malloc(o.key_size + o.value_size + 64);
	c->in_cap = o.key_size + o.value_size + 128;
	c->in = malloc(c->in_cap);
	if (!c->out || !c->in) {
		fprintf(stderr, "locus-kv-load: out of memory\n");
		return -1;
	}
	c->state = IDLE;
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->out);
	free(c->in);
}

/* Bytes moved (> 0), 0 if the socket would block (*want: what to wait for),
   -1 if the connection failed or closed. */
static ssize_t io(struct conn *c, int writing, void *buf, size_t n, uint32_t *want)
{
	if (c->ssl) {
		int r = writing ? SSL_write(c->ssl, buf, (int)n) : SSL_read(c->ssl, buf, (int)n);
		if (r > 0)
			return r;
		int e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			*want = e == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT;
			return 0;
		}
		return -1;
	}
	ssize_t r = writing ? send(c->fd, buf, n, MSG_NOSIGNAL) : recv(c->fd, buf, n, 0);
	if (r > 0)
		return r;
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		*want = writing ? EPOLLOUT : EPOLLIN;
		return 0;
	}
	return -1;
}

static void watch(struct worker *w, struct conn *c, uint32_t events)
{
	if (c->events == events)
		return;
	struct epoll_event ev = {.events = events, .data.ptr = c};
	epoll_ctl(w->ep, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
	c->events = events;
}

/* ---------- requests and replies ---------- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* The next request on c, or 0 if there is none to make (prefill done). */
static int next_request(struct worker *w, struct conn *c, enum phase ph)
{
	uint64_t key;
	if (ph == PREFILL) {
		key = faa_relaxed(&prefill_next, 1);
		if (key >= o.keys)
			return 0;
		c->op = OP_SET;
	} else {
		uint64_t r = rng_next(&w->rng);
		key = (r >> 16) % o.keys;
		c->op = (r & 0xffff) * 100 < (uint64_t)o.sets_pct << 16 ? OP_SET : OP_GET;
	}
	int n;
	if (c->op == OP_SET)
		n = sprintf(c->out, "set kv%0*" PRIu64 " 0 0 %" PRIu32 "\r\n", (int)o.key_size - 2,
			    key, o.value_size);
	else
		n = sprintf(c->out, "get kv%0*" PRIu64 "\r\n", (int)o.key_size - 2, key);
	size_t len = (size_t)n;
	if (c->op == OP_SET) {
		memcpy(c->out + len, value, o.value_size);
		len += o.value_size;
		memcpy(c->out + len, "\r\n", 2);
		len += 2;
	}
	c->out_len = len;
	c->out_off = 0;
	c->in_len = 0;
	c->state = SENDING;
	return 1;
}

static void note_error(struct worker *w, const char *fmt, ...)
{
	w->n.errors++;
	if (w->error[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->error, sizeof(w->error), fmt, ap);
	va_end(ap);
}

/* The first line of the reply, printable, for an error message. */
static const char *first_line(const struct conn *c, char *buf, size_t n)
{
	size_t i = 0;
	for (; i + 1 < n && i < c->in_len && c->in[i] != '\r' && c->in[i] != '\n'; i++)
		buf[i] = (c->in[i] >= 32 && c->in[i] < 127) ? c->in[i] : '?';
	buf[i] = 0;
	return buf;
}

/* 1: c->in holds a whole reply (counted if the timed run is on); 0: more is to
   come; -1: a reply that cannot be read on (the connection is out of step). */
static int reply_done(struct worker *w, struct conn *c, enum phase ph)
{
	int counted = ph == TIMED && !ld_relaxed(&stopping);
	const char *eol = memmem(c->in, c->in_len, "\r\n", 2);
	if (!eol)
		return c->in_len > 1024 && c->in_len >= c->in_cap - 1 ? -1 : 0;
	size_t line = (size_t)(eol - c->in) + 2;
	char buf[96];
	if (c->op == OP_SET) {
		if (line == 8 && memcmp(c->in, "STORED\r\n", 8) == 0) {
			if (counted)
				w->n.sets++;
			else if (ph == PREFILL)
				w->prefilled++;
		} else {
			note_error(w, "set answered '%s'", first_line(c, buf, sizeof(buf)));
		}
		return line == c->in_len ? 1 : -1;
	}
	if (line == 5 && memcmp(c->in, "END\r\n", 5) == 0) {
		if (counted)
			w->n.gets++, w->n.misses++;
		return line == c->in_len ? 1 : -1;
	}
	if (line < 6 || memcmp(c->in, "VALUE ", 6) != 0) {
		note_error(w, "get answered '%s'", first_line(c, buf, sizeof(buf)));
		return line == c->in_len ? 1 : -1;
	}
	/* VALUE <key> <flags> <bytes>\r\n<data>\r\nEND\r\n */
	const char *sp = memrchr(c->in, ' ', line);
	uint64_t bytes;
	char num[24];
	size_t nlen = line - 2 - (size_t)(sp - c->in) - 1;
	if (nlen == 0 || nlen >= sizeof(num))
		return -1;
	memcpy(num, sp + 1, nlen);
	num[nlen] = 0;
	if (parse_num_u64(num, 0, MAX_VALUE * 64ull, &bytes) != 0)
		return -1;
	size_t total = line + bytes + 2 + 5;
	if (total > c->in_cap) {
		char *in = realloc(c->in, total);
		if (!in)
			return -1;
		c->in = in;
		c->in_cap = total;
	}
	if (c->in_len < total)
		return 0;
	if (c->in_len > total || memcmp(c->in + line + bytes, "\r\nEND\r\n", 7) != 0)
		return -1;
	if (counted) {
		w->n.gets++, w->n.hits++;
		if (bytes != o.value_size)
			note_error(w, "a value of %" PRIu64 " bytes, not %" PRIu32, bytes,
				   o.value_size);
	}
	return 1;
}

/* Moves c on as far as its socket lets it; -1 if the connection failed. */
static int progress(struct worker *w, struct conn *c, enum phase ph)
{
	for (;;) {
		uint32_t want = 0;
		if (c->state == SENDING) {
			ssize_t r = io(c, 1, c->out + c->out_off, c->out_len - c->out_off, &want);
			if (r < 0)
				return -1;
			if (r == 0) {
				watch(w, c, want);
				return 0;
			}
			c->out_off += (size_t)r;
			if (c->out_off < c->out_len)
				continue;
			c->state = READING;
			watch(w, c, EPOLLIN);
			return 0; /* the reply takes a round trip: wait for it */
		}
		if (c->state != READING)
			return 0;
		ssize_t r = io(c, 0, c->in + c->in_len, c->in_cap - c->in_len, &want);
		if (r < 0)
			return -1;
		if (r == 0) {
			watch(w, c, want);
			return 0;
		}
		c->in_len += (size_t)r;
		int done = reply_done(w, c, ph);
		if (done < 0) {
			char buf[96];
			note_error(w, "a reply out of step: '%s'", first_line(c, buf, sizeof(buf)));
			return -1;
		}
		if (done == 0)
			continue;
		if ((ph == TIMED && ld_acquire(&stopping)) || !next_request(w, c, ph)) {
			c->state = IDLE;
			return 0;
		}
	}
}

/* Runs a phase on w's connections until each is idle: the prefill's keys are
   all stored, or the timed run has stopped and every reply is in. */
static void run_phase(struct worker *w, enum phase ph)
{
	uint32_t busy = 0;
	for (uint32_t i = 0; i < w->nconns; i++) {
		struct conn *c = &w->conns[i];
		if (c->fd < 0 || !next_request(w, c, ph))
			continue;
		busy++;
		if (progress(w, c, ph) < 0) {
			note_error(w, "connection %u failed", i);
			conn_close(c);
		}
	}
	uint64_t quiet_since = mono_ns();
	struct epoll_event evs[64];
	for (;;) {
		busy = 0;
		for (uint32_t i = 0; i < w->nconns; i++)
			busy += w->conns[i].fd >= 0 && w->conns[i].state != IDLE;
		if (!busy)
			return;
		int n = epoll_wait(w->ep, evs, 64, 100);
		if (n > 0)
			quiet_since = mono_ns();
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c->fd < 0)
				continue;
			if (progress(w, c, ph) < 0) {
				note_error(w, "a connection %s",
					   c->ssl ? "failed (TLS) or closed" : "failed or closed");
				conn_close(c);
			}
		}
		if (n <= 0 && mono_ns() - quiet_since > (uint64_t)IO_TIMEOUT_S * NS_PER_S &&
		    (ph == PREFILL || ld_acquire(&stopping))) {
			note_error(w, "%u connection(s) got no reply for %d s", busy, IO_TIMEOUT_S);
			return;
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	if (o.prefill)
		run_phase(w, PREFILL);
	pthread_barrier_wait(&phase_barrier); /* every key stored */
	if (!o.prefill_only) {
		pthread_barrier_wait(&phase_barrier); /* the clock has started */
		run_phase(w, TIMED);
	}
	return NULL;
}

/* ---------- main ---------- */

static SSL_CTX *tls_context(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return NULL;
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (o.ca) {
		if (SSL_CTX_load_verify_locations(ctx, o.ca, NULL) != 1) {
			char why[256];
			ssl_reason(why, sizeof(why));
			fprintf(stderr,
				"locus-kv-load: cannot load the CA certificates in %s: %s\n", o.ca,
				why);
			SSL_CTX_free(ctx);
			return NULL;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	} else {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	}
	return ctx;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

int main(int argc, char **argv)
{
	parse_opts(argc, argv);
	signal(SIGPIPE, SIG_IGN);

	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
	int gai = getaddrinfo(o.host, o.port, &hints, &ai);
	if (gai != 0) {
		fprintf(stderr, "locus-kv-load: cannot resolve %s: %s\n", o.host,
			gai_strerror(gai));
		return EXIT_SETUP;
	}
	SSL_CTX *ctx = NULL;
	if (o.tls && !(ctx = tls_context())) {
		freeaddrinfo(ai);
		return EXIT_SETUP;
	}
	char *val = malloc(o.value_size);
	struct worker *ws = calloc(o.threads, sizeof(*ws));
	struct conn *conns = calloc(o.conns, sizeof(*conns));
	if (!val || !ws || !conns) {
		fprintf(stderr, "locus-kv-load: out of memory\n");
		return EXIT_SETUP;
	}
	for (uint32_t i = 0; i < o.value_size; i++)
		val[i] = (char)('a' + i % 26);
	value = val;

	int status = 0;
	uint32_t opened = 0;
	for (; opened < o.conns; opened++) {
		conns[opened].fd = -1;
		if (conn_open(&conns[opened], ai, ctx) < 0) {
			status = EXIT_SETUP;
			opened++;
			break;
		}
	}
	freeaddrinfo(ai);
	if (status) {
		for (uint32_t i = 0; i < opened; i++)
			conn_close(&conns[i]);
		SSL_CTX_free(ctx);
		free(conns);
		free(ws);
		free(val);
		return status;
	}

	/* Connection i belongs to thread i % threads: contiguous slices. */
	for (uint32_t t = 0, first = 0; t < o.threads; t++) {
		struct worker *w = &ws[t];
		w->nconns = o.conns / o.threads + (t < o.conns % o.threads);
		w->conns = &conns[first];
		first += w->nconns;
		w->rng = (0x9e3779b97f4a7c15ull * (t + 1) ^ (uint64_t)getpid()) | 1;
		w->ep = epoll_create1(EPOLL_CLOEXEC);
	}
	pthread_barrier_init(&phase_barrier, NULL, o.threads + 1);
	for (uint32_t t = 0; t < o.threads; t++)
		pthread_create(&ws[t].tid, NULL, worker_main, &ws[t]);
	pthread_barrier_wait(&phase_barrier);
	double seconds = 0, cpu0 = cpu_s();
	if (!o.prefill_only) {
		uint64_t t0 = mono_ns();
		pthread_barrier_wait(&phase_barrier);
		struct timespec d = {.tv_sec = o.duration};
		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
		st_release(&stopping, 1);
		seconds = ns_to_s(mono_ns() - t0);
	}
	for (uint32_t t = 0; t < o.threads; t++)
		pthread_join(ws[t].tid, NULL);
	double cpu = cpu_s() - cpu0;

	struct counts sum = {0};
	uint64_t stored = 0;
	const char *error = NULL;
	for (uint32_t t = 0; t < o.threads; t++) {
		sum.gets += ws[t].n.gets;
		sum.sets += ws[t].n.sets;
		sum.hits += ws[t].n.hits;
		sum.misses += ws[t].n.misses;
		sum.errors += ws[t].n.errors;
		stored += ws[t].prefilled;
		if (!error && ws[t].error[0])
			error = ws[t].error;
		close(ws[t].ep);
	}
	uint64_t ops = sum.gets + sum.sets;
	int v6 = strchr(o.host, ':') != NULL;
	printf("{\"server\": \"%s%s%s:%s\", \"tls\": %s, \"verify\": %s, \"threads\": %" PRIu32
	       ", \"connections\": %" PRIu32 ", \"sets_pct\": %" PRIu32 ", \"keys\": %" PRIu64
	       ", \"key_size\": %" PRIu32 ", \"value_size\": %" PRIu32 ", \"prefilled\": %" PRIu64
	       ", \"seconds\": %.3f, \"ops\": %" PRIu64 ", \"ops_per_s\": %.0f, \"gets\": %" PRIu64
	       ", \"sets\": %" PRIu64 ", \"get_hits\": %" PRIu64 ", \"get_misses\": %" PRIu64
	       ", \"errors\": %" PRIu64 ", \"client_cpu_s\": %.3f}\n",
	       v6 ? "[" : "", o.host, v6 ? "]" : "", o.port, o.tls ? "true" : "false",
	       o.ca ? "true" : "false", o.threads, o.conns, o.sets_pct, o.keys, o.key_size,
	       o.value_size, stored, seconds, ops, seconds > 0 ? (double)ops / seconds : 0.0,
	       sum.gets, sum.sets, sum.hits, sum.misses, sum.errors, cpu);
	fflush(stdout);
	if (o.prefill_only)
		fprintf(stderr, "locus-kv-load: stored %" PRIu64 " keys%s\n", stored,
			o.tls ? " over TLS" : "");
	else
		fprintf(stderr,
			"locus-kv-load: %.0f ops/s (%" PRIu64 " ops in %.2f s, %" PRIu32
			" %% sets, %" PRIu32 " connections over %" PRIu32 " threads%s)\n",
			seconds > 0 ? (double)ops / seconds : 0.0, ops, seconds, o.sets_pct,
			o.conns, o.threads, o.tls ? ", TLS" : "");
	if (sum.errors)
		fprintf(stderr, "locus-kv-load: %" PRIu64 " error(s); the first: %s\n", sum.errors,
			error ? error : "?");
	for (uint32_t i = 0; i < o.conns; i++)
		if (conns[i].fd >= 0)
			conn_close(&conns[i]);
	SSL_CTX_free(ctx);
	free(conns);
	free(ws);
	free(val);
	return sum.errors ? EXIT_ERRORS : 0;
}
