/*
 * locus-kv: the binary protocol's commands (memcached's proto_bin.c), run on
 * a connection's behalf by its worker, through the same store operations
 * and statistics as the text protocol (commands.c). kv/protocol/binary.h
 * reads and judges the requests; this file serves them and writes the
 * responses into the connection's output.
 *
 * A request is served once its header, extras and key are in the input
 * (for SASL_AUTH and SASL_STEP, its whole body). A value to store is read
 * into a new item as the text protocol reads a data block (CONN_DATA), and
 * a body to drop is dropped the same way (CONN_SWALLOW); the request's
 * header stays in c->bin meanwhile, for the response.
 *
 * What is counted follows memcached 1.6.18's binary protocol where it
 * differs from its text one: a get that allocates, stores or misses counts
 * what memcached's binary path counts (an incr that creates its item is
 * neither a miss nor a set; a value too large is not counted as
 * store_too_large), so those few counts the store made are taken back.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/server/sasl.h"
#include "kv/server/server.h"

/* ---------- responses ---------- */

/* Append a response: header, extras, key, value. -1 out of memory (the connection closes). */
static int reply(struct conn *c, uint16_t status, const void *ext, uint8_t extlen, const void *key,
		 uint16_t keylen, const void *val, uint32_t vlen, uint64_t cas)
{
	size_t n = KV_BIN_HEADER + (size_t)extlen + keylen + vlen;
	if (kv_buf_reserve(&c->out, n) != 0) {
		c->close_now = 1;
		return -1;
	}
	char *p = c->out.p + c->out.len;
	kv_bin_response(p, &c->bin, status, extlen, keylen, (uint32_t)(n - KV_BIN_HEADER), cas);
	p += KV_BIN_HEADER;
	if (extlen)
		memcpy(p, ext, extlen);
	if (keylen)
		memcpy(p + extlen, key, keylen);
	if (vlen)
		memcpy(p + extlen + keylen, val, vlen);
	c->out.len += n;
	return 0;
}

/* An error with its text: memcached's for the status unless given. Errors are never quiet. */
static void error(struct conn *c, uint16_t status, const char *text)
{
	if (!text)
		text = kv_bin_status_text(status);
	kv_logv(2, ">%d Writing an error: %s", c->fd, text);
	reply(c, status, NULL, 0, NULL, 0, text, (uint32_t)strlen(text), 0);
}

/* Success, with a value; nothing at all for a quiet command. */
static void success(struct conn *c, int quiet, const void *val, uint32_t vlen, uint64_t cas)
{
	if (!quiet)
		reply(c, KV_BIN_SUCCESS, NULL, 0, NULL, 0, val, vlen, cas);
}

/* Drop the next n bytes of input (a body not read), then go on. */
static void swallow(struct conn *c, uint64_t n)
{
	if (n == 0)
		return;
	c->state = CONN_SWALLOW;
	c->need = n;
	c->got = 0;
	c->after_swallow = NULL;
	c->meta = 0;
}

/* kv_item_new counts a value it cannot take as the text protocol does; binary's does not. */
static void uncount_alloc(struct conn *c, enum kv_result why)
{
	if (why == KV_TOO_LARGE)
		c->w->cnt.store_too_large--;
	else if (why == KV_NO_MEMORY)
		c->w->cnt.store_no_memory--;
}

/* ---------- get, touch, gat ---------- */

