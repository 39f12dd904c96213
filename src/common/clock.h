/* The one clock: monotonic nanoseconds, and any clock's time in nanoseconds. */
#ifndef LOCUS_COMMON_CLOCK_H
#define LOCUS_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in nanoseconds (a vDSO call, tens of nanoseconds). */
static inline uint64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif
