/*
 * locus-kv's command line (options.h). Every option memcached 1.6.18 has is
 * taken, and locus-kv's own (the long names without a letter).
 *
 * An option is a row in `opts`: its long name and letter, the argument it
 * takes, what kind of option it is, how it applies and its --help text.
 * Adding an option is adding a row: getopt_long's option array and letters,
 * --help, the notes and the refusals all read this table and nothing else.
 * The kinds:
 *
 *  - acts: changes what the server does (most of them);
 *  - accepted: memcached tunes something locus-kv does not have (-L, -N);
 *    taken, and noted under -v;
 *  - refused: needs what locus-kv does not build (none now: the binary protocol, SASL
 *    and the memory file are built);
 *    refused with the reason, and left out of --help: memcached's test
 *    suite takes an option --help names (its feature's name) as built in.
 *
 * -o's names are options_extended.c's, in a table of their own. Bad values
 * are refused naming the option and the range; memcached's own texts are
 * kept where tools may look for them (-I's limits, -N's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic.h"
#include "kv/server/options.h"
#include "kv/server/server.h"
#include "kv/store/slabs.h"
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

int kv_options_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

void kv_options_note(struct kv_settings *s, const char *text)
{
	for (int i = 0; i < s->nnotes; i++)
		if (s->notes[i] == text)
			return;
	if (s->nnotes < KV_NOTES_MAX)
		s->notes[s->nnotes++] = text;
}

enum opt_kind {
	OPT_ACTS,     /* changes what the server does */
	OPT_ACCEPTED, /* changes nothing memcached's users would look for; noted under -v */
	OPT_REFUSED,
};

enum opt_arg {
	ARG_NONE,
	ARG_REQUIRED,
	ARG_LONG_OPTIONAL, /* --verbose[=n] takes one, as memcached; -v none, so -vv is two */
};

struct opt;
typedef void opt_apply(struct kv_parse *p, const struct opt *o, const char *arg);

struct opt {
	const char *name; /* the long name; NULL: a letter only */
	char letter;	  /* 0: a long name only (locus-kv's own options) */
	enum opt_arg arg;
	const char *metavar; /* --help: what the argument is */
	enum opt_kind kind;
	opt_apply *apply; /* NULL: nothing to do (accepted) or refused */
	size_t field;	  /* set_on, set_off, set_int, set_string: where in struct kv_settings */
	long min, max;	  /* the values a number may take */
	const char *bad;  /* what a bad value is told */
	const char *why;  /* accepted: the note -v prints; refused: the reason */
	const char *help; /* --help; a line after the first starts at HELP_COL */
};

/* The option as a message names it: "-p" or "--stripes". */
static const char *opt_name(const struct opt *o, char buf[64])
{
	if (o->letter)
		snprintf(buf, 64, "-%c", o->letter);
	else
		snprintf(buf, 64, "--%s", o->name);
	return buf;
}

/* "locus-kv: -p x: <why>", or "-S: <why>" without an argument; exit 64. */
__attribute__((noreturn)) static void opt_die(const struct opt *o, const char *arg, const char *why)
{
	char name[64];
	kv_die("%s%s%s: %s", opt_name(o, name), arg ? " " : "", arg ? arg : "", why);
}

/* The argument as a whole number within the row's range, or the row's words for it. */
static long opt_long(const struct opt *o, const char *arg)
{
	long v;
	if (kv_options_long(arg, o->min, o->max, &v))
		opt_die(o, arg, o->bad);
	return v;
}

static void *field_of(struct kv_parse *p, const struct opt *o)
{
	return (char *)p->s + o->field;
}

static void set_on(struct kv_parse *p, const struct opt *o, const char *arg)
{
	*(int *)field_of(p, o) = 1;
}

static void set_off(struct kv_parse *p, const struct opt *o, const char *arg)
{
	*(int *)field_of(p, o) = 0;
}

/* An int or unsigned field (both are read the same way within the row's range). */
static void set_int(struct kv_parse *p, const struct opt *o, const char *arg)
{
	*(int *)field_of(p, o) = (int)opt_long(o, arg);
}

void kv_options_string(char **field, const char *value)
{
	free(*field);
	*field = strdup(value);
	if (!*field)
		kv_die("out of memory");
}

