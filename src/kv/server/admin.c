/*
 * locus-kv's administrative commands, as memcached 1.6.18 answers them:
 * cache_memlimit, slabs automove|reassign, lru_crawler
 * crawl|metadump|sleep|tocrawl|enable|disable, lru tune|mode|temp_ttl,
 * refresh_certs, and watch
 * (watch.c). Each
 * checks its words in memcached's order and answers with memcached's words.
 * (stats is stats_command.c's; shutdown, verbosity and flush_all are with the
 * other commands in commands.c.)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/server/server.h"
#include "kv/server/tls.h"

#define WORDS_MAX	      24
#define DUMP_STRIPES_PER_TURN 64 /* metadump: stripes walked between looks at the output */

struct words {
	struct kv_span t[WORDS_MAX];
	int n;
};

static int is(struct kv_span t, const char *word)
{
	return t.len == strlen(word) && memcmp(t.ptr, word, t.len) == 0;
}

/* memcached's set_noreply_maybe: a last word "noreply" silences the reply. */
static void noreply_maybe(struct conn *c, const struct words *w)
{
	if (w->n > 1 && is(w->t[w->n - 1], "noreply"))
		c->noreply = c->quiet = 1;
}

/* safe_strtoul: digits (after a sign memcached tolerates), cut to 32 bits; no '-'. */
static int word_u32(struct kv_span t, uint32_t *out)
{
	return kv_num_u32(t.ptr, t.len, out) && !memchr(t.ptr, '-', t.len) ? 0 : -1;
}

static int word_i32(struct kv_span t, int32_t *out)
{
	return kv_num_i32(t.ptr, t.len, out) ? 0 : -1;
}

/* ---------- cache_memlimit ---------- */

