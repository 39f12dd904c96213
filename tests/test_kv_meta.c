/*
 * locus-kv's meta-protocol command-line parser (src/kv/protocol/meta.h): every
 * command, every flag and its value, every error reply memcached 1.6.18 sends
 * for a bad line and their precedence, base64 keys, the boundaries (250/251
 * byte keys, 17/18 flags, opaque 31/32 bytes, int32/uint32/uint64 numbers),
 * and a randomized run over random and mutated lines checking the result's
 * invariants.
 *
 * Every line is parsed from a heap copy of exactly its length, with no NUL
 * after it, so the address sanitizer build catches any read past len.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/meta.h"
#include "testutil.h"

/* The copy the last parse() read from; spans point into it. */
static char *held;
static size_t held_len;

static int parse_n(const char *s, size_t n, struct kv_meta *m)
{
	free(held);
	held = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(held);
	memcpy(held, s, n);
	held_len = n;
	return kv_meta_parse(held, n, m);
}

static int parse(const char *s, struct kv_meta *m)
{
	return parse_n(s, strlen(s), m);
}

static int inside(const void *p, size_t n)
{
	const char *c = p;
	return c >= held && c + n <= held + held_len;
}

static struct kv_meta ok(const char *s, enum kv_meta_command cmd)
{
	struct kv_meta m;
	int rc = parse(s, &m);
	ck_assert_msg(rc == 0, "\"%s\": expected success, got \"%s\"", s,
		      m.error ? m.error : "(null)");
	ck_assert_ptr_null(m.error);
	ck_assert_int_eq(m.cmd, cmd);
	ck_assert_int_eq(m.swallow, 0);
	return m;
}

static struct kv_meta bad(const char *s, const char *reply)
{
	struct kv_meta m;
	int rc = parse(s, &m);
	ck_assert_msg(rc == -1, "\"%s\": expected \"%s\", parsed", s, reply);
	ck_assert_ptr_nonnull(m.error);
	ck_assert_msg(strcmp(m.error, reply) == 0, "\"%s\": expected \"%s\", got \"%s\"", s, reply,
		      m.error);
	return m;
}

static void key_is(const struct kv_meta *m, const char *want, size_t n)
{
	ck_assert_uint_eq(m->key_len, n);
	ck_assert(memcmp(kv_meta_key(m), want, n) == 0);
	ck_assert(inside(m->key_raw.ptr, m->key_raw.len));
	if (!m->base64) {
		ck_assert_ptr_eq(kv_meta_key(m), m->key_raw.ptr);
		ck_assert_uint_eq(m->key_len, m->key_raw.len);
	} else {
		ck_assert_ptr_eq(kv_meta_key(m), (const char *)m->keybuf);
	}
}

static void raw_is(const struct kv_meta *m, const char *want)
{
	ck_assert_uint_eq(m->key_raw.len, strlen(want));
	ck_assert(memcmp(m->key_raw.ptr, want, m->key_raw.len) == 0);
}

static void order_is(const struct kv_meta *m, const char *want)
{
	ck_assert_uint_eq(m->nflags, strlen(want));
	ck_assert(memcmp(m->flag, want, m->nflags) == 0);
}

static void opaque_is(const struct kv_meta *m, const char *want)
{
	ck_assert_uint_eq(m->opaque.len, strlen(want));
	ck_assert(m->opaque.len == 0 || memcmp(m->opaque.ptr, want, m->opaque.len) == 0);
	if (m->opaque.len)
		ck_assert(inside(m->opaque.ptr, m->opaque.len));
}

/* "<prefix><n times ch><suffix>" in a static buffer. */
static const char *fill(const char *prefix, char ch, size_t n, const char *suffix)
{
	static char buf[2048];
	size_t p = strlen(prefix);
	ck_assert_uint_lt(p + n + strlen(suffix), sizeof(buf));
	memcpy(buf, prefix, p);
	memset(buf + p, ch, n);
	strcpy(buf + p + n, suffix);
	return buf;
}

/* --- commands ------------------------------------------------------------ */

START_TEST(mg_basic)
{
	struct kv_meta m = ok("mg foo", KV_META_GET);
	key_is(&m, "foo", 3);
	ck_assert_uint_eq(m.nflags, 0);
	ck_assert_uint_eq(m.present, 0);
	ck_assert_int_eq(m.base64, 0);
	ck_assert_int_eq(m.quiet, 0);
	ck_assert_int_eq(m.mode, 0);
	ck_assert_uint_eq(m.delta, 1);

	m = ok("mg foo v k f t s c h l O123 q", KV_META_GET);
	order_is(&m, "vkftschlOq");
	opaque_is(&m, "123");
	ck_assert_int_eq(m.quiet, 1);
	for (const char *p = "vkftschlOq"; *p; p++)
		ck_assert(kv_meta_has(&m, *p));
	ck_assert(!kv_meta_has(&m, 'b'));
	ck_assert(!kv_meta_has(&m, 'T'));
	ck_assert(!kv_meta_has(&m, '!'));

	/* Request order is kept: the server echoes in this order. */
	m = ok("mg foo O1 c k", KV_META_GET);
	order_is(&m, "Ock");
	m = ok("mg foo s v t", KV_META_GET);
	order_is(&m, "svt");

	/* Spaces: leading, repeated, trailing. */
	m = ok("   mg   foo   v   ", KV_META_GET);
	key_is(&m, "foo", 3);
	order_is(&m, "v");

	/* Bare flags ignore what follows their letter. */
	m = ok("mg foo v1 kxyz q0", KV_META_GET);
	order_is(&m, "vkq");
	ck_assert_int_eq(m.quiet, 1);

	/* Any non-control byte but space may be in a key. */
	m = ok("mg caf\xc3\xa9:{x}", KV_META_GET);
	key_is(&m, "caf\xc3\xa9:{x}", 9);
}
END_TEST

