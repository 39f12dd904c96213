/*
 * -o's names (memcached's extended options), as memcached 1.6.18 knows them
 * (its subopts_tokens, plus the extstore and TLS names of a build with
 * those), with memcached's checks of their values and its words when it
 * refuses one. The ssl_* names are TLS's settings (tls.c).
 *
 * A name is a row in `subs`: whether it needs a value, the values it takes
 * and memcached's words for one outside them, and what it does here. Names
 * whose meaning has no counterpart in locus-kv are still checked as memcached
 * checks them; their values are kept for "stats settings", which shows the
 * row's default until one is given. Families locus-kv does not build
 * (extstore, the proxy) are refused by prefix, with the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kv/server/options.h"
#include "kv/store/slabs.h"

struct sub;
typedef void sub_apply(struct kv_parse *p, const struct sub *o, const char *value);

struct sub {
	const char *name;
	int value;	   /* 1: needs "=value" (memcached refuses it missing), 0: optional */
	sub_apply *apply;  /* what it does here */
	double min, max;   /* the values memcached takes */
	const char *range; /* memcached's words for a value outside them */
	const char *shown; /* kept: what stats settings shows until a value is given */
	size_t field;	   /* text, whole, flag: where in struct kv_settings */
};

/* -o name=value refused: memcached's words, after which -o it was. */
__attribute__((noreturn)) static void sub_die(const char *name, const char *value, const char *why)
{
	kv_die("-o %s%s%s: %s", name, value ? "=" : "", value ? value : "", why);
}

/* The row's value as a whole number within its range, or memcached's words. */
static long sub_long(const struct sub *o, const char *value)
{
	long n;
	if (kv_options_long(value, (long)o->min, (long)o->max, &n))
		sub_die(o->name, value, o->range);
	return n;
}

/* A number as memcached's safe_strtod reads it; -1 if it is not one. */
static int parse_double(const char *v, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end)
		return -1;
	*out = d;
	return 0;
}

/* Keep a value given with -o that changes nothing here, for stats settings to show. */
static void setting_keep(struct kv_settings *s, const char *name, const char *value)
{
	for (int i = 0; i < s->nkept; i++)
		if (strcmp(s->kept[i].name, name) == 0) {
			snprintf(s->kept[i].value, sizeof(s->kept[i].value), "%s", value);
			return;
		}
	if (s->nkept < KV_KEPT_MAX) {
		snprintf(s->kept[s->nkept].name, sizeof(s->kept[0].name), "%s", name);
		snprintf(s->kept[s->nkept].value, sizeof(s->kept[0].value), "%s", value);
		s->nkept++;
	}
}

static void *sub_field(struct kv_parse *p, const struct sub *o)
{
	return (char *)p->s + o->field;
}

/* A file name or an OpenSSL list, kept as given. */
static void text(struct kv_parse *p, const struct sub *o, const char *value)
{
	kv_options_string(sub_field(p, o), value);
}

/* An int: memcached's "could not parse" for what is not one, its range words outside [min, max]. */
static void whole(struct kv_parse *p, const struct sub *o, const char *value)
{
	long n;
	if (kv_options_long(value, INT_MIN, INT_MAX, &n)) {
		char why[96];
		snprintf(why, sizeof(why), "could not parse argument to %s", o->name);
		sub_die(o->name, value, why);
	}
	if (n < o->min || n > o->max)
		sub_die(o->name, value, o->range);
	*(int *)sub_field(p, o) = (int)n;
}

/* A name alone turns its setting on (memcached ignores a value given with it). */
static void flag(struct kv_parse *p, const struct sub *o, const char *value)
{
	*(int *)sub_field(p, o) = 1;
}

static void crawler_on(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru_crawler = 1;
}

static void crawler_off(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru_crawler = 0;
}

static void crawler_sleep(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.crawler_sleep = (uint32_t)sub_long(o, value);
}

static void crawler_tocrawl(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.crawler_tocrawl = (uint32_t)sub_long(o, value);
}

/* slab_automove alone is 1, as memcached. */
static void automove(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.slab_automove = value ? (int)sub_long(o, value) : 1;
}

static void automove_off(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.slab_automove = 0;
}