static void cmd_get(struct conn *c, uint8_t base, int quiet, const char *ext, const char *key,
		    uint16_t nkey)
{
	int touch = base == KV_BIN_TOUCH || base == KV_BIN_GAT || base == KV_BIN_GATK;
	int with_key = base == KV_BIN_GETK || base == KV_BIN_GATK;
	uint16_t keylen = with_key ? nkey : 0;
	uint32_t exptime = touch ? kv_exptime(kv_srv.st, (int64_t)kv_bin_get32(ext)) : 0;
	/* The header, flags and key go first; the value is copied after them, then the header
	   is filled in. */
	size_t at = c->out.len, head = KV_BIN_HEADER + 4 + keylen;
	if (kv_buf_reserve(&c->out, head) != 0) {
		c->close_now = 1;
		return;
	}
	c->out.len += head;
	struct kv_get_info info;
	uint32_t flags;
	uint64_t cas;
	int hit = kv_get_value(kv_srv.st, &c->w->cnt, key, nkey, touch, exptime,
			       base == KV_BIN_TOUCH ? NULL : &c->out, &info, &flags, &cas);
	kv_detail_count(kv_srv.st, key, nkey, KV_PREFIX_GET, hit > 0);
	/* watch fetchers' line comes from the store's fetch hook (kv_watch_fetch). */
	if (hit > 0) {
		char *p = c->out.p + at;
		kv_bin_response(p, &c->bin, KV_BIN_SUCCESS, 4, keylen,
				(uint32_t)(c->out.len - at - KV_BIN_HEADER), cas);
		kv_bin_put32(p + KV_BIN_HEADER, flags);
		if (keylen)
			memcpy(p + KV_BIN_HEADER + 4, key, keylen);
		return;
	}
	c->out.len = at;
	if (hit < 0)
		error(c, KV_BIN_ENOMEM, NULL);
	else if (quiet)
		return;
	else if (with_key) /* the key is the body, with no text */
		reply(c, KV_BIN_KEY_ENOENT, NULL, 0, key, nkey, NULL, 0, 0);
	else
		error(c, KV_BIN_KEY_ENOENT, NULL);
}

/* ---------- set, add, replace, append, prepend ---------- */

/*
 * A new item for the value, which is read into it next; or an error and the
 * value dropped. A nonzero cas makes a set, add or replace a cas (memcached
 * sets it on the item, where -C keeps it 0).
 */
static void cmd_update(struct conn *c, uint8_t base, const char *ext, const char *key,
		       uint16_t nkey)
{
	int append = base == KV_BIN_APPEND || base == KV_BIN_PREPEND;
	uint32_t flags = append ? 0 : kv_bin_get32(ext);
	uint32_t exptime = append ? 0 : kv_exptime(kv_srv.st, (int64_t)kv_bin_get32(ext + 4));
	uint32_t vlen = kv_bin_value_len(&c->bin);
	uint64_t cas = kv_store_config(kv_srv.st)->use_cas ? c->bin.cas : 0;
	enum kv_store_mode mode = base == KV_BIN_SET	   ? KV_SET
				  : base == KV_BIN_ADD	   ? KV_ADD
				  : base == KV_BIN_REPLACE ? KV_REPLACE
				  : base == KV_BIN_APPEND  ? KV_APPEND
							   : KV_PREPEND;
	if (cas && !append)
		mode = KV_CAS;
	kv_detail_count(kv_srv.st, key, nkey, KV_PREFIX_SET, 0);
	enum kv_result why;
	struct kv_item *it =
		kv_item_new(kv_srv.st, &c->w->cnt, key, nkey, flags, exptime, vlen, &why);
	if (!it) {
		uncount_alloc(c, why);
		if (kv_watch_wanted(KV_WATCH_MUTATIONS))
			kv_watch_stored(c, key, nkey, why, mode, 0, exptime, vlen);
		if (why == KV_TOO_LARGE)
			error(c, KV_BIN_E2BIG, NULL);
		else
			error(c, KV_BIN_ENOMEM, "Out of memory allocating item");
		/* As memcached: a set that fails takes the old value away. */
		if (base == KV_BIN_SET)
			kv_drop(kv_srv.st, &c->w->cnt, key, nkey);
		swallow(c, vlen);
		return;
	}
	c->item = it;
	c->state = CONN_DATA;
	c->need = vlen;
	c->got = 0;
	c->mode = mode;
	c->cas = cas;
}

void kv_bin_data_done(struct conn *c)
{
	struct kv_item *it = c->item;
	c->item = NULL;
	c->state = CONN_LINE;
	kv_item_write(it, it->nbytes, "\r\n", 2); /* the binary protocol sends none */
	int quiet;
	kv_bin_base(c->bin.opcode, &quiet);
	int watched = kv_watch_wanted(KV_WATCH_MUTATIONS);
	char key[KV_KEY_MAX];
	size_t nkey = it->nkey;
	if (watched)
		memcpy(key, kv_item_key(it), nkey); /* the store consumes the item */
	uint64_t cas = 0;
	struct kv_store_info info;
	enum kv_result r =
		kv_store_item_info(kv_srv.st, &c->w->cnt, it, c->mode, c->cas, &cas, &info);
	if (watched)
		kv_watch_stored(c, key, nkey, r, c->mode, info.cls, info.exptime, info.nbytes);
	switch (r) {
	case KV_STORED:
		success(c, quiet, NULL, 0, cas);
		break;
	case KV_EXISTS:
		error(c, KV_BIN_KEY_EEXISTS, NULL);
		break;
	case KV_NOT_FOUND:
		error(c, KV_BIN_KEY_ENOENT, NULL);
		break;
	default:
		/* memcached: an add that finds the key says it exists, a replace that does not
		   says not found, the rest "Not stored." */
		error(c,
		      c->mode == KV_ADD	      ? KV_BIN_KEY_EEXISTS
		      : c->mode == KV_REPLACE ? KV_BIN_KEY_ENOENT
					      : KV_BIN_NOT_STORED,
		      NULL);
		break;
	}
}

