/*
 * locus-kv: the memcached meta protocol's command line, parsed.
 *
 * Same contract as kv_parse() (kv/protocol/proto.h): the caller framed one line, found
 * the "\n", stripped an optional "\r" before it, and passes the rest as
 * (line, len). Nothing here allocates or reads past len. Spans point into the
 * caller's line; only a base64 key is decoded, into the result itself.
 *
 *   struct kv_meta m;
 *   if (kv_meta_parse(line, len, &m) != 0) {
 *           reply(m.error);                 // exact memcached reply, no "\r\n"
 *           if (m.swallow)
 *                   discard the next m.datalen + 2 bytes (ms data block);
 *   }
 *
 * Every reply string, limit and precedence below was checked against
 * memcached 1.6.18 (Debian's), the version this parser follows.
 *
 * LINE. Tokens are separated by one or more spaces (only ' '; a tab is part of
 * a token). Leading spaces are skipped. Command names are case-sensitive and
 * must be a whole token ("mg\tfoo" and "mgfoo" are not meta commands: a
 * caller that sends every line here gets "ERROR" for them, as memcached).
 *
 *   mg <key> <flag>*           get
 *   ms <key> <datalen> <flag>* set; a data block of datalen bytes + "\r\n" follows
 *   md <key> <flag>*           delete
 *   ma <key> <flag>*           arithmetic (incr/decr)
 *   mn                         no-op; anything after it is ignored. Reply "MN"
 *   me <key> [b]               debug; tokens after "b" (or instead of it) are ignored
 *
 * KEY. At most KV_KEY_MAX (250) bytes as given, else "CLIENT_ERROR bad command
 * line format". Any byte but the separating space may be in a key, control
 * characters included, as memcached accepts them (memcaslap's keys begin with
 * eight 0x10 bytes); memcached also ends a line at a NUL byte, where here a
 * NUL is an ordinary key byte. With the flag b
 * (me: the token "b" right after the key) the key is base64 and is decoded into
 * keybuf; kv_meta_key()/key_len is then the decoded key (any bytes, 1..186 of them) and
 * key_raw the text as given. memcached's decoder, followed exactly: characters
 * outside A-Z a-z 0-9 + / = are skipped; the others must count a nonzero
 * multiple of 4; decoding stops after the first 4-group holding '=' (one '='
 * drops one byte, two drop two, more is an error) and ignores the rest. Failure
 * is "CLIENT_ERROR error decoding key" (me: "CLIENT_ERROR bad command line
 * format"). When the server echoes the key (flag k) of a base64 request it
 * sends the decoded key re-encoded (kv_meta_b64_encode: "Zm9v!" comes back as
 * "Zm9v"), and then " b" right after the k token.
 *
 * FLAGS (mg, ms, md, ma). Each token after the key (ms: after datalen) is one
 * flag: its first byte names it, the rest is its argument. All four commands
 * accept the same set; a command ignores the flags it has no use for:
 *
 *   b      key is base64 (see KEY)             k      return the key: "k<key>"
 *   c      return cas: "c<cas>"                O<op>  opaque, echoed as "O<op>";
 *   f      return client flags: "f<flags>"            <op> at most 31 bytes, may be empty
 *   h      return whether fetched before: "h0|h1"     (the argument is the token's rest)
 *   l      return secs since last access: "l<n>"
 *   s      return value size: "s<n>"           q      quiet (see REPLIES)
 *   t      return remaining ttl: "t<n>", "t-1" = never expires
 *   u      do not bump the item in the LRU     v      return the value
 *   I      invalidate: mark stale instead of   P, L   proxy hints, ignored
 *          deleting (md), or store even with a stale cas (ms); mg/ma accept it
 *   C<n>   compare cas: uint64                 T<n>   ttl (mg/ma: touch; ms: set) int32
 *   F<n>   client flags to set (ms): uint32    N<n>   autovivify on miss with ttl n (mg, ma)
 *   R<n>   win a recache if ttl < n (mg)       D<n>   ma delta, uint64 (default 1)
 *   J<n>   ma initial value on autovivify, uint64 (default 0)
 *   M<c>   mode, exactly one byte: ms E(add) A(append) P(prepend) R(replace)
 *          S(set, default); ma I or +(incr, default), D or -(decr). Case matters.
 *          mg/md take any byte and ignore it.
 *
 * The bare flags ignore any argument ("v1" is "v"). 1.6.18 has no E, S or x
 * flag: they, and every other byte, are "CLIENT_ERROR invalid flag". A flag
 * byte given twice is "CLIENT_ERROR duplicate flag". (A flag byte >= 0x80 is
 * an invalid flag here; memcached 1.6.18 indexes its seen-table with a signed
 * char there and answers whatever that out-of-bounds read gives, often
 * "duplicate flag".)
 *
 * Numbers are read as memcached reads them (strtol/strtoul/strtoull; the
 * text protocol's kv_num_i32/u32/u64 in kv/protocol/proto.h): optional leading
 * whitespace other than ' ', optional sign, decimal digits, then the token's
 * end or a whitespace byte (the rest is ignored). T, N, R and datalen must fit
 * a 64-bit long and are then truncated to int32 as memcached does (T4294967306
 * is T10); negative ttls are kept (T-1 expires the item). C, D, J must fit 64
 * bits; a value that is negative as int64 is refused if the token holds a '-'
 * ("C-1" fails, "C-18446744073709551615" is 1). F is read the same way, then
 * truncated to 32 bits (F4294967296 is 0).
 *
 * ERRORS, in the order memcached looks (first applicable wins, except where
 * noted). mg/ms/md/ma with no key: "ERROR"; ms with a key but no datalen and
 * me with no key: "CLIENT_ERROR bad command line format".
 *  1. Key too long: "CLIENT_ERROR bad command line format".
 *  2. 20 or more tokens on the line (command included: mg/md/ma take at most
 *     17 flags, ms 16): mg "CLIENT_ERROR options flags are too long", ms/md/ma
 *     "CLIENT_ERROR options flags too long".
 *  3. ms: datalen not a number, < 0 or > INT32_MAX - 2: same reply.
 *  4. Flags, left to right. An invalid or duplicate flag stops at once with its
 *     reply. Other failures are remembered and scanning goes on; the last one
 *     wins: b "CLIENT_ERROR error decoding key"; C, N, R, T "CLIENT_ERROR bad
 *     token in command line format"; D "CLIENT_ERROR invalid numeric delta
 *     value"; J "CLIENT_ERROR invalid numeric initial value"; M not 2 bytes
 *     "CLIENT_ERROR incorrect length for M token". A bad F leaves the remembered
 *     reply as it is ("CLIENT_ERROR bad command line format" if none).
 *     md and ma replace every reply of this step by
 *     "CLIENT_ERROR invalid or duplicate flag".
 *  5. O longer than 31 bytes: "CLIENT_ERROR opaque token too long";
 *     ms/ma: then a bad mode overrides it: "CLIENT_ERROR invalid mode for ms M
 *     token" / "CLIENT_ERROR invalid mode for ma M token".
 * ms swallow: failures at steps 4 and 5 come after datalen was read, and
 * memcached then discards the data block (datalen + 2 bytes) unread; after
 * steps 1-3 it does not (the block is read as the next command lines).
 *
 * REPLIES (what the server sends; <flags> = the return flags, see ORDER).
 *  mg  hit:  "VA <len> <flags>" + "\r\n" + data + "\r\n" with v, else "HD <flags>"
 *            return flags: O k(+b) c f h l s t
 *      miss: "EN", followed by only O and k(+b) (e.g. "EN kfoo O1")
 *      N on a miss creates an empty item and answers as a hit with "W" (won
 *      the right to fill it); later fetches see "Z" (someone already won),
 *      stale items (I) "X"; R<n> hands out "W" when the ttl is below n.
 *  ms  "HD <flags>" stored; "NS <flags>" not stored (mode E/R/A/P failed);
 *      "EX <flags>" C mismatch; "NF <flags>" C given and key missing.
 *      Return flags: O k(+b) c (the new cas; "c0" when not stored).
 *      Data of more than the item size limit: "SERVER_ERROR object too large
 *      for cache" after the block.
 *  md  "HD <flags>" deleted; "NF <flags>" missing; "EX <flags>" C mismatch.
 *      Return flags: O k(+b).
 *  ma  "HD <flags>" or with v "VA <len> <flags>" + "\r\n" + number + "\r\n";
 *      "NF <flags>" missing (without N); "EX <flags>" C mismatch;
 *      non-numeric value: "CLIENT_ERROR cannot increment or decrement
 *      non-numeric value". Return flags: O k(+b) c t; decr stops at 0, incr
 *      wraps at 2^64.
 *  me  "ME <key> exp=<secs left|-1> la=<secs since access> cas=<cas>
 *      fetch=<yes|no> cls=<slab class> size=<item bytes>", or "EN" on a miss
 *      (<key> base64-encoded if the item was stored with a base64 key).
 *  mn  "MN".
 *  A flag-less reply has no trailing space: "HD", "EN", "NF".
 *
 * QUIET (q), as memcached 1.6.18 does it; errors are never suppressed:
 *  mg  suppresses EN (whatever the flags); HD and VA are sent.
 *  ms  suppresses HD; NS, EX, NF are sent.
 *  md  suppresses HD; NF is suppressed only when q is the request's only
 *      flag besides the key ("md k q" is silent, "md k q k" answers "NF kk").
 *  ma  suppresses HD and VA; NF, EX, NS are sent.
 *  The client ends a pipeline of quiet commands with "mn" and reads up to "MN".
 *
 * ORDER. Return flags are echoed in the order the request gave them
 * ("mg foo s v t" -> "VA 3 s3 t-1"; "mg foo O1 c k" -> "HD O1 c2 kfoo"), with
 * " b" right after k when the key was base64. flag[0..nflags) is that order:
 * every flag byte of the request as given; the server echoes those it returns.
 */
