/*
 * The classic text protocol's command line. The rules follow memcached 1.6's
 * text protocol: token counts per command, which token may be "noreply",
 * which error each bad argument earns. Numbers are read as memcached reads
 * them (kv_num_* in kv/protocol/proto.h): exptimes, lengths and delays through a
 * 64-bit strtol cut to 32 bits, flags and verbosity levels through strtoul cut
 * to 32 bits, cas and delta through strtoull, so out-of-range values that
 * memcached truncates are truncated here too.
 */
#include <string.h>

#include "kv/protocol/proto.h"

/*
 * memcached splits a line into at most 23 tokens and leaves the rest in one
 * piece; only its HTTP/ check can see the difference. More than enough for
 * every non-get command, whose arity is checked on the full count.
 */
#define TOKENS_MAX 23

struct tokens {
	struct kv_span t[TOKENS_MAX];
	unsigned n; /* may exceed TOKENS_MAX: counted, not stored */
};

/* The next space-separated token at or after *pos; 0 at the end of the line. */
static int next_token(const char *line, size_t len, size_t *pos, struct kv_span *tok)
{
	size_t i = *pos;
	while (i < len && line[i] == ' ')
		i++;
	if (i >= len) {
		*pos = len;
		return 0;
	}
	size_t start = i;
	while (i < len && line[i] != ' ')
		i++;
	tok->ptr = line + start;
	tok->len = i - start;
	*pos = i;
	return 1;
}

static void tokenize(const char *line, size_t len, size_t pos, struct tokens *tk)
{
	struct kv_span tok;
	tk->n = 0;
	while (next_token(line, len, &pos, &tok)) {
		if (tk->n < TOKENS_MAX)
			tk->t[tk->n] = tok;
		tk->n++;
	}
}

static int is(struct kv_span s, const char *word)
{
	size_t n = strlen(word);
	return s.len == n && memcmp(s.ptr, word, n) == 0;
}

/* isspace() in the C locale. */
static int c_isspace(unsigned char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/*
 * strtoul/strtol's scan of p[0..n) as a C string (see kv_num_i32 in
 * kv/protocol/proto.h): *mag is the magnitude of the digits, *range says it passed
 * max (ERANGE). 0 when memcached's check after strto* fails: no digit, or a
 * byte other than whitespace right after the digits.
 */
static int scan_number(const char *p, size_t n, uint64_t max, uint64_t *mag, int *neg, int *range)
{
	size_t i = 0;
	while (i < n && c_isspace((unsigned char)p[i]))
		i++;
	*neg = 0;
	*range = 0;
	if (i < n && (p[i] == '+' || p[i] == '-')) {
		*neg = p[i] == '-';
		i++;
	}
	size_t first = i;
	uint64_t v = 0;
	for (; i < n; i++) {
		unsigned d = (unsigned char)p[i] - '0';
		if (d > 9)
			break;
		if (v > (max - d) / 10)
			*range = 1;
		else
			v = v * 10 + d;
	}
	if (i == first)
		return 0;
	if (i < n && !c_isspace((unsigned char)p[i]))
		return 0;
	*mag = v;
	return 1;
}

/* memcached's tokens are C strings: a NUL ends one early. */
static size_t c_strlen(const char *p, size_t n)
{
	const char *nul = memchr(p, '\0', n);
	return nul ? (size_t)(nul - p) : n;
}

int kv_num_i32(const char *p, size_t n, int32_t *out)
{
	uint64_t mag;
	int neg, range;
	n = c_strlen(p, n);
	if (!scan_number(p, n, (uint64_t)INT64_MAX + 1, &mag, &neg, &range) || range)
		return 0;
	if (!neg && mag > INT64_MAX)
		return 0;
	uint64_t v = neg ? (uint64_t)0 - mag : mag;
	*out = (int32_t)(uint32_t)v;
	return 1;
}

int kv_num_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t mag;
	int neg, range;
	n = c_strlen(p, n);
	if (!scan_number(p, n, UINT64_MAX, &mag, &neg, &range) || range)
		return 0;
	uint64_t v = neg ? (uint64_t)0 - mag : mag;
	/* memcached looks for the '-' anywhere in the token, even after the number. */
	if ((int64_t)v < 0 && memchr(p, '-', n))
		return 0;
	*out = v;
	return 1;
}

int kv_num_u32(const char *p, size_t n, uint32_t *out)
{
	uint64_t v;
	if (!kv_num_u64(p, n, &v))
		return 0;
	*out = (uint32_t)v;
	return 1;
}