/* ---------- delete, incr, decr, flush ---------- */

static void cmd_delete(struct conn *c, int quiet, const char *key, uint16_t nkey)
{
	kv_detail_count(kv_srv.st, key, nkey, KV_PREFIX_DEL, 0);
	switch (kv_meta_delete(kv_srv.st, &c->w->cnt, key, nkey, c->bin.cas, 0, 0)) {
	case KV_DELETED:
		success(c, quiet, NULL, 0, 0);
		break;
	case KV_EXISTS:
		error(c, KV_BIN_KEY_EEXISTS, NULL);
		break;
	default:
		error(c, KV_BIN_KEY_ENOENT, NULL);
		break;
	}
}

/*
 * incr/decr of a missing key with an expiration other than 0xffffffff: the
 * key is added with the initial value, as memcached does, and that is
 * neither a miss nor a set in its counts.
 */
static void arith_create(struct conn *c, int quiet, int incr, const char *key, uint16_t nkey,
			 uint64_t initial, uint32_t exp)
{
	struct kv_counts *cnt = &c->w->cnt;
	if (incr)
		cnt->incr_misses--;
	else
		cnt->decr_misses--;
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, initial);
	enum kv_result why;
	struct kv_item *it = kv_item_new(kv_srv.st, cnt, key, nkey, 0,
					 kv_exptime(kv_srv.st, (int64_t)exp), (uint32_t)n, &why);
	if (!it) {
		uncount_alloc(c, why);
		error(c, KV_BIN_ENOMEM, "Out of memory allocating new item");
		return;
	}
	kv_item_write(it, 0, num, (size_t)n);
	kv_item_write(it, (size_t)n, "\r\n", 2);
	unsigned cls = it->cls;
	uint64_t cas = 0;
	enum kv_result r = kv_store_item(kv_srv.st, cnt, it, KV_ADD, 0, &cas);
	cnt->cmd_set--;
	cnt->cls[cls][KV_CC_CMD_SET]--;
	if (r != KV_STORED) {
		error(c, KV_BIN_NOT_STORED, NULL);
		return;
	}
	char v[8];
	kv_bin_put64(v, initial);
	success(c, quiet, v, 8, cas);
}

static void cmd_arith(struct conn *c, uint8_t base, int quiet, const char *ext, const char *key,
		      uint16_t nkey)
{
	uint64_t initial = kv_bin_get64(ext + 8);
	uint32_t exp = kv_bin_get32(ext + 16);
	struct kv_arith_req rq = {.incr = base == KV_BIN_INCREMENT,
				  .delta = kv_bin_get64(ext),
				  .compare_cas = c->bin.cas};
	struct kv_arith_res res;
	char v[8];
	switch (kv_arith_ex(kv_srv.st, &c->w->cnt, key, nkey, &rq, &res)) {
	case KV_OK:
		kv_bin_put64(v, res.value);
		success(c, quiet, v, 8, res.cas);
		break;
	case KV_NON_NUMERIC:
		error(c, KV_BIN_DELTA_BADVAL, NULL);
		break;
	case KV_EXISTS:
		error(c, KV_BIN_KEY_EEXISTS, NULL);
		break;
	case KV_NOT_FOUND:
		if (exp == KV_BIN_NO_CREATE)
			error(c, KV_BIN_KEY_ENOENT, NULL);
		else
			arith_create(c, quiet, rq.incr, key, nkey, initial, exp);
		break;
	default:
		error(c, KV_BIN_ENOMEM, "Out of memory incrementing value");
		break;
	}
}