static void automove_ratio(struct kv_parse *p, const struct sub *o, const char *value)
{
	double d;
	if (parse_double(value, &d) || !(d > o->min) || d > o->max)
		sub_die(o->name, value, o->range);
	p->s->store.automove_ratio = d;
}

static void automove_window(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.automove_window = (unsigned)sub_long(o, value);
}

static void reassign_on(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->slab_reassign = 1;
}

/* no_slab_reassign: no page moves at all. */
static void reassign_off(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->slab_reassign = 0;
	p->s->store.slab_automove = 0;
}

/* hashpower=<12..32>: the table's initial size; memcached's two messages for a number. */
static void hashpower(struct kv_parse *p, const struct sub *o, const char *value)
{
	long n;
	if (kv_options_long(value, LONG_MIN, LONG_MAX, &n))
		sub_die(o->name, value, o->range);
	if (n < o->min)
		kv_die("-o hashpower=%s: Initial hashtable multiplier of %ld is too low", value, n);
	if (n > o->max)
		kv_die("-o hashpower=%s: Initial hashtable multiplier of %ld is too high", value,
		       n);
	p->s->store.hashpower = (unsigned)n;
}

static void no_hashexpand(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.hash_expand = 0;
}

static void hash_algorithm(struct kv_parse *p, const struct sub *o, const char *value)
{
	if (strcmp(value, "jenkins") && strcmp(value, "murmur3") && strcmp(value, "xxh3"))
		sub_die(o->name, value, o->range);
	kv_options_note(p->s, "-o hash_algorithm: locus-kv hashes keys with its own function");
}

static void chunk_max(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.slab_chunk_max = (size_t)sub_long(o, value);
	p->chunk_given = 1;
}

static void no_chunked(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.slab_chunk_max = KV_PAGE_SIZE;
}

/* no_modern: memcached 1.4's defaults, where locus-kv has them. */
static void no_modern(struct kv_parse *p, const struct sub *o, const char *value)
{
	if (!p->chunk_given)
		p->s->store.slab_chunk_max = KV_PAGE_SIZE;
	p->s->slab_reassign = 0;
	p->s->store.slab_automove = 0;
	p->s->store.lru_crawler = 0;
	p->s->store.lru_maintainer = 0;
	p->s->store.lru.segmented = 0;
}

/* lru_maintainer: the maintainer thread and the segmented LRU (the default). */
static void maintainer_on(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru_maintainer = 1;
	p->s->store.lru.segmented = 1;
}

/* no_lru_maintainer: no maintainer, one LRU per class (memcached's compat mode). */
static void maintainer_off(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru_maintainer = 0;
	p->s->store.lru.segmented = 0;
}

/* A number memcached checks, as memcached reads it here (strtod): the row's range. */
static double sub_number(const struct sub *o, const char *value)
{
	double d;
	if (parse_double(value, &d) || d < o->min || d > o->max)
		sub_die(o->name, value, o->range);
	return d;
}

static void hot_pct(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru.hot_pct = (uint32_t)sub_number(o, value);
}

static void warm_pct(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru.warm_pct = (uint32_t)sub_number(o, value);
}

static void hot_factor(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru.hot_max_factor = sub_number(o, value);
}

static void warm_factor(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru.warm_max_factor = sub_number(o, value);
}

/* temporary_ttl=N: items with a TTL of at most N go to the temporary LRU, never evicted. */
static void temp_ttl(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.lru.temp_lru = 1;
	p->s->store.lru.temporary_ttl = (uint32_t)(int32_t)sub_number(o, value);
}

static void track_sizes(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->store.track_sizes = 1;
}

static void idle_timeout(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->idle_timeout = (int)sub_long(o, value);
}

static void watcher_buf(struct kv_parse *p, const struct sub *o, const char *value)
{
	p->s->watcher_buf_kb = (int)sub_long(o, value);
}

/* A number memcached checks, with no counterpart here: kept for stats settings. */
static void checked(struct kv_parse *p, const struct sub *o, const char *value)
{
	double d;
	if (parse_double(value, &d) || d < o->min || d > o->max)
		sub_die(o->name, value, o->range);
	setting_keep(p->s, o->name, value);
	kv_options_note(p->s, "-o: memcached's tail repair and log buffers have no "
			      "counterpart here; those values are checked as memcached checks them "
			      "and change nothing");
}

