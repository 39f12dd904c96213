/* locus-kv's SASL authentication (sasl.h), with Cyrus SASL (libsasl2). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sasl/sasl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server/auth.h"
#include "kv/server/sasl.h"
#include "kv/server/server.h"

static char hostname[1025]; /* the server's name in every session, as memcached's */

/*
 * Where memcached.conf is, as memcached finds it: $SASL_CONF_PATH, else
 * the first of /etc/sasl and /etc/sasl2 that has it, as a directory holding
 * the file (the directory is the path) or as the file (its directory is).
 */
static int get_conf_path(void *context, const char **path)
{
	static const char *const dirs[] = {"/etc/sasl", "/etc/sasl2"};
	static const char *const conf_dirs[] = {"/etc/sasl/memcached.conf",
						"/etc/sasl2/memcached.conf"};
	static const char *const conf_files[] = {"/etc/sasl/memcached.conf/memcached.conf",
						 "/etc/sasl2/memcached.conf/memcached.conf"};
	(void)context;
	*path = getenv("SASL_CONF_PATH");
	for (int i = 0; !*path && i < 2; i++) {
		if (access(conf_files[i], F_OK) == 0)
			*path = conf_dirs[i];
		else if (access(conf_dirs[i], F_OK) == 0)
			*path = dirs[i];
	}
	if (*path)
		kv_logv(1, "Reading configuration from: <%s>", *path);
	else
		kv_logv(1, "Failed to locate a config path");
	return *path ? SASL_OK : SASL_FAIL;
}

/* libsasl2's messages on stderr, by -v level as memcached prints them. */
static int log_message(void *context, int level, const char *message)
{
	(void)context;
	int needs = level == SASL_LOG_NONE			       ? -1
		    : level == SASL_LOG_WARN || level == SASL_LOG_FAIL ? 1
		    : level >= SASL_LOG_NOTE && level <= SASL_LOG_PASS ? 2
								       : 0;
	if (needs >= 0 && ld_relaxed(&kv_srv.set.verbose) >= needs)
		fprintf(stderr, "SASL (severity %d): %s\n", level, message);
	return SASL_OK;
}

/* libsasl2 takes every callback as int (*)(void); void (*)(void) converts to it from any. */
#define CALLBACK(f) ((int (*)(void))(void (*)(void))(f))
static sasl_callback_t callbacks[] = {
	{SASL_CB_LOG, CALLBACK(log_message), NULL},
	{SASL_CB_GETCONFPATH, CALLBACK(get_conf_path), NULL},
	{SASL_CB_LIST_END, NULL, NULL},
};

/* libsasl2 shares state between sessions (its plugins, the sasldb): real mutexes for it, since
   sessions live on every worker. */
static void *mutex_alloc(void)
{
	pthread_mutex_t *m = malloc(sizeof(*m));
	if (m)
		pthread_mutex_init(m, NULL);
	return m;
}

static int mutex_lock(void *m)
{
	return pthread_mutex_lock(m) == 0 ? SASL_OK : SASL_FAIL;
}

static int mutex_unlock(void *m)
{
	return pthread_mutex_unlock(m) == 0 ? SASL_OK : SASL_FAIL;
}

static void mutex_free(void *m)
{
	pthread_mutex_destroy(m);
	free(m);
}

int kv_sasl_init(char *err, size_t errlen)
{
	if (gethostname(hostname, sizeof(hostname) - 1) != 0) {
		kv_logv(1, "Error discovering hostname for SASL");
		hostname[0] = '\0';
	}
	sasl_set_mutex(mutex_alloc, mutex_lock, mutex_unlock, mutex_free);
	if (sasl_server_init(callbacks, "memcached") != SASL_OK) {
		snprintf(err, errlen, "Error initializing sasl.");
		return -1;
	}
	kv_logv(1, "Initialized SASL.");
	return 0;
}

void kv_sasl_done(void)
{
	sasl_done();
}

void kv_sasl_close(struct conn *c)
{
	sasl_conn_t *s = c->sasl;
	sasl_dispose(&s);
	c->sasl = NULL;
}

/* As memcached: every SASL command marks the connection unauthenticated, and makes its
   session if it has none. NULL if libsasl2 would not. */
static sasl_conn_t *session(struct conn *c)
{
	c->sasl_ok = 0;
	if (!c->sasl) {
		sasl_conn_t *s = NULL;
		if (sasl_server_new("memcached", NULL, hostname[0] ? hostname : NULL, NULL, NULL,
				    NULL, 0, &s) != SASL_OK) {
			kv_logv(1, "Failed to initialize SASL conn.");
			return NULL;
		}
		c->sasl = s;
	}
	return c->sasl;
}

int kv_sasl_mechs(struct conn *c, const char **list, unsigned *len)
{
	sasl_conn_t *s = session(c);
	if (!s || sasl_listmech(s, NULL, "", " ", "", list, len, NULL) != SASL_OK) {
		kv_logv(1, "Failed to list SASL mechanisms.");
		return -1;
	}
	return 0;
}

enum kv_sasl_result kv_sasl_exchange(struct conn *c, int start, const char *mech, const char *data,
				     unsigned ndata, const char **out, unsigned *outlen)
{
	sasl_conn_t *s = session(c);
	int r = SASL_FAIL;
	if (s && start) {
		r = sasl_server_start(s, mech, data, ndata, out, outlen);
		c->sasl_started = r == SASL_OK || r == SASL_CONTINUE;
	} else if (s && c->sasl_started) {
		r = sasl_server_step(s, data, ndata, out, outlen);
	} else if (s) {
		kv_logv(1,
			"%d: SASL_STEP called but sasl_server_start not called for this "
			"connection!",
			c->fd);
	}
	kv_logv(1, "sasl result code:  %d", r);
	if (r == SASL_CONTINUE)
		return KV_SASL_CONTINUE;
	kv_auth_note(r != SASL_OK);
	if (r != SASL_OK) {
		kv_logv(1, "Unknown sasl response:  %d", r);
		return KV_SASL_FAILED;
	}
	c->sasl_ok = 1;
	return KV_SASL_OK;
}