static void cmd_flush(struct conn *c, int quiet, const char *ext)
{
	if (kv_srv.set.flush_disabled) {
		error(c, KV_BIN_AUTH_ERROR, NULL);
		return;
	}
	uint32_t exp = c->bin.extlen == 4 ? kv_bin_get32(ext) : 0;
	kv_flush(kv_srv.st, &c->w->cnt, (int64_t)exp);
	success(c, quiet, NULL, 0, 0);
}

/* ---------- stat ---------- */

/* The empty stat response that ends a list. */
static void stat_end(struct conn *c)
{
	reply(c, KV_BIN_SUCCESS, NULL, 0, NULL, 0, NULL, 0, 0);
}

/* Each "STAT <name> <value>" line of a stats text as a response (key: name, value: value),
   "END" as the empty one that ends them. */
static void stat_packets(struct conn *c, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t take = nl ? (size_t)(nl - p) + 1 : n, len = take;
		while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
			len--;
		if (len > 5 && memcmp(p, "STAT ", 5) == 0) {
			const char *name = p + 5, *sp = memchr(name, ' ', len - 5);
			size_t nname = sp ? (size_t)(sp - name) : len - 5;
			const char *val = sp ? sp + 1 : p + len;
			reply(c, KV_BIN_SUCCESS, NULL, 0, name, (uint16_t)nname, val,
			      (uint32_t)(p + len - val), 0);
		} else if (len == 3 && memcmp(p, "END", 3) == 0) {
			stat_end(c);
		}
		p += take;
		n -= take;
	}
}

static int is_word(const char *key, uint16_t nkey, const char *w)
{
	return nkey == strlen(w) && memcmp(key, w, nkey) == 0;
}

static int has_prefix(const char *key, uint16_t nkey, const char *w)
{
	return nkey >= strlen(w) && memcmp(key, w, strlen(w)) == 0;
}

/*
 * memcached's binary stat: no key is the general stats; "reset", "settings"
 * and "detail" are taken as prefixes of the key (as its strncmp does),
 * items, slabs and the sizes ones as whole words; anything else is not
 * found. stats conns, cachedump and locus-kv's sync are text commands only.
 */
static void cmd_stat(struct conn *c, const char *key, uint16_t nkey)
{
	struct kv_buf *b = &c->w->scratch;
	b->len = 0;
	kv_counts_flush(kv_srv.st, &c->w->cnt);
	int e = 0;
	if (nkey == 0) {
		kv_stats_general(b);
	} else if (has_prefix(key, nkey, "reset")) {
		kv_stats_reset_all();
		kv_buf_add(b, "END\r\n", 5);
	} else if (has_prefix(key, nkey, "settings")) {
		kv_stats_settings(b);
	} else if (has_prefix(key, nkey, "detail")) {
		const char *sub = key + 6;
		uint16_t nsub = nkey - 6;
		if (has_prefix(sub, nsub, " dump")) {
			if (kv_detail_dump(kv_srv.st, b) != 0) {
				error(c, KV_BIN_ENOMEM, "Out of memory generating stats");
				return;
			}
			reply(c, KV_BIN_SUCCESS, NULL, 0, "detailed", 8, b->p, (uint32_t)b->len, 0);
			stat_end(c);
			return;
		} else if (has_prefix(sub, nsub, " on")) {
			kv_detail_set(kv_srv.st, 1);
		} else if (has_prefix(sub, nsub, " off")) {
			kv_detail_set(kv_srv.st, 0);
		} else {
			error(c, KV_BIN_KEY_ENOENT, NULL);
			return;
		}
		kv_buf_add(b, "END\r\n", 5);
	} else if (is_word(key, nkey, "items")) {
		e = kv_stats_items(kv_srv.st, b);
	} else if (is_word(key, nkey, "slabs")) {
		e = kv_stats_slabs(kv_srv.st, b);
	} else if (is_word(key, nkey, "sizes")) {
		e = kv_sizes_text(kv_srv.st, b);
	} else if (is_word(key, nkey, "sizes_enable")) {
		kv_stats_sizes_switch(1, b);
	} else if (is_word(key, nkey, "sizes_disable")) {
		kv_stats_sizes_switch(0, b);
	} else {
		error(c, KV_BIN_KEY_ENOENT, NULL);
		return;
	}
	if (e) {
		error(c, KV_BIN_ENOMEM, "Out of memory generating stats");
		return;
	}
	stat_packets(c, b->p, b->len);
}

/* ---------- SASL ---------- */

