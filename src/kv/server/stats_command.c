/*
 * locus-kv's "stats" command: every subcommand memcached 1.6.18 has, its
 * fields in memcached's order (what has no counterpart here is reported as
 * memcached would with the feature idle: 0, or "no"), and no field of its
 * own: a client or test may count them (memcached's t/stats.t does). The
 * sections' specs are in "stats settings" and "stats sync". Only the first
 * word after "stats" counts; the rest is ignored, as memcached ignores it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <event2/event.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server/auth.h"
#include "kv/server/server.h"
#include "kv/server/tls.h"

#define STAT_U64(b, name, v) kv_buf_addf(b, "STAT " name " %" PRIu64 "\r\n", (uint64_t)(v))
#define STAT_I64(b, name, v) kv_buf_addf(b, "STAT " name " %" PRId64 "\r\n", (int64_t)(v))
#define STAT_STR(b, name, v) kv_buf_addf(b, "STAT " name " %s\r\n", (v))

static const char *yes_no(int v)
{
	return v ? "yes" : "no";
}

void kv_stats_general(struct kv_buf *b)
{
	struct kv_store_figures *f = malloc(sizeof(*f));
	if (!f)
		return;
	kv_store_figures(kv_srv.st, f);
	const struct kv_counts *c = &f->c;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	uint32_t now = kv_now(kv_srv.st);
	int curr = ld_seqcst(&kv_srv.curr_conns);
	STAT_I64(b, "pid", getpid());
	STAT_U64(b, "uptime", now);
	STAT_U64(b, "time", kv_process_started(kv_srv.st) + now);
	STAT_STR(b, "version", LOCUS_KV_VERSION_REPLY);
	STAT_STR(b, "libevent", event_get_version());
	STAT_U64(b, "pointer_size", 8 * sizeof(void *));
	kv_buf_addf(b, "STAT rusage_user %ld.%06ld\r\n", (long)ru.ru_utime.tv_sec,
		    (long)ru.ru_utime.tv_usec);
	kv_buf_addf(b, "STAT rusage_system %ld.%06ld\r\n", (long)ru.ru_stime.tv_sec,
		    (long)ru.ru_stime.tv_usec);
	STAT_I64(b, "max_connections", kv_srv.set.maxconns);
	STAT_I64(b, "curr_connections", curr);
	STAT_U64(b, "total_connections", ld_seqcst(&kv_srv.total_conns));
	STAT_U64(b, "rejected_connections", ld_seqcst(&kv_srv.rejected_conns));
	STAT_I64(b, "connection_structures", curr + kv_srv.nlisten);
	/* The workers' 16 KB units (pool.c): response records' bundles and read buffers are
	   both read buffers to memcached, which counts them together. */
	struct kv_pool_figures pf;
	kv_pool_figures(&pf);
	STAT_U64(b, "response_obj_oom", pf.resp_oom);
	STAT_U64(b, "response_obj_count", pf.resp_count);
	STAT_U64(b, "response_obj_bytes", pf.resp_bytes);
	STAT_U64(b, "read_buf_count", pf.rbuf_count);
	STAT_U64(b, "read_buf_bytes", pf.rbuf_count * KV_UNIT);
	STAT_U64(b, "read_buf_bytes_free", pf.rbuf_free * KV_UNIT);
	STAT_U64(b, "read_buf_oom", pf.rbuf_oom);
	/* Descriptors held for other than connections: stdio, listeners, UDP readers, pipes. */
	STAT_I64(b, "reserved_fds",
		 3 + kv_srv.nlisten + kv_srv.nudp * (1 + kv_srv.set.threads) +
			 2 * kv_srv.set.threads);
	STAT_U64(b, "cmd_get", c->cmd_get);
	STAT_U64(b, "cmd_set", c->cmd_set);
	STAT_U64(b, "cmd_flush", c->cmd_flush);
	STAT_U64(b, "cmd_touch", c->cmd_touch);
	STAT_U64(b, "cmd_meta", c->cmd_meta);
	STAT_U64(b, "get_hits", c->get_hits);
	STAT_U64(b, "get_misses", c->get_misses);
	STAT_U64(b, "get_expired", c->get_expired);
	STAT_U64(b, "get_flushed", c->get_flushed);
	STAT_U64(b, "delete_misses", c->delete_misses);
	STAT_U64(b, "delete_hits", c->delete_hits);
	STAT_U64(b, "incr_misses", c->incr_misses);
	STAT_U64(b, "incr_hits", c->incr_hits);
	STAT_U64(b, "decr_misses", c->decr_misses);
	STAT_U64(b, "decr_hits", c->decr_hits);
	STAT_U64(b, "cas_misses", c->cas_misses);
	STAT_U64(b, "cas_hits", c->cas_hits);
	STAT_U64(b, "cas_badval", c->cas_badval);
	STAT_U64(b, "touch_hits", c->touch_hits);
	STAT_U64(b, "touch_misses", c->touch_misses);
	STAT_U64(b, "store_too_large", c->store_too_large);
	STAT_U64(b, "store_no_memory", c->store_no_memory);
	STAT_U64(b, "auth_cmds", kv_auth_count(0));
	STAT_U64(b, "auth_errors", kv_auth_count(1));
	if (kv_srv.set.idle_timeout)
		STAT_U64(b, "idle_kicks", c->idle_kicks);
	STAT_U64(b, "bytes_read", c->bytes_read);
	STAT_U64(b, "bytes_written", c->bytes_written);
	STAT_U64(b, "limit_maxbytes", f->limit);
	STAT_I64(b, "accepting_conns", ld_seqcst(&kv_srv.accepting));
	STAT_U64(b, "listen_disabled_num", ld_seqcst(&kv_srv.listen_disabled_num));
	STAT_U64(b, "time_in_listen_disabled_us", ld_seqcst(&kv_srv.listen_disabled_us));
	STAT_I64(b, "threads", kv_srv.set.threads);
	STAT_U64(b, "conn_yields", c->conn_yields);
	STAT_U64(b, "hash_power_level", f->hashpower);
	STAT_U64(b, "hash_bytes", f->hash_bytes);
	STAT_U64(b, "hash_is_expanding", f->hash_expanding);
	if (kv_srv.set.slab_reassign) {
		STAT_U64(b, "slab_reassign_rescues", c->slab_reassign_rescues);
		STAT_U64(b, "slab_reassign_chunk_rescues", c->slab_reassign_chunk_rescues);
		STAT_U64(b, "slab_reassign_evictions_nomem", c->slab_reassign_evictions_nomem);
		STAT_U64(b, "slab_reassign_inline_reclaim", c->slab_reassign_inline_reclaim);
		STAT_U64(b, "slab_reassign_busy_items", c->slab_reassign_busy_items);
		STAT_U64(b, "slab_reassign_busy_deletes", 0);
		STAT_U64(b, "slab_reassign_running", f->moving);
		STAT_U64(b, "slabs_moved", f->moves);
	}
	if (kv_crawler_enabled(kv_srv.st)) {
		STAT_U64(b, "lru_crawler_running", kv_crawler_busy(kv_srv.st));
		STAT_U64(b, "lru_crawler_starts", c->lru_crawler_starts);
	}
	if (f->maintainer)
		STAT_U64(b, "lru_maintainer_juggles", f->juggles);
	STAT_U64(b, "malloc_fails", 0);
	kv_watch_stats(b);
	kv_tls_stats(b);
	STAT_U64(b, "unexpected_napi_ids", 0);
	STAT_U64(b, "round_robin_fallback", 0);
	STAT_I64(b, "bytes", c->bytes);
	STAT_I64(b, "curr_items", c->curr_items);
	STAT_U64(b, "total_items", c->total_items);
	STAT_U64(b, "slab_global_page_pool", f->pool_pages);
	STAT_U64(b, "expired_unfetched", c->expired_unfetched);
	STAT_U64(b, "evicted_unfetched", c->evicted_unfetched);
	if (f->maintainer)
		STAT_U64(b, "evicted_active", f->evicted_active);
	STAT_U64(b, "evictions", c->evictions);
	STAT_U64(b, "reclaimed", c->reclaimed);
	STAT_U64(b, "crawler_reclaimed", c->crawler_reclaimed);
	STAT_U64(b, "crawler_items_checked", c->crawler_items_checked);
	STAT_U64(b, "lrutail_reflocked", f->lrutail_reflocked);
	if (f->maintainer) {
		STAT_U64(b, "moves_to_cold", f->moves_to_cold);
		STAT_U64(b, "moves_to_warm", f->moves_to_warm);
		STAT_U64(b, "moves_within_lru", f->moves_within_lru);
		STAT_U64(b, "direct_reclaims", c->direct_reclaims);
		STAT_U64(b, "lru_bumps_dropped", 0); /* bumps are never queued here */
	}
	kv_buf_add(b, "END\r\n", 5);
	free(f);
}

