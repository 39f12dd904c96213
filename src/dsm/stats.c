/* Statistics: names and the two printed forms (a table for people, JSON lines
   for tools/dsm-suite). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const msg_names[LOCUS_DSM_MSG_KINDS] = {
	"page_req",   "page_fwd", "page",      "inv",	    "inv_ack",	 "lock_acq",
	"lock_grant", "lock_rel", "bar_enter", "bar_leave", "heartbeat", "stats",
	"lock_pass",  "diff_req", "diff",      "gc",	    "ship",	 "ship_reply",
};

static const char *const fault_names[LOCUS_DSM_FAULT_KINDS] = {"read", "write", "upgrade", "local",
							       "combined"};

static uint64_t stat_count(const locus_dsm_stats *s, const struct dsm_stat *row)
{
	uint64_t v;
	memcpy(&v, (const char *)s + row->field, sizeof(v));
	return v;
}

static double stat_seconds(const locus_dsm_stats *s, const struct dsm_stat *row)
{
	double v;
	memcpy(&v, (const char *)s + row->field, sizeof(v));
	return v;
}

/* A protocol's table line, from its rows: printed when any of them is not
   zero (a node that ran another protocol prints none). */
static void proto_line(FILE *f, int node, const struct dsm_proto *p, const locus_dsm_stats *s)
{
	int any = 0;
	for (size_t k = 0; k < p->nstats; k++)
		any |= p->stats[k].kind == DSM_STAT_SECONDS ? stat_seconds(s, &p->stats[k]) != 0
							    : stat_count(s, &p->stats[k]) != 0;
	if (!any)
		return;
	fprintf(f, "dsm node %d: %s:", node, p->name);
	for (size_t k = 0; k < p->nstats; k++) {
		const struct dsm_stat *row = &p->stats[k];
		if (row->kind == DSM_STAT_SECONDS)
			fprintf(f, "%s %s %.3f s", k ? "," : "", row->label, stat_seconds(s, row));
		else
			fprintf(f, "%s %s %llu", k ? "," : "", row->label,
				(unsigned long long)stat_count(s, row));
	}
	fputc('\n', f);
}

static double per(double s, uint64_t n)
{
	return n ? s / (double)n * 1e6 : 0; /* microseconds each */
}

const char *locus_dsm_msg_kind_name(int kind)
{
	return kind >= 0 && kind < LOCUS_DSM_MSG_KINDS ? msg_names[kind] : "?";
}

const char *locus_dsm_fault_kind_name(int kind)
{
	return kind >= 0 && kind < LOCUS_DSM_FAULT_KINDS ? fault_names[kind] : "?";
}