/*
 * Megabytes, as memcached reads them (a whole number, not negative). memcached
 * keeps the product in 32 bits, so 4096 and above wrap there; refused here.
 */
static void read_buf_limit(struct kv_parse *p, const struct sub *o, const char *value)
{
	long n;
	if (*value == '-' || kv_options_long(value, 0, LONG_MAX, &n))
		sub_die(o->name, value, "could not parse argument to read_buf_mem_limit");
	if (n > 4095)
		sub_die(o->name, value, "read_buf_mem_limit is in megabytes and at most 4095");
	p->s->read_buf_mem_mb = (int)n;
}

/* A name taken with nothing to change here. */
static void accepted(struct kv_parse *p, const struct sub *o, const char *value)
{
	kv_options_note(p->s, "-o: memcached's "
			      "custom slab sizes and response tuning have no counterpart here; "
			      "those names are accepted and change nothing");
}

static const struct sub subs[] = {
	{"lru_crawler", .apply = crawler_on},
	{"no_lru_crawler", .apply = crawler_off},
	{"lru_crawler_sleep", .value = 1, .apply = crawler_sleep, .min = 0, .max = 1000000,
	 .range = "LRU crawler sleep must be between 0 and 1 second"},
	{"lru_crawler_tocrawl", .value = 1, .apply = crawler_tocrawl, .min = 0, .max = UINT32_MAX,
	 .range = "lru_crawler_tocrawl takes a numeric 32bit value"},
	{"maxconns_fast", .apply = accepted},
	{"no_maxconns_fast", .apply = accepted},
	{"hashpower", .value = 1, .apply = hashpower, .min = 12, .max = 32,
	 .range = "Missing numeric argument for hashpower"},
	{"no_hashexpand", .apply = no_hashexpand},
	{"slab_reassign", .apply = reassign_on},
	{"no_slab_reassign", .apply = reassign_off},
	{"slab_automove", .apply = automove, .min = 0, .max = 2,
	 .range = "slab_automove must be between 0 and 2"},
	{"no_slab_automove", .apply = automove_off},
	{"slab_automove_ratio", .value = 1, .apply = automove_ratio, .min = 0, .max = 1,
	 .range = "slab_automove_ratio must be > 0 and < 1"},
	{"slab_automove_window", .value = 1, .apply = automove_window, .min = 3, .max = 3600,
	 .range = "slab_automove_window must be > 2 (at most 3600)"},
	{"tail_repair_time", .value = 1, .apply = checked, .min = 10, .max = 1e18,
	 .range = "Cannot set tail_repair_time to less than 10 seconds", .shown = "0"},
	{"hash_algorithm", .value = 1, .apply = hash_algorithm,
	 .range = "Unknown hash_algorithm option (jenkins, murmur3, xxh3)"},
	{"lru_maintainer", .apply = maintainer_on},
	{"no_lru_maintainer", .apply = maintainer_off},
	{"hot_lru_pct", .value = 1, .apply = hot_pct, .min = 1, .max = 79,
	 .range = "hot_lru_pct must be > 1 and < 80", .shown = "20"},
	{"warm_lru_pct", .value = 1, .apply = warm_pct, .min = 1, .max = 79,
	 .range = "warm_lru_pct must be > 1 and < 80", .shown = "40"},
	{"hot_max_factor", .value = 1, .apply = hot_factor, .min = 1e-300, .max = 1e300,
	 .range = "hot_max_factor must be > 0", .shown = "0.20"},
	{"warm_max_factor", .value = 1, .apply = warm_factor, .min = 1e-300, .max = 1e300,
	 .range = "warm_max_factor must be > 0", .shown = "2.00"},
	{"temporary_ttl", .value = 1, .apply = temp_ttl, .min = -2147483648.0, .max = 2147483647.0,
	 .range = "temporary_ttl takes a number", .shown = "61"},
	{"idle_timeout", .value = 1, .apply = idle_timeout, .min = 0, .max = INT32_MAX,
	 .range = "Missing numeric argument for idle_timeout"},
	{"watcher_logbuf_size", .value = 1, .apply = watcher_buf, .min = 1, .max = 1 << 20,
	 .range = "could not parse argument to watcher_logbuf_size"},
	{"worker_logbuf_size", .value = 1, .apply = checked, .min = 0, .max = 2147483647.0,
	 .range = "could not parse argument to worker_logbuf_size", .shown = "65536"},
	{"slab_sizes", .value = 1, .apply = accepted},
	{"slab_chunk_max", .value = 1, .apply = chunk_max, .min = 1, .max = 1 << 30,
	 .range = "could not parse argument to slab_chunk_max"},
	{"track_sizes", .apply = track_sizes},
	{"no_inline_ascii_resp", .apply = accepted},
	{"inline_ascii_resp", .apply = accepted},
	{"modern", .apply = accepted},
	{"no_modern", .apply = no_modern},
	{"no_chunked_items", .apply = no_chunked},
	{"no_drop_privileges", .apply = accepted},
	{"drop_privileges", .apply = accepted},
	{"resp_obj_mem_limit", .apply = accepted},
	{"read_buf_mem_limit", .value = 1, .apply = read_buf_limit},
	{"sock_cookie_id", .apply = accepted},
	{"relaxed_privileges", .apply = accepted},
	{"ssl_chain_cert", .value = 1, .apply = text, .field = FIELD(tls.chain_cert)},
	{"ssl_key", .value = 1, .apply = text, .field = FIELD(tls.key)},
	{"ssl_keyformat", .value = 1, .apply = whole, .field = FIELD(tls.keyformat), .min = INT_MIN,
	 .max = INT_MAX},
	{"ssl_verify_mode", .value = 1, .apply = whole, .field = FIELD(tls.verify_mode), .min = 0,
	 .max = 3, .range = "Invalid ssl_verify_mode. Use help to see valid options."},
	{"ssl_ca_cert", .value = 1, .apply = text, .field = FIELD(tls.ca_cert)},
	{"ssl_ciphers", .value = 1, .apply = text, .field = FIELD(tls.ciphers)},
	{"ssl_min_version", .value = 1, .apply = whole, .field = FIELD(tls.min_version), .min = 0,
	 .max = 3, .range = "Invalid ssl_min_version. Use help to see valid options."},
	{"ssl_wbuf_size", .value = 1, .apply = whole, .field = FIELD(tls.wbuf_kb), .min = 0,
	 .max = 4194303, .range = "could not parse argument to ssl_wbuf_size"},
	{"ssl_session_cache", .apply = flag, .field = FIELD(tls.session_cache)},
	{"ssl_kernel_tls", .apply = flag, .field = FIELD(tls.kernel_tls)},
};