void kv_stats_settings(struct kv_buf *b)
{
	const struct kv_settings *s = &kv_srv.set;
	const struct kv_store_config *cfg = kv_store_config(kv_srv.st);
	uint32_t sleep_us, tocrawl;
	kv_crawler_get(kv_srv.st, &sleep_us, &tocrawl);
	char delim[2] = {kv_detail_delimiter(kv_srv.st), 0};
	STAT_U64(b, "maxbytes", ld_relaxed(&cfg->mem_limit));
	STAT_I64(b, "maxconns", s->maxconns);
	STAT_I64(b, "tcpport", s->port);
	STAT_I64(b, "udpport", s->udp_port);
	STAT_STR(b, "inter", s->listen ? s->listen : "NULL");
	STAT_I64(b, "verbosity", ld_relaxed(&s->verbose));
	STAT_U64(b, "oldest", 0);
	STAT_STR(b, "evictions", cfg->evict ? "on" : "off");
	STAT_STR(b, "domain_socket", s->unix_path ? s->unix_path : "NULL");
	kv_buf_addf(b, "STAT umask %o\r\n", s->unix_mask);
	STAT_STR(b, "shutdown_command", yes_no(s->shutdown_enabled));
	kv_buf_addf(b, "STAT growth_factor %.2f\r\n", cfg->factor);
	STAT_U64(b, "chunk_size", cfg->chunk_min);
	STAT_I64(b, "num_threads", s->threads);
	STAT_I64(b, "num_threads_per_udp", s->threads);
	STAT_STR(b, "stat_key_prefix", delim);
	STAT_STR(b, "detail_enabled", yes_no(kv_detail_on(kv_srv.st)));
	STAT_I64(b, "reqs_per_event", s->reqs_per_event);
	STAT_STR(b, "cas_enabled", yes_no(cfg->use_cas));
	STAT_I64(b, "tcp_backlog", s->backlog);
	static const char *const protocols[] = {[KV_PROTO_AUTO] = "auto-negotiate",
						[KV_PROTO_ASCII] = "ascii",
						[KV_PROTO_BINARY] = "binary"};
	STAT_STR(b, "binding_protocol", protocols[s->protocol]);
	STAT_STR(b, "auth_enabled_sasl", yes_no(s->sasl));
	STAT_STR(b, "auth_enabled_ascii", s->auth_file ? s->auth_file : "no");
	STAT_U64(b, "item_size_max", cfg->item_size_max);
	STAT_STR(b, "maxconns_fast", "yes");
	STAT_U64(b, "hashpower_init", cfg->hashpower);
	STAT_STR(b, "slab_reassign", yes_no(s->slab_reassign));
	STAT_I64(b, "slab_automove", kv_automove_get(kv_srv.st));
	kv_buf_addf(b, "STAT slab_automove_ratio %.2f\r\n", kv_automove_ratio(kv_srv.st));
	STAT_U64(b, "slab_automove_window", cfg->automove_window);
	STAT_U64(b, "slab_chunk_max", kv_store_chunk_max(kv_srv.st));
	STAT_STR(b, "lru_crawler", yes_no(kv_crawler_enabled(kv_srv.st)));
	STAT_U64(b, "lru_crawler_sleep", sleep_us);
	STAT_U64(b, "lru_crawler_tocrawl", tocrawl);
	STAT_STR(b, "tail_repair_time", kv_setting_kept(s, "tail_repair_time"));
	STAT_STR(b, "flush_enabled", yes_no(!s->flush_disabled));
	STAT_STR(b, "dump_enabled", yes_no(!s->dump_disabled));
	/* locus-kv hashes keys with its own function, not one of memcached's. */
	STAT_STR(b, "hash_algorithm", "locus");
	struct kv_lru_tune lru;
	kv_store_lru_get(kv_srv.st, &lru);
	STAT_STR(b, "lru_maintainer_thread", yes_no(kv_maintainer_running(kv_srv.st)));
	STAT_STR(b, "lru_segmented", yes_no(lru.segmented));
	STAT_U64(b, "hot_lru_pct", lru.hot_pct);
	STAT_U64(b, "warm_lru_pct", lru.warm_pct);
	kv_buf_addf(b, "STAT hot_max_factor %.2f\r\n", lru.hot_max_factor);
	kv_buf_addf(b, "STAT warm_max_factor %.2f\r\n", lru.warm_max_factor);
	STAT_STR(b, "temp_lru", yes_no(lru.temp_lru));
	STAT_U64(b, "temporary_ttl", lru.temporary_ttl);
	STAT_I64(b, "idle_timeout", s->idle_timeout);
	STAT_I64(b, "watcher_logbuf_size", (int64_t)s->watcher_buf_kb * 1024);
	STAT_STR(b, "worker_logbuf_size", kv_setting_kept(s, "worker_logbuf_size"));
	STAT_U64(b, "read_buf_mem_limit", (uint64_t)s->read_buf_mem_mb << 20);
	STAT_STR(b, "track_sizes", yes_no(kv_sizes_on(kv_srv.st)));
	STAT_STR(b, "inline_ascii_response", "no");
	kv_tls_settings(b, &s->tls);
	STAT_I64(b, "num_napi_ids", s->napi_ids);
	STAT_STR(b, "memory_file", s->memory_file ? s->memory_file : "(null)");
	STAT_U64(b, "hash_stripes", cfg->stripes);
	for (int k = 0; k < KV_SECTIONS; k++)
		kv_buf_addf(b, "STAT sync_%s %s\r\n", kv_section_names[k],
			    kv_store_sync_spec(kv_srv.st, (enum kv_section)k));
	kv_buf_add(b, "END\r\n", 5);
}

