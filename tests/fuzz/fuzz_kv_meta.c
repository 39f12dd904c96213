/*
 * libFuzzer target for the meta protocol parser (src/kv/protocol/meta.h). Any broken
 * invariant aborts: spans inside the input, errors from the known set, flags
 * consistent with their mask, values within their ranges, base64 keys that
 * re-encode and decode back, and kv_meta_is_meta agreeing with the parse.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/meta.h"

static void require(int ok)
{
	if (!ok)
		abort();
}

static int inside(struct kv_span s, const char *line, size_t len)
{
	return s.ptr >= line && s.len <= len && s.ptr + s.len <= line + len;
}

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

static int known_reply(const char *e)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(e, known[i]) == 0)
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *line = (const char *)data;
	struct kv_meta m;
	int rc = kv_meta_parse(line, size, &m);
	require(rc == 0 || rc == -1);
	require(m.cmd >= KV_META_NONE && m.cmd <= KV_META_DEBUG);
	require((kv_meta_is_meta(line, size) != 0) == (m.cmd != KV_META_NONE));
	if (rc == -1) {
		require(m.error != NULL && known_reply(m.error));
		require(!m.swallow || m.cmd == KV_META_SET);
		if (m.key_raw.len)
			require(inside(m.key_raw, line, size));
		return 0;
	}
	require(m.error == NULL && m.swallow == 0 && m.cmd != KV_META_NONE);
	require(m.nflags <= KV_META_FLAGS_MAX);
	uint64_t mask = 0;
	for (unsigned i = 0; i < m.nflags; i++) {
		char c = m.flag[i];
		require((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'));
		require(!(mask & KV_META_BIT(c)));
		mask |= KV_META_BIT(c);
		require(kv_meta_has(&m, c));
	}
	require(mask == m.present);
	if (m.cmd == KV_META_NOOP)
		return 0;

	require(inside(m.key_raw, line, size));
	require(m.key_raw.len >= 1 && m.key_raw.len <= KV_KEY_MAX);
	require(m.key_len >= 1);
	const char *key = kv_meta_key(&m);
	if (m.base64) {
		require(key == (const char *)m.keybuf && m.key_len <= KV_META_B64_KEY_MAX);
		char enc[KV_KEY_MAX];
		size_t e = kv_meta_b64_encode(m.keybuf, m.key_len, enc, sizeof(enc));
		require(e > 0 && e <= m.key_raw.len);
		unsigned char back[KV_KEY_MAX];
		require(kv_meta_b64_decode(enc, e, back, sizeof(back)) == m.key_len);
		require(memcmp(back, m.keybuf, m.key_len) == 0);
	} else {
		require(key == m.key_raw.ptr && m.key_len == m.key_raw.len);
		for (size_t i = 0; i < m.key_len; i++) {
			unsigned char ch = (unsigned char)key[i];
			require(ch != ' ');
		}
	}
	if (m.cmd == KV_META_DEBUG)
		return 0;
	if (kv_meta_has(&m, 'O')) {
		require(m.opaque.len <= KV_META_OPAQUE_MAX);
		if (m.opaque.len)
			require(inside(m.opaque, line, size));
	} else {
		require(m.opaque.len == 0);
	}
	if (!kv_meta_has(&m, 'D'))
		require(m.delta == 1);
	if (m.cmd == KV_META_SET)
		require(m.datalen <= KV_BYTES_MAX && m.mode && strchr("EAPRS", m.mode));
	else
		require(m.datalen == 0);
	if (m.cmd == KV_META_ARITH)
		require(m.mode && strchr("I+D-", m.mode));
	return 0;
}
