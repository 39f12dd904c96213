/*
 * locus-kv's SASL authentication (-S), with Cyrus SASL (libsasl2), as
 * memcached 1.6.18 offers it on the binary protocol.
 *
 * libsasl2 is started once, after -u, as the application "memcached": its
 * configuration is memcached.conf in $SASL_CONF_PATH, else in
 * /etc/sasl/memcached.conf/ or /etc/sasl2/memcached.conf/ (a directory), else
 * next to a file /etc/sasl/memcached.conf or /etc/sasl2/memcached.conf;
 * there mech_list, sasldb_path and the rest of libsasl2's options choose
 * what authenticates. A connection gets its session on its first SASL
 * command, and only its worker uses it. As in memcached, every SASL command
 * starts by marking the connection unauthenticated: a failed attempt, or a
 * listing of the mechanisms, after success takes it back.
 */
#ifndef LOCUS_KV_SASL_H
#define LOCUS_KV_SASL_H

#include <stddef.h>

struct conn;

/* Start libsasl2: 0, or -1 with memcached's message in err. */
int kv_sasl_init(char *err, size_t errlen);
void kv_sasl_done(void);

/* The connection closes: its session goes. */
void kv_sasl_close(struct conn *c);

/* The mechanisms, space-separated: 0 with *list (libsasl2's, valid until the next call on c),
   or -1. */
int kv_sasl_mechs(struct conn *c, const char **list, unsigned *len);

enum kv_sasl_result {
	KV_SASL_OK,	  /* authenticated */
	KV_SASL_CONTINUE, /* the server's challenge is in *out: the client steps */
	KV_SASL_FAILED,
};
/*
 * SASL_AUTH (start 1: a new exchange with mechanism mech) or SASL_STEP
 * (start 0: the next step of the exchange, which fails without one): the
 * client's data in, the server's data out (valid until the next call on c).
 * auth_cmds and auth_errors count the attempts that end, as memcached's.
 */
enum kv_sasl_result kv_sasl_exchange(struct conn *c, int start, const char *mech, const char *data,
				     unsigned ndata, const char **out, unsigned *outlen);

#endif