static int num_i32(struct kv_span s, int32_t *out)
{
	return kv_num_i32(s.ptr, s.len, out);
}

static int num_u32(struct kv_span s, uint32_t *out)
{
	return kv_num_u32(s.ptr, s.len, out);
}

static int num_u64(struct kv_span s, uint64_t *out)
{
	return kv_num_u64(s.ptr, s.len, out);
}

/*
 * memcached's key rule: 1 to KV_KEY_MAX bytes, any of them but the space that
 * separates tokens. Control characters are accepted as memcached accepts
 * them: clients send them (memcaslap's keys start with eight 0x10 bytes).
 */
static int key_ok(struct kv_span k)
{
	return k.len >= 1 && k.len <= KV_KEY_MAX;
}

static int fail(struct kv_cmd *c, const char *reply)
{
	c->error = reply;
	return -1;
}

/* "noreply" counts only as the last token (memcached looks nowhere else). */
static void note_noreply(struct kv_cmd *c, const struct tokens *tk)
{
	if (tk->n >= 2 && tk->n <= TOKENS_MAX && is(tk->t[tk->n - 1], "noreply"))
		c->noreply = 1;
}

/* set/add/replace/append/prepend <key> <flags> <exptime> <bytes> [noreply]; cas adds <cas>. */
static int parse_storage(struct kv_cmd *c, const struct tokens *tk, int with_cas)
{
	unsigned want = with_cas ? 6 : 5;
	if (tk->n != want && tk->n != want + 1)
		return fail(c, KV_ERR_ERROR);
	note_noreply(c, tk);
	if (!key_ok(tk->t[1]))
		return fail(c, KV_ERR_FORMAT);
	int32_t exptime, bytes;
	if (!num_u32(tk->t[2], &c->flags) || !num_i32(tk->t[3], &exptime) ||
	    !num_i32(tk->t[4], &bytes))
		return fail(c, KV_ERR_FORMAT);
	if (with_cas && !num_u64(tk->t[5], &c->cas))
		return fail(c, KV_ERR_FORMAT);
	/* A length that truncates to a negative number is refused, and no data is swallowed. */
	if (bytes < 0 || bytes > KV_BYTES_MAX)
		return fail(c, KV_ERR_FORMAT);
	c->exptime = exptime;
	c->bytes = (uint32_t)bytes;
	c->keys[0] = tk->t[1];
	c->nkeys = 1;
	return 0;
}

/* Up to KV_KEYS_MAX keys from *pos on; c->more says where the rest start. */
static int take_keys(const char *line, size_t len, size_t pos, struct kv_cmd *c)
{
	struct kv_span tok;
	c->nkeys = 0;
	c->more = 0;
	while (next_token(line, len, &pos, &tok)) {
		if (c->nkeys == KV_KEYS_MAX) {
			c->more = (size_t)(tok.ptr - line);
			break;
		}
		if (!key_ok(tok)) {
			c->nkeys = 0;
			return fail(c, KV_ERR_FORMAT);
		}
		c->keys[c->nkeys++] = tok;
	}
	return 0;
}

/*
 * get/gets <key>+ ; gat/gats <exptime> <key>*. memcached wants one token after
 * the command; for gat that is the exptime, so "gat 0" is a get of no keys.
 */
static int parse_get(const char *line, size_t len, size_t pos, struct kv_cmd *c, int touch)
{
	struct kv_span first;
	size_t probe = pos;
	if (!next_token(line, len, &probe, &first))
		return fail(c, KV_ERR_ERROR);
	if (touch) {
		int32_t exptime;
		if (!num_i32(first, &exptime))
			return fail(c, KV_ERR_EXPTIME);
		c->exptime = exptime;
		pos = probe;
	}
	return take_keys(line, len, pos, c);
}

/* delete <key> [0] [noreply]: a hold time other than 0 is a usage error. */
static int parse_delete(struct kv_cmd *c, const struct tokens *tk)
{
	if (tk->n < 2 || tk->n > 4)
		return fail(c, KV_ERR_ERROR);
	if (tk->n > 2) {
		int hold_zero = is(tk->t[2], "0");
		note_noreply(c, tk);
		int ok = (tk->n == 3 && (hold_zero || c->noreply)) ||
			 (tk->n == 4 && hold_zero && c->noreply);
		if (!ok)
			return fail(c, KV_ERR_DELETE);
	}
	if (!key_ok(tk->t[1]))
		return fail(c, KV_ERR_FORMAT);
	c->keys[0] = tk->t[1];
	c->nkeys = 1;
	return 0;
}