static void set_string(struct kv_parse *p, const struct opt *o, const char *arg)
{
	kv_options_string(field_of(p, o), arg);
}

static void set_port(struct kv_parse *p, const struct opt *o, const char *arg)
{
	set_int(p, o, arg);
	p->tcp_given = 1;
}

static void set_mask(struct kv_parse *p, const struct opt *o, const char *arg)
{
	char *end;
	errno = 0;
	unsigned long m = strtoul(arg, &end, 8);
	if (errno || end == arg || *end || m > 0777)
		opt_die(o, arg, o->bad);
	p->s->unix_mask = (unsigned)m;
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
static void add_listen(struct kv_parse *p, const struct opt *o, const char *addr)
{
	struct kv_settings *s = p->s;
	if (s->listen && listed(s->listen, addr))
		return;
	if (!s->listen) {
		s->listen = strdup(addr);
	} else {
		size_t n = strlen(s->listen) + strlen(addr) + 2;
		char *l = malloc(n);
		if (l)
			snprintf(l, n, "%s,%s", s->listen, addr);
		free(s->listen);
		s->listen = l;
	}
	if (!s->listen)
		kv_die("out of memory");
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
		const char *units = "kKmMgG", *u = strchr(units, *end);
		if (!u || end[1])
			return -1;
		mul = (uint64_t)1 << (10 * (1 + (u - units) / 2));
	}
	if (v > UINT64_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static void set_memory(struct kv_parse *p, const struct opt *o, const char *arg)
{
	uint64_t u;
	if (parse_size(arg, 1024 * 1024, &u) || u < (1u << 20) || u > ((uint64_t)1 << 40))
		opt_die(o, arg, o->bad);
	p->s->store.mem_limit = (size_t)u;
}

static void add_verbose(struct kv_parse *p, const struct opt *o, const char *arg)
{
	faa_seqcst(&p->s->verbose, 1);
}

static void set_factor(struct kv_parse *p, const struct opt *o, const char *arg)
{
	char *end;
	double f = strtod(arg, &end);
	if (*end || !(f > 1.0) || f > 8.0)
		opt_die(o, arg, o->bad);
	p->s->store.factor = f;
}

static void set_delimiter(struct kv_parse *p, const struct opt *o, const char *arg)
{
	if (!arg[0])
		opt_die(o, NULL, o->bad);
	p->s->store.delimiter = arg[0];
	p->s->store.detail = 1;
}

static void set_protocol(struct kv_parse *p, const struct opt *o, const char *arg)
{
	static const char *const names[] = {
		[KV_PROTO_AUTO] = "auto", [KV_PROTO_ASCII] = "ascii", [KV_PROTO_BINARY] = "binary"};
	for (int i = 0; i < 3; i++) {
		if (strcmp(arg, names[i]) == 0) {
			p->s->protocol = i;
			p->protocol_given = 1;
			return;
		}
	}
	opt_die(o, arg, o->bad);
}

/* As memcached: a k or m suffix, else the leading digits (atoi); checked at the end. */
static void set_item_size(struct kv_parse *p, const struct opt *o, const char *arg)
{
	size_t len = strlen(arg);
	char unit = len ? arg[len - 1] : 0;
	uint64_t u = arg[0] == '-' ? 0 : strtoull(arg, NULL, 10);
	if (unit == 'k' || unit == 'K')
		u *= 1024;
	else if (unit == 'm' || unit == 'M')
		u *= 1024 * 1024;
	p->s->store.item_size_max = u > ((size_t)1 << 40) ? ((size_t)1 << 40) : (size_t)u;
	p->item_given = 1;
}

static void set_extended(struct kv_parse *p, const struct opt *o, const char *arg)
{
	kv_options_extended(p, arg);
}

static void set_sync(struct kv_parse *p, const struct opt *o, const char *arg)
{
	char err[512];
	if (kv_sync_parse(&p->s->store, arg, err, sizeof(err)) != 0)
		kv_die("%s", err);
}

static void set_stripes(struct kv_parse *p, const struct opt *o, const char *arg)
{
	long v = opt_long(o, arg);
	if (v & (v - 1))
		opt_die(o, arg, o->bad);
	p->s->store.stripes = (unsigned)v;
}

static void print_license(struct kv_parse *p, const struct opt *o, const char *arg)
{
	printf("locus-kv " LOCUS_KV_VERSION ": see the LICENSE file of its source\n");
	exit(0);
}

static void print_version(struct kv_parse *p, const struct opt *o, const char *arg)
{
	printf("locus-kv " LOCUS_KV_VERSION "\n");
	exit(0);
}

static void print_mechanisms(struct kv_parse *p, const struct opt *o, const char *arg)
{
	locus_cs_usage(stdout);
	exit(0);
}

static opt_apply print_help;

/* memcached's options in its --help order, then locus-kv's own. */
static const struct opt opts[] = {
	{"port", 'p', ARG_REQUIRED, "<num>", .apply = set_port, .field = FIELD(port), .min = -1,
	 .max = 65535, .bad = "a port is a number from 0 to 65535 (-1: any free one)",
	 .help = "TCP port to listen on (default: 11211; 0: none; -1: any\n"
		 "free one, written to $MEMCACHED_PORT_FILENAME)"},
	{"udp-port", 'U', ARG_REQUIRED, "<num>", .apply = set_int, .field = FIELD(udp_port),
	 .min = -1, .max = 65535, .bad = "a port is a number from 0 to 65535 (-1: any free one)",
	 .help = "UDP port to listen on (default: 0, off; -1: any free one)"},
	{"unix-socket", 's', ARG_REQUIRED, "<file>", .apply = set_string, .field = FIELD(unix_path),
	 .help = "Unix socket to listen on, instead of TCP"},
	{"unix-mask", 'a', ARG_REQUIRED, "<mask>", .apply = set_mask,
	 .bad = "an access mask is octal, from 0 to 777",
	 .help = "access mask of the Unix socket, octal (default: 700)"},
	{"enable-shutdown", 'A', .apply = set_on, .field = FIELD(shutdown_enabled),
	 .help = "enable the ascii \"shutdown\" command"},
	{"listen", 'l', ARG_REQUIRED, "<addr>", .apply = add_listen,
	 .help = "interface to listen on (default: all); repeatable, or a\n"
		 "comma-separated list; with -Z, notls:<addr> is a\n"
		 "listener without TLS"},
	{"daemon", 'd', .apply = set_on, .field = FIELD(daemonize), .help = "run as a daemon"},
	{"enable-coredumps", 'r', .apply = set_on, .field = FIELD(coredumps),
	 .help = "raise the core file limit to its maximum"},
	{"user", 'u', ARG_REQUIRED, "<user>", .apply = set_string, .field = FIELD(user),
	 .help = "when started as root, become <user> before binding"},
	{"memory-limit", 'm', ARG_REQUIRED, "<mb>", .apply = set_memory,
	 .bad = "memory limit is megabytes (or a size with k/m/g) from 1 MB to 1 TB",
	 .help = "item memory in megabytes (default: 64); suffixes k, m, g"},
	{"disable-evictions", 'M', .apply = set_off, .field = FIELD(store.evict),
	 .help = "return an error when memory is full instead of evicting"},
	{"conn-limit", 'c', ARG_REQUIRED, "<num>", .apply = set_int, .field = FIELD(maxconns),
	 .min = 1, .max = 1 << 24, .bad = "connection limit must be a number from 1 to 16777216",
	 .help = "max simultaneous connections (default: 1024)"},
	{"lock-memory", 'k', .apply = set_on, .field = FIELD(lock_memory),
	 .help = "lock all paged memory (mlockall)"},
	{"verbose", 'v', ARG_LONG_OPTIONAL, .apply = add_verbose,
	 .help = "verbose (print errors); -vv also prints every command"},
	{"help", 'h', .apply = print_help, .help = "print this help and exit"},
	{"license", 'i', .apply = print_license, .help = "print the license and exit"},
	{"version", 'V', .apply = print_version, .help = "print the version and exit"},
	{"pidfile", 'P', ARG_REQUIRED, "<file>", .apply = set_string, .field = FIELD(pidfile),
	 .help = "write the process id to <file>, removed at exit"},
	{"slab-growth-factor", 'f', ARG_REQUIRED, "<num>", .apply = set_factor,
	 .bad = "growth factor must be a number above 1.0 (at most 8)",
	 .help = "chunk size growth factor (default: 1.25)"},
	{"slab-min-size", 'n', ARG_REQUIRED, "<num>", .apply = set_int,
	 .field = FIELD(store.chunk_min), .min = 1, .max = 1 << 16,
	 .bad = "minimum chunk room must be a number from 1 to 65536",
	 .help = "smallest key+value+flags room of a chunk (default: 48)"},
	{"enable-largepages", 'L', .kind = OPT_ACCEPTED,
	 .why = "-L: large pages are not used; item memory comes from malloc",
	 .help = "large pages are not used"},
	{NULL, 'D', ARG_REQUIRED, "<char>", .apply = set_delimiter,
	 .bad = "needs a delimiter character",
	 .help = "key prefix delimiter of stats detail (and turns it on)"},
	{"threads", 't', ARG_REQUIRED, "<num>", .apply = set_int, .field = FIELD(threads), .min = 1,
	 .max = 1024, .bad = "threads must be a number from 1 to 1024",
	 .help = "worker threads (default: 4)"},
	{"max-reqs-per-event", 'R', ARG_REQUIRED, "<num>", .apply = set_int,
	 .field = FIELD(reqs_per_event), .min = 1, .max = 1 << 30,
	 .bad = "requests per event must be a number from 1 to 1073741824",
	 .help = "commands a connection runs before the worker's\n"
		 "other connections have a turn (default: 20)"},
	{"disable-cas", 'C', .apply = set_off, .field = FIELD(store.use_cas),
	 .help = "disable CAS: every cas value is 0, cas commands fail"},
	{"listen-backlog", 'b', ARG_REQUIRED, "<num>", .apply = set_int, .field = FIELD(backlog),
	 .min = 1, .max = 1 << 20, .bad = "the listen backlog must be a number from 1 to 1048576",
	 .help = "the listen queue's length (default: 1024)"},
	{"protocol", 'B', ARG_REQUIRED, "<name>", .apply = set_protocol,
	 .bad = "the protocol is one of auto, binary, or ascii",
	 .help = "protocol - one of ascii (text and meta), binary, or\n"
		 "auto: each connection's first byte decides (default:\n"
		 "auto; ascii with -Y, binary with -S)"},
	{"max-item-size", 'I', ARG_REQUIRED, "<num>", .apply = set_item_size,
	 .help = "largest item, with k/m suffix (default: 1m; 1k .. 1024m,\n"
		 "at most half of -m, a multiple of slab_chunk_max)"},
	{"enable-sasl", 'S', .apply = set_on, .field = FIELD(sasl),
	 .help = "turn on SASL authentication (libsasl2): the binary\n"
		 "protocol only; configured by memcached.conf in\n"
		 "$SASL_CONF_PATH or /etc/sasl, /etc/sasl2"},
	{"disable-flush-all", 'F', .apply = set_on, .field = FIELD(flush_disabled),
	 .help = "refuse flush_all"},
	{"disable-dumping", 'X', .apply = set_on, .field = FIELD(dump_disabled),
	 .help = "refuse stats cachedump and lru_crawler metadump"},
	{"disable-watch", 'W', .apply = set_on, .field = FIELD(watch_disabled),
	 .help = "refuse the watch command"},
	{"auth-file", 'Y', ARG_REQUIRED, "<file>", .apply = set_string, .field = FIELD(auth_file),
	 .help = "ASCII authentication: <file> holds user:password\n"
		 "lines (up to 8); a connection sends \"set <any> 0 0\n"
		 "<n>\" with \"user password\" before anything else"},
	{"memory-file", 'e', ARG_REQUIRED, "<file>", .apply = set_string,
	 .field = FIELD(memory_file),
	 .help = "item memory in <file> (mapped; best on a RAM disk):\n"
		 "enables restartable cache (stop with SIGUSR1)"},
	{"enable-ssl", 'Z', .apply = set_on, .field = FIELD(tls.enabled),
	 .help = "TLS on the TCP listeners (not those -l marks notls:);\n"
		 "needs -o ssl_chain_cert=<file> and ssl_key=<file>\n"
		 "(without ssl_key, the key is read from the chain's file)"},
	{"napi-ids", 'N', ARG_REQUIRED, "<num>", OPT_ACCEPTED, .apply = set_int,
	 .field = FIELD(napi_ids), .min = 1, .max = 1 << 20,
	 .bad = "Maximum number of NAPI IDs must be greater than 0",
	 .why = "-N: connections go to the workers in turn, not by NAPI id",
	 .help = "threads are not chosen by NAPI id"},
	{"extended", 'o', ARG_REQUIRED, "<opts>", .apply = set_extended,
	 .help = "memcached's comma-separated extended options; these act:\n"
		 "lru_crawler, no_lru_crawler, lru_crawler_sleep=<us>,\n"
		 "lru_crawler_tocrawl=<n>: the crawler thread;\n"
		 "slab_automove=0|1|2, slab_automove_ratio=<r>,\n"
		 "slab_automove_window=<s>, no_slab_automove,\n"
		 "slab_reassign, no_slab_reassign: moving slab pages\n"
		 "between classes (default 1, 0.8, 30);\n"
		 "slab_chunk_max=<bytes>, no_chunked_items, no_modern,\n"
		 "hashpower=<n>, idle_timeout=<s>, track_sizes,\n"
		 "watcher_logbuf_size=<KB>;\n"
		 "TLS (-Z): ssl_chain_cert=<file>, ssl_key=<file>,\n"
		 "ssl_keyformat=<n>, ssl_verify_mode=0|1|2|3,\n"
		 "ssl_ca_cert=<file>, ssl_ciphers=<list>,\n"
		 "ssl_min_version=0|1|2|3 (TLS 1.0 .. 1.3; default 2),\n"
		 "ssl_wbuf_size=<KB>, ssl_session_cache, ssl_kernel_tls;\n"
		 "memcached's other names are accepted, checked as\n"
		 "memcached checks them, and change nothing (-v notes\n"
		 "it); ext_* (extstore) and proxy_* are refused"},
	{"sync", 0, ARG_REQUIRED, "<sections>", .apply = set_sync,
	 .help = "the mechanism of each kind of critical section, as\n"
		 "section=spec pairs separated by commas; sections:\n"
		 "  hash   the hash table's stripes (item locks)\n"
		 "  alloc  item allocation and the LRU lists\n"
		 "  slabs  the slab allocator\n"
		 "  stats  the global statistics\n"
		 "  all    all four\n"
		 "e.g. --sync hash=mcs,alloc=async,slabs=ttas,stats=mutex\n"
		 "or   --sync all=oyama   (default: all=mutex)"},
	{"stripes", 0, ARG_REQUIRED, "<num>", .apply = set_stripes, .min = 1, .max = 1 << 20,
	 .bad = "a power of 2 from 1 to 1048576",
	 .help = "hash stripes, a power of 2 (default: 1024)"},
	{"no-lru-crawler", 0, .apply = set_off, .field = FIELD(store.lru_crawler),
	 .help = "as -o no_lru_crawler: no crawler thread"},
	{"section-stats", 0, .apply = set_on, .field = FIELD(store.section_stats),
	 .help = "time every critical section: 'stats sync' then reports\n"
		 "each section's runs and its callers' time in it\n"
		 "(waiting included); off by default: two clock reads\n"
		 "per section run"},
	{"debug-commands", 0, .apply = set_on, .field = FIELD(debug_commands),
	 .help = "accept 'debug_clock_advance <seconds>' (tests)"},
	{"mechanisms", 0, .apply = print_mechanisms,
	 .help = "list the mechanisms and their options, and exit"},
};

#define NOPTS	  (sizeof(opts) / sizeof(opts[0]))
#define LONG_ONLY 256 /* getopt_long's value for opts[i] without a letter: LONG_ONLY + i */
#define HELP_COL  26

/* "-p, --port=<num>", "-D <char>" or "    --sync=<sections>": the option as --help shows it. */
static int help_name(const struct opt *o, char *buf, size_t n)
{
	char letter[8] = "    ";
	if (o->letter)
		snprintf(letter, sizeof(letter), o->name ? "-%c, " : "-%c", o->letter);
	return snprintf(buf, n, "%s%s%s%s%s", letter, o->name ? "--" : "", o->name ? o->name : "",
			o->metavar ? (o->name ? "=" : " ") : "", o->metavar ? o->metavar : "");
}

/*
 * One option's --help lines: its description starts at HELP_COL, or one
 * space after a name that reaches the column, two after one that passes it.
 */
static void help_row(FILE *out, const struct opt *o)
{
	static const char *const marks[] = {"", "(accepted) "};
	char name[80];
	int len = help_name(o, name, sizeof(name));
	int gap = len < HELP_COL ? HELP_COL - len : len == HELP_COL ? 1 : 2;
	fprintf(out, "%s%*s%s", name, gap, "", marks[o->kind]);
	for (const char *l = o->help; *l;) {
		size_t n = strcspn(l, "\n");
		fprintf(out, "%.*s\n", (int)n, l);
		l += n;
		if (*l && *++l)
			fprintf(out, "%*s", HELP_COL, "");
	}
}

static void print_help(struct kv_parse *p, const struct opt *o, const char *arg)
{
	fputs("locus-kv " LOCUS_KV_VERSION "\n"
	      "A memcached-compatible server whose critical sections run on locus mechanisms.\n"
	      "It takes every memcached 1.6 option: those marked (accepted) change nothing here\n"
	      "and say so under -v.\n"
	      "\n",
	      stdout);
	for (size_t i = 0; i < NOPTS; i++) {
		if (!opts[i].letter && opts[i - 1].letter)
			fputs("\nlocus options:\n", stdout);
		if (opts[i].kind != OPT_REFUSED)
			help_row(stdout, &opts[i]);
	}
	fputs("\nMechanisms:", stdout);
	for (const char *const *m = locus_cs_mechanisms(); *m; m++)
		printf(" %s", *m);
	printf("\n");
	exit(0);
}

/* getopt_long's tables from `opts`: the long names, and the letters after a ':'. */
static void getopt_tables(struct option longs[NOPTS + 1], char shorts[2 * NOPTS + 2])
{
	static const int has_arg[] = {no_argument, required_argument, optional_argument};
	int n = 0;
	char *c = shorts;
	*c++ = ':'; /* a missing value is ':', not '?' */
	for (size_t i = 0; i < NOPTS; i++) {
		const struct opt *o = &opts[i];
		if (o->name)
			longs[n++] = (struct option){o->name, has_arg[o->arg], NULL,
						     o->letter ? o->letter : LONG_ONLY + (int)i};
		if (o->letter) {
			*c++ = o->letter;
			if (o->arg == ARG_REQUIRED)
				*c++ = ':';
		}
	}
	*c = '\0';
	longs[n] = (struct option){0};
}

/*
 * The row getopt_long returned, or an exit with the reason: a value missing,
 * an option unknown (or given a value it does not take: getopt_long sets
 * optopt to its letter, or to LONG_ONLY + i, which the message names by
 * what was typed).
 */
static const struct opt *opt_of(int got, char **argv)
{
	if (got == ':')
		kv_die("option %s needs a value (see -h)", argv[optind - 1]);
	if (got >= LONG_ONLY)
		return &opts[got - LONG_ONLY];
	for (size_t i = 0; i < NOPTS; i++)
		if (got == opts[i].letter)
			return &opts[i];
	if (optopt > 0 && optopt < LONG_ONLY)
		kv_die("unknown option -%c (see -h)", optopt);
	kv_die("unknown option %s (see -h)", argv[optind - 1]);
}

static void apply(struct kv_parse *p, const struct opt *o, const char *arg)
{
	if (o->kind == OPT_REFUSED)
		opt_die(o, o->arg == ARG_REQUIRED ? arg : NULL, o->why);
	if (o->apply)
		o->apply(p, o, arg);
	if (o->kind == OPT_ACCEPTED)
		kv_options_note(p->s, o->why);
}

/*
 * -I and slab_chunk_max, checked in memcached's order with its words: at
 * least 1024, at most half of -m and a gigabyte; slab_chunk_max no larger
 * than -I, dividing it and the 1 MB page evenly.
 */
static void check_item_size(const struct kv_parse *p)
{
	struct kv_store_config *c = &p->s->store;
	if (!p->item_given && c->item_size_max > c->mem_limit / 2) {
		/* A small -m alone: the default -I shrinks to fit (memcached refuses). */
		c->item_size_max = c->mem_limit / 2;
		if (c->slab_chunk_max > c->item_size_max)
			c->slab_chunk_max = c->item_size_max;
		return;
	}
	size_t item = c->item_size_max, chunk = c->slab_chunk_max;
	if (item < 1024)
		kv_die("-I %zu: Item max size cannot be less than 1024 bytes.", item);
	if (item > c->mem_limit / 2)
		kv_die("-I %zu: Cannot set item size limit higher than 1/2 of memory max.", item);
	if (item > (1u << 30))
		kv_die("-I %zu: Cannot set item size limit higher than a gigabyte.", item);
	if (item > KV_PAGE_SIZE && !p->chunk_given)
		c->slab_chunk_max = chunk = KV_PAGE_SIZE / 2;
	if (chunk > item)
		kv_die("-I %zu: slab_chunk_max (bytes: %zu) cannot be larger than -I "
		       "(item_size_max %zu)",
		       item, chunk, item);
	if (item % chunk != 0)
		kv_die("-I %zu: -I (item_size_max: %zu) must be evenly divisible by slab_chunk_max "
		       "(bytes: %zu)",
		       item, item, chunk);
	if (KV_PAGE_SIZE % chunk != 0)
		kv_die("-o slab_chunk_max=%zu: slab_chunk_max (bytes: %zu) must divide evenly into "
		       "%u (slab_page_size)",
		       chunk, chunk, KV_PAGE_SIZE);
}

/* What is checked once the whole line is read. */
static void check_line(struct kv_parse *p, int argc, char **argv)
{
	struct kv_settings *s = p->s;
	/* As memcached: -U alone sets the TCP port too. */
	if (s->udp_port && !p->tcp_given)
		s->port = s->udp_port;
	if (optind < argc)
		kv_die("unexpected argument '%s' (see -h)", argv[optind]);
	if (s->napi_ids > s->threads)
		kv_die("-N %d: Number of napi_ids(%d) cannot be greater than number of threads(%d)",
		       s->napi_ids, s->napi_ids, s->threads);
	check_item_size(p);
	/* memcached's checks of the LRU settings, in its words. */
	if (s->store.lru.hot_pct + s->store.lru.warm_pct > 80)
		kv_die("hot_lru_pct + warm_lru_pct cannot be more than 80%% combined");
	if (s->store.lru.temp_lru && !s->store.lru_maintainer)
		kv_die("temporary_ttl requires lru_maintainer to be enabled");
	/* As memcached: -S is the binary protocol alone, -Y the text one alone. */
	if (s->sasl) {
		if (!p->protocol_given)
			s->protocol = KV_PROTO_BINARY;
		else if (s->protocol != KV_PROTO_BINARY)
			kv_die("-S: You cannot allow the ASCII protocol while using SASL.");
		if (s->udp_port)
			kv_die("-S: Cannot enable UDP while using binary SASL authentication.");
	}
	if (s->auth_file) {
		if (!p->protocol_given)
			s->protocol = KV_PROTO_ASCII;
		else if (s->protocol != KV_PROTO_ASCII)
			kv_die("-Y: You cannot allow the BINARY protocol while using ascii "
			       "authentication tokens.");
	}
	if (s->auth_file && s->udp_port)
		kv_die("Cannot use UDP with ascii authentication enabled (-U 0 to disable)");
	if (s->unix_path && (s->port != 11211 || s->listen))
		kv_options_note(s, "-s: listening on the Unix socket only; -p and -l are not used");
}

void kv_options_parse(int argc, char **argv, struct kv_settings *s)
{
	*s = (struct kv_settings){.port = 11211,
				  .backlog = 1024,
				  .unix_mask = 0700,
				  .threads = 4,
				  .maxconns = 1024,
				  .reqs_per_event = 20,
				  .slab_reassign = 1,
				  .watcher_buf_kb = 256,
				  .tls = {.keyformat = 1, .min_version = 2, .wbuf_kb = 16}};
	kv_store_config_default(&s->store);
	struct kv_parse p = {.s = s};
	struct option longs[NOPTS + 1];
	char shorts[2 * NOPTS + 2];
	getopt_tables(longs, shorts);
	opterr = 0;
	int got;
	while ((got = getopt_long(argc, argv, shorts, longs, NULL)) != -1)
		apply(&p, opt_of(got, argv), optarg);
	check_line(&p, argc, argv);
}

void kv_options_free(struct kv_settings *s)
{
	free(s->listen);
	free(s->unix_path);
	free(s->user);
	free(s->pidfile);
	free(s->auth_file);
	free(s->memory_file);
	free(s->tls.chain_cert);
	free(s->tls.key);
	free(s->tls.ca_cert);
	free(s->tls.ciphers);
}