static void cache_memlimit(struct conn *c, const struct words *w)
{
	uint32_t mb;
	if (w->n != 2 && w->n != 3) {
		kv_reply(c, "ERROR");
		return;
	}
	noreply_maybe(c, w);
	if (word_u32(w->t[1], &mb) != 0) {
		kv_reply(c, "ERROR");
	} else if (mb < 8) {
		kv_reply(c, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
	} else if (mb > 1000000000) {
		kv_reply(c, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
	} else if (kv_store_set_limit(kv_srv.st, (size_t)mb << 20) != 0) {
		kv_reply(c, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust");
	} else {
		kv_logv(1, "maxbytes adjusted to %" PRIu32 "m", mb);
		kv_reply(c, "OK");
	}
}

/* ---------- slabs ---------- */

static void slabs_automove(struct conn *c, const struct words *w)
{
	noreply_maybe(c, w);
	if (is(w->t[2], "ratio")) {
		char num[64];
		double r;
		char *end;
		if (w->n < 4 || w->t[3].len >= sizeof(num)) {
			kv_reply(c, "ERROR");
			return;
		}
		memcpy(num, w->t[3].ptr, w->t[3].len);
		num[w->t[3].len] = 0;
		r = strtod(num, &end);
		if (end == num || *end) {
			kv_reply(c, "ERROR");
			return;
		}
		kv_automove_set_ratio(kv_srv.st, r);
		kv_reply(c, "OK");
		return;
	}
	uint32_t level;
	if (word_u32(w->t[2], &level) != 0) {
		kv_reply(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (level > 2) {
		kv_reply(c, "ERROR");
		return;
	}
	kv_automove_set(kv_srv.st, (int)level);
	kv_reply(c, "OK");
}

static void slabs_reassign(struct conn *c, const struct words *w)
{
	int32_t src, dst;
	if (w->n != 4) {
		kv_reply(c, "ERROR");
		return;
	}
	if (!kv_srv.set.slab_reassign) {
		kv_reply(c, "CLIENT_ERROR slab reassignment disabled");
		return;
	}
	if (word_i32(w->t[2], &src) != 0 || word_i32(w->t[3], &dst) != 0) {
		kv_reply(c, "CLIENT_ERROR bad command line format");
		return;
	}
	switch (kv_slabs_reassign(kv_srv.st, &c->w->cnt, src, dst)) {
	case KV_MOVE_OK:
		kv_reply(c, "OK");
		break;
	case KV_MOVE_BUSY:
		kv_reply(c, "BUSY currently processing reassign request");
		break;
	case KV_MOVE_BADCLASS:
		kv_reply(c, "BADCLASS invalid src or dst class id");
		break;
	case KV_MOVE_NOSPARE:
		kv_reply(c, "NOSPARE source class has no spare pages");
		break;
	case KV_MOVE_SAME:
		kv_reply(c, "SAME src and dst class are identical");
		break;
	}
}

static void slabs(struct conn *c, const struct words *w)
{
	if (w->n >= 3 && is(w->t[1], "automove"))
		slabs_automove(c, w);
	else if (w->n >= 2 && is(w->t[1], "reassign"))
		slabs_reassign(c, w);
	else
		kv_reply(c, "ERROR");
}

/* ---------- lru_crawler ---------- */

/* "all" or a comma-separated list of class ids 1..63: the classes' bits; 0 if not that. */
static uint64_t class_list(struct kv_span t)
{
	if (is(t, "all"))
		return ~(uint64_t)1;
	uint64_t bits = 0;
	const char *p = t.ptr, *end = t.ptr + t.len;
	while (p <= end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *e = comma ? comma : end;
		uint32_t id;
		if (e == p || word_u32((struct kv_span){p, (size_t)(e - p)}, &id) != 0 || id == 0 ||
		    id >= KV_CLASSES)
			return 0;
		bits |= (uint64_t)1 << id;
		if (!comma)
			break;
		p = comma + 1;
	}
	return bits;
}

static void crawler_crawl(struct conn *c, const struct words *w)
{
	if (is(w->t[2], "hash")) {
		kv_reply(c, "ERROR an unknown error happened");
		return;
	}
	uint64_t classes = class_list(w->t[2]);
	if (!classes) {
		kv_reply(c, "BADCLASS invalid class id");
		return;
	}
	int r = kv_crawler_crawl(kv_srv.st, classes);
	kv_reply(c, r == 0  ? "OK"
		    : r > 0 ? "BUSY currently processing crawler request"
			    : "CLIENT_ERROR lru crawler disabled");
}

static void crawler_metadump(struct conn *c, const struct words *w)
{
	if (kv_srv.set.dump_disabled) {
		kv_reply(c, "ERROR metadump not allowed");
		return;
	}
	if (!c->udp && kv_out_pending(c) > 0) {
		/* As memcached: replies of earlier commands still wait to go out. */
		kv_reply(c, "ERROR cannot pipeline other commands before metadump");
		return;
	}
	uint64_t classes = is(w->t[2], "hash") ? ~(uint64_t)1 : class_list(w->t[2]);
	if (!classes) {
		kv_reply(c, "BADCLASS invalid class id");
		return;
	}
	if (kv_crawler_busy(kv_srv.st)) {
		kv_reply(c, "BUSY currently processing crawler request");
		return;
	}
	if (c->udp) {
		kv_reply(c, "CLIENT_ERROR metadump is not served over UDP");
		return;
	}
	c->dumping = 1;
	c->dump_stripe = 0;
	c->dump_classes = classes;
}

/*
 * The dump goes out a few stripes at a time: between turns the connection
 * writes, and waits for its client to read once OUT_HIGH bytes wait, so a
 * dump of a large cache is never held whole.
 */
int kv_metadump_continue(struct conn *c)
{
	unsigned n = kv_store_stripes(kv_srv.st);
	for (unsigned k = 0; k < DUMP_STRIPES_PER_TURN && c->dump_stripe < n; k++) {
		if (kv_metadump_stripe(kv_srv.st, c->dump_stripe++, c->dump_classes, &c->out) !=
		    0) {
			c->close_now = 1; /* out of memory: the dump cannot be finished */
			return 0;
		}
		if (kv_out_pending(c) >= OUT_HIGH)
			return 1;
	}
	if (c->dump_stripe < n)
		return 1;
	kv_reply(c, "END");
	return 0;
}

static void crawler_setting(struct conn *c, const struct words *w, int sleep)
{
	uint32_t v;
	if (word_u32(w->t[2], &v) != 0 || memchr(w->t[2].ptr, '.', w->t[2].len)) {
		kv_reply(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (sleep && v > 1000000) {
		kv_reply(c, "CLIENT_ERROR sleep must be one second or less");
		return;
	}
	kv_crawler_set(kv_srv.st, sleep ? (int64_t)v : -1, sleep ? -1 : (int64_t)v);
	kv_reply(c, "OK");
}

static void lru_crawler(struct conn *c, const struct words *w)
{
	if (w->n == 3 && (is(w->t[1], "crawl") || is(w->t[1], "metadump"))) {
		if (!kv_crawler_enabled(kv_srv.st)) {
			kv_reply(c, "CLIENT_ERROR lru crawler disabled");
			return;
		}
		if (is(w->t[1], "crawl"))
			crawler_crawl(c, w);
		else
			crawler_metadump(c, w);
	} else if (w->n == 3 && is(w->t[1], "sleep")) {
		crawler_setting(c, w, 1);
	} else if (w->n == 3 && is(w->t[1], "tocrawl")) {
		crawler_setting(c, w, 0);
	} else if (w->n == 2 && is(w->t[1], "enable")) {
		kv_reply(c, kv_crawler_enable(kv_srv.st) == 0
				    ? "OK"
				    : "ERROR failed to start lru crawler thread");
	} else if (w->n == 2 && is(w->t[1], "disable")) {
		kv_crawler_disable(kv_srv.st);
		kv_reply(c, "OK");
	} else {
		kv_reply(c, "ERROR");
	}
}

/* ---------- lru ---------- */

/* memcached's strtod-based safe_strtod on a word: 0 and *out, or -1. */
static int word_double(struct kv_span t, double *out)
{
	char num[64];
	char *end;
	if (t.len == 0 || t.len >= sizeof(num))
		return -1;
	memcpy(num, t.ptr, t.len);
	num[t.len] = 0;
	*out = strtod(num, &end);
	return end == num || *end ? -1 : 0;
}

/*
 * lru tune <hot pct> <warm pct> <hot factor> <warm factor> | mode flat|segmented |
 * temp_ttl <ttl> (negative: off), as memcached answers them; mode and temp_ttl only while
 * the LRU maintainer runs.
 */
static void lru(struct conn *c, const struct words *w)
{
	struct kv_lru_tune t;
	kv_store_lru_get(kv_srv.st, &t);
	noreply_maybe(c, w);
	int maint = kv_maintainer_running(kv_srv.st);
	if (is(w->t[1], "tune") && w->n >= 6) {
		uint32_t hot, warm;
		double hf, wf;
		if (word_u32(w->t[2], &hot) || word_u32(w->t[3], &warm) ||
		    word_double(w->t[4], &hf) || word_double(w->t[5], &wf)) {
			kv_reply(c, "ERROR");
		} else if (hot + warm > 80) {
			kv_reply(c, "ERROR hot and warm pcts must not exceed 80");
		} else if (wf <= 0 || hf <= 0) {
			kv_reply(c, "ERROR hot/warm age factors must be greater than 0");
		} else {
			t.hot_pct = hot;
			t.warm_pct = warm;
			t.hot_max_factor = hf;
			t.warm_max_factor = wf;
			kv_store_lru_set(kv_srv.st, &t);
			kv_reply(c, "OK");
		}
	} else if (is(w->t[1], "mode") && w->n >= 3 && maint) {
		if (is(w->t[2], "flat") || is(w->t[2], "segmented")) {
			t.segmented = is(w->t[2], "segmented");
			kv_store_lru_set(kv_srv.st, &t);
			kv_reply(c, "OK");
		} else {
			kv_reply(c, "ERROR");
		}
	} else if (is(w->t[1], "temp_ttl") && w->n >= 3 && maint) {
		int32_t ttl;
		if (word_i32(w->t[2], &ttl) != 0) {
			kv_reply(c, "ERROR");
		} else {
			t.temp_lru = ttl >= 0;
			if (ttl >= 0)
				t.temporary_ttl = (uint32_t)ttl;
			kv_store_lru_set(kv_srv.st, &t);
			kv_reply(c, "OK");
		}
	} else {
		kv_reply(c, "ERROR");
	}
}

/* ---------- refresh_certs ---------- */

/* The certificate and key read again (tls.c); as memcached, noreply silences only "OK". */
static void refresh_certs(struct conn *c, const struct words *w)
{
	char err[512];
	noreply_maybe(c, w);
	if (!kv_srv.set.tls.enabled) {
		c->noreply = 0;
		kv_reply(c, "Error TLS not enabled");
	} else if (kv_tls_refresh(err, sizeof(err)) != 0) {
		c->noreply = 0;
		kv_reply(c, err);
	} else {
		kv_reply(c, "OK");
	}
}

/* Does a line starting with this word go to one of the commands below? */
static int admin_word(struct kv_span w)
{
	static const char *const words[] = {"cache_memlimit", "slabs",	       "lru_crawler",
					    "watch",	      "refresh_certs", "lru"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (is(w, words[i]))
			return 1;
	return 0;
}

int kv_admin_command(struct conn *c, const char *line, size_t len)
{
	struct words w;
	/* The first word first: every get and set comes through here. */
	if (kv_split_words(line, len, w.t, 1) == 0 || !admin_word(w.t[0]))
		return 0;
	w.n = kv_split_words(line, len, w.t, WORDS_MAX);
	if (is(w.t[0], "cache_memlimit"))
		cache_memlimit(c, &w);
	else if (is(w.t[0], "slabs"))
		slabs(c, &w);
	else if (is(w.t[0], "lru_crawler"))
		lru_crawler(c, &w);
	else if (is(w.t[0], "watch"))
		kv_watch_command(c, w.t, w.n);
	else if (is(w.t[0], "refresh_certs"))
		refresh_certs(c, &w);
	else if (is(w.t[0], "lru") && w.n >= 2)
		lru(c, &w);
	else
		return 0;
	return 1;
}