/* SASL data must fit what memcached reads it into: one item, not chained. */
static int sasl_data_fits(const struct kv_bin_header *h)
{
	uint64_t size = kv_mc_item_size(h->keylen, 0, kv_bin_value_len(h));
	return size <= kv_store_chunk_max(kv_srv.st) &&
	       size <= kv_store_config(kv_srv.st)->item_size_max;
}

/* Is this a SASL_AUTH or SASL_STEP that runs (its data is read whole first)? */
static int sasl_exchange_runs(const struct conn *c, const struct kv_bin_header *h)
{
	return kv_srv.set.sasl &&
	       (h->opcode == KV_BIN_SASL_AUTH || h->opcode == KV_BIN_SASL_STEP) &&
	       kv_bin_judge(h, !c->sasl_ok) == KV_BIN_RUN && h->keylen <= KV_BIN_MECH_MAX &&
	       sasl_data_fits(h);
}

static void cmd_sasl(struct conn *c, uint8_t base, const char *key, uint16_t nkey)
{
	if (!kv_srv.set.sasl) {
		error(c, KV_BIN_UNKNOWN_COMMAND, NULL);
		swallow(c, c->bin.bodylen - nkey);
		return;
	}
	if (base == KV_BIN_SASL_LIST_MECHS) {
		const char *list;
		unsigned len;
		if (kv_sasl_mechs(c, &list, &len) != 0)
			error(c, KV_BIN_AUTH_ERROR, NULL);
		else
			success(c, 0, list, len, 0);
		return;
	}
	uint32_t vlen = kv_bin_value_len(&c->bin);
	if (nkey > KV_BIN_MECH_MAX) {
		error(c, KV_BIN_EINVAL, NULL);
		swallow(c, vlen);
		return;
	}
	if (!sasl_data_fits(&c->bin)) {
		error(c, KV_BIN_ENOMEM, NULL);
		swallow(c, vlen);
		return;
	}
	/* The data is in the input, after the key (kv_bin_step waited for it). */
	const char *data = key + nkey;
	c->in_pos += vlen;
	c->w->cnt.bytes_read += vlen;
	char mech[KV_BIN_MECH_MAX + 1];
	memcpy(mech, key, nkey);
	mech[nkey] = '\0';
	kv_logv(1, "mech:  ``%s'' with %u bytes of data", mech, vlen);
	const char *out = NULL;
	unsigned outlen = 0;
	switch (kv_sasl_exchange(c, base == KV_BIN_SASL_AUTH, mech, vlen ? data : NULL, vlen, &out,
				 &outlen)) {
	case KV_SASL_OK:
		success(c, 0, "Authenticated", 13, 0);
		break;
	case KV_SASL_CONTINUE:
		reply(c, KV_BIN_AUTH_CONTINUE, NULL, 0, NULL, 0, out, outlen, 0);
		break;
	default:
		error(c, KV_BIN_AUTH_ERROR, NULL);
		break;
	}
}

/* ---------- requests ---------- */

static void run(struct conn *c, const char *ext, const char *key)
{
	const struct kv_bin_header *h = &c->bin;
	int quiet;
	uint8_t base = kv_bin_base(h->opcode, &quiet);
	uint16_t nkey = h->keylen;
	switch (base) {
	case KV_BIN_GET:
	case KV_BIN_GETK:
	case KV_BIN_TOUCH:
	case KV_BIN_GAT:
	case KV_BIN_GATK:
		cmd_get(c, base, quiet, ext, key, nkey);
		break;
	case KV_BIN_SET:
	case KV_BIN_ADD:
	case KV_BIN_REPLACE:
	case KV_BIN_APPEND:
	case KV_BIN_PREPEND:
		cmd_update(c, base, ext, key, nkey);
		break;
	case KV_BIN_DELETE:
		cmd_delete(c, quiet, key, nkey);
		break;
	case KV_BIN_INCREMENT:
	case KV_BIN_DECREMENT:
		cmd_arith(c, base, quiet, ext, key, nkey);
		break;
	case KV_BIN_FLUSH:
		cmd_flush(c, quiet, ext);
		break;
	case KV_BIN_NOOP:
		success(c, 0, NULL, 0, 0);
		break;
	case KV_BIN_VERSION:
		success(c, 0, LOCUS_KV_VERSION_REPLY, sizeof(LOCUS_KV_VERSION_REPLY) - 1, 0);
		break;
	case KV_BIN_QUIT:
		success(c, quiet, NULL, 0, 0);
		c->closing = 1;
		c->close_reason = KV_CLOSE_NORMAL;
		break;
	case KV_BIN_STAT:
		cmd_stat(c, key, nkey);
		break;
	case KV_BIN_SASL_LIST_MECHS:
	case KV_BIN_SASL_AUTH:
	case KV_BIN_SASL_STEP:
		cmd_sasl(c, base, key, nkey);
		break;
	}
}

