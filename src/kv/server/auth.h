/*
 * locus-kv's ASCII authentication (-Y FILE), as memcached 1.6.18's.
 *
 * The file holds up to 8 "user:password" lines. A connection is
 * unauthenticated until it sends a "set" whose key, flags and exptime are
 * anything and whose data is "user password": nothing else is run before
 * that, every other line is answered "CLIENT_ERROR unauthenticated". The
 * file is read once, before the workers start; the entries are only read
 * afterwards.
 */
#ifndef LOCUS_KV_AUTH_H
#define LOCUS_KV_AUTH_H

#include <stddef.h>
#include <stdint.h>

struct conn;

/* Read the file: 0, or -1 with memcached's message in err. */
int kv_auth_load(const char *path, char *err, size_t errlen);
void kv_auth_free(void);
/* "stats": auth_cmds (failed 0) and auth_errors (failed 1); "stats reset" zeroes them. */
uint64_t kv_auth_count(int failed);
void kv_auth_count_reset(void);
/* Count an attempt (failed: and a failure); SASL's too (sasl.c). */
void kv_auth_note(int failed);

/*
 * Run the next step of an unauthenticated connection's input: 1 if it
 * consumed something (a line answered, or the "set" and its data), 0 if it
 * needs more input or closes the connection (close_now).
 */
int kv_auth_step(struct conn *c);
/* While the data of its "set" is coming (auth_need): can kv_auth_step take a step? */
int kv_auth_data_ready(const struct conn *c);

#endif
