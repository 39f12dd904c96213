/*
 * The meta protocol's command line (see kv/protocol/meta.h for the rules and the
 * replies, all taken from memcached 1.6.18's observed behaviour).
 */
#include <string.h>

#include "kv/protocol/meta.h"

/* One past the most tokens a line may have; counting stops there. */
#define TOKENS_CAP (KV_META_TOKENS_MAX + 1)

struct tokens {
	struct kv_span t[TOKENS_CAP];
	unsigned n; /* <= TOKENS_CAP: a line with more is refused anyway */
};

static void tokenize(const char *line, size_t len, struct tokens *tk)
{
	size_t i = 0;
	tk->n = 0;
	while (tk->n < TOKENS_CAP) {
		while (i < len && line[i] == ' ')
			i++;
		if (i >= len)
			break;
		size_t start = i;
		while (i < len && line[i] != ' ')
			i++;
		tk->t[tk->n].ptr = line + start;
		tk->t[tk->n].len = i - start;
		tk->n++;
	}
}

static int is(struct kv_span s, const char *word)
{
	size_t n = strlen(word);
	return s.len == n && memcmp(s.ptr, word, n) == 0;
}

static int fail(struct kv_meta *m, const char *reply)
{
	m->error = reply;
	return -1;
}

/* A raw key memcached accepts: 1 to KV_KEY_MAX bytes, any but space (see KEY in meta.h). */
static int key_ok(struct kv_span k)
{
	return k.len >= 1 && k.len <= KV_KEY_MAX;
}

/* Value of a base64 byte; 64 for the pad '=', -1 for a byte the decoder skips. */
static int b64_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	if (ch == '=')
		return 64;
	return -1;
}

size_t kv_meta_b64_decode(const char *src, size_t len, unsigned char *dst, size_t cap)
{
	size_t count = 0;
	for (size_t i = 0; i < len; i++)
		if (b64_value((unsigned char)src[i]) >= 0)
			count++;
	if (count == 0 || count % 4 != 0)
		return 0;
	size_t out = 0;
	unsigned group = 0, have = 0, pads = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64_value((unsigned char)src[i]);
		if (v < 0)
			continue;
		if (v == 64) {
			pads++;
			v = 0;
		}
		group = group << 6 | (unsigned)v;
		if (++have < 4)
			continue;
		if (pads > 2)
			return 0;
		size_t n = 3 - pads;
		if (out + n > cap)
			return 0;
		unsigned char bytes[3] = {(unsigned char)(group >> 16), (unsigned char)(group >> 8),
					  (unsigned char)group};
		memcpy(dst + out, bytes, n);
		out += n;
		if (pads)
			break;
		group = 0;
		have = 0;
	}
	return out;
}

size_t kv_meta_b64_encode(const unsigned char *src, size_t n, char *dst, size_t cap)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t need = 4 * ((n + 2) / 3);
	if (need > cap)
		return 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		size_t left = n - i;
		uint32_t g = (uint32_t)src[i] << 16;
		if (left > 1)
			g |= (uint32_t)src[i + 1] << 8;
		if (left > 2)
			g |= src[i + 2];
		dst[o++] = alphabet[g >> 18 & 63];
		dst[o++] = alphabet[g >> 12 & 63];
		dst[o++] = left > 1 ? alphabet[g >> 6 & 63] : '=';
		dst[o++] = left > 2 ? alphabet[g & 63] : '=';
	}
	return need;
}

static int flag_letter(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
}

/*
 * Step 4 of ERRORS: every flag token from tk->t[first] on. Returns NULL, or
 * the reply memcached's flag scan ends with.
 */
static const char *scan_flags(struct kv_meta *m, const struct tokens *tk, unsigned first)
{
	const char *remembered = NULL;
	for (unsigned i = first; i < tk->n; i++) {
		struct kv_span t = tk->t[i];
		unsigned char c = (unsigned char)t.ptr[0];
		const char *arg = t.ptr + 1;
		size_t alen = t.len - 1;
		if (!flag_letter(c))
			return KV_META_ERR_INVALID_FLAG;
		if (m->present & KV_META_BIT(c))
			return KV_META_ERR_DUP_FLAG;
		switch (c) {
		case 'b':
			m->base64 = 1;
			m->key_len = kv_meta_b64_decode(m->key_raw.ptr, m->key_raw.len, m->keybuf,
							sizeof(m->keybuf));
			if (m->key_len == 0)
				remembered = KV_META_ERR_DECODE_KEY;
			break;
		case 'c':
		case 'f':
		case 'h':
		case 'k':
		case 'l':
		case 's':
		case 't':
		case 'u':
		case 'v':
		case 'I':
		case 'L':
		case 'P':
			break;
		case 'q':
			m->quiet = 1;
			break;
		case 'O':
			m->opaque.ptr = arg;
			m->opaque.len = alen;
			break;
		case 'C':
			if (!kv_num_u64(arg, alen, &m->cas))
				remembered = KV_META_ERR_BAD_TOKEN;
			break;
		case 'T':
			if (!kv_num_i32(arg, alen, &m->ttl))
				remembered = KV_META_ERR_BAD_TOKEN;
			break;
		case 'N':
			if (!kv_num_i32(arg, alen, &m->vivify_ttl))
				remembered = KV_META_ERR_BAD_TOKEN;
			break;
		case 'R':
			if (!kv_num_i32(arg, alen, &m->recache_ttl))
				remembered = KV_META_ERR_BAD_TOKEN;
			break;
		case 'F':
			if (!kv_num_u32(arg, alen, &m->client_flags) && !remembered)
				remembered = KV_ERR_FORMAT;
			break;
		case 'D':
			if (!kv_num_u64(arg, alen, &m->delta))
				remembered = KV_META_ERR_DELTA;
			break;
		case 'J':
			if (!kv_num_u64(arg, alen, &m->initial))
				remembered = KV_META_ERR_INITIAL;
			break;
		case 'M':
			if (t.len != 2)
				remembered = KV_META_ERR_M_LENGTH;
			else
				m->mode = t.ptr[1];
			break;
		default:
			return KV_META_ERR_INVALID_FLAG;
		}
		m->present |= KV_META_BIT(c);
		m->flag[m->nflags++] = (char)c;
	}
	return remembered;
}

