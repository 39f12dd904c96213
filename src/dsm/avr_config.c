/*
 * avr's settings (LOCUS_DSM_AVR_*) and its statistics' rows: what the
 * protocol table (proto_avr.c) hands the runtime for them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "avr.h"
#include "internal.h"

struct avr_settings avr_set = {.deadlock = 30, .pending = 1, .ask = 1};

#define AVR_STAT_ROW(id, f, json, label, kind)                                                     \
	{json, label, offsetof(locus_dsm_stats, f), DSM_STAT_##kind},
const struct dsm_stat avr_stats[AVR_NSTATS] = {AVR_STATS(AVR_STAT_ROW)};

/* value (of variable name) in [lo, hi], or a message with what it means. */
static int in_range(const char *name, uint64_t value, uint64_t lo, uint64_t hi, const char *meaning)
{
	_Static_assert(AVR_MAX_PENDING == 8, "LOCUS_DSM_AVR_PENDING's message says 8");
	if (value >= lo && value <= hi)
		return 0;
	fprintf(stderr, "locus-dsm: %s=%s: %s\n", name, getenv(name), meaning);
	return -1;
}

int avr_config(void)
{
	static const char *const known[] = {"LOCUS_DSM_AVR_DEADLOCK", "LOCUS_DSM_AVR_PENDING",
					    "LOCUS_DSM_AVR_ASK", NULL};
	uint64_t deadlock = 30, pending = 1, ask = 1;
	if (dsm_env_known("LOCUS_DSM_AVR_", known) ||
	    dsm_env_u64("LOCUS_DSM_AVR_DEADLOCK", &deadlock, 0) ||
	    dsm_env_u64("LOCUS_DSM_AVR_PENDING", &pending, 0) ||
	    dsm_env_u64("LOCUS_DSM_AVR_ASK", &ask, 0))
		return -1;
	if (in_range("LOCUS_DSM_AVR_DEADLOCK", deadlock, 1, 1000000,
		     "faults on the checkpoint page before giving way must be from 1 to "
		     "1000000") ||
	    in_range("LOCUS_DSM_AVR_PENDING", pending, 1, AVR_MAX_PENDING,
		     "pages one interval may await must be from 1 to 8") ||
	    in_range("LOCUS_DSM_AVR_ASK", ask, 0, 1,
		     "must be 1 (ask for the page that ends a run at once) or 0 (after the "
		     "interval, as the seed does)"))
		return -1;
	avr_set = (struct avr_settings){
		.deadlock = (uint32_t)deadlock, .pending = (uint32_t)pending, .ask = (uint32_t)ask};
	return 0;
}
