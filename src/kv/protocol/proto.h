/*
 * locus-kv: the memcached classic text protocol's command line, parsed.
 *
 * Pure functions over one line the caller has already framed: it found the
 * "\n", stripped an optional "\r" before it, and passes the rest as
 * (line, len). Nothing here allocates, reads past len, or keeps a pointer:
 * keys and arguments in the result point into the caller's line.
 *
 *   struct kv_cmd c;
 *   if (kv_parse(line, len, &c) != 0)
 *           reply(c.error);                 // exact memcached reply, no "\r\n"
 *   if (c.close)
 *           close the connection;
 *
 * Tokens are separated by one or more spaces (only ' ', as memcached: a tab is
 * part of a token). Command names are case-sensitive. Where memcached ignores
 * a token (a sixth token of "set" that is not "noreply"), so does this parser.
 *
 * Multi-key get/gets/gat/gats: one call yields at most KV_KEYS_MAX keys. When
 * the line holds more, `more` is nonzero and kv_parse_more() yields the next
 * batch. A bad key (longer than KV_KEY_MAX; any other byte but space is fine,
 * control characters included, as memcached has it) is
 * reported by the call whose batch holds it, so a server that answers batch
 * by batch sends the values of earlier keys before the CLIENT_ERROR, as
 * memcached does when it meets a bad key in the middle of a get. gat/gats
 * with an exptime and no key parse with no keys (memcached answers "END").
 */
#ifndef LOCUS_KV_PROTO_H
#define LOCUS_KV_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define KV_KEY_MAX  250	 /* longest key memcached accepts */
#define KV_LINE_MAX 2048 /* longest line without "\n" before a non-get closes */
#define KV_KEYS_MAX 24	 /* keys per kv_parse()/kv_parse_more() call */

/* The largest data block: memcached adds 2 for "\r\n" to a signed 32-bit length. */
#define KV_BYTES_MAX (INT32_MAX - 2)

enum kv_command {
	KV_CMD_UNKNOWN = 0, /* also every line that failed to parse before its command */
	KV_CMD_GET,
	KV_CMD_GETS,
	KV_CMD_GAT,
	KV_CMD_GATS,
	KV_CMD_SET,
	KV_CMD_ADD,
	KV_CMD_REPLACE,
	KV_CMD_APPEND,
	KV_CMD_PREPEND,
	KV_CMD_CAS,
	KV_CMD_DELETE,
	KV_CMD_INCR,
	KV_CMD_DECR,
	KV_CMD_TOUCH,
	KV_CMD_FLUSH_ALL,
	KV_CMD_VERSION,
	KV_CMD_VERBOSITY,
	KV_CMD_QUIT,
	KV_CMD_STATS,
	KV_CMD_SHUTDOWN,
};

/* What "stats" asked for; anything else ("detail on", "sizes") is OTHER, see args. */
enum kv_stats_arg {
	KV_STATS_NONE = 0,
	KV_STATS_SETTINGS,
	KV_STATS_ITEMS,
	KV_STATS_SLABS,
	KV_STATS_RESET,
	KV_STATS_SYNC, /* locus-kv's own: the sections' mechanisms and timing */
	KV_STATS_OTHER,
};

/* A run of bytes inside the parsed line. */
struct kv_span {
	const char *ptr;
	size_t len;
};

struct kv_cmd {
	enum kv_command cmd;
	/* NULL on success; otherwise the exact reply line (without "\r\n"). */
	const char *error;
	/*
	 * Close the connection without replying (an unknown command ending in
	 * HTTP/..., i.e. a web client); error is then still "ERROR".
	 */
	int close;
	/* The last token was "noreply"; set even when the line has an error. */
	int noreply;

	struct kv_span keys[KV_KEYS_MAX];
	unsigned nkeys;
	/* get family: offset in the line of the keys not yet returned, 0 if none. */
	size_t more;

	uint32_t flags;	 /* storage commands (cut to 32 bits, see kv_num_u32) */
	int64_t exptime; /* storage, gat/gats, touch: int32 as cut by kv_num_i32 (<0 = expired) */
	uint32_t bytes;	 /* storage: data block length without "\r\n", <= KV_BYTES_MAX */
	uint64_t cas;	 /* cas unique */
	uint64_t delta;	 /* incr/decr */
	int64_t delay;	 /* flush_all: int32 delay (0 when absent; <= 0 flushes now) */
	uint32_t level;	 /* verbosity, cut to 32 bits (the server clamps it) */
	int shutdown;	 /* shutdown: 0 now, 1 "graceful", -1 any other argument */
	enum kv_stats_arg stats;
	struct kv_span args; /* stats: the text after "stats", trailing spaces dropped */
};