static int mode_ok(enum kv_meta_command cmd, char mode)
{
	const char *modes = cmd == KV_META_SET ? "EAPRS" : "I+D-";
	return mode != '\0' && strchr(modes, mode) != NULL;
}

/* mg, ms, md, ma from the key on; `first` is the first flag token. */
static int parse_keyed(struct kv_meta *m, const struct tokens *tk, unsigned first)
{
	enum kv_meta_command cmd = m->cmd;
	m->key_raw = tk->t[1];
	if (!key_ok(m->key_raw))
		return fail(m, KV_ERR_FORMAT);
	if (tk->n >= TOKENS_CAP)
		return fail(m, cmd == KV_META_GET ? KV_META_ERR_TOO_LONG_MG : KV_META_ERR_TOO_LONG);
	m->key_len = m->key_raw.len;
	if (cmd == KV_META_SET) {
		int32_t n;
		struct kv_span d = tk->t[2];
		if (!kv_num_i32(d.ptr, d.len, &n) || n < 0 || n > KV_BYTES_MAX)
			return fail(m, KV_ERR_FORMAT);
		m->datalen = (uint32_t)n;
		m->swallow = 1;
	}

	const char *err = scan_flags(m, tk, first);
	if (err) {
		if (cmd == KV_META_DELETE || cmd == KV_META_ARITH)
			err = KV_META_ERR_INVALID_OR_DUP;
		return fail(m, err);
	}
	if (m->opaque.len > KV_META_OPAQUE_MAX)
		err = KV_META_ERR_OPAQUE;
	if (cmd == KV_META_SET || cmd == KV_META_ARITH) {
		if (!(m->present & KV_META_BIT('M')))
			m->mode = cmd == KV_META_SET ? 'S' : 'I';
		else if (!mode_ok(cmd, m->mode))
			err = cmd == KV_META_SET ? KV_META_ERR_MODE_MS : KV_META_ERR_MODE_MA;
	}
	if (err)
		return fail(m, err);
	m->swallow = 0;
	return 0;
}

/* me <key> [b]: only the token right after the key means anything. */
static int parse_debug(struct kv_meta *m, const struct tokens *tk)
{
	if (tk->n < 2)
		return fail(m, KV_ERR_FORMAT);
	m->key_raw = tk->t[1];
	if (!key_ok(m->key_raw))
		return fail(m, KV_ERR_FORMAT);
	m->key_len = m->key_raw.len;
	if (tk->n >= 3 && is(tk->t[2], "b")) {
		m->base64 = 1;
		m->key_len = kv_meta_b64_decode(m->key_raw.ptr, m->key_raw.len, m->keybuf,
						sizeof(m->keybuf));
		if (m->key_len == 0)
			return fail(m, KV_ERR_FORMAT);
	}
	return 0;
}

static enum kv_meta_command command_of(struct kv_span t)
{
	if (t.len != 2 || t.ptr[0] != 'm')
		return KV_META_NONE;
	switch (t.ptr[1]) {
	case 'g':
		return KV_META_GET;
	case 's':
		return KV_META_SET;
	case 'd':
		return KV_META_DELETE;
	case 'a':
		return KV_META_ARITH;
	case 'n':
		return KV_META_NOOP;
	case 'e':
		return KV_META_DEBUG;
	default:
		return KV_META_NONE;
	}
}

int kv_meta_is_meta(const char *line, size_t len)
{
	size_t i = 0;
	while (i < len && line[i] == ' ')
		i++;
	size_t start = i;
	while (i < len && line[i] != ' ')
		i++;
	struct kv_span t = {line + start, i - start};
	return command_of(t) != KV_META_NONE;
}

int kv_meta_parse(const char *line, size_t len, struct kv_meta *m)
{
	struct tokens tk;
	memset(m, 0, sizeof(*m));
	m->delta = 1;
	tokenize(line, len, &tk);
	if (tk.n == 0)
		return fail(m, KV_ERR_ERROR);
	m->cmd = command_of(tk.t[0]);
	switch (m->cmd) {
	case KV_META_NONE:
		return fail(m, KV_ERR_ERROR);
	case KV_META_NOOP:
		return 0;
	case KV_META_DEBUG:
		return parse_debug(m, &tk);
	case KV_META_SET:
		if (tk.n < 2)
			return fail(m, KV_ERR_ERROR);
		if (tk.n < 3)
			return fail(m, KV_ERR_FORMAT);
		return parse_keyed(m, &tk, 3);
	default:
		if (tk.n < 2)
			return fail(m, KV_ERR_ERROR);
		return parse_keyed(m, &tk, 2);
	}
}
