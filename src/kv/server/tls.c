/* locus-kv's TLS (tls.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "common/atomic.h"
#include "kv/server/server.h"
#include "kv/server/tls.h"

/* What one write gathers when ssl_wbuf_size is 0 (no bound). */
#define GATHER_ALL (256 * 1024)

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *server_ctx; /* under ctx_lock */
static const struct kv_tls_settings *settings;
static uint64_t handshake_errors; /* atomic */
static uint32_t loaded_at;	  /* atomic: server time of the last load */

/* ssl_min_version and ssl_verify_mode, by their numbers. */
static const int versions[] = {TLS1_VERSION, TLS1_1_VERSION, TLS1_2_VERSION, TLS1_3_VERSION};
static const char *const version_names[] = {"tlsv1.0", "tlsv1.1", "tlsv1.2", "tlsv1.3"};
static const int verify_modes[] = {
	SSL_VERIFY_NONE,
	SSL_VERIFY_PEER,
	SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
	SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT | SSL_VERIFY_CLIENT_ONCE,
};

/*
 * memcached's message for a file that would not load: "<what>: <file> :
 * <the first error OpenSSL queued>", the rest of the queue printed on
 * stderr first.
 */
static void load_error(char *err, size_t errlen, const char *what, const char *file)
{
	char reason[256];
	ERR_error_string_n(ERR_get_error(), reason, sizeof(reason));
	ERR_print_errors_fp(stderr);
	snprintf(err, errlen, "%s: %s : %s", what, file, reason);
}

/* The certificate, its key and the client CAs into ctx: 0, or -1 with the message. */
static int load_files(SSL_CTX *ctx, const struct kv_tls_settings *t, char *err, size_t errlen)
{
	if (!t->chain_cert) {
		snprintf(err, errlen,
			 "Error loading the certificate chain: (null) : -Z needs "
			 "-o ssl_chain_cert=<file>");
		return -1;
	}
	if (SSL_CTX_use_certificate_chain_file(ctx, t->chain_cert) != 1) {
		load_error(err, errlen, "Error loading the certificate chain", t->chain_cert);
		return -1;
	}
	/* As memcached's -h says: without ssl_key, the key is in the chain's file. */
	const char *key = t->key ? t->key : t->chain_cert;
	if (SSL_CTX_use_PrivateKey_file(ctx, key, t->keyformat) != 1) {
		load_error(err, errlen, "Error loading the key", key);
		return -1;
	}
	if (t->ca_cert) {
		if (SSL_CTX_load_verify_locations(ctx, t->ca_cert, NULL) != 1) {
			load_error(err, errlen, "Error loading the CA certificate", t->ca_cert);
			return -1;
		}
		/* The names a client is told its certificate may be signed by. */
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca_cert);
		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
	}
	return 0;
}

/* A server context from the settings: NULL with memcached's message if a step fails. */
static SSL_CTX *build(const struct kv_tls_settings *t, char *err, size_t errlen)
{
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		load_error(err, errlen, "Error creating the TLS context", "TLS_server_method");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, versions[t->min_version]) != 1) {
		load_error(err, errlen, "Error setting the minimum TLS version",
			   version_names[t->min_version]);
		goto fail;
	}
	if (load_files(ctx, t, err, errlen) != 0)
		goto fail;
	if (t->ciphers && SSL_CTX_set_cipher_list(ctx, t->ciphers) != 1) {
		snprintf(err, errlen, "Error setting the provided cipher(s): %s", t->ciphers);
		goto fail;
	}
	SSL_CTX_set_verify(ctx, verify_modes[t->verify_mode], NULL);
	/* Resumed sessions (tickets, and the cache when asked) must belong to this server. */
	static const unsigned char sid[] = "locus-kv";
	SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
	SSL_CTX_set_session_cache_mode(ctx, t->session_cache ? SSL_SESS_CACHE_SERVER
							     : SSL_SESS_CACHE_OFF);
	uint64_t options = SSL_OP_NO_RENEGOTIATION;
#ifdef SSL_OP_ENABLE_KTLS
	if (t->kernel_tls)
		options |= SSL_OP_ENABLE_KTLS;
