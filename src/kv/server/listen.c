/*
 * locus-kv's listening sockets: TCP (-p, -l), a Unix socket (-s, -a) and UDP
 * (-U), bound before the server drops privileges and forks; the main thread
 * accepts TCP and Unix connections and hands them to the workers in turn.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/atomic.h"
#include "common/clock.h"
#include "kv/server/server.h"

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
	evtimer_add(kv_srv.accept_retry, &t);
}

static void accept_pause(int err)
{
	if (!ld_relaxed(&kv_srv.accepting))
		return;
	for (int i = 0; i < kv_srv.nlisten; i++)
		event_del(kv_srv.lev[i]);
	st_seqcst(&kv_srv.accepting, 0);
	kv_srv.paused_at_ns = clock_ns(CLOCK_MONOTONIC);
	kv_srv.paused_closed = ld_seqcst(&kv_srv.closed_conns);
	faa_seqcst(&kv_srv.listen_disabled_num, 1);
	kv_logv(0, "locus-kv: accept: %s; not accepting new connections until one closes",
		strerror(err));
	accept_retry_later();
}

static void on_accept_retry(evutil_socket_t fd, short what, void *arg)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), waited = now - kv_srv.paused_at_ns;
	if (ld_seqcst(&kv_srv.closed_conns) == kv_srv.paused_closed &&
	    waited < ACCEPT_RETRY_MAX_MS * 1000000ull) {
		accept_retry_later();
		return;
	}
	faa_seqcst(&kv_srv.listen_disabled_us, waited / 1000);
	for (int i = 0; i < kv_srv.nlisten; i++)
		event_add(kv_srv.lev[i], NULL);
	st_seqcst(&kv_srv.accepting, 1);
	kv_logv(1, "locus-kv: accepting new connections again");
}

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
	struct kv_handoff h = {.tls = (int)(intptr_t)arg};
	for (int k = 0; k < 64; k++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				accept_pause(errno);
			return;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (ld_seqcst(&kv_srv.curr_conns) >= kv_srv.set.maxconns) {
			static const char msg[] = "ERROR Too many open connections\r\n";
			ssize_t r = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL);
			(void)r;
			close(fd);
			faa_seqcst(&kv_srv.rejected_conns, 1);
			continue;
		}
		faa_seqcst(&kv_srv.curr_conns, 1);
		faa_seqcst(&kv_srv.total_conns, 1);
		struct worker *w = &kv_srv.workers[kv_srv.next_worker];
		kv_srv.next_worker = (kv_srv.next_worker + 1) % kv_srv.set.threads;
		h.fd = fd;
		if (write(w->notify[1], &h, sizeof(h)) != sizeof(h)) {
			close(fd);
			fas_seqcst(&kv_srv.curr_conns, 1);
		}
	}
}

static void add_fd(int **fds, int *n, int fd)
{
	int *p = realloc(*fds, sizeof(int) * (size_t)(*n + 1));
	if (!p)
		kv_die("out of memory");
	*fds = p;
	(*fds)[(*n)++] = fd;
}

/* A UDP socket's send buffer as large as the system lets it be: a reply may be many datagrams. */
static void grow_sndbuf(int fd)
{
	for (int size = 256 << 20; size >= 64 << 10; size /= 2)
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)) == 0)
			return;
}

/* A listening socket, and whether its connections speak TLS. */
static void add_listener(int fd, int tls)
{
	unsigned char *t = realloc(kv_srv.ltls, (size_t)kv_srv.nlisten + 1);
	if (!t)
		kv_die("out of memory");
	kv_srv.ltls = t;
	t[kv_srv.nlisten] = (unsigned char)tls;
	add_fd(&kv_srv.lfds, &kv_srv.nlisten, fd);
}

/*
 * Bind every address of host (NULL: all) at port: listening TCP (with TLS if
 * tls), or UDP (type SOCK_DGRAM).
 */
static int bind_on(const char *host, int port, int type, int tls, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = type,
				 .ai_flags = AI_PASSIVE | AI_ADDRCONFIG};
	struct addrinfo *res;
	char portstr[16];
	const char *what = type == SOCK_DGRAM ? "UDP" : "TCP";
	snprintf(portstr, sizeof(portstr), "%d", port < 0 ? 0 : port); /* -1: the kernel picks */
	int e = getaddrinfo(host, portstr, &hints, &res);
	if (e) {
		snprintf(err, errlen, "cannot resolve '%s': %s", host ? host : "*",
			 gai_strerror(e));
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
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) { /* listen(): kv_listen_start */
			snprintf(err, errlen, "cannot listen on %s %s port %d: %s",
				 host ? host : "*", what, port, strerror(errno));
			close(fd);
			continue;
		}
		if (type == SOCK_DGRAM) {
			grow_sndbuf(fd);
			add_fd(&kv_srv.ufds, &kv_srv.nudp, fd);
		} else {
			add_listener(fd, tls);
		}
		made++;
	}
	freeaddrinfo(res);
	return made ? 0 : -1;
}

/* TCP at port (unless 0) and, with -U, UDP at its port, on host's addresses. */
static int listen_on(const char *host, int port, int tls, char *err, size_t errlen)
{
	if (port && bind_on(host, port, SOCK_STREAM, tls, err, errlen) != 0)
		return -1;
	if (kv_srv.set.udp_port &&
	    bind_on(host, kv_srv.set.udp_port, SOCK_DGRAM, 0, err, errlen) != 0)
		return -1;
	return 0;
}