/* "tcp:1.2.3.4:5", "tcp6:[::1]:5" or "unix:/path", as memcached prints an address. */
static void addr_text(const struct sockaddr_storage *ss, const char *proto, char *out, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "";
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(out, n, "%s:%s:%u", proto, ip, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(out, n, "%s6:[%s]:%u", proto, ip, ntohs(a->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *a = (const void *)ss;
		snprintf(out, n, "unix:%s", a->sun_path);
	} else {
		snprintf(out, n, "<unknown>");
	}
}

void kv_conn_addresses(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (getpeername(c->fd, (struct sockaddr *)&ss, &len) == 0) {
		addr_text(&ss, "tcp", c->addr, sizeof(c->addr));
		c->peer = ss;
	}
	len = sizeof(ss);
	memset(&ss, 0, sizeof(ss));
	if (getsockname(c->fd, (struct sockaddr *)&ss, &len) == 0)
		addr_text(&ss, "tcp", c->listen, sizeof(c->listen));
}

static void socket_line(struct kv_buf *b, int fd, const char *proto, const char *state)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char addr[128] = "<unknown>";
	memset(&ss, 0, sizeof(ss));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
		addr_text(&ss, proto, addr, sizeof(addr));
	kv_buf_addf(b, "STAT %d:addr %s\r\n", fd, addr);
	kv_buf_addf(b, "STAT %d:state %s\r\n", fd, state);
	kv_buf_addf(b, "STAT %d:secs_since_last_cmd 0\r\n", fd);
}

static const char *const activity_names[] = {
	[ACT_NEW] = "conn_new_cmd",	[ACT_READ] = "conn_read",    [ACT_NREAD] = "conn_nread",
	[ACT_SWALLOW] = "conn_swallow", [ACT_WRITE] = "conn_mwrite", [ACT_WATCH] = "conn_watch",
};

/* "stats conns": the listeners, each worker's UDP readers, then every connection. */
static void stats_conns(struct conn *self, struct kv_buf *b)
{
	uint32_t now = kv_now(kv_srv.st);
	for (int i = 0; i < kv_srv.nlisten; i++)
		socket_line(b, kv_srv.lfds[i], kv_srv.set.unix_path ? "unix" : "tcp",
			    "conn_listening");
	for (int t = 0; t < kv_srv.set.threads; t++) {
		struct worker *w = &kv_srv.workers[t];
		for (int i = 0; i < w->nudp; i++) {
			kv_buf_addf(b, "STAT %d:UDP UDP\r\n", w->udp[i]->fd);
			socket_line(b, w->udp[i]->fd, "udp", "conn_read");
		}
		pthread_mutex_lock(&w->lock);
		for (struct conn *c = w->conns; c; c = c->next) {
			int act = ld_relaxed(&c->activity);
			uint32_t last = ld_relaxed(&c->last_cmd);
			kv_buf_addf(b, "STAT %d:addr %s\r\n", c->fd, c->addr);
			kv_buf_addf(b, "STAT %d:listen_addr %s\r\n", c->fd, c->listen);
			kv_buf_addf(b, "STAT %d:state %s\r\n", c->fd,
				    c == self ? "conn_parse_cmd" : activity_names[act]);
			kv_buf_addf(b, "STAT %d:secs_since_last_cmd %u\r\n", c->fd,
				    last && now > last ? now - last : 0);
		}
		pthread_mutex_unlock(&w->lock);
	}
	kv_buf_add(b, "END\r\n", 5);
}

void kv_stats_reset_all(void)
{
	kv_stats_reset(kv_srv.st);
	kv_detail_reset(kv_srv.st);
	kv_auth_count_reset();
	kv_pool_reset();
	st_seqcst(&kv_srv.total_conns, 0);
	st_seqcst(&kv_srv.rejected_conns, 0);
}

/* memcached answers these two with one line and no END. */
void kv_stats_sizes_switch(int on, struct kv_buf *b)
{
	if (!on) {
		kv_sizes_set(kv_srv.st, 0);
		kv_buf_addf(b, "STAT sizes_status disabled\r\n");
	} else if (kv_sizes_set(kv_srv.st, 1) == 0) {
		kv_buf_addf(b, "STAT sizes_status enabled\r\n");
	} else {
		kv_buf_addf(b, "STAT sizes_status error\r\n"
			       "STAT sizes_error cas_support_disabled\r\n");
	}
}

#define ARGS_MAX 8

static int is(struct kv_span t, const char *w)
{
	return t.len == strlen(w) && memcmp(t.ptr, w, t.len) == 0;
}

/* memcached's strtoul on a token: digits only, no sign. -1 if not. */
static int token_u32(struct kv_span t, uint32_t *out)
{
	return kv_num_u32(t.ptr, t.len, out) && t.ptr[0] != '-' ? 0 : -1;
}

static void stats_cachedump(struct conn *c, struct kv_span *t, int n, struct kv_buf *b)
{
	uint32_t cls, limit;
	if (kv_srv.set.dump_disabled) {
		kv_reply(c, "CLIENT_ERROR stats cachedump not allowed");
		return;
	}
	if (n < 3) {
		kv_reply(c, "CLIENT_ERROR bad command line");
		return;
	}
	if (token_u32(t[1], &cls) || token_u32(t[2], &limit)) {
		kv_reply(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (cls >= KV_CLASSES) {
		kv_reply(c, "CLIENT_ERROR Illegal slab id");
		return;
	}
	if (kv_cachedump(kv_srv.st, cls, limit, b) != 0)
		kv_reply(c, "SERVER_ERROR out of memory writing stats");
}

static void stats_detail(struct conn *c, struct kv_span *t, int n, struct kv_buf *b)
{
	if (n >= 2 && is(t[1], "on")) {
		kv_detail_set(kv_srv.st, 1);
		kv_reply(c, "OK");
	} else if (n >= 2 && is(t[1], "off")) {
		kv_detail_set(kv_srv.st, 0);
		kv_reply(c, "OK");
	} else if (n >= 2 && is(t[1], "dump")) {
		if (kv_detail_dump(kv_srv.st, b) != 0)
			kv_reply(c, "SERVER_ERROR out of memory writing stats");
	} else {
		kv_reply(c, "CLIENT_ERROR usage: stats detail on|off|dump");
	}
}

void kv_cmd_stats(struct conn *c, const struct kv_cmd *cmd)
{
	struct worker *w = c->w;
	kv_counts_flush(kv_srv.st, &w->cnt);
	struct kv_buf *b = &w->scratch;
	b->len = 0;
	struct kv_span t[ARGS_MAX];
	int n = cmd->stats == KV_STATS_NONE
			? 0
			: kv_split_words(cmd->args.ptr, cmd->args.len, t, ARGS_MAX);
	int e = 0;
	switch (cmd->stats) {
	case KV_STATS_NONE:
		kv_stats_general(b);
		break;
	case KV_STATS_SETTINGS:
		kv_stats_settings(b);
		break;
	case KV_STATS_ITEMS:
		e = kv_stats_items(kv_srv.st, b);
		break;
	case KV_STATS_SLABS:
		e = kv_stats_slabs(kv_srv.st, b);
		break;
	case KV_STATS_SYNC:
		e = kv_stats_sync(kv_srv.st, b);
		break;
	case KV_STATS_RESET:
		kv_stats_reset_all();
		kv_reply(c, "RESET");
		return;
	case KV_STATS_OTHER:
		if (is(t[0], "conns")) {
			stats_conns(c, b);
		} else if (is(t[0], "sizes")) {
			e = kv_sizes_text(kv_srv.st, b);
		} else if (is(t[0], "sizes_enable")) {
			kv_stats_sizes_switch(1, b);
		} else if (is(t[0], "sizes_disable")) {
			kv_stats_sizes_switch(0, b);
		} else if (is(t[0], "detail")) {
			stats_detail(c, t, n, b);
		} else if (is(t[0], "cachedump")) {
			stats_cachedump(c, t, n, b);
		} else {
			kv_reply(c, "ERROR");
			return;
		}
		break;
	}
	if (e || kv_buf_add(&c->out, b->p, b->len) != 0)
		kv_reply(c, "SERVER_ERROR out of memory writing stats");
}
