/*
 * locus-kv's command line: every memcached 1.6 option, and locus-kv's own.
 *
 * kv_options_parse() fills struct kv_settings or exits: 0 after --help,
 * --version or --mechanisms, 64 (EX_USAGE) with a message naming the option
 * for a bad value or an option locus-kv cannot honour. Options memcached has
 * and locus-kv accepts without acting on them are listed in `notes`, which the
 * server prints under -v once it runs.
 */
#ifndef LOCUS_KV_OPTIONS_H
#define LOCUS_KV_OPTIONS_H

#include <stddef.h>

#include "kv/store/store.h"

/* -Z and -o ssl_*: TLS (tls.c), memcached's settings with its defaults. */
struct kv_tls_settings {
	int enabled;	   /* -Z */
	char *chain_cert;  /* ssl_chain_cert: the certificate chain, PEM */
	char *key;	   /* ssl_key: its private key (NULL: in the chain file) */
	int keyformat;	   /* ssl_keyformat: OpenSSL's file type, 1 PEM, 2 DER */
	int verify_mode;   /* ssl_verify_mode: 0 none, 1 request, 2 require, 3 once */
	char *ca_cert;	   /* ssl_ca_cert: the client CAs, PEM */
	char *ciphers;	   /* ssl_ciphers: an OpenSSL cipher list (TLS 1.2 and older) */
	int min_version;   /* ssl_min_version: 0..3, TLS 1.0 .. TLS 1.3 */
	int wbuf_kb;	   /* ssl_wbuf_size: bytes handed to TLS per write, KB (0: all) */
	int session_cache; /* ssl_session_cache: the server keeps sessions to resume */
	int kernel_tls;	   /* ssl_kernel_tls: records by the kernel, where it can */
};

/* -B: what a TCP or Unix connection speaks (UDP takes each datagram as its first byte says). */
enum kv_protocol {
	KV_PROTO_AUTO,	 /* its first byte decides: 0x80 binary, anything else text */
	KV_PROTO_ASCII,	 /* the text and meta protocols */
	KV_PROTO_BINARY, /* the binary protocol */
};

#define KV_NOTES_MAX 16
#define KV_KEPT_MAX  16

struct kv_settings {
	int port;	    /* -p: TCP port, 0 for none */
	int udp_port;	    /* -U: UDP port, 0 for none */
	char *listen;	    /* -l: comma-separated addresses, NULL for all */
	int backlog;	    /* -b */
	char *unix_path;    /* -s: a Unix socket instead of TCP */
	unsigned unix_mask; /* -a: the socket file's permissions (octal, default 0700) */
	int threads;	    /* -t */
	int maxconns;	    /* -c */
	int reqs_per_event; /* -R */
	int verbose;	   /* -v (atomic: the verbosity command changes it while workers read it) */
	char *user;	   /* -u: switch to this user after binding, when started as root */
	char *pidfile;	   /* -P */
	char *auth_file;   /* -Y: user:password lines (auth.c) */
	char *memory_file; /* -e: item memory in this file, kept across SIGUSR1 (store.h) */
	int protocol;	   /* -B: enum kv_protocol */
	int sasl;	   /* -S: SASL authentication on the binary protocol (sasl.c) */
	int daemonize;	   /* -d */
	int coredumps;	   /* -r: raise the core file limit */
	int lock_memory;   /* -k: mlockall */
	int shutdown_enabled; /* -A: the shutdown command */
	int flush_disabled;   /* -F: flush_all refused */
	int debug_commands;   /* --debug-commands */
	int slab_reassign;    /* page moves allowed (-o no_slab_reassign: 0) */
	int dump_disabled;    /* -X: no cachedump, no metadump */
	int watch_disabled;   /* -W: no watch */
	int idle_timeout;     /* -o idle_timeout: close connections idle this long (s; 0: never) */
	int watcher_buf_kb;   /* -o watcher_logbuf_size: each watcher's buffer */
	int read_buf_mem_mb;  /* -o read_buf_mem_limit (pool.c); 0: none */
	int napi_ids;	      /* -N */
	struct kv_store_config store;
	struct kv_tls_settings tls;
	const char *notes[KV_NOTES_MAX]; /* accepted, not acted on (printed under -v) */
	int nnotes;
	/* -o values memcached checks and locus-kv only shows (stats settings) */
	struct {
		char name[32], value[32];
	} kept[KV_KEPT_MAX];
	int nkept;
};

/* The value given with -o name=..., else memcached's default for name (stats settings). */
const char *kv_setting_kept(const struct kv_settings *s, const char *name);

void kv_options_parse(int argc, char **argv, struct kv_settings *s);
void kv_options_free(struct kv_settings *s);

/* Print "locus-kv: <message>" on stderr and exit 64 (EX_USAGE). */
__attribute__((noreturn, format(printf, 1, 2))) void kv_die(const char *fmt, ...);

/*
 * Between options.c (the command line) and options_extended.c (-o's names):
 * a command line being read, and what both kinds of option use.
 */
struct kv_parse {
	struct kv_settings *s;
	int tcp_given;	    /* -p (else -U sets the TCP port too, as memcached) */
	int item_given;	    /* -I */
	int chunk_given;    /* -o slab_chunk_max */
	int protocol_given; /* -B */
};

/* Where a setting is in struct kv_settings (the option tables' rows say). */
#define FIELD(f) offsetof(struct kv_settings, f)

/* -o's comma-separated names (options_extended.c). */
void kv_options_extended(struct kv_parse *p, const char *arg);
/* Add a note for -v to print, once however often it is added (notes are compared by address). */
void kv_options_note(struct kv_settings *s, const char *text);
/* A string setting: *field (freed) becomes a copy of value. */
void kv_options_string(char **field, const char *value);
/* 0 and *out if s is a number strtol reads whole, within [lo, hi]; -1 otherwise. */
int kv_options_long(const char *s, long lo, long hi, long *out);

#endif
