/*
 * locus-kv's UDP framing (src/kv/protocol/udp.h), against what memcached 1.6.18 does
 * on the wire: which request headers it processes and which it ignores, the
 * byte order, how a reply is cut into datagrams of at most 1400 bytes and
 * numbered, the bare header of an empty reply, and the total field's cap at
 * 65535 with the sequence number wrapping past it.
 *
 * Every datagram is parsed from, and framed into, a heap block of exactly its
 * size, so the address sanitizer build catches any access past it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/udp.h"
#include "testutil.h"

/* A heap copy of exactly n bytes (1 if n is 0, never read). */
static uint8_t *copy(const void *p, size_t n)
{
	uint8_t *q = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(q);
	if (n)
		memcpy(q, p, n);
	return q;
}

/* A request datagram: the header fields big-endian, then the payload. */
static size_t request(uint8_t *out, uint16_t id, uint16_t seq, uint16_t total, uint16_t reserved,
		      const char *payload)
{
	uint16_t f[4] = {id, seq, total, reserved};
	for (int i = 0; i < 4; i++) {
		out[2 * i] = (uint8_t)(f[i] >> 8);
		out[2 * i + 1] = (uint8_t)f[i];
	}
	size_t n = strlen(payload);
	memcpy(out + KV_UDP_HEADER, payload, n);
	return KV_UDP_HEADER + n;
}

/* kv_udp_parse() of an exact heap copy; -2 marks outputs it did not write. */
static int parse(const uint8_t *d, size_t len, struct kv_udp_header *h, const char **p, size_t *n,
		 const uint8_t **held)
{
	uint8_t *c = copy(d, len);
	memset(h, 0xee, sizeof(*h));
	*p = (const char *)-1;
	*n = (size_t)-2;
	int rc = kv_udp_parse(c, len, h, p, n);
	*held = c;
	return rc;
}

static void header_is(const struct kv_udp_header *h, uint16_t id, uint16_t seq, uint16_t total,
		      uint16_t reserved)
{
	ck_assert_uint_eq(h->id, id);
	ck_assert_uint_eq(h->seq, seq);
	ck_assert_uint_eq(h->total, total);
	ck_assert_uint_eq(h->reserved, reserved);
}

