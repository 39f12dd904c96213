/*
 * libFuzzer target for locus-kv's binary protocol reader (src/kv/protocol/binary.h). The
 * input is a stream of requests, read as the server reads them: a header, then extras and
 * key, judged, then the value of a command that reads one. The first byte says whether the
 * connection is unauthenticated under SASL. Any broken invariant aborts: headers that do not
 * write back to their bytes, a request judged runnable whose lengths do not fit or that its
 * opcode does not take, quiet opcodes that do not map to a base command, a response header
 * that does not read back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/binary.h"

static void require(int ok)
{
	if (!ok)
		abort();
}

/* Do the lengths fit what the base opcode takes (memcached's dispatch, written out again)? */
static int fits(uint8_t base, const struct kv_bin_header *h)
{
	uint32_t e = h->extlen, k = h->keylen, b = h->bodylen;
	switch (base) {
	case KV_BIN_GET:
	case KV_BIN_GETK:
	case KV_BIN_DELETE:
		return e == 0 && k > 0 && b == k;
	case KV_BIN_SET:
	case KV_BIN_ADD:
	case KV_BIN_REPLACE:
		return e == 8 && k > 0 && b >= k + 8;
	case KV_BIN_APPEND:
	case KV_BIN_PREPEND:
		return e == 0 && k > 0;
	case KV_BIN_INCREMENT:
	case KV_BIN_DECREMENT:
		return e == 20 && k > 0 && b == k + 20;
	case KV_BIN_TOUCH:
	case KV_BIN_GAT:
	case KV_BIN_GATK:
		return e == 4 && k > 0;
	case KV_BIN_FLUSH:
		return k == 0 && b == e && (e == 0 || e == 4);
	case KV_BIN_STAT:
		return e == 0;
	case KV_BIN_SASL_AUTH:
	case KV_BIN_SASL_STEP:
		return e == 0 && k > 0;
	default:
		return e == 0 && k == 0 && b == 0;
	}
}

/* Does the command read a value after its key (the server consumes it)? */
static int reads_value(uint8_t base)
{
	return base == KV_BIN_SET || base == KV_BIN_ADD || base == KV_BIN_REPLACE ||
	       base == KV_BIN_APPEND || base == KV_BIN_PREPEND || base == KV_BIN_SASL_AUTH ||
	       base == KV_BIN_SASL_STEP;
}

static void check_response(const struct kv_bin_header *req, uint16_t status)
{
	uint8_t out[KV_BIN_HEADER];
	kv_bin_response(out, req, status, req->extlen, req->keylen, req->bodylen, req->cas);
	struct kv_bin_header r;
	kv_bin_header_read(out, &r);
	require(r.magic == KV_BIN_RES && r.opcode == req->opcode && r.status == status &&
		r.extlen == req->extlen && r.keylen == req->keylen && r.bodylen == req->bodylen &&
		r.opaque == req->opaque && r.cas == req->cas && r.datatype == 0);
	require(kv_bin_status_text(status) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	int unauthenticated = data[0] & 1;
	size_t pos = 1;
	while (size - pos >= KV_BIN_HEADER) {
		const uint8_t *p = data + pos;
		struct kv_bin_header h;
		kv_bin_header_read(p, &h);
		uint8_t back[KV_BIN_HEADER];
		kv_bin_header_write(back, &h);
		require(memcmp(back, p, KV_BIN_HEADER) == 0);
		require(kv_bin_get32(p + 8) == h.bodylen && kv_bin_get64(p + 16) == h.cas);
		if (h.magic != KV_BIN_REQ)
			return 0; /* the connection closes */
		size_t head = KV_BIN_HEADER + (size_t)h.extlen + h.keylen;
		if (size - pos < head)
			return 0; /* waits for more */
		int quiet;
		uint8_t base = kv_bin_base(h.opcode, &quiet);
		int again;
		require(kv_bin_base(base, &again) == base && !again);
		require(!quiet || base != h.opcode);
		enum kv_bin_verdict v = kv_bin_judge(&h, unauthenticated);
		require(v >= KV_BIN_RUN && v <= KV_BIN_UNKNOWN);
		/* SASL off judges the same lengths, VERSION and the SASL commands alike. */
		if (v != KV_BIN_UNAUTHENTICATED)
			require(kv_bin_judge(&h, 0) == v);
		check_response(&h, (uint16_t)(v == KV_BIN_RUN ? KV_BIN_SUCCESS : KV_BIN_EINVAL));
		pos += head;
		if (v == KV_BIN_RUN) {
			require((uint32_t)h.keylen + h.extlen <= h.bodylen);
			require(h.keylen <= KV_BIN_KEY_MAX);
			require(fits(base, &h));
			require(kv_bin_value_len(&h) == h.bodylen - h.keylen - h.extlen);
			if (unauthenticated)
				require(base == KV_BIN_VERSION || base == KV_BIN_SASL_LIST_MECHS ||
					base == KV_BIN_SASL_AUTH || base == KV_BIN_SASL_STEP);
			if (reads_value(base)) {
				size_t value = kv_bin_value_len(&h);
				pos += value < size - pos ? value : size - pos;
			}
		} else if (v == KV_BIN_UNKNOWN) {
			require(h.keylen + (uint32_t)h.extlen <= h.bodylen);
			pos += h.bodylen < size - pos ? h.bodylen : size - pos;
		} else {
			return 0; /* an error, and the connection closes */
		}
	}
	return 0;
}