#ifndef LOCUS_KV_META_H
#define LOCUS_KV_META_H

#include <stddef.h>
#include <stdint.h>

#include "kv/protocol/proto.h"

#define KV_META_TOKENS_MAX  19	/* tokens per mg/ms/md/ma line, the command included */
#define KV_META_FLAGS_MAX   17	/* flags per line (mg, md, ma; ms has 16) */
#define KV_META_OPAQUE_MAX  31	/* bytes of an opaque after its 'O' */
#define KV_META_B64_KEY_MAX 186 /* longest decoded key: 250 base64 bytes hold 62 groups */

enum kv_meta_command {
	KV_META_NONE = 0, /* not a meta command, or failed before its command was known */
	KV_META_GET,	  /* mg */
	KV_META_SET,	  /* ms */
	KV_META_DELETE,	  /* md */
	KV_META_ARITH,	  /* ma */
	KV_META_NOOP,	  /* mn */
	KV_META_DEBUG,	  /* me */
};

/* Bit of a flag letter ('A'..'Z', 'a'..'z') in kv_meta.present. */
#define KV_META_BIT(c) ((uint64_t)1 << ((c) >= 'a' ? (c) - 'a' + 26 : (c) - 'A'))

struct kv_meta {
	enum kv_meta_command cmd;
	/* NULL on success; otherwise the exact reply line (without "\r\n"). */
	const char *error;
	/*
	 * ms only: the line failed after datalen was read; the server must
	 * discard the next datalen + 2 bytes (the data block) before reading
	 * the next command.
	 */
	int swallow;