/* A one-datagram request is processed; the payload is the bytes after the header. */
START_TEST(parse_good)
{
	uint8_t d[64];
	size_t len = request(d, 0x1234, 0, 1, 0, "get a\r\n");
	struct kv_udp_header h;
	const char *p;
	size_t n;
	const uint8_t *held;
	ck_assert_int_eq(parse(d, len, &h, &p, &n, &held), 0);
	header_is(&h, 0x1234, 0, 1, 0);
	ck_assert_ptr_eq(p, (const char *)held + KV_UDP_HEADER);
	ck_assert_uint_eq(n, 7);
	ck_assert(memcmp(p, "get a\r\n", 7) == 0);
	free((void *)held);

	/* One payload byte is enough (memcached answers "\n" with ERROR). */
	len = request(d, 9, 0, 1, 0, "\n");
	ck_assert_int_eq(parse(d, len, &h, &p, &n, &held), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_eq(p, (const char *)held + KV_UDP_HEADER);
	free((void *)held);
}
END_TEST

/* Every field is big-endian: the high byte first. */
START_TEST(parse_byte_order)
{
	const uint8_t d[] = {0x12, 0x34, 0x56, 0x78, 0x00, 0x01, 0x9a, 0xbc, 'x', '\n'};
	struct kv_udp_header h;
	const char *p;
	size_t n;
	const uint8_t *held;
	ck_assert_int_eq(parse(d, sizeof(d), &h, &p, &n, &held), 0);
	header_is(&h, 0x1234, 0x5678, 1, 0x9abc);
	ck_assert_uint_eq(n, 2);
	free((void *)held);

	/* total 0x0100 is 256, not 1: the byte order decides the drop. */
	const uint8_t swapped[] = {0, 1, 0, 0, 0x01, 0x00, 0, 0, 'x', '\n'};
	ck_assert_int_eq(parse(swapped, sizeof(swapped), &h, &p, &n, &held), -1);
	header_is(&h, 1, 0, 256, 0);
	free((void *)held);
}
END_TEST

/* Fewer than 8 bytes: no header, nothing written; exactly 8: a header with no command. */
START_TEST(parse_short)
{
	uint8_t d[64];
	request(d, 7, 0, 1, 0, "");
	struct kv_udp_header h;
	const char *p;
	size_t n;
	const uint8_t *held;
	for (size_t len = 0; len < KV_UDP_HEADER; len++) {
		ck_assert_int_eq(parse(d, len, &h, &p, &n, &held), -1);
		ck_assert_uint_eq(h.id, 0xeeee);
		ck_assert_uint_eq(h.total, 0xeeee);
		ck_assert_ptr_eq(p, (const char *)-1);
		ck_assert_uint_eq(n, (size_t)-2);
		free((void *)held);
	}
	ck_assert_int_eq(parse(d, KV_UDP_HEADER, &h, &p, &n, &held), -1);
	header_is(&h, 7, 0, 1, 0);
	ck_assert_ptr_eq(p, (const char *)-1);
	ck_assert_uint_eq(n, (size_t)-2);
	free((void *)held);
}
END_TEST

/* A total other than 1 (a multi-datagram request, or 0) is dropped, header still reported. */
START_TEST(parse_total_not_one)
{
	static const uint16_t totals[] = {0, 2, 3, 255, 256, 257, 0x8001, 0xffff};
	uint8_t d[64];
	struct kv_udp_header h;
	const char *p;
	size_t n;
	const uint8_t *held;
	for (size_t i = 0; i < sizeof(totals) / sizeof(totals[0]); i++) {
		size_t len = request(d, 42, 0, totals[i], 0, "get a\r\n");
		ck_assert_int_eq(parse(d, len, &h, &p, &n, &held), -1);
		header_is(&h, 42, 0, totals[i], 0);
		ck_assert_ptr_eq(p, (const char *)-1);
		ck_assert_uint_eq(n, (size_t)-2);
		free((void *)held);
	}
}
END_TEST

/* memcached reads neither the sequence number nor the reserved field. */
START_TEST(parse_seq_and_reserved_ignored)
{
	static const uint16_t values[] = {1, 2, 0x100, 0x7fff, 0xffff};
	uint8_t d[64];
	struct kv_udp_header h;
	const char *p;
	size_t n;
	const uint8_t *held;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		size_t len = request(d, 5, values[i], 1, 0, "version\r\n");
		ck_assert_int_eq(parse(d, len, &h, &p, &n, &held), 0);
		header_is(&h, 5, values[i], 1, 0);
		ck_assert_uint_eq(n, 9);
		free((void *)held);

		len = request(d, 6, 0, 1, values[i], "version\r\n");
		ck_assert_int_eq(parse(d, len, &h, &p, &n, &held), 0);
		header_is(&h, 6, 0, 1, values[i]);
		ck_assert_uint_eq(n, 9);
		free((void *)held);
	}
}
END_TEST

/* The largest request a UDP socket delivers parses whole. */
START_TEST(parse_largest)
{
	size_t len = 65507; /* IPv4's largest UDP payload */
	uint8_t *d = malloc(len);
	ck_assert_ptr_nonnull(d);
	request(d, 1, 0, 1, 0, "");
	memset(d + KV_UDP_HEADER, 'v', len - KV_UDP_HEADER);
	struct kv_udp_header h;
	const char *p;
	size_t n;
	ck_assert_int_eq(kv_udp_parse(d, len, &h, &p, &n), 0);
	ck_assert_uint_eq(n, len - KV_UDP_HEADER);
	ck_assert_uint_le(len, KV_UDP_REQUEST_MAX);
	free(d);
}
END_TEST

START_TEST(constants)
{
	ck_assert_int_eq(KV_UDP_HEADER, 8);
	ck_assert_int_eq(KV_UDP_DATAGRAM_MAX, 1400);
	ck_assert_int_eq(KV_UDP_PAYLOAD_MAX, 1392);
	ck_assert_int_eq(KV_UDP_TOTAL_MAX, 65535);
}
END_TEST

