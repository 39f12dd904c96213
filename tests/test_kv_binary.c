/*
 * locus-kv's binary protocol reader (src/kv/protocol/binary.h), against memcached
 * 1.6.18's rules: the header's byte order, the quiet opcodes and the commands they are,
 * which lengths each opcode takes, the order in which a request is judged (lengths, then
 * SASL, then the key's length, then the opcode), and the words of each error. The server's
 * behaviour over the wire is tests/kv/test_binary*.py's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/binary.h"
#include "testutil.h"

static struct kv_bin_header req(uint8_t op, uint8_t ext, uint16_t key, uint32_t body)
{
	return (struct kv_bin_header){
		.magic = KV_BIN_REQ, .opcode = op, .extlen = ext, .keylen = key, .bodylen = body};
}

START_TEST(header_byte_order)
{
	static const uint8_t bytes[KV_BIN_HEADER] = {
		0x80, 0x01, 0x12, 0x34, 0x08, 0x00, 0xab, 0xcd, 0x01, 0x02, 0x03, 0x04,
		0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
	uint8_t *p = malloc(KV_BIN_HEADER); /* exactly a header: ASan sees any read past it */
	ck_assert_ptr_nonnull(p);
	memcpy(p, bytes, KV_BIN_HEADER);
	struct kv_bin_header h;
	kv_bin_header_read(p, &h);
	ck_assert_uint_eq(h.magic, 0x80);
	ck_assert_uint_eq(h.opcode, KV_BIN_SET);
	ck_assert_uint_eq(h.keylen, 0x1234);
	ck_assert_uint_eq(h.extlen, 8);
	ck_assert_uint_eq(h.status, 0xabcd);
	ck_assert_uint_eq(h.bodylen, 0x01020304);
	ck_assert_uint_eq(h.opaque, 0xdeadbeef);
	ck_assert(h.cas == 0x0102030405060708ull);
	uint8_t back[KV_BIN_HEADER];
	kv_bin_header_write(back, &h);
	ck_assert_mem_eq(back, bytes, KV_BIN_HEADER);
	free(p);
}
END_TEST

START_TEST(response_header)
{
	struct kv_bin_header r = req(KV_BIN_GETKQ, 0, 3, 3);
	r.opaque = 77;
	uint8_t out[KV_BIN_HEADER];
	kv_bin_response(out, &r, KV_BIN_KEY_ENOENT, 4, 3, 10, 99);
	static const uint8_t want[KV_BIN_HEADER] = {
		0x81, KV_BIN_GETKQ, 0, 3, 4, 0, 0, 1, 0, 0, 0, 10, 0, 0,
		0,    77,	    0, 0, 0, 0, 0, 0, 0, 99};
	ck_assert_mem_eq(out, want, KV_BIN_HEADER);
	uint8_t v[8];
	kv_bin_put64(v, 0x1122334455667788ull);
	ck_assert(kv_bin_get64(v) == 0x1122334455667788ull && v[0] == 0x11 && v[7] == 0x88);
	kv_bin_put32(v, 0xfffffffe);
	ck_assert_uint_eq(kv_bin_get32(v), 0xfffffffe);
}
END_TEST

START_TEST(quiet_opcodes)
{
	static const uint8_t pairs[][2] = {
		{KV_BIN_GETQ, KV_BIN_GET},
		{KV_BIN_GETKQ, KV_BIN_GETK},
		{KV_BIN_SETQ, KV_BIN_SET},
		{KV_BIN_ADDQ, KV_BIN_ADD},
		{KV_BIN_REPLACEQ, KV_BIN_REPLACE},
		{KV_BIN_DELETEQ, KV_BIN_DELETE},
		{KV_BIN_INCREMENTQ, KV_BIN_INCREMENT},
		{KV_BIN_DECREMENTQ, KV_BIN_DECREMENT},
		{KV_BIN_QUITQ, KV_BIN_QUIT},
		{KV_BIN_FLUSHQ, KV_BIN_FLUSH},
		{KV_BIN_APPENDQ, KV_BIN_APPEND},
		{KV_BIN_PREPENDQ, KV_BIN_PREPEND},
		{KV_BIN_GATQ, KV_BIN_GAT},
		{KV_BIN_GATKQ, KV_BIN_GATK},
	};
	int quiet, nquiet = 0;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		ck_assert_uint_eq(kv_bin_base(pairs[i][0], &quiet), pairs[i][1]);
		ck_assert_int_eq(quiet, 1);
	}
	for (int op = 0; op < 256; op++) {
		uint8_t base = kv_bin_base((uint8_t)op, &quiet);
		nquiet += quiet;
		if (!quiet)
			ck_assert_uint_eq(base, op);
	}
	ck_assert_int_eq(nquiet, 14);
}
END_TEST

