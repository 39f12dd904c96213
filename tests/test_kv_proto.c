/*
 * locus-kv's text-protocol command-line parser (src/kv/protocol/proto.h): every
 * command's fields, every error reply memcached sends for a bad line, the
 * boundaries (key 250/251 bytes, 32-bit flags, int32 lengths, 64-bit cas and
 * delta), multi-key get batches, framing helpers, and a randomized run over
 * random and mutated lines that checks the result's invariants.
 *
 * Every line is parsed from a heap copy of exactly its length, with no NUL
 * after it, so the address sanitizer build catches any read past len.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/proto.h"
#include "testutil.h"

/* The copy the last parse() read from; its keys point into it. */
static char *held;
static size_t held_len;

static int parse_n(const char *s, size_t n, struct kv_cmd *c)
{
	free(held);
	held = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(held);
	memcpy(held, s, n);
	held_len = n;
	return kv_parse(held, n, c);
}

static int parse(const char *s, struct kv_cmd *c)
{
	return parse_n(s, strlen(s), c);
}

/* The line parses; returns the result for field checks. */
static struct kv_cmd ok(const char *s, enum kv_command cmd)
{
	struct kv_cmd c;
	int rc = parse(s, &c);
	ck_assert_msg(rc == 0, "\"%s\": expected success, got \"%s\"", s,
		      c.error ? c.error : "(null)");
	ck_assert_ptr_null(c.error);
	ck_assert_int_eq(c.cmd, cmd);
	ck_assert_int_eq(c.close, 0);
	return c;
}

/* The line fails with exactly `reply`. */
static struct kv_cmd bad(const char *s, const char *reply)
{
	struct kv_cmd c;
	int rc = parse(s, &c);
	ck_assert_msg(rc == -1, "\"%s\": expected \"%s\", parsed", s, reply);
	ck_assert_ptr_nonnull(c.error);
	ck_assert_msg(strcmp(c.error, reply) == 0, "\"%s\": expected \"%s\", got \"%s\"", s, reply,
		      c.error);
	return c;
}

static void key_is(const struct kv_cmd *c, unsigned i, const char *want)
{
	ck_assert_uint_lt(i, c->nkeys);
	ck_assert_uint_eq(c->keys[i].len, strlen(want));
	ck_assert(memcmp(c->keys[i].ptr, want, c->keys[i].len) == 0);
	ck_assert(c->keys[i].ptr >= held && c->keys[i].ptr + c->keys[i].len <= held + held_len);
}

/* "<prefix><key of n 'k's><suffix>" in a static buffer. */
static const char *with_key(const char *prefix, size_t n, const char *suffix)
{
	static char buf[1024];
	size_t p = strlen(prefix);
	ck_assert_uint_lt(p + n + strlen(suffix), sizeof(buf));
	memcpy(buf, prefix, p);
	memset(buf + p, 'k', n);
	strcpy(buf + p + n, suffix);
	return buf;
}

/* --- get family ---------------------------------------------------------- */

START_TEST(get_keys)
{
	struct kv_cmd c = ok("get foo", KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, 1);
	key_is(&c, 0, "foo");
	ck_assert_uint_eq(c.more, 0);

	c = ok("gets a bb ccc", KV_CMD_GETS);
	ck_assert_uint_eq(c.nkeys, 3);
	key_is(&c, 0, "a");
	key_is(&c, 1, "bb");
	key_is(&c, 2, "ccc");

	c = ok("  get   x    y  ", KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, 2);
	key_is(&c, 0, "x");
	key_is(&c, 1, "y");
	ck_assert_uint_eq(c.more, 0);

	/* Keys may hold any byte but space and control characters. */
	c = ok("get caf\xc3\xa9:1/{x}", KV_CMD_GET);
	key_is(&c, 0, "caf\xc3\xa9:1/{x}");
}
END_TEST

START_TEST(gat_keys)
{
	struct kv_cmd c = ok("gat 100 k1 k2", KV_CMD_GAT);
	ck_assert_int_eq(c.exptime, 100);
	ck_assert_uint_eq(c.nkeys, 2);
	key_is(&c, 0, "k1");
	key_is(&c, 1, "k2");

	c = ok("gats -1 k", KV_CMD_GATS);
	ck_assert_int_eq(c.exptime, -1);
	key_is(&c, 0, "k");

	c = ok("gat 0 k", KV_CMD_GAT);
	ck_assert_int_eq(c.exptime, 0);

	bad("gat 10x k", KV_ERR_EXPTIME);
	bad("gat k1 k2", KV_ERR_EXPTIME);
	bad("gat", KV_ERR_ERROR);
	bad("gats   ", KV_ERR_ERROR);

	/* An exptime beyond int32 is cut to 32 bits as memcached's strtol-then-int32 does. */
	c = ok("gats 2147483648 k", KV_CMD_GATS);
	ck_assert_int_eq(c.exptime, INT32_MIN);
	c = ok("gat 4294967296 k", KV_CMD_GAT);
	ck_assert_int_eq(c.exptime, 0);
	bad("gat 9223372036854775808 k", KV_ERR_EXPTIME);

	/* The exptime is the one token memcached requires: no key is a get of nothing. */
	c = ok("gat 10", KV_CMD_GAT);
	ck_assert_int_eq(c.exptime, 10);
	ck_assert_uint_eq(c.nkeys, 0);
	ck_assert_uint_eq(c.more, 0);
	c = ok("gats 0  ", KV_CMD_GATS);
	ck_assert_uint_eq(c.nkeys, 0);
	bad("gat abc", KV_ERR_EXPTIME);
}
END_TEST

