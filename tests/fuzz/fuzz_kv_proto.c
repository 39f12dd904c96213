/*
 * libFuzzer target for the classic text protocol parser (src/kv/protocol/proto.h):
 * kv_parse, every kv_parse_more batch, kv_data_chunk_ok and
 * kv_line_is_get_prefix. Any broken invariant aborts, which libFuzzer reports
 * as a crash with the input that caused it.
 *
 * The input is the line itself (libFuzzer hands over exactly size bytes, so
 * AddressSanitizer catches a read past len); kv_data_chunk_ok also takes the
 * input as a data block, announced length from its first bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/proto.h"

static void require(int ok)
{
	if (!ok)
		abort();
}

static int inside(struct kv_span s, const char *line, size_t len)
{
	return s.ptr >= line && s.len <= len && s.ptr + s.len <= line + len;
}

static int known_reply(const char *e)
{
	return e == NULL || strcmp(e, KV_ERR_ERROR) == 0 || strcmp(e, KV_ERR_FORMAT) == 0 ||
	       strcmp(e, KV_ERR_DELTA) == 0 || strcmp(e, KV_ERR_EXPTIME) == 0 ||
	       strcmp(e, KV_ERR_DELETE) == 0;
}

static void check(int rc, const struct kv_cmd *c, const char *line, size_t len)
{
	require(rc == 0 || rc == -1);
	require((rc == 0) == (c->error == NULL));
	require(known_reply(c->error));
	require(!c->close || rc == -1);
	require(c->nkeys <= KV_KEYS_MAX);
	require(c->more <= len);
	for (unsigned i = 0; i < c->nkeys; i++) {
		require(inside(c->keys[i], line, len));
		if (rc == 0) {
			require(c->keys[i].len >= 1 && c->keys[i].len <= KV_KEY_MAX);
			for (size_t j = 0; j < c->keys[i].len; j++) {
				unsigned char ch = (unsigned char)c->keys[i].ptr[j];
				require(ch != ' ');
			}
		}
	}
	if (c->args.len)
		require(inside(c->args, line, len));
	if (rc == 0 && c->bytes > KV_BYTES_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	struct kv_cmd c;
	int rc = kv_parse(line, size, &c);
	check(rc, &c, line, size);
	enum kv_command cmd = c.cmd;
	for (size_t guard = 0; rc == 0 && c.more != 0; guard++) {
		require(guard < size);
		size_t before = c.more;
		rc = kv_parse_more(line, size, &c);
		check(rc, &c, line, size);
		require(c.cmd == cmd);
		require(c.more == 0 || c.more > before);
	}

	/* Deterministic, and the same as a parse of a copy. */
	struct kv_cmd again;
	char *copy = malloc(size ? size : 1);
	require(copy != NULL);
	memcpy(copy, data, size);
	int rc2 = kv_parse(copy, size, &again);
	struct kv_cmd first;
	int rc1 = kv_parse(line, size, &first);
	require(rc1 == rc2 && first.cmd == again.cmd && first.nkeys == again.nkeys &&
		first.more == again.more);
	require((first.error == NULL) == (again.error == NULL));
	free(copy);

	int g = kv_line_is_get_prefix(line, size);
	require(g == 0 || g == 1);
	if (g) {
		size_t i = 0;
		while (i < size && line[i] == ' ')
			i++;
		require(size - i >= 4 && line[i] == 'g' && line[i + 1] == 'e' &&
			line[i + 2] == 't');
	}

	/* The input as a data block: length from its first two bytes. */
	uint32_t bytes = size >= 2 ? ((uint32_t)data[0] | (uint32_t)data[1] << 8) % 512 : 0;
	enum kv_chunk k = kv_data_chunk_ok(line, size, bytes);
	if (size < (size_t)bytes + 2)
		require(k == KV_CHUNK_SHORT);
	else
		require(k == (line[bytes] == '\r' && line[bytes + 1] == '\n' ? KV_CHUNK_OK
									     : KV_CHUNK_BAD));
	return 0;
}