START_TEST(judged_lengths)
{
	struct {
		struct kv_bin_header h;
		enum kv_bin_verdict v;
	} cases[] = {
		{req(KV_BIN_GET, 0, 3, 3), KV_BIN_RUN},
		{req(KV_BIN_GET, 0, 3, 4), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_GET, 0, 0, 0), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_GET, 0, 3, 2), KV_BIN_BAD_LENGTHS},
		{req(KV_BIN_GET, 0, 250, 250), KV_BIN_RUN},
		{req(KV_BIN_GET, 0, 251, 251), KV_BIN_BAD_KEY},
		{req(KV_BIN_SET, 8, 1, 9), KV_BIN_RUN},
		{req(KV_BIN_SETQ, 8, 1, 0xffffffff), KV_BIN_RUN},
		{req(KV_BIN_SET, 4, 1, 9), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_SET, 8, 2, 9), KV_BIN_BAD_LENGTHS},
		{req(KV_BIN_APPEND, 0, 1, 1), KV_BIN_RUN},
		{req(KV_BIN_INCREMENT, 20, 1, 21), KV_BIN_RUN},
		{req(KV_BIN_DECREMENTQ, 20, 1, 22), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_FLUSH, 4, 0, 4), KV_BIN_RUN},
		{req(KV_BIN_FLUSH, 0, 0, 0), KV_BIN_RUN},
		{req(KV_BIN_FLUSH, 8, 0, 8), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_NOOP, 0, 0, 1), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_STAT, 0, 5, 9), KV_BIN_RUN},
		{req(KV_BIN_TOUCH, 4, 1, 9), KV_BIN_RUN},
		{req(KV_BIN_GATKQ, 4, 0, 4), KV_BIN_BAD_SHAPE},
		{req(KV_BIN_SASL_LIST_MECHS, 0, 0, 0), KV_BIN_RUN},
		{req(KV_BIN_SASL_AUTH, 0, 5, 100), KV_BIN_RUN},
		{req(0x1b, 4, 0, 4), KV_BIN_UNKNOWN}, /* verbosity: not in memcached 1.6.18 */
		{req(0xff, 0, 300, 300), KV_BIN_BAD_KEY},
		{req(0x50, 0, 3, 1), KV_BIN_BAD_LENGTHS},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(kv_bin_judge(&cases[i].h, 0) == cases[i].v, "case %zu", i);
}
END_TEST

START_TEST(judged_under_sasl)
{
	struct kv_bin_header h = req(KV_BIN_GET, 0, 3, 3);
	ck_assert_int_eq(kv_bin_judge(&h, 1), KV_BIN_UNAUTHENTICATED);
	h = req(KV_BIN_GET, 0, 3, 2); /* lengths first */
	ck_assert_int_eq(kv_bin_judge(&h, 1), KV_BIN_BAD_LENGTHS);
	h = req(KV_BIN_GET, 0, 300, 300); /* then SASL, then the key's length */
	ck_assert_int_eq(kv_bin_judge(&h, 1), KV_BIN_UNAUTHENTICATED);
	h = req(KV_BIN_NOOP, 0, 0, 0);
	ck_assert_int_eq(kv_bin_judge(&h, 1), KV_BIN_UNAUTHENTICATED);
	static const uint8_t open_ops[] = {KV_BIN_VERSION, KV_BIN_SASL_LIST_MECHS};
	for (size_t i = 0; i < sizeof(open_ops); i++) {
		h = req(open_ops[i], 0, 0, 0);
		ck_assert_int_eq(kv_bin_judge(&h, 1), KV_BIN_RUN);
	}
	h = req(KV_BIN_SASL_STEP, 0, 5, 20);
	ck_assert_int_eq(kv_bin_judge(&h, 1), KV_BIN_RUN);
}
END_TEST

START_TEST(status_texts)
{
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_KEY_ENOENT), "Not found");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_KEY_EEXISTS), "Data exists for key.");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_E2BIG), "Too large.");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_EINVAL), "Invalid arguments");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_NOT_STORED), "Not stored.");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_DELTA_BADVAL),
			 "Non-numeric server-side value for incr or decr");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_AUTH_ERROR), "Auth failure.");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_UNKNOWN_COMMAND), "Unknown command");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_ENOMEM), "Out of memory");
	ck_assert_str_eq(kv_bin_status_text(KV_BIN_SUCCESS), "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_binary");
	TCase *tc = tcase_create("header");
	tcase_add_test(tc, header_byte_order);
	tcase_add_test(tc, response_header);
	suite_add_tcase(s, tc);
	tc = tcase_create("judge");
	tcase_add_test(tc, quiet_opcodes);
	tcase_add_test(tc, judged_lengths);
	tcase_add_test(tc, judged_under_sasl);
	tcase_add_test(tc, status_texts);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