#endif
	SSL_CTX_set_options(ctx, options);
	/* Replies are written from a buffer that may grow between a write and its retry. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	/* A record in one read(2), not its header and then its body (kv_tls_pending). */
	SSL_CTX_set_read_ahead(ctx, 1);
	return ctx;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

int kv_tls_init(const struct kv_tls_settings *t, char *err, size_t errlen)
{
	SSL_CTX *ctx = build(t, err, errlen);
	if (!ctx)
		return -1;
	settings = t;
	server_ctx = ctx;
	st_relaxed(&loaded_at, 0);
	return 0;
}

void kv_tls_free(void)
{
	SSL_CTX_free(server_ctx);
	server_ctx = NULL;
}

int kv_tls_refresh(char *err, size_t errlen)
{
	SSL_CTX *ctx = build(settings, err, errlen);
	if (!ctx)
		return -1;
	pthread_mutex_lock(&ctx_lock);
	SSL_CTX *old = server_ctx;
	server_ctx = ctx;
	pthread_mutex_unlock(&ctx_lock);
	SSL_CTX_free(old); /* gone once the connections that took a session from it close */
	st_relaxed(&loaded_at, kv_now(kv_srv.st));
	return 0;
}

int kv_tls_open(struct conn *c)
{
	pthread_mutex_lock(&ctx_lock);
	SSL *ssl = SSL_new(server_ctx);
	pthread_mutex_unlock(&ctx_lock);
	if (!ssl || SSL_set_fd(ssl, c->fd) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		return -1;
	}
	SSL_set_accept_state(ssl);
	c->ssl = ssl;
	return 0;
}

/*
 * The session cannot go on: the connection closes without writing. A
 * handshake that failed after the client sent something is counted and,
 * under -v, said in memcached's words (a connection closed before a byte
 * is a port probe, not a handshake).
 */
static void session_failed(struct conn *c, int e)
{
	int saved = errno;
	c->tls_failed = 1;
	c->close_now = 1;
	if (!c->tls_ready && BIO_number_read(SSL_get_rbio(c->ssl)) > 0) {
		faa_relaxed(&handshake_errors, 1);
		kv_logv(1, "SSL connection failed with error code : %d : %s", e, strerror(saved));
	}
	ERR_clear_error();
}

/*
 * SSL_get_error reads the thread's error queue, which must be empty before
 * each I/O call. It nearly always is (the paths that fail clear it), and
 * looking is cheaper than clearing all its slots: ERR_clear_error before
 * every call cost 2 % of the server's CPU under TLS load.
 */
static inline void error_queue_empty(void)
{
	if (ERR_peek_error() != 0)
		ERR_clear_error();
}

ssize_t kv_tls_read(struct conn *c, void *buf, size_t n)
{
	error_queue_empty();
	int r = SSL_read(c->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
	c->tls_want &= (short)~EV_WRITE;
	if (!c->tls_ready) /* a failure puts the session back in its handshake state: note it now */
		c->tls_ready = SSL_is_init_finished(c->ssl);
	if (r > 0) {
		c->tls_starved = 0;
		return r;
	}
	int e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ) {
		c->tls_starved = 1;
		return 0;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		c->tls_want |= EV_WRITE;
		return 0;
	}
	if (e != SSL_ERROR_ZERO_RETURN) /* not the client's close_notify */
		session_failed(c, e);
	return -1;
}

/*
 * -o ssl_wbuf_size bounds what one write hands to TLS (memcached copies its
 * replies into a buffer that size). A write that must be retried is retried
 * with at least the length it had: the output only grows meanwhile.
 */
ssize_t kv_tls_write(struct conn *c, const void *buf, size_t n)
{
	size_t bound = (size_t)settings->wbuf_kb * 1024, len = n;
	if (bound && len > bound)
		len = bound;
	if (len < c->tls_wlen)
		len = c->tls_wlen;
	if (len > INT_MAX)
		len = INT_MAX;
	error_queue_empty();
	int r = SSL_write(c->ssl, buf, (int)len);
	c->tls_want &= (short)~EV_READ;
	if (r > 0) {
		c->tls_wlen = 0;
		return r;
	}
	int e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
		c->tls_wlen = len;
		if (e == SSL_ERROR_WANT_READ)
			c->tls_want |= EV_READ;
		return 0;
	}
	session_failed(c, e);
	return -1;
}