START_TEST(datagram_counts)
{
	static const size_t cases[][2] = {
		{0, 0},
		{1, 1},
		{1391, 1},
		{1392, 1},
		{1393, 2},
		{1400, 2},
		{1401, 2},
		{2784, 2},
		{2785, 3},
		{2800, 3},
		{5025, 4},
		{100000, 72},
		{65535ul * 1392, 65535},
		{65535ul * 1392 + 1, 65536},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(kv_udp_datagrams(cases[i][0]) == cases[i][1],
			      "%zu bytes: expected %zu datagrams, got %zu", cases[i][0],
			      cases[i][1], kv_udp_datagrams(cases[i][0]));
}
END_TEST

/* The reply's bytes: position-dependent, so a misplaced slice shows. */
static char *reply_bytes(size_t n)
{
	char *r = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(r);
	uint32_t x = (uint32_t)n * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		r[i] = (char)(x >> 24);
	}
	return r;
}

/*
 * Frames every datagram of an n-byte reply (each into an exact
 * KV_UDP_DATAGRAM_MAX block), checks each header, delivers them in a shuffled
 * order, and reassembles them by sequence number to the exact bytes.
 */
static void round_trip(size_t n, uint16_t id)
{
	char *reply = reply_bytes(n);
	size_t count = kv_udp_datagrams(n);
	uint8_t **dg = calloc(count ? count : 1, sizeof(*dg));
	size_t *lens = calloc(count ? count : 1, sizeof(*lens));
	ck_assert(dg && lens);

	for (size_t i = 0; i < count; i++) {
		dg[i] = malloc(KV_UDP_DATAGRAM_MAX);
		ck_assert_ptr_nonnull(dg[i]);
		lens[i] = kv_udp_frame(id, reply, n, i, dg[i]);
		ck_assert_uint_gt(lens[i], KV_UDP_HEADER);
		ck_assert_uint_le(lens[i], KV_UDP_DATAGRAM_MAX);
		/* Every datagram but the last is full. */
		if (i + 1 < count)
			ck_assert_uint_eq(lens[i], KV_UDP_DATAGRAM_MAX);
	}

	/* Deliver in a shuffled order (a fixed-seed Fisher-Yates). */
	uint32_t x = (uint32_t)n + 7;
	for (size_t i = count; i > 1; i--) {
		x = x * 1103515245u + 12345u;
		size_t j = (x >> 8) % i;
		uint8_t *t = dg[i - 1];
		size_t tl = lens[i - 1];
		dg[i - 1] = dg[j];
		lens[i - 1] = lens[j];
		dg[j] = t;
		lens[j] = tl;
	}

	/* Reassemble as a client does: by sequence number, each slice at seq * 1392. */
	char *got = malloc(n ? n : 1);
	unsigned char *seen = calloc(count ? count : 1, 1);
	ck_assert(got && seen);
	size_t bytes = 0;
	for (size_t i = 0; i < count; i++) {
		struct kv_udp_header h;
		const char *p;
		size_t pl;
		/* A reply header has total == count, which kv_udp_parse drops unless 1. */
		int rc = kv_udp_parse(dg[i], lens[i], &h, &p, &pl);
		ck_assert_int_eq(rc, count == 1 ? 0 : -1);
		ck_assert_uint_eq(h.id, id);
		ck_assert_uint_eq(h.total, count);
		ck_assert_uint_eq(h.reserved, 0);
		ck_assert_uint_lt(h.seq, count);
		ck_assert(!seen[h.seq]);
		seen[h.seq] = 1;
		size_t slice = lens[i] - KV_UDP_HEADER;
		ck_assert_uint_le((size_t)h.seq * KV_UDP_PAYLOAD_MAX + slice, n);
		memcpy(got + (size_t)h.seq * KV_UDP_PAYLOAD_MAX, dg[i] + KV_UDP_HEADER, slice);
		bytes += slice;
	}
	ck_assert_uint_eq(bytes, n);
	ck_assert(n == 0 || memcmp(got, reply, n) == 0);

	/* Past the last datagram nothing is written. */
	uint8_t *past = malloc(KV_UDP_DATAGRAM_MAX);
	ck_assert_ptr_nonnull(past);
	memset(past, 0x5a, KV_UDP_DATAGRAM_MAX);
	if (n > 0) {
		ck_assert_uint_eq(kv_udp_frame(id, reply, n, count, past), 0);
		ck_assert_uint_eq(kv_udp_frame(id, reply, n, count + 1000, past), 0);
	}
	for (size_t i = 0; i < KV_UDP_DATAGRAM_MAX; i++)
		ck_assert_uint_eq(past[i], 0x5a);

	for (size_t i = 0; i < count; i++)
		free(dg[i]);
	free(past);
	free(seen);
	free(got);
	free(dg);
	free(lens);
	free(reply);
}

