/*
 * locus-kv's command line (options.h). Every option memcached 1.6.18 has is
 * taken, in three kinds:
 *
 *  - implemented: -p -U -s -a -l (repeatable) -b -t -m -c -I -f -n -v -u -P
 *    -d -r -k -A -F, and -o lru_crawler / no_lru_crawler;
 *  - accepted with a note printed under -v, where memcached tunes something
 *    locus-kv does not have (its LRU maintainer, hash table growth, log
 *    buffers...) or where locus-kv behaves one fixed way (-R, -B ascii|auto);
 *  - refused with a message saying why: what needs a feature locus-kv does not
 *    build (the binary protocol, SASL, TLS, extstore, the proxy), and what memcached itself refuses
 * (an unknown -o name, values out of range).
 *
 * Bad values are refused naming the option and the range. memcached's own
 * texts are kept where tools may look for them: "Illegal suboption" for an
 * unknown -o name, and -I's limits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/options.h"
#include "kv/server.h"
#include "kv/slabs.h"
#include "locus/cs.h"

#define EX_USAGE 64

void kv_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "locus-kv: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EX_USAGE);
}

static void usage(FILE *out)
{
	fprintf(out,
		"locus-kv " LOCUS_KV_VERSION "\n"
		"A memcached-compatible server whose critical sections run on locus mechanisms.\n"
		"It takes every memcached 1.6 option: those marked (accepted) change nothing here\n"
		"and say so under -v; those marked (refused) stop it with the reason.\n"
		"\n"
		"-p, --port=<num>          TCP port to listen on (default: 11211; 0: none)\n"
		"-U, --udp-port=<num>      UDP port to listen on (default: 0, off)\n"
		"-s, --unix-socket=<file>  Unix socket to listen on, instead of TCP\n"
		"-a, --unix-mask=<mask>    access mask of the Unix socket, octal (default: 700)\n"
		"-A, --enable-shutdown     enable the ascii \"shutdown\" command\n"
		"-l, --listen=<addr>       interface to listen on (default: all); repeatable, or "
		"a\n"
		"                          comma-separated list\n"
		"-d, --daemon              run as a daemon\n"
		"-r, --enable-coredumps    raise the core file limit to its maximum\n"
		"-u, --user=<user>         when started as root, become <user> before binding\n"
		"-m, --memory-limit=<mb>   item memory in megabytes (default: 64); suffixes k, m, "
		"g\n"
		"-M, --disable-evictions   return an error when memory is full instead of "
		"evicting\n"
		"-c, --conn-limit=<num>    max simultaneous connections (default: 1024)\n"
		"-k, --lock-memory         lock all paged memory (mlockall)\n"
		"-v, --verbose             verbose (print errors); -vv also prints every command\n"
		"-h, --help                print this help and exit\n"
		"-i, --license             print the license and exit\n"
		"-V, --version             print the version and exit\n"
		"-P, --pidfile=<file>      write the process id to <file>, removed at exit\n"
		"-f, --slab-growth-factor=<num>  chunk size growth factor (default: 1.25)\n"
		"-n, --slab-min-size=<num> smallest key+value+flags room of a chunk (default: 48)\n"
		"-L, --enable-largepages   (accepted) large pages are not used\n"
		"-D <char>                 key prefix delimiter of stats detail (and turns it on)\n"
		"-t, --threads=<num>       worker threads (default: 4)\n"
		"-R, --max-reqs-per-event=<num>  commands a connection runs before the worker's\n"
		"                          other connections have a turn (default: 20)\n"
		"-C, --disable-cas         disable CAS: every cas value is 0, cas commands fail\n"
		"-b, --listen-backlog=<num> the listen queue's length (default: 1024)\n"
		"-B, --protocol=<name>     ascii or auto (ascii: the only one here); binary "
		"refused\n"
		"-I, --max-item-size=<num> largest item, with k/m suffix (default: 1m; 1k .. "
		"1024m,\n"
		"                          at most half of -m, a multiple of slab_chunk_max)\n"
		"-S, --enable-sasl         (refused) SASL is not built\n"
		"-F, --disable-flush-all   refuse flush_all\n"
		"-X, --disable-dumping     refuse stats cachedump and lru_crawler metadump\n"
		"-W, --disable-watch       refuse the watch command\n"
		"-Y, --auth-file=<file>    (refused) authentication is not built\n"
		"-e, --memory-file=<file>  (refused) a memory file (restartable cache) is not "
		"built\n"
		"-Z, --enable-ssl          (refused) TLS is not built\n"
		"-N, --napi-ids=<num>      (accepted) threads are not chosen by NAPI id\n"
		"-o, --extended=<opts>     memcached's comma-separated extended options; these "
		"act:\n"
		"                          lru_crawler, no_lru_crawler, lru_crawler_sleep=<us>,\n"
		"                          lru_crawler_tocrawl=<n>: the crawler thread;\n"
		"                          slab_automove=0|1|2, slab_automove_ratio=<r>,\n"
		"                          slab_automove_window=<s>, no_slab_automove,\n"
		"                          slab_reassign, no_slab_reassign: moving slab pages\n"
		"                          between classes (default 1, 0.8, 30);\n"
		"                          slab_chunk_max=<bytes>, no_chunked_items, no_modern,\n"
		"                          hashpower=<n>, idle_timeout=<s>, track_sizes,\n"
		"                          watcher_logbuf_size=<KB>;\n"
		"                          memcached's other names are accepted, checked as\n"
		"                          memcached checks them, and change nothing (-v notes\n"
		"                          it); ext_* (extstore), ssl_* and proxy_* are refused\n"
		"\n"
		"locus options:\n"
		"    --sync=<sections>     the mechanism of each kind of critical section, as\n"
		"                          section=spec pairs separated by commas; sections:\n"
		"                            hash   the hash table's stripes (item locks)\n"
		"                            alloc  item allocation and the LRU lists\n"
		"                            slabs  the slab allocator\n"
		"                            stats  the global statistics\n"
		"                            all    all four\n"
		"                          e.g. --sync "
		"hash=mcs,alloc=async,slabs=ttas,stats=mutex\n"
		"                          or   --sync all=oyama   (default: all=mutex)\n"
		"    --stripes=<num>       hash stripes, a power of 2 (default: 1024)\n"
		"    --no-lru-crawler      as -o no_lru_crawler: no crawler thread\n"
		"    --section-stats       time every critical section: 'stats sync' then reports\n"
		"                          each section's runs and its callers' time in it\n"
		"                          (waiting included); off by default: two clock reads\n"
		"                          per section run\n"
		"    --debug-commands      accept 'debug_clock_advance <seconds>' (tests)\n"
		"    --mechanisms          list the mechanisms and their options, and exit\n"
		"\n"
		"Mechanisms:");
	for (const char *const *m = locus_cs_mechanisms(); *m; m++)
		fprintf(out, " %s", *m);
	fprintf(out, "\n");
}

/* A size with an optional k/m/g suffix; `unit` multiplies a bare number. */
static int parse_size(const char *s, uint64_t unit, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	uint64_t mul = unit;
	if (*end) {
		switch (*end) {
		case 'k':
		case 'K':
			mul = 1024;
			break;
		case 'm':
		case 'M':
			mul = 1024 * 1024;
			break;
		case 'g':
		case 'G':
			mul = 1024ull * 1024 * 1024;
			break;
		default:
			return -1;
		}
		if (end[1])
			return -1;
	}
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static void note(struct kv_settings *s, const char *text)
{
	for (int i = 0; i < s->nnotes; i++)
		if (s->notes[i] == text)
			return;
	if (s->nnotes < KV_NOTES_MAX)
		s->notes[s->nnotes++] = text;
}

/*
 * -o's names, as memcached 1.6.18 knows them (its subopts_tokens, plus the
 * extstore and TLS names of a build with those), with memcached's checks of
 * their values and its words when it refuses one.
 */
enum sub_kind {
	SUB_CRAWLER_ON,	     /* lru_crawler */
	SUB_CRAWLER_OFF,     /* no_lru_crawler */
	SUB_CRAWLER_SLEEP,   /* lru_crawler_sleep=<us> */
	SUB_CRAWLER_TOCRAWL, /* lru_crawler_tocrawl=<n> */
	SUB_AUTOMOVE,	     /* slab_automove[=0|1|2] */
	SUB_AUTOMOVE_OFF,    /* no_slab_automove */
	SUB_AUTOMOVE_RATIO,
	SUB_AUTOMOVE_WINDOW,
	SUB_REASSIGN_ON,  /* slab_reassign */
	SUB_REASSIGN_OFF, /* no_slab_reassign: no page moves at all */
	SUB_HASHPOWER,	  /* hashpower=<12..32>: the table's initial size */
	SUB_HASH_ALGO,	  /* hash_algorithm=jenkins|murmur3|xxh3 */
	SUB_CHUNK_MAX,	  /* slab_chunk_max=<bytes> */
	SUB_NO_CHUNKED,	  /* no_chunked_items */
	SUB_NO_MODERN,	  /* no_modern */
	SUB_TRACK_SIZES,  /* track_sizes: stats sizes from the start */
	SUB_IDLE_TIMEOUT, /* idle_timeout=<s> */
	SUB_WATCHER_BUF,  /* watcher_logbuf_size=<KB> */
	SUB_NUMBER,	  /* a number memcached checks (min, max, its message); no effect here */
	SUB_ACCEPT,	  /* taken, nothing to change here (noted under -v) */
};

struct sub {
	const char *name;
	enum sub_kind kind;
	int value;	   /* 1: needs "=value" (memcached refuses it missing), 0: optional */
	double min, max;   /* SUB_NUMBER: the range memcached allows */
	const char *range; /* memcached's words for a value out of it */
};

static const struct sub subs[] = {
	{.name = "lru_crawler", .kind = SUB_CRAWLER_ON, .value = 0},
	{.name = "no_lru_crawler", .kind = SUB_CRAWLER_OFF, .value = 0},
	{.name = "lru_crawler_sleep", .kind = SUB_CRAWLER_SLEEP, .value = 1},
	{.name = "lru_crawler_tocrawl", .kind = SUB_CRAWLER_TOCRAWL, .value = 1},
	{.name = "maxconns_fast", .kind = SUB_ACCEPT, .value = 0},
	{.name = "no_maxconns_fast", .kind = SUB_ACCEPT, .value = 0},
	{.name = "hashpower", .kind = SUB_HASHPOWER, .value = 1},
	{.name = "no_hashexpand", .kind = SUB_ACCEPT, .value = 0},
	{.name = "slab_reassign", .kind = SUB_REASSIGN_ON, .value = 0},
	{.name = "no_slab_reassign", .kind = SUB_REASSIGN_OFF, .value = 0},
	{.name = "slab_automove", .kind = SUB_AUTOMOVE, .value = 0},
	{.name = "no_slab_automove", .kind = SUB_AUTOMOVE_OFF, .value = 0},
	{.name = "slab_automove_ratio", .kind = SUB_AUTOMOVE_RATIO, .value = 1},
	{.name = "slab_automove_window", .kind = SUB_AUTOMOVE_WINDOW, .value = 1},
	{"tail_repair_time", SUB_NUMBER, 1, 10, 1e18,
	 "Cannot set tail_repair_time to less than 10 seconds"},
	{.name = "hash_algorithm", .kind = SUB_HASH_ALGO, .value = 1},
	{.name = "lru_maintainer", .kind = SUB_ACCEPT, .value = 0},
	{.name = "no_lru_maintainer", .kind = SUB_ACCEPT, .value = 0},
	{"hot_lru_pct", SUB_NUMBER, 1, 1, 79, "hot_lru_pct must be > 1 and < 80"},
	{"warm_lru_pct", SUB_NUMBER, 1, 1, 79, "warm_lru_pct must be > 1 and < 80"},
	{"hot_max_factor", SUB_NUMBER, 1, 1e-300, 1e300, "hot_max_factor must be > 0"},
	{"warm_max_factor", SUB_NUMBER, 1, 1e-300, 1e300, "warm_max_factor must be > 0"},
	{"temporary_ttl", SUB_NUMBER, 1, -2147483648.0, 2147483647.0,
	 "temporary_ttl takes a number"},
	{.name = "idle_timeout", .kind = SUB_IDLE_TIMEOUT, .value = 1},
	{.name = "watcher_logbuf_size", .kind = SUB_WATCHER_BUF, .value = 1},
	{"worker_logbuf_size", SUB_NUMBER, 1, 0, 2147483647.0,
	 "could not parse argument to worker_logbuf_size"},
	{.name = "slab_sizes", .kind = SUB_ACCEPT, .value = 1},
	{.name = "slab_chunk_max", .kind = SUB_CHUNK_MAX, .value = 1},
	{.name = "track_sizes", .kind = SUB_TRACK_SIZES, .value = 0},
	{.name = "no_inline_ascii_resp", .kind = SUB_ACCEPT, .value = 0},
	{.name = "inline_ascii_resp", .kind = SUB_ACCEPT, .value = 0},
	{.name = "modern", .kind = SUB_ACCEPT, .value = 0},
	{.name = "no_modern", .kind = SUB_NO_MODERN, .value = 0},
	{.name = "no_chunked_items", .kind = SUB_NO_CHUNKED, .value = 0},
	{.name = "no_drop_privileges", .kind = SUB_ACCEPT, .value = 0},
	{.name = "drop_privileges", .kind = SUB_ACCEPT, .value = 0},
	{.name = "resp_obj_mem_limit", .kind = SUB_ACCEPT, .value = 0},
	{"read_buf_mem_limit", SUB_NUMBER, 1, 0, 2147483647.0,
	 "could not parse argument to read_buf_mem_limit"},
	{.name = "sock_cookie_id", .kind = SUB_ACCEPT, .value = 0},
	{.name = "relaxed_privileges", .kind = SUB_ACCEPT, .value = 0},
	{.name = NULL},
};

/* Refused families: a prefix and why. */
static const struct {
	const char *prefix, *why;
} refused_subs[] = {
	{"ext_", "extstore (external storage) is not built into locus-kv"},
	{"ssl_", "TLS is not built into locus-kv"},
	{"proxy_", "the proxy is not built into locus-kv"},
	{NULL, NULL},
};

/* Keep a value given with -o that changes nothing here, for stats settings to show. */
static void kv_setting_keep(struct kv_settings *s, const char *name, const char *value)
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

const char *kv_setting_kept(const struct kv_settings *s, const char *name, const char *dflt)
{
	for (int i = 0; i < s->nkept; i++)
		if (strcmp(s->kept[i].name, name) == 0)
			return s->kept[i].value;
	return dflt;
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

/* -o name=value refused: memcached's words, after which -o it was. */
__attribute__((noreturn)) static void sub_die(const char *name, const char *value, const char *why)
{
	kv_die("-o %s%s%s: %s", name, value ? "=" : "", value ? value : "", why);
}

static void parse_extended(struct kv_settings *s, const char *arg, int *chunk_given)
{
	char *copy = strdup(arg), *save = NULL;
	if (!copy)
		kv_die("out of memory");
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		char *value = strchr(opt, '=');
		if (value)
			*value++ = '\0';
		for (int i = 0; refused_subs[i].prefix; i++)
			if (strncmp(opt, refused_subs[i].prefix, strlen(refused_subs[i].prefix)) ==
			    0)
				kv_die("-o %s: %s", opt, refused_subs[i].why);
		const struct sub *sub = NULL;
		for (int i = 0; subs[i].name; i++)
			if (strcmp(opt, subs[i].name) == 0)
				sub = &subs[i];
		if (!sub) {
			/* memcached's words (and it exits 1): tools may look for them. */
			fprintf(stderr, "Illegal suboption \"%s%s%s\"\n", opt, value ? "=" : "",
				value ? value : "");
			exit(1);
		}
		if (sub->value && (!value || !*value))
			sub_die(opt, NULL, "needs a value");
		long n = 0;
		double d = 0;
		switch (sub->kind) {
		case SUB_CRAWLER_ON:
			s->store.lru_crawler = 1;
			break;
		case SUB_CRAWLER_OFF:
			s->store.lru_crawler = 0;
			break;
		case SUB_CRAWLER_SLEEP:
			if (parse_int(value, 0, 1000000, &n))
				sub_die(opt, value,
					"LRU crawler sleep must be between 0 and 1 second");
			s->store.crawler_sleep = (uint32_t)n;
			break;
		case SUB_CRAWLER_TOCRAWL:
			if (parse_int(value, 0, UINT32_MAX, &n))
				sub_die(opt, value,
					"lru_crawler_tocrawl takes a numeric 32bit value");
			s->store.crawler_tocrawl = (uint32_t)n;
			break;
		case SUB_AUTOMOVE:
			n = 1;
			if (value && parse_int(value, 0, 2, &n))
				sub_die(opt, value, "slab_automove must be between 0 and 2");
			s->store.slab_automove = (int)n;
			break;
		case SUB_AUTOMOVE_OFF:
			s->store.slab_automove = 0;
			break;
		case SUB_AUTOMOVE_RATIO:
			if (parse_double(value, &d) || !(d > 0) || d > 1)
				sub_die(opt, value, "slab_automove_ratio must be > 0 and < 1");
			s->store.automove_ratio = d;
			break;
		case SUB_AUTOMOVE_WINDOW:
			if (parse_int(value, 3, 3600, &n))
				sub_die(opt, value,
					"slab_automove_window must be > 2 (at most 3600)");
			s->store.automove_window = (unsigned)n;
			break;
		case SUB_REASSIGN_ON:
			s->slab_reassign = 1;
			break;
		case SUB_REASSIGN_OFF:
			s->slab_reassign = 0;
			s->store.slab_automove = 0;
			break;
		case SUB_HASHPOWER:
			if (parse_int(value, LONG_MIN, LONG_MAX, &n))
				sub_die(opt, value, "Missing numeric argument for hashpower");
			if (n < 12)
				kv_die("-o hashpower=%s: Initial hashtable multiplier of %ld is "
				       "too low",
				       value, n);
			if (n > 32)
				kv_die("-o hashpower=%s: Initial hashtable multiplier of %ld is "
				       "too high",
				       value, n);
			s->store.hashpower = (unsigned)n;
			break;
		case SUB_HASH_ALGO:
			if (strcmp(value, "jenkins") && strcmp(value, "murmur3") &&
			    strcmp(value, "xxh3"))
				sub_die(opt, value,
					"Unknown hash_algorithm option (jenkins, murmur3, xxh3)");
			note(s, "-o hash_algorithm: locus-kv hashes keys with its own function");
			break;
		case SUB_CHUNK_MAX:
			if (parse_int(value, 1, 1 << 30, &n))
				sub_die(opt, value, "could not parse argument to slab_chunk_max");
			s->store.slab_chunk_max = (size_t)n;
			*chunk_given = 1;
			break;
		case SUB_NO_CHUNKED:
			s->store.slab_chunk_max = KV_PAGE_SIZE;
			break;
		case SUB_NO_MODERN:
			if (!*chunk_given)
				s->store.slab_chunk_max = KV_PAGE_SIZE;
			s->slab_reassign = 0;
			s->store.slab_automove = 0;
			s->store.lru_crawler = 0;
			break;
		case SUB_TRACK_SIZES:
			s->store.track_sizes = 1;
			break;
		case SUB_IDLE_TIMEOUT:
			if (parse_int(value, 0, INT32_MAX, &n))
				sub_die(opt, value, "Missing numeric argument for idle_timeout");
			s->idle_timeout = (int)n;
			break;
		case SUB_WATCHER_BUF:
			if (parse_int(value, 1, 1 << 20, &n))
				sub_die(opt, value,
					"could not parse argument to watcher_logbuf_size");
			s->watcher_buf_kb = (int)n;
			break;
		case SUB_NUMBER:
			if (parse_double(value, &d) || d < sub->min || d > sub->max)
				sub_die(opt, value, sub->range);
			kv_setting_keep(s, opt, value);
			note(s,
			     "-o: memcached's LRU maintainer and segmented LRU, log buffers and "
			     "read buffers have no counterpart here; those values are checked as "
			     "memcached checks them and change nothing");
			break;
		case SUB_ACCEPT:
			note(s,
			     "-o: memcached's LRU maintainer and segmented LRU, hash table growth, "
			     "custom slab sizes and response tuning have no counterpart here; "
			     "those names are accepted and change nothing");
			break;
		}
	}
	free(copy);
}

/* Is addr one of the comma-separated entries of list? */
static int listed(const char *list, const char *addr)
{
	size_t n = strlen(addr);
	for (const char *p = list; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (strncmp(p, addr, n) == 0 && (p[n] == ',' || p[n] == 0))
			return 1;
	}
	return 0;
}

/*
 * -l again appends, as memcached does, and an address already listed is not
 * listed twice (memcached drops a -l whose text appears anywhere in the
 * list; an exact entry match here).
 */
static void add_listen(struct kv_settings *s, const char *addr)
{
	if (s->listen && listed(s->listen, addr))
		return;
	if (!s->listen) {
		s->listen = strdup(addr);
	} else {
		size_t n = strlen(s->listen) + strlen(addr) + 2;
		char *p = malloc(n);
		if (p)
			snprintf(p, n, "%s,%s", s->listen, addr);
		free(s->listen);
		s->listen = p;
	}
	if (!s->listen)
		kv_die("out of memory");
}

static char *copy_arg(char *old, const char *arg)
{
	free(old);
	char *p = strdup(arg);
	if (!p)
		kv_die("out of memory");
	return p;
}

/*
 * -I and slab_chunk_max, checked in memcached's order with its words: at
 * least 1024, at most half of -m and a gigabyte; slab_chunk_max no larger
 * than -I, dividing it and the 1 MB page evenly.
 */
static void check_item_size(struct kv_settings *s, int item_given, int chunk_given)
{
	struct kv_store_config *c = &s->store;
	if (!item_given && c->item_size_max > c->mem_limit / 2) {
		/* A small -m alone: the default -I shrinks to fit (memcached refuses). */
		c->item_size_max = c->mem_limit / 2;
		if (c->slab_chunk_max > c->item_size_max)
			c->slab_chunk_max = c->item_size_max;
		return;
	}
	if (c->item_size_max < 1024)
		kv_die("-I %zu: Item max size cannot be less than 1024 bytes.", c->item_size_max);
	if (c->item_size_max > c->mem_limit / 2)
		kv_die("-I %zu: Cannot set item size limit higher than 1/2 of memory max.",
		       c->item_size_max);
	if (c->item_size_max > (1u << 30))
		kv_die("-I %zu: Cannot set item size limit higher than a gigabyte.",
		       c->item_size_max);
	if (c->item_size_max > KV_PAGE_SIZE && !chunk_given)
		c->slab_chunk_max = KV_PAGE_SIZE / 2;
	if (c->slab_chunk_max > c->item_size_max)
		kv_die("-I %zu: slab_chunk_max (bytes: %zu) cannot be larger than -I "
		       "(item_size_max "
		       "%zu)",
		       c->item_size_max, c->slab_chunk_max, c->item_size_max);
	if (c->item_size_max % c->slab_chunk_max != 0)
		kv_die("-I %zu: -I (item_size_max: %zu) must be evenly divisible by slab_chunk_max "
		       "(bytes: %zu)",
		       c->item_size_max, c->item_size_max, c->slab_chunk_max);
	if (KV_PAGE_SIZE % c->slab_chunk_max != 0)
		kv_die("-o slab_chunk_max=%zu: slab_chunk_max (bytes: %zu) must divide evenly into "
		       "%u "
		       "(slab_page_size)",
		       c->slab_chunk_max, c->slab_chunk_max, KV_PAGE_SIZE);
}

void kv_options_parse(int argc, char **argv, struct kv_settings *s)
{
	enum { OPT_SYNC = 1000, OPT_DEBUG, OPT_STRIPES, OPT_NOCRAWL, OPT_MECH, OPT_SECSTATS };
	static const struct option longs[] = {
		{"port", required_argument, 0, 'p'},
		{"udp-port", required_argument, 0, 'U'},
		{"unix-socket", required_argument, 0, 's'},
		{"unix-mask", required_argument, 0, 'a'},
		{"enable-shutdown", no_argument, 0, 'A'},
		{"listen", required_argument, 0, 'l'},
		{"daemon", no_argument, 0, 'd'},
		{"enable-coredumps", no_argument, 0, 'r'},
		{"user", required_argument, 0, 'u'},
		{"memory-limit", required_argument, 0, 'm'},
		{"disable-evictions", no_argument, 0, 'M'},
		{"conn-limit", required_argument, 0, 'c'},
		{"lock-memory", no_argument, 0, 'k'},
		{"verbose", optional_argument, 0, 'v'},
		{"help", no_argument, 0, 'h'},
		{"license", no_argument, 0, 'i'},
		{"version", no_argument, 0, 'V'},
		{"pidfile", required_argument, 0, 'P'},
		{"slab-growth-factor", required_argument, 0, 'f'},
		{"slab-min-size", required_argument, 0, 'n'},
		{"enable-largepages", no_argument, 0, 'L'},
		{"threads", required_argument, 0, 't'},
		{"max-reqs-per-event", required_argument, 0, 'R'},
		{"disable-cas", no_argument, 0, 'C'},
		{"listen-backlog", required_argument, 0, 'b'},
		{"protocol", required_argument, 0, 'B'},
		{"max-item-size", required_argument, 0, 'I'},
		{"enable-sasl", no_argument, 0, 'S'},
		{"disable-flush-all", no_argument, 0, 'F'},
		{"disable-dumping", no_argument, 0, 'X'},
		{"disable-watch", no_argument, 0, 'W'},
		{"auth-file", required_argument, 0, 'Y'},
		{"memory-file", required_argument, 0, 'e'},
		{"enable-ssl", no_argument, 0, 'Z'},
		{"extended", required_argument, 0, 'o'},
		{"napi-ids", required_argument, 0, 'N'},
		{"sync", required_argument, 0, OPT_SYNC},
		{"debug-commands", no_argument, 0, OPT_DEBUG},
		{"stripes", required_argument, 0, OPT_STRIPES},
		{"no-lru-crawler", no_argument, 0, OPT_NOCRAWL},
		{"mechanisms", no_argument, 0, OPT_MECH},
		{"section-stats", no_argument, 0, OPT_SECSTATS},
		{0, 0, 0, 0},
	};
	*s = (struct kv_settings){.port = 11211,
				  .backlog = 1024,
				  .unix_mask = 0700,
				  .threads = 4,
				  .maxconns = 1024,
				  .reqs_per_event = 20,
				  .slab_reassign = 1,
				  .watcher_buf_kb = 256};
	kv_store_config_default(&s->store);
	int item_max_given = 0, tcp_given = 0, chunk_given = 0;
	char err[512];
	opterr = 0;
	int o;
	long v;
	uint64_t u;
	while ((o = getopt_long(argc, argv,
				":p:U:s:a:Al:dru:m:Mc:kvhiVP:f:n:LD:t:R:Cb:B:I:SFXWY:e:Zo:N:",
				longs, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (parse_int(optarg, 0, 65535, &v))
				kv_die("-p %s: a port is a number from 0 to 65535", optarg);
			s->port = (int)v;
			tcp_given = 1;
			break;
		case 'U':
			if (parse_int(optarg, 0, 65535, &v))
				kv_die("-U %s: a port is a number from 0 to 65535", optarg);
			s->udp_port = (int)v;
			break;
		case 's':
			s->unix_path = copy_arg(s->unix_path, optarg);
			break;
		case 'a': {
			char *end;
			errno = 0;
			unsigned long m = strtoul(optarg, &end, 8);
			if (errno || end == optarg || *end || m > 0777)
				kv_die("-a %s: an access mask is octal, from 0 to 777", optarg);
			s->unix_mask = (unsigned)m;
			break;
		}
		case 'A':
			s->shutdown_enabled = 1;
			break;
		case 'l':
			add_listen(s, optarg);
			break;
		case 'd':
			s->daemonize = 1;
			break;
		case 'r':
			s->coredumps = 1;
			break;
		case 'u':
			s->user = copy_arg(s->user, optarg);
			break;
		case 'm':
			if (parse_size(optarg, 1024 * 1024, &u) || u < (1u << 20) ||
			    u > ((uint64_t)1 << 40))
				kv_die("-m %s: memory limit is megabytes (or a size with k/m/g) "
				       "from 1 MB "
				       "to 1 TB",
				       optarg);
			s->store.mem_limit = (size_t)u;
			break;
		case 'M':
			s->store.evict = 0;
			break;
		case 'c':
			if (parse_int(optarg, 1, 1 << 24, &v))
				kv_die("-c %s: connection limit must be a number from 1 to "
				       "16777216",
				       optarg);
			s->maxconns = (int)v;
			break;
		case 'k':
			s->lock_memory = 1;
			break;
		case 'v':
			faa_seqcst(&s->verbose, 1);
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'i':
			printf("locus-kv " LOCUS_KV_VERSION
			       ": see the LICENSE file of its source\n");
			exit(0);
		case 'V':
			printf("locus-kv " LOCUS_KV_VERSION "\n");
			exit(0);
		case 'P':
			s->pidfile = copy_arg(s->pidfile, optarg);
			break;
		case 'f': {
			char *end;
			double f = strtod(optarg, &end);
			if (*end || !(f > 1.0) || f > 8.0)
				kv_die("-f %s: growth factor must be a number above 1.0 (at most "
				       "8)",
				       optarg);
			s->store.factor = f;
			break;
		}
		case 'n':
			if (parse_int(optarg, 1, 1 << 16, &v))
				kv_die("-n %s: minimum chunk room must be a number from 1 to 65536",
				       optarg);
			s->store.chunk_min = (unsigned)v;
			break;
		case 'L':
			note(s, "-L: large pages are not used; item memory comes from malloc");
			break;
		case 'D':
			if (!optarg[0])
				kv_die("-D: needs a delimiter character");
			s->store.delimiter = optarg[0];
			s->store.detail = 1;
			break;
		case 't':
			if (parse_int(optarg, 1, 1024, &v))
				kv_die("-t %s: threads must be a number from 1 to 1024", optarg);
			s->threads = (int)v;
			break;
		case 'R':
			if (parse_int(optarg, 1, 1 << 30, &v))
				kv_die("-R %s: requests per event must be a number from 1 to "
				       "1073741824",
				       optarg);
			s->reqs_per_event = (int)v;
			break;
		case 'C':
			s->store.use_cas = 0;
			break;
		case 'b':
			if (parse_int(optarg, 1, 1 << 20, &v))
				kv_die("-b %s: the listen backlog must be a number from 1 to "
				       "1048576",
				       optarg);
			s->backlog = (int)v;
			break;
		case 'B':
			if (strcmp(optarg, "binary") == 0)
				kv_die("-B binary: the binary protocol is not built into locus-kv "
				       "(it "
				       "speaks ascii and meta: use -B ascii or -B auto)");
			if (strcmp(optarg, "ascii") != 0 && strcmp(optarg, "auto") != 0)
				kv_die("-B %s: the protocol is one of auto, binary, or ascii",
				       optarg);
			break;
		case 'I': {
			/* As memcached: a k or m suffix, else the leading digits (atoi). */
			size_t len = strlen(optarg);
			char unit = len ? optarg[len - 1] : 0;
			u = strtoull(optarg, NULL, 10);
			if (optarg[0] == '-')
				u = 0;
			if (unit == 'k' || unit == 'K')
				u *= 1024;
			else if (unit == 'm' || unit == 'M')
				u *= 1024 * 1024;
			s->store.item_size_max =
				u > ((size_t)1 << 40) ? ((size_t)1 << 40) : (size_t)u;
			item_max_given = 1;
			break;
		}
		case 'S':
			kv_die("-S: SASL authentication is not built into locus-kv");
		case 'F':
			s->flush_disabled = 1;
			break;
		case 'X':
			s->dump_disabled = 1;
			break;
		case 'W':
			s->watch_disabled = 1;
			break;
		case 'Y':
			kv_die("-Y %s: authentication is not built into locus-kv", optarg);
		case 'e':
			kv_die("-e %s: a memory file (restartable cache) is not built into "
			       "locus-kv",
			       optarg);
		case 'Z':
			kv_die("-Z: TLS is not built into locus-kv");
		case 'N':
			if (parse_int(optarg, 1, 1 << 20, &v))
				kv_die("-N %s: Maximum number of NAPI IDs must be greater than 0",
				       optarg);
			s->napi_ids = (int)v;
			note(s, "-N: connections go to the workers in turn, not by NAPI id");
			break;
		case 'o':
			parse_extended(s, optarg, &chunk_given);
			break;
		case OPT_SYNC:
			if (kv_sync_parse(&s->store, optarg, err, sizeof(err)) != 0)
				kv_die("%s", err);
			break;
		case OPT_DEBUG:
			s->debug_commands = 1;
			break;
		case OPT_STRIPES:
			if (parse_int(optarg, 1, 1 << 20, &v) || (v & (v - 1)))
				kv_die("--stripes %s: a power of 2 from 1 to 1048576", optarg);
			s->store.stripes = (unsigned)v;
			break;
		case OPT_NOCRAWL:
			s->store.lru_crawler = 0;
			break;
		case OPT_SECSTATS:
			s->store.section_stats = 1;
			break;
		case OPT_MECH:
			locus_cs_usage(stdout);
			exit(0);
		case ':':
			kv_die("option %s needs a value (see -h)", argv[optind - 1]);
		default:
			if (optopt)
				kv_die("unknown option -%c (see -h)", optopt);
			kv_die("unknown option %s (see -h)", argv[optind - 1]);
		}
	}
	/* As memcached: -U alone sets the TCP port too. */
	if (s->udp_port && !tcp_given)
		s->port = s->udp_port;
	if (optind < argc)
		kv_die("unexpected argument '%s' (see -h)", argv[optind]);
	if (s->napi_ids > s->threads)
		kv_die("-N %d: Number of napi_ids(%d) cannot be greater than number of threads(%d)",
		       s->napi_ids, s->napi_ids, s->threads);
	check_item_size(s, item_max_given, chunk_given);
	if (s->unix_path && (s->port != 11211 || s->listen))
		note(s, "-s: listening on the Unix socket only; -p and -l are not used");
}

void kv_options_free(struct kv_settings *s)
{
	free(s->listen);
	free(s->unix_path);
	free(s->user);
	free(s->pidfile);
}