/*
 * memcached copies a reply's pieces into one buffer of ssl_wbuf_size and
 * hands TLS that: a get of one value is one record and one write(2), where
 * a write per piece (text, value, END) costs three of each. Gathered from
 * the same place, the pieces start with the same bytes on a retry, and are
 * at least as long (the output only grows), as SSL_write wants.
 */
ssize_t kv_tls_writev(struct conn *c, const struct iovec *iov, int n, struct kv_buf *gather)
{
	if (n == 1)
		return kv_tls_write(c, iov[0].iov_base, iov[0].iov_len);
	size_t bound = settings->wbuf_kb ? (size_t)settings->wbuf_kb * 1024 : GATHER_ALL;
	if (bound < c->tls_wlen)
		bound = c->tls_wlen;
	size_t total = 0;
	for (int i = 0; i < n && total < bound; i++)
		total += iov[i].iov_len;
	if (total > bound)
		total = bound;
	gather->len = 0;
	if (kv_buf_reserve(gather, total) != 0) {
		session_failed(c, SSL_ERROR_SYSCALL);
		return -1;
	}
	for (int i = 0; i < n && gather->len < total; i++) {
		size_t k = iov[i].iov_len;
		if (k > total - gather->len)
			k = total - gather->len;
		memcpy(gather->p + gather->len, iov[i].iov_base, k);
		gather->len += k;
	}
	return kv_tls_write(c, gather->p, gather->len);
}

/*
 * Bytes a read left: decrypted (SSL_pending), or, since TLS reads ahead,
 * records read from the socket and not yet decrypted, which the socket will
 * not signal again (SSL_has_pending). That also counts part of a record,
 * which needs the socket: after a read that wanted the socket it is not
 * counted, or the connection would spin.
 */
int kv_tls_pending(const struct conn *c)
{
	return SSL_pending(c->ssl) > 0 || (!c->tls_starved && SSL_has_pending(c->ssl));
}

void kv_tls_close(struct conn *c)
{
	if (!c->tls_failed && SSL_is_init_finished(c->ssl))
		SSL_shutdown(c->ssl); /* close_notify if the socket takes it now; no waiting */
	SSL_free(c->ssl);
	c->ssl = NULL;
	ERR_clear_error();
}

void kv_tls_stats(struct kv_buf *b)
{
	if (!settings)
		return;
	uint32_t now = kv_now(kv_srv.st), at = ld_relaxed(&loaded_at);
	kv_buf_addf(b, "STAT ssl_handshake_errors %" PRIu64 "\r\n", ld_relaxed(&handshake_errors));
	kv_buf_addf(b, "STAT time_since_server_cert_refresh %" PRIu32 "\r\n", now - at);
}

static const char *yes_no(int v)
{
	return v ? "yes" : "no";
}

/* memcached prints a file not given as "(null)", a list not given as "NULL". */
void kv_tls_settings(struct kv_buf *b, const struct kv_tls_settings *t)
{
	kv_buf_addf(b, "STAT ssl_enabled %s\r\n", yes_no(t->enabled));
	kv_buf_addf(b, "STAT ssl_chain_cert %s\r\n", t->chain_cert ? t->chain_cert : "(null)");
	kv_buf_addf(b, "STAT ssl_key %s\r\n", t->key ? t->key : "(null)");
	kv_buf_addf(b, "STAT ssl_verify_mode %d\r\n", t->verify_mode);
	kv_buf_addf(b, "STAT ssl_keyformat %d\r\n", t->keyformat);
	kv_buf_addf(b, "STAT ssl_ciphers %s\r\n", t->ciphers ? t->ciphers : "NULL");
	kv_buf_addf(b, "STAT ssl_ca_cert %s\r\n", t->ca_cert ? t->ca_cert : "NULL");
	kv_buf_addf(b, "STAT ssl_wbuf_size %u\r\n", (unsigned)t->wbuf_kb * 1024u);
	kv_buf_addf(b, "STAT ssl_session_cache %s\r\n", yes_no(t->session_cache));
	kv_buf_addf(b, "STAT ssl_kernel_tls %s\r\n", yes_no(t->kernel_tls));
	kv_buf_addf(b, "STAT ssl_min_version %s\r\n", version_names[t->min_version]);
}