/* <cmd> <key> <number> [noreply], as incr, decr and touch take it: the count
   of tokens, noreply and the key; 0, or -1 having failed. The number is the
   caller's, checked after the key as memcached does. */
static int parse_key_number(struct kv_cmd *c, const struct tokens *tk)
{
	if (tk->n != 3 && tk->n != 4)
		return fail(c, KV_ERR_ERROR);
	note_noreply(c, tk);
	if (!key_ok(tk->t[1]))
		return fail(c, KV_ERR_FORMAT);
	return 0;
}

/* incr/decr <key> <delta> [noreply] */
static int parse_arith(struct kv_cmd *c, const struct tokens *tk)
{
	if (parse_key_number(c, tk))
		return -1;
	if (!num_u64(tk->t[2], &c->delta))
		return fail(c, KV_ERR_DELTA);
	c->keys[0] = tk->t[1];
	c->nkeys = 1;
	return 0;
}

/* touch <key> <exptime> [noreply] */
static int parse_touch(struct kv_cmd *c, const struct tokens *tk)
{
	if (parse_key_number(c, tk))
		return -1;
	int32_t exptime;
	if (!num_i32(tk->t[2], &exptime))
		return fail(c, KV_ERR_EXPTIME);
	c->exptime = exptime;
	c->keys[0] = tk->t[1];
	c->nkeys = 1;
	return 0;
}

/* flush_all [delay] [noreply] */
static int parse_flush(struct kv_cmd *c, const struct tokens *tk)
{
	if (tk->n > 3)
		return fail(c, KV_ERR_ERROR);
	note_noreply(c, tk);
	if (tk->n == (c->noreply ? 2u : 1u))
		return 0;
	int32_t delay;
	if (!num_i32(tk->t[1], &delay))
		return fail(c, KV_ERR_EXPTIME);
	c->delay = delay;
	return 0;
}

/* verbosity <level> [noreply]; "verbosity noreply" is noreply with a bad level. */
static int parse_verbosity(struct kv_cmd *c, const struct tokens *tk)
{
	if (tk->n != 2 && tk->n != 3)
		return fail(c, KV_ERR_ERROR);
	note_noreply(c, tk);
	if (!num_u32(tk->t[1], &c->level))
		return fail(c, KV_ERR_FORMAT);
	return 0;
}

static int parse_stats(const char *line, size_t len, struct kv_cmd *c, const struct tokens *tk)
{
	if (tk->n == 1)
		return 0;
	struct kv_span sub = tk->t[1];
	size_t end = len;
	while (end > 0 && line[end - 1] == ' ')
		end--;
	c->args.ptr = sub.ptr;
	c->args.len = (size_t)(line + end - sub.ptr);
	if (is(sub, "settings"))
		c->stats = KV_STATS_SETTINGS;
	else if (is(sub, "items"))
		c->stats = KV_STATS_ITEMS;
	else if (is(sub, "slabs"))
		c->stats = KV_STATS_SLABS;
	else if (is(sub, "reset"))
		c->stats = KV_STATS_RESET;
	else if (is(sub, "sync"))
		c->stats = KV_STATS_SYNC;
	else
		c->stats = KV_STATS_OTHER;
	return 0;
}

/*
 * Unknown commands get ERROR. One whose last token starts with HTTP/ is a web
 * client: close instead (memcached looks at the 23rd token of a longer line,
 * and skips the check for one-character commands).
 */
static int parse_unknown(struct kv_cmd *c, const struct tokens *tk)
{
	c->cmd = KV_CMD_UNKNOWN;
	struct kv_span last = tk->t[tk->n <= TOKENS_MAX ? tk->n - 1 : TOKENS_MAX - 1];
	if (tk->t[0].len >= 2 && last.len >= 5 && memcmp(last.ptr, "HTTP/", 5) == 0)
		c->close = 1;
	return fail(c, KV_ERR_ERROR);
}

