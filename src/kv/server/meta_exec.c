/*
 * locus-kv: the meta commands. Parsing is kv/protocol/meta.c's; this file maps each
 * command onto the store and words the reply: status code, then the return
 * flags in the order the request gave them, then memcached's W/Z/X markers.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/protocol/meta.h"
#include "kv/server/meta_exec.h"
#include "kv/server/watch.h"

int kv_is_meta_line(const char *line, size_t len)
{
	return kv_meta_is_meta(line, len);
}

void kv_meta_set_clear(struct kv_meta_set *ms)
{
	free(ms->line);
	ms->line = NULL;
	ms->len = 0;
}

static void add(struct kv_buf *b, const char *s)
{
	kv_buf_add(b, s, strlen(s));
}

/* What the return flags can report; `have` says which of them exist. */
struct vals {
	int have_item; /* c f h l s t mean something */
	uint64_t cas;
	uint32_t flags;
	int fetched;
	uint32_t last_access; /* seconds */
	uint32_t size;
	int64_t ttl;	    /* -1: never */
	int64_t ttl_before; /* before this command's T: what a t given before T reports */
	int have_cas;	    /* c without an item (ms: the new cas or 0) */
};

static int64_t ttl_left(kv_store *st, uint32_t exptime)
{
	if (exptime == 0)
		return -1;
	uint32_t now = kv_now(st);
	return exptime > now ? (int64_t)(exptime - now) : 0;
}

/* " O.. k.. c.." for the flags in `allowed`, in request order. */
static void ret_flags(struct kv_buf *b, const struct kv_meta *m, const char *allowed,
		      const struct vals *x)
{
	for (unsigned i = 0; i < m->nflags; i++) {
		char f = m->flag[i];
		if (!strchr(allowed, f))
			continue;
		switch (f) {
		case 'O':
			add(b, " O");
			kv_buf_add(b, m->opaque.ptr, m->opaque.len);
			break;
		case 'k':
			add(b, " k");
			if (m->base64) {
				char enc[4 * ((KV_KEY_MAX + 2) / 3) + 4];
				size_t n =
					kv_meta_b64_encode(m->keybuf, m->key_len, enc, sizeof(enc));
				kv_buf_add(b, enc, n);
				add(b, " b");
			} else {
				kv_buf_add(b, m->key_raw.ptr, m->key_raw.len);
			}
			break;
		case 'c':
			if (x->have_item || x->have_cas)
				kv_buf_addf(b, " c%" PRIu64, x->cas);
			break;
		case 'f':
			if (x->have_item)
				kv_buf_addf(b, " f%" PRIu32, x->flags);
			break;
		case 'h':
			if (x->have_item)
				kv_buf_addf(b, " h%d", x->fetched ? 1 : 0);
			break;
		case 'l':
			if (x->have_item)
				kv_buf_addf(b, " l%" PRIu32, x->last_access);
			break;
		case 's':
			if (x->have_item)
				kv_buf_addf(b, " s%" PRIu32, x->size);
			break;
		case 't':
			/* memcached applies the flags in order: a t before the T sees the old ttl.
			 */
			if (x->have_item)
				kv_buf_addf(b, " t%" PRId64,
					    memchr(m->flag + i, 'T', m->nflags - i) ? x->ttl_before
										    : x->ttl);
			break;
		}
	}
}

static void end_line(struct kv_buf *b)
{
	kv_buf_add(b, "\r\n", 2);
}

static void error_line(struct kv_buf *b, const char *e)
{
	add(b, e);
	end_line(b);
}

static __thread struct kv_buf value_buf;

void kv_meta_thread_exit(void)
{
	kv_buf_free(&value_buf);
}