/*
 * memcached reads a request's header, extras and key into its 16 KB read
 * buffer: one that cannot fit closes the connection once the buffer is full.
 */
#define HEAD_MAX READ_CHUNK

/* The bytes a request needs in the input before it is served (or refused: HEAD_MAX). */
static size_t need_of(const struct conn *c, const struct kv_bin_header *h)
{
	size_t head = KV_BIN_HEADER + (size_t)h->extlen + h->keylen;
	if (head > HEAD_MAX)
		return HEAD_MAX;
	if (sasl_exchange_runs(c, h))
		return KV_BIN_HEADER + (size_t)h->bodylen;
	return head;
}

int kv_bin_runnable(const struct conn *c)
{
	size_t avail = c->in.len - c->in_pos;
	if (avail < KV_BIN_HEADER)
		return 0;
	struct kv_bin_header h;
	kv_bin_header_read(c->in.p + c->in_pos, &h);
	return h.magic != KV_BIN_REQ || avail >= need_of(c, &h);
}

int kv_bin_step(struct conn *c)
{
	size_t avail = c->in.len - c->in_pos;
	if (avail < KV_BIN_HEADER)
		return 0;
	const char *p = c->in.p + c->in_pos;
	struct kv_bin_header *h = &c->bin;
	kv_bin_header_read(p, h);
	if (h->magic != KV_BIN_REQ) {
		/* Not a request: the connection closes once what came before is answered. */
		kv_logv(1, "Invalid magic:  %x", h->magic);
		c->closing = 1;
		return 0;
	}
	if (avail < need_of(c, h))
		return 0;
	size_t head = KV_BIN_HEADER + (size_t)h->extlen + h->keylen;
	if (head > HEAD_MAX) {
		kv_logv(1, "<%d binary request of %zu bytes before its value, closing", c->fd,
			head);
		c->close_now = 1;
		return 0;
	}
	if (kv_resp_start(c) != 0) {
		kv_logv(1, "<%d out of memory for a response, closing", c->fd);
		c->close_now = 1;
		return 0;
	}
	c->in_pos += head;
	c->w->cnt.bytes_read += head;
	st_relaxed(&c->last_cmd, kv_now(kv_srv.st));
	c->ran_cmd = 1;
	const char *ext = p + KV_BIN_HEADER, *key = ext + h->extlen;
	kv_logv(2, "<%d binary opcode 0x%02x, key length %u, body length %" PRIu32, c->fd,
		h->opcode, h->keylen, h->bodylen);
	switch (kv_bin_judge(h, kv_srv.set.sasl && !c->sasl_ok)) {
	case KV_BIN_RUN:
		run(c, ext, key);
		break;
	case KV_BIN_BAD_LENGTHS:
		error(c, KV_BIN_UNKNOWN_COMMAND, NULL);
		c->closing = 1;
		break;
	case KV_BIN_UNAUTHENTICATED:
		error(c, KV_BIN_AUTH_ERROR, NULL);
		c->closing = 1;
		break;
	case KV_BIN_BAD_KEY:
	case KV_BIN_BAD_SHAPE:
		error(c, KV_BIN_EINVAL, NULL);
		kv_logv(1, "Protocol error (opcode %02x), close connection %d", h->opcode, c->fd);
		c->closing = 1;
		break;
	case KV_BIN_UNKNOWN:
		/* memcached drops bodylen bytes after the key, extras and key counted again. */
		error(c, KV_BIN_UNKNOWN_COMMAND, NULL);
		swallow(c, h->bodylen);
		break;
	}
	return 1;
}

void kv_bin_negotiate(struct conn *c)
{
	c->negotiating = 0;
	c->binary = (uint8_t)c->in.p[c->in_pos] == KV_BIN_REQ;
	kv_logv(2, "%d: Client using the %s protocol", c->fd, c->binary ? "binary" : "ascii");
}