START_TEST(get_errors)
{
	bad("get", KV_ERR_ERROR);
	bad("gets   ", KV_ERR_ERROR);
	bad("getx foo", KV_ERR_ERROR);
	bad("GET foo", KV_ERR_ERROR);

	struct kv_cmd c = ok(with_key("get ", KV_KEY_MAX, ""), KV_CMD_GET);
	ck_assert_uint_eq(c.keys[0].len, KV_KEY_MAX);
	bad(with_key("get ", KV_KEY_MAX + 1, ""), KV_ERR_FORMAT);
	/* A too-long key among good ones fails the batch. */
	c = bad(with_key("get a b ", KV_KEY_MAX + 1, " c"), KV_ERR_FORMAT);
	ck_assert_uint_eq(c.nkeys, 0);

	/* Control characters are key bytes, as memcached has them (memcaslap sends 0x10s). */
	c = ok("get a\tb ok bad\x01key a\x7f a\rb \x10\x10k", KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, 6);
	key_is(&c, 0, "a\tb");
	key_is(&c, 2, "bad\x01key");
	key_is(&c, 3, "a\x7f");
	key_is(&c, 5, "\x10\x10k");
	struct kv_cmd d;
	ck_assert_int_eq(parse_n("get a\0b", 7, &d), 0); /* NUL is a key byte here */
	ck_assert_uint_eq(d.keys[0].len, 3);
}
END_TEST

/* "get k0 k1 ... k<n-1>" */
static const char *get_line(unsigned n, int bad_at)
{
	static char buf[4096];
	size_t p = (size_t)sprintf(buf, "get");
	for (unsigned i = 0; i < n; i++) {
		if ((int)i == bad_at)
			p += (size_t)sprintf(buf + p, " %s", with_key("", KV_KEY_MAX + 1, ""));
		else
			p += (size_t)sprintf(buf + p, " k%u", i);
	}
	return buf;
}

START_TEST(get_batches)
{
	struct kv_cmd c = ok(get_line(KV_KEYS_MAX, -1), KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, KV_KEYS_MAX);
	ck_assert_uint_eq(c.more, 0);

	c = ok(get_line(KV_KEYS_MAX + 1, -1), KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, KV_KEYS_MAX);
	ck_assert_uint_ne(c.more, 0);
	key_is(&c, KV_KEYS_MAX - 1, "k23");
	ck_assert_int_eq(kv_parse_more(held, held_len, &c), 0);
	ck_assert_uint_eq(c.nkeys, 1);
	key_is(&c, 0, "k24");
	ck_assert_uint_eq(c.more, 0);
	ck_assert_int_eq(c.cmd, KV_CMD_GET);

	/* 100 keys: 24 + 24 + 24 + 24 + 4, in order. */
	c = ok(get_line(100, -1), KV_CMD_GET);
	unsigned seen = 0, calls = 1;
	for (;;) {
		for (unsigned i = 0; i < c.nkeys; i++) {
			char want[16];
			sprintf(want, "k%u", seen++);
			key_is(&c, i, want);
		}
		if (c.more == 0)
			break;
		ck_assert_int_eq(kv_parse_more(held, held_len, &c), 0);
		calls++;
	}
	ck_assert_uint_eq(seen, 100);
	ck_assert_uint_eq(calls, 5);

	/* A too-long key in the second batch: the first batch is fine. */
	c = ok(get_line(30, 27), KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, KV_KEYS_MAX);
	ck_assert_int_eq(kv_parse_more(held, held_len, &c), -1);
	ck_assert_str_eq(c.error, KV_ERR_FORMAT);
	ck_assert_uint_eq(c.nkeys, 0);

	/* Trailing spaces after a full batch leave nothing more. */
	char line[4096];
	const char *full = get_line(KV_KEYS_MAX, -1);
	size_t flen = strlen(full);
	ck_assert_uint_lt(flen + 5, sizeof(line));
	memcpy(line, full, flen);
	memcpy(line + flen, "    ", 5);
	c = ok(line, KV_CMD_GET);
	ck_assert_uint_eq(c.nkeys, KV_KEYS_MAX);
	ck_assert_uint_eq(c.more, 0);

	/* gat: the exptime is not a key. */
	c = ok("gat 5 a b c d e f g h i j k l m n o p q r s t u v w x y z", KV_CMD_GAT);
	ck_assert_int_eq(c.exptime, 5);
	ck_assert_uint_eq(c.nkeys, KV_KEYS_MAX);
	key_is(&c, 0, "a");
	ck_assert_int_eq(kv_parse_more(held, held_len, &c), 0);
	ck_assert_uint_eq(c.nkeys, 2);
	key_is(&c, 1, "z");
	ck_assert_int_eq(c.exptime, 5);
}
END_TEST

/* --- storage commands ---------------------------------------------------- */