static void do_mg(kv_store *st, struct kv_counts *cnt, const struct kv_meta *m, struct kv_buf *out)
{
	struct kv_meta_req rq = {
		.key = kv_meta_key(m),
		.nkey = m->key_len,
		.want_value = kv_meta_has(m, 'v'),
		.no_bump = kv_meta_has(m, 'u'),
		.b64key = m->base64,
	};
	if (kv_meta_has(m, 'T')) {
		rq.set_ttl = 1;
		rq.ttl = kv_exptime(st, m->ttl);
	}
	if (kv_meta_has(m, 'N')) {
		rq.vivify = 1;
		rq.vivify_ttl = kv_exptime(st, m->vivify_ttl);
	}
	if (kv_meta_has(m, 'R')) {
		rq.recache = 1;
		rq.recache_below = m->recache_ttl > 0 ? (uint32_t)m->recache_ttl : 0;
	}
	struct kv_meta_view v;
	value_buf.len = 0;
	if (kv_meta_get(st, cnt, &rq, &v, &value_buf) != 0) {
		error_line(out, "SERVER_ERROR out of memory writing get response");
		return;
	}
	if (!v.found) {
		if (m->quiet)
			return;
		add(out, "EN");
		struct vals none = {0};
		ret_flags(out, m, "Ok", &none);
		end_line(out);
		return;
	}
	uint32_t now = kv_now(st);
	struct vals x = {
		.have_item = 1,
		.cas = v.cas,
		.flags = v.flags,
		.fetched = v.fetched,
		.last_access = now > v.atime ? now - v.atime : 0,
		.size = v.nbytes,
		.ttl = ttl_left(st, v.exptime),
		.ttl_before = ttl_left(st, v.exptime_before),
	};
	if (rq.want_value)
		kv_buf_addf(out, "VA %" PRIu32, v.nbytes);
	else
		add(out, "HD");
	ret_flags(out, m, "Okcfhlst", &x);
	if (v.already_won)
		add(out, " Z");
	if (v.stale)
		add(out, " X");
	if (v.win)
		add(out, " W");
	end_line(out);
	if (rq.want_value)
		kv_buf_add(out, value_buf.p, value_buf.len);
	if (value_buf.cap > (1u << 20))
		kv_buf_free(&value_buf);
}

static const char *status_of(enum kv_result r)
{
	switch (r) {
	case KV_STORED:
	case KV_DELETED:
	case KV_OK:
	case KV_TOUCHED:
		return "HD";
	case KV_NOT_STORED:
		return "NS";
	case KV_EXISTS:
		return "EX";
	case KV_NOT_FOUND:
		return "NF";
	case KV_NON_NUMERIC:
		return "CLIENT_ERROR cannot increment or decrement non-numeric value";
	case KV_TOO_LARGE:
		return "SERVER_ERROR object too large for cache";
	case KV_NO_MEMORY:
		return "SERVER_ERROR out of memory storing object";
	}
	return "SERVER_ERROR internal";
}

static int is_error(enum kv_result r)
{
	return r == KV_NON_NUMERIC || r == KV_TOO_LARGE || r == KV_NO_MEMORY;
}

static void do_ms_line(kv_store *st, struct kv_counts *cnt, const struct kv_meta *m,
		       const char *line, size_t len, struct kv_buf *out, struct kv_meta_set *ms,
		       struct kv_meta_outcome *o)
{
	enum kv_result why;
	uint32_t exptime = kv_meta_has(m, 'T') ? kv_exptime(st, m->ttl) : 0;
	uint32_t flags = kv_meta_has(m, 'F') ? m->client_flags : 0;
	struct kv_item *it =
		kv_item_new(st, cnt, kv_meta_key(m), m->key_len, flags, exptime, m->datalen, &why);
	o->data_bytes_to_read = (uint64_t)m->datalen + 2;
	if (it && m->base64)
		it->mark |= KV_IT_B64; /* "me" shows its key in base64 */
	if (!it) {
		/* The data is dropped; a plain set also removes the old value, as memcached does.
		 */
		if (m->mode == 'S')
			kv_drop(st, cnt, kv_meta_key(m), m->key_len);
		error_line(out, status_of(why));
		return;
	}
	ms->line = malloc(len ? len : 1);
	if (!ms->line) {
		kv_item_release(st, it);
		error_line(out, status_of(KV_NO_MEMORY));
		return;
	}
	memcpy(ms->line, line, len);
	ms->len = len;
	o->item = it;
}