START_TEST(frame_round_trips)
{
	static const size_t sizes[] = {0,    1,	   13,	 1391, 1392, 1393,  1400,
				       1401, 2784, 2785, 2800, 5025, 100000};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		round_trip(sizes[i], (uint16_t)(0xa000 + i));
}
END_TEST

/* The header goes out big-endian; the reserved field is 0; slices are cut at 1392. */
START_TEST(frame_bytes)
{
	char *reply = reply_bytes(3000);
	uint8_t *d = malloc(KV_UDP_DATAGRAM_MAX);
	ck_assert_ptr_nonnull(d);

	ck_assert_uint_eq(kv_udp_frame(0xabcd, reply, 3000, 0, d), 1400);
	const uint8_t h0[] = {0xab, 0xcd, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00};
	ck_assert(memcmp(d, h0, 8) == 0);
	ck_assert(memcmp(d + 8, reply, 1392) == 0);

	ck_assert_uint_eq(kv_udp_frame(0xabcd, reply, 3000, 2, d), 8 + 3000 - 2 * 1392);
	const uint8_t h2[] = {0xab, 0xcd, 0x00, 0x02, 0x00, 0x03, 0x00, 0x00};
	ck_assert(memcmp(d, h2, 8) == 0);
	ck_assert(memcmp(d + 8, reply + 2784, 3000 - 2784) == 0);

	/* A one-datagram reply: seq 0, total 1, the whole reply. */
	ck_assert_uint_eq(kv_udp_frame(0x0102, "STORED\r\n", 8, 0, d), 16);
	const uint8_t h1[] = {0x01, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00};
	ck_assert(memcmp(d, h1, 8) == 0);
	ck_assert(memcmp(d + 8, "STORED\r\n", 8) == 0);

	free(d);
	free(reply);
}
END_TEST

/* No datagrams for an empty reply; asked for index 0, the bare header memcached sends. */
START_TEST(frame_empty)
{
	ck_assert_uint_eq(kv_udp_datagrams(0), 0);
	uint8_t *d = malloc(KV_UDP_HEADER); /* the bare header needs no more */
	ck_assert_ptr_nonnull(d);
	ck_assert_uint_eq(kv_udp_frame(0x4321, NULL, 0, 0, d), KV_UDP_HEADER);
	const uint8_t h[] = {0x43, 0x21, 0, 0, 0, 0, 0, 0};
	ck_assert(memcmp(d, h, 8) == 0);
	memset(d, 0x77, KV_UDP_HEADER);
	ck_assert_uint_eq(kv_udp_frame(0x4321, NULL, 0, 1, d), 0);
	for (int i = 0; i < KV_UDP_HEADER; i++)
		ck_assert_uint_eq(d[i], 0x77);
	free(d);
}
END_TEST

/*
 * Past 65535 datagrams (a reply over 65535 * 1392 bytes) memcached still
 * sends them all: the total field stays at 65535 and the sequence number
 * wraps to 0 after 65535. Checked on memcached 1.6.18 with -I 128m and a
 * 91 MB value: 65537 datagrams, seq 0..65535 then 0, every total 65535.
 */
