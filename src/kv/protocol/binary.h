/*
 * locus-kv: memcached's binary protocol, as pure functions over bytes (no
 * sockets, no store, no allocation), with memcached 1.6.18's rules.
 *
 * Every request and response starts with a 24-byte header (big-endian):
 *
 *   0 magic (0x80 request, 0x81 response)   1 opcode   2-3 key length
 *   4 extras length   5 data type   6-7 vbucket (request) or status (response)
 *   8-11 body length (extras + key + value)   12-15 opaque (echoed)   16-23 cas
 *
 * then the extras, the key and the value. memcached reads a request's
 * header, waits for its extras and key (not its value), and judges it
 * (kv_bin_judge): lengths that do not add up, a key longer than 250 bytes
 * and an opcode given the wrong lengths are answered with an error and the
 * connection closes; an opcode it does not run is answered "Unknown command"
 * and bodylen bytes after the key are dropped (memcached counts the extras
 * and the key it has already read a second time). A command that does not
 * read a value leaves any further body bytes to be read as the next request,
 * as memcached does.
 *
 * The quiet opcodes (GETQ, SETQ, ...) are their base command that sends no
 * reply on success (kv_bin_base); errors are always sent, and a GETQ/GETKQ
 * hit is sent too.
 *
 *   struct kv_bin_header h;
 *   kv_bin_header_read(buf, &h);                    // buf holds KV_BIN_HEADER bytes
 *   if (h.magic != KV_BIN_REQ) close;
 *   wait for KV_BIN_HEADER + h.extlen + h.keylen bytes;
 *   switch (kv_bin_judge(&h, unauthenticated)) ...
 */
#ifndef LOCUS_KV_BINARY_H
#define LOCUS_KV_BINARY_H

#include <stddef.h>
#include <stdint.h>

#define KV_BIN_HEADER	 24   /* bytes of every request's and response's header */
#define KV_BIN_REQ	 0x80 /* a request's magic: -B auto takes a first byte of 0x80 as binary */
#define KV_BIN_RES	 0x81
#define KV_BIN_KEY_MAX	 250 /* memcached's longest key, whatever the 16-bit key length says */
#define KV_BIN_MECH_MAX	 32  /* longest SASL mechanism name memcached takes */
#define KV_BIN_NO_CREATE 0xffffffffu /* incr/decr expiration: a miss creates nothing */

/* memcached 1.6.18's opcodes (others are answered "Unknown command"). */
enum kv_bin_opcode {
	KV_BIN_GET = 0x00,
	KV_BIN_SET = 0x01,
	KV_BIN_ADD = 0x02,
	KV_BIN_REPLACE = 0x03,
	KV_BIN_DELETE = 0x04,
	KV_BIN_INCREMENT = 0x05,
	KV_BIN_DECREMENT = 0x06,
	KV_BIN_QUIT = 0x07,
	KV_BIN_FLUSH = 0x08,
	KV_BIN_GETQ = 0x09,
	KV_BIN_NOOP = 0x0a,
	KV_BIN_VERSION = 0x0b,
	KV_BIN_GETK = 0x0c,
	KV_BIN_GETKQ = 0x0d,
	KV_BIN_APPEND = 0x0e,
	KV_BIN_PREPEND = 0x0f,
	KV_BIN_STAT = 0x10,
	KV_BIN_SETQ = 0x11,
	KV_BIN_ADDQ = 0x12,
	KV_BIN_REPLACEQ = 0x13,
	KV_BIN_DELETEQ = 0x14,
	KV_BIN_INCREMENTQ = 0x15,
	KV_BIN_DECREMENTQ = 0x16,
	KV_BIN_QUITQ = 0x17,
	KV_BIN_FLUSHQ = 0x18,
	KV_BIN_APPENDQ = 0x19,
	KV_BIN_PREPENDQ = 0x1a,
	KV_BIN_TOUCH = 0x1c,
	KV_BIN_GAT = 0x1d,
	KV_BIN_GATQ = 0x1e,
	KV_BIN_SASL_LIST_MECHS = 0x20,
	KV_BIN_SASL_AUTH = 0x21,
	KV_BIN_SASL_STEP = 0x22,
	KV_BIN_GATK = 0x23,
	KV_BIN_GATKQ = 0x24,
};

enum kv_bin_status {
	KV_BIN_SUCCESS = 0x00,
	KV_BIN_KEY_ENOENT = 0x01,
	KV_BIN_KEY_EEXISTS = 0x02,
	KV_BIN_E2BIG = 0x03,
	KV_BIN_EINVAL = 0x04,
	KV_BIN_NOT_STORED = 0x05,
	KV_BIN_DELTA_BADVAL = 0x06,
	KV_BIN_AUTH_ERROR = 0x20,
	KV_BIN_AUTH_CONTINUE = 0x21,
	KV_BIN_UNKNOWN_COMMAND = 0x81,
	KV_BIN_ENOMEM = 0x82,
};

/* A header in host order; `status` is the vbucket field of a request. */
struct kv_bin_header {
	uint8_t magic, opcode, extlen, datatype;
	uint16_t keylen, status;
	uint32_t bodylen, opaque;
	uint64_t cas;
};

void kv_bin_header_read(const void *p, struct kv_bin_header *h);
void kv_bin_header_write(void *p, const struct kv_bin_header *h);

/* Big-endian fields of extras and values. */
uint32_t kv_bin_get32(const void *p);
uint64_t kv_bin_get64(const void *p);
void kv_bin_put32(void *p, uint32_t v);
void kv_bin_put64(void *p, uint64_t v);

/* The command a quiet opcode is (GETQ: GET, ...), *quiet set; others are themselves. */
uint8_t kv_bin_base(uint8_t opcode, int *quiet);

enum kv_bin_verdict {
	KV_BIN_RUN,		/* run it */
	KV_BIN_BAD_LENGTHS,	/* key and extras do not fit the body: Unknown command, close */
	KV_BIN_UNAUTHENTICATED, /* SASL is on and this needs it: Auth failure, close */
	KV_BIN_BAD_KEY,		/* a key longer than KV_BIN_KEY_MAX: Invalid arguments, close */
	KV_BIN_BAD_SHAPE,	/* lengths this opcode does not take: Invalid arguments, close */
	KV_BIN_UNKNOWN, /* no such command: Unknown command, the body after the key dropped */
};

/*
 * memcached's judgement of a request whose header, extras and key are
 * read, in its order. `unauthenticated`: SASL is on and the connection has
 * not authenticated, so only the SASL opcodes and VERSION run. The SASL
 * opcodes are judged by their lengths alone (without -S the server answers
 * them as unknown).
 */
enum kv_bin_verdict kv_bin_judge(const struct kv_bin_header *h, int unauthenticated);

/* The value's length of a request judged KV_BIN_RUN: the body after extras and key. */
static inline uint32_t kv_bin_value_len(const struct kv_bin_header *h)
{
	return h->bodylen - h->keylen - h->extlen;
}

/* memcached's text of an error status ("Not found", ...), "" for the others. */
const char *kv_bin_status_text(uint16_t status);

/*
 * A response header at p (KV_BIN_HEADER bytes): magic 0x81, the request's
 * opcode and opaque, data type 0.
 */
void kv_bin_response(void *p, const struct kv_bin_header *req, uint16_t status, uint8_t extlen,
		     uint16_t keylen, uint32_t bodylen, uint64_t cas);

#endif