	struct kv_span key_raw; /* the key token as given */
	/*
	 * The key's length; its bytes are kv_meta_key(m): key_raw.ptr, or
	 * keybuf when base64 (an accessor, so a copied struct stays right).
	 */
	size_t key_len;
	int base64;			  /* flag b (me: token "b") */
	unsigned char keybuf[KV_KEY_MAX]; /* decoded base64 key */

	uint64_t present;	      /* KV_META_BIT(c) for every flag c given */
	char flag[KV_META_FLAGS_MAX]; /* each flag's byte, in request order */
	unsigned nflags;

	uint32_t datalen;      /* ms: data block length without "\r\n", <= KV_BYTES_MAX */
	uint64_t cas;	       /* C: compare-and-swap value */
	uint32_t client_flags; /* F */
	int32_t ttl;	       /* T: raw, as memcached's exptime (0 never, <0 expired) */
	int32_t vivify_ttl;    /* N */
	int32_t recache_ttl;   /* R */
	uint64_t delta;	       /* D, 1 when absent */
	uint64_t initial;      /* J, 0 when absent */
	/* M's byte; when absent 'S' for ms, 'I' for ma, 0 for the others. */
	char mode;
	struct kv_span opaque; /* O's argument (may be empty), without the 'O' */
	int quiet;	       /* q */
};