void locus_dsm_stats_print(FILE *f, int node, const locus_dsm_stats *s)
{
	fprintf(f,
		"dsm node %d: total %.3f s = busy %.3f + fault %.3f + sync %.3f + overhead %.3f + "
		"other %.3f\n",
		node, s->total_s, s->busy_s, s->fault_s, s->sync_s, s->overhead_s, s->other_s);
	fprintf(f, "dsm node %d: faults", node);
	for (int k = 0; k < LOCUS_DSM_FAULT_KINDS; k++)
		fprintf(f, " %s=%llu", fault_names[k], (unsigned long long)s->faults[k]);
	fprintf(f, " (in place %llu, sent in place %llu, answers taken %llu, found looking %llu)",
		(unsigned long long)s->faults_in_place, (unsigned long long)s->misses_in_place,
		(unsigned long long)s->answers_taken, (unsigned long long)s->answers_spun);
	fprintf(f,
		"; invalidations=%llu pingpong_deferrals=%llu locks=%llu (%llu kept) "
		"barriers=%llu (%llu in place)\n",
		(unsigned long long)s->invalidations, (unsigned long long)s->pingpong_deferrals,
		(unsigned long long)s->lock_acquires, (unsigned long long)s->lock_records,
		(unsigned long long)s->barriers, (unsigned long long)s->barriers_in_place);
	fprintf(f, "dsm node %d: sent", node);
	for (int k = 0; k < LOCUS_DSM_MSG_KINDS; k++)
		if (s->msgs_sent[k])
			fprintf(f, " %s=%llu/%lluB", msg_names[k],
				(unsigned long long)s->msgs_sent[k],
				(unsigned long long)s->bytes_sent[k]);
	if (s->bundles)
		fprintf(f, " (%llu of them in %llu bundles)", (unsigned long long)s->bundled,
			(unsigned long long)s->bundles);
	fprintf(f, "; comm cpu %.3f s (handling %.3f s during stalls), slept %llu times, %.3f s; ",
		s->comm_cpu_s, s->overhead_in_stall_s, (unsigned long long)s->comm_sleeps,
		s->comm_sleep_s);
	if (s->idle_poll)
		fputs("idle CPUs asked to poll\n", f);
	else if (s->idle_poll_error)
		fprintf(f, "idle CPUs not asked to poll (/dev/cpu_dma_latency: %s)\n",
			strerror((int)s->idle_poll_error));
	else
		fputs("idle CPUs as the kernel chose\n", f);
	fprintf(f,
		"dsm node %d: %llu threads: %llu stalls avg %.0f us, run length avg %.0f us, "
		"%llu switches; remote misses %llu avg %.0f us, remote locks %llu avg %.0f us "
		"(%llu hand-offs), barrier waits %llu avg %.0f us; %llu calls shipped, %llu parked "
		"here, %llu run by the communication thread; %llu pages prefetched "
		"(%llu unneeded, %llu late, %llu lost), %llu fetched ahead of a walk (%llu lost)\n",
		node, (unsigned long long)s->threads, (unsigned long long)s->stalls,
		per(s->stall_s, s->stalls), per(s->run_s, s->stalls),
		(unsigned long long)s->switches, (unsigned long long)s->remote_misses,
		per(s->remote_miss_s, s->remote_misses), (unsigned long long)s->remote_locks,
		per(s->remote_lock_s, s->remote_locks), (unsigned long long)s->lock_handoffs,
		(unsigned long long)s->barrier_waits, per(s->barrier_wait_s, s->barrier_waits),
		(unsigned long long)s->calls_shipped, (unsigned long long)s->calls_parked,
		(unsigned long long)s->calls_run_by_comm, (unsigned long long)s->prefetches, (unsigned long long)s->prefetch_unneeded,
		(unsigned long long)s->prefetch_late, (unsigned long long)s->prefetch_lost,
		(unsigned long long)s->run_ahead, (unsigned long long)s->run_ahead_lost);
	uint64_t m = s->miss_steps;
	fprintf(f,
		"dsm node %d: miss steps (%llu misses, avg us): handler %.1f, comm wake-up %.1f, "
		"send %.1f, reply %.1f, install %.1f, resume %.1f; page messages from this host "
		"%llu delivered avg %.1f us; requests %llu served avg %.1f us; doorbells rung "
		"%llu, woke this node %llu, reach %llu nodes; protection changes %llu for %llu "
		"pages\n",
		node, (unsigned long long)m, per(s->miss_post_s, m), per(s->miss_take_s, m),
		per(s->miss_send_s, m), per(s->miss_reply_s, m), per(s->miss_install_s, m),
		per(s->miss_resume_s, m), (unsigned long long)s->delivered,
		per(s->deliver_s, s->delivered), (unsigned long long)s->served,
		per(s->serve_s, s->served), (unsigned long long)s->bells_rung,
		(unsigned long long)s->bell_wakes, (unsigned long long)s->bell_peers,
		(unsigned long long)s->protects, (unsigned long long)s->protect_pages);
	for (size_t i = 0; dsm_proto_at(i); i++)
		proto_line(f, node, dsm_proto_at(i), s);
}