/*
 * One -l entry: "host", "host:port", "[v6addr]" or "[v6addr]:port" (a bare
 * IPv6 address has several colons and no port), as memcached reads it; with
 * -Z, "notls:" before it makes a listener without TLS.
 */
static int listen_entry(char *entry, char *err, size_t errlen)
{
	int port = kv_srv.set.port, tls = kv_srv.set.tls.enabled;
	if (strncmp(entry, "notls:", 6) == 0) {
		if (!tls) {
			snprintf(err, errlen,
				 "-l %s: 'notls' option is valid only when SSL is enabled", entry);
			return -1;
		}
		tls = 0;
		entry += 6;
	}
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
			snprintf(err, errlen, "-l %s]%s: expected ':port' after ']'", entry,
				 close + 1);
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
	return listen_on(host, port, tls, err, errlen);
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
	if (rc != 0) { /* listen(): kv_listen_start */
		snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	add_listener(fd, 0);
	return 0;
}

/* The port file's lines for the sockets fds: "TCP INET: 11211", "UDP INET6: 40001", ... */
static void port_lines(FILE *f, const int *fds, int n, const char *proto)
{
	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		if (getsockname(fds[i], (struct sockaddr *)&ss, &len) != 0)
			continue;
		if (ss.ss_family == AF_INET)
			fprintf(f, "%s INET: %u\n", proto,
				ntohs(((struct sockaddr_in *)&ss)->sin_port));
		else if (ss.ss_family == AF_INET6)
			fprintf(f, "%s INET6: %u\n", proto,
				ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
	}
}

/*
 * MEMCACHED_PORT_FILENAME, as memcached writes it: a line per bound socket,
 * the TCP ones first, so that whoever started the server on port -1 (any
 * free port) learns which ports it got. Written as <name>.lck, then renamed,
 * so that a reader never sees half of it; left in place at exit.
 */
static void write_port_file(void)
{
	const char *path = getenv("MEMCACHED_PORT_FILENAME");
	if (!path || !*path || kv_srv.set.unix_path)
		return;
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.lck", path) >= sizeof(tmp)) {
		fprintf(stderr, "Failed to open \"%s.lck\": the name is too long\n", path);
		return;
	}
	FILE *f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "Failed to open \"%s\": %s\n", tmp, strerror(errno));
		return;
	}
	port_lines(f, kv_srv.lfds, kv_srv.nlisten, "TCP");
	port_lines(f, kv_srv.ufds, kv_srv.nudp, "UDP");
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		fprintf(stderr, "Failed to write \"%s\": %s\n", path, strerror(errno));
}

void kv_listen_open(void)
{
	char err[512];
	if (kv_srv.set.unix_path) {
		if (listen_unix(kv_srv.set.unix_path, kv_srv.set.unix_mask, err, sizeof(err)) != 0)
			kv_die("%s", err);
	} else if (kv_srv.set.listen) {
		char *list = strdup(kv_srv.set.listen), *save = NULL;
		if (!list)
			kv_die("out of memory");
		for (char *h = strtok_r(list, ",", &save); h; h = strtok_r(NULL, ",", &save))
			if (listen_entry(h, err, sizeof(err)) != 0)
				kv_die("%s", err);
		free(list);
	} else if (listen_on(NULL, kv_srv.set.port, kv_srv.set.tls.enabled, err, sizeof(err)) !=
		   0) {
		kv_die("%s", err);
	}
}

/*
 * The sockets listen only now, once the store is open: a start that fails after binding
 * (a memory file that does not fit, ...) never accepted a connection, so whoever waits for
 * the port to answer sees the exit instead (memcached opens its sockets last). The port
 * file follows, as memcached writes it once its sockets listen.
 */
void kv_listen_start(void)
{
	for (int i = 0; i < kv_srv.nlisten; i++)
		if (listen(kv_srv.lfds[i], kv_srv.set.backlog) != 0)
			kv_die("cannot listen: %s", strerror(errno));
	write_port_file();
	kv_srv.lev = calloc((size_t)kv_srv.nlisten, sizeof(*kv_srv.lev));
	if (!kv_srv.lev)
		kv_die("out of memory");
	for (int i = 0; i < kv_srv.nlisten; i++) {
		kv_srv.lev[i] = event_new(kv_srv.base, kv_srv.lfds[i], EV_READ | EV_PERSIST,
					  on_accept, (void *)(intptr_t)kv_srv.ltls[i]);
		event_add(kv_srv.lev[i], NULL);
	}
	st_seqcst(&kv_srv.accepting, 1);
	kv_srv.accept_retry = evtimer_new(kv_srv.base, on_accept_retry, NULL);
}

void kv_listen_stop(void)
{
	for (int i = 0; i < kv_srv.nlisten; i++) {
		event_free(kv_srv.lev[i]);
		close(kv_srv.lfds[i]);
	}
	event_free(kv_srv.accept_retry);
	for (int i = 0; i < kv_srv.nudp; i++)
		close(kv_srv.ufds[i]);
	if (kv_srv.set.unix_path)
		unlink(kv_srv.set.unix_path);
}

void kv_listen_free(void)
{
	free(kv_srv.lev);
	free(kv_srv.lfds);
	free(kv_srv.ltls);
	free(kv_srv.ufds);
	kv_srv.lev = NULL;
	kv_srv.lfds = kv_srv.ufds = NULL;
	kv_srv.ltls = NULL;
	kv_srv.nlisten = kv_srv.nudp = 0;
}