/*
 * Parse one meta command line. 0 on success; -1 with m->error set (and
 * m->swallow for ms) otherwise. m is fully overwritten. A line whose first
 * token is not mg/ms/md/ma/mn/me fails with "ERROR" and cmd KV_META_NONE.
 */
int kv_meta_parse(const char *line, size_t len, struct kv_meta *m);

/*
 * Is the line's first token (after spaces) a meta command? Then parse it
 * with kv_meta_parse, not kv_parse.
 */
int kv_meta_is_meta(const char *line, size_t len);

/* The (decoded) key, key_len bytes. */
static inline const char *kv_meta_key(const struct kv_meta *m)
{
	return m->base64 ? (const char *)m->keybuf : m->key_raw.ptr;
}

/* Was flag c given? */
static inline int kv_meta_has(const struct kv_meta *m, char c)
{
	if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
		return 0;
	return (m->present & KV_META_BIT(c)) != 0;
}

/*
 * memcached's base64 key decoding (see KEY): 0 on failure (also when more
 * than cap bytes would come out), else the decoded length.
 */
size_t kv_meta_b64_decode(const char *src, size_t len, unsigned char *dst, size_t cap);

/*
 * Standard base64 with '=' padding, as memcached echoes a base64 key.
 * Writes 4 * ((n + 2) / 3) bytes (no NUL) if they fit in cap; returns that
 * length, or 0 if they do not fit.
 */
size_t kv_meta_b64_encode(const unsigned char *src, size_t n, char *dst, size_t cap);

/* Exact memcached reply strings the meta parser produces (besides KV_ERR_ERROR, KV_ERR_FORMAT). */
#define KV_META_ERR_INVALID_FLAG   "CLIENT_ERROR invalid flag"
#define KV_META_ERR_DUP_FLAG	   "CLIENT_ERROR duplicate flag"
#define KV_META_ERR_INVALID_OR_DUP "CLIENT_ERROR invalid or duplicate flag"
#define KV_META_ERR_BAD_TOKEN	   "CLIENT_ERROR bad token in command line format"
#define KV_META_ERR_DECODE_KEY	   "CLIENT_ERROR error decoding key"
#define KV_META_ERR_DELTA	   "CLIENT_ERROR invalid numeric delta value"
#define KV_META_ERR_INITIAL	   "CLIENT_ERROR invalid numeric initial value"
#define KV_META_ERR_M_LENGTH	   "CLIENT_ERROR incorrect length for M token"
#define KV_META_ERR_MODE_MS	   "CLIENT_ERROR invalid mode for ms M token"
#define KV_META_ERR_MODE_MA	   "CLIENT_ERROR invalid mode for ma M token"
#define KV_META_ERR_OPAQUE	   "CLIENT_ERROR opaque token too long"
#define KV_META_ERR_TOO_LONG_MG	   "CLIENT_ERROR options flags are too long"
#define KV_META_ERR_TOO_LONG	   "CLIENT_ERROR options flags too long"

#endif