START_TEST(storage_fields)
{
	static const struct {
		const char *name;
		enum kv_command cmd;
	} cmds[] = {{"set", KV_CMD_SET},
		    {"add", KV_CMD_ADD},
		    {"replace", KV_CMD_REPLACE},
		    {"append", KV_CMD_APPEND},
		    {"prepend", KV_CMD_PREPEND}};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char line[128];
		sprintf(line, "%s mykey 42 3600 10", cmds[i].name);
		struct kv_cmd c = ok(line, cmds[i].cmd);
		ck_assert_uint_eq(c.nkeys, 1);
		key_is(&c, 0, "mykey");
		ck_assert_uint_eq(c.flags, 42);
		ck_assert_int_eq(c.exptime, 3600);
		ck_assert_uint_eq(c.bytes, 10);
		ck_assert_int_eq(c.noreply, 0);

		sprintf(line, "%s  k   0  -5   0   noreply", cmds[i].name);
		c = ok(line, cmds[i].cmd);
		key_is(&c, 0, "k");
		ck_assert_uint_eq(c.flags, 0);
		ck_assert_int_eq(c.exptime, -5);
		ck_assert_uint_eq(c.bytes, 0);
		ck_assert_int_eq(c.noreply, 1);
	}

	/* memcached ignores a sixth token that is not noreply. */
	struct kv_cmd c = ok("set k 1 2 3 junk", KV_CMD_SET);
	ck_assert_int_eq(c.noreply, 0);
	ck_assert_uint_eq(c.bytes, 3);

	c = ok("set k +7 +8 +9", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 7);
	ck_assert_int_eq(c.exptime, 8);
	ck_assert_uint_eq(c.bytes, 9);
	c = ok("set k -0 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 0);
}
END_TEST

