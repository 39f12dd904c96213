/*
 * locus-kv's TLS (-Z, -o ssl_*), with OpenSSL, as memcached 1.6.18 offers it:
 * every TCP listener speaks TLS except those -l marks "notls:" (Unix sockets
 * and UDP never do), the text and meta protocols alike.
 *
 * One server context holds the certificate, key and settings; each TLS
 * connection takes a session from it when it is accepted. refresh_certs
 * builds a new context from the same files and puts it in place of the old
 * one only if every file loaded (connections keep the context they started
 * with). The context pointer is behind a mutex taken for that swap and for
 * each new session, and nothing else is held meanwhile (docs/kv.md: locks).
 *
 * A connection's socket stays non-blocking: the handshake happens inside
 * the first reads, so a client that stops half way through it holds its
 * connection and nothing else. A read may need the socket writable, and a
 * write readable (c->tls_want says which, for the event loop).
 */
#ifndef LOCUS_KV_TLS_H
#define LOCUS_KV_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "kv/server/options.h"
#include "kv/store/buf.h"

struct conn;
struct iovec;

/* Build the server context (-Z): 0, or -1 with memcached's message in err. */
int kv_tls_init(const struct kv_tls_settings *t, char *err, size_t errlen);
void kv_tls_free(void);
/* refresh_certs: 0, or -1 with memcached's message (the old context stays). */
int kv_tls_refresh(char *err, size_t errlen);

/* A TLS session on a connection just accepted: 0, or -1. */
int kv_tls_open(struct conn *c);
/* Send close_notify if the session is sound (without waiting), and free it. */
void kv_tls_close(struct conn *c);
/* Plaintext in, out: > 0 bytes; 0 when the socket must be ready first (c->tls_want);
   -1 when the peer has closed or the session has failed (then c->close_now). */
ssize_t kv_tls_read(struct conn *c, void *buf, size_t n);
ssize_t kv_tls_write(struct conn *c, const void *buf, size_t n);
/* The same for pieces (a reply's text and the values it holds): gathered into
   the worker's buffer `gather` so that they go out as one record, not one each. */
ssize_t kv_tls_writev(struct conn *c, const struct iovec *iov, int n, struct kv_buf *gather);
/* Has the session decrypted data that no read has returned yet? */
int kv_tls_pending(const struct conn *c);

/* "stats" with -Z: ssl_handshake_errors, time_since_server_cert_refresh. */
void kv_tls_stats(struct kv_buf *b);
/* "stats settings": the ssl_* lines (also without -Z). */
void kv_tls_settings(struct kv_buf *b, const struct kv_tls_settings *t);

#endif