START_TEST(mg_numeric_flags)
{
	struct kv_meta m = ok("mg foo T30 N60 R5 C123 F5 D7 J9 Mx", KV_META_GET);
	ck_assert_int_eq(m.ttl, 30);
	ck_assert_int_eq(m.vivify_ttl, 60);
	ck_assert_int_eq(m.recache_ttl, 5);
	ck_assert_uint_eq(m.cas, 123);
	ck_assert_uint_eq(m.client_flags, 5);
	ck_assert_uint_eq(m.delta, 7);
	ck_assert_uint_eq(m.initial, 9);
	ck_assert_int_eq(m.mode, 'x'); /* mg keeps any mode byte and ignores it */
	order_is(&m, "TNRCFDJM");

	/* Bare I, L, P, u are accepted. */
	m = ok("mg foo I L P u", KV_META_GET);
	order_is(&m, "ILPu");

	/* ttls: negative kept, strtol forms, 64-bit long truncated to int32. */
	ck_assert_int_eq(ok("mg foo T-1", KV_META_GET).ttl, -1);
	ck_assert_int_eq(ok("mg foo T-2", KV_META_GET).ttl, -2);
	ck_assert_int_eq(ok("mg foo T-0", KV_META_GET).ttl, 0);
	ck_assert_int_eq(ok("mg foo T+5", KV_META_GET).ttl, 5);
	ck_assert_int_eq(ok("mg foo T\t5", KV_META_GET).ttl, 5);
	ck_assert_int_eq(ok("mg foo T5\tx", KV_META_GET).ttl, 5);
	ck_assert_int_eq(ok("mg foo T2147483647", KV_META_GET).ttl, INT32_MAX);
	ck_assert_int_eq(ok("mg foo T2147483648", KV_META_GET).ttl, INT32_MIN);
	ck_assert_int_eq(ok("mg foo T4294967306", KV_META_GET).ttl, 10);
	ck_assert_int_eq(ok("mg foo T99999999999", KV_META_GET).ttl, 1215752191);
	ck_assert_int_eq(ok("mg foo T9223372036854775807", KV_META_GET).ttl, -1);
	ck_assert_int_eq(ok("mg foo T-9223372036854775808", KV_META_GET).ttl, 0);
	bad("mg foo T9223372036854775808", KV_META_ERR_BAD_TOKEN);
	bad("mg foo T-9223372036854775809", KV_META_ERR_BAD_TOKEN);
	ck_assert_int_eq(ok("mg foo N-1", KV_META_GET).vivify_ttl, -1);
	ck_assert_int_eq(ok("mg foo R-5", KV_META_GET).recache_ttl, -5);

	/* 64-bit unsigned: C, D, J. */
	ck_assert_uint_eq(ok("mg foo C18446744073709551615", KV_META_GET).cas, UINT64_MAX);
	ck_assert_uint_eq(ok("mg foo C-18446744073709551615", KV_META_GET).cas, 1);
	ck_assert_uint_eq(ok("mg foo C-0", KV_META_GET).cas, 0);
	ck_assert_uint_eq(ok("mg foo C9223372036854775808", KV_META_GET).cas,
			  (uint64_t)INT64_MAX + 1);
	bad("mg foo C18446744073709551616", KV_META_ERR_BAD_TOKEN);
	bad("mg foo C-1", KV_META_ERR_BAD_TOKEN);
	bad("mg foo C-9223372036854775808", KV_META_ERR_BAD_TOKEN);
	/* A value negative as int64 is refused if a '-' is anywhere in the token (strchr). */
	bad("mg foo C9223372036854775808\t-", KV_META_ERR_BAD_TOKEN);
	bad("mg foo D9223372036854775808\tx-", KV_META_ERR_DELTA);
	ck_assert_uint_eq(ok("mg foo C9223372036854775808\t+", KV_META_GET).cas,
			  (uint64_t)INT64_MAX + 1);
	ck_assert_uint_eq(ok("mg foo C5\t-", KV_META_GET).cas, 5);
	ck_assert_uint_eq(ok("mg foo D18446744073709551615", KV_META_GET).delta, UINT64_MAX);
	ck_assert_uint_eq(ok("mg foo D-18446744073709551615", KV_META_GET).delta, 1);
	ck_assert_uint_eq(ok("mg foo J-0", KV_META_GET).initial, 0);

	/* F: read as 64 bits, truncated to 32. */
	ck_assert_uint_eq(ok("mg foo F4294967295", KV_META_GET).client_flags, UINT32_MAX);
	ck_assert_uint_eq(ok("mg foo F4294967296", KV_META_GET).client_flags, 0);
	ck_assert_uint_eq(ok("mg foo F18446744073709551615", KV_META_GET).client_flags, UINT32_MAX);
	ck_assert_uint_eq(ok("mg foo F+7", KV_META_GET).client_flags, 7);
	ck_assert_uint_eq(ok("mg foo F-0", KV_META_GET).client_flags, 0);
	ck_assert_uint_eq(ok("mg foo F-18446744073709551615", KV_META_GET).client_flags, 1);
	ck_assert_uint_eq(ok("mg foo F4294967297", KV_META_GET).client_flags, 1);
	bad("mg foo F-1", KV_ERR_FORMAT);
	bad("mg foo F18446744073709551616", KV_ERR_FORMAT);
}
END_TEST

