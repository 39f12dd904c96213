/*
 * Critical-section functions the tests run through the executors.
 *
 * sections_tm.c is compiled with -fgnu-tm -DLOCUS_TM when locus has stm, so
 * its functions have transactional clones and stm:* runs them instrumented;
 * sections_plain.c never is, so its functions run under stm only in
 * serial-irrevocable mode.
 */
#ifndef LOCUS_TEST_SECTIONS_H
#define LOCUS_TEST_SECTIONS_H

#include <stdint.h>

/* One unit of work appended by a stress section; owned by the thread that made it. */
struct stress_node {
	struct stress_node *next;
	uint32_t tid; /* thread that allocated it */
	uint32_t seq; /* its index among that thread's operations */
};

/*
 * State whose consistency needs every section to be exclusive: from + to is
 * always `total`, the list holds `count` nodes ending at `tail`.
 */
struct stress_state {
	uint64_t from;
	uint64_t to;
	uint64_t total;
	struct stress_node *head;
	struct stress_node *tail;
	uint64_t count;
	uint64_t torn; /* sections that found from + to != total on entry */
	/* sections by locus_stm_mode(): [0] outside, [1] retryable, [2] irrevocable */
	uint64_t by_mode[3];
};

/*
 * a: struct stress_node * to append; b: nonzero to move a unit from `to`
 * back to `from` (else from -> to). Returns the count before this section.
 */
uint64_t stress_section(void *state, uint64_t a, uint64_t b, uint64_t c);

/* *(uint64_t *)state += a; returns the old value. */
uint64_t counter_add(void *state, uint64_t a, uint64_t b, uint64_t c);

/* locus_stm_mode() as seen inside the section (transactional clone under stm). */
uint64_t mode_probe_tm(void *state, uint64_t a, uint64_t b, uint64_t c);

/* Same, from a function compiled without -fgnu-tm (sections_plain.c). */
uint64_t mode_probe_plain(void *state, uint64_t a, uint64_t b, uint64_t c);

#endif