void kv_meta_store(kv_store *st, struct kv_counts *cnt, struct kv_meta_set *ms, struct kv_item *it,
		   struct kv_buf *out)
{
	struct kv_meta m;
	if (kv_meta_parse(ms->line, ms->len, &m) != 0) { /* parsed before: cannot fail */
		kv_item_release(st, it);
		error_line(out, m.error);
		kv_meta_set_clear(ms);
		return;
	}
	enum kv_store_mode mode;
	switch (m.mode) {
	case 'E':
		mode = KV_ADD;
		break;
	case 'A':
		mode = KV_APPEND;
		break;
	case 'P':
		mode = KV_PREPEND;
		break;
	case 'R':
		mode = KV_REPLACE;
		break;
	default:
		mode = KV_SET;
		break;
	}
	uint64_t cas = 0;
	if (kv_meta_has(&m, 'C') && (mode == KV_SET || mode == KV_REPLACE))
		mode = kv_meta_has(&m, 'I') ? KV_CAS_STALE : KV_CAS;
	int watched = kv_watch_wanted(KV_WATCH_MUTATIONS);
	char key[KV_KEY_MAX];
	size_t nkey = it->nkey;
	if (watched)
		memcpy(key, kv_item_key(it), nkey); /* the store consumes it */
	struct kv_store_info info;
	enum kv_result r = kv_store_item_info(st, cnt, it, mode, m.cas, &cas, &info);
	if (watched) /* as memcached's ms: the store's line */
		kv_watch_store_result(key, nkey, r, mode, info.exptime, kv_now(st), info.cls, -1,
				      info.nbytes);
	if (is_error(r)) {
		error_line(out, status_of(r));
	} else if (!(r == KV_STORED && m.quiet)) {
		add(out, status_of(r));
		struct vals x = {.have_cas = 1, .cas = r == KV_STORED ? cas : 0};
		ret_flags(out, &m, "Okc", &x);
		end_line(out);
	}
	kv_meta_set_clear(ms);
}

static void do_md(kv_store *st, struct kv_counts *cnt, const struct kv_meta *m, struct kv_buf *out)
{
	uint64_t cas = kv_meta_has(m, 'C') ? m->cas : 0;
	int inval = kv_meta_has(m, 'I');
	uint32_t ttl = kv_meta_has(m, 'T') ? kv_exptime(st, m->ttl) : UINT32_MAX;
	enum kv_result r = kv_meta_delete(st, cnt, kv_meta_key(m), m->key_len, cas, inval, ttl);
	if (r == KV_DELETED && m->quiet)
		return;
	add(out, status_of(r));
	struct vals none = {0};
	ret_flags(out, m, "Ok", &none);
	end_line(out);
}

static void do_ma(kv_store *st, struct kv_counts *cnt, const struct kv_meta *m, struct kv_buf *out)
{
	struct kv_arith_req rq = {
		.incr = m->mode != 'D' && m->mode != '-',
		.delta = m->delta,
		.compare_cas = kv_meta_has(m, 'C') ? m->cas : 0,
	};
	if (kv_meta_has(m, 'T')) {
		rq.set_ttl = 1;
		rq.ttl = kv_exptime(st, m->ttl);
	}
	struct kv_arith_res res = {0};
	enum kv_result r = KV_NOT_FOUND;
	for (int tries = 0; tries < 100; tries++) {
		r = kv_arith_ex(st, cnt, kv_meta_key(m), m->key_len, &rq, &res);
		if (r != KV_NOT_FOUND || !kv_meta_has(m, 'N'))
			break;
		/* Autovivify: create the number with the initial value J (default 0). */
		char num[24];
		int n = snprintf(num, sizeof(num), "%" PRIu64, m->initial);
		enum kv_result why;
		uint32_t exptime = kv_exptime(st, m->vivify_ttl);
		struct kv_item *it = kv_item_new(st, cnt, kv_meta_key(m), m->key_len, 0, exptime,
						 (uint32_t)n, &why);
		if (!it) {
			r = why;
			break;
		}
		kv_item_write(it, 0, num, (size_t)n);
		kv_item_write(it, (size_t)n, "\r\n", 2);
		if (m->base64)
			it->mark |= KV_IT_B64;
		uint64_t cas;
		if (kv_store_item(st, cnt, it, KV_ADD, 0, &cas) == KV_STORED) {
			r = KV_OK;
			res.value = m->initial;
			res.cas = cas;
			res.exptime = exptime;
			break;
		}
		/* Someone else created it first: apply the delta to theirs. */
	}
	if (is_error(r)) {
		error_line(out, status_of(r));
		return;
	}
	if (r != KV_OK) {
		add(out, status_of(r));
		struct vals none = {0};
		ret_flags(out, m, "Ok", &none);
		end_line(out);
		return;
	}
	if (m->quiet)
		return;
	char num[24];
	int n = snprintf(num, sizeof(num), "%" PRIu64, res.value);
	int64_t ttl = ttl_left(st, res.exptime);
	struct vals x = {.have_item = 1, .cas = res.cas, .ttl = ttl, .ttl_before = ttl};
	if (kv_meta_has(m, 'v'))
		kv_buf_addf(out, "VA %d", n);
	else
		add(out, "HD");
	ret_flags(out, m, "Okct", &x);
	end_line(out);
	if (kv_meta_has(m, 'v')) {
		kv_buf_add(out, num, (size_t)n);
		end_line(out);
	}
}