void locus_dsm_stats_json(FILE *f, int node, const locus_dsm_stats *s)
{
	fprintf(f,
		"{\"dsm_node\": %d, \"total_s\": %.6f, \"busy_s\": %.6f, \"fault_s\": %.6f, "
		"\"sync_s\": %.6f, \"overhead_s\": %.6f, \"other_s\": %.6f, "
		"\"overhead_in_stall_s\": %.6f, \"comm_cpu_s\": %.6f",
		node, s->total_s, s->busy_s, s->fault_s, s->sync_s, s->overhead_s, s->other_s,
		s->overhead_in_stall_s, s->comm_cpu_s);
	for (int k = 0; k < LOCUS_DSM_FAULT_KINDS; k++)
		fprintf(f, ", \"faults_%s\": %llu", fault_names[k],
			(unsigned long long)s->faults[k]);
	fprintf(f,
		", \"faults_in_place\": %llu, \"misses_in_place\": %llu, \"answers_taken\": %llu"
		", \"answers_spun\": %llu"
		", \"calls_shipped\": %llu, \"calls_parked\": %llu, \"calls_run_by_comm\": %llu",
		(unsigned long long)s->faults_in_place, (unsigned long long)s->misses_in_place,
		(unsigned long long)s->answers_taken, (unsigned long long)s->answers_spun,
		(unsigned long long)s->calls_shipped,
		(unsigned long long)s->calls_parked, (unsigned long long)s->calls_run_by_comm);
	fprintf(f, ", \"idle_poll\": %llu, \"idle_poll_error\": %llu, \"barriers_in_place\": %llu"
		", \"bundled\": %llu, \"bundles\": %llu",
		(unsigned long long)s->idle_poll, (unsigned long long)s->idle_poll_error,
		(unsigned long long)s->barriers_in_place, (unsigned long long)s->bundled,
		(unsigned long long)s->bundles);
	uint64_t msgs = 0, bytes = 0;
	for (int k = 0; k < LOCUS_DSM_MSG_KINDS; k++) {
		fprintf(f, ", \"msgs_%s\": %llu, \"bytes_%s\": %llu", msg_names[k],
			(unsigned long long)s->msgs_sent[k], msg_names[k],
			(unsigned long long)s->bytes_sent[k]);
		msgs += s->msgs_sent[k];
		bytes += s->bytes_sent[k];
	}
	fprintf(f,
		", \"msgs\": %llu, \"bytes\": %llu, \"invalidations\": %llu, "
		"\"pingpong_deferrals\": %llu, \"locks\": %llu, \"lock_records\": %llu, "
		"\"barriers\": %llu, \"comm_sleeps\": %llu, \"comm_sleep_s\": %.6f",
		(unsigned long long)msgs, (unsigned long long)bytes,
		(unsigned long long)s->invalidations, (unsigned long long)s->pingpong_deferrals,
		(unsigned long long)s->lock_acquires, (unsigned long long)s->lock_records,
		(unsigned long long)s->barriers, (unsigned long long)s->comm_sleeps,
		s->comm_sleep_s);
	fprintf(f,
		", \"threads\": %llu, \"stalls\": %llu, \"stall_s\": %.6f, \"run_s\": %.6f, "
		"\"switches\": %llu, \"remote_misses\": %llu, \"remote_miss_s\": %.6f, "
		"\"remote_locks\": %llu, \"remote_lock_s\": %.6f, \"lock_handoffs\": %llu, "
		"\"barrier_waits\": %llu, \"barrier_wait_s\": %.6f, \"prefetches\": %llu",
		(unsigned long long)s->threads, (unsigned long long)s->stalls, s->stall_s, s->run_s,
		(unsigned long long)s->switches, (unsigned long long)s->remote_misses,
		s->remote_miss_s, (unsigned long long)s->remote_locks, s->remote_lock_s,
		(unsigned long long)s->lock_handoffs, (unsigned long long)s->barrier_waits,
		s->barrier_wait_s, (unsigned long long)s->prefetches);
	fprintf(f,
		", \"prefetch_s\": %.6f, \"prefetch_unneeded\": %llu, \"prefetch_late\": %llu, "
		"\"prefetch_lost\": %llu, \"run_ahead\": %llu, \"run_ahead_lost\": %llu",
		s->prefetch_s, (unsigned long long)s->prefetch_unneeded,
		(unsigned long long)s->prefetch_late, (unsigned long long)s->prefetch_lost,
		(unsigned long long)s->run_ahead, (unsigned long long)s->run_ahead_lost);
	fprintf(f,
		", \"miss_steps\": %llu, \"miss_post_s\": %.6f, \"miss_take_s\": %.6f, "
		"\"miss_send_s\": %.6f, \"miss_reply_s\": %.6f, \"miss_install_s\": %.6f, "
		"\"miss_resume_s\": %.6f, \"delivered\": %llu, \"deliver_s\": %.6f, "
		"\"served\": %llu, \"serve_s\": %.6f, \"bells_rung\": %llu, \"bell_wakes\": %llu, "
		"\"bell_peers\": %llu, \"protects\": %llu, \"protect_pages\": %llu",
		(unsigned long long)s->miss_steps, s->miss_post_s, s->miss_take_s, s->miss_send_s,
		s->miss_reply_s, s->miss_install_s, s->miss_resume_s,
		(unsigned long long)s->delivered, s->deliver_s, (unsigned long long)s->served,
		s->serve_s, (unsigned long long)s->bells_rung, (unsigned long long)s->bell_wakes,
		(unsigned long long)s->bell_peers, (unsigned long long)s->protects,
		(unsigned long long)s->protect_pages);
	for (size_t i = 0; dsm_proto_at(i); i++) {
		const struct dsm_proto *p = dsm_proto_at(i);
		for (size_t k = 0; k < p->nstats; k++) {
			const struct dsm_stat *row = &p->stats[k];
			if (row->kind == DSM_STAT_SECONDS)
				fprintf(f, ", \"%s\": %.6f", row->json, stat_seconds(s, row));
			else
				fprintf(f, ", \"%s\": %llu", row->json,
					(unsigned long long)stat_count(s, row));
		}
	}
	fputs("}\n", f);
}