START_TEST(storage_boundaries)
{
	struct kv_cmd c = ok("set k 4294967295 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, UINT32_MAX);
	/* Flags: strtoul over 64 bits, then cut to 32 (memcached stores 2^32 as 0). */
	c = ok("set k 4294967296 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 0);
	c = ok("set k 4294967297 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 1);
	c = ok("set k 18446744073709551615 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, UINT32_MAX);
	c = ok("set k 9223372036854775808 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 0);
	c = ok("set k -18446744073709551615 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 1);
	bad("set k 18446744073709551616 0 1", KV_ERR_FORMAT);
	bad("set k -1 0 1", KV_ERR_FORMAT);
	bad("set k -4294967296 0 1", KV_ERR_FORMAT);

	/* Exptime: strtol over 64 bits, then cut to int32. */
	c = ok("set k 0 2147483647 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, INT32_MAX);
	c = ok("set k 0 -2147483648 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, INT32_MIN);
	c = ok("set k 0 2147483648 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, INT32_MIN);
	c = ok("set k 0 -2147483649 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, INT32_MAX);
	c = ok("set k 0 4294967296 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, 0);
	c = ok("set k 0 4294967396 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, 100);
	c = ok("set k 0 -4294967295 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, 1);
	c = ok("set k 0 9223372036854775807 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, -1);
	c = ok("set k 0 -9223372036854775808 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, 0);
	bad("set k 0 9223372036854775808 1", KV_ERR_FORMAT);
	bad("set k 0 -9223372036854775809 1", KV_ERR_FORMAT);

	/* Length: the same int32 cut, then 0..INT32_MAX - 2. */
	c = ok("set k 0 0 2147483645", KV_CMD_SET);
	ck_assert_uint_eq(c.bytes, KV_BYTES_MAX);
	c = ok("set k 0 0 4294967296", KV_CMD_SET);
	ck_assert_uint_eq(c.bytes, 0);
	c = ok("set k 0 0 4294967297", KV_CMD_SET);
	ck_assert_uint_eq(c.bytes, 1);
	c = ok("set k 0 0 -4294967295", KV_CMD_SET);
	ck_assert_uint_eq(c.bytes, 1);
	bad("set k 0 0 2147483646", KV_ERR_FORMAT);
	bad("set k 0 0 2147483647", KV_ERR_FORMAT);
	bad("set k 0 0 2147483648", KV_ERR_FORMAT);
	bad("set k 0 0 4294967295", KV_ERR_FORMAT);
	bad("set k 0 0 -1", KV_ERR_FORMAT);
	bad("set k 0 0 -1 noreply", KV_ERR_FORMAT);
	bad("set k 0 0 9223372036854775808", KV_ERR_FORMAT);

	c = ok(with_key("set ", KV_KEY_MAX, " 0 0 1"), KV_CMD_SET);
	ck_assert_uint_eq(c.keys[0].len, KV_KEY_MAX);
	bad(with_key("set ", KV_KEY_MAX + 1, " 0 0 1"), KV_ERR_FORMAT);
	c = ok("set a\x02 0 0 1", KV_CMD_SET);
	key_is(&c, 0, "a\x02");
}
END_TEST

START_TEST(storage_errors)
{
	struct kv_cmd c;
	bad("set", KV_ERR_ERROR);
	bad("set k", KV_ERR_ERROR);
	bad("set k 0 0", KV_ERR_ERROR);
	bad("set k 0 0 1 noreply extra", KV_ERR_ERROR);
	bad("add k 0 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23", KV_ERR_ERROR);
	bad("set k 1x 0 1", KV_ERR_FORMAT);
	bad("set k 0 10x 1", KV_ERR_FORMAT);
	bad("set k 0 0 1x", KV_ERR_FORMAT);
	bad("set k 0 0 x", KV_ERR_FORMAT);
	bad("set k 0 0 +", KV_ERR_FORMAT);
	bad("set k 0 0 -", KV_ERR_FORMAT);
	bad("set k 0x10 0 1", KV_ERR_FORMAT);
	bad("set k 1.5 0 1", KV_ERR_FORMAT);
	/* Whitespace other than ' ' may lead a number, and may end it before junk. */
	c = ok("replace k \t5 0\t 1\tjunk", KV_CMD_REPLACE);
	ck_assert_uint_eq(c.flags, 5);
	ck_assert_uint_eq(c.bytes, 1);
	c = ok("set k 0 \v7\r 1", KV_CMD_SET);
	ck_assert_int_eq(c.exptime, 7);
	bad("set k 0 0 \t", KV_ERR_FORMAT);
	/* The '-' check on a value negative as int64 looks at the whole token. */
	c = ok("set k 5\t-x 0 1", KV_CMD_SET);
	ck_assert_uint_eq(c.flags, 5);
	bad("set k 9223372036854775808\t- 0 1", KV_ERR_FORMAT);

	/* noreply is reported even when the line is bad, so a server can stay silent. */
	c = bad("set k x 0 1 noreply", KV_ERR_FORMAT);
	ck_assert_int_eq(c.noreply, 1);
	/* Only the last token counts. */
	bad("set k noreply 0 1", KV_ERR_FORMAT);
}
END_TEST

START_TEST(cas_fields)
{
	struct kv_cmd c = ok("cas k 3 60 5 12345", KV_CMD_CAS);
	key_is(&c, 0, "k");
	ck_assert_uint_eq(c.flags, 3);
	ck_assert_int_eq(c.exptime, 60);
	ck_assert_uint_eq(c.bytes, 5);
	ck_assert_uint_eq(c.cas, 12345);
	ck_assert_int_eq(c.noreply, 0);

	c = ok("cas k 0 0 1 0 noreply", KV_CMD_CAS);
	ck_assert_uint_eq(c.cas, 0);
	ck_assert_int_eq(c.noreply, 1);

	c = ok("cas k 0 0 1 18446744073709551615", KV_CMD_CAS);
	ck_assert_uint_eq(c.cas, UINT64_MAX);

	bad("cas k 0 0 1 18446744073709551616", KV_ERR_FORMAT);
	bad("cas k 0 0 1 -1", KV_ERR_FORMAT);
	bad("cas k 0 0 1 12a", KV_ERR_FORMAT);
	bad("cas k 0 0 1 abc", KV_ERR_FORMAT);
	c = ok("cas k 0 0 1 -18446744073709551615", KV_CMD_CAS);
	ck_assert_uint_eq(c.cas, 1);
	bad("cas k 0 0 1", KV_ERR_ERROR);
	bad("cas k 0 0 1 1 noreply x", KV_ERR_ERROR);
	bad("cas k 0 0 -1 1", KV_ERR_FORMAT);
	bad(with_key("cas ", KV_KEY_MAX + 1, " 0 0 1 1"), KV_ERR_FORMAT);
}
END_TEST

/* --- delete, incr/decr, touch -------------------------------------------- */

START_TEST(delete_forms)
{
	struct kv_cmd c = ok("delete k", KV_CMD_DELETE);
	key_is(&c, 0, "k");
	ck_assert_int_eq(c.noreply, 0);
	c = ok("delete k noreply", KV_CMD_DELETE);
	ck_assert_int_eq(c.noreply, 1);
	c = ok("delete k 0", KV_CMD_DELETE);
	ck_assert_int_eq(c.noreply, 0);
	c = ok("delete k 0 noreply", KV_CMD_DELETE);
	ck_assert_int_eq(c.noreply, 1);

	bad("delete k 5", KV_ERR_DELETE);
	bad("delete k 00", KV_ERR_DELETE);
	bad("delete k 0 foo", KV_ERR_DELETE);
	bad("delete k 1 noreply", KV_ERR_DELETE);
	bad("delete", KV_ERR_ERROR);
	bad("delete a b c d", KV_ERR_ERROR);
	ck_assert_str_eq(KV_ERR_DELETE,
			 "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
	ok(with_key("delete ", KV_KEY_MAX, ""), KV_CMD_DELETE);
	bad(with_key("delete ", KV_KEY_MAX + 1, ""), KV_ERR_FORMAT);
	bad(with_key("delete ", KV_KEY_MAX + 1, " noreply"), KV_ERR_FORMAT);
	struct kv_cmd d = ok("delete \x1b[0m", KV_CMD_DELETE);
	key_is(&d, 0, "\x1b[0m");
}
END_TEST

START_TEST(arith_forms)
{
	struct kv_cmd c = ok("incr counter 5", KV_CMD_INCR);
	key_is(&c, 0, "counter");
	ck_assert_uint_eq(c.delta, 5);
	ck_assert_int_eq(c.noreply, 0);

	c = ok("decr counter 18446744073709551615 noreply", KV_CMD_DECR);
	ck_assert_uint_eq(c.delta, UINT64_MAX);
	ck_assert_int_eq(c.noreply, 1);

	c = ok("incr c 0", KV_CMD_INCR);
	ck_assert_uint_eq(c.delta, 0);

	bad("incr c abc", KV_ERR_DELTA);
	bad("incr c 5abc", KV_ERR_DELTA);
	bad("decr c -1", KV_ERR_DELTA);
	bad("incr c 18446744073709551616", KV_ERR_DELTA);
	/* strtoull: a '-' negates modulo 2^64; only a result negative as int64 is refused. */
	c = ok("incr c -18446744073709551615", KV_CMD_INCR);
	ck_assert_uint_eq(c.delta, 1);
	c = ok("decr c -0", KV_CMD_DECR);
	ck_assert_uint_eq(c.delta, 0);
	c = ok("incr c +3\tx", KV_CMD_INCR);
	ck_assert_uint_eq(c.delta, 3);
	c = ok("incr c 9223372036854775808", KV_CMD_INCR);
	ck_assert_uint_eq(c.delta, (uint64_t)1 << 63);
	bad("incr c -9223372036854775808", KV_ERR_DELTA);
	bad("incr c", KV_ERR_ERROR);
	bad("incr", KV_ERR_ERROR);
	bad("decr c 1 noreply x", KV_ERR_ERROR);
	bad(with_key("incr ", KV_KEY_MAX + 1, " 1"), KV_ERR_FORMAT);
	ck_assert_str_eq(KV_ERR_DELTA, "CLIENT_ERROR invalid numeric delta argument");
}
END_TEST

START_TEST(touch_forms)
{
	struct kv_cmd c = ok("touch k 10", KV_CMD_TOUCH);
	key_is(&c, 0, "k");
	ck_assert_int_eq(c.exptime, 10);
	ck_assert_int_eq(c.noreply, 0);

	c = ok("touch k -1 noreply", KV_CMD_TOUCH);
	ck_assert_int_eq(c.exptime, -1);
	ck_assert_int_eq(c.noreply, 1);

	bad("touch k x", KV_ERR_EXPTIME);
	bad("touch k 10s", KV_ERR_EXPTIME);
	c = ok("touch k 2147483648", KV_CMD_TOUCH);
	ck_assert_int_eq(c.exptime, INT32_MIN);
	c = ok("touch k 4294967296", KV_CMD_TOUCH);
	ck_assert_int_eq(c.exptime, 0);
	bad("touch k 9223372036854775808", KV_ERR_EXPTIME);
	bad("touch k", KV_ERR_ERROR);
	bad("touch k 1 noreply x", KV_ERR_ERROR);
	bad(with_key("touch ", KV_KEY_MAX + 1, " 1"), KV_ERR_FORMAT);
	ck_assert_str_eq(KV_ERR_EXPTIME, "CLIENT_ERROR invalid exptime argument");
}
END_TEST

/* --- numbers ------------------------------------------------------------- */

/* kv_num_* over a heap copy of exactly the string's bytes (n given: NULs allowed). */
static int num_i32(const char *s, size_t n, int32_t *out)
{
	char *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p, s, n);
	int r = kv_num_i32(p, n, out);
	free(p);
	return r;
}

static int num_u64(const char *s, size_t n, uint64_t *out)
{
	char *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p, s, n);
	int r = kv_num_u64(p, n, out);
	free(p);
	return r;
}

#define I32_OK(s, want)                                                                            \
	do {                                                                                       \
		int32_t v_ = 12345;                                                                \
		ck_assert_msg(num_i32(s, sizeof(s) - 1, &v_), "\"%s\" refused", s);                \
		ck_assert_int_eq(v_, want);                                                        \
	} while (0)
#define I32_BAD(s)                                                                                 \
	do {                                                                                       \
		int32_t v_;                                                                        \
		ck_assert_msg(!num_i32(s, sizeof(s) - 1, &v_), "\"%s\" accepted", s);              \
	} while (0)
#define U64_OK(s, want)                                                                            \
	do {                                                                                       \
		uint64_t v_ = 12345;                                                               \
		ck_assert_msg(num_u64(s, sizeof(s) - 1, &v_), "\"%s\" refused", s);                \
		ck_assert_uint_eq(v_, want);                                                       \
	} while (0)
#define U64_BAD(s)                                                                                 \
	do {                                                                                       \
		uint64_t v_;                                                                       \
		ck_assert_msg(!num_u64(s, sizeof(s) - 1, &v_), "\"%s\" accepted", s);              \
	} while (0)

START_TEST(numbers_as_strtol)
{
	I32_OK("0", 0);
	I32_OK("+17", 17);
	I32_OK("-17", -17);
	I32_OK("\t\n\v\f\r5", 5);
	I32_OK("5\t", 5);
	I32_OK("5\rjunk", 5);
	I32_OK("2147483648", INT32_MIN);
	I32_OK("4294967295", -1);
	I32_OK("4294967297", 1);
	I32_OK("9223372036854775807", -1);
	I32_OK("-9223372036854775808", 0);
	I32_OK("00000000000000000000000000042", 42);
	/* A NUL ends the token, as it ends memcached's C string. */
	I32_OK("7\0junk", 7);
	I32_BAD("\0007");
	I32_BAD("");
	I32_BAD("+");
	I32_BAD("-");
	I32_BAD("\t");
	I32_BAD("5x");
	I32_BAD("0x5");
	I32_BAD("1.5");
	I32_BAD("+-5");
	I32_BAD("9223372036854775808");
	I32_BAD("-9223372036854775809");
	I32_BAD("99999999999999999999999");
}
END_TEST

START_TEST(numbers_as_strtoull)
{
	U64_OK("0", 0);
	U64_OK("-0", 0);
	U64_OK("+5", 5);
	U64_OK("18446744073709551615", UINT64_MAX);
	U64_OK("9223372036854775808", (uint64_t)1 << 63);
	U64_OK("-18446744073709551615", 1);
	U64_OK("-9223372036854775809", (uint64_t)INT64_MAX);
	U64_BAD("-9223372036854775807");
	U64_OK("5\t-", 5);
	U64_OK("\v5\0-", 5);
	U64_BAD("-1");
	U64_BAD("-9223372036854775808");
	U64_BAD("9223372036854775808\t-");
	U64_BAD("18446744073709551616");
	U64_BAD("-18446744073709551616");
	U64_BAD("5-");
	U64_BAD("");

	uint32_t v32;
	ck_assert(kv_num_u32("4294967296", 10, &v32));
	ck_assert_uint_eq(v32, 0);
	ck_assert(kv_num_u32("4294967297", 10, &v32));
	ck_assert_uint_eq(v32, 1);
	ck_assert(!kv_num_u32("-1", 2, &v32));
}
END_TEST

START_TEST(memcached_item_size)
{
	/* memcached 1.6.18: "me k" says size=61 for value "v" with flags 0, 65 with flags 5. */
	ck_assert_uint_eq(kv_mc_item_size(1, 0, 1), 61);
	ck_assert_uint_eq(kv_mc_item_size(1, 5, 1), 65);
	/* The largest value memcached stores at -I 1m with a 1-byte key and flags 0. */
	ck_assert_uint_eq(kv_mc_item_size(1, 0, 1048516), 1048576);
}
END_TEST

/* --- the rest ------------------------------------------------------------ */

START_TEST(flush_all_forms)
{
	struct kv_cmd c = ok("flush_all", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, 0);
	ck_assert_int_eq(c.noreply, 0);

	c = ok("flush_all 10", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, 10);

	c = ok("flush_all noreply", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, 0);
	ck_assert_int_eq(c.noreply, 1);

	c = ok("flush_all 30 noreply", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, 30);
	ck_assert_int_eq(c.noreply, 1);

	c = ok("flush_all -1", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, -1);

	bad("flush_all x", KV_ERR_EXPTIME);
	c = bad("flush_all abc noreply", KV_ERR_EXPTIME);
	ck_assert_int_eq(c.noreply, 1);
	c = ok("flush_all 2147483648", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, INT32_MIN);
	c = ok("flush_all 4294967396", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, 100);
	bad("flush_all 9223372036854775808", KV_ERR_EXPTIME);
	/* memcached reads the delay and ignores a third token that is not noreply. */
	c = ok("flush_all 10 x", KV_CMD_FLUSH_ALL);
	ck_assert_int_eq(c.delay, 10);
	ck_assert_int_eq(c.noreply, 0);
	bad("flush_all 1 2 3", KV_ERR_ERROR);
}
END_TEST

START_TEST(verbosity_forms)
{
	struct kv_cmd c = ok("verbosity 1", KV_CMD_VERBOSITY);
	ck_assert_uint_eq(c.level, 1);
	ck_assert_int_eq(c.noreply, 0);

	c = ok("verbosity 2 noreply", KV_CMD_VERBOSITY);
	ck_assert_uint_eq(c.level, 2);
	ck_assert_int_eq(c.noreply, 1);

	c = bad("verbosity noreply", KV_ERR_FORMAT);
	ck_assert_int_eq(c.noreply, 1);
	bad("verbosity x", KV_ERR_FORMAT);
	bad("verbosity abc", KV_ERR_FORMAT);
	bad("verbosity -1", KV_ERR_FORMAT);
	bad("verbosity 18446744073709551616", KV_ERR_FORMAT);
	c = ok("verbosity 4294967296", KV_CMD_VERBOSITY);
	ck_assert_uint_eq(c.level, 0);
	c = ok("verbosity 1\tx", KV_CMD_VERBOSITY);
	ck_assert_uint_eq(c.level, 1);
	bad("verbosity", KV_ERR_ERROR);
	bad("verbosity 1 2 3", KV_ERR_ERROR);
}
END_TEST

START_TEST(simple_commands)
{
	ok("version", KV_CMD_VERSION);
	ok("quit", KV_CMD_QUIT);
	ok("  quit  ", KV_CMD_QUIT);
	/* memcached takes their arguments without complaint. */
	ok("version please", KV_CMD_VERSION);
	ok("quit now", KV_CMD_QUIT);
}
END_TEST

START_TEST(stats_forms)
{
	struct kv_cmd c = ok("stats", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_NONE);
	ck_assert_uint_eq(c.args.len, 0);

	c = ok("stats settings", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_SETTINGS);
	c = ok("stats items", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_ITEMS);
	c = ok("stats slabs", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_SLABS);
	c = ok("stats reset", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_RESET);

	c = ok("stats  detail on  ", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_OTHER);
	ck_assert_uint_eq(c.args.len, strlen("detail on"));
	ck_assert(memcmp(c.args.ptr, "detail on", c.args.len) == 0);

	c = ok("stats cachedump 1 0", KV_CMD_STATS);
	ck_assert_int_eq(c.stats, KV_STATS_OTHER);
	ck_assert(memcmp(c.args.ptr, "cachedump 1 0", c.args.len) == 0);
}
END_TEST

START_TEST(unknown_and_empty)
{
	struct kv_cmd c = bad("", KV_ERR_ERROR);
	ck_assert_int_eq(c.cmd, KV_CMD_UNKNOWN);
	ck_assert_int_eq(c.close, 0);
	bad("     ", KV_ERR_ERROR);
	c = bad("frobnicate a b", KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 0);
	ck_assert_int_eq(c.cmd, KV_CMD_UNKNOWN);
	bad("Set k 0 0 1", KV_ERR_ERROR);
	bad("get\tk", KV_ERR_ERROR);

	c = bad("GET / HTTP/1.1", KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 1);
	c = bad("POST /x HTTP/1.0  ", KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 1);
	c = bad("GET / HTTP", KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 0);
	c = bad("G HTTP/1.1", KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 0);
	/* Past 23 tokens memcached looks at the 23rd, not the last. */
	char line[256];
	size_t n = (size_t)sprintf(line, "foo");
	for (int i = 0; i < 30; i++)
		n += (size_t)sprintf(line + n, " x");
	sprintf(line + n, " HTTP/1.1");
	c = bad(line, KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 0);
	n = (size_t)sprintf(line, "foo");
	for (int i = 0; i < 21; i++)
		n += (size_t)sprintf(line + n, " x");
	sprintf(line + n, " HTTP/1.1 y z");
	c = bad(line, KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 1);
	/* A known command never closes, whatever its last token. */
	c = bad("set HTTP/1.1", KV_ERR_ERROR);
	ck_assert_int_eq(c.close, 0);

	ck_assert_int_eq(kv_parse(NULL, 0, &c), -1);
	ck_assert_str_eq(c.error, KV_ERR_ERROR);
	ck_assert_str_eq(KV_ERR_FORMAT, "CLIENT_ERROR bad command line format");
}
END_TEST

START_TEST(line_limits)
{
	ck_assert_int_eq(kv_line_too_long(KV_LINE_MAX, 0), 0);
	ck_assert_int_eq(kv_line_too_long(KV_LINE_MAX + 1, 0), 1);
	ck_assert_int_eq(kv_line_too_long(KV_LINE_MAX + 1, 1), 0);
	ck_assert_int_eq(kv_line_too_long(1 << 20, 1), 0);

	ck_assert_int_eq(kv_line_is_get_prefix("get k", 5), 1);
	ck_assert_int_eq(kv_line_is_get_prefix("gets k", 6), 1);
	ck_assert_int_eq(kv_line_is_get_prefix("   get k", 8), 1);
	ck_assert_int_eq(kv_line_is_get_prefix("get", 3), 0);
	ck_assert_int_eq(kv_line_is_get_prefix("gat 1 k", 7), 0);
	ck_assert_int_eq(kv_line_is_get_prefix("set k", 5), 0);
	ck_assert_int_eq(kv_line_is_get_prefix("", 0), 0);

	char buf[200];
	memset(buf, ' ', sizeof(buf));
	memcpy(buf + 100, "get k", 5);
	ck_assert_int_eq(kv_line_is_get_prefix(buf, 105), 1);
	memcpy(buf + 101, "get k", 5);
	ck_assert_int_eq(kv_line_is_get_prefix(buf, 106), 0);
}
END_TEST

START_TEST(data_chunks)
{
	ck_assert_int_eq(kv_data_chunk_ok("hello\r\n", 7, 5), KV_CHUNK_OK);
	ck_assert_int_eq(kv_data_chunk_ok("hello\r\nget k\r\n", 14, 5), KV_CHUNK_OK);
	ck_assert_int_eq(kv_data_chunk_ok("\r\n", 2, 0), KV_CHUNK_OK);
	ck_assert_int_eq(kv_data_chunk_ok("hello\r", 6, 5), KV_CHUNK_SHORT);
	ck_assert_int_eq(kv_data_chunk_ok("hel", 3, 5), KV_CHUNK_SHORT);
	ck_assert_int_eq(kv_data_chunk_ok("", 0, 0), KV_CHUNK_SHORT);
	ck_assert_int_eq(kv_data_chunk_ok("hello\nx", 7, 5), KV_CHUNK_BAD);
	ck_assert_int_eq(kv_data_chunk_ok("hello!\r\n", 8, 5), KV_CHUNK_BAD);
	ck_assert_int_eq(kv_data_chunk_ok("hell\r\n\r\n", 8, 5), KV_CHUNK_BAD);
	ck_assert_int_eq(kv_data_chunk_ok("a\r\r\n", 4, 2), KV_CHUNK_OK); /* the value is "a\r" */
	ck_assert_int_eq(kv_data_chunk_ok("a\n\r\n", 4, 1), KV_CHUNK_BAD);
	ck_assert_str_eq(KV_ERR_DATA_CHUNK, "CLIENT_ERROR bad data chunk");
}
END_TEST

/* --- randomized robustness ----------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static const char *const seeds[] = {
	"get a b c",
	"gets k",
	"gat 10 a b",
	"gats -1 k",
	"set k 0 0 1",
	"add key 4294967295 -1 10 noreply",
	"replace k 1 2 3",
	"append k 0 0 2147483645",
	"prepend k 0 0 0 noreply",
	"cas k 1 2 3 18446744073709551615 noreply",
	"delete k 0 noreply",
	"incr k 18446744073709551615",
	"decr k 1 noreply",
	"touch k 100 noreply",
	"flush_all 10 noreply",
	"version",
	"verbosity 1 noreply",
	"quit",
	"stats detail on",
	"GET / HTTP/1.1",
};

static const char alphabet[] = "getsadcrplhufinovqbyx0123456789 -+_/HTTP\r\n\t\x01\x7f\xff";

static const char *const words[] = {"get", "gets",  "gat",	  "set",   "cas", "noreply",   "0",
				    "-1",  "HTTP/", "4294967296", "stats", "  ",  "2147483646"};

/* A random line: a seed mutated, random words, or random bytes. */
static size_t make_line(char *buf, size_t cap)
{
	size_t n = 0;
	switch (rnd() % 4) {
	case 0: /* random bytes from a protocol-ish alphabet */
		n = rnd() % 80;
		for (size_t i = 0; i < n; i++)
			buf[i] = alphabet[rnd() % (sizeof(alphabet) - 1)];
		break;
	case 1: /* words */
		for (unsigned w = rnd() % 12; w > 0 && n + 16 < cap; w--) {
			const char *s = words[rnd() % (sizeof(words) / sizeof(words[0]))];
			size_t l = strlen(s);
			memcpy(buf + n, s, l);
			n += l;
			buf[n++] = ' ';
		}
		break;
	default: { /* a valid line, mutated */
		const char *s = seeds[rnd() % (sizeof(seeds) / sizeof(seeds[0]))];
		n = strlen(s);
		memcpy(buf, s, n);
		for (unsigned m = rnd() % 4; m > 0; m--) {
			size_t at = n ? rnd() % n : 0;
			switch (rnd() % 5) {
			case 0: /* flip a byte */
				if (n)
					buf[at] = (char)rnd();
				break;
			case 1: /* truncate */
				n = at;
				break;
			case 2: /* insert a long key-ish run */
			{
				size_t run = 240 + rnd() % 20;
				if (n + run + 1 < cap) {
					memmove(buf + at + run + 1, buf + at, n - at);
					memset(buf + at, 'z', run);
					buf[at + run] = ' ';
					n += run + 1;
				}
				break;
			}
			case 3: /* many more keys */
				for (unsigned k = rnd() % 60; k > 0 && n + 4 < cap; k--) {
					buf[n++] = ' ';
					buf[n++] = (char)('a' + rnd() % 26);
				}
				break;
			default: /* extra spaces */
				if (n + 3 < cap) {
					memmove(buf + at + 2, buf + at, n - at);
					buf[at] = buf[at + 1] = ' ';
					n += 2;
				}
				break;
			}
		}
		break;
	}
	}
	return n;
}

static int known_reply(const char *e)
{
	static const char *const replies[] = {KV_ERR_ERROR, KV_ERR_FORMAT, KV_ERR_DELTA,
					      KV_ERR_EXPTIME, KV_ERR_DELETE};
	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++)
		if (strcmp(e, replies[i]) == 0)
			return 1;
	return 0;
}

static void check_keys(const struct kv_cmd *c, const char *line, size_t len)
{
	ck_assert_uint_le(c->nkeys, KV_KEYS_MAX);
	for (unsigned i = 0; i < c->nkeys; i++) {
		const struct kv_span *k = &c->keys[i];
		ck_assert(k->ptr >= line && k->ptr + k->len <= line + len);
		ck_assert_uint_ge(k->len, 1);
		ck_assert_uint_le(k->len, KV_KEY_MAX);
		for (size_t j = 0; j < k->len; j++) {
			unsigned char ch = (unsigned char)k->ptr[j];
			ck_assert(ch != ' ');
		}
	}
}

static void check_result(int rc, const struct kv_cmd *c, const char *line, size_t len)
{
	if (rc == 0) {
		ck_assert_ptr_null(c->error);
		ck_assert_int_eq(c->close, 0);
		ck_assert_int_ne(c->cmd, KV_CMD_UNKNOWN);
	} else {
		ck_assert_int_eq(rc, -1);
		ck_assert_ptr_nonnull(c->error);
		ck_assert(known_reply(c->error));
		if (c->close)
			ck_assert_str_eq(c->error, KV_ERR_ERROR);
	}
	check_keys(c, line, len);
	ck_assert_uint_le(c->bytes, KV_BYTES_MAX);
	ck_assert(c->exptime >= INT32_MIN && c->exptime <= INT32_MAX);
	ck_assert(c->more == 0 || (c->more > 0 && c->more < len));
	if (c->args.len)
		ck_assert(c->args.ptr >= line && c->args.ptr + c->args.len <= line + len);
}

START_TEST(random_lines)
{
	enum { LINES = 200000 / TEST_SCALE, CAP = 4096 };
	char scratch[CAP];
	unsigned parsed = 0, batches = 0;
	for (unsigned i = 0; i < LINES; i++) {
		size_t n = make_line(scratch, CAP);
		ck_assert_uint_le(n, CAP);
		char *line = malloc(n ? n : 1);
		ck_assert_ptr_nonnull(line);
		memcpy(line, scratch, n);

		struct kv_cmd c;
		int rc = kv_parse(line, n, &c);
		check_result(rc, &c, line, n);
		parsed += rc == 0;
		for (unsigned guard = 0; rc == 0 && c.more != 0; guard++) {
			ck_assert_uint_lt(guard, n);
			size_t before = c.more;
			rc = kv_parse_more(line, n, &c);
			check_result(rc, &c, line, n);
			ck_assert(c.more == 0 || c.more > before);
			batches++;
		}
		free(line);
	}
	/* The generator reaches both outcomes and multi-batch gets. */
	ck_assert_uint_gt(parsed, LINES / 20);
	ck_assert_uint_lt(parsed, LINES - LINES / 20);
	ck_assert_uint_gt(batches, 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_proto");

	TCase *tc = tcase_create("get");
	tcase_add_test(tc, get_keys);
	tcase_add_test(tc, gat_keys);
	tcase_add_test(tc, get_errors);
	tcase_add_test(tc, get_batches);
	suite_add_tcase(s, tc);

	tc = tcase_create("storage");
	tcase_add_test(tc, storage_fields);
	tcase_add_test(tc, storage_boundaries);
	tcase_add_test(tc, storage_errors);
	tcase_add_test(tc, cas_fields);
	suite_add_tcase(s, tc);

	tc = tcase_create("numbers");
	tcase_add_test(tc, numbers_as_strtol);
	tcase_add_test(tc, numbers_as_strtoull);
	tcase_add_test(tc, memcached_item_size);
	suite_add_tcase(s, tc);

	tc = tcase_create("other");
	tcase_add_test(tc, delete_forms);
	tcase_add_test(tc, arith_forms);
	tcase_add_test(tc, touch_forms);
	tcase_add_test(tc, flush_all_forms);
	tcase_add_test(tc, verbosity_forms);
	tcase_add_test(tc, simple_commands);
	tcase_add_test(tc, stats_forms);
	tcase_add_test(tc, unknown_and_empty);
	suite_add_tcase(s, tc);

	tc = tcase_create("framing");
	tcase_add_test(tc, line_limits);
	tcase_add_test(tc, data_chunks);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 120 * TEST_SLOWDOWN);
	tcase_add_test(tc, random_lines);
	suite_add_tcase(s, tc);

	return test_run_suite(s);
}