START_TEST(ms_forms)
{
	struct kv_meta m = ok("ms foo 3", KV_META_SET);
	key_is(&m, "foo", 3);
	ck_assert_uint_eq(m.datalen, 3);
	ck_assert_int_eq(m.mode, 'S');
	ck_assert(!kv_meta_has(&m, 'M'));

	m = ok("ms foo 0 T0 F5 c k O9 q I C77", KV_META_SET);
	ck_assert_uint_eq(m.datalen, 0);
	ck_assert_int_eq(m.ttl, 0);
	ck_assert_uint_eq(m.client_flags, 5);
	ck_assert_uint_eq(m.cas, 77);
	ck_assert_int_eq(m.quiet, 1);
	opaque_is(&m, "9");
	order_is(&m, "TFckOqIC");

	const char *modes = "EAPRS";
	for (const char *p = modes; *p; p++) {
		char line[32];
		snprintf(line, sizeof(line), "ms foo 3 M%c", *p);
		m = ok(line, KV_META_SET);
		ck_assert_int_eq(m.mode, *p);
		ck_assert(kv_meta_has(&m, 'M'));
	}

	/* datalen: strtol forms, truncated to int32, then 0..INT32_MAX - 2. */
	ck_assert_uint_eq(ok("ms foo +3", KV_META_SET).datalen, 3);
	ck_assert_uint_eq(ok("ms foo 4294967299", KV_META_SET).datalen, 3);
	ck_assert_uint_eq(ok("ms foo 2147483645", KV_META_SET).datalen, KV_BYTES_MAX);
	ck_assert_uint_eq(ok("ms foo 99999999999", KV_META_SET).datalen, 1215752191);
	ck_assert_uint_eq(ok("ms foo 1048577", KV_META_SET).datalen, 1048577);
}
END_TEST