static void do_me(kv_store *st, struct kv_counts *cnt, const struct kv_meta *m, struct kv_buf *out)
{
	struct kv_meta_req rq = {.key = kv_meta_key(m), .nkey = m->key_len, .peek = 1};
	struct kv_meta_view v;
	value_buf.len = 0;
	kv_meta_get(st, cnt, &rq, &v, &value_buf);
	if (!v.found) {
		error_line(out, "EN");
		return;
	}
	uint32_t now = kv_now(st);
	/* memcached prints exp as the clock minus the expiry time: negative while alive. */
	int64_t exp = v.exptime == 0 ? -1 : (int64_t)now - (int64_t)v.exptime;
	add(out, "ME ");
	if (v.b64key) {
		/* memcached prints the key in base64 when the item was stored with one, however
		   me asked ("Zm9v!! b" shows as "Zm9v"). */
		char enc[4 * ((KV_KEY_MAX + 2) / 3) + 4];
		kv_buf_add(out, enc,
			   kv_meta_b64_encode((const unsigned char *)kv_meta_key(m), m->key_len,
					      enc, sizeof(enc)));
	} else {
		kv_buf_add(out, kv_meta_key(m), m->key_len);
	}
	/* size= is the item's size as memcached counts it, whatever locus-kv's own layout. */
	kv_buf_addf(out,
		    " exp=%" PRId64 " la=%" PRIu32 " cas=%" PRIu64 " fetch=%s cls=%u size=%" PRIu64,
		    exp, now > v.atime ? now - v.atime : 0, v.cas, v.fetched ? "yes" : "no",
		    (unsigned)v.cls, kv_mc_item_size(m->key_len, v.flags, v.nbytes));
	end_line(out);
}

void kv_meta_execute(kv_store *st, struct kv_counts *cnt, const char *line, size_t len,
		     struct kv_buf *out, struct kv_meta_set *ms, struct kv_meta_outcome *o)
{
	memset(o, 0, sizeof(*o));
	struct kv_meta m;
	if (kv_meta_parse(line, len, &m) != 0) {
		error_line(out, m.error);
		if (m.swallow)
			o->data_bytes_to_read = (uint64_t)m.datalen + 2;
		return;
	}
	switch (m.cmd) {
	case KV_META_GET:
		do_mg(st, cnt, &m, out);
		break;
	case KV_META_SET:
		do_ms_line(st, cnt, &m, line, len, out, ms, o);
		break;
	case KV_META_DELETE:
		do_md(st, cnt, &m, out);
		break;
	case KV_META_ARITH:
		do_ma(st, cnt, &m, out);
		break;
	case KV_META_NOOP:
		add(out, "MN\r\n");
		break;
	case KV_META_DEBUG:
		do_me(st, cnt, &m, out);
		break;
	case KV_META_NONE:
		error_line(out, "ERROR");
		break;
	}
}