#define NSUBS (sizeof(subs) / sizeof(subs[0]))

/* Refused families: a prefix and why. */
static const struct {
	const char *prefix, *why;
} refused_subs[] = {
	{"ext_", "extstore (external storage) is not built into locus-kv"},
	{"proxy_", "the proxy is not built into locus-kv"},
};

static const struct sub *sub_named(const char *name)
{
	for (size_t i = 0; i < NSUBS; i++)
		if (strcmp(name, subs[i].name) == 0)
			return &subs[i];
	return NULL;
}

const char *kv_setting_kept(const struct kv_settings *s, const char *name)
{
	for (int i = 0; i < s->nkept; i++)
		if (strcmp(s->kept[i].name, name) == 0)
			return s->kept[i].value;
	return sub_named(name)->shown;
}

/* The row of -o's name, or an exit with the refusal memcached or locus-kv gives it. */
static const struct sub *sub_find(const char *name, const char *value)
{
	for (size_t i = 0; i < sizeof(refused_subs) / sizeof(refused_subs[0]); i++)
		if (strncmp(name, refused_subs[i].prefix, strlen(refused_subs[i].prefix)) == 0)
			kv_die("-o %s: %s", name, refused_subs[i].why);
	const struct sub *o = sub_named(name);
	if (!o) {
		/* memcached's words (and it exits 1): tools may look for them. */
		fprintf(stderr, "Illegal suboption \"%s%s%s\"\n", name, value ? "=" : "",
			value ? value : "");
		exit(1);
	}
	if (o->value && (!value || !*value))
		sub_die(name, NULL, "needs a value");
	return o;
}

void kv_options_extended(struct kv_parse *p, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		kv_die("out of memory");
	for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		char *value = strchr(name, '=');
		if (value)
			*value++ = '\0';
		const struct sub *o = sub_find(name, value);
		o->apply(p, o, value);
	}
	free(copy);
}
