/*
 * locus-kv: memcached's binary protocol (binary.h). The rules follow
 * memcached 1.6.18's proto_bin.c: which requests it runs, judged in its
 * order, and the words of its errors.
 */
#include "kv/protocol/binary.h"

uint32_t kv_bin_get32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

uint64_t kv_bin_get64(const void *p)
{
	const uint8_t *b = p;
	return (uint64_t)kv_bin_get32(b) << 32 | kv_bin_get32(b + 4);
}

void kv_bin_put32(void *p, uint32_t v)
{
	uint8_t *b = p;
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

void kv_bin_put64(void *p, uint64_t v)
{
	uint8_t *b = p;
	kv_bin_put32(b, (uint32_t)(v >> 32));
	kv_bin_put32(b + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

static void put16(uint8_t *b, uint16_t v)
{
	b[0] = (uint8_t)(v >> 8);
	b[1] = (uint8_t)v;
}

void kv_bin_header_read(const void *p, struct kv_bin_header *h)
{
	const uint8_t *b = p;
	h->magic = b[0];
	h->opcode = b[1];
	h->keylen = get16(b + 2);
	h->extlen = b[4];
	h->datatype = b[5];
	h->status = get16(b + 6);
	h->bodylen = kv_bin_get32(b + 8);
	h->opaque = kv_bin_get32(b + 12);
	h->cas = kv_bin_get64(b + 16);
}

void kv_bin_header_write(void *p, const struct kv_bin_header *h)
{
	uint8_t *b = p;
	b[0] = h->magic;
	b[1] = h->opcode;
	put16(b + 2, h->keylen);
	b[4] = h->extlen;
	b[5] = h->datatype;
	put16(b + 6, h->status);
	kv_bin_put32(b + 8, h->bodylen);
	kv_bin_put32(b + 12, h->opaque);
	kv_bin_put64(b + 16, h->cas);
}

void kv_bin_response(void *p, const struct kv_bin_header *req, uint16_t status, uint8_t extlen,
		     uint16_t keylen, uint32_t bodylen, uint64_t cas)
{
	struct kv_bin_header r = {.magic = KV_BIN_RES,
				  .opcode = req->opcode,
				  .keylen = keylen,
				  .extlen = extlen,
				  .status = status,
				  .bodylen = bodylen,
				  .opaque = req->opaque,
				  .cas = cas};
	kv_bin_header_write(p, &r);
}

uint8_t kv_bin_base(uint8_t opcode, int *quiet)
{
	static const uint8_t base[] = {
		[KV_BIN_SETQ] = KV_BIN_SET,
		[KV_BIN_ADDQ] = KV_BIN_ADD,
		[KV_BIN_REPLACEQ] = KV_BIN_REPLACE,
		[KV_BIN_DELETEQ] = KV_BIN_DELETE,
		[KV_BIN_INCREMENTQ] = KV_BIN_INCREMENT,
		[KV_BIN_DECREMENTQ] = KV_BIN_DECREMENT,
		[KV_BIN_QUITQ] = KV_BIN_QUIT,
		[KV_BIN_FLUSHQ] = KV_BIN_FLUSH,
		[KV_BIN_APPENDQ] = KV_BIN_APPEND,
		[KV_BIN_PREPENDQ] = KV_BIN_PREPEND,
		[KV_BIN_GETQ] = KV_BIN_GET,
		[KV_BIN_GETKQ] = KV_BIN_GETK,
		[KV_BIN_GATQ] = KV_BIN_GAT,
		[KV_BIN_GATKQ] = KV_BIN_GATK,
	};
	*quiet = 0;
	/* GET is 0: a zero entry is "not quiet", except for GETQ itself. */
	if (opcode < sizeof(base) && (base[opcode] || opcode == KV_BIN_GETQ)) {
		*quiet = 1;
		return base[opcode];
	}
	return opcode;
}

/* Does the opcode take these lengths? (memcached's dispatch, per command.) */
static int shape_ok(uint8_t base, const struct kv_bin_header *h)
{
	uint32_t ext = h->extlen, key = h->keylen, body = h->bodylen;
	int none = ext == 0 && key == 0 && body == 0;
	switch (base) {
	case KV_BIN_VERSION:
	case KV_BIN_NOOP:
	case KV_BIN_QUIT:
	case KV_BIN_SASL_LIST_MECHS:
		return none;
	case KV_BIN_FLUSH:
		return key == 0 && body == ext && (ext == 0 || ext == 4);
	case KV_BIN_SET:
	case KV_BIN_ADD:
	case KV_BIN_REPLACE:
		return ext == 8 && key != 0 && body >= key + 8;
	case KV_BIN_GET:
	case KV_BIN_GETK:
	case KV_BIN_DELETE:
		return ext == 0 && key > 0 && body == key;
	case KV_BIN_INCREMENT:
	case KV_BIN_DECREMENT:
		return key > 0 && ext == 20 && body == key + ext;
	case KV_BIN_APPEND:
	case KV_BIN_PREPEND:
		return key > 0 && ext == 0;
	case KV_BIN_STAT:
		return ext == 0;
	case KV_BIN_SASL_AUTH:
	case KV_BIN_SASL_STEP:
		return ext == 0 && key != 0;
	case KV_BIN_TOUCH:
	case KV_BIN_GAT:
	case KV_BIN_GATK:
		return ext == 4 && key != 0;
	}
	return -1; /* not a command */
}

enum kv_bin_verdict kv_bin_judge(const struct kv_bin_header *h, int unauthenticated)
{
	uint32_t ext = h->extlen, key = h->keylen;
	if (key > h->bodylen || key + ext > h->bodylen)
		return KV_BIN_BAD_LENGTHS;
	if (unauthenticated && h->opcode != KV_BIN_SASL_LIST_MECHS &&
	    h->opcode != KV_BIN_SASL_AUTH && h->opcode != KV_BIN_SASL_STEP &&
	    h->opcode != KV_BIN_VERSION)
		return KV_BIN_UNAUTHENTICATED;
	if (key > KV_BIN_KEY_MAX)
		return KV_BIN_BAD_KEY;
	int quiet;
	int ok = shape_ok(kv_bin_base(h->opcode, &quiet), h);
	return ok < 0 ? KV_BIN_UNKNOWN : ok ? KV_BIN_RUN : KV_BIN_BAD_SHAPE;
}

const char *kv_bin_status_text(uint16_t status)
{
	switch (status) {
	case KV_BIN_ENOMEM:
		return "Out of memory";
	case KV_BIN_UNKNOWN_COMMAND:
		return "Unknown command";
	case KV_BIN_KEY_ENOENT:
		return "Not found";
	case KV_BIN_EINVAL:
		return "Invalid arguments";
	case KV_BIN_KEY_EEXISTS:
		return "Data exists for key.";
	case KV_BIN_E2BIG:
		return "Too large.";
	case KV_BIN_DELTA_BADVAL:
		return "Non-numeric server-side value for incr or decr";
	case KV_BIN_NOT_STORED:
		return "Not stored.";
	case KV_BIN_AUTH_ERROR:
		return "Auth failure.";
	}
	return "";
}
