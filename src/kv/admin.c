/*
 * locus-kv: stats and the administrative commands.
 */
#define _GNU_SOURCE
#include <event2/event.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/atomic.h"
#include "kv/server.h"

void kv_cmd_stats(struct conn *c, const struct kv_cmd *cmd)
{
	struct worker *w = c->w;
	kv_counts_flush(kv_srv.st, &w->cnt);
	struct kv_buf *b = &w->scratch;
	b->len = 0;
	const struct kv_store_config *cfg = kv_store_config(kv_srv.st);
	switch (cmd->stats) {
	case KV_STATS_NONE: {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		struct timeval now;
		gettimeofday(&now, NULL);
		kv_buf_addf(b, "STAT pid %ld\r\n", (long)getpid());
		kv_buf_addf(b, "STAT uptime %u\r\n", kv_now(kv_srv.st));
		kv_buf_addf(b, "STAT time %" PRIu64 "\r\n", kv_process_started(kv_srv.st) + kv_now(kv_srv.st));
		kv_buf_addf(b, "STAT version %s\r\n", LOCUS_KV_VERSION_REPLY);
		kv_buf_addf(b, "STAT libevent %s\r\n", event_get_version());
		kv_buf_addf(b, "STAT pointer_size %d\r\n", (int)(8 * sizeof(void *)));
		kv_buf_addf(b, "STAT rusage_user %ld.%06ld\r\n", (long)ru.ru_utime.tv_sec,
			  (long)ru.ru_utime.tv_usec);
		kv_buf_addf(b, "STAT rusage_system %ld.%06ld\r\n", (long)ru.ru_stime.tv_sec,
			  (long)ru.ru_stime.tv_usec);
		kv_buf_addf(b, "STAT max_connections %d\r\n", kv_srv.set.maxconns);
		kv_buf_addf(b, "STAT curr_connections %d\r\n", ld_seqcst(&kv_srv.curr_conns));
		kv_buf_addf(b, "STAT total_connections %" PRIu64 "\r\n", ld_seqcst(&kv_srv.total_conns));
		kv_buf_addf(b, "STAT rejected_connections %" PRIu64 "\r\n",
			    ld_seqcst(&kv_srv.rejected_conns));
		kv_buf_addf(b, "STAT listen_disabled_num %" PRIu64 "\r\n",
			    ld_seqcst(&kv_srv.listen_disabled_num));
		kv_buf_addf(b, "STAT time_in_listen_disabled_us %" PRIu64 "\r\n",
			    ld_seqcst(&kv_srv.listen_disabled_us));
		kv_buf_addf(b, "STAT accepting_conns %d\r\n", ld_seqcst(&kv_srv.accepting));
		kv_buf_addf(b, "STAT threads %d\r\n", kv_srv.set.threads);
		if (kv_stats_general(kv_srv.st, b, NULL) != 0)
			goto oom;
		break;
	}
	case KV_STATS_SETTINGS:
		kv_buf_addf(b, "STAT maxbytes %zu\r\n", cfg->mem_limit);
		kv_buf_addf(b, "STAT maxconns %d\r\n", kv_srv.set.maxconns);
		kv_buf_addf(b, "STAT tcpport %d\r\n", kv_srv.set.port);
		kv_buf_addf(b, "STAT udpport %d\r\n", kv_srv.set.udp_port);
		kv_buf_addf(b, "STAT inter %s\r\n", kv_srv.set.listen ? kv_srv.set.listen : "NULL");
		kv_buf_addf(b, "STAT verbosity %d\r\n", ld_relaxed(&kv_srv.set.verbose));
		kv_buf_addf(b, "STAT growth_factor %.2f\r\n", cfg->factor);
		kv_buf_addf(b, "STAT chunk_size %u\r\n", cfg->chunk_min);
		kv_buf_addf(b, "STAT num_threads %d\r\n", kv_srv.set.threads);
		kv_buf_addf(b, "STAT reqs_per_event %d\r\n", kv_srv.set.reqs_per_event);
		kv_buf_addf(b, "STAT cas_enabled %s\r\n", cfg->use_cas ? "yes" : "no");
		kv_buf_addf(b, "STAT item_size_max %zu\r\n", cfg->item_size_max);
		kv_buf_addf(b, "STAT evictions %s\r\n", cfg->evict ? "on" : "off");
		kv_buf_addf(b, "STAT lru_crawler %s\r\n", cfg->lru_crawler ? "yes" : "no");
		kv_buf_addf(b, "STAT hash_stripes %u\r\n", cfg->stripes);
		for (int s = 0; s < KV_SECTIONS; s++)
			kv_buf_addf(b, "STAT sync_%s %s\r\n", kv_section_names[s],
				  kv_store_sync_spec(kv_srv.st, (enum kv_section)s));
		kv_buf_addf(b, "END\r\n");
		break;
	case KV_STATS_ITEMS:
		if (kv_stats_items(kv_srv.st, b) != 0)
			goto oom;
		break;
	case KV_STATS_SLABS:
		if (kv_stats_slabs(kv_srv.st, b) != 0)
			goto oom;
		break;
	case KV_STATS_SYNC:
		if (kv_stats_sync(kv_srv.st, b) != 0)
			goto oom;
		break;
	case KV_STATS_RESET:
		kv_stats_reset(kv_srv.st);
		st_seqcst(&kv_srv.total_conns, 0);
		st_seqcst(&kv_srv.rejected_conns, 0);
		kv_reply(c, "RESET");
		return;
	case KV_STATS_OTHER:
		/* "stats detail", "stats sizes", ...: not kept here. */
		kv_reply(c, "ERROR");
		return;
	}
	if (kv_buf_add(&c->out, b->p, b->len) != 0)
		goto oom;
	return;
oom:
	kv_reply(c, "SERVER_ERROR out of memory writing stats");
}