/*
 * Parse one command line. 0 on success; -1 with c->error set (and maybe
 * c->close) otherwise. c is fully overwritten.
 */
int kv_parse(const char *line, size_t len, struct kv_cmd *c);

/*
 * Next batch of keys of a get-family line whose previous batch left c->more
 * nonzero. Same return as kv_parse; the other fields of c are kept.
 */
int kv_parse_more(const char *line, size_t len, struct kv_cmd *c);

/*
 * A line of `len` bytes is still without its "\n": should the connection be
 * closed? memcached tolerates long lines only for multi-key gets.
 */
int kv_line_too_long(size_t len, int is_get_prefix);

/* Does the start of an unfinished line look like "get " or "gets " (after at most 100 spaces)? */
int kv_line_is_get_prefix(const char *buf, size_t have);

/*
 * Framing of a storage command's data block: buf holds `have` bytes received
 * after the command line, which announced `bytes`. memcached requires the
 * block to end in "\r\n" exactly (a bare "\n" is a bad chunk), and consumes
 * bytes + 2 whatever they are.
 */
enum kv_chunk {
	KV_CHUNK_SHORT = 0, /* fewer than bytes + 2 bytes yet */
	KV_CHUNK_OK = 1,    /* buf[0..bytes) is the value, then "\r\n" */
	KV_CHUNK_BAD = -1,  /* reply "CLIENT_ERROR bad data chunk" */
};
enum kv_chunk kv_data_chunk_ok(const char *buf, size_t have, uint32_t bytes);

/*
 * Numbers as memcached 1.6 reads a command's tokens (its safe_strtol,
 * safe_strtoul and safe_strtoull on a 64-bit system), over the token p[0..n),
 * which ends early at a NUL as memcached's C string would: leading whitespace
 * (isspace: tab, newline, vertical tab, form feed, carriage return), an
 * optional '+' or '-', at least one decimal digit, then the end or a
 * whitespace byte (whatever follows it is ignored). 1 on success, 0 otherwise.
 *
 *   kv_num_i32  strtol: the value must fit a 64-bit long, and is then cut to
 *               its low 32 bits ("4294967296" is 0, "2147483648" is INT32_MIN).
 *   kv_num_u64  strtoull: at most 2^64 - 1 in magnitude; a '-' negates modulo
 *               2^64, and a result that is negative as int64 is refused if the
 *               token holds a '-' anywhere ("-1" fails, "-18446744073709551615"
 *               is 1).
 *   kv_num_u32  strtoul as kv_num_u64, then cut to 32 bits ("4294967297" is 1).
 */
/*
 * The words of p[0..len), split on spaces as memcached's tokenizer splits a
 * command (a run of spaces counts once): at most max of them into w.
 * Returns how many.
 */
int kv_split_words(const char *p, size_t len, struct kv_span *w, int max);

int kv_num_i32(const char *p, size_t n, int32_t *out);
int kv_num_u32(const char *p, size_t n, uint32_t *out);
int kv_num_u64(const char *p, size_t n, uint64_t *out);

/*
 * An item's size as memcached 1.6 counts it (ITEM_ntotal with cas on): a
 * 48-byte header, the 8-byte cas, the key and its NUL, 4 bytes of client
 * flags when they are not 0, then the value and its "\r\n". memcached refuses
 * an item above -I by this count ("SERVER_ERROR object too large for cache"),
 * and "me" reports it as size=.
 */
static inline uint64_t kv_mc_item_size(size_t nkey, uint32_t flags, uint64_t nbytes)
{
	return 48 + 8 + (uint64_t)nkey + 1 + (flags ? 4 : 0) + nbytes + 2;
}

/* Exact memcached reply strings the parser produces. */
#define KV_ERR_ERROR	  "ERROR"
#define KV_ERR_FORMAT	  "CLIENT_ERROR bad command line format"
#define KV_ERR_DELTA	  "CLIENT_ERROR invalid numeric delta argument"
#define KV_ERR_EXPTIME	  "CLIENT_ERROR invalid exptime argument"
#define KV_ERR_DELETE	  "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]"
#define KV_ERR_DATA_CHUNK "CLIENT_ERROR bad data chunk"

#endif
