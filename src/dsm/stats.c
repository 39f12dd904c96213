/* Statistics: names and the two printed forms (a table for people, JSON lines
   for tools/dsm-suite). */
#include <stdio.h>

#include "internal.h"

static const char *const msg_names[LOCUS_DSM_MSG_KINDS] = {
	"page_req",   "page_fwd", "page",      "inv",	    "inv_ack",	 "lock_acq",
	"lock_grant", "lock_rel", "bar_enter", "bar_leave", "heartbeat", "stats",
	"lock_pass",  "diff_req", "diff",      "gc",
};

static const char *const fault_names[LOCUS_DSM_FAULT_KINDS] = {"read", "write", "upgrade", "local",
							       "combined"};

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
	fprintf(f,
		"; invalidations=%llu pingpong_deferrals=%llu locks=%llu (%llu kept) "
		"barriers=%llu\n",
		(unsigned long long)s->invalidations, (unsigned long long)s->pingpong_deferrals,
		(unsigned long long)s->lock_acquires, (unsigned long long)s->lock_records,
		(unsigned long long)s->barriers);
	fprintf(f, "dsm node %d: sent", node);
	for (int k = 0; k < LOCUS_DSM_MSG_KINDS; k++)
		if (s->msgs_sent[k])
			fprintf(f, " %s=%llu/%lluB", msg_names[k],
				(unsigned long long)s->msgs_sent[k],
				(unsigned long long)s->bytes_sent[k]);
	fprintf(f, "; comm cpu %.3f s (handling %.3f s during stalls), slept %llu times, %.3f s\n",
		s->comm_cpu_s, s->overhead_in_stall_s, (unsigned long long)s->comm_sleeps,
		s->comm_sleep_s);
	fprintf(f,
		"dsm node %d: %llu threads: %llu stalls avg %.0f us, run length avg %.0f us, "
		"%llu switches; remote misses %llu avg %.0f us, remote locks %llu avg %.0f us "
		"(%llu hand-offs), barrier waits %llu avg %.0f us; %llu pages prefetched "
		"(%llu unneeded, %llu late, %llu lost), %llu fetched ahead of a walk\n",
		node, (unsigned long long)s->threads, (unsigned long long)s->stalls,
		per(s->stall_s, s->stalls), per(s->run_s, s->stalls),
		(unsigned long long)s->switches, (unsigned long long)s->remote_misses,
		per(s->remote_miss_s, s->remote_misses), (unsigned long long)s->remote_locks,
		per(s->remote_lock_s, s->remote_locks), (unsigned long long)s->lock_handoffs,
		(unsigned long long)s->barrier_waits, per(s->barrier_wait_s, s->barrier_waits),
		(unsigned long long)s->prefetches, (unsigned long long)s->prefetch_unneeded,
		(unsigned long long)s->prefetch_late, (unsigned long long)s->prefetch_lost,
		(unsigned long long)s->run_ahead);
	if (s->intervals || s->diffs || s->meta_peak_bytes)
		fprintf(f,
			"dsm node %d: lrc: %llu intervals, %llu twins, %llu diffs (%llu bytes), "
			"%llu collections, kept %llu bytes (at most %llu)\n",
			node, (unsigned long long)s->intervals, (unsigned long long)s->twins,
			(unsigned long long)s->diffs, (unsigned long long)s->diff_bytes,
			(unsigned long long)s->gcs, (unsigned long long)s->meta_bytes,
			(unsigned long long)s->meta_peak_bytes);
	uint64_t opened = 0, rolled = 0;
	for (int k = 0; k < LOCUS_DSM_AVR_CKPT_KINDS; k++)
		opened += s->avr_checkpoints[k];
	for (int k = 0; k < LOCUS_DSM_AVR_ROLL_KINDS; k++)
		rolled += s->avr_rollbacks[k];
	if (opened || s->avr_sc[LOCUS_DSM_AVR_SC_LOCK] || s->avr_sc[LOCUS_DSM_AVR_SC_THREADS])
		fprintf(f,
			"dsm node %d: avr: %llu intervals (read %llu, write %llu, upgrade %llu), "
			"%llu stood, %llu rolled back (read conflict %llu, page taken %llu, "
			"deadlock %llu); %llu accesses logged, %llu twins, %llu pages protected, "
			"%llu held, %llu added, %llu asked at a run's end; as sc: lock %llu, "
			"paused %llu, threads %llu, no copy %llu, other %llu; "
			"Cp %.3f s (avg %.0f us), Op %.3f s, Res %.3f s, Rol %.3f s, wait %.3f s\n",
			node, (unsigned long long)opened,
			(unsigned long long)s->avr_checkpoints[LOCUS_DSM_AVR_CKPT_READ],
			(unsigned long long)s->avr_checkpoints[LOCUS_DSM_AVR_CKPT_WRITE],
			(unsigned long long)s->avr_checkpoints[LOCUS_DSM_AVR_CKPT_UPGRADE],
			(unsigned long long)s->avr_commits, (unsigned long long)rolled,
			(unsigned long long)s->avr_rollbacks[LOCUS_DSM_AVR_ROLL_READ],
			(unsigned long long)s->avr_rollbacks[LOCUS_DSM_AVR_ROLL_TAKEN],
			(unsigned long long)s->avr_rollbacks[LOCUS_DSM_AVR_ROLL_DEADLOCK],
			(unsigned long long)s->avr_logged, (unsigned long long)s->avr_twins,
			(unsigned long long)s->avr_protected, (unsigned long long)s->avr_deferrals,
			(unsigned long long)s->avr_added, (unsigned long long)s->avr_asked,
			(unsigned long long)s->avr_sc[LOCUS_DSM_AVR_SC_LOCK],
			(unsigned long long)s->avr_sc[LOCUS_DSM_AVR_SC_PAUSED],
			(unsigned long long)s->avr_sc[LOCUS_DSM_AVR_SC_THREADS],
			(unsigned long long)s->avr_sc[LOCUS_DSM_AVR_SC_NOCOPY],
			(unsigned long long)s->avr_sc[LOCUS_DSM_AVR_SC_OTHER], s->avr_cp_s,
			per(s->avr_cp_s, opened), s->avr_op_s, s->avr_res_s, s->avr_rol_s,
			s->avr_wait_s);
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
		"\"prefetch_lost\": %llu, "
		"\"run_ahead\": %llu, \"intervals\": %llu, "
		"\"twins\": %llu, "
		"\"diffs\": %llu, \"diff_bytes\": %llu, \"gcs\": %llu, \"meta_bytes\": %llu, "
		"\"meta_peak_bytes\": %llu",
		s->prefetch_s, (unsigned long long)s->prefetch_unneeded,
		(unsigned long long)s->prefetch_late, (unsigned long long)s->prefetch_lost,
		(unsigned long long)s->run_ahead, (unsigned long long)s->intervals,
		(unsigned long long)s->twins, (unsigned long long)s->diffs,
		(unsigned long long)s->diff_bytes, (unsigned long long)s->gcs,
		(unsigned long long)s->meta_bytes, (unsigned long long)s->meta_peak_bytes);
	fprintf(f,
		", \"avr_ckpt_read\": %llu, \"avr_ckpt_write\": %llu, \"avr_ckpt_upgrade\": %llu, "
		"\"avr_commits\": %llu, \"avr_roll_read\": %llu, \"avr_roll_taken\": %llu, "
		"\"avr_roll_deadlock\": %llu, \"avr_logged\": %llu, \"avr_twins\": %llu, "
		"\"avr_protected\": %llu, \"avr_deferrals\": %llu, \"avr_added\": %llu, "
		"\"avr_asked\": %llu, "
		"\"avr_sc_lock\": %llu, "
		"\"avr_sc_paused\": %llu, \"avr_sc_threads\": %llu, \"avr_sc_other\": %llu, "
		"\"avr_sc_nocopy\": %llu, "
		"\"avr_cp_s\": %.6f, \"avr_op_s\": %.6f, \"avr_res_s\": %.6f, "
		"\"avr_rol_s\": %.6f, \"avr_wait_s\": %.6f}\n",
		(unsigned long long)s->avr_checkpoints[0],
		(unsigned long long)s->avr_checkpoints[1],
		(unsigned long long)s->avr_checkpoints[2], (unsigned long long)s->avr_commits,
		(unsigned long long)s->avr_rollbacks[0], (unsigned long long)s->avr_rollbacks[1],
		(unsigned long long)s->avr_rollbacks[2], (unsigned long long)s->avr_logged,
		(unsigned long long)s->avr_twins, (unsigned long long)s->avr_protected,
		(unsigned long long)s->avr_deferrals, (unsigned long long)s->avr_added,
		(unsigned long long)s->avr_asked, (unsigned long long)s->avr_sc[0],
		(unsigned long long)s->avr_sc[1], (unsigned long long)s->avr_sc[2],
		(unsigned long long)s->avr_sc[3], (unsigned long long)s->avr_sc[4], s->avr_cp_s,
		s->avr_op_s, s->avr_res_s, s->avr_rol_s, s->avr_wait_s);
}