static const struct {
	const char *name;
	enum kv_command cmd;
} commands[] = {
	{"get", KV_CMD_GET},
	{"gets", KV_CMD_GETS},
	{"gat", KV_CMD_GAT},
	{"gats", KV_CMD_GATS},
	{"set", KV_CMD_SET},
	{"add", KV_CMD_ADD},
	{"replace", KV_CMD_REPLACE},
	{"append", KV_CMD_APPEND},
	{"prepend", KV_CMD_PREPEND},
	{"cas", KV_CMD_CAS},
	{"delete", KV_CMD_DELETE},
	{"incr", KV_CMD_INCR},
	{"decr", KV_CMD_DECR},
	{"touch", KV_CMD_TOUCH},
	{"flush_all", KV_CMD_FLUSH_ALL},
	{"version", KV_CMD_VERSION},
	{"verbosity", KV_CMD_VERBOSITY},
	{"quit", KV_CMD_QUIT},
	{"stats", KV_CMD_STATS},
	{"shutdown", KV_CMD_SHUTDOWN},
};

int kv_parse(const char *line, size_t len, struct kv_cmd *c)
{
	memset(c, 0, sizeof(*c));
	if (line == NULL)
		len = 0;
	struct tokens tk;
	tokenize(line, len, 0, &tk);
	if (tk.n == 0)
		return fail(c, KV_ERR_ERROR);

	enum kv_command cmd = KV_CMD_UNKNOWN;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (is(tk.t[0], commands[i].name)) {
			cmd = commands[i].cmd;
			break;
		}
	}
	c->cmd = cmd;
	size_t after_cmd = (size_t)(tk.t[0].ptr + tk.t[0].len - line);

	switch (cmd) {
	case KV_CMD_GET:
	case KV_CMD_GETS:
		return parse_get(line, len, after_cmd, c, 0);
	case KV_CMD_GAT:
	case KV_CMD_GATS:
		return parse_get(line, len, after_cmd, c, 1);
	case KV_CMD_SET:
	case KV_CMD_ADD:
	case KV_CMD_REPLACE:
	case KV_CMD_APPEND:
	case KV_CMD_PREPEND:
		return parse_storage(c, &tk, 0);
	case KV_CMD_CAS:
		return parse_storage(c, &tk, 1);
	case KV_CMD_DELETE:
		return parse_delete(c, &tk);
	case KV_CMD_INCR:
	case KV_CMD_DECR:
		return parse_arith(c, &tk);
	case KV_CMD_TOUCH:
		return parse_touch(c, &tk);
	case KV_CMD_FLUSH_ALL:
		return parse_flush(c, &tk);
	case KV_CMD_VERSION: /* memcached ignores any arguments of these two */
	case KV_CMD_QUIT:
		return 0;
	case KV_CMD_VERBOSITY:
		return parse_verbosity(c, &tk);
	case KV_CMD_STATS:
		return parse_stats(line, len, c, &tk);
	case KV_CMD_SHUTDOWN: /* whether it is enabled is the server's to say */
		c->shutdown = tk.n == 1 ? 0 : tk.n == 2 && is(tk.t[1], "graceful") ? 1 : -1;
		return 0;
	case KV_CMD_UNKNOWN:
		break;
	}
	return parse_unknown(c, &tk);
}

int kv_parse_more(const char *line, size_t len, struct kv_cmd *c)
{
	if (line == NULL || c->more == 0 || c->more >= len) {
		c->nkeys = 0;
		c->more = 0;
		return 0;
	}
	c->error = NULL;
	return take_keys(line, len, c->more, c);
}

int kv_line_too_long(size_t len, int is_get_prefix)
{
	return len > KV_LINE_MAX && !is_get_prefix;
}

int kv_line_is_get_prefix(const char *buf, size_t have)
{
	size_t i = 0;
	while (i < have && buf[i] == ' ')
		i++;
	if (i > 100)
		return 0;
	size_t rest = have - i;
	return (rest >= 4 && memcmp(buf + i, "get ", 4) == 0) ||
	       (rest >= 5 && memcmp(buf + i, "gets ", 5) == 0);
}

enum kv_chunk kv_data_chunk_ok(const char *buf, size_t have, uint32_t bytes)
{
	size_t need = (size_t)bytes + 2;
	if (have < need)
		return KV_CHUNK_SHORT;
	return buf[bytes] == '\r' && buf[bytes + 1] == '\n' ? KV_CHUNK_OK : KV_CHUNK_BAD;
}

int kv_split_words(const char *p, size_t len, struct kv_span *w, int max)
{
	int n = 0;
	const char *end = p + len;
	while (p < end && n < max) {
		while (p < end && *p == ' ')
			p++;
		const char *s = p;
		while (p < end && *p != ' ')
			p++;
		if (p > s)
			w[n++] = (struct kv_span){s, (size_t)(p - s)};
	}
	return n;
}