START_TEST(datagram_limit)
{
	size_t n = 65537ul * KV_UDP_PAYLOAD_MAX + 10; /* 65538 datagrams */
	/* Zero pages from calloc: only the slices framed here are touched. */
	char *reply = calloc(n, 1);
	ck_assert_ptr_nonnull(reply);
	memset(reply + 65535ul * KV_UDP_PAYLOAD_MAX, 'a', KV_UDP_PAYLOAD_MAX);
	memset(reply + 65536ul * KV_UDP_PAYLOAD_MAX, 'b', KV_UDP_PAYLOAD_MAX);
	memset(reply + 65537ul * KV_UDP_PAYLOAD_MAX, 'c', 10);
	ck_assert_uint_eq(kv_udp_datagrams(n), 65538);

	uint8_t *d = malloc(KV_UDP_DATAGRAM_MAX);
	ck_assert_ptr_nonnull(d);
	struct kv_udp_header h;
	const char *p;
	size_t pl;
	static const struct {
		size_t index;
		uint16_t seq;
		size_t len;
		char fill;
	} at[] = {
		{0, 0, KV_UDP_DATAGRAM_MAX, 0},		  /* the first */
		{65534, 65534, KV_UDP_DATAGRAM_MAX, 0},	  /* the last a total could count */
		{65535, 65535, KV_UDP_DATAGRAM_MAX, 'a'}, /* the last seq before the wrap */
		{65536, 0, KV_UDP_DATAGRAM_MAX, 'b'},	  /* seq wraps to 0 */
		{65537, 1, KV_UDP_HEADER + 10, 'c'},	  /* the short last one */
	};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		size_t len = kv_udp_frame(7, reply, n, at[i].index, d);
		ck_assert_uint_eq(len, at[i].len);
		kv_udp_parse(d, len, &h, &p, &pl);
		header_is(&h, 7, at[i].seq, KV_UDP_TOTAL_MAX, 0);
		for (size_t j = KV_UDP_HEADER; j < len; j++)
			ck_assert_int_eq(d[j], at[i].fill);
	}
	ck_assert_uint_eq(kv_udp_frame(7, reply, n, 65538, d), 0);

	/* Exactly 65535 datagrams: the total is exact, not capped. */
	ck_assert_uint_eq(kv_udp_frame(7, reply, 65535ul * KV_UDP_PAYLOAD_MAX, 65534, d),
			  KV_UDP_DATAGRAM_MAX);
	kv_udp_parse(d, KV_UDP_DATAGRAM_MAX, &h, &p, &pl);
	header_is(&h, 7, 65534, 65535, 0);
	/* 65536 datagrams: total capped at 65535, the last is seq 65535. */
	ck_assert_uint_eq(kv_udp_frame(7, reply, 65535ul * KV_UDP_PAYLOAD_MAX + 1, 65535, d),
			  KV_UDP_HEADER + 1);
	kv_udp_parse(d, KV_UDP_HEADER + 1, &h, &p, &pl);
	header_is(&h, 7, 65535, 65535, 0);

	free(d);
	free(reply);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_udp");

	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, parse_good);
	tcase_add_test(tc, parse_byte_order);
	tcase_add_test(tc, parse_short);
	tcase_add_test(tc, parse_total_not_one);
	tcase_add_test(tc, parse_seq_and_reserved_ignored);
	tcase_add_test(tc, parse_largest);
	suite_add_tcase(s, tc);

	tc = tcase_create("frame");
	tcase_add_test(tc, constants);
	tcase_add_test(tc, datagram_counts);
	tcase_add_test(tc, frame_round_trips);
	tcase_add_test(tc, frame_bytes);
	tcase_add_test(tc, frame_empty);
	suite_add_tcase(s, tc);

	tc = tcase_create("limit");
	tcase_set_timeout(tc, 30 * TEST_SLOWDOWN);
	tcase_add_test(tc, datagram_limit);
	suite_add_tcase(s, tc);

	return test_run_suite(s);
}