START_TEST(ms_errors)
{
	bad("ms", KV_ERR_ERROR);
	bad("ms foo", KV_ERR_FORMAT);
	/* Before datalen: no swallow. */
	struct kv_meta m = bad("ms foo x", KV_ERR_FORMAT);
	ck_assert_int_eq(m.swallow, 0);
	ck_assert_int_eq(bad("ms foo -1", KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(bad("ms foo 3x", KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(bad("ms foo 2147483646", KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(bad("ms foo 2147483648", KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(bad("ms foo 9223372036854775808", KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(bad("ms foo x z", KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(bad(fill("ms ", 'k', 251, " 3"), KV_ERR_FORMAT).swallow, 0);
	ck_assert_int_eq(
		bad("ms foo 3 c f h k l O s t u v I L P C1 D1 F1 J1", KV_META_ERR_TOO_LONG).swallow,
		0);

	/* After datalen: the data block is to be swallowed. */
	m = bad("ms foo 3 z", KV_META_ERR_INVALID_FLAG);
	ck_assert_int_eq(m.swallow, 1);
	ck_assert_uint_eq(m.datalen, 3);
	ck_assert_int_eq(bad("ms foo 3 T", KV_META_ERR_BAD_TOKEN).swallow, 1);
	ck_assert_int_eq(bad("ms foo 3 c c", KV_META_ERR_DUP_FLAG).swallow, 1);
	ck_assert_int_eq(bad("ms foo 3 b", KV_META_ERR_DECODE_KEY).swallow, 1);
	ck_assert_int_eq(bad("ms foo 3 S3", KV_META_ERR_INVALID_FLAG).swallow, 1);
	ck_assert_int_eq(bad("ms foo 3 E5", KV_META_ERR_INVALID_FLAG).swallow, 1);
	ck_assert_int_eq(bad("ms foo 3 M", KV_META_ERR_M_LENGTH).swallow, 1);
	ck_assert_int_eq(bad("ms foo 3 MSS", KV_META_ERR_M_LENGTH).swallow, 1);
	const char *badmodes[] = {"Ms", "Me", "Ma", "Mp", "Mr", "MX", "MI", "M+", "M-", "MD"};
	for (unsigned i = 0; i < sizeof(badmodes) / sizeof(badmodes[0]); i++) {
		char line[32];
		snprintf(line, sizeof(line), "ms foo 3 %s", badmodes[i]);
		ck_assert_int_eq(bad(line, KV_META_ERR_MODE_MS).swallow, 1);
	}
	ck_assert_int_eq(bad(fill("ms foo 3 O", 'a', 32, ""), KV_META_ERR_OPAQUE).swallow, 1);
	/* A bad mode overrides a long opaque, wherever it is. */
	bad(fill("ms foo 3 MX O", 'a', 40, ""), KV_META_ERR_MODE_MS);
	bad(fill("ms foo 3 O", 'a', 40, " MX"), KV_META_ERR_MODE_MS);
	/* Flag errors come before the mode check. */
	bad("ms foo 3 MX T", KV_META_ERR_BAD_TOKEN);
	bad("ms foo 3 T MX", KV_META_ERR_BAD_TOKEN);
	/* ms has room for 16 flags. */
	ok("ms foo 3 c f h k l O s t u v I L P C1 D1", KV_META_SET);
}
END_TEST

START_TEST(md_forms)
{
	struct kv_meta m = ok("md foo", KV_META_DELETE);
	key_is(&m, "foo", 3);
	ck_assert_int_eq(m.mode, 0);
	m = ok("md foo q k O5 C9 I T30", KV_META_DELETE);
	order_is(&m, "qkOCIT");
	ck_assert_uint_eq(m.cas, 9);
	ck_assert_int_eq(m.ttl, 30);
	opaque_is(&m, "5");
	/* md ignores the mode byte. */
	ck_assert_int_eq(ok("md foo MX", KV_META_DELETE).mode, 'X');

	bad("md", KV_ERR_ERROR);
	bad(fill("md ", 'k', 251, ""), KV_ERR_FORMAT);
	/* Every flag-scan error is the one generic reply for md. */
	bad("md foo z", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo k k", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo F1 F2", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo C", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo Tx", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo F", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo D", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo J", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo M", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo b", KV_META_ERR_INVALID_OR_DUP);
	bad("md foo E1", KV_META_ERR_INVALID_OR_DUP);
	bad(fill("md foo z O", 'a', 40, ""), KV_META_ERR_INVALID_OR_DUP);
	bad(fill("md foo O", 'a', 32, ""), KV_META_ERR_OPAQUE);
	bad("md foo c f h k l O s t u v I L P C1 D1 F1 J1 N1", KV_META_ERR_TOO_LONG);
	ok("md foo c f h k l O s t u v I L P C1 D1 F1 J1", KV_META_DELETE);
}
END_TEST

START_TEST(ma_forms)
{
	struct kv_meta m = ok("ma foo", KV_META_ARITH);
	key_is(&m, "foo", 3);
	ck_assert_int_eq(m.mode, 'I');
	ck_assert_uint_eq(m.delta, 1);
	ck_assert_uint_eq(m.initial, 0);

	m = ok("ma foo N0 J5 D3 v q t c k O1 MD", KV_META_ARITH);
	ck_assert_int_eq(m.vivify_ttl, 0);
	ck_assert_uint_eq(m.initial, 5);
	ck_assert_uint_eq(m.delta, 3);
	ck_assert_int_eq(m.mode, 'D');
	order_is(&m, "NJDvqtckOM");
	const char *modes = "I+D-";
	for (const char *p = modes; *p; p++) {
		char line[32];
		snprintf(line, sizeof(line), "ma foo M%c", *p);
		ck_assert_int_eq(ok(line, KV_META_ARITH).mode, *p);
	}
	ck_assert_uint_eq(ok("ma foo D18446744073709551615", KV_META_ARITH).delta, UINT64_MAX);

	bad("ma", KV_ERR_ERROR);
	bad(fill("ma ", 'k', 251, ""), KV_ERR_FORMAT);
	bad("ma foo Mi", KV_META_ERR_MODE_MA);
	bad("ma foo Md", KV_META_ERR_MODE_MA);
	bad("ma foo MX", KV_META_ERR_MODE_MA);
	bad("ma foo M1", KV_META_ERR_MODE_MA);
	bad("ma foo MS", KV_META_ERR_MODE_MA);
	bad("ma foo MII", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo D-1", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo Dx", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo D18446744073709551616", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo J-1 N0", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo Nx", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo N1 N1", KV_META_ERR_INVALID_OR_DUP);
	bad("ma foo x", KV_META_ERR_INVALID_OR_DUP);
	bad(fill("ma foo MX O", 'a', 40, ""), KV_META_ERR_MODE_MA);
	bad(fill("ma foo O", 'a', 40, " MX"), KV_META_ERR_MODE_MA);
	bad(fill("ma foo O", 'a', 32, ""), KV_META_ERR_OPAQUE);
	bad("ma foo c f h k l O s t u v I L P C1 D1 F1 J1 N1", KV_META_ERR_TOO_LONG);
}
END_TEST

START_TEST(mn_me_forms)
{
	struct kv_meta m = ok("mn", KV_META_NOOP);
	ck_assert_uint_eq(m.key_len, 0);
	ok("mn foo bar", KV_META_NOOP);
	ok("  mn", KV_META_NOOP);
	ok(fill("mn", ' ', 30, "z z z z z z z z z z z z z z z z z z z z z z z"), KV_META_NOOP);

	m = ok("me foo", KV_META_DEBUG);
	key_is(&m, "foo", 3);
	ck_assert_int_eq(m.base64, 0);
	m = ok("me foo bar", KV_META_DEBUG);
	key_is(&m, "foo", 3);
	m = ok("me foo b1", KV_META_DEBUG);
	ck_assert_int_eq(m.base64, 0);
	m = ok("me foo B", KV_META_DEBUG);
	ck_assert_int_eq(m.base64, 0);
	m = ok("me Zm9v b", KV_META_DEBUG);
	ck_assert_int_eq(m.base64, 1);
	key_is(&m, "foo", 3);
	raw_is(&m, "Zm9v");
	m = ok("me Zm9v b x", KV_META_DEBUG);
	key_is(&m, "foo", 3);
	m = ok("me foo x b", KV_META_DEBUG); /* only the token right after the key counts */
	ck_assert_int_eq(m.base64, 0);
	ok(fill("me foo", ' ', 1, " z z z z z z z z z z z z z z z z z z z z z z"), KV_META_DEBUG);
	ok(fill("me ", 'k', 250, ""), KV_META_DEBUG);

	bad("me", KV_ERR_FORMAT);
	bad("me   ", KV_ERR_FORMAT);
	bad("me foo b", KV_ERR_FORMAT);
	bad("me foo  b", KV_ERR_FORMAT);
	bad(fill("me ", 'k', 251, ""), KV_ERR_FORMAT);
}
END_TEST

START_TEST(not_meta)
{
	struct kv_meta m = bad("", KV_ERR_ERROR);
	ck_assert_int_eq(m.cmd, KV_META_NONE);
	bad("    ", KV_ERR_ERROR);
	bad("mgfoo", KV_ERR_ERROR);
	bad("mga foo", KV_ERR_ERROR);
	bad("mg\tfoo v", KV_ERR_ERROR);
	bad("MG foo", KV_ERR_ERROR);
	bad("get foo", KV_ERR_ERROR);
	bad("m", KV_ERR_ERROR);
	bad("mx foo", KV_ERR_ERROR);
	m = bad("mg", KV_ERR_ERROR);
	ck_assert_int_eq(m.cmd, KV_META_GET);
	bad("mg   ", KV_ERR_ERROR);
	bad("md", KV_ERR_ERROR);

	ck_assert(kv_meta_is_meta("mg foo", 6));
	ck_assert(kv_meta_is_meta("  mn", 4));
	ck_assert(kv_meta_is_meta("me", 2));
	ck_assert(kv_meta_is_meta("ms foo 3", 8));
	ck_assert(kv_meta_is_meta("md x", 4));
	ck_assert(kv_meta_is_meta("ma x", 4));
	ck_assert(!kv_meta_is_meta("mgx", 3));
	ck_assert(!kv_meta_is_meta("mg foo", 1));
	ck_assert(!kv_meta_is_meta("get foo", 7));
	ck_assert(!kv_meta_is_meta("", 0));
	ck_assert(!kv_meta_is_meta("   ", 3));
}
END_TEST

/* --- errors and their precedence ---------------------------------------- */

START_TEST(flag_errors)
{
	/* Unknown flags, including the ones 1.6.18 does not have. */
	const char *invalid = "adegijmnoprwxyzABEGHKQSUVWXYZ19!~-+=";
	for (const char *p = invalid; *p; p++) {
		char line[32];
		snprintf(line, sizeof(line), "mg foo %c", *p);
		bad(line, KV_META_ERR_INVALID_FLAG);
		snprintf(line, sizeof(line), "mg foo %c1", *p);
		bad(line, KV_META_ERR_INVALID_FLAG);
	}
	bad("mg foo \x01", KV_META_ERR_INVALID_FLAG);
	bad("mg foo \xff", KV_META_ERR_INVALID_FLAG);
	bad("mg foo \t", KV_META_ERR_INVALID_FLAG);
	{
		struct kv_meta m;
		ck_assert_int_eq(parse_n("mg foo \0", 8, &m), -1);
		ck_assert_str_eq(m.error, KV_META_ERR_INVALID_FLAG);
	}

	/* Every accepted flag, bare and with an argument. */
	const char *bare = "bcfhklOqstuvILP";
	for (const char *p = bare; *p; p++) {
		char line[32];
		if (*p == 'b')
			continue;
		snprintf(line, sizeof(line), "mg foo %c", *p);
		ok(line, KV_META_GET);
		snprintf(line, sizeof(line), "mg foo %c1", *p);
		ok(line, KV_META_GET);
	}
	const struct {
		const char *line, *reply;
	} cases[] = {
		{"mg foo C", KV_META_ERR_BAD_TOKEN},
		{"mg foo Cx", KV_META_ERR_BAD_TOKEN},
		{"mg foo N", KV_META_ERR_BAD_TOKEN},
		{"mg foo Nx", KV_META_ERR_BAD_TOKEN},
		{"mg foo R", KV_META_ERR_BAD_TOKEN},
		{"mg foo Rx", KV_META_ERR_BAD_TOKEN},
		{"mg foo T", KV_META_ERR_BAD_TOKEN},
		{"mg foo Tabc", KV_META_ERR_BAD_TOKEN},
		{"mg foo T5x", KV_META_ERR_BAD_TOKEN},
		{"mg foo T+", KV_META_ERR_BAD_TOKEN},
		{"mg foo T-", KV_META_ERR_BAD_TOKEN},
		{"mg foo T\t", KV_META_ERR_BAD_TOKEN},
		{"mg foo D", KV_META_ERR_DELTA},
		{"mg foo Dx", KV_META_ERR_DELTA},
		{"mg foo J", KV_META_ERR_INITIAL},
		{"mg foo J-1", KV_META_ERR_INITIAL},
		{"mg foo F", KV_ERR_FORMAT},
		{"mg foo Fx", KV_ERR_FORMAT},
		{"mg foo M", KV_META_ERR_M_LENGTH},
		{"mg foo MSS", KV_META_ERR_M_LENGTH},
		{"mg foo v v", KV_META_ERR_DUP_FLAG},
		{"mg foo O O", KV_META_ERR_DUP_FLAG},
		{"mg foo Mx Mx", KV_META_ERR_DUP_FLAG},
		{"mg foo T1 T2", KV_META_ERR_DUP_FLAG},
		{"mg foo b", KV_META_ERR_DECODE_KEY},
		/* invalid/duplicate stop at once; the first one met wins */
		{"mg foo z v v", KV_META_ERR_INVALID_FLAG},
		{"mg foo v v z", KV_META_ERR_DUP_FLAG},
		{"mg foo MSS v v", KV_META_ERR_DUP_FLAG},
		{"mg foo b z", KV_META_ERR_INVALID_FLAG},
		{"mg foo Fx z", KV_META_ERR_INVALID_FLAG},
		/* the others are remembered; the last one wins */
		{"mg foo T b", KV_META_ERR_DECODE_KEY},
		{"mg foo b T", KV_META_ERR_BAD_TOKEN},
		{"mg foo Dx Jx", KV_META_ERR_INITIAL},
		{"mg foo Jx Dx", KV_META_ERR_DELTA},
		{"mg foo M T", KV_META_ERR_BAD_TOKEN},
		{"mg foo T M", KV_META_ERR_M_LENGTH},
		/* ... except F, which never replaces one */
		{"mg foo Fx T", KV_META_ERR_BAD_TOKEN},
		{"mg foo T Fx", KV_META_ERR_BAD_TOKEN},
		/* the flag scan comes before the opaque length */
		{"mg foo T Oaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", KV_META_ERR_BAD_TOKEN},
		{"mg foo Oaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa T", KV_META_ERR_BAD_TOKEN},
		/* a bad key before the token count, the count before the flags */
		{"mg foo z z z z z z z z z z z z z z z z z z", KV_META_ERR_TOO_LONG_MG},
		{"ms foo x z z z z z z z z z z z z z z z z z", KV_META_ERR_TOO_LONG},
	};
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad(cases[i].line, cases[i].reply);
	bad(fill("mg ", 'k', 251, " z z z z z z z z z z z z z z z z z z"), KV_ERR_FORMAT);
}
END_TEST

START_TEST(boundaries)
{
	/* Keys: 250 bytes fine, 251 not; control characters are key bytes, as in memcached. */
	struct kv_meta m = ok(fill("mg ", 'k', 250, " v"), KV_META_GET);
	ck_assert_uint_eq(m.key_len, 250);
	bad(fill("mg ", 'k', 251, " v"), KV_ERR_FORMAT);
	ck_assert_uint_eq(ok(fill("ms ", 'k', 250, " 3"), KV_META_SET).key_len, 250);
	ck_assert_uint_eq(ok(fill("md ", 'k', 250, ""), KV_META_DELETE).key_len, 250);
	ck_assert_uint_eq(ok(fill("ma ", 'k', 250, ""), KV_META_ARITH).key_len, 250);
	m = ok("mg fo\x01o v", KV_META_GET);
	key_is(&m, "fo\x01o", 4);
	m = ok("mg fo\x7fo v", KV_META_GET);
	key_is(&m, "fo\x7fo", 4);
	m = ok("mg fo\to v", KV_META_GET);
	key_is(&m, "fo\to", 4);
	m = ok("ms fo\ro 3", KV_META_SET);
	key_is(&m, "fo\ro", 4);
	ck_assert_int_eq(parse_n("mg fo\0o v", 9, &m), 0);
	key_is(&m, "fo\0o", 4);

	/* Opaque: 31 bytes after the O, not 32; may be empty. */
	m = ok(fill("mg foo O", 'a', 31, " k"), KV_META_GET);
	ck_assert_uint_eq(m.opaque.len, 31);
	bad(fill("mg foo O", 'a', 32, ""), KV_META_ERR_OPAQUE);
	bad(fill("mg foo O", 'a', 32, " k"), KV_META_ERR_OPAQUE);
	m = ok("mg foo O k", KV_META_GET);
	opaque_is(&m, "");
	ck_assert(kv_meta_has(&m, 'O'));

	/* Tokens: 19 on a line (17 flags) fine, 20 not. */
	m = ok("mg foo c f h k l O s t u v I L P C1 D1 F1 J1", KV_META_GET);
	ck_assert_uint_eq(m.nflags, KV_META_FLAGS_MAX);
	order_is(&m, "cfhklOstuvILPCDFJ");
	bad("mg foo c f h k l O s t u v I L P C1 D1 F1 J1 N1", KV_META_ERR_TOO_LONG_MG);
	bad("mg  foo  c  f  h  k  l  O  s  t  u  v  I  L  P  C1  D1  F1  J1  N1",
	    KV_META_ERR_TOO_LONG_MG);
	bad(fill("mg foo", ' ', 1, " v v v v v v v v v v v v v v v v v v v v v v v v v v v v"),
	    KV_META_ERR_TOO_LONG_MG);
	/* 17 flags with errors in them are flag errors, not too many. */
	bad("mg foo c f h k l O s t u v I L P C1 D1 F1 z", KV_META_ERR_INVALID_FLAG);
}
END_TEST

/* --- base64 ------------------------------------------------------------- */

START_TEST(base64_keys)
{
	struct kv_meta m = ok("mg Zm9v b k v", KV_META_GET);
	ck_assert_int_eq(m.base64, 1);
	key_is(&m, "foo", 3);
	raw_is(&m, "Zm9v");
	order_is(&m, "bkv");

	/* memcached's decoder: skipped bytes, groups of 4, padding. */
	const struct {
		const char *in;
		const char *out;
		size_t n;
	} good[] = {
		{"Zm9v!", "foo", 3},	 {"!Zm9v", "foo", 3},	      {"Zm!9v", "foo", 3},
		{"Zm9vYg==", "foob", 4}, {"Zm9vYmE=", "fooba", 5},    {"Zg==", "f", 1},
		{"Zm8=", "fo", 2},	 {"Zm9vZm9v", "foofoo", 6},   {"Zg==Zg==", "f", 1},
		{"AAAA", "\0\0\0", 3},	 {"+/+/", "\xfb\xff\xbf", 3}, {"Zm=v", "f`", 2},
		{"Zh==", "f", 1},	 {"Zm9=", "fo", 2},
	};
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char line[64];
		snprintf(line, sizeof(line), "mg %s b", good[i].in);
		m = ok(line, KV_META_GET);
		key_is(&m, good[i].out, good[i].n);
		raw_is(&m, good[i].in);
	}
	const char *badkeys[] = {"foo",	 "Zm9vYg",   "Zm9vYg=",	 "Zg",	      "Zg=",
				 "====", "Zm9v==",   "Zm9v====", "Zm9vYg==x", "-_-_",
				 "A===", "Zm9v=!==", "!!!!",	 "Zm9"};
	for (unsigned i = 0; i < sizeof(badkeys) / sizeof(badkeys[0]); i++) {
		char line[64];
		snprintf(line, sizeof(line), "mg %s b", badkeys[i]);
		bad(line, KV_META_ERR_DECODE_KEY);
		snprintf(line, sizeof(line), "md %s b", badkeys[i]);
		bad(line, KV_META_ERR_INVALID_OR_DUP);
		snprintf(line, sizeof(line), "me %s b", badkeys[i]);
		bad(line, KV_ERR_FORMAT);
		snprintf(line, sizeof(line), "ms %s 3 b", badkeys[i]);
		ck_assert_int_eq(bad(line, KV_META_ERR_DECODE_KEY).swallow, 1);
	}

	/* Length: the raw key counts; 248 base64 bytes hold 186. */
	char big[300] = "mg ";
	for (int i = 0; i < 62; i++)
		strcat(big, "QUFB");
	strcat(big, " b");
	m = ok(big, KV_META_GET);
	ck_assert_uint_eq(m.key_len, 186);
	ck_assert_uint_eq(m.key_raw.len, 248);
	for (size_t i = 0; i < m.key_len; i++)
		ck_assert_int_eq(kv_meta_key(&m)[i], 'A');
	bad(fill("mg ", 'A', 252, " b"), KV_ERR_FORMAT);

	/* Round trips through the encoder. */
	unsigned char raw[KV_META_B64_KEY_MAX];
	char enc[256];
	unsigned char back[KV_KEY_MAX];
	uint64_t s = 12345;
	for (size_t n = 1; n <= KV_META_B64_KEY_MAX; n++) {
		for (size_t i = 0; i < n; i++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			raw[i] = (unsigned char)(s >> 56);
		}
		size_t e = kv_meta_b64_encode(raw, n, enc, sizeof(enc));
		ck_assert_uint_eq(e, 4 * ((n + 2) / 3));
		ck_assert_uint_le(e, KV_KEY_MAX);
		ck_assert_uint_eq(kv_meta_b64_decode(enc, e, back, sizeof(back)), n);
		ck_assert(memcmp(raw, back, n) == 0);

		char line[300];
		memcpy(line, "mg ", 3);
		memcpy(line + 3, enc, e);
		memcpy(line + 3 + e, " b k", 5);
		m = ok(line, KV_META_GET);
		key_is(&m, (const char *)raw, n);
		/* The echo of a re-encoded key is the canonical text. */
		char again[256];
		ck_assert_uint_eq(kv_meta_b64_encode((const unsigned char *)kv_meta_key(&m),
						     m.key_len, again, sizeof(again)),
				  e);
		ck_assert(memcmp(again, enc, e) == 0);
	}
	ck_assert_uint_eq(kv_meta_b64_encode((const unsigned char *)"foo", 3, enc, 3), 0);
	ck_assert_uint_eq(kv_meta_b64_encode((const unsigned char *)"fo", 2, enc, 4), 4);
	ck_assert(memcmp(enc, "Zm8=", 4) == 0);
	ck_assert_uint_eq(kv_meta_b64_decode("Zm9vYmFy", 8, back, 5), 0);
	ck_assert_uint_eq(kv_meta_b64_decode("Zm9vYmFy", 8, back, 6), 6);
	ck_assert_uint_eq(kv_meta_b64_decode("", 0, back, 6), 0);
}
END_TEST

/* --- randomized ---------------------------------------------------------- */

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static const char *const seeds[] = {
	"mg foo v k f t s c h l O123 q",
	"ms foo 3 T0 F5 c k MS",
	"ms Zm9v 10 b k c O1 q ME I C99",
	"md foo q k O9 C1 I T30",
	"ma foo N0 J5 D3 v q t c k MD",
	"me Zm9v b",
	"mn",
	"mg Zm9vYg== b k v N30 R10 u",
	"mg foo c f h k l O s t u v I L P C1 D1 F1 J1",
};

static const char *const words[] = {
	"mg",
	"ms",
	"md",
	"ma",
	"mn",
	"me",
	"foo",
	"Zm9v",
	"b",
	"k",
	"v",
	"q",
	"c",
	"f",
	"t",
	"s",
	"h",
	"l",
	"u",
	"I",
	"O",
	"Oabc",
	"T30",
	"T-1",
	"N0",
	"R5",
	"C18446744073709551615",
	"F4294967296",
	"D-1",
	"J5",
	"MS",
	"ME",
	"MI",
	"M+",
	"MX",
	"MSS",
	"M",
	"3",
	"-1",
	"2147483646",
	"E5",
	"x",
	"S3",
	"T99999999999",
	"Oaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
};

static const char alphabet[] = "mgsdaenkvqbcfhltuIOTNRCFDJMLPESx0123456789+-=/ \t\r\x01\x7f\xff";

static size_t make_line(char *buf, size_t cap)
{
	size_t n = 0;
	unsigned kind = rnd() % 4;
	if (kind == 0) {
		/* random bytes from the alphabet */
		size_t len = rnd() % 80;
		for (; n < len && n < cap; n++)
			buf[n] = alphabet[rnd() % (sizeof(alphabet) - 1)];
		if (n >= 2 && rnd() % 2) {
			buf[0] = 'm';
			buf[1] = "gsdane"[rnd() % 6];
		}
		return n;
	}
	if (kind == 1) {
		/* words */
		unsigned nw = rnd() % 24;
		const char *cmd = words[rnd() % 6];
		size_t l = strlen(cmd);
		memcpy(buf, cmd, l);
		n = l;
		for (unsigned i = 0; i < nw; i++) {
			const char *w = words[rnd() % (sizeof(words) / sizeof(words[0]))];
			l = strlen(w);
			if (n + 1 + l > cap)
				break;
			buf[n++] = ' ';
			memcpy(buf + n, w, l);
			n += l;
		}
		return n;
	}
	if (kind == 2 && rnd() % 8 == 0) {
		/* long keys */
		size_t k = 245 + rnd() % 10;
		memcpy(buf, "mg ", 3);
		memset(buf + 3, "kA"[rnd() % 2], k);
		n = 3 + k;
		if (rnd() % 2) {
			memcpy(buf + n, " b", 2);
			n += 2;
		}
		return n;
	}
	/* mutated seeds */
	const char *s = seeds[rnd() % (sizeof(seeds) / sizeof(seeds[0]))];
	n = strlen(s);
	memcpy(buf, s, n);
	unsigned muts = 1 + rnd() % 4;
	for (unsigned i = 0; i < muts; i++) {
		unsigned op = rnd() % 4;
		size_t at = n ? rnd() % n : 0;
		if (op == 0 && n)
			buf[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
		else if (op == 1 && n + 1 < cap) {
			memmove(buf + at + 1, buf + at, n - at);
			buf[at] = alphabet[rnd() % (sizeof(alphabet) - 1)];
			n++;
		} else if (op == 2 && n) {
			memmove(buf + at, buf + at + 1, n - at - 1);
			n--;
		} else if (op == 3) {
			n = at; /* truncate */
		}
	}
	return n;
}

static int known_reply(const char *e)
{
	static const char *const known[] = {
		KV_ERR_ERROR,
		KV_ERR_FORMAT,
		KV_META_ERR_INVALID_FLAG,
		KV_META_ERR_DUP_FLAG,
		KV_META_ERR_INVALID_OR_DUP,
		KV_META_ERR_BAD_TOKEN,
		KV_META_ERR_DECODE_KEY,
		KV_META_ERR_DELTA,
		KV_META_ERR_INITIAL,
		KV_META_ERR_M_LENGTH,
		KV_META_ERR_MODE_MS,
		KV_META_ERR_MODE_MA,
		KV_META_ERR_OPAQUE,
		KV_META_ERR_TOO_LONG_MG,
		KV_META_ERR_TOO_LONG,
	};
	for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(e, known[i]) == 0) /* literals need not be merged across files */
			return 1;
	return 0;
}

static void check_result(int rc, const struct kv_meta *m, const char *line, size_t len)
{
	ck_assert(rc == 0 || rc == -1);
	ck_assert(m->cmd >= KV_META_NONE && m->cmd <= KV_META_DEBUG);
	if (rc == -1) {
		ck_assert_ptr_nonnull(m->error);
		ck_assert_msg(known_reply(m->error), "unknown reply \"%s\"", m->error);
		ck_assert(!m->swallow || m->cmd == KV_META_SET);
		return;
	}
	ck_assert_ptr_null(m->error);
	ck_assert_int_eq(m->swallow, 0);
	ck_assert_int_ne(m->cmd, KV_META_NONE);
	ck_assert_uint_le(m->nflags, KV_META_FLAGS_MAX);
	uint64_t mask = 0;
	for (unsigned i = 0; i < m->nflags; i++) {
		char c = m->flag[i];
		ck_assert((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
		ck_assert(!(mask & KV_META_BIT(c)));
		mask |= KV_META_BIT(c);
	}
	ck_assert(mask == m->present);
	if (m->cmd == KV_META_NOOP)
		return;
	ck_assert(m->key_raw.ptr >= line && m->key_raw.ptr + m->key_raw.len <= line + len);
	ck_assert_uint_ge(m->key_raw.len, 1);
	ck_assert_uint_le(m->key_raw.len, KV_KEY_MAX);
	ck_assert_uint_ge(m->key_len, 1);
	if (m->base64) {
		ck_assert_ptr_eq(kv_meta_key(m), (const char *)m->keybuf);
		ck_assert_uint_le(m->key_len, KV_META_B64_KEY_MAX);
	} else {
		ck_assert_ptr_eq(kv_meta_key(m), m->key_raw.ptr);
		ck_assert_uint_eq(m->key_len, m->key_raw.len);
		for (size_t i = 0; i < m->key_len; i++)
			ck_assert(kv_meta_key(m)[i] != ' ');
	}
	if (m->opaque.len) {
		ck_assert(m->opaque.ptr >= line && m->opaque.ptr + m->opaque.len <= line + len);
		ck_assert_uint_le(m->opaque.len, KV_META_OPAQUE_MAX);
	}
	if (m->cmd == KV_META_SET) {
		ck_assert_uint_le(m->datalen, KV_BYTES_MAX);
		ck_assert(strchr("EAPRS", m->mode) && m->mode);
	}
	if (m->cmd == KV_META_ARITH)
		ck_assert(strchr("I+D-", m->mode) && m->mode);
}

START_TEST(random_lines)
{
	enum { LINES = 200000 / TEST_SCALE, CAP = 512 };
	char scratch[CAP];
	unsigned parsed = 0, swallowed = 0;
	unsigned per_cmd[KV_META_DEBUG + 1] = {0};
	for (unsigned i = 0; i < LINES; i++) {
		size_t n = make_line(scratch, CAP);
		ck_assert_uint_le(n, CAP);
		char *line = malloc(n ? n : 1);
		ck_assert_ptr_nonnull(line);
		memcpy(line, scratch, n);

		struct kv_meta m;
		int rc = kv_meta_parse(line, n, &m);
		check_result(rc, &m, line, n);
		parsed += rc == 0;
		swallowed += m.swallow != 0;
		if (rc == 0)
			per_cmd[m.cmd]++;
		ck_assert_int_eq(kv_meta_is_meta(line, n) != 0, m.cmd != KV_META_NONE);
		free(line);
	}
	/* The generator reaches both outcomes, every command and ms swallows. */
	ck_assert_uint_gt(parsed, LINES / 20);
	ck_assert_uint_lt(parsed, LINES - LINES / 20);
	ck_assert_uint_gt(swallowed, 100);
	for (int c = KV_META_GET; c <= KV_META_DEBUG; c++)
		ck_assert_uint_gt(per_cmd[c], 100);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_meta");

	TCase *tc = tcase_create("commands");
	tcase_add_test(tc, mg_basic);
	tcase_add_test(tc, mg_numeric_flags);
	tcase_add_test(tc, ms_forms);
	tcase_add_test(tc, ms_errors);
	tcase_add_test(tc, md_forms);
	tcase_add_test(tc, ma_forms);
	tcase_add_test(tc, mn_me_forms);
	tcase_add_test(tc, not_meta);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, flag_errors);
	tcase_add_test(tc, boundaries);
	suite_add_tcase(s, tc);

	tc = tcase_create("base64");
	tcase_add_test(tc, base64_keys);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 120 * TEST_SLOWDOWN);
	tcase_add_test(tc, random_lines);
	suite_add_tcase(s, tc);

	return test_run_suite(s);
}
